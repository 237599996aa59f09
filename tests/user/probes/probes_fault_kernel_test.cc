// sluice-probes and its data sources under faults, on the real kernel (root,
// tracefs): the processes are killed the way a crash, the OOM killer or an
// impatient user kills them, and what survives is checked.
//
// Every case runs sluiced, sluice-probes and `sluice record --daemon` as
// subprocesses (build/, next to this binary; SLUICE_BIN_DIR overrides), with
// sockets and the probes' --state-dir in a temp dir, and a streaming session
// (file written every 200 ms, so what sluiced has is visible in the file
// while it records). The test process writes the trace_marker lines
// "<prefix><batch>-<n>" and waits for conditions, never for time.
//
// Cases, and what each one loses (the trace or a log line must say so):
//   - SigkilledProbesCleanupRestoresTracefs: sluice-probes gets SIGKILL in a
//     session. What it had committed (batch A, seen in the file) is in the
//     final file exactly once: sluiced keeps it and the session goes on
//     without the probes until it is stopped. Lost: whatever was still in the
//     kernel buffer or a chunk being written; the trace says
//     a source died (ftrace_stats_end_missing) and `sluice-probes --cleanup`
//     restores tracefs to the snapshot, saying how many unread events the
//     kernel buffer held. BPF programs of the dead probes are gone (the
//     kernel detaches them with the last fd).
//   - RestartedProbesRestoreAtStartupAndRejoin: as above, then a new
//     sluice-probes restores tracefs before it connects, joins the running
//     session, and batch C after it is in the file too.
//   - ForeignEventStaysEnabled: an event enabled by someone else before the
//     session is still enabled after the cleanup.
//   - SluicedKilledProbesRestoreTracefs: sluiced gets SIGKILL; the probes
//     notice (the socket closes), abandon their sources and restore tracefs.
//     See the test for what is timed and asserted. Lost: everything sluiced
//     had not written to the file; the probes' line says what they could not
//     deliver.
//   - SigkilledRecordIsRestoredByTheNextRecord: the in-process `sluice record`
//     gets SIGKILL; the next `sluice record` restores tracefs first (default
//     state directory, /run/sluice/tracefs-state).
//
// tracefs (tracing_on, buffer_size_kb, buffer_percent, trace_clock, set_event, instances) is
// compared with its state before each test; a failed test runs the cleanup
// and puts the snapshot back itself so that it does not spoil the next one.
#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <bpf/bpf.h>

#include <cstdio>
#include <map>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "perfetto/trace/trace_packet.pb.h"
#include "shm/base/file_util.h"
#include "shm/base/string_util.h"
#include "tests/child_process_test_util.h"
#include "tests/kernel_test_util.h"
#include "tests/user/cmd/record_test_util.h"
#include "tests/user/probes/tracefs_test_util.h"
#include "user/trace/trace_file_reader.h"
#include "user/trace/trace_health.h"

namespace sluice {
namespace {

using testing::ChildProcess;
using testing::NowMs;
using testing::ReadFileOr;
using testing::ReadTracefsState;
using testing::RestoreTracefsState;
using testing::TracefsState;
using testing::WriteTracefsFile;

constexpr char kTracefs[] = "/sys/kernel/tracing";
// Waits on conditions end at this only when something is broken.
constexpr uint64_t kTimeoutMs = 60000;
constexpr uint32_t kBatch = 500;

constexpr char kConfig[] = R"(
buffers { size_kb: 16384 fill_policy: RING_BUFFER }
duration_ms: 600000
write_into_file: true
file_write_period_ms: 200
data_sources {
  config {
    name: "linux.ftrace"
    ftrace_config {
      ftrace_events: "sched/sched_switch"
      ftrace_events: "sched/sched_waking"
      ftrace_events: "sched/sched_process_exit"
      ftrace_events: "task/task_rename"
      ftrace_events: "ftrace/print"
      buffer_size_kb: 4096
      drain_buffer_percent: 35
    }
  }
}
data_sources { config { name: "linux.process_stats" } }
)";

constexpr char kBpfSource[] = R"(
data_sources { config { name: "linux.bpf" bpf_config { events: "sched/sched_switch" } } }
)";

