#include "user/trace/trace_health.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <map>
#include <string>

#include "perfetto/config/trace_config.pb.h"
#include "perfetto/trace/trace_packet.pb.h"
#include "shm/base/file_util.h"
#include "sluice/ftrace.pb.h"

namespace sluice {
namespace {

using perfetto::protos::FtraceStats;
using perfetto::protos::TracePacket;

struct TraceBuilder {
  std::string bytes;
  void Add(const TracePacket& p) { AppendTracePacketRecord(p.SerializeAsString(), &bytes); }
};

std::map<std::string, int64_t> RowValues(const TraceHealth& h) {
  std::map<std::string, int64_t> out;
  for (const HealthRow& r : h.rows)
    out[r.name + (r.index >= 0 ? "[" + std::to_string(r.index) + "]" : "")] = r.value;
  return out;
}

TracePacket StatsPacket() {
  TracePacket p;
  p.mutable_trace_stats();
  return p;
}

TracePacket FtraceStatsPacket(FtraceStats::Phase phase, uint64_t overrun0, uint64_t overrun1) {
  TracePacket p;
  auto* s = p.mutable_ftrace_stats();
  s->set_phase(phase);
  auto* c0 = s->add_cpu_stats();
  c0->set_cpu(0);
  c0->set_overrun(overrun0);
  auto* c1 = s->add_cpu_stats();
  c1->set_cpu(1);
  c1->set_overrun(overrun1);
  return p;
}

TEST(TraceHealthTest, CleanTraceHasNoRows) {
  TraceBuilder t;
  TracePacket b;
  b.set_trusted_packet_sequence_id(3);
  b.set_previous_packet_dropped(1);
  b.set_first_packet_on_sequence(true);  // The first packet: not a loss.
  b.mutable_ftrace_events()->set_cpu(0);
  b.mutable_ftrace_events()->add_event()->mutable_sched_switch();
  b.mutable_ftrace_events()->add_event()->mutable_print();
  b.mutable_ftrace_events()->mutable_compact_sched()->add_waking_timestamp(5);
  t.Add(b);
  t.Add(StatsPacket());
  auto h = AnalyzeTraceBytes(t.bytes);
  ASSERT_TRUE(h.ok()) << h.status().message();
  EXPECT_TRUE(h->rows.empty()) << FormatHealthTable(*h);
  EXPECT_EQ(h->ftrace_events, 3u);
  std::map<std::string, uint64_t> want = {{"sched_switch", 1}, {"print", 1}, {"sched_waking", 1}};
  EXPECT_EQ(h->events_by_name, want);
  EXPECT_EQ(h->sequences, 1u);
  EXPECT_EQ(h->data_loss_total(), 0u);
  EXPECT_NE(FormatHealthTable(*h).find("(no losses, no errors)"), std::string::npos);
}

// Each loss stage shows up under its own name with the exact value.
TEST(TraceHealthTest, EveryStageIsReported) {
  TraceBuilder t;
  t.Add(FtraceStatsPacket(FtraceStats::START_OF_TRACE, 100, 7));
  TracePacket dropped;
  dropped.set_trusted_packet_sequence_id(9);
  dropped.set_previous_packet_dropped(1);
  dropped.mutable_ftrace_events()->set_cpu(1);
  dropped.mutable_ftrace_events()->set_lost_events(true);
  t.Add(dropped);
  t.Add(dropped);
  t.Add(FtraceStatsPacket(FtraceStats::END_OF_TRACE, 130, 7));
  TracePacket stats = StatsPacket();
  auto* buf = stats.mutable_trace_stats()->add_buffer_stats();
  buf->set_chunks_overwritten(4);
  buf->set_trace_writer_packet_loss(2);
  stats.mutable_trace_stats()->set_flushes_failed(1);
  t.Add(stats);
  TracePacket bpf;
  auto* c = bpf.mutable_bpf_stats()->add_cpu_stats();
  c->set_cpu(1);
  c->set_dropped(11);
  t.Add(bpf);
  auto h = AnalyzeTraceBytes(t.bytes);
  ASSERT_TRUE(h.ok()) << h.status().message();
  std::map<std::string, int64_t> want = {
      {"ftrace_cpu_overrun_delta[0]", 30},
      {"ftrace_bundles_after_lost_events[1]", 2},
      {"packets_dropped_before[9]", 2},
      {"traced_buf_chunks_overwritten[0]", 4},
      {"traced_buf_trace_writer_packet_loss[0]", 2},
      {"traced_flushes_failed", 1},
      {"bpf_ringbuf_dropped[1]", 11},
  };
  EXPECT_EQ(RowValues(*h), want) << FormatHealthTable(*h);
  EXPECT_EQ(h->data_loss_total(), 30u + 2 + 4 + 2 + 11);
}

// The mode a trace was recorded in (its trace_config) decides what an
// overwrite means and which stage a sequence gap is blamed on.
TracePacket ConfigPacket(bool write_into_file,
                         perfetto::protos::TraceConfig::BufferConfig::FillPolicy policy) {
  TracePacket p;
  p.mutable_trace_config()->set_write_into_file(write_into_file);
  p.mutable_trace_config()->add_buffers()->set_fill_policy(policy);
  return p;
}

TracePacket GapPacket(uint32_t sequence) {
  TracePacket p;
  p.set_trusted_packet_sequence_id(sequence);
  p.set_previous_packet_dropped(1);
  p.mutable_ftrace_events()->set_cpu(0);
  return p;
}

TracePacket BufferStatsPacket(uint64_t overwritten, uint64_t discarded, uint64_t writer_loss) {
  TracePacket p = StatsPacket();
  auto* b = p.mutable_trace_stats()->add_buffer_stats();
  b->set_chunks_overwritten(overwritten);
  b->set_chunks_discarded(discarded);
  b->set_trace_writer_packet_loss(writer_loss);
  return p;
}

const HealthRow* FindRow(const TraceHealth& h, const std::string& name) {
  for (const HealthRow& r : h.rows)
    if (r.name == name) return &r;
  return nullptr;
}

TEST(TraceHealthTest, RingOverwritesAreTheFlightRecorderWorkingNotALoss) {
  TraceBuilder t;
  t.Add(ConfigPacket(false, perfetto::protos::TraceConfig::BufferConfig::RING_BUFFER));
  t.Add(GapPacket(4));
  t.Add(BufferStatsPacket(120, 0, 0));
  auto h = AnalyzeTraceBytes(t.bytes);
  ASSERT_TRUE(h.ok()) << h.status().message();
  const HealthRow* overwritten = FindRow(*h, "traced_buf_chunks_overwritten");
  ASSERT_NE(overwritten, nullptr) << FormatHealthTable(*h);
  EXPECT_EQ(overwritten->value, 120);
  EXPECT_EQ(overwritten->severity, "info");
  EXPECT_NE(overwritten->explanation.find("flight recorder"), std::string::npos);
  const HealthRow* gap = FindRow(*h, "packets_dropped_before");
  ASSERT_NE(gap, nullptr);
  EXPECT_EQ(gap->severity, "info");
  EXPECT_EQ(gap->source, "central buffer");
  EXPECT_EQ(gap->explanation.find("--smb"), std::string::npos) << gap->explanation;
  EXPECT_EQ(h->data_loss_total(), 0u);
}

TEST(TraceHealthTest, StreamedOverwritesAreALossBlamedOnTheCentralBufferNotSharedMemory) {
  TraceBuilder t;
  t.Add(ConfigPacket(true, perfetto::protos::TraceConfig::BufferConfig::RING_BUFFER));
  t.Add(GapPacket(4));
  t.Add(BufferStatsPacket(7, 0, 0));
  auto h = AnalyzeTraceBytes(t.bytes);
  ASSERT_TRUE(h.ok()) << h.status().message();
  EXPECT_EQ(FindRow(*h, "traced_buf_chunks_overwritten")->severity, "data_loss");
  const HealthRow* gap = FindRow(*h, "packets_dropped_before");
  ASSERT_NE(gap, nullptr) << FormatHealthTable(*h);
  EXPECT_EQ(gap->source, "central buffer");
  EXPECT_EQ(gap->explanation.find("--smb"), std::string::npos) << gap->explanation;
  EXPECT_EQ(h->data_loss_total(), 7u + 1);
}

TEST(TraceHealthTest, SequenceGapsAfterSharedMemoryLossPointAtSmb) {
  TraceBuilder t;
  t.Add(ConfigPacket(true, perfetto::protos::TraceConfig::BufferConfig::RING_BUFFER));
  t.Add(GapPacket(4));
  t.Add(BufferStatsPacket(0, 0, 3));
  auto h = AnalyzeTraceBytes(t.bytes);
  ASSERT_TRUE(h.ok()) << h.status().message();
  const HealthRow* gap = FindRow(*h, "packets_dropped_before");
  ASSERT_NE(gap, nullptr) << FormatHealthTable(*h);
  EXPECT_EQ(gap->source, "producer shared memory");
  EXPECT_NE(gap->explanation.find("--smb"), std::string::npos) << gap->explanation;
}

// A buffer that came close to wrapping is said (info, in percent), one that
// stayed well clear is not.
TEST(TraceHealthTest, APeakFillFromThreeQuartersUpIsSaid) {
  TraceBuilder t;
  t.Add(FtraceStatsPacket(FtraceStats::START_OF_TRACE, 0, 0));
  TracePacket end = FtraceStatsPacket(FtraceStats::END_OF_TRACE, 0, 0);
  end.mutable_ftrace_stats()->set_cpu_buffer_size_pages(256);
  end.mutable_ftrace_stats()->mutable_cpu_stats(0)->set_sluice_most_pages_per_wake(150);  // 58%
  end.mutable_ftrace_stats()->mutable_cpu_stats(1)->set_sluice_most_pages_per_wake(230);  // 89%
  t.Add(end);
  auto h = AnalyzeTraceBytes(t.bytes);
  ASSERT_TRUE(h.ok()) << h.status().message();
  const HealthRow* peak = FindRow(*h, "ftrace_reader_peak_fill_percent");
  ASSERT_NE(peak, nullptr) << FormatHealthTable(*h);
  EXPECT_EQ(peak->index, 1);
  EXPECT_EQ(peak->value, 89);
  EXPECT_EQ(peak->severity, "info");
  EXPECT_NE(peak->explanation.find("230 of its 256 pages"), std::string::npos) << peak->explanation;
  EXPECT_EQ(h->data_loss_total(), 0u);
  int peak_rows = 0;
  for (const HealthRow& r : h->rows) peak_rows += r.name == "ftrace_reader_peak_fill_percent";
  EXPECT_EQ(peak_rows, 1) << "CPU 0 at 58% is not worth a row";
  // Both are in the summary line.
  EXPECT_EQ(FormatFtracePeakFill(*h),
            "ftrace buffer peak fill: 58% on CPU 0, 89% on CPU 1 (the most a reader took in one wake-up; at "
            "100% the buffer wraps and loses events)\n");
}

// The readers' watermark at the start and the end, and whether sluice
// lowered it; nothing where the trace does not say (upstream's, older
// sluice's, kernels without buffer_percent).
TEST(TraceHealthTest, TheWatermarkAtStartAndEndIsSaid) {
  auto analyze = [](int start_percent, int end_percent) {
    TraceBuilder t;
    TracePacket start = FtraceStatsPacket(FtraceStats::START_OF_TRACE, 0, 0);
    if (start_percent >= 0) start.mutable_ftrace_stats()->set_sluice_buffer_percent(start_percent);
    t.Add(start);
    TracePacket end = FtraceStatsPacket(FtraceStats::END_OF_TRACE, 0, 0);
    if (end_percent >= 0) end.mutable_ftrace_stats()->set_sluice_buffer_percent(end_percent);
    t.Add(end);
    auto h = AnalyzeTraceBytes(t.bytes);
    EXPECT_TRUE(h.ok()) << h.status().message();
    return h.ok() ? FormatFtraceWatermark(*h) : std::string();
  };
  const std::string what = "buffer_percent, how full a CPU's buffer gets before its reader is woken)\n";
  EXPECT_EQ(analyze(50, 25),
            "ftrace reader watermark: 50% -> 25% (lowered by sluice: a buffer filled fast or came near full; " + what);
  EXPECT_EQ(analyze(50, 50), "ftrace reader watermark: 50% (" + what);
  EXPECT_EQ(analyze(0, 0), "ftrace reader watermark: 0% (" + what);
  EXPECT_EQ(analyze(-1, 25), "ftrace reader watermark: 25% (" + what);
  EXPECT_EQ(analyze(30, 40), "ftrace reader watermark: 30% -> 40% (" + what);
  EXPECT_EQ(analyze(-1, -1), "");
}

TEST(TraceHealthTest, DiscardInMemorySaysTheOldestDataWasKept) {
  TraceBuilder t;
  t.Add(ConfigPacket(false, perfetto::protos::TraceConfig::BufferConfig::DISCARD));
  t.Add(BufferStatsPacket(0, 9, 0));
  auto h = AnalyzeTraceBytes(t.bytes);
  ASSERT_TRUE(h.ok()) << h.status().message();
  const HealthRow* discarded = FindRow(*h, "traced_buf_chunks_discarded");
  ASSERT_NE(discarded, nullptr) << FormatHealthTable(*h);
  EXPECT_EQ(discarded->severity, "data_loss");
  EXPECT_NE(discarded->explanation.find("kept the oldest"), std::string::npos);
  EXPECT_NE(discarded->explanation.find("--ring"), std::string::npos);
}

// A ring buffer may overwrite the start-of-trace ftrace figures: the kernel's
// counters since boot must not be reported as this trace's losses.
TEST(TraceHealthTest, OverwrittenFtraceStartCountsLostPagesNotBootTotals) {
  TraceBuilder t;
  t.Add(ConfigPacket(false, perfetto::protos::TraceConfig::BufferConfig::RING_BUFFER));
  TracePacket lost;
  lost.mutable_ftrace_events()->set_cpu(1);
  lost.mutable_ftrace_events()->set_lost_events(true);
  t.Add(lost);
  t.Add(FtraceStatsPacket(FtraceStats::END_OF_TRACE, 5000, 7000));
  t.Add(BufferStatsPacket(3, 0, 0));
  auto h = AnalyzeTraceBytes(t.bytes);
  ASSERT_TRUE(h.ok()) << h.status().message();
  auto rows = RowValues(*h);
  EXPECT_EQ(rows.count("ftrace_cpu_overrun_delta[0]"), 0u) << FormatHealthTable(*h);
  EXPECT_EQ(rows["ftrace_stats_start_missing"], 1);
  EXPECT_EQ(FindRow(*h, "ftrace_bundles_after_lost_events")->severity, "data_loss");
  EXPECT_EQ(h->data_loss_total(), 1u);
}

// Each CPU's read path (FtraceCpuStats.sluice_read_path) comes from the
// end-of-trace figures, or the start's when the end is missing, grouped by
// path for `sluice stats`; a trace that does not say prints nothing.
TEST(TraceHealthTest, FtraceReadPathsPerCpu) {
  auto with_paths = [](FtraceStats::Phase phase, sluice::protos::FtraceReadPath cpu0,
                       sluice::protos::FtraceReadPath cpu1) {
    TracePacket p = FtraceStatsPacket(phase, 0, 0);
    p.mutable_ftrace_stats()->mutable_cpu_stats(0)->set_sluice_read_path(cpu0);
    p.mutable_ftrace_stats()->mutable_cpu_stats(1)->set_sluice_read_path(cpu1);
    auto* c2 = p.mutable_ftrace_stats()->add_cpu_stats();  // Offline: no path.
    c2->set_cpu(2);
    auto* c3 = p.mutable_ftrace_stats()->add_cpu_stats();
    c3->set_cpu(3);
    c3->set_sluice_read_path(cpu0);
    return p;
  };
  TraceBuilder t;
  t.Add(with_paths(FtraceStats::START_OF_TRACE, sluice::protos::FTRACE_READ_PATH_MAPPED,
                   sluice::protos::FTRACE_READ_PATH_SPLICE));
  TraceBuilder started = t;
  t.Add(with_paths(FtraceStats::END_OF_TRACE, sluice::protos::FTRACE_READ_PATH_MAPPED,
                   sluice::protos::FTRACE_READ_PATH_MAPPED_AND_SPLICE));
  t.Add(StatsPacket());
  auto h = AnalyzeTraceBytes(t.bytes);
  ASSERT_TRUE(h.ok()) << h.status().message();
  EXPECT_EQ(h->ftrace_read_paths, (std::map<uint32_t, int>{{0, sluice::protos::FTRACE_READ_PATH_MAPPED},
                                                           {1, sluice::protos::FTRACE_READ_PATH_MAPPED_AND_SPLICE},
                                                           {3, sluice::protos::FTRACE_READ_PATH_MAPPED}}));
  EXPECT_EQ(FormatFtraceReadPaths(*h),
            "ftrace read path: mapped on CPUs 0,3; mapped and splice (the CPU went offline and back) on CPU 1\n");
  EXPECT_TRUE(h->rows.empty()) << FormatHealthTable(*h);

  h = AnalyzeTraceBytes(started.bytes);
  ASSERT_TRUE(h.ok()) << h.status().message();
  EXPECT_EQ(FormatFtraceReadPaths(*h), "ftrace read path: mapped on CPUs 0,3; splice on CPU 1\n");

  TraceBuilder upstream;
  upstream.Add(FtraceStatsPacket(FtraceStats::END_OF_TRACE, 0, 0));
  h = AnalyzeTraceBytes(upstream.bytes);
  ASSERT_TRUE(h.ok()) << h.status().message();
  EXPECT_TRUE(h->ftrace_read_paths.empty());
  EXPECT_EQ(FormatFtraceReadPaths(*h), "");
}

// The service's TraceStats packet adds its lost chunks to the first
// buffer's trace_writer_packet_loss for upstream's readers
// (service/service_packets.h); `sluice stats` shows them once, under their
// own names, and the buffer's row keeps only the producer's own drops.
TEST(TraceHealthTest, LostChunksAddedForUpstreamAreCountedOnce) {
  TraceBuilder t;
  TracePacket stats = StatsPacket();
  auto* ts = stats.mutable_trace_stats();
  ts->add_buffer_stats()->set_trace_writer_packet_loss(2 + 3 + 1);  // 2 + the chunks below
  ts->add_buffer_stats()->set_trace_writer_packet_loss(5);
  ts->mutable_sluice_service_stats()->set_chunks_lost_being_written(3);
  ts->mutable_sluice_service_stats()->set_chunks_lost_writer_unknown(1);
  ts->mutable_sluice_service_stats()->set_chunks_lost_buffer(0);
  t.Add(stats);
  auto h = AnalyzeTraceBytes(t.bytes);
  ASSERT_TRUE(h.ok()) << h.status().message();
  std::map<std::string, int64_t> want = {
      {"traced_buf_trace_writer_packet_loss[0]", 2},
      {"traced_buf_trace_writer_packet_loss[1]", 5},
      {"chunks_lost_being_written", 3},
      {"chunks_lost_writer_unknown", 1},
  };
  EXPECT_EQ(RowValues(*h), want) << FormatHealthTable(*h);
  EXPECT_EQ(h->data_loss_total(), 2u + 5 + 3 + 1);

  // A trace written before the service added them (no chunks_lost_buffer):
  // the buffer's figure is the producer's own.
  ts->mutable_sluice_service_stats()->clear_chunks_lost_buffer();
  TraceBuilder old;
  old.Add(stats);
  h = AnalyzeTraceBytes(old.bytes);
  ASSERT_TRUE(h.ok()) << h.status().message();
  EXPECT_EQ(RowValues(*h)["traced_buf_trace_writer_packet_loss[0]"], 6);
}

// The BPF source writes its ring's losses twice: in BpfStats (read here)
// and as PerfSample.kernel_records_lost (read by upstream's
// trace_processor). `sluice stats` counts them once.
TEST(TraceHealthTest, BpfLossesAreCountedOnceThoughWrittenTwice) {
  TraceBuilder t;
  t.Add(StatsPacket());
  TracePacket bpf;
  auto* c = bpf.mutable_bpf_stats()->add_cpu_stats();
  c->set_cpu(1);
  c->set_dropped(11);
  t.Add(bpf);
  TracePacket lost;
  lost.mutable_perf_sample()->set_cpu(1);
  lost.mutable_perf_sample()->set_kernel_records_lost(11);
  t.Add(lost);
  auto h = AnalyzeTraceBytes(t.bytes);
  ASSERT_TRUE(h.ok()) << h.status().message();
  EXPECT_EQ(RowValues(*h), (std::map<std::string, int64_t>{{"bpf_ringbuf_dropped[1]", 11}}));
  EXPECT_EQ(h->data_loss_total(), 11u);
}

TEST(TraceHealthTest, TruncatedAndIncompleteTracesSaySo) {
  TraceBuilder t;
  TracePacket b;
  b.mutable_ftrace_events()->add_event()->mutable_print();
  t.Add(b);
  t.Add(b);
  std::string cut = t.bytes.substr(0, t.bytes.size() - 1);
  auto h = AnalyzeTraceBytes(cut);
  ASSERT_TRUE(h.ok()) << h.status().message();
  auto rows = RowValues(*h);
  EXPECT_EQ(rows["trace_file_truncated"], 1);
  EXPECT_EQ(rows["trace_stats_missing"], 1);  // Recorder died: no final stats.
  EXPECT_EQ(h->ftrace_events, 1u);
}

// An ftrace instance that started but never ended in a session that did end:
// its producer died (sluice-probes killed) or lost sluiced.
TEST(TraceHealthTest, FtraceSourceThatNeverEndedIsALoss) {
  TraceBuilder t;
  t.Add(FtraceStatsPacket(FtraceStats::START_OF_TRACE, 0, 0));  // Killed probes.
  t.Add(FtraceStatsPacket(FtraceStats::START_OF_TRACE, 0, 0));  // The restarted one.
  t.Add(FtraceStatsPacket(FtraceStats::END_OF_TRACE, 0, 0));
  t.Add(StatsPacket());
  auto h = AnalyzeTraceBytes(t.bytes);
  ASSERT_TRUE(h.ok()) << h.status().message();
  EXPECT_EQ(RowValues(*h), (std::map<std::string, int64_t>{{"ftrace_stats_end_missing", 1}}))
      << FormatHealthTable(*h);
  EXPECT_EQ(h->data_loss_total(), 1u);
}

// A snapshot of a running session (sluice clone): its ftrace source had not
// ended, which is what a snapshot is, not a loss.
TEST(TraceHealthTest, SnapshotOfARunningSessionLacksTheEndFiguresWithoutLoss) {
  TraceBuilder t;
  t.Add(FtraceStatsPacket(FtraceStats::START_OF_TRACE, 0, 0));
  TracePacket stats = StatsPacket();
  stats.mutable_trace_stats()->mutable_sluice_service_stats()->set_snapshot_of_session(7);
  t.Add(stats);
  auto h = AnalyzeTraceBytes(t.bytes);
  ASSERT_TRUE(h.ok()) << h.status().message();
  ASSERT_EQ(h->rows.size(), 1u) << FormatHealthTable(*h);
  EXPECT_EQ(h->rows[0].name, "ftrace_stats_end_missing");
  EXPECT_EQ(h->rows[0].severity, "info");
  EXPECT_NE(h->rows[0].explanation.find("snapshot (sluice clone) of session 7"), std::string::npos);
  EXPECT_EQ(h->data_loss_total(), 0u);
}

TEST(TraceHealthTest, MalformedPacketsAreCountedNotFatal) {
  TraceBuilder t;
  AppendTracePacketRecord(std::string("\x0a\x05\x08", 3), &t.bytes);  // Bundle overruns packet.
  AppendTracePacketRecord(std::string("\x00", 1), &t.bytes);          // Tag 0.
  // A stats packet whose stats do not parse.
  AppendTracePacketRecord(std::string("\x92\x02\x01\x08", 4), &t.bytes);
  t.Add(StatsPacket());
  auto h = AnalyzeTraceBytes(t.bytes);
  ASSERT_TRUE(h.ok()) << h.status().message();
  EXPECT_EQ(RowValues(*h)["packets_unparsable"], 3) << FormatHealthTable(*h);
}

TEST(TraceHealthTest, NotATraceIsAnError) {
  auto h = AnalyzeTraceBytes("hello, world");
  ASSERT_FALSE(h.ok());
  EXPECT_NE(h.status().message().find("not a Perfetto trace"), std::string::npos) << h.status().message();
}

// Traces recorded by the arm64 build inside Debian's arm64 6.12 kernel under
// QEMU (make vm-test ARCH=arm64; tests/data/query/README.md says how), read
// here by the x86_64 build. <name>.guest-stats.txt is what `sluice stats`
// printed in the guest: the x86_64 reader must find the same packets, bytes,
// events and sequences, and print the same table.
std::string QueryDataPath(const std::string& file) {
  std::string dir = "tests/data";
  if (const char* env = std::getenv("SLUICE_TEST_DATA_DIR")) dir = env;
  return dir + "/query/" + file;
}

class Arm64GuestTraceTest : public ::testing::TestWithParam<std::string> {};

TEST_P(Arm64GuestTraceTest, ReadsAsTheGuestReadIt) {
  auto guest = ReadFile(QueryDataPath(GetParam() + ".guest-stats.txt"));
  ASSERT_TRUE(guest.ok()) << guest.status().message();
  // "/out/<scenario>/trace.pftrace: P packets, B bytes, E ftrace events, S sequences"
  size_t eol = guest->find('\n');
  ASSERT_NE(eol, std::string::npos);
  std::string summary = guest->substr(0, eol);
  size_t colon = summary.find(": ");
  ASSERT_NE(colon, std::string::npos) << summary;
  unsigned long long packets = 0, bytes = 0, events = 0, sequences = 0;
  ASSERT_EQ(std::sscanf(summary.c_str() + colon + 2,
                        "%llu packets, %llu bytes, %llu ftrace events, %llu sequences",
                        &packets, &bytes, &events, &sequences), 4) << summary;

  auto h = AnalyzeTraceFile(QueryDataPath(GetParam() + ".pftrace"));
  ASSERT_TRUE(h.ok()) << h.status().message();
  EXPECT_EQ(h->file.packets, packets);
  EXPECT_EQ(h->file.bytes, bytes);
  EXPECT_EQ(h->ftrace_events, events);
  EXPECT_EQ(h->sequences, sequences);
  EXPECT_FALSE(h->file.truncated);
  EXPECT_EQ(FormatHealthTable(*h), guest->substr(eol + 1));
  EXPECT_EQ(h->data_loss_total(), 0u);
  // 10-ftrace-markers and 20-bpf wrote 2000 markers each, all in the trace.
  EXPECT_GE(h->events_by_name["print"], 2000u);
}

INSTANTIATE_TEST_SUITE_P(Arm64, Arm64GuestTraceTest, ::testing::Values("arm64", "arm64_bpf"));

// 30-overload in the arm64 guest: the recorder was stopped while 3201
// markers were written into a small kernel buffer, and the guest measured
// that the kernel overwrote 2448 events (its per-CPU overrun counter, read
// in the scenario). The trace must say exactly that loss here too.
TEST(Arm64GuestTraceTest, OverloadLossIsExact) {
  auto h = AnalyzeTraceFile(QueryDataPath("arm64_loss.pftrace"));
  ASSERT_TRUE(h.ok()) << h.status().message();
  EXPECT_EQ(h->data_loss_total(), 2448u) << FormatHealthTable(*h);
  std::map<std::string, int64_t> rows = RowValues(*h);
  EXPECT_EQ(rows["ftrace_cpu_overrun_delta[0]"], 2448) << FormatHealthTable(*h);
  EXPECT_EQ(h->ftrace_events, 755u);
}

}  // namespace
}  // namespace sluice

