#include "user/query/engine/perfetto_sql/perfetto_sql_statement.h"

#include <gtest/gtest.h>

namespace sluice {
namespace {

PerfettoSqlStatement Parse(std::string_view text) {
  PerfettoSqlStatement st;
  PerfettoSqlParseError error;
  EXPECT_TRUE(ParsePerfettoSqlStatement(text, &st, &error)) << text << ": " << error.message;
  return st;
}

PerfettoSqlParseError Fail(std::string_view text) {
  PerfettoSqlStatement st;
  PerfettoSqlParseError error;
  EXPECT_FALSE(ParsePerfettoSqlStatement(text, &st, &error)) << text;
  return error;
}

TEST(PerfettoSqlStatementTest, PlainSqlIsLeftAlone) {
  for (const char* sql : {"select 1", "CREATE TABLE t(x)", "create view perfetto as select 1",
                          "drop table perfetto", "  -- include perfetto module x\n select 2;"}) {
    EXPECT_EQ(Parse(sql).kind, PerfettoSqlStatementKind::kNone) << sql;
  }
}

TEST(PerfettoSqlStatementTest, Include) {
  PerfettoSqlStatement st = Parse("INCLUDE PERFETTO MODULE sched.time_in_state;");
  EXPECT_EQ(st.kind, PerfettoSqlStatementKind::kInclude);
  EXPECT_EQ(st.name, "sched.time_in_state");
  EXPECT_EQ(Parse("include perfetto module linux.cpu.*").name, "linux.cpu.*");
  EXPECT_EQ(Parse("INCLUDE PERFETTO MODULE *;").name, "*");
  EXPECT_EQ(Fail("INCLUDE PERFETTO MODULE sched.;").message, "expected a module name (a.b.c) at ';'");
  EXPECT_EQ(Fail("INCLUDE PERFETTO sched").message, "expected MODULE at 'sched'");
  const PerfettoSqlParseError e = Fail("INCLUDE PERFETTO MODULE a b;");
  EXPECT_EQ(e.offset, 26u);
}

TEST(PerfettoSqlStatementTest, TablesAndViews) {
  PerfettoSqlStatement st = Parse("CREATE OR REPLACE PERFETTO TABLE foo(a INT, b STRING) AS SELECT 1 AS a, 'x' AS b;");
  EXPECT_EQ(st.kind, PerfettoSqlStatementKind::kCreateTable);
  EXPECT_TRUE(st.or_replace);
  EXPECT_EQ(st.name, "foo");
  ASSERT_EQ(st.columns.size(), 2u);
  EXPECT_EQ(st.columns[1].name, "b");
  EXPECT_EQ(st.columns[1].type, "STRING");
  EXPECT_EQ(st.body, "SELECT 1 AS a, 'x' AS b");
  st = Parse("create perfetto view v as select * from sched");
  EXPECT_EQ(st.kind, PerfettoSqlStatementKind::kCreateView);
  EXPECT_TRUE(st.columns.empty());
  EXPECT_EQ(st.body, "select * from sched");
  EXPECT_EQ(Parse("CREATE PERFETTO TABLE t(id ID(slice.id), p JOINID(thread.id)) AS SELECT 1").columns[1].type,
            "JOINID(thread.id)");
  EXPECT_NE(Fail("CREATE PERFETTO TABLE t(a WIDGET) AS SELECT 1").message.find("unknown type WIDGET"),
            std::string::npos);
  EXPECT_EQ(Fail("CREATE PERFETTO TABLE t(a INT, a INT) AS SELECT 1").message, "'a' named twice at ')'");
  EXPECT_EQ(Fail("CREATE PERFETTO TABLE t AS").message, "expected a body after AS at the end of the statement");
  EXPECT_EQ(Fail("CREATE PERFETTO WIDGET w").message,
            "expected TABLE, VIEW, FUNCTION, MACRO or INDEX after PERFETTO at 'WIDGET'");
}

TEST(PerfettoSqlStatementTest, Functions) {
  PerfettoSqlStatement st =
      Parse("CREATE PERFETTO FUNCTION f(x INT, s STRING, a ANY)\nRETURNS DOUBLE AS SELECT $x * 1.5;");
  EXPECT_EQ(st.kind, PerfettoSqlStatementKind::kCreateFunction);
  EXPECT_EQ(st.columns.size(), 3u);
  EXPECT_EQ(st.return_type, "DOUBLE");
  EXPECT_EQ(st.body, "SELECT $x * 1.5");
  st = Parse("CREATE PERFETTO FUNCTION g() RETURNS TABLE(id LONG, name STRING) AS SELECT 1 AS id, 'a' AS name");
  EXPECT_EQ(st.return_type, "TABLE");
  ASSERT_EQ(st.returns.size(), 2u);
  EXPECT_EQ(st.returns[0].type, "LONG");
  EXPECT_NE(Fail("CREATE PERFETTO FUNCTION f() RETURNS ANY AS SELECT 1").message.find("unknown type ANY"),
            std::string::npos);
  EXPECT_NE(Fail("CREATE PERFETTO FUNCTION f(x INT) RETURNS INT DELEGATES TO __intrinsic_f").message.find(
                "DELEGATES TO"),
            std::string::npos);
}

TEST(PerfettoSqlStatementTest, MacrosAndIndexes) {
  PerfettoSqlStatement st =
      Parse("CREATE PERFETTO MACRO twice(x Expr, t TableOrSubquery) RETURNS Expr AS ($x) * 2;");
  EXPECT_EQ(st.kind, PerfettoSqlStatementKind::kCreateMacro);
  ASSERT_EQ(st.columns.size(), 2u);
  EXPECT_EQ(st.columns[1].type, "TableOrSubquery");
  EXPECT_EQ(st.return_type, "Expr");
  EXPECT_EQ(st.body, "($x) * 2");
  st = Parse("CREATE PERFETTO INDEX i ON t(a, b)");
  EXPECT_EQ(st.kind, PerfettoSqlStatementKind::kCreateIndex);
  EXPECT_EQ(st.on_table, "t");
  EXPECT_EQ(st.columns.size(), 2u);
  st = Parse("DROP PERFETTO INDEX i ON t;");
  EXPECT_EQ(st.kind, PerfettoSqlStatementKind::kDropIndex);
  EXPECT_EQ(Fail("CREATE PERFETTO INDEX i ON t()").message,
            "an index needs at least one column at the end of the statement");
}

}  // namespace
}  // namespace sluice
