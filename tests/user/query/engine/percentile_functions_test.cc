// median(), percentile() and percentile_cont() (user/query/engine/percentile_functions.h)
// against values worked out by hand with SQLite's documented rule, and their
// errors.
#include "user/query/engine/percentile_functions.h"

#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "tests/user/query/query_test_util.h"

namespace sluice {
namespace {

using testing::Rows;
using testing::TestDatabase;

class PercentileFunctionsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(RegisterPercentileFunctions(db_.db()).ok());
    // 1, 2, 3, 4 in group a (shuffled), one value in b, only NULL in c.
    db_.Exec("CREATE TABLE v(g TEXT, y); INSERT INTO v VALUES ('a', 3), ('a', 1), ('a', 4), ('a', 2), "
             "('a', NULL), ('b', 7.5), ('c', NULL)");
  }
  TestDatabase db_;
};

TEST_F(PercentileFunctionsTest, InterpolatesBetweenTheNearestInputs) {
  // Sorted 1,2,3,4: position (n-1)*P/100.
  EXPECT_EQ(Rows(db_.db(), "SELECT percentile(y, 0), percentile(y, 25), percentile(y, 50), "
                           "percentile(y, 90), percentile(y, 100) FROM v WHERE g = 'a'"),
            std::vector<std::string>{"1.0|1.75|2.5|3.7|4.0"});
  EXPECT_EQ(Rows(db_.db(), "SELECT median(y), percentile_cont(y, 0.25) FROM v WHERE g = 'a'"),
            std::vector<std::string>{"2.5|1.75"});
}

TEST_F(PercentileFunctionsTest, GroupsOneValueAndNoValue) {
  EXPECT_EQ(Rows(db_.db(), "SELECT g, percentile(y, 99), median(y) FROM v GROUP BY g ORDER BY g"),
            (std::vector<std::string>{"a|3.97|2.5", "b|7.5|7.5", "c|NULL|NULL"}));
  EXPECT_EQ(Rows(db_.db(), "SELECT percentile(y, 50) FROM v WHERE 0"), std::vector<std::string>{"NULL"});
}

TEST_F(PercentileFunctionsTest, RefusesWhatSqliteRefuses) {
  EXPECT_EQ(Rows(db_.db(), "SELECT percentile(y, 101) FROM v"),
            std::vector<std::string>{"ERROR: percentile(): P must be between 0 and 100"});
  EXPECT_EQ(Rows(db_.db(), "SELECT percentile_cont(y, 2) FROM v"),
            std::vector<std::string>{"ERROR: percentile_cont(): P must be between 0 and 1"});
  EXPECT_EQ(Rows(db_.db(), "SELECT percentile(y, 'x') FROM v"),
            std::vector<std::string>{"ERROR: percentile(): P is not a number"});
  EXPECT_EQ(Rows(db_.db(), "SELECT percentile(y, rowid) FROM v"),
            std::vector<std::string>{"ERROR: percentile(): P is not the same for all rows"});
  EXPECT_EQ(Rows(db_.db(), "SELECT median(x) FROM (SELECT 'text' AS x)"),
            std::vector<std::string>{"ERROR: median(): an input is not a number"});
  EXPECT_EQ(Rows(db_.db(), "SELECT median(x) FROM (SELECT 1e999 AS x)"),
            std::vector<std::string>{"ERROR: median(): an input is infinite"});
}

TEST_F(PercentileFunctionsTest, NumericTextCountsAsANumber) {
  EXPECT_EQ(Rows(db_.db(), "SELECT median(x) FROM (SELECT '5' AS x UNION ALL SELECT 7)"),
            std::vector<std::string>{"6.0"});
}

TEST(InterpolatedPercentileTest, MatchesTheRuleOnUnsortedInput) {
  std::vector<double> values = {40, 10, 30, 20};
  EXPECT_DOUBLE_EQ(InterpolatedPercentile(values, 0.5), 25);
  EXPECT_DOUBLE_EQ(InterpolatedPercentile(values, 1.0), 40);
  EXPECT_DOUBLE_EQ(InterpolatedPercentile(values, 0.0), 10);
  EXPECT_DOUBLE_EQ(InterpolatedPercentile(values, 0.99), 39.7);
  std::vector<double> one = {5};
  EXPECT_DOUBLE_EQ(InterpolatedPercentile(one, 0.9), 5);
}

}  // namespace
}  // namespace sluice
