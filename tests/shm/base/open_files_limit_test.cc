#include "shm/base/open_files_limit.h"

#include <sys/resource.h>

#include "gtest/gtest.h"

namespace sluice {
namespace {

TEST(OpenFilesLimitTest, RaisesTheSoftLimitToTheHardOne) {
  struct rlimit saved {};
  ASSERT_EQ(getrlimit(RLIMIT_NOFILE, &saved), 0);
  if (saved.rlim_max < 64) GTEST_SKIP() << "hard open-files limit below 64";
  struct rlimit lowered = saved;
  lowered.rlim_cur = 64;
  ASSERT_EQ(setrlimit(RLIMIT_NOFILE, &lowered), 0);
  EXPECT_EQ(RaiseOpenFilesLimit(), saved.rlim_max);
  struct rlimit now {};
  ASSERT_EQ(getrlimit(RLIMIT_NOFILE, &now), 0);
  EXPECT_EQ(now.rlim_cur, saved.rlim_max);
  EXPECT_EQ(RaiseOpenFilesLimit(), saved.rlim_max);  // Already there.
  setrlimit(RLIMIT_NOFILE, &saved);
}

}  // namespace
}  // namespace sluice
