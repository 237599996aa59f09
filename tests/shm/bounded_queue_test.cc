#include "shm/bounded_queue.h"

#include <atomic>
#include <cstdint>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

namespace sluice {
namespace {

struct Item {
  uint32_t producer = 0;
  uint32_t seq = 0;
};

TEST(BoundedQueueTest, IsFifoAndSaysWhenFullAndWhenEmpty) {
  BoundedQueue<Item> q(3);  // Rounded up to 4.
  ASSERT_EQ(q.capacity(), 4u);
  Item out;
  EXPECT_FALSE(q.TryPop(&out));
  for (uint32_t i = 0; i < 4; i++) EXPECT_TRUE(q.TryPush({0, i}));
  EXPECT_FALSE(q.TryPush({0, 4}));
  EXPECT_EQ(q.ApproxSize(), 4u);
  for (uint32_t i = 0; i < 4; i++) {
    ASSERT_TRUE(q.TryPop(&out));
    EXPECT_EQ(out.seq, i);
  }
  EXPECT_FALSE(q.TryPop(&out));
}

// A cell's sequence is stored less its index, from zeroed memory: the cells
// must hand over correctly lap after lap, at every fill level.
TEST(BoundedQueueTest, CellsHandOverLapAfterLap) {
  BoundedQueue<Item> q(8);
  uint32_t pushed = 0, popped = 0;
  Item out;
  for (int lap = 0; lap < 1000; lap++) {
    const uint32_t n = 1 + static_cast<uint32_t>(lap % 8);
    for (uint32_t i = 0; i < n; i++) ASSERT_TRUE(q.TryPush({0, pushed++}));
    if (n == 8) {
      EXPECT_FALSE(q.TryPush({0, pushed}));
    }
    for (uint32_t i = 0; i < n; i++) {
      ASSERT_TRUE(q.TryPop(&out));
      ASSERT_EQ(out.seq, popped++);
    }
    ASSERT_FALSE(q.TryPop(&out));
  }
}

// Several producers and one consumer at once (as the arbiter's writers and
// its committing thread): each producer's items come out once each, in its
// order. Run under TSan too (make SANITIZE=thread).
TEST(BoundedQueueTest, ManyProducersOneConsumerLoseAndReorderNothing) {
  constexpr uint32_t kProducers = 4, kEach = 50000;
  BoundedQueue<Item> q(64);
  std::vector<std::thread> producers;
  for (uint32_t p = 0; p < kProducers; p++) {
    producers.emplace_back([&q, p] {
      for (uint32_t i = 0; i < kEach;) {
        if (q.TryPush({p, i})) {
          i++;
        } else {
          std::this_thread::yield();
        }
      }
    });
  }
  std::vector<uint32_t> next(kProducers, 0);
  uint32_t total = 0;
  Item out;
  while (total < kProducers * kEach) {
    if (!q.TryPop(&out)) {
      std::this_thread::yield();
      continue;
    }
    ASSERT_LT(out.producer, kProducers);
    ASSERT_EQ(out.seq, next[out.producer]) << "producer " << out.producer;
    next[out.producer]++;
    total++;
  }
  for (auto& t : producers) t.join();
  EXPECT_FALSE(q.TryPop(&out));
}

}  // namespace
}  // namespace sluice
