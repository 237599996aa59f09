// The readers' wake-up watermark (the instance's buffer_percent) when the
// config leaves it to sluice (no FtraceConfig.drain_buffer_percent).
//
// A worker sleeps until its CPU's buffer is buffer_percent full, then needs
// a CPU to run on before the rest of the buffer fills, or the kernel
// overwrites events. At the kernel's default of 50 that slack is half the
// time the buffer takes to fill. On this project's 2-CPU machine at the
// highest rate (1 MiB per CPU filling in about 33 ms), the most a reader
// took in one wake-up (FtraceCpuStats.sluice_most_pages_per_wake) reached
// 53-100% of the buffer: 16 ms of slack was sometimes all used, and one run
// in five to ten lost events. At 25% the same runs peaked at 25-65%. At a
// moderate rate (the buffer filling in about 300 ms) the peaks stayed near
// 50%, and waking twice as often there cost about a tenth more reader CPU
// (docs/PERFORMANCE.md). So the data source keeps the kernel's watermark
// and lowers it, for the rest of the trace, once a CPU's buffer fills
// faster than kFastFillMs at the rate of the last second, or at once when a
// reader found it kNearMissPercent full (a burst that the second's average
// hides, or the first watermark of one).
#ifndef SLUICE_USER_PROBES_FTRACE_FTRACE_WATERMARK_H_
#define SLUICE_USER_PROBES_FTRACE_FTRACE_WATERMARK_H_

#include <cstdint>

namespace sluice {

inline constexpr uint32_t kFastFillMs = 100;
inline constexpr uint32_t kFastFillBufferPercent = 25;
inline constexpr uint32_t kNearMissPercent = 75;

// Whether a buffer of `buffer_bytes` that received `bytes` in `elapsed_ms`
// fills in less than kFastFillMs.
bool FtraceBufferFillsFast(uint64_t buffer_bytes, uint64_t bytes, uint64_t elapsed_ms);

// The pages one wake-up takes from a buffer of `buffer_pages` when it was
// kNearMissPercent full (rounded up); 0 for an unknown buffer size.
uint64_t FtraceNearMissPages(uint64_t buffer_pages);

// Whether a reader that took `most_pages` in one wake-up (FtraceReaderWakeStats)
// found its buffer of `buffer_pages` at least kNearMissPercent full.
bool FtraceNearMiss(uint64_t most_pages, uint64_t buffer_pages);

}  // namespace sluice

#endif  // SLUICE_USER_PROBES_FTRACE_FTRACE_WATERMARK_H_
