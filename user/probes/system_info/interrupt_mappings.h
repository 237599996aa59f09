// The IRQ number -> name mappings of /proc/interrupts, for the
// linux.system_info data source's InterruptInfo packet (irq_names), with the
// names upstream's traced_probes gives:
//
//   - The header line's "CPUn" columns say how many count columns follow
//     each "N:" (a line without a CPU header gives nothing).
//   - Only numbered lines count ("24:"); the per-CPU rollups (NMI, LOC, IPI0,
//     ...) are not hardware IRQs.
//   - After the counts come the controller's fields and then the name: the
//     name starts after the trigger field (ARM's "Level" / "Edge", x86's
//     "5-edge", "7-fasteoi", "-level") nearest the end, else it is the last
//     field. It may hold spaces ("PCIe PME, PCIe bwctrl"); fields are joined
//     with single spaces.
//   - A line must have at least one controller field before the name, and a
//     name: "888:  0  0" and "889:  0  0  GIC-400" give nothing.
#ifndef SLUICE_USER_PROBES_SYSTEM_INFO_INTERRUPT_MAPPINGS_H_
#define SLUICE_USER_PROBES_SYSTEM_INFO_INTERRUPT_MAPPINGS_H_

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace sluice {

struct InterruptMapping {
  uint32_t irq_id = 0;
  std::string name;
};

// The mappings of a /proc/interrupts text, in its order.
std::vector<InterruptMapping> ParseProcInterrupts(std::string_view text);

}  // namespace sluice

#endif  // SLUICE_USER_PROBES_SYSTEM_INFO_INTERRUPT_MAPPINGS_H_
