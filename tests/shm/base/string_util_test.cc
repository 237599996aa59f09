#include "shm/base/string_util.h"

#include "gtest/gtest.h"

namespace sluice {
namespace {

TEST(StringUtilTest, TrimWhitespace) {
  EXPECT_EQ(TrimWhitespace(" \t a b \r\n"), "a b");
  EXPECT_EQ(TrimWhitespace(" \n"), "");
  EXPECT_EQ(TrimWhitespace("x"), "x");
}

TEST(StringUtilTest, ForEachLineStopsWhenAsked) {
  std::vector<std::string> lines;
  ForEachLine("a\nb\n\nc", [&](std::string_view l) {
    lines.emplace_back(l);
    return true;
  });
  EXPECT_EQ(lines, (std::vector<std::string>{"a", "b", "", "c"}));
  lines.clear();
  ForEachLine("a\nb\nc\n", [&](std::string_view l) {
    lines.emplace_back(l);
    return l != "b";
  });
  EXPECT_EQ(lines, (std::vector<std::string>{"a", "b"}));
}

TEST(StringUtilTest, CountOf) {
  EXPECT_EQ(CountOf(0, "packet"), "0 packets");
  EXPECT_EQ(CountOf(1, "packet"), "1 packet");
  EXPECT_EQ(CountOf(38, "byte"), "38 bytes");
}

TEST(StringUtilTest, Join) {
  EXPECT_EQ(Join({}, ", "), "");
  EXPECT_EQ(Join({"a"}, ", "), "a");
  // A leading empty item keeps its separator.
  EXPECT_EQ(Join({"", "b", "c"}, ","), ",b,c");
}

TEST(StringUtilTest, ParseUnsigned) {
  uint32_t u32 = 0;
  EXPECT_TRUE(ParseU32(" 42\n", &u32));
  EXPECT_EQ(u32, 42u);
  EXPECT_FALSE(ParseU32("4294967296", &u32));
  EXPECT_FALSE(ParseU32("-1", &u32));
  EXPECT_FALSE(ParseU32("12x", &u32));
  EXPECT_FALSE(ParseU32("", &u32));
  uint64_t u64 = 0;
  EXPECT_TRUE(ParseU64("18446744073709551615", &u64));
  EXPECT_EQ(u64, UINT64_MAX);
  EXPECT_FALSE(ParseU64("18446744073709551616", &u64));
}

TEST(StringUtilTest, NearestMatches) {
  const std::vector<std::string> names = {"sched/sched_switch", "sched/sched_waking", "sched/sched_wakeup", "irq/*"};
  EXPECT_EQ(NearestMatches("sched/sched_swich", names, 3), std::vector<std::string>{"sched/sched_switch"});
  // One edit away, and the next best three: only the best.
  EXPECT_EQ(NearestMatches("sched/sched_wakup", names, 3), std::vector<std::string>{"sched/sched_wakeup"});
  // Two at one edit: both, the first one listed first; capped.
  EXPECT_EQ(NearestMatches("sched/sched_wakinp", {"sched/sched_waking", "sched/sched_wakinq"}, 3),
            (std::vector<std::string>{"sched/sched_waking", "sched/sched_wakinq"}));
  EXPECT_EQ(NearestMatches("sched/sched_wakinp", {"sched/sched_waking", "sched/sched_wakinq"}, 1),
            std::vector<std::string>{"sched/sched_waking"});
  EXPECT_TRUE(NearestMatches("power/cpu_idle", names, 3).empty());
  EXPECT_EQ(NearestMatches("irq", {"ipi", "irq"}, 3), std::vector<std::string>{"irq"});
}

}  // namespace
}  // namespace sluice
