// libFuzzer target: sluice query's importer on arbitrary trace bytes, then a
// query over every table (the virtual tables read what the importer
// stored, so a bad row index or string id shows up here). The importer must
// never crash or hang on any input: damage ends up in `stats`.
//
//   make fuzz    (or: build/fuzz/trace_importer_fuzzer -max_total_time=60)
// Seeds: tests/fuzz/corpus/trace_importer_fuzzer/ (small sluice traces;
// zstd_default_head: one zstd_compressed_packets container).
#include <sqlite3.h>

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include <google/protobuf/stubs/logging.h>

#include "user/query/engine/query_engine.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static bool quiet = [] {
    // Fuzzed strings are not UTF-8; libprotobuf logs each one it parses.
    google::protobuf::SetLogHandler([](google::protobuf::LogLevel, const char*, int, const std::string&) {});
    return true;
  }();
  (void)quiet;
  auto engine = sluice::QueryEngine::OpenBytes(std::string_view(reinterpret_cast<const char*>(data), size));
  if (!engine.ok()) return 0;
  sqlite3* db = (*engine)->db();
  for (const std::string& table : (*engine)->TableNames()) {
    std::string sql = "SELECT * FROM " + table + " ORDER BY 2 LIMIT 1000";
    sqlite3_stmt* stmt = nullptr;
    if (sqlite3_prepare_v2(db, sql.c_str(), -1, &stmt, nullptr) != SQLITE_OK) __builtin_trap();
    while (sqlite3_step(stmt) == SQLITE_ROW) {
      for (int c = 0; c < sqlite3_column_count(stmt); ++c) sqlite3_column_text(stmt, c);
    }
    sqlite3_finalize(stmt);
  }
  return 0;
}
