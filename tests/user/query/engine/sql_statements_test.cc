// Tests of user/query/engine/sql_statements.h: positions in SQL text, where the
// next statement starts, and scripts run statement by statement with errors
// placed at their line and column (prepare errors at SQLite's offset, step
// errors at the statement's start).
#include "user/query/engine/sql_statements.h"

#include <sqlite3.h>

#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "tests/user/query/query_test_util.h"

namespace sluice {
namespace {

using testing::TestDatabase;

TEST(QuerySqlPositionTest, LinesAndCharacters) {
  const std::string text = "ab\n\xc3\xa9x\n\nz";
  EXPECT_EQ(PositionAtOffset(text, 0).line, 1);
  EXPECT_EQ(PositionAtOffset(text, 0).column, 1);
  EXPECT_EQ(PositionAtOffset(text, 2).column, 3);  // The '\n' ending line 1.
  EXPECT_EQ(PositionAtOffset(text, 3).line, 2);
  EXPECT_EQ(PositionAtOffset(text, 3).column, 1);
  // 'x' comes after the two bytes of 'é': the second column.
  EXPECT_EQ(PositionAtOffset(text, 5).line, 2);
  EXPECT_EQ(PositionAtOffset(text, 5).column, 2);
  EXPECT_EQ(PositionAtOffset(text, 8).line, 4);
  EXPECT_EQ(PositionAtOffset(text, 8).column, 1);
  EXPECT_EQ(PositionAtOffset(text, 100).line, 4);  // Clamped to the end.
  EXPECT_EQ(PositionAtOffset(text, 100).column, 2);
}

TEST(QuerySqlSeparatorsTest, SkipsSpaceCommentsAndSemicolons) {
  EXPECT_EQ(SkipSqlSeparators("", 0), 0u);
  EXPECT_EQ(SkipSqlSeparators("  ;; select", 0), 5u);
  EXPECT_EQ(SkipSqlSeparators("-- note\n  select", 0), 10u);
  EXPECT_EQ(SkipSqlSeparators("/* a\n b */select", 0), 10u);
  EXPECT_EQ(SkipSqlSeparators("select 1; -- end", 8), 16u);
  EXPECT_EQ(SkipSqlSeparators("; /* unterminated", 0), 17u);
  EXPECT_EQ(SkipSqlSeparators("-- no newline", 0), 13u);
  EXPECT_EQ(SkipSqlSeparators("- 1", 0), 0u);  // A minus sign is not a comment.
}

struct Ran {
  std::string sql;
  size_t offset;
  bool last;
};

// Runs `script`, recording each statement as it ran.
Status RunScript(const TestDatabase& db, const std::string& script, std::vector<Ran>* ran,
           int first_line = 1) {
  return RunSqlScript(
      db.db(), script,
      [&](const SqlStatement& statement) {
        ran->push_back({sqlite3_sql(statement.stmt), statement.offset, statement.last});
        return StepToEnd(statement.stmt);
      },
      first_line);
}

TEST(QuerySqlScriptTest, RunsEachStatementInOrder) {
  TestDatabase db;
  std::vector<Ran> ran;
  const std::string script =
      "-- make a table\n"
      "CREATE TABLE t(a TEXT);\n"
      "INSERT INTO t VALUES ('x;y'), ('/* not a comment */');  /* a; comment */\n"
      ";;\n"
      "SELECT count(*) FROM t; -- trailing comment\n";
  Status status = RunScript(db, script, &ran);
  ASSERT_TRUE(status.ok()) << status.message();
  ASSERT_EQ(ran.size(), 3u);
  EXPECT_EQ(ran[0].sql, "CREATE TABLE t(a TEXT);");
  EXPECT_EQ(ran[0].offset, 16u);
  EXPECT_FALSE(ran[0].last);
  EXPECT_EQ(ran[1].sql, "INSERT INTO t VALUES ('x;y'), ('/* not a comment */');");
  EXPECT_FALSE(ran[1].last);
  EXPECT_EQ(ran[2].sql, "SELECT count(*) FROM t;");
  EXPECT_EQ(script.substr(ran[2].offset, 6), "SELECT");
  EXPECT_TRUE(ran[2].last);
}

TEST(QuerySqlScriptTest, LastStatementWithoutSemicolon) {
  TestDatabase db;
  std::vector<Ran> ran;
  ASSERT_TRUE(RunScript(db, "SELECT 1; SELECT 2", &ran).ok());
  ASSERT_EQ(ran.size(), 2u);
  EXPECT_FALSE(ran[0].last);
  EXPECT_EQ(ran[1].sql, "SELECT 2");
  EXPECT_TRUE(ran[1].last);
}

TEST(QuerySqlScriptTest, NothingButCommentsRunsNothing) {
  TestDatabase db;
  std::vector<Ran> ran;
  EXPECT_TRUE(RunScript(db, "", &ran).ok());
  EXPECT_TRUE(RunScript(db, "  -- only a comment\n/* and another */ ;\n", &ran).ok());
  EXPECT_TRUE(ran.empty());
}

TEST(QuerySqlScriptTest, SyntaxErrorOnLineThree) {
  TestDatabase db;
  std::vector<Ran> ran;
  const std::string script =
      "SELECT 1;\n"
      "-- the next one is wrong\n"
      "SELECT 2, FROM nowhere;\n"
      "SELECT 3;\n";
  Status status = RunScript(db, script, &ran);
  EXPECT_EQ(status.message(), "SQL error at line 3 column 11: near \"FROM\": syntax error");
  ASSERT_EQ(ran.size(), 1u);  // Stops at the error: SELECT 3 never runs.
}

TEST(QuerySqlScriptTest, UnknownColumnAndTablePositions) {
  TestDatabase db;
  db.Exec("CREATE TABLE t(a INTEGER)");
  std::vector<Ran> ran;
  EXPECT_EQ(RunScript(db, "SELECT a FROM t;\nSELECT a,\n       nope FROM t;", &ran).message(),
            "SQL error at line 3 column 8: no such column: nope");
  // SQLite (3.40) gives no offset for an unknown table: the statement's start.
  EXPECT_EQ(RunScript(db, "SELECT 1; SELECT * FROM missing", &ran).message(),
            "SQL error at line 1 column 11: no such table: missing");
  // Columns count characters: 'é' is two bytes, one column.
  EXPECT_EQ(RunScript(db, "SELECT '\xc3\xa9', nope", &ran).message(),
            "SQL error at line 1 column 13: no such column: nope");
}

TEST(QuerySqlScriptTest, StepErrorIsAtTheStatementStart) {
  TestDatabase db;
  std::vector<Ran> ran;
  EXPECT_EQ(RunScript(db, "SELECT 1;\n  SELECT abs(-9223372036854775808);", &ran).message(),
            "SQL error at line 2 column 3: integer overflow");
}

TEST(QuerySqlScriptTest, LinesCountFromFirstLine) {
  TestDatabase db;
  std::vector<Ran> ran;
  EXPECT_EQ(RunScript(db, "SELECT\n  nope;", &ran, 40).message(),
            "SQL error at line 41 column 3: no such column: nope");
}

TEST(QuerySqlScriptTest, LaterStatementsSeeEarlierOnes) {
  TestDatabase db;
  std::vector<Ran> ran;
  ASSERT_TRUE(RunScript(db, "CREATE VIEW v AS SELECT 7 AS x; SELECT x FROM v;", &ran).ok());
  EXPECT_EQ(ran.size(), 2u);
}

TEST(QuerySqlScriptTest, UnterminatedStringIsAnError) {
  TestDatabase db;
  std::vector<Ran> ran;
  EXPECT_EQ(RunScript(db, "SELECT 1;\nSELECT 'abc", &ran).message(),
            "SQL error at line 2 column 8: unrecognized token: \"'abc\"");
}

TEST(QuerySqlScriptTest, IncompleteInputIsAtTheEnd) {
  TestDatabase db;
  std::vector<Ran> ran;
  EXPECT_EQ(RunScript(db, "SELECT 1;\nSELECT 2 +\n", &ran).message(),
            "SQL error at line 3 column 1: incomplete input");
}

}  // namespace
}  // namespace sluice
