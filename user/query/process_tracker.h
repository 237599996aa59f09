// ProcessTracker: fills the `thread` and `process` tables from what the trace
// says about tasks (process_tree packets, task_newtask, task_rename,
// sched_process_fork/exec/exit/free, and the comm of every sched event), and
// hands out utids and upids as Perfetto's trace processor does: a tid reused
// after its thread ended gets a new utid; utid 0 / upid 0 are the idle task.
//
// Calls come in timestamp order (the importer sorts), except process_tree
// snapshots, which describe the state at their packet's timestamp.
#ifndef SLUICE_USER_QUERY_PROCESS_TRACKER_H_
#define SLUICE_USER_QUERY_PROCESS_TRACKER_H_

#include <cstdint>
#include <string_view>
#include <unordered_map>

#include "user/query/trace_storage.h"

namespace sluice {

class ProcessTracker {
 public:
  explicit ProcessTracker(TraceStorage* storage);

  // The utid of the live thread `tid`, created (no name, no process) if
  // unseen.
  uint32_t GetOrCreateThread(int64_t tid);
  // GetOrCreateThread, then sets the thread's name to `comm` (sched events
  // carry the comm of the tasks they name).
  uint32_t UpdateThreadName(int64_t tid, std::string_view comm);

  // process_tree packet at `ts`.
  void OnProcessTreeProcess(int64_t ts, int64_t pid, int64_t ppid,
                            std::string_view name, std::string_view cmdline, int64_t uid);
  void OnProcessTreeThread(int64_t ts, int64_t tid, int64_t tgid, std::string_view name);

  // ftrace task lifetime events.
  void OnTaskNewtask(int64_t ts, int64_t parent_tid, int64_t new_tid,
                     std::string_view comm, uint64_t clone_flags);
  void OnTaskRename(int64_t ts, int64_t tid, std::string_view new_comm);
  void OnProcessFork(int64_t ts, int64_t parent_tid, int64_t child_tid, std::string_view child_comm);
  void OnProcessExec(int64_t ts, int64_t tid, std::string_view filename);
  void OnProcessExit(int64_t ts, int64_t tid, std::string_view comm);
  void OnProcessFree(int64_t ts, int64_t tid, std::string_view comm);

  // End of import: anything derived at the end (is_main_thread, ...).
  void Finish();

 private:
  TraceStorage* storage_;
  std::unordered_map<int64_t, uint32_t> utid_by_tid_;
  std::unordered_map<int64_t, uint32_t> upid_by_pid_;
};

}  // namespace sluice

#endif  // SLUICE_USER_QUERY_PROCESS_TRACKER_H_
