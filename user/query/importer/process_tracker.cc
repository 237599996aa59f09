#include "user/query/importer/process_tracker.h"

#include <algorithm>
#include <string>

namespace sluice {
namespace {

constexpr uint64_t kCloneThread = 0x00010000;  // CLONE_THREAD, include/uapi/linux/sched.h
constexpr int64_t kKthreaddPid = 2;

}  // namespace

void ProcessTracker::IdMap::Set(int64_t id, uint32_t row) {
  if (id >= 0 && id < kFlatIdLimit) {
    auto i = static_cast<size_t>(id);
    if (i >= flat_.size()) {
      if (row == kNullU32) return;
      // Grow geometrically (tids climb one by one as tasks are created).
      flat_.resize(std::max(i + 1, flat_.size() * 2), kNullU32);
    }
    flat_[i] = row;
    return;
  }
  if (row == kNullU32)
    sparse_.erase(id);
  else
    sparse_[id] = row;
}

struct ProcessTracker::ParkedMachine {
  bool started = false;  // Its idle task has rows.
  IdMap tid_head, upid_by_pid;
  std::vector<std::pair<uint32_t, uint32_t>> pending_assocs, pending_parent_assocs;
};

ProcessTracker::ProcessTracker(TraceStorage* storage)
    : storage_(storage), swapper_name_(storage->strings.Intern("swapper")) {
  // upid 0 / utid 0: the host's idle task, as Perfetto's ProcessTracker
  // reserves them and SetPidZeroIsUpidZeroIdleProcess maps pid/tid 0 onto
  // them.
  AddIdleTask();
  parked_.resize(1);
  parked_[0].started = true;
}

ProcessTracker::~ProcessTracker() = default;

void ProcessTracker::AddIdleTask() {
  const uint32_t upid = AddProcessRow(0);
  upid_by_pid_.Set(0, upid);
  uint32_t utid = StartNewThread(kNullInt, 0);
  AssociateThreadToProcess(utid, upid, /*is_main_thread=*/true);
  SetThreadNameId(utid, swapper_name_, NamePriority::kConstant);
}

void ProcessTracker::SwapMachineState(ParkedMachine* parked) {
  std::swap(tid_head_, parked->tid_head);
  std::swap(upid_by_pid_, parked->upid_by_pid);
  std::swap(pending_assocs_, parked->pending_assocs);
  std::swap(pending_parent_assocs_, parked->pending_parent_assocs);
}

void ProcessTracker::SetMachine(uint32_t machine) {
  if (machine == machine_) return;
  if (machine >= parked_.size()) parked_.resize(machine + 1);
  SwapMachineState(&parked_[machine_]);  // Park the current machine's maps...
  SwapMachineState(&parked_[machine]);   // ...and take the new one's.
  machine_ = machine;
  if (!parked_[machine].started) {
    parked_[machine].started = true;
    AddIdleTask();
  }
}

uint32_t ProcessTracker::AddProcessRow(int64_t pid) {
  ProcessTable& pt = storage_->process;
  auto upid = static_cast<uint32_t>(pt.size());
  pt.pid.push_back(pid);
  pt.name.push_back(kNullStringId);
  pt.cmdline.push_back(kNullStringId);
  pt.start_ts.push_back(kNullInt);
  pt.end_ts.push_back(kNullInt);
  pt.parent_upid.push_back(kNullU32);
  pt.uid.push_back(kNullInt);
  pt.arg_set_id.push_back(kNoArgSet);
  pt.machine_id.push_back(machine_);
  return upid;
}

uint32_t ProcessTracker::StartNewThread(int64_t ts, int64_t tid) {
  ThreadTable& tt = storage_->thread;
  auto utid = static_cast<uint32_t>(tt.size());
  tt.tid.push_back(tid);
  tt.name.push_back(kNullStringId);
  tt.start_ts.push_back(ts);
  tt.end_ts.push_back(kNullInt);
  tt.upid.push_back(kNullU32);
  tt.is_main_thread.push_back(-1);
  tt.machine_id.push_back(machine_);
  older_same_tid_.push_back(tid_head_.Get(tid));
  name_priority_.push_back(NamePriority::kOther);
  tid_head_.Set(tid, utid);
  return utid;
}

bool ProcessTracker::IsThreadAlive(uint32_t utid) const {
  const ThreadTable& tt = storage_->thread;
  if (tt.end_ts[utid] != kNullInt) return false;
  uint32_t upid = tt.upid[utid];
  if (upid == kNullU32) return true;
  if (storage_->process.end_ts[upid] != kNullInt) return false;
  // A newer process took the pid: this one, and its threads, are gone.
  uint32_t live = upid_by_pid_.Get(storage_->process.pid[upid]);
  return live == kNullU32 || live == upid;
}

std::optional<uint32_t> ProcessTracker::GetThreadOrNull(int64_t tid,
                                                        std::optional<int64_t> pid) const {
  const ThreadTable& tt = storage_->thread;
  // Newest first, so later sightings of a reused tid win.
  for (uint32_t utid = tid_head_.Get(tid); utid != kNullU32; utid = older_same_tid_[utid]) {
    if (!IsThreadAlive(utid)) continue;
    uint32_t upid = tt.upid[utid];
    if (upid == kNullU32) return utid;
    if (!pid || storage_->process.pid[upid] == *pid) return utid;
  }
  return std::nullopt;
}

uint32_t ProcessTracker::GetOrCreateThread(int64_t tid) {
  // Fast path: the newest utid of the tid, alive and without a process
  // constraint, is the answer for nearly every sched event.
  uint32_t head = tid_head_.Get(tid);
  if (head != kNullU32 && IsThreadAlive(head)) return head;
  auto utid = GetThreadOrNull(tid);
  return utid ? *utid : StartNewThread(kNullInt, tid);
}

void ProcessTracker::SetThreadNameId(uint32_t utid, StringId name, NamePriority priority) {
  if (name == kNullStringId) return;
  if (priority < name_priority_[utid]) return;
  storage_->thread.name[utid] = name;
  name_priority_[utid] = priority;
}

void ProcessTracker::SetThreadName(uint32_t utid, std::string_view name, NamePriority priority) {
  if (priority < name_priority_[utid]) return;
  StringId current = storage_->thread.name[utid];
  // Hot path: a thread's comm rarely changes; comparing it with the current
  // name (<= 16 bytes) is cheaper than a hash lookup in the pool.
  if (current != kNullStringId && storage_->strings.Get(current) == name) {
    name_priority_[utid] = priority;
    return;
  }
  SetThreadNameId(utid, storage_->strings.Intern(name), priority);
}

uint32_t ProcessTracker::UpdateThreadName(int64_t tid, std::string_view comm) {
  uint32_t utid = GetOrCreateThread(tid);
  SetThreadName(utid, comm, NamePriority::kFtrace);
  return utid;
}

void ProcessTracker::EraseTid(int64_t tid) { tid_head_.Set(tid, kNullU32); }

void ProcessTracker::UnlinkThread(int64_t tid, uint32_t utid) {
  uint32_t cur = tid_head_.Get(tid);
  if (cur == utid) {
    tid_head_.Set(tid, older_same_tid_[utid]);
    return;
  }
  while (cur != kNullU32) {
    uint32_t older = older_same_tid_[cur];
    if (older == utid) {
      older_same_tid_[cur] = older_same_tid_[utid];
      return;
    }
    cur = older;
  }
}

void ProcessTracker::AssociateThreadToProcess(uint32_t utid, uint32_t upid, bool is_main_thread) {
  storage_->thread.upid[utid] = upid;
  storage_->thread.is_main_thread[utid] = is_main_thread ? 1 : 0;
}

uint32_t ProcessTracker::UpdateThread(int64_t tid, int64_t pid) {
  uint32_t upid = GetOrCreateProcess(pid);
  auto found = GetThreadOrNull(tid, storage_->process.pid[upid]);
  uint32_t utid = found ? *found : StartNewThread(kNullInt, tid);
  if (tid_head_.Get(tid) != utid) {
    // The thread just named becomes the tid's newest: later events of the
    // tid without a pid (GetOrCreateThread) are its, as in Perfetto.
    UnlinkThread(tid, utid);
    older_same_tid_[utid] = tid_head_.Get(tid);
    tid_head_.Set(tid, utid);
  }
  if (storage_->thread.upid[utid] == kNullU32) AssociateThreadToProcess(utid, upid, tid == pid);
  ResolvePendingAssociations(utid, storage_->thread.upid[utid]);
  return utid;
}

uint32_t ProcessTracker::GetOrCreateProcess(int64_t pid) {
  uint32_t upid = upid_by_pid_.Get(pid);
  if (upid != kNullU32) return upid;
  upid = AddProcessRow(pid);
  upid_by_pid_.Set(pid, upid);
  // The main thread may have been seen already (process_tree comes late):
  // find it rather than starting a new one.
  UpdateThread(pid, pid);
  return upid;
}

uint32_t ProcessTracker::StartNewProcess(int64_t ts, std::optional<uint32_t> parent_upid,
                                         int64_t pid, StringId name, NamePriority priority) {
  // A pid is never used by two live processes: forget the old one and every
  // utid of its tid, so the new main thread gets a fresh utid.
  upid_by_pid_.Set(pid, kNullU32);
  EraseTid(pid);
  uint32_t main_utid = StartNewThread(ts, pid);
  SetThreadNameId(main_utid, name, priority);
  uint32_t upid = GetOrCreateProcess(pid);
  ProcessTable& pt = storage_->process;
  if (ts != kNullInt) pt.start_ts[upid] = ts;
  pt.name[upid] = name;
  if (parent_upid) pt.parent_upid[upid] = *parent_upid;
  return upid;
}

uint32_t ProcessTracker::UpdateProcessWithParent(uint32_t upid, uint32_t parent_upid) {
  ProcessTable& pt = storage_->process;
  uint32_t previous = pt.parent_upid[upid];
  // trace_processor v58: a known process seen with another parent is taken
  // as reparented (its parent died), not as a reused pid; it keeps its
  // first parent and counts process_tracker_parent_pid_changed.
  if (previous != kNullU32 && previous != parent_upid) {
    parent_pid_changed_++;
    return upid;
  }
  pt.parent_upid[upid] = parent_upid;
  return upid;
}

// kworker/45:2-mm_percpu_wq: the suffix is the last workqueue the worker
// ran, which changes all the time; keep "kworker/45:2".
static std::string_view WithoutWorkqueue(std::string_view name) {
  if (!name.starts_with("kworker/")) return name;
  const size_t cut = std::min(name.find('+', 8), name.find('-', 8));
  return cut == std::string_view::npos ? name : name.substr(0, cut);
}

bool ProcessTracker::OnProcessTreeProcess(int64_t pid, int64_t ppid,
                                          std::span<const std::string_view> argv,
                                          bool cmdline_is_comm, int64_t uid, int64_t start_ts,
                                          std::optional<bool> is_kthread) {
  if (argv.empty()) return false;
  std::string_view name = argv[0];
  std::string joined;
  bool have_joined = false;
  if (ppid == kKthreaddPid && WithoutWorkqueue(name).size() != name.size()) {
    name = WithoutWorkqueue(name);
    joined = name;
    have_joined = true;
  }
  // A single cmdline field is taken as a rewritten "prog arg arg" string.
  if (argv.size() == 1) {
    size_t space = name.find(' ');
    if (space != std::string_view::npos) name = name.substr(0, space);
  }
  if (!have_joined) {
    for (size_t i = 0; i < argv.size(); i++) {
      if (i) joined += ' ';
      joined += argv[i];
    }
  }

  uint32_t parent_upid = GetOrCreateProcess(ppid);
  uint32_t upid = GetOrCreateProcess(pid);
  upid = UpdateProcessWithParent(upid, parent_upid);
  ProcessTable& pt = storage_->process;
  pt.name[upid] = storage_->strings.Intern(name);
  pt.cmdline[upid] = storage_->strings.Intern(joined);
  if (cmdline_is_comm) {
    // Kernel threads: the "cmdline" is the comm of the main thread.
    SetThreadNameId(GetOrCreateThread(pid), pt.cmdline[upid], NamePriority::kProcessTree);
  }
  if (uid != kNullInt) pt.uid[upid] = uid;
  if (start_ts != kNullInt && pt.start_ts[upid] == kNullInt) pt.start_ts[upid] = start_ts;
  if (is_kthread) {
    std::vector<Arg> args = {{storage_->strings.Intern("is_kthread"), ArgType::kBool, *is_kthread ? 1 : 0, 0}};
    pt.arg_set_id[upid] = storage_->args.Add(&args);
  }
  return ppid == kKthreaddPid;
}

void ProcessTracker::OnProcessTreeThread(int64_t tid, int64_t tgid, std::optional<std::string_view> name,
                                         bool kthread_main) {
  UpdateThread(tid, tgid);
  if (!name) return;
  std::string_view thread_name = *name;
  if (kthread_main && tid == tgid) thread_name = WithoutWorkqueue(thread_name);
  SetThreadName(GetOrCreateThread(tid), thread_name, NamePriority::kProcessTree);
}

void ProcessTracker::AssociateThreads(uint32_t utid1, uint32_t utid2) {
  ThreadTable& tt = storage_->thread;
  uint32_t upid1 = tt.upid[utid1];
  uint32_t upid2 = tt.upid[utid2];
  if (upid1 != kNullU32 && upid2 == kNullU32) {
    AssociateThreadToProcess(utid2, upid1, tt.tid[utid2] == storage_->process.pid[upid1]);
    ResolvePendingAssociations(utid2, upid1);
    return;
  }
  if (upid2 != kNullU32 && upid1 == kNullU32) {
    AssociateThreadToProcess(utid1, upid2, tt.tid[utid1] == storage_->process.pid[upid2]);
    ResolvePendingAssociations(utid1, upid2);
    return;
  }
  // Both known and different: Perfetto counts process_tracker_errors and
  // leaves them apart. Otherwise (both unknown, or both already in the same
  // process, which Perfetto also queues) wait until one of them is placed.
  if (upid1 != kNullU32 && upid1 != upid2) {
    process_tracker_errors_++;
    return;
  }
  pending_assocs_.emplace_back(utid1, utid2);
}

void ProcessTracker::ResolvePendingAssociations(uint32_t first_utid, uint32_t upid) {
  if (pending_assocs_.empty() && pending_parent_assocs_.empty()) return;
  std::vector<uint32_t> resolved{first_utid};
  while (!resolved.empty()) {
    uint32_t utid = resolved.back();
    resolved.pop_back();
    for (size_t i = 0; i < pending_parent_assocs_.size();) {
      auto [parent_utid, child_upid] = pending_parent_assocs_[i];
      if (parent_utid != utid) {
        i++;
        continue;
      }
      storage_->process.parent_upid[child_upid] = upid;
      pending_parent_assocs_[i] = pending_parent_assocs_.back();
      pending_parent_assocs_.pop_back();
    }
    for (size_t i = 0; i < pending_assocs_.size();) {
      auto [a, b] = pending_assocs_[i];
      uint32_t other;
      if (a == utid)
        other = b;
      else if (b == utid)
        other = a;
      else {
        i++;
        continue;
      }
      AssociateThreadToProcess(other, upid,
                               storage_->thread.tid[other] == storage_->process.pid[upid]);
      pending_assocs_[i] = pending_assocs_.back();
      pending_assocs_.pop_back();
      resolved.push_back(other);
    }
  }
}

std::optional<ProcessTracker::NewTask> ProcessTracker::OnTaskNewtask(int64_t ts,
                                                                     int64_t parent_tid,
                                                                     int64_t new_tid,
                                                                     std::string_view comm,
                                                                     uint64_t clone_flags) {
  // Boot-time tracing shows init creating the swapper/N idle tasks.
  if (new_tid == 0) return std::nullopt;
  StringId comm_id = storage_->strings.Intern(comm);
  if ((clone_flags & kCloneThread) == 0) {
    // fork(): a new process whose parent is the forking thread's process
    // (known now, or once that thread is placed).
    uint32_t upid = StartNewProcess(ts, std::nullopt, new_tid, comm_id, NamePriority::kFtrace);
    uint32_t parent_utid = GetOrCreateThread(parent_tid);
    uint32_t parent_upid = storage_->thread.upid[parent_utid];
    if (parent_upid != kNullU32)
      storage_->process.parent_upid[upid] = parent_upid;
    else
      pending_parent_assocs_.emplace_back(parent_utid, upid);
    return NewTask{parent_utid, GetOrCreateThread(new_tid)};
  }
  // pthread_create(): a thread of the parent's process.
  uint32_t parent_utid = GetOrCreateThread(parent_tid);
  uint32_t new_utid = StartNewThread(ts, new_tid);
  SetThreadNameId(new_utid, comm_id, NamePriority::kFtrace);
  AssociateThreads(parent_utid, new_utid);
  return NewTask{parent_utid, new_utid};
}

void ProcessTracker::OnTaskRename(int64_t tid, std::string_view new_comm) {
  uint32_t utid = GetOrCreateThread(tid);
  StringId comm = storage_->strings.Intern(new_comm);
  SetThreadNameId(utid, comm, NamePriority::kFtrace);
  uint32_t upid = storage_->thread.upid[utid];
  if (upid != kNullU32 && storage_->process.pid[upid] == tid) storage_->process.name[upid] = comm;
}

void ProcessTracker::OnProcessFree(int64_t ts, int64_t tid) {
  // No new utid for a thread that is only being ended (a worker freed after
  // its process's main thread ended the process).
  auto found = GetThreadOrNull(tid);
  if (!found) return;
  uint32_t utid = *found;
  storage_->thread.end_ts[utid] = ts;
  UnlinkThread(tid, utid);
  uint32_t upid = storage_->thread.upid[utid];
  if (upid == kNullU32 || storage_->process.pid[upid] != tid) return;
  storage_->process.end_ts[upid] = ts;
  upid_by_pid_.Set(tid, kNullU32);
}

void ProcessTracker::Finish() {
  tid_head_.Clear();
  upid_by_pid_.Clear();
  parked_ = {};
  older_same_tid_ = {};
  pending_assocs_ = {};
  pending_parent_assocs_ = {};
}

}  // namespace sluice
