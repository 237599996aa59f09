// linux.system_info: one SystemInfo packet (uname, page size, CPUs, clock
// tick, RAM, timezone, service version) at the start of the trace, so that a
// trace says what machine it came from; a CpuInfo packet (each CPU's model,
// frequencies, capacity, arm identifier; cpu_info_reader.h), as upstream's
// linux.system_info writes it; with the config's irq_names, also an
// InterruptInfo packet naming the hardware IRQs of /proc/interrupts (what
// irq_handler_entry's numbers are).
#ifndef SLUICE_USER_PROBES_SYSTEM_INFO_SYSTEM_INFO_DATA_SOURCE_H_
#define SLUICE_USER_PROBES_SYSTEM_INFO_SYSTEM_INFO_DATA_SOURCE_H_

#include <string>

#include "shm/trace_writer.h"

namespace sluice {

// Writes the SystemInfo and CpuInfo packets (and, if `irq_names`, the
// InterruptInfo one)
// through `writer` and flushes it. An unreadable /proc/interrupts writes no
// InterruptInfo and returns its one-line warning; else "".
std::string WriteSystemInfoPacket(TraceWriter* writer, bool irq_names = false);

}  // namespace sluice

#endif  // SLUICE_USER_PROBES_SYSTEM_INFO_SYSTEM_INFO_DATA_SOURCE_H_
