// TraceImporter: turns a trace's packets into TraceStorage's tables.
//
//   packets ──► TraceImporter::OnPacket
//                 ├─ ftrace bundles ─► EventSorter (per-CPU queues, window)
//                 │                      └─► events in ts order ─► DispatchEvent
//                 │                            ├─ ftrace_event + args (every event)
//                 │                            ├─ SchedTracker (sched, thread_state)
//                 │                            ├─ ProcessTracker (thread, process)
//                 │                            └─ counters (cpu_idle, cpu_frequency)
//                 ├─ process_tree ─► ProcessTracker
//                 ├─ system_info, trace_config ─► metadata
//                 └─ trace_stats, ftrace_stats, sequence flags ─► stats (Finish)
//
// Packets are read in one streaming pass (ReadTraceFile's bounded window);
// memory beyond the tables is the sorter's queues and the packet blocks it
// holds. Non-ftrace packets are applied as they arrive: they carry state
// (process tree, uname) rather than events on the timeline.
#ifndef SLUICE_USER_QUERY_IMPORTER_TRACE_IMPORTER_H_
#define SLUICE_USER_QUERY_IMPORTER_TRACE_IMPORTER_H_

#include <array>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "shm/base/status.h"
#include "user/query/importer/android_memory_tracker.h"
#include "user/query/importer/atrace_tracker.h"
#include "user/query/importer/compact_args_memo.h"
#include "user/query/importer/event_sorter.h"
#include "user/query/importer/ftrace_event_schema.h"
#include "user/query/importer/process_stats_importer.h"
#include "user/query/importer/process_tracker.h"
#include "user/query/importer/remote_clock_sync.h"
#include "user/query/importer/rss_stat_tracker.h"
#include "user/query/importer/sequence_loss_tracker.h"
#include "user/query/importer/sched_tracker.h"
#include "user/query/importer/suspend_resume_tracker.h"
#include "user/query/importer/syscall_tracker.h"
#include "user/query/importer/system_probes_importer.h"
#include "user/query/importer/track_event_importer.h"
#include "user/query/storage/trace_storage.h"
#include "user/trace/trace_file_reader.h"
#include "user/trace/trace_health.h"

namespace sluice {

class TraceImporter {
 public:
  explicit TraceImporter(TraceStorage* storage);
  ~TraceImporter();

  void OnPacket(std::string_view packet);
  // The file's first 4 KiB: the fallback trace_uuid is their hash, as
  // Perfetto's trace processor derives it. Call once, before Finish.
  void HashHead(std::string_view head);
  // End of input: flushes the sorter, closes open slices, writes stats and
  // metadata. `read_status` is the reader's result: an error there (a
  // corrupt record) is an import error in `stats`, the data before it kept.
  void Finish(const TraceFileSummary& file, const Status& read_status);

 private:
  struct CpuState {
    bool seen = false;    // An event of this CPU was imported: a `cpu` row.
    bool known = false;   // A switch on this CPU has been seen.
    int32_t pid = 0;
    int32_t prio = 0;
    StringId comm = kNullStringId;
  };
  struct StatsCapture;

