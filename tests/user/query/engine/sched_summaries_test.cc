// sluice_thread_cpu, sluice_thread_runnable and sluice_thread_state_time
// (user/query/engine/sched_summaries.h)
// equal the GROUP BY queries they stand for, row for row, on every committed
// trace that has sched data.
#include "user/query/engine/sched_summaries.h"

#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "tests/user/query/query_test_util.h"
#include "user/query/engine/query_engine.h"

namespace sluice {
namespace {

using testing::Rows;

class SchedSummariesTest : public ::testing::TestWithParam<std::string> {};

TEST_P(SchedSummariesTest, ThreadCpuEqualsGroupByOverSched) {
  StatusOr<std::unique_ptr<QueryEngine>> engine = QueryEngine::Open(testing::QueryTracePath(GetParam()));
  ASSERT_TRUE(engine.ok()) << engine.status().message();
  sqlite3* db = (*engine)->db();
  const std::vector<std::string> summary =
      Rows(db, "SELECT utid, cpu, runs, dur FROM sluice_thread_cpu ORDER BY utid, cpu");
  ASSERT_FALSE(summary.empty());
  EXPECT_EQ(summary, Rows(db, "SELECT utid, cpu, count(*), sum(dur) FROM sched WHERE dur >= 0 "
                              "GROUP BY utid, cpu ORDER BY utid, cpu"));
}

// In the GROUP BY's own order too: sched.time_in_state's rows come in it.
TEST_P(SchedSummariesTest, ThreadStateTimeEqualsGroupByOverThreadState) {
  StatusOr<std::unique_ptr<QueryEngine>> engine = QueryEngine::Open(testing::QueryTracePath(GetParam()));
  ASSERT_TRUE(engine.ok()) << engine.status().message();
  sqlite3* db = (*engine)->db();
  const std::vector<std::string> summary = Rows(db, "SELECT utid, state, rows, dur FROM sluice_thread_state_time");
  ASSERT_FALSE(summary.empty());
  EXPECT_EQ(summary, Rows(db, "SELECT utid, state, count(*), sum(dur) FROM thread_state GROUP BY utid, state"));
}

TEST_P(SchedSummariesTest, ThreadRunnableEqualsPercentilesOverThreadState) {
  StatusOr<std::unique_ptr<QueryEngine>> engine = QueryEngine::Open(testing::QueryTracePath(GetParam()));
  ASSERT_TRUE(engine.ok()) << engine.status().message();
  sqlite3* db = (*engine)->db();
  const std::vector<std::string> summary = Rows(
      db, "SELECT utid, waits, dur, p50_dur, p90_dur, p99_dur, max_dur FROM sluice_thread_runnable ORDER BY utid");
  ASSERT_FALSE(summary.empty());
  EXPECT_EQ(summary, Rows(db, "SELECT utid, count(*), sum(dur), percentile(dur, 50), percentile(dur, 90), "
                              "percentile(dur, 99), max(dur) FROM thread_state "
                              "WHERE state IN ('R', 'R+') AND dur >= 0 GROUP BY utid ORDER BY utid"));
}

TEST_P(SchedSummariesTest, RunnableHistogramEqualsLog2BucketsOverThreadState) {
  StatusOr<std::unique_ptr<QueryEngine>> engine = QueryEngine::Open(testing::QueryTracePath(GetParam()));
  ASSERT_TRUE(engine.ok()) << engine.status().message();
  sqlite3* db = (*engine)->db();
  const std::vector<std::string> summary =
      Rows(db, "SELECT utid, bucket, lower_ns, waits FROM sluice_thread_runnable_histogram ORDER BY utid, bucket");
  ASSERT_FALSE(summary.empty());
  EXPECT_EQ(summary, Rows(db, "SELECT utid, cast(log2(max(dur, 1)) AS INT) AS b, 1 << cast(log2(max(dur, 1)) AS INT), "
                              "count(*) FROM thread_state WHERE state IN ('R', 'R+') AND dur >= 0 "
                              "GROUP BY utid, b ORDER BY utid, b"));
}

TEST_P(SchedSummariesTest, CpuTimelineHoldsEveryRunOnceWithinItsSpans) {
  StatusOr<std::unique_ptr<QueryEngine>> engine = QueryEngine::Open(testing::QueryTracePath(GetParam()));
  ASSERT_TRUE(engine.ok()) << engine.status().message();
  sqlite3* db = (*engine)->db();
  // Per CPU, the spans' run time adds up to the runs' time inside the trace.
  const std::vector<std::string> per_cpu =
      Rows(db, "SELECT cpu, sum(run_ns) FROM sluice_cpu_timeline GROUP BY cpu ORDER BY cpu");
  ASSERT_FALSE(per_cpu.empty());
  EXPECT_EQ(per_cpu, Rows(db, "SELECT cpu, sum(min(ts + dur, trace_end()) - max(ts, trace_start())) FROM sched "
                              "WHERE utid != 0 AND dur > 0 GROUP BY cpu ORDER BY cpu"));
  // No span holds more than its length per CPU, nor a top process more than
  // the span's total; spans tile the trace.
  EXPECT_EQ(Rows(db, "SELECT count(*) FROM sluice_cpu_timeline WHERE run_ns > dur OR top_run_ns > run_ns "
                     "OR top_run_ns <= 0 OR ts < trace_start() OR ts >= trace_end() OR bucket >= 1000"),
            std::vector<std::string>{"0"});
  EXPECT_EQ(Rows(db, "SELECT count(DISTINCT dur) FROM sluice_cpu_timeline"), std::vector<std::string>{"1"});
}

INSTANTIATE_TEST_SUITE_P(CommittedTraces, SchedSummariesTest,
                         ::testing::Values("default", "nocompact", "bpf", "upstream", "loss_kernel",
                                           "atrace_rec", "atrace_bpf"));

TEST(SchedSummariesEmptyTest, TraceWithoutSchedGivesEmptyTables) {
  StatusOr<std::unique_ptr<QueryEngine>> engine = QueryEngine::Open(testing::QueryTracePath("atrace"));
  ASSERT_TRUE(engine.ok()) << engine.status().message();
  EXPECT_EQ(Rows((*engine)->db(), "SELECT count(*) FROM sluice_thread_cpu"), std::vector<std::string>{"0"});
  EXPECT_EQ(Rows((*engine)->db(), "SELECT count(*) FROM sluice_thread_runnable"), std::vector<std::string>{"0"});
  EXPECT_EQ(Rows((*engine)->db(), "SELECT count(*) FROM sluice_thread_runnable_histogram"),
            std::vector<std::string>{"0"});
  EXPECT_EQ(Rows((*engine)->db(), "SELECT count(*) FROM sluice_cpu_timeline"), std::vector<std::string>{"0"});
}

// Few rows on a large (utid, cpu) grid: the sorted-pairs path, which the
// committed traces (a hundred threads on two CPUs) never take.
TEST(SchedSummariesSparseTest, ManyThreadsOnManyCpusAreSummedBySorting) {
  TraceStorage storage;
  auto add = [&](int64_t ts, int64_t dur, uint32_t cpu, uint32_t utid) {
    storage.sched.ts.push_back(ts);
    storage.sched.dur.push_back(dur);
    storage.sched.cpu.push_back(cpu);
    storage.sched.utid.push_back(utid);
    storage.sched.end_state.push_back(kNullStringId);
    storage.sched.priority.push_back(120);
  };
  add(10, 5, 7, 5000);
  add(20, 7, 0, 1);
  add(30, 3, 7, 5000);
  add(40, -1, 7, 5000);  // Still running at the end: left out.
  SchedSummaries summaries(&storage);
  const ThreadCpuSummary& cpu = summaries.thread_cpu();
  EXPECT_EQ(cpu.utid, (std::vector<uint32_t>{1, 5000}));
  EXPECT_EQ(cpu.cpu, (std::vector<uint32_t>{0, 7}));
  EXPECT_EQ(cpu.runs, (std::vector<int64_t>{1, 2}));
  EXPECT_EQ(cpu.dur, (std::vector<int64_t>{7, 8}));
}

}  // namespace
}  // namespace sluice
