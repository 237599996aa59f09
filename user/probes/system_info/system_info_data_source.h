// linux.system_info: one SystemInfo packet (uname, page size, CPUs, clock
// tick, RAM, timezone, service version) at the start of the trace, so that a
// trace says what machine it came from.
#ifndef SLUICE_USER_PROBES_SYSTEM_INFO_SYSTEM_INFO_DATA_SOURCE_H_
#define SLUICE_USER_PROBES_SYSTEM_INFO_SYSTEM_INFO_DATA_SOURCE_H_

#include "shm/trace_writer.h"

namespace sluice {

// Writes the SystemInfo packet through `writer` and flushes it.
void WriteSystemInfoPacket(TraceWriter* writer);

}  // namespace sluice

#endif  // SLUICE_USER_PROBES_SYSTEM_INFO_SYSTEM_INFO_DATA_SOURCE_H_