  void OnBundle(std::string_view bundle, std::string_view packet);
  void OnCompactSched(std::string_view compact, uint32_t cpu);
  void OnProcessTree(std::string_view bytes, int64_t ts);
  void OnProcessStats(std::string_view bytes, int64_t ts);
  void OnSystemInfo(std::string_view bytes);
  void OnClockSnapshot(std::string_view bytes);
  void OnPerfSample(std::string_view bytes);
  void OnTraceConfig(std::string_view bytes);
  void OnTraceStatsPacket(std::string_view bytes);
  // A packet's machine_id (0: the host): its `machine` row, made (with
  // the machine's idle task) the first time; kNullU32 past kMaxMachines.
  uint32_t MachineOf(uint64_t raw_id);
  // `ts` on the current packet's machine's boot clock, on the trace's
  // timeline: unchanged for the host, through its RemoteClockSync for a
  // relayed machine. False: it cannot be converted (counted; drop it).
  bool ToTraceTime(int64_t* ts);
  // A CPU number an event of `machine` names in its fields (cpu_idle's
  // cpu_id, ...): its ucpu, as the bundle's cpu is.
  static uint32_t MachineCpu(uint32_t machine, int64_t cpu);
  // The stats rows of each relayed machine: what its TraceStats and the
  // host's relay figures say it lost, and its clock syncs.
  void WriteMachineStats();
  // TracingServiceEvent: the session's milestones in metadata
  // (tracing_started_ns, all_data_source_started_ns,
  // all_data_source_flushed_ns per flush, tracing_disabled_ns,
  // slow_start_data_source per late source) and the clone stats.
  void OnServiceEvent(std::string_view bytes, int64_t packet_ts);
  // InternedData's kernel_symbols, for the kernel addresses events carry
  // (sched_blocked_reason's caller, funcgraph's func).
  void OnInternedData(std::string_view bytes);
  // The field number of the kernel address in events of `kind`, 0 if none.
  uint32_t KernelSymbolField(uint32_t kind) const;
  // The interned symbol that field of `payload` names on the current
  // sequence, or kNullStringId.
  StringId KernelSymbolOf(std::string_view payload, uint32_t field) const;
  // funcgraph_entry/exit: a slice per call on the thread's Funcgraph
  // track, or for the idle task (pid 0, one per CPU) on the CPU's.
  void OnFuncgraph(int64_t ts, uint32_t cpu, uint32_t pid, StringId symbol, uint64_t func, bool entry);
  // The tracing_mark_write events of Android drivers and the allocator
  // events (AndroidMemoryTracker); false for any other kind.
  bool DispatchAndroidKernelEvent(uint32_t kind, int64_t ts, uint32_t pid, uint32_t utid,
                                  const std::vector<EventField>& fs);
  // TraceAttributes (a packet's or the config's): trace_attribute.<key>.
  void OnTraceAttributes(std::string_view bytes);
  // Trigger / clone_snapshot_trigger: a point slice on "Trace Triggers" and
  // metadata trace_trigger.
  void OnTrigger(std::string_view bytes, int64_t ts, bool clone);
  // Ftrace data from before the session's tracing_started (stale data the
  // kernel buffer held), unless the config preserved the buffer: dropped
  // and counted (ftrace_packet_before_tracing_start), as upstream.
  bool DroppedBeforeTracingStart(int64_t ts);
  // A packet sorted in with the ftrace events (process_tree, ...).
  void DispatchPacketEvent(const SortedEvent& event, std::string_view bytes);  void DispatchEvent(const SortedEvent& event, std::string_view bytes);
  void DispatchFtraceEvent(const SortedEvent& event, std::string_view bytes);
  void DispatchCompactSwitch(const SortedEvent& event);
  void DispatchCompactWaking(const SortedEvent& event);
  void AddFtraceEventRow(int64_t ts, StringId name, uint32_t cpu, uint32_t utid, std::vector<Arg>* args,
                         bool sorted);
  void AddFtraceEventRow(int64_t ts, StringId name, uint32_t cpu, uint32_t utid, uint32_t arg_set_id);
  void AddCounter(int64_t ts, StringId type, uint32_t cpu, double value);
  // cpu_frequency_limits: the CPU's "Cpu N Max Freq Limit" and "Cpu N Min
  // Freq Limit" counters (kHz), as upstream.
  void OnFrequencyLimits(int64_t ts, uint32_t cpu, int64_t min_freq, int64_t max_freq);
  // oom_score_adj_update: the process's oom_score_adj counter, or, for a
  // thread of no known process, one of the thread (upstream's
  // oom_score_adj_thread_fallback).
  void OnOomScoreAdjUpdate(int64_t ts, int64_t pid, int64_t oom_score_adj);
  // rss_stat / rss_stat_throttled: the mm owner's "mem.<key>" counter
  // (RssStatTracker), on its process_memory track, or for a thread of no
  // known process, process_memory_thread_fallback.
  void OnRssStat(int64_t ts, int64_t pid, const std::vector<EventField>& fields, bool throttled);
  // The tracks of the counters a thread's event gave its process, once every
  // thread's process is known: in the order of the rows, as upstream
  // interns them.
  void AddPendingProcessCounters();
  // A GenericFtraceEvent (an event this build has no proto message for):
  // named by its event_name (NULL if absent), its fields as args.
  void AddGenericEventRow(int64_t ts, uint32_t cpu, uint32_t utid, std::string_view payload);
  // irq_handler_entry / _exit: a slice "IRQ (name)" on the CPU's cpu_irq
  // track ("Irq Cpu N"), ended with arg ret "handled" or "unhandled".
  void OnIrqEntry(int64_t ts, uint32_t cpu, std::string_view name);
  void OnIrqExit(int64_t ts, uint32_t cpu, int64_t ret);
  // softirq_entry / _exit: a slice named by the vector (TIMER, NET_RX, ...)
  // on the CPU's cpu_softirq track ("SoftIrq Cpu N"), with arg vec; vectors
  // the kernel does not have are ignored, as in Perfetto.
  void OnSoftirq(int64_t ts, uint32_t cpu, int64_t vec, bool entry);
  CpuState& Cpu(uint32_t cpu);
  void AddStat(std::string_view name, int64_t idx, std::string_view severity,
               std::string_view source, int64_t value, std::string_view description);
  // A row of the machine `machine` (kNullU32: NULL) as opposed to AddStat's
  // host or global scoping.
  void AddMachineStat(uint32_t machine, std::string_view name, int64_t idx, std::string_view severity,
                      std::string_view source, int64_t value, std::string_view description);
  // str_value nullopt: NULL. Set: a single key, replaced if set before;
  // Append: another row of a multi key.
  void SetMetadata(std::string_view name, int64_t int_value, std::optional<std::string_view> str_value);
  void AppendMetadata(std::string_view name, int64_t int_value, std::optional<std::string_view> str_value);
  void AddMetadataRow(StringId name, StringId key_type, int64_t int_value, std::optional<std::string_view> str_value);
  void WriteStats(const TraceFileSummary& file, const Status& read_status);

