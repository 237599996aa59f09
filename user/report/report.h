// Report: what `sluice report` shows, as data. Each section is the result of
// one of the SQL files in user/report/sql/ (shipped with sluice; `sluice query
// -f FILE` runs any of them alone): its name, title and description come from
// the file, its columns and rows from the last statement's result. The text,
// JSON and HTML renderings all start from this (report_text.h, report_json.h,
// report_html.h).
#ifndef SLUICE_USER_REPORT_REPORT_H_
#define SLUICE_USER_REPORT_REPORT_H_

#include <cstdint>
#include <string>
#include <variant>
#include <vector>

namespace sluice {

// One value of a result: SQL NULL, INTEGER, REAL or TEXT (a BLOB is kept as
// text in SQL literal form, X'0aff', as `sluice query` prints it).
using ReportCell = std::variant<std::monostate, int64_t, double, std::string>;

struct ReportSection {
  std::string name;         // From the file name: "30_cpu_by_process.sql" -> "cpu_by_process".
  std::string title;        // The file's "-- title:" line.
  std::string description;  // The comment lines after it, joined with spaces.
  std::vector<std::string> columns;
  std::vector<std::vector<ReportCell>> rows;  // Each row has columns.size() cells.

  // The index of `column`, or -1.
  int ColumnIndex(const std::string& column) const;
};

struct Report {
  std::string trace_path;
  std::vector<ReportSection> sections;  // In the order of the SQL files' names.

  // The section named `name`, or nullptr.
  const ReportSection* Find(const std::string& name) const;
};

}  // namespace sluice

#endif  // SLUICE_USER_REPORT_REPORT_H_
