// FtraceDataSource without a kernel: a fake tracefs tree whose
// per_cpu/cpuN/trace_pipe_raw are plain files holding pages captured on 6.18
// (tests/data/ftrace/), format files from tests/data/kernel-formats/host-6.18.
// Covers Start/Flush/Stop, FtraceStats, CPU hotplug and restoring the tree.
#include "user/probes/ftrace/ftrace_data_source.h"

#include <chrono>
#include <mutex>
#include <optional>
#include <thread>

#include <gtest/gtest.h>

#include "perfetto/trace/trace_packet.pb.h"
#include "tests/user/probes/fake_tracefs.h"
#include "tests/user/probes/ftrace/ftrace_test_util.h"

namespace sluice {
namespace {

using Clock = std::chrono::steady_clock;

class FtraceDataSourceTest : public ::testing::Test {
 protected:
  void SetUp() override {
    fake_.PopulateRoot(3);
    fake_.Write("cpu_online", "0-1\n");
    const std::string formats = testing::kTreeHost;
    for (const char* f : {"header_page", "header_event", "sched/sched_switch/format",
                          "sched/sched_waking/format", "ftrace/print/format"}) {
      auto text = ReadFile(formats + "/" + f);
      ASSERT_TRUE(text.ok()) << text.status().message();
      fake_.Write(std::string("events/") + f, *text);
    }
    for (int cpu = 0; cpu < 2; cpu++) {
      testing::CapturedPages pages = testing::LoadCapturedPages(
          "tests/data/ftrace/sluice_capture_light_cpu" + std::to_string(cpu) + ".hex");
      ASSERT_FALSE(pages.bytes.empty());
      fake_.WriteBytes("per_cpu/cpu" + std::to_string(cpu) + "/trace_pipe_raw", pages.bytes);
      expected_events_ += pages.text.size();
      expected_pages_ += pages.page_count();
    }
  }
  FtraceDataSourceOptions Options() {
    FtraceDataSourceOptions o;
    o.tracefs_root = fake_.root();
    o.cpu_online_path = fake_.Path("cpu_online");
    o.control.is_android = false;
    o.control.print_warnings = false;
    return o;
  }
  std::vector<std::string> StateFiles() const {
    std::vector<std::string> names;
    std::error_code ec;
    for (const auto& e : std::filesystem::directory_iterator(fake_.Path("state"), ec)) {
      if (e.path().extension() == ".state") names.push_back(e.path().filename());
    }
    return names;
  }
  template <typename Pred>
  bool WaitUntil(Pred pred) {
    // Only reached when something is broken.
    const auto deadline = Clock::now() + std::chrono::seconds(60);
    while (!pred()) {
      if (Clock::now() > deadline) return false;
      std::this_thread::sleep_for(std::chrono::milliseconds(2));
    }
    return true;
  }

