#include "user/query/storage/trace_storage.h"

#include <algorithm>
#include <new>

namespace sluice {

void TraceStorage::ReserveForTraceFile(uint64_t file_bytes, uint64_t memory_bytes) {
  // Per event: an ftrace_event row, at most one sched row (a switch) and two
  // thread_state rows (a switch ends one interval of each of its tasks).
  constexpr uint64_t kBytesPerEvent = 6;
  constexpr uint64_t kReservedPerEvent =
      FtraceEventTable::kRowBytes + SchedSliceTable::kRowBytes + 2 * ThreadStateTable::kRowBytes;
  uint64_t events = std::min(file_bytes / kBytesPerEvent, memory_bytes / 2 / kReservedPerEvent);
  try {
    ftrace_event.Reserve(events);
    sched.Reserve(events);
    thread_state.Reserve(2 * events);
  } catch (const std::bad_alloc&) {
    // Address space refused (strict overcommit): the columns grow as needed.
  }
}

}  // namespace sluice
