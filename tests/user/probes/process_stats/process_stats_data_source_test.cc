#include "user/probes/process_stats/process_stats_data_source.h"

#include <pthread.h>
#include <unistd.h>

#include <chrono>
#include <condition_variable>
#include <map>
#include <filesystem>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "perfetto/trace/ps/process_stats.pb.h"
#include "perfetto/trace/trace_packet.pb.h"
#include "tests/user/probes/fake_tracefs.h"

namespace sluice {
namespace {

using perfetto::protos::TracePacket;

// A fake /proc: FakeTracefs is a tree of plain files under a temp dir.
class ProcessStatsDataSourceTest : public ::testing::Test {
 protected:
  void AddProcess(int pid, const std::string& name, const std::vector<int>& extra_tids = {}) {
    const std::string status = "Name:\t" + name + "\nTgid:\t" + std::to_string(pid) +
                               "\nPPid:\t1\nUid:\t0\t0\t0\t0\n";
    proc_.Write(std::to_string(pid) + "/status", status);
    proc_.Write(std::to_string(pid) + "/cmdline", std::string("/bin/") + name + '\0');
    proc_.Write(std::to_string(pid) + "/task/" + std::to_string(pid) + "/status", status);
    for (int tid : extra_tids) {
      proc_.Write(std::to_string(pid) + "/task/" + std::to_string(tid) + "/status",
                  "Name:\t" + name + "-worker\nTgid:\t" + std::to_string(pid) + "\nPPid:\t1\n");
    }
  }
  void SetLastPid(int pid) { proc_.Write("loadavg", "0.10 0.20 0.30 1/90 " + std::to_string(pid) + "\n"); }
  // /proc/self as the kernel shows it to us: this /proc is of our pid namespace.
  void LinkSelf() {
    std::filesystem::create_symlink(std::to_string(getpid()), proc_.Path("self"));
  }

  std::unique_ptr<ProcessStatsDataSource> Create(bool record_process_age = false) {
    perfetto::protos::ProcessStatsConfig config;
    config.set_scan_all_processes_on_start(true);
    config.set_record_thread_names(true);
    config.set_record_process_age(record_process_age);
    auto writer = std::make_unique<HeapTraceWriter>();
    writer_ = writer.get();
    return std::make_unique<ProcessStatsDataSource>(config, std::move(writer), proc_.root());
  }
  // Created and started, with what Start() wrote taken away.
  std::unique_ptr<ProcessStatsDataSource> Started() {
    auto source = Create();
    source->Start();
    TakeTrees();
    return source;
  }
  // The ProcessTree packets written since the last call.
  std::vector<TracePacket> TakeTrees() {
    std::vector<TracePacket> trees;
    for (const std::string& bytes : writer_->TakePackets()) {
      TracePacket packet;
      EXPECT_TRUE(packet.ParseFromString(bytes));
      if (packet.has_process_tree()) trees.push_back(packet);
    }
    return trees;
  }

