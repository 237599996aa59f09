// Kernel integration tests of user/probes/bpf/bpf_data_source.h (root, BTF, BPF).
// Known workloads in this process (threads ping-ponging through pipes,
// numbered trace_marker writes from several threads) and the trace the
// source writes into HeapTraceWriters, parsed with libprotobuf.
//
// The source does not touch tracefs control files; each test checks that
// tracefs is as it found it (it writes trace_marker, which only adds print
// events to the root buffer).
#include <dirent.h>
#include <fcntl.h>
#include <linux/capability.h>
#include <pthread.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cinttypes>
#include <cstdio>
#include <iterator>
#include <cerrno>
#include <cstring>
#include <map>
#include <memory>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "perfetto/common/trace_stats.pb.h"
#include "perfetto/config/trace_config.pb.h"
#include "perfetto/trace/trace_packet.pb.h"
#include "shm/trace_writer.h"
#include "sluice/bpf.pb.h"
#include "sluice/bpf_config.pb.h"
#include "tests/kernel_test_util.h"
#include "tests/service/service_test_util.h"
#include "tests/user/probes/in_process_session_test_util.h"
#include "tests/user/probes/tracefs_test_util.h"
#include "user/probes/bpf/bpf_data_source.h"
#include "user/probes/probes_producer.h"

namespace sluice {
namespace {

namespace pp = perfetto::protos;

constexpr const char* kTracefs = "/sys/kernel/tracing";

// ---- Environment. ----

std::string ReadFile(const std::string& path) {
  int fd = open(path.c_str(), O_RDONLY);
  if (fd < 0) return "<missing>";
  std::string out;
  char buf[4096];
  ssize_t n;
  while ((n = read(fd, buf, sizeof(buf))) > 0) out.append(buf, static_cast<size_t>(n));
  close(fd);
  return out;
}

// The tracefs state the tests must leave alone.
std::string TracefsState() {
  std::string s;
  for (const char* f : {"tracing_on", "trace_clock", "buffer_size_kb", "current_tracer",
                        "set_event", "events/syscalls/sys_enter_write/enable",
                        "events/sched/sched_switch/enable"}) {
    std::string value = ReadFile(std::string(kTracefs) + "/" + f);
    // "7 (expanded: 1408)" (never used yet) and "1408" are the same buffer
    // to its next user; see CompareSchedSwitchWithFtrace().
    // Sizes are compared in 16 KiB steps: the kernel rounds a written size
    // up to whole sub-buffers (1408 reads back as 1410).
    if (std::string(f) == "buffer_size_kb") {
      size_t at = value.find("(expanded: ");
      int kb = atoi(value.c_str() + (at == std::string::npos ? 0 : at + 11));
      if (kb > 0 || value.rfind("0", 0) == 0) value = std::to_string(kb / 16) + "x16\n";
    }
    s += std::string(f) + "=" + value + ";";
  }
  s += "instances=";
  if (DIR* d = opendir((std::string(kTracefs) + "/instances").c_str())) {
    std::set<std::string> names;
    while (dirent* e = readdir(d)) names.insert(e->d_name);
    closedir(d);
    for (const auto& n : names) s += n + ",";
  }
  return s;
}

#define SKIP_WITHOUT_BPF()                                                        \
  do {                                                                            \
    if (geteuid() != 0) SLUICE_KERNEL_SKIP("needs root (CAP_BPF, CAP_PERFMON)");  \
    if (access("/sys/kernel/btf/vmlinux", R_OK) != 0)                             \
      SLUICE_KERNEL_SKIP("no /sys/kernel/btf/vmlinux (CONFIG_DEBUG_INFO_BTF)");   \
    if (access((std::string(kTracefs) + "/trace_marker").c_str(), W_OK) != 0)     \
      SLUICE_KERNEL_SKIP("no tracefs at /sys/kernel/tracing");                    \
  } while (0)

// ---- Capture: the source's writers, parsed. ----

struct Event {
  uint32_t cpu;
  pp::FtraceEvent ev;
};

struct Capture {
  std::vector<HeapTraceWriter*> writers;  // owned by the source
  std::vector<Event> events;
  std::vector<protos::BpfStats> stats;
  int bundles = 0;
  int lost_bundles = 0;
  // PerfSample.kernel_records_lost added up per CPU, as upstream's
  // trace_processor adds them into perf_cpu_lost_records.
  std::map<uint32_t, uint64_t> kernel_records_lost;

  BpfDataSource::MakeWriter Maker() {
    return [this] {
      auto w = std::make_unique<HeapTraceWriter>(static_cast<uint16_t>(writers.size() + 1));
      writers.push_back(w.get());
      return std::unique_ptr<TraceWriter>(std::move(w));
    };
  }

  void Parse() {
    for (HeapTraceWriter* w : writers) {
      for (const std::string& bytes : w->packets()) {
        pp::TracePacket packet;
        ASSERT_TRUE(packet.ParseFromString(bytes));
        if (packet.has_ftrace_events()) {
          const pp::FtraceEventBundle& b = packet.ftrace_events();
          bundles++;
          if (b.lost_events()) lost_bundles++;
          for (const pp::FtraceEvent& e : b.event()) events.push_back({b.cpu(), e});
        }
        if (packet.has_perf_sample())
          kernel_records_lost[packet.perf_sample().cpu()] += packet.perf_sample().kernel_records_lost();
        protos::BpfStatsPacket sp;
        ASSERT_TRUE(sp.ParseFromString(bytes));
        if (sp.has_bpf_stats()) stats.push_back(sp.bpf_stats());
      }
    }
  }

