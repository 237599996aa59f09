// SchedTracker: builds the `sched` and `thread_state` tables from
// sched_switch, sched_waking and sched_wakeup_new, the way Perfetto's trace
// processor does (same rows, same end_state and state letters, same waker).
//
// Calls come in timestamp order. prev_state is the kernel's raw task state
// bitmask, whose bit layout depends on the kernel version (SetKernelVersion,
// from system_info's uname, before the first switch).
#ifndef SLUICE_USER_QUERY_SCHED_TRACKER_H_
#define SLUICE_USER_QUERY_SCHED_TRACKER_H_

#include <cstdint>
#include <string_view>

#include "user/query/process_tracker.h"
#include "user/query/trace_storage.h"

namespace sluice {

class SchedTracker {
 public:
  SchedTracker(TraceStorage* storage, ProcessTracker* processes);

  void SetKernelVersion(int major, int minor);

  void OnSwitch(int64_t ts, uint32_t cpu, int64_t prev_pid, std::string_view prev_comm,
                int32_t prev_prio, int64_t prev_state, int64_t next_pid,
                std::string_view next_comm, int32_t next_prio);
  // `waker_tid` is the event's common pid (the task running the wakeup).
  void OnWaking(int64_t ts, uint32_t cpu, int64_t waker_tid, int64_t pid,
                std::string_view comm, int32_t prio, int32_t target_cpu);
  void OnWakeupNew(int64_t ts, uint32_t cpu, int64_t waker_tid, int64_t pid,
                   std::string_view comm, int32_t prio, int32_t target_cpu);

  // End of import: slices still open keep dur -1, as in Perfetto.
  void Finish(int64_t end_ts);

 private:
  TraceStorage* storage_;
  ProcessTracker* processes_;
};

}  // namespace sluice

#endif  // SLUICE_USER_QUERY_SCHED_TRACKER_H_
