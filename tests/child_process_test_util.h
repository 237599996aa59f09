// Subprocesses for tests that run sluice's binaries as a user runs them:
// `ChildProcess` starts one with stdout and stderr in files, waits on it with
// a timeout, signals it and describes how it ended (exit code or signal, and
// both output files) for failure messages. Shared by the kernel tests and
// the fault tests.
#ifndef SLUICE_TESTS_CHILD_PROCESS_TEST_UTIL_H_
#define SLUICE_TESTS_CHILD_PROCESS_TEST_UTIL_H_

#include <sys/types.h>

#include <cstdint>
#include <string>
#include <vector>

namespace sluice::testing {

// Milliseconds on the monotonic clock, for timeouts of waits on conditions.
uint64_t NowMs();

// The directory of this test binary (build/sluice_tests -> build/), where
// the sluice binaries are; SLUICE_BIN_DIR overrides it (vm-tests).
std::string SluiceBinDir();

// Upstream Perfetto's tools, ../shared/tools/perfetto beside the checkout,
// found from SluiceBinDir() (build/, or a sanitizer's build/tsan/); that
// path from build/ when it is in neither place, for the message.
std::string UpstreamPerfettoDir();

// Forks a child that does nothing until it is killed (it waits in pause()),
// for tests that need a process that ran and is gone: the caller kills and
// reaps it. -1 if fork failed.
pid_t ForkIdleChild();

class ChildProcess {
 public:
  ChildProcess() = default;
  ChildProcess(const ChildProcess&) = delete;
  ChildProcess& operator=(const ChildProcess&) = delete;
  // Kills (SIGKILL) and reaps the child if it still runs.
  ~ChildProcess();

  // Starts argv[0] with stdout and stderr going to files and stdin read
  // from `in_path` (/dev/null unless given). The child gets SIGKILL if the
  // test process dies first.
  bool Start(const std::vector<std::string>& argv, const std::string& out_path,
             const std::string& err_path, const std::string& in_path = "/dev/null");

  pid_t pid() const { return pid_; }
  // False for a child never started (as for one that exited).
  bool running();
  void Signal(int sig);
  // Waits up to timeout_ms; true once it exited (status in wait_status()).
  // Returns at once for a child never started (false: it did not exit).
  bool Wait(uint64_t timeout_ms);
  // Sends SIGTERM, then SIGKILL after timeout_ms.
  void Terminate(uint64_t timeout_ms);

  int wait_status() const { return status_; }
  bool exited_normally_with(int code) const;
  // "pid N exited C" / "killed by signal S", then both output files.
  std::string Describe() const;
  std::string Stdout() const;
  std::string Stderr() const;

 private:
  void Poll();
  pid_t pid_ = -1;
  bool exited_ = false;
  int status_ = 0;
  std::string out_path_, err_path_;
};

// What a command run to its end said: its exit code (-1 if it did not exit
// normally or did not finish, with a test failure), stdout and stderr.
struct CommandResult {
  int exit_code = -1;
  std::string out, err;
};

// Runs `argv` with stdin from `stdin_path` and its output captured in files
// under `dir`, waiting up to 120 s (only a broken command takes long).
CommandResult RunToCompletion(const std::vector<std::string>& argv, const std::string& dir,
                              const std::string& stdin_path = "/dev/null");

}  // namespace sluice::testing

#endif  // SLUICE_TESTS_CHILD_PROCESS_TEST_UTIL_H_
