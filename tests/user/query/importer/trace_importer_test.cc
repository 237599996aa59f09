// TraceImporter through QueryEngine::OpenBytes on traces built here: what
// each kind of packet becomes in the tables, and what damage becomes in
// `stats`. Semantics of sched/thread_state/thread/process are the trackers'
// tests; the comparison with upstream Perfetto is query_reference_test.
#include "user/query/importer/trace_importer.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "perfetto/trace/trace_packet.pb.h"
#include "tests/user/query/query_test_util.h"
#include "user/query/engine/query_engine.h"

namespace sluice {
namespace {

using perfetto::protos::FtraceEvent;
using perfetto::protos::FtraceEventBundle;
using perfetto::protos::FtraceStats;
using perfetto::protos::TracePacket;
using testing::Rows;
using testing::TraceBuilder;

FtraceEvent* AddEvent(FtraceEventBundle* bundle, uint64_t ts, uint32_t pid) {
  FtraceEvent* e = bundle->add_event();
  e->set_timestamp(ts);
  e->set_pid(pid);
  return e;
}

TracePacket BundlePacket(uint32_t cpu, uint32_t sequence = 1) {
  TracePacket p;
  p.set_trusted_packet_sequence_id(sequence);
  p.mutable_ftrace_events()->set_cpu(cpu);
  return p;
}

std::unique_ptr<QueryEngine> Open(const std::string& bytes) {
  auto engine = QueryEngine::OpenBytes(bytes);
  EXPECT_TRUE(engine.ok()) << engine.status().message();
  return engine.ok() ? std::move(engine).value() : nullptr;
}

TEST(TraceImporterTest, PlainEventsBecomeFtraceEventRowsWithArgs) {
  TraceBuilder trace;
  TracePacket p = BundlePacket(1);
  auto* sw = AddEvent(p.mutable_ftrace_events(), 1000, 10)->mutable_sched_switch();
  sw->set_prev_comm("a");
  sw->set_prev_pid(10);
  sw->set_prev_prio(120);
  sw->set_prev_state(1);
  sw->set_next_comm("b");
  sw->set_next_pid(20);
  sw->set_next_prio(-2);
  auto* print = AddEvent(p.mutable_ftrace_events(), 2000, 20)->mutable_print();
  print->set_ip(77);
  print->set_buf("hello\n");
  trace.Add(p);
  auto engine = Open(trace.bytes);
  ASSERT_TRUE(engine);
  sqlite3* db = engine->db();
  EXPECT_EQ(Rows(db, "select ts, name, cpu, (select tid from thread t where t.utid = e.utid) from ftrace_event e"),
            (std::vector<std::string>{"1000|sched_switch|1|10", "2000|print|1|20"}));
  // Args: keys in text order, Perfetto's value types, NULL where another
  // type's column.
  EXPECT_EQ(Rows(db, "select key, int_value, string_value, value_type from ftrace_event e "
                     "join args a using(arg_set_id) where e.name = 'sched_switch' order by a.id"),
            (std::vector<std::string>{"next_comm|NULL|b|string", "next_pid|20|NULL|int", "next_prio|-2|NULL|int",
                                      "prev_comm|NULL|a|string", "prev_pid|10|NULL|int",
                                      "prev_prio|120|NULL|int", "prev_state|1|NULL|int"}));
  EXPECT_EQ(Rows(db, "select key, display_value, value_type from ftrace_event e join args a using(arg_set_id) "
                     "where e.name = 'print' order by key"),
            (std::vector<std::string>{"buf|hello\n|string", "ip|77|uint"}));
}

TEST(TraceImporterTest, IdenticalArgSetsAreSharedAsInPerfetto) {
  TraceBuilder trace;
  TracePacket p = BundlePacket(0);
  for (uint64_t ts : {100, 200, 300}) {
    auto* idle = AddEvent(p.mutable_ftrace_events(), ts, 0)->mutable_cpu_idle();
    idle->set_state(ts == 200 ? 1 : 4294967295u);
    idle->set_cpu_id(0);
  }
  trace.Add(p);
  auto engine = Open(trace.bytes);
  ASSERT_TRUE(engine);
  EXPECT_EQ(Rows(engine->db(), "select count(distinct arg_set_id), count(*) from ftrace_event"),
            std::vector<std::string>{"2|3"});
  // Two sets of two args, and the cpu_idle track's dimension (cpu 0), which
  // Perfetto also keeps in args.
  EXPECT_EQ(Rows(engine->db(), "select count(*) from args"), std::vector<std::string>{"5"});
}

TEST(TraceImporterTest, CpuIdleAndFrequencyAreCounterTracksPerCpu) {
  TraceBuilder trace;
  TracePacket p = BundlePacket(0);
  auto* idle = AddEvent(p.mutable_ftrace_events(), 100, 0)->mutable_cpu_idle();
  idle->set_state(1);
  idle->set_cpu_id(3);
  auto* freq = AddEvent(p.mutable_ftrace_events(), 200, 0)->mutable_cpu_frequency();
  freq->set_state(1800000);
  freq->set_cpu_id(1);
  trace.Add(p);
  auto engine = Open(trace.bytes);
  ASSERT_TRUE(engine);
  EXPECT_EQ(Rows(engine->db(), "select c.ts, t.name, t.type, t.cpu, cast(c.value as int) from counter c "
                               "join cpu_counter_track t on c.track_id = t.id order by c.ts"),
            (std::vector<std::string>{"100|cpuidle|cpu_idle|3|1", "200|cpufreq|cpu_frequency|1|1800000"}));
  EXPECT_EQ(Rows(engine->db(), "select count(*) from track"), std::vector<std::string>{"2"});
}

TEST(TraceImporterTest, CompactSchedIsDecodedAsPerfettoDoes) {
  TraceBuilder trace;
  TracePacket p = BundlePacket(0);
  auto* cs = p.mutable_ftrace_events()->mutable_compact_sched();
  cs->add_intern_table("first");
  cs->add_intern_table("second");
  // Switches at 1000 and 1500 (deltas), wakings at 1200.
  for (auto [delta, pid, comm] : {std::tuple{1000, 5, 0}, std::tuple{500, 6, 1}}) {
    cs->add_switch_timestamp(static_cast<uint64_t>(delta));
    cs->add_switch_prev_state(1);
    cs->add_switch_next_pid(pid);
    cs->add_switch_next_prio(120);
    cs->add_switch_next_comm_index(static_cast<uint32_t>(comm));
  }
  cs->add_waking_timestamp(1200);
  cs->add_waking_pid(6);
  cs->add_waking_target_cpu(1);
  cs->add_waking_prio(100);
  cs->add_waking_comm_index(1);
  cs->add_waking_common_flags(0);
  trace.Add(p);
  auto engine = Open(trace.bytes);
  ASSERT_TRUE(engine);
  sqlite3* db = engine->db();
  // The first switch on the CPU has no known previous task: skipped, as in
  // Perfetto; it still tells who runs next (the waker, and the next prev).
  EXPECT_EQ(Rows(db, "select ts, name, (select tid from thread t where t.utid = e.utid) from ftrace_event e"),
            (std::vector<std::string>{"1200|sched_waking|5", "1500|sched_switch|5"}));
  EXPECT_EQ(Rows(db, "select key || '=' || display_value from ftrace_event e join args using(arg_set_id) "
                     "where e.name = 'sched_switch' order by key"),
            (std::vector<std::string>{"next_comm=second", "next_pid=6", "next_prio=120", "prev_comm=first",
                                      "prev_pid=5", "prev_prio=120", "prev_state=1"}));
  EXPECT_EQ(Rows(db, "select value from stats where name = 'compact_sched_switch_skipped'"),
            std::vector<std::string>{"1"});
}

TEST(TraceImporterTest, EventsOfSeveralCpusAndPacketsComeOutInTimestampOrder) {
  TraceBuilder trace;
  // CPU 0's bundle first, covering 100..900; then CPU 1's, 150..950: the
  // file order is not the time order.
  for (uint32_t cpu : {0u, 1u}) {
    TracePacket p = BundlePacket(cpu);
    for (uint64_t ts = 100 + 50 * cpu; ts < 1000; ts += 200) {
      auto* idle = AddEvent(p.mutable_ftrace_events(), ts, 0)->mutable_cpu_idle();
      idle->set_state(static_cast<uint32_t>(ts));
      idle->set_cpu_id(cpu);
    }
    trace.Add(p);
  }
  auto engine = Open(trace.bytes);
  ASSERT_TRUE(engine);
  EXPECT_EQ(Rows(engine->db(), "select group_concat(ts) from (select ts from ftrace_event order by id)"),
            std::vector<std::string>{"100,150,300,350,500,550,700,750,900,950"});
  EXPECT_EQ(Rows(engine->db(), "select value from stats where name = 'sorter_push_event_out_of_order'"),
            std::vector<std::string>{"0"});
  EXPECT_EQ(Rows(engine->db(), "select * from trace_bounds"), std::vector<std::string>{"100|950"});
  EXPECT_EQ(Rows(engine->db(), "select trace_start(), trace_end(), trace_dur()"),
            std::vector<std::string>{"100|950|850"});
  EXPECT_EQ(Rows(engine->db(), "select cpu from cpu order by cpu"), (std::vector<std::string>{"0", "1"}));
}

TEST(TraceImporterTest, StatsUsePerfettoNamesAndSluiceSeverities) {
  TraceBuilder trace;
  for (auto phase : {FtraceStats::START_OF_TRACE, FtraceStats::END_OF_TRACE}) {
    TracePacket p;
    auto* s = p.mutable_ftrace_stats();
    s->set_phase(phase);
    auto* c = s->add_cpu_stats();
    c->set_cpu(1);
    c->set_overrun(phase == FtraceStats::START_OF_TRACE ? 5 : 12);
    c->set_now_ts(2.5);
    trace.Add(p);
  }
  TracePacket stats;
  auto* ts = stats.mutable_trace_stats();
  ts->set_producers_connected(2);
  auto* buf = ts->add_buffer_stats();
  buf->set_buffer_size(4096);
  buf->set_patches_failed(3);
  trace.Add(stats);
  auto engine = Open(trace.bytes);
  ASSERT_TRUE(engine);
  EXPECT_EQ(Rows(engine->db(), "select name, idx, severity, source, value from stats "
                               "where source = 'trace' and value != 0 order by name, idx"),
            (std::vector<std::string>{
                "ftrace_cpu_now_ts_begin|1|info|trace|2500000000", "ftrace_cpu_now_ts_end|1|info|trace|2500000000",
                "ftrace_cpu_overrun_begin|1|info|trace|5", "ftrace_cpu_overrun_delta|1|data_loss|trace|7",
                "ftrace_cpu_overrun_end|1|info|trace|12", "traced_buf_buffer_size|0|info|trace|4096",
                "traced_buf_patches_failed|0|data_loss|trace|3", "traced_producers_connected|NULL|info|trace|2"}));
  // The loss rows carry sluice's explanation: the stage and the fix.
  EXPECT_EQ(Rows(engine->db(), "select description like 'central buffer: %' from stats "
                               "where name = 'traced_buf_patches_failed'"),
            std::vector<std::string>{"1"});
}

// A trace whose BPF ring dropped records: the data-loss rows Perfetto's
// trace_processor shows for it (perf_cpu_lost_records per CPU, from the
// PerfSample packets the source writes next to BpfStats, and
// ftrace_cpu_has_data_loss for the flagged bundle), next to sluice's own.
TEST(TraceImporterTest, BpfRingDropsAreDataLossUnderPerfettosNames) {
  TraceBuilder trace;
  TracePacket bundle = BundlePacket(1, 4);
  bundle.mutable_ftrace_events()->set_lost_events(true);
  AddEvent(bundle.mutable_ftrace_events(), 1000, 7)->mutable_print()->set_buf("x\n");
  trace.Add(bundle);
  TracePacket bpf;
  bpf.set_trusted_packet_sequence_id(5);
  auto* cpu0 = bpf.mutable_bpf_stats()->add_cpu_stats();
  cpu0->set_cpu(0);
  cpu0->set_dropped(7846);
  auto* cpu1 = bpf.mutable_bpf_stats()->add_cpu_stats();
  cpu1->set_cpu(1);
  cpu1->set_dropped(4579);
  trace.Add(bpf);
  // Periodic and final reports of CPU 0 add up, as upstream adds them.
  for (auto [cpu, lost] : {std::pair{0u, 7000u}, std::pair{1u, 4579u}, std::pair{0u, 846u}}) {
    TracePacket p;
    p.set_trusted_packet_sequence_id(5);
    p.set_timestamp(2000);
    p.mutable_perf_sample()->set_cpu(cpu);
    p.mutable_perf_sample()->set_kernel_records_lost(lost);
    trace.Add(p);
  }
  TracePacket stats;
  stats.mutable_trace_stats()->add_buffer_stats()->set_buffer_size(4096);
  trace.Add(stats);
  auto engine = Open(trace.bytes);
  ASSERT_TRUE(engine);
  EXPECT_EQ(Rows(engine->db(), "select name, idx, severity, source, value from stats "
                               "where severity = 'data_loss' and value != 0 order by name, idx"),
            (std::vector<std::string>{
                "bpf_ringbuf_dropped|0|data_loss|trace|7846", "bpf_ringbuf_dropped|1|data_loss|trace|4579",
                "ftrace_cpu_has_data_loss|1|data_loss|trace|1", "perf_cpu_lost_records|0|data_loss|trace|7846",
                "perf_cpu_lost_records|1|data_loss|trace|4579"}));
}

// The chunks the service lost, added to the first buffer's
// trace_writer_packet_loss for Perfetto: data loss there, as upstream says.
TEST(TraceImporterTest, LostChunksShowInTraceWriterPacketLossAsPerfettoSeesThem) {
  TraceBuilder trace;
  TracePacket stats;
  auto* ts = stats.mutable_trace_stats();
  ts->add_buffer_stats()->set_trace_writer_packet_loss(3);
  ts->mutable_sluice_service_stats()->set_chunks_lost_being_written(3);
  ts->mutable_sluice_service_stats()->set_chunks_lost_buffer(0);
  trace.Add(stats);
  auto engine = Open(trace.bytes);
  ASSERT_TRUE(engine);
  EXPECT_EQ(Rows(engine->db(), "select name, idx, severity, value from stats "
                               "where severity = 'data_loss' and value != 0 order by name, idx"),
            (std::vector<std::string>{"chunks_lost_being_written|NULL|data_loss|3",
                                      "traced_buf_trace_writer_packet_loss|0|data_loss|3"}));
  EXPECT_EQ(Rows(engine->db(), "select description like '%includes 3 chunks lost%' from stats "
                               "where name = 'traced_buf_trace_writer_packet_loss'"),
            std::vector<std::string>{"1"});
}

TEST(TraceImporterTest, SystemInfoAndSizeGoToMetadata) {
  TraceBuilder trace;
  TracePacket p;
  auto* u = p.mutable_system_info()->mutable_utsname();
  u->set_sysname("Linux");
  u->set_release("6.1.0-18-amd64");
  u->set_machine("x86_64");
  trace.Add(p);
  auto engine = Open(trace.bytes);
  ASSERT_TRUE(engine);
  EXPECT_EQ(Rows(engine->db(), "select str_value from metadata where name in ('system_name', 'system_release', "
                               "'system_machine') order by name"),
            (std::vector<std::string>{"x86_64", "Linux", "6.1.0-18-amd64"}));
  EXPECT_EQ(Rows(engine->db(), "select int_value from metadata where name = 'trace_size_bytes'"),
            std::vector<std::string>{std::to_string(trace.bytes.size())});
}

TEST(TraceImporterTest, TruncatedTraceImportsUpToTheCutAndSaysSo) {
  TraceBuilder trace;
  for (uint64_t ts : {100, 200}) {
    TracePacket p = BundlePacket(0);
    auto* idle = AddEvent(p.mutable_ftrace_events(), ts, 0)->mutable_cpu_idle();
    idle->set_state(1);
    trace.Add(p);
  }
  std::string cut = trace.bytes.substr(0, trace.bytes.size() - 3);
  auto engine = Open(cut);
  ASSERT_TRUE(engine);
  EXPECT_EQ(Rows(engine->db(), "select ts from ftrace_event"), std::vector<std::string>{"100"});
  EXPECT_EQ(Rows(engine->db(), "select severity, value from stats where name = 'trace_file_truncated'"),
            std::vector<std::string>{"data_loss|1"});
}

TEST(TraceImporterTest, CorruptRecordKeepsWhatCameBeforeAndSaysWhere) {
  TraceBuilder trace;
  TracePacket p = BundlePacket(0);
  AddEvent(p.mutable_ftrace_events(), 100, 0)->mutable_cpu_idle()->set_state(1);
  trace.Add(p);
  size_t good = trace.bytes.size();
  trace.bytes += std::string("\x42\x01\x00", 3);  // Not a Trace.packet record.
  auto engine = Open(trace.bytes);
  ASSERT_TRUE(engine);
  EXPECT_EQ(Rows(engine->db(), "select count(*) from ftrace_event"), std::vector<std::string>{"1"});
  auto rows = Rows(engine->db(), "select severity, description from stats where name = 'trace_file_corrupt'");
  ASSERT_EQ(rows.size(), 1u);
  EXPECT_NE(rows[0].find("error|the file is corrupt past byte " + std::to_string(good)), std::string::npos) << rows[0];
}

TEST(TraceImporterTest, BytesThatAreNoTraceFailWithOneLine) {
  auto engine = QueryEngine::OpenBytes("this is not a perfetto trace");
  ASSERT_FALSE(engine.ok());
  EXPECT_NE(engine.status().message().find("not a Perfetto trace"), std::string::npos) << engine.status().message();
  EXPECT_EQ(engine.status().message().find('\n'), std::string::npos);
}

TEST(TraceImporterTest, MalformedEventIsCountedNotFatal) {
  // A bundle written by hand: one good event, then one whose sched_switch
  // payload claims a 5-byte prev_comm but holds 1 (well-formed outside,
  // broken inside).
  std::string good_event = "\x08\x64";                        // timestamp 100
  std::string bad_event = std::string("\x08\xc8\x01") +      // timestamp 200
                          "\x22\x03" + "\x0a\x05x";          // sched_switch { prev_comm: len 5, 1 byte }
  std::string bundle("\x08\x00", 2);                          // cpu 0
  for (const std::string& event : {good_event, bad_event})
    bundle += "\x12" + std::string(1, static_cast<char>(event.size())) + event;
  std::string packet = "\x0a" + std::string(1, static_cast<char>(bundle.size())) + bundle;
  TraceBuilder trace;
  AppendTracePacketRecord(packet, &trace.bytes);
  auto engine = Open(trace.bytes);
  ASSERT_TRUE(engine);
  EXPECT_EQ(Rows(engine->db(), "select value from stats where name = 'ftrace_events_unparsable'"),
            std::vector<std::string>{"1"});
  EXPECT_EQ(Rows(engine->db(), "select ts, name from ftrace_event"),
            (std::vector<std::string>{"100|unknown_event_0", "200|sched_switch"}));
}

TEST(TraceImporterTest, BundleOfImpossibleCpuIsDroppedAndCounted) {
  // A corrupt cpu number must not size per-CPU state (4e9 CPUs would need
  // hundreds of GiB): the bundle is dropped and counted.
  TraceBuilder trace;
  TracePacket bad = BundlePacket(4000000000u);
  AddEvent(bad.mutable_ftrace_events(), 1000, 10)->mutable_print()->set_buf("lost\n");
  trace.Add(bad);
  TracePacket good = BundlePacket(2);
  AddEvent(good.mutable_ftrace_events(), 2000, 20)->mutable_print()->set_buf("kept\n");
  trace.Add(good);
  auto engine = Open(trace.bytes);
  ASSERT_TRUE(engine);
  EXPECT_EQ(Rows(engine->db(), "select value from stats where name = 'ftrace_bundles_cpu_out_of_range'"),
            std::vector<std::string>{"1"});
  EXPECT_EQ(Rows(engine->db(), "select ts, cpu from ftrace_event"), std::vector<std::string>{"2000|2"});
}

}  // namespace
}  // namespace sluice