// Names of the BPF programs loaded now whose name starts with "sluice_".
std::vector<std::string> LoadedSluiceBpfPrograms() {
  std::vector<std::string> names;
  for (uint32_t id = 0; bpf_prog_get_next_id(id, &id) == 0;) {
    int fd = bpf_prog_get_fd_by_id(id);
    if (fd < 0) continue;  // Gone meanwhile.
    bpf_prog_info info{};
    uint32_t len = sizeof(info);
    if (bpf_obj_get_info_by_fd(fd, &info, &len) == 0 &&
        std::string(info.name).rfind("sluice_", 0) == 0) {
      names.emplace_back(info.name);
    }
    close(fd);
  }
  return names;
}

// The markers of each batch found in a trace file: batch -> seq -> count.
struct Markers {
  Status status;
  std::map<std::string, std::map<uint32_t, uint32_t>> seen;
  uint32_t Count(const std::string& batch) const {
    auto it = seen.find(batch);
    return it == seen.end() ? 0 : static_cast<uint32_t>(it->second.size());
  }
  // Every seq in [0, n) exactly once.
  bool ExactlyOnce(const std::string& batch, uint32_t n) const {
    auto it = seen.find(batch);
    if (it == seen.end() || it->second.size() != n) return false;
    for (const auto& [seq, c] : it->second) {
      if (seq >= n || c != 1) return false;
    }
    return true;
  }
};

Markers ReadMarkers(const std::string& path, const std::string& prefix) {
  Markers m;
  TraceFileSummary summary;
  m.status = ReadTraceFile(
      path,
      [&](std::string_view bytes) {
        perfetto::protos::TracePacket p;
        if (!p.ParseFromArray(bytes.data(), static_cast<int>(bytes.size()))) return;
        if (!p.has_ftrace_events()) return;
        for (const auto& e : p.ftrace_events().event()) {
          if (!e.has_print()) continue;
          std::string buf = e.print().buf();
          if (buf.compare(0, prefix.size(), prefix) != 0) continue;
          while (!buf.empty() && buf.back() == '\n') buf.pop_back();
          const std::string rest = buf.substr(prefix.size());
          const size_t dash = rest.rfind('-');
          if (dash == std::string::npos) continue;
          m.seen[rest.substr(0, dash)][static_cast<uint32_t>(
              strtoul(rest.c_str() + dash + 1, nullptr, 10))]++;
        }
      },
      &summary);
  return m;
}

class ProbesFaultKernelTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (geteuid() != 0) SLUICE_KERNEL_SKIP("needs root to control tracefs");
    if (access((std::string(kTracefs) + "/trace_marker").c_str(), W_OK) != 0)
      SLUICE_KERNEL_SKIP("no tracefs at /sys/kernel/tracing");
    bin_dir_ = testing::SluiceBinDir();
    for (const char* name : {"sluice", "sluiced", "sluice-probes"}) {
      if (access(Bin(name).c_str(), X_OK) != 0)
        SLUICE_KERNEL_SKIP(Bin(name) + " not found: build it (make) or set SLUICE_BIN_DIR");
    }
    char tmpl[] = "/tmp/sluice-probes-fault-XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
    static int run = 0;
    prefix_ = "sluice-fault-" + std::to_string(getpid()) + "." + std::to_string(++run) + "-";
    marker_fd_ = open((std::string(kTracefs) + "/trace_marker").c_str(), O_WRONLY | O_CLOEXEC);
    ASSERT_GE(marker_fd_, 0);
    before_ = ReadTracefsState();
    armed_ = true;
  }

  void TearDown() override {
    if (marker_fd_ >= 0) close(marker_fd_);
    if (!armed_) return;
    for (ChildProcess* c : {&recorder_, &probes2_, &probes_, &sluiced2_, &sluiced_}) {
      if (c->pid() > 0 && c->running()) c->Terminate(10000);
    }
    TracefsState after = ReadTracefsState();
    EXPECT_EQ(after, before_) << "tracefs not left as found\nbefore: " << before_.ToString()
                              << "\nafter:  " << after.ToString();
    if (after != before_) {
      // Do not spoil the next test: what the cleanup can do, then the snapshot.
      RunCleanup(Path("state"));
      if (ReadTracefsState() != before_) RestoreTracefsState(before_);
    }
    if (!HasFailure()) {
      std::string rm = "rm -rf " + dir_;
      EXPECT_EQ(system(rm.c_str()), 0);
    } else {
      fprintf(stderr, "kept %s for inspection\n", dir_.c_str());
    }
  }

  std::string Bin(const char* name) const { return bin_dir_ + "/" + name; }
  std::string Path(const std::string& name) const { return dir_ + "/" + name; }

  // Polls `condition` every 10 ms until it holds or kTimeoutMs pass.
  template <typename Fn>
  static bool WaitFor(Fn condition) {
    const uint64_t deadline = NowMs() + kTimeoutMs;
    while (!condition()) {
      if (NowMs() >= deadline) return false;
      usleep(10 * 1000);
    }
    return true;
  }
  static bool StderrHas(const ChildProcess& c, const std::string& text, size_t count = 1) {
    const std::string err = c.Stderr();
    size_t found = 0;
    for (size_t at = err.find(text); at != std::string::npos; at = err.find(text, at + 1)) found++;
    return found >= count;
  }

  void StartSluiced(ChildProcess* sluiced = nullptr, const std::string& name = "sluiced") {
    if (sluiced == nullptr) sluiced = &sluiced_;
    ASSERT_TRUE(sluiced->Start({Bin("sluiced"), "--foreground", "--producer-socket",
                                Path("producer.sock"), "--consumer-socket", Path("consumer.sock")},
                               Path(name + ".out"), Path(name + ".err")));
    ASSERT_TRUE(WaitFor([&] { return StderrHas(*sluiced, "listening on") || !sluiced->running(); }))
        << sluiced->Describe();
    ASSERT_TRUE(sluiced->running()) << sluiced->Describe();
  }

  // The *.state files in the probes' state directory.
  std::vector<std::string> StateFiles() const {
    std::vector<std::string> names;
    if (DIR* d = opendir(Path("state").c_str())) {
      while (struct dirent* e = readdir(d)) {
        if (std::string(e->d_name).find(".state") != std::string::npos) names.emplace_back(e->d_name);
      }
      closedir(d);
    }
    return names;
  }

  // Starts sluice-probes and waits until it is connected (the `n`th
  // connection of that process).
  void StartProbes(ChildProcess* probes, const std::string& name) {
    ASSERT_TRUE(probes->Start({Bin("sluice-probes"), "--producer-socket", Path("producer.sock"),
                               "--state-dir", Path("state")},
                              Path(name + ".out"), Path(name + ".err")));
    ASSERT_TRUE(WaitFor([&] { return StderrHas(*probes, "connected to") || !probes->running(); }))
        << probes->Describe();
    ASSERT_TRUE(probes->running()) << probes->Describe();
  }

  // Writes "<prefix><batch>-<i>" for i in [0, n).
  void WriteBatch(const std::string& batch, uint32_t n) {
    for (uint32_t i = 0; i < n; i++) {
      const std::string line = prefix_ + batch + "-" + std::to_string(i);
      ASSERT_EQ(write(marker_fd_, line.data(), line.size()), static_cast<ssize_t>(line.size()));
    }
  }
  // Writes "<prefix><batch>-0" every 100 ms until it is in the streamed file:
  // the whole path from the kernel to the file is live.
  bool WaitUntilRecording(const std::string& batch, const std::string& trace, ChildProcess* rec) {
    const std::string line = prefix_ + batch + "-0";
    const uint64_t deadline = NowMs() + kTimeoutMs;
    while (NowMs() < deadline && rec->running()) {
      (void)!write(marker_fd_, line.data(), line.size());
      for (int i = 0; i < 10; i++) {
        if (ReadFileOr(testing::FileBeingRecorded(trace), "").find(line) != std::string::npos) return true;
        usleep(10 * 1000);
      }
    }
    return false;
  }
  // Waits until the last line of a batch is in the file (its whole batch
  // was committed and written by sluiced).
  bool WaitUntilInFile(const std::string& batch, uint32_t n, const std::string& trace) {
    const std::string last = prefix_ + batch + "-" + std::to_string(n - 1);
    return WaitFor([&] {
      return ReadFileOr(testing::FileBeingRecorded(trace), "").find(last) != std::string::npos;
    });
  }

  // `sluice record --daemon` with kConfig (plus `extra`), recording when this
  // returns.
  void StartDaemonRecorder(const std::string& extra = "") {
    ASSERT_TRUE(WriteTracefsFile(Path("config.pbtx"), std::string(kConfig) + extra,
                                 O_CREAT | O_TRUNC));
    ASSERT_TRUE(recorder_.Start({Bin("sluice"), "record", "--daemon", "--consumer-socket",
                                 Path("consumer.sock"), "-c", Path("config.pbtx"), "--txt", "-q",
                                 "--file-lag", "1s", "-o", Path("trace.pftrace")},
                                Path("record.out"), Path("record.err")));
    ASSERT_TRUE(WaitUntilRecording("ready", Path("trace.pftrace"), &recorder_))
        << recorder_.Describe() << "\n" << probes_.Describe();
  }

  // SIGKILL, reaped: its fds are closed, it is gone.
  static void Kill(ChildProcess* c) {
    c->Signal(SIGKILL);
    ASSERT_TRUE(c->Wait(kTimeoutMs));
    ASSERT_TRUE(WIFSIGNALED(c->wait_status())) << c->Describe();
  }

  // What `sluice-probes --cleanup` printed, and its exit code.
  struct CleanupRun {
    int exit_code = -1;
    std::string output;
  };
  CleanupRun RunCleanup(const std::string& state_dir) {
    ChildProcess cleanup;
    CleanupRun run;
    if (!cleanup.Start({Bin("sluice-probes"), "--cleanup", "--state-dir", state_dir},
                       Path("cleanup.out"), Path("cleanup.err")) ||
        !cleanup.Wait(kTimeoutMs)) {
      ADD_FAILURE() << "sluice-probes --cleanup did not finish: " << cleanup.Describe();
      return run;
    }
    run.exit_code = WIFEXITED(cleanup.wait_status()) ? WEXITSTATUS(cleanup.wait_status()) : -1;
    run.output = cleanup.Stderr();
    return run;
  }

  // The tracefs of a session with kConfig: its events on, its buffer size,
  // the boot clock.
  void ExpectSessionState() {
    TracefsState s = ReadTracefsState();
    EXPECT_NE(s.set_event.find("sched:sched_switch"), std::string::npos) << s.ToString();
    EXPECT_NE(s.set_event.find("task:task_rename"), std::string::npos) << s.ToString();
    EXPECT_NE(s.trace_clock.find("[boot]"), std::string::npos) << s.ToString();
    EXPECT_NE(s.buffer_size_kb, before_.buffer_size_kb) << s.ToString();
    EXPECT_EQ(TrimWhitespace(s.buffer_percent), "35") << s.ToString();
  }

  // The session with batch A committed, then sluice-probes killed. Returns
  // the killed probes' pid.
  pid_t SessionWithKilledProbes(const std::string& extra_config = "", bool with_bpf = false) {
    StartSluiced();
    StartProbes(&probes_, "probes");
    StartDaemonRecorder(extra_config);
    ExpectSessionState();
    WriteBatch("A", kBatch);
    EXPECT_TRUE(WaitUntilInFile("A", kBatch, Path("trace.pftrace"))) << recorder_.Describe();
    const pid_t pid = probes_.pid();
    EXPECT_EQ(StateFiles().size(), 1u) << "the probes' one ftrace source keeps one state file";
    if (with_bpf) {
      EXPECT_FALSE(LoadedSluiceBpfPrograms().empty()) << "the BPF source did not load";
    }
    Kill(&probes_);
    // Nothing put tracefs back: the dead probes' events are still on.
    EXPECT_NE(ReadTracefsState().set_event, before_.set_event);
    return pid;
  }

  // SIGINT to the recorder; it ends the session and exits 0.
  void StopRecorder() {
    recorder_.Signal(SIGINT);
    ASSERT_TRUE(recorder_.Wait(kTimeoutMs)) << recorder_.Describe();
    EXPECT_TRUE(recorder_.exited_normally_with(0)) << recorder_.Describe();
  }

  // What the trace says about a source that died: one ftrace instance never
  // ended.
  void ExpectTraceSaysAFtraceSourceDied() {
    auto health = AnalyzeTraceFile(Path("trace.pftrace"));
    ASSERT_TRUE(health.ok()) << health.status().message();
    EXPECT_TRUE(health->has_trace_stats) << FormatHealthTable(*health);
    int64_t end_missing = 0;
    for (const HealthRow& r : health->rows) {
      if (r.name == "ftrace_stats_end_missing") end_missing = r.value;
    }
    EXPECT_EQ(end_missing, 1) << FormatHealthTable(*health);
  }

  std::string bin_dir_, dir_, prefix_;
  int marker_fd_ = -1;
  TracefsState before_;
  bool armed_ = false;
  ChildProcess sluiced_, sluiced2_, probes_, probes2_, recorder_;
};

