// Tests of the trace_processor_shell CSV formatter and the difference report
// that QueryReferenceTest relies on, over a hand-made SQLite database. The
// expected texts are what Perfetto v58's `trace_processor_shell -q` printed
// for the same SELECTs (checked by hand when this was written).
#include "tests/user/query/query_csv_test_util.h"

#include <sqlite3.h>

#include <gtest/gtest.h>

#include <string>

namespace sluice::testing {
namespace {

class QueryCsvTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_EQ(sqlite3_open(":memory:", &db_), SQLITE_OK);
    Exec(
        "create table t(ts int, name text, value real, note text);"
        "insert into t values (30, 'sched_switch', 1.5, null);"
        "insert into t values (10, 'print', 4294967295, 'marker 1\n');"
        "insert into t values (20, 'a,b\"c', -0.25, '');");
  }
  void TearDown() override { sqlite3_close(db_); }

  void Exec(const char* sql) {
    char* error = nullptr;
    ASSERT_EQ(sqlite3_exec(db_, sql, nullptr, nullptr, &error), SQLITE_OK) << error;
  }
  std::string Csv(std::string_view sql) {
    StatusOr<std::string> csv = QueryToTraceProcessorCsv(db_, sql);
    EXPECT_TRUE(csv.ok()) << csv.status().message();
    return csv.value_or("");
  }

  sqlite3* db_ = nullptr;
};

TEST_F(QueryCsvTest, FormatsEachTypeAsTheShellDoes) {
  EXPECT_EQ(Csv("select ts, name, value, note from t order by ts;"),
            "\"ts\",\"name\",\"value\",\"note\"\n"
            "10,\"print\",4294967295.000000,\"marker 1\n\"\n"
            "20,\"a,b\"c\",-0.250000,\"\"\n"
            "30,\"sched_switch\",1.500000,\"[NULL]\"\n");
}

TEST_F(QueryCsvTest, ExpressionsKeepTheirSqliteTypes) {
  // sum() of integers stays an integer, of reals a real; count() is an
  // integer; a blob prints as a placeholder; 1e20 prints in full.
  EXPECT_EQ(Csv("select sum(ts) as s, sum(value) as v, count(note) as n, x'00ff' as b, "
                "1e20 as big, -0.0000001 as tiny from t"),
            "\"s\",\"v\",\"n\",\"b\",\"big\",\"tiny\"\n"
            "60,4294967296.250000,2,\"<raw bytes>\",100000000000000000000.000000,-0.000000\n");
}

TEST_F(QueryCsvTest, EmptyResultStillHasTheHeader) {
  EXPECT_EQ(Csv("select ts as \"a b\" from t where 0"), "\"a b\"\n");
}

TEST_F(QueryCsvTest, CommentsAndSeveralStatements) {
  // One table per statement with columns, an empty line between tables;
  // statements without columns and trailing comments print nothing.
  EXPECT_EQ(Csv("-- leading comment\ncreate temp view v as select 1 as one;\n"
                "select one from v;\nselect ts from t where ts > 20; -- trailing\n"),
            "\"one\"\n1\n\n\"ts\"\n30\n");
}

TEST_F(QueryCsvTest, SqlErrorsAreReported) {
  StatusOr<std::string> csv = QueryToTraceProcessorCsv(db_, "select nope from t");
  ASSERT_FALSE(csv.ok());
  EXPECT_NE(csv.status().message().find("no such column: nope"), std::string::npos)
      << csv.status().message();
}

TEST(QueryCsvDifferenceTest, EqualTextsHaveNoDifference) {
  EXPECT_EQ(DescribeCsvDifference("\"a\"\n1\n", "\"a\"\n1\n"), "");
}

TEST(QueryCsvDifferenceTest, NamesTheFirstDifferingLines) {
  std::string expected = "\"a\",\"b\"\n1,2\n3,4\n5,6\n";
  std::string actual = "\"a\",\"b\"\n1,2\n3,5\n5,6\n7,8\n";
  EXPECT_EQ(DescribeCsvDifference(expected, actual),
            "expected 4 lines, actual 5 lines; first difference at line 3:\n"
            "  line 3 expected: 3,4\n"
            "  line 3 actual:   3,5\n"
            "  line 5 expected: <none>\n"
            "  line 5 actual:   7,8\n");
}

TEST(QueryCsvDifferenceTest, StopsAfterMaxLines) {
  std::string expected = "\"a\"\n1\n2\n3\n4\n";
  std::string actual = "\"a\"\n9\n9\n9\n9\n";
  std::string diff = DescribeCsvDifference(expected, actual, 2);
  EXPECT_NE(diff.find("line 3 actual"), std::string::npos) << diff;
  EXPECT_EQ(diff.find("line 4"), std::string::npos) << diff;
}

TEST(QueryCsvDifferenceTest, OnlyTheFinalNewline) {
  EXPECT_EQ(DescribeCsvDifference("\"a\"\n1\n", "\"a\"\n1"),
            "expected 2 lines, actual 2 lines; the texts differ only in their last newline\n");
}

}  // namespace
}  // namespace sluice::testing
