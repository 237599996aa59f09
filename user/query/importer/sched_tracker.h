// SchedTracker: builds the `sched` and `thread_state` tables from
// sched_switch (full or compact), sched_waking and task_newtask the way
// Perfetto's trace processor v58 does (FtraceSchedEventTracker,
// SchedEventTracker and ThreadStateTracker), so the same trace gives the same
// rows, end_state and state letters and wakers included.
//
// sched (one row per time a task ran on a CPU)
//   A switch on a CPU opens a row for next_pid (ts, cpu, next_prio, dur -1)
//   and closes that CPU's open row: dur = ts - start, end_state = the letters
//   of prev_state. The idle task has rows too (utid 0, pid 0). A full switch
//   whose prev_pid is not the task the CPU's previous switch put there (lost
//   events) leaves the old row open (dur -1, end_state NULL) and counts as
//   Perfetto's mismatched_sched_switch_tids. Compact switches carry no prev_*:
//   the first one per CPU only records who runs (no row), later ones take
//   prev from the previous switch on that CPU. Rows open at the end keep
//   dur -1 and end_state NULL.
//
// thread_state (per thread, back-to-back intervals)
//   state "Running" (cpu set) from a switch-in to the switch-out; then the
//   switch's prev_state ("S", "D", "R", "R+", "I", ...) until the next
//   event for the thread: a waking ("R", waker_utid = the waking task) or a
//   switch-in. Rules that differ from the kernel's view, all Perfetto's:
//     - Only "Running" and exactly "R" count as not blocked: a waking of a
//       task left in "R+" (preempted) closes that row and opens "R", while a
//       waking of a Running / "R" task adds nothing.
//     - A switch-out of a thread whose last row is not Running (lost events)
//       leaves that row open (dur -1) and starts the new one anyway.
//     - A waking of a thread never seen before opens "R" with no earlier row;
//       the first switch of a thread opens its first row (no "before" row).
//     - utid 0 (idle) gets no thread_state rows.
//     - io_wait stays NULL: Perfetto sets it only from sched_blocked_reason
//       (Android), which sluice does not record.
//     - task_newtask opens "R" for the new task, waker = the parent.
//     - sched_wakeup_new changes nothing (Perfetto keeps it in ftrace_event
//       only); a compact waking's comm does not rename the wakee.
//
// Task state letters (end_state, thread_state.state)
//   prev_state is the kernel's raw bitmask, truncated to 16 bits. Its layout
//   depends on the kernel version (SetKernelVersion, from system_info's
//   uname, before the first switch; without it Perfetto assumes 4.4):
//     >= 4.14: 0x01 S, 0x02 D, 0x04 T, 0x08 t, 0x10 X, 0x20 Z, 0x40 P,
//              0x80 I (TASK_REPORT_IDLE), 0x100 preempted ("R+");
//              any bit in 0xfe00 makes the state invalid (NULL, counted as
//              task_state_invalid).
//     [4.8, 4.14): 0x40 x, 0x80 K, 0x100 W, 0x200 P, 0x400 N, 0x1000 "+";
//     < 4.8:       as 4.8 but preemption is 0x800.
//   No flag = "R" (running when switched out: yield, cond_resched), "R+" if
//   preempted. Letters print in the order S D T t X Z P x K W N I, at most
//   three (Perfetto's 4-byte buffer), D|N alone on old kernels is "I".
//
// What the importer does around these calls (as Perfetto's FtraceParser)
//   - Events sorted by timestamp across CPUs and packets.
//   - Soft drop: with T = the largest, over CPUs, of the first bundle's
//     previous_bundle_end_timestamp (or last_read_event_timestamp), i.e.
//     metadata ftrace_latest_data_start_ns, ftrace events before T only go
//     to ftrace_event: a full sched_switch is skipped entirely, other events
//     only get GetOrCreateThread(common pid), compact switches / wakings are
//     passed with raw_only = true. /work/qdata/loss_central.pftrace needs it.
//   - sched_waking: GetOrCreateThread(common pid) for its ftrace_event row,
//     then OnWaking.
//
// Hot path (hand-tuned for ~12 M events in a few seconds): per-CPU and
// per-utid state in flat vectors indexed by cpu / utid, state strings
// interned once into a table indexed by the 16-bit raw state, no allocation
// per event once the vectors have grown.
#ifndef SLUICE_USER_QUERY_IMPORTER_SCHED_TRACKER_H_
#define SLUICE_USER_QUERY_IMPORTER_SCHED_TRACKER_H_

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "user/query/importer/process_tracker.h"
#include "user/query/storage/trace_storage.h"

