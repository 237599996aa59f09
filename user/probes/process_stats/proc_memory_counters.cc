#include "user/probes/process_stats/proc_memory_counters.h"

#include <charconv>
#include <utility>

namespace sluice {
namespace {

// Calls fn(key, number) for each "Key:   123 kB" line.
template <typename Fn>
void ForEachKeyNumber(std::string_view text, Fn fn) {
  while (!text.empty()) {
    const size_t eol = text.find('\n');
    std::string_view line = text.substr(0, eol);
    text = eol == std::string_view::npos ? std::string_view() : text.substr(eol + 1);
    const size_t colon = line.find(':');
    if (colon == std::string_view::npos) continue;
    std::string_view value = line.substr(colon + 1);
    const size_t digits = value.find_first_not_of(" \t");
    if (digits == std::string_view::npos) continue;
    value = value.substr(digits);
    int64_t number = 0;
    auto [end, ec] = std::from_chars(value.data(), value.data() + value.size(), number);
    if (ec != std::errc() || end == value.data()) continue;
    fn(line.substr(0, colon), number);
  }
}

std::optional<uint64_t> Kb(int64_t v) { return v < 0 ? std::nullopt : std::optional<uint64_t>(v); }

}  // namespace

void ParseProcStatus(std::string_view status, ProcMemoryCounters* out) {
  ForEachKeyNumber(status, [out](std::string_view key, int64_t v) {
    if (key == "VmSize") {
      out->vm_size_kb = Kb(v);
      out->has_memory = true;
    } else if (key == "VmRSS") {
      out->vm_rss_kb = Kb(v);
    } else if (key == "RssAnon") {
      out->rss_anon_kb = Kb(v);
    } else if (key == "RssFile") {
      out->rss_file_kb = Kb(v);
    } else if (key == "RssShmem") {
      out->rss_shmem_kb = Kb(v);
    } else if (key == "VmSwap") {
      out->vm_swap_kb = Kb(v);
    } else if (key == "VmLck") {
      out->vm_locked_kb = Kb(v);
    } else if (key == "VmHWM") {
      out->vm_hwm_kb = Kb(v);
    }
  });
}

void ParseSmapsRollup(std::string_view rollup, ProcMemoryCounters* out) {
  ForEachKeyNumber(rollup, [out](std::string_view key, int64_t v) {
    if (key == "Rss") out->smr_rss_kb = Kb(v);
    else if (key == "Pss") out->smr_pss_kb = Kb(v);
    else if (key == "Pss_Anon") out->smr_pss_anon_kb = Kb(v);
    else if (key == "Pss_File") out->smr_pss_file_kb = Kb(v);
    else if (key == "Pss_Shmem") out->smr_pss_shmem_kb = Kb(v);
    else if (key == "SwapPss") out->smr_swap_pss_kb = Kb(v);
  });
}

std::optional<uint64_t> ProcStatField(std::string_view stat, int n) {
  const size_t paren = stat.rfind(')');
  if (paren == std::string_view::npos || n < 3) return std::nullopt;
  // After "pid (comm)": field 3 (state) is the first token.
  std::string_view rest = stat.substr(paren + 1);
  size_t pos = 0;
  for (int field = 3;; ++field) {
    pos = rest.find_first_not_of(" \n", pos);
    if (pos == std::string_view::npos) return std::nullopt;
    size_t end = rest.find_first_of(" \n", pos);
    if (end == std::string_view::npos) end = rest.size();
    if (field == n) {
      const std::string_view token = rest.substr(pos, end - pos);
      uint64_t value = 0;
      auto [p, ec] = std::from_chars(token.data(), token.data() + token.size(), value);
      if (ec != std::errc() || p != token.data() + token.size()) return std::nullopt;
      return value;
    }
    pos = end;
  }
}

bool ParseProcStatRuntimes(std::string_view stat, long ticks_per_second, ProcMemoryCounters* out) {
  if (ticks_per_second <= 0) return false;
  const std::optional<uint64_t> utime = ProcStatField(stat, 14), stime = ProcStatField(stat, 15);
  if (!utime || !stime) return false;
  const uint64_t ns_per_tick = 1000000000ull / static_cast<uint64_t>(ticks_per_second);
  out->runtime_user_mode_ns = *utime * ns_per_tick;
  out->runtime_kernel_mode_ns = *stime * ns_per_tick;
  return true;
}

std::optional<uint64_t> ParseProcStartFromBootNs(std::string_view stat, long ticks_per_second) {
  if (ticks_per_second <= 0) return std::nullopt;
  const std::optional<uint64_t> start = ProcStatField(stat, 22);
  if (!start) return std::nullopt;
  return *start * (1000000000ull / static_cast<uint64_t>(ticks_per_second));
}

}  // namespace sluice