TEST_F(ProbesFaultKernelTest, SigkilledProbesCleanupRestoresTracefs) {
  const bool bpf = access("/sys/kernel/btf/vmlinux", R_OK) == 0;
  const pid_t killed = SessionWithKilledProbes(bpf ? kBpfSource : "", bpf);
  if (bpf) {
    // The kernel detaches a dead process's programs with its last fd.
    EXPECT_TRUE(WaitFor([] { return LoadedSluiceBpfPrograms().empty(); }))
        << "BPF programs left behind: " << LoadedSluiceBpfPrograms().size();
  }

  CleanupRun cleanup = RunCleanup(Path("state"));
  EXPECT_EQ(cleanup.exit_code, 0) << cleanup.output;
  const std::string said = "restored tracefs left by sluice-probes pid " + std::to_string(killed) +
                           " (no longer running) in " + kTracefs + ": disabled ";
  EXPECT_NE(cleanup.output.find(said), std::string::npos) << cleanup.output;
  // The clock was changed, and so is put back, only where it was not boot
  // already (Android, or after upstream Perfetto ran).
  const std::string found_clock = ParseSelectedTraceClock(before_.trace_clock);
  if (found_clock != "boot") {
    EXPECT_NE(cleanup.output.find("trace_clock boot -> " + found_clock), std::string::npos) << cleanup.output;
  } else {
    EXPECT_EQ(cleanup.output.find("trace_clock"), std::string::npos) << cleanup.output;
  }
  EXPECT_NE(cleanup.output.find("buffer_size_kb "), std::string::npos) << cleanup.output;
  if (TrimWhitespace(before_.buffer_percent) != "35") {
    EXPECT_NE(cleanup.output.find("buffer_percent 35 -> "), std::string::npos) << cleanup.output;
  }
  EXPECT_EQ(ReadTracefsState(), before_) << "the cleanup did not restore the snapshot";
  EXPECT_EQ(StateFiles(), std::vector<std::string>{}) << "the state file must be gone";
  // Nothing left to undo: a second cleanup finds nothing.
  CleanupRun again = RunCleanup(Path("state"));
  EXPECT_EQ(again.exit_code, 0);
  EXPECT_EQ(again.output, "");

  // The session went on without the probes; it ends when asked, and what
  // the probes committed is in the file once.
  StopRecorder();
  Markers m = ReadMarkers(Path("trace.pftrace"), prefix_);
  ASSERT_TRUE(m.status.ok()) << m.status.message();
  EXPECT_TRUE(m.ExactlyOnce("A", kBatch)) << "batch A: " << m.Count("A") << " of " << kBatch;
  ExpectTraceSaysAFtraceSourceDied();
  sluiced_.Terminate(kTimeoutMs);
  EXPECT_TRUE(sluiced_.exited_normally_with(0)) << sluiced_.Describe();
}

