// `sluice record` end to end on the real kernel (root, tracefs).
//
// The recorder runs as a subprocess, exactly as a user runs it: build/sluice
// (found next to this test binary, /proc/self/exe's directory), and for
// --daemon also build/sluiced and build/sluice-probes. The test process is
// the workload:
//   - two threads named by prctl(PR_SET_NAME) ping-pong a byte through two
//     pipes kRounds times (context switches and wakeups between known
//     threads);
//   - two threads write kMarkers sequence-numbered trace_marker lines
//     "sluice-e2e-<run>-<seq>".
// Both are paced to a busy-but-sane rate (see Pacer for why).
// The workload starts only once the recorder is up: the test writes
// "sluice-e2e-<run>-ready" markers every 100 ms until one shows up in the
// output file (the file is streamed while recording), so the whole data path
// (kernel -> reader -> SMB -> central buffer -> file) is known to be live.
// The recorder runs with `-t 1h` and is stopped by a signal once the
// workload is done, so no case depends on how fast the machine is; the
// kernel buffers (-k 16mb) hold the whole workload, so a starved reader
// delays data without losing it (the cases that check zero loss say
// "BuffersHoldWorkload" in their names). Timeouts of waits on conditions
// are stretched by SLUICE_TEST_TIMEOUT_SCALE (vm-tests set it from the
// guest's measured speed).
//
// The file is then decoded packet by packet with libprotobuf and checked:
// every marker exactly once (ftrace and BPF both encode markers as
// PrintFtraceEvent.buf, the kernel adds a trailing newline), the ping-pong
// threads' names present (compact_sched intern table, sched_switch comms,
// task_rename, or ProcessTree), zero data_loss rows from AnalyzeTraceFile, a
// valid Trace up to its last byte, and TraceStats, ClockSnapshot, SystemInfo
// and TraceConfig packets present.
//
// Cases: in-process (default), --daemon (sluiced + sluice-probes as
// subprocesses on sockets in a temp dir), --bpf (markers caught by the BPF
// source through sys_enter_write), SIGTERM (clean stop, complete file), -t
// (the recording ends by itself), and a streaming text config killed with
// SIGKILL (file valid up to its last complete packet).
//
// tracefs is compared before and after every test: tracing_on,
// buffer_size_kb, trace_clock, set_event, instances. A recorder killed with
// SIGKILL cannot restore tracefs itself (its events stay enabled, its clock
// and buffer size stay set); the tracefs state file it kept lets the next
// `sluice record` or `sluice-probes --cleanup` put it back
// (user/probes/tracefs_cleanup.h): the SIGKILL test runs the latter and
// checks it took. A never-used root buffer reads "7 (expanded: 1408)"
// until something sizes it and the kernel cannot go back: the comparison
// treats the two as equal.
//
// All cases use the root instance (where apps' trace_marker writes land), so
// another tracer using the root instance at the same time makes them fail.
#include <fcntl.h>
#include <linux/loop.h>
#include <sched.h>
#include <signal.h>
#include <sqlite3.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/socket.h>
#include <sys/sysmacros.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>
#include <zstd.h>

#include "perfetto/common/trace_stats.pb.h"
#include "perfetto/trace/trace.pb.h"
#include "perfetto/trace/trace_packet.pb.h"
#include "service/trace_file_writer.h"
#include "tests/child_process_test_util.h"
#include "tests/kernel_test_util.h"
#include "tests/user/cmd/record_test_util.h"
#include "tests/user/probes/tracefs_test_util.h"
#include "tests/user/query/query_csv_test_util.h"
#include "user/probes/ftrace/ftrace_format.h"
#include "user/query/engine/query_engine.h"
#include "user/trace/trace_file_reader.h"
#include "user/trace/trace_health.h"
#include "user/probes/tracefs.h"
#include "user/probes/tracefs_readers.h"

namespace sluice {
namespace {

using testing::ChildProcess;
using testing::NowMs;
using testing::RestoreTracefsState;
using testing::WriteTracefsFile;
using testing::ReadFileOr;
using testing::ReadTracefsState;
using testing::TracefsState;

constexpr char kTracefs[] = "/sys/kernel/tracing";
constexpr uint32_t kMarkers = 20000;  // Total, over two writer threads.
constexpr uint32_t kRounds = 20000;   // Ping-pong round trips.
// Paced rates (see Pacer): about 160k sched events/s from the ping-pong and
// 40k markers/s, i.e. a busy system, for about half a second.
constexpr double kRoundsPerSecond = 40000;
constexpr double kMarkersPerSecondPerThread = 20000;

// ---------------------------------------------------------------------------
// The workload.

// Keeps a loop at `per_second` iterations per second. Unpaced, the ping-pong
// does 1.5 M sched events/s on one CPU, which fills a 2 MiB kernel buffer in
// about 20 ms: on a loaded machine (other builds running) the reader thread
// is not always scheduled that soon and the kernel overwrites events (seen:
// 25k lost at load 17, correctly reported as ftrace_cpu_overrun_delta). These
// tests check correctness, so they run at a busy-but-sane rate; loss at high
// rates is measured by tests/bench/record_vs_tracecmd.sh. A pacer that falls
// behind (the thread was not scheduled) forgets the deficit instead of
// bursting to catch up.
class Pacer {
 public:
  explicit Pacer(double per_second) : ns_per_op_(1e9 / per_second), start_(Now()) {}
  void Tick() {
    ops_++;
    const double due = start_ + static_cast<double>(ops_) * ns_per_op_;
    const double now = Now();
    if (now + 1e6 < due) {
      usleep(static_cast<useconds_t>((due - now) / 1000));
    } else if (now > due + 5e6) {
      start_ = now - static_cast<double>(ops_) * ns_per_op_;  // Forget the deficit.
    }
  }

 private:
  static double Now() {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return static_cast<double>(ts.tv_sec) * 1e9 + static_cast<double>(ts.tv_nsec);
  }
  double ns_per_op_;
  double start_;
  uint64_t ops_ = 0;
};

struct Workload {
  std::string prefix;     // "sluice-e2e-<run>-"
  std::string ping_name;  // Thread names (<= 15 bytes: TASK_COMM_LEN).
  std::string pong_name;
  uint32_t markers = kMarkers;
  uint32_t rounds = kRounds;
};

// Writes "<prefix>ready" every 100 ms until it shows up in `trace_path` (the
// recorder streams the file), or timeout_ms passes.
bool WaitUntilRecording(const Workload& w, const std::string& trace_path, uint64_t timeout_ms,
                        ChildProcess* recorder) {
  return testing::WriteMarkerUntilInFile(w.prefix + "ready", trace_path, timeout_ms, recorder);
}

// Runs the ping-pong pair and the two marker writers; blocks until done.
void RunWorkload(const Workload& w) {
  int ab[2], ba[2];
  ASSERT_EQ(pipe2(ab, O_CLOEXEC), 0);
  ASSERT_EQ(pipe2(ba, O_CLOEXEC), 0);
  std::vector<std::thread> threads;
  threads.emplace_back([&] {
    prctl(PR_SET_NAME, w.ping_name.c_str());
    Pacer pacer(kRoundsPerSecond * testing::WorkloadScale());
    char c = 'x';
    for (uint32_t i = 0; i < w.rounds; i++) {
      if (write(ab[1], &c, 1) != 1 || read(ba[0], &c, 1) != 1) break;
      pacer.Tick();
    }
  });
  threads.emplace_back([&] {
    prctl(PR_SET_NAME, w.pong_name.c_str());
    char c;
    for (uint32_t i = 0; i < w.rounds; i++) {
      if (read(ab[0], &c, 1) != 1 || write(ba[1], &c, 1) != 1) break;
    }
  });
  std::atomic<int> marker_errors{0};
  const uint32_t per_thread = w.markers / 2;
  for (uint32_t t = 0; t < 2; t++) {
    threads.emplace_back([&, t] {
      int fd = open((std::string(kTracefs) + "/trace_marker").c_str(), O_WRONLY | O_CLOEXEC);
      if (fd < 0) {
        marker_errors++;
        return;
      }
      Pacer pacer(kMarkersPerSecondPerThread * testing::WorkloadScale());
      char buf[96];
      for (uint32_t i = 0; i < per_thread; i++) {
        int n = snprintf(buf, sizeof(buf), "%s%u", w.prefix.c_str(), t * per_thread + i);
        if (write(fd, buf, static_cast<size_t>(n)) != n) marker_errors++;
        pacer.Tick();
      }
      close(fd);
    });
  }
  for (auto& t : threads) t.join();
  for (int fd : {ab[0], ab[1], ba[0], ba[1]}) close(fd);
  EXPECT_EQ(marker_errors.load(), 0) << "trace_marker writes failed";
}

// ---------------------------------------------------------------------------
// Decoding the trace.

struct Decoded {
  Status status;
  TraceFileSummary summary;
  uint64_t bad_packets = 0;
  std::map<uint32_t, uint32_t> marker_count;  // seq -> times seen.
  uint64_t malformed_markers = 0;             // Our prefix, not a number.
  std::set<std::string> comms;
  bool trace_stats = false, clock_snapshot = false, system_info = false,
       trace_config = false, process_tree = false, bpf_stats = false;
  uint64_t ftrace_events = 0;
  std::vector<std::string> triggers;  // Trigger packets' names, in file order.
};

void AddPrint(const std::string& prefix, std::string buf, Decoded* d) {
  if (buf.compare(0, prefix.size(), prefix) != 0) return;
  while (!buf.empty() && (buf.back() == '\n' || buf.back() == '\0')) buf.pop_back();
  std::string rest = buf.substr(prefix.size());
  if (rest == "ready") return;
  char* end = nullptr;
  unsigned long seq = strtoul(rest.c_str(), &end, 10);
  if (rest.empty() || *end != '\0') {
    d->malformed_markers++;
    return;
  }
  d->marker_count[static_cast<uint32_t>(seq)]++;
}

Decoded DecodeTrace(const std::string& path, const std::string& prefix) {
  Decoded d;
  d.status = ReadTraceFile(
      path,
      [&](std::string_view bytes) {
        perfetto::protos::TracePacket p;
        if (!p.ParseFromArray(bytes.data(), static_cast<int>(bytes.size()))) {
          d.bad_packets++;
          return;
        }
        d.trace_stats |= p.has_trace_stats();
        d.clock_snapshot |= p.has_clock_snapshot();
        d.system_info |= p.has_system_info();
        d.trace_config |= p.has_trace_config();
        d.bpf_stats |= p.has_bpf_stats();
        if (p.has_trigger()) d.triggers.push_back(p.trigger().trigger_name());
        if (p.has_process_tree()) {
          d.process_tree = true;
          for (const auto& t : p.process_tree().threads()) d.comms.insert(t.name());
        }
        if (!p.has_ftrace_events()) return;
        const auto& bundle = p.ftrace_events();
        for (const std::string& s : bundle.compact_sched().intern_table()) d.comms.insert(s);
        for (const auto& e : bundle.event()) {
          d.ftrace_events++;
          if (e.has_print()) AddPrint(prefix, e.print().buf(), &d);
          if (e.has_sched_switch()) {
            d.comms.insert(e.sched_switch().prev_comm());
            d.comms.insert(e.sched_switch().next_comm());
          }
          if (e.has_sched_waking()) d.comms.insert(e.sched_waking().comm());
          if (e.has_task_rename()) d.comms.insert(e.task_rename().newcomm());
          if (e.has_task_newtask()) d.comms.insert(e.task_newtask().comm());
        }
      },
      &d.summary);
  return d;
}

// Every seq in [0, n) exactly once, nothing else with our prefix.
void ExpectMarkersExactlyOnce(const Decoded& d, uint32_t n) {
  uint32_t missing = 0, duplicated = 0, foreign = 0;
  std::string examples;
  for (uint32_t seq = 0; seq < n; seq++) {
    auto it = d.marker_count.find(seq);
    uint32_t c = it == d.marker_count.end() ? 0 : it->second;
    if (c == 0) missing++;
    if (c > 1) duplicated += c - 1;
    if (c != 1 && examples.size() < 200) examples += " " + std::to_string(seq) + "x" + std::to_string(c);
  }
  for (const auto& [seq, c] : d.marker_count) foreign += seq >= n ? c : 0;
  EXPECT_EQ(missing, 0u) << "markers missing, e.g.:" << examples;
  EXPECT_EQ(duplicated, 0u) << "markers duplicated, e.g.:" << examples;
  EXPECT_EQ(foreign, 0u) << "markers with a seq never written";
  EXPECT_EQ(d.malformed_markers, 0u);
}

void ExpectNoDataLoss(const std::string& path) {
  auto health = AnalyzeTraceFile(path);
  ASSERT_TRUE(health.ok()) << health.status().message();
  std::vector<std::string> loss;
  for (const HealthRow& r : health->rows) {
    if (r.severity == "data_loss") loss.push_back(r.name + "[" + std::to_string(r.index) + "]=" +
                                                  std::to_string(r.value));
  }
  EXPECT_TRUE(loss.empty()) << "data loss reported:\n" << FormatHealthTable(*health);
  EXPECT_TRUE(health->has_trace_stats);
}

// The checks every complete recording passes.
void ExpectCompleteTrace(const std::string& path, const Workload& w, const Decoded& d) {
  ASSERT_TRUE(d.status.ok()) << d.status.message();
  EXPECT_FALSE(d.summary.truncated);
  EXPECT_EQ(d.summary.valid_bytes, d.summary.bytes) << "file not a valid Trace to its last byte";
  EXPECT_EQ(d.bad_packets, 0u);
  EXPECT_TRUE(d.trace_stats) << "no TraceStats packet";
  EXPECT_TRUE(d.clock_snapshot) << "no ClockSnapshot packet";
  EXPECT_TRUE(d.system_info) << "no SystemInfo packet";
  EXPECT_TRUE(d.trace_config) << "no TraceConfig packet";
  EXPECT_TRUE(d.process_tree) << "no ProcessTree packet";
  ExpectMarkersExactlyOnce(d, w.markers);
  EXPECT_TRUE(d.comms.count(w.ping_name)) << "thread name " << w.ping_name << " not in the trace";
  EXPECT_TRUE(d.comms.count(w.pong_name)) << "thread name " << w.pong_name << " not in the trace";
  ExpectNoDataLoss(path);
}

// ---------------------------------------------------------------------------

class RecordKernelTest : public ::testing::Test {
 protected:
  void SetUp() override {
    bin_dir_ = testing::SluiceBinDir();
    const std::string why_not = testing::WhyRecordTestsCannotRun(bin_dir_);
    if (!why_not.empty()) SLUICE_KERNEL_SKIP(why_not);
    dir_ = testing::MakeTempDir("sluice-record-e2e-");
    ASSERT_FALSE(dir_.empty());
    static int run = 0;
    run_ = std::to_string(getpid()) + "." + std::to_string(++run);
    workload_.prefix = "sluice-e2e-" + run_ + "-";
    // <= 15 bytes: "ping" + up to 4 + "-" + pid (<= 7 digits).
    const std::string tag = std::to_string(run % 1000) + "-" + std::to_string(getpid());
    workload_.ping_name = "ping" + tag;
    workload_.pong_name = "pong" + tag;
    before_ = ReadTracefsState();
    armed_ = true;
  }

