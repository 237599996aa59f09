// Helpers for the query tests: building small traces with libprotobuf and
// running SQL on an engine, rows as "a|b|c" strings (NULL as "NULL"); for the
// output, shell and export tests of `sluice query`, an in-memory SQLite
// database with a table of awkward values (NULLs, quotes, commas, newlines,
// unicode, reals, the largest integers) and output captured from a FILE*.
#ifndef SLUICE_TESTS_USER_QUERY_QUERY_TEST_UTIL_H_
#define SLUICE_TESTS_USER_QUERY_QUERY_TEST_UTIL_H_

#include <sqlite3.h>

#include <cstdio>
#include <functional>
#include <string>
#include <vector>

#include "perfetto/trace/trace_packet.pb.h"
#include "shm/base/varint.h"

namespace sluice::testing {

struct TraceBuilder {
  std::string bytes;
  void Add(const perfetto::protos::TracePacket& p) { AppendTracePacketRecord(p.SerializeAsString(), &bytes); }
};

// tests/data/query/<name>.pftrace (SLUICE_TEST_DATA_DIR replaces tests/data;
// tests run from the project root).
std::string QueryTracePath(const std::string& name);

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

// Creates and fills table `sample(id INTEGER, name TEXT, value REAL)`:
//   1                     plain                   2.5
//   2                     NULL                    NULL
//   3                     comma, "quote"          0.1
//   4                     two\nlines              -1e20
//   9223372036854775807   héllo ☃                 3.0
//   -9223372036854775808  tab\tback\slash         1.0/3
extern const char kSampleTableSql[];
// `SELECT * FROM sample` in csv, byte for byte (RFC 4180).
extern const char kSampleCsv[];

// A fresh in-memory database; closed when this goes.
class TestDatabase {
 public:
  TestDatabase();
  ~TestDatabase();
  TestDatabase(const TestDatabase&) = delete;
  TestDatabase& operator=(const TestDatabase&) = delete;

  sqlite3* db() const { return db_; }
  // Runs SQL without results; fails the test on an error.
  void Exec(const std::string& sql) const;
  // A prepared statement (finalized by the caller); fails the test on error.
  sqlite3_stmt* Prepare(const std::string& sql) const;

 private:
  sqlite3* db_ = nullptr;
};

// What `write` wrote to the FILE* it is given.
std::string CaptureOutput(const std::function<void(FILE*)>& write);

}  // namespace sluice::testing

#endif  // SLUICE_TESTS_USER_QUERY_QUERY_TEST_UTIL_H_
