#include "user/probes/ftrace/ftrace_page_parser.h"

#include <functional>

#include <gtest/gtest.h>

#include "tests/user/probes/ftrace/ftrace_test_util.h"

namespace sluice {
namespace {

using testing::PageBuilder;

struct Parsed {
  std::vector<uint8_t> page;  // Owns the bytes `records` point into.
  FtraceParseStatus header_status = FtraceParseStatus::kUnspecified;
  FtraceParseStatus status = FtraceParseStatus::kUnspecified;
  FtracePageHeader header;
  std::vector<FtraceRecord> records;
  uint64_t end_ts = 0;
};

Parsed Parse(const FtraceHeaderFormat& h, std::vector<uint8_t> page) {
  Parsed p;
  p.page = std::move(page);
  p.header_status = FtracePageParser::ParseHeader(h, p.page.data(), p.page.size(), &p.header);
  if (p.header_status != FtraceParseStatus::kOk) return p;
  p.status = FtracePageParser::ForEachRecord(
      h, p.header, p.page.data(), [&](const FtraceRecord& r) { p.records.push_back(r); },
      &p.end_ts);
  return p;
}

FtraceHeaderFormat Header64() { return FtraceHeaderFormat(); }
FtraceHeaderFormat Header32() {
  FtraceHeaderFormat h;
  h.commit_size = 4;
  h.data_offset = 12;
  h.data_size = 4084;
  return h;
}

std::vector<uint8_t> Payload(uint16_t id, size_t size, uint8_t fill = 0x11) {
  std::vector<uint8_t> p(size, fill);
  memcpy(p.data(), &id, 2);
  return p;
}

class FtracePageParserTest : public ::testing::TestWithParam<int> {
 protected:
  FtraceHeaderFormat h() const { return GetParam() == 8 ? Header64() : Header32(); }
};

TEST_P(FtracePageParserTest, DataRecordsAndDeltas) {
  PageBuilder b(h(), 1000);
  b.Data(5, Payload(7, 12)).Data(10, Payload(8, 112)).Data(0, Payload(9, 6));
  auto p = Parse(h(), b.Build());
  ASSERT_EQ(p.status, FtraceParseStatus::kOk);
  ASSERT_EQ(p.records.size(), 3u);
  EXPECT_EQ(p.records[0].timestamp, 1005u);
  EXPECT_EQ(p.records[0].size, 12u);
  EXPECT_EQ(p.records[1].timestamp, 1015u);
  EXPECT_EQ(p.records[1].size, 112u);  // type_len 28, the largest short form.
  EXPECT_EQ(p.records[2].timestamp, 1015u);
  EXPECT_EQ(p.records[2].size, 8u);  // Rounded up to 4 bytes.
  EXPECT_EQ(p.end_ts, 1015u);
  EXPECT_FALSE(p.header.missed_events);
}

TEST_P(FtracePageParserTest, LongEventsUseLengthWord) {
  PageBuilder b(h(), 0);
  b.Data(1, Payload(7, 200)).Data(2, Payload(8, 16), /*long_form=*/true);
  auto p = Parse(h(), b.Build());
  ASSERT_EQ(p.status, FtraceParseStatus::kOk);
  ASSERT_EQ(p.records.size(), 2u);
  EXPECT_EQ(p.records[0].size, 200u);
  EXPECT_EQ(p.records[1].size, 16u);
  EXPECT_EQ(p.records[1].timestamp, 3u);
  uint16_t id;
  memcpy(&id, p.records[1].data, 2);
  EXPECT_EQ(id, 8u);
}

TEST_P(FtracePageParserTest, TimeExtend) {
  PageBuilder b(h(), 100);
  uint64_t big = (1ull << 40) + 12345;
  b.TimeExtend(big).Data(3, Payload(1, 8));
  auto p = Parse(h(), b.Build());
  ASSERT_EQ(p.status, FtraceParseStatus::kOk);
  ASSERT_EQ(p.records.size(), 1u);
  EXPECT_EQ(p.records[0].timestamp, 100 + big + 3);
}

TEST_P(FtracePageParserTest, AbsoluteTimestampMidPage) {
  PageBuilder b(h(), 5000);
  b.Data(10, Payload(1, 8)).AbsoluteTs(9000).Data(1, Payload(2, 8));
  auto p = Parse(h(), b.Build());
  ASSERT_EQ(p.status, FtraceParseStatus::kOk);
  ASSERT_EQ(p.records.size(), 2u);
  EXPECT_EQ(p.records[0].timestamp, 5010u);
  EXPECT_EQ(p.records[1].timestamp, 9001u);
}

TEST_P(FtracePageParserTest, AbsoluteTimestampTakesTopBitsFromRunningTime) {
  // A clock with bits 59..63 set (e.g. a large counter): the absolute time
  // stamp event only holds 59 bits.
  const uint64_t msb = 0x18ull << 59;
  const uint64_t page_ts = msb | 1000;
  PageBuilder b(h(), page_ts);
  b.AbsoluteTs(2000).Data(0, Payload(1, 8));
  // Low bits wrapped below the running time: carry into bit 59.
  b.AbsoluteTs(500).Data(0, Payload(2, 8));
  auto p = Parse(h(), b.Build());
  ASSERT_EQ(p.status, FtraceParseStatus::kOk);
  ASSERT_EQ(p.records.size(), 2u);
  EXPECT_EQ(p.records[0].timestamp, msb | 2000);
  EXPECT_EQ(p.records[1].timestamp, (msb | 500) + (1ull << 59));
  EXPECT_EQ(FtracePageParser::FixAbsoluteTimestamp(42, 7), 42u);
}

TEST_P(FtracePageParserTest, DiscardedEventCountsItsDeltaUnlessOne) {
  PageBuilder b(h(), 0);
  b.Data(5, Payload(1, 8)).Discarded(7, 20).Data(1, Payload(2, 8)).Discarded(1, 12).Data(
      1, Payload(3, 8));
  auto p = Parse(h(), b.Build());
  ASSERT_EQ(p.status, FtraceParseStatus::kOk);
  ASSERT_EQ(p.records.size(), 3u);
  EXPECT_EQ(p.records[0].timestamp, 5u);
  EXPECT_EQ(p.records[1].timestamp, 13u);
  EXPECT_EQ(p.records[2].timestamp, 14u);
}

TEST_P(FtracePageParserTest, NullPaddingEndsPage) {
  PageBuilder b(h(), 0);
  b.Data(1, Payload(1, 8)).NullPadding(/*count_in_commit=*/true).RawBytes({1, 2, 3, 4, 5, 6, 7, 8});
  auto p = Parse(h(), b.Build());
  EXPECT_EQ(p.status, FtraceParseStatus::kOk);
  EXPECT_EQ(p.records.size(), 1u);

  PageBuilder tail(h(), 0);
  tail.Data(1, Payload(1, 8)).NullPadding(/*count_in_commit=*/false);
  p = Parse(h(), tail.Build());
  EXPECT_EQ(p.status, FtraceParseStatus::kOk);
  EXPECT_EQ(p.records.size(), 1u);
}

TEST_P(FtracePageParserTest, PaddingToEndOfPage) {
  // The kernel pads the tail of a full page with a discarded event of
  // time_delta 1 running to the end of the page.
  PageBuilder b(h(), 0);
  b.Data(1, Payload(1, 8));
  size_t left = h().data_size - b.used();
  b.Discarded(1, static_cast<uint32_t>(left - 4));
  EXPECT_EQ(b.used(), h().data_size);
  auto p = Parse(h(), b.Build());
  EXPECT_EQ(p.status, FtraceParseStatus::kOk);
  EXPECT_EQ(p.records.size(), 1u);
  EXPECT_EQ(p.header.data_size, h().data_size);
}

TEST_P(FtracePageParserTest, MissedEventsWithoutCount) {
  PageBuilder b(h(), 0);
  b.Data(1, Payload(1, 8)).Missed(std::nullopt);
  auto p = Parse(h(), b.Build());
  ASSERT_EQ(p.header_status, FtraceParseStatus::kOk);
  EXPECT_TRUE(p.header.missed_events);
  EXPECT_FALSE(p.header.missed_stored);
  EXPECT_EQ(p.header.data_size, 12u);
  EXPECT_EQ(p.records.size(), 1u);
}

TEST_P(FtracePageParserTest, MissedEventsWithStoredCount) {
  PageBuilder b(h(), 0);
  b.Data(1, Payload(1, 8)).Missed(1234);
  auto p = Parse(h(), b.Build());
  ASSERT_EQ(p.header_status, FtraceParseStatus::kOk);
  EXPECT_TRUE(p.header.missed_events);
  EXPECT_TRUE(p.header.missed_stored);
  EXPECT_EQ(p.header.missed_count, 1234u);
  EXPECT_EQ(p.records.size(), 1u);
}

TEST_P(FtracePageParserTest, StoredCountThatDoesNotFitIsIgnored) {
  PageBuilder b(h(), 0);
  b.Data(1, Payload(1, 8));
  b.CommitOverride(h().data_size | (1ull << 30) | (1ull << 31));
  auto p = Parse(h(), b.Build());
  ASSERT_EQ(p.header_status, FtraceParseStatus::kOk);
  EXPECT_TRUE(p.header.missed_events);
  EXPECT_FALSE(p.header.missed_stored);
}

TEST_P(FtracePageParserTest, EmptyPage) {
  PageBuilder b(h(), 77);
  auto p = Parse(h(), b.Build());
  EXPECT_EQ(p.status, FtraceParseStatus::kOk);
  EXPECT_TRUE(p.records.empty());
  EXPECT_EQ(p.end_ts, 77u);
}

TEST_P(FtracePageParserTest, MalformedPages) {
  struct Case {
    const char* what;
    std::function<void(PageBuilder&)> build;
    FtraceParseStatus expected;
  };
  const uint32_t ds = h().data_size;
  std::vector<Case> cases = {
      {"commit past page", [&](PageBuilder& b) { b.CommitOverride(ds + 1); },
       FtraceParseStatus::kAbiInvalidPageHeader},
      {"short event header", [](PageBuilder& b) { b.RawBytes({1, 0}); },
       FtraceParseStatus::kAbiShortEventHeader},
      {"padding without length", [](PageBuilder& b) { b.RawBytes({29 | (3 << 5), 0, 0, 0}); },
       FtraceParseStatus::kAbiShortPaddingLength},
      {"padding length past end",
       [](PageBuilder& b) { b.RawBytes({29 | (3 << 5), 0, 0, 0, 100, 0, 0, 0}); },
       FtraceParseStatus::kAbiInvalidPaddingLength},
      {"short time extend", [](PageBuilder& b) { b.RawBytes({30, 0, 0, 0}); },
       FtraceParseStatus::kAbiShortTimeExtend},
      {"short time stamp", [](PageBuilder& b) { b.RawBytes({31, 0, 0, 0}); },
       FtraceParseStatus::kAbiShortTimeStamp},
      {"long event without length", [](PageBuilder& b) { b.RawBytes({0, 0, 0, 0}); },
       FtraceParseStatus::kAbiShortDataLength},
      {"long event of length 0", [](PageBuilder& b) { b.RawBytes({0, 0, 0, 0, 0, 0, 0, 0}); },
       FtraceParseStatus::kAbiZeroDataLength},
      {"long event past end",
       [](PageBuilder& b) { b.RawBytes({0, 0, 0, 0, 0xff, 0xff, 0, 0}); },
       FtraceParseStatus::kAbiInvalidDataLength},
      {"short event past end", [](PageBuilder& b) { b.RawBytes({5, 0, 0, 0, 1, 2, 3, 4}); },
       FtraceParseStatus::kAbiInvalidDataLength},
      {"long event too short for an id",
       [](PageBuilder& b) { b.RawBytes({0, 0, 0, 0, 4, 0, 0, 0}); },
       FtraceParseStatus::kAbiShortEventId},
  };
  for (auto& c : cases) {
    SCOPED_TRACE(c.what);
    PageBuilder b(h(), 0);
    b.Data(1, Payload(1, 8));
    c.build(b);
    auto p = Parse(h(), b.Build());
    if (c.expected == FtraceParseStatus::kAbiInvalidPageHeader) {
      EXPECT_EQ(p.header_status, c.expected);
    } else {
      ASSERT_EQ(p.header_status, FtraceParseStatus::kOk);
      EXPECT_EQ(p.status, c.expected);
      EXPECT_EQ(p.records.size(), 1u);  // The good record before the bad one.
    }
  }
}

TEST_P(FtracePageParserTest, ShortBufferIsInvalid) {
  std::vector<uint8_t> page(6, 0);
  FtracePageHeader header;
  EXPECT_EQ(FtracePageParser::ParseHeader(h(), page.data(), page.size(), &header),
            FtraceParseStatus::kAbiInvalidPageHeader);
}

INSTANTIATE_TEST_SUITE_P(CommitSize, FtracePageParserTest, ::testing::Values(4, 8),
                         [](const auto& info) { return "commit" + std::to_string(info.param); });

TEST(FtracePageParserSubBufferTest, EightKiBSubBuffer) {
  FtraceHeaderFormat h;
  h.data_size = 8192 - 16;
  PageBuilder b(h, 0);
  int n = 0;
  while (b.used() + 68 <= h.data_size) {
    b.Data(1, Payload(3, 64));
    n++;
  }
  auto page = b.Build();
  ASSERT_EQ(page.size(), 8192u);
  auto p = Parse(h, page);
  EXPECT_EQ(p.status, FtraceParseStatus::kOk);
  EXPECT_EQ(static_cast<int>(p.records.size()), n);
  EXPECT_GT(n, 4096 / 68);
  EXPECT_EQ(p.records.back().timestamp, static_cast<uint64_t>(n));
}

// Pages captured from the running kernel (tests/data/ftrace/): walk them
// and compare with the kernel's own text rendering of the same events.
TEST(FtracePageParserCapturedTest, TimestampsMatchKernelText) {
  auto table = FtraceFormatTable::Load(testing::kTreeHost,
                                       {"sched/sched_switch", "sched/sched_waking", "ftrace/print"},
                                       nullptr);
  ASSERT_TRUE(table.ok());
  const FtraceHeaderFormat& h = table->header();
  for (const char* file :
       {"tests/data/ftrace/sluice_capture_light_cpu0.hex", "tests/data/ftrace/sluice_capture_light_cpu1.hex",
        "tests/data/ftrace/sluice_capture_overrun_cpu0.hex",
        "tests/data/ftrace/sluice_capture_overrun_cpu1.hex"}) {
    SCOPED_TRACE(file);
    testing::CapturedPages cap = testing::LoadCapturedPages(file);
    ASSERT_EQ(cap.bytes.size() % 4096, 0u);
    ASSERT_GT(cap.page_count(), 0u);
    std::vector<uint64_t> ts_us;
    std::vector<uint32_t> ids;
    for (size_t i = 0; i < cap.page_count(); i++) {
      const uint8_t* page = cap.bytes.data() + i * 4096;
      FtracePageHeader header;
      ASSERT_EQ(FtracePageParser::ParseHeader(h, page, 4096, &header), FtraceParseStatus::kOk);
      ASSERT_EQ(FtracePageParser::ForEachRecord(h, header, page,
                                                [&](const FtraceRecord& r) {
                                                  ts_us.push_back((r.timestamp + 500) / 1000);  // ns2usecs()
                                                  uint16_t id;
                                                  memcpy(&id, r.data, 2);
                                                  ids.push_back(id);
                                                }),
                FtraceParseStatus::kOk);
    }
    std::vector<uint64_t> text_us;
    for (const std::string& line : cap.text) {
      auto e = testing::ParseTextLine(line);
      if (e) text_us.push_back(e->ts_us);
    }
    ASSERT_EQ(ts_us.size(), text_us.size());
    EXPECT_EQ(ts_us, text_us);
    for (uint32_t id : ids) EXPECT_NE(table->FindById(id), nullptr) << id;
  }
}

TEST(FtracePageParserCapturedTest, OverrunPageSaysEventsWereMissed) {
  auto table = FtraceFormatTable::Load(testing::kTreeHost, {}, nullptr);
  ASSERT_TRUE(table.ok());
  testing::CapturedPages cap =
      testing::LoadCapturedPages("tests/data/ftrace/sluice_capture_overrun_cpu0.hex");
  ASSERT_GT(cap.page_count(), 0u);
  FtracePageHeader header;
  ASSERT_EQ(FtracePageParser::ParseHeader(table->header(), cap.bytes.data(), 4096, &header),
            FtraceParseStatus::kOk);
  EXPECT_TRUE(header.missed_events);
  EXPECT_TRUE(header.missed_stored);
  EXPECT_GT(header.missed_count, 0u);
  EXPECT_LE(header.data_size, 4080u);
}

}  // namespace
}  // namespace sluice
