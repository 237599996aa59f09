// End-to-end tests of `sluice report` (user/cmd/report_command.h): the built
// binary on committed traces, as a user runs it. The text report's sections,
// --format json read back, each section's file run by `sluice query -f`
// giving the report's rows, --list and --sql, and the one-line errors and
// exit codes for bad arguments and unreadable traces. No kernel needed.
#include <unistd.h>

#include <cstdlib>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "shm/base/file_util.h"
#include "shm/base/string_util.h"
#include "tests/child_process_test_util.h"
#include "tests/user/cmd/record_test_util.h"
#include "tests/user/query/query_test_util.h"
#include "user/report/report_sql.h"

namespace sluice {
namespace {

using Result = testing::CommandResult;

class ReportCommandTest : public ::testing::Test {
 protected:
  void SetUp() override {
    sluice_ = testing::SluiceBinDir() + "/sluice";
    ASSERT_EQ(access(sluice_.c_str(), X_OK), 0) << sluice_ << " not found: build it (make build/sluice)";
    dir_ = testing::MakeTempDir("sluice_report_test_");
    ASSERT_FALSE(dir_.empty());
  }
  void TearDown() override { testing::RemoveTempDir(dir_); }

  Result Run(const std::string& command, const std::vector<std::string>& args) {
    std::vector<std::string> argv = {sluice_, command};
    argv.insert(argv.end(), args.begin(), args.end());
    return testing::RunToCompletion(argv, dir_);
  }
  Result Report(const std::vector<std::string>& args) { return Run("report", args); }

