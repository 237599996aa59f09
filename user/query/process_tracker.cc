// PLACEHOLDER so the branch links while the real tracker is written on
// branch wt-sched; replaced by it before anything reaches main.
#include "user/query/process_tracker.h"
namespace sluice {
ProcessTracker::ProcessTracker(TraceStorage* storage) : storage_(storage) { GetOrCreateThread(0); }
uint32_t ProcessTracker::GetOrCreateThread(int64_t tid) {
  auto [it, inserted] = utid_by_tid_.try_emplace(tid, 0);
  if (inserted) {
    auto& t = storage_->thread;
    it->second = static_cast<uint32_t>(t.size());
    t.tid.push_back(tid); t.name.push_back(kNullStringId); t.start_ts.push_back(kNullInt);
    t.end_ts.push_back(kNullInt); t.upid.push_back(kNullU32); t.is_main_thread.push_back(-1);
  }
  return it->second;
}
uint32_t ProcessTracker::UpdateThreadName(int64_t tid, std::string_view comm) {
  uint32_t u = GetOrCreateThread(tid); storage_->thread.name[u] = storage_->strings.Intern(comm); return u; }
void ProcessTracker::OnProcessTreeProcess(int64_t, int64_t, int64_t, std::string_view, std::string_view, int64_t) {}
void ProcessTracker::OnProcessTreeThread(int64_t, int64_t tid, int64_t, std::string_view name) { UpdateThreadName(tid, name); }
void ProcessTracker::OnTaskNewtask(int64_t, int64_t, int64_t tid, std::string_view comm, uint64_t) { UpdateThreadName(tid, comm); }
void ProcessTracker::OnTaskRename(int64_t, int64_t tid, std::string_view c) { UpdateThreadName(tid, c); }
void ProcessTracker::OnProcessFork(int64_t, int64_t, int64_t, std::string_view) {}
void ProcessTracker::OnProcessExec(int64_t, int64_t, std::string_view) {}
void ProcessTracker::OnProcessExit(int64_t, int64_t, std::string_view) {}
void ProcessTracker::OnProcessFree(int64_t, int64_t, std::string_view) {}
void ProcessTracker::Finish() {}
}  // namespace sluice