  testing::FakeTracefs fake_;
  testing::WriterCollector collector_;
  size_t expected_events_ = 0;
  size_t expected_pages_ = 0;
};

TEST_F(FtraceDataSourceTest, RecordsCapturedPagesAndFollowsHotplug) {
  perfetto::protos::FtraceConfig config;
  config.add_ftrace_events("sched/sched_switch");
  config.add_ftrace_events("sched/sched_waking");
  config.add_ftrace_events("ftrace/print");
  config.add_ftrace_events("bogus/event");
  config.set_drain_period_ms(5);
  config.set_buffer_size_kb(64);
  config.mutable_compact_sched()->set_enabled(false);  // Every event in event(), counted below.
  // The look for CPUs that came and went every 20 ms, not 30 s; at rest (the
  // files read, nothing more) it backs off to 16 times that.
  FtraceDataSourceOptions options = Options();
  options.housekeeping_period = std::chrono::milliseconds(20);
  auto ds = FtraceDataSource::Create(config, collector_.Factory(), options);
  ASSERT_TRUE(ds.ok()) << ds.status().message();
  ASSERT_TRUE((*ds)->Start().ok());
  EXPECT_EQ((*ds)->page_size(), 4096u);
  EXPECT_EQ(collector_.count(), 3u);  // Stats + CPUs 0 and 1.
  EXPECT_EQ(fake_.Read("tracing_on"), "1");
  EXPECT_EQ(fake_.Read("trace_clock"), "boot");

  (*ds)->Flush();
  FtraceSourceStats c = (*ds)->stats();
  EXPECT_EQ(c.events, expected_events_);
  EXPECT_EQ(c.parse_errors, 0u);
  EXPECT_EQ(c.pages, expected_pages_);

  // CPU 1 goes offline: its reader stops. (Empty its file first: a plain
  // file would be read again from the start by a new reader.)
  fake_.Write("per_cpu/cpu1/trace_pipe_raw", "");
  fake_.Write("cpu_online", "0\n");
  EXPECT_TRUE(WaitUntil([&] { return (*ds)->ReadingCpusForTesting() == std::vector<uint32_t>{0}; }));
  // CPUs 1 and 2 come online: readers for both; a writer only for the new one.
  fake_.Write("cpu_online", "0-2\n");
  EXPECT_TRUE(WaitUntil(
      [&] { return (*ds)->ReadingCpusForTesting() == std::vector<uint32_t>{0, 1, 2}; }));
  EXPECT_EQ(collector_.count(), 4u);

  (*ds)->Stop();
  EXPECT_EQ((*ds)->stats().events, expected_events_);
  EXPECT_TRUE((*ds)->ReadingCpusForTesting().empty());

  // Packets: bundles per CPU, and the two FtraceStats.
  uint64_t events = 0;
  int start = 0, end = 0;
  for (const auto& p : collector_.Packets()) {
    if (p.has_ftrace_events()) {
      EXPECT_LT(p.ftrace_events().cpu(), 2u);
      events += static_cast<uint64_t>(p.ftrace_events().event_size());
    }
    if (!p.has_ftrace_stats()) continue;
    const auto& stats = p.ftrace_stats();
    EXPECT_TRUE(p.has_timestamp());
    EXPECT_EQ(stats.cpu_stats_size(), 3);  // Every per_cpu dir.
    ASSERT_EQ(stats.unknown_ftrace_events_size(), 1);
    EXPECT_EQ(stats.unknown_ftrace_events(0), "bogus/event");
    EXPECT_EQ(stats.cpu_buffer_size_pages(), 64u * 1024 / 4096);
    if (stats.phase() == perfetto::protos::FtraceStats::START_OF_TRACE) start++;
    if (stats.phase() == perfetto::protos::FtraceStats::END_OF_TRACE) end++;
    EXPECT_DOUBLE_EQ(stats.cpu_stats(0).now_ts(), 265.483363);
  }
  EXPECT_EQ(events, expected_events_);
  EXPECT_EQ(start, 1);
  EXPECT_EQ(end, 1);

  // The fake tree is back as it was (sizes come back expanded; see
  // FtraceSettings).
  EXPECT_EQ(fake_.Read("tracing_on"), "0");
  EXPECT_EQ(fake_.Read("trace_clock"), "local");
  EXPECT_EQ(fake_.Read("buffer_size_kb"), "1408");
  EXPECT_EQ(fake_.Read("events/sched/sched_switch/enable"), "0");
  EXPECT_EQ(fake_.Read("events/sched/sched_wakeup/enable"), "1\n");
}

// compact_sched on, off, and left out, which means on (upstream since v42).
TEST_F(FtraceDataSourceTest, CompactSchedReachesTheEncoder) {
  for (const std::optional<bool> enabled : {std::optional<bool>(true), std::optional<bool>(false),
                                            std::optional<bool>()}) {
    SCOPED_TRACE(enabled ? (*enabled ? "enabled" : "disabled") : "unset");
    perfetto::protos::FtraceConfig config;
    config.add_ftrace_events("sched/sched_switch");
    config.add_ftrace_events("sched/sched_waking");
    config.add_ftrace_events("ftrace/print");
    if (enabled) config.mutable_compact_sched()->set_enabled(*enabled);
    // The last round put the clock back as the fake shows a write: no brackets.
    fake_.Write("trace_clock", "[local] global boot\n");
    testing::WriterCollector collector;
    auto ds = FtraceDataSource::Create(config, collector.Factory(), Options());
    ASSERT_TRUE(ds.ok()) << ds.status().message();
    ASSERT_TRUE((*ds)->Start().ok());
    (*ds)->Stop();
    EXPECT_EQ((*ds)->stats().events, expected_events_);
    uint64_t compact_switches = 0;
    for (const auto& p : collector.Packets()) {
      if (p.has_ftrace_events() && p.ftrace_events().has_compact_sched()) {
        compact_switches += static_cast<uint64_t>(
            p.ftrace_events().compact_sched().switch_timestamp_size());
      }
    }
    if (enabled.value_or(true)) {
      EXPECT_GT(compact_switches, 0u);
    } else {
      EXPECT_EQ(compact_switches, 0u);
    }
  }
}

TEST_F(FtraceDataSourceTest, StartFailsCleanlyWithoutHeaderPage) {
  std::filesystem::remove(fake_.Path("events/header_page"));
  perfetto::protos::FtraceConfig config;
  config.add_ftrace_events("sched/sched_switch");
  auto ds = FtraceDataSource::Create(config, collector_.Factory(), Options());
  ASSERT_TRUE(ds.ok());
  Status st = (*ds)->Start();
  EXPECT_FALSE(st.ok());
  EXPECT_EQ(fake_.Read("tracing_on"), "0");
  EXPECT_EQ(fake_.Read("events/sched/sched_switch/enable"), "0");
}

TEST_F(FtraceDataSourceTest, ADrainBufferPercentOverAHundredIsRefusedSayingTheRange) {
  perfetto::protos::FtraceConfig config;
  config.add_ftrace_events("sched/sched_switch");
  config.set_drain_buffer_percent(150);
  auto ds = FtraceDataSource::Create(config, collector_.Factory(), Options());
  ASSERT_FALSE(ds.ok());
  EXPECT_NE(ds.status().message().find("drain_buffer_percent 150 is not a percent: give 1-100"),
            std::string::npos)
      << ds.status().message();
  EXPECT_EQ(fake_.Read("buffer_percent"), "50\n");
}

// A Perfetto config may ask for what sluice's recorder does not do: the
// session records, and says which options it left out, by name.
TEST_F(FtraceDataSourceTest, OptionsNotCarriedOutAreNamedInWarnings) {
  perfetto::protos::FtraceConfig config;
  config.add_ftrace_events("sched/sched_switch");
  config.set_enable_function_graph(true);
  config.add_function_graph_roots("do_sys_openat2");
  config.add_syscall_events("sys_read");
  config.add_tids_to_trace(42);
  auto ds = FtraceDataSource::Create(config, collector_.Factory(), Options());
  ASSERT_TRUE(ds.ok()) << ds.status().message();
  const std::vector<std::string> warnings = (*ds)->warnings();
  for (const char* option : {"enable_function_graph", "syscall_events", "tids_to_trace"}) {
    bool named = false;
    for (const std::string& w : warnings) named = named || w.find(option) != std::string::npos;
    EXPECT_TRUE(named) << option;
  }
  EXPECT_EQ(FtraceOptionsNotApplied(config).size(), 3u);  // function_graph's options are one warning
  EXPECT_TRUE(FtraceOptionsNotApplied(perfetto::protos::FtraceConfig()).empty());
}

TEST_F(FtraceDataSourceTest, CreatesAndRemovesItsInstance) {
  perfetto::protos::FtraceConfig config;
  config.set_instance_name("mine");
  // The fake "kernel" does not populate a new instance, so Create() fails
  // after mkdir and must rmdir again; the instance, saved in the state file
  // before the mkdir, is taken out of it again.
  FtraceDataSourceOptions options = Options();
  options.tracefs_state_dir = fake_.Path("state");
  auto ds = FtraceDataSource::Create(config, collector_.Factory(), options);
  EXPECT_FALSE(ds.ok());
  EXPECT_FALSE(std::filesystem::exists(fake_.Path("instances/mine")));
  EXPECT_TRUE(StateFiles().empty());
}

// The service is gone: tracefs is put back at once, nothing is drained, the
// kernel's unread events are counted, the state file goes, Stop() is a no-op.
TEST_F(FtraceDataSourceTest, AbandonRestoresTracefsWithoutDraining) {
  fake_.Write("per_cpu/cpu1/stats", "entries: 7\n");
  perfetto::protos::FtraceConfig config;
  config.add_ftrace_events("sched/sched_switch");
  config.set_buffer_size_kb(64);
  FtraceDataSourceOptions options = Options();
  options.tracefs_state_dir = fake_.Path("state");
  auto ds = FtraceDataSource::Create(config, collector_.Factory(), options);
  ASSERT_TRUE(ds.ok()) << ds.status().message();
  ASSERT_TRUE((*ds)->Start().ok());
  EXPECT_EQ(StateFiles().size(), 1u);
  EXPECT_EQ(fake_.Read("events/sched/sched_switch/enable"), "1");

  FtraceAbandonStats lost = (*ds)->Abandon();
  EXPECT_EQ(lost.kernel_unread_events, 7u);
  EXPECT_EQ(fake_.Read("events/sched/sched_switch/enable"), "0");
  EXPECT_EQ(fake_.Read("tracing_on"), "0");
  EXPECT_EQ(fake_.Read("buffer_size_kb"), "1408");
  EXPECT_EQ((*ds)->settings()->restore_report().errors, std::vector<std::string>{});
  EXPECT_TRUE(StateFiles().empty());
  (*ds)->Stop();
  (*ds)->Flush();
  // START only: no FtraceStats END for a service that is gone.
  size_t stats_packets = 0;
  for (const auto& p : collector_.Packets()) stats_packets += p.has_ftrace_stats();
  EXPECT_EQ(stats_packets, 1u);
}

// A tree of plain files has no ring buffer mapping. AUTO then reads every
// CPU with splice, without a warning (the kernel offering no mapping is
// expected), SPLICE does so by choice, and both say so in the FtraceStats
// at start and end; a CPU never read (offline) says nothing. MAPPED refuses
// to start, naming the CPU, the cause and the fix, and leaves the tree as
// found.
TEST_F(FtraceDataSourceTest, ReadModesWhereThereIsNoMapping) {
  for (auto mode : {sluice::protos::FTRACE_READ_MODE_AUTO, sluice::protos::FTRACE_READ_MODE_SPLICE}) {
    SCOPED_TRACE(sluice::protos::FtraceReadMode_Name(mode));
    // The fake kernel's clock file as a kernel shows it (a restore writes
    // only the name).
    fake_.Write("trace_clock", "[local] global counter uptime perf mono mono_raw boot x86-tsc\n");
    testing::WriterCollector collector;
    perfetto::protos::FtraceConfig config;
    config.add_ftrace_events("sched/sched_switch");
    config.add_ftrace_events("sched/sched_waking");
    config.add_ftrace_events("ftrace/print");
    config.set_ring_buffer_read_mode(mode);
    auto ds = FtraceDataSource::Create(config, collector.Factory(), Options());
    ASSERT_TRUE(ds.ok()) << ds.status().message();
    Status started = (*ds)->Start();
    ASSERT_TRUE(started.ok()) << started.message();
    (*ds)->Flush();
    EXPECT_EQ((*ds)->stats().splice_cpus, 2u);
    EXPECT_EQ((*ds)->stats().mapped_cpus, 0u);
    (*ds)->Stop();
    EXPECT_EQ((*ds)->stats().events, expected_events_);
    EXPECT_TRUE((*ds)->warnings().empty()) << (*ds)->warnings()[0];
    int stats_packets = 0;
    for (const auto& p : collector.Packets()) {
      if (!p.has_ftrace_stats()) continue;
      stats_packets++;
      const auto& stats = p.ftrace_stats();
      ASSERT_EQ(stats.cpu_stats_size(), 3);
      EXPECT_EQ(stats.cpu_stats(0).sluice_read_path(), sluice::protos::FTRACE_READ_PATH_SPLICE);
      EXPECT_EQ(stats.cpu_stats(1).sluice_read_path(), sluice::protos::FTRACE_READ_PATH_SPLICE);
      EXPECT_FALSE(stats.cpu_stats(2).has_sluice_read_path());
    }
    EXPECT_EQ(stats_packets, 2);
  }

  fake_.Write("trace_clock", "[local] global counter uptime perf mono mono_raw boot x86-tsc\n");
  perfetto::protos::FtraceConfig config;
  config.add_ftrace_events("sched/sched_switch");
  config.set_buffer_size_kb(64);
  config.set_ring_buffer_read_mode(sluice::protos::FTRACE_READ_MODE_MAPPED);
  testing::WriterCollector collector;
  auto ds = FtraceDataSource::Create(config, collector.Factory(), Options());
  ASSERT_TRUE(ds.ok()) << ds.status().message();
  Status st = (*ds)->Start();
  ASSERT_FALSE(st.ok());
  EXPECT_EQ(st.message().find('\n'), std::string::npos) << st.message();
  EXPECT_EQ(st.message().rfind("cpu 0: cannot map " + fake_.Path("per_cpu/cpu0/trace_pipe_raw"), 0), 0u) << st.message();
  EXPECT_NE(st.message().find("not a tracefs file"), std::string::npos) << st.message();
  EXPECT_NE(st.message().find("--ftrace-read=splice"), std::string::npos) << st.message();
  EXPECT_EQ(fake_.Read("tracing_on"), "0");
  EXPECT_EQ(fake_.Read("buffer_size_kb"), "1408");
  EXPECT_EQ(fake_.Read("events/sched/sched_switch/enable"), "0");
  // (The collector's CPU writers went with the failed start: not read here.)
}

TEST_F(FtraceDataSourceTest, StopWithoutStartAndDoubleStopAreHarmless) {
  perfetto::protos::FtraceConfig config;
  auto ds = FtraceDataSource::Create(config, collector_.Factory(), Options());
  ASSERT_TRUE(ds.ok());
  (*ds)->Flush();
  (*ds)->Stop();
  ASSERT_TRUE((*ds)->Start().ok());
  (*ds)->Stop();
  (*ds)->Stop();
  EXPECT_EQ(fake_.Read("tracing_on"), "0");
}

// A config that names no kernel buffer size gets upstream traced_probes'
// default, by the machine's memory; buffer_size_lower_bound raises a smaller
// one to it.
TEST(FtraceDataSourceConfigTest, KernelBufferSizeDefaultsAsUpstream) {
  perfetto::protos::FtraceConfig config;
  EXPECT_EQ(KernelBufferKbFor(config, 4ull << 30), 2048u);
  EXPECT_EQ(KernelBufferKbFor(config, 24ull << 30), 8192u);
  EXPECT_EQ(KernelBufferKbFor(config, 0), 2048u);
  config.set_buffer_size_kb(512);
  EXPECT_EQ(KernelBufferKbFor(config, 24ull << 30), 512u);
  config.set_buffer_size_lower_bound(true);
  EXPECT_EQ(KernelBufferKbFor(config, 24ull << 30), 8192u);
  config.set_buffer_size_kb(16384);
  EXPECT_EQ(KernelBufferKbFor(config, 24ull << 30), 16384u);
}

}  // namespace
}  // namespace sluice
