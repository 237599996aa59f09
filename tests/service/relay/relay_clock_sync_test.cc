#include "service/relay/relay_clock_sync.h"

#include <cstdlib>

#include "gtest/gtest.h"
#include "perfetto/common/builtin_clock.pb.h"

namespace sluice {
namespace {

perfetto::protos::ClockSnapshot Boot(int64_t ns) {
  perfetto::protos::ClockSnapshot s;
  auto* c = s.add_clocks();
  c->set_clock_id(perfetto::protos::BUILTIN_CLOCK_BOOTTIME);
  c->set_timestamp(static_cast<uint64_t>(ns));
  return s;
}

ClockRound Round(int64_t t1c, int64_t t1h, int64_t t2c, int64_t t2h) {
  return ClockRound{Boot(t1c), Boot(t1h), Boot(t2c), Boot(t2h)};
}

TEST(RelayClockSyncTest, SymmetricRoundFindsTheOffsetWithinHalfTheRoundTrip) {
  // Client = host + 1000; each hop takes 10 ns.
  ClockOffsetEstimate e = EstimateClockOffset(Round(1000, 10, 1020, 30));
  ASSERT_TRUE(e.valid);
  EXPECT_EQ(e.offset_ns, 1000);
  // theta in [max(1000 - 10, 1020 - 30), 1020 - 10] = [990, 1010].
  EXPECT_EQ(e.error_ns, 10u);
}

TEST(RelayClockSyncTest, TheTrueOffsetIsAlwaysWithinTheBound) {
  // Asymmetric hops: the estimate is off, but never beyond its bound.
  const int64_t theta = -123456789;
  for (int64_t up : {1, 50, 5000})
    for (int64_t down : {1, 700, 90000}) {
      const int64_t t1h = 1'000'000'000;
      const int64_t t1c = t1h - up + theta;
      const int64_t t2c = t1h + down + theta;
      const int64_t t2h = t1h + down + up;
      ClockOffsetEstimate e = EstimateClockOffset(Round(t1c, t1h, t2c, t2h));
      ASSERT_TRUE(e.valid);
      EXPECT_LE(static_cast<uint64_t>(std::llabs(e.offset_ns - theta)), e.error_ns)
          << "up " << up << " down " << down;
    }
}

TEST(RelayClockSyncTest, ImpossibleRoundsAreRefused) {
  EXPECT_FALSE(EstimateClockOffset(Round(100, 10, 50, 30)).valid);   // Client clock went back.
  EXPECT_FALSE(EstimateClockOffset(Round(0, 100, 10, 20)).valid);    // Host clock went back.
  ClockRound no_boot;
  EXPECT_FALSE(EstimateClockOffset(no_boot).valid);
}

TEST(RelayClockSyncTest, TheTraceGetsTheRoundAsTwoSyncedClocks) {
  perfetto::protos::RemoteClockSync s = MakeRemoteClockSync(Round(1, 2, 3, 4));
  ASSERT_EQ(s.synced_clocks_size(), 2);
  EXPECT_EQ(s.synced_clocks(0).client_clocks().clocks(0).timestamp(), 1u);
  EXPECT_EQ(s.synced_clocks(0).host_clocks().clocks(0).timestamp(), 2u);
  EXPECT_EQ(s.synced_clocks(1).client_clocks().clocks(0).timestamp(), 3u);
  EXPECT_EQ(s.synced_clocks(1).host_clocks().clocks(0).timestamp(), 4u);
}

TEST(RelayClockSyncTest, ReadsTheFourClocks) {
  perfetto::protos::ClockSnapshot s = ReadRelayClocks();
  ASSERT_EQ(s.clocks_size(), 4);
  EXPECT_EQ(s.clocks(0).clock_id(), static_cast<uint32_t>(perfetto::protos::BUILTIN_CLOCK_BOOTTIME));
  EXPECT_GT(s.clocks(0).timestamp(), 0u);
}

}  // namespace
}  // namespace sluice
