#include "user/probes/system_info/system_info_data_source.h"

#include <sys/sysinfo.h>
#include <sys/utsname.h>
#include <time.h>
#include <unistd.h>

#include <fstream>
#include <optional>
#include <sstream>
#include <vector>

#include "perfetto/common/system_info.pb.h"
#include "perfetto/trace/trace_packet.pb.h"
#include "perfetto/trace/system_info/cpu_info.pb.h"
#include "perfetto/trace/system_info/interrupt_info.pb.h"
#include "shm/base/clock.h"
#include "user/probes/system_info/cpu_info_reader.h"
#include "user/probes/system_info/interrupt_mappings.h"

namespace sluice {
namespace {

// CpuInfo: each CPU of /proc/cpuinfo with its frequencies and capacity
// (cpu_info_reader.h), as upstream's linux.system_info writes it.
void WriteCpuInfoPacket(TraceWriter* writer) {
  using perfetto::protos::CpuInfo;
  using perfetto::protos::TracePacket;
  std::ifstream in("/proc/cpuinfo");
  if (!in.is_open()) return;
  std::stringstream text;
  text << in.rdbuf();
  const std::vector<CpuDescription> cpus = ParseProcCpuinfo(text.str());
  if (cpus.empty()) return;
  const std::string sysfs = "/sys/devices/system/cpu";
  auto packet = writer->NewTracePacket();
  packet->WriteVarInt(TracePacket::kTimestampFieldNumber, BootTimeNs());
  packet->BeginNested(TracePacket::kCpuInfoFieldNumber);
  for (const CpuDescription& cpu : cpus) {
    packet->BeginNested(CpuInfo::kCpusFieldNumber);
    packet->WriteString(CpuInfo::Cpu::kProcessorFieldNumber, cpu.processor);
    for (uint32_t freq : ReadCpuFrequencies(sysfs, cpu.index))
      packet->WriteVarInt(CpuInfo::Cpu::kFrequenciesFieldNumber, freq);
    if (std::optional<uint32_t> capacity = ReadCpuCapacity(sysfs, cpu.index))
      packet->WriteVarInt(CpuInfo::Cpu::kCapacityFieldNumber, *capacity);
    if (cpu.has_arm_identifier()) {
      using Arm = CpuInfo::ArmCpuIdentifier;
      packet->BeginNested(CpuInfo::Cpu::kArmIdentifierFieldNumber);
      packet->WriteVarInt(Arm::kImplementerFieldNumber, *cpu.implementer);
      packet->WriteVarInt(Arm::kArchitectureFieldNumber, *cpu.architecture);
      packet->WriteVarInt(Arm::kVariantFieldNumber, *cpu.variant);
      packet->WriteVarInt(Arm::kPartFieldNumber, *cpu.part);
      packet->WriteVarInt(Arm::kRevisionFieldNumber, *cpu.revision);
      packet->EndNested();
    }
    if (cpu.features != 0) packet->WriteVarInt(CpuInfo::Cpu::kFeaturesFieldNumber, cpu.features);
    packet->EndNested();
  }
  packet->EndNested();
  packet.Finalize();
}

}  // namespace

std::string WriteSystemInfoPacket(TraceWriter* writer, bool irq_names) {
  using perfetto::protos::SystemInfo;
  using perfetto::protos::TracePacket;
  using perfetto::protos::Utsname;
  auto packet = writer->NewTracePacket();
  packet->WriteVarInt(TracePacket::kTimestampFieldNumber, BootTimeNs());
  packet->BeginNested(TracePacket::kSystemInfoFieldNumber);
  struct utsname uts;
  if (uname(&uts) == 0) {
    packet->BeginNested(SystemInfo::kUtsnameFieldNumber);
    packet->WriteString(Utsname::kSysnameFieldNumber, uts.sysname);
    packet->WriteString(Utsname::kVersionFieldNumber, uts.version);
    packet->WriteString(Utsname::kReleaseFieldNumber, uts.release);
    packet->WriteString(Utsname::kMachineFieldNumber, uts.machine);
    packet->EndNested();
  }
  packet->WriteString(SystemInfo::kTracingServiceVersionFieldNumber, "sluice 0.1");
  packet->WriteVarInt(SystemInfo::kPageSizeFieldNumber, static_cast<uint64_t>(sysconf(_SC_PAGESIZE)));
  packet->WriteVarInt(SystemInfo::kNumCpusFieldNumber,
                      static_cast<uint64_t>(sysconf(_SC_NPROCESSORS_CONF)));
  packet->WriteInt(SystemInfo::kHzFieldNumber, sysconf(_SC_CLK_TCK));
  struct sysinfo si;
  if (sysinfo(&si) == 0)
    packet->WriteVarInt(SystemInfo::kSystemRamBytesFieldNumber,
                        static_cast<uint64_t>(si.totalram) * si.mem_unit);
  time_t now = time(nullptr);
  struct tm local;
  if (localtime_r(&now, &local))
    packet->WriteInt(SystemInfo::kTimezoneOffMinsFieldNumber, local.tm_gmtoff / 60);
  packet->EndNested();
  packet.Finalize();
  WriteCpuInfoPacket(writer);
  std::string warning;
  if (irq_names) {
    std::ifstream in("/proc/interrupts");
    std::stringstream text;
    if (in.is_open()) text << in.rdbuf();
    if (!in.is_open() || in.bad()) {
      warning = "linux.system_info: cannot read /proc/interrupts (is /proc mounted?): the trace names no IRQs";
    } else {
      using perfetto::protos::InterruptInfo;
      const std::vector<InterruptMapping> mappings = ParseProcInterrupts(text.str());
      if (!mappings.empty()) {
        auto irq_packet = writer->NewTracePacket();
        irq_packet->WriteVarInt(TracePacket::kTimestampFieldNumber, BootTimeNs());
        irq_packet->BeginNested(TracePacket::kInterruptInfoFieldNumber);
        for (const InterruptMapping& m : mappings) {
          irq_packet->BeginNested(InterruptInfo::kIrqMappingFieldNumber);
          irq_packet->WriteVarInt(InterruptInfo::InterruptMapping::kIrqIdFieldNumber, m.irq_id);
          irq_packet->WriteString(InterruptInfo::InterruptMapping::kNameFieldNumber, m.name);
          irq_packet->EndNested();
        }
        irq_packet->EndNested();
        irq_packet.Finalize();
      }
    }
  }
  writer->Flush();
  return warning;
}

}  // namespace sluice