  void TearDown() override {
    if (!armed_) return;
    TracefsState after = ReadTracefsState();
    EXPECT_EQ(after, before_) << "tracefs not left as found\nbefore: " << before_.ToString()
                              << "\nafter:  " << after.ToString();
    if (!HasFailure() && !dir_.empty()) {
      testing::RemoveTempDir(dir_);
    } else if (!dir_.empty()) {
      fprintf(stderr, "kept %s for inspection\n", dir_.c_str());
    }
  }

  std::string Bin(const char* name) const { return bin_dir_ + "/" + name; }
  // Upstream's trace_processor_shell (../shared/tools/perfetto), or "" when
  // it is not there (then a failure under CI, which has it).
  std::string UpstreamShell() const {
    const std::string shell = testing::UpstreamPerfettoDir() + "/trace_processor_shell";
    if (access(shell.c_str(), X_OK) == 0) return shell;
    if (testing::RunningUnderCi()) ADD_FAILURE() << "no upstream trace_processor_shell at " << shell;
    return "";
  }
  std::string Path(const char* name) const { return dir_ + "/" + name; }

  // Starts `sluice record ARGS -o trace`, waits until it records, runs the
  // workload. Returns false (with a failure) if the recorder never came up.
  bool StartAndRunWorkload(std::vector<std::string> args, ChildProcess* recorder) {
    std::vector<std::string> argv = {Bin("sluice"), "record"};
    argv.insert(argv.end(), args.begin(), args.end());
    // The file a second behind, at rest too: the test waits for a marker in it.
    argv.insert(argv.end(), {"--file-lag", "1s", "-o", Path("trace.pftrace")});
    EXPECT_TRUE(recorder->Start(argv, Path("record.out"), Path("record.err")));
    const uint64_t timeout_ms = testing::ScaledTimeoutMs(120000);
    if (!WaitUntilRecording(workload_, Path("trace.pftrace"), timeout_ms, recorder)) {
      ADD_FAILURE() << "the recorder did not start recording within " << timeout_ms / 1000
                    << " s: " << recorder->Describe();
      return false;
    }
    RunWorkload(workload_);
    return true;
  }

  // Records the workload and checks the complete trace. The recorder runs
  // with a duration far longer than any workload needs and is stopped with
  // SIGINT once the workload is done, as a user stops it: nothing here
  // depends on how fast the machine is. The kernel buffers (ftrace and BPF
  // rings, -k) hold the whole workload (~7 MB: kRounds round trips of four
  // sched events, kMarkers markers) on one CPU, so a reader starved by a busy
  // machine delays the data but cannot lose it: zero loss holds by
  // construction, and the tests that check it say so in their names.
  void RecordUntilWorkloadDone(std::vector<std::string> args) {
    args.insert(args.end(), {"-t", "1h", "-k", "16mb", "-q"});
    ChildProcess recorder;
    if (!StartAndRunWorkload(args, &recorder)) return;
    StopRecorder(&recorder, SIGINT);
    Decoded d = DecodeTrace(Path("trace.pftrace"), workload_.prefix);
    ExpectCompleteTrace(Path("trace.pftrace"), workload_, d);
  }

  // Sends `sig` and waits for a clean exit.
  void StopRecorder(ChildProcess* recorder, int sig) {
    EXPECT_TRUE(recorder->running()) << "the recorder ended before the workload did: "
                                     << recorder->Describe();
    recorder->Signal(sig);
    const uint64_t timeout_ms = testing::ScaledTimeoutMs(120000);
    ASSERT_TRUE(recorder->Wait(timeout_ms))
        << "no exit " << timeout_ms / 1000 << " s after signal " << sig << ": "
        << recorder->Describe();
    EXPECT_TRUE(recorder->exited_normally_with(0)) << recorder->Describe();
    EXPECT_EQ(recorder->Stderr().find("failed to start"), std::string::npos)
        << recorder->Stderr();
  }

  // The line `sluice stats` prints about how each CPU's ftrace buffer was
  // read ("ftrace read path: ..."), or "" (with a failure) if none.
  std::string StatsReadPathLine() {
    testing::CommandResult r = testing::RunToCompletion({Bin("sluice"), "stats", Path("trace.pftrace")}, dir_);
    EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
    const size_t at = r.out.find("ftrace read path: ");
    EXPECT_NE(at, std::string::npos) << r.out;
    return at == std::string::npos ? "" : r.out.substr(at, r.out.find('\n', at) - at);
  }

  // `sluice record MODE -b 1mb` of kOneCpuMarkers markers from one CPU,
  // stopped once they are written, decoded into *d. False (with a failure)
  // if it did not record or the trace has none of the markers.
  bool RecordOneCpuMarkersInMemory(const std::string& mode, Decoded* d);