  TraceStorage* storage_;
  // The import's findings that upstream counts per machine (its stats rows
  // with the machine's id): a relayed machine's events add to its own.
  struct Findings {
    int64_t compact_switch_skipped = 0, compact_waking_skipped = 0, systrace_parse_failure = 0,
            mismatched_sched_switch_tids = 0, task_state_invalid = 0;
    Findings& operator+=(const Findings& o);
    Findings operator-(const Findings& o) const;
  };
  Findings CurrentFindings() const;
  // Relayed machines, by `machine` row (row 0, the host, has no entry's
  // data): the clock syncs and the last TraceStats stamped with each.
  struct RemoteMachine {
    RemoteClockSync clock;
    std::string trace_stats;   // the TraceStats bytes
    std::string ftrace_begin, ftrace_end;  // its first START_OF_TRACE, last END_OF_TRACE FtraceStats
    uint64_t clock_failures = 0;  // timestamps that could not be converted
    Findings findings;
  };
  // The machine whose packets carried each sequence (relayed machines' only).
  std::unordered_map<uint32_t, uint32_t> sequence_machine_;
  static constexpr uint32_t kMaxMachines = 64;  // with the host
  std::vector<RemoteMachine> machines_;
  std::unordered_map<uint64_t, uint32_t> machine_by_raw_id_;
  uint32_t machine_ = 0;  // The current packet's `machine` row.
  uint64_t packets_of_too_many_machines_ = 0;
  ProcessTracker processes_;
  SchedTracker sched_;
  TrackTracker tracks_;
  SliceTracker slices_;
  TrackEventImporter track_events_;
  AtraceTracker atrace_;
  ProcessStatsImporter process_stats_;
  SyscallTracker syscalls_;
  SuspendResumeTracker suspend_resume_;
  AndroidMemoryTracker android_memory_;
  RssStatTracker rss_stat_;
  SystemProbesImporter system_probes_;
  SequenceLossTracker sequence_loss_;
  FtraceEventSchema schema_;
  EventSorter sorter_;
  TraceHealthCollector health_;
  std::unique_ptr<StatsCapture> stats_;
  std::vector<CpuState> cpus_;
  // Arg set ids of compact sched events by their values.
  CompactArgsMemo switch_args_, waking_args_;
  // Scratch, reused per event (no allocation per event).
  std::vector<EventField> fields_;
  std::vector<Arg> args_;
  std::vector<uint64_t> syscall_args_;
  struct PendingCounter {
    uint32_t row;  // In storage_->counter, track_id still kNullU32.
    uint32_t utid;
    StringId memory_key;  // process_memory's key; kNullStringId: oom_score_adj
  };
  std::vector<PendingCounter> pending_process_counters_;  // See AddPendingProcessCounters.
  std::vector<StringId> intern_table_;
  enum class TriggerState { kNone, kTrigger, kCloneSnapshot };
  TriggerState trigger_state_ = TriggerState::kNone;
  int64_t clone_trigger_ns_ = kNullInt, clone_started_ns_ = kNullInt;
  std::map<int64_t, int64_t> buffer_cloned_ns_;  // buffer -> ts
  int64_t tracing_started_ns_ = kNullInt;
  std::unordered_map<uint32_t, std::unordered_map<uint64_t, StringId>> kernel_symbols_;  // sequence -> iid -> name
  int64_t primary_trace_clock_ = kNullInt;  // set by the first ClockSnapshot
  bool preserve_ftrace_buffer_ = false, drop_decided_ = false;
  int64_t drop_before_ts_ = 0;
  int64_t ftrace_before_tracing_start_ = 0, abi_zero_data_length_errors_ = 0;

