// The SQL files behind `sluice report`'s sections (user/report/sql/*.sql),
// compiled into the binary (mk/report.mk) and installed as files
// ($(SLUICE_DATADIR)/report/). A file is one section:
//   -- title: TITLE
//   -- a description, any number of comment lines
//   statements; the last one's result is the section
// Files are named NN_name.sql: NN orders the sections, name names them.
// Sections named html_* feed only the HTML page. Statements that prepare
// data for several sections create it with CREATE TEMP TABLE IF NOT EXISTS,
// so each file runs alone (`sluice query TRACE -f FILE`) and, in a report,
// the work is done once.
#ifndef SLUICE_USER_REPORT_REPORT_SQL_H_
#define SLUICE_USER_REPORT_REPORT_SQL_H_

#include <string>
#include <string_view>
#include <vector>

namespace sluice {

struct ReportSqlFile {
  std::string_view file_name;  // "30_cpu_by_process.sql"
  std::string_view sql;

  std::string SectionName() const;  // "cpu_by_process"
  std::string Title() const;        // The "-- title:" line's text.
  std::string Description() const;  // The comment lines after it, joined.
  bool ForHtmlOnly() const { return SectionName().starts_with("html_"); }
};

// Every section's file, in the order of their names.
const std::vector<ReportSqlFile>& ReportSqlFiles();

// The file of the section named `name` ("cpu_by_thread") or of the file
// named `name` ("40_cpu_by_thread.sql"); nullptr if there is none.
const ReportSqlFile* FindReportSqlFile(std::string_view name);

}  // namespace sluice

#endif  // SLUICE_USER_REPORT_REPORT_SQL_H_