  std::string bin_dir_, dir_, run_;
  Workload workload_;
  TracefsState before_;
  bool armed_ = false;
};

TEST_F(RecordKernelTest, DefaultConfigInProcessZeroLossBuffersHoldWorkload) {
  RecordUntilWorkloadDone({});
  // The default reads every CPU with splice, where the kernel maps ring
  // buffers too: there splice costs less CPU.
  const std::string line = StatsReadPathLine();
  EXPECT_EQ(line.rfind("ftrace read path: splice on CPU", 0), 0u) << line;
  EXPECT_EQ(line.find("mapped"), std::string::npos) << line;
}

// --ftrace-read forces either path; the trace (and `sluice stats`) says
// which one each CPU used, and the workload arrives whole either way.
TEST_F(RecordKernelTest, FtraceReadSpliceZeroLossBuffersHoldWorkload) {
  RecordUntilWorkloadDone({"--ftrace-read=splice"});
  const std::string line = StatsReadPathLine();
  EXPECT_EQ(line.rfind("ftrace read path: splice on CPU", 0), 0u) << line;
  EXPECT_EQ(line.find("mapped"), std::string::npos) << line;
}

TEST_F(RecordKernelTest, FtraceReadMappedZeroLossBuffersHoldWorkload) {
  if (!testing::KernelMapsRingBuffers())
    SLUICE_KERNEL_SKIP("this kernel does not map ring buffers (Linux 6.10+): --ftrace-read=mapped cannot run");
  RecordUntilWorkloadDone({"--ftrace-read=mapped"});
  const std::string line = StatsReadPathLine();
  EXPECT_EQ(line.rfind("ftrace read path: mapped on CPU", 0), 0u) << line;
  EXPECT_EQ(line.find("splice"), std::string::npos) << line;
}

TEST_F(RecordKernelTest, BpfMarkersExactlyOnceZeroLossBuffersHoldWorkload) {
  if (access("/sys/kernel/btf/vmlinux", R_OK) != 0)
    SLUICE_KERNEL_SKIP("no /sys/kernel/btf/vmlinux: the BPF source needs BTF");
  RecordUntilWorkloadDone({"--bpf"});
  Decoded d = DecodeTrace(Path("trace.pftrace"), workload_.prefix);
  EXPECT_TRUE(d.bpf_stats) << "no bpf_stats packet: did the BPF source run?";
}

// --compress zstd: the streamed file is compressed packets only (each one
// zstd frame of whole records, under 512 KiB), every marker is in it once,
// nothing is lost, `sluice query` answers exactly as for the same packets
// written uncompressed, and upstream's trace_processor_shell (v58.2, from
// ../shared/tools/perfetto) imports it without an error (but the
// systrace_parse_failure its reading of the non-atrace markers gives either
// way), with the same stats as the packets uncompressed, and finds every
// marker. That build of the shell has no zstd (it says "zstd is not enabled
// in this build"): then the same packets written with deflate, which every
// Perfetto reads, are what it checks.
TEST_F(RecordKernelTest, CompressedZstdHoldsEveryMarkerOnceZeroLossBuffersHoldWorkload) {
  RecordUntilWorkloadDone({"--compress", "zstd"});
  if (HasFailure()) return;
  const std::string path = Path("trace.pftrace");
  std::string bytes = ReadFileOr(path, "");
  perfetto::protos::Trace trace;
  ASSERT_TRUE(trace.ParseFromString(bytes));
  ASSERT_GT(trace.packet_size(), 1);
  for (int i = 0; i < trace.packet_size(); i++) {
    const auto& p = trace.packet(i);
    ASSERT_TRUE(p.has_zstd_compressed_packets()) << "packet " << i << " is not a zstd container";
    EXPECT_LT(p.ByteSizeLong(), 512u * 1024) << "packet " << i;
    const std::string& frame = p.zstd_compressed_packets();
    EXPECT_EQ(ZSTD_findFrameCompressedSize(frame.data(), frame.size()), frame.size())
        << "packet " << i << " is not exactly one zstd frame";
  }
  // The same packets, uncompressed and deflated.
  std::vector<std::string> packets;
  TraceFileSummary summary;
  ASSERT_TRUE(ReadTraceFile(path, [&](std::string_view p) { packets.emplace_back(p); }, &summary).ok());
  EXPECT_EQ(summary.compressed_containers, static_cast<uint64_t>(trace.packet_size()));
  uint64_t raw_bytes = 0;
  for (const auto& p : packets) raw_bytes += TracePacketRecordSize(p.size());
  EXPECT_LT(bytes.size() * 3, raw_bytes) << "zstd should shrink a trace to well under a third";
  auto write_as = [&](const std::string& name, TraceCompression c) {
    ScopedFd fd(open(Path(name.c_str()).c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644));
    TraceFileWriter writer(std::move(fd), 0, c);
    EXPECT_TRUE(writer.WritePackets(packets).ok());
    EXPECT_TRUE(writer.Flush().ok());
    return Path(name.c_str());
  };
  const std::string plain = write_as("plain.pftrace", {});
  const std::string deflated = write_as("deflate.pftrace", {TraceCodec::kDeflate, 0});
  for (const char* sql :
       {"select ts, cpu, utid, name from ftrace_event order by ts, cpu, name",
        "select ts, dur, cpu, utid, end_state, priority from sched order by ts, cpu",
        "select utid, tid, name, upid from thread order by utid",
        "select ts, name, depth, dur from slice order by ts, name",
        "select name, idx, severity, source, value from stats where value != 0 order by name, idx"}) {
    testing::CommandResult compressed = testing::RunToCompletion({Bin("sluice"), "query", path, "-q", sql}, dir_);
    testing::CommandResult uncompressed = testing::RunToCompletion({Bin("sluice"), "query", plain, "-q", sql}, dir_);
    ASSERT_EQ(compressed.exit_code, 0) << sql << ": " << compressed.err;
    ASSERT_EQ(uncompressed.exit_code, 0) << sql << ": " << uncompressed.err;
    EXPECT_GT(compressed.out.size(), 20u) << sql;
    EXPECT_TRUE(compressed.out == uncompressed.out) << sql << ": the compressed trace answers differently";
  }

  const std::string shell = UpstreamShell();
  if (shell.empty()) GTEST_SKIP() << "no upstream trace_processor_shell in ../shared/tools/perfetto";
  {
    std::ofstream sql(Path("upstream.sql"));
    // The workload's markers are not atrace lines: upstream counts each as a
    // systrace_parse_failure, compressed or not. Every other error counts.
    sql << "select 'errors', count(*) from stats where severity in ('error', 'data_loss') and value > 0 "
           "and name != 'systrace_parse_failure';\n"
           "select name, idx, severity, value from stats where value != 0 and name not like '%duration_ns' "
           "order by name, idx;\n"
           "select 'markers', count(*) from ftrace_event e join args a using (arg_set_id) "
           "where e.name = 'print' and a.key = 'buf' and a.string_value like '"
        << workload_.prefix << "%' and a.string_value not like '%ready%';\n";
  }
  auto upstream = [&](const std::string& file) {
    return testing::RunToCompletion({shell, "-q", Path("upstream.sql"), file}, dir_);
  };
  testing::CommandResult up = upstream(path);
  std::string checked = path;
  if (up.exit_code != 0 && up.err.find("zstd is not enabled in this build") != std::string::npos) {
    fprintf(stderr, "trace_processor_shell has no zstd (\"zstd is not enabled in this build\"): "
                    "checking the same packets deflated\n");
    up = upstream(deflated);
    checked = deflated;
  }
  ASSERT_EQ(up.exit_code, 0) << checked << ": " << up.err;
  // Upstream's stats table (but its own timings): the same for the
  // compressed file as for the same packets uncompressed.
  testing::CommandResult up_plain = upstream(plain);
  ASSERT_EQ(up_plain.exit_code, 0) << plain << ": " << up_plain.err;
  EXPECT_TRUE(up.out == up_plain.out) << "upstream reads " << checked << " differently from " << plain << ":\n"
                                      << up.out << "\n---\n" << up_plain.out;
  EXPECT_NE(up.out.find("\"errors\",0\n"), std::string::npos) << "upstream import errors in " << checked << ":\n"
                                                              << up.out;
  EXPECT_NE(up.out.find("\"markers\"," + std::to_string(workload_.markers) + "\n"), std::string::npos)
      << checked << ":\n" << up.out;
}

// `-t` ends the recording by itself: a short duration with no workload,
// waited for as long as a busy machine needs.
TEST_F(RecordKernelTest, DurationEndsRecording) {
  ChildProcess recorder;
  ASSERT_TRUE(recorder.Start({Bin("sluice"), "record", "-t", "1s", "-q", "-o", Path("trace.pftrace")},
                             Path("record.out"), Path("record.err")));
  const uint64_t timeout_ms = testing::ScaledTimeoutMs(120000);
  ASSERT_TRUE(recorder.Wait(timeout_ms))
      << "a 1 s recording still runs after " << timeout_ms / 1000 << " s: " << recorder.Describe();
  EXPECT_TRUE(recorder.exited_normally_with(0)) << recorder.Describe();
  Decoded d = DecodeTrace(Path("trace.pftrace"), workload_.prefix);
  ASSERT_TRUE(d.status.ok()) << d.status.message();
  EXPECT_FALSE(d.summary.truncated);
  EXPECT_EQ(d.summary.valid_bytes, d.summary.bytes) << "file not a valid Trace to its last byte";
  EXPECT_TRUE(d.trace_stats) << "no TraceStats packet";
  EXPECT_TRUE(d.trace_config) << "no TraceConfig packet";
}

// raw_syscalls as `sluice query` shows them: this thread's write of 4321
// bytes to a pipe is a sys_write slice on its track with the call's
// arguments (args[0..5], from the event's array) and its return value.
TEST_F(RecordKernelTest, SyscallsBecomeSlicesWithTheirArguments) {
  ChildProcess recorder;
  if (!StartAndRunWorkload({"-t", "1h", "-k", "16mb", "-q", "raw_syscalls/sys_enter", "raw_syscalls/sys_exit",
                            "ftrace/print"},
                           &recorder))
    return;
  int fds[2];
  ASSERT_EQ(pipe(fds), 0);
  const std::string bytes(4321, 'x');
  ASSERT_EQ(write(fds[1], bytes.data(), bytes.size()), 4321);
  close(fds[0]);
  close(fds[1]);
  // The write's exit is in the kernel buffer before the recorder stops.
  StopRecorder(&recorder, SIGINT);
  StatusOr<std::unique_ptr<QueryEngine>> engine = QueryEngine::Open(Path("trace.pftrace"));
  ASSERT_TRUE(engine.ok()) << engine.status().message();
  const std::string tid = std::to_string(gettid());
  auto csv = testing::QueryToTraceProcessorCsv(
      (*engine)->db(),
      "SELECT count(*) FROM slice s JOIN thread_track tt ON s.track_id = tt.id JOIN thread t USING (utid) "
      "WHERE t.tid = " + tid + " AND s.name = 'sys_write' AND s.dur > 0 "
      "AND extract_arg(s.arg_set_id, 'args[1]') IS NOT NULL "
      "AND extract_arg(s.arg_set_id, 'args[2]') = 4321 AND extract_arg(s.arg_set_id, 'ret') = 4321;",
      (*engine)->dialect());
  ASSERT_TRUE(csv.ok()) << csv.status().message();
  EXPECT_EQ(*csv, "\"count(*)\"\n1\n") << "no sys_write slice of 4321 bytes on thread " << tid;
}

// A loop device over a file of the test's own, detached (and the file's
// blocks freed) when it goes: block I/O the test alone makes, on a device
// whose number it knows.
class LoopDevice {
 public:
  // An empty path() if the kernel has no loop driver (what() says why).
  explicit LoopDevice(const std::string& backing_file, size_t bytes) {
    const int backing = open(backing_file.c_str(), O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    if (backing < 0 || ftruncate(backing, static_cast<off_t>(bytes)) != 0) {
      why_ = "cannot create " + backing_file + ": " + strerror(errno);
      if (backing >= 0) close(backing);
      return;
    }
    const int control = open("/dev/loop-control", O_RDWR | O_CLOEXEC);
    if (control < 0) {
      why_ = std::string("no /dev/loop-control (no loop driver): ") + strerror(errno);
      close(backing);
      return;
    }
    // Another process may take the free device first: retry with the next.
    for (int attempt = 0; attempt < 8 && path_.empty(); ++attempt) {
      const int n = ioctl(control, LOOP_CTL_GET_FREE);
      if (n < 0) break;
      const std::string path = "/dev/loop" + std::to_string(n);
      fd_ = open(path.c_str(), O_RDWR | O_CLOEXEC);
      if (fd_ >= 0 && ioctl(fd_, LOOP_SET_FD, backing) == 0) {
        path_ = path;
      } else if (fd_ >= 0) {
        close(fd_);
        fd_ = -1;
      }
    }
    if (path_.empty()) why_ = std::string("no free loop device: ") + strerror(errno);
    close(control);
    close(backing);
  }
  ~LoopDevice() {
    if (fd_ < 0) return;
    ioctl(fd_, LOOP_CLR_FD, 0);
    close(fd_);
  }
  const std::string& path() const { return path_; }
  const std::string& what() const { return why_; }

 private:
  int fd_ = -1;
  std::string path_, why_;
};

// Block I/O as `sluice query` shows it (Linux 6.5+'s block_io_start and
// block_io_done): direct writes and reads of a loop device are block_io
// slices on that device's track, each request ended (none left open) and
// carrying its sector.
TEST_F(RecordKernelTest, BlockIoRequestsBecomeSlicesOfTheirDevice) {
  if (access((std::string(kTracefs) + "/events/block/block_io_start").c_str(), F_OK) != 0)
    SLUICE_KERNEL_SKIP("no block/block_io_start event (Linux 6.5+)");
  LoopDevice loop(Path("loop.img"), 4 << 20);
  if (loop.path().empty()) SLUICE_KERNEL_SKIP("cannot attach a loop device: " + loop.what());
  struct stat st {};
  ASSERT_EQ(stat(loop.path().c_str(), &st), 0);
  // The kernel's dev_t (MKDEV: major << 20 | minor), as the event carries it.
  const uint64_t dev = (static_cast<uint64_t>(major(st.st_rdev)) << 20) | minor(st.st_rdev);
  ChildProcess recorder;
  if (!StartAndRunWorkload({"-t", "1h", "-k", "16mb", "-q", "block/block_io_start", "block/block_io_done",
                            "ftrace/print"},
                           &recorder))
    return;
  constexpr int kBlocks = 16;
  {
    const int fd = open(loop.path().c_str(), O_RDWR | O_DIRECT | O_CLOEXEC);
    ASSERT_GE(fd, 0) << loop.path() << ": " << strerror(errno);
    void* block = nullptr;
    ASSERT_EQ(posix_memalign(&block, 4096, 4096), 0);
    memset(block, 'b', 4096);
    for (int i = 0; i < kBlocks; ++i) {
      EXPECT_EQ(pwrite(fd, block, 4096, static_cast<off_t>(i) * 2 * 4096), 4096) << strerror(errno);
      EXPECT_EQ(pread(fd, block, 4096, static_cast<off_t>(i) * 2 * 4096), 4096) << strerror(errno);
    }
    free(block);
    close(fd);
  }
  StopRecorder(&recorder, SIGINT);
  StatusOr<std::unique_ptr<QueryEngine>> engine = QueryEngine::Open(Path("trace.pftrace"));
  ASSERT_TRUE(engine.ok()) << engine.status().message();
  auto csv = testing::QueryToTraceProcessorCsv(
      (*engine)->db(),
      "SELECT count(*), sum(s.dur < 0), count(extract_arg(s.arg_set_id, 'sector')) FROM slice s "
      "JOIN track t ON s.track_id = t.id WHERE t.type = 'block_io' AND s.name = 'block_io' "
      "AND extract_arg(t.dimension_arg_set_id, 'block_device') = " + std::to_string(dev) + ";",
      (*engine)->dialect());
  ASSERT_TRUE(csv.ok()) << csv.status().message();
  // Each direct write and read is one request (no merging: the blocks are
  // apart and each waits for the one before).
  EXPECT_EQ(*csv, "\"count(*)\",\"sum(s.dur < 0)\",\"count(extract_arg(s.arg_set_id, 'sector'))\"\n" +
                      std::to_string(2 * kBlocks) + ",0," + std::to_string(2 * kBlocks) + "\n")
      << "block_io slices on " << loop.path() << " (dev " << dev << ")";
}

// Categories as Perfetto's CLI takes them: "sched" brings the scheduler's
// events this kernel has (and not sched_wakeup: Perfetto's category leaves
// it out), "am" (user space only) none, and every category brings
// ftrace/print, so the workload's markers are all there. The config in the
// trace says which categories were asked. (Not "idle": its cpu_idle events
// would add about as many events as the workload's switches, and the
// zero-loss sizing is for the workload alone.)
TEST_F(RecordKernelTest, CategoriesRecordTheirKernelEventsZeroLossBuffersHoldWorkload) {
  RecordUntilWorkloadDone({"sched", "am"});
  StatusOr<std::unique_ptr<QueryEngine>> engine = QueryEngine::Open(Path("trace.pftrace"));
  ASSERT_TRUE(engine.ok()) << engine.status().message();
  std::map<std::string, int64_t> events;
  sqlite3_stmt* stmt = nullptr;
  ASSERT_EQ(sqlite3_prepare_v2((*engine)->db(), "SELECT name, count(*) FROM ftrace_event GROUP BY name", -1, &stmt,
                               nullptr),
            SQLITE_OK);
  while (sqlite3_step(stmt) == SQLITE_ROW)
    events[reinterpret_cast<const char*>(sqlite3_column_text(stmt, 0))] = sqlite3_column_int64(stmt, 1);
  sqlite3_finalize(stmt);
  EXPECT_GT(events["sched_switch"], 0);
  EXPECT_GT(events["sched_waking"], 0);
  EXPECT_EQ(events.count("sched_wakeup"), 0u);
  EXPECT_GT(events["print"], 0);
  ASSERT_EQ(sqlite3_prepare_v2((*engine)->db(),
                               "SELECT str_value FROM metadata WHERE name = 'trace_config_pbtxt'", -1, &stmt, nullptr),
            SQLITE_OK);
  ASSERT_EQ(sqlite3_step(stmt), SQLITE_ROW);
  const std::string config = reinterpret_cast<const char*>(sqlite3_column_text(stmt, 0));
  sqlite3_finalize(stmt);
  EXPECT_NE(config.find("atrace_categories: \"sched\""), std::string::npos) << config;
  EXPECT_NE(config.find("atrace_categories: \"am\""), std::string::npos) << config;
}

// A misspelt event or category is refused before anything starts: no file,
// tracefs untouched (TearDown compares it), the nearest names offered.
TEST_F(RecordKernelTest, UnknownNamesRefusedBeforeAnythingStarts) {
  for (const std::vector<std::string>& names : {std::vector<std::string>{"schedd"},
                                                std::vector<std::string>{"sched/sched_swich", "ftrace/print"}}) {
    std::vector<std::string> argv = {Bin("sluice"), "record", "-t", "1h", "-o", Path("trace.pftrace")};
    argv.insert(argv.end(), names.begin(), names.end());
    testing::CommandResult r = testing::RunToCompletion(argv, dir_);
    EXPECT_EQ(r.exit_code, 2) << r.err;
    EXPECT_NE(r.err.find("did you mean sched"), std::string::npos) << r.err;
    EXPECT_NE(access(Path("trace.pftrace").c_str(), F_OK), 0) << "a refused run created the output";
  }
}

TEST_F(RecordKernelTest, ThroughDaemonZeroLossBuffersHoldWorkload) {
  testing::SluicedAndProbes daemon;
  ASSERT_TRUE(daemon.Start(bin_dir_, dir_));
  ChildProcess& sluiced = daemon.sluiced;
  ChildProcess& probes = daemon.probes;

  RecordUntilWorkloadDone({"--daemon", "--consumer-socket", daemon.consumer_socket()});

  // The session is over: sluice-probes, still running, must have put tracefs
  // back already (not only when it exits).
  const uint64_t restore_deadline = NowMs() + testing::ScaledTimeoutMs(60000);
  while (!(ReadTracefsState() == before_) && NowMs() < restore_deadline) usleep(20 * 1000);
  EXPECT_EQ(ReadTracefsState(), before_) << "tracefs not restored at the end of the session";
  EXPECT_TRUE(probes.running()) << probes.Describe();

  probes.Terminate(testing::ScaledTimeoutMs(60000));
  sluiced.Terminate(testing::ScaledTimeoutMs(60000));
  EXPECT_TRUE(probes.exited_normally_with(0)) << probes.Describe();
  EXPECT_TRUE(sluiced.exited_normally_with(0)) << sluiced.Describe();
}

// SIGTERM (what systemd and kill send) stops as cleanly as SIGINT, which
// the other cases use.
TEST_F(RecordKernelTest, SigtermStopsCleanlyZeroLossBuffersHoldWorkload) {
  ChildProcess recorder;
  if (!StartAndRunWorkload({"-t", "1h", "-k", "16mb", "-q"}, &recorder)) return;
  StopRecorder(&recorder, SIGTERM);
  Decoded d = DecodeTrace(Path("trace.pftrace"), workload_.prefix);
  ExpectCompleteTrace(Path("trace.pftrace"), workload_, d);
}

// A text config that streams into the file every 200 ms, as a user would
// write it for `perfetto -c cfg --txt` (tests/data/configs/record_streaming.pbtx
// is the same config for reading; this test writes its own copy so it runs
// from any directory, e.g. inside vm-tests).
constexpr char kStreamingConfig[] = R"(
buffers { size_kb: 16384 fill_policy: RING_BUFFER }
duration_ms: 3600000
write_into_file: true
file_write_period_ms: 200
data_sources {
  config {
    name: "linux.ftrace"
    ftrace_config {
      ftrace_events: "sched/sched_switch"
      ftrace_events: "sched/sched_waking"
      ftrace_events: "task/task_rename"
      ftrace_events: "ftrace/print"
      buffer_size_kb: 2048
    }
  }
}
data_sources { config { name: "linux.process_stats" } }
data_sources { config { name: "linux.system_info" } }
)";

// ---------------------------------------------------------------------------
// Sessions held in memory (--ring, --discard) and -o -: nothing reaches the
// output until the recording ends, so readiness is the recorder's
// "sluice: recording" line, and the markers come from one thread pinned to
// one CPU: they all travel in that CPU's sequence, in order, so what a ring
// keeps is a suffix of them and what a discard buffer keeps a prefix.

// Pins the calling thread to the first CPU this process may use.
void PinToOneCpu() {
  cpu_set_t allowed;
  CPU_ZERO(&allowed);
  ASSERT_EQ(sched_getaffinity(0, sizeof(allowed), &allowed), 0);
  int cpu = 0;
  while (cpu < CPU_SETSIZE && !CPU_ISSET(cpu, &allowed)) cpu++;
  cpu_set_t one;
  CPU_ZERO(&one);
  CPU_SET(cpu, &one);
  ASSERT_EQ(sched_setaffinity(0, sizeof(one), &one), 0);
}

// Writes markers "<prefix><seq>" for seq in [first, first + n) from one
// thread pinned to the first CPU this process may use.
void WriteMarkersOnOneCpu(const std::string& prefix, uint32_t n, uint32_t first = 0) {
  std::thread writer([&] {
    PinToOneCpu();
    int fd = open((std::string(kTracefs) + "/trace_marker").c_str(), O_WRONLY | O_CLOEXEC);
    ASSERT_GE(fd, 0);
    char buf[96];
    for (uint32_t i = first; i < first + n; i++) {
      int len = snprintf(buf, sizeof(buf), "%s%u", prefix.c_str(), i);
      ASSERT_TRUE(testing::WriteTraceMarker(fd, std::string_view(buf, static_cast<size_t>(len)))) << strerror(errno);
    }
    close(fd);
  });
  writer.join();
}

// The trace's final TraceStats (the service writes one, last).
perfetto::protos::TraceStats FinalTraceStats(const std::string& path) {
  perfetto::protos::TraceStats stats;
  TraceFileSummary summary;
  Status read = ReadTraceFile(
      path,
      [&](std::string_view bytes) {
        perfetto::protos::TracePacket p;
        if (p.ParseFromArray(bytes.data(), static_cast<int>(bytes.size())) && p.has_trace_stats())
          stats = p.trace_stats();
      },
      &summary);
  EXPECT_TRUE(read.ok()) << read.message();
  return stats;
}

const HealthRow* FindHealthRow(const TraceHealth& health, const std::string& name) {
  for (const HealthRow& row : health.rows)
    if (row.name == name) return &row;
  return nullptr;
}

// Starts `sluice record ARGS` and waits for its "sluice: recording" line.
bool StartAndWaitForRecordingLine(const std::vector<std::string>& args, const std::string& out,
                                  const std::string& err, ChildProcess* recorder) {
  std::vector<std::string> argv = {testing::SluiceBinDir() + "/sluice", "record"};
  argv.insert(argv.end(), args.begin(), args.end());
  EXPECT_TRUE(recorder->Start(argv, out, err));
  const uint64_t deadline = NowMs() + testing::ScaledTimeoutMs(120000);
  while (NowMs() < deadline && recorder->running()) {
    if (recorder->Stderr().find("sluice: recording") != std::string::npos) return true;
    usleep(50 * 1000);
  }
  ADD_FAILURE() << "no 'sluice: recording' line: " << recorder->Describe();
  return false;
}

constexpr uint32_t kOneCpuMarkers = 60000;  // About 3 MB of trace: three times -b 1mb.

bool RecordKernelTest::RecordOneCpuMarkersInMemory(const std::string& mode, Decoded* d) {
  ChildProcess recorder;
  if (!StartAndWaitForRecordingLine({mode, "-b", "1mb", "-k", "16mb", "-t", "1h", "-q", "ftrace/print", "-o",
                                     Path("trace.pftrace")},
                                    Path("record.out"), Path("record.err"), &recorder))
    return false;
  WriteMarkersOnOneCpu(workload_.prefix, kOneCpuMarkers);
  StopRecorder(&recorder, SIGINT);
  *d = DecodeTrace(Path("trace.pftrace"), workload_.prefix);
  EXPECT_TRUE(d->status.ok()) << d->status.message();
  EXPECT_FALSE(d->marker_count.empty()) << "none of the markers is in the trace";
  return d->status.ok() && !d->marker_count.empty();
}

// The flight recorder: a 1 MiB ring under three times that much data holds
// the newest markers, the last one included, without a gap; the service
// counts every chunk it overwrote (all that was stored was read or
// overwritten), and the overwrites are the mode at work, not a loss.
TEST_F(RecordKernelTest, RingKeepsTheNewestDataAndCountsItsOverwritesExactly) {
  Decoded d;
  if (!RecordOneCpuMarkersInMemory("--ring", &d)) return;
  const uint32_t first = d.marker_count.begin()->first;
  const uint32_t last = d.marker_count.rbegin()->first;
  EXPECT_EQ(last, kOneCpuMarkers - 1) << "the newest marker is not in the ring's trace";
  EXPECT_GT(first, 0u) << "nothing was overwritten: the workload did not fill the ring";
  EXPECT_EQ(d.marker_count.size(), kOneCpuMarkers - first) << "the markers kept are not a gap-free suffix";
  for (const auto& [seq, n] : d.marker_count) ASSERT_EQ(n, 1u) << "marker " << seq << " seen " << n << " times";

  const perfetto::protos::TraceStats stats = FinalTraceStats(Path("trace.pftrace"));
  ASSERT_EQ(stats.buffer_stats_size(), 1);
  const auto& buffer = stats.buffer_stats(0);
  EXPECT_GT(buffer.chunks_overwritten(), 0u);
  EXPECT_EQ(buffer.chunks_discarded(), 0u);
  EXPECT_EQ(buffer.chunks_written(), buffer.chunks_read() + buffer.chunks_overwritten())
      << "chunks stored but neither read nor counted as overwritten";
  auto health = AnalyzeTraceFile(Path("trace.pftrace"));
  ASSERT_TRUE(health.ok()) << health.status().message();
  const HealthRow* overwritten = FindHealthRow(*health, "traced_buf_chunks_overwritten");
  ASSERT_NE(overwritten, nullptr) << FormatHealthTable(*health);
  EXPECT_EQ(overwritten->value, static_cast<int64_t>(buffer.chunks_overwritten()));
  EXPECT_EQ(overwritten->severity, "info");
  EXPECT_EQ(health->data_loss_total(), 0u) << FormatHealthTable(*health);
}

// DISCARD in memory keeps the oldest data: a gap-free prefix of the markers,
// and the chunks it refused are counted as the loss they are.
TEST_F(RecordKernelTest, DiscardKeepsTheOldestDataAndCountsWhatItRefused) {
  Decoded d;
  if (!RecordOneCpuMarkersInMemory("--discard", &d)) return;
  EXPECT_EQ(d.marker_count.begin()->first, 0u) << "the oldest marker is not in the discard trace";
  const uint32_t kept = d.marker_count.rbegin()->first + 1;
  EXPECT_LT(kept, kOneCpuMarkers) << "nothing was discarded: the workload did not fill the buffer";
  EXPECT_EQ(d.marker_count.size(), kept) << "the markers kept are not a gap-free prefix";

  const perfetto::protos::TraceStats stats = FinalTraceStats(Path("trace.pftrace"));
  ASSERT_EQ(stats.buffer_stats_size(), 1);
  const auto& buffer = stats.buffer_stats(0);
  EXPECT_GT(buffer.chunks_discarded(), 0u);
  EXPECT_EQ(buffer.chunks_overwritten(), 0u);
  EXPECT_EQ(buffer.chunks_written(), buffer.chunks_read());
  auto health = AnalyzeTraceFile(Path("trace.pftrace"));
  ASSERT_TRUE(health.ok()) << health.status().message();
  const HealthRow* discarded = FindHealthRow(*health, "traced_buf_chunks_discarded");
  ASSERT_NE(discarded, nullptr) << FormatHealthTable(*health);
  EXPECT_EQ(discarded->severity, "data_loss");
  EXPECT_NE(discarded->explanation.find("kept the oldest"), std::string::npos);
}

// -o -: the trace on standard output, everything else on stderr, and no
// temporary file left behind.
TEST_F(RecordKernelTest, TraceToStandardOutput) {
  ChildProcess recorder;
  if (!StartAndWaitForRecordingLine({"-k", "16mb", "-t", "1h", "-q", "ftrace/print", "-o", "-"},
                                    Path("stdout.pftrace"), Path("record.err"), &recorder))
    return;
  WriteMarkersOnOneCpu(workload_.prefix, 2000);
  StopRecorder(&recorder, SIGINT);
  const std::string err = recorder.Stderr();
  const size_t at = err.find("writing ");
  ASSERT_NE(at, std::string::npos) << err;
  const std::string temp = err.substr(at + 8, err.find(' ', at + 8) - at - 8);
  EXPECT_NE(access(temp.c_str(), F_OK), 0) << temp << " was left behind";
  EXPECT_NE(err.find("trace: standard output"), std::string::npos) << err;
  Decoded d = DecodeTrace(Path("stdout.pftrace"), workload_.prefix);
  ASSERT_TRUE(d.status.ok()) << d.status.message();
  EXPECT_EQ(d.summary.valid_bytes, d.summary.bytes);
  EXPECT_TRUE(d.trace_stats);
  ExpectMarkersExactlyOnce(d, 2000);
  ExpectNoDataLoss(Path("stdout.pftrace"));
}

TEST_F(RecordKernelTest, StreamingConfigSurvivesSigkill) {
  ASSERT_TRUE(WriteTracefsFile(Path("streaming.pbtx"), kStreamingConfig, O_CREAT | O_TRUNC));
  workload_.markers = 2000;
  workload_.rounds = 2000;
  ChildProcess recorder;
  if (!StartAndRunWorkload({"-c", Path("streaming.pbtx"), "--txt", "-q"}, &recorder)) {
    RestoreTracefsState(before_);
    return;
  }
  // Wait until the last marker of each writer is in the file (streamed every
  // 200 ms), then kill.
  const std::string last0 = workload_.prefix + std::to_string(workload_.markers / 2 - 1);
  const std::string last1 = workload_.prefix + std::to_string(workload_.markers - 1);
  const uint64_t deadline = NowMs() + testing::ScaledTimeoutMs(120000);
  for (;;) {
    std::string bytes = ReadFileOr(testing::FileBeingRecorded(Path("trace.pftrace")), "");
    bool both = bytes.find(last0) != std::string::npos && bytes.find(last1) != std::string::npos;
    if (both || NowMs() >= deadline) break;
    usleep(50 * 1000);
  }
  EXPECT_TRUE(recorder.running()) << recorder.Describe();
  const pid_t killed = recorder.pid();
  recorder.Signal(SIGKILL);
  ASSERT_TRUE(recorder.Wait(testing::ScaledTimeoutMs(60000)));
  EXPECT_TRUE(WIFSIGNALED(recorder.wait_status()));

  // The recorder could not clean up: its events are still enabled. Its
  // state file lets `sluice-probes --cleanup` put tracefs back (TearDown
  // then checks it took).
  TracefsState dirty = ReadTracefsState();
  EXPECT_NE(dirty.set_event, before_.set_event) << "expected the killed recorder's events";
  ChildProcess cleanup;
  ASSERT_TRUE(cleanup.Start({Bin("sluice-probes"), "--cleanup"}, Path("cleanup.out"),
                            Path("cleanup.err")));
  ASSERT_TRUE(cleanup.Wait(60000)) << cleanup.Describe();
  EXPECT_TRUE(cleanup.exited_normally_with(0)) << cleanup.Describe();
  EXPECT_NE(cleanup.Stderr().find("restored tracefs left by sluice pid " + std::to_string(killed)),
            std::string::npos)
      << cleanup.Describe();

  // The killed run's data is in the file it was writing, which it named on
  // stderr; nothing was renamed to the output path.
  const std::string written = testing::FileBeingRecorded(Path("trace.pftrace"));
  EXPECT_NE(written, Path("trace.pftrace"));
  EXPECT_NE(access(Path("trace.pftrace").c_str(), F_OK), 0) << "a killed run renamed its file";
  EXPECT_NE(recorder.Stderr().find("writing " + written), std::string::npos) << recorder.Stderr();
  Decoded d = DecodeTrace(written, workload_.prefix);
  ASSERT_TRUE(d.status.ok()) << d.status.message();  // Truncated is fine.
  EXPECT_EQ(d.bad_packets, 0u);
  EXPECT_GT(d.summary.packets, 0u);
  EXPECT_TRUE(d.trace_config);
  ExpectMarkersExactlyOnce(d, workload_.markers);
  auto health = AnalyzeTraceFile(written);
  EXPECT_TRUE(health.ok()) << health.status().message();
}

// ---------------------------------------------------------------------------
// Sessions in sluiced (--daemon): detached and attached again, listed,
// cloned while they record, and ended cleanly when their recorder dies.
// Their buffers stay in sluiced until the end, so readiness is a marker that
// shows up in a clone (a clone flushes the session's producers first).

class RecordSessionsKernelTest : public RecordKernelTest {
 protected:
  void SetUp() override {
    RecordKernelTest::SetUp();
    if (IsSkipped() || HasFatalFailure()) return;
    ASSERT_TRUE(daemon_.Start(bin_dir_, dir_));
  }
  void TearDown() override {
    if (daemon_.sluiced.running()) {
      daemon_.probes.Terminate(testing::ScaledTimeoutMs(60000));
      daemon_.sluiced.Terminate(testing::ScaledTimeoutMs(60000));
      EXPECT_TRUE(daemon_.probes.exited_normally_with(0)) << daemon_.probes.Describe();
      EXPECT_TRUE(daemon_.sluiced.exited_normally_with(0)) << daemon_.sluiced.Describe();
    }
    RecordKernelTest::TearDown();
  }

