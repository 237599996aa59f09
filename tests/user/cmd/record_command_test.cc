// `sluice record` runs that fail before they record (the built binary, as a
// user runs it): a file already at -o is never damaged, no temporary file is
// left behind, and the one-line error names the cause. Nothing here enables
// tracing, so no kernel test lock is needed; the recordings themselves are
// in record_command_kernel_test.cc.
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "shm/base/file_util.h"
#include "tests/child_process_test_util.h"
#include "tests/user/cmd/record_test_util.h"

namespace sluice {
namespace {

using Result = testing::CommandResult;

class RecordCommandTest : public ::testing::Test {
 protected:
  void SetUp() override {
    sluice_ = testing::SluiceBinDir() + "/sluice";
    ASSERT_EQ(access(sluice_.c_str(), X_OK), 0) << sluice_ << " not found: build it (make build/sluice)";
    dir_ = testing::MakeTempDir("sluice_record_test_");
    ASSERT_FALSE(dir_.empty());
    trace_ = dir_ + "/trace.pftrace";
    ASSERT_TRUE(WriteFileAtomically(trace_, "an earlier trace", 0644).ok());
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  Result Record(const std::vector<std::string>& args) {
    std::vector<std::string> argv = {sluice_, "record"};
    argv.insert(argv.end(), args.begin(), args.end());
    return testing::RunToCompletion(argv, dir_);
  }
  // The earlier trace is intact and nothing else is in the directory.
  void ExpectUntouched() {
    EXPECT_EQ(ReadFile(trace_).value_or(""), "an earlier trace");
    size_t files = 0;
    for (const auto& entry : std::filesystem::directory_iterator(dir_)) {
      if (entry.path().filename() == "stdout" || entry.path().filename() == "stderr") continue;
      files++;
    }
    EXPECT_EQ(files, 1u) << "a failed run left a file beside " << trace_;
  }

  std::string sluice_, dir_, trace_;
};

// Before, `--daemon` without a running sluiced truncated the file to zero.
TEST_F(RecordCommandTest, DaemonNotRunningLeavesTheFileAsItWas) {
  Result r = Record({"--daemon", "--consumer-socket", dir_ + "/no-such.sock", "-q", "-o", trace_});
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_NE(r.err.find("no-such.sock"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("without --daemon"), std::string::npos) << r.err;
  ExpectUntouched();
}

TEST_F(RecordCommandTest, BrokenConfigLeavesTheFileAsItWas) {
  ASSERT_TRUE(WriteFileAtomically(dir_ + "/bad.pbtx", "buffers { size_kb: 1024 \n", 0644).ok());
  Result r = Record({"-c", dir_ + "/bad.pbtx", "--txt", "-o", trace_});
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_NE(r.err.find("bad.pbtx: line"), std::string::npos) << r.err;
  std::filesystem::remove(dir_ + "/bad.pbtx");
  ExpectUntouched();
}

TEST_F(RecordCommandTest, OutputInAMissingDirectoryIsRefusedBeforeRecording) {
  Result r = Record({"-q", "-o", dir_ + "/missing/trace.pftrace"});
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_NE(r.err.find("cannot create a file in " + dir_ + "/missing"), std::string::npos) << r.err;
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
  ExpectUntouched();
}

TEST_F(RecordCommandTest, OutputThatIsADirectoryIsRefused) {
  Result r = Record({"-q", "-o", dir_});
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_NE(r.err.find("it is a directory"), std::string::npos) << r.err;
  ExpectUntouched();
}

TEST_F(RecordCommandTest, ConflictingModesAreRefused) {
  Result r = Record({"--ring", "--stream", "-o", trace_});
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_NE(r.err.find("give one of --stream, --ring and --discard"), std::string::npos) << r.err;
  ExpectUntouched();
}

}  // namespace
}  // namespace sluice
