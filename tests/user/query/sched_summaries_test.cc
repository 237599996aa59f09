// sluice_thread_cpu and sluice_thread_runnable (user/query/sched_summaries.h)
// equal the GROUP BY queries they stand for, row for row, on every committed
// trace that has sched data.
#include "user/query/sched_summaries.h"

#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "tests/user/query/query_test_util.h"
#include "user/query/query_engine.h"

namespace sluice {
namespace {

using testing::Rows;

std::string TracePath(const std::string& name) {
  std::string dir = "tests/data";
  if (const char* env = std::getenv("SLUICE_TEST_DATA_DIR")) dir = env;
  return dir + "/query/" + name + ".pftrace";
}

class SchedSummariesTest : public ::testing::TestWithParam<std::string> {};

TEST_P(SchedSummariesTest, ThreadCpuEqualsGroupByOverSched) {
  StatusOr<std::unique_ptr<QueryEngine>> engine = QueryEngine::Open(TracePath(GetParam()));
  ASSERT_TRUE(engine.ok()) << engine.status().message();
  sqlite3* db = (*engine)->db();
  const std::vector<std::string> summary =
      Rows(db, "SELECT utid, cpu, runs, dur FROM sluice_thread_cpu ORDER BY utid, cpu");
  ASSERT_FALSE(summary.empty());
  EXPECT_EQ(summary, Rows(db, "SELECT utid, cpu, count(*), sum(dur) FROM sched WHERE dur >= 0 "
                              "GROUP BY utid, cpu ORDER BY utid, cpu"));
}

TEST_P(SchedSummariesTest, ThreadRunnableEqualsPercentilesOverThreadState) {
  StatusOr<std::unique_ptr<QueryEngine>> engine = QueryEngine::Open(TracePath(GetParam()));
  ASSERT_TRUE(engine.ok()) << engine.status().message();
  sqlite3* db = (*engine)->db();
  const std::vector<std::string> summary = Rows(
      db, "SELECT utid, waits, dur, p50_dur, p90_dur, p99_dur, max_dur FROM sluice_thread_runnable ORDER BY utid");
  ASSERT_FALSE(summary.empty());
  EXPECT_EQ(summary, Rows(db, "SELECT utid, count(*), sum(dur), percentile(dur, 50), percentile(dur, 90), "
                              "percentile(dur, 99), max(dur) FROM thread_state "
                              "WHERE state IN ('R', 'R+') AND dur >= 0 GROUP BY utid ORDER BY utid"));
}

INSTANTIATE_TEST_SUITE_P(CommittedTraces, SchedSummariesTest,
                         ::testing::Values("default", "nocompact", "bpf", "upstream", "loss_kernel",
                                           "atrace_rec", "atrace_bpf"));

TEST(SchedSummariesEmptyTest, TraceWithoutSchedGivesEmptyTables) {
  StatusOr<std::unique_ptr<QueryEngine>> engine = QueryEngine::Open(TracePath("atrace"));
  ASSERT_TRUE(engine.ok()) << engine.status().message();
  EXPECT_EQ(Rows((*engine)->db(), "SELECT count(*) FROM sluice_thread_cpu"), std::vector<std::string>{"0"});
  EXPECT_EQ(Rows((*engine)->db(), "SELECT count(*) FROM sluice_thread_runnable"), std::vector<std::string>{"0"});
}

}  // namespace
}  // namespace sluice
