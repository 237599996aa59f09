// SuspendResumeTracker: the power/suspend_resume ftrace event (action, val,
// start) as the slices of Perfetto's "Suspend/Resume Latency" tracks:
//
//   - A slice is "<action>(<val>)"; timekeeping_freeze's val is a CPU number
//     that differs between its begin and end, so it is named with 0.
//   - start != 0 begins, start == 0 ends the slice of that name: the name is
//     the cookie of a compressed set of global tracks (type suspend_resume,
//     TrackTracker's async compression), so concurrent phases go on tracks
//     of their own and nested ones of a name nest.
//   - Each slice has args utid (the event's thread), event_type ("Main
//     Kernel Suspend Event"), cpu, and device_name, driver_name and
//     callback_phase NULL (upstream's device_pm_callback events fill them).
//   - When suspend_prepare fails, the kernel never ends suspend_enter: the
//     end of thaw_processes after a freeze_processes inside suspend_enter
//     ends it, as upstream does.
#ifndef SLUICE_USER_QUERY_IMPORTER_SUSPEND_RESUME_TRACKER_H_
#define SLUICE_USER_QUERY_IMPORTER_SUSPEND_RESUME_TRACKER_H_

#include <cstdint>
#include <string_view>

#include "user/query/importer/slice_tracker.h"
#include "user/query/importer/track_tracker.h"
#include "user/query/storage/trace_storage.h"

namespace sluice {

class SuspendResumeTracker {
 public:
  SuspendResumeTracker(TraceStorage* storage, TrackTracker* tracks, SliceTracker* slices);
  void OnEvent(int64_t ts, uint32_t cpu, uint32_t utid, std::string_view action, int64_t val, bool start);

 private:
  enum class Phase { kInitial, kEnter, kFreeze };

  TraceStorage* storage_;
  TrackTracker* tracks_;
  SliceTracker* slices_;
  StringId type_, track_name_, event_type_key_, main_event_, utid_key_, cpu_key_, device_name_key_,
      driver_name_key_, callback_phase_key_;
  Phase phase_ = Phase::kInitial;
  StringId suspend_enter_name_ = kNullStringId;  // The open suspend_enter's slice name.
};

}  // namespace sluice

#endif  // SLUICE_USER_QUERY_IMPORTER_SUSPEND_RESUME_TRACKER_H_
