#include "user/probes/ftrace/ftrace_watermark.h"

namespace sluice {

bool FtraceBufferFillsFast(uint64_t buffer_bytes, uint64_t bytes, uint64_t elapsed_ms) {
  // fill time = buffer_bytes * elapsed_ms / bytes < kFastFillMs, without
  // dividing (bytes may be 0); the products fit in 64 bits for any real
  // buffer, rate and interval.
  if (buffer_bytes == 0 || elapsed_ms == 0) return false;
  return buffer_bytes * elapsed_ms < bytes * kFastFillMs;
}

uint64_t FtraceNearMissPages(uint64_t buffer_pages) {
  return (buffer_pages * kNearMissPercent + 99) / 100;
}

bool FtraceNearMiss(uint64_t most_pages, uint64_t buffer_pages) {
  return buffer_pages != 0 && most_pages >= FtraceNearMissPages(buffer_pages);
}

}  // namespace sluice
