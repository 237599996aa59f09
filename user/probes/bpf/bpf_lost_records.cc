#include "user/probes/bpf/bpf_lost_records.h"

namespace sluice {

uint64_t BpfLostRecordsOfCpu(const BpfCpuStats& counters, bool final_counters) {
  uint64_t lost = counters.dropped + counters.decode_errors;
  // Before the end, records in flight (reserved, not yet read) would look
  // unaccounted: only the final counters say which never arrived.
  const uint64_t settled = counters.delivered + counters.dropped;
  if (final_counters && counters.produced > settled) lost += counters.produced - settled;
  return lost;
}

std::vector<BpfLostRecords> NextBpfLostRecords(const BpfSourceStats& counters, bool final_counters,
                                               std::vector<uint64_t>* reported) {
  std::vector<BpfLostRecords> out;
  if (reported->size() < counters.per_cpu.size()) reported->resize(counters.per_cpu.size(), 0);
  for (uint32_t cpu = 0; cpu < counters.per_cpu.size(); cpu++) {
    const uint64_t lost = BpfLostRecordsOfCpu(counters.per_cpu[cpu], final_counters);
    uint64_t& before = (*reported)[cpu];
    if (lost <= before) continue;
    out.push_back(BpfLostRecords{cpu, lost - before});
    before = lost;
  }
  return out;
}

}  // namespace sluice
