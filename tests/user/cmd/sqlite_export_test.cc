// Tests of user/cmd/sqlite_export.h: tables and views copied into a new
// SQLite file, reopened with SQLite and compared row by row and column type
// by column type; an existing file kept unless overwriting, and kept intact
// by a failing export; no temporary file left behind.
#include "user/cmd/sqlite_export.h"

#include <dirent.h>
#include <sqlite3.h>
#include <sys/stat.h>

#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "shm/base/file_util.h"
#include "tests/user/cmd/record_test_util.h"
#include "tests/user/query/query_test_util.h"
#include "user/query/engine/query_output.h"

namespace sluice {
namespace {

using testing::CaptureOutput;
using testing::TestDatabase;

// Every row of `sql` on `db`, as CSV.
std::string Dump(sqlite3* db, const std::string& sql) {
  sqlite3_stmt* stmt = nullptr;
  EXPECT_EQ(sqlite3_prepare_v2(db, sql.c_str(), -1, &stmt, nullptr), SQLITE_OK) << sqlite3_errmsg(db);
  std::string text = CaptureOutput([&](FILE* out) {
    EXPECT_TRUE(WriteQueryResult(stmt, OutputFormat::kCsv, out).ok());
  });
  sqlite3_finalize(stmt);
  return text;
}

std::vector<std::string> FilesIn(const std::string& dir) {
  std::vector<std::string> names;
  if (DIR* d = opendir(dir.c_str())) {
    while (struct dirent* e = readdir(d)) {
      if (e->d_name[0] != '.') names.push_back(e->d_name);
    }
    closedir(d);
  }
  return names;
}

class QuerySqliteExportTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = testing::MakeTempDir("sluice_export_test_");
    ASSERT_FALSE(dir_.empty());
    out_ = dir_ + "/out.sqlite";
    db_.Exec(testing::kSampleTableSql);
    db_.Exec("CREATE VIEW big AS SELECT id, upper(name) AS name FROM sample WHERE id > 3");
  }
  void TearDown() override { testing::RemoveTempDir(dir_); }

  std::string dir_, out_;
  TestDatabase db_;
};

TEST_F(QuerySqliteExportTest, CopiesTablesAndViewsWithTheirTypes) {
  StatusOr<ExportSummary> summary = ExportToSqliteFile(db_.db(), {"sample", "big"}, out_, false);
  ASSERT_TRUE(summary.ok()) << summary.status().message();
  EXPECT_EQ(summary->tables, 2u);
  EXPECT_EQ(summary->rows, 6u + 2u);
  EXPECT_EQ(FilesIn(dir_), std::vector<std::string>{"out.sqlite"});  // No temporary left.

  sqlite3* file = nullptr;
  ASSERT_EQ(sqlite3_open_v2(out_.c_str(), &file, SQLITE_OPEN_READONLY, nullptr), SQLITE_OK);
  for (const std::string table : {"sample", "big"}) {
    const std::string rows = "SELECT * FROM " + table + " ORDER BY id";
    EXPECT_EQ(Dump(file, rows), Dump(db_.db(), rows)) << table;
    const std::string columns = "SELECT name, type FROM pragma_table_info('" + table + "')";
    EXPECT_EQ(Dump(file, columns), Dump(db_.db(), columns)) << table;
  }
  // The view is a plain table there: the file needs nothing but SQLite.
  EXPECT_EQ(Dump(file, "SELECT type, name FROM sqlite_schema ORDER BY name"),
            "type,name\r\ntable,big\r\ntable,sample\r\n");
  EXPECT_EQ(Dump(file, "SELECT typeof(id), typeof(name), typeof(value) FROM sample WHERE id = 3"),
            "typeof(id),typeof(name),typeof(value)\r\ninteger,text,real\r\n");
  sqlite3_close(file);
  // The source database is as before: the file was detached.
  EXPECT_EQ(Dump(db_.db(), "SELECT name FROM pragma_database_list WHERE name != 'temp'"),
            "name\r\nmain\r\n");
}

// The query engine serves eponymous virtual tables, which SQLite finds only
// after every stored table: the copy in the new file must not shadow them.
// pragma_collation_list is one SQLite has built in; a temporary table lives
// in the temp schema.
TEST_F(QuerySqliteExportTest, CopiesEponymousVirtualAndTemporaryTables) {
  db_.Exec("CREATE TEMP TABLE scratch AS SELECT 42 AS answer");
  StatusOr<ExportSummary> summary =
      ExportToSqliteFile(db_.db(), {"pragma_collation_list", "scratch"}, out_, false);
  ASSERT_TRUE(summary.ok()) << summary.status().message();
  sqlite3* file = nullptr;
  ASSERT_EQ(sqlite3_open_v2(out_.c_str(), &file, SQLITE_OPEN_READONLY, nullptr), SQLITE_OK);
  const std::string collations = "SELECT name FROM pragma_collation_list ORDER BY name";
  const std::string expected = Dump(db_.db(), collations);
  EXPECT_NE(expected.find("NOCASE"), std::string::npos) << expected;
  EXPECT_EQ(Dump(file, "SELECT name FROM main.pragma_collation_list ORDER BY name"), expected);
  EXPECT_EQ(Dump(file, "SELECT answer FROM scratch"), "answer\r\n42\r\n");
  sqlite3_close(file);
}

