// ProcessTracker: fills the `thread` and `process` tables from what the trace
// says about tasks, and hands out utids and upids, with the rules of
// Perfetto's trace processor (src/trace_processor/importers/common/
// process_tracker.cc, v58) so that the same trace gives the same rows.
//
// What a row is
//   thread:  one row per *lifetime* of a tid as the trace shows it. A tid gets
//            a new utid when it is seen again after sched_process_free ended
//            it, after its process was replaced (a new process with its pid,
//            or its process ended), or when task_newtask / a fork creates it.
//            start_ts is set only for threads the trace saw being created
//            (task_newtask); end_ts only by sched_process_free. name is the
//            last comm, except that a name from process_tree (priority 2)
//            beats sched/task comms (priority 1), and utid 0 is "swapper".
//   process: one row per lifetime of a pid. name is argv[0] from
//            process_tree (split at the first space when the cmdline is a
//            single string; kworker names cut before "+" / "-"), or the comm
//            at fork, renamed by task_rename of the main thread. cmdline is
//            argv joined with spaces. parent_upid comes from process_tree's
//            ppid or the forking thread's process (a later process_tree
//            with another ppid does not change it). end_ts is the
//            sched_process_free of the main thread.
//   utid 0 / upid 0: the idle task (tid/pid 0) on every CPU: one thread
//            "swapper" in process 0, is_main_thread 1, no process name.
//
// Where this differs from the kernel's view
//   - A thread's process is only known once process_tree, a fork or a
//     CLONE_THREAD task_newtask links it; until then upid is NULL.
//   - sched_process_exit / fork / exec change no row (Perfetto records them
//     only in ftrace_event); a thread ends at sched_process_free, which can be
//     much later than its last run (RCU), or never if the event was off.
//   - A tid seen before the thread that owns it is linked to a process keeps
//     that utid; whether two sightings of a tid are one thread is a guess
//     (the newest live utid of the tid wins).
//
// Calls come in timestamp order (the importer sorts), process_tree packets
// included (their packet timestamp). The importer must also call
// GetOrCreateThread(common_pid) for each ftrace event it stores in
// ftrace_event except sched_switch, before the event's own handler, as
// Perfetto does: that is what creates thread rows for tids that only ever
// emitted events.
//
// Hot path (hand-tuned, ~3 calls per sched event on 12 M events): tid -> utid
// and pid -> upid are flat vectors indexed by id below kFlatIdLimit (hash map
// above it), each tid's utids a singly linked list through a per-utid vector;
// a comm equal to the thread's current name is not interned again. No
// allocation per event once the vectors have grown.
#ifndef SLUICE_USER_QUERY_IMPORTER_PROCESS_TRACKER_H_
#define SLUICE_USER_QUERY_IMPORTER_PROCESS_TRACKER_H_

#include <cstdint>
#include <optional>
#include <span>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "user/query/storage/trace_storage.h"

namespace sluice {

class ProcessTracker {
 public:
  // Where a thread name came from; a name only replaces one of lower or
  // equal priority (Perfetto's ThreadNamePriority).
  enum class NamePriority : uint8_t {
    kOther = 0,
    kFtrace = 1,       // sched_switch / sched_waking / task_* comm
    kProcessTree = 2,  // process_tree thread name or cmdline_is_comm
    kTrackDescriptor = 4,  // a track event ThreadDescriptor's thread_name
    kConstant = 5,     // "swapper" for utid 0
  };

  // What task_newtask created, for SchedTracker's runnable row.
  struct NewTask {
    uint32_t parent_utid;
    uint32_t new_utid;
  };

  explicit ProcessTracker(TraceStorage* storage);
  ~ProcessTracker();
  ProcessTracker(const ProcessTracker&) = delete;
  ProcessTracker& operator=(const ProcessTracker&) = delete;

  // Makes `machine` (a `machine` table row; 0, the host, at first) the one
  // whose tids and pids the calls below name: each machine of a relayed
  // trace has its own task namespace, so a guest's pid 100 is not the
  // host's. New rows carry the machine's id. A machine's idle task (tid and
  // pid 0, "swapper") gets its rows when the machine is first selected, as
  // upstream makes them when the machine's first packet is read.
  void SetMachine(uint32_t machine);
  uint32_t machine() const { return machine_; }

