#include "shm/proto_writer.h"

#include <gtest/gtest.h>

#include <string>

#include "perfetto/trace/ftrace/ftrace_event.pb.h"
#include "perfetto/trace/ftrace/ftrace_event_bundle.pb.h"
#include "perfetto/trace/trace_packet.pb.h"

namespace sluice {
namespace {

using perfetto::protos::FtraceEvent;
using perfetto::protos::FtraceEventBundle;
using perfetto::protos::PrintFtraceEvent;
using perfetto::protos::SchedSwitchFtraceEvent;
using perfetto::protos::TracePacket;

// Writes a packet with nested messages, negative ints and strings through a
// writer whose ranges are `block` bytes, then decodes it with libprotobuf.
void RoundTrip(size_t block) {
  HeapProtoWriter heap(block);
  ProtoWriter* w = heap.writer();
  w->WriteVarInt(TracePacket::kTimestampFieldNumber, 123456789012345ull);
  w->BeginNested(TracePacket::kFtraceEventsFieldNumber);
  w->WriteVarInt(FtraceEventBundle::kCpuFieldNumber, 3);
  for (int i = 0; i < 5; i++) {
    w->BeginNested(FtraceEventBundle::kEventFieldNumber);
    w->WriteVarInt(FtraceEvent::kTimestampFieldNumber, 1000 + i);
    w->WriteVarInt(FtraceEvent::kPidFieldNumber, 42);
    w->BeginNested(FtraceEvent::kSchedSwitchFieldNumber);
    w->WriteString(SchedSwitchFtraceEvent::kPrevCommFieldNumber, "prev-thread");
    w->WriteInt(SchedSwitchFtraceEvent::kPrevPidFieldNumber, -7);
    w->WriteInt(SchedSwitchFtraceEvent::kPrevStateFieldNumber, -1);
    w->WriteString(SchedSwitchFtraceEvent::kNextCommFieldNumber, std::string(100, 'n'));
    w->WriteInt(SchedSwitchFtraceEvent::kNextPidFieldNumber, 2147483647);
    w->EndNested();
    w->EndNested();
  }
  w->EndNested();
  ASSERT_FALSE(w->misused());
  ASSERT_EQ(w->nesting_depth(), 0);
  std::string bytes = heap.Contents();
  EXPECT_EQ(bytes.size(), w->bytes_written());

  TracePacket packet;
  ASSERT_TRUE(packet.ParseFromString(bytes)) << "block " << block;
  EXPECT_EQ(packet.timestamp(), 123456789012345ull);
  ASSERT_EQ(packet.ftrace_events().event_size(), 5);
  EXPECT_EQ(packet.ftrace_events().cpu(), 3u);
  const FtraceEvent& e = packet.ftrace_events().event(4);
  EXPECT_EQ(e.timestamp(), 1004u);
  EXPECT_EQ(e.pid(), 42u);
  EXPECT_EQ(e.sched_switch().prev_comm(), "prev-thread");
  EXPECT_EQ(e.sched_switch().prev_pid(), -7);
  EXPECT_EQ(e.sched_switch().prev_state(), -1);
  EXPECT_EQ(e.sched_switch().next_comm(), std::string(100, 'n'));
  EXPECT_EQ(e.sched_switch().next_pid(), 2147483647);
  EXPECT_TRUE(packet.unknown_fields().empty());
}

TEST(ProtoWriterTest, DecodesWithLibprotobufInOneRange) { RoundTrip(1 << 16); }

TEST(ProtoWriterTest, DecodesWithLibprotobufAcrossTinyRanges) {
  // Ranges of 8..64 bytes put size fields, tags and values across range
  // boundaries in every possible position.
  for (size_t block = ProtoWriter::kMinRangeBytes; block <= 64; block++) RoundTrip(block);
}

TEST(ProtoWriterTest, RedundantVarIntEncoding) {
  uint8_t b[4];
  ProtoWriter::WriteRedundantVarInt(5, b);
  EXPECT_EQ(b[0], 0x85);
  EXPECT_EQ(b[1], 0x80);
  EXPECT_EQ(b[2], 0x80);
  EXPECT_EQ(b[3], 0x00);
  ProtoWriter::WriteRedundantVarInt(ProtoWriter::kMaxNestedSize, b);
  EXPECT_EQ(b[0], 0xff);
  EXPECT_EQ(b[3], 0x7f);
}

TEST(ProtoWriterTest, VarIntBoundaries) {
  const uint64_t values[] = {0, 1, 127, 128, 16383, 16384, (1ull << 32) - 1, 1ull << 63,
                             ~0ull};
  for (uint64_t v : values) {
    HeapProtoWriter heap;
    heap->WriteVarInt(TracePacket::kTimestampFieldNumber, v);
    TracePacket p;
    ASSERT_TRUE(p.ParseFromString(heap.Contents()));
    EXPECT_EQ(p.timestamp(), v);
  }
}

TEST(ProtoWriterTest, ZigZagAndFixed) {
  HeapProtoWriter heap;
  // Field numbers in a scratch message: decode by hand.
  heap->WriteSInt(1, -1);
  heap->WriteSInt(2, -64);
  heap->WriteFixed32(3, 0xdeadbeef);
  heap->WriteFixed64(4, 0x0123456789abcdefull);
  std::string s = heap.Contents();
  const std::string expected("\x08\x01\x10\x7f\x1d\xef\xbe\xad\xde\x21\xef\xcd\xab\x89\x67\x45\x23\x01",
                             18);
  EXPECT_EQ(s, expected);
}

TEST(ProtoWriterTest, PackedRepeatedVarInts) {
  HeapProtoWriter heap(16);
  heap->BeginNested(FtraceEventBundle::kCompactSchedFieldNumber);
  heap->BeginNested(FtraceEventBundle::CompactSched::kSwitchTimestampFieldNumber);
  for (uint64_t i = 0; i < 100; i++) heap->WriteRawVarInt(i * 1000);
  heap->EndNested();
  heap->EndNested();
  FtraceEventBundle bundle;
  ASSERT_TRUE(bundle.ParseFromString(heap.Contents()));
  ASSERT_EQ(bundle.compact_sched().switch_timestamp_size(), 100);
  EXPECT_EQ(bundle.compact_sched().switch_timestamp(99), 99000u);
}

TEST(ProtoWriterTest, MisuseIsReportedNotFatal) {
  HeapProtoWriter heap;
  heap->EndNested();
  EXPECT_TRUE(heap->misused());
  HeapProtoWriter deep;
  for (int i = 0; i < ProtoWriter::kMaxNesting + 3; i++) deep->BeginNested(1);
  for (int i = 0; i < ProtoWriter::kMaxNesting + 3; i++) deep->EndNested();
  EXPECT_TRUE(deep->misused());
  EXPECT_EQ(deep->nesting_depth(), 0);
}

TEST(ProtoWriterTest, ReleaseStartsANewStream) {
  HeapProtoWriter heap(8);
  heap->WriteString(1, "hello world, more than eight bytes");
  std::string first = heap.Release();
  EXPECT_EQ(first.size(), 2 + 34u);
  EXPECT_EQ(heap->bytes_written(), 0u);
  heap->WriteVarInt(1, 1);
  EXPECT_EQ(heap.Contents(), std::string("\x08\x01", 2));
}

}  // namespace
}  // namespace sluice
