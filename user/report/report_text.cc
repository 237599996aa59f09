#include "user/report/report_text.h"

#include <sqlite3.h>

#include <string>
#include <string_view>

#include "user/query/engine/query_output.h"

namespace sluice {

namespace {

ResultCell ToResultCell(const ReportCell& cell) {
  if (const auto* i = std::get_if<int64_t>(&cell)) return {SQLITE_INTEGER, std::to_string(*i)};
  if (const auto* d = std::get_if<double>(&cell)) return {SQLITE_FLOAT, FormatReal(*d)};
  if (const auto* text = std::get_if<std::string>(&cell)) return {SQLITE_TEXT, *text};
  return {SQLITE_NULL, ""};
}

// The overview's value in `column` as text, or "" if absent or NULL.
std::string OverviewValue(const ReportSection& overview, const char* column) {
  const int index = overview.ColumnIndex(column);
  if (index < 0 || overview.rows.empty()) return "";
  const ResultCell cell = ToResultCell(overview.rows[0][static_cast<size_t>(index)]);
  return cell.type == SQLITE_NULL ? "" : cell.text;
}

std::string HumanBytes(const std::string& bytes_text) {
  if (bytes_text.empty()) return "size unknown";
  const double bytes = std::stod(bytes_text);
  char text[32];
  if (bytes >= 1e9) snprintf(text, sizeof(text), "%.2f GB", bytes / 1e9);
  else if (bytes >= 1e6) snprintf(text, sizeof(text), "%.1f MB", bytes / 1e6);
  else if (bytes >= 1e3) snprintf(text, sizeof(text), "%.1f KB", bytes / 1e3);
  else snprintf(text, sizeof(text), "%.0f bytes", bytes);
  return text;
}

void WriteOverview(const Report& report, const ReportSection& overview, FILE* out) {
  auto value = [&](const char* column) { return OverviewValue(overview, column); };
  fprintf(out, "Trace %s\n", report.trace_path.c_str());
  std::string system = value("kernel").empty() ? "kernel unknown" : value("kernel");
  if (!value("machine").empty()) system += " " + value("machine");
  fprintf(out, "  %s s, %s; %s; %s CPUs, %s processes, %s threads\n", value("duration_s").c_str(),
          HumanBytes(value("size_bytes")).c_str(), system.c_str(), value("cpus").c_str(), value("processes").c_str(),
          value("threads").c_str());
  fprintf(out, "  %s sched slices, %s slices, %s counter values\n", value("sched_slices").c_str(),
          value("slices").c_str(), value("counter_values").c_str());
}

// What an empty section means, said instead of an empty table.
const char* EmptyText(std::string_view name) {
  if (name == "losses") return "nothing lost, no errors";
  if (name == "longest_slices" || name == "slice_names")
    return "no slices (they come from atrace/trace_marker writes: B|pid|name ... E|pid)";
  if (name == "counters") return "no counters";
  if (name == "sched_latency") return "no runnable waits (record sched_switch and sched_waking)";
  return "nothing (record sched_switch for CPU time)";
}

}  // namespace

void WriteReportText(const Report& report, FILE* out) {
  for (const ReportSection& section : report.sections) {
    if (section.name == "overview") {
      WriteOverview(report, section, out);
      continue;
    }
    fprintf(out, "\n%s", section.title.c_str());
    if (section.rows.empty()) {
      fprintf(out, ": %s\n", EmptyText(section.name));
      continue;
    }
    fputc('\n', out);
    std::vector<std::vector<ResultCell>> rows;
    rows.reserve(section.rows.size());
    for (const std::vector<ReportCell>& row : section.rows) {
      std::vector<ResultCell>& cells = rows.emplace_back();
      for (const ReportCell& cell : row) cells.push_back(ToResultCell(cell));
    }
    fflush(out);
    WriteResultRows(section.columns, rows, OutputFormat::kTable, out);
  }
}

}  // namespace sluice
