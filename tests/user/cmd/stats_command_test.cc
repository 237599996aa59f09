// End-to-end tests of `sluice stats` (user/cmd/stats_command.h): its exit
// status for a clean trace, one with data loss, one without TraceStats, an
// empty file and bytes that are not a trace; the lines of relayed machines.
// No kernel needed.
#include <unistd.h>

#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "shm/base/file_util.h"
#include "tests/child_process_test_util.h"
#include "tests/user/cmd/record_test_util.h"
#include "tests/user/query/query_test_util.h"

namespace sluice {
namespace {

using Result = testing::CommandResult;

class StatsCommandTest : public ::testing::Test {
 protected:
  void SetUp() override {
    sluice_ = testing::SluiceBinDir() + "/sluice";
    ASSERT_EQ(access(sluice_.c_str(), X_OK), 0) << sluice_ << " not found: build it (make build/sluice)";
    dir_ = testing::MakeTempDir("sluice_stats_test_");
    ASSERT_FALSE(dir_.empty());
  }
  void TearDown() override { testing::RemoveTempDir(dir_); }

  Result Stats(const std::string& path) { return testing::RunToCompletion({sluice_, "stats", path}, dir_); }
  static std::string Trace(const std::string& name) { return testing::QueryTracePath(name); }

  std::string sluice_, dir_;
};

TEST_F(StatsCommandTest, ExitStatusSaysWhetherLossesAreKnownAndNone) {
  Result clean = Stats(Trace("default"));
  EXPECT_EQ(clean.exit_code, 0) << clean.out << clean.err;

  Result lost = Stats(Trace("loss_kernel"));
  EXPECT_EQ(lost.exit_code, 1);
  EXPECT_NE(lost.out.find("data loss: "), std::string::npos) << lost.out;

  // Written by hand, as a killed recorder leaves it: no TraceStats.
  Result unknown = Stats(Trace("atrace"));
  EXPECT_EQ(unknown.exit_code, 1);
  EXPECT_NE(unknown.out.find("losses unknown: no TraceStats"), std::string::npos) << unknown.out;
}

// A trace of the host and two relayed machines
// (tests/data/query/multi_machine): a line per machine, and what guest-a's
// relay dropped and lost in transit and its kernel overwrote are losses.
TEST_F(StatsCommandTest, RelayedMachinesHaveTheirLinesAndTheirLossesCount) {
  Result r = Stats(Trace("multi_machine/two_guests"));
  EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
  EXPECT_NE(r.out.find("relayed machines:"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("  guest-a             1 "), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("  guest-b             7 "), std::string::npos) << r.out;
  // 3 chunks dropped + 1 lost in transit + 6 events overwritten.
  EXPECT_NE(r.out.find("data loss: 10 "), std::string::npos) << r.out;
}

TEST_F(StatsCommandTest, EmptyAndForeignFilesAreNotTraces) {
  const std::string empty = dir_ + "/empty.pftrace";
  ASSERT_TRUE(WriteFileAtomically(empty, "", 0644).ok());
  Result r = Stats(empty);
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(r.err, "sluice stats: " + empty +
                       " is empty (0 bytes): not a trace; a recording writes at least its config\n");
  const std::string text = dir_ + "/notes.txt";
  ASSERT_TRUE(WriteFileAtomically(text, "hello\n", 0644).ok());
  Result foreign = Stats(text);
  EXPECT_EQ(foreign.exit_code, 2);
  EXPECT_NE(foreign.err.find("not a Perfetto trace"), std::string::npos) << foreign.err;
}

}  // namespace
}  // namespace sluice
