// sched.thread_executing_span's wakeup graph and critical path on
// tests/data/query/critical_path.textproto, against rows derived by hand:
// upstream v58.2's trace_processor_shell cannot include the module (its
// critical path walk fails with "table must be bound"), so there is no
// reference output to commit. The graph's tables were checked against
// upstream's own SQL of them, run on the same traces (without the walk).
#include "user/query/engine/operators/critical_path.h"

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
  return dir + "/query/critical_path.pftrace";
}

class CriticalPathTest : public ::testing::Test {
 protected:
  std::string Csv(const std::string& sql) {
    auto engine = QueryEngine::Open(TracePath());
    if (!engine.ok()) {
      ADD_FAILURE() << engine.status().message();
      return "";
    }
    auto csv = testing::QueryToTraceProcessorCsv(
        (*engine)->db(), "INCLUDE PERFETTO MODULE sched.thread_executing_span;\n" + sql, (*engine)->dialect());
    EXPECT_TRUE(csv.ok()) << csv.status().message();
    return csv.ok() ? *csv : "";
  }
};

// The spans: cp_worker (utid 2) woken by cp_helper at 1250 and 1650;
// cp_main (utid 1) woken by cp_worker at 1300 and 1700. cp_helper has no
// span of its own (it never became runnable), so the worker's spans have
// no waker; each lasts until its thread's next sleep that a span follows.
TEST_F(CriticalPathTest, WakeupGraph) {
  EXPECT_EQ(Csv("SELECT utid, id, waker_id, ts, idle_state, idle_dur, prev_id, dur FROM _wakeup_graph ORDER BY id;"),
            "\"utid\",\"id\",\"waker_id\",\"ts\",\"idle_state\",\"idle_dur\",\"prev_id\",\"dur\"\n"
            "2,5,\"[NULL]\",1250,\"S\",100,\"[NULL]\",350\n"
            "1,8,5,1300,\"S\",200,\"[NULL]\",200\n"
            "2,13,\"[NULL]\",1650,\"S\",50,5,100\n"
            "1,16,13,1700,\"S\",200,8,200\n");
}

// cp_main's critical path over [1000, 2000): before its first wakeup it
// waited on cp_worker running (1250-1300), then ran (1300-1500); before
// the second, cp_worker's earlier span ran (1500-1600), its later span was
// in the kernel and ran (1600-1700), then cp_main ran (1700-1900). Time
// cp_worker slept before cp_helper woke it is nobody's (no span to blame).
TEST_F(CriticalPathTest, ThreadExecutingSpanCriticalPath) {
  EXPECT_EQ(Csv("SELECT root_utid, root_id, id, ts, dur, utid "
                "FROM _thread_executing_span_critical_path(1, 1000, 1000) ORDER BY ts;"),
            "\"root_utid\",\"root_id\",\"id\",\"ts\",\"dur\",\"utid\"\n"
            "1,8,5,1250,50,2\n"
            "1,8,8,1300,200,1\n"
            "1,16,5,1500,100,2\n"
            "1,16,13,1600,50,2\n"
            "1,16,13,1650,50,2\n"
            "1,16,16,1700,200,1\n");
}

// Cut to an interval: only what falls inside it, clipped.
TEST_F(CriticalPathTest, CutToTheInterval) {
  EXPECT_EQ(Csv("SELECT root_id, id, ts, dur FROM _thread_executing_span_critical_path(1, 1280, 300) ORDER BY ts;"),
            "\"root_id\",\"id\",\"ts\",\"dur\"\n"
            "8,5,1280,20\n"
            "8,8,1300,200\n"
            "16,5,1500,80\n");
}

// A thread with no spans, and an interval the thread's spans do not reach,
// give no rows rather than an error.
TEST_F(CriticalPathTest, NoSpansNoRows) {
  EXPECT_EQ(Csv("SELECT count(*) AS n FROM _thread_executing_span_critical_path(3, 1000, 1000);"), "\"n\"\n0\n");
}

}  // namespace
}  // namespace sluice