  testing::FakeTracefs proc_;
  HeapTraceWriter* writer_ = nullptr;
};

TEST_F(ProcessStatsDataSourceTest, StartWritesEveryProcessAndThread) {
  AddProcess(1, "init");
  AddProcess(200, "server", {201, 202});
  SetLastPid(202);
  auto source = Create();
  source->Start();
  auto trees = TakeTrees();
  ASSERT_EQ(trees.size(), 1u);
  EXPECT_EQ(trees[0].process_tree().processes_size(), 2);
  EXPECT_EQ(trees[0].process_tree().threads_size(), 2);  // 201 and 202; main threads are processes.
  EXPECT_EQ(source->processes_written(), 2u);
  EXPECT_EQ(source->threads_written(), 2u);
}

TEST_F(ProcessStatsDataSourceTest, AgeAndKthreadComeFromStatAndStatus) {
  // kthreadd as Linux 6.4+ shows it: a Kthread line, started 2 ticks after boot.
  const std::string status = "Name:\tkthreadd\nTgid:\t2\nPPid:\t0\nUid:\t0\t0\t0\t0\nKthread:\t1\n";
  proc_.Write("2/status", status);
  proc_.Write("2/task/2/status", status);
  proc_.Write("2/stat", "2 (kthreadd) S 0 0 0 0 -1 2129984 0 0 0 0 0 0 0 0 20 0 1 0 2 0 0\n");
  AddProcess(300, "app");  // No stat file, no Kthread line: neither field.
  SetLastPid(300);
  auto source = Create(/*record_process_age=*/true);
  source->Start();
  auto trees = TakeTrees();
  ASSERT_EQ(trees.size(), 1u);
  std::map<int, perfetto::protos::ProcessTree::Process> by_pid;
  for (const auto& p : trees[0].process_tree().processes()) by_pid[p.pid()] = p;
  ASSERT_EQ(by_pid.count(2), 1u);
  EXPECT_EQ(by_pid[2].process_start_from_boot(), 2 * (1000000000ull / static_cast<uint64_t>(sysconf(_SC_CLK_TCK))));
  EXPECT_TRUE(by_pid[2].has_is_kthread() && by_pid[2].is_kthread());
  ASSERT_EQ(by_pid.count(300), 1u);
  EXPECT_FALSE(by_pid[300].has_process_start_from_boot());
  EXPECT_FALSE(by_pid[300].has_is_kthread());
}

TEST_F(ProcessStatsDataSourceTest, AFlushWithNoNewPidDoesNotScan) {
  AddProcess(1, "init");
  SetLastPid(1);
  LinkSelf();
  auto source = Started();
  source->Flush();
  source->Flush();
  EXPECT_TRUE(TakeTrees().empty());
  EXPECT_EQ(source->scans_skipped(), 2u);

  // A new process allocates a pid: the next flush scans and writes it alone.
  AddProcess(300, "job", {301});
  SetLastPid(301);
  source->Flush();
  auto trees = TakeTrees();
  ASSERT_EQ(trees.size(), 1u);
  ASSERT_EQ(trees[0].process_tree().processes_size(), 1);
  EXPECT_EQ(trees[0].process_tree().processes(0).pid(), 300);
  ASSERT_EQ(trees[0].process_tree().threads_size(), 1);
  EXPECT_EQ(trees[0].process_tree().threads(0).tid(), 301);
  EXPECT_EQ(source->scans_skipped(), 2u);

  // Stop flushes too, and skips the same way.
  source->Stop();
  EXPECT_TRUE(TakeTrees().empty());
  EXPECT_EQ(source->scans_skipped(), 3u);
}

TEST_F(ProcessStatsDataSourceTest, WithoutALastPidEveryFlushScans) {
  AddProcess(1, "init");  // No loadavg in this /proc.
  LinkSelf();
  auto source = Started();
  AddProcess(400, "late");
  source->Flush();
  auto trees = TakeTrees();
  ASSERT_EQ(trees.size(), 1u);
  ASSERT_EQ(trees[0].process_tree().processes_size(), 1);
  EXPECT_EQ(trees[0].process_tree().processes(0).pid(), 400);
  EXPECT_EQ(source->scans_skipped(), 0u);
}

TEST_F(ProcessStatsDataSourceTest, AnotherPidNamespacesProcMeansScan) {
  AddProcess(1, "init");
  SetLastPid(1);
  std::filesystem::create_symlink("1", proc_.Path("self"));  // Not our pid: not our namespace.
  auto source = Started();
  source->Flush();
  EXPECT_EQ(TakeTrees().size(), 1u);
  EXPECT_EQ(source->scans_skipped(), 0u);
}

TEST_F(ProcessStatsDataSourceTest, AFewNewPidsAreLookedUpWithoutAScan) {
  AddProcess(1, "init");
  SetLastPid(202);
  LinkSelf();
  auto source = Started();
  // 150 appears in the listing only: no pid the kernel allocated since the
  // scan, so a lookup of the new pids alone does not see it (a scan would).
  AddProcess(150, "listed-only");
  AddProcess(203, "new", {204});
  // A thread's /proc/<tid>, which the real /proc has though readdir skips it.
  proc_.Write("204/status", "Name:\tnew-worker\nTgid:\t203\nPPid:\t1\n");
  SetLastPid(204);
  source->Flush();
  auto trees = TakeTrees();
  ASSERT_EQ(trees.size(), 1u);
  ASSERT_EQ(trees[0].process_tree().processes_size(), 1);
  EXPECT_EQ(trees[0].process_tree().processes(0).pid(), 203);
  ASSERT_EQ(trees[0].process_tree().threads_size(), 1);
  EXPECT_EQ(trees[0].process_tree().threads(0).tid(), 204);
  EXPECT_EQ(trees[0].process_tree().threads(0).tgid(), 203);
  EXPECT_EQ(source->pids_probed(), 2u);

  // More new pids than kMaxPidsToProbe: a scan, which finds 150 too.
  SetLastPid(204 + ProcessStatsDataSource::kMaxPidsToProbe + 1);
  source->Flush();
  trees = TakeTrees();
  ASSERT_EQ(trees.size(), 1u);
  std::set<int> pids;
  for (const auto& p : trees[0].process_tree().processes()) pids.insert(p.pid());
  EXPECT_EQ(pids, (std::set<int>{150, 204}));  // 204: the fake tree lists the thread's dir.
  EXPECT_EQ(source->pids_probed(), 2u);

  // The pid counter wrapped around pid_max: a scan.
  SetLastPid(5);
  source->Flush();
  EXPECT_EQ(TakeTrees().size(), 1u);
  EXPECT_EQ(source->pids_probed(), 2u);
}

TEST_F(ProcessStatsDataSourceTest, TheRealProcNamesANewThreadWithoutAScan) {
  // This machine's /proc: a flush with no new pid since the last one skips;
  // a thread started since is looked up by its tid.
  perfetto::protos::ProcessStatsConfig config;
  config.set_record_thread_names(true);
  auto writer = std::make_unique<HeapTraceWriter>();
  HeapTraceWriter* heap = writer.get();
  ProcessStatsDataSource source(config, std::move(writer));
  source.Start();
  // Unless something on the machine made a process or thread in between: a
  // few tries are enough even on a busy one.
  for (int i = 0; i < 1000 && source.scans_skipped() == 0; i++) source.Flush();
  EXPECT_GT(source.scans_skipped(), 0u) << "/proc/loadavg's last pid never held still";

  std::mutex mu;
  std::condition_variable cv;
  pid_t tid = 0;
  bool done = false;
  std::thread thread([&] {
    pthread_setname_np(pthread_self(), "sluice-newtid");
    std::unique_lock<std::mutex> lock(mu);
    tid = gettid();
    cv.notify_all();
    cv.wait(lock, [&] { return done; });
  });
  {
    std::unique_lock<std::mutex> lock(mu);
    cv.wait(lock, [&] { return tid != 0; });
  }
  heap->TakePackets();
  const uint64_t probed = source.pids_probed();
  source.Flush();
  {
    std::lock_guard<std::mutex> lock(mu);
    done = true;
  }
  cv.notify_all();
  thread.join();
  EXPECT_GT(source.pids_probed(), probed);  // Unless 256 pids went by meanwhile.
  bool named = false;
  for (const std::string& bytes : heap->TakePackets()) {
    TracePacket packet;
    ASSERT_TRUE(packet.ParseFromString(bytes));
    for (const auto& t : packet.process_tree().threads()) {
      if (t.tid() == tid) named = t.name() == "sluice-newtid" && t.tgid() == getpid();
    }
  }
  EXPECT_TRUE(named) << "thread " << tid << " is not in the ProcessTree";
}

TEST_F(ProcessStatsDataSourceTest, AMalformedLoadavgMeansScan) {
  AddProcess(1, "init");
  LinkSelf();
  proc_.Write("loadavg", "0.10 0.20 0.30 1/90 x\n");
  auto source = Started();
  source->Flush();
  EXPECT_EQ(TakeTrees().size(), 1u);  // An empty tree: it scanned.
  EXPECT_EQ(source->scans_skipped(), 0u);
}

// Polling: memory counters of the fake /proc's processes.
class ProcessStatsPollTest : public ProcessStatsDataSourceTest {
 protected:
  void AddMemory(int pid, int rss_kb, int oom_score_adj) {
    const std::string dir = std::to_string(pid);
    proc_.Write(dir + "/status", "Name:\tp" + dir + "\nTgid:\t" + dir + "\nPPid:\t1\nVmSize:\t 9000 kB\nVmRSS:\t " +
                                     std::to_string(rss_kb) + " kB\nRssAnon:\t 100 kB\nVmSwap:\t 0 kB\n");
    proc_.Write(dir + "/oom_score_adj", std::to_string(oom_score_adj) + "\n");
  }
  std::unique_ptr<ProcessStatsDataSource> CreatePolling(uint32_t poll_ms, uint32_t ttl_ms) {
    perfetto::protos::ProcessStatsConfig config;
    config.set_proc_stats_poll_ms(poll_ms);
    config.set_proc_stats_cache_ttl_ms(ttl_ms);
    auto writer = std::make_unique<HeapTraceWriter>();
    writer_ = writer.get();
    return std::make_unique<ProcessStatsDataSource>(config, std::move(writer), proc_.root());
  }
  std::vector<perfetto::protos::ProcessStats> TakeStats() {
    std::vector<perfetto::protos::ProcessStats> out;
    for (const std::string& bytes : writer_->TakePackets()) {
      TracePacket packet;
      EXPECT_TRUE(packet.ParseFromString(bytes));
      if (packet.has_process_stats()) {
        EXPECT_TRUE(packet.has_timestamp());
        out.push_back(packet.process_stats());
      }
    }
    return out;
  }
};

TEST_F(ProcessStatsPollTest, APollWritesEachProcesssMemoryButNotKernelThreads) {
  AddMemory(10, 5000, -900);
  AddMemory(11, 7000, 0);
  proc_.Write("2/status", "Name:\tkthreadd\nTgid:\t2\nPPid:\t0\n");
  auto source = CreatePolling(0, 0);
  source->PollNow();
  auto stats = TakeStats();
  ASSERT_EQ(stats.size(), 1u);
  ASSERT_EQ(stats[0].processes_size(), 2);
  std::map<int, perfetto::protos::ProcessStats::Process> by_pid;
  for (const auto& p : stats[0].processes()) by_pid[p.pid()] = p;
  EXPECT_EQ(by_pid[10].vm_rss_kb(), 5000u);
  EXPECT_EQ(by_pid[10].vm_size_kb(), 9000u);
  EXPECT_EQ(by_pid[10].rss_anon_kb(), 100u);
  EXPECT_EQ(by_pid[10].oom_score_adj(), -900);
  EXPECT_TRUE(by_pid[11].has_vm_swap_kb());
  EXPECT_FALSE(by_pid[11].has_runtime_user_mode());  // record_process_runtime is off.
  EXPECT_TRUE(stats[0].has_collection_end_timestamp());
  EXPECT_EQ(source->polls(), 1u);
}

TEST_F(ProcessStatsPollTest, UnchangedValuesAreLeftOutUntilTheCacheExpires) {
  AddMemory(10, 5000, 0);
  // Period 100 ms, cache 300 ms: cleared after every third poll.
  auto source = CreatePolling(100, 300);
  source->PollNow();
  AddMemory(10, 6000, 0);
  source->PollNow();
  source->PollNow();
  source->PollNow();  // The cache was cleared: everything again.
  auto stats = TakeStats();
  ASSERT_EQ(stats.size(), 4u);
  EXPECT_TRUE(stats[0].processes(0).has_vm_size_kb());
  ASSERT_EQ(stats[1].processes_size(), 1);
  EXPECT_EQ(stats[1].processes(0).vm_rss_kb(), 6000u);
  EXPECT_FALSE(stats[1].processes(0).has_vm_size_kb());
  EXPECT_EQ(stats[2].processes_size(), 0);
  ASSERT_EQ(stats[3].processes_size(), 1);
  EXPECT_EQ(stats[3].processes(0).vm_size_kb(), 9000u);
  EXPECT_EQ(stats[3].processes(0).vm_rss_kb(), 6000u);
}

TEST_F(ProcessStatsPollTest, APeriodUnder100MsIsClamped) {
  EXPECT_EQ(CreatePolling(10, 0)->poll_period_ms(), 100u);
  EXPECT_EQ(CreatePolling(0, 0)->poll_period_ms(), 0u);
  EXPECT_EQ(CreatePolling(500, 0)->poll_period_ms(), 500u);
}

TEST_F(ProcessStatsPollTest, ThePollThreadPollsUntilStopped) {
  AddMemory(10, 5000, 0);
  auto source = CreatePolling(100, 0);
  source->Start();
  // Waits for the thread's polls, not for a time.
  while (source->polls() < 3) std::this_thread::sleep_for(std::chrono::milliseconds(20));
  source->Stop();
  const uint64_t polls = source->polls();
  EXPECT_GE(TakeStats().size(), polls);
  EXPECT_EQ(source->polls(), polls);  // Stopped: no more.
}

TEST_F(ProcessStatsPollTest, TheRealProcHasOurOwnMemory) {
  perfetto::protos::ProcessStatsConfig config;
  config.set_record_process_runtime(true);
  config.set_scan_smaps_rollup(true);
  auto heap = std::make_unique<HeapTraceWriter>();
  writer_ = heap.get();
  ProcessStatsDataSource source(config, std::move(heap));
  source.PollNow();
  bool found = false;
  for (const auto& stats : TakeStats()) {
    for (const auto& p : stats.processes()) {
      if (p.pid() != getpid()) continue;
      found = true;
      EXPECT_GT(p.vm_rss_kb(), 0u);
      EXPECT_GT(p.vm_size_kb(), p.vm_rss_kb());
      EXPECT_TRUE(p.has_oom_score_adj());
      EXPECT_TRUE(p.has_runtime_user_mode());
      EXPECT_GT(p.smr_rss_kb(), 0u);
    }
  }
  EXPECT_TRUE(found) << "no ProcessStats entry for this process (" << getpid() << ")";
}

}  // namespace
}  // namespace sluice