TEST_F(ProbesFaultKernelTest, RestartedProbesRestoreAtStartupAndRejoin) {
  const pid_t killed = SessionWithKilledProbes();
  StartProbes(&probes2_, "probes2");
  const std::string said = "restored tracefs left by sluice-probes pid " + std::to_string(killed) +
                           " (no longer running)";
  EXPECT_TRUE(StderrHas(probes2_, said)) << probes2_.Describe();
  // It joined the running session: the session's tracefs again, and its
  // markers in the file.
  ASSERT_TRUE(WaitUntilRecording("ready2", Path("trace.pftrace"), &recorder_))
      << recorder_.Describe() << "\n" << probes2_.Describe();
  ExpectSessionState();
  WriteBatch("C", kBatch);
  EXPECT_TRUE(WaitUntilInFile("C", kBatch, Path("trace.pftrace")));
  StopRecorder();

  Markers m = ReadMarkers(Path("trace.pftrace"), prefix_);
  ASSERT_TRUE(m.status.ok()) << m.status.message();
  EXPECT_TRUE(m.ExactlyOnce("A", kBatch)) << "batch A: " << m.Count("A") << " of " << kBatch;
  EXPECT_TRUE(m.ExactlyOnce("C", kBatch)) << "batch C: " << m.Count("C") << " of " << kBatch;
  ExpectTraceSaysAFtraceSourceDied();
  // The session is over: the restarted probes put tracefs back themselves.
  EXPECT_TRUE(WaitFor([&] { return ReadTracefsState() == before_; }))
      << ReadTracefsState().ToString();
  probes2_.Terminate(kTimeoutMs);
  EXPECT_TRUE(probes2_.exited_normally_with(0)) << probes2_.Describe();
  sluiced_.Terminate(kTimeoutMs);
}

