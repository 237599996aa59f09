#include "user/probes/ftrace/ftrace_watermark.h"

namespace sluice {

bool FtraceBufferFillsFast(uint64_t buffer_bytes, uint64_t bytes, uint64_t elapsed_ms) {
  // fill time = buffer_bytes * elapsed_ms / bytes < kFastFillMs, without
  // dividing (bytes may be 0); the products fit in 64 bits for any real
  // buffer, rate and interval.
  if (buffer_bytes == 0 || elapsed_ms == 0) return false;
  return buffer_bytes * elapsed_ms < bytes * kFastFillMs;
}

bool FtraceNearMiss(uint64_t most_pages, uint64_t buffer_pages) {
  return buffer_pages != 0 && most_pages * 100 >= buffer_pages * kNearMissPercent;
}

}  // namespace sluice
