// PerfettoSQL end to end on an imported trace: the statements, functions,
// macros and modules as `sluice query` runs them (QueryEngine::dialect()).
// What upstream answers for the same SQL is checked by
// tests/user/query/query_reference_test.cc (tests/data/query/queries/ps_*.sql).
#include "user/query/engine/perfetto_sql/perfetto_sql.h"

#include <sqlite3.h>

#include <gtest/gtest.h>

#include "tests/user/query/query_test_util.h"
#include "user/query/engine/query_engine.h"
#include "user/query/engine/sql_statements.h"

namespace sluice {
namespace {

class PerfettoSqlTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto engine = QueryEngine::Open(testing::QueryTracePath("default"));
    ASSERT_TRUE(engine.ok()) << engine.status().message();
    engine_ = std::move(engine).value();
  }
  // Runs `script`; the last statement's rows ("a|b"), or "ERROR: message".
  std::vector<std::string> Run(const std::string& script) {
    std::vector<std::string> rows;
    Status status = RunSqlScript(
        engine_->db(), script,
        [&](const SqlStatement& s) {
          if (!s.last) return StepToEnd(s.stmt);
          rows.clear();
          int rc;
          while ((rc = sqlite3_step(s.stmt)) == SQLITE_ROW) {
            std::string row;
            for (int c = 0; c < sqlite3_column_count(s.stmt); c++) {
              const unsigned char* text = sqlite3_column_text(s.stmt, c);
              row += (c ? "|" : "") + std::string(text ? reinterpret_cast<const char*>(text) : "NULL");
            }
            rows.push_back(row);
          }
          return rc == SQLITE_DONE ? Status::Ok() : Status::Error(sqlite3_errmsg(engine_->db()));
        },
        1, engine_->dialect());
    if (!status.ok()) return {"ERROR: " + status.message()};
    return rows;
  }
  std::string One(const std::string& script) {
    std::vector<std::string> rows = Run(script);
    return rows.size() == 1 ? rows[0] : "<" + std::to_string(rows.size()) + " rows>";
  }
  std::unique_ptr<QueryEngine> engine_;
};

TEST_F(PerfettoSqlTest, IncludeRunsAModuleOnce) {
  EXPECT_EQ(One("INCLUDE PERFETTO MODULE time.conversion; SELECT time_to_ms(2500000000), time_from_s(3)"),
            "2500|3000000000");
  EXPECT_EQ(One("INCLUDE PERFETTO MODULE time.conversion; SELECT time_to_us(1999)"), "1");
  EXPECT_EQ(One("INCLUDE PERFETTO MODULE time.*; SELECT time_from_min(1)"), "60000000000");
}

TEST_F(PerfettoSqlTest, MissingAndForeignModulesAreOneLineErrors) {
  EXPECT_EQ(One("SELECT 1;\n  INCLUDE PERFETTO MODULE no.such.module;"),
            "ERROR: SQL error at line 2 column 3: no such module: no.such.module (sluice query --list-modules lists "
            "the modules sluice has)");
  EXPECT_EQ(One("INCLUDE PERFETTO MODULE android.startup.startups;"),
            "ERROR: SQL error at line 1 column 1: module android.startup.startups is written for android data, "
            "which a Linux kernel trace does not hold: sluice query has the modules for Linux kernel and atrace "
            "traces (sluice query --list-modules)");
  EXPECT_EQ(One("INCLUDE PERFETTO MODULE nothing.*;"),
            "ERROR: SQL error at line 1 column 1: no module matches nothing.* (sluice query --list-modules lists "
            "them)");
  EXPECT_EQ(One("INCLUDE PERFETTO MODULE sched.;"),
            "ERROR: SQL error at line 1 column 31: expected a module name (a.b.c) at ';'");
}