  // The utid of the live thread `tid`, created (no name, no process) if
  // unseen or if every utid it had is dead.
  uint32_t GetOrCreateThread(int64_t tid);
  // GetOrCreateThread, then names it `comm` with ftrace priority (sched
  // events carry the comm of the tasks they name).
  uint32_t UpdateThreadName(int64_t tid, std::string_view comm);
  void SetThreadName(uint32_t utid, std::string_view name, NamePriority priority);

  // One process_tree Process: `argv` is its cmdline fields in order
  // (skipped when empty, as Perfetto does); `uid` and `start_ts` (its
  // process_start_from_boot) kNullInt when absent; `is_kthread` becomes the
  // process's arg of that name. True if it is a child of kthreadd, whose
  // main thread's name then loses its workqueue suffix too.
  bool OnProcessTreeProcess(int64_t pid, int64_t ppid, std::span<const std::string_view> argv,
                            bool cmdline_is_comm, int64_t uid, int64_t start_ts = kNullInt,
                            std::optional<bool> is_kthread = std::nullopt);
  // One process_tree Thread; `name` nullopt when the field is absent.
  // `kthread_main`: its tid is a kthreadd child of the same packet.
  void OnProcessTreeThread(int64_t tid, int64_t tgid, std::optional<std::string_view> name,
                           bool kthread_main = false);

  // process_stats (proc_stats_poll_ms) Process entry `pid`, for each field
  // in wire order: OnProcessStatsThread per `threads` entry, and
  // OnProcessStatsProcess for any other field but pid (memory counters, fds,
  // oom_score_adj, runtimes, the chrome_* ones), which returns the upid
  // its counters go to. An entry with only its pid changes nothing, as in
  // Perfetto.
  uint32_t OnProcessStatsProcess(int64_t pid) { return GetOrCreateProcess(pid); }
  void OnProcessStatsThread(int64_t tid, int64_t pid) { UpdateThread(tid, pid); }

  // task_newtask raised by `parent_tid` (the event's common pid). Without
  // CLONE_THREAD a new process `new_tid` starts (named `comm`, parent the
  // forking thread's process); with it a new thread joins the parent's
  // process. nullopt for the idle tasks of a boot-time trace (new_tid 0).
  // SchedTracker::OnTaskNewtask calls this and adds the runnable row.
  std::optional<NewTask> OnTaskNewtask(int64_t ts, int64_t parent_tid, int64_t new_tid,
                                       std::string_view comm, uint64_t clone_flags);
  // task_rename (also raised by exec): the thread's name, and the process
  // name when it is the main thread.
  void OnTaskRename(int64_t tid, std::string_view new_comm);
  // sched_process_free: the thread ends (and its process, if it is the main
  // thread); later sightings of the tid get a new utid.
  void OnProcessFree(int64_t ts, int64_t tid);
  // sched_process_fork / exec / exit: Perfetto changes no thread or process
  // row for them (only ftrace_event). Kept so the importer's dispatch says so.
  void OnProcessFork(int64_t, int64_t, int64_t, std::string_view) {}
  void OnProcessExec(int64_t, int64_t, std::string_view) {}
  void OnProcessExit(int64_t, int64_t, std::string_view) {}

  // Perfetto's process_tracker_parent_pid_changed stat: process_tree showed
  // a known process with a different ppid (kept as the same process).
  int64_t parent_pid_changed() const { return parent_pid_changed_; }
  // Perfetto's process_tracker_errors: two threads to be joined (a
  // CLONE_THREAD clone) already belong to different processes.
  int64_t process_tracker_errors() const { return process_tracker_errors_; }

