// Keeps memory that a recording process frees for its next use, instead of
// glibc giving it back to the kernel and faulting it in again.
//
// Why. Streaming into a file, the service reads each period's packets out of
// its central buffer into heap strings, writes them, and frees them. glibc
// returns the freed top of the thread's arena to the kernel once it exceeds
// 128 KiB (M_TRIM_THRESHOLD, madvise), so the next period faults every page
// in again: 40% of the service thread's CPU in a 10 s profile of `sluice
// record` (docs/PERFORMANCE.md, "Per-thread costs and the choices behind
// them"). Recorders run for hours with the same working set; keeping it
// costs no more than the peak they reached anyway.
#ifndef SLUICE_SHM_BASE_HEAP_RETENTION_H_
#define SLUICE_SHM_BASE_HEAP_RETENTION_H_

namespace sluice {

// Process-wide (mallopt): freed heap is kept up to kRetainedHeapBytes per
// arena, and allocations up to that size come from the heap, where they are
// reused, rather than from a fresh mmap each. For the recording processes
// (sluiced, sluice-probes, `sluice record`), before their threads start.
// False if glibc refused a setting (the process then runs as before).
bool RetainFreedHeap();

inline constexpr int kRetainedHeapBytes = 32 << 20;

}  // namespace sluice

#endif  // SLUICE_SHM_BASE_HEAP_RETENTION_H_
