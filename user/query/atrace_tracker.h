// AtraceTracker: print events in atrace format (AtraceLine) become slices
// and counters, as Perfetto's trace processor makes them (its
// SystraceParser):
//
//   B/E/I  on the writing thread's track (thread_execution). A line with a
//          tgid makes the thread a thread of that process (UpdateThread);
//          an E without one ends nothing on a thread never seen.
//   S/F    async slices of the process (atrace_async_slice tracks, one per
//          name, compressed, legacy unnestable), with a `cookie` arg.
//   N/G/H  instants and async slices on the named track of the process
//          (atrace_async_slice_for_track), with `utid` (and `end_utid`).
//   C      a counter of the process (atrace_counter track per name), with
//          the writer's `utid` when the thread is known; the writer need
//          not be in the process (kernel counters use placeholder tgids).
//
// Lines that are not atrace count as systrace_parse_failure; every print
// also stays an ftrace_event row with its text (the importer's part).
// Not done: Android's special names (kill_one_process and "lmk," slices as
// LMK instants, ScreenState, battery_stats.*, DeviceStateChanged tracks)
// are plain counters and slices here.
#ifndef SLUICE_USER_QUERY_ATRACE_TRACKER_H_
#define SLUICE_USER_QUERY_ATRACE_TRACKER_H_

#include <cstdint>
#include <string_view>

#include "user/query/atrace_line.h"
#include "user/query/process_tracker.h"
#include "user/query/slice_tracker.h"
#include "user/query/track_tracker.h"
#include "user/query/trace_storage.h"

namespace sluice {

class AtraceTracker {
 public:
  AtraceTracker(TraceStorage* storage, ProcessTracker* processes, TrackTracker* tracks, SliceTracker* slices);
  AtraceTracker(const AtraceTracker&) = delete;
  AtraceTracker& operator=(const AtraceTracker&) = delete;

  // A print event of thread `tid` at `ts` with text `buf`.
  void OnPrint(int64_t ts, int64_t tid, std::string_view buf);

  int64_t parse_failures() const { return parse_failures_; }

 private:
  uint32_t WriterUtid(int64_t tid, uint32_t tgid);
  void OnLine(int64_t ts, int64_t tid, const AtraceLine& line);

  TraceStorage* storage_;
  ProcessTracker* processes_;
  TrackTracker* tracks_;
  SliceTracker* slices_;
  StringId async_type_, async_for_track_type_;
  StringId cookie_key_, utid_key_, end_utid_key_;
  int64_t parse_failures_ = 0;
};

}  // namespace sluice

#endif  // SLUICE_USER_QUERY_ATRACE_TRACKER_H_
