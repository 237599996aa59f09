// FtraceCpuStats: the kernel's per-CPU ring-buffer counters, from
// <instance>/per_cpu/cpuN/stats, and their encoding as Perfetto's
// FtraceCpuStats message (protos/perfetto/trace/ftrace/ftrace_stats.proto).
//
// The file (kernel/trace/trace.c, tracing_stats_read) looks like:
//
//   entries: 12            events in the buffer now
//   overrun: 0             events overwritten before they were read (overwrite mode)
//   commit overrun: 0      events lost because the buffer wrapped mid-commit
//   bytes: 992             bytes of events in the buffer now
//   oldest event ts:  84844.825372     seconds.micros in the trace clock
//   now ts:  84847.102075
//   dropped events: 0      events refused because the buffer was full (no-overwrite mode)
//   read events: 3         events consumed by readers
//
// Timestamps are "%5llu.%06lu" seconds for nanosecond clocks, but a bare
// integer for counter clocks (counter, x86-tsc). We keep them as the kernel
// printed them (seconds as a double, as upstream's proto stores them) and as
// integer nanoseconds (ticks for counter clocks), parsed without floating
// point. Older kernels lack some lines; missing lines read as 0.
//
// Losses during a trace are END minus START of overrun, commit overrun and
// dropped events: the counters are cumulative since the buffer was last reset
// (resizing it or changing trace_clock resets them).
#ifndef SLUICE_USER_PROBES_FTRACE_FTRACE_CPU_STATS_H_
#define SLUICE_USER_PROBES_FTRACE_FTRACE_CPU_STATS_H_

#include <cstdint>
#include <string>
#include <string_view>

#include "shm/proto_writer.h"
#include "shm/base/status.h"

namespace sluice {

class Tracefs;

struct FtraceCpuStats {
  uint32_t cpu = 0;
  uint64_t entries = 0;
  uint64_t overrun = 0;
  uint64_t commit_overrun = 0;
  uint64_t bytes = 0;  // bytes_read in the proto (a historical misnomer upstream).
  uint64_t dropped_events = 0;
  uint64_t read_events = 0;
  // Seconds as printed; for counter clocks, the raw tick count.
  double oldest_event_ts = 0;
  double now_ts = 0;
  // The same timestamps in integer nanoseconds (ticks for counter clocks).
  uint64_t oldest_event_ts_ns = 0;
  uint64_t now_ts_ns = 0;
};

// Parses the text of per_cpu/cpuN/stats. Unknown lines are ignored; returns
// false if a known line has a malformed value (the fields parsed so far stay).
bool ParseFtraceCpuStats(std::string_view text, FtraceCpuStats* out);

// Parses a stats timestamp ("84844.825372" or "123456") into nanoseconds (or
// ticks) and seconds. Returns false if malformed.
bool ParseFtraceStatsTimestamp(std::string_view text, uint64_t* ns, double* seconds);

// Reads and parses per_cpu/<cpu>/stats of `tracefs`'s instance.
StatusOr<FtraceCpuStats> ReadFtraceCpuStats(const Tracefs& tracefs, uint32_t cpu);

// Writes the fields of one perfetto.protos.FtraceCpuStats message (the body:
// the caller opens and closes the nested message).
void WriteFtraceCpuStatsFields(const FtraceCpuStats& stats, ProtoWriter* writer);

}  // namespace sluice

#endif  // SLUICE_USER_PROBES_FTRACE_FTRACE_CPU_STATS_H_
