// SPAN_JOIN's errors, and where sluice answers differently from upstream on
// purpose. Its answers on well-formed input are compared with upstream's by
// tests/data/query/queries/ps_span_join.sql (query_reference_test.cc).
#include "user/query/engine/operators/span_join.h"

#include <sqlite3.h>

#include <gtest/gtest.h>

#include "tests/user/query/query_test_util.h"
#include "user/query/engine/sql_statements.h"

namespace sluice {
namespace {

using testing::Rows;

class SpanJoinTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(RegisterSpanJoin(db_.db()).ok());
    ASSERT_TRUE(ExecSql(db_.db(),
                        "CREATE TABLE a(ts INT, dur INT, cpu INT, a_name TEXT);"
                        "CREATE TABLE b(ts INT, dur INT, cpu INT, b_name TEXT);"
                        "INSERT INTO a VALUES (40, 10, 0, 'a');"
                        "INSERT INTO b VALUES (50, 0, 0, 'b_instant_at_a_end');")
                    .ok());
  }
  std::string Create(const std::string& args, const char* op = "SPAN_JOIN") {
    Status st = ExecSql(db_.db(), "DROP TABLE IF EXISTS j; CREATE VIRTUAL TABLE j USING " + std::string(op) + "(" +
                                      args + ")");
    return st.ok() ? "" : st.message();
  }
  testing::TestDatabase db_;
};

// Upstream leaves out the instant of b at the end of a's span [40, 50): 50
// is outside that span, so an outer join owes b's row there, as upstream
// itself gives it when a has no span ending at 50.
TEST_F(SpanJoinTest, AnOuterJoinKeepsAnInstantAtTheOtherSidesSpanEnd) {
  ASSERT_EQ(Create("a PARTITIONED cpu, b PARTITIONED cpu", "SPAN_OUTER_JOIN"), "");
  EXPECT_EQ(Rows(db_.db(), "SELECT ts, dur, cpu, a_name, b_name FROM j"),
            (std::vector<std::string>{"40|10|0|a|NULL", "50|0|0|NULL|b_instant_at_a_end"}));
}

// Upstream does not check that a table's spans do not overlap within a
// partition and returns wrong rows (negative durations) when they do.
TEST_F(SpanJoinTest, OverlappingSpansInOnePartitionAreAnError) {
  ASSERT_TRUE(ExecSql(db_.db(), "INSERT INTO b VALUES (10, 30, 0, 'x'), (20, 5, 0, 'y')").ok());
  ASSERT_EQ(Create("a PARTITIONED cpu, b PARTITIONED cpu"), "");
  EXPECT_EQ(Rows(db_.db(), "SELECT count(*) FROM j"),
            std::vector<std::string>{"ERROR: SPAN_JOIN: spans of b overlap in partition cpu = 0 at ts 20: each "
                                     "table's spans must not overlap within a partition (upstream would return wrong "
                                     "rows); partition it further or merge its spans first"});
}

TEST_F(SpanJoinTest, BadDefinitionsAreOneLineErrors) {
  EXPECT_EQ(Create("a PARTITIONED cpu"),
            "SPAN_JOIN takes two tables: SPAN_JOIN(t1 [PARTITIONED c], t2 [PARTITIONED c])");
  ASSERT_TRUE(ExecSql(db_.db(), "CREATE TABLE n(x INT); CREATE TABLE c(ts INT, dur INT, core INT, a_name TEXT);"
                                "CREATE TABLE s(ts INT, dur INT, cpu TEXT)")
                  .ok());
  EXPECT_EQ(Create("a PARTITIONED cpu, nope PARTITIONED cpu"), "SPAN_JOIN: no such table: nope");
  EXPECT_EQ(Create("a PARTITIONED cpu, n"), "SPAN_JOIN: n has no ts column");
  EXPECT_EQ(Create("a PARTITIONED cpu, b PARTITIONED utid"), "SPAN_JOIN: b has no column utid to partition by");
  EXPECT_EQ(Create("a PARTITIONED cpu, c PARTITIONED core"),
            "SPAN_JOIN: both tables are partitioned, by different columns (cpu and core): partition them by the same "
            "one");
  EXPECT_EQ(Create("a, c"), "SPAN_JOIN: column a_name is in both tables (and not their partition): select it under "
                            "another name on one side");
  EXPECT_EQ(Create("a PARTITIONED ts, b"), "SPAN_JOIN: a cannot be partitioned by ts");
  EXPECT_EQ(Create("a PARTITIONED, b"),
            "SPAN_JOIN: cannot read 'a PARTITIONED' (SPAN_JOIN(table [PARTITIONED column], table [PARTITIONED "
            "column]))");
  ASSERT_TRUE(ExecSql(db_.db(), "INSERT INTO s VALUES (1, 1, 'zero')").ok());
  ASSERT_EQ(Create("s PARTITIONED cpu, b PARTITIONED cpu"), "");
  EXPECT_EQ(Rows(db_.db(), "SELECT * FROM j"),
            std::vector<std::string>{"ERROR: SPAN_JOIN: partition column cpu of s holds a value that is not an integer"});
}

TEST_F(SpanJoinTest, EmptyTablesJoinToNothing) {
  ASSERT_TRUE(ExecSql(db_.db(), "DELETE FROM a; DELETE FROM b").ok());
  for (const char* op : {"SPAN_JOIN", "SPAN_LEFT_JOIN", "SPAN_OUTER_JOIN"}) {
    ASSERT_EQ(Create("a PARTITIONED cpu, b PARTITIONED cpu", op), "");
    EXPECT_EQ(Rows(db_.db(), "SELECT count(*) FROM j"), std::vector<std::string>{"0"}) << op;
  }
}

}  // namespace
}  // namespace sluice
