#include "user/report/report_builder.h"

#include <sqlite3.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>

#include "user/query/engine/sql_statements.h"

namespace sluice {

namespace {

ReportCell ReadCell(sqlite3_stmt* stmt, int column) {
  switch (sqlite3_column_type(stmt, column)) {
    case SQLITE_INTEGER:
      return static_cast<int64_t>(sqlite3_column_int64(stmt, column));
    case SQLITE_FLOAT:
      return sqlite3_column_double(stmt, column);
    case SQLITE_TEXT: {
      const auto* text = reinterpret_cast<const char*>(sqlite3_column_text(stmt, column));
      return std::string(text ? text : "", static_cast<size_t>(sqlite3_column_bytes(stmt, column)));
    }
    case SQLITE_BLOB: {
      static constexpr char kHex[] = "0123456789abcdef";
      const auto* bytes = static_cast<const unsigned char*>(sqlite3_column_blob(stmt, column));
      std::string text = "X'";
      for (int i = 0; i < sqlite3_column_bytes(stmt, column); ++i) {
        text += kHex[bytes[i] >> 4];
        text += kHex[bytes[i] & 15];
      }
      return text + "'";
    }
    default:
      return std::monostate();
  }
}

Status ReadResult(sqlite3_stmt* stmt, ReportSection* section) {
  const int columns = sqlite3_column_count(stmt);
  section->columns.clear();
  section->rows.clear();
  for (int i = 0; i < columns; ++i) {
    const char* name = sqlite3_column_name(stmt, i);
    section->columns.push_back(name ? name : "");
  }
  for (;;) {
    const int rc = sqlite3_step(stmt);
    if (rc == SQLITE_DONE) return Status::Ok();
    if (rc != SQLITE_ROW) return Status::Error(sqlite3_errmsg(sqlite3_db_handle(stmt)));
    std::vector<ReportCell>& row = section->rows.emplace_back();
    row.reserve(static_cast<size_t>(columns));
    for (int i = 0; i < columns; ++i) row.push_back(ReadCell(stmt, i));
  }
}

}  // namespace

StatusOr<ReportSection> RunReportSection(sqlite3* db, const ReportSqlFile& file, SqlDialect* dialect) {
  ReportSection section;
  section.name = file.SectionName();
  section.title = file.Title();
  section.description = file.Description();
  Status ran = RunSqlScript(db, file.sql, [&](const SqlStatement& statement) {
    return statement.last ? ReadResult(statement.stmt, &section) : StepToEnd(statement.stmt);
  }, 1, dialect);
  if (!ran.ok()) return Status::Error(std::string(file.file_name) + ": " + ran.message());
  return section;
}

StatusOr<Report> BuildReport(sqlite3* db, const std::string& trace_path, const ReportOptions& options) {
  if (options.window) {
    // The html_* sections read the window from this table (their own
    // CREATE ... IF NOT EXISTS gives the whole trace when it is absent).
    // Rounded to whole ns here: 1.001 * 1e9 in SQL is 1000999999.9.
    char sql[256];
    snprintf(sql, sizeof(sql),
             "DROP TABLE IF EXISTS temp.__report_window;"
             "CREATE TEMP TABLE __report_window AS SELECT"
             " trace_start() + %lld AS start_ts, min(trace_end(), trace_start() + %lld) AS end_ts",
             static_cast<long long>(std::llround(options.window->start_s * 1e9)),
             static_cast<long long>(std::llround(options.window->end_s * 1e9)));
    SLUICE_RETURN_IF_ERROR(ExecSql(db, sql));
    sqlite3_stmt* stmt = nullptr;
    double trace_s = 0;
    if (sqlite3_prepare_v2(db, "SELECT trace_dur() / 1e9", -1, &stmt, nullptr) == SQLITE_OK &&
        sqlite3_step(stmt) == SQLITE_ROW)
      trace_s = sqlite3_column_double(stmt, 0);
    sqlite3_finalize(stmt);
    if (options.window->start_s >= trace_s) {
      char message[160];
      snprintf(message, sizeof(message), "the window starts at %.3f s, after the trace's end (it lasts %.3f s)",
               options.window->start_s, trace_s);
      return Status::Error(message);
    }
  }
  Report report;
  report.trace_path = trace_path;
  for (const ReportSqlFile& file : ReportSqlFiles()) {
    if (file.ForHtmlOnly() && !options.html_sections) continue;
    StatusOr<ReportSection> section = RunReportSection(db, file, options.dialect);
    if (!section.ok()) return section.status();
    report.sections.push_back(std::move(*section));
  }
  return report;
}

StatusOr<ReportWindow> ParseReportWindow(const std::string& text) {
  const std::string usage = " (--window START,END: seconds from the trace's start, e.g. 1.5,2)";
  const size_t comma = text.find(',');
  if (comma == std::string::npos) return Status::Error("no ',' in window '" + text + "'" + usage);
  auto number = [](const std::string& part, double* value) {
    char* end = nullptr;
    *value = strtod(part.c_str(), &end);
    return !part.empty() && end && *end == '\0' && std::isfinite(*value);
  };
  ReportWindow window;
  if (!number(text.substr(0, comma), &window.start_s) || !number(text.substr(comma + 1), &window.end_s))
    return Status::Error("window '" + text + "' is not two numbers" + usage);
  if (window.start_s < 0 || window.end_s <= window.start_s)
    return Status::Error("window '" + text + "' must have 0 <= START < END" + usage);
  return window;
}

}  // namespace sluice
