#include "user/cmd/record_status.h"

#include <cstdio>
#include <vector>

namespace sluice {

std::string ShortCount(double value) {
  char text[16];
  if (value >= 999.5e12) return ">999T";
  static constexpr struct {
    double scale;
    const char* suffix;
  } kUnits[] = {{1e12, "T"}, {1e9, "G"}, {1e6, "M"}, {1e3, "k"}};
  for (const auto& unit : kUnits) {
    if (value >= unit.scale * 0.9995) {
      const double scaled = value / unit.scale;
      snprintf(text, sizeof(text), scaled < 9.995 ? "%.2f%s" : scaled < 99.95 ? "%.1f%s" : "%.0f%s", scaled,
               unit.suffix);
      return text;
    }
  }
  snprintf(text, sizeof(text), "%.0f", value);
  return text;
}

namespace {

// 12.3s, 30s (whole seconds without a fraction), 95m, 120h; hours beyond
// that shortened like counts, so that any value stays short.
std::string Seconds(uint64_t ms) {
  char text[24];
  const double s = static_cast<double>(ms) / 1000.0;
  if (s < 1000) snprintf(text, sizeof(text), ms % 1000 ? "%.1fs" : "%.0fs", s);
  else if (s < 100 * 60) snprintf(text, sizeof(text), "%.0fm", s / 60);
  else return ShortCount(s / 3600) + "h";
  return text;
}

std::string Bytes(uint64_t bytes) {
  const double b = static_cast<double>(bytes);
  char text[24];
  if (b >= 1e12) return ShortCount(b / 1e12) + " TB";
  if (b >= 1e9) snprintf(text, sizeof(text), "%.2f GB", b / 1e9);
  else if (b >= 1e6) snprintf(text, sizeof(text), "%.1f MB", b / 1e6);
  else if (b >= 1e3) snprintf(text, sizeof(text), "%.0f kB", b / 1e3);
  else snprintf(text, sizeof(text), "%.0f B", b);
  return text;
}

// The line, then the file's name if the room left allows: whole, or its end
// (the random suffix that tells one run's file from another's).
std::string WithFileName(const std::string& line, const std::string& name) {
  if (name.empty() || line.size() + 2 >= kStatusLineColumns) return line;
  const size_t room = kStatusLineColumns - line.size() - 2;
  if (name.size() <= room) return line + "  " + name;
  if (room < 16) return line;
  return line + "  ..." + name.substr(name.size() - (room - 3));
}

}  // namespace

std::string FormatRecordStatus(const RecordStatus& s) {
  std::string line = Seconds(s.elapsed_ms);
  if (s.total_ms) line += "/" + Seconds(s.total_ms);
  line += s.in_memory ? "  in memory" : "  " + Bytes(s.file_bytes);
  if (s.have_events) line += "  " + ShortCount(s.events_per_second) + " ev/s";
  char fill[24];
  snprintf(fill, sizeof(fill), "  buf %.0f%%", s.buffer_fill_percent);
  line += fill;

  std::vector<std::string> losses;
  auto loss = [&](uint64_t n, const char* stage, const char* unit) {
    if (n) losses.push_back(std::string(stage) + " " + ShortCount(static_cast<double>(n)) + " " + unit);
  };
  loss(s.kernel_lost_pages, "kernel", "pages");
  loss(s.bpf_dropped_records, "bpf", "records");
  loss(s.smb_lost_packets, "smb", "packets");
  loss(s.central_lost_chunks, "central", "chunks");
  line += "  lost: ";
  if (losses.empty()) return WithFileName(line + "none", s.file_name);
  // As many losses as fit, then how many did not.
  for (size_t i = 0; i < losses.size(); ++i) {
    const std::string rest = " +" + std::to_string(losses.size() - i) + " more";
    const std::string item = (i ? ", " : "") + losses[i];
    const bool last = i + 1 == losses.size();
    if (line.size() + item.size() + (last ? 0 : rest.size()) > kStatusLineColumns) {
      return line + (i ? rest : "in " + std::to_string(losses.size()) + " stages (sluice stats)");
    }
    line += item;
  }
  return WithFileName(line, s.file_name);
}

}  // namespace sluice