TEST_F(ProbesFaultKernelTest, ForeignEventStaysEnabled) {
  // Someone else traces process exits; the session wants them too.
  const std::string enable = std::string(kTracefs) + "/events/sched/sched_process_exit/enable";
  ASSERT_EQ(ReadFileOr(enable), "0\n") << "the test needs sched_process_exit off at the start";
  ASSERT_TRUE(WriteTracefsFile(enable, "1"));
  const TracefsState with_foreign = ReadTracefsState();

  SessionWithKilledProbes();
  CleanupRun cleanup = RunCleanup(Path("state"));
  EXPECT_EQ(cleanup.exit_code, 0) << cleanup.output;
  EXPECT_EQ(ReadFileOr(enable), "1\n") << "someone else's event was disabled";
  EXPECT_EQ(ReadTracefsState(), with_foreign);

  StopRecorder();
  sluiced_.Terminate(kTimeoutMs);
  ASSERT_TRUE(WriteTracefsFile(enable, "0"));
}

// sluiced killed mid-session: the probes must notice and restore tracefs
// "within a second". What is asserted, and why:
//   - The probes time themselves from the moment their IPC thread sees the
//     socket close to the moment tracefs is back, and log it ("tracefs
//     restored N ms after noticing"). Noticing is the kernel closing the
//     socket when sluiced dies, which is immediate; N is the probes' own work
//     (disable events, stop threads, write back clock and size). N < 1000 is
//     asserted: it holds on a loaded machine, because the probes do a few
//     file writes and thread joins, not a scan of the buffer (35-72 ms
//     measured with stress-ng). In an emulated guest (vm-tests under TCG,
//     SLUICE_TEST_WORKLOAD_SCALE < 1) the bound is divided by that scale:
//     the second is a promise about real machines.
//   - The test also measures from kill() to the moment it sees the snapshot
//     back (polling tracefs). That includes the scheduler's delays for three
//     processes, so only a generous bound is asserted (10 s: a hang, not
//     slowness); the figure is printed.
TEST_F(ProbesFaultKernelTest, SluicedKilledProbesRestoreTracefs) {
  StartSluiced();
  StartProbes(&probes_, "probes");
  StartDaemonRecorder();
  ExpectSessionState();

  const uint64_t killed_ms = NowMs();
  sluiced_.Signal(SIGKILL);
  uint64_t restored_ms = 0;
  const uint64_t deadline = killed_ms + kTimeoutMs;
  while (NowMs() < deadline) {
    if (ReadTracefsState() == before_) {
      restored_ms = NowMs();
      break;
    }
    usleep(1000);
  }
  ASSERT_NE(restored_ms, 0u) << "tracefs not restored after sluiced died: "
                             << ReadTracefsState().ToString() << "\n" << probes_.Describe();
  ASSERT_TRUE(sluiced_.Wait(kTimeoutMs));

  const std::string key = "tracefs restored ";
  ASSERT_TRUE(WaitFor([&] { return StderrHas(probes_, key); })) << probes_.Describe();
  const std::string log = probes_.Stderr();
  const uint64_t probe_ms = strtoull(log.c_str() + log.find(key) + key.size(), nullptr, 10);
  fprintf(stderr, "sluiced killed -> tracefs restored: %llu ms seen by the test, %llu ms in the "
          "probes after noticing\n",
          static_cast<unsigned long long>(restored_ms - killed_ms),
          static_cast<unsigned long long>(probe_ms));
  RecordProperty("kill_to_restored_ms", static_cast<int>(restored_ms - killed_ms));
  RecordProperty("probes_notice_to_restored_ms", static_cast<int>(probe_ms));
  EXPECT_LT(static_cast<double>(probe_ms), 1000 / testing::WorkloadScale()) << log;
  EXPECT_LT(restored_ms - killed_ms, 10000u);
  // What could not be delivered is said.
  EXPECT_NE(log.find("not delivered: "), std::string::npos) << log;
  EXPECT_NE(log.find("events left in the kernel buffer"), std::string::npos) << log;
  EXPECT_TRUE(probes_.running()) << "sluice-probes must wait for sluiced to come back";

  // The recorder lost its service: it ends, with an error.
  ASSERT_TRUE(recorder_.Wait(kTimeoutMs)) << recorder_.Describe();
  EXPECT_FALSE(recorder_.exited_normally_with(0)) << recorder_.Describe();

  // A new sluiced: the probes connect again.
  StartSluiced(&sluiced2_, "sluiced2");
  EXPECT_TRUE(WaitFor([&] { return StderrHas(probes_, "connected to", 2); })) << probes_.Describe();
  probes_.Terminate(kTimeoutMs);
  EXPECT_TRUE(probes_.exited_normally_with(0)) << probes_.Describe();
  sluiced2_.Terminate(kTimeoutMs);
}

