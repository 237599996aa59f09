// Tests for protos/: the Perfetto-compatible trace and config subset and
// sluice's IPC messages (docs/PROTOS.md).
//
// What is checked:
//  - field numbers that wire compatibility with upstream Perfetto depends on
//    are pinned (each was verified against upstream's .proto sources);
//  - a hand-encoded packet decodes to the expected fields (catches a wrong
//    number or wire type that a pure round trip would not);
//  - TracePacket (ftrace, compact sched, generic events), TraceStats,
//    TraceConfig and IPC envelopes survive serialize/parse;
//  - real-world Perfetto text configs parse with TextFormat, strictly, and
//    unknown fields are skipped in the lenient mode config loaders use.

#include <cstdint>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>

#include <google/protobuf/text_format.h>
#include <gtest/gtest.h>

#include "perfetto/common/trace_stats.pb.h"
#include "perfetto/config/data_source_config.pb.h"
#include "perfetto/config/trace_config.pb.h"
#include "perfetto/trace/trace.pb.h"
#include "perfetto/trace/extension_descriptor.pb.h"
#include "perfetto/trace/profiling/profile_packet.pb.h"
#include "perfetto/trace/trace_packet.pb.h"
#include "sluice/bpf.pb.h"
#include "sluice/bpf_config.pb.h"
#include "sluice/ipc.pb.h"

