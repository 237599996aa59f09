#include "user/cmd/record_output.h"

#include <gtest/gtest.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <string>

#include "shm/base/file_util.h"

namespace sluice {
namespace {

class RecordOutputTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char dir[] = "/tmp/sluice-record-output-XXXXXX";
    ASSERT_NE(mkdtemp(dir), nullptr);
    dir_ = dir;
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  size_t FilesInDir() const {
    size_t n = 0;
    for ([[maybe_unused]] const auto& entry : std::filesystem::directory_iterator(dir_)) n++;
    return n;
  }
  static void WriteAll(int fd, const std::string& bytes) {
    ASSERT_EQ(write(fd, bytes.data(), bytes.size()), static_cast<ssize_t>(bytes.size()));
  }
  std::string dir_;
};

TEST_F(RecordOutputTest, WritesBesideThePathAndRenamesOverItOnlyAtCommit) {
  const std::string path = dir_ + "/trace.pftrace";
  ASSERT_TRUE(WriteFileAtomically(path, "old trace", 0644).ok());
  auto output = RecordOutput::Create(path);
  ASSERT_TRUE(output.ok()) << output.status().message();
  const std::string temp = (*output)->temp_path();
  EXPECT_EQ(temp.rfind(path + ".recording-", 0), 0u) << temp;
  WriteAll((*output)->fd(), "new trace");
  EXPECT_EQ(*ReadFile(path), "old trace");  // Untouched while recording.
  ASSERT_TRUE((*output)->Commit().ok());
  EXPECT_EQ(*ReadFile(path), "new trace");
  EXPECT_FALSE(PathExists(temp));
}

TEST_F(RecordOutputTest, ARunThatEndsWithoutCommitLeavesTheOldFileAndNoTemporary) {
  const std::string path = dir_ + "/trace.pftrace";
  ASSERT_TRUE(WriteFileAtomically(path, "old trace", 0644).ok());
  {
    auto output = RecordOutput::Create(path);
    ASSERT_TRUE(output.ok());
    WriteAll((*output)->fd(), "half");
  }
  EXPECT_EQ(*ReadFile(path), "old trace");
  EXPECT_EQ(FilesInDir(), 1u);
}

TEST_F(RecordOutputTest, APartialTraceTakesAFreePathButNeverReplacesAFile) {
  const std::string free_path = dir_ + "/new.pftrace";
  auto first = RecordOutput::Create(free_path);
  ASSERT_TRUE(first.ok());
  WriteAll((*first)->fd(), "partial");
  EXPECT_EQ((*first)->KeepPartial(), free_path);
  EXPECT_EQ(*ReadFile(free_path), "partial");

  auto second = RecordOutput::Create(free_path);
  ASSERT_TRUE(second.ok());
  WriteAll((*second)->fd(), "another partial");
  const std::string kept = (*second)->KeepPartial();
  EXPECT_EQ(kept, (*second)->temp_path());
  second->reset();  // Kept files outlive the object.
  EXPECT_EQ(*ReadFile(free_path), "partial");
  EXPECT_EQ(*ReadFile(kept), "another partial");
}

TEST_F(RecordOutputTest, BadPathsFailBeforeAnythingIsCreated) {
  auto missing = RecordOutput::Create(dir_ + "/no/such/dir/trace.pftrace");
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.status().message().find("No such file"), std::string::npos) << missing.status().message();
  EXPECT_NE(missing.status().message().find("-o"), std::string::npos);
  auto directory = RecordOutput::Create(dir_);
  ASSERT_FALSE(directory.ok());
  EXPECT_NE(directory.status().message().find("is a directory"), std::string::npos);
  EXPECT_EQ(FilesInDir(), 0u);
}

TEST_F(RecordOutputTest, TheFileIsAsReadableAsAnyFileThisProcessCreates) {
  const mode_t old = umask(022);
  auto output = RecordOutput::Create(dir_ + "/trace.pftrace");
  umask(old);
  ASSERT_TRUE(output.ok());
  struct stat st {};
  ASSERT_EQ(fstat((*output)->fd(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0644u);
}

TEST_F(RecordOutputTest, StandardOutputGetsTheTraceAndTheTemporaryGoes) {
  setenv("TMPDIR", dir_.c_str(), 1);
  auto output = RecordOutput::Create("-");
  unsetenv("TMPDIR");
  ASSERT_TRUE(output.ok()) << output.status().message();
  EXPECT_TRUE((*output)->to_stdout());
  EXPECT_EQ((*output)->display_name(), "standard output");
  EXPECT_EQ((*output)->temp_path().rfind(dir_ + "/sluice-stdout-", 0), 0u);
  WriteAll((*output)->fd(), "trace bytes");
  // Standard output, for this test, is a file it can read back.
  const std::string captured = dir_ + "/captured";
  fflush(stdout);
  const int saved = dup(STDOUT_FILENO);
  FILE* f = freopen(captured.c_str(), "w", stdout);
  ASSERT_NE(f, nullptr);
  Status committed = (*output)->Commit();
  fflush(stdout);
  dup2(saved, STDOUT_FILENO);
  close(saved);
  ASSERT_TRUE(committed.ok()) << committed.message();
  EXPECT_EQ(*ReadFile(captured), "trace bytes");
  EXPECT_FALSE(PathExists((*output)->temp_path()));
}

}  // namespace
}  // namespace sluice
