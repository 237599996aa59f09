#include "service/rest_flush_period.h"

#include "gtest/gtest.h"

namespace sluice {
namespace {

// A trickle doubles the period up to the ceiling; a period that brings at
// least kRestBytesPerSecond's worth puts it back to the base at once.
TEST(RestFlushPeriodTest, DoublesAtRestAndComesBackWhenDataFlows) {
  uint32_t period = 1000;
  const uint32_t expected[] = {2000, 4000, 8000, 16000, 32000, 60000, 60000};
  for (uint32_t want : expected) {
    period = NextRestFlushPeriodMs(period, 1000, 60000, /*intake_bytes=*/4096);
    EXPECT_EQ(period, want);
  }
  // 64 KiB/s over the 60 s period is the threshold: just below rests on.
  EXPECT_EQ(NextRestFlushPeriodMs(60000, 1000, 60000, kRestBytesPerSecond * 60 - 1), 60000u);
  EXPECT_EQ(NextRestFlushPeriodMs(60000, 1000, 60000, kRestBytesPerSecond * 60), 1000u);
  EXPECT_EQ(NextRestFlushPeriodMs(1000, 1000, 60000, kRestBytesPerSecond), 1000u);
  // The ceiling is never passed, even from a period near it.
  EXPECT_EQ(NextRestFlushPeriodMs(50000, 1000, 60000, 0), 60000u);
  // A ceiling equal to the base: a fixed period.
  EXPECT_EQ(NextRestFlushPeriodMs(1000, 1000, 1000, 0), 1000u);
}

}  // namespace
}  // namespace sluice
