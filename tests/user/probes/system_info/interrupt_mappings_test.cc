#include "user/probes/system_info/interrupt_mappings.h"

#include <gtest/gtest.h>

#include <fstream>
#include <sstream>
#include <string>
#include <vector>

namespace sluice {
namespace {

std::vector<std::pair<uint32_t, std::string>> Pairs(const std::vector<InterruptMapping>& mappings) {
  std::vector<std::pair<uint32_t, std::string>> out;
  for (const InterruptMapping& m : mappings) out.emplace_back(m.irq_id, m.name);
  return out;
}

// A QEMU x86 guest's shape: IO-APIC and PCI-MSI-X lines with the trigger
// in the hardware IRQ field, and the per-CPU rollups at the end.
TEST(InterruptMappingsTest, X86NamesFollowTheTriggerField) {
  const char* text =
      "           CPU0       CPU1       \n"
      "  1:          9          0   IO-APIC   1-edge      i8042\n"
      "  9:          0          0   IO-APIC   9-fasteoi   acpi\n"
      " 28:          0         12 PCI-MSIX-0000:00:01.0   0-edge      virtio0-config\n"
      " 40:          3          4 IR-PCI-MSI-0000:00:1c.0   0-edge      PCIe PME, pciehp\n"
      "NMI:          0          0   Non-maskable interrupts\n"
      "LOC:     123456     654321   Local timer interrupts\n"
      "ERR:          0\n";
  EXPECT_EQ(Pairs(ParseProcInterrupts(text)),
            (std::vector<std::pair<uint32_t, std::string>>{
                {1, "i8042"}, {9, "acpi"}, {28, "virtio0-config"}, {40, "PCIe PME, pciehp"}}));
}

// An arm64 phone's shape: GIC lines with a standalone Level/Edge field,
// names of several words, a chip whose own name has spaces.
TEST(InterruptMappingsTest, ArmNamesFollowLevelOrEdge) {
  const char* text =
      "           CPU0       CPU1       CPU2\n"
      " 11:     100      200      300     GICv3  30 Level     arch_timer\n"
      "300:       1        0        0  a0000.pinctrl   7 Edge      volume up\n"
      "301:       0        0        0  sensor hub IRQ   2 Level     hub wake\n"
      "IPI0:     10       20       30       Rescheduling interrupts\n";
  EXPECT_EQ(Pairs(ParseProcInterrupts(text)),
            (std::vector<std::pair<uint32_t, std::string>>{
                {11, "arch_timer"}, {300, "volume up"}, {301, "hub wake"}}));
}

// Without a trigger field the name is the last field; a line with no field
// beyond the counts, or only a controller, names nothing.
TEST(InterruptMappingsTest, LastFieldWithoutTriggerAndShortLinesSkipped) {
  const char* text =
      "      CPU0  CPU1\n"
      " 50:     0     0  MYCHIP  12  mydevice\n"
      " 51:     0     0\n"
      " 52:     0     0  MYCHIP\n"
      " x3:     0     0  MYCHIP  1-edge  bad_number\n"
      "53:      0     0  MYCHIP  3-edge\n";
  EXPECT_EQ(Pairs(ParseProcInterrupts(text)),
            (std::vector<std::pair<uint32_t, std::string>>{{50, "mydevice"}}));
}

TEST(InterruptMappingsTest, NoCpuHeaderOrEmptyTextGivesNothing) {
  EXPECT_TRUE(ParseProcInterrupts("").empty());
  EXPECT_TRUE(ParseProcInterrupts(" 1: 0 0 IO-APIC 1-edge i8042\n").empty());
}

// The machine's own file parses and names at least one numbered IRQ when
// it lists any (every Linux machine with a timer or a console does).
TEST(InterruptMappingsTest, ThisMachinesProcInterrupts) {
  std::ifstream in("/proc/interrupts");
  ASSERT_TRUE(in.is_open()) << "/proc/interrupts is not readable: is /proc mounted?";
  std::stringstream text;
  text << in.rdbuf();
  const std::vector<InterruptMapping> mappings = ParseProcInterrupts(text.str());
  EXPECT_FALSE(mappings.empty()) << text.str();
  for (const InterruptMapping& m : mappings) EXPECT_FALSE(m.name.empty());
}

}  // namespace
}  // namespace sluice
