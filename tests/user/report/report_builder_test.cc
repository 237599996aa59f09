// BuildReport and RunReportSection (user/report/report_builder.h) on the
// committed traces: every section runs on every trace; a section run alone
// (as `sluice query -f` runs its file) gives what it gives inside the report,
// where sections share temp tables; the slice sections agree with the slice
// table; the window limits the HTML sections; errors name the file.
#include "user/report/report_builder.h"

#include <algorithm>
#include <cstdlib>
#include <memory>
#include <string>
#include <variant>
#include <vector>

#include <gtest/gtest.h>

#include "tests/user/query/multi_machine_test_util.h"
#include "tests/user/query/query_test_util.h"
#include "user/query/engine/query_engine.h"

namespace sluice {
namespace {

using testing::Rows;

std::unique_ptr<QueryEngine> Open(const std::string& name) {
  StatusOr<std::unique_ptr<QueryEngine>> engine = QueryEngine::Open(testing::QueryTracePath(name));
  EXPECT_TRUE(engine.ok()) << engine.status().message();
  return engine.ok() ? std::move(*engine) : nullptr;
}

class ReportBuilderTraceTest : public ::testing::TestWithParam<std::string> {};

TEST_P(ReportBuilderTraceTest, EverySectionRunsAndEqualsItsFileRunAlone) {
  std::unique_ptr<QueryEngine> engine = Open(GetParam());
  ASSERT_NE(engine, nullptr);
  ReportOptions options;
  options.html_sections = true;
  StatusOr<Report> report = BuildReport(engine->db(), testing::QueryTracePath(GetParam()), options);
  ASSERT_TRUE(report.ok()) << report.status().message();
  ASSERT_EQ(report->sections.size(), ReportSqlFiles().size());
  for (size_t i = 0; i < report->sections.size(); ++i) {
    const ReportSection& section = report->sections[i];
    EXPECT_EQ(section.name, ReportSqlFiles()[i].SectionName());
    EXPECT_FALSE(section.columns.empty()) << section.name;
    for (const auto& row : section.rows) ASSERT_EQ(row.size(), section.columns.size()) << section.name;
    // Alone, on a fresh import: no temp table left by another section.
    std::unique_ptr<QueryEngine> fresh = Open(GetParam());
    ASSERT_NE(fresh, nullptr);
    StatusOr<ReportSection> alone = RunReportSection(fresh->db(), ReportSqlFiles()[i]);
    ASSERT_TRUE(alone.ok()) << alone.status().message();
    EXPECT_EQ(alone->columns, section.columns) << section.name;
    EXPECT_EQ(alone->rows, section.rows) << section.name;
  }
  // Without html_sections, only the text report's.
  StatusOr<Report> text = BuildReport(engine->db(), "t", ReportOptions());
  ASSERT_TRUE(text.ok()) << text.status().message();
  for (const ReportSection& section : text->sections) EXPECT_FALSE(section.name.starts_with("html_"));
  EXPECT_NE(text->Find("overview"), nullptr);
  EXPECT_EQ(text->Find("html_timeline"), nullptr);
}

INSTANTIATE_TEST_SUITE_P(CommittedTraces, ReportBuilderTraceTest,
                         ::testing::Values("default", "nocompact", "bpf", "procstats", "upstream", "loss_kernel",
                                           "loss_bpf", "loss_smb", "loss_central", "atrace", "atrace_rec",
                                           "atrace_bpf"));

TEST(ReportBuilderTest, SliceSectionsAgreeWithTheSliceTable) {
  std::unique_ptr<QueryEngine> engine = Open("atrace_rec");
  ASSERT_NE(engine, nullptr);
  StatusOr<Report> report = BuildReport(engine->db(), "t", ReportOptions());
  ASSERT_TRUE(report.ok()) << report.status().message();
  const ReportSection* longest = report->Find("longest_slices");
  ASSERT_NE(longest, nullptr);
  ASSERT_EQ(longest->rows.size(), 10u);
  const std::vector<std::string> top = Rows(engine->db(), "SELECT ts, name FROM slice ORDER BY dur DESC LIMIT 1");
  ASSERT_EQ(top.size(), 1u);
  EXPECT_EQ(std::to_string(std::get<int64_t>(longest->rows[0][0])) + "|" +
                std::get<std::string>(longest->rows[0][longest->ColumnIndex("name")]),
            top[0]);
  const ReportSection* names = report->Find("slice_names");
  ASSERT_NE(names, nullptr);
  ASSERT_FALSE(names->rows.empty());
  const std::string first_name = std::get<std::string>(names->rows[0][0]);
  EXPECT_EQ(Rows(engine->db(), "SELECT count(*) FROM slice WHERE dur > 0 AND name = '" + first_name + "'"),
            std::vector<std::string>{std::to_string(std::get<int64_t>(names->rows[0][1]))});
}

TEST(ReportBuilderTest, LossesListDataLossWithTheFix) {
  std::unique_ptr<QueryEngine> engine = Open("loss_kernel");
  ASSERT_NE(engine, nullptr);
  StatusOr<ReportSection> losses = RunReportSection(engine->db(), *FindReportSqlFile("losses"));
  ASSERT_TRUE(losses.ok()) << losses.status().message();
  ASSERT_FALSE(losses->rows.empty());
  bool data_loss = false;
  for (const auto& row : losses->rows) {
    if (std::get<std::string>(row[losses->ColumnIndex("severity")]) != "data_loss") continue;
    data_loss = true;
    EXPECT_GT(std::get<int64_t>(row[losses->ColumnIndex("value")]), 0);
    EXPECT_FALSE(std::get<std::string>(row[losses->ColumnIndex("fix")]).empty());
  }
  EXPECT_TRUE(data_loss);
}

TEST(ReportBuilderTest, WindowLimitsTheHtmlSections) {
  std::unique_ptr<QueryEngine> engine = Open("atrace_rec");
  ASSERT_NE(engine, nullptr);
  ReportOptions options;
  options.html_sections = true;
  options.window = ReportWindow{1.0, 1.001};
  StatusOr<Report> report = BuildReport(engine->db(), "t", options);
  ASSERT_TRUE(report.ok()) << report.status().message();
  const ReportSection* window = report->Find("html_window");
  ASSERT_NE(window, nullptr);
  ASSERT_EQ(window->rows.size(), 1u);
  const std::vector<std::string> start = Rows(engine->db(), "SELECT trace_start() + 1000000000");
  EXPECT_EQ(std::to_string(std::get<int64_t>(window->rows[0][0])), start[0]);
  const int64_t start_ts = std::get<int64_t>(window->rows[0][0]);
  const int64_t end_ts = std::get<int64_t>(window->rows[0][1]);
  EXPECT_EQ(end_ts - start_ts, 1000000);
  const ReportSection* runs = report->Find("html_window_runs");
  ASSERT_NE(runs, nullptr);
  for (const auto& row : runs->rows) {
    const int64_t ts = std::get<int64_t>(row[runs->ColumnIndex("ts")]);
    const int64_t dur = std::get<int64_t>(row[runs->ColumnIndex("dur")]);
    EXPECT_LT(ts, end_ts);
    EXPECT_GE(ts + dur, start_ts);
  }
  // The window's run count is a scan, and matches the runs shown.
  EXPECT_EQ(std::get<int64_t>(window->rows[0][window->ColumnIndex("runs")]),
            static_cast<int64_t>(runs->rows.size()));
}

TEST(ReportBuilderTest, AFailingSectionNamesItsFile) {
  std::unique_ptr<QueryEngine> engine = Open("atrace");
  ASSERT_NE(engine, nullptr);
  StatusOr<ReportSection> bad =
      RunReportSection(engine->db(), ReportSqlFile{"99_broken.sql", "-- title: Broken\nSELECT 1;\nSELECT nope;\n"});
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().message(), "99_broken.sql: SQL error at line 3 column 8: no such column: nope");
}

TEST(ReportBuilderTest, ParsesWindows) {
  StatusOr<ReportWindow> window = ParseReportWindow("1.5,2");
  ASSERT_TRUE(window.ok());
  EXPECT_DOUBLE_EQ(window->start_s, 1.5);
  EXPECT_DOUBLE_EQ(window->end_s, 2);
  for (const char* bad : {"", "1", "1,", ",2", "2,1", "1,1", "-1,2", "a,b", "1,2,3", "nan,1", "0,inf"}) {
    StatusOr<ReportWindow> parsed = ParseReportWindow(bad);
    EXPECT_FALSE(parsed.ok()) << bad;
    if (!parsed.ok()) {
      EXPECT_NE(parsed.status().message().find("--window START,END"), std::string::npos) << bad;
    }
  }
}

}  // namespace
}  // namespace sluice

