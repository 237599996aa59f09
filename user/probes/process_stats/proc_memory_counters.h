// The per-process counters linux.process_stats polls (proc_stats_poll_ms),
// read from /proc/PID/status, /proc/PID/oom_score_adj, /proc/PID/stat and,
// with scan_smaps_rollup, /proc/PID/smaps_rollup, as the fields of
// ProcessStats.Process (protos/perfetto/trace/ps/process_stats.proto).
//
// Kernel threads have a status file without Vm* lines: ParseProcStatus says
// so (has_memory false) and the poller stops reading them.
#ifndef SLUICE_USER_PROBES_PROCESS_STATS_PROC_MEMORY_COUNTERS_H_
#define SLUICE_USER_PROBES_PROCESS_STATS_PROC_MEMORY_COUNTERS_H_

#include <cstdint>
#include <optional>
#include <string_view>

namespace sluice {

// Each counter, or nullopt where /proc did not say. Sizes in kB as /proc
// gives them; runtimes in ns.
struct ProcMemoryCounters {
  bool has_memory = false;  // VmSize was there: a user process.
  std::optional<uint64_t> vm_size_kb, vm_rss_kb, rss_anon_kb, rss_file_kb, rss_shmem_kb, vm_swap_kb,
      vm_locked_kb, vm_hwm_kb;
  std::optional<int64_t> oom_score_adj;
  // smaps_rollup.
  std::optional<uint64_t> smr_rss_kb, smr_pss_kb, smr_pss_anon_kb, smr_pss_file_kb, smr_pss_shmem_kb,
      smr_swap_pss_kb;
  // stat: utime and stime.
  std::optional<uint64_t> runtime_user_mode_ns, runtime_kernel_mode_ns;

  bool operator==(const ProcMemoryCounters&) const = default;
};

// The Vm*/Rss* lines of /proc/PID/status ("VmRSS:\t    1234 kB").
void ParseProcStatus(std::string_view status, ProcMemoryCounters* out);
// The Rss/Pss* lines of /proc/PID/smaps_rollup.
void ParseSmapsRollup(std::string_view rollup, ProcMemoryCounters* out);
// utime and stime (fields 14 and 15) of /proc/PID/stat, in clock ticks of
// `ticks_per_second`; the comm (field 2) may hold spaces and parentheses,
// so the fields are counted after its last ')'. False if malformed.
bool ParseProcStatRuntimes(std::string_view stat, long ticks_per_second, ProcMemoryCounters* out);
// Field `n` (1-based, as proc(5) numbers them; n >= 3) of /proc/PID/stat as
// an unsigned number; nullopt if absent or not a number.
std::optional<uint64_t> ProcStatField(std::string_view stat, int n);
// starttime (field 22): when the process started, in ns since boot
// (BOOTTIME, the trace's clock), as upstream's process_start_from_boot.
std::optional<uint64_t> ParseProcStartFromBootNs(std::string_view stat, long ticks_per_second);

}  // namespace sluice

#endif  // SLUICE_USER_PROBES_PROCESS_STATS_PROC_MEMORY_COUNTERS_H_
