#include "user/query/importer/process_tracker.h"

#include <gtest/gtest.h>

#include "tests/user/query/importer/tracker_test_util.h"

namespace sluice {
namespace {

// Expected rows: upstream trace_processor_shell v58.2 on the textproto the
// feeder replays (tests/data/query/, encoded with protoc as described in
// tracker_test_util.cc), queried with tests/data/query/tracker_tables.sql.

TEST(ProcessTrackerTest, SchedTraceThreadsAndProcessesMatchTraceProcessor) {
  TrackerFeeder f;
  FeedSchedFull(f);
  EXPECT_EQ(f.ThreadCsv(),
            R"("utid","tid","name","start_ts","end_ts","pid","is_main_thread"
0,0,"swapper","[NULL]","[NULL]",0,1
1,1,"[NULL]","[NULL]","[NULL]",1,1
2,2,"kthreadd","[NULL]","[NULL]",2,1
3,50,"kworker/0:1","[NULL]","[NULL]",50,1
4,100,"app","[NULL]","[NULL]",100,1
5,300,"[NULL]","[NULL]","[NULL]",300,1
6,101,"worker","[NULL]","[NULL]",100,0
7,102,"renamed",2300,"[NULL]",100,0
8,200,"child",2400,3100,200,1
9,200,"reuse","[NULL]","[NULL]","[NULL]","[NULL]"
10,400,"new","[NULL]","[NULL]","[NULL]","[NULL]"
11,999,"bogus","[NULL]","[NULL]","[NULL]","[NULL]"
)");
  EXPECT_EQ(f.ProcessCsv(),
            R"("upid","pid","name","cmdline","start_ts","end_ts","ppid","uid"
0,0,"[NULL]","[NULL]","[NULL]","[NULL]","[NULL]","[NULL]"
1,1,"/sbin/init","/sbin/init","[NULL]","[NULL]",0,0
2,2,"kthreadd","kthreadd","[NULL]","[NULL]",0,0
3,50,"kworker/0:1","kworker/0:1","[NULL]","[NULL]",2,0
4,100,"/bin/app","/bin/app --x","[NULL]","[NULL]",1,1000
5,300,"rewritten","rewritten name args","[NULL]","[NULL]",1,1000
6,200,"child","[NULL]",2400,3100,100,"[NULL]"
)");
}

TEST(ProcessTrackerTest, ProcessTraceMatchesTraceProcessor) {
  TrackerFeeder f;
  FeedProcess(f);
  EXPECT_EQ(f.ThreadCsv(),
            R"("utid","tid","name","start_ts","end_ts","pid","is_main_thread"
0,0,"swapper","[NULL]","[NULL]",0,1
1,700,"[NULL]","[NULL]",2200,700,1
2,701,"helper",500,"[NULL]",701,1
3,702,"thr-pt",600,"[NULL]",700,0
4,1,"[NULL]","[NULL]","[NULL]",1,1
5,800,"[NULL]","[NULL]","[NULL]",800,1
6,2,"[NULL]","[NULL]","[NULL]",2,1
7,801,"kworker/u8:3","[NULL]","[NULL]",801,1
8,900,"[NULL]","[NULL]","[NULL]",900,1
9,901,"lonely","[NULL]","[NULL]",900,0
10,850,"[NULL]","[NULL]","[NULL]",850,1
11,702,"thr2","[NULL]","[NULL]","[NULL]","[NULL]"
12,700,"daemon","[NULL]","[NULL]","[NULL]","[NULL]"
)");
  EXPECT_EQ(f.ProcessCsv(),
            R"("upid","pid","name","cmdline","start_ts","end_ts","ppid","uid"
0,0,"[NULL]","[NULL]","[NULL]","[NULL]","[NULL]","[NULL]"
1,701,"helper","[NULL]",500,"[NULL]",700,"[NULL]"
2,1,"init","init","[NULL]","[NULL]",0,0
3,700,"/usr/bin/daemon","/usr/bin/daemon -f","[NULL]",2200,1,0
4,800,"b","b","[NULL]","[NULL]",1,6
5,2,"[NULL]","[NULL]","[NULL]","[NULL]","[NULL]","[NULL]"
6,801,"kworker/u8:3","kworker/u8:3","[NULL]","[NULL]",2,0
7,900,"[NULL]","[NULL]","[NULL]","[NULL]","[NULL]","[NULL]"
8,850,"c","c","[NULL]","[NULL]",800,"[NULL]"
)");
  EXPECT_EQ(f.processes.parent_pid_changed(), 1);
  EXPECT_EQ(f.SchedCsv(),
            R"("ts","dur","cpu","tid","name","end_state","priority"
2300,100,0,702,"thr2","S",120
2400,-1,0,700,"daemon","[NULL]",120
)");
  EXPECT_EQ(f.ThreadStateCsv(),
            R"("ts","dur","cpu","tid","state","io_wait","waker_tid"
500,-1,"[NULL]",701,"R","[NULL]",700
600,-1,"[NULL]",702,"R","[NULL]",700
2300,100,0,702,"Running","[NULL]","[NULL]"
2400,-1,0,700,"Running","[NULL]","[NULL]"
2400,-1,"[NULL]",702,"S","[NULL]","[NULL]"
)");
}

// tests/data/query/process_stats.textproto (fields in protoc's wire order:
// vm_rss_kb before threads); rows from trace_processor_shell v58.2.
TEST(ProcessTrackerTest, ProcessStatsMatchesTraceProcessor) {
  TrackerFeeder f;
  f.sched.SetKernelVersion(6, 18);
  f.Switch(500, 0, 0, "swapper/0", 120, 0, 41, "t41", 120);
  f.processes.OnProcessStatsProcess(40);  // vm_rss_kb
  f.processes.OnProcessStatsThread(41, 40);
  f.processes.OnProcessStatsThread(42, 40);
  f.processes.OnProcessStatsThread(51, 50);
  f.processes.OnProcessStatsProcess(60);  // fds
  // pid 70 has no field but its pid: no call.
  EXPECT_EQ(f.ThreadCsv(),
            R"("utid","tid","name","start_ts","end_ts","pid","is_main_thread"
0,0,"swapper","[NULL]","[NULL]",0,1
1,41,"t41","[NULL]","[NULL]",40,0
2,40,"[NULL]","[NULL]","[NULL]",40,1
3,42,"[NULL]","[NULL]","[NULL]",40,0
4,50,"[NULL]","[NULL]","[NULL]",50,1
5,51,"[NULL]","[NULL]","[NULL]",50,0
6,60,"[NULL]","[NULL]","[NULL]",60,1
)");
  EXPECT_EQ(f.ProcessCsv(),
            R"("upid","pid","name","cmdline","start_ts","end_ts","ppid","uid"
0,0,"[NULL]","[NULL]","[NULL]","[NULL]","[NULL]","[NULL]"
1,40,"[NULL]","[NULL]","[NULL]","[NULL]","[NULL]","[NULL]"
2,50,"[NULL]","[NULL]","[NULL]","[NULL]","[NULL]","[NULL]"
3,60,"[NULL]","[NULL]","[NULL]","[NULL]","[NULL]","[NULL]"
)");
}

TEST(ProcessTrackerTest, IdleTaskIsUtidAndUpidZero) {
  TraceStorage storage;
  ProcessTracker processes(&storage);
  EXPECT_EQ(processes.GetOrCreateThread(0), 0u);
  EXPECT_EQ(processes.UpdateThreadName(0, "swapper/1"), 0u);
  EXPECT_EQ(storage.strings.Get(storage.thread.name[0]), "swapper");
  EXPECT_EQ(storage.thread.upid[0], 0u);
  EXPECT_EQ(storage.thread.is_main_thread[0], 1);
  EXPECT_EQ(storage.process.pid[0], 0);
  EXPECT_EQ(storage.process.name[0], kNullStringId);
}

TEST(ProcessTrackerTest, NameFromProcessTreeBeatsComm) {
  TraceStorage storage;
  ProcessTracker processes(&storage);
  uint32_t utid = processes.UpdateThreadName(42, "first");
  EXPECT_EQ(processes.UpdateThreadName(42, "second"), utid);
  EXPECT_EQ(storage.strings.Get(storage.thread.name[utid]), "second");
  processes.OnProcessTreeThread(42, 40, "from-proc");
  EXPECT_EQ(processes.UpdateThreadName(42, "third"), utid);
  EXPECT_EQ(storage.strings.Get(storage.thread.name[utid]), "from-proc");
}

// tids above the flat table (and negative ones from a corrupt trace) use the
// hashed map and behave the same.
TEST(ProcessTrackerTest, LargeAndNegativeTids) {
  TraceStorage storage;
  ProcessTracker processes(&storage);
  for (int64_t tid : {int64_t{1} << 40, int64_t{-5}, int64_t{(1 << 22) + 1}}) {
    uint32_t utid = processes.GetOrCreateThread(tid);
    EXPECT_EQ(processes.GetOrCreateThread(tid), utid);
    processes.OnProcessFree(10, tid);
    EXPECT_NE(processes.GetOrCreateThread(tid), utid);
  }
}

}  // namespace
}  // namespace sluice