  // `sluice ARGS --consumer-socket S`, run to its end.
  testing::CommandResult Sluice(std::vector<std::string> args) {
    args.insert(args.begin(), Bin("sluice"));
    args.insert(args.end(), {"--consumer-socket", daemon_.consumer_socket()});
    return testing::RunToCompletion(args, dir_);
  }
  // Clones session `key` into `path`, decoded.
  Decoded Clone(const std::string& key, const std::string& path) {
    testing::CommandResult r = Sluice({"clone", key, "-o", path});
    EXPECT_EQ(r.exit_code, 0) << r.err;
    EXPECT_EQ(r.err, "");
    return DecodeTrace(path, workload_.prefix);
  }
  // Writes the ready marker until a clone of `key` holds it: the session's
  // data source runs and the whole path to its buffer is live.
  bool WaitUntilCloneHoldsReadyMarker(const std::string& key) {
    const std::string marker = workload_.prefix + "ready";
    int fd = open((std::string(kTracefs) + "/trace_marker").c_str(), O_WRONLY | O_CLOEXEC);
    if (fd < 0) return false;
    const uint64_t deadline = NowMs() + testing::ScaledTimeoutMs(120000);
    bool seen = false;
    while (!seen && NowMs() < deadline) {
      (void)!write(fd, marker.data(), marker.size());
      testing::CommandResult r = Sluice({"clone", key, "-o", Path("ready.pftrace")});
      seen = r.exit_code == 0 && testing::TraceFileHolds(Path("ready.pftrace"), marker);
      if (!seen) usleep(100 * 1000);
    }
    close(fd);
    EXPECT_TRUE(seen) << "no clone of '" << key << "' held the ready marker";
    return seen;
  }
  // Waits until sluiced has no session left (a dead recorder's was finished).
  bool WaitUntilNoSessions() {
    const uint64_t deadline = NowMs() + testing::ScaledTimeoutMs(120000);
    while (NowMs() < deadline) {
      if (Sluice({"sessions"}).out == "no tracing sessions\n") return true;
      usleep(100 * 1000);
    }
    ADD_FAILURE() << "sluiced still has sessions: " << Sluice({"sessions"}).out;
    return false;
  }
  // The session's end: sluice-probes has put tracefs back.
  void ExpectTracefsRestored() {
    const uint64_t deadline = NowMs() + testing::ScaledTimeoutMs(60000);
    while (!(ReadTracefsState() == before_) && NowMs() < deadline) usleep(20 * 1000);
    EXPECT_EQ(ReadTracefsState(), before_) << "tracefs not restored at the end of the session";
  }

