#include "user/probes/bpf/bpf_bundle_writer.h"

#include <cstring>
#include <vector>

#include <gtest/gtest.h>

#include "perfetto/trace/trace_packet.pb.h"

extern "C" {
#include "bpf/sched.h"
}

namespace sluice {
namespace {

namespace pp = perfetto::protos;

std::vector<uint8_t> Waking(uint64_t ts, int32_t pid) {
  sluice_sched_wakeup r = {};
  r.hdr.ts = ts;
  r.hdr.pid = 1;
  r.hdr.type = SLUICE_REC_SCHED_WAKING;
  r.pid = pid;
  std::vector<uint8_t> v(sizeof(r));
  memcpy(v.data(), &r, sizeof(r));
  return v;
}

std::vector<pp::FtraceEventBundle> Bundles(const HeapTraceWriter& w) {
  std::vector<pp::FtraceEventBundle> out;
  for (const std::string& bytes : w.packets()) {
    pp::TracePacket p;
    EXPECT_TRUE(p.ParseFromString(bytes));
    EXPECT_TRUE(p.has_ftrace_events());
    out.push_back(p.ftrace_events());
  }
  return out;
}

TEST(BpfBundleWriterTest, BundlesPerCloseAndMaxEvents) {
  HeapTraceWriter w;
  BpfBundleWriter b(3, &w, /*max_events=*/2);
  for (int i = 1; i <= 5; i++) {
    auto rec = Waking(100 * i, i);
    b.Append(rec.data(), rec.size());
  }
  b.Close();
  auto bundles = Bundles(w);
  ASSERT_EQ(bundles.size(), 3u);  // 2 + 2 + 1
  EXPECT_EQ(bundles[0].cpu(), 3u);
  EXPECT_EQ(bundles[0].event_size(), 2);
  EXPECT_EQ(bundles[2].event_size(), 1);
  EXPECT_FALSE(bundles[0].has_previous_bundle_end_timestamp());
  EXPECT_EQ(bundles[1].previous_bundle_end_timestamp(), 200u);
  EXPECT_EQ(bundles[2].previous_bundle_end_timestamp(), 400u);
  EXPECT_EQ(bundles[2].event(0).sched_waking().pid(), 5);
  EXPECT_EQ(b.delivered(), 5u);
  EXPECT_EQ(b.events(), 5u);
  EXPECT_EQ(b.bundles(), 3u);
  b.Close();  // idempotent
  EXPECT_EQ(w.packets().size(), 3u);
}

TEST(BpfBundleWriterTest, LostEventsFlagOnTheNextBundleOnly) {
  HeapTraceWriter w;
  BpfBundleWriter b(0, &w);
  auto rec = Waking(1, 1);
  b.Append(rec.data(), rec.size());
  b.Close();
  b.MarkLost();
  b.Close();  // nothing open: the flag waits for a bundle
  b.Append(rec.data(), rec.size());
  b.Close();
  b.Append(rec.data(), rec.size());
  b.Close();
  auto bundles = Bundles(w);
  ASSERT_EQ(bundles.size(), 3u);
  EXPECT_FALSE(bundles[0].lost_events());
  EXPECT_TRUE(bundles[1].lost_events());
  EXPECT_FALSE(bundles[2].lost_events());
}

TEST(BpfBundleWriterTest, BadRecordsAreCountedNotWritten) {
  HeapTraceWriter w;
  BpfBundleWriter b(0, &w);
  uint8_t junk[8] = {};
  b.Append(junk, sizeof(junk));
  auto rec = Waking(1, 1);
  rec[12] = 0xee;  // type
  b.Append(rec.data(), rec.size());
  auto good = Waking(2, 2);
  b.Append(good.data(), good.size());
  b.Close();
  EXPECT_EQ(b.delivered(), 3u);
  EXPECT_EQ(b.decode_errors(), 2u);
  auto bundles = Bundles(w);
  ASSERT_EQ(bundles.size(), 1u);
  ASSERT_EQ(bundles[0].event_size(), 1);
  EXPECT_EQ(bundles[0].event(0).timestamp(), 2u);
}


TEST(BpfBundleWriterTest, PendingLossAtTheEndBecomesAnEmptyBundle) {
  HeapTraceWriter w;
  BpfBundleWriter b(2, &w);
  b.FlushPendingLoss();  // nothing pending: nothing written
  EXPECT_TRUE(w.packets().empty());
  b.MarkLost();
  b.FlushPendingLoss();
  b.FlushPendingLoss();  // once
  auto bundles = Bundles(w);
  ASSERT_EQ(bundles.size(), 1u);
  EXPECT_EQ(bundles[0].cpu(), 2u);
  EXPECT_TRUE(bundles[0].lost_events());
  EXPECT_EQ(bundles[0].event_size(), 0);
}

}  // namespace
}  // namespace sluice