TEST_F(QuerySqliteExportTest, QuotesNames) {
  db_.Exec("CREATE TABLE \"we\"\"ird\"(\"a b\" TEXT, \"select\" INTEGER)");
  db_.Exec("INSERT INTO \"we\"\"ird\" VALUES ('x', 1)");
  ASSERT_TRUE(ExportToSqliteFile(db_.db(), {"we\"ird"}, out_, false).ok());
  sqlite3* file = nullptr;
  ASSERT_EQ(sqlite3_open(out_.c_str(), &file), SQLITE_OK);
  EXPECT_EQ(Dump(file, "SELECT \"a b\", \"select\" FROM \"we\"\"ird\""), "a b,select\r\nx,1\r\n");
  sqlite3_close(file);
  EXPECT_EQ(QuoteSqlIdentifier("a\"b"), "\"a\"\"b\"");
}

TEST_F(QuerySqliteExportTest, KeepsAnExistingFileUnlessOverwriting) {
  ASSERT_TRUE(WriteFileAtomically(out_, "precious", 0644).ok());
  StatusOr<ExportSummary> refused = ExportToSqliteFile(db_.db(), {"sample"}, out_, false);
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.status().message(),
            out_ + " already exists: remove it, name another file, or pass --force to replace it");
  EXPECT_EQ(ReadFile(out_).value_or(""), "precious");

  ASSERT_TRUE(ExportToSqliteFile(db_.db(), {"sample"}, out_, true).ok());
  sqlite3* file = nullptr;
  ASSERT_EQ(sqlite3_open_v2(out_.c_str(), &file, SQLITE_OPEN_READONLY, nullptr), SQLITE_OK);
  EXPECT_EQ(Dump(file, "SELECT count(*) AS n FROM sample"), "n\r\n6\r\n");
  sqlite3_close(file);
}

TEST_F(QuerySqliteExportTest, FailedExportLeavesTheOldFileAndNoTemporary) {
  ASSERT_TRUE(WriteFileAtomically(out_, "precious", 0644).ok());
  StatusOr<ExportSummary> failed = ExportToSqliteFile(db_.db(), {"sample", "missing"}, out_, true);
  ASSERT_FALSE(failed.ok());
  EXPECT_EQ(failed.status().message(),
            "cannot export table missing to " + out_ + ": no table or view named missing");
  EXPECT_EQ(ReadFile(out_).value_or(""), "precious");
  EXPECT_EQ(FilesIn(dir_), std::vector<std::string>{"out.sqlite"});
  // Still usable, and the next export works.
  EXPECT_TRUE(ExportToSqliteFile(db_.db(), {"big"}, out_, true).ok());
}

TEST_F(QuerySqliteExportTest, BadDestinations) {
  StatusOr<ExportSummary> to_dir = ExportToSqliteFile(db_.db(), {"sample"}, dir_, true);
  ASSERT_FALSE(to_dir.ok());
  EXPECT_EQ(to_dir.status().message(), dir_ + " is a directory: name a file to export to");
  StatusOr<ExportSummary> no_dir =
      ExportToSqliteFile(db_.db(), {"sample"}, dir_ + "/none/out.sqlite", false);
  ASSERT_FALSE(no_dir.ok());
  EXPECT_EQ(no_dir.status().message(),
            "cannot create a file next to " + dir_ +
                "/none/out.sqlite: No such file or directory (is the directory there and "
                "writable?)");
}

TEST_F(QuerySqliteExportTest, FileModeFollowsTheUmask) {
  const mode_t previous = umask(027);
  ASSERT_TRUE(ExportToSqliteFile(db_.db(), {"sample"}, out_, false).ok());
  umask(previous);
  struct stat st = {};
  ASSERT_EQ(stat(out_.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0640u);
}

TEST_F(QuerySqliteExportTest, NoTablesMakesAnEmptyDatabase) {
  StatusOr<ExportSummary> summary = ExportToSqliteFile(db_.db(), {}, out_, false);
  ASSERT_TRUE(summary.ok()) << summary.status().message();
  EXPECT_EQ(summary->tables, 0u);
  sqlite3* file = nullptr;
  ASSERT_EQ(sqlite3_open_v2(out_.c_str(), &file, SQLITE_OPEN_READONLY, nullptr), SQLITE_OK);
  EXPECT_EQ(Dump(file, "SELECT count(*) AS n FROM sqlite_schema"), "n\r\n0\r\n");
  sqlite3_close(file);
}

}  // namespace
}  // namespace sluice
