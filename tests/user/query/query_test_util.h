// Shared by the tests of user/query/ and `sluice query`: an in-memory SQLite
// database with a table of awkward values (NULLs, quotes, commas, newlines,
// unicode, reals, the largest integers), and output captured from a FILE*.
#ifndef SLUICE_TESTS_USER_QUERY_QUERY_TEST_UTIL_H_
#define SLUICE_TESTS_USER_QUERY_QUERY_TEST_UTIL_H_

#include <cstdio>
#include <functional>
#include <string>

struct sqlite3;
struct sqlite3_stmt;

namespace sluice::testing {

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
