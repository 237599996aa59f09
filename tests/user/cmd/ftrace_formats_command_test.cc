#include "user/cmd/ftrace_formats_command.h"

#include <filesystem>
#include <string>
#include <utility>
#include <vector>

#include <gtest/gtest.h>

#include "tests/user/probes/ftrace/ftrace_test_util.h"

namespace sluice {
namespace {

// `sluice ftrace-formats ARGS...`: its exit code and standard output.
std::pair<int, std::string> RunFormats(std::vector<std::string> args) {
  args.insert(args.begin(), "ftrace-formats");
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  ::testing::internal::CaptureStdout();
  int rc = RunFtraceFormatsCommand(static_cast<int>(argv.size()), argv.data());
  return {rc, ::testing::internal::GetCapturedStdout()};
}

TEST(FtraceFormatsCommandTest, AcceptsRootOrEventsDir) {
  auto a = FindEventsDir("../shared/kernel-formats/android_hammerhead_MRA59G_3.4.0");
  ASSERT_TRUE(a.ok()) << a.status().message();
  EXPECT_EQ(*a, "../shared/kernel-formats/android_hammerhead_MRA59G_3.4.0/events");
  auto b = FindEventsDir("../shared/kernel-formats/android_hammerhead_MRA59G_3.4.0/events/");
  ASSERT_TRUE(b.ok());
  EXPECT_EQ(*b, *a);
  EXPECT_FALSE(FindEventsDir("/nonexistent").ok());
}

TEST(FtraceFormatsCommandTest, DescribesLayoutAndMapping) {
  FtraceFormatTable table;
  ASSERT_TRUE(testing::LoadTree(testing::kTree34, &table));
  std::string text = DescribeFtraceFormats(table, {"sched/sched_switch", "kgsl"});
  EXPECT_NE(text.find("commit @8 size 4, data @12 size 4084"), std::string::npos) << text;
  EXPECT_NE(text.find("time_stamp 31 (not listed)"), std::string::npos);
  EXPECT_NE(text.find("sched/sched_switch id 70 -> FtraceEvent.sched_switch (4)"),
            std::string::npos);
  EXPECT_NE(text.find("prev_state -> SchedSwitchFtraceEvent.prev_state (4)"), std::string::npos);
  EXPECT_NE(text.find("common_padding -> -"), std::string::npos);
  EXPECT_NE(text.find("-> FtraceEvent.generic (327)"), std::string::npos);
  EXPECT_EQ(text.find("sched/sched_wakeup "), std::string::npos);
}

TEST(FtraceFormatsCommandTest, RunsOnEveryTree) {
  for (const char* root : {"../shared/kernel-formats/android_hammerhead_MRA59G_3.4.0",
                           "../shared/kernel-formats/android_flounder_lte_LRX16F_3.10.40/events",
                           "../shared/kernel-formats/android_walleye_OPM5.171019.017.A1_4.4.88",
                           "tests/data/kernel-formats/host-6.18"}) {
    SCOPED_TRACE(root);
    auto [rc, out] = RunFormats({root, "sched/sched_switch"});
    EXPECT_EQ(rc, 0);
    EXPECT_NE(out.find("-> FtraceEvent.sched_switch (4)"), std::string::npos) << out;
    EXPECT_NE(out.find("1 events: 1 with a proto message"), std::string::npos) << out;
  }
  EXPECT_EQ(RunFormats({"/nonexistent"}).first, 1);
}

// A tree copied off a device without its header files (issue: the 3.10
// tree without header_event was refused).
TEST(FtraceFormatsCommandTest, RunsOnATreeWithoutHeaderFiles) {
  const testing::ScratchDir scratch_dir("sluice_formats_cmd_headerless");
  const std::string& scratch = scratch_dir.path();
  std::filesystem::copy("../shared/kernel-formats/android_flounder_lte_LRX16F_3.10.40", scratch,
                        std::filesystem::copy_options::recursive);
  std::filesystem::remove(scratch + "/events/header_event");
  for (int pass = 0; pass < 2; pass++) {
    auto [rc, out] = RunFormats({scratch, "sched/sched_switch"});
    EXPECT_EQ(rc, 0);
    EXPECT_NE(out.find("-> FtraceEvent.sched_switch (4)"), std::string::npos) << out;
    EXPECT_NE(out.find("no header_event"), std::string::npos) << out;
    EXPECT_NE(out.find("commit @8 size 8, data @16 size 4080"), std::string::npos) << out;
    std::filesystem::remove(scratch + "/events/header_page");  // Then without both.
  }
}

}  // namespace
}  // namespace sluice
