// TraceStorage: the imported trace as columns, one struct of vectors per
// Perfetto trace processor table. The importer and its trackers append rows;
// the SQLite virtual tables (query_tables.h) read them.
//
// Column names and meanings follow Perfetto's trace processor tables so that
// queries written for it run unchanged; a row's id is its index. Nullable
// columns use a sentinel (kNullInt, kNullU32, -1 for flags, kNullStringId),
// which the virtual tables turn into SQL NULL. Columns are the narrowest type
// that holds their values: the sched tables have a row per context switch,
// tens of millions of them.
#ifndef SLUICE_USER_QUERY_STORAGE_TRACE_STORAGE_H_
#define SLUICE_USER_QUERY_STORAGE_TRACE_STORAGE_H_

#include <cstdint>
#include <limits>
#include <string>
#include <unordered_map>
#include <vector>

#include "user/query/storage/arg_set_store.h"
#include "user/query/storage/string_pool.h"

namespace sluice {

inline constexpr int64_t kNullInt = std::numeric_limits<int64_t>::min();
inline constexpr uint32_t kNullU32 = std::numeric_limits<uint32_t>::max();

// `sched` (alias `sched_slice`): one row per time a thread ran on a CPU,
// from the sched_switch that put it there to the one that took it off.
struct SchedSliceTable {
  std::vector<int64_t> ts;
  std::vector<int64_t> dur;        // -1 while still running at trace end
  std::vector<uint32_t> cpu;
  std::vector<uint32_t> utid;
  std::vector<StringId> end_state; // prev_state of the closing switch ("S", "R+", ...)
  std::vector<int32_t> priority;
  size_t size() const { return ts.size(); }
  void Reserve(size_t rows) {
    ts.reserve(rows), dur.reserve(rows), cpu.reserve(rows), utid.reserve(rows);
    end_state.reserve(rows), priority.reserve(rows);
  }
  static constexpr size_t kRowBytes = 8 + 8 + 4 + 4 + 4 + 4;
};

// `thread_state`: every interval a thread spent Running, runnable (R, R+) or
// blocked (S, D, ...), as Perfetto derives it from switches and wakings.
struct ThreadStateTable {
  std::vector<int64_t> ts;
  std::vector<int64_t> dur;          // -1 when open at trace end
  std::vector<uint32_t> cpu;         // kNullU32 unless Running
  std::vector<uint32_t> utid;
  std::vector<StringId> state;
  std::vector<int8_t> io_wait;       // -1 = NULL
  std::vector<uint32_t> waker_utid;  // kNullU32 = NULL
  // The waker's own row (its Running state) when it woke this one;
  // kNullU32 = NULL (not known, or the waker was not seen running).
  std::vector<uint32_t> waker_id;
  // 1 when the wakeup that made the row came from an interrupt (hardirq or
  // softirq: the waking event's common_flags), 0 when not, -1 = NULL (not
  // known: no flags, or not a wakeup).
  std::vector<int8_t> irq_context;
  // blocked_function by row: only rows a symbolized sched_blocked_reason
  // named (rare), so a map, not a column of every row.
  std::unordered_map<uint32_t, StringId> blocked_function;
  size_t size() const { return ts.size(); }
  void Reserve(size_t rows) {
    ts.reserve(rows), dur.reserve(rows), cpu.reserve(rows), utid.reserve(rows);
    state.reserve(rows), io_wait.reserve(rows), waker_utid.reserve(rows), waker_id.reserve(rows);
    irq_context.reserve(rows);
  }
  static constexpr size_t kRowBytes = 8 + 8 + 4 + 4 + 4 + 1 + 4 + 4 + 1;
};

// `thread`: utid is the row index; utid 0 is the idle thread (tid 0).
struct ThreadTable {
  std::vector<int64_t> tid;
  std::vector<StringId> name;
  std::vector<int64_t> start_ts;       // kNullInt
  std::vector<int64_t> end_ts;         // kNullInt
  std::vector<uint32_t> upid;          // kNullU32
  std::vector<int8_t> is_main_thread;  // -1 = NULL
  std::vector<uint32_t> machine_id;    // MachineTable row; 0 = the host
  size_t size() const { return tid.size(); }
};

// `process`: upid is the row index; upid 0 is the swapper (pid 0).
struct ProcessTable {
  std::vector<int64_t> pid;
  std::vector<StringId> name;
  std::vector<StringId> cmdline;
  std::vector<int64_t> start_ts;       // kNullInt
  std::vector<int64_t> end_ts;         // kNullInt
  std::vector<uint32_t> parent_upid;   // kNullU32
  std::vector<int64_t> uid;            // kNullInt
  std::vector<uint32_t> arg_set_id;    // kNoArgSet; process_tree's is_kthread
  std::vector<uint32_t> machine_id;    // MachineTable row; 0 = the host
  size_t size() const { return pid.size(); }
};

// `cpu`: one row per CPU seen in the trace, with what a CpuInfo packet says
// of it. `cpu` holds the ucpu: the host's CPUs are their numbers, machine m's
// CPU n is m * kMaxCpusPerMachine + n, as upstream numbers them (what sched,
// ftrace_event and the CPU tracks carry as their cpu).
struct CpuTable {
  static constexpr uint32_t kMaxCpusPerMachine = 4096;
  std::vector<uint32_t> cpu;
  std::vector<int64_t> cluster_id;   // 0 unless CpuInfo tells
  std::vector<StringId> processor;   // kNullStringId
  std::vector<int64_t> capacity;     // kNullInt
  std::vector<uint32_t> arg_set_id;  // kNoArgSet
  size_t size() const { return cpu.size(); }
  void Add(uint32_t row_cpu) {
    cpu.push_back(row_cpu), cluster_id.push_back(0), processor.push_back(kNullStringId);
    capacity.push_back(kNullInt), arg_set_id.push_back(kNoArgSet);
  }
};

// `cpu_available_frequencies`: each CPU's frequencies (kHz) from CpuInfo.
struct CpuFreqTable {
  std::vector<uint32_t> ucpu;
  std::vector<int64_t> freq;
  size_t size() const { return ucpu.size(); }
};

// `ftrace_event` (formerly `raw`): every ftrace event, compact_sched included.
struct FtraceEventTable {
  std::vector<int64_t> ts;
  std::vector<StringId> name;
  std::vector<uint32_t> cpu;
  std::vector<uint32_t> utid;
  std::vector<uint32_t> arg_set_id;  // kNoArgSet = NULL
  size_t size() const { return ts.size(); }
  void Reserve(size_t rows) {
    ts.reserve(rows), name.reserve(rows), cpu.reserve(rows), utid.reserve(rows), arg_set_id.reserve(rows);
  }
  static constexpr size_t kRowBytes = 8 + 4 + 4 + 4 + 4;
};

// `track` and its views (thread_track, process_track, counter_track,
// process_counter_track, cpu_counter_track): slices and counters live on
// tracks. Add keeps the columns in step.
struct TrackTable {
  std::vector<StringId> name;     // kNullStringId for thread tracks, as Perfetto
  std::vector<StringId> type;     // "cpu_idle", "thread_execution", "atrace_counter", ...
  std::vector<int8_t> is_counter;
  std::vector<uint32_t> cpu;      // kNullU32 unless a CPU counter track
  std::vector<uint32_t> utid;     // kNullU32 unless a thread track
  std::vector<uint32_t> upid;     // kNullU32 unless a process track
  std::vector<uint32_t> dimension_arg_set_id;  // kNoArgSet = NULL
  std::vector<uint32_t> track_group_id;        // kNullU32 unless compressed (async) tracks
  std::vector<StringId> unit;                  // counter tracks' unit; kNullStringId: NULL
  std::vector<uint32_t> source_arg_set_id;     // track events' descriptor args; kNoArgSet = NULL
  size_t size() const { return name.size(); }
  uint32_t Add(StringId track_name, StringId track_type, bool counter, uint32_t track_cpu, uint32_t track_utid,
               uint32_t track_upid, uint32_t dimensions, uint32_t group = kNullU32) {
    name.push_back(track_name), type.push_back(track_type), is_counter.push_back(counter ? 1 : 0);
    cpu.push_back(track_cpu), utid.push_back(track_utid), upid.push_back(track_upid);
    dimension_arg_set_id.push_back(dimensions), track_group_id.push_back(group), unit.push_back(kNullStringId);
    source_arg_set_id.push_back(kNoArgSet);
    return static_cast<uint32_t>(name.size() - 1);
  }
};

struct CounterTable {
  std::vector<int64_t> ts;
  std::vector<uint32_t> track_id;
  std::vector<double> value;
  std::vector<uint32_t> arg_set_id;  // kNoArgSet = NULL
  size_t size() const { return ts.size(); }
  // Appends a row; returns its index.
  uint32_t Add(int64_t row_ts, uint32_t row_track, double row_value, uint32_t row_args = kNoArgSet) {
    ts.push_back(row_ts), track_id.push_back(row_track), value.push_back(row_value), arg_set_id.push_back(row_args);
    return static_cast<uint32_t>(ts.size() - 1);
  }
};

// `slice`: atrace (and later other) slices on tracks. depth and parent_id
// follow the stack of open slices on the track; dur -1 while still open at
// the end of the trace, as in Perfetto.
struct SliceTable {
  std::vector<int64_t> ts;
  std::vector<int64_t> dur;
  std::vector<uint32_t> track_id;
  std::vector<StringId> category;    // kNullStringId = NULL
  std::vector<StringId> name;
  std::vector<uint32_t> depth;
  std::vector<uint32_t> parent_id;   // kNullU32 = NULL
  std::vector<uint32_t> arg_set_id;  // kNoArgSet = NULL
  size_t size() const { return ts.size(); }
};

// `metadata`: key/value facts about the trace (uuid, uname, sizes).
// `flow`: arrows between slices (track events' flow ids). trace_id is the
// flow id the producer gave.
struct FlowTable {
  std::vector<uint32_t> slice_out;
  std::vector<uint32_t> slice_in;
  std::vector<int64_t> trace_id;     // kNullInt = NULL
  std::vector<uint32_t> arg_set_id;  // kNoArgSet = NULL
  size_t size() const { return slice_out.size(); }
  void Add(uint32_t out, uint32_t in, int64_t id) {
    slice_out.push_back(out), slice_in.push_back(in), trace_id.push_back(id), arg_set_id.push_back(kNoArgSet);
  }
};

// `_linux_interrupt_mapping`: hardware IRQ numbers and their names, from
// InterruptInfo (/proc/interrupts at the start of the trace); the first name
// of each IRQ.
struct InterruptMappingTable {
  std::vector<int64_t> irq_id;
  std::vector<StringId> name;
  size_t size() const { return irq_id.size(); }
};

struct MetadataTable {
  std::vector<StringId> name;
  std::vector<StringId> key_type;   // "single" or "multi"
  std::vector<int64_t> int_value;   // kNullInt
  std::vector<StringId> str_value;  // kNullStringId
  std::vector<uint32_t> machine_id;  // kNullU32 for keys of the whole trace
  size_t size() const { return name.size(); }
};

// `machine`: the host (row 0) and each machine relayed into the trace
// (TracePacket.machine_id), in the order their first packet came. What
// SystemInfo said of each is in `metadata` rows carrying its machine_id.
struct MachineTable {
  std::vector<int64_t> raw_id;  // TracePacket.machine_id; 0 for the host
  std::vector<StringId> name;   // SystemInfo.machine_name; kNullStringId
  size_t size() const { return raw_id.size(); }
};

// `clock_snapshot`: each ClockSnapshot packet's clocks, at the trace time
// (BOOTTIME) of the snapshot; what to_realtime(), to_monotonic() and
// abs_time_str() convert with.
struct ClockSnapshotTable {
  std::vector<int64_t> ts;
  std::vector<int64_t> clock_id;
  std::vector<StringId> clock_name;  // kNullStringId for a clock that is not built in.
  std::vector<int64_t> clock_value;
  std::vector<int64_t> snapshot_id;
  size_t size() const { return ts.size(); }
};

// `stats`: Perfetto's stat names for every counter the trace carries, the
// importer's own findings (source "analysis") included.
struct StatsTable {
  std::vector<StringId> name;
  std::vector<int64_t> idx;          // kNullInt
  std::vector<StringId> severity;    // "info", "data_loss", "error"
  std::vector<StringId> source;      // "trace" or "analysis"
  std::vector<int64_t> value;
  std::vector<StringId> description;
  // The machine the figure is of; kNullU32 for the import's own (upstream's
  // global stats).
  std::vector<uint32_t> machine_id;
  size_t size() const { return name.size(); }
};

struct TraceStorage {
  TraceStorage() : args(&strings) {}
  TraceStorage(const TraceStorage&) = delete;
  TraceStorage& operator=(const TraceStorage&) = delete;