  // Perfetto's ProcessTracker calls, for the atrace tracker:
  // The live utid of `tid` (in process `pid` when given), if any.
  std::optional<uint32_t> GetThreadOrNull(int64_t tid, std::optional<int64_t> pid = std::nullopt) const;
  // The utid of `tid` in process `pid`: the thread joins the process, or a
  // new utid starts when the tid is known in another process.
  uint32_t UpdateThread(int64_t tid, int64_t pid);
  uint32_t GetOrCreateProcess(int64_t pid);
  // Track descriptors: a second descriptor for a tid or pid means it was
  // reused; these start its new thread or process.
  uint32_t StartNewThreadForTid(int64_t tid) { return StartNewThread(kNullInt, tid); }
  uint32_t StartNewProcessForPid(int64_t pid) {
    return StartNewProcess(kNullInt, std::nullopt, pid, kNullStringId, NamePriority::kOther);
  }
  // A track event ProcessDescriptor's name: never over one the system gave.
  void SetProcessNameIfUnset(uint32_t upid, StringId name) {
    if (storage_->process.name[upid] == kNullStringId) storage_->process.name[upid] = name;
  }
  // Whether `utid` may still run: it has not ended, nor has its process,
  // and no newer process took its process's pid.
  bool IsThreadAlive(uint32_t utid) const;

  // End of import: drops the lookup state (nothing is derived at the end;
  // is_main_thread is set when a thread joins its process).
  void Finish();

 private:
  static constexpr int64_t kFlatIdLimit = int64_t{1} << 22;  // Linux PID_MAX_LIMIT

  // An id -> row map: flat below kFlatIdLimit, hashed above (and for
  // negative ids, which a corrupt trace may carry). kNullU32 = absent.
  class IdMap {
   public:
    uint32_t Get(int64_t id) const {
      if (id >= 0 && id < kFlatIdLimit) {
        auto i = static_cast<size_t>(id);
        return i < flat_.size() ? flat_[i] : kNullU32;
      }
      auto it = sparse_.find(id);
      return it == sparse_.end() ? kNullU32 : it->second;
    }
    void Set(int64_t id, uint32_t row);
    void Clear() {
      flat_ = {};
      sparse_ = {};
    }

   private:
    std::vector<uint32_t> flat_;
    std::unordered_map<int64_t, uint32_t> sparse_;
  };

  // The lookup state of a machine that is not the current one (SetMachine
  // swaps it with the members below).
  struct ParkedMachine;
  void SwapMachineState(ParkedMachine* parked);
  void AddIdleTask();
  uint32_t AddProcessRow(int64_t pid);  // a row with only its pid set
  uint32_t StartNewThread(int64_t ts, int64_t tid);
  void EraseTid(int64_t tid);
  void UnlinkThread(int64_t tid, uint32_t utid);
  uint32_t StartNewProcess(int64_t ts, std::optional<uint32_t> parent_upid, int64_t pid,
                           StringId name, NamePriority priority);
  uint32_t UpdateProcessWithParent(uint32_t upid, uint32_t parent_upid);
  void AssociateThreadToProcess(uint32_t utid, uint32_t upid, bool is_main_thread);
  void AssociateThreads(uint32_t utid1, uint32_t utid2);
  void ResolvePendingAssociations(uint32_t utid, uint32_t upid);
  void SetThreadNameId(uint32_t utid, StringId name, NamePriority priority);

  TraceStorage* storage_;
  StringId swapper_name_;
  // Newest utid of each tid (head of its list); older ones via
  // older_same_tid_[utid]. Dead utids stay in the list and are skipped, as
  // in Perfetto, until sched_process_free or a new process with that pid
  // unlinks them.
  IdMap tid_head_;
  std::vector<uint32_t> older_same_tid_;   // per utid
  std::vector<NamePriority> name_priority_;  // per utid
  IdMap upid_by_pid_;                        // live process of each pid
  // Threads known to share a process whose upid is not known yet, and
  // processes waiting for their parent thread's upid (forks seen before the
  // parent's process). Short lists: one entry per unresolved clone.
  std::vector<std::pair<uint32_t, uint32_t>> pending_assocs_;
  std::vector<std::pair<uint32_t, uint32_t>> pending_parent_assocs_;  // (parent utid, child upid)
  int64_t parent_pid_changed_ = 0;
  int64_t process_tracker_errors_ = 0;
  uint32_t machine_ = 0;
  std::vector<ParkedMachine> parked_;  // by machine; the current one's slot is empty
};

}  // namespace sluice

#endif  // SLUICE_USER_QUERY_IMPORTER_PROCESS_TRACKER_H_