  testing::SluicedAndProbes daemon_;
};

// Every seq in [first, end) exactly once, and nothing else with our prefix.
void ExpectMarkerRange(const Decoded& d, uint32_t first, uint32_t end) {
  ASSERT_FALSE(d.marker_count.empty()) << "no markers";
  EXPECT_EQ(d.marker_count.begin()->first, first);
  EXPECT_EQ(d.marker_count.rbegin()->first, end - 1);
  EXPECT_EQ(d.marker_count.size(), end - first) << "the markers are not a gap-free range";
  for (const auto& [seq, n] : d.marker_count) ASSERT_EQ(n, 1u) << "marker " << seq << " seen " << n << " times";
}

// `sluice record --detach` returns at once; the session is listed, cloned
// twice (each clone holds everything written before it: the first did not
// take anything from the session), then `--attach --stop` ends it and puts
// the whole trace in place.
TEST_F(RecordSessionsKernelTest, DetachListCloneTwiceAttachStop) {
  testing::CommandResult detached =
      Sluice({"record", "--daemon", "--detach=e2e-ring", "--ring", "-b", "8mb", "-k", "16mb", "-t", "1h", "-q",
              "ftrace/print", "-o", Path("trace.pftrace")});
  ASSERT_EQ(detached.exit_code, 0) << detached.err;
  EXPECT_NE(detached.err.find("session 'e2e-ring' runs in sluiced, writing " + Path("trace.pftrace.recording-")),
            std::string::npos)
      << detached.err;
  EXPECT_NE(access(Path("trace.pftrace").c_str(), F_OK), 0) << "nothing is in place before the end";
  if (!WaitUntilCloneHoldsReadyMarker("e2e-ring")) return;

  testing::CommandResult listed = Sluice({"sessions"});
  EXPECT_EQ(listed.exit_code, 0) << listed.err;
  EXPECT_NE(listed.out.find("'e2e-ring' (uid " + std::to_string(getuid()) + "): recording, detached"),
            std::string::npos)
      << listed.out;
  EXPECT_NE(listed.out.find("(8 MiB ring); linux.ftrace"), std::string::npos) << listed.out;
  EXPECT_NE(listed.out.find("output: " + Path("trace.pftrace")), std::string::npos) << listed.out;

  WriteMarkersOnOneCpu(workload_.prefix, 3000);
  ExpectMarkerRange(Clone("e2e-ring", Path("clone1.pftrace")), 0, 3000);
  WriteMarkersOnOneCpu(workload_.prefix, 3000, 3000);
  const Decoded second = Clone("e2e-ring", Path("clone2.pftrace"));
  ExpectMarkerRange(second, 0, 6000);
  EXPECT_TRUE(second.trace_stats && second.trace_config && second.clock_snapshot);
  ExpectNoDataLoss(Path("clone2.pftrace"));

  WriteMarkersOnOneCpu(workload_.prefix, 1000, 6000);
  testing::CommandResult stopped = Sluice({"record", "--attach=e2e-ring", "--stop", "-q"});
  ASSERT_EQ(stopped.exit_code, 0) << stopped.err;
  EXPECT_NE(stopped.out.find("trace: " + Path("trace.pftrace") + " ("), std::string::npos) << stopped.out;
  EXPECT_EQ(testing::FileBeingRecorded(Path("trace.pftrace")), Path("trace.pftrace")) << "a temporary file is left";
  const Decoded all = DecodeTrace(Path("trace.pftrace"), workload_.prefix);
  ASSERT_TRUE(all.status.ok()) << all.status.message();
  EXPECT_EQ(all.summary.valid_bytes, all.summary.bytes);
  EXPECT_TRUE(all.trace_stats && all.trace_config && all.system_info);
  ExpectMarkerRange(all, 0, 7000);
  ExpectNoDataLoss(Path("trace.pftrace"));
  EXPECT_EQ(Sluice({"sessions"}).out, "no tracing sessions\n");
  ExpectTracefsRestored();
}

// Every top-level packet of the trace at `path` a zstd container: what
// --compress zstd writes, whoever writes it.
void ExpectOnlyZstdContainers(const std::string& path) {
  perfetto::protos::Trace trace;
  ASSERT_TRUE(trace.ParseFromString(ReadFileOr(path, ""))) << path;
  ASSERT_GT(trace.packet_size(), 0) << path;
  for (int i = 0; i < trace.packet_size(); i++)
    EXPECT_TRUE(trace.packet(i).has_zstd_compressed_packets()) << path << ": packet " << i;
}

// A compressed ring session, detached: its clones are compressed as the
// session asks (the clone's answer carries it), and so is the file sluiced
// writes at the end; each holds its markers once.
TEST_F(RecordSessionsKernelTest, CompressedRingClonesAndFileAreCompressed) {
  testing::CommandResult detached =
      Sluice({"record", "--daemon", "--detach=e2e-zring", "--ring", "-b", "8mb", "-k", "16mb", "-t", "1h", "-q",
              "--compress", "zstd", "ftrace/print", "-o", Path("trace.pftrace")});
  ASSERT_EQ(detached.exit_code, 0) << detached.err;
  if (!WaitUntilCloneHoldsReadyMarker("e2e-zring")) return;
  WriteMarkersOnOneCpu(workload_.prefix, 3000);
  ExpectMarkerRange(Clone("e2e-zring", Path("clone.pftrace")), 0, 3000);
  ExpectOnlyZstdContainers(Path("clone.pftrace"));
  WriteMarkersOnOneCpu(workload_.prefix, 1000, 3000);
  testing::CommandResult stopped = Sluice({"record", "--attach=e2e-zring", "--stop", "-q"});
  ASSERT_EQ(stopped.exit_code, 0) << stopped.err;
  const Decoded all = DecodeTrace(Path("trace.pftrace"), workload_.prefix);
  ASSERT_TRUE(all.status.ok()) << all.status.message();
  EXPECT_EQ(all.summary.valid_bytes, all.summary.bytes);
  EXPECT_TRUE(all.trace_stats && all.trace_config && all.system_info);
  ExpectMarkerRange(all, 0, 4000);
  ExpectOnlyZstdContainers(Path("trace.pftrace"));
  ExpectNoDataLoss(Path("trace.pftrace"));
  EXPECT_EQ(Sluice({"sessions"}).out, "no tracing sessions\n");
  ExpectTracefsRestored();
}

// Clones taken while one thread writes sequence-numbered markers: each holds
// a gap-free run of them that reaches at least the last marker written
// before the clone was asked for (the flush), and the session goes on
// undisturbed: its final trace holds a gap-free suffix to the very last
// marker, as a ring must.
TEST_F(RecordSessionsKernelTest, ClonesDuringAWorkloadHoldGapFreeSuffixes) {
  testing::CommandResult detached =
      Sluice({"record", "--daemon", "--detach=e2e-busy", "--ring", "-b", "2mb", "-k", "16mb", "-t", "1h", "-q",
              "ftrace/print", "-o", Path("trace.pftrace")});
  ASSERT_EQ(detached.exit_code, 0) << detached.err;
  if (!WaitUntilCloneHoldsReadyMarker("e2e-busy")) return;

  std::atomic<uint32_t> written{0};
  std::atomic<bool> stop{false};
  std::thread writer([&] {
    PinToOneCpu();
    int fd = open((std::string(kTracefs) + "/trace_marker").c_str(), O_WRONLY | O_CLOEXEC);
    ASSERT_GE(fd, 0);
    Pacer pacer(kMarkersPerSecondPerThread * testing::WorkloadScale());
    char buf[96];
    // Until the clones are done, and at least as many as a ring of 2 MiB holds.
    for (uint32_t i = 0; !stop.load() || i < 100000; i++) {
      int len = snprintf(buf, sizeof(buf), "%s%u", workload_.prefix.c_str(), i);
      ASSERT_EQ(write(fd, buf, static_cast<size_t>(len)), len);
      written.store(i + 1);
      pacer.Tick();
    }
    close(fd);
  });
  for (int round = 0; round < 3; round++) {
    // Some markers between clones, however slow the machine.
    const uint32_t before_wait = written.load();
    const uint64_t deadline = NowMs() + testing::ScaledTimeoutMs(60000);
    while (written.load() < before_wait + 5000 && NowMs() < deadline) usleep(10 * 1000);
    const uint32_t before = written.load();
    const std::string name = "busy" + std::to_string(round) + ".pftrace";
    const Decoded d = Clone("e2e-busy", Path(name.c_str()));
    ASSERT_FALSE(d.marker_count.empty()) << "round " << round;
    const uint32_t first = d.marker_count.begin()->first;
    const uint32_t last = d.marker_count.rbegin()->first;
    EXPECT_GE(last + 1, before) << "round " << round << ": the clone misses markers written before it";
    EXPECT_LE(last + 1, written.load()) << "round " << round;
    EXPECT_EQ(d.marker_count.size(), last - first + 1) << "round " << round << ": not gap-free";
    for (const auto& [seq, n] : d.marker_count) ASSERT_EQ(n, 1u) << "marker " << seq;
  }
  stop.store(true);
  writer.join();
  const uint32_t total = written.load();

  testing::CommandResult stopped = Sluice({"record", "--attach=e2e-busy", "--stop", "-q"});
  ASSERT_EQ(stopped.exit_code, 0) << stopped.err;
  const Decoded all = DecodeTrace(Path("trace.pftrace"), workload_.prefix);
  ASSERT_TRUE(all.status.ok()) << all.status.message();
  ASSERT_FALSE(all.marker_count.empty());
  EXPECT_GT(all.marker_count.begin()->first, 0u) << "the ring did not wrap";
  ExpectMarkerRange(all, all.marker_count.begin()->first, total);
  ExpectTracefsRestored();
}

// A streaming `sluice record --daemon` killed with SIGKILL (it cannot
// detach): sluiced ends the session as a stop would and finishes the file,
// which stays under its temporary name, complete: every marker, TraceStats.
TEST_F(RecordSessionsKernelTest, KilledStreamingRecorderLeavesACompleteFile) {
  ChildProcess recorder;
  workload_.markers = 2000;
  workload_.rounds = 2000;
  if (!StartAndRunWorkload({"--daemon", "--consumer-socket", daemon_.consumer_socket(), "-t", "1h", "-k", "16mb",
                            "-q"},
                           &recorder))
    return;
  recorder.Signal(SIGKILL);
  ASSERT_TRUE(recorder.Wait(testing::ScaledTimeoutMs(60000)));
  if (!WaitUntilNoSessions()) return;
  const std::string written = testing::FileBeingRecorded(Path("trace.pftrace"));
  EXPECT_NE(written, Path("trace.pftrace")) << "nothing renamed it: its recorder is dead";
  const Decoded d = DecodeTrace(written, workload_.prefix);
  ExpectCompleteTrace(written, workload_, d);
  ExpectTracefsRestored();
}

// The same for a session held in memory (--ring through a config with a
// unique_session_name, by which it is cloned to see that it records): the
// recorder would have read it at the end; sluiced writes it instead, into
// the temporary file the recorder gave it.
TEST_F(RecordSessionsKernelTest, KilledRingRecorderLeavesACompleteFile) {
  constexpr char kConfig[] = R"(
buffers { size_kb: 8192 fill_policy: RING_BUFFER }
duration_ms: 3600000
unique_session_name: "e2e-killed-ring"
data_sources {
  config {
    name: "linux.ftrace"
    ftrace_config { ftrace_events: "ftrace/print" buffer_size_kb: 16384 }
  }
}
)";
  ASSERT_TRUE(WriteTracefsFile(Path("ring.pbtx"), kConfig, O_CREAT | O_TRUNC));
  ChildProcess recorder;
  ASSERT_TRUE(recorder.Start({Bin("sluice"), "record", "--daemon", "--consumer-socket", daemon_.consumer_socket(),
                              "-c", Path("ring.pbtx"), "--txt", "-q", "-o", Path("trace.pftrace")},
                             Path("record.out"), Path("record.err")));
  if (!WaitUntilCloneHoldsReadyMarker("e2e-killed-ring")) return;
  WriteMarkersOnOneCpu(workload_.prefix, 4000);
  EXPECT_TRUE(recorder.running()) << recorder.Describe();
  recorder.Signal(SIGKILL);
  ASSERT_TRUE(recorder.Wait(testing::ScaledTimeoutMs(60000)));
  if (!WaitUntilNoSessions()) return;
  const std::string written = testing::FileBeingRecorded(Path("trace.pftrace"));
  EXPECT_NE(written, Path("trace.pftrace"));
  const Decoded d = DecodeTrace(written, workload_.prefix);
  ASSERT_TRUE(d.status.ok()) << d.status.message();
  EXPECT_EQ(d.summary.valid_bytes, d.summary.bytes);
  EXPECT_TRUE(d.trace_stats && d.trace_config);
  ExpectMarkerRange(d, 0, 4000);
  ExpectNoDataLoss(written);
  ExpectTracefsRestored();
}

// ---------------------------------------------------------------------------
// Triggers (TraceConfig.trigger_config) fired with `sluice trigger`.

// A config recording ftrace/print into an 8 MiB ring, named `name` (so the
// tests can clone it for readiness), with one trigger of `mode` named `name`.
std::string TriggerConfigText(const std::string& name, const std::string& mode, uint32_t timeout_ms) {
  return R"(
buffers { size_kb: 8192 fill_policy: RING_BUFFER }
unique_session_name: ")" + name + R"("
data_sources {
  config {
    name: "linux.ftrace"
    ftrace_config { ftrace_events: "ftrace/print" buffer_size_kb: 16384 }
  }
}
trigger_config {
  trigger_mode: )" + mode + R"(
  trigger_timeout_ms: )" + std::to_string(timeout_ms) + R"(
  triggers { name: ")" + name + R"(" }
}
)";
}

