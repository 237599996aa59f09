#include "user/report/report_sql.h"

#include <algorithm>

namespace sluice {

namespace {

constexpr std::string_view kTitlePrefix = "-- title:";

// The text of each comment line at the top of `sql`, without "--" and
// surrounding blanks, up to the first line that is not a comment.
std::vector<std::string_view> HeaderComments(std::string_view sql) {
  std::vector<std::string_view> lines;
  while (!sql.empty()) {
    const size_t end = std::min(sql.find('\n'), sql.size());
    std::string_view line = sql.substr(0, end);
    sql.remove_prefix(std::min(end + 1, sql.size()));
    if (!line.starts_with("--")) break;
    line.remove_prefix(2);
    while (!line.empty() && (line.front() == ' ' || line.front() == '\t')) line.remove_prefix(1);
    while (!line.empty() && (line.back() == ' ' || line.back() == '\r')) line.remove_suffix(1);
    lines.push_back(line);
  }
  return lines;
}

}  // namespace

std::string ReportSqlFile::SectionName() const {
  std::string_view name = file_name;
  if (name.ends_with(".sql")) name.remove_suffix(4);
  if (const size_t underscore = name.find('_'); underscore != std::string_view::npos)
    name.remove_prefix(underscore + 1);
  return std::string(name);
}

std::string ReportSqlFile::Title() const {
  std::string_view first = sql.substr(0, sql.find('\n'));
  if (!first.starts_with(kTitlePrefix)) return SectionName();
  first.remove_prefix(kTitlePrefix.size());
  while (!first.empty() && first.front() == ' ') first.remove_prefix(1);
  while (!first.empty() && (first.back() == ' ' || first.back() == '\r')) first.remove_suffix(1);
  return std::string(first);
}

std::string ReportSqlFile::Description() const {
  std::string description;
  std::vector<std::string_view> lines = HeaderComments(sql);
  for (size_t i = sql.starts_with(kTitlePrefix) ? 1 : 0; i < lines.size(); ++i) {
    if (lines[i].empty()) continue;
    if (!description.empty()) description += ' ';
    description += lines[i];
  }
  return description;
}

const std::vector<ReportSqlFile>& ReportSqlFiles() {
  static const std::vector<ReportSqlFile> files = [] {
    std::vector<ReportSqlFile> list = {
#include "user/report/report_sql_files.inc"
    };
    std::sort(list.begin(), list.end(),
              [](const ReportSqlFile& a, const ReportSqlFile& b) { return a.file_name < b.file_name; });
    return list;
  }();
  return files;
}

const ReportSqlFile* FindReportSqlFile(std::string_view name) {
  for (const ReportSqlFile& file : ReportSqlFiles())
    if (file.file_name == name || file.SectionName() == name) return &file;
  return nullptr;
}

}  // namespace sluice