TEST_F(PerfettoSqlTest, TablesAndViewsCheckTheirDeclaredColumns) {
  EXPECT_EQ(One("CREATE PERFETTO TABLE cpus(cpu LONG, n LONG) AS SELECT cpu, count(*) AS n FROM sched GROUP BY cpu;"
                "SELECT count(*) FROM cpus"),
            "2");
  EXPECT_EQ(One("CREATE PERFETTO VIEW v(a LONG) AS SELECT 1 AS a, 2 AS b;"),
            "ERROR: SQL error at line 1 column 35: view v: column b is selected but not declared");
  EXPECT_EQ(One("CREATE PERFETTO TABLE t(a LONG, c LONG) AS SELECT 1 AS a;"),
            "ERROR: SQL error at line 1 column 44: table t: column c is declared but not selected");
  EXPECT_EQ(One("CREATE PERFETTO TABLE t AS SELECT 1 AS a; CREATE OR REPLACE PERFETTO TABLE t AS SELECT 2 AS a;"
                "SELECT a FROM t"),
            "2");
  EXPECT_EQ(One("CREATE PERFETTO TABLE t2 AS SELECT 1 AS a, 2 AS b; CREATE PERFETTO INDEX i ON t2(a, b);"
                "CREATE OR REPLACE PERFETTO INDEX i ON t2(b); DROP PERFETTO INDEX i ON t2; SELECT b FROM t2"),
            "2");
}

TEST_F(PerfettoSqlTest, ScalarFunctions) {
  EXPECT_EQ(One("CREATE PERFETTO FUNCTION add1(x LONG) RETURNS LONG AS SELECT $x + 1;"
                "SELECT add1(41), add1(NULL)"),
            "42|NULL");
  // First column of the first row; no row is NULL.
  EXPECT_EQ(One("CREATE PERFETTO FUNCTION first_utid(above LONG) RETURNS LONG AS "
                "SELECT utid FROM thread WHERE utid > $above ORDER BY utid;"
                "SELECT first_utid(0), first_utid(1000000)"),
            "1|NULL");
  // Recursion, and its bound.
  EXPECT_EQ(One("CREATE PERFETTO FUNCTION fact(n LONG) RETURNS LONG AS "
                "SELECT IIF($n <= 1, 1, $n * fact($n - 1));"
                "SELECT fact(10)"),
            "3628800");
  EXPECT_NE(One("CREATE PERFETTO FUNCTION forever(n LONG) RETURNS LONG AS SELECT forever($n + 1);"
                "SELECT forever(0)")
                .find("nest more than 64 calls deep"),
            std::string::npos);
  EXPECT_EQ(One("CREATE PERFETTO FUNCTION add1(x LONG) RETURNS LONG AS SELECT $x + 2;"),
            "ERROR: SQL error at line 1 column 55: function add1 already exists: use CREATE OR REPLACE PERFETTO "
            "FUNCTION");
  EXPECT_EQ(One("CREATE OR REPLACE PERFETTO FUNCTION add1(x LONG) RETURNS LONG AS SELECT $x + 2; SELECT add1(1)"), "3");
  EXPECT_EQ(One("CREATE PERFETTO FUNCTION bad(x LONG) RETURNS LONG AS SELECT $y;"),
            "ERROR: SQL error at line 1 column 54: function bad: its body uses $y, which is not one of its arguments "
            "(write them as $name)");
  EXPECT_EQ(One("CREATE PERFETTO FUNCTION bad2() RETURNS LONG AS SELECT nope FROM sched;"),
            "ERROR: SQL error at line 1 column 49: function bad2: no such column: nope");
}

TEST_F(PerfettoSqlTest, TableFunctions) {
  EXPECT_EQ(Run("CREATE PERFETTO FUNCTION upto(n LONG) RETURNS TABLE(i LONG, sq LONG) AS "
                "WITH RECURSIVE c(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM c WHERE i < $n) "
                "SELECT i, i * i AS sq FROM c;"
                "SELECT * FROM upto(3)"),
            (std::vector<std::string>{"1|1", "2|4", "3|9"}));
  // Called per row of a join, as ancestor_slice(s.id) is.
  EXPECT_EQ(One("SELECT sum(u.sq) FROM (SELECT 2 AS n UNION ALL SELECT 3) AS x JOIN upto(x.n) AS u"), "19");
  EXPECT_EQ(One("SELECT count(*) FROM upto"), "ERROR: SQL error at line 1 column 1: no query solution");
  EXPECT_EQ(One("CREATE PERFETTO FUNCTION cols() RETURNS TABLE(a LONG, b LONG) AS SELECT 1 AS a;"),
            "ERROR: SQL error at line 1 column 66: function cols: it returns column b, which its SELECT does not have");
}