namespace sluice {
namespace {

namespace pp = ::perfetto::protos;

// Reads tests/data/configs/<name>. Tests run from the project root (make
// test); SLUICE_TEST_DATA_DIR overrides the data directory.
std::string ReadConfig(const std::string& name) {
  std::string dir = "tests/data";
  if (const char* env = std::getenv("SLUICE_TEST_DATA_DIR")) dir = env;
  std::ifstream in(dir + "/configs/" + name);
  if (!in) {
    ADD_FAILURE() << "cannot open " << dir << "/configs/" << name
                  << ": run from the project root or set SLUICE_TEST_DATA_DIR";
    return {};
  }
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// Strict TextFormat parse (unknown field names are errors).
bool ParseStrict(const std::string& text, pp::TraceConfig* cfg) {
  return google::protobuf::TextFormat::ParseFromString(text, cfg);
}

TEST(ProtosTest, FieldNumbersMatchUpstream) {
  // Trace / TracePacket.
  static_assert(pp::Trace::kPacketFieldNumber == 1);
  static_assert(pp::TracePacket::kFtraceEventsFieldNumber == 1);
  static_assert(pp::TracePacket::kProcessTreeFieldNumber == 2);
  static_assert(pp::TracePacket::kTrustedUidFieldNumber == 3);
  static_assert(pp::TracePacket::kClockSnapshotFieldNumber == 6);
  static_assert(pp::TracePacket::kProcessStatsFieldNumber == 9);
  static_assert(pp::TracePacket::kTimestampFieldNumber == 8);
  static_assert(pp::TracePacket::kTrustedPacketSequenceIdFieldNumber == 10);
  static_assert(pp::TracePacket::kSequenceFlagsFieldNumber == 13);
  static_assert(pp::TracePacket::kTraceConfigFieldNumber == 33);
  static_assert(pp::TracePacket::kFtraceStatsFieldNumber == 34);
  static_assert(pp::TracePacket::kTraceStatsFieldNumber == 35);
  static_assert(pp::TracePacket::kSynchronizationMarkerFieldNumber == 36);
  static_assert(pp::TracePacket::kIncrementalStateClearedFieldNumber == 41);
  static_assert(pp::TracePacket::kPreviousPacketDroppedFieldNumber == 42);
  static_assert(pp::TracePacket::kSystemInfoFieldNumber == 45);
  static_assert(pp::TracePacket::kServiceEventFieldNumber == 69);
  static_assert(pp::TracePacket::kPerfSampleFieldNumber == 66);
  static_assert(pp::TracePacket::kExtensionDescriptorFieldNumber == 72);
  static_assert(pp::PerfSample::kCpuFieldNumber == 1);
  static_assert(pp::PerfSample::kKernelRecordsLostFieldNumber == 17);
  static_assert(pp::ExtensionDescriptor::kExtensionSetFieldNumber == 1);
  static_assert(pp::TracePacket::kCompressedPacketsFieldNumber == 50);
  static_assert(pp::TracePacket::kTimestampClockIdFieldNumber == 58);
  static_assert(pp::TracePacket::kTrustedPidFieldNumber == 79);
  static_assert(pp::TracePacket::kFirstPacketOnSequenceFieldNumber == 87);

  // Ftrace.
  using Bundle = pp::FtraceEventBundle;
  static_assert(Bundle::kCpuFieldNumber == 1);
  static_assert(Bundle::kEventFieldNumber == 2);
  static_assert(Bundle::kLostEventsFieldNumber == 3);
  static_assert(Bundle::kCompactSchedFieldNumber == 4);
  static_assert(Bundle::kFtraceClockFieldNumber == 5);
  static_assert(Bundle::kFtraceTimestampFieldNumber == 6);
  static_assert(Bundle::kBootTimestampFieldNumber == 7);
  static_assert(Bundle::kPreviousBundleEndTimestampFieldNumber == 10);
  using Compact = Bundle::CompactSched;
  static_assert(Compact::kSwitchTimestampFieldNumber == 1);
  static_assert(Compact::kSwitchPrevStateFieldNumber == 2);
  static_assert(Compact::kSwitchNextPidFieldNumber == 3);
  static_assert(Compact::kSwitchNextPrioFieldNumber == 4);
  static_assert(Compact::kInternTableFieldNumber == 5);
  static_assert(Compact::kSwitchNextCommIndexFieldNumber == 6);
  static_assert(Compact::kWakingTimestampFieldNumber == 7);
  static_assert(Compact::kWakingPidFieldNumber == 8);
  static_assert(Compact::kWakingTargetCpuFieldNumber == 9);
  static_assert(Compact::kWakingPrioFieldNumber == 10);
  static_assert(Compact::kWakingCommIndexFieldNumber == 11);
  static_assert(Compact::kWakingCommonFlagsFieldNumber == 12);
  using Ev = pp::FtraceEvent;
  static_assert(Ev::kTimestampFieldNumber == 1);
  static_assert(Ev::kPidFieldNumber == 2);
  static_assert(Ev::kCommonFlagsFieldNumber == 5);
  static_assert(Ev::kPrintFieldNumber == 3);
  static_assert(Ev::kSchedSwitchFieldNumber == 4);
  static_assert(Ev::kCpuFrequencyFieldNumber == 11);
  static_assert(Ev::kCpuIdleFieldNumber == 13);
  static_assert(Ev::kSchedWakeupFieldNumber == 17);
  static_assert(Ev::kSchedWakingFieldNumber == 20);
  static_assert(Ev::kSchedWakeupNewFieldNumber == 114);
  static_assert(Ev::kTaskNewtaskFieldNumber == 235);
  static_assert(Ev::kTaskRenameFieldNumber == 236);
  static_assert(Ev::kSchedProcessExecFieldNumber == 237);
  static_assert(Ev::kSchedProcessExitFieldNumber == 238);
  static_assert(Ev::kSchedProcessForkFieldNumber == 239);
  static_assert(Ev::kSchedProcessFreeFieldNumber == 240);
  static_assert(Ev::kSchedProcessWaitFieldNumber == 242);
  static_assert(Ev::kGenericFieldNumber == 327);
  static_assert(Ev::kSysEnterFieldNumber == 329);
  static_assert(Ev::kSysExitFieldNumber == 330);
  static_assert(pp::GenericFtraceEvent::Field::kStrValueFieldNumber == 3);
  static_assert(pp::GenericFtraceEvent::Field::kIntValueFieldNumber == 4);
  static_assert(pp::GenericFtraceEvent::Field::kUintValueFieldNumber == 5);
  static_assert(pp::FtraceCpuStats::kReadEventsFieldNumber == 9);
  static_assert(pp::FtraceStats::kFtraceParseErrorsFieldNumber == 9);
  static_assert(pp::ProcessTree::Process::kProcessStartFromBootFieldNumber == 7);
  static_assert(pp::ProcessTree::Process::kCmdlineIsCommFieldNumber == 9);
  static_assert(pp::ProcessTree::Thread::kTgidFieldNumber == 3);
  static_assert(pp::ProcessStats::Process::kVmRssKbFieldNumber == 3);
  static_assert(pp::ProcessStats::Process::kRuntimeUserModeFieldNumber == 21);
  static_assert(pp::TracingServiceEvent::kAllDataSourcesStartedFieldNumber == 1);
  static_assert(pp::TracingServiceEvent::kTracingDisabledFieldNumber == 5);

  // TraceStats.
  using Buf = pp::TraceStats::BufferStats;
  static_assert(Buf::kBytesWrittenFieldNumber == 1);
  static_assert(Buf::kChunksOverwrittenFieldNumber == 3);
  static_assert(Buf::kPatchesFailedFieldNumber == 6);
  static_assert(Buf::kAbiViolationsFieldNumber == 9);
  static_assert(Buf::kBufferSizeFieldNumber == 12);
  static_assert(Buf::kChunksDiscardedFieldNumber == 18);
  static_assert(Buf::kTraceWriterPacketLossFieldNumber == 19);
  static_assert(pp::TraceStats::kFinalFlushOutcomeFieldNumber == 15);

  // Config.
  static_assert(pp::TraceConfig::kBuffersFieldNumber == 1);
  static_assert(pp::TraceConfig::kDataSourcesFieldNumber == 2);
  static_assert(pp::TraceConfig::kDurationMsFieldNumber == 3);
  static_assert(pp::TraceConfig::kWriteIntoFileFieldNumber == 8);
  static_assert(pp::TraceConfig::kOutputPathFieldNumber == 29);
  static_assert(pp::DataSourceConfig::kFtraceConfigFieldNumber == 100);
  static_assert(pp::DataSourceConfig::kProcessStatsConfigFieldNumber == 103);
  static_assert(pp::FtraceConfig::kInstanceNameFieldNumber == 25);
  static_assert(pp::FtraceConfig::kCompactSchedFieldNumber == 12);

  // sluice's extension: changing it breaks every stored sluice config and
  // must be a deliberate decision (docs/PROTOS.md).
  static_assert(pp::DataSourceConfig::kBpfConfigFieldNumber == 60001);
  static_assert(pp::TracePacket::kBpfStatsFieldNumber == 60002);
  static_assert(pp::TraceStats::kSluiceServiceStatsFieldNumber == 60003);
  static_assert(pp::FtraceConfig::kRingBufferReadModeFieldNumber == 60004);
  static_assert(pp::FtraceCpuStats::kSluiceReadPathFieldNumber == 60005);
  static_assert(pp::FtraceCpuStats::kSluiceSmbFullWaitsFieldNumber == 60006);
  static_assert(pp::FtraceCpuStats::kSluiceSmbFullWaitMsFieldNumber == 60007);
  static_assert(
      static_cast<int>(sluice::protos::BpfStatsPacket::kBpfStatsFieldNumber) ==
      static_cast<int>(pp::TracePacket::kBpfStatsFieldNumber));
  SUCCEED();
}

// Bytes written by hand from the upstream schema:
//   0a 0f       TracePacket.ftrace_events (1), 15 bytes
//     08 03       FtraceEventBundle.cpu (1) = 3
//     12 0b       FtraceEventBundle.event (2), 11 bytes
//       08 e8 07    FtraceEvent.timestamp (1) = 1000
//       10 2a       FtraceEvent.pid (2) = 42
//       1a 04       FtraceEvent.print (3), 4 bytes
//         12 02 68 69  PrintFtraceEvent.buf (2) = "hi"
//   40 e8 07    TracePacket.timestamp (8) = 1000
//   50 07       TracePacket.trusted_packet_sequence_id (10) = 7
TEST(ProtosTest, DecodesHandEncodedPacket) {
  const uint8_t kBytes[] = {0x0a, 0x0f, 0x08, 0x03, 0x12, 0x0b, 0x08, 0xe8,
                            0x07, 0x10, 0x2a, 0x1a, 0x04, 0x12, 0x02, 0x68,
                            0x69, 0x40, 0xe8, 0x07, 0x50, 0x07};
  pp::TracePacket packet;
  ASSERT_TRUE(packet.ParseFromArray(kBytes, sizeof(kBytes)));
  EXPECT_EQ(packet.unknown_fields().field_count(), 0);
  EXPECT_EQ(packet.timestamp(), 1000u);
  EXPECT_EQ(packet.trusted_packet_sequence_id(), 7u);
  ASSERT_TRUE(packet.has_ftrace_events());
  EXPECT_EQ(packet.ftrace_events().cpu(), 3u);
  ASSERT_EQ(packet.ftrace_events().event_size(), 1);
  const pp::FtraceEvent& ev = packet.ftrace_events().event(0);
  EXPECT_EQ(ev.timestamp(), 1000u);
  EXPECT_EQ(ev.pid(), 42u);
  EXPECT_EQ(ev.print().buf(), "hi");

  // And we encode it back to exactly the same bytes.
  std::string out;
  ASSERT_TRUE(packet.SerializeToString(&out));
  EXPECT_EQ(out, std::string(reinterpret_cast<const char*>(kBytes),
                             sizeof(kBytes)));
}

TEST(ProtosTest, TracePacketWithFtraceRoundTrips) {
  pp::Trace trace;
  pp::TracePacket* packet = trace.add_packet();
  packet->set_trusted_packet_sequence_id(3);
  packet->set_trusted_uid(0);
  packet->set_sequence_flags(pp::TracePacket::SEQ_INCREMENTAL_STATE_CLEARED);
  packet->set_previous_packet_dropped(pp::TracePacket::DATA_LOSS_PRESENT);
  packet->set_first_packet_on_sequence(true);

  pp::FtraceEventBundle* bundle = packet->mutable_ftrace_events();
  bundle->set_cpu(1);
  bundle->set_lost_events(true);
  bundle->set_previous_bundle_end_timestamp(999);
  bundle->set_ftrace_clock(pp::FTRACE_CLOCK_MONO_RAW);

  pp::FtraceEvent* ev = bundle->add_event();
  ev->set_timestamp(1000);
  ev->set_pid(10);
  pp::SchedSwitchFtraceEvent* sw = ev->mutable_sched_switch();
  sw->set_prev_comm("bash");
  sw->set_prev_pid(10);
  sw->set_prev_prio(120);
  sw->set_prev_state(1);
  sw->set_next_comm("swapper/1");
  sw->set_next_pid(0);
  sw->set_next_prio(120);

  ev = bundle->add_event();
  ev->set_timestamp(1001);
  ev->set_pid(11);
  pp::GenericFtraceEvent* gen = ev->mutable_generic();
  gen->set_event_name("block_rq_issue");
  auto* f = gen->add_field();
  f->set_name("dev");
  f->set_uint_value(8388608);
  f = gen->add_field();
  f->set_name("rwbs");
  f->set_str_value("W");
  f = gen->add_field();
  f->set_name("delta");
  f->set_int_value(-5);

  ev = bundle->add_event();
  ev->set_timestamp(1002);
  ev->set_pid(12);
  ev->mutable_sys_enter()->set_id(64);

  pp::FtraceEventBundle::CompactSched* cs = bundle->mutable_compact_sched();
  cs->add_intern_table("swapper/1");
  cs->add_switch_timestamp(2000);
  cs->add_switch_timestamp(5);
  cs->add_switch_prev_state(0x100);
  cs->add_switch_prev_state(1);
  cs->add_switch_next_pid(0);
  cs->add_switch_next_pid(12);
  cs->add_switch_next_prio(120);
  cs->add_switch_next_prio(100);
  cs->add_switch_next_comm_index(0);
  cs->add_switch_next_comm_index(0);
  cs->add_waking_timestamp(2001);
  cs->add_waking_pid(12);
  cs->add_waking_target_cpu(1);
  cs->add_waking_prio(100);
  cs->add_waking_comm_index(0);
  cs->add_waking_common_flags(1);

  pp::TracePacket* tree_packet = trace.add_packet();
  auto* proc = tree_packet->mutable_process_tree()->add_processes();
  proc->set_pid(12);
  proc->set_ppid(1);
  proc->add_cmdline("/usr/bin/app");
  proc->add_cmdline("--flag");
  proc->set_uid(1000);
  auto* thread = tree_packet->mutable_process_tree()->add_threads();
  thread->set_tid(13);
  thread->set_tgid(12);
  thread->set_name("worker");

  pp::TracePacket* clock_packet = trace.add_packet();
  auto* clk = clock_packet->mutable_clock_snapshot()->add_clocks();
  clk->set_clock_id(pp::BUILTIN_CLOCK_BOOTTIME);
  clk->set_timestamp(123456789);
  clock_packet->mutable_clock_snapshot()->set_primary_trace_clock(
      pp::BUILTIN_CLOCK_BOOTTIME);

  pp::TracePacket* info_packet = trace.add_packet();
  auto* info = info_packet->mutable_system_info();
  info->mutable_utsname()->set_sysname("Linux");
  info->mutable_utsname()->set_release("6.18.0");
  info->set_page_size(4096);
  info->set_num_cpus(2);

  pp::TracePacket* fstats_packet = trace.add_packet();
  auto* fstats = fstats_packet->mutable_ftrace_stats();
  fstats->set_phase(pp::FtraceStats::END_OF_TRACE);
  auto* cpu = fstats->add_cpu_stats();
  cpu->set_cpu(0);
  cpu->set_overrun(17);
  cpu->set_oldest_event_ts(12.5);
  cpu->set_dropped_events(3);
  fstats->add_unknown_ftrace_events("foo/bar");
  fstats->add_ftrace_parse_errors(pp::FTRACE_STATUS_ABI_END_OVERFLOW);

  pp::TracePacket* pstats_packet = trace.add_packet();
  auto* pstat = pstats_packet->mutable_process_stats()->add_processes();
  pstat->set_pid(12);
  pstat->set_vm_rss_kb(2048);
  pstat->set_oom_score_adj(-100);
  trace.add_packet()->mutable_service_event()->set_all_data_sources_started(
      true);

  std::string bytes;
  ASSERT_TRUE(trace.SerializeToString(&bytes));
  // A trace file is a sequence of field-1 length-delimited packets.
  ASSERT_FALSE(bytes.empty());
  EXPECT_EQ(static_cast<uint8_t>(bytes[0]), 0x0a);

  pp::Trace parsed;
  ASSERT_TRUE(parsed.ParseFromString(bytes));
  ASSERT_EQ(parsed.packet_size(), 7);
  const pp::TracePacket& p0 = parsed.packet(0);
  EXPECT_EQ(p0.trusted_packet_sequence_id(), 3u);
  EXPECT_TRUE(p0.has_trusted_uid());
  EXPECT_EQ(p0.previous_packet_dropped(), 1u);
  EXPECT_TRUE(p0.first_packet_on_sequence());
  const pp::FtraceEventBundle& b = p0.ftrace_events();
  EXPECT_TRUE(b.lost_events());
  EXPECT_EQ(b.ftrace_clock(), pp::FTRACE_CLOCK_MONO_RAW);
  ASSERT_EQ(b.event_size(), 3);
  EXPECT_EQ(b.event(0).sched_switch().next_comm(), "swapper/1");
  EXPECT_EQ(b.event(0).sched_switch().prev_state(), 1);
  ASSERT_EQ(b.event(1).generic().field_size(), 3);
  EXPECT_EQ(b.event(1).generic().field(0).uint_value(), 8388608u);
  EXPECT_EQ(b.event(1).generic().field(1).str_value(), "W");
  EXPECT_EQ(b.event(1).generic().field(2).int_value(), -5);
  EXPECT_EQ(b.event(2).sys_enter().id(), 64);
  EXPECT_EQ(b.compact_sched().switch_timestamp_size(), 2);
  EXPECT_EQ(b.compact_sched().switch_prev_state(0), 0x100);
  EXPECT_EQ(b.compact_sched().waking_common_flags(0), 1u);
  EXPECT_EQ(parsed.packet(1).process_tree().processes(0).cmdline(1), "--flag");
  EXPECT_EQ(parsed.packet(1).process_tree().threads(0).tgid(), 12);
  EXPECT_EQ(parsed.packet(2).clock_snapshot().clocks(0).timestamp(),
            123456789u);
  EXPECT_EQ(parsed.packet(3).system_info().utsname().release(), "6.18.0");
  EXPECT_EQ(parsed.packet(4).ftrace_stats().cpu_stats(0).oldest_event_ts(),
            12.5);
  EXPECT_EQ(parsed.packet(4).ftrace_stats().ftrace_parse_errors(0),
            pp::FTRACE_STATUS_ABI_END_OVERFLOW);
  EXPECT_EQ(parsed.packet(5).process_stats().processes(0).oom_score_adj(), -100);
  EXPECT_TRUE(parsed.packet(6).service_event().all_data_sources_started());
}

TEST(ProtosTest, TraceStatsRoundTrips) {
  pp::TracePacket packet;
  pp::TraceStats* stats = packet.mutable_trace_stats();
  pp::TraceStats::BufferStats* buf = stats->add_buffer_stats();
  buf->set_buffer_size(1 << 20);
  buf->set_bytes_written(1);
  buf->set_bytes_overwritten(2);
  buf->set_bytes_read(3);
  buf->set_padding_bytes_written(4);
  buf->set_padding_bytes_cleared(5);
  buf->set_chunks_written(6);
  buf->set_chunks_rewritten(7);
  buf->set_chunks_overwritten(8);
  buf->set_chunks_discarded(9);
  buf->set_chunks_read(10);
  buf->set_chunks_committed_out_of_order(11);
  buf->set_write_wrap_count(12);
  buf->set_patches_succeeded(13);
  buf->set_patches_failed(14);
  buf->set_readaheads_succeeded(15);
  buf->set_readaheads_failed(16);
  buf->set_abi_violations(17);
  buf->set_trace_writer_packet_loss(18);
  stats->set_producers_connected(1);
  stats->set_producers_seen(2);
  stats->set_data_sources_registered(3);
  stats->set_data_sources_seen(4);
  stats->set_tracing_sessions(1);
  stats->set_total_buffers(1);
  stats->set_chunks_discarded(5);
  stats->set_patches_discarded(6);
  stats->set_invalid_packets(7);
  stats->set_flushes_requested(8);
  stats->set_flushes_succeeded(7);
  stats->set_flushes_failed(1);
  stats->set_final_flush_outcome(pp::TraceStats::FINAL_FLUSH_FAILED);

  std::string bytes;
  ASSERT_TRUE(packet.SerializeToString(&bytes));
  pp::TracePacket parsed;
  ASSERT_TRUE(parsed.ParseFromString(bytes));
  ASSERT_TRUE(parsed.has_trace_stats());
  const pp::TraceStats::BufferStats& b = parsed.trace_stats().buffer_stats(0);
  EXPECT_EQ(b.buffer_size(), 1u << 20);
  EXPECT_EQ(b.chunks_overwritten(), 8u);
  EXPECT_EQ(b.chunks_discarded(), 9u);
  EXPECT_EQ(b.patches_failed(), 14u);
  EXPECT_EQ(b.abi_violations(), 17u);
  EXPECT_EQ(b.trace_writer_packet_loss(), 18u);
  EXPECT_EQ(parsed.trace_stats().final_flush_outcome(),
            pp::TraceStats::FINAL_FLUSH_FAILED);
  EXPECT_EQ(parsed.trace_stats().flushes_failed(), 1u);
}

TEST(ProtosTest, TraceConfigRoundTripsThroughBinaryAndText) {
  pp::TraceConfig cfg;
  auto* buf = cfg.add_buffers();
  buf->set_size_kb(4096);
  buf->set_fill_policy(pp::TraceConfig::BufferConfig::DISCARD);
  cfg.set_duration_ms(2000);
  cfg.set_write_into_file(true);
  cfg.set_output_path("/tmp/x.pftrace");
  cfg.set_flush_period_ms(1000);
  cfg.mutable_incremental_state_config()->set_clear_period_ms(500);

  pp::DataSourceConfig* ds = cfg.add_data_sources()->mutable_config();
  ds->set_name("linux.ftrace");
  ds->set_target_buffer(0);
  pp::FtraceConfig* ft = ds->mutable_ftrace_config();
  ft->add_ftrace_events("sched/sched_switch");
  ft->set_buffer_size_kb(1024);
  ft->mutable_compact_sched()->set_enabled(true);
  ft->set_instance_name("sluice");

  pp::DataSourceConfig* bpf = cfg.add_data_sources()->mutable_config();
  bpf->set_name("linux.bpf");
  bpf->mutable_bpf_config()->add_events("sched/sched_switch");
  bpf->mutable_bpf_config()->add_comm_prefixes("post");
  bpf->mutable_bpf_config()->set_ringbuf_size_kb(256);

  std::string bytes;
  ASSERT_TRUE(cfg.SerializeToString(&bytes));
  pp::TraceConfig parsed;
  ASSERT_TRUE(parsed.ParseFromString(bytes));
  EXPECT_EQ(parsed.buffers(0).fill_policy(),
            pp::TraceConfig::BufferConfig::DISCARD);
  EXPECT_EQ(parsed.data_sources(0).config().ftrace_config().instance_name(),
            "sluice");
  EXPECT_EQ(parsed.data_sources(1).config().bpf_config().ringbuf_size_kb(),
            256u);

  std::string text;
  ASSERT_TRUE(google::protobuf::TextFormat::PrintToString(cfg, &text));
  EXPECT_NE(text.find("bpf_config {"), std::string::npos) << text;
  pp::TraceConfig from_text;
  ASSERT_TRUE(ParseStrict(text, &from_text));
  EXPECT_EQ(from_text.SerializeAsString(), bytes);
}

TEST(ProtosTest, ParsesAndroidPerfettoTextConfig) {
  pp::TraceConfig cfg;
  ASSERT_TRUE(ParseStrict(ReadConfig("android_full.pbtx"), &cfg));
  EXPECT_EQ(cfg.buffers_size(), 2);
  EXPECT_EQ(cfg.duration_ms(), 10000u);
  EXPECT_TRUE(cfg.write_into_file());
  EXPECT_EQ(cfg.incremental_state_config().clear_period_ms(), 5000u);
  bool saw_ftrace = false, saw_power = false, saw_perf = false;
  for (const auto& ds : cfg.data_sources()) {
    const pp::DataSourceConfig& c = ds.config();
    if (c.name() == "linux.ftrace") {
      saw_ftrace = true;
      EXPECT_EQ(c.ftrace_config().ftrace_events_size(), 12);
      EXPECT_EQ(c.ftrace_config().atrace_categories_size(), 3);
      EXPECT_TRUE(c.ftrace_config().compact_sched().enabled());
    } else if (c.name() == "android.power") {
      saw_power = true;
      EXPECT_EQ(c.android_power_config().battery_counters_size(), 3);
    } else if (c.name() == "linux.perf") {
      saw_perf = true;
      EXPECT_EQ(c.perf_event_config().timebase().frequency(), 100u);
    }
  }
  EXPECT_TRUE(saw_ftrace && saw_power && saw_perf);
}

TEST(ProtosTest, ParsesLinuxFtraceProcessStatsTextConfig) {
  pp::TraceConfig cfg;
  ASSERT_TRUE(ParseStrict(ReadConfig("linux_ftrace_process_stats.pbtx"), &cfg));
  ASSERT_EQ(cfg.data_sources_size(), 3);
  const pp::DataSourceConfig& ftrace = cfg.data_sources(0).config();
  EXPECT_EQ(ftrace.name(), "linux.ftrace");
  EXPECT_EQ(ftrace.ftrace_config().buffer_size_kb(), 8192u);
  EXPECT_EQ(ftrace.ftrace_config().drain_period_ms(), 100u);
  EXPECT_EQ(ftrace.ftrace_config().ksyms_mem_policy(),
            pp::FtraceConfig::KSYMS_RETAIN);
  EXPECT_FALSE(ftrace.ftrace_config().print_filter().rules(0).allow());
  const pp::DataSourceConfig& ps = cfg.data_sources(1).config();
  EXPECT_EQ(ps.target_buffer(), 1u);
  EXPECT_TRUE(ps.process_stats_config().scan_all_processes_on_start());
  EXPECT_EQ(ps.process_stats_config().proc_stats_poll_ms(), 1000u);
  EXPECT_EQ(cfg.builtin_data_sources().primary_trace_clock(),
            pp::BUILTIN_CLOCK_BOOTTIME);
}

TEST(ProtosTest, ParsesBpfTextConfig) {
  pp::TraceConfig cfg;
  ASSERT_TRUE(ParseStrict(ReadConfig("linux_bpf.pbtx"), &cfg));
  const sluice::protos::BpfConfig& bpf =
      cfg.data_sources(0).config().bpf_config();
  EXPECT_EQ(bpf.events_size(), 4);
  EXPECT_EQ(bpf.tgids(0), 1);
  EXPECT_EQ(bpf.comm_prefixes(1), "nginx");
  EXPECT_EQ(bpf.per_cpu_rate_limit(), 200000u);
  EXPECT_EQ(bpf.ringbuf_size_kb(), 4096u);
  EXPECT_EQ(bpf.marker_payload_bytes(), 256u);
}

TEST(ProtosTest, LenientParserSkipsFieldsUnknownToSluice) {
  // A config for a newer Perfetto: an unmirrored data source config and a
  // field that does not exist anywhere yet.
  const std::string text = R"(
    buffers { size_kb: 1024 }
    data_sources {
      config {
        name: "android.statsd"
        statsd_tracing_config { push_atom_id: ATOM_SCREEN_STATE_CHANGED }
      }
    }
    data_sources {
      config {
        name: "linux.ftrace"
        ftrace_config { ftrace_events: "sched/sched_switch" future_knob: 3 }
      }
    }
    some_future_option { nested { x: 1 } }
    duration_ms: 1000
  )";
  pp::TraceConfig strict;
  EXPECT_FALSE(ParseStrict(text, &strict));

  google::protobuf::TextFormat::Parser lenient;
  lenient.AllowUnknownField(true);
  pp::TraceConfig cfg;
  ASSERT_TRUE(lenient.ParseFromString(text, &cfg));
  EXPECT_EQ(cfg.duration_ms(), 1000u);
  ASSERT_EQ(cfg.data_sources_size(), 2);
  EXPECT_EQ(cfg.data_sources(0).config().name(), "android.statsd");
  EXPECT_EQ(cfg.data_sources(1).config().ftrace_config().ftrace_events(0),
            "sched/sched_switch");
}

TEST(ProtosTest, UnknownBinaryFieldsSurviveRoundTrip) {
  // A producer or a newer Perfetto may send fields we do not declare; they
  // must pass through the service untouched.
  pp::DataSourceConfig cfg;
  cfg.set_name("android.statsd");
  std::string bytes = cfg.SerializeAsString();
  bytes += std::string("\xaa\x07\x02\x08\x01", 5);  // field 117, {1: 1}
  pp::DataSourceConfig parsed;
  ASSERT_TRUE(parsed.ParseFromString(bytes));
  EXPECT_EQ(parsed.SerializeAsString(), bytes);
}

TEST(ProtosTest, IpcEnvelopesRoundTrip) {
  namespace sp = ::sluice::protos;
  sp::ProducerToService p2s;
  sp::CommitDataRequest* commit = p2s.mutable_commit_data();
  auto* mv = commit->add_chunks_to_move();
  mv->set_page(3);
  mv->set_chunk(1);
  mv->set_target_buffer(0);
  auto* patch_req = commit->add_chunks_to_patch();
  patch_req->set_target_buffer(0);
  patch_req->set_writer_id(5);
  patch_req->set_chunk_id(77);
  auto* patch = patch_req->add_patches();
  patch->set_offset(128);
  patch->set_data(std::string("\x85\x80\x80\x00", 4));
  patch_req->set_has_more_patches(false);
  commit->set_flush_request_id(9);

  // Frame = 4-byte little-endian length + envelope.
  std::string body = p2s.SerializeAsString();
  std::string frame(4, '\0');
  const uint32_t len = static_cast<uint32_t>(body.size());
  for (int i = 0; i < 4; i++) frame[i] = static_cast<char>((len >> (8 * i)) & 0xff);
  frame += body;

  uint32_t got_len = 0;
  for (int i = 0; i < 4; i++)
    got_len |= static_cast<uint32_t>(static_cast<uint8_t>(frame[i])) << (8 * i);
  ASSERT_EQ(got_len, body.size());
  sp::ProducerToService parsed;
  ASSERT_TRUE(parsed.ParseFromArray(frame.data() + 4, static_cast<int>(got_len)));
  ASSERT_EQ(parsed.msg_case(), sp::ProducerToService::kCommitData);
  EXPECT_EQ(parsed.commit_data().chunks_to_patch(0).patches(0).data().size(), 4u);
  EXPECT_EQ(parsed.commit_data().flush_request_id(), 9u);

  sp::ServiceToProducer s2p;
  sp::StartDataSource* start = s2p.mutable_start_data_source();
  start->set_data_source_id(42);
  start->mutable_config()->set_name("linux.bpf");
  start->mutable_config()->mutable_bpf_config()->add_tgids(100);
  sp::ServiceToProducer s2p_parsed;
  ASSERT_TRUE(s2p_parsed.ParseFromString(s2p.SerializeAsString()));
  EXPECT_EQ(s2p_parsed.start_data_source().config().bpf_config().tgids(0), 100);

  sp::ServiceToConsumer s2c;
  s2c.set_request_id(4);
  auto* slice = s2c.mutable_read_buffers()->add_slices();
  slice->set_data("packet");
  slice->set_last_slice_for_packet(true);
  s2c.mutable_read_buffers()->set_last(true);
  sp::ServiceToConsumer s2c_parsed;
  ASSERT_TRUE(s2c_parsed.ParseFromString(s2c.SerializeAsString()));
  EXPECT_EQ(s2c_parsed.request_id(), 4u);
  EXPECT_TRUE(s2c_parsed.read_buffers().last());

  // An empty envelope parses but names no message: receivers must treat
  // MSG_NOT_SET as a protocol error.
  sp::ConsumerToService empty;
  ASSERT_TRUE(empty.ParseFromString(""));
  EXPECT_EQ(empty.msg_case(), sp::ConsumerToService::MSG_NOT_SET);
}

}  // namespace
}  // namespace sluice
