#include "user/report/report_json.h"

#include <cmath>
#include <string_view>

#include "user/query/engine/query_output.h"

namespace sluice {

namespace {

void AppendCell(const ReportCell& cell, std::string& out) {
  if (const auto* i = std::get_if<int64_t>(&cell)) {
    out += std::to_string(*i);
  } else if (const auto* d = std::get_if<double>(&cell)) {
    if (std::isnan(*d)) out += "null";
    else if (std::isinf(*d)) out += *d > 0 ? "9e999" : "-9e999";
    else out += FormatReal(*d);
  } else if (const auto* text = std::get_if<std::string>(&cell)) {
    AppendJsonString(*text, out);
  } else {
    out += "null";
  }
}

void AppendRow(const ReportSection& section, const std::vector<ReportCell>& row, ReportJsonRows rows,
               std::string& out) {
  out += rows == ReportJsonRows::kObjects ? '{' : '[';
  for (size_t i = 0; i < row.size(); ++i) {
    if (i) out += ',';
    if (rows == ReportJsonRows::kObjects) {
      AppendJsonString(section.columns[i], out);
      out += ':';
    }
    AppendCell(row[i], out);
  }
  out += rows == ReportJsonRows::kObjects ? '}' : ']';
}

}  // namespace

std::string ReportRowToJson(const ReportSection& section, const std::vector<ReportCell>& row,
                            ReportJsonRows rows) {
  std::string out;
  AppendRow(section, row, rows, out);
  return out;
}

std::string ReportToJson(const Report& report, ReportJsonRows rows) {
  std::string out = "{\"trace\":";
  AppendJsonString(report.trace_path, out);
  out += ",\"sections\":{";
  for (size_t s = 0; s < report.sections.size(); ++s) {
    const ReportSection& section = report.sections[s];
    if (s) out += ',';
    out += '\n';
    AppendJsonString(section.name, out);
    out += ":{\"title\":";
    AppendJsonString(section.title, out);
    out += ",\"description\":";
    AppendJsonString(section.description, out);
    out += ",\"columns\":[";
    for (size_t c = 0; c < section.columns.size(); ++c) {
      if (c) out += ',';
      AppendJsonString(section.columns[c], out);
    }
    out += "],\"rows\":[";
    for (size_t r = 0; r < section.rows.size(); ++r) {
      if (r) out += ',';
      out += '\n';
      AppendRow(section, section.rows[r], rows, out);
    }
    out += "]}";
  }
  out += "}}\n";
  return out;
}

}  // namespace sluice
