#include "user/query/importer/trace_importer.h"

#include <google/protobuf/text_format.h>

#include <algorithm>
#include <cinttypes>
#include <cmath>
#include <functional>
#include <cstdio>
#include <map>
#include <set>
#include <iterator>
#include <tuple>
#include <string>

#include "perfetto/common/system_info.pb.h"
#include "perfetto/common/trace_stats.pb.h"
#include "perfetto/config/trace_config.pb.h"
#include "perfetto/trace/clock_snapshot.pb.h"
#include "perfetto/trace/ftrace/ftrace_stats.pb.h"
#include "perfetto/trace/ps/process_tree.pb.h"
#include "shm/base/string_util.h"
#include "user/query/importer/machine_scope.h"
#include "user/query/importer/proto_wire_reader.h"

namespace sluice {
namespace {

// TracePacket fields.
constexpr uint32_t kPacketFtraceEvents = 1;
constexpr uint32_t kPacketProcessTree = 2;
constexpr uint32_t kPacketProcessStats = 9;
constexpr uint32_t kPacketClockSnapshot = 6;
constexpr uint32_t kPacketTimestamp = 8;
constexpr uint32_t kPacketSequenceId = 10;
constexpr uint32_t kPacketTraceConfig = 33;
constexpr uint32_t kPacketFtraceStats = 34;
constexpr uint32_t kPacketTraceStats = 35;
constexpr uint32_t kPacketSystemInfo = 45;
constexpr uint32_t kPacketPerfSample = 66;
constexpr uint32_t kPacketSysStats = 7;
constexpr uint32_t kPacketInternedData = 12;
constexpr uint32_t kInternedKernelSymbols = 26;  // InternedData.kernel_symbols
constexpr uint32_t kPacketSequenceFlags = 13;
constexpr uint32_t kPacketIncrementalStateCleared = 41;
constexpr uint32_t kPacketPreviousPacketDropped = 42;
constexpr uint32_t kPacketTrigger = 46;
constexpr uint32_t kPacketBattery = 38;
constexpr uint32_t kPacketInitialDisplayState = 70;
constexpr uint32_t kPacketCpuInfo = 67;
constexpr uint32_t kPacketServiceEvent = 69;
constexpr uint32_t kPacketCloneSnapshotTrigger = 113;
constexpr uint32_t kPacketTraceAttributes = 126;
constexpr uint32_t kPacketTrackEvent = 11;
constexpr uint32_t kPacketThreadDescriptor = 44;
constexpr uint32_t kPacketTimestampClockId = 58;
constexpr uint32_t kPacketDefaults = 59;
constexpr uint32_t kPacketTrackDescriptor = 60;
constexpr uint32_t kPacketFirstPacketOnSequence = 87;
constexpr uint32_t kPacketInterruptInfo = 130;
constexpr uint32_t kPacketMachineId = 98;
constexpr uint32_t kPacketRemoteClockSync = 107;
// PerfSample fields (protos/perfetto/trace/profiling/profile_packet.proto).
constexpr uint32_t kPerfSampleCpu = 1;
constexpr uint32_t kPerfSampleKernelRecordsLost = 17;
// FtraceEventBundle fields.
constexpr uint32_t kBundleCpu = 1;
constexpr uint32_t kBundleEvent = 2;
constexpr uint32_t kBundleLostEvents = 3;
constexpr uint32_t kBundleCompactSched = 4;
constexpr uint32_t kBundleLastReadEventTimestamp = 9;
constexpr uint32_t kBundlePreviousBundleEndTimestamp = 10;
// FtraceEventBundle.CompactSched fields.
enum CompactField : uint32_t {
  kSwitchTimestamp = 1, kSwitchPrevState = 2, kSwitchNextPid = 3, kSwitchNextPrio = 4,
  kInternTable = 5, kSwitchNextCommIndex = 6, kWakingTimestamp = 7, kWakingPid = 8,
  kWakingTargetCpu = 9, kWakingPrio = 10, kWakingCommIndex = 11, kWakingCommonFlags = 12,
  kCompactFieldCount = 13
};

// How far behind the newest event the sorter may hold events, and how many.
// The window covers sluice's and Perfetto's write periods (a CPU's bundles
// can trail another's by a read pass); the count bounds memory at ~200 MB.
constexpr int64_t kSortWindowNs = 10'000'000'000;
constexpr size_t kMaxPendingEvents = 4'000'000;
// The sorter stream (with the packet's sequence) of process_tree packets:
// not a CPU number, which Dispatch never sees for them.
constexpr uint32_t kProcessTreeStream = UINT32_MAX;
constexpr uint32_t kTrackEventStream = UINT32_MAX - 1;

// Each figure a TraceStats holds, under upstream's names: traced_<field>
// (idx NULL) for its own fields, traced_final_flush_succeeded / _failed (1)
// for final_flush_outcome, and traced_buf_<field> (idx = buffer) for each
// buffer's counters.
void ForEachTraceStat(const perfetto::protos::TraceStats& stats,
                      const std::function<void(const std::string& name, int64_t idx, int64_t value)>& figure) {
  using google::protobuf::FieldDescriptor;
  const auto* reflection = stats.GetReflection();
  std::vector<const FieldDescriptor*> fields;
  reflection->ListFields(stats, &fields);
  for (const auto* f : fields) {
    if (f->is_repeated() || f->cpp_type() == FieldDescriptor::CPPTYPE_MESSAGE) continue;
    if (f->name() == "final_flush_outcome") {
      bool ok = stats.final_flush_outcome() == perfetto::protos::TraceStats::FINAL_FLUSH_SUCCEEDED;
      figure(ok ? "traced_final_flush_succeeded" : "traced_final_flush_failed", kNullInt, 1);
      continue;
    }
    int64_t value = f->cpp_type() == FieldDescriptor::CPPTYPE_UINT32   ? reflection->GetUInt32(stats, f)
                    : f->cpp_type() == FieldDescriptor::CPPTYPE_UINT64 ? static_cast<int64_t>(reflection->GetUInt64(stats, f))
                                                                       : 0;
    figure("traced_" + f->name(), kNullInt, value);
  }
  for (int b = 0; b < stats.buffer_stats_size(); ++b) {
    const auto& buf = stats.buffer_stats(b);
    const auto* br = buf.GetReflection();
    std::vector<const FieldDescriptor*> bfields;
    br->ListFields(buf, &bfields);
    for (const auto* f : bfields) {
      if (f->cpp_type() != FieldDescriptor::CPPTYPE_UINT64) continue;
      figure("traced_buf_" + f->name(), b, static_cast<int64_t>(br->GetUInt64(buf, f)));
    }
  }
}

// ftrace's per-CPU stats under upstream's names: ftrace_cpu_<x>_begin / _end
// (idx = CPU) from the start and end FtraceStats (either may be missing),
// and for the counters _delta (timestamps in ns, as upstream scales them).
void ForEachFtraceCpuStat(const perfetto::protos::FtraceStats* begin_stats,
                          const perfetto::protos::FtraceStats* end_stats,
                          const std::function<void(const std::string& name, int64_t idx, int64_t value)>& figure) {
  if (!begin_stats && !end_stats) return;
  auto by_cpu = [](const perfetto::protos::FtraceStats* stats) {
    std::map<uint64_t, perfetto::protos::FtraceCpuStats> cpus;
    if (stats)
      for (const auto& c : stats->cpu_stats()) cpus[c.cpu()] = c;
    return cpus;
  };
  auto begin = by_cpu(begin_stats), end = by_cpu(end_stats);
  std::set<uint64_t> all;
  for (const auto& [cpu, c] : begin) all.insert(cpu);
  for (const auto& [cpu, c] : end) all.insert(cpu);
  for (uint64_t cpu : all) {
    const auto& b = begin[cpu];
    const auto& e = end[cpu];
    auto idx = static_cast<int64_t>(cpu);
    struct Counter {
      const char* name;
      uint64_t begin, end;
    };
    const Counter counters[] = {{"entries", b.entries(), e.entries()},
                                {"overrun", b.overrun(), e.overrun()},
                                {"commit_overrun", b.commit_overrun(), e.commit_overrun()},
                                {"bytes", b.bytes_read(), e.bytes_read()},
                                {"dropped_events", b.dropped_events(), e.dropped_events()},
                                {"read_events", b.read_events(), e.read_events()}};
    for (const Counter& c : counters) {
      std::string base = std::string("ftrace_cpu_") + c.name;
      if (begin_stats) figure(base + "_begin", idx, static_cast<int64_t>(c.begin));
      if (end_stats) {
        figure(base + "_end", idx, static_cast<int64_t>(c.end));
        if (begin_stats) figure(base + "_delta", idx, static_cast<int64_t>(c.end) - static_cast<int64_t>(c.begin));
      }
    }
    // Truncated, not rounded, as upstream: 17329797.441 s is 17329797440999 ns there.
    auto ns = [](double seconds) { return static_cast<int64_t>(seconds * 1e9); };
    if (begin_stats) {
      figure("ftrace_cpu_oldest_event_ts_begin", idx, ns(b.oldest_event_ts()));
      figure("ftrace_cpu_now_ts_begin", idx, ns(b.now_ts()));
    }
    if (end_stats) {
      figure("ftrace_cpu_oldest_event_ts_end", idx, ns(e.oldest_event_ts()));
      figure("ftrace_cpu_now_ts_end", idx, ns(e.now_ts()));
    }
  }
}

const EventField* FindField(const std::vector<EventField>& fields, uint32_t number) {
  for (const EventField& f : fields)
    if (f.number == number) return &f;
  return nullptr;
}

int64_t IntField(const std::vector<EventField>& fields, uint32_t number, int64_t fallback = 0) {
  const EventField* f = FindField(fields, number);
  return f && f->arg.type != ArgType::kString && f->arg.type != ArgType::kReal ? f->arg.int_value : fallback;
}

}  // namespace

// What the stats table needs from the trace's own stats packets: the last
// TraceStats and the first/last FtraceStats of each phase.
struct TraceImporter::StatsCapture {
  perfetto::protos::TraceStats trace_stats;
  bool has_trace_stats = false;
  perfetto::protos::FtraceStats ftrace_begin, ftrace_end;
  bool has_ftrace_begin = false, has_ftrace_end = false;
  // The packet-loss figures per buffer as of the last TraceStats.
  std::map<uint32_t, SequenceLossTracker::BufferLoss> sequence_loss;
};

TraceImporter::TraceImporter(TraceStorage* storage)
    : storage_(storage),
      processes_(storage),
      sched_(storage, &processes_),
      tracks_(storage),
      slices_(storage),
      track_events_(storage, &processes_, &tracks_, &slices_),
      atrace_(storage, &processes_, &tracks_, &slices_),
      process_stats_(storage, &processes_, &tracks_),
      syscalls_(storage, &processes_, &tracks_, &slices_),
      suspend_resume_(storage, &tracks_, &slices_),
      android_memory_(storage, &tracks_, &slices_),
      rss_stat_(&processes_),
      system_probes_(storage, &tracks_),
      schema_(&storage->strings),
      sorter_(kSortWindowNs, kMaxPendingEvents,
              [this](const SortedEvent& e, std::string_view bytes) { DispatchEvent(e, bytes); }),
      stats_(std::make_unique<StatsCapture>()) {
  machines_.resize(1);  // The host: row 0 of `machine`.
  machine_by_raw_id_[0] = 0;
  storage->machine.raw_id.push_back(0);
  storage->machine.name.push_back(kNullStringId);
  known_.sched_switch = schema_.EventFieldNumber("sched_switch");
  known_.sched_waking = schema_.EventFieldNumber("sched_waking");
  known_.sched_wakeup_new = schema_.EventFieldNumber("sched_wakeup_new");
  known_.task_newtask = schema_.EventFieldNumber("task_newtask");
  known_.task_rename = schema_.EventFieldNumber("task_rename");
  known_.process_fork = schema_.EventFieldNumber("sched_process_fork");
  known_.process_exec = schema_.EventFieldNumber("sched_process_exec");
  known_.process_exit = schema_.EventFieldNumber("sched_process_exit");
  known_.process_free = schema_.EventFieldNumber("sched_process_free");
  known_.cpu_idle = schema_.EventFieldNumber("cpu_idle");
  known_.cpu_frequency = schema_.EventFieldNumber("cpu_frequency");
  known_.print = schema_.EventFieldNumber("print");
  known_.irq_handler_entry = schema_.EventFieldNumber("irq_handler_entry");
  known_.irq_handler_exit = schema_.EventFieldNumber("irq_handler_exit");
  known_.softirq_entry = schema_.EventFieldNumber("softirq_entry");
  known_.softirq_exit = schema_.EventFieldNumber("softirq_exit");
  known_.sched_blocked_reason = schema_.EventFieldNumber("sched_blocked_reason");
  known_.sys_enter = schema_.EventFieldNumber("sys_enter");
  known_.sys_exit = schema_.EventFieldNumber("sys_exit");
  known_.suspend_resume = schema_.EventFieldNumber("suspend_resume");
  known_.generic = schema_.EventFieldNumber("generic");
  known_.cpu_frequency_limits = schema_.EventFieldNumber("cpu_frequency_limits");
  known_.oom_score_adj_update = schema_.EventFieldNumber("oom_score_adj_update");
  known_.mark_victim = schema_.EventFieldNumber("mark_victim");
  known_.rss_stat = schema_.EventFieldNumber("rss_stat");
  known_.sched_cpu_util_cfs = schema_.EventFieldNumber("sched_cpu_util_cfs");
  known_.kprobe_event = schema_.EventFieldNumber("kprobe_event");
  known_.block_io_start = schema_.EventFieldNumber("block_io_start");
  known_.block_io_done = schema_.EventFieldNumber("block_io_done");
  known_.rss_stat_throttled = schema_.EventFieldNumber("rss_stat_throttled");
  known_.funcgraph_entry = schema_.EventFieldNumber("funcgraph_entry");
  known_.funcgraph_exit = schema_.EventFieldNumber("funcgraph_exit");
  known_.mdss_tracing_mark_write = schema_.EventFieldNumber("tracing_mark_write");
  known_.sde_tracing_mark_write = schema_.EventFieldNumber("sde_tracing_mark_write");
  known_.dpu_tracing_mark_write = schema_.EventFieldNumber("dpu_tracing_mark_write");
  known_.g2d_tracing_mark_write = schema_.EventFieldNumber("g2d_tracing_mark_write");
  known_.mali_tracing_mark_write = schema_.EventFieldNumber("mali_tracing_mark_write");
  known_.ion_stat = schema_.EventFieldNumber("ion_stat");
  known_.ion_heap_grow = schema_.EventFieldNumber("ion_heap_grow");
  known_.ion_heap_shrink = schema_.EventFieldNumber("ion_heap_shrink");
  known_.dma_heap_stat = schema_.EventFieldNumber("dma_heap_stat");
  known_.cma_alloc_start = schema_.EventFieldNumber("cma_alloc_start");
  known_.cma_alloc_info = schema_.EventFieldNumber("cma_alloc_info");
  known_.cma_alloc_finish = schema_.EventFieldNumber("cma_alloc_finish");
  known_.mm_alloc_contig_migrate_range_info = schema_.EventFieldNumber("mm_alloc_contig_migrate_range_info");
  StringPool& s = storage_->strings;
  names_ = {s.Intern("sched_switch"), s.Intern("sched_waking"), s.Intern("prev_comm"),
            s.Intern("prev_pid"),     s.Intern("prev_prio"),    s.Intern("prev_state"),
            s.Intern("next_comm"),    s.Intern("next_pid"),     s.Intern("next_prio"),
            s.Intern("comm"),         s.Intern("pid"),          s.Intern("prio"),
            s.Intern("target_cpu"),   s.Intern("cpuidle"),      s.Intern("cpufreq"),
            s.Intern("cpu_idle"),     s.Intern("cpu_frequency"), s.Intern("swapper"),
            s.Intern("cpu_irq"),      s.Intern("ret"),           s.Intern("handled"),
            s.Intern("unhandled"),    s.Intern("thread_funcgraph"), s.Intern("Funcgraph"),
            s.Intern("cpu_funcgraph")};
}

TraceImporter::~TraceImporter() = default;

uint32_t TraceImporter::MachineOf(uint64_t raw_id) {
  auto it = machine_by_raw_id_.find(raw_id);
  if (it != machine_by_raw_id_.end()) return it->second;
  if (machines_.size() >= kMaxMachines) return kNullU32;
  const auto machine = static_cast<uint32_t>(machines_.size());
  machines_.emplace_back();
  machine_by_raw_id_[raw_id] = machine;
  storage_->machine.raw_id.push_back(static_cast<int64_t>(raw_id));
  storage_->machine.name.push_back(kNullStringId);
  soft_drop_before_ts_.push_back(0);
  return machine;
}

TraceImporter::Findings& TraceImporter::Findings::operator+=(const Findings& o) {
  compact_switch_skipped += o.compact_switch_skipped;
  compact_waking_skipped += o.compact_waking_skipped;
  systrace_parse_failure += o.systrace_parse_failure;
  mismatched_sched_switch_tids += o.mismatched_sched_switch_tids;
  task_state_invalid += o.task_state_invalid;
  return *this;
}

TraceImporter::Findings TraceImporter::Findings::operator-(const Findings& o) const {
  return {compact_switch_skipped - o.compact_switch_skipped, compact_waking_skipped - o.compact_waking_skipped,
          systrace_parse_failure - o.systrace_parse_failure,
          mismatched_sched_switch_tids - o.mismatched_sched_switch_tids, task_state_invalid - o.task_state_invalid};
}

TraceImporter::Findings TraceImporter::CurrentFindings() const {
  return {static_cast<int64_t>(compact_switch_skipped_), static_cast<int64_t>(compact_waking_skipped_),
          atrace_.parse_failures(), sched_.mismatched_sched_switch_tids(), sched_.task_state_invalid()};
}

uint32_t TraceImporter::MachineCpu(uint32_t machine, int64_t cpu) {
  const auto number = static_cast<uint32_t>(cpu);
  return machine == 0 || number >= CpuTable::kMaxCpusPerMachine ? number
                                                                 : machine * CpuTable::kMaxCpusPerMachine + number;
}

bool TraceImporter::ToTraceTime(int64_t* ts) {
  if (machine_ == 0) return true;
  RemoteMachine& m = machines_[machine_];
  std::optional<int64_t> host = m.clock.ToHostTime(*ts);
  if (!host) {
    m.clock_failures++;
    return false;
  }
  *ts = *host;
  return true;
}

TraceImporter::CpuState& TraceImporter::Cpu(uint32_t cpu) {
  if (cpu >= cpus_.size()) cpus_.resize(cpu + 1);
  cpus_[cpu].seen = true;
  return cpus_[cpu];
}

void TraceImporter::HashHead(std::string_view head) {
  for (char c : head.substr(0, 4096)) {
    head_hash_ ^= static_cast<uint8_t>(c);
    head_hash_ *= 0x100000001b3ull;
  }
}

void TraceImporter::OnPacket(std::string_view packet) {
  packets_++;
  health_.AddPacket(packet);
  ProtoWireReader reader(packet);
  WireField f;
  sequence_ = 0;
  int64_t ts = kNullInt;  // The packet's own timestamp (process_tree's).
  std::string_view bundle, process_tree, process_stats, system_info, trace_config, ftrace_stats, trace_stats,
      perf_sample, clock_snapshot, sys_stats, trigger, clone_trigger, cpu_info, service_event, trace_attributes,
      interned_data, battery, initial_display_state, track_event, track_descriptor, packet_defaults,
      thread_descriptor, interrupt_info, remote_clock_sync;
  uint64_t raw_machine_id = 0;
  uint32_t timestamp_clock_id = 0;
  bool first_packet_on_sequence = false;
  SequenceLossTracker::PacketFlags flags;
  while (reader.Next(&f)) {
    const bool varint = f.type == WireType::kVarint;
    switch (f.number) {
      case kPacketSequenceId:
        if (varint) sequence_ = flags.sequence = static_cast<uint32_t>(f.value), flags.has_sequence = true;
        break;
      case kPacketSequenceFlags:
        if (varint) flags.sequence_flags = static_cast<uint32_t>(f.value);
        break;
      case kPacketIncrementalStateCleared:
        if (varint) flags.incremental_state_cleared = f.value != 0;
        break;
      case kPacketPreviousPacketDropped:
        if (varint) flags.previous_packet_dropped = static_cast<uint32_t>(f.value);
        break;
      case kPacketSysStats:
        if (f.type == WireType::kBytes) sys_stats = f.bytes;
        break;
      case kPacketBattery:
        if (f.type == WireType::kBytes) battery = f.bytes;
        break;
      case kPacketInitialDisplayState:
        if (f.type == WireType::kBytes) initial_display_state = f.bytes;
        break;
      case kPacketTrigger:
        if (f.type == WireType::kBytes) trigger = f.bytes;
        break;
      case kPacketCloneSnapshotTrigger:
        if (f.type == WireType::kBytes) clone_trigger = f.bytes;
        break;
      case kPacketCpuInfo:
        if (f.type == WireType::kBytes) cpu_info = f.bytes;
        break;
      case kPacketServiceEvent:
        if (f.type == WireType::kBytes) service_event = f.bytes;
        break;
      case kPacketTraceAttributes:
        if (f.type == WireType::kBytes) trace_attributes = f.bytes;
        break;
      case kPacketInternedData:
        if (f.type == WireType::kBytes) interned_data = f.bytes;
        break;
      case kPacketTimestamp:
        if (f.type == WireType::kVarint) ts = static_cast<int64_t>(f.value);
        break;
      case kPacketTrackEvent:
        if (f.type == WireType::kBytes) track_event = f.bytes;
        break;
      case kPacketTrackDescriptor:
        if (f.type == WireType::kBytes) track_descriptor = f.bytes;
        break;
      case kPacketDefaults:
        if (f.type == WireType::kBytes) packet_defaults = f.bytes;
        break;
      case kPacketThreadDescriptor:
        if (f.type == WireType::kBytes) thread_descriptor = f.bytes;
        break;
      case kPacketTimestampClockId:
        if (varint) timestamp_clock_id = static_cast<uint32_t>(f.value);
        break;
      case kPacketFirstPacketOnSequence:
        if (varint) first_packet_on_sequence = f.value != 0;
        break;
      case kPacketInterruptInfo:
        if (f.type == WireType::kBytes) interrupt_info = f.bytes;
        break;
      case kPacketMachineId:
        if (varint) raw_machine_id = static_cast<uint32_t>(f.value);
        break;
      case kPacketRemoteClockSync:
        if (f.type == WireType::kBytes) remote_clock_sync = f.bytes;
        break;
      case kPacketFtraceEvents:
        if (f.type == WireType::kBytes) bundle = f.bytes;
        break;
      case kPacketProcessTree:
        if (f.type == WireType::kBytes) process_tree = f.bytes;
        break;
      case kPacketProcessStats:
        if (f.type == WireType::kBytes) process_stats = f.bytes;
        break;
      case kPacketSystemInfo:
        if (f.type == WireType::kBytes) system_info = f.bytes;
        break;
      case kPacketTraceConfig:
        if (f.type == WireType::kBytes) trace_config = f.bytes;
        break;
      case kPacketFtraceStats:
        if (f.type == WireType::kBytes) ftrace_stats = f.bytes;
        break;
      case kPacketTraceStats:
        if (f.type == WireType::kBytes) trace_stats = f.bytes;
        break;
      case kPacketPerfSample:
        if (f.type == WireType::kBytes) perf_sample = f.bytes;
        break;
      case kPacketClockSnapshot:
        if (f.type == WireType::kBytes) clock_snapshot = f.bytes;
        break;
      default:
        break;
    }
  }
  if (!reader.ok()) {
    unparsable_packets_++;
    return;
  }
  // A relayed machine's packet (docs/RELAY.md): its tasks are its own, its
  // times are on its own boot clock until converted. What the host's
  // service writes about the session (config, clock snapshots, service
  // events, the session's TraceStats) is the host's; a machine's own
  // TraceStats says what it lost on the way, and is kept for its stats rows.
  machine_ = MachineOf(raw_machine_id);
  if (machine_ == kNullU32) {
    packets_of_too_many_machines_++;
    machine_ = 0;
    return;
  }
  processes_.SetMachine(machine_);
  if (machine_ != 0) {
    if (flags.has_sequence) sequence_machine_[flags.sequence] = machine_;
    if (!remote_clock_sync.empty()) {
      machines_[machine_].clock.AddSync(remote_clock_sync);
      return;
    }
    if (ts != kNullInt && !ToTraceTime(&ts)) return;
    if (!trace_stats.empty()) machines_[machine_].trace_stats = std::string(trace_stats);
    if (!ftrace_stats.empty()) {
      // Its ftrace's own figures: the first start and the last end, as the
      // host's.
      perfetto::protos::FtraceStats stats;
      if (stats.ParseFromArray(ftrace_stats.data(), static_cast<int>(ftrace_stats.size()))) {
        RemoteMachine& m = machines_[machine_];
        if (stats.phase() == perfetto::protos::FtraceStats::START_OF_TRACE && m.ftrace_begin.empty())
          m.ftrace_begin = std::string(ftrace_stats);
        else if (stats.phase() == perfetto::protos::FtraceStats::END_OF_TRACE)
          m.ftrace_end = std::string(ftrace_stats);
      }
    }
    if (!cpu_info.empty()) system_probes_.OnCpuInfo(cpu_info, machine_);
    // Not read for a relayed machine yet (docs/QUERY.md): timestamps inside
    // its track events.
    trace_config = clock_snapshot = service_event = ftrace_stats = trace_stats = cpu_info = {};
  }
  // As upstream, in file order: a TraceStats packet sums what came before it.
  sequence_loss_.OnPacket(flags);
  if (flags.incremental_state_cleared || (flags.sequence_flags & 1)) {
    kernel_symbols_.erase(sequence_);
    track_events_.ClearIncrementalState(sequence_);
  }
  if (first_packet_on_sequence) track_events_.OnFirstPacketOnSequence(sequence_);
  if (!interned_data.empty()) {
    OnInternedData(interned_data);
    track_events_.OnInternedData(sequence_, interned_data);
  }
  if (!packet_defaults.empty()) track_events_.OnPacketDefaults(sequence_, packet_defaults);
  // As upstream: a packet that needs its sequence's incremental state while
  // that is not valid (never set up, or packets lost since) is skipped once
  // its interned data and defaults are taken in; what upstream reads before
  // that check (service events, attributes, clock snapshots, TraceStats)
  // is still read.
  if ((flags.sequence_flags & SequenceLossTracker::kNeedsIncrementalState) && flags.has_sequence &&
      !sequence_loss_.IncrementalStateValid(sequence_)) {
    packets_skipped_incremental_invalid_++;
    if (!service_event.empty()) OnServiceEvent(service_event, ts);
    if (!trace_attributes.empty()) OnTraceAttributes(trace_attributes);
    if (!clock_snapshot.empty()) OnClockSnapshot(clock_snapshot);
    if (!trace_stats.empty()) OnTraceStatsPacket(trace_stats);
    sorter_.Drain();
    return;
  }
  if (!thread_descriptor.empty()) track_events_.OnThreadDescriptor(sequence_, thread_descriptor);
  // Track events and descriptors: tokenized now, in file order (interning
  // and incremental counters are sequence state), parsed in timestamp order.
  auto push_track_event = [&](std::optional<uint32_t> slot, int64_t at) {
    if (!slot) return;
    SortedEvent e;
    e.ts = at;
    e.cpu = kTrackEventStream;
    e.sequence = sequence_;
    e.kind = SortedEvent::kTrackEvent;
    e.machine = static_cast<uint16_t>(machine_);
    e.offset = *slot;
    sorter_.Push(e);
  };
  const int64_t packet_ts = ts == kNullInt ? 0 : ts;
  if (!track_descriptor.empty())
    push_track_event(track_events_.TokenizeDescriptor(sequence_, packet_ts, track_descriptor), packet_ts);
  if (!track_event.empty()) {
    int64_t event_ts = 0;
    std::optional<uint32_t> slot =
        track_events_.TokenizeEvent(sequence_, packet_ts, ts != kNullInt, timestamp_clock_id, track_event, &event_ts);
    push_track_event(slot, event_ts);
  }
  if (!service_event.empty()) OnServiceEvent(service_event, ts);
  if (!trace_attributes.empty()) OnTraceAttributes(trace_attributes);
  if (!cpu_info.empty()) system_probes_.OnCpuInfo(cpu_info);
  if (!interrupt_info.empty()) system_probes_.OnInterruptInfo(interrupt_info);
  if (!bundle.empty()) OnBundle(bundle, packet);
  if (!clock_snapshot.empty()) OnClockSnapshot(clock_snapshot);
  // process_tree and process_stats go in timestamp order with the ftrace
  // events, as Perfetto sorts them: a scan applied before the forks and
  // frees that precede it would make a second process for each task it
  // lists.
  // So do PerfSamples: the tracks they make get their ids in that order.
  // So do sys_stats, battery counters, the initial display state and
  // triggers, whose rows are on the timeline.
  for (auto [bytes, kind] : {std::pair{process_tree, SortedEvent::kProcessTree},
                             std::pair{process_stats, SortedEvent::kProcessStats},
                             std::pair{perf_sample, SortedEvent::kPerfSample},
                             std::pair{sys_stats, SortedEvent::kSysStats},
                             std::pair{trigger, SortedEvent::kTrigger},
                             std::pair{clone_trigger, SortedEvent::kCloneTrigger},
                             std::pair{battery, SortedEvent::kBattery},
                             std::pair{initial_display_state, SortedEvent::kInitialDisplayState}}) {
    if (bytes.empty()) continue;
    if (ts == kNullInt) {
      SortedEvent e;
      e.kind = kind;
      e.ts = kNullInt;
      DispatchPacketEvent(e, bytes);
      continue;
    }
    SortedEvent e;
    e.ts = ts;
    e.cpu = kProcessTreeStream;
    e.sequence = sequence_;
    e.kind = kind;
    e.machine = static_cast<uint16_t>(machine_);
    e.block = sorter_.AddBlock(packet);
    e.offset = static_cast<uint32_t>(bytes.data() - packet.data());
    e.size = static_cast<uint32_t>(bytes.size());
    sorter_.Push(e);
    sorter_.ReleaseBlock(e.block);
  }
  if (!system_info.empty()) OnSystemInfo(system_info);
  if (!trace_config.empty()) OnTraceConfig(trace_config);
  if (!ftrace_stats.empty()) {
    perfetto::protos::FtraceStats stats;
    if (stats.ParseFromArray(ftrace_stats.data(), static_cast<int>(ftrace_stats.size()))) {
      for (int e : stats.ftrace_parse_errors())
        if (e == perfetto::protos::FTRACE_STATUS_ABI_ZERO_DATA_LENGTH) abi_zero_data_length_errors_++;
      if (stats.phase() == perfetto::protos::FtraceStats::START_OF_TRACE && stats.preserve_ftrace_buffer())
        preserve_ftrace_buffer_ = true;
      if (stats.phase() == perfetto::protos::FtraceStats::START_OF_TRACE && !stats_->has_ftrace_begin) {
        stats_->ftrace_begin = stats;
        stats_->has_ftrace_begin = true;
      } else if (stats.phase() == perfetto::protos::FtraceStats::END_OF_TRACE) {
        stats_->ftrace_end = stats;
        stats_->has_ftrace_end = true;
      }
    }
  }
  if (!trace_stats.empty()) OnTraceStatsPacket(trace_stats);
  sorter_.Drain();
}

void TraceImporter::OnTraceStatsPacket(std::string_view bytes) {
  stats_->has_trace_stats = stats_->trace_stats.ParseFromArray(bytes.data(), static_cast<int>(bytes.size()));
  if (!stats_->has_trace_stats) return;
  std::vector<std::pair<uint64_t, uint32_t>> writers;
  for (const auto& w : stats_->trace_stats.writer_stats()) writers.emplace_back(w.sequence_id(), w.buffer());
  stats_->sequence_loss = sequence_loss_.PerBuffer(writers);
}

// sluice writes PerfSample only to say that a CPU's BPF ring lost records
// (user/probes/bpf/bpf_lost_records.h); Perfetto adds those up per CPU as
// perf_cpu_lost_records, and so does this.
void TraceImporter::OnPerfSample(std::string_view bytes) {
  uint64_t cpu = 0, lost = 0;
  ProtoWireReader reader(bytes);
  WireField f;
  while (reader.Next(&f)) {
    if (f.type != WireType::kVarint) continue;
    if (f.number == kPerfSampleCpu) cpu = f.value;
    if (f.number == kPerfSampleKernelRecordsLost) lost = f.value;
  }
  if (!reader.ok() || cpu >= SchedTracker::kMaxHostCpus) return;
  tracks_.PerfCpuCounterTrack(static_cast<uint32_t>(cpu));
  if (lost > 0) kernel_records_lost_[static_cast<uint32_t>(cpu)] += lost;
}

void TraceImporter::OnBundle(std::string_view bundle, std::string_view packet) {
  uint32_t cpu = 0;
  bool lost_events = false;
  std::string_view compact;
  int64_t data_start = kNullInt;
  ProtoWireReader reader(bundle);
  WireField f;
  // The cpu field may follow the events on the wire: find it first.
  while (reader.Next(&f)) {
    if (f.number == kBundleCpu && f.type == WireType::kVarint)
      cpu = static_cast<uint32_t>(std::min<uint64_t>(f.value, UINT32_MAX));
    if (f.number == kBundleLostEvents && f.type == WireType::kVarint) lost_events = f.value != 0;
    if (f.number == kBundleCompactSched && f.type == WireType::kBytes) compact = f.bytes;
    if ((f.number == kBundlePreviousBundleEndTimestamp || f.number == kBundleLastReadEventTimestamp) &&
        f.type == WireType::kVarint)
      data_start = static_cast<int64_t>(f.value);
  }
  if (!reader.ok()) {
    unparsable_packets_++;
    return;
  }
  // Per-CPU state is indexed by cpu: a corrupt number must not size it.
  // A relayed machine's CPUs follow the host's, kMaxCpusPerMachine apart.
  if (cpu >= (machine_ == 0 ? SchedTracker::kMaxHostCpus : CpuTable::kMaxCpusPerMachine)) {
    cpu_out_of_range_bundles_++;
    return;
  }
  cpu += machine_ * CpuTable::kMaxCpusPerMachine;
  if (data_start != kNullInt && !ToTraceTime(&data_start)) return;
  if (lost_events) cpus_with_lost_events_.insert(cpu);
  // Perfetto's soft drop: a CPU's first bundle says from when its stream is
  // whole (the ring buffer overwrote what came before); before the latest of
  // these, events only go to ftrace_event (see DispatchEvent).
  if (cpu >= first_bundle_seen_.size()) first_bundle_seen_.resize(cpu + 1, false);
  if (!first_bundle_seen_[cpu]) {
    first_bundle_seen_[cpu] = true;
    if (data_start != kNullInt)
      soft_drop_before_ts_[machine_] = std::max(soft_drop_before_ts_[machine_], data_start);
  }
  uint32_t block = UINT32_MAX;
  ProtoWireReader events(bundle);
  while (events.Next(&f)) {
    if (f.number != kBundleEvent || f.type != WireType::kBytes) continue;
    FtraceEventView view;
    if (!ParseFtraceEvent(f.bytes, &view)) {
      unparsable_events_++;
      continue;
    }
    if (!view.has_timestamp) {
      events_without_timestamp_++;
      continue;
    }
    SortedEvent e;
    e.ts = static_cast<int64_t>(view.timestamp);
    if (!ToTraceTime(&e.ts)) continue;
    if (block == UINT32_MAX) block = sorter_.AddBlock(packet);
    e.cpu = cpu;
    e.sequence = sequence_;
    e.kind = SortedEvent::kFtrace;
    e.machine = static_cast<uint16_t>(machine_);
    // The symbol a kernel address's iid names now: a later packet of the
    // sequence may reuse the iid for another symbol.
    if (const uint32_t symbol_field = KernelSymbolField(view.event_field))
      e.comm = KernelSymbolOf(view.payload, symbol_field);
    e.block = block;
    e.offset = static_cast<uint32_t>(f.bytes.data() - packet.data());
    e.size = static_cast<uint32_t>(f.bytes.size());
    sorter_.Push(e);
  }
  if (!compact.empty()) OnCompactSched(compact, cpu);
  if (block != UINT32_MAX) sorter_.ReleaseBlock(block);  // The bundle's own reference.
}

void TraceImporter::OnCompactSched(std::string_view compact, uint32_t cpu) {
  // Columns of the compact encoding, reused across bundles.
  static thread_local std::vector<uint64_t> cols[kCompactFieldCount];
  for (auto& c : cols) c.clear();
  intern_table_.clear();
  ProtoWireReader reader(compact);
  WireField f;
  bool ok = true;
  while (reader.Next(&f)) {
    if (f.number == kInternTable) {
      if (f.type == WireType::kBytes) intern_table_.push_back(storage_->strings.Intern(f.bytes));
    } else if (f.number < kCompactFieldCount) {
      ok = AppendVarints(f, &cols[f.number]) && ok;
    }
  }
  if (!reader.ok() || !ok) {
    unparsable_events_++;
    return;
  }
  auto comm = [this](uint64_t index) {
    return index < intern_table_.size() ? intern_table_[index] : kNullStringId;
  };
  auto at = [](const std::vector<uint64_t>& col, size_t i) { return i < col.size() ? col[i] : 0; };
  // Switches and wakings are two timestamp-ordered columns: push them
  // merged, so the stream's queue only ever appends.
  const auto& switch_ts = cols[kSwitchTimestamp];
  const auto& waking_ts = cols[kWakingTimestamp];
  uint64_t next_switch_ts = switch_ts.empty() ? 0 : switch_ts[0];
  uint64_t next_waking_ts = waking_ts.empty() ? 0 : waking_ts[0];
  size_t si = 0, wi = 0;
  while (si < switch_ts.size() || wi < waking_ts.size()) {
    bool take_switch = wi == waking_ts.size() || (si < switch_ts.size() && next_switch_ts <= next_waking_ts);
    SortedEvent e;
    e.cpu = cpu;
    e.sequence = sequence_;
    e.machine = static_cast<uint16_t>(machine_);
    if (take_switch) {
      e.ts = static_cast<int64_t>(next_switch_ts);
      e.kind = SortedEvent::kCompactSwitch;
      e.prev_state = static_cast<int64_t>(at(cols[kSwitchPrevState], si));
      e.pid = static_cast<int32_t>(at(cols[kSwitchNextPid], si));
      e.prio = static_cast<int32_t>(at(cols[kSwitchNextPrio], si));
      e.comm = comm(at(cols[kSwitchNextCommIndex], si));
      // Timestamps are deltas from the previous one; the first from 0.
      if (++si < switch_ts.size()) next_switch_ts += switch_ts[si];
    } else {
      e.ts = static_cast<int64_t>(next_waking_ts);
      e.kind = SortedEvent::kCompactWaking;
      e.pid = static_cast<int32_t>(at(cols[kWakingPid], wi));
      e.target_cpu = static_cast<int32_t>(at(cols[kWakingTargetCpu], wi));
      e.prio = static_cast<int32_t>(at(cols[kWakingPrio], wi));
      e.comm = comm(at(cols[kWakingCommIndex], wi));
      e.common_flags = static_cast<uint32_t>(at(cols[kWakingCommonFlags], wi));
      if (++wi < waking_ts.size()) next_waking_ts += waking_ts[wi];
    }
    if (ToTraceTime(&e.ts)) sorter_.Push(e);
  }
}

void TraceImporter::DispatchPacketEvent(const SortedEvent& event, std::string_view bytes) {
  switch (event.kind) {
    case SortedEvent::kProcessTree: OnProcessTree(bytes, event.ts); break;
    case SortedEvent::kProcessStats: OnProcessStats(bytes, event.ts); break;
    case SortedEvent::kPerfSample: OnPerfSample(bytes); break;
    case SortedEvent::kSysStats: system_probes_.OnSysStats(bytes, event.ts == kNullInt ? 0 : event.ts); break;
    case SortedEvent::kBattery: system_probes_.OnBattery(bytes, event.ts == kNullInt ? 0 : event.ts); break;
    case SortedEvent::kInitialDisplayState:
      system_probes_.OnInitialDisplayState(bytes, event.ts == kNullInt ? 0 : event.ts);
      break;
    case SortedEvent::kTrigger:
    case SortedEvent::kCloneTrigger:
      OnTrigger(bytes, event.ts == kNullInt ? 0 : event.ts, event.kind == SortedEvent::kCloneTrigger);
      break;
    case SortedEvent::kTrackEvent: track_events_.Parse(event.offset); break;
    case SortedEvent::kFtrace:
    case SortedEvent::kCompactSwitch:
    case SortedEvent::kCompactWaking: break;  // Not packets: DispatchEvent's.
  }
}

void TraceImporter::DispatchEvent(const SortedEvent& event, std::string_view bytes) {
  // The event's machine's tasks; the packet being read may be another's.
  const uint32_t packet_machine = processes_.machine();
  processes_.SetMachine(event.machine);
  // What a relayed machine's event finds is that machine's (the host's
  // stay in the totals: no cost on its path).
  const Findings before = event.machine != 0 ? CurrentFindings() : Findings();
  switch (event.kind) {
    case SortedEvent::kFtrace:
    case SortedEvent::kCompactSwitch:
    case SortedEvent::kCompactWaking:
      Cpu(event.cpu);
      if (event.kind == SortedEvent::kFtrace) DispatchFtraceEvent(event, bytes);
      else if (event.kind == SortedEvent::kCompactSwitch) DispatchCompactSwitch(event);
      else DispatchCompactWaking(event);
      break;
    default: DispatchPacketEvent(event, bytes); break;
  }
  if (event.machine != 0) machines_[event.machine].findings += CurrentFindings() - before;
  processes_.SetMachine(packet_machine);
}

void TraceImporter::AddFtraceEventRow(int64_t ts, StringId name, uint32_t cpu, uint32_t utid,
                                      std::vector<Arg>* args, bool sorted) {
  AddFtraceEventRow(ts, name, cpu, utid, storage_->args.Add(args, sorted));
}

void TraceImporter::AddFtraceEventRow(int64_t ts, StringId name, uint32_t cpu, uint32_t utid,
                                      uint32_t arg_set_id) {
  // trace_bounds cover the rows, as Perfetto's do: a skipped event does not
  // move them.
  storage_->ExtendBounds(ts);
  FtraceEventTable& t = storage_->ftrace_event;
  t.ts.push_back(ts);
  t.name.push_back(name);
  t.cpu.push_back(cpu);
  t.utid.push_back(utid);
  t.arg_set_id.push_back(arg_set_id);
}

void TraceImporter::OnFrequencyLimits(int64_t ts, uint32_t cpu, int64_t min_freq, int64_t max_freq) {
  StringPool& s = storage_->strings;
  const std::string prefix = "Cpu " + std::to_string(cpu % CpuTable::kMaxCpusPerMachine);
  for (auto [type, suffix, value] : {std::tuple{"cpu_max_frequency_limit", " Max Freq Limit", max_freq},
                                     std::tuple{"cpu_min_frequency_limit", " Min Freq Limit", min_freq}}) {
    storage_->counter.Add(ts, tracks_.CpuCounterTrack(s.Intern(type), s.Intern(prefix + suffix), cpu),
                          static_cast<double>(static_cast<uint32_t>(value)));
  }
}

void TraceImporter::OnOomScoreAdjUpdate(int64_t ts, int64_t pid, int64_t oom_score_adj) {
  // The row now, with arg utid; its track at the end, as upstream: the
  // thread's process may become known later in the trace, and the track is
  // the process's (or, if none, the thread's) as it is then.
  const uint32_t utid = processes_.GetOrCreateThread(pid);
  std::vector<Arg> args = {{storage_->strings.Intern("utid"), ArgType::kUint, utid, 0}};
  const uint32_t row =
      storage_->counter.Add(ts, kNullU32, static_cast<double>(oom_score_adj), storage_->args.Add(&args));
  pending_process_counters_.push_back({row, utid, kNullStringId});
}

void TraceImporter::OnRssStat(int64_t ts, int64_t pid, const std::vector<EventField>& fields, bool throttled) {
  // rss_stat: member 1, size 2, curr 3, mm_id 4 (kmem.proto);
  // rss_stat_throttled: curr 1, member 2, mm_id 3, size 4 (synthetic.proto),
  // where curr and mm_id are always taken, as upstream.
  const uint32_t member_n = throttled ? 2 : 1, size_n = throttled ? 4 : 2, curr_n = throttled ? 1 : 3,
                 mm_n = throttled ? 3 : 4;
  std::optional<bool> curr;
  std::optional<int64_t> mm_id;
  if (throttled || FindField(fields, curr_n)) curr = IntField(fields, curr_n) != 0;
  if (throttled || FindField(fields, mm_n)) mm_id = IntField(fields, mm_n);
  const auto sample = rss_stat_.OnRssStat(pid, static_cast<int32_t>(IntField(fields, member_n)),
                                          IntField(fields, size_n), curr, mm_id);
  if (!sample) return;
  std::vector<Arg> args = {{storage_->strings.Intern("utid"), ArgType::kUint, sample->utid, 0}};
  const uint32_t row = storage_->counter.Add(ts, kNullU32, static_cast<double>(IntField(fields, size_n)),
                                             storage_->args.Add(&args));
  pending_process_counters_.push_back({row, sample->utid, storage_->strings.Intern(sample->memory_key)});
}

void TraceImporter::AddPendingProcessCounters() {
  StringPool& s = storage_->strings;
  const StringId oom = s.Intern("oom_score_adj"), oom_fallback = s.Intern("oom_score_adj_thread_fallback");
  const StringId memory = s.Intern("process_memory"), memory_fallback = s.Intern("process_memory_thread_fallback");
  const StringId memory_key = s.Intern("process_memory_key");
  for (const PendingCounter& p : pending_process_counters_) {
    const uint32_t upid = storage_->thread.upid[p.utid];
    uint32_t track;
    if (p.memory_key == kNullStringId) {
      track = upid != kNullU32 ? tracks_.SingletonTrack(oom, oom, /*counter=*/true, upid)
                               : tracks_.ThreadCounterTrack(oom_fallback, oom, p.utid);
    } else {
      const StringId name = s.Intern("mem." + std::string(s.Get(p.memory_key)));
      track = upid != kNullU32
                  ? tracks_.SingletonTrack(memory, name, /*counter=*/true, upid, memory_key, p.memory_key)
                  : tracks_.ThreadCounterTrack(memory_fallback, name, p.utid, memory_key, p.memory_key);
    }
    storage_->counter.track_id[p.row] = track;
  }
  pending_process_counters_.clear();
}

void TraceImporter::AddGenericEventRow(int64_t ts, uint32_t cpu, uint32_t utid, std::string_view payload) {
  // GenericFtraceEvent: event_name 1, field 2 (Field: name 1, str_value 3,
  // int_value 4, uint_value 5), as generic.proto. Upstream stores a
  // uint_value as an int arg; so does this.
  StringPool& s = storage_->strings;
  StringId name = kNullStringId;
  args_.clear();
  ProtoWireReader reader(payload);
  WireField f;
  while (reader.Next(&f)) {
    if (f.number == 1 && f.type == WireType::kBytes) {
      name = s.Intern(f.bytes);
    } else if (f.number == 2 && f.type == WireType::kBytes) {
      ProtoWireReader field(f.bytes);
      WireField v;
      Arg arg;
      bool has_value = false;
      while (field.Next(&v)) {
        if (v.number == 1 && v.type == WireType::kBytes) {
          arg.key = s.Intern(v.bytes);
        } else if (v.number == 3 && v.type == WireType::kBytes) {
          arg.type = ArgType::kString;
          arg.int_value = s.Intern(v.bytes);
          has_value = true;
        } else if ((v.number == 4 || v.number == 5) && v.type == WireType::kVarint) {
          arg.type = ArgType::kInt;
          arg.int_value = static_cast<int64_t>(v.value);
          has_value = true;
        }
      }
      if (field.ok() && has_value && arg.key != kNullStringId) args_.push_back(arg);
    }
  }
  if (!reader.ok()) unparsable_events_++;
  AddFtraceEventRow(ts, name, cpu, utid, &args_, /*sorted=*/false);
}

void TraceImporter::OnIrqEntry(int64_t ts, uint32_t cpu, std::string_view name) {
  StringPool& s = storage_->strings;
  uint32_t track = tracks_.CpuSliceTrack(names_.cpu_irq_type, s.Intern("Irq Cpu " + std::to_string(cpu % CpuTable::kMaxCpusPerMachine)), cpu);
  slices_.Begin(ts, track, s.Intern("IRQ (" + std::string(name) + ")"), {}, s.Intern("irq"));
}

void TraceImporter::OnIrqExit(int64_t ts, uint32_t cpu, int64_t ret) {
  StringPool& s = storage_->strings;
  uint32_t track = tracks_.CpuSliceTrack(names_.cpu_irq_type, s.Intern("Irq Cpu " + std::to_string(cpu % CpuTable::kMaxCpusPerMachine)), cpu);
  slices_.End(ts, track, {{names_.ret, ArgType::kString, ret == 1 ? names_.handled : names_.unhandled, 0}});
}

void TraceImporter::OnSoftirq(int64_t ts, uint32_t cpu, int64_t vec, bool entry) {
  // The kernel's softirq_to_name[], by vector.
  static constexpr const char* kVectorNames[] = {"HI",    "TIMER",    "NET_TX", "NET_RX",  "BLOCK",
                                                 "IRQ_POLL", "TASKLET", "SCHED", "HRTIMER", "RCU"};
  if (vec < 0 || vec >= static_cast<int64_t>(std::size(kVectorNames))) return;
  StringPool& s = storage_->strings;
  uint32_t track = tracks_.CpuSliceTrack(s.Intern("cpu_softirq"), s.Intern("SoftIrq Cpu " + std::to_string(cpu % CpuTable::kMaxCpusPerMachine)), cpu);
  if (entry)
    slices_.Begin(ts, track, s.Intern(kVectorNames[vec]), {{s.Intern("vec"), ArgType::kInt, vec, 0}}, s.Intern("irq"));
  else
    slices_.End(ts, track);
}

void TraceImporter::AddCounter(int64_t ts, StringId type, uint32_t cpu, double value) {
  StringId name = type == names_.cpu_idle_type ? names_.cpu_idle_track : names_.cpu_frequency_track;
  storage_->counter.Add(ts, tracks_.CpuCounterTrack(type, name, cpu), value);
}

void TraceImporter::DispatchFtraceEvent(const SortedEvent& event, std::string_view bytes) {
  FtraceEventView view;
  ParseFtraceEvent(bytes, &view);  // Parsed once before: cannot fail now.
  const uint32_t kind = view.event_field;
  StringId name = schema_.EventName(kind);
  if (!schema_.DecodeFields(kind, view.payload, &fields_)) unparsable_events_++;
  const int64_t ts = event.ts;
  const auto& fs = fields_;
  if (DroppedBeforeTracingStart(ts)) return;
  if (ts < soft_drop_before_ts_[event.machine]) {
    // Before every CPU's stream is whole: ftrace_event only, and no row at
    // all for sched_switch (Perfetto makes that row in its sched path).
    if (kind == known_.sched_switch) return;
    uint32_t utid = processes_.GetOrCreateThread(view.pid);
    args_.clear();
    for (const EventField& f : fs) args_.push_back(f.arg);
    AddFtraceEventRow(ts, name, event.cpu, utid, &args_, schema_.SortByKey(kind, fields_, &args_));
    return;
  }
  if (kind == known_.generic) {
    AddGenericEventRow(ts, event.cpu, processes_.GetOrCreateThread(view.pid), view.payload);
    return;
  }
  // The row's thread: Perfetto takes it (creating it if new) before the
  // event's own handler runs, except for sched_switch, whose row belongs to
  // the switch's prev task (SchedTracker::OnSwitch's answer).
  uint32_t utid = kind == known_.sched_switch ? kNullU32 : processes_.GetOrCreateThread(view.pid);
  if (kind == known_.sched_switch) {
    auto comm_of = [&fs](uint32_t n) {
      const EventField* f = FindField(fs, n);
      return f && f->arg.type == ArgType::kString ? static_cast<StringId>(f->arg.int_value) : kNullStringId;
    };
    // sched_switch: prev_comm 1, prev_pid 2, prev_prio 3, prev_state 4,
    // next_comm 5, next_pid 6, next_prio 7 (sched.proto).
    StringPool& s = storage_->strings;
    StringId prev_comm = comm_of(1), next_comm = comm_of(5);
    utid = sched_.OnSwitch(ts, event.cpu, IntField(fs, 2), s.Get(prev_comm), static_cast<int32_t>(IntField(fs, 3)),
                           IntField(fs, 4), IntField(fs, 6), s.Get(next_comm), static_cast<int32_t>(IntField(fs, 7)));
    if (utid == kNullU32) utid = processes_.GetOrCreateThread(view.pid);  // CPU out of range
    CpuState& cpu = Cpu(event.cpu);
    cpu.known = true;
    cpu.pid = static_cast<int32_t>(IntField(fs, 6));
    cpu.prio = static_cast<int32_t>(IntField(fs, 7));
    cpu.comm = next_comm;
  } else if (kind == known_.sched_waking || kind == known_.sched_wakeup_new) {
    // comm 1, pid 2, prio 3, success 4, target_cpu 5.
    const EventField* comm = FindField(fs, 1);
    std::string_view comm_text =
        comm && comm->arg.type == ArgType::kString ? storage_->strings.Get(static_cast<StringId>(comm->arg.int_value)) : "";
    if (kind == known_.sched_waking)
      sched_.OnWaking(ts, view.pid, IntField(fs, 2), comm_text);
    else
      sched_.OnWakeupNew(ts, view.pid, IntField(fs, 2));
  } else if (kind == known_.cpu_idle || kind == known_.cpu_frequency) {
    // state 1, cpu_id 2 (power.proto).
    AddCounter(ts, kind == known_.cpu_idle ? names_.cpu_idle_type : names_.cpu_frequency_type,
               MachineCpu(event.machine, IntField(fs, 2)), static_cast<double>(static_cast<uint32_t>(IntField(fs, 1))));
  } else {
    auto text = [&](uint32_t n) -> std::string_view {
      const EventField* f = FindField(fs, n);
      return f && f->arg.type == ArgType::kString ? storage_->strings.Get(static_cast<StringId>(f->arg.int_value)) : "";
    };
    if (kind == known_.task_newtask) {
      // pid 1, comm 2, clone_flags 3 (task.proto); the parent is the
      // event's own task.
      sched_.OnTaskNewtask(ts, view.pid, IntField(fs, 1), text(2), static_cast<uint64_t>(IntField(fs, 3)));
    } else if (kind == known_.task_rename) {
      // pid 1, oldcomm 2, newcomm 3.
      processes_.OnTaskRename(IntField(fs, 1), text(3));
    } else if (kind == known_.process_fork) {
      // parent_comm 1, parent_pid 2, child_comm 3, child_pid 4.
      processes_.OnProcessFork(ts, IntField(fs, 2), IntField(fs, 4), text(3));
    } else if (kind == known_.process_exec) {
      // filename 1, pid 2, old_pid 3.
      processes_.OnProcessExec(ts, IntField(fs, 2), text(1));
    } else if (kind == known_.process_exit) {
      // comm 1, pid 2.
      processes_.OnProcessExit(ts, IntField(fs, 2), text(1));
    } else if (kind == known_.process_free) {
      processes_.OnProcessFree(ts, IntField(fs, 2));
    } else if (kind == known_.print) {
      // ip 1, buf 2 (ftrace.proto): atrace lines become slices and counters.
      syscalls_.OnPrint(ts, view.pid);  // The write carrying it ends here.
      atrace_.OnPrint(ts, view.pid, text(2));
    } else if (kind == known_.sched_blocked_reason) {
      // pid 1, caller 2, io_wait 3 (sched.proto); an absent io_wait is 0.
      // caller is an interned kernel symbol's iid when the recorder
      // symbolized it (resolved when the event was read: OnBundle).
      sched_.OnBlockedReason(IntField(fs, 1), IntField(fs, 3) != 0, event.comm);
    } else if (kind == known_.sys_enter) {
      // id 1, args 2 (repeated; raw_syscalls.proto): every element, which
      // the decoded fields keep only the last of.
      syscall_args_.clear();
      ProtoWireReader payload(view.payload);
      WireField a;
      while (payload.Next(&a)) {
        if (a.number == 2 && a.type == WireType::kVarint) syscall_args_.push_back(a.value);
      }
      syscalls_.OnEnter(ts, view.pid, IntField(fs, 1), syscall_args_);
    } else if (kind == known_.sys_exit) {
      // id 1, ret 2.
      syscalls_.OnExit(ts, view.pid, IntField(fs, 1), FindField(fs, 2) != nullptr, IntField(fs, 2));
    } else if (kind == known_.cpu_frequency_limits) {
      // min_freq 1, max_freq 2, cpu_id 3 (power.proto).
      OnFrequencyLimits(ts, MachineCpu(event.machine, IntField(fs, 3)), IntField(fs, 1), IntField(fs, 2));
    } else if (kind == known_.oom_score_adj_update) {
      // comm 1, oom_score_adj 2, pid 3 (oom.proto).
      OnOomScoreAdjUpdate(ts, IntField(fs, 3), static_cast<int32_t>(IntField(fs, 2)));
    } else if (kind == known_.rss_stat || kind == known_.rss_stat_throttled) {
      OnRssStat(ts, view.pid, fs, kind == known_.rss_stat_throttled);
    } else if (kind == known_.block_io_start || kind == known_.block_io_done) {
      // dev 1, sector 2 (block.proto): a "block_io" slice per request on
      // the device's track. As upstream, a done ends the device's newest
      // open request whatever its sector; one with none open is ignored.
      StringPool& s = storage_->strings;
      const uint32_t track = tracks_.IntDimensionTrack(s.Intern("block_io"), kNullStringId, /*counter=*/true,
                                                       s.Intern("block_device"), IntField(fs, 1));
      std::vector<Arg> sector = {{s.Intern("sector"), ArgType::kUint, IntField(fs, 2), 0}};
      if (kind == known_.block_io_start) slices_.Begin(ts, track, s.Intern("block_io"), std::move(sector));
      else slices_.EndNamed(ts, track, s.Intern("block_io"), std::move(sector), SliceTracker::EndArgs::kReplace);
    } else if (kind == known_.kprobe_event) {
      // name 1, type 2 (generic.proto): BEGIN 1, END 2, INSTANT 3 on the
      // thread's track; the thread is made even for an unknown type.
      const uint32_t track = tracks_.ThreadTrack(utid);
      const StringId probe = storage_->strings.Intern(text(1));
      switch (IntField(fs, 2)) {
        case 1: slices_.Begin(ts, track, probe); break;
        case 2: slices_.EndNamed(ts, track, probe); break;
        case 3: slices_.Instant(ts, track, probe); break;
        default: break;
      }
    } else if (kind == known_.sched_cpu_util_cfs) {
      // capacity 2, cpu 4, cpu_util 6, nr_running 11 (sched.proto), on the
      // event's own cpu, in upstream's order.
      StringPool& s = storage_->strings;
      const uint32_t cpu = MachineCpu(event.machine, IntField(fs, 4));
      const std::string prefix = "Cpu " + std::to_string(cpu % CpuTable::kMaxCpusPerMachine);
      for (auto [type, suffix, field] : {std::tuple{"cpu_utilization", " Util", 6u},
                                         std::tuple{"cpu_capacity", " Cap", 2u},
                                         std::tuple{"cpu_nr_running", " Nr Running", 11u}}) {
        storage_->counter.Add(ts, tracks_.CpuCounterTrack(s.Intern(type), s.Intern(prefix + suffix), cpu),
                              static_cast<double>(IntField(fs, field)));
      }
    } else if (kind == known_.funcgraph_entry || kind == known_.funcgraph_exit) {
      // entry: depth 1, func 2; exit: func 3 (ftrace.proto).
      const bool entry = kind == known_.funcgraph_entry;
      OnFuncgraph(ts, event.cpu, view.pid, event.comm, static_cast<uint64_t>(IntField(fs, entry ? 2 : 3)), entry);
    } else if (DispatchAndroidKernelEvent(kind, ts, view.pid, utid, fs)) {
    } else if (kind == known_.mark_victim) {
      // pid 1: the OOM killer's victim, an instant on its thread's track.
      const uint32_t victim = processes_.GetOrCreateThread(IntField(fs, 1));
      slices_.Instant(ts, tracks_.ThreadTrack(victim), storage_->strings.Intern("mem.oom_kill"));
    } else if (kind == known_.suspend_resume) {
      // action 1, val 2, start 3 (power.proto).
      suspend_resume_.OnEvent(ts, event.cpu, utid, text(1), static_cast<int32_t>(IntField(fs, 2)),
                              IntField(fs, 3) != 0);
    } else if (kind == known_.irq_handler_entry) {
      // irq 1, name 2, handler 3 (irq.proto).
      OnIrqEntry(ts, event.cpu, text(2));
    } else if (kind == known_.irq_handler_exit) {
      // irq 1, ret 2.
      OnIrqExit(ts, event.cpu, IntField(fs, 2));
    } else if (kind == known_.softirq_entry || kind == known_.softirq_exit) {
      // vec 1.
      OnSoftirq(ts, event.cpu, IntField(fs, 1), kind == known_.softirq_entry);
    }
  }
  if (event.comm != kNullStringId) {
    // A kernel address the trace symbolized is its symbol in the args too.
    if (const uint32_t symbol_field = KernelSymbolField(kind)) {
      for (EventField& f : fields_)
        if (f.number == symbol_field) f.arg.type = ArgType::kString, f.arg.int_value = event.comm;
    }
  }
  args_.clear();
  for (const EventField& f : fs) args_.push_back(f.arg);
  AddFtraceEventRow(ts, name, event.cpu, utid, &args_, schema_.SortByKey(kind, fields_, &args_));
}

void TraceImporter::OnFuncgraph(int64_t ts, uint32_t cpu, uint32_t pid, StringId symbol, uint64_t func,
                                bool entry) {
  StringPool& s = storage_->strings;
  if (symbol == kNullStringId) {
    // Unsymbolized: the address in hex, as upstream names it ("0" for 0).
    char hex[24];
    snprintf(hex, sizeof(hex), "%#" PRIx64, func);
    symbol = s.Intern(hex);
  }
  // The idle tasks of all CPUs share pid 0, and run at once: a track per
  // CPU for them, as upstream.
  uint32_t track;
  if (pid != 0) {
    track = tracks_.ThreadSliceTrack(names_.thread_funcgraph_type, names_.funcgraph_track,
                                     processes_.GetOrCreateThread(pid));
  } else {
    if (cpu >= cpu_funcgraph_tracks_.size()) cpu_funcgraph_tracks_.resize(cpu + 1, kNullU32);
    if (cpu_funcgraph_tracks_[cpu] == kNullU32)
      cpu_funcgraph_tracks_[cpu] = tracks_.CpuSliceTrack(
          names_.cpu_funcgraph_type, s.Intern("swapper" + std::to_string(cpu % CpuTable::kMaxCpusPerMachine) + " -funcgraph"), cpu);
    track = cpu_funcgraph_tracks_[cpu];
  }
  if (entry)
    slices_.Begin(ts, track, symbol);
  else
    slices_.EndNamed(ts, track, symbol);
}

bool TraceImporter::DispatchAndroidKernelEvent(uint32_t kind, int64_t ts, uint32_t pid, uint32_t utid,
                                               const std::vector<EventField>& fs) {
  auto text = [&](uint32_t n) -> std::string_view {
    const EventField* f = FindField(fs, n);
    return f && f->arg.type == ArgType::kString ? storage_->strings.Get(static_cast<StringId>(f->arg.int_value)) : "";
  };
  auto has = [&](uint32_t n) { return FindField(fs, n) != nullptr; };
  auto phase = [&](uint32_t n) { return static_cast<char>(IntField(fs, n)); };
  // Each driver's point needs its phase (or begin flag): without it, a
  // parse failure, as upstream counts it.
  if (kind == known_.mdss_tracing_mark_write) {
    // pid 1, trace_name 2, trace_begin 3 (the payload's pid is the tgid).
    if (!has(3)) atrace_.CountParseFailure();
    else atrace_.OnKernelMark(ts, pid, 0, IntField(fs, 3) != 0, text(2), static_cast<uint32_t>(IntField(fs, 1)), 0);
  } else if (kind == known_.sde_tracing_mark_write) {
    // pid 1, trace_name 2, trace_type 3, value 4, trace_begin 5.
    if (!has(3) && !has(5)) atrace_.CountParseFailure();
    else atrace_.OnKernelMark(ts, pid, phase(3), IntField(fs, 5) != 0, text(2), static_cast<uint32_t>(IntField(fs, 1)),
                              IntField(fs, 4));
  } else if (kind == known_.dpu_tracing_mark_write) {
    // pid 1, name 4, type 5, value 6. Some drivers put another process's
    // pid in slice points: only counters keep it (upstream's workaround).
    if (IntField(fs, 5) == 0) atrace_.CountParseFailure();
    else atrace_.OnKernelMark(ts, pid, phase(5), false, text(4),
                              phase(5) == 'C' ? static_cast<uint32_t>(IntField(fs, 1)) : 0, IntField(fs, 6));
  } else if (kind == known_.g2d_tracing_mark_write) {
    // pid 1, name 4, type 5, value 6.
    if (IntField(fs, 5) == 0) atrace_.CountParseFailure();
    else atrace_.OnKernelMark(ts, pid, phase(5), false, text(4), static_cast<uint32_t>(IntField(fs, 1)), IntField(fs, 6));
  } else if (kind == known_.mali_tracing_mark_write) {
    // name 1, pid 2, type 3, value 4.
    if (IntField(fs, 3) == 0) atrace_.CountParseFailure();
    else atrace_.OnKernelMark(ts, pid, phase(3), false, text(1), static_cast<uint32_t>(IntField(fs, 2)), IntField(fs, 4));
  } else if (kind == known_.ion_stat) {
    // buffer_id 1, len 2, total_allocated 3.
    android_memory_.OnIonStat(ts, utid, IntField(fs, 1), IntField(fs, 2), IntField(fs, 3));
  } else if (kind == known_.ion_heap_grow || kind == known_.ion_heap_shrink) {
    // heap_name 1, len 2, total_allocated 3.
    const int64_t len = IntField(fs, 2);
    android_memory_.OnIonHeapChange(ts, utid, has(1) ? text(1) : "unknown",
                                    kind == known_.ion_heap_grow ? len : -len, IntField(fs, 3));
  } else if (kind == known_.dma_heap_stat) {
    // inode 1, len 2, total_allocated 3.
    android_memory_.OnDmaHeapStat(ts, utid, IntField(fs, 1), IntField(fs, 2), IntField(fs, 3));
  } else if (kind == known_.cma_alloc_start) {
    android_memory_.OnCmaAllocStart(ts, utid);
  } else if (kind == known_.mm_alloc_contig_migrate_range_info) {
    // nr_migrated 3, nr_reclaimed 4, nr_mapped 5.
    android_memory_.OnMigrateRangeInfo(utid, IntField(fs, 3), IntField(fs, 4), IntField(fs, 5));
  } else if (kind == known_.cma_alloc_info) {
    // count 2, err_iso 3, err_mig 4, err_test 5, name 6, nr_mapped 7,
    // nr_migrated 8, nr_reclaimed 9, pfn 10.
    AndroidMemoryTracker::CmaFigures f;
    f.name = text(6), f.pfn = IntField(fs, 10), f.count = IntField(fs, 2);
    f.nr_migrated = IntField(fs, 8), f.nr_reclaimed = IntField(fs, 9), f.nr_mapped = IntField(fs, 7);
    f.err_iso = IntField(fs, 3), f.err_mig = IntField(fs, 4), f.err_test = IntField(fs, 5);
    android_memory_.OnCmaAllocInfo(ts, utid, f);
  } else if (kind == known_.cma_alloc_finish) {
    // name 1, pfn 2, count 4.
    AndroidMemoryTracker::CmaFigures f;
    f.name = text(1), f.pfn = IntField(fs, 2), f.count = IntField(fs, 4);
    android_memory_.OnCmaAllocFinish(ts, utid, f);
  } else {
    return false;
  }
  return true;
}

void TraceImporter::DispatchCompactSwitch(const SortedEvent& event) {
  if (DroppedBeforeTracingStart(event.ts)) return;
  CpuState& cpu = Cpu(event.cpu);
  StringPool& s = storage_->strings;
  if (!cpu.known) {
    // The first compact switch on a CPU has no previous task (the encoding
    // leaves prev_* to the switch before): Perfetto skips it too.
    compact_switch_skipped_++;
  }
  // The prev task of a compact switch is whoever the CPU's last switch put
  // there; SchedTracker keeps that (and skips the CPU's first switch too).
  uint32_t utid = sched_.OnSwitchCompact(event.ts, event.cpu, event.prev_state, event.pid, s.Get(event.comm),
                                         event.prio, event.ts < soft_drop_before_ts_[event.machine]);
  if (cpu.known && utid != kNullU32) {
    // Perfetto names the previous task by its thread's name now (a
    // task_rename or process_tree name since it was switched in shows; the
    // idle thread is "swapper", not the wire's "swapper/N").
    StringId prev_comm = storage_->thread.name[utid];
    CompactArgsMemo::Key key{event.comm, prev_comm, event.pid, cpu.pid, event.prio, cpu.prio, event.prev_state};
    uint32_t arg_set = switch_args_.Find(key);
    if (arg_set == kNoArgSet) {
      args_.clear();
      // In key order (ArgSetStore's order), so Add need not sort.
      args_.push_back({names_.next_comm, ArgType::kString, event.comm, 0});
      args_.push_back({names_.next_pid, ArgType::kInt, event.pid, 0});
      args_.push_back({names_.next_prio, ArgType::kInt, event.prio, 0});
      args_.push_back({names_.prev_comm, ArgType::kString, prev_comm, 0});
      args_.push_back({names_.prev_pid, ArgType::kInt, cpu.pid, 0});
      args_.push_back({names_.prev_prio, ArgType::kInt, cpu.prio, 0});
      args_.push_back({names_.prev_state, ArgType::kInt, event.prev_state, 0});
      arg_set = storage_->args.Add(&args_, /*sorted=*/true);
      switch_args_.Insert(key, arg_set);
    }
    AddFtraceEventRow(event.ts, names_.sched_switch, event.cpu, utid, arg_set);
  }
  cpu.known = true;
  cpu.pid = event.pid;
  cpu.prio = event.prio;
  cpu.comm = event.comm;
}

void TraceImporter::DispatchCompactWaking(const SortedEvent& event) {
  if (DroppedBeforeTracingStart(event.ts)) return;
  CpuState& cpu = Cpu(event.cpu);
  if (!cpu.known) {
    // The waker is the task running on the event's CPU, known only after a
    // switch there: Perfetto skips these too.
    compact_waking_skipped_++;
    return;
  }
  // The waker (the row's thread) is the task the CPU's last switch put there.
  uint32_t utid =
      sched_.OnWakingCompact(event.ts, event.cpu, event.pid, event.common_flags,
                               event.ts < soft_drop_before_ts_[event.machine]);
  if (utid == kNullU32) return;  // CPU out of range
  CompactArgsMemo::Key key{event.comm, kNullStringId, event.pid, 0, event.prio, 0, event.target_cpu};
  uint32_t arg_set = waking_args_.Find(key);
  if (arg_set == kNoArgSet) {
    args_.clear();
    args_.push_back({names_.comm, ArgType::kString, event.comm, 0});
    args_.push_back({names_.pid, ArgType::kInt, event.pid, 0});
    args_.push_back({names_.prio, ArgType::kInt, event.prio, 0});
    args_.push_back({names_.target_cpu, ArgType::kInt, event.target_cpu, 0});
    arg_set = storage_->args.Add(&args_, /*sorted=*/true);
    waking_args_.Insert(key, arg_set);
  }
  AddFtraceEventRow(event.ts, names_.sched_waking, event.cpu, utid, arg_set);
}

void TraceImporter::OnProcessTree(std::string_view bytes, int64_t ts) {
  perfetto::protos::ProcessTree tree;
  if (!tree.ParseFromArray(bytes.data(), static_cast<int>(bytes.size()))) {
    unparsable_packets_++;
    return;
  }
  (void)ts;
  std::vector<std::string_view> argv;
  std::set<int64_t> kthreads;  // kthreadd's children in this packet
  for (const auto& p : tree.processes()) {
    argv.assign(p.cmdline().begin(), p.cmdline().end());
    // process_start_from_boot is BOOTTIME ns, the trace's clock.
    const int64_t start = p.has_process_start_from_boot() ? static_cast<int64_t>(p.process_start_from_boot()) : kNullInt;
    if (processes_.OnProcessTreeProcess(p.pid(), p.ppid(), argv, p.cmdline_is_comm(), p.has_uid() ? p.uid() : kNullInt,
                                        start, p.has_is_kthread() ? std::optional<bool>(p.is_kthread()) : std::nullopt))
      kthreads.insert(p.pid());
  }
  for (const auto& t : tree.threads())
    processes_.OnProcessTreeThread(t.tid(), t.tgid(), t.has_name() ? std::optional<std::string_view>(t.name()) : std::nullopt,
                                   kthreads.count(t.tid()) > 0);
}

void TraceImporter::OnProcessStats(std::string_view bytes, int64_t ts) {
  if (!process_stats_.Import(bytes, ts == kNullInt ? 0 : ts)) unparsable_packets_++;
}

// Upstream's names for the builtin clocks (ClockSnapshot.Clock.BuiltinClocks).
static std::string_view BuiltinClockName(int64_t id) {
  switch (id) {
    case 1: return "REALTIME";
    case 2: return "REALTIME_COARSE";
    case 3: return "MONOTONIC";
    case 4: return "MONOTONIC_COARSE";
    case 5: return "MONOTONIC_RAW";
    case 6: return "BOOTTIME";
    default: return {};
  }
}

// The snapshot's trace time is its BOOTTIME reading (the trace clock): a
// snapshot without one cannot be placed on the trace's timeline.
void TraceImporter::OnClockSnapshot(std::string_view bytes) {
  perfetto::protos::ClockSnapshot snapshot;
  if (!snapshot.ParseFromArray(bytes.data(), static_cast<int>(bytes.size()))) {
    unparsable_packets_++;
    return;
  }
  constexpr uint32_t kBoottime = 6;
  if (primary_trace_clock_ == kNullInt)
    primary_trace_clock_ = snapshot.has_primary_trace_clock() ? static_cast<int64_t>(snapshot.primary_trace_clock()) : int64_t{kBoottime};
  int64_t ts = kNullInt;
  for (const auto& clock : snapshot.clocks())
    if (clock.clock_id() == kBoottime) ts = static_cast<int64_t>(clock.timestamp());
  if (ts == kNullInt) return;
  ClockSnapshotTable& t = storage_->clock_snapshot;
  for (const auto& clock : snapshot.clocks()) {
    const std::string_view name = BuiltinClockName(clock.clock_id());
    t.ts.push_back(ts);
    t.clock_id.push_back(clock.clock_id());
    t.clock_name.push_back(name.empty() ? kNullStringId : storage_->strings.Intern(name));
    t.clock_value.push_back(static_cast<int64_t>(clock.timestamp()));
    t.snapshot_id.push_back(clock_snapshots_);
  }
  clock_snapshots_++;
}

// The SDK level of an Android release, for fingerprints of builds whose
// SystemInfo has no android_sdk_version (upstream's table).
static std::optional<int64_t> AndroidSdkOfRelease(std::string_view release) {
  if (!release.empty() && (release[0] == 'S' || release[0] == 'T')) return 31;
  static constexpr std::pair<std::string_view, int64_t> kReleases[] = {
      {"12", 31}, {"11", 30}, {"10", 29}, {"9", 28}, {"8.1", 27}, {"8.0", 26}, {"7.1", 25}, {"7.0", 24},
      {"6.0", 23}, {"5.1", 22}, {"5.1.1", 22}, {"5.0", 21}, {"5.0.1", 21}, {"5.0.2", 21}};
  for (const auto& [name, sdk] : kReleases)
    if (release == name) return sdk;
  return std::nullopt;
}

void TraceImporter::OnSystemInfo(std::string_view bytes) {
  perfetto::protos::SystemInfo info;
  if (!info.ParseFromArray(bytes.data(), static_cast<int>(bytes.size()))) {
    unparsable_packets_++;
    return;
  }
  if (info.has_utsname()) {
    const auto& u = info.utsname();
    // All four, as upstream; a field the recorder left out is NULL, not "".
    auto field = [](bool has, const std::string& v) { return has ? std::optional<std::string_view>(v) : std::nullopt; };
    SetMetadata("system_name", kNullInt, field(u.has_sysname(), u.sysname()));
    SetMetadata("system_release", kNullInt, field(u.has_release(), u.release()));
    SetMetadata("system_version", kNullInt, field(u.has_version(), u.version()));
    SetMetadata("system_machine", kNullInt, field(u.has_machine(), u.machine()));
    // Switches are decoded by each machine's kernel; the rest follows the
    // host's (docs/QUERY.md).
    if (machine_ == 0) syscalls_.SetArchitecture(u.machine());
    int major = 0, minor = 0;
    if (sscanf(u.release().c_str(), "%d.%d", &major, &minor) == 2) {
      sched_.SetKernelVersion(major, minor, machine_);
      if (machine_ == 0) android_memory_.SetKernelVersion(major, minor);
    }
  }
  if (info.has_page_size()) SetMetadata("page_size", info.page_size(), {});
  if (machine_ == 0) system_probes_.SetPageSize(info.page_size());
  // machine_name (17), newer than sluice's copy of the message: the name a
  // relayed machine gives itself, the `machine` row's name as upstream.
  ProtoWireReader fields(bytes);
  WireField f;
  while (fields.Next(&f))
    if (f.number == 17 && f.type == WireType::kBytes) storage_->machine.name[machine_] = storage_->strings.Intern(f.bytes);
  if (info.has_num_cpus()) {
    SetMetadata("num_cpus", info.num_cpus(), {});
  }
  if (info.has_tracing_service_version()) {
    SetMetadata("tracing_service_version", kNullInt, info.tracing_service_version());
    if (machine_ == 0) tracing_service_version_ = info.tracing_service_version();
  }
  std::optional<int64_t> sdk_from_release;
  if (info.has_android_build_fingerprint()) {
    const std::string& fp = info.android_build_fingerprint();
    SetMetadata("android_build_fingerprint", kNullInt, fp);
    // BRAND/PRODUCT/DEVICE:RELEASE/ID/INCREMENTAL:TYPE/TAGS
    const size_t colon = fp.find(':');
    const size_t release_end = colon == std::string::npos ? colon : fp.find('/', colon + 1);
    const size_t id_end = release_end == std::string::npos ? release_end : fp.find('/', release_end + 1);
    const size_t incremental_end = id_end == std::string::npos ? id_end : fp.find(':', id_end + 1);
    if (incremental_end != std::string::npos) {
      SetMetadata("android_incremental_build", kNullInt, fp.substr(id_end + 1, incremental_end - id_end - 1));
      sdk_from_release = AndroidSdkOfRelease(fp.substr(colon + 1, release_end - colon - 1));
    }
  }
  if (info.has_android_device_manufacturer())
    SetMetadata("android_device_manufacturer", kNullInt, info.android_device_manufacturer());
  if (info.has_android_sdk_version())
    SetMetadata("android_sdk_version", static_cast<int64_t>(info.android_sdk_version()), {});
  else if (sdk_from_release)
    SetMetadata("android_sdk_version", *sdk_from_release, {});
  if (info.has_system_ram_bytes()) {
    SetMetadata("system_ram_bytes", static_cast<int64_t>(info.system_ram_bytes()), {});
    // Rounded to the nearest GB (10^9 bytes), as upstream.
    SetMetadata("system_ram_gb", static_cast<int64_t>((info.system_ram_bytes() + 500000000) / 1000000000), {});
  }
}

void TraceImporter::OnTraceConfig(std::string_view bytes) {
  perfetto::protos::TraceConfig config;
  if (!config.ParseFromArray(bytes.data(), static_cast<int>(bytes.size()))) {
    unparsable_packets_++;
    return;
  }
  std::string text;
  google::protobuf::TextFormat::PrintToString(config, &text);
  while (!text.empty() && text.back() == '\n') text.pop_back();
  SetMetadata("trace_config_pbtxt", kNullInt, text);
  // Perfetto's trace processor flags every DISCARD buffer of a
  // write_into_file session as a loss (in Perfetto such a buffer stops
  // taking data once filled); the same row here keeps both tools' loss
  // queries alike.
  write_into_file_ = {config.write_into_file(), config.flush_period_ms(), config.file_write_period_ms()};
  if (config.write_into_file())
    for (int i = 0; i < config.buffers_size(); ++i)
      if (config.buffers(i).fill_policy() == perfetto::protos::TraceConfig::BufferConfig::DISCARD)
        config_discard_buffers_.push_back(i);
  if (config.has_unique_session_name()) SetMetadata("unique_session_name", kNullInt, config.unique_session_name());
  if (config.has_trace_attributes()) OnTraceAttributes(config.trace_attributes().SerializeAsString());
  if (config.has_trace_uuid_msb() || config.has_trace_uuid_lsb()) {
    char uuid[40];
    auto msb = static_cast<uint64_t>(config.trace_uuid_msb()), lsb = static_cast<uint64_t>(config.trace_uuid_lsb());
    snprintf(uuid, sizeof(uuid), "%08x-%04x-%04x-%04x-%012llx", static_cast<unsigned>(msb >> 32),
             static_cast<unsigned>((msb >> 16) & 0xffff), static_cast<unsigned>(msb & 0xffff),
             static_cast<unsigned>(lsb >> 48), static_cast<unsigned long long>(lsb & 0xffffffffffffull));
    SetMetadata("trace_uuid", kNullInt, uuid);
    has_uuid_ = true;
  }
}

bool TraceImporter::DroppedBeforeTracingStart(int64_t ts) {
  // Decided at the first ftrace event, as upstream: by then the session's
  // tracing_started service event and START_OF_TRACE ftrace stats, which
  // precede the data in the file, have been read.
  if (!drop_decided_) {
    drop_decided_ = true;
    drop_before_ts_ = preserve_ftrace_buffer_ || tracing_started_ns_ == kNullInt ? 0 : tracing_started_ns_;
  }
  if (ts >= drop_before_ts_) return false;
  ftrace_before_tracing_start_++;
  return true;
}

void TraceImporter::OnServiceEvent(std::string_view bytes, int64_t packet_ts) {
  // TracingServiceEvent: all_data_sources_started 1, tracing_started 2,
  // all_data_sources_flushed 3, tracing_disabled 5,
  // slow_starting_data_sources 7 (data_source 1: producer_name 1,
  // data_source_name 2), clone_started 10, buffer_cloned 11. Upstream takes
  // the packet's timestamp as it is, without clock conversion.
  const int64_t ts = packet_ts == kNullInt ? 0 : packet_ts;
  ProtoWireReader reader(bytes);
  WireField f;
  while (reader.Next(&f)) {
    if (f.type == WireType::kVarint) {
      switch (f.number) {
        case 1: if (f.value) SetMetadata("all_data_source_started_ns", ts, {}); break;
        case 2:
          if (f.value) {
            SetMetadata("tracing_started_ns", ts, {});
            tracing_started_ns_ = ts;
          }
          break;
        case 3: if (f.value) AppendMetadata("all_data_source_flushed_ns", ts, {}); break;
        case 5: if (f.value) SetMetadata("tracing_disabled_ns", ts, {}); break;
        case 10: if (f.value) clone_started_ns_ = ts; break;
        case 11: buffer_cloned_ns_[static_cast<int64_t>(f.value)] = ts; break;
        default: break;
      }
    } else if (f.number == 7 && f.type == WireType::kBytes) {
      ProtoWireReader sources(f.bytes);
      WireField d;
      while (sources.Next(&d)) {
        if (d.number != 1 || d.type != WireType::kBytes) continue;
        std::string_view producer, name;
        ProtoWireReader source(d.bytes);
        WireField n;
        while (source.Next(&n)) {
          if (n.type != WireType::kBytes) continue;
          if (n.number == 1) producer = n.bytes;
          if (n.number == 2) name = n.bytes;
        }
        AppendMetadata("slow_start_data_source", kNullInt, std::string(producer) + " " + std::string(name));
      }
    }
  }
  if (!reader.ok()) unparsable_packets_++;
}

uint32_t TraceImporter::KernelSymbolField(uint32_t kind) const {
  // sched_blocked_reason's caller 2, funcgraph_entry's func 2,
  // funcgraph_exit's func 3.
  if (kind == known_.sched_blocked_reason || kind == known_.funcgraph_entry) return 2;
  if (kind == known_.funcgraph_exit) return 3;
  return 0;
}

StringId TraceImporter::KernelSymbolOf(std::string_view payload, uint32_t field) const {
  auto seq = kernel_symbols_.find(sequence_);
  if (seq == kernel_symbols_.end()) return kNullStringId;
  ProtoWireReader reader(payload);
  WireField f;
  while (reader.Next(&f)) {
    if (f.number != field || f.type != WireType::kVarint) continue;
    auto sym = seq->second.find(f.value);
    return sym == seq->second.end() ? kNullStringId : sym->second;
  }
  return kNullStringId;
}

void TraceImporter::OnInternedData(std::string_view bytes) {
  // kernel_symbols: InternedString {iid 1, str 2}, per packet sequence,
  // until the sequence clears its incremental state.
  ProtoWireReader reader(bytes);
  WireField f;
  while (reader.Next(&f)) {
    if (f.number != kInternedKernelSymbols || f.type != WireType::kBytes) continue;
    uint64_t iid = 0;
    std::string_view str;
    ProtoWireReader entry(f.bytes);
    WireField e;
    while (entry.Next(&e)) {
      if (e.number == 1 && e.type == WireType::kVarint) iid = e.value;
      if (e.number == 2 && e.type == WireType::kBytes) str = e.bytes;
    }
    kernel_symbols_[sequence_][iid] = storage_->strings.Intern(str);
  }
  if (!reader.ok()) unparsable_packets_++;
}

void TraceImporter::OnTraceAttributes(std::string_view bytes) {
  // TraceAttributes: attribute 1 (key 1, long_value 2, string_value 3); a
  // later value of a key replaces the earlier one.
  ProtoWireReader reader(bytes);
  WireField f;
  while (reader.Next(&f)) {
    if (f.number != 1 || f.type != WireType::kBytes) continue;
    std::string_view key;
    // The last of the int (2) and string (3) values wins. Plain values and a
    // tag, not two std::optionals: g++ 12 under -fsanitize=thread takes an
    // optional's value for possibly uninitialised and fails the build.
    enum class ValueKind { kNone, kLong, kString } kind = ValueKind::kNone;
    int64_t long_value = 0;
    std::string_view string_value;
    ProtoWireReader attribute(f.bytes);
    WireField a;
    while (attribute.Next(&a)) {
      if (a.number == 1 && a.type == WireType::kBytes) key = a.bytes;
      if (a.number == 2 && a.type == WireType::kVarint) {
        long_value = static_cast<int64_t>(a.value);
        kind = ValueKind::kLong;
      }
      if (a.number == 3 && a.type == WireType::kBytes) {
        string_value = a.bytes;
        kind = ValueKind::kString;
      }
    }
    const std::string name = "trace_attribute." + std::string(key);
    if (kind == ValueKind::kLong) SetMetadata(name, long_value, {});
    else if (kind == ValueKind::kString) SetMetadata(name, kNullInt, string_value);
  }
  if (!reader.ok()) unparsable_packets_++;
}

void TraceImporter::OnTrigger(std::string_view bytes, int64_t ts, bool clone) {
  // Trigger: trigger_name 1, producer_name 2, trusted_producer_uid 3. A
  // point slice on the "Trace Triggers" track; trace_trigger names the
  // first clone-snapshot trigger, or if none, the first trigger.
  StringPool& s = storage_->strings;
  std::string_view name, producer;
  std::optional<int64_t> uid;
  ProtoWireReader reader(bytes);
  WireField f;
  while (reader.Next(&f)) {
    if (f.number == 1 && f.type == WireType::kBytes) name = f.bytes;
    if (f.number == 2 && f.type == WireType::kBytes) producer = f.bytes;
    if (f.number == 3 && f.type == WireType::kVarint) uid = static_cast<int32_t>(f.value);
  }
  if (!reader.ok()) {
    unparsable_packets_++;
    return;
  }
  std::vector<Arg> args;
  if (!producer.empty()) args.push_back({s.Intern("producer_name"), ArgType::kString, s.Intern(producer), 0});
  if (uid) args.push_back({s.Intern("trusted_producer_uid"), ArgType::kInt, *uid, 0});
  const StringId type = s.Intern("triggers");
  slices_.Instant(ts, tracks_.SingletonTrack(type, s.Intern("Trace Triggers"), /*counter=*/false), s.Intern(name),
                  std::move(args));
  storage_->ExtendBounds(ts);
  if (clone && trigger_state_ != TriggerState::kCloneSnapshot) {
    SetMetadata("trace_trigger", kNullInt, name);
    trigger_state_ = TriggerState::kCloneSnapshot;
    clone_trigger_ns_ = ts;
  } else if (!clone && trigger_state_ == TriggerState::kNone) {
    SetMetadata("trace_trigger", kNullInt, name);
    trigger_state_ = TriggerState::kTrigger;
  }
}

void TraceImporter::SetMetadata(std::string_view name, int64_t int_value, std::optional<std::string_view> str_value) {
  // A single key: a later value replaces the earlier one, as upstream.
  StringPool& s = storage_->strings;
  MetadataTable& m = storage_->metadata;
  const StringId key = s.Intern(name);
  const uint32_t machine = IsMachineMetadataKey(name) ? machine_ : kNullU32;
  for (size_t i = 0; i < m.name.size(); ++i) {
    if (m.name[i] != key || m.machine_id[i] != machine) continue;
    m.int_value[i] = int_value;
    m.str_value[i] = int_value == kNullInt && str_value ? s.Intern(*str_value) : kNullStringId;
    return;
  }
  AddMetadataRow(key, s.Intern("single"), int_value, str_value);
}

void TraceImporter::AppendMetadata(std::string_view name, int64_t int_value, std::optional<std::string_view> str_value) {
  StringPool& s = storage_->strings;
  AddMetadataRow(s.Intern(name), s.Intern("multi"), int_value, str_value);
}

void TraceImporter::AddMetadataRow(StringId name, StringId key_type, int64_t int_value,
                                   std::optional<std::string_view> str_value) {
  StringPool& s = storage_->strings;
  MetadataTable& m = storage_->metadata;
  m.name.push_back(name);
  m.key_type.push_back(key_type);
  m.int_value.push_back(int_value);
  m.str_value.push_back(int_value == kNullInt && str_value ? s.Intern(*str_value) : kNullStringId);
  m.machine_id.push_back(IsMachineMetadataKey(s.Get(name)) ? machine_ : kNullU32);
}

void TraceImporter::AddStat(std::string_view name, int64_t idx, std::string_view severity,
                            std::string_view source, int64_t value, std::string_view description) {
  // The host's, but for the import's own figures.
  AddMachineStat(IsGlobalStat(name) ? kNullU32 : 0, name, idx, severity, source, value, description);
}

void TraceImporter::AddMachineStat(uint32_t machine, std::string_view name, int64_t idx,
                                   std::string_view severity, std::string_view source, int64_t value,
                                   std::string_view description) {
  StringPool& s = storage_->strings;
  StatsTable& t = storage_->stats;
  t.name.push_back(s.Intern(name));
  t.idx.push_back(idx);
  t.severity.push_back(s.Intern(severity));
  t.source.push_back(s.Intern(source));
  t.value.push_back(value);
  t.description.push_back(s.Intern(description));
  t.machine_id.push_back(machine);
}

void TraceImporter::Finish(const TraceFileSummary& file, const Status& read_status) {
  machine_ = 0;  // What follows is the host's or the trace's.
  processes_.SetMachine(0);
  sorter_.Flush();
  AddPendingProcessCounters();
  slices_.Finish();
  sched_.Finish(storage_->end_ts);
  processes_.Finish();
  // As upstream: the CPUs events came from, and those tracks name (a
  // cpu_idle event's cpu_id may be another CPU).
  std::set<uint32_t> cpus;
  for (size_t cpu = 0; cpu < cpus_.size(); ++cpu)
    if (cpus_[cpu].seen) cpus.insert(static_cast<uint32_t>(cpu));
  for (uint32_t cpu : storage_->track.cpu)
    if (cpu != kNullU32) cpus.insert(cpu);
  system_probes_.AddCpus(&cpus);
  for (uint32_t cpu : cpus) storage_->cpu.Add(cpu);
  system_probes_.AddCpuInfoRows();
  if (!has_uuid_) {
    // No uuid in the trace: derive one from its first 4 KiB as Perfetto's
    // trace processor does (64-bit FNV-1a as the low half), so both tools
    // name the same trace alike.
    char uuid[40];
    snprintf(uuid, sizeof(uuid), "00000000-0000-0000-%04x-%012llx", static_cast<unsigned>(head_hash_ >> 48),
             static_cast<unsigned long long>(head_hash_ & 0xffffffffffffull));
    SetMetadata("trace_uuid", kNullInt, uuid);
  }
  SetMetadata("trace_type", kNullInt, "proto");
  // Upstream fixes the trace's clock at its first ClockSnapshot: BOOTTIME
  // unless the snapshot names another primary clock.
  if (primary_trace_clock_ != kNullInt) SetMetadata("trace_time_clock_id", primary_trace_clock_, {});
  SetMetadata("trace_size_bytes", static_cast<int64_t>(file.bytes), {});
  WriteStats(file, read_status);
}

void TraceImporter::WriteMachineStats() {
  const auto& host_relays = stats_->trace_stats.sluice_service_stats().relay_machines();
  for (uint32_t m = 1; m < machines_.size(); ++m) {
    const RemoteMachine& machine = machines_[m];
    const int64_t raw_id = storage_->machine.raw_id[m];
    perfetto::protos::TraceStats stats;
    const bool has_stats = !machine.trace_stats.empty() && stats.ParseFromString(machine.trace_stats);
    // The machine's TraceStats as upstream lists it: traced_<field> and,
    // per buffer, traced_buf_<field>, on the machine's rows.
    if (has_stats) {
      ForEachTraceStat(stats, [&](const std::string& name, int64_t idx, int64_t value) {
        const bool loss = name == "traced_buf_trace_writer_packet_loss" || name == "traced_buf_patches_failed" ||
                          name == "traced_buf_abi_violations" || name == "traced_final_flush_failed";
        AddMachineStat(m, name, idx, loss ? "data_loss" : "info", "trace", value,
                       name == "traced_buf_trace_writer_packet_loss"
                           ? "relay: chunks of this buffer the machine lost on the way to the host (the relay_* "
                             "rows say where)"
                           : "");
      });
    }
    perfetto::protos::FtraceStats ftrace_begin, ftrace_end;
    const bool has_begin = !machine.ftrace_begin.empty() && ftrace_begin.ParseFromString(machine.ftrace_begin);
    const bool has_end = !machine.ftrace_end.empty() && ftrace_end.ParseFromString(machine.ftrace_end);
    ForEachFtraceCpuStat(has_begin ? &ftrace_begin : nullptr, has_end ? &ftrace_end : nullptr,
                         [&](const std::string& name, int64_t idx, int64_t value) {
                           AddMachineStat(m, name, idx, "info", "trace", value, "");
                         });
    // The relay's own figures (sluice's): from the host's final TraceStats,
    // or the one stamped with the machine if the host's has none.
    const sluice::protos::RelayMachineStats* relay = nullptr;
    for (const auto& r : host_relays)
      if (r.machine_id() == raw_id) relay = &r;
    if (!relay && has_stats)
      for (const auto& r : stats.sluice_service_stats().relay_machines())
        if (r.machine_id() == raw_id) relay = &r;
    if (relay) {
      auto row = [&](std::string_view name, uint64_t value, std::string_view severity, std::string_view what) {
        AddMachineStat(m, name, raw_id, severity, "trace", static_cast<int64_t>(value), what);
      };
      row("relay_connects", relay->connects(), "info", "relay: times the machine's relay connected");
      row("relay_disconnects", relay->disconnects(), "info", "relay: times the machine's link ended");
      row("relay_chunks_dropped", relay->chunks_dropped(), "data_loss",
          "relay: chunks dropped by the machine's relay (queue full or link down)");
      // The same loss as relay_chunks_dropped, in other units: not counted twice.
      row("relay_packets_dropped", relay->packets_dropped(), "info", "relay: packets in the dropped chunks");
      row("relay_bytes_dropped", relay->bytes_dropped(), "info", "relay: bytes in the dropped chunks");
      row("relay_chunks_lost_in_transit", relay->chunks_lost_in_transit(), "data_loss",
          "relay: chunks cut off when the link broke");
    }
    // The clock: where the machine's timestamps were put on the host's
    // timeline from, and how far off they may be.
    const RemoteClockSync& clock = machine.clock;
    AddMachineStat(m, "remote_clock_syncs", raw_id, "info", "analysis", static_cast<int64_t>(clock.syncs()),
                   "RemoteClockSync packets of this machine the import used");
    if (clock.syncs() > 0) {
      AddMachineStat(m, "remote_clock_offset_ns", raw_id, "info", "analysis", clock.last_offset(),
                     "the machine's boot clock minus the host's, as of the last sync");
      AddMachineStat(m, "remote_clock_error_ns", raw_id, "info", "analysis", clock.last_error_bound(),
                     "how far the last sync's offset may be from the true one (half its round trip)");
      AddMachineStat(m, "remote_clock_max_error_ns", raw_id, "info", "analysis", clock.max_error_bound(),
                     "the widest error bound of the syncs");
    }
    if (machine.clock_failures > 0)
      AddMachineStat(m, "clock_sync_failure", kNullInt, "error", "analysis",
                     static_cast<int64_t>(machine.clock_failures),
                     "timestamps of this machine dropped: its boot clock went backwards between syncs");
  }
  if (packets_of_too_many_machines_ > 0)
    AddStat("packets_of_too_many_machines", kNullInt, "error", "analysis",
            static_cast<int64_t>(packets_of_too_many_machines_),
            "packets of machines past the 63 relayed machines sluice query imports, skipped");
}

void TraceImporter::WriteStats(const TraceFileSummary& file, const Status& read_status) {
  WriteMachineStats();
  TraceHealth health = health_.Finish(file);
  // sluice's own analysis (the rows `sluice stats` prints) decides severity
  // and description wherever it has the same stat; it also has the stats
  // Perfetto lacks (BPF ring, sluice service counters).
  std::map<std::pair<std::string, int64_t>, const HealthRow*> health_rows;
  for (const HealthRow& row : health.rows) health_rows[{row.name, row.index}] = &row;
  std::set<std::pair<std::string, int64_t>> written;
  // The chunks the service lost and added to one buffer's
  // trace_writer_packet_loss so that Perfetto lists them (service/
  // service_packets.h): that row is data loss even when nothing else of
  // its figure is, and says what it holds.
  const auto& faults = stats_->trace_stats.sluice_service_stats();
  const bool chunks_added = stats_->has_trace_stats && faults.has_chunks_lost_buffer();
  const uint64_t chunks_lost = faults.chunks_lost_being_written() + faults.chunks_lost_writer_unknown();
  auto addendum = [&](const std::string& name, int64_t idx) -> std::string {
    if (!chunks_added || name != "traced_buf_trace_writer_packet_loss" || idx != faults.chunks_lost_buffer())
      return "";
    return "; includes " + std::to_string(chunks_lost) +
           " chunks lost in producer shared memory (chunks_lost_being_written + chunks_lost_writer_unknown)";
  };
  // A streamed (write_into_file) trace whose buffer overwrote data before
  // it reached the file lost that data; upstream names the loss
  // long_trace_mode_bytes_overwritten (in bytes) and keeps the chunk count
  // as information. A period of a day or more means a ring-buffer trace
  // written once (its cutoff).
  constexpr uint32_t kRingBufferIntentPeriodMs = 24 * 60 * 60 * 1000;
  std::map<int64_t, uint64_t> long_trace_overwritten;  // buffer -> bytes
  if (write_into_file_.on && write_into_file_.file_write_period_ms < kRingBufferIntentPeriodMs &&
      stats_->has_trace_stats)
    for (int b = 0; b < stats_->trace_stats.buffer_stats_size(); ++b)
      if (uint64_t bytes = stats_->trace_stats.buffer_stats(b).bytes_overwritten(); bytes > 0)
        long_trace_overwritten[b] = bytes;
  auto emit = [&](const std::string& name, int64_t idx, int64_t value) {
    auto key = std::make_pair(name, idx == kNullInt ? int64_t{-1} : idx);
    if (!written.insert(key).second) return;
    if (name == "traced_buf_chunks_overwritten" && long_trace_overwritten.count(idx))
      return AddStat(name, idx, "info", "trace", value,
                     "central buffer: chunks overwritten; the loss is long_trace_mode_bytes_overwritten");
    auto it = health_rows.find(key);
    if (it == health_rows.end()) {
      std::string added = addendum(name, idx);
      if (!added.empty()) AddStat(name, idx, "data_loss", "trace", value, "producer shared memory: " + added.substr(2));
      else AddStat(name, idx, "info", "trace", value, "");
      return;
    }
    const HealthRow& row = *it->second;
    // Perfetto counts a failed flush as data loss (the flush's data may be
    // missing); `sluice stats` calls it an error. The table follows Perfetto.
    std::string severity = name == "traced_flushes_failed" ? "data_loss" : row.severity;
    AddStat(name, idx, severity, "trace", value, row.source + ": " + row.explanation + addendum(name, idx));
  };

  // Perfetto's names for the service's TraceStats: traced_<field> and, per
  // central buffer, traced_buf_<field> (idx = buffer).
  if (stats_->has_trace_stats) ForEachTraceStat(stats_->trace_stats, emit);
  // What the packet sequences said of their own losses, per buffer, as
  // upstream sums them (SequenceLossTracker).
  for (const auto& [buffer_index, loss] : stats_->sequence_loss) {
    // A copy: clang 14 cannot capture a structured binding.
    const int64_t buffer = buffer_index;
    auto add = [&](const std::string& name, int64_t value, std::string_view source, std::string_view description) {
      if (!written.insert({name, buffer}).second) return;
      AddStat(name, buffer, "data_loss", source, value, description);
    };
    add("traced_buf_sequence_packet_loss", loss.packet_loss, "analysis",
        "packets of this buffer's writers marked previous_packet_dropped (after each sequence's first)");
    add("traced_buf_incremental_sequences_dropped", loss.incremental_sequences_dropped, "analysis",
        "sequences of this buffer all of whose packets needing incremental state came without it");
    for (size_t i = 0; i < SequenceLossTracker::kCauses; ++i)
      add(std::string("traced_buf_data_loss_") + SequenceLossTracker::kCauseNames[i], loss.causes[i], "trace",
          "losses the writers of this buffer attributed to this cause (previous_packet_dropped bits)");
  }
  if (clone_started_ns_ != kNullInt) emit("traced_clone_started_timestamp_ns", kNullInt, clone_started_ns_);
  if (clone_trigger_ns_ != kNullInt) emit("traced_clone_trigger_timestamp_ns", kNullInt, clone_trigger_ns_);
  for (const auto& [buffer, ts] : buffer_cloned_ns_) emit("traced_buf_clone_done_timestamp_ns", buffer, ts);
  ForEachFtraceCpuStat(stats_->has_ftrace_begin ? &stats_->ftrace_begin : nullptr,
                       stats_->has_ftrace_end ? &stats_->ftrace_end : nullptr, emit);
  // Every other figure sluice's analysis has (BPF ring, shared memory,
  // service, file): same name, value and explanation as `sluice stats`.
  for (const HealthRow& row : health.rows) {
    auto key = std::make_pair(row.name, row.index);
    if (written.count(key)) continue;
    written.insert(key);
    // A relayed machine's row (idx: its machine_id) is that machine's; its
    // relay counters are already there (WriteMachineStats).
    if (row.name.starts_with("relay_") || row.name == "remote_clock_sync_missing") {
      auto machine = machine_by_raw_id_.find(static_cast<uint64_t>(row.index));
      if (row.name == "relay_chunks_dropped" || row.name == "relay_chunks_lost_in_transit") continue;
      AddMachineStat(machine == machine_by_raw_id_.end() ? kNullU32 : machine->second, row.name, row.index,
                     row.severity, "trace", row.value, row.source + ": " + row.explanation);
      continue;
    }
    // A relayed machine's sequence's loss flag is that machine's.
    if (row.name == "packets_dropped_before") {
      auto machine = sequence_machine_.find(static_cast<uint32_t>(row.index));
      if (machine != sequence_machine_.end()) {
        AddMachineStat(machine->second, row.name, row.index, row.severity, "trace", row.value,
                       row.source + ": " + row.explanation);
        continue;
      }
    }
    bool about_file = row.source == "trace file";
    AddStat(row.name, row.index < 0 ? kNullInt : row.index, row.severity, about_file ? "analysis" : "trace",
            row.value, row.source + ": " + row.explanation);
  }
  // Perfetto's flag for a CPU whose kernel buffer lost events (a bundle
  // marked lost_events); the count is ftrace_cpu_overrun_delta.
  for (const auto& [cpu, lost] : kernel_records_lost_)
    AddStat("perf_cpu_lost_records", cpu, "data_loss", "trace", static_cast<int64_t>(lost),
            "BPF ring buffer: records of this CPU that never reached the trace (Perfetto's name for a kernel "
            "ring with no room; the same loss as bpf_ringbuf_dropped, plus bpf_decode_errors and "
            "bpf_unaccounted): raise bpf_config.ringbuf_size_kb");
  for (uint32_t cpu : cpus_with_lost_events_)
    AddStat("ftrace_cpu_has_data_loss", cpu, "data_loss", "trace", 1,
            "kernel ftrace buffer: events were lost on this CPU (a page came after lost events); "
            "ftrace_cpu_overrun_delta and bpf_ringbuf_dropped say how many");
  for (const auto& [buffer, bytes] : long_trace_overwritten)
    AddStat("long_trace_mode_bytes_overwritten", buffer, "data_loss", "trace", static_cast<int64_t>(bytes),
            "central buffer: bytes overwritten before they were written into the file, missing from the "
            "trace (sluice stats counts them as traced_buf_chunks_overwritten): raise buffers.size_kb "
            "(-b) or lower file_write_period_ms");
  // write_into_file without flush_period_ms: upstream flags it as an error
  // unless the trace says its service is Perfetto v54 or later (which flushes
  // at every file write). It says so of sluiced's traces too, which are not
  // Perfetto's: the same answer for the same input. Listed (0) otherwise, as
  // upstream lists it.
  bool no_flush = false;
  if (write_into_file_.on && write_into_file_.flush_period_ms == 0) {
    std::optional<uint32_t> major;
    constexpr std::string_view kPerfetto = "Perfetto v";
    if (tracing_service_version_.starts_with(kPerfetto)) {
      const std::string rest = tracing_service_version_.substr(kPerfetto.size());
      const size_t end = rest.find_first_of(".-");
      uint32_t value = 0;
      if (end != std::string::npos && end > 0 && ParseU32(rest.substr(0, end), &value)) major = value;
    }
    no_flush = !major || *major < 54;
  }
  AddStat("config_write_into_file_no_flush", kNullInt, "error", "trace", no_flush ? 1 : 0,
          "the trace was recorded with write_into_file but without flush_period_ms: producers' data "
          "reached the file only when their chunks filled or the session ended");
  for (int buffer : config_discard_buffers_)
    AddStat("config_write_into_file_discard", buffer, "data_loss", "trace", 1,
            "a DISCARD buffer in a write_into_file session: upstream Perfetto flags it because its buffers "
            "stop taking data once filled; look at traced_buf_chunks_discarded for what was refused");
  // The importer's own findings, listed even when zero (as Perfetto lists
  // its stats), so that a query can tell "none" from "not checked".
  AddStat("sorter_push_event_out_of_order", kNullInt, "error", "analysis",
          static_cast<int64_t>(sorter_.out_of_order()),
          "events that arrived later than the sort window allowed; imported out of order");
  AddStat("packet_skipped_seq_needs_incremental_state_invalid", kNullInt, "notice", "analysis",
          static_cast<int64_t>(packets_skipped_incremental_invalid_),
          "packets that needed their sequence's incremental state (SEQ_NEEDS_INCREMENTAL_STATE) while it was "
          "not valid (never set up, or packets lost since): skipped, as upstream skips them");
  // The findings of each machine's events on its rows; the host's are the
  // rest.
  Findings host = CurrentFindings();
  for (uint32_t m = 1; m < machines_.size(); ++m) host = host - machines_[m].findings;
  for (uint32_t m = 0; m < machines_.size(); ++m) {
    const Findings& f = m == 0 ? host : machines_[m].findings;
    AddMachineStat(m, "compact_sched_switch_skipped", kNullInt, "info", "analysis", f.compact_switch_skipped,
                   "first compact sched_switch on each CPU: its previous task is unknown");
    AddMachineStat(m, "compact_sched_waking_skipped", kNullInt, "info", "analysis", f.compact_waking_skipped,
                   "compact sched_waking before any switch on its CPU: its waker is unknown");
    // The trackers' findings, under Perfetto's names and severities.
    AddMachineStat(m, "mismatched_sched_switch_tids", kNullInt, "error", "analysis", f.mismatched_sched_switch_tids,
                   "sched_switch whose prev_pid is not the task the CPU's last switch put there (events lost): "
                   "that sched slice stays open (dur -1)");
    AddMachineStat(m, "task_state_invalid", kNullInt, "error", "analysis", f.task_state_invalid,
                   "sched_switch prev_state with bits the kernel version's layout does not have: end_state NULL");
    AddMachineStat(m, "systrace_parse_failure", kNullInt, "error", "analysis", f.systrace_parse_failure,
                   "print events that are not atrace lines (B|pid|name, E|pid, C|pid|name|value, ...): kept as "
                   "ftrace_event rows only");
  }
  AddStat("sched_events_cpu_out_of_range", kNullInt, "error", "analysis", sched_.bad_cpu_events(),
          "sched events of a CPU number >= 8192 (a corrupt bundle): dropped");
  AddStat("ftrace_bundles_cpu_out_of_range", kNullInt, "error", "analysis",
          static_cast<int64_t>(cpu_out_of_range_bundles_),
          "ftrace event bundles of a CPU number >= 8192 (corrupt): dropped with all their events");
  AddStat("slice_max_depth_exceeded", kNullInt, "error", "analysis", slices_.max_depth_exceeded(),
          "slice begins on a track with 512 slices open: dropped");
  AddStat("process_tracker_errors", kNullInt, "error", "analysis", processes_.process_tracker_errors(),
          "a thread created with CLONE_THREAD by a thread of another process: left in its own process");
  AddStat("process_tracker_parent_pid_changed", kNullInt, "info", "analysis", processes_.parent_pid_changed(),
          "A process was seen with a changed parent pid and was treated as the same process being reparented "
          "rather than pid reuse.");
  AddStat("misplaced_end_event", kNullInt, "data_loss", "analysis", slices_.misplaced_end_events(),
          "a syscall exit or track event end ended a slice with another still open inside it (an end lost): "
          "that one ends where its parent did at the track's next event, else stays open");
  AddStat("truncated_sys_write_duration", kNullInt, "info", "analysis", syscalls_.truncated_sys_write_duration(),
          "sys_write slices ended at the print (atrace) event they carried, so that its slice is not inside");
  AddStat("proc_stat_unknown_counters", kNullInt, "error", "analysis", process_stats_.unknown_counters(),
          "process_stats counters this importer does not know (and chrome_peak_resident_set_kb, as upstream "
          "counts it): skipped");
  AddStat("ftrace_packet_before_tracing_start", kNullInt, "info", "analysis", ftrace_before_tracing_start_,
          "ftrace events from before the session's tracing_started (left in the kernel buffer by an earlier "
          "session): dropped, as upstream; preserve_ftrace_buffer keeps them");
  AddStat("ftrace_abi_errors_skipped_zero_data_length", kNullInt, "info", "analysis", abi_zero_data_length_errors_,
          "kernel ring buffer pages with a zero data length, which the recorder skipped");
  AddStat("meminfo_unknown_keys", kNullInt, "error", "analysis", system_probes_.meminfo_unknown_keys(),
          "sys_stats meminfo counters of a key this importer does not name: skipped");
  AddStat("vmstat_unknown_keys", kNullInt, "error", "analysis", system_probes_.vmstat_unknown_keys(),
          "sys_stats vmstat counters of a key this importer does not name: skipped");
  AddStat("invalid_cpu_times", kNullInt, "error", "analysis", system_probes_.invalid_cpu_times(),
          "sys_stats cpu_stat entries without a cpu_id: skipped");
  AddStat("psi_unknown_resource", kNullInt, "error", "analysis", system_probes_.psi_unknown_resource(),
          "sys_stats pressure stall samples of a resource this importer does not name: skipped");
  AddStat("cpu_info_unknown_cpu_features", kNullInt, "info", "analysis", system_probes_.unknown_cpu_features(),
          "CPUs whose CpuInfo features have bits this importer does not name (beyond mte, mte3)");
  AddStat("rss_stat_negative_size", kNullInt, "info", "analysis", rss_stat_.negative_size(),
          "rss_stat events with a negative size (a kernel counter race): skipped, as upstream");
  AddStat("rss_stat_unknown_thread_for_mm_id", kNullInt, "info", "analysis", rss_stat_.unknown_thread_for_mm_id(),
          "rss_stat events of another task's mm (curr 0) whose owner is not known alive: skipped, as upstream");
  AddStat("track_event_parser_errors", kNullInt, "info", "analysis", track_events_.parser_errors(),
          "track events that could not be placed (a uuid with no valid track hierarchy, a thread phase with "
          "no thread, no type or phase): skipped");
  AddStat("track_event_tokenizer_errors", kNullInt, "info", "analysis", track_events_.tokenizer_errors(),
          "track events and descriptors that are malformed (no uuid, a thread without pid and tid, a counter "
          "event without a value or counter track, no timestamp): skipped");
  AddStat("clock_sync_failure", kNullInt, "error", "analysis", track_events_.clock_sync_failures(),
          "track events timed by a clock other than the trace's (boot) clock: skipped, as sluice query does not "
          "convert between clocks");
  AddStat("track_event_unsupported_phases", kNullInt, "info", "analysis", track_events_.unsupported_events(),
          "legacy Chrome track event phases (async ids, v1 flow events, metadata, samples) and state tracks, "
          "which sluice query does not import: skipped");
  AddStat("ftrace_events_unparsable", kNullInt, "error", "analysis", static_cast<int64_t>(unparsable_events_),
          "ftrace events whose bytes are malformed: skipped");
  AddStat("ftrace_events_without_timestamp", kNullInt, "error", "analysis",
          static_cast<int64_t>(events_without_timestamp_), "ftrace events with no timestamp: skipped");
  AddStat("packets_unparsable_import", kNullInt, "error", "analysis",
          static_cast<int64_t>(unparsable_packets_) + system_probes_.unparsable(),
          "packets the importer could not decode: skipped");
  if (!read_status.ok())
    AddStat("trace_file_corrupt", kNullInt, "error", "analysis", 1,
            "the file is corrupt past byte " + std::to_string(file.valid_bytes) +
                ": imported up to there (" + read_status.message() + ")");
}

}  // namespace sluice
