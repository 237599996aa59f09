// The kernel's CPU list format ("0-3,8,10-11"), as in
// /sys/devices/system/cpu/online and possible.
#ifndef SLUICE_SHM_BASE_CPU_LIST_H_
#define SLUICE_SHM_BASE_CPU_LIST_H_

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "shm/base/status.h"

namespace sluice {

inline constexpr const char kOnlineCpusPath[] = "/sys/devices/system/cpu/online";

// The CPUs listed, sorted and unique. Empty text is an empty list; a malformed
// item (not a number, a reversed range, a CPU number past 8191) is an error.
StatusOr<std::vector<uint32_t>> ParseCpuList(std::string_view text);

// ParseCpuList of the file at `path`.
StatusOr<std::vector<uint32_t>> ReadCpuList(const std::string& path);

// The list in that format, runs of consecutive CPUs as ranges: {0,1,2,5} ->
// "0-2,5". `cpus` sorted and unique, as ParseCpuList returns them.
std::string FormatCpuList(const std::vector<uint32_t>& cpus);

}  // namespace sluice

#endif  // SLUICE_SHM_BASE_CPU_LIST_H_
