#include "user/probes/ftrace/ftrace_watermark.h"

#include <gtest/gtest.h>

namespace sluice {
namespace {

constexpr uint64_t kMiB = 1024 * 1024;

TEST(FtraceWatermarkTest, FastMeansFillingInLessThanTheLimit) {
  // The highest rate measured here: ~30 MB/s per CPU into 1 MiB (35 ms).
  EXPECT_TRUE(FtraceBufferFillsFast(kMiB, 30'000'000, 1000));
  // A moderate rate: ~3.75 MB/s (280 ms).
  EXPECT_FALSE(FtraceBufferFillsFast(kMiB, 3'750'000, 1000));
  // Just either side of kFastFillMs, over a tick of another length.
  EXPECT_FALSE(FtraceBufferFillsFast(kMiB, 2 * kMiB * 10, 2000));  // 100 ms: not less.
  EXPECT_TRUE(FtraceBufferFillsFast(kMiB, 2 * kMiB * 10 + 1, 2000));
}

TEST(FtraceWatermarkTest, NothingToGoOnIsNotFast) {
  EXPECT_FALSE(FtraceBufferFillsFast(kMiB, 0, 1000));
  EXPECT_FALSE(FtraceBufferFillsFast(kMiB, 30'000'000, 0));
  EXPECT_FALSE(FtraceBufferFillsFast(0, 30'000'000, 1000));
}

TEST(FtraceWatermarkTest, ANearMissIsThreeQuartersOfTheBuffer) {
  EXPECT_FALSE(FtraceNearMiss(191, 256));
  EXPECT_TRUE(FtraceNearMiss(192, 256));
  EXPECT_TRUE(FtraceNearMiss(256, 256));
  EXPECT_FALSE(FtraceNearMiss(5, 0));
}

// The workers' threshold is the same near miss, rounded up to whole pages.
TEST(FtraceWatermarkTest, TheNearMissInPagesAgreesWithTheCheck) {
  EXPECT_EQ(FtraceNearMissPages(256), 192u);
  EXPECT_EQ(FtraceNearMissPages(257), 193u);  // 192.75 pages.
  EXPECT_EQ(FtraceNearMissPages(0), 0u);
  for (uint64_t buffer : {1u, 3u, 4u, 255u, 256u, 257u, 1000u}) {
    EXPECT_TRUE(FtraceNearMiss(FtraceNearMissPages(buffer), buffer)) << buffer;
    EXPECT_FALSE(FtraceNearMiss(FtraceNearMissPages(buffer) - 1, buffer)) << buffer;
  }
}

}  // namespace
}  // namespace sluice