namespace sluice {

class SchedTracker {
 public:
  SchedTracker(TraceStorage* storage, ProcessTracker* processes);
  SchedTracker(const SchedTracker&) = delete;
  SchedTracker& operator=(const SchedTracker&) = delete;

  // The kernel of `machine` (a `machine` row): each machine's switches are
  // decoded by its own kernel's layout (its CPUs are ucpus of that machine).
  void SetKernelVersion(int major, int minor, uint32_t machine = 0);

  // The host's CPU numbers at or above this (a corrupt bundle) drop the
  // event and count bad_cpu_events: x86-64's largest NR_CPUS (MAXSMP) is
  // 8192. The calls take ucpus (CpuTable): a relayed machine's CPUs come
  // after the host's, up to kMaxCpus.
  static constexpr uint32_t kMaxHostCpus = 8192;
  static constexpr uint32_t kMaxCpus = 64 * CpuTable::kMaxCpusPerMachine;

  // Full sched_switch. Returns prev's utid: the utid of the event's
  // ftrace_event row (Perfetto does not use the common pid for it);
  // kNullU32 when the event was dropped (cpu >= kMaxCpus).
  uint32_t OnSwitch(int64_t ts, uint32_t cpu, int64_t prev_pid, std::string_view prev_comm,
                    int32_t prev_prio, int64_t prev_state, int64_t next_pid,
                    std::string_view next_comm, int32_t next_prio);
  // compact_sched switch. `raw_only`: the event is before the point where
  // every CPU's buffer has data (Perfetto's soft drop): it only records who
  // runs. Returns the prev utid for the ftrace_event row, or kNullU32 when
  // Perfetto stores no ftrace_event row (first compact switch of a CPU).
  uint32_t OnSwitchCompact(int64_t ts, uint32_t cpu, int64_t prev_state, int64_t next_pid,
                           std::string_view next_comm, int32_t next_prio, bool raw_only = false);
  // Full sched_waking: `waker_tid` is the event's common pid; `comm` names
  // the wakee.
  void OnWaking(int64_t ts, int64_t waker_tid, int64_t pid, std::string_view comm);
  // compact_sched waking: the waker is whoever the last switch on `cpu` put
  // there. Returns that utid (the ftrace_event row's utid), or kNullU32 when
  // no switch was seen on the CPU yet: Perfetto drops the event entirely
  // (compact_sched_waking_skipped).
  // `common_flags`: the waker's context (trace_flags): a hardirq or softirq
  // one makes the row's irq_context 1, as upstream.
  uint32_t OnWakingCompact(int64_t ts, uint32_t cpu, int64_t pid, uint32_t common_flags, bool raw_only = false);
  // sched_wakeup_new: no row changes (see above); kept for the dispatch.
  void OnWakeupNew(int64_t, int64_t, int64_t) {}
  // task_newtask, raised by `parent_tid` (common pid): ProcessTracker's
  // thread/process rows, then the new task's "R" row.
  void OnTaskNewtask(int64_t ts, int64_t parent_tid, int64_t new_tid, std::string_view comm,
                     uint64_t clone_flags);

  // sched_blocked_reason: the blocked task `pid` (the payload's, not the
  // event's common pid) waited on I/O or not. As upstream: it marks the
  // thread's newest blocked row (any state but "R" and "Running", so "S",
  // "D" and a preempted "R+"), even once the thread was woken since ("R"
  // rows do not move the mark); a thread Running, or with no blocked row
  // since it last ran, is left alone. The thread row is made if new.
  // blocked_function: the caller's name when the trace interned kernel
  // symbols (Perfetto's recorder with symbolize_ksyms), else NULL.
  void OnBlockedReason(int64_t pid, bool io_wait, StringId blocked_function = kNullStringId);

