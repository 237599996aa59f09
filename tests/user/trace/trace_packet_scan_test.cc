#include "user/trace/trace_packet_scan.h"

#include <gtest/gtest.h>

#include <map>

#include "perfetto/trace/ftrace/ftrace_event.pb.h"
#include "perfetto/trace/ftrace/ftrace_event_bundle.pb.h"
#include "perfetto/trace/trace_packet.pb.h"

namespace sluice {
namespace {

using perfetto::protos::FtraceEvent;
using perfetto::protos::TracePacket;

std::map<std::string, uint64_t> KindsByName(const TracePacketScan& scan) {
  std::map<std::string, uint64_t> out;
  for (const auto& [field, n] : scan.events_by_field) out[FtraceEventFieldName(field)] += n;
  return out;
}

// A bundle of every shape sluice writes: events of several kinds, an event
// with no kind, compact_sched arrays, the lost-events flag.
TracePacket BundlePacket() {
  TracePacket p;
  p.set_trusted_packet_sequence_id(7);
  p.set_previous_packet_dropped(1);
  p.set_first_packet_on_sequence(false);
  auto* b = p.mutable_ftrace_events();
  b->set_cpu(3);
  b->set_lost_events(true);
  for (int i = 0; i < 5; i++) {
    FtraceEvent* e = b->add_event();
    e->set_timestamp(1000 + i);
    e->set_pid(10);
    e->mutable_sched_switch()->set_prev_comm("a");
  }
  b->add_event()->mutable_print()->set_buf("marker\n");
  b->add_event()->set_timestamp(5);  // No oneof member.
  auto* c = b->mutable_compact_sched();
  for (uint64_t t : {1ull, 300ull, 1ull << 40}) c->add_switch_timestamp(t);
  for (uint64_t t : {2ull, 3ull}) c->add_waking_timestamp(t);
  c->add_switch_next_pid(4);
  return p;
}

TEST(TracePacketScanTest, CountsWhatLibprotobufDecodes) {
  TracePacket p = BundlePacket();
  TracePacketScan scan;
  ASSERT_TRUE(ScanTracePacket(p.SerializeAsString(), &scan));
  EXPECT_TRUE(scan.has_sequence_id);
  EXPECT_EQ(scan.sequence_id, 7u);
  EXPECT_EQ(scan.previous_packet_dropped, 1u);
  EXPECT_FALSE(scan.first_packet_on_sequence);
  EXPECT_FALSE(scan.has_stats);
  EXPECT_TRUE(scan.has_bundle);
  EXPECT_EQ(scan.bundle_cpu, 3u);
  EXPECT_TRUE(scan.bundle_lost_events);
  EXPECT_EQ(scan.events, 5u + 1 + 1 + 3 + 2);
  std::map<std::string, uint64_t> want = {
      {"sched_switch", 5 + 3}, {"print", 1}, {"unknown", 1}, {"sched_waking", 2}};
  EXPECT_EQ(KindsByName(scan), want);
}

TEST(TracePacketScanTest, PacketsWithoutBundles) {
  TracePacket p;
  p.set_timestamp(5);
  p.mutable_process_tree()->add_processes()->set_pid(1);
  TracePacketScan scan;
  ASSERT_TRUE(ScanTracePacket(p.SerializeAsString(), &scan));
  EXPECT_FALSE(scan.has_bundle);
  EXPECT_FALSE(scan.has_sequence_id);
  EXPECT_FALSE(scan.has_stats);
  EXPECT_EQ(scan.events, 0u);

  TracePacket stats;
  stats.mutable_trace_stats()->set_chunks_discarded(1);
  ASSERT_TRUE(ScanTracePacket(stats.SerializeAsString(), &scan));
  EXPECT_TRUE(scan.has_stats);
  TracePacket ftrace_stats;
  ftrace_stats.mutable_ftrace_stats()->add_cpu_stats()->set_overrun(1);
  ASSERT_TRUE(ScanTracePacket(ftrace_stats.SerializeAsString(), &scan));
  EXPECT_TRUE(scan.has_stats);
  TracePacket bpf_stats;
  bpf_stats.mutable_bpf_stats();
  ASSERT_TRUE(ScanTracePacket(bpf_stats.SerializeAsString(), &scan));
  EXPECT_TRUE(scan.has_stats);
  EXPECT_TRUE(ScanTracePacket("", &scan));  // An empty packet is a valid one.
}

// Two occurrences of ftrace_events merge as libprotobuf merges them.
TEST(TracePacketScanTest, RepeatedBundleFieldMerges) {
  TracePacket a, b;
  a.mutable_ftrace_events()->set_cpu(1);
  a.mutable_ftrace_events()->add_event()->mutable_print();
  b.mutable_ftrace_events()->set_cpu(2);
  b.mutable_ftrace_events()->add_event()->mutable_sched_switch();
  std::string bytes = a.SerializeAsString() + b.SerializeAsString();
  TracePacket merged;
  ASSERT_TRUE(merged.ParseFromString(bytes));
  TracePacketScan scan;
  ASSERT_TRUE(ScanTracePacket(bytes, &scan));
  EXPECT_EQ(scan.events, static_cast<uint64_t>(merged.ftrace_events().event_size()));
  EXPECT_EQ(scan.bundle_cpu, merged.ftrace_events().cpu());
}

// ftrace_events is a member of TracePacket's `data` oneof: another member
// after it replaces it, as libprotobuf decodes the packet.
TEST(TracePacketScanTest, LaterDataMemberReplacesTheBundle) {
  TracePacket bundle, tree;
  bundle.mutable_ftrace_events()->add_event()->mutable_print();
  tree.mutable_process_tree();
  TracePacketScan scan;
  for (const auto& [bytes, has_bundle] :
       {std::pair{bundle.SerializeAsString() + tree.SerializeAsString(), false},
        std::pair{tree.SerializeAsString() + bundle.SerializeAsString(), true}}) {
    TracePacket p;
    ASSERT_TRUE(p.ParseFromString(bytes));
    ASSERT_EQ(p.has_ftrace_events(), has_bundle);
    ASSERT_TRUE(ScanTracePacket(bytes, &scan));
    EXPECT_EQ(scan.has_bundle, has_bundle);
    EXPECT_EQ(scan.events, has_bundle ? 1u : 0u);
  }
}

// Unpacked timestamps are valid protobuf too.
TEST(TracePacketScanTest, UnpackedCompactTimestamps) {
  // TracePacket{ftrace_events{compact_sched{switch_timestamp: 5, 6 (unpacked)}}}
  std::string compact = {0x08, 0x05, 0x08, 0x06};
  std::string bundle = {0x22, static_cast<char>(compact.size())};
  bundle += compact;
  std::string packet = {0x0a, static_cast<char>(bundle.size())};
  packet += bundle;
  TracePacket check;
  ASSERT_TRUE(check.ParseFromString(packet));
  ASSERT_EQ(check.ftrace_events().compact_sched().switch_timestamp_size(), 2);
  TracePacketScan scan;
  ASSERT_TRUE(ScanTracePacket(packet, &scan));
  EXPECT_EQ(scan.events, 2u);
}

TEST(TracePacketScanTest, MalformedWireFails) {
  std::string good = BundlePacket().SerializeAsString();
  TracePacketScan scan;
  // Every cut of a valid packet that libprotobuf refuses, the scan refuses.
  for (size_t n = 0; n < good.size(); n++) {
    std::string cut = good.substr(0, n);
    TracePacket p;
    if (!p.ParseFromString(cut)) {
      EXPECT_FALSE(ScanTracePacket(cut, &scan)) << "cut at " << n;
    }
  }
  const std::string bad[] = {
      std::string("\x00", 1),                         // Tag 0.
      "\x0a\x05\x08",                                 // Bundle longer than the packet.
      "\x0a\x03\x22\x01\x0a",                         // Packed array cut inside.
      "\x0a\x04\x22\x02\x0a\x80",                     // Packed varint left open.
      "\x0a\x0f\x22\x0d\x0a\x0b\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\x01",  // 11-byte varint.
      "\x50\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\x01",  // Sequence id, 11-byte varint.
      "\x0f",                                         // Wire type 7.
  };
  for (const std::string& b : bad) {
    TracePacket p;
    EXPECT_FALSE(p.ParseFromString(b)) << "libprotobuf accepts case " << &b - bad;
    EXPECT_FALSE(ScanTracePacket(b, &scan)) << "scan accepts case " << &b - bad;
  }
}

// The packed arrays are counted eight bytes at a time: varints of every
// length at every offset from a word's start, counted as libprotobuf
// decodes them; one of 11 bytes is refused wherever it starts.
TEST(TracePacketScanTest, PackedArraysAtEveryOffset) {
  auto packet_with = [](const std::string& packed) {
    std::string compact = {0x0a};  // switch_timestamp, packed.
    compact += static_cast<char>(packed.size());
    compact += packed;
    std::string bundle = {0x22, static_cast<char>(compact.size())};
    bundle += compact;
    std::string packet = {0x0a, static_cast<char>(bundle.size())};
    return packet + bundle;
  };
  for (size_t lead = 0; lead < 17; lead++) {
    for (int len = 1; len <= 11; len++) {
      std::string packed(lead, '\x01');
      packed += std::string(static_cast<size_t>(len - 1), '\x81');
      packed += len == 10 ? '\x01' : '\x00';  // A 10-byte varint must fit 64 bits.
      packed += std::string(5, '\x02');
      const std::string packet = packet_with(packed);
      TracePacket check;
      const bool valid = check.ParseFromString(packet);
      EXPECT_EQ(valid, len <= 10) << "lead " << lead << ", length " << len;
      TracePacketScan scan;
      EXPECT_EQ(ScanTracePacket(packet, &scan), valid) << "lead " << lead << ", length " << len;
      if (valid) {
        EXPECT_EQ(scan.events, static_cast<uint64_t>(check.ftrace_events().compact_sched().switch_timestamp_size()))
            << "lead " << lead << ", length " << len;
      }
    }
  }
}

TEST(TracePacketScanTest, FieldNames) {
  EXPECT_EQ(FtraceEventFieldName(FtraceEvent::kSchedSwitchFieldNumber), "sched_switch");
  EXPECT_EQ(FtraceEventFieldName(0), "unknown");
  EXPECT_EQ(FtraceEventFieldName(999999), "unknown");
}

}  // namespace
}  // namespace sluice
