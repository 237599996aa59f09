#include "user/query/importer/sched_tracker.h"

#include <algorithm>
#include <string>

namespace sluice {
namespace {

// Kernel-independent flags (Perfetto's TaskState::ParsedFlag); the raw
// prev_state is mapped onto these first.
enum : uint16_t {
  kInterruptibleSleep = 0x0001,
  kUninterruptibleSleep = 0x0002,
  kStopped = 0x0004,
  kTraced = 0x0008,
  kExitDead = 0x0010,
  kExitZombie = 0x0020,
  kParked = 0x0040,
  kTaskDead = 0x0080,
  kWakeKill = 0x0100,
  kWaking = 0x0200,
  kNoLoad = 0x0400,
  kIdle = 0x4000,
  kPreempted = 0x8000,
};

bool AtLeast(int major, int minor, int want_major, int want_minor) {
  return major != want_major ? major > want_major : minor >= want_minor;
}

}  // namespace

std::string SchedTracker::TaskStateString(uint16_t raw, int major, int minor) {
  // Bits up to EXIT_ZOMBIE (0x20) never moved.
  uint16_t parsed = raw & 0x3f;
  if (AtLeast(major, minor, 4, 14)) {
    // 4.14 masks the state to TASK_REPORT and reuses the bits above it.
    if (raw & 0x40) parsed |= kParked;
    if (raw & 0x80) parsed |= kIdle;       // TASK_REPORT_IDLE
    if (raw & 0x100) parsed |= kPreempted;  // TASK_REPORT_MAX
    if (raw & 0xfe00) return "";
  } else {
    if (raw & 0x40) parsed |= kTaskDead;
    if (raw & 0x80) parsed |= kWakeKill;
    if (raw & 0x100) parsed |= kWaking;
    if (raw & 0x200) parsed |= kParked;
    if (raw & 0x400) parsed |= kNoLoad;
    if (parsed == (kUninterruptibleSleep | kNoLoad)) parsed = kIdle;
    // TASK_STATE_MAX: 0x1000 from 4.8 (TASK_NEW), 0x800 before.
    if (raw & (AtLeast(major, minor, 4, 8) ? 0x1000 : 0x800)) parsed |= kPreempted;
  }
  if (!(parsed & ~kPreempted)) return (parsed & kPreempted) ? "R+" : "R";
  std::string out;
  static constexpr struct {
    uint16_t flag;
    char letter;
  } kLetters[] = {
      {kInterruptibleSleep, 'S'}, {kUninterruptibleSleep, 'D'}, {kStopped, 'T'},
      {kTraced, 't'},             {kExitDead, 'X'},             {kExitZombie, 'Z'},
      {kParked, 'P'},             {kTaskDead, 'x'},             {kWakeKill, 'K'},
      {kWaking, 'W'},             {kNoLoad, 'N'},               {kIdle, 'I'},
  };
  for (const auto& l : kLetters)
    if (parsed & l.flag) out += l.letter;
  // Perfetto renders into a 4-byte buffer: at most three letters survive.
  if (out.size() > 3) out.resize(3);
  return out;
}

SchedTracker::SchedTracker(TraceStorage* storage, ProcessTracker* processes)
    : storage_(storage),
      processes_(processes),
      running_(storage->strings.Intern("Running")),
      runnable_(storage->strings.Intern("R")) {}

void SchedTracker::SetKernelVersion(int major, int minor, uint32_t machine) {
  if (machine >= kernels_.size()) kernels_.resize(machine + 1);
  kernels_[machine] = {major, minor, {}};
}

StringId SchedTracker::StateId(int64_t prev_state, uint32_t cpu) {
  // Hand-tuned: one table lookup per switch; a state's string is built and
  // interned the first time that raw value shows up.
  const uint32_t machine = cpu / CpuTable::kMaxCpusPerMachine;
  KernelStates& kernel = kernels_[machine < kernels_.size() ? machine : 0];
  if (kernel.ids.empty()) kernel.ids.assign(0x10000, kStateUnknown);
  auto raw = static_cast<uint16_t>(prev_state);
  StringId& id = kernel.ids[raw];
  if (id == kStateUnknown) {
    std::string s = TaskStateString(raw, kernel.major, kernel.minor);
    id = s.empty() ? kNullStringId : storage_->strings.Intern(s);
  }
  if (id == kNullStringId) task_state_invalid_++;
  return id;
}

void SchedTracker::OpenSlice(CpuState& c, int64_t ts, uint32_t cpu, uint32_t utid, int32_t prio) {
  SchedSliceTable& s = storage_->sched;
  c.open_slice = static_cast<uint32_t>(s.size());
  s.ts.push_back(ts);
  s.dur.push_back(-1);
  s.cpu.push_back(cpu);
  s.utid.push_back(utid);
  s.end_state.push_back(kNullStringId);
  s.priority.push_back(prio);
}

void SchedTracker::CloseSlice(uint32_t row, int64_t ts, StringId end_state) {
  SchedSliceTable& s = storage_->sched;
  s.dur[row] = ts - s.ts[row];
  s.end_state[row] = end_state;
}

uint32_t SchedTracker::OnSwitch(int64_t ts, uint32_t cpu, int64_t prev_pid,
                                std::string_view prev_comm, int32_t /*prev_prio*/,
                                int64_t prev_state, int64_t next_pid,
                                std::string_view next_comm, int32_t next_prio) {
  if (cpu >= kMaxCpus) {
    bad_cpu_events_++;
    return kNullU32;
  }
  uint32_t next_utid = processes_->UpdateThreadName(next_pid, next_comm);
  CpuState& c = Cpu(cpu);
  StringId state = StateId(prev_state, cpu);
  if (c.open_slice != kNullU32) {
    if (prev_pid == c.pid)
      CloseSlice(c.open_slice, ts, state);
    else
      mismatched_sched_switch_tids_++;
  }
  // After next: a comm changed while running (task_rename) is picked up.
  uint32_t prev_utid = processes_->UpdateThreadName(prev_pid, prev_comm);
  OpenSlice(c, ts, cpu, next_utid, next_prio);
  c.utid = next_utid;
  c.pid = next_pid;
  c.prio = next_prio;
  PushSwitch(ts, cpu, prev_utid, state, next_utid);
  return prev_utid;
}

uint32_t SchedTracker::OnSwitchCompact(int64_t ts, uint32_t cpu, int64_t prev_state,
                                       int64_t next_pid, std::string_view next_comm,
                                       int32_t next_prio, bool raw_only) {
  if (cpu >= kMaxCpus) {
    bad_cpu_events_++;
    return kNullU32;
  }
  uint32_t next_utid = processes_->UpdateThreadName(next_pid, next_comm);
  CpuState& c = Cpu(cpu);
  if (c.utid == kNullU32) {
    // No prev_* in the compact format: the first switch of a CPU only tells
    // who runs from now on.
    compact_sched_switch_skipped_++;
    c.utid = next_utid;
    c.pid = next_pid;
    c.prio = next_prio;
    return kNullU32;
  }
  StringId state = StateId(prev_state, cpu);
  if (c.open_slice != kNullU32) CloseSlice(c.open_slice, ts, state);
  uint32_t prev_utid = c.utid;
  c.utid = next_utid;
  c.pid = next_pid;
  c.prio = next_prio;
  if (raw_only) {
    c.open_slice = kNullU32;
    return prev_utid;
  }
  OpenSlice(c, ts, cpu, next_utid, next_prio);
  PushSwitch(ts, cpu, prev_utid, state, next_utid);
  return prev_utid;
}

void SchedTracker::OnWaking(int64_t ts, int64_t waker_tid, int64_t pid, std::string_view comm) {
  uint32_t wakee = processes_->UpdateThreadName(pid, comm);
  uint32_t waker = processes_->GetOrCreateThread(waker_tid);
  PushWaking(ts, wakee, waker);
}

uint32_t SchedTracker::OnWakingCompact(int64_t ts, uint32_t cpu, int64_t pid, uint32_t common_flags,
                                       bool raw_only) {
  if (cpu >= kMaxCpus) {
    bad_cpu_events_++;
    return kNullU32;
  }
  CpuState& c = Cpu(cpu);
  if (c.utid == kNullU32) {
    compact_sched_waking_skipped_++;
    return kNullU32;
  }
  if (raw_only) return c.utid;
  uint32_t wakee = processes_->GetOrCreateThread(pid);
  // TRACE_FLAG_HARDIRQ 0x08, TRACE_FLAG_SOFTIRQ 0x10 (linux/trace_events.h).
  PushWaking(ts, wakee, c.utid, (common_flags & (0x08 | 0x10)) != 0 ? 1 : 0);
  return c.utid;
}

void SchedTracker::OnTaskNewtask(int64_t ts, int64_t parent_tid, int64_t new_tid,
                                 std::string_view comm, uint64_t clone_flags) {
  auto created = processes_->OnTaskNewtask(ts, parent_tid, new_tid, comm, clone_flags);
  // A new task's wakeup is its parent's clone, never an interrupt.
  if (created) AddOpenState(ts, created->new_utid, runnable_, kNullU32, created->parent_utid, /*irq_context=*/0);
}

void SchedTracker::Finish(int64_t /*end_ts*/) {
  // Perfetto leaves the rows still open at the end with dur -1; so do we.
  cpus_ = {};
  last_row_ = {};
  last_blocked_row_ = {};
  kernels_ = {};
}

// --- thread_state -----------------------------------------------------------

void SchedTracker::PushSwitch(int64_t ts, uint32_t cpu, uint32_t prev_utid, StringId prev_state,
                              uint32_t next_utid) {
  uint32_t prev_last = LastRow(prev_utid);
  // Switched out but not Running as far as we know: events were lost; the
  // stale row stays open rather than getting a made-up end.
  bool data_loss = prev_last != kNullU32 && storage_->thread_state.state[prev_last] != running_;
  ClosePendingState(ts, prev_utid, data_loss);
  AddOpenState(ts, prev_utid, prev_state, kNullU32, kNullU32);
  // A forced migration can show the same task switched in on two CPUs at
  // once: whatever it was doing ends here.
  ClosePendingState(ts, next_utid, false);
  AddOpenState(ts, next_utid, running_, cpu, kNullU32);
}

void SchedTracker::PushWaking(int64_t ts, uint32_t utid, uint32_t waker_utid, int8_t irq_context) {
  uint32_t last = LastRow(utid);
  if (last == kNullU32) {
    AddOpenState(ts, utid, runnable_, kNullU32, waker_utid, irq_context);
    return;
  }
  StringId state = storage_->thread_state.state[last];
  // Only a blocked thread can be woken; "R+" counts as blocked here.
  if (state == running_ || state == runnable_) return;
  ClosePendingState(ts, utid, false);
  AddOpenState(ts, utid, runnable_, kNullU32, waker_utid, irq_context);
}

void SchedTracker::AddOpenState(int64_t ts, uint32_t utid, StringId state, uint32_t cpu,
                                uint32_t waker_utid, int8_t irq_context) {
  // The idle task (each machine has one, tid 0) has no thread states.
  if (storage_->thread.tid[utid] == 0) return;
  ThreadStateTable& t = storage_->thread_state;
  auto row = static_cast<uint32_t>(t.size());
  t.ts.push_back(ts);
  t.dur.push_back(-1);
  t.cpu.push_back(cpu);
  t.utid.push_back(utid);
  t.state.push_back(state);
  t.io_wait.push_back(-1);
  t.waker_utid.push_back(waker_utid);
  // The waker's row, as upstream links it: its newest row, if Running (at
  // the start of a trace, or after a loss, it may not be).
  const uint32_t waker_row = waker_utid == kNullU32 ? kNullU32 : LastRow(waker_utid);
  t.waker_id.push_back(waker_row != kNullU32 && t.state[waker_row] == running_ ? waker_row : kNullU32);
  t.irq_context.push_back(irq_context);
  if (utid >= last_row_.size()) last_row_.resize(std::max<size_t>(utid + 1, last_row_.size() * 2), kNullU32);
  last_row_[utid] = row;
  if (state == runnable_) return;  // Woken: the blocked row stays the mark.
  if (utid >= last_blocked_row_.size())
    last_blocked_row_.resize(std::max<size_t>(utid + 1, last_blocked_row_.size() * 2), kNullU32);
  last_blocked_row_[utid] = state == running_ ? kNullU32 : row;
}

void SchedTracker::OnBlockedReason(int64_t pid, bool io_wait, StringId blocked_function) {
  const uint32_t utid = processes_->GetOrCreateThread(pid);
  if (utid >= last_blocked_row_.size() || last_blocked_row_[utid] == kNullU32) return;
  const uint32_t row = last_blocked_row_[utid];
  storage_->thread_state.io_wait[row] = io_wait ? 1 : 0;
  if (blocked_function != kNullStringId) storage_->thread_state.blocked_function[row] = blocked_function;
}

void SchedTracker::ClosePendingState(int64_t ts, uint32_t utid, bool data_loss) {
  uint32_t last = LastRow(utid);
  if (last == kNullU32 || data_loss) return;
  ThreadStateTable& t = storage_->thread_state;
  t.dur[last] = ts - t.ts[last];
}

}  // namespace sluice
