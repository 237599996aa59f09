// The section SQL files compiled into sluice (user/report/report_sql.h): the
// embedded list is exactly user/report/sql/, each file has a title and a
// description, and names, titles and descriptions are read as documented.
#include "user/report/report_sql.h"

#include <dirent.h>

#include <algorithm>
#include <set>
#include <string>
#include <vector>

#include <gtest/gtest.h>

namespace sluice {
namespace {

TEST(ReportSqlTest, EmbeddedFilesAreExactlyTheSourceDirectory) {
  // Tests run from the project root.
  std::vector<std::string> on_disk;
  DIR* dir = opendir("user/report/sql");
  ASSERT_NE(dir, nullptr) << "run the tests from the project root";
  while (dirent* entry = readdir(dir)) {
    const std::string name = entry->d_name;
    if (name.ends_with(".sql")) on_disk.push_back(name);
  }
  closedir(dir);
  std::sort(on_disk.begin(), on_disk.end());
  std::vector<std::string> embedded;
  for (const ReportSqlFile& file : ReportSqlFiles()) embedded.emplace_back(file.file_name);
  EXPECT_EQ(embedded, on_disk) << "rebuild: mk/report.mk embeds the files";
}

TEST(ReportSqlTest, EveryFileHasATitleADescriptionAndAUniqueName) {
  std::set<std::string> names;
  for (const ReportSqlFile& file : ReportSqlFiles()) {
    EXPECT_TRUE(file.sql.starts_with("-- title: ")) << file.file_name;
    EXPECT_FALSE(file.Description().empty()) << file.file_name;
    EXPECT_TRUE(names.insert(file.SectionName()).second) << file.file_name;
    EXPECT_EQ(FindReportSqlFile(file.SectionName()), &file);
    EXPECT_EQ(FindReportSqlFile(file.file_name), &file);
  }
  EXPECT_EQ(FindReportSqlFile("no_such_section"), nullptr);
  EXPECT_TRUE(names.count("cpu_by_thread"));
  EXPECT_TRUE(names.count("losses"));
}

TEST(ReportSqlTest, ReadsNameTitleAndDescription) {
  const ReportSqlFile file{"42_waits_by_cpu.sql",
                           "-- title: Waits by CPU  \n"
                           "-- First line of the description,\n"
                           "--\n"
                           "--   continued.\n"
                           "SELECT 1; -- not part of it\n"
                           "-- nor this\n"};
  EXPECT_EQ(file.SectionName(), "waits_by_cpu");
  EXPECT_EQ(file.Title(), "Waits by CPU");
  EXPECT_EQ(file.Description(), "First line of the description, continued.");
  EXPECT_FALSE(file.ForHtmlOnly());
  EXPECT_TRUE((ReportSqlFile{"a0_html_x.sql", "SELECT 1"}.ForHtmlOnly()));
  // Without a title line: the name stands in, every comment describes.
  const ReportSqlFile bare{"x.sql", "-- Just a note.\nSELECT 1"};
  EXPECT_EQ(bare.Title(), "x");
  EXPECT_EQ(bare.Description(), "Just a note.");
}

}  // namespace
}  // namespace sluice
