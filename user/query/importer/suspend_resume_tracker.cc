#include "user/query/importer/suspend_resume_tracker.h"

#include <string>
#include <vector>

namespace sluice {

SuspendResumeTracker::SuspendResumeTracker(TraceStorage* storage, TrackTracker* tracks, SliceTracker* slices)
    : storage_(storage), tracks_(tracks), slices_(slices) {
  StringPool& s = storage->strings;
  type_ = s.Intern("suspend_resume");
  track_name_ = s.Intern("Suspend/Resume Latency");
  event_type_key_ = s.Intern("event_type");
  main_event_ = s.Intern("Main Kernel Suspend Event");
  utid_key_ = s.Intern("utid");
  cpu_key_ = s.Intern("cpu");
  device_name_key_ = s.Intern("device_name");
  driver_name_key_ = s.Intern("driver_name");
  callback_phase_key_ = s.Intern("callback_phase");
}

void SuspendResumeTracker::OnEvent(int64_t ts, uint32_t cpu, uint32_t utid, std::string_view action, int64_t val,
                                   bool start) {
  if (action == "timekeeping_freeze") val = 0;
  const StringId name = storage_->strings.Intern(std::string(action) + "(" + std::to_string(val) + ")");
  const int64_t cookie = name;
  if (start) {
    const uint32_t track = tracks_->AsyncBegin(type_, kNullU32, track_name_, cookie, TrackTracker::Nesting::kNestable);
    std::vector<Arg> args = {{utid_key_, ArgType::kUint, utid, 0},
                             {event_type_key_, ArgType::kString, main_event_, 0},
                             {cpu_key_, ArgType::kUint, cpu, 0},
                             {device_name_key_, ArgType::kString, kNullStringId, 0},
                             {driver_name_key_, ArgType::kString, kNullStringId, 0},
                             {callback_phase_key_, ArgType::kString, kNullStringId, 0}};
    slices_->Begin(ts, track, name, std::move(args));
    if (action == "suspend_enter") {
      phase_ = Phase::kEnter;
      suspend_enter_name_ = name;
    } else if (action == "freeze_processes" && phase_ == Phase::kEnter) {
      phase_ = Phase::kFreeze;
    }
    return;
  }
  slices_->End(ts, tracks_->AsyncEnd(type_, kNullU32, track_name_, cookie));
  if (action == "suspend_enter") {
    phase_ = Phase::kInitial;
  } else if (action == "thaw_processes" && phase_ == Phase::kFreeze) {
    // suspend_prepare failed: suspend_enter will not end by itself.
    slices_->End(ts, tracks_->AsyncEnd(type_, kNullU32, track_name_, suspend_enter_name_));
    phase_ = Phase::kInitial;
  }
}

}  // namespace sluice
