#include "user/probes/tracefs_readers.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include "shm/base/scoped_fd.h"
#include "tests/kernel_test_util.h"
#include "tests/user/cmd/record_test_util.h"
#include "tests/user/probes/tracefs_test_util.h"

namespace sluice {
namespace {

TEST(TracefsReadersTest, ConsumingFilesOfTheTopLevelBufferAndOfInstances) {
  std::string instance = "x";
  EXPECT_TRUE(ParseTracefsReaderPath("/sys/kernel/tracing/per_cpu/cpu0/trace_pipe_raw", &instance));
  EXPECT_EQ(instance, "");
  EXPECT_TRUE(ParseTracefsReaderPath("/sys/kernel/tracing/per_cpu/cpu17/trace_pipe", &instance));
  EXPECT_TRUE(ParseTracefsReaderPath("/sys/kernel/tracing/trace_pipe", &instance));
  EXPECT_TRUE(ParseTracefsReaderPath("/sys/kernel/debug/tracing/per_cpu/cpu1/trace_pipe_raw", &instance));
  EXPECT_EQ(instance, "");
  EXPECT_TRUE(ParseTracefsReaderPath("/sys/kernel/tracing/instances/perfetto/per_cpu/cpu3/trace_pipe_raw",
                                     &instance));
  EXPECT_EQ(instance, "perfetto");
}

TEST(TracefsReadersTest, FilesThatDoNotConsumeAreNotReaders) {
  std::string instance;
  for (const char* path : {"/sys/kernel/tracing/trace_marker", "/sys/kernel/tracing/trace",
                           "/sys/kernel/tracing/per_cpu/cpu0/stats", "/sys/kernel/tracing/per_cpu/cpuX/trace_pipe_raw",
                           "/sys/kernel/tracing/per_cpu/cpu/trace_pipe_raw", "/sys/kernel/tracing/instances/trace_pipe",
                           "/sys/kernel/tracing/instances//trace_pipe", "/tmp/sys/kernel/tracing/trace_pipe",
                           "/sys/kernel/tracing/events/sched/enable", "pipe:[1234]", ""}) {
    EXPECT_FALSE(ParseTracefsReaderPath(path, &instance)) << path;
  }
}

// A fake /proc: pid dirs with fd links (dangling is fine: only the link
// text is read), a comm file and, given a parent, a stat file.
class FakeProc {
 public:
  FakeProc() : dir_(testing::MakeTempDir("sluice-fake-proc-")) {}
  ~FakeProc() { testing::RemoveTempDir(dir_); }
  void AddProcess(int pid, const std::string& comm, const std::vector<std::string>& fds, int ppid = 0,
                  const std::string& exe = "") {
    const std::string p = dir_ + "/" + std::to_string(pid);
    ASSERT_EQ(mkdir(p.c_str(), 0755), 0);
    ASSERT_EQ(mkdir((p + "/fd").c_str(), 0755), 0);
    ASSERT_TRUE(testing::WriteTracefsFile(p + "/comm", comm + "\n", O_CREAT | O_TRUNC));
    if (ppid != 0) {
      const std::string stat = std::to_string(pid) + " (" + comm + ") S " + std::to_string(ppid) + " 1 1 0 -1\n";
      ASSERT_TRUE(testing::WriteTracefsFile(p + "/stat", stat, O_CREAT | O_TRUNC));
    }
    if (!exe.empty()) {
      ASSERT_EQ(symlink(exe.c_str(), (p + "/exe").c_str()), 0);
    }
    for (size_t i = 0; i < fds.size(); i++) {
      ASSERT_EQ(symlink(fds[i].c_str(), (p + "/fd/" + std::to_string(i + 3)).c_str()), 0);
    }
  }
  const std::string& dir() const { return dir_; }

