// BpfLostRecords: how the BPF source's losses reach upstream
// Perfetto's trace_processor.
//
// trace_processor does not read sluice's BpfStats (TracePacket field 60002).
// What it does read is upstream's own record of a kernel ring buffer that
// lost records: a PerfSample packet with |cpu| and |kernel_records_lost|
// (protos/perfetto/trace/profiling/profile_packet.proto), which it adds up
// per CPU in its `stats` table as perf_cpu_lost_records (severity
// data_loss). A BPF ring buffer that had no room for a record is that very
// event, so the source writes one such packet per CPU that lost records,
// next to each BpfStats packet, carrying the increase since the previous
// one (readers add them up):
//
//   lost(cpu) = dropped                 the program's reserve failed
//             + decode_errors           read, but could not be decoded
//             + unaccounted(cpu)        final packet only: produced and
//                                       neither delivered nor dropped
//                                       (a record of a CPU without a writer
//                                       in shared-ring mode, or a bug)
//
// Not in it: program_misses (runs the kernel skipped; the CPU is unknown,
// so no per-CPU figure exists: every CPU's next bundle is flagged
// lost_events instead, which trace_processor shows as
// ftrace_cpu_has_data_loss). `sluice stats` keeps reading BpfStats, so
// nothing is counted twice there. docs/ARCHITECTURE.md, loss ledger rows
// 10-15.
#ifndef SLUICE_USER_PROBES_BPF_BPF_LOST_RECORDS_H_
#define SLUICE_USER_PROBES_BPF_BPF_LOST_RECORDS_H_

#include <cstdint>
#include <vector>

#include "user/probes/bpf/bpf_data_source.h"

namespace sluice {

struct BpfLostRecords {
  uint32_t cpu = 0;
  uint64_t records = 0;  // lost since the previous report of this CPU
};

// lost(cpu) above, from one CPU's counters; |final_counters| when the
// programs are detached and the rings drained (BpfStats phase END).
uint64_t BpfLostRecordsOfCpu(const BpfCpuStats& counters, bool final_counters);

// The CPUs whose lost(cpu) grew since the previous call, by how much.
// |reported| (index = CPU) is what was reported so far, updated. Called by
// the one thread that writes the stats packets (the reader thread, then
// Stop() after joining it).
std::vector<BpfLostRecords> NextBpfLostRecords(const BpfSourceStats& counters, bool final_counters,
                                               std::vector<uint64_t>* reported);

}  // namespace sluice

#endif  // SLUICE_USER_PROBES_BPF_BPF_LOST_RECORDS_H_