  const protos::BpfStats* FinalStats() const {
    for (const auto& s : stats) {
      if (s.phase() == protos::BpfStats::PHASE_END) return &s;
    }
    return nullptr;
  }
};

std::string RunToken() {
  return std::to_string(getpid()) + "-" + std::to_string(time(nullptr) % 100000);
}

// prev_state as ftrace prints it: "R+" for a preempted task, else the
// letters of its state bits ("R" when none).
std::string StateLetters(int64_t v) {
  if (v & 0x100) return "R+";
  static const std::pair<int64_t, const char*> kBits[] = {
      {1, "S"}, {2, "D"}, {4, "T"}, {8, "t"}, {16, "X"}, {32, "Z"}, {64, "P"}, {128, "I"}};
  std::string out;
  for (const auto& [bit, letter] : kBits) {
    if (v & bit) out += std::string(out.empty() ? "" : "|") + letter;
  }
  return out.empty() ? "R" : out;
}

// ---- Workloads. ----

// Two threads bounce a byte through two pipes `rounds` times. Each thread
// records its tid and the context switches the kernel counted for it
// (getrusage(RUSAGE_THREAD): nvcsw + nivcsw), read between trace_marker
// fences: outer_begin, [count], inner_begin ... inner_end, [count],
// outer_end. The sched_switch events of the thread between the inner fences
// can only be fewer, and between the outer fences only more, than the
// count: a preemption right next to a count is the only slack.
struct PingPongThread {
  pid_t tid = 0;
  std::string outer_begin, inner_begin, inner_end, outer_end;
  long switches = 0;
};

long ThreadSwitches() {
  rusage ru;
  getrusage(RUSAGE_THREAD, &ru);
  return ru.ru_nvcsw + ru.ru_nivcsw;
}

// A marker write; one the kernel refuses because the top-level buffer is
// off still reaches the BPF source, at the syscall's entry.
void WriteMarker(int fd, const std::string& s) {
  ASSERT_TRUE(testing::WriteTraceMarker(fd, s)) << strerror(errno);
}

void PingPong(int rounds, const std::string& token, PingPongThread out[2],
              const char* name0 = "sl-ping", const char* name1 = "sl-pong") {
  int a[2], b[2];
  ASSERT_EQ(pipe(a), 0);
  ASSERT_EQ(pipe(b), 0);
  auto body = [&](int idx, int rfd, int wfd, bool first) {
    // Closing the write end on any exit (a failed ASSERT included) makes the
    // partner's read return 0 instead of blocking forever.
    struct CloseOnExit {
      int fd;
      ~CloseOnExit() { close(fd); }
    } close_wfd{wfd};
    pthread_setname_np(pthread_self(), idx == 0 ? name0 : name1);
    int marker = open((std::string(kTracefs) + "/trace_marker").c_str(), O_WRONLY);
    PingPongThread& me = out[idx];
    me.tid = gettid();
    const std::string id = token + " " + std::to_string(idx);
    me.outer_begin = "pp-outer-begin " + id;
    me.inner_begin = "pp-inner-begin " + id;
    me.inner_end = "pp-inner-end " + id;
    me.outer_end = "pp-outer-end " + id;
    WriteMarker(marker, me.outer_begin);
    long before = ThreadSwitches();
    WriteMarker(marker, me.inner_begin);
    char c = 'x';
    for (int i = 0; i < rounds; i++) {
      if (first) {
        ASSERT_EQ(write(wfd, &c, 1), 1);
        ASSERT_EQ(read(rfd, &c, 1), 1);
      } else {
        ASSERT_EQ(read(rfd, &c, 1), 1);
        ASSERT_EQ(write(wfd, &c, 1), 1);
      }
    }
    WriteMarker(marker, me.inner_end);
    me.switches = ThreadSwitches() - before;
    WriteMarker(marker, me.outer_end);
    close(marker);
  };
  std::thread t0(body, 0, b[0], a[1], true);
  std::thread t1(body, 1, a[0], b[1], false);
  t0.join();
  t1.join();
  for (int fd : {a[0], b[0]}) close(fd);  // the write ends closed themselves
}

// `threads` threads each write `per_thread` markers "<token> <t> <i>".
// Returns the tid of each thread.
std::vector<pid_t> WriteMarkers(int threads, int per_thread, const std::string& token) {
  std::vector<pid_t> tids(static_cast<size_t>(threads));
  std::vector<std::thread> ts;
  for (int t = 0; t < threads; t++) {
    ts.emplace_back([&, t] {
      tids[static_cast<size_t>(t)] = gettid();
      int fd = open((std::string(kTracefs) + "/trace_marker").c_str(), O_WRONLY);
      ASSERT_GE(fd, 0);
      for (int i = 0; i < per_thread; i++) {
        WriteMarker(fd, "mk " + token + " " + std::to_string(t) + " " + std::to_string(i));
      }
      close(fd);
    });
  }
  for (auto& t : ts) t.join();
  return tids;
}

// Every event of this process's tasks: the tgid filter keeps the rest of a
// busy machine (other tests, compilers) from filling the rings, and keeps
// sched_switch/wakeup events where the other task is ours.
protos::BpfConfig AllEventsConfig() {
  protos::BpfConfig config;
  for (const char* e : {"sched/*", "task/*", "ftrace/print"}) config.add_events(e);
  config.set_ringbuf_size_kb(8192);
  config.add_tgids(getpid());
  return config;
}

BpfDataSourceOptions TestOptions() {
  BpfDataSourceOptions o;
  o.drain_period_ms = 20;
  return o;
}

void ExpectIdentity(const BpfSourceStats& c) {
  for (size_t cpu = 0; cpu < c.per_cpu.size(); cpu++) {
    const BpfCpuStats& k = c.per_cpu[cpu];
    EXPECT_EQ(k.produced, k.delivered + k.dropped) << "cpu " << cpu;
  }
}

// Events of the ping-pong threads and markers, checked against the
// workload. Shared by the tp_btf, tracepoint and shared-ring variants.
void RunPingPongAndMarkers(const BpfDataSourceOptions& options) {
  const std::string before = TracefsState();
  const std::string token = RunToken();
  Capture cap;
  auto source = BpfDataSource::Create(AllEventsConfig(), cap.Maker(), options);
  ASSERT_TRUE(source.ok()) << source.status().message();
  ASSERT_TRUE((*source)->Start().ok());

  constexpr int kRounds = 2000, kThreads = 4, kPerThread = 500;
  PingPongThread pp_threads[2];
  PingPong(kRounds, token, pp_threads);
  std::vector<pid_t> marker_tids = WriteMarkers(kThreads, kPerThread, token);
  // A marker through a dup()ed fd, and a 2000-byte one (truncated at 1 KiB).
  int fd = open((std::string(kTracefs) + "/trace_marker").c_str(), O_WRONLY);
  int dup_fd = dup(fd);
  WriteMarker(dup_fd, "dup " + token);
  std::string big = "big " + token + " " + std::string(2000, 'z');
  // Kernels before 6.x (e.g. Debian's 6.1) take at most 1024 bytes of one
  // trace_marker write and return the short count; newer ones take it all.
  // Either way the source records the first marker_payload_bytes (1 KiB).
  const ssize_t big_written = write(fd, big.data(), big.size());
  if (!(big_written < 0 && errno == EBADF)) {  // EBADF: the top-level buffer is off.
    ASSERT_GE(big_written, 1024);
  }
  close(fd);
  close(dup_fd);
  // A write to a regular file is not a marker.
  char path[] = "/tmp/sluice-bpf-test-XXXXXX";
  int tmp = mkstemp(path);
  WriteMarker(tmp, "mk " + token + " 99 99");
  close(tmp);
  unlink(path);

  (*source)->Flush();
  (*source)->Stop();
  cap.Parse();

  // Markers: each exactly once, with the writer's tid and ftrace's newline.
  std::map<std::string, std::vector<uint32_t>> markers;  // payload -> pids
  for (const Event& e : cap.events) {
    if (!e.ev.has_print()) continue;
    const std::string& buf = e.ev.print().buf();
    if (buf.find(token) == std::string::npos) continue;
    markers[buf].push_back(e.ev.pid());
  }
  for (int t = 0; t < kThreads; t++) {
    for (int i = 0; i < kPerThread; i++) {
      std::string want = "mk " + token + " " + std::to_string(t) + " " + std::to_string(i) + "\n";
      auto it = markers.find(want);
      ASSERT_NE(it, markers.end()) << want;
      ASSERT_EQ(it->second.size(), 1u) << want;
      EXPECT_EQ(it->second[0], static_cast<uint32_t>(marker_tids[static_cast<size_t>(t)]));
    }
  }
  EXPECT_EQ(markers.count("mk " + token + " 99 99\n"), 0u);
  EXPECT_EQ(markers.count("dup " + token + "\n"), 1u);
  EXPECT_EQ(markers.count(big.substr(0, 1024) + "\n"), 1u);

  // sched_switch: per ping-pong thread, the events between its fences are
  // the context switches the kernel counted for it (see PingPongThread).
  // sched_waking: each time a thread went to sleep between its fences it was
  // woken before its last fence, and that waking is traced. A thread need
  // not sleep at all: when the partner's wake-up preempts it on one CPU,
  // every switch of the thread can be a preemption (R+), so the count of
  // its wakings follows its sleeps, not the rounds (CI, 2026-12-05: a thread
  // with no waking at all). A skipped program run (counted) is the only slack.
  const uint64_t program_misses = (*source)->stats().program_misses;
  long all_sleeps = 0;
  for (const PingPongThread& t : pp_threads) {
    std::map<std::string, uint64_t> fence_ts;
    for (const Event& e : cap.events) {
      if (e.ev.has_print()) fence_ts[e.ev.print().buf()] = e.ev.timestamp();
    }
    uint64_t outer_begin = fence_ts[t.outer_begin + "\n"], inner_begin = fence_ts[t.inner_begin + "\n"];
    uint64_t inner_end = fence_ts[t.inner_end + "\n"], outer_end = fence_ts[t.outer_end + "\n"];
    ASSERT_TRUE(outer_begin && inner_begin && inner_end && outer_end);
    long inner = 0, outer = 0, sleeps = 0, wakings = 0;
    std::set<std::pair<uint64_t, uint32_t>> seen;
    for (const Event& e : cap.events) {
      uint64_t ts = e.ev.timestamp();
      if (ts <= outer_begin || ts >= outer_end) continue;
      if (e.ev.has_sched_switch() && e.ev.sched_switch().prev_pid() == t.tid) {
        outer++;
        if (ts > inner_begin && ts < inner_end) inner++;
        if (StateLetters(e.ev.sched_switch().prev_state())[0] != 'R') sleeps++;
        EXPECT_TRUE(seen.insert({ts, e.cpu}).second) << "duplicate switch";
        EXPECT_EQ(e.ev.pid(), static_cast<uint32_t>(t.tid));  // prev is current
        EXPECT_EQ(e.ev.sched_switch().prev_comm().substr(0, 3), "sl-");
      }
      if (e.ev.has_sched_waking() && e.ev.sched_waking().pid() == t.tid) wakings++;
    }
    EXPECT_LE(inner, t.switches) << "tid " << t.tid;
    EXPECT_GE(outer, t.switches) << "tid " << t.tid;
    EXPECT_LE(outer - inner, 4) << "tid " << t.tid;  // preemptions next to the counts only
    EXPECT_GT(inner, kRounds / 4) << "tid " << t.tid;  // the pipe blocks
    EXPECT_GE(wakings + static_cast<long>(program_misses), sleeps)
        << "tid " << t.tid << ": " << sleeps << " sleeps, " << wakings << " wakings";
    all_sleeps += sleeps;
  }
  // Each round one thread waits for the other's byte: in 2000 rounds the
  // pipe puts one of them to sleep.
  EXPECT_GT(all_sleeps, 0);
  // The threads were renamed: task_rename events with the new names.
  int renames = 0;
  for (const Event& e : cap.events) {
    if (e.ev.has_task_rename() &&
        (e.ev.task_rename().newcomm() == "sl-ping" || e.ev.task_rename().newcomm() == "sl-pong"))
      renames++;
  }
  EXPECT_EQ(renames, 2);

  // Accounting: nothing dropped with 8 MiB rings for one process's events,
  // identity holds, and the final stats packet says the same.
  BpfSourceStats c = (*source)->stats();
  ExpectIdentity(c);
  EXPECT_EQ(c.total.dropped, 0u);
  EXPECT_EQ(c.total.decode_errors, 0u);
  EXPECT_TRUE(cap.kernel_records_lost.empty());  // nothing lost: no PerfSample
  EXPECT_EQ(c.total.delivered, cap.events.size());
  EXPECT_GE(c.total.marker_truncated, 1u);
  const protos::BpfStats* end = cap.FinalStats();
  ASSERT_NE(end, nullptr);
  EXPECT_EQ(end->produced(), c.total.produced);
  EXPECT_EQ(end->unaccounted(), 0);
  // Classic tracepoint programs share one per-CPU "a BPF program is running"
  // flag: one that an interrupt's tracepoint finds set is skipped (a few per
  // run on 6.12). Such loss must be counted and flagged, never silent.
  EXPECT_EQ(end->program_misses(), c.program_misses);
  if (c.program_misses == 0) {
    EXPECT_EQ(cap.lost_bundles, 0);
  } else {
    EXPECT_GT(cap.lost_bundles, 0);
  }
  EXPECT_EQ(TracefsState(), before);
}

TEST(BpfDataSourceKernelTest, PingPongAndMarkersTpBtf) {
  SKIP_WITHOUT_BPF();
  BpfDataSourceOptions o = TestOptions();
  std::vector<std::string> warnings;
  o.warn = [&](const std::string& w) { warnings.push_back(w); };
  RunPingPongAndMarkers(o);
  EXPECT_TRUE(warnings.empty()) << warnings[0];
}

TEST(BpfDataSourceKernelTest, PingPongAndMarkersClassicTracepoints) {
  SKIP_WITHOUT_BPF();
  BpfDataSourceOptions o = TestOptions();
  o.force_tracepoint = true;
  o.force_marker_tracepoint = true;
  RunPingPongAndMarkers(o);
}

TEST(BpfDataSourceKernelTest, PingPongAndMarkersSharedRing) {
  SKIP_WITHOUT_BPF();
  BpfDataSourceOptions o = TestOptions();
  o.ring_mode = BpfDataSourceOptions::RingMode::kShared;
  RunPingPongAndMarkers(o);
}

TEST(BpfDataSourceKernelTest, AttachInfoOnThisKernel) {
  SKIP_WITHOUT_BPF();
  Capture cap;
  auto source = BpfDataSource::Create(AllEventsConfig(), cap.Maker(), TestOptions());
  ASSERT_TRUE(source.ok()) << source.status().message();
  // This host has tp_btf but no fentry (no BPF trampolines): the marker
  // path under test is sys_enter_write. Where fentry works this says so
  // (Debian's 6.1 and 6.12 under vm-tests).
  printf("linux.bpf on this kernel: tracepoints=%s marker=%s\n",
         (*source)->attach_info().tracepoint_attach.c_str(),
         (*source)->attach_info().marker_attach.c_str());
  EXPECT_EQ((*source)->attach_info().tracepoint_attach, "tp_btf");
  EXPECT_TRUE((*source)->attach_info().marker_attach == "sys_enter_write" ||
              (*source)->attach_info().marker_attach == "fentry");
  EXPECT_EQ((*source)->attach_info().events.size(), kBpfEventCount);
}

bool WriteFile(const std::string& path, const std::string& value) {
  int fd = open(path.c_str(), O_WRONLY | O_CLOEXEC);
  if (fd < 0) return false;
  bool ok = write(fd, value.data(), value.size()) == static_cast<ssize_t>(value.size());
  close(fd);
  return ok;
}

// Removes a tracefs instance when it goes out of scope. On kernels before 6.x
// creating an instance sets the global "buffers expanded" flag without growing
// the never-used root buffer, which then reads "7" instead of
// "7 (expanded: 1408)" and would stay at 7 KiB: grow it to the size it would
// have expanded to, the closest the kernel allows to how it was.
struct RemoveInstance {
  std::string path;
  std::string root_size_before = ReadFile(std::string(kTracefs) + "/buffer_size_kb");
  ~RemoveInstance() {
    rmdir(path.c_str());
    std::string root = std::string(kTracefs) + "/buffer_size_kb";
    size_t at = root_size_before.find("(expanded: ");
    if (at != std::string::npos && ReadFile(root).find("(expanded: ") == std::string::npos) {
      WriteFile(root, std::to_string(atoi(root_size_before.c_str() + at + 11)));
    }
  }
};

// The same kernel events through ftrace (a private tracefs instance with
// trace_clock=boot) and through this source: for the ping-pong threads,
// every sched_switch field matches, prev_state included (ftrace prints it as
// letters; the source computes the number like the kernel does).
void CompareSchedSwitchWithFtrace() {
  const std::string inst = std::string(kTracefs) + "/instances/sluice-bpf-test-" + std::to_string(getpid());
  ASSERT_EQ(mkdir(inst.c_str(), 0755), 0) << strerror(errno);
  RemoveInstance remove_instance{inst};
  ASSERT_TRUE(WriteFile(inst + "/tracing_on", "0"));
  ASSERT_TRUE(WriteFile(inst + "/trace_clock", "boot"));
  ASSERT_TRUE(WriteFile(inst + "/buffer_size_kb", "8192"));
  ASSERT_TRUE(WriteFile(inst + "/events/sched/sched_switch/enable", "1"));

  protos::BpfConfig config;
  config.add_events("sched/sched_switch");
  config.set_ringbuf_size_kb(8192);
  config.add_tgids(getpid());
  Capture cap;
  auto source = BpfDataSource::Create(config, cap.Maker(), TestOptions());
  ASSERT_TRUE(source.ok()) << source.status().message();
  ASSERT_TRUE((*source)->Start().ok());
  ASSERT_TRUE(WriteFile(inst + "/tracing_on", "1"));
  PingPongThread pp_threads[2];
  PingPong(1000, RunToken(), pp_threads);
  ASSERT_TRUE(WriteFile(inst + "/tracing_on", "0"));
  (*source)->Stop();
  cap.Parse();
  std::string text = ReadFile(inst + "/trace");
  // ftrace overwrites its oldest events when its buffer fills (a busy
  // machine, a slow sanitizer build): then it may lack events we have.
  uint64_t ftrace_overrun = 0;
  for (int cpu = 0; cpu < 1024; cpu++) {
    std::string stats = ReadFile(inst + "/per_cpu/cpu" + std::to_string(cpu) + "/stats");
    if (stats == "<missing>") break;
    size_t at = stats.find("overrun: ");
    if (at != std::string::npos) ftrace_overrun += strtoull(stats.c_str() + at + 9, nullptr, 10);
  }

  // A thread's last switch (prev_state X, after it woke its joiner) may
  // come after tracing_on=0: leave those out of both sides.
  auto ours = [&](long pid) { return pid == pp_threads[0].tid || pid == pp_threads[1].tid; };
  std::multiset<std::string> from_bpf, from_ftrace;
  for (const Event& e : cap.events) {
    const auto& s = e.ev.sched_switch();
    if ((!ours(s.prev_pid()) && !ours(s.next_pid())) || StateLetters(s.prev_state()) == "X") continue;
    char line[256];
    snprintf(line, sizeof(line), "%u %s %d %d %s %s %d %d", e.cpu, s.prev_comm().c_str(), s.prev_pid(),
             s.prev_prio(), StateLetters(s.prev_state()).c_str(), s.next_comm().c_str(), s.next_pid(),
             s.next_prio());
    from_bpf.insert(line);
  }
  std::istringstream lines(text);
  for (std::string l; std::getline(lines, l);) {
    unsigned cpu;
    char pc[32], st[8], nc[32];
    int pp, ppr, np, npr;
    size_t at = l.find('[');
    size_t sw = l.find("sched_switch: ");
    if (at == std::string::npos || sw == std::string::npos) continue;
    if (sscanf(l.c_str() + at, "[%u]", &cpu) != 1) continue;
    // Comms here have no spaces (sl-ping, sl-pong, swapper/N, ...).
    if (sscanf(l.c_str() + sw, "sched_switch: prev_comm=%31s prev_pid=%d prev_prio=%d prev_state=%7s ==> "
               "next_comm=%31s next_pid=%d next_prio=%d", pc, &pp, &ppr, st, nc, &np, &npr) != 7)
      continue;
    if ((!ours(pp) && !ours(np)) || std::string(st) == "X") continue;
    char line[256];
    snprintf(line, sizeof(line), "%u %s %d %d %s %s %d %d", cpu, pc, pp, ppr, st, nc, np, npr);
    from_ftrace.insert(line);
  }
  EXPECT_GT(from_ftrace.size(), 1000u);
  std::vector<std::string> only_bpf, only_ftrace;
  std::set_difference(from_bpf.begin(), from_bpf.end(), from_ftrace.begin(), from_ftrace.end(),
                      std::back_inserter(only_bpf));
  std::set_difference(from_ftrace.begin(), from_ftrace.end(), from_bpf.begin(), from_bpf.end(),
                      std::back_inserter(only_ftrace));
  // Every switch ftrace recorded, the source has, identical. The reverse
  // holds too except, rarely (1 in ~10^5 on 6.18 and 6.1-rt), a switch
  // ftrace's own buffer did not record; we have not found why.
  EXPECT_TRUE(only_ftrace.empty())
      << only_ftrace.size() << " only from ftrace, first: " << only_ftrace[0];
  // ftrace itself misses switches out of the idle task on some CPUs: on this
  // 6.18 host, an instance never records "swapper/1 ==> X" while it records
  // "X ==> swapper/1" (no overrun, no dropped events; CPU 0 is fine). The
  // tracepoint fires (the BPF program sees it), so those are left out here.
  size_t only_bpf_from_idle = 0;
  for (const std::string& line : only_bpf) {
    unsigned line_cpu;
    char prev_comm[32];
    int prev_pid = -1;
    if (sscanf(line.c_str(), "%u %31s %d", &line_cpu, prev_comm, &prev_pid) == 3 && prev_pid == 0) {
      only_bpf_from_idle++;
    }
  }
  if (ftrace_overrun == 0) {
    EXPECT_LE(only_bpf.size() - only_bpf_from_idle, 2u)
        << only_bpf.size() << " only from BPF, first: " << only_bpf[0];
  }
  if (!only_bpf.empty()) {
    printf("note: %zu switch(es) only from BPF (%zu out of the idle task), first: %s\n",
           only_bpf.size(), only_bpf_from_idle, only_bpf[0].c_str());
  }
}

TEST(BpfDataSourceKernelTest, SchedSwitchMatchesFtrace) {
  SKIP_WITHOUT_BPF();
  const std::string before = TracefsState();
  CompareSchedSwitchWithFtrace();  // its instance is gone when it returns
  EXPECT_EQ(TracefsState(), before);
}

// Where the kernel skips a program invocation (fentry on PREEMPT_RT, forced
// here with fentry_on_rt), the loss is not silent: every missing marker is
// covered by program_misses and flagged with lost_events. Elsewhere nothing
// is missing and the test checks that.
TEST(BpfDataSourceKernelTest, SkippedProgramRunsAreCountedAsLoss) {
  SKIP_WITHOUT_BPF();
  protos::BpfConfig config;
  config.add_events("ftrace/print");
  config.add_tgids(getpid());
  BpfDataSourceOptions o = TestOptions();
  o.fentry_on_rt = true;
  Capture cap;
  auto source = BpfDataSource::Create(config, cap.Maker(), o);
  ASSERT_TRUE(source.ok()) << source.status().message();
  ASSERT_TRUE((*source)->Start().ok());
  const std::string token = RunToken();
  constexpr int kThreads = 4, kPerThread = 500;
  WriteMarkers(kThreads, kPerThread, token);
  (*source)->Stop();
  cap.Parse();
  int found = 0;
  for (const Event& e : cap.events) found += e.ev.print().buf().find(token) != std::string::npos;
  BpfSourceStats c = (*source)->stats();
  const int missing = kThreads * kPerThread - found;
  printf("marker=%s: %d of %d markers missing, program_misses=%llu\n",
         (*source)->attach_info().marker_attach.c_str(), missing, kThreads * kPerThread,
         static_cast<unsigned long long>(c.program_misses));
  EXPECT_GE(missing, 0);
  EXPECT_LE(static_cast<uint64_t>(missing), c.program_misses);
  if (missing > 0) {
    EXPECT_GT(cap.lost_bundles, 0);
  }
  ExpectIdentity(c);
}

// A tiny ring and a stalled reader: records are dropped, and every one is
// accounted for: produced == delivered + dropped, per CPU, exactly.
TEST(BpfDataSourceKernelTest, StalledReaderAccountsEveryRecord) {
  SKIP_WITHOUT_BPF();
  const std::string before = TracefsState();
  protos::BpfConfig config = AllEventsConfig();
  config.set_ringbuf_size_kb(4);  // one page per CPU
  Capture cap;
  auto source = BpfDataSource::Create(config, cap.Maker(), TestOptions());
  ASSERT_TRUE(source.ok()) << source.status().message();
  ASSERT_TRUE((*source)->Start().ok());
  (*source)->PauseReadingForTesting();
  const std::string token = RunToken();
  PingPongThread pp_threads[2];
  PingPong(500, token, pp_threads);
  WriteMarkers(2, 500, token);
  BpfSourceStats mid = (*source)->stats();
  EXPECT_GT(mid.total.dropped, 0u);
  (*source)->ResumeReadingForTesting();
  PingPong(200, token, pp_threads);  // more, read normally
  (*source)->Flush();
  (*source)->Stop();
  cap.Parse();

  BpfSourceStats c = (*source)->stats();
  ExpectIdentity(c);
  EXPECT_GT(c.total.dropped, 0u);
  EXPECT_GT(c.total.delivered, 0u);
  EXPECT_EQ(c.total.decode_errors, 0u);
  EXPECT_EQ(c.total.delivered, cap.events.size());
  EXPECT_GT(cap.lost_bundles, 0);
  const protos::BpfStats* end = cap.FinalStats();
  ASSERT_NE(end, nullptr);
  EXPECT_EQ(end->unaccounted(), 0);
  EXPECT_EQ(end->produced(), end->delivered() + end->dropped());
  for (const auto& cpu : end->cpu_stats()) {
    EXPECT_EQ(cpu.produced(), cpu.delivered() + cpu.dropped()) << "cpu " << cpu.cpu();
  }
  // What upstream's trace_processor is told (perf_cpu_lost_records): per
  // CPU, exactly the records the final BpfStats says were dropped.
  std::map<uint32_t, uint64_t> dropped;
  for (const auto& cpu : end->cpu_stats()) {
    if (cpu.dropped() + cpu.decode_errors() > 0) dropped[cpu.cpu()] = cpu.dropped() + cpu.decode_errors();
  }
  EXPECT_EQ(cap.kernel_records_lost, dropped);
  EXPECT_EQ(TracefsState(), before);
}

// The service stops taking chunks while markers are written (its lock held,
// in the in-process pipeline of `sluice record`), so the probes' SMB fills.
// The reader then stops reading the rings, and what they cannot hold the
// programs count as dropped, per CPU: every marker is in the trace or in
// `dropped`, nothing is lost in the SMB, and the trace says the reader
// waited for room.
TEST(BpfDataSourceKernelTest, AFullSmbLeavesTheLossToTheRingsCountedExactly) {
  SKIP_WITHOUT_BPF();
  const std::string before = TracefsState();
  ProbesProducerOptions probe_options;
  probe_options.bpf = TestOptions();
  testing::InProcessSession session(/*smb_kb=*/2048, probe_options);
  pp::TraceConfig trace_config;
  trace_config.add_buffers()->set_size_kb(64 * 1024);  // Holds the whole run.
  auto* ds_config = trace_config.add_data_sources()->mutable_config();
  ds_config->set_name("linux.bpf");
  protos::BpfConfig& config = *ds_config->mutable_bpf_config();
  config.add_events("ftrace/print");
  config.add_tgids(getpid());
  // Bigger than the SMB, so that the SMB fills even if the reader got no
  // CPU until the markers were written.
  config.set_ringbuf_size_kb(4096);
  ASSERT_TRUE(session.Start(trace_config).ok());

  const std::string token = RunToken();
  constexpr int kThreads = 2, kPerThread = 200000;  // ~10 MB of records per thread.
  bool reader_waited = false;
  session.service()->RunWithServiceLockForTesting([&] {
    WriteMarkers(kThreads, kPerThread, token);
    reader_waited = testing::WaitUntil([&] { return session.probes()->stats().bpf_smb_full_waits > 0; },
                                       static_cast<int>(testing::ScaledTimeoutMs(60000)));
  });
  const ProbesStats held = session.probes()->stats();
  ASSERT_TRUE(reader_waited) << "the reader never waited for room in the SMB; " << held.bpf_events << " events, "
                             << held.bpf_dropped << " dropped";
  auto packets = session.StopAndRead();
  ASSERT_TRUE(packets.ok()) << packets.status().message();
  std::set<std::pair<int, int>> seen;
  uint64_t duplicates = 0, packets_lost = 0;
  protos::BpfStats end;
  const std::string prefix = "mk " + token + " ";
  for (const pp::TracePacket& p : *packets) {
    for (const auto& b : p.trace_stats().buffer_stats()) packets_lost += b.trace_writer_packet_loss();
    if (p.has_bpf_stats() && p.bpf_stats().phase() == protos::BpfStats::PHASE_END) end = p.bpf_stats();
    for (const auto& e : p.ftrace_events().event()) {
      const std::string& buf = e.print().buf();
      if (buf.compare(0, prefix.size(), prefix) != 0) continue;
      int t = -1, i = -1;
      ASSERT_EQ(sscanf(buf.c_str() + prefix.size(), "%d %d", &t, &i), 2) << buf;
      if (!seen.insert({t, i}).second) duplicates++;
    }
  }
  std::printf("[   INFO   ] %d written, %zu in the trace, %" PRIu64 " dropped by the programs; reader waited for "
              "room %" PRIu64 " times, %" PRIu64 " ms; SMB packets lost %" PRIu64 "\n",
              kThreads * kPerThread, seen.size(), end.dropped(), end.smb_full_waits(), end.smb_full_wait_ms(),
              packets_lost);
  EXPECT_EQ(duplicates, 0u);
  EXPECT_GT(end.dropped(), 0u) << "the rings were meant to overflow while the service stood still";
  EXPECT_EQ(seen.size() + end.dropped(), static_cast<uint64_t>(kThreads * kPerThread))
      << "a marker neither in the trace nor counted as dropped: lost in the SMB?";
  EXPECT_EQ(end.produced(), end.delivered() + end.dropped());
  EXPECT_EQ(end.unaccounted(), 0);
  EXPECT_EQ(packets_lost, 0u);
  EXPECT_GE(end.smb_full_waits(), 1u);
  EXPECT_EQ(TracefsState(), before);
}

// With a pid filter, records of other tasks never reach a ring: the number
// of records user space read equals the number of events, and every event
// is about the filtered thread.
TEST(BpfDataSourceKernelTest, PidFilterKeepsOtherTasksOutOfTheRing) {
  SKIP_WITHOUT_BPF();
  const std::string token = RunToken();
  // The worker thread exists before the source starts (its tid is the
  // filter) and waits for a go.
  std::atomic<pid_t> worker_tid{0};
  std::atomic<bool> go{false};
  int a[2], b[2];
  ASSERT_EQ(pipe(a), 0);
  ASSERT_EQ(pipe(b), 0);
  // Each thread closes its pipe's write end when it exits, so a failure in
  // one cannot leave the other blocked; the guard below releases and joins
  // them on every path out of the test.
  struct CloseOnExit {
    int fd;
    ~CloseOnExit() { close(fd); }
  };
  std::thread worker([&] {
    CloseOnExit close_wfd{a[1]};
    worker_tid = gettid();
    while (!go) usleep(1000);
    int fd = open((std::string(kTracefs) + "/trace_marker").c_str(), O_WRONLY);
    char c = 'x';
    for (int i = 0; i < 300; i++) {
      WriteMarker(fd, "flt " + token + " " + std::to_string(i));
      ASSERT_EQ(write(a[1], &c, 1), 1);
      ASSERT_EQ(read(b[0], &c, 1), 1);
    }
    close(fd);
  });
  std::thread partner([&] {  // not in the filter
    CloseOnExit close_wfd{b[1]};
    char c;
    int fd = open((std::string(kTracefs) + "/trace_marker").c_str(), O_WRONLY);
    for (int i = 0; i < 300; i++) {
      ASSERT_EQ(read(a[0], &c, 1), 1);
      WriteMarker(fd, "other " + token + " " + std::to_string(i));
      ASSERT_EQ(write(b[1], &c, 1), 1);
    }
    close(fd);
  });
  struct Release {
    std::atomic<bool>& go;
    std::thread& worker;
    std::thread& partner;
    ~Release() {
      go = true;
      if (worker.joinable()) worker.join();
      if (partner.joinable()) partner.join();
    }
  } release{go, worker, partner};
  while (!worker_tid) usleep(1000);

  protos::BpfConfig config;
  for (const char* e : {"sched/sched_switch", "sched/sched_waking", "sched/sched_wakeup",
                        "ftrace/print"})
    config.add_events(e);
  config.add_pids(worker_tid);
  Capture cap;
  auto source = BpfDataSource::Create(config, cap.Maker(), TestOptions());
  ASSERT_TRUE(source.ok()) << source.status().message();
  ASSERT_TRUE((*source)->Start().ok());
  go = true;
  worker.join();
  partner.join();
  WriteMarkers(2, 100, token);  // other threads
  (*source)->Stop();
  cap.Parse();
  for (int fd : {a[0], b[0]}) close(fd);

  const uint32_t tid = static_cast<uint32_t>(worker_tid.load());
  int markers = 0;
  for (const Event& e : cap.events) {
    if (e.ev.has_print()) {
      EXPECT_EQ(e.ev.pid(), tid) << e.ev.print().buf();
      markers++;
    } else if (e.ev.has_sched_switch()) {
      EXPECT_TRUE(static_cast<uint32_t>(e.ev.sched_switch().prev_pid()) == tid ||
                  static_cast<uint32_t>(e.ev.sched_switch().next_pid()) == tid);
    } else if (e.ev.has_sched_waking()) {  // the wakee or the waker
      EXPECT_TRUE(static_cast<uint32_t>(e.ev.sched_waking().pid()) == tid || e.ev.pid() == tid);
    } else if (e.ev.has_sched_wakeup()) {
      EXPECT_TRUE(static_cast<uint32_t>(e.ev.sched_wakeup().pid()) == tid || e.ev.pid() == tid);
    } else {
      ADD_FAILURE() << "unexpected event " << e.ev.ShortDebugString();
    }
  }
  EXPECT_EQ(markers, 300);
  BpfSourceStats c = (*source)->stats();
  // What crossed the ring is exactly what was written: nothing filtered out
  // in user space.
  EXPECT_EQ(c.total.delivered, cap.events.size());
  EXPECT_EQ(c.total.produced, c.total.delivered);
  EXPECT_GT(c.total.filtered_task, 0u);
}

TEST(BpfDataSourceKernelTest, CommPrefixAndTgidFilters) {
  SKIP_WITHOUT_BPF();
  const std::string token = RunToken();
  protos::BpfConfig config;
  config.add_events("ftrace/print");
  config.add_comm_prefixes("slc-keep");
  Capture cap;
  auto source = BpfDataSource::Create(config, cap.Maker(), TestOptions());
  ASSERT_TRUE(source.ok()) << source.status().message();
  ASSERT_TRUE((*source)->Start().ok());
  auto writer = [&](const char* name, int n) {
    pthread_setname_np(pthread_self(), name);
    int fd = open((std::string(kTracefs) + "/trace_marker").c_str(), O_WRONLY);
    for (int i = 0; i < n; i++) WriteMarker(fd, std::string(name) + " " + token);
    close(fd);
  };
  std::thread keep(writer, "slc-keep-1", 50), drop(writer, "slc-kee", 50);
  keep.join();
  drop.join();
  (*source)->Stop();
  cap.Parse();
  int kept = 0;
  for (const Event& e : cap.events) {
    ASSERT_TRUE(e.ev.has_print());
    EXPECT_EQ(e.ev.print().buf().rfind("slc-keep-1 ", 0), 0u) << e.ev.print().buf();
    kept++;
  }
  EXPECT_EQ(kept, 50);

  // tgid filter: this process's markers pass, nothing else can write here.
  protos::BpfConfig by_tgid;
  by_tgid.add_events("ftrace/print");
  by_tgid.add_tgids(getpid());
  Capture cap2;
  auto source2 = BpfDataSource::Create(by_tgid, cap2.Maker(), TestOptions());
  ASSERT_TRUE(source2.ok()) << source2.status().message();
  ASSERT_TRUE((*source2)->Start().ok());
  WriteMarkers(3, 20, token);
  (*source2)->Stop();
  cap2.Parse();
  int mine = 0;
  for (const Event& e : cap2.events) mine += e.ev.print().buf().find(token) != std::string::npos;
  EXPECT_EQ(mine, 60);
}

TEST(BpfDataSourceKernelTest, RateCeilingFiltersInKernel) {
  SKIP_WITHOUT_BPF();
  protos::BpfConfig config;
  config.add_events("ftrace/print");
  config.set_per_cpu_rate_limit(100);  // burst: 100 ms worth = 10 events
  config.add_tgids(getpid());
  Capture cap;
  auto source = BpfDataSource::Create(config, cap.Maker(), TestOptions());
  ASSERT_TRUE(source.ok()) << source.status().message();
  ASSERT_TRUE((*source)->Start().ok());
  WriteMarkers(1, 2000, RunToken());
  (*source)->Stop();
  BpfSourceStats c = (*source)->stats();
  EXPECT_GT(c.total.filtered_rate, 1500u);
  EXPECT_LT(c.total.delivered, 200u);
  EXPECT_EQ(c.total.produced, c.total.delivered + c.total.dropped);
}

// Without CAP_BPF/CAP_PERFMON (and CAP_SYS_ADMIN) Create() says which are
// missing, in one line. Capabilities are per thread: a thread drops them
// from its effective set and restores them after.
TEST(BpfDataSourceKernelTest, MissingCapabilitiesAreNamed) {
  SKIP_WITHOUT_BPF();
  std::string message = "<not run>";
  std::thread t([&] {
    __user_cap_header_struct header = {_LINUX_CAPABILITY_VERSION_3, 0};
    __user_cap_data_struct caps[2] = {};
    ASSERT_EQ(syscall(SYS_capget, &header, caps), 0);
    __user_cap_data_struct saved[2] = {caps[0], caps[1]};
    for (int cap : {21 /* SYS_ADMIN */, 38 /* PERFMON */, 39 /* BPF */})
      caps[cap / 32].effective &= ~(1u << (cap % 32));
    ASSERT_EQ(syscall(SYS_capset, &header, caps), 0);
    protos::BpfConfig config;
    config.add_events("sched/sched_switch");
    Capture cap;
    auto source = BpfDataSource::Create(config, cap.Maker(), TestOptions());
    message = source.ok() ? "<created>" : source.status().message();
    ASSERT_EQ(syscall(SYS_capset, &header, saved), 0);
  });
  t.join();
  EXPECT_NE(message.find("CAP_BPF and CAP_PERFMON"), std::string::npos) << message;
  EXPECT_EQ(message.find('\n'), std::string::npos) << message;
}

// BpfConfig.trace_marker_instances picks whose trace_marker is captured:
// here a private instance's, and the top-level one's not.
void CheckMarkerInstancesFromConfig() {
  const std::string name = "sluice-bpf-markers-" + std::to_string(getpid());
  const std::string inst = std::string(kTracefs) + "/instances/" + name;
  RemoveInstance remove_instance{inst};  // Declared first: removes it last.
  ASSERT_EQ(mkdir(inst.c_str(), 0755), 0) << strerror(errno);
  {
    protos::BpfConfig config;
    config.add_events("ftrace/print");
    config.add_trace_marker_instances(name);
    config.add_tgids(getpid());
    Capture cap;
    auto source = BpfDataSource::Create(config, cap.Maker(), TestOptions());
    ASSERT_TRUE(source.ok()) << source.status().message();
    ASSERT_TRUE((*source)->Start().ok());
    const std::string tag = "sluice-instance-marker-" + std::to_string(getpid());
    EXPECT_TRUE(WriteFile(inst + "/trace_marker", tag + "-instance"));
    {
      const int root = open((std::string(kTracefs) + "/trace_marker").c_str(), O_WRONLY | O_CLOEXEC);
      EXPECT_TRUE(testing::WriteTraceMarker(root, tag + "-root")) << strerror(errno);
      close(root);
    }
    (*source)->Stop();
    cap.Parse();
    int from_instance = 0, from_root = 0;
    for (const Event& e : cap.events) {
      if (!e.ev.has_print()) continue;
      if (e.ev.print().buf() == tag + "-instance\n") from_instance++;
      if (e.ev.print().buf() == tag + "-root\n") from_root++;
    }
    EXPECT_EQ(from_instance, 1);
    EXPECT_EQ(from_root, 0);

    protos::BpfConfig missing;
    missing.add_events("ftrace/print");
    missing.add_trace_marker_instances("sluice-no-such-instance-cfg");
    auto bad = BpfDataSource::Create(missing, cap.Maker(), TestOptions());
    ASSERT_FALSE(bad.ok());
    EXPECT_NE(bad.status().message().find("sluice-no-such-instance-cfg"), std::string::npos)
        << bad.status().message();
  }
}

TEST(BpfDataSourceKernelTest, MarkerInstancesFromConfig) {
  SKIP_WITHOUT_BPF();
  const std::string before = TracefsState();
  CheckMarkerInstancesFromConfig();  // its instance is gone when it returns
  EXPECT_EQ(TracefsState(), before);
}

TEST(BpfDataSourceKernelTest, StartupErrorsAreOneLine) {
  SKIP_WITHOUT_BPF();
  Capture cap;
  BpfDataSourceOptions o = TestOptions();
  o.marker_instances = {"sluice-no-such-instance"};
  auto source = BpfDataSource::Create(AllEventsConfig(), cap.Maker(), o);
  ASSERT_FALSE(source.ok());
  EXPECT_NE(source.status().message().find("sluice-no-such-instance"), std::string::npos)
      << source.status().message();
  EXPECT_EQ(source.status().message().find('\n'), std::string::npos);

  protos::BpfConfig config;
  config.add_events("sched/no_such_event");
  config.add_events("sched/sched_switch");
  std::vector<std::string> warnings;
  BpfDataSourceOptions o2 = TestOptions();
  o2.warn = [&](const std::string& w) { warnings.push_back(w); };
  auto ok = BpfDataSource::Create(config, cap.Maker(), o2);
  ASSERT_TRUE(ok.ok()) << ok.status().message();
  ASSERT_EQ(warnings.size(), 1u);
  EXPECT_NE(warnings[0].find("sched/no_such_event"), std::string::npos);
}

}  // namespace
}  // namespace sluice
