// ParseAtraceLine on the forms Android's atrace and other writers produce,
// and on the malformed lines Perfetto counts as systrace_parse_failure.
#include "user/query/importer/atrace_line.h"

#include <gtest/gtest.h>

#include <string>

namespace sluice {
namespace {

AtraceLine Parse(std::string_view text, AtraceParse expected = AtraceParse::kOk) {
  AtraceLine line;
  EXPECT_EQ(ParseAtraceLine(text, &line), expected) << text;
  return line;
}

TEST(AtraceLineTest, BeginKeepsTheRestOfTheLineAsName) {
  AtraceLine b = Parse("B|1636|pokeUserActivity\n");
  EXPECT_EQ(b.phase, 'B');
  EXPECT_EQ(b.tgid, 1636u);
  EXPECT_EQ(b.name, "pokeUserActivity");
  EXPECT_EQ(Parse("B|1|a|b|c\n").name, "a|b|c");
  EXPECT_EQ(Parse("B|1|\n").name, "[empty slice name]");
  EXPECT_EQ(Parse("B|1|no newline").name, "no newline");
  Parse("B|x|name\n", AtraceParse::kNotAtrace);
  Parse("B\n", AtraceParse::kNotAtrace);
}

TEST(AtraceLineTest, EndNeedsNoTgid) {
  EXPECT_EQ(Parse("E|1636\n").tgid, 1636u);
  AtraceLine e = Parse("E\n");
  EXPECT_EQ(e.phase, 'E');
  EXPECT_EQ(e.tgid, 0u);
  EXPECT_EQ(Parse("E|1636|ignored\n").tgid, 1636u);
}

TEST(AtraceLineTest, CounterValueIsAnInteger) {
  AtraceLine c = Parse("C|3209|TransfersBytesPendingOnDisk-value|-12|Blob\n");
  EXPECT_EQ(c.name, "TransfersBytesPendingOnDisk-value");
  EXPECT_EQ(c.value, -12);
  EXPECT_EQ(Parse("C|1|big|99999999999\n").value, 99999999999);
  Parse("C|1|frac|1.5\n", AtraceParse::kNotAtrace);
  Parse("C|1|novalue\n", AtraceParse::kNotAtrace);
  Parse("C|1||5\n", AtraceParse::kNotAtrace);
}

TEST(AtraceLineTest, AsyncAndTrackForms) {
  AtraceLine s = Parse("S|1636|frame_capture|123\n");
  EXPECT_EQ(s.name, "frame_capture");
  EXPECT_EQ(s.value, 123);
  EXPECT_EQ(Parse("F|1636|frame_capture|456\n").value, 456);
  Parse("S|1636|frame_capture|\n", AtraceParse::kNotAtrace);
  AtraceLine i = Parse("I|4820|instant\n");
  EXPECT_EQ(i.name, "instant");
  AtraceLine n = Parse("N|1938|track_name|instant_name\n");
  EXPECT_EQ(n.track, "track_name");
  EXPECT_EQ(n.name, "instant_name");
  AtraceLine g = Parse("G|1339|track_name|slice_name|789\n");
  EXPECT_EQ(g.track, "track_name");
  EXPECT_EQ(g.name, "slice_name");
  EXPECT_EQ(g.value, 789);
  EXPECT_EQ(Parse("H|6890|track_name|slice_name|135\n").value, 135);
  EXPECT_EQ(Parse("H|6890|track_name|135\n").value, 135);
  Parse("H|6890|track_name\n", AtraceParse::kNotAtrace);
}

TEST(AtraceLineTest, NumbersAreReadAsPerfettoReadsThem) {
  // strtoul semantics: a sign and leading blanks are accepted.
  EXPECT_EQ(Parse("B| 42|x\n").tgid, 42u);
  EXPECT_EQ(Parse("B|+42|x\n").tgid, 42u);
  Parse("B|42 |x\n", AtraceParse::kNotAtrace);
  // A NUL ends a field as '|' does.
  std::string with_nul("C|7|depth\0" "3", 11);
  EXPECT_EQ(Parse(with_nul).value, 3);
}

TEST(AtraceLineTest, PlainTextIsNotAtraceButClockSyncIsIgnored) {
  Parse("hello world\n", AtraceParse::kNotAtrace);
  Parse("marker 1\n", AtraceParse::kNotAtrace);
  Parse("", AtraceParse::kNotAtrace);
  Parse("\n", AtraceParse::kNotAtrace);
  Parse("trace_event_clock_sync: parent_ts=1.0\n", AtraceParse::kIgnored);
}

}  // namespace
}  // namespace sluice
