#include "user/probes/tracefs_cleanup.h"

#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>

#include <gtest/gtest.h>

#include "shm/base/file_util.h"
#include "shm/base/process_identity.h"
#include "tests/child_process_test_util.h"
#include "tests/user/probes/fake_tracefs.h"
#include "user/probes/tracefs_state_file.h"

namespace sluice {
namespace {

using testing::FakeTracefs;

// A process that ran and is gone (forked, killed, reaped).
ProcessIdentity GoneProcess() {
  const pid_t child = testing::ForkIdleChild();
  EXPECT_GT(child, 0);
  auto id = ReadProcessIdentity(child);
  EXPECT_TRUE(id.ok()) << id.status().message();
  kill(child, SIGKILL);
  waitpid(child, nullptr, 0);
  return id.ok() ? *id : ProcessIdentity{};
}

class TracefsCleanupTest : public ::testing::Test {
 protected:
  void SetUp() override {
    fake_.PopulateRoot();
    char tmpl[] = "/tmp/sluice-cleanup-test-XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
    // What a killed recorder leaves, and 12 events it did not read.
    session_ = fake_.ApplyTypicalSession();
    fake_.Write("per_cpu/cpu1/stats", "entries: 12\noverrun: 0\n");
    self_ = *ReadProcessIdentity(getpid());
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  TracefsState StateOf(const ProcessIdentity& owner, uint64_t created_boot_ns = 100) {
    TracefsState s;
    s.owner = owner;
    s.owner_name = "sluice-probes";
    s.created_boot_ns = created_boot_ns;
    s.changes = session_;
    return s;
  }
  std::string Save(const TracefsState& s, int n = 0) {
    const std::string path = dir_ + "/tracefs-" + std::to_string(s.owner.pid) + "-" +
                              std::to_string(s.owner.start_time) + "-" + std::to_string(n) +
                              ".state";
    EXPECT_TRUE(WriteTracefsStateFile(path, s).ok());
    return path;
  }
  // The fake tree as text, to check that nothing was touched.
  std::string Snapshot() {
    std::string all;
    for (const char* f : {"tracing_on", "trace_clock", "buffer_size_kb",
                          "events/sched/sched_switch/enable", "events/sched/sched_waking/enable",
                          "events/sched/sched_wakeup/enable"}) {
      all += std::string(f) + "=" + fake_.Read(f) + ";";
    }
    return all;
  }
  void ExpectRestored() {
    EXPECT_EQ(fake_.Read("tracing_on"), "0");
    EXPECT_EQ(fake_.Read("trace_clock"), "local");
    EXPECT_EQ(fake_.Read("buffer_size_kb"), "1408");
    EXPECT_EQ(fake_.Read("events/sched/sched_switch/enable"), "0");
    EXPECT_EQ(fake_.Read("events/sched/sched_waking/enable"), "0");
    EXPECT_EQ(fake_.Read("events/sched/sched_wakeup/enable"), "1\n");  // Someone else's stays.
  }

  FakeTracefs fake_;
  TracefsChanges session_;
  std::string dir_;
  ProcessIdentity self_;
};

TEST_F(TracefsCleanupTest, GoneOwnersChangesAreUndoneAndTheFileRemoved) {
  const ProcessIdentity gone = GoneProcess();
  const std::string path = Save(StateOf(gone));
  TracefsCleanupReport report = RestoreTracefsLeftByDeadOwners(dir_);
  EXPECT_TRUE(report.ok()) << report.errors[0];
  ASSERT_EQ(report.restored.size(), 1u);
  EXPECT_EQ(report.restored[0],
            "restored tracefs left by sluice-probes pid " + std::to_string(gone.pid) +
                " (no longer running) in " + fake_.root() +
                ": disabled 2 events, tracing_on 1 -> 0, trace_clock boot -> local, "
                "buffer_size_kb 2051 -> 1408; its ring buffer held 12 events nobody had read "
                "(lost)");
  ExpectRestored();
  EXPECT_FALSE(PathExists(path));
  // Nothing left: a second cleanup finds nothing.
  TracefsCleanupReport again = RestoreTracefsLeftByDeadOwners(dir_);
  EXPECT_TRUE(again.restored.empty() && again.errors.empty() && again.running.empty());
}

TEST_F(TracefsCleanupTest, RunningOwnersStateIsLeftAlone) {
  const std::string before = Snapshot();
  const std::string path = Save(StateOf(self_));
  TracefsCleanupReport report = RestoreTracefsLeftByDeadOwners(dir_);
  EXPECT_TRUE(report.ok());
  EXPECT_TRUE(report.restored.empty());
  ASSERT_EQ(report.running.size(), 1u);
  EXPECT_EQ(report.running[0], "tracefs in " + fake_.root() + " is changed by sluice-probes pid " +
                                   std::to_string(self_.pid) + ", which is running: left alone");
  EXPECT_EQ(Snapshot(), before);
  EXPECT_TRUE(PathExists(path));
}

TEST_F(TracefsCleanupTest, DamagedFileIsReportedAndDoesNoDamage) {
  const std::string before = Snapshot();
  TracefsState s = StateOf(GoneProcess());
  const std::string path = Save(s);
  std::string text = *ReadFile(path);
  text.replace(text.find("sched/sched_switch"), 18, "../../../tracing_on");
  ASSERT_TRUE(WriteFileAtomically(path, text).ok());
  const std::string cut = Save(s, 1);
  ASSERT_EQ(truncate(cut.c_str(), static_cast<off_t>(text.find("tracefs_root"))), 0);

  TracefsCleanupReport report = RestoreTracefsLeftByDeadOwners(dir_);
  ASSERT_EQ(report.errors.size(), 2u);
  EXPECT_EQ(report.errors[0], "cannot use tracefs state file " + path +
                                  ": line 13: bad event name '../../../tracing_on': nothing "
                                  "restored from it; check tracefs by hand, then delete it");
  EXPECT_NE(report.errors[1].find(cut + ": no 'end' line: the file is cut short"),
            std::string::npos)
      << report.errors[1];
  EXPECT_TRUE(report.restored.empty());
  EXPECT_EQ(Snapshot(), before);
  EXPECT_TRUE(PathExists(path));
  EXPECT_TRUE(PathExists(cut));
}

TEST_F(TracefsCleanupTest, DeferredWhileALaterRunningOwnerUsesTheSameInstance) {
  const std::string before = Snapshot();
  const std::string gone_path = Save(StateOf(GoneProcess(), /*created_boot_ns=*/100));
  TracefsState running = StateOf(self_, /*created_boot_ns=*/200);
  running.changes.enabled_events = {};
  const std::string running_path = Save(running);
  TracefsCleanupReport report = RestoreTracefsLeftByDeadOwners(dir_);
  EXPECT_TRUE(report.ok());
  EXPECT_TRUE(report.restored.empty());
  ASSERT_EQ(report.deferred.size(), 1u);
  EXPECT_NE(report.deferred[0].find("is restored later: sluice-probes pid " +
                                    std::to_string(self_.pid) + " (running) changed it since"),
            std::string::npos)
      << report.deferred[0];
  EXPECT_EQ(Snapshot(), before);
  EXPECT_TRUE(PathExists(gone_path));

  // Once the running one is done (its file gone), the gone one is undone.
  std::filesystem::remove(running_path);
  report = RestoreTracefsLeftByDeadOwners(dir_);
  EXPECT_EQ(report.restored.size(), 1u);
  ExpectRestored();
}

TEST_F(TracefsCleanupTest, RunningOwnerThatStartedEarlierDoesNotDefer) {
  Save(StateOf(GoneProcess(), /*created_boot_ns=*/200));
  TracefsState running = StateOf(self_, /*created_boot_ns=*/100);
  Save(running);
  TracefsCleanupReport report = RestoreTracefsLeftByDeadOwners(dir_);
  EXPECT_EQ(report.restored.size(), 1u);
  EXPECT_TRUE(report.deferred.empty());
}

TEST_F(TracefsCleanupTest, StackedGoneOwnersUnwindNewestFirst) {
  // A found 1408 and set 2051; B, started later, found 2051 and set 4096.
  TracefsState a = StateOf(GoneProcess(), 100);
  TracefsState b = StateOf(GoneProcess(), 200);
  b.changes = {};
  b.changes.tracefs_root = fake_.root();
  b.changes.buffer_size_kb_found = 2051;
  b.changes.buffer_size_kb_set = 4096;
  fake_.Write("buffer_size_kb", "4096\n");
  Save(a);
  Save(b);
  TracefsCleanupReport report = RestoreTracefsLeftByDeadOwners(dir_);
  EXPECT_TRUE(report.ok());
  ASSERT_EQ(report.restored.size(), 2u);
  EXPECT_NE(report.restored[0].find("buffer_size_kb 4096 -> 2051"), std::string::npos)
      << report.restored[0];
  EXPECT_NE(report.restored[1].find("buffer_size_kb 2051 -> 1408"), std::string::npos)
      << report.restored[1];
  ExpectRestored();
}

TEST_F(TracefsCleanupTest, CreatedInstanceIsRemovedOrKeptForTheNextCleanup) {
  // An instance that someone removed already: nothing left to undo.
  TracefsState gone_instance = StateOf(GoneProcess());
  gone_instance.changes = {};
  gone_instance.changes.tracefs_root = fake_.root();
  gone_instance.changes.instance_name = "vanished";
  gone_instance.changes.created_instance = true;
  const std::string vanished = Save(gone_instance);
  // One that cannot be removed (a fake directory with files in it): the
  // error is reported and the file keeps only the instance.
  fake_.PopulateInstance("instances/stuck/");
  fake_.Write("instances/stuck/events/sched/sched_switch/enable", "1\n");
  TracefsState stuck = StateOf(GoneProcess());
  stuck.changes = {};
  stuck.changes.tracefs_root = fake_.root();
  stuck.changes.instance_name = "stuck";
  stuck.changes.created_instance = true;
  stuck.changes.enabled_events = {"sched/sched_switch"};
  const std::string stuck_path = Save(stuck);

  TracefsCleanupReport report = RestoreTracefsLeftByDeadOwners(dir_);
  EXPECT_FALSE(PathExists(vanished));
  ASSERT_EQ(report.restored.size(), 1u);
  EXPECT_NE(report.restored[0].find(fake_.root() + "/instances/vanished is gone already"),
            std::string::npos)
      << report.restored[0];
  ASSERT_EQ(report.errors.size(), 1u);
  EXPECT_NE(report.errors[0].find("disabled 1 event, cannot remove " + fake_.root() +
                                  "/instances/stuck"),
            std::string::npos)
      << report.errors[0];
  EXPECT_NE(report.errors[0].find("what failed stays in " + stuck_path), std::string::npos);
  auto left = ReadTracefsStateFile(stuck_path);
  ASSERT_TRUE(left.ok()) << left.status().message();
  EXPECT_TRUE(left->changes.created_instance);
  EXPECT_TRUE(left->changes.enabled_events.empty());
  EXPECT_EQ(fake_.Read("instances/stuck/events/sched/sched_switch/enable"), "0");
}

TEST_F(TracefsCleanupTest, LeftoversOfGoneOwnersAndOtherBootsAreRemovedUntouched) {
  const std::string before = Snapshot();
  const ProcessIdentity gone = GoneProcess();
  const std::string tmp = dir_ + "/tracefs-" + std::to_string(gone.pid) + "-" +
                          std::to_string(gone.start_time) + "-0.state.tmp";
  ASSERT_TRUE(WriteFileAtomically(tmp, "sluice-tracefs-state 1\nowner_pid").ok());
  const std::string self_tmp = dir_ + "/tracefs-" + std::to_string(self_.pid) + "-" +
                               std::to_string(self_.start_time) + "-1.state.tmp";
  ASSERT_TRUE(WriteFileAtomically(self_tmp, "being written").ok());
  TracefsState old_boot = StateOf(self_);
  old_boot.owner.boot_id = "00000000-0000-0000-0000-000000000000";
  const std::string old_path = Save(old_boot);

  TracefsCleanupReport report = RestoreTracefsLeftByDeadOwners(dir_);
  EXPECT_TRUE(report.ok());
  EXPECT_TRUE(report.restored.empty());
  EXPECT_FALSE(PathExists(tmp));
  EXPECT_TRUE(PathExists(self_tmp)) << "a running owner's file being written is left alone";
  EXPECT_FALSE(PathExists(old_path));
  EXPECT_EQ(Snapshot(), before);
}

TEST_F(TracefsCleanupTest, MissingOrOpenDirectory) {
  EXPECT_TRUE(RestoreTracefsLeftByDeadOwners(dir_ + "/none").ok());
  ASSERT_EQ(chmod(dir_.c_str(), 0777), 0);
  Save(StateOf(GoneProcess()));
  const std::string before = Snapshot();
  TracefsCleanupReport report = RestoreTracefsLeftByDeadOwners(dir_);
  ASSERT_EQ(report.errors.size(), 1u);
  EXPECT_NE(report.errors[0].find("may be written by others (mode 0777)"), std::string::npos)
      << report.errors[0];
  EXPECT_EQ(Snapshot(), before);
}

}  // namespace
}  // namespace sluice
