#include "shm/base/heap_retention.h"

#include <malloc.h>

namespace sluice {

bool RetainFreedHeap() {
  // Setting either turns off glibc's sliding mmap threshold, so both are set:
  // 32 MiB is also the most that threshold would have slid to on 64-bit.
  const bool trim = mallopt(M_TRIM_THRESHOLD, kRetainedHeapBytes) == 1;
  const bool mmap = mallopt(M_MMAP_THRESHOLD, kRetainedHeapBytes) == 1;
  return trim && mmap;
}

}  // namespace sluice