  std::string sluice_, dir_;
};

TEST_F(ReportCommandTest, TextReportHasEverySection) {
  Result r = Report({testing::QueryTracePath("atrace_rec")});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.err, "");
  EXPECT_TRUE(r.out.starts_with("Trace " + testing::QueryTracePath("atrace_rec") + "\n  2.96 s, 107.7 KB; ")) << r.out;
  for (const ReportSqlFile& file : ReportSqlFiles()) {
    if (file.ForHtmlOnly() || file.SectionName() == "overview") continue;
    EXPECT_NE(r.out.find("\n" + file.Title()), std::string::npos) << file.Title() << "\n" << r.out;
  }
  // A screen, not a dump: every section is capped.
  EXPECT_LT(std::count(r.out.begin(), r.out.end(), '\n'), 120) << r.out;
}

TEST_F(ReportCommandTest, JsonRowsAreWhatSluiceQueryPrintsForEachFile) {
  Result r = Report({testing::QueryTracePath("atrace_rec"), "--format", "json"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(r.out.starts_with("{\"trace\":")) << r.out;
  // The report writes one row a line; sluice query's json writes the same
  // objects, one a line: each file alone gives the report's rows.
  for (const ReportSqlFile& file : ReportSqlFiles()) {
    if (file.ForHtmlOnly()) continue;
    const std::string path = "user/report/sql/" + std::string(file.file_name);
    Result q = Run("query", {testing::QueryTracePath("atrace_rec"), "-f", path, "--format", "json"});
    ASSERT_EQ(q.exit_code, 0) << path << ": " << q.err;
    EXPECT_NE(r.out.find("\n\"" + file.SectionName() + "\":{\"title\":"), std::string::npos) << file.SectionName();
    ForEachLine(q.out, [&](std::string_view line) {
      if (!line.empty()) {
        EXPECT_NE(r.out.find("\n" + std::string(line)), std::string::npos) << path << " row " << line;
      }
      return true;
    });
  }
}

TEST_F(ReportCommandTest, ListAndSql) {
  Result list = Report({"--list"});
  ASSERT_EQ(list.exit_code, 0) << list.err;
  for (const ReportSqlFile& file : ReportSqlFiles())
    EXPECT_NE(list.out.find(file.SectionName()), std::string::npos) << file.SectionName();
  Result sql = Report({"--sql", "cpu_by_thread"});
  ASSERT_EQ(sql.exit_code, 0) << sql.err;
  StatusOr<std::string> source = ReadFile("user/report/sql/40_cpu_by_thread.sql");
  ASSERT_TRUE(source.ok());
  EXPECT_EQ(sql.out, *source);
  Result unknown = Report({"--sql", "cpu_by_planet"});
  EXPECT_EQ(unknown.exit_code, 2);
  EXPECT_TRUE(unknown.err.starts_with("sluice report: no section 'cpu_by_planet': the sections are overview, "))
      << unknown.err;
}

TEST_F(ReportCommandTest, BadArgumentsAndTracesGetOneLine) {
  struct Case {
    std::vector<std::string> args;
    int exit_code;
    std::string error_start;
  };
  const std::string text = dir_ + "/notes.txt";
  ASSERT_TRUE(WriteFileAtomically(text, "hello, I am not a trace\n", 0644).ok());
  const std::vector<Case> cases = {
      {{}, 2, "sluice report: no TRACE given"},
      {{"a", "b"}, 2, "sluice report: one TRACE at a time"},
      {{testing::QueryTracePath("atrace"), "--format", "xml"}, 2, "sluice report: unknown format 'xml'"},
      {{"--list", testing::QueryTracePath("atrace")}, 2, "sluice report: --list and --sql take no TRACE"},
      {{dir_ + "/missing.pftrace"}, 2, "sluice report: cannot open " + dir_ + "/missing.pftrace"},
      {{dir_}, 2, "sluice report: " + dir_ + " is a directory"},
      {{text}, 2, "sluice report: " + text + ": byte 0 is not a Trace.packet record"},
  };
  for (const Case& c : cases) {
    Result r = Report(c.args);
    EXPECT_EQ(r.exit_code, c.exit_code) << Join(c.args, " ") << ": " << r.err;
    EXPECT_TRUE(r.err.starts_with(c.error_start)) << Join(c.args, " ") << ": " << r.err;
    EXPECT_EQ(r.out, "") << Join(c.args, " ");
  }
}

TEST_F(ReportCommandTest, HtmlPageReplacesAFileOnlyWhenComplete) {
  const std::string page = dir_ + "/report.html";
  ASSERT_TRUE(WriteFileAtomically(page, "an older page\n", 0644).ok());
  // A failing run (a window past the trace's end) leaves it as it was.
  Result late = Report({testing::QueryTracePath("atrace_rec"), "--html", page, "--window", "100,200"});
  EXPECT_EQ(late.exit_code, 1);
  EXPECT_EQ(late.err, "sluice report: the window starts at 100.000 s, after the trace's end (it lasts 2.960 s)\n");
  EXPECT_EQ(*ReadFile(page), "an older page\n");

  Result r = Report({testing::QueryTracePath("atrace_rec"), "--html", page, "--window", "0.9,1.1"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(r.out.starts_with("sluice report: wrote " + page + " (")) << r.out;
  StatusOr<std::string> html = ReadFile(page);
  ASSERT_TRUE(html.ok());
  EXPECT_TRUE(html->starts_with("<!DOCTYPE html>")) << html->substr(0, 100);
  EXPECT_LT(html->size(), 5'000'000u);
  EXPECT_NE(html->find("\"html_window\""), std::string::npos);
  // Nothing from the network: the one URL is SVG's namespace name.
  std::string without_svg_namespace = *html;
  for (size_t at; (at = without_svg_namespace.find("http://www.w3.org/2000/svg")) != std::string::npos;)
    without_svg_namespace.erase(at, 26);
  EXPECT_EQ(without_svg_namespace.find("http:"), std::string::npos);
  EXPECT_EQ(without_svg_namespace.find("https:"), std::string::npos);

  Result nowhere = Report({testing::QueryTracePath("atrace_rec"), "--html", dir_ + "/no/such/dir/r.html"});
  EXPECT_EQ(nowhere.exit_code, 1);
  EXPECT_TRUE(nowhere.err.starts_with("sluice report: cannot write " + dir_ + "/no/such/dir/r.html: ")) << nowhere.err;
  for (const std::vector<std::string>& bad :
       {std::vector<std::string>{testing::QueryTracePath("atrace"), "--window", "1,2"},
        std::vector<std::string>{testing::QueryTracePath("atrace"), "--html", page, "--window", "2,1"},
        std::vector<std::string>{testing::QueryTracePath("atrace"), "--html", page, "--format", "json"}}) {
    Result b = Report(bad);
    EXPECT_EQ(b.exit_code, 2) << Join(bad, " ") << ": " << b.err;
    EXPECT_TRUE(b.err.starts_with("sluice report: ")) << b.err;
  }
}

TEST_F(ReportCommandTest, TimingGoesToStderr) {
  Result r = Report({testing::QueryTracePath("atrace"), "--timing"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.err.find("sluice report: imported "), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("sluice report: sections in "), std::string::npos) << r.err;
}

}  // namespace
}  // namespace sluice
