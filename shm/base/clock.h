// Clock reads in nanoseconds. CLOCK_BOOTTIME is the trace's clock: the kernel
// stamps ftrace events and BPF records (bpf_ktime_get_boot_ns) with it, and
// Perfetto's trace_processor takes BUILTIN_CLOCK_BOOTTIME as its default.
#ifndef SLUICE_SHM_BASE_CLOCK_H_
#define SLUICE_SHM_BASE_CLOCK_H_

#include <time.h>

#include <cstdint>

namespace sluice {

inline uint64_t ClockNs(clockid_t clock) {
  struct timespec ts;
  clock_gettime(clock, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1'000'000'000ull + static_cast<uint64_t>(ts.tv_nsec);
}

inline uint64_t BootTimeNs() { return ClockNs(CLOCK_BOOTTIME); }

}  // namespace sluice

#endif  // SLUICE_SHM_BASE_CLOCK_H_