namespace sluice {
namespace {

// A trace of the host and two relayed machines: a Machines row each, and
// the guests' CPUs, processes and threads named by their machine.
TEST(ReportBuilderMachinesTest, EachMachineHasItsRowAndItsCpus) {
  StatusOr<std::unique_ptr<QueryEngine>> engine = QueryEngine::OpenBytes(testing::TwoGuestsTrace());
  ASSERT_TRUE(engine.ok()) << engine.status().message();
  ReportOptions options;
  options.html_sections = true;
  StatusOr<Report> report = BuildReport((*engine)->db(), "two_guests", options);
  ASSERT_TRUE(report.ok()) << report.status().message();
  const ReportSection* machines = report->Find("machines");
  ASSERT_NE(machines, nullptr);
  ASSERT_EQ(machines->rows.size(), 3u);
  auto text = [](const ReportCell& cell) { return std::get<std::string>(cell); };
  auto number = [](const ReportCell& cell) { return std::get<int64_t>(cell); };
  const int name = machines->ColumnIndex("machine"), id = machines->ColumnIndex("machine_id"),
            cpus = machines->ColumnIndex("cpus"), processes = machines->ColumnIndex("processes");
  EXPECT_EQ(text(machines->rows[0][name]), "host");
  EXPECT_EQ(text(machines->rows[1][name]), "guest-a");
  EXPECT_EQ(number(machines->rows[1][id]), 1);
  EXPECT_EQ(number(machines->rows[1][cpus]), 2);
  EXPECT_EQ(number(machines->rows[1][processes]), 2);
  EXPECT_EQ(text(machines->rows[2][name]), "guest-b");
  EXPECT_EQ(number(machines->rows[2][id]), 7);
  // CPU rows: the host's by number, the guests' by machine and number.
  const ReportSection* cpus_section = report->Find("cpu_utilization");
  ASSERT_NE(cpus_section, nullptr);
  std::vector<std::string> labels;
  for (const auto& row : cpus_section->rows) {
    const ReportCell& cpu = row[cpus_section->ColumnIndex("cpu")];
    labels.push_back(std::holds_alternative<int64_t>(cpu) ? std::to_string(std::get<int64_t>(cpu)) : text(cpu));
  }
  EXPECT_EQ(labels, (std::vector<std::string>{"0", "1", "guest-a cpu 0", "guest-a cpu 1", "guest-b cpu 0"}));
  // The guests' pid 100 is not the host's.
  const ReportSection* by_process = report->Find("cpu_by_process");
  ASSERT_NE(by_process, nullptr);
  std::vector<std::string> names;
  for (const auto& row : by_process->rows) names.push_back(text(row[by_process->ColumnIndex("process")]));
  std::sort(names.begin(), names.end());
  EXPECT_EQ(names, (std::vector<std::string>{"[unknown] @guest-a", "guestd @guest-a", "qemu-system-x86_64",
                                             "sensor @guest-b"}));
}

}  // namespace
}  // namespace sluice
