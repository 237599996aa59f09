// How a session's periodic flush backs off at rest
// (SessionOptions.rest_flush_period_ms): each flush round costs every
// producer thread and the service a wake-up, a millisecond or two of CPU in
// all. That is worth it while data flows (the file stays a period behind),
// not for a trickle: below kRestBytesPerSecond the period doubles, up to
// the ceiling, and one period that brings more puts it back to the base.
// An idle 2-CPU machine with sluice record's default events writes a few
// KiB a second; a moderate workload, megabytes.
#ifndef SLUICE_SERVICE_REST_FLUSH_PERIOD_H_
#define SLUICE_SERVICE_REST_FLUSH_PERIOD_H_

#include <algorithm>
#include <cstdint>

namespace sluice {

// About 2000 events a second.
inline constexpr uint64_t kRestBytesPerSecond = 64 * 1024;

// The next period, from the one that just ended (`period_ms`) and what the
// session took in during it (`intake_bytes`). `base_ms` is the configured
// period, `ceiling_ms` the longest at rest (>= base_ms).
inline uint32_t NextRestFlushPeriodMs(uint32_t period_ms, uint32_t base_ms, uint32_t ceiling_ms,
                                      uint64_t intake_bytes) {
  const bool at_rest = intake_bytes * 1000 < kRestBytesPerSecond * period_ms;
  if (!at_rest) return base_ms;
  return static_cast<uint32_t>(std::min<uint64_t>(uint64_t{period_ms} * 2, ceiling_ms));
}

}  // namespace sluice

#endif  // SLUICE_SERVICE_REST_FLUSH_PERIOD_H_