  StringPool strings;
  ArgSetStore args;
  SchedSliceTable sched;
  ThreadStateTable thread_state;
  ThreadTable thread;
  ProcessTable process;
  CpuTable cpu;
  MachineTable machine;
  CpuFreqTable cpu_freq;
  FtraceEventTable ftrace_event;
  TrackTable track;
  CounterTable counter;
  SliceTable slice;
  FlowTable flow;
  InterruptMappingTable interrupt_mapping;
  MetadataTable metadata;
  ClockSnapshotTable clock_snapshot;
  StatsTable stats;
  // trace_bounds: first and last timestamp of any imported event or packet.
  int64_t start_ts = kNullInt;
  int64_t end_ts = kNullInt;

  // Reserves the event tables for a trace file of `file_bytes`, so that
  // they never regrow: regrowing a column of 10-20 M rows copies it and
  // faults in fresh pages for the copy, a quarter of a sched trace's import
  // time. The estimate is an upper bound for uncompressed sched traces (a
  // compact_sched event takes at least 5 bytes: one varint per field; we
  // allow for 6) and the reservation is address space only: pages no row
  // reaches are never touched, so peak RSS does not grow. Capped at half of
  // `memory_bytes` (physical memory) so that a huge file cannot ask for more
  // address space than the machine backs.
  void ReserveForTraceFile(uint64_t file_bytes, uint64_t memory_bytes);

  void ExtendBounds(int64_t ts) {
    if (start_ts == kNullInt || ts < start_ts) start_ts = ts;
    if (end_ts == kNullInt || ts > end_ts) end_ts = ts;
  }
};

}  // namespace sluice

#endif  // SLUICE_USER_QUERY_STORAGE_TRACE_STORAGE_H_
