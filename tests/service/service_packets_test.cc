// Tests for service/service_packets.h: the descriptor packet, and the
// TraceStats packet's view for upstream's trace_processor.
#include "service/service_packets.h"

#include <gtest/gtest.h>

#include "perfetto/common/trace_stats.pb.h"
#include "perfetto/trace/trace_packet.pb.h"
#include "service/sluice_extensions.h"
#include "sluice/service_stats.pb.h"

namespace sluice {
namespace {

using perfetto::protos::TracePacket;
using perfetto::protos::TraceStats;

TEST(ServicePacketsTest, ExtensionDescriptorPacketHoldsTheSetOnTheServiceSequence) {
  TracePacket packet;
  ASSERT_TRUE(packet.ParseFromString(MakeExtensionDescriptorPacket()));
  ASSERT_TRUE(packet.has_extension_descriptor());
  EXPECT_EQ(packet.trusted_packet_sequence_id(), kServicePacketSequenceId);
  EXPECT_EQ(packet.extension_descriptor().extension_set().SerializeAsString(),
            SluiceExtensionSet().SerializeAsString());
  // Field 72 on the wire, as upstream's TracePacket numbers it: tag 72 << 3 | 2.
  EXPECT_EQ(TracePacket::kExtensionDescriptorFieldNumber, 72);
}

TraceStats StatsWithTwoBuffers(uint64_t being_written, uint64_t writer_unknown) {
  TraceStats stats;
  stats.add_buffer_stats()->set_trace_writer_packet_loss(4);
  stats.add_buffer_stats()->set_trace_writer_packet_loss(1);
  stats.mutable_sluice_service_stats()->set_chunks_lost_being_written(being_written);
  stats.mutable_sluice_service_stats()->set_chunks_lost_writer_unknown(writer_unknown);
  return stats;
}

TEST(ServicePacketsTest, LostChunksAreAddedToTheFirstBufferForUpstream) {
  TracePacket packet;
  ASSERT_TRUE(packet.ParseFromString(MakeTraceStatsPacket(StatsWithTwoBuffers(3, 2))));
  const TraceStats& stats = packet.trace_stats();
  EXPECT_EQ(stats.buffer_stats(0).trace_writer_packet_loss(), 4u + 3u + 2u);
  EXPECT_EQ(stats.buffer_stats(1).trace_writer_packet_loss(), 1u);
  ASSERT_TRUE(stats.sluice_service_stats().has_chunks_lost_buffer());
  EXPECT_EQ(stats.sluice_service_stats().chunks_lost_buffer(), 0u);
  // sluice's own figures are left as they were.
  EXPECT_EQ(stats.sluice_service_stats().chunks_lost_being_written(), 3u);
  EXPECT_EQ(stats.sluice_service_stats().chunks_lost_writer_unknown(), 2u);
}

TEST(ServicePacketsTest, NothingLostNothingAdded) {
  TracePacket packet;
  ASSERT_TRUE(packet.ParseFromString(MakeTraceStatsPacket(StatsWithTwoBuffers(0, 0))));
  EXPECT_EQ(packet.trace_stats().buffer_stats(0).trace_writer_packet_loss(), 4u);
  EXPECT_FALSE(packet.trace_stats().sluice_service_stats().has_chunks_lost_buffer());
}

TEST(ServicePacketsTest, SessionWithoutBuffersKeepsItsCountsOnlyInSluiceStats) {
  TraceStats stats;
  stats.mutable_sluice_service_stats()->set_chunks_lost_being_written(3);
  TracePacket packet;
  ASSERT_TRUE(packet.ParseFromString(MakeTraceStatsPacket(stats)));
  EXPECT_FALSE(packet.trace_stats().sluice_service_stats().has_chunks_lost_buffer());
  EXPECT_EQ(packet.trace_stats().buffer_stats_size(), 0);
}

}  // namespace
}  // namespace sluice
