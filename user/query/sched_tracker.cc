// PLACEHOLDER so the branch links while the real tracker is written on
// branch wt-sched; replaced by it before anything reaches main.
#include "user/query/sched_tracker.h"
namespace sluice {
SchedTracker::SchedTracker(TraceStorage* s, ProcessTracker* p) : storage_(s), processes_(p) {}
void SchedTracker::SetKernelVersion(int, int) {}
void SchedTracker::OnSwitch(int64_t ts, uint32_t cpu, int64_t, std::string_view, int32_t, int64_t, int64_t next_pid, std::string_view next_comm, int32_t prio) {
  uint32_t u = processes_->UpdateThreadName(next_pid, next_comm);
  auto& t = storage_->sched; t.ts.push_back(ts); t.dur.push_back(-1); t.cpu.push_back(cpu); t.utid.push_back(u); t.end_state.push_back(kNullStringId); t.priority.push_back(prio);
}
void SchedTracker::OnWaking(int64_t, uint32_t, int64_t, int64_t, std::string_view, int32_t, int32_t) {}
void SchedTracker::OnWakeupNew(int64_t, uint32_t, int64_t, int64_t, std::string_view, int32_t, int32_t) {}
void SchedTracker::Finish(int64_t) {}
}  // namespace sluice