class RecordTriggersKernelTest : public RecordSessionsKernelTest {
 protected:
  // `sluice record --daemon -c CONFIG` in the background, writing trace.pftrace.
  bool StartRecorder(const std::string& config_text, ChildProcess* recorder) {
    if (!WriteTracefsFile(Path("trigger.pbtx"), config_text, O_CREAT | O_TRUNC)) return false;
    return recorder->Start({Bin("sluice"), "record", "--daemon", "--consumer-socket", daemon_.consumer_socket(),
                            "-c", Path("trigger.pbtx"), "--txt", "-q", "-o", Path("trace.pftrace")},
                           Path("record.out"), Path("record.err"));
  }
  testing::CommandResult Trigger(const std::string& name) {
    return testing::RunToCompletion(
        {Bin("sluice"), "trigger", name, "--producer-socket", daemon_.producer_socket()}, dir_);
  }
};

// STOP_TRACING: the session records from the start; the trigger stops it and
// the trace holds everything written before, and the trigger itself.
TEST_F(RecordTriggersKernelTest, StopTracingTriggerEndsTheRecordingWithEverythingBeforeIt) {
  ChildProcess recorder;
  ASSERT_TRUE(StartRecorder(TriggerConfigText("e2e-stop", "STOP_TRACING", 3600000), &recorder));
  if (!WaitUntilCloneHoldsReadyMarker("e2e-stop")) return;
  WriteMarkersOnOneCpu(workload_.prefix, 3000);
  testing::CommandResult fired = Trigger("e2e-stop");
  EXPECT_EQ(fired.exit_code, 0) << fired.err;
  EXPECT_NE(fired.out.find("e2e-stop: 1 session acted on it"), std::string::npos) << fired.out;
  ASSERT_TRUE(recorder.Wait(testing::ScaledTimeoutMs(120000))) << recorder.Describe();
  EXPECT_TRUE(recorder.exited_normally_with(0)) << recorder.Describe();
  const Decoded d = DecodeTrace(Path("trace.pftrace"), workload_.prefix);
  ASSERT_TRUE(d.status.ok()) << d.status.message();
  EXPECT_EQ(d.triggers, std::vector<std::string>{"e2e-stop"});
  ExpectMarkerRange(d, 0, 3000);
  ExpectNoDataLoss(Path("trace.pftrace"));
  ExpectTracefsRestored();
}

// A START_TRACING session whose trigger never comes: nothing is written,
// an existing file stays as it was, and the exit status says so.
TEST_F(RecordTriggersKernelTest, NoTriggerWithinTheTimeoutWritesNothing) {
  ASSERT_TRUE(WriteTracefsFile(Path("trace.pftrace"), "keep me", O_CREAT | O_TRUNC));
  ChildProcess recorder;
  ASSERT_TRUE(StartRecorder(TriggerConfigText("e2e-never", "START_TRACING", 300), &recorder));
  ASSERT_TRUE(recorder.Wait(testing::ScaledTimeoutMs(120000))) << recorder.Describe();
  EXPECT_TRUE(recorder.exited_normally_with(3)) << recorder.Describe();
  EXPECT_NE(recorder.Stderr().find("no trigger fired: none of the session's triggers (e2e-never) fired "
                                   "within trigger_timeout_ms (300 ms); nothing was recorded; " +
                                   Path("trace.pftrace") + " was not written"),
            std::string::npos)
      << recorder.Stderr();
  EXPECT_EQ(ReadFileOr(Path("trace.pftrace"), ""), "keep me");
  EXPECT_EQ(testing::FileBeingRecorded(Path("trace.pftrace")), Path("trace.pftrace")) << "a temporary file is left";
  EXPECT_EQ(ReadTracefsState(), before_);
}

// CLONE_SNAPSHOT: each trigger writes FILE.N, a snapshot holding everything
// up to it; the session records on until it is stopped.
TEST_F(RecordTriggersKernelTest, CloneSnapshotTriggerWritesASnapshotAndRecordsOn) {
  ChildProcess recorder;
  ASSERT_TRUE(StartRecorder(TriggerConfigText("e2e-snap", "CLONE_SNAPSHOT", 3600000), &recorder));
  if (!WaitUntilCloneHoldsReadyMarker("e2e-snap")) return;
  WriteMarkersOnOneCpu(workload_.prefix, 2000);
  testing::CommandResult fired = Trigger("e2e-snap");
  EXPECT_EQ(fired.exit_code, 0) << fired.err;
  const std::string snapshot = Path("trace.pftrace") + ".1";
  const uint64_t deadline = NowMs() + testing::ScaledTimeoutMs(120000);
  while (recorder.Stderr().find("snapshot written to " + snapshot) == std::string::npos && NowMs() < deadline &&
         recorder.running())
    usleep(50 * 1000);
  ASSERT_NE(recorder.Stderr().find("snapshot written to " + snapshot), std::string::npos) << recorder.Describe();
  const Decoded snap = DecodeTrace(snapshot, workload_.prefix);
  ASSERT_TRUE(snap.status.ok()) << snap.status.message();
  EXPECT_EQ(snap.triggers, std::vector<std::string>{"e2e-snap"});
  ExpectMarkerRange(snap, 0, 2000);
  WriteMarkersOnOneCpu(workload_.prefix, 1000, 2000);
  recorder.Signal(SIGINT);
  ASSERT_TRUE(recorder.Wait(testing::ScaledTimeoutMs(120000))) << recorder.Describe();
  EXPECT_TRUE(recorder.exited_normally_with(0)) << recorder.Describe();
  const Decoded all = DecodeTrace(Path("trace.pftrace"), workload_.prefix);
  ASSERT_TRUE(all.status.ok()) << all.status.message();
  EXPECT_EQ(all.triggers, std::vector<std::string>{"e2e-snap"});
  ExpectMarkerRange(all, 0, 3000);
  ExpectTracefsRestored();
}

// ---------------------------------------------------------------------------
// Every session starts from an empty kernel buffer on purpose, whatever
// clock and buffer size the machine was left in: numbered markers written
// before the session (or before its trigger) never enter its trace, and
// every marker written after it is ready does. Run with trace_clock already
// "boot" (where upstream Perfetto and Android leave it: sluice then changes
// no clock, and changing the clock was what used to empty the buffer) and
// already "local" (the kernel's default). -k asks for a size the buffer does
// not have, so a resize happens too, which empties nothing by itself.

class RecordBoundaryKernelTest : public RecordTriggersKernelTest,
                                 public ::testing::WithParamInterface<const char*> {
 protected:
  void SetUp() override {
    // Before the base reads the state the test must leave.
    found_clock_ = ParseSelectedTraceClock(ReadFileOr(std::string(kTracefs) + "/trace_clock", ""));
    if (!found_clock_.empty()) clock_set_ = WriteTracefsFile(std::string(kTracefs) + "/trace_clock", GetParam());
    RecordTriggersKernelTest::SetUp();
  }
  void TearDown() override {
    RecordTriggersKernelTest::TearDown();
    if (clock_set_) {
      EXPECT_TRUE(WriteTracefsFile(std::string(kTracefs) + "/trace_clock", found_clock_));
    }
  }
  // Stale markers: numbered from 100000, so none can pass for one written later.
  void WriteStaleMarkers() { WriteMarkersOnOneCpu(workload_.prefix, 500, 100000); }

  // `sluice record MODE_ARGS -k 4mb ftrace/print` in this process, started
  // after the stale markers, stopped once 2000 more are written.
  void RecordInProcess(std::vector<std::string> mode_args) {
    WriteStaleMarkers();
    std::vector<std::string> argv = {Bin("sluice"), "record"};
    argv.insert(argv.end(), mode_args.begin(), mode_args.end());
    argv.insert(argv.end(),
                {"-k", "4mb", "-t", "1h", "-q", "--file-lag", "1s", "ftrace/print", "-o", Path("trace.pftrace")});
    ChildProcess recorder;
    if (mode_args.empty()) {
      ASSERT_TRUE(recorder.Start(argv, Path("record.out"), Path("record.err")));
      ASSERT_TRUE(WaitUntilRecording(workload_, Path("trace.pftrace"), testing::ScaledTimeoutMs(120000), &recorder))
          << recorder.Describe();
    } else {
      // A ring keeps everything in memory until the end: its "recording"
      // line comes once the data sources run.
      argv.erase(argv.begin(), argv.begin() + 2);
      if (!StartAndWaitForRecordingLine(argv, Path("record.out"), Path("record.err"), &recorder)) return;
    }
    WriteMarkersOnOneCpu(workload_.prefix, 2000);
    StopRecorder(&recorder, SIGINT);
    const Decoded d = DecodeTrace(Path("trace.pftrace"), workload_.prefix);
    ASSERT_TRUE(d.status.ok()) << d.status.message();
    ExpectMarkerRange(d, 0, 2000);
    ExpectNoDataLoss(Path("trace.pftrace"));
  }

  std::string found_clock_;
  bool clock_set_ = false;
};

TEST_P(RecordBoundaryKernelTest, APlainRecordingHoldsNothingFromBeforeIt) { RecordInProcess({}); }
TEST_P(RecordBoundaryKernelTest, ARingRecordingHoldsNothingFromBeforeIt) { RecordInProcess({"--ring", "-b", "8mb"}); }

// Detached in sluiced, cloned while it records, attached and stopped: the
// clone and the final trace both start at the session's start.
TEST_P(RecordBoundaryKernelTest, ADetachedRingSessionItsCloneAndItsAttachedEndHoldNothingFromBeforeIt) {
  WriteStaleMarkers();
  testing::CommandResult detached =
      Sluice({"record", "--daemon", "--detach=e2e-bound", "--ring", "-b", "8mb", "-k", "4mb", "-t", "1h", "-q",
              "ftrace/print", "-o", Path("trace.pftrace")});
  ASSERT_EQ(detached.exit_code, 0) << detached.err;
  if (!WaitUntilCloneHoldsReadyMarker("e2e-bound")) return;
  WriteMarkersOnOneCpu(workload_.prefix, 2000);
  ExpectMarkerRange(Clone("e2e-bound", Path("clone.pftrace")), 0, 2000);
  WriteMarkersOnOneCpu(workload_.prefix, 1000, 2000);
  testing::CommandResult stopped = Sluice({"record", "--attach=e2e-bound", "--stop", "-q"});
  ASSERT_EQ(stopped.exit_code, 0) << stopped.err;
  const Decoded all = DecodeTrace(Path("trace.pftrace"), workload_.prefix);
  ASSERT_TRUE(all.status.ok()) << all.status.message();
  ExpectMarkerRange(all, 0, 3000);
  ExpectNoDataLoss(Path("trace.pftrace"));
  ExpectTracefsRestored();
}

