// SystemProbesImporter: what upstream's system probes write about the
// machine, as its trace processor imports it.
//
//   - CpuInfo: the `cpu` table's processor, capacity, cluster_id and args
//     (cpu_features.mte/mte3/raw_bitmap, arm_cpu_*), and
//     cpu_available_frequencies. CPUs are clustered by capacity when every
//     CPU has one, else by their highest frequency when every CPU has some,
//     else all in cluster 0; a cluster is a run of equal values in
//     ascending order. Written at the end, once the cpu rows exist.
//   - SysStats, at the packet's time: /proc/meminfo (bytes) and
//     /proc/vmstat counters named by their kernel keys, cpufreq_khz on the
//     CPUs' cpufreq tracks, per-CPU times (cpu.times.*), fork, IRQ and
//     softirq counts, disk stats (diskstat.[dev].<counter>,
//     amounts in MB and rates in MB/s between a device's samples, nothing
//     for its first), thermal zones named by type, cpuidle residency per
//     CPU and state, and the GPU frequency, with upstream's track types,
//     dimensions and units; devfreq frequencies ("<device> Frequency"),
//     buddyinfo free chunks per node, zone and chunk size, pressure stall
//     totals (psi.<resource>) and slab sizes (mem.slab.<name>, bytes).
//   - BatteryCounters (linux.sysfs_power, android.power), at the packet's
//     time: batt.[<battery>.]<counter> tracks (charge_uah, capacity_pct,
//     current_ua, current.avg_ua, voltage_uv), the charge derived from
//     energy and voltage when the gauge gives no charge, and power_mw from
//     current and voltage, in upstream's integer arithmetic.
//   - InitialDisplayState: the screen state when the trace began, the first
//     value of the ScreenState counter that atrace's C|ScreenState updates.
//   - InterruptInfo: `_linux_interrupt_mapping` (linux.irqs'
//     linux_interrupt_mapping), one row per IRQ number in the order first
//     seen; a mapping without an id or a name, or of a number already
//     named, is skipped, as upstream.
#ifndef SLUICE_USER_QUERY_IMPORTER_SYSTEM_PROBES_IMPORTER_H_
#define SLUICE_USER_QUERY_IMPORTER_SYSTEM_PROBES_IMPORTER_H_

#include <array>
#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "user/query/importer/track_tracker.h"
#include "user/query/storage/trace_storage.h"

namespace sluice {

class SystemProbesImporter {
 public:
  SystemProbesImporter(TraceStorage* storage, TrackTracker* tracks);

  // CpuInfo: kept for the cpu table's columns, written by AddCpuInfoRows.
  // `machine`: the `machine` row whose CPUs it lists (their ucpus).
  void OnCpuInfo(std::string_view bytes, uint32_t machine = 0);
  // The CPUs CpuInfo lists, which have `cpu` rows even without events.
  void AddCpus(std::set<uint32_t>* cpus) const;
  // Fills the cpu rows (made by the importer's Finish) and the frequencies.
  void AddCpuInfoRows();
  void OnSysStats(std::string_view bytes, int64_t ts);
  void OnBattery(std::string_view bytes, int64_t ts);
  void OnInitialDisplayState(std::string_view bytes, int64_t ts);
  void OnInterruptInfo(std::string_view bytes);

  // CPUs whose features have bits beyond mte and mte3
  // (cpu_info_unknown_cpu_features).
  int64_t unknown_cpu_features() const { return cpu_unknown_features_; }
  // Packets whose bytes were malformed.
  int64_t unparsable() const { return unparsable_; }
  // Upstream's stats of the same names.
  int64_t meminfo_unknown_keys() const { return meminfo_unknown_keys_; }
  int64_t vmstat_unknown_keys() const { return vmstat_unknown_keys_; }
  int64_t invalid_cpu_times() const { return invalid_cpu_times_; }
  int64_t psi_unknown_resource() const { return psi_unknown_resource_; }
  // system_info's page_size (4096 when it gives none): buddyinfo's chunk
  // sizes and slab sizes are in pages.
  void SetPageSize(uint32_t page_size) { page_size_ = page_size == 0 ? 4096 : page_size; }

 private:
  struct CpuInfoEntry {
    uint32_t cpu = 0;
    std::string processor;
    std::vector<uint64_t> frequencies;
    int64_t capacity = kNullInt;
    uint64_t features = 0;
    std::optional<std::array<uint64_t, 5>> arm;  // implementer, architecture, variant, part, revision
  };

  static std::string_view MeminfoKeyName(uint64_t key);
  static std::string VmstatKeyName(uint64_t key);

  TraceStorage* storage_;
  TrackTracker* tracks_;
  int64_t meminfo_unknown_keys_ = 0, vmstat_unknown_keys_ = 0, invalid_cpu_times_ = 0, psi_unknown_resource_ = 0;
  uint64_t page_size_ = 4096;
  void AddCpuInfoRows(const std::vector<CpuInfoEntry>& cpu_info);
  std::map<uint32_t, std::vector<CpuInfoEntry>> cpu_info_;  // by machine; the last CpuInfo of each
  int64_t cpu_unknown_features_ = 0;
  int64_t unparsable_ = 0;
  std::set<int64_t> named_irqs_;  // IRQ numbers already in _linux_interrupt_mapping
  std::map<std::string, std::array<int64_t, 8>> disk_stats_;  // device -> last sample
};

}  // namespace sluice

#endif  // SLUICE_USER_QUERY_IMPORTER_SYSTEM_PROBES_IMPORTER_H_
