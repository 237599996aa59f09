#include "user/probes/ftrace/ftrace_cpu_stats.h"

#include <charconv>
#include <cstring>

#include "perfetto/trace/ftrace/ftrace_stats.pb.h"
#include "user/probes/tracefs.h"
#include "shm/base/string_util.h"

namespace sluice {
namespace {

using CpuStatsProto = perfetto::protos::FtraceCpuStats;

uint64_t DoubleBits(double d) {
  uint64_t bits;
  static_assert(sizeof(bits) == sizeof(d));
  std::memcpy(&bits, &d, sizeof(bits));
  return bits;
}

}  // namespace

bool ParseFtraceStatsTimestamp(std::string_view text, uint64_t* ns, double* seconds) {
  text = TrimWhitespace(text);
  size_t dot = text.find('.');
  if (dot == std::string_view::npos) {
    // Counter clocks print a bare integer: keep it as ticks.
    uint64_t ticks = 0;
    if (!ParseU64(text, &ticks)) return false;
    *ns = ticks;
    *seconds = static_cast<double>(ticks);
    return true;
  }
  uint64_t secs = 0;
  std::string_view frac = text.substr(dot + 1);
  if (!ParseU64(text.substr(0, dot), &secs) || frac.empty() || frac.size() > 9) return false;
  uint64_t frac_value = 0;
  if (!ParseU64(frac, &frac_value)) return false;
  for (size_t i = frac.size(); i < 9; i++) frac_value *= 10;
  if (secs > UINT64_MAX / 1000000000ull - 1) return false;
  *ns = secs * 1000000000ull + frac_value;
  *seconds = static_cast<double>(secs) + static_cast<double>(frac_value) / 1e9;
  return true;
}

bool ParseFtraceCpuStats(std::string_view text, FtraceCpuStats* out) {
  bool ok = true;
  while (!text.empty()) {
    size_t nl = text.find('\n');
    std::string_view line = text.substr(0, nl);
    text = nl == std::string_view::npos ? std::string_view() : text.substr(nl + 1);
    size_t colon = line.find(':');
    if (colon == std::string_view::npos) continue;
    std::string_view key = TrimWhitespace(line.substr(0, colon));
    std::string_view value = TrimWhitespace(line.substr(colon + 1));
    uint64_t* counter = nullptr;
    if (key == "entries") counter = &out->entries;
    else if (key == "overrun") counter = &out->overrun;
    else if (key == "commit overrun") counter = &out->commit_overrun;
    else if (key == "bytes") counter = &out->bytes;
    else if (key == "dropped events") counter = &out->dropped_events;
    else if (key == "read events") counter = &out->read_events;
    if (counter != nullptr) {
      if (!ParseU64(value, counter)) ok = false;
    } else if (key == "oldest event ts") {
      if (!ParseFtraceStatsTimestamp(value, &out->oldest_event_ts_ns, &out->oldest_event_ts)) ok = false;
    } else if (key == "now ts") {
      if (!ParseFtraceStatsTimestamp(value, &out->now_ts_ns, &out->now_ts)) ok = false;
    }
  }
  return ok;
}

StatusOr<FtraceCpuStats> ReadFtraceCpuStats(const Tracefs& tracefs, uint32_t cpu) {
  const std::string path = tracefs.PerCpuPath(cpu, "stats");
  SLUICE_ASSIGN_OR_RETURN(std::string text, ReadFile(path));
  FtraceCpuStats stats;
  stats.cpu = cpu;
  if (!ParseFtraceCpuStats(text, &stats)) {
    return Status::Error("malformed ftrace stats in " + path);
  }
  return stats;
}

void WriteFtraceCpuStatsFields(const FtraceCpuStats& s, ProtoWriter* w) {
  w->WriteVarInt(CpuStatsProto::kCpuFieldNumber, s.cpu);
  w->WriteVarInt(CpuStatsProto::kEntriesFieldNumber, s.entries);
  w->WriteVarInt(CpuStatsProto::kOverrunFieldNumber, s.overrun);
  w->WriteVarInt(CpuStatsProto::kCommitOverrunFieldNumber, s.commit_overrun);
  w->WriteVarInt(CpuStatsProto::kBytesReadFieldNumber, s.bytes);
  w->WriteFixed64(CpuStatsProto::kOldestEventTsFieldNumber, DoubleBits(s.oldest_event_ts));
  w->WriteFixed64(CpuStatsProto::kNowTsFieldNumber, DoubleBits(s.now_ts));
  w->WriteVarInt(CpuStatsProto::kDroppedEventsFieldNumber, s.dropped_events);
  w->WriteVarInt(CpuStatsProto::kReadEventsFieldNumber, s.read_events);
}

}  // namespace sluice
