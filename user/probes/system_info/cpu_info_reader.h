// What linux.system_info's CpuInfo packet says of each CPU, read as
// upstream's traced_probes reads it:
//
//   /proc/cpuinfo   one block per "processor : N" line, ended by an empty
//                   line; "Processor" (arm's model line, capital P) names
//                   the CPUs whose blocks end after it, else "unknown";
//                   arm's "CPU implementer",
//                   "architecture", "variant", "part", "revision" (hex but
//                   architecture and revision); "Features" (arm) gives
//                   the feature bits trace processors know (bit 0 mte,
//                   bit 1 mte3). A line that is not "key : value" is
//                   skipped.
//   cpufreq         /sys/devices/system/cpu/cpuN/cpufreq/
//                   scaling_available_frequencies and
//                   scaling_boost_frequencies, ascending, each once (kHz).
//   capacity        /sys/devices/system/cpu/cpuN/cpu_capacity (arm's
//                   relative CPU capacity), when the file exists.
#ifndef SLUICE_USER_PROBES_SYSTEM_INFO_CPU_INFO_READER_H_
#define SLUICE_USER_PROBES_SYSTEM_INFO_CPU_INFO_READER_H_

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace sluice {

struct CpuDescription {
  uint32_t index = 0;  // /proc/cpuinfo's "processor" number
  std::string processor = "unknown";
  std::optional<uint32_t> implementer, architecture, variant, part, revision;
  uint64_t features = 0;
  bool has_arm_identifier() const { return implementer && architecture && variant && part && revision; }
};

// The CPUs of a /proc/cpuinfo text, in its order.
std::vector<CpuDescription> ParseProcCpuinfo(std::string_view text);

// cpuN's frequencies (kHz, ascending, each once) and capacity under
// `sysfs_cpu_dir` (/sys/devices/system/cpu); none when the files are not
// there (no cpufreq driver, not arm).
std::vector<uint32_t> ReadCpuFrequencies(const std::string& sysfs_cpu_dir, uint32_t cpu);
std::optional<uint32_t> ReadCpuCapacity(const std::string& sysfs_cpu_dir, uint32_t cpu);

}  // namespace sluice

#endif  // SLUICE_USER_PROBES_SYSTEM_INFO_CPU_INFO_READER_H_