// The in-process `sluice record` killed: the next one restores tracefs before
// it records (default state directory).
TEST_F(ProbesFaultKernelTest, SigkilledRecordIsRestoredByTheNextRecord) {
  ASSERT_TRUE(WriteTracefsFile(Path("config.pbtx"), kConfig, O_CREAT | O_TRUNC));
  ASSERT_TRUE(recorder_.Start({Bin("sluice"), "record", "-c", Path("config.pbtx"), "--txt", "-q",
                               "--file-lag", "1s", "-o", Path("trace.pftrace")},
                              Path("record.out"), Path("record.err")));
  ASSERT_TRUE(WaitUntilRecording("ready", Path("trace.pftrace"), &recorder_))
      << recorder_.Describe();
  ExpectSessionState();
  const pid_t killed = recorder_.pid();
  Kill(&recorder_);
  EXPECT_NE(ReadTracefsState().set_event, before_.set_event);

  ChildProcess next;
  ASSERT_TRUE(next.Start({Bin("sluice"), "record", "-t", "1s", "-q", "-o", Path("next.pftrace")},
                         Path("next.out"), Path("next.err")));
  ASSERT_TRUE(next.Wait(kTimeoutMs)) << next.Describe();
  EXPECT_TRUE(next.exited_normally_with(0)) << next.Describe();
  EXPECT_TRUE(StderrHas(next, "restored tracefs left by sluice pid " + std::to_string(killed) +
                                  " (no longer running)"))
      << next.Describe();
}

}  // namespace
}  // namespace sluice
