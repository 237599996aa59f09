// Tests of service/trace_stats_period.h: counters become differences,
// values of the moment stay.
#include "service/trace_stats_period.h"

#include "gtest/gtest.h"

namespace sluice {
namespace {

using perfetto::protos::TraceStats;

TEST(TraceStatsPeriodTest, CountersBecomeWhatChangedValuesOfTheMomentStay) {
  TraceStats earlier, later;
  for (TraceStats* s : {&earlier, &later}) {
    s->set_producers_connected(2);
    s->set_tracing_sessions(1);
    s->add_buffer_stats()->set_buffer_size(1 << 20);
  }
  earlier.mutable_buffer_stats(0)->set_bytes_written(1000);
  earlier.mutable_buffer_stats(0)->set_chunks_overwritten(3);
  earlier.mutable_buffer_stats(0)->set_trace_writer_packet_loss(1);
  earlier.set_flushes_requested(4);
  earlier.mutable_sluice_service_stats()->set_producers_disconnected(1);
  earlier.mutable_sluice_service_stats()->set_chunks_lost_buffer(0);
  later.mutable_buffer_stats(0)->set_bytes_written(5000);
  later.mutable_buffer_stats(0)->set_chunks_overwritten(3);
  later.mutable_buffer_stats(0)->set_trace_writer_packet_loss(6);
  later.set_flushes_requested(9);
  later.set_producers_connected(3);
  later.mutable_sluice_service_stats()->set_producers_disconnected(2);
  later.mutable_sluice_service_stats()->set_chunks_lost_buffer(0);

  TraceStats period = TraceStatsSince(earlier, later);
  EXPECT_EQ(period.buffer_stats(0).bytes_written(), 4000u);
  EXPECT_EQ(period.buffer_stats(0).chunks_overwritten(), 0u);
  EXPECT_EQ(period.buffer_stats(0).trace_writer_packet_loss(), 5u);
  EXPECT_EQ(period.flushes_requested(), 5u);
  EXPECT_EQ(period.sluice_service_stats().producers_disconnected(), 1u);
  // Of the moment.
  EXPECT_EQ(period.buffer_stats(0).buffer_size(), 1u << 20);
  EXPECT_EQ(period.producers_connected(), 3u);
  EXPECT_EQ(period.tracing_sessions(), 1u);
  EXPECT_EQ(period.sluice_service_stats().chunks_lost_buffer(), 0u);
}

TEST(TraceStatsPeriodTest, ABufferNewSinceOrACounterThatWentDownIsTakenAsItIs) {
  TraceStats earlier, later;
  earlier.add_buffer_stats()->set_bytes_written(100);
  later.add_buffer_stats()->set_bytes_written(40);  // Went down: not wrapped.
  later.add_buffer_stats()->set_bytes_written(70);  // No earlier figure.
  TraceStats period = TraceStatsSince(earlier, later);
  EXPECT_EQ(period.buffer_stats(0).bytes_written(), 40u);
  EXPECT_EQ(period.buffer_stats(1).bytes_written(), 70u);
}

TEST(TraceStatsPeriodTest, PeriodsAddUpToTheWhole) {
  TraceStats t0, t1, t2;
  t0.add_buffer_stats()->set_chunks_written(10);
  t1.add_buffer_stats()->set_chunks_written(25);
  t2.add_buffer_stats()->set_chunks_written(31);
  const uint64_t sum = TraceStatsSince(TraceStats(), t0).buffer_stats(0).chunks_written() +
                       TraceStatsSince(t0, t1).buffer_stats(0).chunks_written() +
                       TraceStatsSince(t1, t2).buffer_stats(0).chunks_written();
  EXPECT_EQ(sum, 31u);
}

}  // namespace
}  // namespace sluice