TEST_F(PerfettoSqlTest, Macros) {
  EXPECT_EQ(One("CREATE PERFETTO MACRO count_of(t TableOrSubquery) RETURNS Expr AS (SELECT count(*) FROM $t);"
                "SELECT count_of!(sched) = (SELECT count(*) FROM sched), count_of!((SELECT 1 UNION ALL SELECT 2))"),
            "1|2");
  EXPECT_EQ(One("SELECT nope!(1)"),
            "ERROR: SQL error at line 1 column 8: no such macro: nope! (define it with CREATE PERFETTO MACRO, or "
            "INCLUDE the module that does)");
  // Bodies of tables, views and functions may call macros too.
  EXPECT_EQ(One("CREATE PERFETTO MACRO plus1(x Expr) RETURNS Expr AS ($x + 1);"
                "CREATE PERFETTO TABLE m1 AS SELECT plus1!(1) AS v;"
                "CREATE PERFETTO VIEW m2 AS SELECT plus1!(v) AS v FROM m1;"
                "CREATE PERFETTO FUNCTION m3(a LONG) RETURNS LONG AS SELECT plus1!($a);"
                "SELECT v, m3(v) FROM m2"),
            "3|4");
  EXPECT_EQ(One("CREATE PERFETTO TABLE m4 AS SELECT nope!(1);"),
            "ERROR: SQL error at line 1 column 36: no such macro: nope! (define it with CREATE PERFETTO MACRO, or "
            "INCLUDE the module that does)");
  EXPECT_EQ(One("CREATE PERFETTO MACRO bad() RETURNS Expr AS nope_column;\nSELECT bad!() FROM sched"),
            "ERROR: SQL error at line 2 column 1: no such column: nope_column");
}

TEST_F(PerfettoSqlTest, HelperFunctionsMatchUpstream) {
  // Upstream's answers for the same calls (trace_processor_shell v58.2).
  EXPECT_EQ(One("SELECT hash(1, 'x'), hash('sched'), str_split('a,,b', ',', 1), str_split('a:b', ':', 5)"),
            "5952180755994350292|" + One("SELECT hash('sched')") + "||NULL");
  EXPECT_EQ(One("SELECT 'sched_switch' REGEXP '^sched_', 'x' REGEXP 'y', NULL REGEXP 'y'"), "1|0|NULL");
  EXPECT_EQ(One("SELECT regexp('(', 'x')").rfind("ERROR: SQL error at line 1 column 1: regexp: invalid pattern '('", 0),
            0u);
  EXPECT_EQ(One("SELECT str_split('a', '', 0)"),
            "ERROR: SQL error at line 1 column 1: str_split: delimiter must be a non-empty string");
  EXPECT_EQ(One("SELECT hash(1.5)"),
            "ERROR: SQL error at line 1 column 1: HASH: argument 1 is not an integer or a string");
  EXPECT_EQ(One("SELECT string_agg(x, '+') FROM (SELECT 'a' AS x UNION ALL SELECT NULL UNION ALL SELECT 'b')"), "a+b");
  // EXTRACT_ARG gives what the args table holds, for every arg of a set.
  EXPECT_EQ(One("SELECT count(*) FROM args WHERE extract_arg(arg_set_id, key) IS NOT "
                "coalesce(int_value, string_value, real_value)"),
            "0");
  EXPECT_EQ(One("SELECT extract_arg(NULL, 'x'), extract_arg(arg_set_id, 'no_such_key') FROM ftrace_event LIMIT 1"),
            "NULL|NULL");
}

}  // namespace
}  // namespace sluice
