// FtraceDataSource on the real kernel (root, tracefs).
//
// Every case runs once per read path (FtraceConfig.ring_buffer_read_mode):
// MAPPED, each CPU's ring buffer read in place through its memory mapping
// (Linux 6.10+; skipped, saying so, on kernels without it), and SPLICE. Both
// must give the same answers, and the FtraceStats at start and end say which
// path each CPU used.
//
// What is checked:
//   - Lossless: 100,000 sequence-numbered trace_marker lines from two threads
//     (plus sched_switch) come out exactly once each, with the writer's tid
//     as pid, boot-clock timestamps inside the write window, timestamps
//     non-decreasing per CPU, and zero losses reported anywhere.
//   - Flush(): what was written before Flush() is in the writers when it
//     returns, including the partial last page (read(2) on the splice path,
//     the reader page the kernel still writes into on the mapped path), over
//     several rounds, each continuing the page the last one read in part;
//     nothing twice at the end.
//   - Lossy: a tiny buffer and a paused reader. The lines missing equal the
//     kernel's overrun (END minus START, all CPUs). Only ftrace/print is
//     active in that instance, so overrun counts only our lines. The page
//     flags agree: bundles after a loss carry lost_events, and the missed
//     counts stored in the pages add up to the same number; `sluice stats`
//     (TraceHealth) reports exactly the lines missing as data loss.
//   - Overruns after a partial read: a reader that has read part of a page
//     is paused while the buffer overruns; the lines read before are all
//     there once, and the lines missing after equal the overrun exactly.
//   - A full SMB: the service takes no chunks for a while (its lock held)
//     in the in-process pipeline of `sluice record`. The readers stop
//     taking pages, so the lines missing equal the kernel's overrun
//     exactly, no packet is dropped in the SMB, and the trace and `sluice
//     stats` say that the readers waited for room.
//   - The root instance once (where apps' trace_marker writes land).
//   - tracefs is left as found: tracing_on, buffer_size_kb, trace_clock,
//     set_event, instances, compared before and after every test. One kernel
//     effect cannot be undone: a never-used root buffer reads
//     "7 (expanded: 1408)" until something sizes it, and then "1408"
//     forever; the comparison treats those as equal.
//
// Other programs using the root instance at the same time (another tracer
// consuming trace_pipe_raw, or changing trace_clock) would make the root test
// fail; the instance tests are immune.
#include "user/probes/ftrace/ftrace_data_source.h"

#include <dirent.h>
#include <fcntl.h>
#include <sched.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cinttypes>
#include <condition_variable>
#include <cstdio>
#include <fstream>
#include <map>
#include <mutex>
#include <set>
#include <thread>

#include <gtest/gtest.h>

#include "perfetto/common/trace_stats.pb.h"
#include "perfetto/config/trace_config.pb.h"
#include "perfetto/trace/trace_packet.pb.h"
#include "shm/base/cpu_list.h"
#include "shm/base/varint.h"
#include "shm/trace_writer.h"
#include "tests/kernel_test_util.h"
#include "tests/service/service_test_util.h"
#include "tests/user/probes/in_process_session_test_util.h"
#include "tests/user/probes/tracefs_test_util.h"
#include "tests/user/probes/ftrace/ftrace_test_util.h"
#include "user/probes/ftrace/ftrace_format.h"
#include "user/probes/ftrace/ftrace_watermark.h"
#include "user/probes/probes_producer.h"
#include "user/probes/tracefs.h"
#include "user/trace/trace_health.h"
#include "shm/base/clock.h"
#include "shm/base/string_util.h"

namespace sluice {
namespace {

using sluice::protos::FtraceReadMode;

constexpr char kTracefs[] = "/sys/kernel/tracing";


// Markers "sluice-<pid>-<run> seq=<n>": `threads` threads, `per_thread` each;
// thread t writes seq t*per_thread ... (t+1)*per_thread-1.
struct MarkerRun {
  std::string tag;
  uint32_t threads = 2;
  uint32_t per_thread = 0;
  int pin_cpu = -1;  // >= 0: every writer thread runs on this CPU.
  std::vector<pid_t> tids;
  uint64_t start_ns = 0, end_ns = 0;
  uint32_t total() const { return threads * per_thread; }
};

void WriteMarkers(const std::string& marker_path, MarkerRun* run) {
  run->tids.assign(run->threads, 0);
  run->start_ns = BootTimeNs();
  std::vector<std::thread> threads;
  for (uint32_t t = 0; t < run->threads; t++) {
    threads.emplace_back([&, t] {
      run->tids[t] = static_cast<pid_t>(syscall(SYS_gettid));
      if (run->pin_cpu >= 0) {
        cpu_set_t one;
        CPU_ZERO(&one);
        CPU_SET(run->pin_cpu, &one);
        ASSERT_EQ(sched_setaffinity(0, sizeof(one), &one), 0) << "cpu " << run->pin_cpu;
      }
      int fd = open(marker_path.c_str(), O_WRONLY | O_CLOEXEC);
      ASSERT_GE(fd, 0) << marker_path;
      char buf[96];
      for (uint32_t i = 0; i < run->per_thread; i++) {
        int n = snprintf(buf, sizeof(buf), "%s seq=%u", run->tag.c_str(), t * run->per_thread + i);
        ASSERT_EQ(write(fd, buf, static_cast<size_t>(n)), n);
      }
      close(fd);
    });
  }
  for (auto& t : threads) t.join();
  run->end_ns = BootTimeNs();
}

struct Analysis {
  std::vector<uint32_t> seen;      // Times each seq was seen.
  uint64_t wrong_pid = 0;
  uint64_t out_of_window = 0;
  uint64_t non_monotonic = 0;
  uint64_t events = 0;
  uint64_t sched_switch = 0;
  uint64_t lost_bundles = 0;
  uint64_t bundles = 0;
  bool have_start = false, have_end = false;
  perfetto::protos::FtraceStats start, end;
  std::string trace;  // Every packet, as a trace file holds them.

