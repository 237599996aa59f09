// TraceHealth: the loss and health figures of a finished trace, read from the
// trace alone (the same figures Perfetto's trace_processor puts in its `stats`
// table). Used by `sluice stats`, by the summary `sluice record` prints, and by
// the end-to-end tests and vm-test checkers.
#ifndef SLUICE_USER_TRACE_TRACE_HEALTH_H_
#define SLUICE_USER_TRACE_TRACE_HEALTH_H_

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "shm/base/status.h"
#include "user/trace/trace_file_reader.h"

namespace sluice {

struct HealthRow {
  std::string name;      // Stat name, e.g. "ftrace_cpu_overrun_delta".
  int64_t index = -1;    // CPU or buffer index; -1 when the stat has none.
  std::string severity;  // "data_loss", "error" or "info".
  std::string source;    // Stage: "kernel ftrace buffer", "central buffer", ...
  int64_t value = 0;
  std::string explanation;  // What it means and which knob fixes it.
};

// A machine relayed into the trace (docs/RELAY.md): its packets carry
// TracePacket.machine_id. The relay's figures come from the host's final
// TraceStats (sluice_service_stats.relay_machines), or from the TraceStats
// stamped with the machine when the host's has none for it.
struct MachineHealth {
  uint32_t machine_id = 0;
  std::string name;           // The relay's machine_name; "" when not said.
  uint64_t packets = 0;       // Packets stamped with its machine_id.
  uint64_t sync_packets = 0;  // RemoteClockSync packets the host wrote for it.
  bool has_relay_stats = false;
  uint64_t connects = 0, disconnects = 0;
  uint64_t chunks_dropped = 0, packets_dropped = 0, bytes_dropped = 0, chunks_lost_in_transit = 0;
  int64_t clock_offset_ns = 0;
  uint64_t clock_error_ns = 0, clock_syncs = 0, max_clock_error_ns = 0;
  // Its TraceStats' buffer_stats[i].trace_writer_packet_loss: the chunks it
  // lost (dropped or in transit) by buffer; the same chunks as above.
  std::map<int, uint64_t> buffer_chunks_lost;
  uint64_t ftrace_lost_event_bundles = 0;  // Its bundles marked lost_events.
  uint64_t ftrace_overrun = 0;  // Its FtraceStats' overrun, end - start, over CPUs.
};

struct TraceHealth {
  TraceFileSummary file;
  std::vector<HealthRow> rows;  // Non-zero figures only.
  uint64_t ftrace_events = 0;   // Events in FtraceEventBundles (incl. compact_sched).
  std::map<std::string, uint64_t> events_by_name;
  uint64_t sequences = 0;
  bool has_trace_stats = false;
  bool has_ftrace_stats_end = false;
  // How the ftrace source read each CPU's kernel buffer: CPU ->
  // sluice.protos.FtraceReadPath (FtraceCpuStats.sluice_read_path, from the
  // end-of-trace FtraceStats, or the start's in a trace without an end).
  // Empty for traces without it (upstream's, older sluice's).
  std::map<uint32_t, int> ftrace_read_paths;
  // CPU -> the most of its ftrace buffer a reader took in one wake-up, in
  // percent (FtraceCpuStats.sluice_most_pages_per_wake), where the trace says.
  std::map<uint32_t, uint64_t> ftrace_peak_fill_percent;
  // The readers' watermark (FtraceStats.sluice_buffer_percent) at the start
  // and at the end of the trace, -1 where the trace does not say.
  int64_t ftrace_watermark_start = -1;
  int64_t ftrace_watermark_end = -1;
  // Relayed machines by machine_id; their losses are also rows (relay_*,
  // idx = machine_id), so they count in data_loss_total.
  std::vector<MachineHealth> machines;
  uint64_t data_loss_total() const;
};

StatusOr<TraceHealth> AnalyzeTraceFile(const std::string& path);

// The same analysis fed packet by packet, for readers that walk the file
// themselves (sluice query's importer) and should not read it twice.
class TraceHealthCollector {
 public:
  TraceHealthCollector();
  ~TraceHealthCollector();
  void AddPacket(std::string_view packet);
  TraceHealth Finish(const TraceFileSummary& file);

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};
StatusOr<TraceHealth> AnalyzeTraceBytes(std::string_view bytes);

// Prints the table (name, idx, severity, source, value) with explanations.
std::string FormatHealthTable(const TraceHealth& health);

// One line per relayed machine (name, id, packets, what its relay dropped
// and lost in transit, the clock offset and its error bound, syncs), under
// a heading; "" for a trace of one machine.
std::string FormatMachines(const TraceHealth& health);

// "ftrace read path: mapped on CPUs 0-3; splice on CPU 4\n", or "" when the
// trace does not say.
std::string FormatFtraceReadPaths(const TraceHealth& health);

// "ftrace buffer peak fill: 66% on CPU 0, 89% on CPU 1 (...)\n", or "" when
// the trace does not say.
std::string FormatFtracePeakFill(const TraceHealth& health);

// "ftrace reader watermark: 50% -> 25% (lowered by sluice: ...)\n" (start
// -> end), "ftrace reader watermark: 50% (...)\n" when it did not change, or
// "" when the trace does not say.
std::string FormatFtraceWatermark(const TraceHealth& health);

}  // namespace sluice

#endif  // SLUICE_USER_TRACE_TRACE_HEALTH_H_
