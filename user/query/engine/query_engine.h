// QueryEngine: a trace imported into TraceStorage and served to SQLite as
// virtual tables under Perfetto's trace processor names (sched, thread_state,
// thread, process, cpu, ftrace_event, args, counter, track,
// cpu_counter_track, metadata, stats, trace_bounds) with the functions
// trace_start(), trace_end() and trace_dur(), and PerfettoSQL on top
// (perfetto_sql/perfetto_sql.h): run scripts with RunSqlScript(db(), ...,
// dialect()) so that INCLUDE PERFETTO MODULE, CREATE PERFETTO ... and macros
// work. docs/QUERY.md has the tables.
#ifndef SLUICE_USER_QUERY_ENGINE_QUERY_ENGINE_H_
#define SLUICE_USER_QUERY_ENGINE_QUERY_ENGINE_H_

#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "shm/base/status.h"
#include "user/query/storage/trace_storage.h"
#include "user/trace/trace_file_reader.h"

struct sqlite3;

namespace sluice {

class PerfettoSql;
class SqlDialect;

class QueryEngine {
 public:
  ~QueryEngine();
  QueryEngine(const QueryEngine&) = delete;
  QueryEngine& operator=(const QueryEngine&) = delete;

  // Imports the trace at `path`. Fails (one line naming the cause and the
  // fix) only when the file cannot be read or is not a Perfetto trace at all;
  // a truncated or damaged trace imports up to the damage and says so in the
  // `stats` table (severity error).
  static StatusOr<std::unique_ptr<QueryEngine>> Open(const std::string& path);
  // The same over bytes in memory (tests, fuzzers).
  static StatusOr<std::unique_ptr<QueryEngine>> OpenBytes(std::string_view bytes);

  // The database: run any SQL on it (sqlite3_prepare_v2 and friends).
  sqlite3* db() const { return db_; }
  // PerfettoSQL, for RunSqlScript.
  SqlDialect* dialect() const;
  const TraceStorage& storage() const { return *storage_; }
  // The tables and views this engine defines, in the order `.tables` lists
  // them.
  std::vector<std::string> TableNames() const;

 private:
  struct Tables;
  QueryEngine();
  Status Init();
  // `file_bytes` sizes the storage's reservation (ReserveForTraceFile).
  static StatusOr<std::unique_ptr<QueryEngine>> Import(
      std::string_view head, uint64_t file_bytes,
      const std::function<Status(const std::function<void(std::string_view)>&, TraceFileSummary*)>& read);

  std::unique_ptr<TraceStorage> storage_;
  std::unique_ptr<Tables> tables_;
  sqlite3* db_ = nullptr;
  // Reset by the destructor before db_ closes (its functions hold statements).
  std::unique_ptr<PerfettoSql> perfetto_sql_;
  std::vector<std::string> prelude_names_;  // Tables and views the prelude modules made.
};

}  // namespace sluice

#endif  // SLUICE_USER_QUERY_ENGINE_QUERY_ENGINE_H_
