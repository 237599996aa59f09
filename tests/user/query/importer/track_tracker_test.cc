// TrackTracker: tracks interned by what they stand for, and the compression
// of async tracks (Perfetto's TrackCompressor rules).
#include "user/query/importer/track_tracker.h"

#include <gtest/gtest.h>

namespace sluice {
namespace {

class TrackTrackerTest : public ::testing::Test {
 protected:
  StringId Name(const char* name) { return storage_.strings.Intern(name); }
  TraceStorage storage_;
  TrackTracker tracks_{&storage_};
};

TEST_F(TrackTrackerTest, TracksAreInternedByWhatTheyStandFor) {
  uint32_t t1 = tracks_.ThreadTrack(1);
  EXPECT_EQ(tracks_.ThreadTrack(1), t1);
  EXPECT_NE(tracks_.ThreadTrack(2), t1);
  uint32_t c = tracks_.ProcessCounterTrack(1, Name("depth"));
  EXPECT_EQ(tracks_.ProcessCounterTrack(1, Name("depth")), c);
  EXPECT_NE(tracks_.ProcessCounterTrack(2, Name("depth")), c);
  EXPECT_EQ(storage_.track.utid[t1], 1u);
  EXPECT_EQ(storage_.track.upid[c], 1u);
  EXPECT_EQ(storage_.track.is_counter[c], 1);
  EXPECT_EQ(storage_.track.name[t1], kNullStringId);  // Thread tracks have no name, as in Perfetto.
}

TEST_F(TrackTrackerTest, CookiesKeepTheirTrackAndFreeTracksAreAdopted) {
  StringId type = Name("atrace_async_slice"), job = Name("job");
  auto unnestable = TrackTracker::Nesting::kLegacyUnnestable;
  uint32_t a = tracks_.AsyncBegin(type, 1, job, 1, unnestable);
  uint32_t b = tracks_.AsyncBegin(type, 1, job, 2, unnestable);  // 1 still open: a second track.
  EXPECT_NE(a, b);
  EXPECT_EQ(tracks_.AsyncEnd(type, 1, job, 1), a);
  EXPECT_EQ(tracks_.AsyncBegin(type, 1, job, 3, unnestable), a);  // a is free: adopted by cookie 3.
  EXPECT_EQ(tracks_.AsyncEnd(type, 1, job, 2), b);
  EXPECT_EQ(tracks_.AsyncBegin(type, 1, job, 2, unnestable), b);  // Cookie 2 keeps its track.
  EXPECT_NE(tracks_.AsyncBegin(type, 2, job, 1, unnestable), a);  // Another process: another set.
  EXPECT_EQ(storage_.track.track_group_id[a], storage_.track.track_group_id[b]);
}

TEST_F(TrackTrackerTest, InstantsTakeTheFirstInstantTrackThatIsFree) {
  StringId type = Name("atrace_async_slice_for_track"), trk = Name("trk");
  uint32_t slice = tracks_.AsyncBegin(type, 1, trk, 5, TrackTracker::Nesting::kNestable);
  uint32_t i1 = tracks_.AsyncInstant(type, 1, trk, 100);
  EXPECT_NE(i1, slice);  // Cookie tracks never carry instants.
  EXPECT_EQ(tracks_.AsyncInstant(type, 1, trk, 100), i1);  // Ended at 100: free at 100.
  EXPECT_EQ(tracks_.AsyncInstant(type, 1, trk, 200), i1);
}

}  // namespace
}  // namespace sluice
