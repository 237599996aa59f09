#include "user/probes/ftrace/ftrace_page_encoder.h"

#include <algorithm>
#include <set>

#include <gtest/gtest.h>

#include "perfetto/trace/ftrace/ftrace_event.pb.h"
#include "perfetto/trace/ftrace/ftrace_event_bundle.pb.h"
#include "perfetto/trace/trace_packet.pb.h"
#include "tests/user/probes/ftrace/ftrace_test_util.h"

namespace sluice {
namespace {

using perfetto::protos::FtraceEvent;
using perfetto::protos::FtraceEventBundle;
using perfetto::protos::TracePacket;
using testing::PageBuilder;
using testing::RecordBuilder;

std::vector<FtraceEventBundle> Bundles(HeapTraceWriter& w) {
  std::vector<FtraceEventBundle> out;
  for (const std::string& p : w.TakePackets()) {
    TracePacket packet;
    EXPECT_TRUE(packet.ParseFromString(p));
    EXPECT_TRUE(packet.has_ftrace_events());
    out.push_back(packet.ftrace_events());
  }
  return out;
}

// sched_switch / sched_waking as plain values, from either encoding.
struct Sched {
  bool is_switch;
  uint64_t ts;
  int32_t pid;  // next_pid / pid
  std::string comm;
  int32_t prio;
  int64_t prev_state_or_target_cpu;
  bool operator==(const Sched& o) const {
    return is_switch == o.is_switch && ts == o.ts && pid == o.pid && comm == o.comm &&
           prio == o.prio && prev_state_or_target_cpu == o.prev_state_or_target_cpu;
  }
};

std::vector<Sched> SchedEvents(const std::vector<FtraceEventBundle>& bundles) {
  std::vector<Sched> out;
  for (const auto& b : bundles) {
    for (const FtraceEvent& e : b.event()) {
      if (e.has_sched_switch())
        out.push_back({true, e.timestamp(), e.sched_switch().next_pid(),
                       e.sched_switch().next_comm(), e.sched_switch().next_prio(),
                       e.sched_switch().prev_state()});
      if (e.has_sched_waking())
        out.push_back({false, e.timestamp(), e.sched_waking().pid(), e.sched_waking().comm(),
                       e.sched_waking().prio(), e.sched_waking().target_cpu()});
    }
    const auto& c = b.compact_sched();
    uint64_t ts = 0;
    for (int i = 0; i < c.switch_timestamp_size(); i++) {
      ts += c.switch_timestamp(i);
      out.push_back({true, ts, c.switch_next_pid(i),
                     c.intern_table(static_cast<int>(c.switch_next_comm_index(i))),
                     c.switch_next_prio(i), c.switch_prev_state(i)});
    }
    ts = 0;
    for (int i = 0; i < c.waking_timestamp_size(); i++) {
      ts += c.waking_timestamp(i);
      out.push_back({false, ts, c.waking_pid(i),
                     c.intern_table(static_cast<int>(c.waking_comm_index(i))), c.waking_prio(i),
                     c.waking_target_cpu(i)});
    }
  }
  std::stable_sort(out.begin(), out.end(), [](const Sched& a, const Sched& b) {
    return a.ts < b.ts;
  });
  return out;
}

FtraceFormatTable HostTable() {
  auto t = FtraceFormatTable::Load(
      testing::kTreeHost, {"sched/sched_switch", "sched/sched_waking", "ftrace/print"}, nullptr);
  EXPECT_TRUE(t.ok());
  return std::move(*t);
}

const char* kCaptures[] = {
    "tests/data/ftrace/sluice_capture_light_cpu0.hex",
    "tests/data/ftrace/sluice_capture_light_cpu1.hex",
    "tests/data/ftrace/sluice_capture_overrun_cpu0.hex",
    "tests/data/ftrace/sluice_capture_overrun_cpu1.hex",
};

// Captured pages, encoded, match the kernel's text rendering event by event.
TEST(FtracePageEncoderTest, CapturedPagesMatchKernelText) {
  FtraceFormatTable table = HostTable();
  for (const char* file : kCaptures) {
    SCOPED_TRACE(file);
    testing::CapturedPages cap = testing::LoadCapturedPages(file);
    FtracePageEncoder enc(&table, 1, FtraceEncodeOptions());
    HeapTraceWriter w;
    enc.EncodePages(cap.bytes.data(), cap.page_count(), 4096, &w);
    auto bundles = Bundles(w);
    ASSERT_EQ(bundles.size(), 1u);
    EXPECT_EQ(bundles[0].cpu(), 1u);
    EXPECT_EQ(bundles[0].previous_bundle_end_timestamp(), 0u);
    EXPECT_FALSE(bundles[0].has_ftrace_clock());
    EXPECT_EQ(enc.stats().parse_errors, 0u);
    EXPECT_EQ(enc.stats().unknown_event_ids, 0u);

    std::vector<testing::TextEvent> text;
    for (const std::string& line : cap.text)
      if (auto e = testing::ParseTextLine(line)) text.push_back(*e);
    ASSERT_EQ(static_cast<size_t>(bundles[0].event_size()), text.size());
    EXPECT_EQ(enc.stats().events, text.size());
    for (size_t i = 0; i < text.size(); i++) {
      SCOPED_TRACE(cap.text[i]);
      const FtraceEvent& e = bundles[0].event(static_cast<int>(i));
      const testing::TextEvent& t = text[i];
      EXPECT_EQ((e.timestamp() + 500) / 1000, t.ts_us);
      EXPECT_EQ(static_cast<int>(e.pid()), t.pid);
      if (t.name == "sched_switch") {
        ASSERT_TRUE(e.has_sched_switch());
        EXPECT_EQ(e.sched_switch().prev_comm(), t.kv.at("prev_comm"));
        EXPECT_EQ(std::to_string(e.sched_switch().prev_pid()), t.kv.at("prev_pid"));
        EXPECT_EQ(e.sched_switch().next_comm(), t.kv.at("next_comm"));
        EXPECT_EQ(std::to_string(e.sched_switch().next_pid()), t.kv.at("next_pid"));
        EXPECT_EQ(std::to_string(e.sched_switch().next_prio()), t.kv.at("next_prio"));
        // prev_state=R means 0 (runnable; the + suffix is preemption).
        if (t.kv.at("prev_state") == "R") {
          EXPECT_EQ(e.sched_switch().prev_state(), 0);
        } else if (t.kv.at("prev_state") == "S") {
          EXPECT_EQ(e.sched_switch().prev_state(), 1);
        }
      } else if (t.name == "sched_waking") {
        ASSERT_TRUE(e.has_sched_waking());
        EXPECT_EQ(e.sched_waking().comm(), t.kv.at("comm"));
        EXPECT_EQ(std::to_string(e.sched_waking().pid()), t.kv.at("pid"));
        EXPECT_EQ(e.sched_waking().target_cpu(), std::stoi(t.kv.at("target_cpu")));
      } else if (t.name == "tracing_mark_write") {
        ASSERT_TRUE(e.has_print());
        std::string buf = e.print().buf();
        if (!buf.empty() && buf.back() == '\n') buf.pop_back();
        EXPECT_EQ(buf, t.args);
      } else {
        ADD_FAILURE() << "unexpected event " << t.name;
      }
    }
  }
}

TEST(FtracePageEncoderTest, CompactSchedEncodesTheSameEvents) {
  FtraceFormatTable table = HostTable();
  size_t total = 0;
  for (const char* file : kCaptures) {
    SCOPED_TRACE(file);
    testing::CapturedPages cap = testing::LoadCapturedPages(file);
    FtracePageEncoder plain(&table, 0, FtraceEncodeOptions());
    FtraceEncodeOptions opt;
    opt.compact_sched = true;
    FtracePageEncoder compact(&table, 0, opt);
    EXPECT_TRUE(compact.compact_switch());
    EXPECT_TRUE(compact.compact_waking());
    HeapTraceWriter w1, w2;
    plain.EncodePages(cap.bytes.data(), cap.page_count(), 4096, &w1);
    compact.EncodePages(cap.bytes.data(), cap.page_count(), 4096, &w2);
    auto b1 = Bundles(w1);
    auto b2 = Bundles(w2);
    auto s1 = SchedEvents(b1);
    auto s2 = SchedEvents(b2);
    total += s1.size();  // overrun_cpu0 holds only prints.
    EXPECT_TRUE(s1 == s2);
    EXPECT_EQ(plain.stats().events, compact.stats().events);
    EXPECT_EQ(compact.stats().compact_switch + compact.stats().compact_waking, s2.size());
    // Non-sched events (print) stay ordinary events.
    for (const auto& b : b2)
      for (const auto& e : b.event()) EXPECT_FALSE(e.has_sched_switch() || e.has_sched_waking());
    // The intern table holds each comm once.
    for (const auto& b : b2) {
      std::set<std::string> seen;
      for (const auto& s : b.compact_sched().intern_table()) EXPECT_TRUE(seen.insert(s).second);
    }
    // Waking flags are kept.
    for (const auto& b : b2)
      EXPECT_EQ(b.compact_sched().waking_common_flags_size(),
                b.compact_sched().waking_pid_size());
  }
  EXPECT_GT(total, 500u);
}

class FtracePageEncoderSyntheticTest : public ::testing::Test {
 protected:
  FtracePageEncoderSyntheticTest() : table_(HostTable()) {}
  std::vector<uint8_t> Switch(int next_pid, const std::string& next_comm) {
    return RecordBuilder(*table_.FindByName("sched", "sched_switch"))
        .Int("common_pid", 1)
        .Str("prev_comm", "prev")
        .Int("next_pid", next_pid)
        .Str("next_comm", next_comm)
        .Int("next_prio", 120)
        .Build();
  }
  std::vector<uint8_t> Waking(int pid, const std::string& comm) {
    return RecordBuilder(*table_.FindByName("sched", "sched_waking"))
        .Str("comm", comm)
        .Int("pid", pid)
        .Int("target_cpu", 1)
        .Build();
  }
  std::vector<uint8_t> Print(const std::string& s) {
    return RecordBuilder(*table_.FindByName("ftrace", "print")).Str("buf", s).Build();
  }
  const FtraceHeaderFormat& h() const { return table_.header(); }
  static std::vector<uint8_t> Join(const std::vector<std::vector<uint8_t>>& pages) {
    std::vector<uint8_t> out;
    for (const auto& p : pages) out.insert(out.end(), p.begin(), p.end());
    return out;
  }
  FtraceFormatTable table_;
};

TEST_F(FtracePageEncoderSyntheticTest, LostEventsStartANewBundle) {
  auto p1 = PageBuilder(h(), 1000).Data(1, Switch(5, "a")).Data(1, Print("x")).Build();
  auto p2 = PageBuilder(h(), 5000).Data(1, Switch(6, "b")).Missed(17).Build();
  auto p3 = PageBuilder(h(), 6000).Data(1, Switch(7, "c")).Build();
  auto pages = Join({p1, p2, p3});
  FtracePageEncoder enc(&table_, 3, FtraceEncodeOptions());
  HeapTraceWriter w;
  enc.EncodePages(pages.data(), 3, 4096, &w);
  auto b = Bundles(w);
  ASSERT_EQ(b.size(), 2u);
  EXPECT_FALSE(b[0].lost_events());
  EXPECT_EQ(b[0].event_size(), 2);
  EXPECT_EQ(b[0].previous_bundle_end_timestamp(), 0u);
  EXPECT_TRUE(b[1].lost_events());
  EXPECT_EQ(b[1].event_size(), 2);
  EXPECT_EQ(b[1].previous_bundle_end_timestamp(), 1002u);
  EXPECT_EQ(enc.stats().lost_event_pages, 1u);
  EXPECT_EQ(enc.stats().lost_events_known, 17u);
  EXPECT_EQ(enc.stats().lost_event_pages_uncounted, 0u);
  EXPECT_EQ(enc.last_event_timestamp(), 6001u);

  // The next call's bundle points at the last event of this one; a first
  // page with missed events marks the bundle without splitting.
  auto p4 = PageBuilder(h(), 9000).Data(1, Switch(8, "d")).Missed(std::nullopt).Build();
  enc.EncodePages(p4.data(), 1, 4096, &w);
  b = Bundles(w);
  ASSERT_EQ(b.size(), 1u);
  EXPECT_TRUE(b[0].lost_events());
  EXPECT_EQ(b[0].previous_bundle_end_timestamp(), 6001u);
  EXPECT_EQ(enc.stats().lost_event_pages, 2u);
  EXPECT_EQ(enc.stats().lost_events_known, 17u);
  EXPECT_EQ(enc.stats().lost_event_pages_uncounted, 1u);
}

// The mapped reader's reader page, read while the kernel still writes into
// it: the first read sees two records (commit covers them), the second the
// same page with a third; it resumes where the first stopped. Every record
// once, with the timestamps a whole-page read gives. (The kernel flags
// missed events only on a page it no longer writes into.)
TEST_F(FtracePageEncoderSyntheticTest, AResumedPageWritesOnlyTheRecordsAfterTheResumeOffset) {
  PageBuilder first(h(), 1000);
  first.Data(1, Switch(5, "a")).Data(2, Print("x"));
  const size_t first_commit = first.used();  // Bytes of data.
  auto whole = PageBuilder(h(), 1000).Data(1, Switch(5, "a")).Data(2, Print("x")).Data(4, Print("y")).Build();
  auto partial = whole;
  // The same bytes, with the commit of the first read (flags kept).
  uint64_t commit = 0;
  memcpy(&commit, partial.data() + h().commit_offset, h().commit_size);
  commit = (commit & ~FtracePageParser::kCommitSizeMask) | first_commit;
  memcpy(partial.data() + h().commit_offset, &commit, h().commit_size);

  FtracePageEncoder enc(&table_, 0, FtraceEncodeOptions());
  HeapTraceWriter w;
  enc.EncodePage(partial.data(), partial.size(), 0, &w);
  enc.EncodePage(whole.data(), whole.size(), h().data_offset + first_commit, &w);
  enc.FinishBundle();
  auto bundles = Bundles(w);
  ASSERT_EQ(bundles.size(), 1u);
  ASSERT_EQ(bundles[0].event_size(), 3);
  EXPECT_FALSE(bundles[0].lost_events());
  EXPECT_EQ(bundles[0].event(0).timestamp(), 1001u);
  EXPECT_EQ(bundles[0].event(1).timestamp(), 1003u);
  EXPECT_EQ(bundles[0].event(2).timestamp(), 1007u);
  EXPECT_EQ(bundles[0].event(2).print().buf(), "y");
  EXPECT_EQ(enc.stats().pages, 1u);
  EXPECT_EQ(enc.stats().events, 3u);

  // Read whole, the same events.
  FtracePageEncoder once(&table_, 0, FtraceEncodeOptions());
  HeapTraceWriter w2;
  once.EncodePages(whole.data(), 1, whole.size(), &w2);
  auto reference = Bundles(w2);
  ASSERT_EQ(reference.size(), 1u);
  EXPECT_EQ(reference[0].SerializeAsString(), bundles[0].SerializeAsString());
}

// However many pages go into one open bundle (the mapped reader encodes up
// to a whole ring before FinishBundle()), a bundle holds kMaxPagesPerBundle
// pages at most; a resumed page does not count again; nothing is lost at the
// splits and each bundle says where the previous one ended.
TEST_F(FtracePageEncoderSyntheticTest, ABundleHoldsAtMostMaxPagesPerBundle) {
  constexpr size_t kMax = FtracePageEncoder::kMaxPagesPerBundle;
  FtracePageEncoder enc(&table_, 0, FtraceEncodeOptions());
  HeapTraceWriter w;
  for (size_t i = 0; i < 2 * kMax + 1; i++) {
    auto page = PageBuilder(h(), 1000 * (i + 1)).Data(1, Print("p" + std::to_string(i))).Build();
    const size_t end = enc.EncodePage(page.data(), page.size(), 0, &w);
    if (i == 0) enc.EncodePage(page.data(), page.size(), end, &w);  // Resumed: nothing new.
  }
  enc.FinishBundle();
  auto bundles = Bundles(w);
  ASSERT_EQ(bundles.size(), 3u);
  EXPECT_EQ(static_cast<size_t>(bundles[0].event_size()), kMax);
  EXPECT_EQ(static_cast<size_t>(bundles[1].event_size()), kMax);
  EXPECT_EQ(bundles[2].event_size(), 1);
  EXPECT_EQ(bundles[1].previous_bundle_end_timestamp(), bundles[0].event(kMax - 1).timestamp());
  EXPECT_EQ(bundles[2].event(0).print().buf(), "p" + std::to_string(2 * kMax));
  EXPECT_EQ(enc.stats().pages, 2 * kMax + 1);
}

TEST_F(FtracePageEncoderSyntheticTest, MalformedPageIsSkippedWholeAndNoted) {
  auto good = PageBuilder(h(), 1000).Data(1, Switch(5, "a")).Build();
  // A good event followed by garbage: nothing of the page is written.
  auto bad = PageBuilder(h(), 2000).Data(1, Switch(6, "b")).RawBytes({0, 0, 0, 0}).Build();
  auto bad_header = PageBuilder(h(), 3000).CommitOverride(5000).Build();
  auto pages = Join({good, bad, bad_header, good});
  FtracePageEncoder enc(&table_, 0, FtraceEncodeOptions());
  HeapTraceWriter w;
  enc.EncodePages(pages.data(), 4, 4096, &w);
  auto b = Bundles(w);
  ASSERT_EQ(b.size(), 1u);
  EXPECT_EQ(b[0].event_size(), 2);
  ASSERT_EQ(b[0].error_size(), 2);
  EXPECT_EQ(b[0].error(0).timestamp(), 2000u);
  EXPECT_EQ(b[0].error(0).status(), perfetto::protos::FTRACE_STATUS_ABI_SHORT_DATA_LENGTH);
  EXPECT_EQ(b[0].error(1).status(), perfetto::protos::FTRACE_STATUS_ABI_INVALID_PAGE_HEADER);
  EXPECT_EQ(enc.stats().parse_errors, 2u);
  EXPECT_EQ(enc.stats().errors_by_status[static_cast<size_t>(
                FtraceParseStatus::kAbiInvalidPageHeader)],
            1u);
  EXPECT_EQ(enc.stats().pages, 4u);
}

TEST_F(FtracePageEncoderSyntheticTest, MalformedPageIsUndoneInCompactMode) {
  auto good = PageBuilder(h(), 1000).Data(1, Switch(5, "a")).Data(1, Waking(6, "b")).Build();
  auto bad = PageBuilder(h(), 2000)
                 .Data(1, Switch(7, "c"))
                 .Data(1, Waking(8, "d"))
                 .Data(1, Print("gone"))
                 .RawBytes({30, 0, 0, 0})
                 .Build();
  auto pages = Join({good, bad, good});
  FtraceEncodeOptions opt;
  opt.compact_sched = true;
  FtracePageEncoder enc(&table_, 0, opt);
  HeapTraceWriter w;
  enc.EncodePages(pages.data(), 3, 4096, &w);
  auto b = Bundles(w);
  ASSERT_EQ(b.size(), 1u);
  auto s = SchedEvents(b);
  ASSERT_EQ(s.size(), 4u);
  for (const Sched& e : s) EXPECT_TRUE(e.pid == 5 || e.pid == 6) << e.pid;
  EXPECT_EQ(b[0].event_size(), 0);  // The print of the bad page is gone too.
  ASSERT_EQ(b[0].error_size(), 1);
  EXPECT_EQ(b[0].error(0).status(), perfetto::protos::FTRACE_STATUS_ABI_SHORT_TIME_EXTEND);
  EXPECT_EQ(enc.stats().events, 4u);
  EXPECT_EQ(enc.stats().compact_switch, 2u);
  EXPECT_EQ(enc.last_event_timestamp(), 1002u);
}

TEST_F(FtracePageEncoderSyntheticTest, BigEventsStreamAndMalformedPagesAfterThemAreStillSkipped) {
  // A print longer than the fast path takes is streamed through nested
  // messages, which needs the page validated first.
  std::string big(3000, 'z');
  auto good = PageBuilder(h(), 1000).Data(1, Print("small")).Data(1, Print(big)).Build();
  auto bad = PageBuilder(h(), 2000).Data(1, Print(big)).RawBytes({31, 0, 0, 0}).Build();
  auto pages = Join({good, bad});
  FtracePageEncoder enc(&table_, 0, FtraceEncodeOptions());
  HeapTraceWriter w;
  enc.EncodePages(pages.data(), 2, 4096, &w);
  auto b = Bundles(w);
  ASSERT_EQ(b.size(), 1u);
  ASSERT_EQ(b[0].event_size(), 2);
  EXPECT_EQ(b[0].event(0).print().buf(), "small");
  EXPECT_EQ(b[0].event(1).print().buf(), big);
  EXPECT_EQ(b[0].event(1).timestamp(), 1002u);
  ASSERT_EQ(b[0].error_size(), 1);
  EXPECT_EQ(b[0].error(0).status(), perfetto::protos::FTRACE_STATUS_ABI_SHORT_TIME_STAMP);
  EXPECT_EQ(enc.stats().events, 2u);
}

TEST_F(FtracePageEncoderSyntheticTest, ManyPagesFlushTheStagingBufferInOrder) {
  std::vector<std::vector<uint8_t>> pages;
  int n = 0;
  for (int p = 0; p < 20; p++) {
    PageBuilder b(h(), static_cast<uint64_t>(p) * 1000000);
    while (b.used() + 80 < h().data_size) {
      b.Data(1, Switch(n, "c" + std::to_string(n % 7)));
      n++;
    }
    pages.push_back(b.Build());
  }
  auto all = Join(pages);
  FtracePageEncoder enc(&table_, 0, FtraceEncodeOptions());
  HeapTraceWriter w;
  enc.EncodePages(all.data(), pages.size(), 4096, &w);
  auto s = SchedEvents(Bundles(w));
  ASSERT_EQ(static_cast<int>(s.size()), n);
  for (int i = 0; i < n; i++) EXPECT_EQ(s[static_cast<size_t>(i)].pid, i);
}

TEST_F(FtracePageEncoderSyntheticTest, UnknownIdsAndShortRecordsAreCounted) {
  std::vector<uint8_t> unknown = {0x34, 0x12, 0, 0, 0, 0, 0, 0};
  std::vector<uint8_t> short_switch = Switch(1, "x");
  short_switch.resize(12);
  auto page = PageBuilder(h(), 0).Data(1, unknown).Data(1, short_switch).Data(1, Print("ok")).Build();
  FtracePageEncoder enc(&table_, 0, FtraceEncodeOptions());
  HeapTraceWriter w;
  enc.EncodePages(page.data(), 1, 4096, &w);
  auto b = Bundles(w);
  ASSERT_EQ(b.size(), 1u);
  EXPECT_EQ(b[0].event_size(), 1);
  EXPECT_EQ(enc.stats().unknown_event_ids, 1u);
  EXPECT_EQ(enc.stats().invalid_events, 1u);
  EXPECT_EQ(enc.stats().events, 1u);
}

TEST_F(FtracePageEncoderSyntheticTest, FtraceClockOnlyWhenNotBoot) {
  auto page = PageBuilder(h(), 0).Data(1, Print("x")).Build();
  HeapTraceWriter w;
  FtracePageEncoder boot(&table_, 0, FtraceEncodeOptions());
  boot.EncodePages(page.data(), 1, 4096, &w);
  auto b = Bundles(w);
  ASSERT_EQ(b.size(), 1u);
  EXPECT_FALSE(b[0].has_ftrace_clock());
  EXPECT_FALSE(b[0].has_ftrace_timestamp());

  FtraceEncodeOptions opt;
  opt.ftrace_clock = perfetto::protos::FTRACE_CLOCK_GLOBAL;
  FtracePageEncoder global(&table_, 0, opt);
  global.EncodePages(page.data(), 1, 4096, &w);
  global.SetClockSnapshot(111, 222);
  global.EncodePages(page.data(), 1, 4096, &w);
  b = Bundles(w);
  ASSERT_EQ(b.size(), 2u);
  EXPECT_EQ(b[0].ftrace_clock(), perfetto::protos::FTRACE_CLOCK_GLOBAL);
  EXPECT_FALSE(b[0].has_ftrace_timestamp());
  EXPECT_EQ(b[1].ftrace_timestamp(), 111);
  EXPECT_EQ(b[1].boot_timestamp(), 222);
}

TEST_F(FtracePageEncoderSyntheticTest, CompactSchedDeltasAndInterning) {
  auto page = PageBuilder(h(), 1000)
                  .Data(10, Switch(5, "same"))
                  .Data(10, Waking(6, "same"))
                  .Data(10, Switch(7, "other"))
                  .Data(10, Print("p"))
                  .Data(10, Switch(8, "same"))
                  .Build();
  FtraceEncodeOptions opt;
  opt.compact_sched = true;
  FtracePageEncoder enc(&table_, 0, opt);
  HeapTraceWriter w;
  enc.EncodePages(page.data(), 1, 4096, &w);
  auto b = Bundles(w);
  ASSERT_EQ(b.size(), 1u);
  const auto& c = b[0].compact_sched();
  ASSERT_EQ(c.intern_table_size(), 2);
  EXPECT_EQ(c.intern_table(0), "same");
  EXPECT_EQ(c.intern_table(1), "other");
  ASSERT_EQ(c.switch_timestamp_size(), 3);
  EXPECT_EQ(c.switch_timestamp(0), 1010u);  // First is absolute.
  EXPECT_EQ(c.switch_timestamp(1), 20u);
  EXPECT_EQ(c.switch_timestamp(2), 20u);
  EXPECT_EQ(c.switch_next_comm_index(0), 0u);
  EXPECT_EQ(c.switch_next_comm_index(1), 1u);
  EXPECT_EQ(c.switch_next_comm_index(2), 0u);
  ASSERT_EQ(c.waking_timestamp_size(), 1);
  EXPECT_EQ(c.waking_timestamp(0), 1020u);
  EXPECT_EQ(c.waking_comm_index(0), 0u);
  EXPECT_EQ(b[0].event_size(), 1);  // print
  EXPECT_EQ(enc.last_event_timestamp(), 1050u);
}

TEST_F(FtracePageEncoderSyntheticTest, CompactSchedEndsBundlesWhenFull) {
  // 3000 sched_switch events with distinct comms over many pages.
  std::vector<std::vector<uint8_t>> pages;
  int pid = 0;
  uint64_t ts = 0;
  while (pid < 3000) {
    PageBuilder b(h(), ts);
    while (b.used() + 80 < h().data_size && pid < 3000) {
      b.Data(1, Switch(pid, "c" + std::to_string(pid)));
      pid++;
      ts++;
    }
    pages.push_back(b.Build());
  }
  auto all = Join(pages);
  FtraceEncodeOptions opt;
  opt.compact_sched = true;
  FtracePageEncoder enc(&table_, 0, opt);
  HeapTraceWriter w;
  enc.EncodePages(all.data(), pages.size(), 4096, &w);
  auto b = Bundles(w);
  EXPECT_GT(b.size(), 3000u / CompactSchedBuffer::kMaxComms);
  auto events = SchedEvents(b);
  ASSERT_EQ(events.size(), 3000u);
  for (int i = 0; i < 3000; i++) {
    EXPECT_EQ(events[static_cast<size_t>(i)].pid, i);
    EXPECT_EQ(events[static_cast<size_t>(i)].comm, "c" + std::to_string(i));
  }
  for (size_t i = 1; i < b.size(); i++) {
    auto prev = SchedEvents({b[i - 1]});
    ASSERT_FALSE(prev.empty());
    EXPECT_EQ(b[i].previous_bundle_end_timestamp(), prev.back().ts);
  }
}

TEST_F(FtracePageEncoderSyntheticTest, EightKiBSubBuffer) {
  auto t = FtraceFormatTable::Load(testing::kTreeHost, {"sched/sched_switch"}, nullptr);
  ASSERT_TRUE(t.ok());
  // What header_page says with buffer_subbuf_size_kb = 8.
  std::string page_text, event_text;
  ASSERT_TRUE(ReadTracefsFile(std::string(testing::kTreeHost) + "/header_page", &page_text).ok());
  ASSERT_TRUE(ReadTracefsFile(std::string(testing::kTreeHost) + "/header_event", &event_text).ok());
  page_text.replace(page_text.find("size:4080"), 9, "size:8176");
  auto big = FtraceFormatTable::FromHeaders(page_text, event_text);
  ASSERT_TRUE(big.ok());
  std::string fmt;
  ASSERT_TRUE(ReadTracefsFile(std::string(testing::kTreeHost) + "/sched/sched_switch/format", &fmt).ok());
  ASSERT_TRUE(big->AddEvent("sched", fmt).ok());
  ASSERT_EQ(big->header().page_size(), 8192u);
  PageBuilder b(big->header(), 0);
  int n = 0;
  while (b.used() + 68 <= big->header().data_size) {
    b.Data(1, RecordBuilder(*big->FindByName("sched", "sched_switch")).Int("next_pid", n).Build());
    n++;
  }
  auto pages = Join({b.Build(), b.Build()});
  FtracePageEncoder enc(&*big, 0, FtraceEncodeOptions());
  HeapTraceWriter w;
  enc.EncodePages(pages.data(), 2, 8192, &w);
  auto bundles = Bundles(w);
  ASSERT_EQ(bundles.size(), 1u);
  EXPECT_EQ(bundles[0].event_size(), 2 * n);
  EXPECT_EQ(bundles[0].event(n - 1).sched_switch().next_pid(), n - 1);
  EXPECT_EQ(enc.stats().parse_errors, 0u);
}

TEST(FtracePageEncoder32BitTest, SchedSwitchOn34) {
  auto table = FtraceFormatTable::Load(testing::kTree34, {"sched/sched_switch"}, nullptr);
  ASSERT_TRUE(table.ok());
  const FtraceEventFormat* f = table->FindByName("sched", "sched_switch");
  auto rec = RecordBuilder(*f)
                 .Int("common_pid", 3)
                 .Str("next_comm", "surfaceflinger")
                 .Int("next_pid", 300)
                 .Int("prev_state", -1)
                 .Build();
  auto page = PageBuilder(table->header(), 10).Data(5, rec).Missed(2).Build();
  for (bool compact : {false, true}) {
    FtraceEncodeOptions opt;
    opt.compact_sched = compact;
    FtracePageEncoder enc(&*table, 2, opt);
    EXPECT_EQ(enc.compact_switch(), compact);
    EXPECT_FALSE(enc.compact_waking());  // 3.4 has no sched_waking.
    HeapTraceWriter w;
    enc.EncodePages(page.data(), 1, 4096, &w);
    auto b = Bundles(w);
    ASSERT_EQ(b.size(), 1u);
    EXPECT_TRUE(b[0].lost_events());
    EXPECT_EQ(enc.stats().lost_events_known, 2u);
    auto s = SchedEvents(b);
    ASSERT_EQ(s.size(), 1u);
    EXPECT_EQ(s[0].ts, 15u);
    EXPECT_EQ(s[0].pid, 300);
    EXPECT_EQ(s[0].comm, "surfaceflinger");
    EXPECT_EQ(s[0].prev_state_or_target_cpu, -1);  // 4-byte long, sign-extended.
  }
}

}  // namespace
}  // namespace sluice
