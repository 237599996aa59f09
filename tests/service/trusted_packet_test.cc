#include "service/trusted_packet.h"

#include "gtest/gtest.h"
#include "perfetto/trace/trace_packet.pb.h"

namespace sluice {
namespace {

using perfetto::protos::TracePacket;

TEST(TrustedPacketTest, FieldNumbersMatchTheProtos) {
  EXPECT_EQ(kTrustedUidField, static_cast<uint32_t>(TracePacket::kTrustedUidFieldNumber));
  EXPECT_EQ(kTrustedPacketSequenceIdField,
            static_cast<uint32_t>(TracePacket::kTrustedPacketSequenceIdFieldNumber));
  EXPECT_EQ(kTrustedPidField, static_cast<uint32_t>(TracePacket::kTrustedPidFieldNumber));
  EXPECT_EQ(kPreviousPacketDroppedField,
            static_cast<uint32_t>(TracePacket::kPreviousPacketDroppedFieldNumber));
}

TEST(TrustedPacketTest, AppendsTrustedFields) {
  TracePacket in;
  in.set_timestamp(42);
  std::string bytes = in.SerializeAsString();
  ASSERT_TRUE(StampTrustedFields(&bytes, TrustedFields{1000, 7, 321, false}));
  TracePacket out;
  ASSERT_TRUE(out.ParseFromString(bytes));
  EXPECT_EQ(out.timestamp(), 42u);
  EXPECT_EQ(out.trusted_uid(), 1000);
  EXPECT_EQ(out.trusted_packet_sequence_id(), 7u);
  EXPECT_EQ(out.trusted_pid(), 321);
  EXPECT_FALSE(out.has_previous_packet_dropped());
}

// The most the stamp appends fits kMaxTrustedFieldsBytes: a packet read with
// that much tailroom (TraceBuffer::ReadNextTracePacket) is stamped in place.
TEST(TrustedPacketTest, TheLargestStampFitsTheTailroomReadersLeave) {
  TracePacket in;
  in.set_timestamp(42);
  const std::string serialized = in.SerializeAsString();
  std::string bytes;
  bytes.reserve(serialized.size() + kMaxTrustedFieldsBytes);
  bytes = serialized;
  const char* before = bytes.data();
  TrustedFields largest;
  largest.uid = -1;  // Sign-extended to ten bytes, as protobuf does.
  largest.sequence_id = UINT32_MAX;
  largest.pid = INT32_MIN;
  largest.previous_packet_dropped = true;
  largest.machine_id = UINT32_MAX;
  ASSERT_TRUE(StampTrustedFields(&bytes, largest));
  EXPECT_EQ(bytes.data(), before) << "the stamp reallocated the packet";
  EXPECT_EQ(bytes.size(), serialized.size() + kMaxTrustedFieldsBytes) << "the bound is not the largest stamp";
  TracePacket out;
  ASSERT_TRUE(out.ParseFromString(bytes));
  EXPECT_EQ(out.trusted_uid(), -1);
  EXPECT_EQ(out.machine_id(), UINT32_MAX);
}

TEST(TrustedPacketTest, RemovesForgedFieldsWherever_TheyAre) {
  TracePacket in;
  in.set_trusted_uid(0);  // Claims to be root.
  in.set_trusted_packet_sequence_id(1);
  in.set_trusted_pid(1);
  in.set_timestamp(5);
  std::string bytes = in.SerializeAsString();
  // And again after other fields, twice.
  bytes += in.SerializeAsString();
  ASSERT_TRUE(StampTrustedFields(&bytes, TrustedFields{-1, 9, 77, true}));
  // Parse field by field: exactly one of each trusted field is left.
  TracePacket out;
  ASSERT_TRUE(out.ParseFromString(bytes));
  EXPECT_EQ(out.trusted_uid(), -1);
  EXPECT_EQ(out.trusted_packet_sequence_id(), 9u);
  EXPECT_EQ(out.trusted_pid(), 77);
  EXPECT_EQ(out.previous_packet_dropped(), 1u);
  EXPECT_EQ(out.timestamp(), 5u);
  TracePacket only_trusted;
  only_trusted.set_timestamp(5);
  only_trusted.set_timestamp(5);
  // timestamp twice (8 bytes each: tag + varint 5 = 2 bytes) + trusted fields.
  size_t trusted_bytes = 1 + 10 + 1 + 1 + 2 + 1 + 2 + 1;  // uid -1 is 10 bytes
  EXPECT_EQ(bytes.size(), 2 * 2 + trusted_bytes);
}

TEST(TrustedPacketTest, RejectsMalformedPackets) {
  const std::string bad[] = {
      std::string("\x08", 1),                 // varint field without value
      std::string("\x0a\x05" "ab", 4),        // length past the end
      std::string("\x0b", 1),                 // group start
      std::string("\x00\x01", 2),             // field 0
      std::string("\x09\x01\x02", 3),         // fixed64 truncated
      std::string("\x08\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\x01", 12),  // 11-byte varint
  };
  for (const std::string& b : bad) {
    std::string copy = b;
    EXPECT_FALSE(StampTrustedFields(&copy, TrustedFields{})) << testing::PrintToString(b);
  }
  std::string empty;
  EXPECT_TRUE(StampTrustedFields(&empty, TrustedFields{}));
}

}  // namespace
}  // namespace sluice