  // End of import: open rows keep dur -1, as in Perfetto.
  void Finish(int64_t end_ts);

  // Perfetto's stats, for the importer's `stats` table.
  int64_t mismatched_sched_switch_tids() const { return mismatched_sched_switch_tids_; }
  int64_t compact_sched_switch_skipped() const { return compact_sched_switch_skipped_; }
  int64_t compact_sched_waking_skipped() const { return compact_sched_waking_skipped_; }
  int64_t task_state_invalid() const { return task_state_invalid_; }
  // Ours, not Perfetto's: events dropped for a cpu >= kMaxCpus.
  int64_t bad_cpu_events() const { return bad_cpu_events_; }

  // The letters of raw `prev_state` for a kernel `major`.`minor` ("" when
  // invalid, which Perfetto stores as NULL). Exposed for tests.
  static std::string TaskStateString(uint16_t raw, int major, int minor);

 private:
  // What the last switch on a CPU left there.
  struct CpuState {
    uint32_t open_slice = kNullU32;  // sched row still running, or none
    uint32_t utid = kNullU32;        // task running (kNullU32: no switch yet)
    int64_t pid = 0;
    int32_t prio = 0;
  };

  CpuState& Cpu(uint32_t cpu) {
    if (cpu >= cpus_.size()) cpus_.resize(cpu + 1);
    return cpus_[cpu];
  }
  StringId StateId(int64_t prev_state, uint32_t cpu);
  void OpenSlice(CpuState& c, int64_t ts, uint32_t cpu, uint32_t utid, int32_t prio);
  void CloseSlice(uint32_t row, int64_t ts, StringId end_state);

  // ThreadStateTracker.
  void PushSwitch(int64_t ts, uint32_t cpu, uint32_t prev_utid, StringId prev_state,
                  uint32_t next_utid);
  void PushWaking(int64_t ts, uint32_t utid, uint32_t waker_utid, int8_t irq_context = -1);
  // `irq_context`: -1 (NULL), 0 or 1 (ThreadStateTable).
  void AddOpenState(int64_t ts, uint32_t utid, StringId state, uint32_t cpu, uint32_t waker_utid,
                    int8_t irq_context = -1);
  void ClosePendingState(int64_t ts, uint32_t utid, bool data_loss);
  uint32_t LastRow(uint32_t utid) const {
    return utid < last_row_.size() ? last_row_[utid] : kNullU32;
  }

  TraceStorage* storage_;
  ProcessTracker* processes_;
  // Per machine: its kernel version (Perfetto's default 4.4 when the trace
  // has no uname) and the state string of each raw prev_state seen.
  struct KernelStates {
    int major = 4, minor = 4;
    std::vector<StringId> ids;
  };
  std::vector<KernelStates> kernels_ = std::vector<KernelStates>(1);
  StringId running_;
  StringId runnable_;
  // Raw prev_state (16 bits) -> StringId; kStateUnknown until first use.
  static constexpr StringId kStateUnknown = kNullU32;
  std::vector<CpuState> cpus_;
  // Per utid: the thread's newest thread_state row (kNullU32 = none yet).
  std::vector<uint32_t> last_row_;
  // Per utid: the newest blocked row, for sched_blocked_reason (kNullU32 =
  // none since the thread last ran).
  std::vector<uint32_t> last_blocked_row_;
  int64_t mismatched_sched_switch_tids_ = 0;
  int64_t compact_sched_switch_skipped_ = 0;
  int64_t compact_sched_waking_skipped_ = 0;
  int64_t task_state_invalid_ = 0;
  int64_t bad_cpu_events_ = 0;
};

}  // namespace sluice

#endif  // SLUICE_USER_QUERY_IMPORTER_SCHED_TRACKER_H_
