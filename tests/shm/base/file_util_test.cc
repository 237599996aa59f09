#include "shm/base/file_util.h"

#include <sys/stat.h>

#include <filesystem>
#include <fstream>

#include "gtest/gtest.h"
#include "shm/base/errno_message.h"

namespace sluice {
namespace {

TEST(FileUtilTest, ReadsProcFilesWhoseSizeIsZero) {
  auto text = ReadFile("/proc/self/status");
  ASSERT_TRUE(text.ok()) << text.status().message();
  EXPECT_NE(text->find("Pid:"), std::string::npos);
}

TEST(FileUtilTest, ErrorsNameThePathAndTheCause) {
  auto missing = ReadFile("/nonexistent/sluice");
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.status().message(),
            "cannot open /nonexistent/sluice (No such file or directory)");
  const std::string path = ::testing::TempDir() + "/file_util_test";
  std::ofstream(path) << std::string(100, 'x');
  EXPECT_FALSE(ReadFile(path, 99).ok());
  EXPECT_EQ(ReadFile(path, 100)->size(), 100u);
  EXPECT_TRUE(IsRegularFile(path));
  EXPECT_FALSE(IsDirectory(path));
  EXPECT_TRUE(PathExists(path));
  std::filesystem::remove(path);
  EXPECT_FALSE(PathExists(path));
}

TEST(FileUtilTest, WriteFileAtomicallyReplacesTheWholeFile) {
  const std::string path = ::testing::TempDir() + "/file_util_atomic_test";
  ASSERT_TRUE(WriteFileAtomically(path, std::string(1000, 'a')).ok());
  ASSERT_TRUE(WriteFileAtomically(path, "short", 0640).ok());
  EXPECT_EQ(*ReadFile(path), "short");  // Not "short" over the old 1000 bytes.
  EXPECT_FALSE(PathExists(path + ".tmp"));
  const mode_t mask = umask(0);
  umask(mask);
  EXPECT_EQ(std::filesystem::status(path).permissions() & std::filesystem::perms::all,
            std::filesystem::perms(0640 & ~mask));  // The new file's mode.
  std::filesystem::remove(path);
  Status st = WriteFileAtomically("/nonexistent/sluice/x", "x");
  ASSERT_FALSE(st.ok());
  EXPECT_EQ(st.message(), "cannot create /nonexistent/sluice/x.tmp (No such file or directory)");
}

TEST(FileUtilTest, ErrnoText) {
  EXPECT_EQ(ErrnoMessage(ENOENT), "No such file or directory");
  EXPECT_EQ(ErrnoMessage(-ENOENT), "No such file or directory");  // libbpf's sign.
  EXPECT_EQ(WithErrno("cannot open x", EACCES), "cannot open x: Permission denied");
}

}  // namespace
}  // namespace sluice
