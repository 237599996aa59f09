// Tests of user/cmd/record_rotation_hook.h with /bin/sh: the path reaches
// the command as its last argument and $SLUICE_TRACE_FILE, failures are
// counted, and queued commands run in order.
#include "user/cmd/record_rotation_hook.h"

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>

#include "gtest/gtest.h"

namespace sluice {
namespace {

std::string ReadAll(const std::string& path) {
  std::ifstream in(path);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

TEST(RotationHookTest, ThePathIsTheLastArgumentAndInTheEnvironment) {
  const std::string path = "/tmp/a trace with spaces.pftrace";
  EXPECT_EQ(RotationHook::RunOnce("test \"$SLUICE_TRACE_FILE\" = \"$1\" && test $# -eq 1 && test", path), "");
  EXPECT_EQ(RotationHook::RunOnce("test 'a trace' =", "a trace"), "");
}

TEST(RotationHookTest, FailuresSayHow) {
  EXPECT_EQ(RotationHook::RunOnce("exit 3 #", "x"), "exit status 3");
  EXPECT_EQ(RotationHook::RunOnce("kill -9 $$ #", "x"), "killed by signal 9");
  EXPECT_EQ(RotationHook::RunOnce("/nonexistent/command", "x"), "exit status 127");
}

TEST(RotationHookTest, QueuedCommandsRunInOrderAndFailuresAreCounted) {
  char tmpl[] = "/tmp/sluice-hook-test-XXXXXX";
  ASSERT_NE(mkdtemp(tmpl), nullptr);
  const std::string dir = tmpl, log = dir + "/log";
  {
    RotationHook hook("f() { echo \"$1\" >> " + log + "; test \"$1\" != b; }; f");
    for (const char* p : {"a", "b", "c"}) hook.Run(p);
    hook.Finish();
    EXPECT_EQ(hook.runs(), 3u);
    EXPECT_EQ(hook.failures(), 1u);
  }
  EXPECT_EQ(ReadAll(log), "a\nb\nc\n");
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace sluice
