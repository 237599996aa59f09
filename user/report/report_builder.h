// Runs the report's section SQL files on an imported trace and collects
// their results into a Report.
#ifndef SLUICE_USER_REPORT_REPORT_BUILDER_H_
#define SLUICE_USER_REPORT_REPORT_BUILDER_H_

#include <optional>
#include <string>

#include "shm/base/status.h"
#include "user/report/report.h"
#include "user/report/report_sql.h"

struct sqlite3;

namespace sluice {

class SqlDialect;

// A span of the trace in seconds from its start (trace_start()).
struct ReportWindow {
  double start_s = 0;
  double end_s = 0;
};

struct ReportOptions {
  bool html_sections = false;          // Also run the html_* sections.
  std::optional<ReportWindow> window;  // The HTML page's window; the whole trace if unset.
  // PerfettoSQL for the sections (QueryEngine::dialect()), so that they may
  // INCLUDE PERFETTO MODULE; null = plain SQLite.
  SqlDialect* dialect = nullptr;
};

// Runs every statement of `file` on `db`; the last statement's result is the
// section. Errors say which file and where ("40_cpu_by_thread.sql: SQL error
// at line 3 column 5: ...").
StatusOr<ReportSection> RunReportSection(sqlite3* db, const ReportSqlFile& file, SqlDialect* dialect = nullptr);

// Every section, in order (the html_* ones only with options.html_sections).
StatusOr<Report> BuildReport(sqlite3* db, const std::string& trace_path, const ReportOptions& options);

// "START,END" in seconds, e.g. "1.5,2": START < END, both >= 0.
StatusOr<ReportWindow> ParseReportWindow(const std::string& text);

}  // namespace sluice

#endif  // SLUICE_USER_REPORT_REPORT_BUILDER_H_