  // Event kinds the importer reads beyond their args (oneof field numbers).
  struct Known {
    uint32_t sched_switch, sched_waking, sched_wakeup_new, task_newtask, task_rename,
        process_fork, process_exec, process_exit, process_free, cpu_idle, cpu_frequency, print,
        irq_handler_entry, irq_handler_exit, softirq_entry, softirq_exit, sched_blocked_reason, sys_enter, sys_exit,
        suspend_resume, generic, cpu_frequency_limits, oom_score_adj_update, mark_victim, rss_stat,
        rss_stat_throttled, sched_cpu_util_cfs, kprobe_event, block_io_start, block_io_done, funcgraph_entry,
        funcgraph_exit, mdss_tracing_mark_write, sde_tracing_mark_write, dpu_tracing_mark_write,
        g2d_tracing_mark_write, mali_tracing_mark_write, ion_stat, ion_heap_grow, ion_heap_shrink, dma_heap_stat,
        cma_alloc_start, cma_alloc_info, cma_alloc_finish, mm_alloc_contig_migrate_range_info;
  } known_;
  // Interned strings used per event.
  struct Names {
    StringId sched_switch, sched_waking, prev_comm, prev_pid, prev_prio, prev_state,
        next_comm, next_pid, next_prio, comm, pid, prio, target_cpu, cpu_idle_track,
        cpu_frequency_track, cpu_idle_type, cpu_frequency_type, swapper, cpu_irq_type, ret, handled,
        unhandled, thread_funcgraph_type, funcgraph_track, cpu_funcgraph_type;
  } names_;
  // The idle task's Funcgraph track per CPU (kNullU32 until made): its name
  // is built once, not per call.
  std::vector<uint32_t> cpu_funcgraph_tracks_;

  uint64_t packets_skipped_incremental_invalid_ = 0;
  std::vector<int> config_discard_buffers_;
  // The (last) TraceConfig's write_into_file figures and the service's
  // version, for upstream's end-of-import checks of long traces.
  struct WriteIntoFile {
    bool on = false;
    uint32_t flush_period_ms = 0;
    uint32_t file_write_period_ms = 0;
  } write_into_file_;
  std::string tracing_service_version_;
  std::set<uint32_t> cpus_with_lost_events_;
  std::map<uint32_t, uint64_t> kernel_records_lost_;  // cpu -> PerfSample.kernel_records_lost, summed
  bool has_uuid_ = false;
  uint64_t head_hash_ = 0xcbf29ce484222325ull;  // FNV-1a offset basis.
  uint32_t sequence_ = 0;  // The current packet's trusted_packet_sequence_id.
  uint64_t packets_ = 0;
  int64_t clock_snapshots_ = 0;  // ClockSnapshot packets imported: the next snapshot_id.
  uint64_t unparsable_packets_ = 0;
  uint64_t cpu_out_of_range_bundles_ = 0;  // Bundles whose cpu >= kMaxCpus.
  uint64_t unparsable_events_ = 0;
  uint64_t compact_switch_skipped_ = 0;
  uint64_t compact_waking_skipped_ = 0;
  // Perfetto's ftrace_latest_data_start_ns: the latest, over CPUs, of the
  // first bundle's previous_bundle_end_timestamp. Events before it are
  // imported into ftrace_event only. A CPU whose first bundle arrives after
  // the sorter released later events cannot hold those back (not seen in
  // sluice traces: every CPU is read in the first pass).
  std::vector<bool> first_bundle_seen_;
  std::vector<int64_t> soft_drop_before_ts_ = {0};  // by machine
  uint64_t events_without_timestamp_ = 0;
};

}  // namespace sluice

#endif  // SLUICE_USER_QUERY_IMPORTER_TRACE_IMPORTER_H_
