#include "user/probes/system_info/cpu_info_reader.h"

#include <charconv>
#include <fstream>
#include <set>
#include <sstream>

namespace sluice {
namespace {

std::string_view Trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\r')) s.remove_suffix(1);
  return s;
}

std::optional<uint32_t> ParseUint(std::string_view s, int base) {
  s = Trim(s);
  if (base == 16 && s.size() > 2 && s[0] == '0' && (s[1] == 'x' || s[1] == 'X')) s.remove_prefix(2);
  uint32_t v = 0;
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v, base);
  if (ec != std::errc() || end == s.data()) return std::nullopt;
  return v;
}

std::string ReadSmallFile(const std::string& path) {
  std::ifstream in(path);
  if (!in.is_open()) return "";
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

// The features trace processors know, by bit (upstream's append-only list).
constexpr std::string_view kKnownFeatures[] = {"mte", "mte3"};

}  // namespace

std::vector<CpuDescription> ParseProcCpuinfo(std::string_view text) {
  std::vector<CpuDescription> cpus;
  std::string processor = "unknown";
  std::optional<CpuDescription> current;
  // A CPU takes the model name read so far when its block ends, as
  // upstream's reader does.
  auto finish = [&] {
    if (current) {
      current->processor = processor;
      cpus.push_back(*current);
    }
    current.reset();
  };
  while (!text.empty()) {
    const size_t eol = text.find('\n');
    const std::string_view line = text.substr(0, eol);
    text = eol == std::string_view::npos ? std::string_view() : text.substr(eol + 1);
    if (Trim(line).empty()) {
      finish();
      continue;
    }
    const size_t colon = line.find(':');
    if (colon == std::string_view::npos || line.find(':', colon + 1) != std::string_view::npos) continue;
    const std::string_view key = Trim(line.substr(0, colon)), value = Trim(line.substr(colon + 1));
    if (key == "Processor") {
      processor = std::string(value);
    } else if (key == "processor") {
      finish();
      if (std::optional<uint32_t> n = ParseUint(value, 10)) {
        current = CpuDescription{};
        current->index = *n;
      }
    } else if (!current) {
      continue;
    } else if (key == "CPU implementer") {
      current->implementer = ParseUint(value, 16);
    } else if (key == "CPU architecture") {
      current->architecture = ParseUint(value, 10);
    } else if (key == "CPU variant") {
      current->variant = ParseUint(value, 16);
    } else if (key == "CPU part") {
      current->part = ParseUint(value, 16);
    } else if (key == "CPU revision") {
      current->revision = ParseUint(value, 10);
    } else if (key == "Features" || key == "Flags") {  // not x86's "flags", as upstream
      std::string_view rest = value;
      while (!rest.empty()) {
        const size_t space = rest.find(' ');
        const std::string_view word = rest.substr(0, space);
        rest = space == std::string_view::npos ? std::string_view() : rest.substr(space + 1);
        for (size_t bit = 0; bit < std::size(kKnownFeatures); ++bit)
          if (word == kKnownFeatures[bit]) current->features |= uint64_t{1} << bit;
      }
    }
  }
  finish();
  return cpus;
}

std::vector<uint32_t> ReadCpuFrequencies(const std::string& sysfs_cpu_dir, uint32_t cpu) {
  std::set<uint32_t> freqs;
  const std::string dir = sysfs_cpu_dir + "/cpu" + std::to_string(cpu) + "/cpufreq/";
  for (const char* file : {"scaling_available_frequencies", "scaling_boost_frequencies"}) {
    std::istringstream words(ReadSmallFile(dir + file));
    std::string word;
    while (words >> word)
      if (std::optional<uint32_t> f = ParseUint(word, 10)) freqs.insert(*f);
  }
  return {freqs.begin(), freqs.end()};
}

std::optional<uint32_t> ReadCpuCapacity(const std::string& sysfs_cpu_dir, uint32_t cpu) {
  const std::string text = ReadSmallFile(sysfs_cpu_dir + "/cpu" + std::to_string(cpu) + "/cpu_capacity");
  if (text.empty()) return std::nullopt;
  return ParseUint(text, 10);
}

}  // namespace sluice