 private:
  std::string dir_;
};

TEST(TracefsReadersTest, FindsEachProcessOnceForEachBufferItReads) {
  FakeProc proc;
  proc.AddProcess(812, "traced_probes",
                  {"/sys/kernel/tracing/per_cpu/cpu0/trace_pipe_raw", "/sys/kernel/tracing/per_cpu/cpu1/trace_pipe_raw",
                   "/sys/kernel/tracing/trace_marker", "socket:[99]"});
  proc.AddProcess(901, "trace-cmd", {"/sys/kernel/tracing/instances/tc/per_cpu/cpu0/trace_pipe_raw"});
  proc.AddProcess(7, "bash", {"/dev/pts/0", "/sys/kernel/tracing/trace"});
  proc.AddProcess(55, "sluice", {"/sys/kernel/tracing/per_cpu/cpu0/trace_pipe_raw"});
  ASSERT_TRUE(testing::WriteTracefsFile(proc.dir() + "/self", "", O_CREAT | O_TRUNC));  // Not a pid.

  const std::vector<TracefsReader> readers = FindTracefsReaders(55, proc.dir());
  ASSERT_EQ(readers.size(), 2u);
  EXPECT_EQ(readers[0], (TracefsReader{812, "traced_probes", "", 2}));
  EXPECT_EQ(readers[1], (TracefsReader{901, "trace-cmd", "tc", 1}));
  EXPECT_EQ(ReadersOfInstance(readers, ""), std::vector<TracefsReader>{readers[0]});
  EXPECT_EQ(ReadersOfInstance(readers, "tc"), std::vector<TracefsReader>{readers[1]});
  EXPECT_EQ(DescribeTracefsReaders(readers), "traced_probes (pid 812), trace-cmd (pid 901)");
}

// A child of the scanning process between its fork and exec (still running
// the scanner's program) holds copies of the scanner's O_CLOEXEC files (a
// posix_spawn'd --on-rotate hook): it is the scanner, not another tracer.
// A child that exec'd another program, and a grandchild, are readers. A
// command with spaces and parens in it is parsed right.
TEST(TracefsReadersTest, AChildOfSelfBeforeItsExecIsSelfNotAnotherReader) {
  FakeProc proc;
  const std::string sluice = "/usr/bin/sluice";
  proc.AddProcess(55, "sluice", {"/sys/kernel/tracing/per_cpu/cpu0/trace_pipe_raw"}, 1, sluice);
  proc.AddProcess(56, "sluice", {"/sys/kernel/tracing/per_cpu/cpu0/trace_pipe_raw"}, 55, sluice);
  proc.AddProcess(57, "a (55) b", {"/sys/kernel/tracing/per_cpu/cpu1/trace_pipe_raw"}, 55, sluice);
  proc.AddProcess(58, "cat", {"/sys/kernel/tracing/trace_pipe"}, 56, "/usr/bin/cat");
  proc.AddProcess(59, "cat", {"/sys/kernel/tracing/trace_pipe"}, 55, "/usr/bin/cat");
  const std::vector<TracefsReader> readers = FindTracefsReaders(55, proc.dir());
  ASSERT_EQ(readers.size(), 2u);
  EXPECT_EQ(readers[0], (TracefsReader{58, "cat", "", 1}));
  EXPECT_EQ(readers[1], (TracefsReader{59, "cat", "", 1}));
}

// The same on the real kernel: a forked child that has not exec'd holds the
// parent's trace_pipe_raw and is not reported. (OtherTracerKernelTest's
// `cat trace_pipe`, a child of the test, is found.)
TEST(TracefsReadersKernelTest, AForkedChildBeforeItsExecIsNotAnotherReader) {
  const std::string raw = "/sys/kernel/tracing/per_cpu/cpu0/trace_pipe_raw";
  if (geteuid() != 0) SLUICE_KERNEL_SKIP("needs root to open trace_pipe_raw");
  ScopedFd fd(open(raw.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC));
  if (!fd.valid()) SLUICE_KERNEL_SKIP("no tracefs at /sys/kernel/tracing");
  int go[2];
  ASSERT_EQ(pipe2(go, O_CLOEXEC), 0);
  const pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    close(go[1]);
    char c;
    (void)!read(go[0], &c, 1);  // Holds the copies until the parent has looked.
    _exit(0);
  }
  close(go[0]);
  const std::vector<TracefsReader> readers = FindTracefsReaders(getpid());
  close(go[1]);
  int status = 0;
  ASSERT_EQ(waitpid(child, &status, 0), child);
  for (const TracefsReader& r : readers) EXPECT_NE(r.pid, child) << DescribeTracefsReaders({r});
}

TEST(TracefsReadersTest, AnUnreadableProcIsNoReaders) {
  EXPECT_TRUE(FindTracefsReaders(1, "/nonexistent-proc").empty());
}

}  // namespace
}  // namespace sluice
