// SliceTracker's stacking rules on a bare TraceStorage (the end-to-end
// comparison with Perfetto is query_reference_test on atrace.pftrace).
#include "user/query/importer/slice_tracker.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace sluice {
namespace {

class SliceTrackerTest : public ::testing::Test {
 protected:
  StringId Name(const char* name) { return storage_.strings.Intern(name); }
  // "name ts dur depth parent" per slice, in id order.
  std::vector<std::string> Slices() {
    std::vector<std::string> out;
    const SliceTable& s = storage_.slice;
    for (size_t i = 0; i < s.size(); ++i) {
      std::string parent = s.parent_id[i] == kNullU32 ? "-" : std::to_string(s.parent_id[i]);
      out.push_back(std::string(storage_.strings.Get(s.name[i])) + " " + std::to_string(s.ts[i]) + " " +
                    std::to_string(s.dur[i]) + " " + std::to_string(s.depth[i]) + " " + parent);
    }
    return out;
  }
  std::vector<std::string> ArgsOf(uint32_t row) {
    std::vector<std::string> out;
    if (storage_.slice.arg_set_id[row] == kNoArgSet) return out;
    std::vector<Arg> args;
    uint64_t first = 0;
    storage_.args.Decode(storage_.slice.arg_set_id[row], &args, &first);
    for (const Arg& a : args) out.push_back(std::string(storage_.strings.Get(a.key)) + "=" + std::to_string(a.int_value));
    return out;
  }

  TraceStorage storage_;
  SliceTracker tracker_{&storage_};
};

TEST_F(SliceTrackerTest, BeginsNestAndEndsCloseTheInnermost) {
  tracker_.Begin(100, 0, Name("outer"));
  tracker_.Begin(110, 0, Name("inner"));
  tracker_.Begin(115, 1, Name("other track"));
  tracker_.End(120, 0);
  tracker_.End(130, 0);
  tracker_.End(140, 0);  // Nothing open: no change.
  tracker_.End(150, 7);  // A track never used: no change.
  tracker_.Finish();
  EXPECT_EQ(Slices(), (std::vector<std::string>{"outer 100 30 0 -", "inner 110 10 1 0", "other track 115 -1 0 -"}));
}

TEST_F(SliceTrackerTest, InstantsPopBeforeABeginAndStackOnInstants) {
  tracker_.Begin(100, 0, Name("a"));
  tracker_.Instant(105, 0, Name("i1"));
  tracker_.Instant(105, 0, Name("i2"));  // Same time: stacks on i1.
  tracker_.Begin(105, 0, Name("b"));     // Same time: pops both instants.
  tracker_.End(110, 0);
  tracker_.End(120, 0);
  tracker_.Finish();
  EXPECT_EQ(Slices(), (std::vector<std::string>{"a 100 20 0 -", "i1 105 0 1 0", "i2 105 0 2 1", "b 105 5 1 0"}));
}

TEST_F(SliceTrackerTest, LegacyUnnestableCountsBeginsWhileOpen) {
  StringId cookie = Name("cookie");
  tracker_.BeginLegacyUnnestable(100, 0, Name("job"), {{cookie, ArgType::kInt, 1, 0}});
  tracker_.BeginLegacyUnnestable(150, 0, Name("job"), {{cookie, ArgType::kInt, 1, 0}});  // Only counted.
  tracker_.End(200, 0);
  tracker_.Finish();
  EXPECT_EQ(Slices(), (std::vector<std::string>{"job 100 100 0 -"}));
  EXPECT_EQ(ArgsOf(0), (std::vector<std::string>{"cookie=1", "legacy_unnestable_begin_count=2",
                                                  "legacy_unnestable_last_begin_ts=150"}));
}

TEST_F(SliceTrackerTest, EndArgsJoinWithoutReplacing) {
  StringId utid = Name("utid"), end_utid = Name("end_utid");
  tracker_.Begin(100, 0, Name("g"), {{utid, ArgType::kUint, 3, 0}});
  tracker_.End(110, 0, {{end_utid, ArgType::kUint, 4, 0}, {utid, ArgType::kUint, 9, 0}});
  EXPECT_EQ(ArgsOf(0), (std::vector<std::string>{"end_utid=4", "utid=3"}));
}

// A track event's end finds the innermost open slice of its category (and
// name, when both have one), as upstream: a slice of no category open
// inside it (an atrace one) ends where it did, at the track's next event.
TEST_F(SliceTrackerTest, EndMatchingFindsTheSliceOfItsCategory) {
  tracker_.Begin(100, 0, Name("event"), {}, Name("cat"));
  tracker_.Begin(110, 0, Name("atrace"));
  EXPECT_EQ(tracker_.EndMatching(180, 0, Name("cat"), kNullStringId, {}, SliceTracker::EndArgs::kReplace), 0u);
  EXPECT_EQ(tracker_.misplaced_end_events(), 1);
  EXPECT_EQ(tracker_.EndMatching(190, 0, kNullStringId, Name("other"), {}, SliceTracker::EndArgs::kReplace),
            kNullU32);  // nothing left open: the atrace slice ended at 180
  EXPECT_EQ(Slices(), (std::vector<std::string>{"event 100 80 0 -", "atrace 110 70 1 0"}));
  // A name must match only when both have one.
  tracker_.Begin(200, 0, Name("named"), {}, Name("cat"));
  EXPECT_EQ(tracker_.EndMatching(210, 0, Name("cat"), Name("other"), {}, SliceTracker::EndArgs::kReplace), kNullU32);
  EXPECT_EQ(tracker_.EndMatching(220, 0, Name("cat"), Name("named"), {}, SliceTracker::EndArgs::kReplace), 2u);
}

TEST_F(SliceTrackerTest, StacksDeeperThan512DropAndCount) {
  for (int i = 0; i < 514; ++i) tracker_.Begin(100 + i, 0, Name("level"));
  EXPECT_EQ(storage_.slice.size(), 512u);
  EXPECT_EQ(tracker_.max_depth_exceeded(), 2);
  EXPECT_EQ(storage_.slice.depth.back(), 511u);
}

}  // namespace
}  // namespace sluice
