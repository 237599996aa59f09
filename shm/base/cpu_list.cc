#include "shm/base/cpu_list.h"

#include <algorithm>

#include "shm/base/file_util.h"
#include "shm/base/string_util.h"

namespace sluice {

StatusOr<std::vector<uint32_t>> ParseCpuList(std::string_view text) {
  std::vector<uint32_t> cpus;
  text = TrimWhitespace(text);
  while (!text.empty()) {
    size_t comma = text.find(',');
    std::string_view item = text.substr(0, comma);
    text = comma == std::string_view::npos ? std::string_view() : text.substr(comma + 1);
    size_t dash = item.find('-');
    uint32_t lo = 0, hi = 0;
    bool ok = dash == std::string_view::npos
                  ? ParseU32(item, &lo) && (hi = lo, true)
                  : ParseU32(item.substr(0, dash), &lo) && ParseU32(item.substr(dash + 1), &hi);
    // NR_CPUS is at most 8192 in the kernel's Kconfig; more is corrupt input.
    if (!ok || hi < lo || hi >= 8192) {
      return Status::Error("malformed CPU list item '" + std::string(item) + "'");
    }
    for (uint32_t c = lo; c <= hi; c++) cpus.push_back(c);
  }
  std::sort(cpus.begin(), cpus.end());
  cpus.erase(std::unique(cpus.begin(), cpus.end()), cpus.end());
  return cpus;
}

StatusOr<std::vector<uint32_t>> ReadCpuList(const std::string& path) {
  SLUICE_ASSIGN_OR_RETURN(std::string text, ReadFile(path));
  auto cpus = ParseCpuList(text);
  if (!cpus.ok()) return Status::Error(path + ": " + cpus.status().message());
  return cpus;
}

std::string FormatCpuList(const std::vector<uint32_t>& cpus) {
  std::string text;
  for (size_t i = 0; i < cpus.size();) {
    size_t end = i;
    while (end + 1 < cpus.size() && cpus[end + 1] == cpus[end] + 1) end++;
    if (!text.empty()) text += ',';
    text += std::to_string(cpus[i]);
    if (end > i) text += "-" + std::to_string(cpus[end]);
    i = end + 1;
  }
  return text;
}

}  // namespace sluice
