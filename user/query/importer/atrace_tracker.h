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
// Android's special names, as Perfetto promotes them:
//   C kill_one_process = pid (not 0)   also a "mem.lmk" instant on the
//                                       killed process's android_lmk track
//   B "lmk,pid,reason,oom_adj,..."     also that instant, and the adj on
//                                       the process's oom_score_adj counter
//   C ScreenState                      the global screen_state counter only
//   C battery_stats.*                  a global battery_stats counter only
//   N ...|DeviceStateChanged|state     an instant on the global
//                                       android_device_state track
#ifndef SLUICE_USER_QUERY_IMPORTER_ATRACE_TRACKER_H_
#define SLUICE_USER_QUERY_IMPORTER_ATRACE_TRACKER_H_

#include <cstdint>
#include <string_view>

#include "user/query/importer/atrace_line.h"
#include "user/query/importer/process_tracker.h"
#include "user/query/importer/slice_tracker.h"
#include "user/query/importer/track_tracker.h"
#include "user/query/storage/trace_storage.h"

namespace sluice {

class AtraceTracker {
 public:
  AtraceTracker(TraceStorage* storage, ProcessTracker* processes, TrackTracker* tracks, SliceTracker* slices);
  AtraceTracker(const AtraceTracker&) = delete;
  AtraceTracker& operator=(const AtraceTracker&) = delete;

  // A print event of thread `tid` at `ts` with text `buf`.
  void OnPrint(int64_t ts, int64_t tid, std::string_view buf);

  // A display or GPU driver's tracing_mark_write (mdss, sde, dpu, g2d,
  // mali): an atrace point the kernel made. `phase` is 'B', 'E', 'C' or 'I',
  // or 0 from drivers that only begin and end (`begin` says which); `tgid`
  // is the process the payload names (counters often name a placeholder).
  // Any other phase is a parse failure.
  void OnKernelMark(int64_t ts, int64_t tid, char phase, bool begin, std::string_view name, uint32_t tgid,
                    int64_t value);
  // Counts malformed points too: a driver mark without its phase.
  void CountParseFailure() { parse_failures_++; }

  int64_t parse_failures() const { return parse_failures_; }

 private:
  uint32_t WriterUtid(int64_t tid, uint32_t tgid);
  void OnLine(int64_t ts, int64_t tid, const AtraceLine& line);
  void OnCounter(int64_t ts, int64_t tid, const AtraceLine& line);
  void LmkInstant(int64_t ts, int64_t killed_pid);
  void AddCounterValue(int64_t ts, uint32_t track, double value, std::vector<Arg> args);

  TraceStorage* storage_;
  ProcessTracker* processes_;
  TrackTracker* tracks_;
  SliceTracker* slices_;
  StringId async_type_, async_for_track_type_;
  StringId cookie_key_, utid_key_, end_utid_key_;
  StringId lmk_type_, lmk_track_, lmk_name_, oom_type_, screen_state_type_, screen_state_, battery_type_,
      counter_key_, device_state_type_, device_state_;
  int64_t parse_failures_ = 0;
};

}  // namespace sluice

#endif  // SLUICE_USER_QUERY_IMPORTER_ATRACE_TRACKER_H_
