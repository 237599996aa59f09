// _interval_intersect!'s errors. Its answers are compared with upstream's
// by tests/data/query/queries/ps_interval_intersect.sql and
// ps_intervals_intersect.sql (query_reference_test.cc).
#include "user/query/engine/operators/interval_intersect.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <string>

#include "tests/user/query/query_csv_test_util.h"
#include "user/query/engine/query_engine.h"

namespace sluice {
namespace {

std::string TracePath() {
  std::string dir = "tests/data";
  if (const char* env = std::getenv("SLUICE_TEST_DATA_DIR")) dir = env;
  return dir + "/query/cpu_cycles.pftrace";
}

// Upstream reads a WITH clause's name; sluice's operator reads each table
// in a statement of its own, so it cannot: the error says so and what to do.
TEST(IntervalIntersectTest, AWithClauseNameIsRefusedWithTheWayOut) {
  auto engine = QueryEngine::Open(TracePath());
  ASSERT_TRUE(engine.ok()) << engine.status().message();
  auto csv = testing::QueryToTraceProcessorCsv(
      (*engine)->db(),
      "INCLUDE PERFETTO MODULE intervals.intersect;\n"
      "WITH a AS (SELECT 1 AS id, 0 AS ts, 10 AS dur) SELECT * FROM _interval_intersect!((a, a), ());",
      (*engine)->dialect());
  ASSERT_FALSE(csv.ok());
  EXPECT_NE(csv.status().message().find("no such table: a"), std::string::npos) << csv.status().message();
  EXPECT_NE(csv.status().message().find("make it a PERFETTO TABLE or VIEW first"), std::string::npos)
      << csv.status().message();
}

// The same tables as PERFETTO TABLEs work.
TEST(IntervalIntersectTest, NamedTablesWork) {
  auto engine = QueryEngine::Open(TracePath());
  ASSERT_TRUE(engine.ok()) << engine.status().message();
  auto csv = testing::QueryToTraceProcessorCsv(
      (*engine)->db(),
      "INCLUDE PERFETTO MODULE intervals.intersect;\n"
      "CREATE PERFETTO TABLE a AS SELECT 1 AS id, 0 AS ts, 10 AS dur;\n"
      "CREATE PERFETTO TABLE b AS SELECT 7 AS id, 5 AS ts, 10 AS dur;\n"
      "SELECT ts, dur, id_0, id_1 FROM _interval_intersect!((a, b), ());",
      (*engine)->dialect());
  ASSERT_TRUE(csv.ok()) << csv.status().message();
  EXPECT_EQ(*csv, "\"ts\",\"dur\",\"id_0\",\"id_1\"\n5,5,1,7\n");
}

}  // namespace
}  // namespace sluice
