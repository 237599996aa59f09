// WriteReportText (user/report/report_text.h): the overview lines, a
// section as a table, and what an empty section says.
#include "user/report/report_text.h"

#include <string>

#include <gtest/gtest.h>

#include "tests/user/query/query_test_util.h"

namespace sluice {
namespace {

TEST(ReportTextTest, OverviewTableAndEmptySections) {
  Report report;
  report.trace_path = "t.pftrace";
  ReportSection overview;
  overview.name = "overview";
  overview.columns = {"duration_s", "size_bytes", "kernel", "machine", "cpus", "processes", "threads",
                      "sched_slices", "slices", "counter_values"};
  overview.rows.push_back({2.5, int64_t{1500000}, std::string("6.18.0"), std::string("x86_64"), int64_t{2},
                           int64_t{10}, int64_t{20}, int64_t{300}, int64_t{0}, int64_t{4}});
  report.sections.push_back(overview);
  ReportSection cpu;
  cpu.name = "cpu_by_thread";
  cpu.title = "CPU time by thread";
  cpu.columns = {"tid", "thread", "cpu_s"};
  cpu.rows.push_back({int64_t{7}, std::string("worker"), 0.25});
  cpu.rows.push_back({int64_t{12}, std::monostate(), 0.125});
  report.sections.push_back(cpu);
  for (const char* name : {"losses", "longest_slices", "counters"}) {
    ReportSection empty;
    empty.name = name;
    empty.title = name;
    empty.columns = {"x"};
    report.sections.push_back(empty);
  }
  const std::string text = testing::CaptureOutput([&](FILE* out) { WriteReportText(report, out); });
  EXPECT_EQ(text,
            "Trace t.pftrace\n"
            "  2.5 s, 1.5 MB; 6.18.0 x86_64; 2 CPUs, 10 processes, 20 threads\n"
            "  300 sched slices, 0 slices, 4 counter values\n"
            "\n"
            "CPU time by thread\n"
            "tid  thread  cpu_s\n"
            "---  ------  -----\n"
            "  7  worker   0.25\n"
            " 12  [NULL]  0.125\n"
            "\n"
            "losses: nothing lost, no errors\n"
            "\n"
            "longest_slices: no slices (they come from atrace/trace_marker writes: B|pid|name ... E|pid)\n"
            "\n"
            "counters: no counters\n");
}

}  // namespace
}  // namespace sluice
