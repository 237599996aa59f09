#include "user/query/importer/remote_clock_sync.h"

#include <gtest/gtest.h>

#include <string>

#include "perfetto/trace/remote_clock_sync.pb.h"

namespace sluice {
namespace {

constexpr uint32_t kBoottime = 6;

// One round: the client reads t1c, the host t1h, the client t2c, the host
// t2h (BOOTTIME only).
std::string Round(uint64_t t1c, uint64_t t1h, uint64_t t2c, uint64_t t2h) {
  perfetto::protos::RemoteClockSync sync;
  for (auto [client, host] : {std::pair{t1c, t1h}, std::pair{t2c, t2h}}) {
    auto* entry = sync.add_synced_clocks();
    auto* c = entry->mutable_client_clocks()->add_clocks();
    c->set_clock_id(kBoottime);
    c->set_timestamp(client);
    auto* h = entry->mutable_host_clocks()->add_clocks();
    h->set_clock_id(kBoottime);
    h->set_timestamp(host);
  }
  return sync.SerializeAsString();
}

TEST(RemoteClockSyncTest, OffsetIsTheMeanOfBothRoundTripsTruncated) {
  RemoteClockSync clock;
  // Client round: (600000001 + 600000252) / 2 - 1000000049 = -399999923;
  // host round: 600000252 - (1000000049 + 1000000307) / 2 = -399999926;
  // mean -399999924.5, truncated toward zero.
  ASSERT_TRUE(clock.AddSync(Round(600'000'001, 1'000'000'049, 600'000'252, 1'000'000'307)));
  EXPECT_EQ(clock.last_offset(), -399'999'924);
  // The offset lies in [max(t1c - t1h, t2c - t2h), t2c - t1h] =
  // [-400000048, -399999797]: 127 from the estimate at most.
  EXPECT_EQ(clock.last_error_bound(), 127);
  EXPECT_EQ(clock.syncs(), 1u);
  // Before and after the sync's point alike: the one offset.
  EXPECT_EQ(clock.ToHostTime(1'000), 1'000 + 399'999'924);
  EXPECT_EQ(clock.ToHostTime(600'090'000), 1'000'089'924);
}

TEST(RemoteClockSyncTest, EachStretchUsesTheSyncAtItsStart) {
  RemoteClockSync clock;
  EXPECT_EQ(clock.ToHostTime(5), 5);  // Before any sync: unchanged.
  // Offset -1000, its point at host 1130 = client 130.
  ASSERT_TRUE(clock.AddSync(Round(100, 1'110, 120, 1'130)));
  // Offset -990, its point at host 6020 = client 5030.
  ASSERT_TRUE(clock.AddSync(Round(5'000, 6'000, 5'020, 6'020)));
  EXPECT_EQ(clock.ToHostTime(50), 1'050);    // before the first point: the first
  EXPECT_EQ(clock.ToHostTime(5'029), 6'029);  // the first stretch
  EXPECT_EQ(clock.ToHostTime(5'030), 6'020);  // the second's point onwards
  EXPECT_EQ(clock.ToHostTime(9'000), 9'990);
  EXPECT_EQ(clock.last_offset(), -990);
  EXPECT_EQ(clock.syncs(), 2u);
}

TEST(RemoteClockSyncTest, RoundsThirtySecondsApartGiveNoOffset) {
  RemoteClockSync clock;
  EXPECT_FALSE(clock.AddSync(Round(100, 1'100, 30'000'000'100, 30'000'001'100)));
  EXPECT_EQ(clock.syncs(), 0u);
  EXPECT_FALSE(clock.AddSync("\xff"));  // not a message
}

TEST(RemoteClockSyncTest, ClientClockGoingBackwardsMakesItUnusable) {
  RemoteClockSync clock;
  ASSERT_TRUE(clock.AddSync(Round(10'000, 11'000, 10'020, 11'020)));
  // The host's time goes on, the client's point goes back: as upstream, the
  // machine's clock can no longer be converted.
  ASSERT_TRUE(clock.AddSync(Round(1'000, 12'000, 1'020, 12'020)));
  EXPECT_EQ(clock.ToHostTime(10'500), std::nullopt);
}

TEST(RemoteClockSyncTest, HostClockGoingBackwardsRejectsTheSync) {
  RemoteClockSync clock;
  ASSERT_TRUE(clock.AddSync(Round(10'000, 11'000, 10'020, 11'020)));
  EXPECT_FALSE(clock.AddSync(Round(20'000, 9'000, 20'020, 9'020)));
  EXPECT_EQ(clock.syncs(), 1u);
  EXPECT_EQ(clock.ToHostTime(30'000), 30'990);
}

}  // namespace
}  // namespace sluice