// START_TRACING: nothing runs until the trigger (tracefs is untouched), then
// the kernel buffer is emptied and the session records what comes after it
// until it is stopped; what was written while it waited stays out.
TEST_P(RecordBoundaryKernelTest, AStartTracingSessionHoldsNothingFromBeforeItsTrigger) {
  ChildProcess recorder;
  ASSERT_TRUE(StartRecorder(TriggerConfigText("e2e-start", "START_TRACING", 3600000), &recorder));
  // The session exists once sluice sessions lists it; it waits.
  const uint64_t deadline = NowMs() + testing::ScaledTimeoutMs(60000);
  while (Sluice({"sessions"}).out.find("'e2e-start'") == std::string::npos && NowMs() < deadline)
    usleep(50 * 1000);
  ASSERT_NE(Sluice({"sessions"}).out.find("'e2e-start'"), std::string::npos) << recorder.Describe();
  EXPECT_EQ(ReadTracefsState(), before_) << "a START_TRACING session enabled events before its trigger";
  WriteStaleMarkers();
  testing::CommandResult fired = Trigger("e2e-start");
  EXPECT_EQ(fired.exit_code, 0) << fired.err;
  EXPECT_NE(fired.out.find("e2e-start: 1 session acted on it"), std::string::npos) << fired.out;
  if (!WaitUntilCloneHoldsReadyMarker("e2e-start")) return;
  WriteMarkersOnOneCpu(workload_.prefix, 2000);
  recorder.Signal(SIGINT);
  ASSERT_TRUE(recorder.Wait(testing::ScaledTimeoutMs(120000))) << recorder.Describe();
  EXPECT_TRUE(recorder.exited_normally_with(0)) << recorder.Describe();
  const Decoded d = DecodeTrace(Path("trace.pftrace"), workload_.prefix);
  ASSERT_TRUE(d.status.ok()) << d.status.message();
  EXPECT_EQ(d.triggers, std::vector<std::string>{"e2e-start"});
  ExpectMarkerRange(d, 0, 2000);
  ExpectNoDataLoss(Path("trace.pftrace"));
  ExpectTracefsRestored();
}

INSTANTIATE_TEST_SUITE_P(Clock, RecordBoundaryKernelTest, ::testing::Values("boot", "local"),
                         [](const ::testing::TestParamInfo<const char*>& info) {
                           return std::string("AlreadyAt") + (info.param[0] == 'b' ? "Boot" : "Local");
                         });

// ---------------------------------------------------------------------------
// Another tracer reading the top-level buffer at the same time
// (user/probes/ftrace/ftrace_buffer_choice.h): sluice records from an
// instance of its own, with trace_marker writes copied in where the kernel
// can (copy_trace_marker, 6.17+), or refuses in one line naming the other
// tracer; either way neither loses an event to the other.

class OtherTracerKernelTest : public RecordKernelTest {
 protected:
  void TearDown() override {
    if (changed_top_level_) RestoreTracefsState(before_);
    RecordKernelTest::TearDown();
  }
  // Starts `cat trace_pipe` as the other tracer, with room for what the test
  // writes, as a tracer sizes its buffer: the top-level buffer may be found
  // at 7 KiB per CPU (where upstream Perfetto ran), where a cat loses events
  // to its own slowness, not to sluice.
  bool StartCatOfTracePipe(ChildProcess* other) {
    const std::string size_path = std::string(kTracefs) + "/buffer_size_kb";
    auto size = ParseBufferSize(ReadFileOr(size_path, ""));
    if (!size.ok() || size->per_cpu_differs || size->kb < 4096) {
      changed_top_level_ = true;
      EXPECT_TRUE(WriteTracefsFile(size_path, "4096"));
    }
    if (TrimWhitespace(before_.tracing_on) == "0") {  // A tracer turns it on.
      changed_top_level_ = true;
      EXPECT_TRUE(WriteTracefsFile(std::string(kTracefs) + "/tracing_on", "1"));
    }
    EXPECT_TRUE(other->Start({"/bin/sh", "-c", std::string("exec cat ") + kTracefs + "/trace_pipe"},
                             Path("other.txt"), Path("other.err")));
    return WaitUntilReadsTopLevel(other->pid());
  }
  bool changed_top_level_ = false;
  bool KernelCopiesTraceMarker() const {
    return access((std::string(kTracefs) + "/options/copy_trace_marker").c_str(), F_OK) == 0;
  }
  // Waits until `pid` reads the top-level buffer, as sluice will see it.
  bool WaitUntilReadsTopLevel(pid_t pid) {
    const uint64_t deadline = NowMs() + testing::ScaledTimeoutMs(60000);
    while (NowMs() < deadline) {
      for (const TracefsReader& r : FindTracefsReaders(getpid()))
        if (r.pid == pid && r.instance.empty()) return true;
      usleep(20 * 1000);
    }
    ADD_FAILURE() << "pid " << pid << " never read the top-level buffer";
    return false;
  }
  // How many of "<prefix>N", N in [0, n), occur in `text` (each counted once).
  uint32_t MarkersIn(const std::string& text, uint32_t n) const {
    uint32_t found = 0;
    for (uint32_t i = 0; i < n; i++) {
      const std::string m = workload_.prefix + std::to_string(i);
      for (size_t at = text.find(m); at != std::string::npos; at = text.find(m, at + 1)) {
        const size_t end = at + m.size();
        if (end == text.size() || !isdigit(static_cast<unsigned char>(text[end]))) {
          found++;
          break;
        }
      }
    }
    return found;
  }
};

// The other tracer is `cat trace_pipe`, as bpftrace users and scripts read
// the top-level buffer; busybox has it too, so every kernel of the VM set
// runs this.
TEST_F(OtherTracerKernelTest, ACatOfTracePipeKeepsEveryEventAndSoDoesSluice) {
  ChildProcess other;
  if (!StartCatOfTracePipe(&other)) return;
  ChildProcess recorder;
  const std::vector<std::string> args = {"-k", "4mb", "-t", "1h", "-q", "--file-lag", "1s", "sched/sched_switch",
                                         "ftrace/print", "-o", Path("trace.pftrace")};
  if (!KernelCopiesTraceMarker()) {
    // No way to give an instance the markers: refused before anything starts.
    std::vector<std::string> argv = {Bin("sluice"), "record"};
    argv.insert(argv.end(), args.begin(), args.end());
    testing::CommandResult refused = testing::RunToCompletion(argv, dir_);
    EXPECT_NE(refused.exit_code, 0);
    EXPECT_NE(refused.err.find("another tracer reads the top-level ftrace buffer: cat (pid " +
                               std::to_string(other.pid()) + ")"),
              std::string::npos)
        << refused.err;
    EXPECT_NE(access(Path("trace.pftrace").c_str(), F_OK), 0) << "a refused recording wrote a file";
    other.Terminate(testing::ScaledTimeoutMs(10000));
    return;
  }
  ASSERT_TRUE(recorder.Start([&] {
    std::vector<std::string> argv = {Bin("sluice"), "record"};
    argv.insert(argv.end(), args.begin(), args.end());
    return argv;
  }(), Path("record.out"), Path("record.err")));
  ASSERT_TRUE(WaitUntilRecording(workload_, Path("trace.pftrace"), testing::ScaledTimeoutMs(120000), &recorder))
      << recorder.Describe();
  EXPECT_NE(recorder.Stderr().find("cat (pid " + std::to_string(other.pid()) +
                                   ") reads the top-level ftrace buffer: recording from instance sluice-"),
            std::string::npos)
      << recorder.Stderr();
  WriteMarkersOnOneCpu(workload_.prefix, 2000);
  // The other tracer has read them all once its output holds the last one.
  const std::string last = workload_.prefix + "1999";
  const uint64_t deadline = NowMs() + testing::ScaledTimeoutMs(60000);
  while (ReadFileOr(Path("other.txt"), "").find(last) == std::string::npos && NowMs() < deadline) usleep(20 * 1000);
  StopRecorder(&recorder, SIGINT);
  other.Terminate(testing::ScaledTimeoutMs(10000));
  EXPECT_EQ(MarkersIn(ReadFileOr(Path("other.txt"), ""), 2000), 2000u) << "the other tracer lost markers to sluice";
  const Decoded d = DecodeTrace(Path("trace.pftrace"), workload_.prefix);
  ASSERT_TRUE(d.status.ok()) << d.status.message();
  ExpectMarkerRange(d, 0, 2000);
  auto health = AnalyzeTraceFile(Path("trace.pftrace"));  // Counts compact sched_switch too.
  ASSERT_TRUE(health.ok()) << health.status().message();
  EXPECT_GT(health->ftrace_events, 2000u) << "no sched_switch from the instance";
  ExpectNoDataLoss(Path("trace.pftrace"));
  testing::CommandResult stats = testing::RunToCompletion({Bin("sluice"), "stats", Path("trace.pftrace")}, dir_);
  EXPECT_NE(stats.out.find("ftrace_own_instance"), std::string::npos) << stats.out;
}

// Kernel events only: an instance of its own on every kernel.
TEST_F(OtherTracerKernelTest, KernelEventsOnlyRecordBesideAnotherReaderOnEveryKernel) {
  ChildProcess other;
  if (!StartCatOfTracePipe(&other)) return;
  ChildProcess recorder;
  ASSERT_TRUE(StartAndWaitForRecordingLine({"-k", "4mb", "-t", "1h", "sched/sched_switch", "-o", Path("trace.pftrace")},
                                           Path("record.out"), Path("record.err"), &recorder));
  EXPECT_NE(recorder.Stderr().find("reads the top-level ftrace buffer: recording from instance sluice-"),
            std::string::npos)
      << recorder.Stderr();
  // Context switches the recorder sees: this thread sleeps a few times.
  for (int i = 0; i < 20; i++) usleep(1000);
  StopRecorder(&recorder, SIGINT);
  other.Terminate(testing::ScaledTimeoutMs(10000));
  const Decoded d = DecodeTrace(Path("trace.pftrace"), workload_.prefix);
  ASSERT_TRUE(d.status.ok()) << d.status.message();
  auto health = AnalyzeTraceFile(Path("trace.pftrace"));  // Counts compact sched_switch too.
  ASSERT_TRUE(health.ok()) << health.status().message();
  EXPECT_GT(health->ftrace_events, 0u) << "no sched_switch from the instance";
  ExpectNoDataLoss(Path("trace.pftrace"));
}

// Upstream Perfetto's own traced_probes recording ftrace/print and
// sched_switch from the top-level buffer, and sluice recording the same
// beside it: each trace holds every marker. Upstream's tools come from
// ../shared/tools/perfetto (CI has them). Upstream leaves tracefs changed
// (trace_clock boot, buffer_size_kb at its minimum): put back afterwards.
class UpstreamTracerKernelTest : public OtherTracerKernelTest {
 protected:
  void TearDown() override {
    for (ChildProcess* p : {&perfetto_, &probes_, &traced_})
      if (p->running()) p->Terminate(testing::ScaledTimeoutMs(30000));
    if (armed_) RestoreTracefsState(before_);
    OtherTracerKernelTest::TearDown();
  }
  std::vector<std::string> Upstream(const std::string& tool) const {
    return {"/usr/bin/env", "PERFETTO_PRODUCER_SOCK_NAME=" + Path("up-producer.sock"),
            "PERFETTO_CONSUMER_SOCK_NAME=" + Path("up-consumer.sock"), upstream_dir_ + "/" + tool};
  }
  // Waits until traced accepts connections on `socket_path`: perfetto, run
  // before that, gives up at once ("Could not connect to the traced socket").
  bool WaitUntilListening(const std::string& socket_path) {
    const uint64_t deadline = NowMs() + testing::ScaledTimeoutMs(60000);
    sockaddr_un addr{};
    addr.sun_family = AF_UNIX;
    snprintf(addr.sun_path, sizeof(addr.sun_path), "%s", socket_path.c_str());
    while (NowMs() < deadline && traced_.running()) {
      const int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
      const bool up = fd >= 0 && connect(fd, reinterpret_cast<const sockaddr*>(&addr), sizeof(addr)) == 0;
      if (fd >= 0) close(fd);
      if (up) return true;
      usleep(20 * 1000);
    }
    ADD_FAILURE() << "traced never listened on " << socket_path << ": " << traced_.Describe();
    return false;
  }
  std::string upstream_dir_ = testing::UpstreamPerfettoDir();
  ChildProcess traced_, probes_, perfetto_;
};

