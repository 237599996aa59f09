#include "tests/user/query/query_test_util.h"

#include <sqlite3.h>
#include <stdlib.h>

#include <cstdlib>

#include <gtest/gtest.h>

namespace sluice::testing {

const char kSampleTableSql[] =
    "CREATE TABLE sample(id INTEGER, name TEXT, value REAL);\n"
    "INSERT INTO sample VALUES\n"
    "  (1, 'plain', 2.5),\n"
    "  (2, NULL, NULL),\n"
    "  (3, 'comma, \"quote\"', 0.1),\n"
    "  (4, 'two' || char(10) || 'lines', -1e20),\n"
    "  (9223372036854775807, 'h\xc3\xa9llo \xe2\x98\x83', 3.0),\n"
    "  (-9223372036854775808, 'tab' || char(9) || 'back\\slash', 1.0 / 3);\n";

const char kSampleCsv[] =
    "id,name,value\r\n"
    "1,plain,2.5\r\n"
    "2,,\r\n"
    "3,\"comma, \"\"quote\"\"\",0.1\r\n"
    "4,\"two\nlines\",-1e+20\r\n"
    "9223372036854775807,h\xc3\xa9llo \xe2\x98\x83,3.0\r\n"
    "-9223372036854775808,tab\tback\\slash,0.3333333333333333\r\n";

TestDatabase::TestDatabase() {
  EXPECT_EQ(sqlite3_open(":memory:", &db_), SQLITE_OK);
}

TestDatabase::~TestDatabase() { sqlite3_close(db_); }

void TestDatabase::Exec(const std::string& sql) const {
  char* error = nullptr;
  EXPECT_EQ(sqlite3_exec(db_, sql.c_str(), nullptr, nullptr, &error), SQLITE_OK)
      << (error ? error : "") << "\nin: " << sql;
  sqlite3_free(error);
}

sqlite3_stmt* TestDatabase::Prepare(const std::string& sql) const {
  sqlite3_stmt* stmt = nullptr;
  EXPECT_EQ(sqlite3_prepare_v2(db_, sql.c_str(), -1, &stmt, nullptr), SQLITE_OK)
      << sqlite3_errmsg(db_) << "\nin: " << sql;
  return stmt;
}

std::string CaptureOutput(const std::function<void(FILE*)>& write) {
  char* data = nullptr;
  size_t size = 0;
  FILE* out = open_memstream(&data, &size);
  EXPECT_NE(out, nullptr);
  if (!out) return "";
  write(out);
  fclose(out);
  std::string text(data, size);
  free(data);
  return text;
}

std::string QueryTracePath(const std::string& name) {
  std::string dir = "tests/data";
  if (const char* env = std::getenv("SLUICE_TEST_DATA_DIR")) dir = env;
  return dir + "/query/" + name + ".pftrace";
}

}  // namespace sluice::testing
