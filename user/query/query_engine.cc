#include "user/query/query_engine.h"

#include <sqlite3.h>

namespace sluice {

QueryEngine::QueryEngine() : storage_(std::make_unique<TraceStorage>()) {}

QueryEngine::~QueryEngine() {
  if (db_) sqlite3_close(db_);
}

Status QueryEngine::Init() {
  if (sqlite3_open(":memory:", &db_) != SQLITE_OK)
    return Status::Error("sluice query: cannot open an in-memory SQLite database");
  return Status::Ok();
}

StatusOr<std::unique_ptr<QueryEngine>> QueryEngine::Open(const std::string& path) {
  (void)path;  // The importer is not written yet: an empty database.
  std::unique_ptr<QueryEngine> engine(new QueryEngine());
  SLUICE_RETURN_IF_ERROR(engine->Init());
  return engine;
}

StatusOr<std::unique_ptr<QueryEngine>> QueryEngine::OpenBytes(std::string_view bytes) {
  (void)bytes;
  std::unique_ptr<QueryEngine> engine(new QueryEngine());
  SLUICE_RETURN_IF_ERROR(engine->Init());
  return engine;
}

std::vector<std::string> QueryEngine::TableNames() const { return {}; }

}  // namespace sluice
