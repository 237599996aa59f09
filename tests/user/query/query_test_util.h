// Helpers for the query tests: building small traces with libprotobuf and
// running SQL on an engine, rows as "a|b|c" strings (NULL as "NULL").
#ifndef SLUICE_TESTS_USER_QUERY_QUERY_TEST_UTIL_H_
#define SLUICE_TESTS_USER_QUERY_QUERY_TEST_UTIL_H_

#include <sqlite3.h>

#include <string>
#include <vector>

#include "perfetto/trace/trace_packet.pb.h"
#include "shm/base/varint.h"

namespace sluice::testing {

struct TraceBuilder {
  std::string bytes;
  void Add(const perfetto::protos::TracePacket& p) { AppendTracePacketRecord(p.SerializeAsString(), &bytes); }
};

// Every row of `sql`'s result, columns joined by '|'. A prepare or step
// error is returned as one row "ERROR: message".
inline std::vector<std::string> Rows(sqlite3* db, const std::string& sql) {
  std::vector<std::string> rows;
  sqlite3_stmt* stmt = nullptr;
  if (sqlite3_prepare_v2(db, sql.c_str(), -1, &stmt, nullptr) != SQLITE_OK)
    return {std::string("ERROR: ") + sqlite3_errmsg(db)};
  int rc;
  while ((rc = sqlite3_step(stmt)) == SQLITE_ROW) {
    std::string row;
    for (int c = 0; c < sqlite3_column_count(stmt); ++c) {
      if (c) row += '|';
      const unsigned char* text = sqlite3_column_text(stmt, c);
      row += text ? reinterpret_cast<const char*>(text) : "NULL";
    }
    rows.push_back(row);
  }
  if (rc != SQLITE_DONE) rows.push_back(std::string("ERROR: ") + sqlite3_errmsg(db));
  sqlite3_finalize(stmt);
  return rows;
}

}  // namespace sluice::testing

#endif  // SLUICE_TESTS_USER_QUERY_QUERY_TEST_UTIL_H_