namespace sluice {
namespace {

// A relayed machine (machine_id 3): its packets, a clock sync, the
// TraceStats the host wrote for it, and the host's final TraceStats with the
// relay's figures, which win over the machine's own copy.
TEST(TraceHealthTest, RelayedMachineLossesAreRowsOfTheirOwnAndCount) {
  TraceBuilder t;
  TracePacket sync;
  sync.set_machine_id(3);
  sync.mutable_remote_clock_sync()->add_synced_clocks();
  t.Add(sync);
  TracePacket bundle;
  bundle.set_machine_id(3);
  bundle.set_trusted_packet_sequence_id(7);
  bundle.mutable_ftrace_events()->set_cpu(0);
  bundle.mutable_ftrace_events()->set_lost_events(true);
  t.Add(bundle);
  TracePacket own = StatsPacket();
  own.set_machine_id(3);
  own.mutable_trace_stats()->add_buffer_stats()->set_trace_writer_packet_loss(4);
  auto* early = own.mutable_trace_stats()->mutable_sluice_service_stats()->add_relay_machines();
  early->set_machine_id(3);
  early->set_chunks_dropped(1);
  t.Add(own);
  TracePacket host = StatsPacket();
  auto* relay = host.mutable_trace_stats()->mutable_sluice_service_stats()->add_relay_machines();
  relay->set_machine_id(3);
  relay->set_machine_name("vm");
  relay->set_chunks_dropped(3);
  relay->set_packets_dropped(30);
  relay->set_chunks_lost_in_transit(1);
  relay->set_clock_offset_ns(-42);
  relay->set_clock_error_ns(9);
  relay->set_clock_syncs(5);
  t.Add(host);

  auto h = AnalyzeTraceBytes(t.bytes);
  ASSERT_TRUE(h.ok());
  ASSERT_EQ(h->machines.size(), 1u);
  const MachineHealth& m = h->machines[0];
  EXPECT_EQ(m.machine_id, 3u);
  EXPECT_EQ(m.name, "vm");
  EXPECT_EQ(m.packets, 3u);
  EXPECT_EQ(m.sync_packets, 1u);
  EXPECT_EQ(m.chunks_dropped, 3u);  // the host's final figure
  EXPECT_EQ(m.buffer_chunks_lost.at(0), 4u);
  // The guest's CPU 0 lost events, not the host's.
  EXPECT_EQ(RowValues(*h), (std::map<std::string, int64_t>{{"relay_chunks_dropped[3]", 3},
                                                            {"relay_chunks_lost_in_transit[3]", 1},
                                                            {"relay_machine_ftrace_lost_events[3]", 1}}));
  EXPECT_EQ(h->data_loss_total(), 5u);
  const std::string table = FormatMachines(*h);
  EXPECT_NE(table.find("vm"), std::string::npos) << table;
  EXPECT_NE(table.find("-42"), std::string::npos) << table;
}

TEST(TraceHealthTest, OneMachineTraceHasNoMachineSection) {
  TraceBuilder t;
  t.Add(StatsPacket());
  auto h = AnalyzeTraceBytes(t.bytes);
  ASSERT_TRUE(h.ok());
  EXPECT_TRUE(h->machines.empty());
  EXPECT_EQ(FormatMachines(*h), "");
}

}  // namespace
}  // namespace sluice
