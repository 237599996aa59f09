#include "user/probes/bpf/bpf_marker_files.h"

#include <sys/stat.h>
#include <sys/sysmacros.h>

#include <gtest/gtest.h>

namespace sluice {
namespace {

// The kernel's dev_t is major << 20 | minor; user space's st_dev encodes
// differently once the minor exceeds 255 (anonymous devices often do).
TEST(BpfMarkerFilesTest, KernelDevFromStatDev) {
  EXPECT_EQ(KernelDevFromStatDev(makedev(0, 14)), 14u);
  EXPECT_EQ(KernelDevFromStatDev(makedev(0, 300)), 300u);
  EXPECT_EQ(KernelDevFromStatDev(makedev(8, 1)), (8u << 20) | 1u);
  EXPECT_EQ(KernelDevFromStatDev(makedev(259, 70000)), (259u << 20) | 70000u);
}

TEST(BpfMarkerFilesTest, ResolvesInodeAndDeduplicates) {
  if (access("/sys/kernel/tracing/trace_marker", F_OK) != 0) GTEST_SKIP() << "no tracefs";
  auto files = ResolveMarkerFiles("", {"", ""});
  ASSERT_TRUE(files.ok()) << files.status().message();
  ASSERT_EQ(files->size(), 1u);
  struct stat st;
  ASSERT_EQ(stat("/sys/kernel/tracing/trace_marker", &st), 0);
  EXPECT_EQ((*files)[0].ino, st.st_ino);
  EXPECT_EQ((*files)[0].kernel_dev, KernelDevFromStatDev(st.st_dev));
}

TEST(BpfMarkerFilesTest, MissingInstanceIsAnError) {
  if (access("/sys/kernel/tracing/trace_marker", F_OK) != 0) GTEST_SKIP() << "no tracefs";
  auto files = ResolveMarkerFiles("", {"sluice-no-such-instance"});
  ASSERT_FALSE(files.ok());
  EXPECT_NE(files.status().message().find("sluice-no-such-instance"), std::string::npos);
}

}  // namespace
}  // namespace sluice
