#include "shm/base/process_identity.h"

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include "gtest/gtest.h"
#include "tests/child_process_test_util.h"

namespace sluice {
namespace {

TEST(ProcessIdentityTest, ParsesStatWithSpacesAndParensInTheName) {
  // A command name may hold ") " itself: the fields follow the last ')'.
  auto stat = ParseProcStat(
      "1247 (a) b (c)) S 1243 1243 21569 0 -1 4194304 101 0 0 0 0 0 0 0 20 0 1 0 813255 "
      "3133440 411 18446744073709551615\n");
  ASSERT_TRUE(stat.ok()) << stat.status().message();
  EXPECT_EQ(stat->state, 'S');
  EXPECT_EQ(stat->start_time, 813255u);
  EXPECT_FALSE(ParseProcStat("1247 (cat R 1243").ok());
  EXPECT_FALSE(ParseProcStat("1247 (cat) R 1243 1243").ok());
  EXPECT_FALSE(ParseProcStat("1247 (cat) R 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 x").ok());
}

TEST(ProcessIdentityTest, ThisProcessRunsAndAReapedChildDoesNot) {
  auto self = ReadProcessIdentity(getpid());
  ASSERT_TRUE(self.ok()) << self.status().message();
  EXPECT_EQ(self->pid, static_cast<uint32_t>(getpid()));
  EXPECT_FALSE(self->boot_id.empty());
  EXPECT_TRUE(IsProcessRunning(*self));

  ProcessIdentity other_start = *self;
  other_start.start_time++;  // The pid reused by another process.
  EXPECT_FALSE(IsProcessRunning(other_start));
  ProcessIdentity other_boot = *self;
  other_boot.boot_id = "00000000-0000-0000-0000-000000000000";
  EXPECT_FALSE(IsProcessRunning(other_boot));

  const pid_t child = testing::ForkIdleChild();
  ASSERT_GT(child, 0);
  auto child_id = ReadProcessIdentity(child);
  ASSERT_TRUE(child_id.ok()) << child_id.status().message();
  EXPECT_TRUE(IsProcessRunning(*child_id));
  kill(child, SIGKILL);
  // Until reaped it is a zombie: its files are closed, it counts as gone.
  siginfo_t info;
  ASSERT_EQ(waitid(P_PID, static_cast<id_t>(child), &info, WEXITED | WNOWAIT), 0);
  EXPECT_FALSE(IsProcessRunning(*child_id));
  ASSERT_EQ(waitpid(child, nullptr, 0), child);
  EXPECT_FALSE(IsProcessRunning(*child_id));
}

}  // namespace
}  // namespace sluice