TEST_F(UpstreamTracerKernelTest, UpstreamTracedProbesAndSluiceEachKeepEveryMarker) {
  if (access((upstream_dir_ + "/traced_probes").c_str(), X_OK) != 0) {
    if (testing::RunningUnderCi()) FAIL() << "no upstream Perfetto tools at " << upstream_dir_;
    GTEST_SKIP() << "no upstream Perfetto tools at " << upstream_dir_ << " (../shared/tools/perfetto)";
  }
  if (!KernelCopiesTraceMarker()) GTEST_SKIP() << "no options/copy_trace_marker (Linux 6.17+): refused, as tested above";
  ASSERT_TRUE(traced_.Start(Upstream("traced"), Path("traced.out"), Path("traced.err")));
  if (!WaitUntilListening(Path("up-consumer.sock")) || !WaitUntilListening(Path("up-producer.sock"))) return;
  ASSERT_TRUE(probes_.Start(Upstream("traced_probes"), Path("probes.out"), Path("probes.err")));
  ASSERT_TRUE(WriteTracefsFile(Path("upstream.pbtx"), R"(
buffers { size_kb: 16384 fill_policy: DISCARD }
data_sources { config { name: "linux.ftrace" ftrace_config {
  ftrace_events: "sched/sched_switch" ftrace_events: "ftrace/print" buffer_size_kb: 4096 } } }
duration_ms: 3600000
)", O_CREAT | O_TRUNC));
  // perfetto retries until traced_probes has registered its data source.
  std::vector<std::string> argv = Upstream("perfetto");
  argv.insert(argv.end(), {"-c", Path("upstream.pbtx"), "--txt", "-o", Path("upstream.pftrace")});
  ASSERT_TRUE(perfetto_.Start(argv, Path("perfetto.out"), Path("perfetto.err")));
  if (!WaitUntilReadsTopLevel(probes_.pid())) return;

  ChildProcess recorder;
  ASSERT_TRUE(recorder.Start({Bin("sluice"), "record", "-k", "4mb", "-t", "1h", "-q", "--file-lag", "1s",
                              "sched/sched_switch", "ftrace/print", "-o", Path("trace.pftrace")},
                             Path("record.out"), Path("record.err")));
  ASSERT_TRUE(WaitUntilRecording(workload_, Path("trace.pftrace"), testing::ScaledTimeoutMs(120000), &recorder))
      << recorder.Describe();
  EXPECT_NE(recorder.Stderr().find("traced_probes (pid " + std::to_string(probes_.pid()) +
                                   ") reads the top-level ftrace buffer: recording from instance sluice-"),
            std::string::npos)
      << recorder.Stderr();
  WriteMarkersOnOneCpu(workload_.prefix, 2000);
  StopRecorder(&recorder, SIGINT);
  perfetto_.Signal(SIGINT);  // perfetto flushes and writes its trace, as at Ctrl-C.
  ASSERT_TRUE(perfetto_.Wait(testing::ScaledTimeoutMs(120000))) << perfetto_.Describe();

  const Decoded ours = DecodeTrace(Path("trace.pftrace"), workload_.prefix);
  ASSERT_TRUE(ours.status.ok()) << ours.status.message();
  ExpectMarkerRange(ours, 0, 2000);
  ExpectNoDataLoss(Path("trace.pftrace"));
  const Decoded theirs = DecodeTrace(Path("upstream.pftrace"), workload_.prefix);
  ASSERT_TRUE(theirs.status.ok()) << theirs.status.message() << "\n" << perfetto_.Describe();
  ExpectMarkerRange(theirs, 0, 2000);
}

// ---------------------------------------------------------------------------
// --rotate: the trace cut into files that each load alone (issue 39).

class RecordRotationKernelTest : public RecordKernelTest {
 protected:
  // Starts `sluice record ARGS --rotate ... -o rot.pftrace` and waits for
  // its "sluice: recording" line and the first file's first write.
  bool StartRotating(std::vector<std::string> args, ChildProcess* recorder) {
    std::vector<std::string> argv = {Bin("sluice"), "record", "--file-lag", "1s", "-k", "16mb", "-q",
                                     "-o", Path("rot.pftrace")};
    argv.insert(argv.end(), args.begin(), args.end());
    EXPECT_TRUE(recorder->Start(argv, Path("record.out"), Path("record.err")));
    const uint64_t deadline = NowMs() + testing::ScaledTimeoutMs(120000);
    // Recording, and the first file grew twice (the first write is its
    // head, the next one after the data sources started holds the probes'
    // state: process tree, system info, so even a file cut in the first
    // burst has them to carry), or was cut already (--rotate 1s).
    off_t first_size = 0;
    auto ready = [&] {
      if (recorder->Stderr().find("sluice: recording") == std::string::npos) return false;
      struct stat st {};
      if (stat(Path("rot.000001.pftrace").c_str(), &st) == 0) return true;
      if (stat(Path("rot.000001.pftrace.recording").c_str(), &st) != 0 || st.st_size == 0) return false;
      if (first_size == 0) first_size = st.st_size;
      return st.st_size > first_size;
    };
    while (!ready()) {
      if (!recorder->running() || NowMs() > deadline) {
        ADD_FAILURE() << "the recorder did not start recording: " << recorder->Describe();
        // Stopped as a user stops it, so that it leaves tracefs as found.
        recorder->Signal(SIGINT);
        recorder->Wait(testing::ScaledTimeoutMs(60000));
        return false;
      }
      usleep(20000);
    }
    return true;
  }

  // The recorder's "sluice record: finished FILE" lines so far.
  static size_t FinishedLines(const ChildProcess& recorder) {
    const std::string err = recorder.Stderr();
    size_t n = 0;
    for (size_t at = 0; (at = err.find("sluice record: finished ", at)) != std::string::npos; at++) n++;
    return n;
  }

  // The finished files, by name (= in order); fails if a .recording is left.
  std::vector<std::string> RotatedFiles() {
    std::vector<std::string> files;
    for (const auto& e : std::filesystem::directory_iterator(dir_)) {
      const std::string name = e.path().filename().string();
      EXPECT_EQ(name.find(".recording"), std::string::npos) << name << " left unfinished";
      if (name.rfind("rot.", 0) == 0 && name.size() > 8 && name.substr(name.size() - 8) == ".pftrace")
        files.push_back(e.path().string());
    }
    std::sort(files.begin(), files.end());
    return files;
  }

  // Each file alone: a whole trace with its own head and stats, no loss;
  // the markers of all of them together: each exactly once.
  void ExpectEachFileWholeAndMarkersOnceOverAll(const std::vector<std::string>& files,
                                                const std::vector<Workload>& workloads) {
    std::vector<Decoded> merged(workloads.size());
    for (const std::string& file : files) {
      SCOPED_TRACE(file);
      for (size_t w = 0; w < workloads.size(); w++) {
        Decoded d = DecodeTrace(file, workloads[w].prefix);
        ASSERT_TRUE(d.status.ok()) << d.status.message();
        for (const auto& [seq, n] : d.marker_count) merged[w].marker_count[seq] += n;
        merged[w].malformed_markers += d.malformed_markers;
        if (w) continue;
        EXPECT_FALSE(d.summary.truncated);
        EXPECT_EQ(d.summary.valid_bytes, d.summary.bytes);
        EXPECT_EQ(d.bad_packets, 0u);
        EXPECT_TRUE(d.trace_config) << "no TraceConfig packet";
        EXPECT_TRUE(d.clock_snapshot) << "no ClockSnapshot packet";
        EXPECT_TRUE(d.system_info) << "no SystemInfo packet";
        EXPECT_TRUE(d.process_tree) << "no ProcessTree packet";
        EXPECT_TRUE(d.trace_stats) << "no TraceStats packet";
        ExpectNoDataLoss(file);
      }
    }
    for (size_t w = 0; w < workloads.size(); w++) ExpectMarkersExactlyOnce(merged[w], workloads[w].markers);
  }

  // Upstream's trace_processor_shell imports each file alone without an
  // import error or a data loss stat, and the markers of all of them add up
  // to what was written. A shell built without zstd ("zstd is not enabled in
  // this build") reads each file's packets deflated instead (the default
  // codec of rotated files is zstd, which upstream's standard builds read).
  // `also_not_errors`: one more stat the test's own workload causes.
  void ExpectUpstreamLoadsEachFile(const std::vector<std::string>& files, const Workload& w,
                                   const std::string& also_not_errors = "") {
    const std::string shell = UpstreamShell();
    if (shell.empty()) GTEST_SKIP() << "no upstream trace_processor_shell in ../shared/tools/perfetto";
    {
      std::ofstream sql(Path("upstream.sql"));
      // systrace_parse_failure: the workload's markers are not atrace's
      // "B|pid|name" lines, rotated or not.
      sql << "select 'errors', count(*) from stats where severity in ('error', 'data_loss') and value > 0 "
             "and name not in ('systrace_parse_failure', '" << also_not_errors << "');\n"
             "select 'markers', count(*) from ftrace_event e join args a using (arg_set_id) "
             "where e.name = 'print' and a.key = 'buf' and a.string_value like '"
          << w.prefix << "%' and a.string_value not like '%ready%';\n";
    }
    uint64_t markers = 0;
    for (const std::string& file : files) {
      SCOPED_TRACE(file);
      testing::CommandResult up = testing::RunToCompletion({shell, "-q", Path("upstream.sql"), file}, dir_);
      std::string checked = file;
      if (up.exit_code != 0 && up.err.find("zstd is not enabled in this build") != std::string::npos) {
        std::vector<std::string> packets;
        TraceFileSummary summary;
        ASSERT_TRUE(ReadTraceFile(file, [&](std::string_view p) { packets.emplace_back(p); }, &summary).ok());
        checked = Path("deflated.pftrace");
        ScopedFd fd(open(checked.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644));
        TraceFileWriter writer(std::move(fd), 0, {TraceCodec::kDeflate, 0});
        ASSERT_TRUE(writer.WritePackets(packets).ok());
        ASSERT_TRUE(writer.Flush().ok());
        up = testing::RunToCompletion({shell, "-q", Path("upstream.sql"), checked}, dir_);
      }
      ASSERT_EQ(up.exit_code, 0) << checked << ": " << up.err;
      EXPECT_NE(up.out.find("\"errors\",0\n"), std::string::npos) << "upstream import errors in " << checked
                                                                  << ":\n" << up.out;
      const size_t at = up.out.find("\"markers\",");
      ASSERT_NE(at, std::string::npos) << up.out;
      markers += std::stoull(up.out.substr(at + 10));
    }
    EXPECT_EQ(markers, w.markers) << "upstream's marker count over the files";
  }
};

// By size: 64 KiB files (zstd, the default: ~200 KiB of workload) while the
// workload writes ~7 MB of packets in half a second,
// so the cuts fall in a backlog the service reads after the producers were
// asked to write their state again, and at the end: every file still starts
// with the config, clocks, system info and process tree.
TEST_F(RecordRotationKernelTest, BySizeEveryMarkerOnceEachFileWholeZeroLossBuffersHoldWorkload) {
  ChildProcess recorder;
  if (!StartRotating({"--rotate", "64kb"}, &recorder)) return;
  RunWorkload(workload_);
  StopRecorder(&recorder, SIGINT);
  const std::vector<std::string> files = RotatedFiles();
  ASSERT_GE(files.size(), 3u) << recorder.Stderr();
  EXPECT_EQ(FinishedLines(recorder), files.size()) << "one \"finished\" line per file";
  ExpectEachFileWholeAndMarkersOnceOverAll(files, {workload_});
  if (HasFailure()) return;
  ExpectUpstreamLoadsEachFile(files, workload_);
}

// By time, BPF markers, deflate: three workloads, each followed by a cut
// (the test waits for the recorder's "finished" line, a condition, not a
// time), so markers of each land on both sides of time cuts while the
// session records; --on-rotate sees every finished file once, in order.
TEST_F(RecordRotationKernelTest, ByTimeBpfEveryMarkerOnceHookSeesEachFileZeroLossBuffersHoldWorkload) {
  ChildProcess recorder;
  const std::string hook_log = Path("hook.log");
  if (!StartRotating({"--rotate", "1s", "--bpf", "--compress", "deflate", "--on-rotate",
                      "echo >>" + hook_log},
                     &recorder))
    return;
  std::vector<Workload> workloads;
  for (int i = 0; i < 3; i++) {
    Workload w = workload_;
    w.prefix = workload_.prefix + "t" + std::to_string(i) + "-";
    w.markers = 4000;
    w.rounds = 2000;
    const size_t finished_before = FinishedLines(recorder);
    RunWorkload(w);
    workloads.push_back(w);
    const uint64_t deadline = NowMs() + testing::ScaledTimeoutMs(60000);
    for (;;) {
      if (FinishedLines(recorder) > finished_before) break;
      ASSERT_TRUE(recorder.running() && NowMs() < deadline) << "no cut after workload " << i << ": "
                                                            << recorder.Describe();
      usleep(50000);
    }
  }
  StopRecorder(&recorder, SIGINT);
  const std::vector<std::string> files = RotatedFiles();
  ASSERT_GE(files.size(), 4u);
  ExpectEachFileWholeAndMarkersOnceOverAll(files, workloads);
  // Every finished file went through the hook once, in order.
  std::string expected_log;
  for (const std::string& f : files) expected_log += f + "\n";
  EXPECT_EQ(ReadFileOr(hook_log, ""), expected_log);
  if (HasFailure()) return;
  // mismatched_sched_switch_tids: the BPF source's sched_switch events,
  // rotated or not (an unrotated --bpf recording here has them too).
  for (const Workload& w : workloads) ExpectUpstreamLoadsEachFile(files, w, "mismatched_sched_switch_tids");
}

// --keep: only the newest N files stay, the others were deleted as the
// recording went.
TEST_F(RecordRotationKernelTest, KeepLeavesTheNewestFiles) {
  ChildProcess recorder;
  if (!StartRotating({"--rotate", "128kb", "--compress", "none", "--keep", "2"}, &recorder)) return;
  RunWorkload(workload_);
  StopRecorder(&recorder, SIGINT);
  const std::vector<std::string> files = RotatedFiles();
  ASSERT_EQ(files.size(), 2u);
  // The two with the highest numbers the recorder finished.
  const std::string err = recorder.Stderr();
  const size_t last = err.rfind("finished ");
  ASSERT_NE(last, std::string::npos);
  EXPECT_EQ(err.substr(last + 9, err.find('\n', last) - last - 9), files[1]);
}

}  // namespace
}  // namespace sluice
