#include "user/query/importer/event_sorter.h"

#include <gtest/gtest.h>

#include <vector>

namespace sluice {
namespace {

SortedEvent Compact(int64_t ts, uint32_t cpu, uint32_t sequence = 1) {
  SortedEvent e;
  e.ts = ts;
  e.cpu = cpu;
  e.sequence = sequence;
  e.kind = SortedEvent::kCompactSwitch;
  return e;
}

struct Collected {
  std::vector<int64_t> ts;
  EventSorter::Sink sink() {
    return [this](const SortedEvent& e, std::string_view) { ts.push_back(e.ts); };
  }
};

TEST(EventSorterTest, MergesStreamsThatArriveOneAfterTheOther) {
  Collected out;
  EventSorter sorter(1000, 1000, out.sink());
  for (int64_t ts : {10, 30, 50}) sorter.Push(Compact(ts, 0));
  sorter.Drain();
  for (int64_t ts : {20, 40, 60}) sorter.Push(Compact(ts, 1));
  sorter.Drain();
  sorter.Flush();
  EXPECT_EQ(out.ts, (std::vector<int64_t>{10, 20, 30, 40, 50, 60}));
  EXPECT_EQ(sorter.out_of_order(), 0u);
}

TEST(EventSorterTest, AfterWarmUpReleasesWhileEveryLiveStreamHasEvents) {
  Collected out;
  EventSorter sorter(100, 1000, out.sink());
  // Warm up past the window on both streams.
  sorter.Push(Compact(0, 0));
  sorter.Push(Compact(0, 1));
  sorter.Push(Compact(500, 0));
  sorter.Push(Compact(510, 1));
  sorter.Drain();
  // Everything up to the point where a stream ran dry is out; 510 waits
  // for stream 0 to show it has nothing earlier.
  EXPECT_EQ(out.ts, (std::vector<int64_t>{0, 0, 500}));
  sorter.Push(Compact(520, 0));
  sorter.Drain();
  EXPECT_EQ(out.ts, (std::vector<int64_t>{0, 0, 500, 510}));
}

TEST(EventSorterTest, SameCpuOnTwoSequencesIsTwoStreams) {
  Collected out;
  EventSorter sorter(1'000'000, 1000, out.sink());
  for (int64_t ts : {10, 20, 30}) sorter.Push(Compact(ts, 0, /*sequence=*/1));
  for (int64_t ts : {15, 25}) sorter.Push(Compact(ts, 0, /*sequence=*/2));
  sorter.Flush();
  EXPECT_EQ(out.ts, (std::vector<int64_t>{10, 15, 20, 25, 30}));
}

TEST(EventSorterTest, TooLateIsCountedAndStillDelivered) {
  Collected out;
  EventSorter sorter(100, 1000, out.sink());
  sorter.Push(Compact(0, 0));
  sorter.Push(Compact(1000, 0));  // Past the warm-up: the one stream releases.
  sorter.Drain();
  ASSERT_EQ(out.ts, (std::vector<int64_t>{0, 1000}));
  sorter.Push(Compact(-5, 1));  // Earlier than events already handed on.
  sorter.Flush();
  EXPECT_EQ(sorter.out_of_order(), 1u);
  EXPECT_EQ(out.ts, (std::vector<int64_t>{0, 1000, -5}));
}

TEST(EventSorterTest, PendingEventsAreBounded) {
  Collected out;
  EventSorter sorter(1'000'000'000, 10, out.sink());
  for (int64_t ts = 0; ts < 100; ++ts) {
    sorter.Push(Compact(ts, 0));
    sorter.Drain();
  }
  EXPECT_LE(sorter.max_pending_seen(), 11u);
  sorter.Flush();
  EXPECT_EQ(out.ts.size(), 100u);
}

TEST(EventSorterTest, FtraceEventBytesOutliveTheirPacket) {
  std::vector<std::string> seen;
  EventSorter sorter(1'000'000, 1000, [&seen](const SortedEvent&, std::string_view bytes) {
    seen.emplace_back(bytes);
  });
  {
    std::string packet = "..abc..";
    uint32_t block = sorter.AddBlock(packet);
    SortedEvent e = Compact(1, 0);
    e.kind = SortedEvent::kFtrace;
    e.block = block;
    e.offset = 2;
    e.size = 3;
    sorter.Push(e);
    sorter.ReleaseBlock(block);
  }  // The packet's own bytes are gone; the sorter's copy is not.
  sorter.Flush();
  EXPECT_EQ(seen, std::vector<std::string>{"abc"});
}

}  // namespace
}  // namespace sluice