  uint64_t Missing() const {
    return static_cast<uint64_t>(std::count(seen.begin(), seen.end(), 0u));
  }
  uint64_t Duplicated() const {
    uint64_t d = 0;
    for (uint32_t c : seen) d += c > 1 ? c - 1 : 0;
    return d;
  }
  uint64_t OverrunDelta() const {
    uint64_t sum = 0;
    std::map<uint64_t, uint64_t> at_start;
    for (const auto& c : start.cpu_stats()) at_start[c.cpu()] = c.overrun();
    for (const auto& c : end.cpu_stats()) sum += c.overrun() - at_start[c.cpu()];
    return sum;
  }
  uint64_t EndSum(uint64_t (perfetto::protos::FtraceCpuStats::*field)() const) const {
    uint64_t sum = 0;
    for (const auto& c : end.cpu_stats()) sum += (c.*field)();
    return sum;
  }
};

Analysis Analyze(const std::vector<std::vector<perfetto::protos::TracePacket>>& writers,
                 const MarkerRun& run) {
  Analysis a;
  a.seen.assign(run.total(), 0);
  const std::string prefix = run.tag + " seq=";
  for (const auto& packets : writers) {
    uint64_t last_ts = 0;
    for (const auto& p : packets) {
      AppendTracePacketRecord(p.SerializeAsString(), &a.trace);
      if (p.has_ftrace_stats()) {
        if (p.ftrace_stats().phase() == perfetto::protos::FtraceStats::START_OF_TRACE) {
          a.have_start = true;
          a.start = p.ftrace_stats();
        } else if (p.ftrace_stats().phase() == perfetto::protos::FtraceStats::END_OF_TRACE) {
          a.have_end = true;
          a.end = p.ftrace_stats();
        }
      }
      if (!p.has_ftrace_events()) continue;
      const auto& bundle = p.ftrace_events();
      a.bundles++;
      if (bundle.lost_events()) a.lost_bundles++;
      for (const auto& e : bundle.event()) {
        a.events++;
        if (e.timestamp() < last_ts) a.non_monotonic++;
        last_ts = e.timestamp();
        if (e.has_sched_switch()) a.sched_switch++;
        if (!e.has_print()) continue;
        const std::string& buf = e.print().buf();
        if (buf.compare(0, prefix.size(), prefix) != 0) continue;
        const uint32_t seq = static_cast<uint32_t>(std::strtoul(buf.c_str() + prefix.size(), nullptr, 10));
        if (seq >= run.total()) continue;
        a.seen[seq]++;
        if (static_cast<pid_t>(e.pid()) != run.tids[seq / run.per_thread]) a.wrong_pid++;
        if (e.timestamp() < run.start_ns || e.timestamp() > run.end_ns) a.out_of_window++;
      }
    }
  }
  return a;
}

std::string UniqueName(const char* what) {
  return std::string("sluice_test_") + what + "_" + std::to_string(getpid());
}

// Root and tracefs, and tracefs left as found.
class FtraceKernelTestBase : public ::testing::Test {
 protected:
  void SetUp() override {
    if (geteuid() != 0) SLUICE_KERNEL_SKIP("needs root to control tracefs");
    if (access((std::string(kTracefs) + "/tracing_on").c_str(), F_OK) != 0) {
      SLUICE_KERNEL_SKIP("no tracefs at /sys/kernel/tracing");
    }
    before_ = testing::ReadTracefsState();
  }
  void TearDown() override {
    if (IsSkipped()) return;
    // Left as found.
    testing::TracefsState after = testing::ReadTracefsState();
    EXPECT_EQ(after, before_) << "before: " << before_.ToString() << "\nafter:  " << after.ToString();
  }
  FtraceDataSourceOptions Options() {
    FtraceDataSourceOptions o;
    o.control.print_warnings = false;
    return o;
  }
  testing::TracefsState before_;
};

// Each case once per read path.
class FtraceDataSourceKernelTest : public FtraceKernelTestBase,
                                   public ::testing::WithParamInterface<FtraceReadMode> {
 protected:
  void SetUp() override {
    FtraceKernelTestBase::SetUp();
    if (IsSkipped() || HasFatalFailure()) return;
    if (GetParam() == sluice::protos::FTRACE_READ_MODE_MAPPED && !testing::KernelMapsRingBuffers())
      SLUICE_KERNEL_SKIP("this kernel does not map ring buffers (Linux 6.10+): no mapped read path");
  }
  // A config that reads the way this run of the case does.
  perfetto::protos::FtraceConfig Config() {
    perfetto::protos::FtraceConfig config;
    config.set_ring_buffer_read_mode(GetParam());
    return config;
  }
  // Every online CPU says, at start and end, that it was read this run's
  // way, and `sluice stats` says so.
  void ExpectReadPaths(const Analysis& a) {
    auto online = ReadCpuList(kOnlineCpusPath);
    ASSERT_TRUE(online.ok()) << online.status().message();
    const int want = GetParam() == sluice::protos::FTRACE_READ_MODE_MAPPED ? sluice::protos::FTRACE_READ_PATH_MAPPED
                                                                           : sluice::protos::FTRACE_READ_PATH_SPLICE;
    for (const auto* stats : {&a.start, &a.end}) {
      ASSERT_GE(stats->cpu_stats_size(), 1);
      for (const auto& c : stats->cpu_stats()) {
        if (std::find(online->begin(), online->end(), c.cpu()) == online->end()) continue;
        EXPECT_EQ(c.sluice_read_path(), want) << "cpu " << c.cpu();
      }
    }
    auto health = AnalyzeTraceBytes(a.trace);
    ASSERT_TRUE(health.ok()) << health.status().message();
    EXPECT_NE(FormatFtraceReadPaths(*health).find(want == sluice::protos::FTRACE_READ_PATH_MAPPED ? "mapped on CPU"
                                                                                                  : "splice on CPU"),
              std::string::npos)
        << FormatFtraceReadPaths(*health);
  }
  // `sluice stats` on the trace reports `lost` events lost, all of them as
  // the kernel's overrun.
  void ExpectReportedLoss(const Analysis& a, uint64_t lost) {
    auto health = AnalyzeTraceBytes(a.trace);
    ASSERT_TRUE(health.ok()) << health.status().message();
    uint64_t overrun = 0;
    for (const HealthRow& r : health->rows)
      if (r.name == "ftrace_cpu_overrun_delta") overrun += static_cast<uint64_t>(r.value);
    EXPECT_EQ(overrun, lost) << FormatHealthTable(*health);
    EXPECT_EQ(health->data_loss_total(), lost) << FormatHealthTable(*health);
  }
};

std::string ReadModeName(const ::testing::TestParamInfo<FtraceReadMode>& info) {
  return info.param == sluice::protos::FTRACE_READ_MODE_MAPPED ? "Mapped" : "Splice";
}

INSTANTIATE_TEST_SUITE_P(ReadPaths, FtraceDataSourceKernelTest,
                         ::testing::Values(sluice::protos::FTRACE_READ_MODE_MAPPED,
                                           sluice::protos::FTRACE_READ_MODE_SPLICE),
                         ReadModeName);

TEST_P(FtraceDataSourceKernelTest, HundredThousandMarkersNoLoss) {
  perfetto::protos::FtraceConfig config = Config();
  config.add_ftrace_events("sched/sched_switch");
  config.add_ftrace_events("ftrace/print");
  // sched_switch as events (counted below), not compact_sched's columns.
  config.mutable_compact_sched()->set_enabled(false);
  // Big enough to hold the whole run even if the readers never got a CPU
  // while the two writers hog both cores: ~5 MB of print records.
  config.set_buffer_size_kb(16384);
  config.set_drain_period_ms(50);
  config.set_instance_name(UniqueName("lossless"));
  testing::WriterCollector collector;
  auto ds = FtraceDataSource::Create(config, collector.Factory(), Options());
  ASSERT_TRUE(ds.ok()) << ds.status().message();
  ASSERT_TRUE((*ds)->Start().ok());
  EXPECT_EQ((*ds)->settings()->trace_clock(), "boot");

  MarkerRun run;
  run.tag = "sluice-" + std::to_string(getpid()) + "-lossless";
  run.per_thread = 50000;
  const auto t0 = std::chrono::steady_clock::now();
  WriteMarkers((*ds)->tracefs().Path("trace_marker"), &run);
  const auto t1 = std::chrono::steady_clock::now();
  (*ds)->Stop();
  const auto t2 = std::chrono::steady_clock::now();
  const FtraceSourceStats counters = (*ds)->stats();
  Analysis a = Analyze(collector.PacketsByWriter(), run);

  const double write_s = std::chrono::duration<double>(t1 - t0).count();
  const double total_s = std::chrono::duration<double>(t2 - t0).count();
  std::printf("[   INFO   ] %u markers written in %.3f s (%.0f/s); recorded %" PRIu64
              " events (%" PRIu64 " sched_switch) in %" PRIu64 " pages, %" PRIu64
              " bundles; write+stop %.3f s => %.0f events/s through the reader\n",
              run.total(), write_s, run.total() / write_s, a.events, a.sched_switch, counters.pages,
              a.bundles, total_s, a.events / total_s);

  EXPECT_EQ(a.Missing(), 0u);
  EXPECT_EQ(a.Duplicated(), 0u);
  EXPECT_EQ(a.wrong_pid, 0u);
  EXPECT_EQ(a.out_of_window, 0u) << "timestamps are not CLOCK_BOOTTIME?";
  EXPECT_EQ(a.non_monotonic, 0u);
  EXPECT_GT(a.sched_switch, 0u);
  ASSERT_TRUE(a.have_start);
  ASSERT_TRUE(a.have_end);
  EXPECT_EQ(a.start.cpu_stats_size(), a.end.cpu_stats_size());
  EXPECT_GE(a.end.cpu_stats_size(), 1);
  EXPECT_EQ(a.OverrunDelta(), 0u);
  EXPECT_EQ(a.EndSum(&perfetto::protos::FtraceCpuStats::commit_overrun), 0u);
  EXPECT_EQ(a.EndSum(&perfetto::protos::FtraceCpuStats::dropped_events), 0u);
  EXPECT_EQ(a.EndSum(&perfetto::protos::FtraceCpuStats::entries), 0u) << "events left unread";
  EXPECT_EQ(a.lost_bundles, 0u);
  EXPECT_EQ(counters.lost_events_known, 0u);
  EXPECT_EQ(counters.parse_errors, 0u);
  EXPECT_EQ(counters.read_errors, 0u);
  EXPECT_EQ(counters.events, a.events);
  EXPECT_TRUE(a.end.unknown_ftrace_events().empty());
  EXPECT_TRUE(a.end.failed_ftrace_events().empty());
  EXPECT_TRUE((*ds)->warnings().empty()) << (*ds)->warnings()[0];
  ExpectReadPaths(a);
  ds->reset();
}

// The reader alone: the kernel buffer holds 100,000 markers written while
// reading was paused; Stop() then reads, parses and encodes all of them.
TEST_P(FtraceDataSourceKernelTest, DrainThroughputFromFullBuffer) {
  perfetto::protos::FtraceConfig config = Config();
  config.add_ftrace_events("ftrace/print");
  config.set_buffer_size_kb(16384);
  config.set_instance_name(UniqueName("throughput"));
  testing::WriterCollector collector;
  FtraceDataSourceOptions options = Options();
  options.start_reading_paused = true;
  auto ds = FtraceDataSource::Create(config, collector.Factory(), options);
  ASSERT_TRUE(ds.ok()) << ds.status().message();
  ASSERT_TRUE((*ds)->Start().ok());
  MarkerRun run;
  run.tag = "sluice-" + std::to_string(getpid()) + "-throughput";
  run.per_thread = 50000;
  WriteMarkers((*ds)->tracefs().Path("trace_marker"), &run);
  const auto t0 = std::chrono::steady_clock::now();
  (*ds)->Stop();
  const double stop_s =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  const FtraceSourceStats counters = (*ds)->stats();
  Analysis a = Analyze(collector.PacketsByWriter(), run);
  std::printf("[   INFO   ] drained %" PRIu64 " events, %" PRIu64 " pages (%.1f MiB) in %.3f s: "
              "%.0f events/s, %.0f MiB/s\n",
              counters.events, counters.pages, counters.bytes / 1048576.0, stop_s,
              counters.events / stop_s, counters.bytes / 1048576.0 / stop_s);
  EXPECT_EQ(a.Missing(), 0u);
  EXPECT_EQ(a.Duplicated(), 0u);
  EXPECT_EQ(a.OverrunDelta(), 0u);
  ds->reset();
}

// Rounds far smaller than a page, each flushed: every flush must return the
// partial page (read(2) on the splice path; on the mapped path the reader
// page the kernel keeps writing into, which the next round's flush
// continues), and at the end nothing is there twice.
TEST_P(FtraceDataSourceKernelTest, FlushReturnsPartialPages) {
  perfetto::protos::FtraceConfig config = Config();
  config.add_ftrace_events("ftrace/print");
  config.set_buffer_size_kb(1024);
  config.set_drain_period_ms(60 * 1000);  // Only Flush() and Stop() drain.
  config.set_instance_name(UniqueName("flush"));
  testing::WriterCollector collector;
  auto ds = FtraceDataSource::Create(config, collector.Factory(), Options());
  ASSERT_TRUE(ds.ok()) << ds.status().message();
  ASSERT_TRUE((*ds)->Start().ok());

  std::vector<MarkerRun> runs;
  for (uint32_t markers : {10u, 1u, 40u, 3u, 120u}) {
    MarkerRun& run = runs.emplace_back();
    run.tag = "sluice-" + std::to_string(getpid()) + "-flush" + std::to_string(runs.size());
    run.threads = 1;
    run.per_thread = markers;
    WriteMarkers((*ds)->tracefs().Path("trace_marker"), &run);
    (*ds)->Flush();
    Analysis a = Analyze(collector.PacketsByWriter(), run);
    EXPECT_EQ(a.Missing(), 0u) << "Flush() did not return the partial page, round " << runs.size();
    EXPECT_EQ(a.Duplicated(), 0u) << "round " << runs.size();
  }

  (*ds)->Stop();
  for (const MarkerRun& run : runs) {
    Analysis a = Analyze(collector.PacketsByWriter(), run);
    EXPECT_EQ(a.Missing(), 0u) << run.tag;
    EXPECT_EQ(a.Duplicated(), 0u) << run.tag;
    EXPECT_EQ(a.non_monotonic, 0u) << run.tag;
    if (&run == &runs.back()) ExpectReadPaths(a);
  }
  ds->reset();
}

// Left unset, there is no drain deadline where the kernel wakes readers at
// the watermark (every kernel CI boots has buffer_percent): a reader at rest
// sleeps until its watermark, and what a quiet buffer holds reaches the
// trace at the next flush, all of it. A configured period is kept as given,
// and it reads a buffer that never reaches the watermark without a flush
// (the splice path reads whole pages then, the mapped one the partial page
// too).
TEST_P(FtraceDataSourceKernelTest, NoDrainDeadlineByDefaultAndAConfiguredOneReadsAQuietBuffer) {
  perfetto::protos::FtraceConfig config = Config();
  config.add_ftrace_events("ftrace/print");
  config.set_buffer_size_kb(1024);
  config.set_instance_name(UniqueName("deadline"));
  testing::WriterCollector collector;
  auto ds = FtraceDataSource::Create(config, collector.Factory(), Options());
  ASSERT_TRUE(ds.ok()) << ds.status().message();
  ASSERT_TRUE((*ds)->Start().ok());
  ASSERT_TRUE(testing::ReadFileOr((*ds)->tracefs().Path("buffer_percent")) != "")
      << "this kernel has no buffer_percent (Linux 5.1+)";
  EXPECT_EQ((*ds)->drain_period_ms(), 0u);
  MarkerRun run;
  run.tag = "sluice-" + std::to_string(getpid()) + "-quiet";
  run.threads = 1;
  run.per_thread = 300;  // A few pages: far below the watermark (half the buffer).
  WriteMarkers((*ds)->tracefs().Path("trace_marker"), &run);
  (*ds)->Flush();
  EXPECT_GE((*ds)->stats().events, 300u) << "a flush did not read the quiet buffer";
  (*ds)->Stop();
  Analysis a = Analyze(collector.PacketsByWriter(), run);
  EXPECT_EQ(a.Missing(), 0u);
  EXPECT_EQ(a.Duplicated(), 0u);
  ds->reset();

  config.set_drain_period_ms(250);
  config.set_instance_name(UniqueName("deadline250"));
  testing::WriterCollector collector250;
  auto ds250 = FtraceDataSource::Create(config, collector250.Factory(), Options());
  ASSERT_TRUE(ds250.ok()) << ds250.status().message();
  ASSERT_TRUE((*ds250)->Start().ok());
  EXPECT_EQ((*ds250)->drain_period_ms(), 250u);
  MarkerRun run250;
  run250.tag = "sluice-" + std::to_string(getpid()) + "-deadline";
  run250.threads = 1;
  run250.per_thread = 300;
  WriteMarkers((*ds250)->tracefs().Path("trace_marker"), &run250);
  // No flush: only the deadline reads them.
  const auto deadline =
      std::chrono::steady_clock::now() + std::chrono::milliseconds(testing::ScaledTimeoutMs(30000));
  while ((*ds250)->stats().events == 0 && std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  EXPECT_GT((*ds250)->stats().events, 0u) << "the drain deadline did not read the quiet buffer";
  (*ds250)->Stop();
  Analysis a250 = Analyze(collector250.PacketsByWriter(), run250);
  EXPECT_EQ(a250.Missing(), 0u);
  EXPECT_EQ(a250.Duplicated(), 0u);
  ds250->reset();
}

TEST_P(FtraceDataSourceKernelTest, TinyBufferLossesEqualKernelOverrun) {
  perfetto::protos::FtraceConfig config = Config();
  // Only print in this instance: overrun then counts nothing but our lines.
  config.add_ftrace_events("ftrace/print");
  config.set_buffer_size_kb(32);  // 8 pages per CPU.
  config.set_instance_name(UniqueName("lossy"));
  testing::WriterCollector collector;
  FtraceDataSourceOptions options = Options();
  options.start_reading_paused = true;
  auto ds = FtraceDataSource::Create(config, collector.Factory(), options);
  ASSERT_TRUE(ds.ok()) << ds.status().message();
  ASSERT_TRUE((*ds)->Start().ok());

  MarkerRun run;
  run.tag = "sluice-" + std::to_string(getpid()) + "-lossy";
  run.per_thread = 10000;
  WriteMarkers((*ds)->tracefs().Path("trace_marker"), &run);
  (*ds)->SetReadingPausedForTesting(false);
  (*ds)->Stop();
  const FtraceSourceStats counters = (*ds)->stats();
  Analysis a = Analyze(collector.PacketsByWriter(), run);
  ASSERT_TRUE(a.have_start && a.have_end);

  const uint64_t received = run.total() - a.Missing();
  std::printf("[   INFO   ] %u written, %" PRIu64 " received, %" PRIu64
              " missing; kernel overrun delta %" PRIu64 "; page-stored lost counts %" PRIu64
              " in %" PRIu64 " flagged pages\n",
              run.total(), received, a.Missing(), a.OverrunDelta(), counters.lost_events_known,
              counters.lost_event_pages);
  EXPECT_GT(a.Missing(), 0u) << "the buffer was meant to overflow";
  EXPECT_EQ(a.Duplicated(), 0u);
  EXPECT_EQ(a.Missing(), a.OverrunDelta());
  EXPECT_EQ(a.EndSum(&perfetto::protos::FtraceCpuStats::commit_overrun), 0u);
  EXPECT_EQ(a.EndSum(&perfetto::protos::FtraceCpuStats::dropped_events), 0u);
  // Each CPU whose buffer overran flags its first page after the loss.
  EXPECT_GE(a.lost_bundles, 1u);
  // The exact figure is the overrun delta (above). Whether a page also stores
  // the count of events missed before it (RB_MISSED_STORED) depends on the
  // kernel and on room left in the page: 6.18 stores it, Debian's 6.1 and
  // 6.12 in QEMU did not (vm-tests). When stored, it must agree.
  // A page too full for the count is flagged without it: then the stored
  // counts are a lower bound.
  std::printf("[   INFO   ] %" PRIu64 " flagged pages without a stored count\n",
              counters.lost_event_pages_uncounted);
  if (counters.lost_event_pages_uncounted == 0 && counters.lost_events_known != 0) {
    EXPECT_EQ(counters.lost_events_known, a.Missing());
  } else {
    EXPECT_LE(counters.lost_events_known, a.Missing());
  }
  ExpectReportedLoss(a, a.Missing());
  ExpectReadPaths(a);
  ds->reset();
}

// The reader has read part of a page (a flush), then is paused while the
// buffer overruns several times over: the lines read before the pause are
// there once each, the lines missing after equal the kernel's overrun
// exactly, and the loss `sluice stats` reports is that number. On the
// mapped path the reader page it read in part stays its own (outside the
// ring) while the ring overruns, and is continued, not read again.
TEST_P(FtraceDataSourceKernelTest, OverrunsAfterAPartialReadAreCountedExactly) {
  perfetto::protos::FtraceConfig config = Config();
  config.add_ftrace_events("ftrace/print");
  config.set_buffer_size_kb(32);  // 8 pages per CPU.
  config.set_drain_period_ms(60 * 1000);  // Only Flush() and Stop() drain.
  config.set_instance_name(UniqueName("overrun"));
  testing::WriterCollector collector;
  auto ds = FtraceDataSource::Create(config, collector.Factory(), Options());
  ASSERT_TRUE(ds.ok()) << ds.status().message();
  ASSERT_TRUE((*ds)->Start().ok());

  MarkerRun before;
  before.tag = "sluice-" + std::to_string(getpid()) + "-before";
  before.threads = 1;
  before.per_thread = 25;  // Part of one page.
  WriteMarkers((*ds)->tracefs().Path("trace_marker"), &before);
  (*ds)->Flush();
  ASSERT_EQ(Analyze(collector.PacketsByWriter(), before).Missing(), 0u);

  (*ds)->SetReadingPausedForTesting(true);
  MarkerRun lossy;
  lossy.tag = "sluice-" + std::to_string(getpid()) + "-overrun";
  lossy.per_thread = 10000;  // ~1 MB of records into 32 KiB per CPU.
  WriteMarkers((*ds)->tracefs().Path("trace_marker"), &lossy);
  (*ds)->SetReadingPausedForTesting(false);
  (*ds)->Stop();

  Analysis a = Analyze(collector.PacketsByWriter(), before);
  EXPECT_EQ(a.Missing(), 0u);
  EXPECT_EQ(a.Duplicated(), 0u);
  Analysis b = Analyze(collector.PacketsByWriter(), lossy);
  ASSERT_TRUE(b.have_start && b.have_end);
  std::printf("[   INFO   ] %u written while paused, %" PRIu64 " missing; kernel overrun delta %" PRIu64 "\n",
              lossy.total(), b.Missing(), b.OverrunDelta());
  EXPECT_GT(b.Missing(), 0u) << "the buffer was meant to overflow";
  EXPECT_EQ(b.Duplicated(), 0u);
  EXPECT_EQ(b.non_monotonic, 0u);
  EXPECT_EQ(b.Missing(), b.OverrunDelta());
  EXPECT_GE(b.lost_bundles, 1u);
  ExpectReportedLoss(b, b.Missing());
  ExpectReadPaths(b);
  ds->reset();
}

// The service stops taking chunks (a lock holder asleep, as one slept 9 s
// in docs/PERFORMANCE.md, "The service lock"), so the probes' SMB fills.
// The readers then stop taking pages and leave the loss to the kernel,
// which counts it per CPU in events: the markers missing equal the overrun
// exactly, no packet is dropped in the SMB, the trace says the readers
// waited for room, and `sluice stats` names the cause. The real pipeline of
// an in-process `sluice record`: TracingService, ProbesProducer, SMB.
TEST_P(FtraceDataSourceKernelTest, AFullSmbLeavesTheLossToTheKernelCountedExactly) {
  ProbesProducerOptions probe_options;
  probe_options.ftrace = Options();
  // 2 MiB: far less than the run, and more than the headroom two readers'
  // batches need.
  testing::InProcessSession session(/*smb_kb=*/2048, probe_options);
  perfetto::protos::TraceConfig trace_config;
  trace_config.add_buffers()->set_size_kb(64 * 1024);  // Holds the whole run.
  auto* ds_config = trace_config.add_data_sources()->mutable_config();
  ds_config->set_name("linux.ftrace");
  perfetto::protos::FtraceConfig& config = *ds_config->mutable_ftrace_config();
  config = Config();
  config.add_ftrace_events("ftrace/print");  // Alone: overrun counts only our lines.
  // More than the SMB holds encoded, so that the SMB fills even if the
  // readers got no CPU until the markers were written.
  config.set_buffer_size_kb(4096);
  config.set_instance_name(UniqueName("smbfull"));
  ASSERT_TRUE(session.Start(trace_config).ok());

  MarkerRun run;
  run.tag = "sluice-" + std::to_string(getpid()) + "-smbfull";
  // ~9.6 MB of print records per thread: whichever CPUs the threads ran on,
  // one took more than its 4 MiB buffer and its share of the SMB.
  run.per_thread = 150000;
  bool readers_waited = false;
  session.service()->RunWithServiceLockForTesting([&] {
    WriteMarkers(std::string(kTracefs) + "/instances/" + config.instance_name() + "/trace_marker", &run);
    // The readers stop before the SMB is full; wait for it (a condition):
    // the kernel buffers alone hold more than the SMB.
    readers_waited = testing::WaitUntil([&] { return session.probes()->stats().ftrace_smb_full_waits > 0; },
                                        static_cast<int>(testing::ScaledTimeoutMs(60000)));
  });
  const ProbesStats held = session.probes()->stats();
  ASSERT_TRUE(readers_waited) << "no reader waited for room in the SMB; " << held.ftrace_events << " events";
  auto packets = session.StopAndRead();
  ASSERT_TRUE(packets.ok()) << packets.status().message();
  std::map<uint32_t, std::vector<perfetto::protos::TracePacket>> by_sequence;
  uint64_t packets_lost = 0;
  for (perfetto::protos::TracePacket& p : *packets) {
    for (const auto& b : p.trace_stats().buffer_stats()) packets_lost += b.trace_writer_packet_loss();
    const uint32_t seq = p.trusted_packet_sequence_id();
    by_sequence[seq].push_back(std::move(p));
  }
  std::vector<std::vector<perfetto::protos::TracePacket>> writers;
  for (auto& [seq, sequence] : by_sequence) writers.push_back(std::move(sequence));
  Analysis a = Analyze(writers, run);
  ASSERT_TRUE(a.have_start && a.have_end);
  uint64_t waits = 0, wait_ms = 0;
  for (const auto& c : a.end.cpu_stats()) {
    waits += c.sluice_smb_full_waits();
    wait_ms += c.sluice_smb_full_wait_ms();
  }
  std::printf("[   INFO   ] %u written, %" PRIu64 " missing; kernel overrun delta %" PRIu64
              "; readers waited for room %" PRIu64 " times, %" PRIu64 " ms; SMB packets lost %" PRIu64 "\n",
              run.total(), a.Missing(), a.OverrunDelta(), waits, wait_ms, packets_lost);
  EXPECT_GT(a.Missing(), 0u) << "the kernel buffers were meant to overrun while the service stood still";
  EXPECT_EQ(a.Duplicated(), 0u);
  EXPECT_EQ(a.Missing(), a.OverrunDelta()) << "a loss the kernel did not count: dropped in the SMB?";
  EXPECT_EQ(packets_lost, 0u);
  EXPECT_GE(waits, 1u);
  ExpectReportedLoss(a, a.Missing());
  auto health = AnalyzeTraceBytes(a.trace);
  ASSERT_TRUE(health.ok()) << health.status().message();
  const std::string table = FormatHealthTable(*health);
  EXPECT_NE(table.find("ftrace_reader_smb_full_waits"), std::string::npos) << table;
  // The overrun of a CPU whose reader waited is put down to the full SMB.
  // (A reader starved through the whole stall can overrun without waiting.)
  std::map<uint64_t, uint64_t> overrun_at_start;
  for (const auto& c : a.start.cpu_stats()) overrun_at_start[c.cpu()] = c.overrun();
  bool waited_and_overran = false;
  for (const auto& c : a.end.cpu_stats())
    waited_and_overran |= c.sluice_smb_full_waits() > 0 && c.overrun() > overrun_at_start[c.cpu()];
  if (waited_and_overran) {
    EXPECT_NE(table.find("waited for room in the producer's shared memory"), std::string::npos) << table;
  }
  ExpectReadPaths(a);
}

// A buffer that fills faster than kFastFillMs gets the lower watermark
// (kFastFillBufferPercent) while the trace runs, the config having left it
// to sluice; what is lost meanwhile is still counted exactly.
TEST_P(FtraceDataSourceKernelTest, AFastFillingBufferGetsTheLowerWatermark) {
  perfetto::protos::FtraceConfig config = Config();
  config.add_ftrace_events("ftrace/print");
  config.set_buffer_size_kb(64);  // Fills in milliseconds at a writer's full speed.
  config.set_instance_name(UniqueName("fastfill"));
  testing::WriterCollector collector;
  // The look at the fill rate each second, not each 30 s: both ways of
  // lowering it get their chance many times before the limit (a CI run,
  // 2026-12-03, wrote for 60 s and neither had lowered it).
  FtraceDataSourceOptions options = Options();
  options.housekeeping_period = std::chrono::seconds(1);
  auto ds = FtraceDataSource::Create(config, collector.Factory(), options);
  ASSERT_TRUE(ds.ok()) << ds.status().message();
  ASSERT_TRUE((*ds)->Start().ok());
  const std::string percent_path = (*ds)->tracefs().Path("buffer_percent");
  const std::string lowered = std::to_string(kFastFillBufferPercent);
  ASSERT_NE(TrimWhitespace(testing::ReadFileOr(percent_path)), lowered) << "a new instance starts at the kernel's";
  // Write until the drain thread has lowered it (a reader's near miss, or its
  // housekeeping look; a condition: the limit is only reached when something
  // is broken).
  const auto write_start = std::chrono::steady_clock::now();
  MarkerRun run;
  run.tag = "sluice-" + std::to_string(getpid()) + "-fastfill";
  run.threads = 1;
  run.start_ns = BootTimeNs();
  const int fd = open((*ds)->tracefs().Path("trace_marker").c_str(), O_WRONLY | O_CLOEXEC);
  ASSERT_GE(fd, 0);
  const auto deadline =
      std::chrono::steady_clock::now() + std::chrono::milliseconds(testing::ScaledTimeoutMs(60000));
  while (TrimWhitespace(testing::ReadFileOr(percent_path)) != lowered &&
         std::chrono::steady_clock::now() < deadline) {
    char buf[96];
    for (int i = 0; i < 10000; i++, run.per_thread++) {
      const int n = snprintf(buf, sizeof(buf), "%s seq=%u", run.tag.c_str(), run.per_thread);
      ASSERT_EQ(write(fd, buf, static_cast<size_t>(n)), n);
    }
  }
  close(fd);
  run.end_ns = BootTimeNs();
  run.tids = {static_cast<pid_t>(syscall(SYS_gettid))};
  const auto write_ms =
      std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - write_start).count();
  const bool was_lowered = TrimWhitespace(testing::ReadFileOr(percent_path)) == lowered;
  (*ds)->Stop();
  const FtraceSourceStats counters = (*ds)->stats();
  Analysis a = Analyze(collector.PacketsByWriter(), run);
  ASSERT_TRUE(a.have_start && a.have_end);
  std::printf("[   INFO   ] %u markers; %" PRIu64 " missing, kernel overrun delta %" PRIu64 "\n", run.total(),
              a.Missing(), a.OverrunDelta());
  // What the readers saw, to tell a slow writer from a reader that kept up
  // or one that stopped reading.
  std::string readers;
  for (const auto& c : a.end.cpu_stats())
    readers += " cpu" + std::to_string(c.cpu()) + ": overrun " + std::to_string(c.overrun()) + ", most pages per wake " +
               std::to_string(c.sluice_most_pages_per_wake()) + ", waits for SMB room " +
               std::to_string(c.sluice_smb_full_waits()) + " (" + std::to_string(c.sluice_smb_full_wait_ms()) + " ms);";
  EXPECT_TRUE(was_lowered) << "the watermark was not lowered: " << run.total() << " markers in " << write_ms
                           << " ms; read " << counters.bytes << " bytes in " << counters.pages << " pages of "
                           << a.end.cpu_buffer_size_pages() << "-page buffers;" << readers;
  EXPECT_EQ(a.Duplicated(), 0u);
  EXPECT_EQ(a.Missing(), a.OverrunDelta());
  ExpectReadPaths(a);
  ds->reset();
}

// A reader's near miss lowers the watermark at once, not at the drain
// thread's next look at the fill rate (an hour away here): the readers are
// paused while a writer pinned to one CPU overfills that CPU's buffer, so
// the first wake-up after takes all of it. The overwritten events are
// counted exactly.
TEST_P(FtraceDataSourceKernelTest, ANearMissLowersTheWatermarkAtOnce) {
  perfetto::protos::FtraceConfig config = Config();
  config.add_ftrace_events("ftrace/print");
  config.set_buffer_size_kb(64);
  config.set_instance_name(UniqueName("nearmiss"));
  testing::WriterCollector collector;
  FtraceDataSourceOptions options = Options();
  options.start_reading_paused = true;
  options.housekeeping_period = std::chrono::hours(1);
  auto ds = FtraceDataSource::Create(config, collector.Factory(), options);
  ASSERT_TRUE(ds.ok()) << ds.status().message();
  ASSERT_TRUE((*ds)->Start().ok());
  const std::string percent_path = (*ds)->tracefs().Path("buffer_percent");
  const std::string lowered = std::to_string(kFastFillBufferPercent);
  ASSERT_NE(TrimWhitespace(testing::ReadFileOr(percent_path)), lowered) << "a new instance starts at the kernel's";
  MarkerRun run;
  run.tag = "sluice-" + std::to_string(getpid()) + "-nearmiss";
  run.threads = 1;
  run.per_thread = 4000;  // About three times what 64 KiB holds.
  cpu_set_t allowed;
  CPU_ZERO(&allowed);
  ASSERT_EQ(sched_getaffinity(0, sizeof(allowed), &allowed), 0);
  for (int cpu = 0; cpu < CPU_SETSIZE && run.pin_cpu < 0; cpu++)
    if (CPU_ISSET(cpu, &allowed)) run.pin_cpu = cpu;
  WriteMarkers((*ds)->tracefs().Path("trace_marker"), &run);
  (*ds)->SetReadingPausedForTesting(false);
  const auto deadline =
      std::chrono::steady_clock::now() + std::chrono::milliseconds(testing::ScaledTimeoutMs(60000));
  while (TrimWhitespace(testing::ReadFileOr(percent_path)) != lowered &&
         std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  EXPECT_EQ(TrimWhitespace(testing::ReadFileOr(percent_path)), lowered) << "the watermark was not lowered";
  (*ds)->Stop();
  Analysis a = Analyze(collector.PacketsByWriter(), run);
  ASSERT_TRUE(a.have_start && a.have_end);
  std::printf("[   INFO   ] %u markers on cpu %d; %" PRIu64 " missing, kernel overrun delta %" PRIu64 "\n",
              run.total(), run.pin_cpu, a.Missing(), a.OverrunDelta());
  EXPECT_GT(a.OverrunDelta(), 0u) << "the buffer did not overfill";
  // The trace says so: the watermark at the end is the lowered one.
  EXPECT_NE(a.start.sluice_buffer_percent(), kFastFillBufferPercent);
  EXPECT_EQ(a.end.sluice_buffer_percent(), kFastFillBufferPercent);
  EXPECT_EQ(a.Duplicated(), 0u);
  EXPECT_EQ(a.Missing(), a.OverrunDelta());
  ExpectReadPaths(a);
  ds->reset();
}

TEST_P(FtraceDataSourceKernelTest, RootInstance) {
  perfetto::protos::FtraceConfig config = Config();
  config.add_ftrace_events("print");  // Name alone; resolves to ftrace/print.
  config.add_ftrace_events("no_such_group/no_such_event");
  config.set_buffer_size_kb(4096);
  // A watermark other than the root's (put back at the end: the fixture
  // compares tracefs before and after).
  const std::string percent_before =
      std::string(TrimWhitespace(testing::ReadFileOr(std::string(kTracefs) + "/buffer_percent")));
  const uint32_t percent = percent_before == "30" ? 40 : 30;
  config.set_drain_buffer_percent(percent);
  testing::WriterCollector collector;
  auto ds = FtraceDataSource::Create(config, collector.Factory(), Options());
  ASSERT_TRUE(ds.ok()) << ds.status().message();
  ASSERT_TRUE((*ds)->tracefs().is_root_instance());
  ASSERT_TRUE((*ds)->Start().ok());
  EXPECT_EQ(TrimWhitespace(testing::ReadFileOr(std::string(kTracefs) + "/buffer_percent")),
            std::to_string(percent));

  MarkerRun run;
  run.tag = "sluice-" + std::to_string(getpid()) + "-root";
  run.per_thread = 2500;
  WriteMarkers(std::string(kTracefs) + "/trace_marker", &run);
  (*ds)->Stop();
  Analysis a = Analyze(collector.PacketsByWriter(), run);
  EXPECT_EQ(a.Missing(), 0u) << "is another tracer consuming the root instance's buffer?";
  EXPECT_EQ(a.Duplicated(), 0u);
  EXPECT_EQ(a.wrong_pid, 0u);
  EXPECT_EQ(a.OverrunDelta(), 0u);
  ASSERT_TRUE(a.have_end);
  ASSERT_EQ(a.end.unknown_ftrace_events_size(), 1);
  EXPECT_EQ(a.end.unknown_ftrace_events(0), "no_such_group/no_such_event");
  // The config's watermark, in the trace at both ends.
  EXPECT_EQ(a.start.sluice_buffer_percent(), percent);
  EXPECT_EQ(a.end.sluice_buffer_percent(), percent);
  ExpectReadPaths(a);
  ds->reset();
}

TEST_P(FtraceDataSourceKernelTest, EventsEnabledBySomeoneElseStayEnabled) {
  const std::string instance = UniqueName("shared");
  const std::string dir = std::string(kTracefs) + "/instances/" + instance;
  ASSERT_EQ(mkdir(dir.c_str(), 0755), 0);
  ASSERT_TRUE(Tracefs::WritePath(dir + "/events/sched/sched_wakeup/enable", "1").ok());
  const std::string clock_before = testing::ReadFileOr(dir + "/trace_clock");
  const std::string size_before = testing::ReadFileOr(dir + "/buffer_size_kb");
  {
    perfetto::protos::FtraceConfig config = Config();
    config.add_ftrace_events("sched/sched_wakeup");
    config.add_ftrace_events("sched/sched_switch");
    config.set_buffer_size_kb(512);
    config.set_instance_name(instance);
    testing::WriterCollector collector;
    auto ds = FtraceDataSource::Create(config, collector.Factory(), Options());
    ASSERT_TRUE(ds.ok()) << ds.status().message();
    ASSERT_TRUE((*ds)->Start().ok());
    EXPECT_EQ((*ds)->settings()->enabled_by_us(), (std::vector<std::string>{"sched/sched_switch"}));
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    (*ds)->Stop();
  }
  // The instance existed before: still there, with its settings.
  EXPECT_EQ(testing::ReadFileOr(dir + "/events/sched/sched_wakeup/enable"), "1\n");
  EXPECT_EQ(testing::ReadFileOr(dir + "/events/sched/sched_switch/enable"), "0\n");
  EXPECT_EQ(testing::ReadFileOr(dir + "/trace_clock"), clock_before);
  EXPECT_EQ(testing::ReadFileOr(dir + "/buffer_size_kb"), size_before);
  ASSERT_TRUE(Tracefs::WritePath(dir + "/events/sched/sched_wakeup/enable", "0").ok());
  ASSERT_EQ(rmdir(dir.c_str()), 0);
}

// Another tool left raw_syscalls enabled where sluice reads (traced_probes
// killed mid-session leaves its events on in the top-level buffer): every
// read the reader makes is then traced into the buffer it reads, ahead of
// the read. The reader still catches up: Flush() and Stop() return and the
// markers come out at most once each, any missing counted in the overrun. (The mapped reader used to ask the kernel for
// its page again and again, finding its own sys_enter each time: a stop
// that never finished.) A watchdog turns the events off if Stop() hangs, so
// that the failure is reported instead of the run hanging.
TEST_P(FtraceDataSourceKernelTest, ItsOwnTracedSystemCallsLetAReaderCatchUp) {
  const std::string instance = UniqueName("own_syscalls");
  const std::string dir = std::string(kTracefs) + "/instances/" + instance;
  ASSERT_EQ(mkdir(dir.c_str(), 0755), 0);
  const std::string syscalls = dir + "/events/raw_syscalls/enable";
  ASSERT_TRUE(Tracefs::WritePath(syscalls, "1").ok());
  {
    perfetto::protos::FtraceConfig config = Config();
    config.add_ftrace_events("ftrace/print");
    // Every process's system calls land here too: room for a busy machine's.
    config.set_buffer_size_kb(4096);
    config.set_instance_name(instance);
    testing::WriterCollector collector;
    auto ds = FtraceDataSource::Create(config, collector.Factory(), Options());
    ASSERT_TRUE(ds.ok()) << ds.status().message();
    ASSERT_TRUE((*ds)->Start().ok());
    MarkerRun run;
    run.tag = "sluice-" + std::to_string(getpid()) + "-own-syscalls";
    run.per_thread = 2500;
    WriteMarkers(dir + "/trace_marker", &run);

    std::mutex mutex;
    std::condition_variable cv;
    bool stopped = false, watchdog_fired = false;
    const uint64_t patience_ms = testing::ScaledTimeoutMs(60000);
    std::thread watchdog([&] {
      std::unique_lock<std::mutex> lock(mutex);
      if (cv.wait_for(lock, std::chrono::milliseconds(patience_ms), [&] { return stopped; })) return;
      watchdog_fired = true;
      (void)Tracefs::WritePath(syscalls, "0");
    });
    (*ds)->Flush();
    (*ds)->Stop();
    {
      std::lock_guard<std::mutex> lock(mutex);
      stopped = true;
    }
    cv.notify_all();
    watchdog.join();
    EXPECT_FALSE(watchdog_fired) << "Flush() and Stop() did not return in " << patience_ms
                                 << " ms while the reader's own system calls were traced";
    Analysis a = Analyze(collector.PacketsByWriter(), run);
    // The overrun counts the system calls lost too (every process's).
    EXPECT_LE(a.Missing(), a.OverrunDelta());
    EXPECT_EQ(a.Duplicated(), 0u);
    ASSERT_TRUE(a.have_end);
    ExpectReadPaths(a);
  }
  ASSERT_TRUE(Tracefs::WritePath(syscalls, "0").ok());
  ASSERT_EQ(rmdir(dir.c_str()), 0);
}

// The read modes whose outcome depends on the kernel: each case checks what
// this kernel must give, with or without the mapping.
using FtraceDataSourceReadModeKernelTest = FtraceKernelTestBase;

// How many of this process's mappings are of a trace_pipe_raw file (a meta
// page or a ring of sub-buffers each).
size_t MappedTracePipes() {
  std::ifstream maps("/proc/self/maps");
  size_t n = 0;
  for (std::string line; std::getline(maps, line);)
    if (line.find("/trace_pipe_raw") != std::string::npos) n++;
  return n;
}

// The default read mode (AUTO) reads every CPU with splice, with no
// warning, on kernels that map ring buffers too (splice costs less CPU
// there); the trace says so, and no buffer is mapped.
TEST_F(FtraceDataSourceReadModeKernelTest, AutoReadsWithSpliceEverywhere) {
  perfetto::protos::FtraceConfig config;
  config.add_ftrace_events("ftrace/print");
  config.set_buffer_size_kb(256);
  config.set_instance_name(UniqueName("auto"));
  testing::WriterCollector collector;
  auto ds = FtraceDataSource::Create(config, collector.Factory(), Options());
  ASSERT_TRUE(ds.ok()) << ds.status().message();
  ASSERT_TRUE((*ds)->Start().ok());
  MarkerRun run;
  run.tag = "sluice-" + std::to_string(getpid()) + "-auto";
  run.per_thread = 1000;
  WriteMarkers((*ds)->tracefs().Path("trace_marker"), &run);
  (*ds)->Flush();
  const FtraceSourceStats counters = (*ds)->stats();
  const size_t reading = (*ds)->ReadingCpusForTesting().size();
  EXPECT_EQ(counters.mapped_cpus, 0u);
  EXPECT_EQ(counters.splice_cpus, reading);
  EXPECT_EQ(MappedTracePipes(), 0u);
  (*ds)->Stop();
  Analysis a = Analyze(collector.PacketsByWriter(), run);
  EXPECT_EQ(a.Missing(), 0u);
  EXPECT_EQ(a.Duplicated(), 0u);
  EXPECT_TRUE((*ds)->warnings().empty()) << (*ds)->warnings()[0];
  ASSERT_TRUE(a.have_end);
  size_t said = 0;
  for (const auto& c : a.end.cpu_stats()) {
    if (!c.has_sluice_read_path()) continue;
    said++;
    EXPECT_EQ(c.sluice_read_path(), sluice::protos::FTRACE_READ_PATH_SPLICE);
  }
  EXPECT_EQ(said, reading);
  ds->reset();
}

// MAPPED maps every CPU where the kernel can; where it cannot (before 6.10)
// the data source does not start, and says in one line which CPU, why, and
// the fix; tracefs is left as found (TearDown) and the instance removed.
TEST_F(FtraceDataSourceReadModeKernelTest, MappedStartsOrSaysWhyNotAndTheFix) {
  const bool maps = testing::KernelMapsRingBuffers();
  const std::string instance = UniqueName("forced");
  perfetto::protos::FtraceConfig config;
  config.add_ftrace_events("ftrace/print");
  config.set_buffer_size_kb(64);
  config.set_instance_name(instance);
  config.set_ring_buffer_read_mode(sluice::protos::FTRACE_READ_MODE_MAPPED);
  testing::WriterCollector collector;
  {
    auto ds = FtraceDataSource::Create(config, collector.Factory(), Options());
    ASSERT_TRUE(ds.ok()) << ds.status().message();
    Status started = (*ds)->Start();
    if (maps) {
      ASSERT_TRUE(started.ok()) << started.message();
      EXPECT_EQ((*ds)->stats().splice_cpus, 0u);
      EXPECT_GT(MappedTracePipes(), 0u);
      (*ds)->Stop();
    } else {
      ASSERT_FALSE(started.ok());
      std::printf("[   INFO   ] %s\n", started.message().c_str());
      EXPECT_EQ(started.message().find('\n'), std::string::npos);
      EXPECT_EQ(started.message().rfind("cpu ", 0), 0u) << started.message();
      EXPECT_NE(started.message().find("the kernel has no ring buffer mapping (Linux 6.10+)"), std::string::npos)
          << started.message();
      EXPECT_NE(started.message().find("--ftrace-read=splice"), std::string::npos) << started.message();
    }
  }
  EXPECT_NE(access((std::string(kTracefs) + "/instances/" + instance).c_str(), F_OK), 0);
}

}  // namespace
}  // namespace sluice
