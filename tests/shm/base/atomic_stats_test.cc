#include "shm/base/atomic_stats.h"

#include <thread>

#include "gtest/gtest.h"

namespace sluice {
namespace {

struct ExampleStats {
  uint64_t pages = 0;
  uint64_t bytes = 0;
  uint64_t errors = 0;
};

TEST(AtomicStatsTest, AddStoreLoadByField) {
  AtomicStats<ExampleStats> stats;
  stats.Add(&ExampleStats::pages);
  stats.Add(&ExampleStats::bytes, 4096);
  ExampleStats s = stats.Load();
  EXPECT_EQ(s.pages, 1u);
  EXPECT_EQ(s.bytes, 4096u);
  EXPECT_EQ(s.errors, 0u);
  stats.Store(ExampleStats{7, 8, 9});
  EXPECT_EQ(stats.Get(&ExampleStats::errors), 9u);
  stats.Set(&ExampleStats::pages, 1);
  EXPECT_EQ(stats.Load().pages, 1u);
}

// Run under make SANITIZE=thread: one counting thread, one reading thread.
TEST(AtomicStatsTest, OwnerCountsWhileAnotherThreadReads) {
  AtomicStats<ExampleStats> stats;
  constexpr uint64_t kAdds = 100000;
  std::thread owner([&] {
    for (uint64_t i = 0; i < kAdds; i++) stats.Add(&ExampleStats::bytes, 2);
  });
  uint64_t last = 0;
  for (int i = 0; i < 1000; i++) {
    uint64_t now = stats.Load().bytes;
    EXPECT_GE(now, last);  // Counters only grow.
    last = now;
  }
  owner.join();
  EXPECT_EQ(stats.Load().bytes, 2 * kAdds);
}

}  // namespace
}  // namespace sluice
