#include "user/query/importer/sched_tracker.h"

#include <gtest/gtest.h>

#include "tests/user/query/importer/tracker_test_util.h"

namespace sluice {
namespace {

// FeedSchedFull (tracker_test_util.cc) feeds tests/data/query/
// sched_full.textproto; the expected rows are what upstream
// trace_processor_shell v58.2 printed for that trace (see there).
TEST(SchedTrackerTest, SchedRowsMatchTraceProcessor) {
  TrackerFeeder f;
  FeedSchedFull(f);
  EXPECT_EQ(f.SchedCsv(),
            R"("ts","dur","cpu","tid","name","end_state","priority"
2000,200,0,100,"app","S",120
2010,140,1,101,"worker","S",120
2150,900,1,0,"swapper","R",120
2200,300,0,101,"worker","R+",110
2500,300,0,102,"renamed","I",120
2800,200,0,200,"child","Z",120
3000,200,0,0,"swapper","R",120
3050,100,1,100,"app","[NULL]",120
3150,-1,1,0,"swapper","[NULL]",120
3200,-1,0,200,"reuse","[NULL]",120
3300,-1,0,0,"swapper","[NULL]",120
)");
  EXPECT_EQ(f.sched.mismatched_sched_switch_tids(), 1);
  EXPECT_EQ(f.sched.task_state_invalid(), 1);
}

TEST(SchedTrackerTest, ThreadStateRowsMatchTraceProcessor) {
  TrackerFeeder f;
  FeedSchedFull(f);
  EXPECT_EQ(f.ThreadStateCsv(),
            R"("ts","dur","cpu","tid","state","io_wait","waker_tid"
2000,200,0,100,"Running","[NULL]","[NULL]"
2010,140,1,101,"Running","[NULL]","[NULL]"
2150,50,"[NULL]",101,"S","[NULL]","[NULL]"
2200,750,"[NULL]",100,"S","[NULL]","[NULL]"
2200,300,0,101,"Running","[NULL]","[NULL]"
2300,200,"[NULL]",102,"R","[NULL]",101
2400,400,"[NULL]",200,"R","[NULL]",101
2500,100,"[NULL]",101,"R+","[NULL]","[NULL]"
2500,300,0,102,"Running","[NULL]","[NULL]"
2600,-1,"[NULL]",101,"R","[NULL]",102
2800,-1,"[NULL]",102,"I","[NULL]","[NULL]"
2800,200,0,200,"Running","[NULL]","[NULL]"
2950,100,"[NULL]",100,"R","[NULL]",0
3000,-1,"[NULL]",200,"Z","[NULL]","[NULL]"
3050,100,1,100,"Running","[NULL]","[NULL]"
3150,100,"[NULL]",100,"[NULL]","[NULL]","[NULL]"
3200,-1,0,200,"Running","[NULL]","[NULL]"
3250,-1,"[NULL]",100,"R","[NULL]",0
3260,-1,"[NULL]",400,"R","[NULL]",0
3300,-1,"[NULL]",999,"D","[NULL]","[NULL]"
)");
}

// tests/data/query/sched_compact.textproto, as above: two CPUs in
// compact_sched form. The first switch of each CPU makes no row; a waking
// before any switch on its CPU is dropped; the waker of a compact waking is
// the task the CPU's last switch put there.
TEST(SchedTrackerTest, CompactSwitchesMatchTraceProcessor) {
  TrackerFeeder f;
  f.sched.SetKernelVersion(6, 1);
  EXPECT_EQ(f.sched.OnWakingCompact(900, 1, 300, 0), kNullU32);
  EXPECT_EQ(f.sched.OnSwitchCompact(1000, 0, 0, 100, "app", 120), kNullU32);
  EXPECT_EQ(f.sched.OnSwitchCompact(1010, 1, 0, 0, "swapper/1", 120), kNullU32);
  uint32_t app = f.processes.GetOrCreateThread(100);
  EXPECT_EQ(f.sched.OnWakingCompact(1050, 0, 200, 0), app);
  EXPECT_EQ(f.sched.OnSwitchCompact(1100, 0, 1, 200, "other", 110), app);
  EXPECT_EQ(f.sched.OnSwitchCompact(1150, 1, 0, 100, "app", 120), 0u);
  EXPECT_EQ(f.sched.OnSwitchCompact(1200, 0, 0x100, 0, "swapper/0", 120),
            f.processes.GetOrCreateThread(200));
  f.sched.OnWakingCompact(1250, 1, 200, 0x10);
  f.sched.Finish(1250);
  EXPECT_EQ(f.SchedCsv(),
            R"("ts","dur","cpu","tid","name","end_state","priority"
1100,100,0,200,"other","R+",110
1150,-1,1,100,"app","[NULL]",120
1200,-1,0,0,"swapper","[NULL]",120
)");
  EXPECT_EQ(f.ThreadStateCsv(),
            R"("ts","dur","cpu","tid","state","io_wait","waker_tid"
1050,50,"[NULL]",200,"R","[NULL]",100
1100,50,"[NULL]",100,"S","[NULL]","[NULL]"
1100,100,0,200,"Running","[NULL]","[NULL]"
1150,-1,1,100,"Running","[NULL]","[NULL]"
1200,50,"[NULL]",200,"R+","[NULL]","[NULL]"
1250,-1,"[NULL]",200,"R","[NULL]",100
)");
  EXPECT_EQ(f.sched.compact_sched_switch_skipped(), 2);
  EXPECT_EQ(f.sched.compact_sched_waking_skipped(), 1);
  // irq_context: the compact waking's common_flags, a softirq's (0x10) at
  // 1250 and none at 1050; rows no wakeup made have none (NULL).
  EXPECT_EQ(f.storage.thread_state.irq_context, (std::vector<int8_t>{0, -1, -1, -1, -1, 1}));
}

// The letters Perfetto's TaskState gives each kernel's prev_state layout.
TEST(SchedTrackerTest, TaskStateLettersPerKernelVersion) {
  // >= 4.14 (the 6.1, 6.12 and 6.18 kernels sluice runs on).
  EXPECT_EQ(SchedTracker::TaskStateString(0x0, 6, 18), "R");
  EXPECT_EQ(SchedTracker::TaskStateString(0x100, 6, 18), "R+");
  EXPECT_EQ(SchedTracker::TaskStateString(0x1, 6, 18), "S");
  EXPECT_EQ(SchedTracker::TaskStateString(0x2, 6, 1), "D");
  EXPECT_EQ(SchedTracker::TaskStateString(0x80, 6, 12), "I");
  EXPECT_EQ(SchedTracker::TaskStateString(0x10, 6, 18), "X");
  EXPECT_EQ(SchedTracker::TaskStateString(0x20, 6, 18), "Z");
  EXPECT_EQ(SchedTracker::TaskStateString(0x40, 6, 18), "P");
  EXPECT_EQ(SchedTracker::TaskStateString(0x4 | 0x8, 5, 10), "Tt");
  EXPECT_EQ(SchedTracker::TaskStateString(0x1 | 0x2 | 0x4 | 0x8, 6, 18), "SDT");  // 3 letters max
  EXPECT_EQ(SchedTracker::TaskStateString(0x200, 6, 18), "");                   // invalid
  EXPECT_EQ(SchedTracker::TaskStateString(0x402, 4, 14), "");
  // [4.8, 4.14): TASK_DEAD 0x40 .. TASK_NOLOAD 0x400, preemption 0x1000.
  EXPECT_EQ(SchedTracker::TaskStateString(0x1000, 4, 9), "R+");
  EXPECT_EQ(SchedTracker::TaskStateString(0x402, 4, 9), "I");  // D|N is TASK_IDLE
  EXPECT_EQ(SchedTracker::TaskStateString(0x40, 4, 9), "x");
  EXPECT_EQ(SchedTracker::TaskStateString(0x81, 4, 9), "SK");
  EXPECT_EQ(SchedTracker::TaskStateString(0x200, 4, 9), "P");
  // < 4.8 (and the default when the trace has no uname): preemption 0x800.
  EXPECT_EQ(SchedTracker::TaskStateString(0x800, 4, 4), "R+");
  EXPECT_EQ(SchedTracker::TaskStateString(0x1000, 4, 4), "R");
  EXPECT_EQ(SchedTracker::TaskStateString(0x100, 4, 4), "W");
}

// tests/data/query/sched_no_uname.textproto: no system_info, so Perfetto
// (and we) decode prev_state with the 4.4 layout. Rows from
// trace_processor_shell v58.2.
TEST(SchedTrackerTest, NoKernelVersionMeansThe44Layout) {
  TrackerFeeder f;
  f.Switch(100, 0, 0, "swapper/0", 120, 0, 10, "a", 120);
  f.Switch(200, 0, 10, "a", 120, 0x100, 0, "swapper/0", 120);  // TASK_WAKING
  f.Switch(300, 0, 0, "swapper/0", 120, 0, 10, "a", 120);
  f.Switch(400, 0, 10, "a", 120, 0x800, 0, "swapper/0", 120);  // preempted
  f.Switch(500, 0, 0, "swapper/0", 120, 0, 10, "a", 120);
  f.Switch(600, 0, 10, "a", 120, 0x402, 0, "swapper/0", 120);  // D|N = idle
  EXPECT_EQ(f.SchedCsv(),
            R"("ts","dur","cpu","tid","name","end_state","priority"
100,100,0,10,"a","W",120
200,100,0,0,"swapper","R",120
300,100,0,10,"a","R+",120
400,100,0,0,"swapper","R",120
500,100,0,10,"a","I",120
600,-1,0,0,"swapper","[NULL]",120
)");
}

// A task switched out while its last row says it is not Running (a lost
// switch-in): that row stays open, the new one starts anyway.
TEST(SchedTrackerTest, SwitchOutOfANonRunningThreadLeavesItsRowOpen) {
  TrackerFeeder f;
  f.sched.SetKernelVersion(6, 18);
  f.Switch(100, 0, 0, "swapper/0", 120, 0, 10, "a", 120);
  f.Switch(200, 0, 10, "a", 120, 1, 0, "swapper/0", 120);
  // The switch that put 10 back on CPU 1 was lost.
  f.Switch(300, 1, 10, "a", 120, 2, 0, "swapper/1", 120);
  EXPECT_EQ(f.ThreadStateCsv(),
            R"("ts","dur","cpu","tid","state","io_wait","waker_tid"
100,100,0,10,"Running","[NULL]","[NULL]"
200,-1,"[NULL]",10,"S","[NULL]","[NULL]"
300,-1,"[NULL]",10,"D","[NULL]","[NULL]"
)");
}

// A corrupt CPU number must not make the per-CPU table grow to 4 G entries.
TEST(SchedTrackerTest, CpuOutOfRangeIsDroppedAndCounted) {
  TrackerFeeder f;
  EXPECT_EQ(f.sched.OnSwitch(100, 0xfffffff0u, 0, "swapper", 120, 0, 10, "a", 120), kNullU32);
  EXPECT_EQ(f.sched.OnSwitchCompact(100, SchedTracker::kMaxCpus, 0, 10, "a", 120), kNullU32);
  EXPECT_EQ(f.sched.OnWakingCompact(100, SchedTracker::kMaxCpus, 10, 0), kNullU32);
  EXPECT_EQ(f.sched.bad_cpu_events(), 3);
  EXPECT_EQ(f.storage.sched.size(), 0u);
  EXPECT_EQ(f.storage.thread_state.size(), 0u);
}

}  // namespace
}  // namespace sluice
