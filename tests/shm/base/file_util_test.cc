#include "shm/base/file_util.h"

#include <sys/stat.h>

#include <filesystem>
#include <fstream>

#include "gtest/gtest.h"
#include "shm/base/errno_message.h"
#include "shm/base/scoped_fd.h"

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

TEST(FileUtilTest, PreadFromStartKeepsOneFdAndReadsWhatIsThereNow) {
  const std::string path = ::testing::TempDir() + "/file_util_pread_test";
  std::ofstream(path) << "0.10 0.20 0.30 1/99 1234\n";
  ScopedFd fd;
  char buf[64];
  auto first = PreadFromStart(path, &fd, buf);
  ASSERT_TRUE(first.ok()) << first.status().message();
  EXPECT_EQ(*first, "0.10 0.20 0.30 1/99 1234\n");
  const int kept = fd.get();
  ASSERT_GE(kept, 0);
  std::ofstream(path, std::ios::trunc) << "0.11 0.20 0.30 1/99 1240\n";  // Same inode.
  EXPECT_EQ(*PreadFromStart(path, &fd, buf), "0.11 0.20 0.30 1/99 1240\n");
  EXPECT_EQ(fd.get(), kept);  // Not opened again.
  // A file as long as the buffer, or longer, fills it: the caller's sign.
  char small[4];
  ScopedFd small_fd;
  EXPECT_EQ(PreadFromStart(path, &small_fd, small)->size(), sizeof(small));
  std::filesystem::remove(path);
  // /proc makes the text again at each read from 0.
  ScopedFd loadavg;
  ASSERT_TRUE(PreadFromStart("/proc/loadavg", &loadavg, buf).ok());
  EXPECT_NE(PreadFromStart("/proc/loadavg", &loadavg, buf)->find('/'), std::string_view::npos);
  ScopedFd missing;
  auto error = PreadFromStart("/nonexistent/sluice", &missing, buf);
  ASSERT_FALSE(error.ok());
  EXPECT_EQ(error.status().message(), "cannot open /nonexistent/sluice (No such file or directory)");
  EXPECT_FALSE(missing.valid());
}

TEST(FileUtilTest, ErrnoText) {
  EXPECT_EQ(ErrnoMessage(ENOENT), "No such file or directory");
  EXPECT_EQ(ErrnoMessage(-ENOENT), "No such file or directory");  // libbpf's sign.
  EXPECT_EQ(WithErrno("cannot open x", EACCES), "cannot open x: Permission denied");
}

}  // namespace
}  // namespace sluice
