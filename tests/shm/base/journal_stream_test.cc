#include "shm/base/journal_stream.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <string>

#include "gtest/gtest.h"

namespace sluice {
namespace {

std::string DevInode(int fd) {
  struct stat st;
  EXPECT_EQ(fstat(fd, &st), 0);
  return std::to_string(st.st_dev) + ":" + std::to_string(st.st_ino);
}

TEST(JournalStreamTest, MatchesOnlyTheFileNamed) {
  FILE* a = tmpfile();
  FILE* b = tmpfile();
  ASSERT_TRUE(a && b);
  const std::string a_id = DevInode(fileno(a));
  EXPECT_TRUE(FdIsJournalStream(fileno(a), a_id.c_str()));
  // Redirected elsewhere (a child of the service writing to a file): no.
  EXPECT_FALSE(FdIsJournalStream(fileno(b), a_id.c_str()));
  fclose(a);
  fclose(b);
}

TEST(JournalStreamTest, MalformedOrMissingVariableIsNotTheJournal) {
  FILE* a = tmpfile();
  ASSERT_TRUE(a);
  for (const char* bad : {"", ":", "12", "x:y", "1:2:3", "-1:5"})
    EXPECT_FALSE(FdIsJournalStream(fileno(a), bad)) << bad;
  EXPECT_FALSE(FdIsJournalStream(fileno(a), nullptr));
  fclose(a);
}

}  // namespace
}  // namespace sluice
