// SliceTracker: the `slice` table, built from begins and ends on tracks in
// timestamp order, with Perfetto's stacking rules (its SliceTracker):
//
//   - Each track has a stack of open slices; a begin nests under the top
//     (depth, parent_id) and an end closes the innermost open one. An end
//     on a track with nothing open changes nothing.
//   - Instants (Scoped, dur 0) are pushed and popped as soon as a later
//     event reaches the track: a begin at the same timestamp pops them, an
//     instant at the same timestamp stacks on them.
//   - A track marked legacy unnestable (atrace S/F) holds at most one slice:
//     a begin while one is open only counts; at the end the slice gets
//     legacy_unnestable_begin_count and legacy_unnestable_last_begin_ts
//     (the track's count of begins and the last begin's time).
//   - A slice's args are written when it leaves the stack (or at Finish for
//     slices still open, which keep dur -1).
//   - Stacks deeper than 512 drop the begin (slice_max_depth_exceeded).
#ifndef SLUICE_USER_QUERY_IMPORTER_SLICE_TRACKER_H_
#define SLUICE_USER_QUERY_IMPORTER_SLICE_TRACKER_H_

#include <cstdint>
#include <unordered_map>
#include <utility>
#include <vector>

#include "user/query/storage/trace_storage.h"

namespace sluice {

class SliceTracker {
 public:
  explicit SliceTracker(TraceStorage* storage) : storage_(storage) {}
  SliceTracker(const SliceTracker&) = delete;
  SliceTracker& operator=(const SliceTracker&) = delete;

  // Begin, End, Instant and Complete return the slice's row (kNullU32 when
  // none was made or ended).
  uint32_t Begin(int64_t ts, uint32_t track, StringId name, std::vector<Arg> args = {},
                 StringId category = kNullStringId);
  void BeginLegacyUnnestable(int64_t ts, uint32_t track, StringId name, std::vector<Arg> args);
  // `end_args` join the closed slice's args. A key the begin set already
  // keeps its begin value (atrace's utid), or takes the end's (block_io's
  // sector), as upstream does for each.
  enum class EndArgs { kKeepBegin, kReplace };
  uint32_t End(int64_t ts, uint32_t track, std::vector<Arg> end_args = {}, EndArgs policy = EndArgs::kKeepBegin);
  // Ends the innermost open slice named `name` (syscall exits: a missing
  // exit must not end the wrong call). One still open inside it stays open
  // until the track's next event, which first ends it where its parent
  // ended, and counts misplaced_end_event, as upstream. False if none is open.
  bool EndNamed(int64_t ts, uint32_t track, StringId name, std::vector<Arg> end_args = {},
                EndArgs policy = EndArgs::kKeepBegin);
  // A track event's end, as upstream matches it: the innermost open slice
  // of `category` (when given: the slice must have that one) and `name`
  // (when both have one, they must be equal); slices still open inside it
  // end as EndNamed's do. Returns the ended slice's row, or kNullU32.
  uint32_t EndMatching(int64_t ts, uint32_t track, StringId category, StringId name, std::vector<Arg> end_args,
                       EndArgs policy);
  uint32_t Instant(int64_t ts, uint32_t track, StringId name, std::vector<Arg> args = {},
                   StringId category = kNullStringId) {
    return Complete(ts, 0, track, name, std::move(args), category);
  }
  // A slice whose duration is known at its start (an instant: 0).
  uint32_t Complete(int64_t ts, int64_t dur, uint32_t track, StringId name, std::vector<Arg> args = {},
                    StringId category = kNullStringId);
  // Writes the args of the slices still open (their dur stays -1).
  void Finish();

  int64_t max_depth_exceeded() const { return max_depth_exceeded_; }
  int64_t misplaced_end_events() const { return misplaced_end_events_; }

 private:
  static constexpr int64_t kOpen = -1;
  static constexpr size_t kMaxDepth = 512;
  struct OpenSlice {
    uint32_t row;
    int64_t ts;
    int64_t dur;  // kOpen until ended
    std::vector<Arg> args;
  };
  struct TrackStack {
    std::vector<OpenSlice> stack;
    bool legacy_unnestable = false;
    uint32_t legacy_begin_count = 0;
    int64_t legacy_last_begin_ts = 0;
  };

  uint32_t Start(int64_t ts, int64_t dur, uint32_t track, TrackStack& state, StringId name, std::vector<Arg> args,
                 StringId category = kNullStringId);
  // Pops the slices that ended before `ts` (or at it, unless both are
  // instants); `dur` is the new slice's (kOpen for a begin).
  void CloseEnded(TrackStack& state, int64_t ts, int64_t dur);
  void Pop(TrackStack& state);
  // Slices still open inside one EndNamed ended end where it ended, as
  // upstream does at the track's next event.
  void TruncateInsideEnded(TrackStack& state);
  // Ends the innermost open slice `matches` accepts; see EndNamed.
  template <typename Matches>
  uint32_t EndInnermost(int64_t ts, uint32_t track, Matches matches, std::vector<Arg> end_args, EndArgs policy);
  // Ends state.stack[index] at `ts` with `end_args`.
  uint32_t CloseAt(TrackStack& state, size_t index, int64_t ts, std::vector<Arg> end_args, EndArgs policy);

  TraceStorage* storage_;
  std::unordered_map<uint32_t, TrackStack> tracks_;
  int64_t max_depth_exceeded_ = 0;
  int64_t misplaced_end_events_ = 0;
};

}  // namespace sluice

#endif  // SLUICE_USER_QUERY_IMPORTER_SLICE_TRACKER_H_
