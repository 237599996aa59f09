#include "tests/child_process_test_util.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>

#include <gtest/gtest.h>

#include "shm/base/file_util.h"

namespace sluice::testing {
namespace {
std::string ReadOr(const std::string& path, const std::string& fallback) {
  auto text = ReadFile(path);
  return text.ok() ? *text : fallback;
}
}  // namespace

uint64_t NowMs() {
  return static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::milliseconds>(
                                   std::chrono::steady_clock::now().time_since_epoch())
                                   .count());
}

std::string SluiceBinDir() {
  if (const char* env = std::getenv("SLUICE_BIN_DIR")) return env;
  char buf[4096];
  ssize_t n = readlink("/proc/self/exe", buf, sizeof(buf) - 1);
  if (n <= 0) return ".";
  std::string path(buf, static_cast<size_t>(n));
  size_t slash = path.rfind('/');
  return slash == std::string::npos ? "." : path.substr(0, slash);
}

std::string UpstreamPerfettoDir() {
  const std::string bin_dir = SluiceBinDir();
  for (const char* up : {"/../../", "/../../../"}) {
    const std::string dir = bin_dir + up + "shared/tools/perfetto";
    if (access(dir.c_str(), X_OK) == 0) return dir;
  }
  return bin_dir + "/../../shared/tools/perfetto";
}

pid_t ForkIdleChild() {
  const pid_t parent = getpid();
  const pid_t child = fork();
  if (child == 0) {
    prctl(PR_SET_PDEATHSIG, SIGKILL);  // Never outlive a crashed test.
    if (getppid() != parent) _exit(127);
    for (;;) pause();
  }
  return child;
}

ChildProcess::~ChildProcess() {
  if (pid_ > 0 && !exited_) {
    kill(pid_, SIGKILL);
    waitpid(pid_, nullptr, 0);
  }
}

bool ChildProcess::Start(const std::vector<std::string>& argv, const std::string& out_path,
                         const std::string& err_path, const std::string& in_path) {
  out_path_ = out_path;
  err_path_ = err_path;
  std::vector<char*> cargv;
  for (const std::string& a : argv) cargv.push_back(const_cast<char*>(a.c_str()));
  cargv.push_back(nullptr);
  int in = open(in_path.c_str(), O_RDONLY | O_CLOEXEC);
  int out = open(out_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  int err = open(err_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (in < 0 || out < 0 || err < 0) {
    for (int fd : {in, out, err}) {
      if (fd >= 0) close(fd);
    }
    return false;
  }
  const pid_t parent = getpid();
  pid_ = fork();
  if (pid_ == 0) {
    // Async-signal-safe calls only from here to exec.
    prctl(PR_SET_PDEATHSIG, SIGKILL);  // Never outlive a crashed test.
    if (getppid() != parent) _exit(127);
    dup2(in, 0);
    dup2(out, 1);
    dup2(err, 2);
    execv(cargv[0], cargv.data());
    _exit(127);
  }
  close(in);
  close(out);
  close(err);
  return pid_ > 0;
}

bool ChildProcess::running() {
  Poll();
  return pid_ > 0 && !exited_;  // One never started is not running.
}

void ChildProcess::Signal(int sig) {
  if (pid_ > 0 && !exited_) kill(pid_, sig);
}

bool ChildProcess::Wait(uint64_t timeout_ms) {
  const uint64_t deadline = NowMs() + timeout_ms;
  while (pid_ > 0 && !exited_) {
    Poll();
    if (exited_ || NowMs() >= deadline) break;
    usleep(10 * 1000);
  }
  return exited_;
}

void ChildProcess::Terminate(uint64_t timeout_ms) {
  Signal(SIGTERM);
  if (!Wait(timeout_ms)) {
    Signal(SIGKILL);
    Wait(5000);
  }
}

bool ChildProcess::exited_normally_with(int code) const {
  return exited_ && WIFEXITED(status_) && WEXITSTATUS(status_) == code;
}

std::string ChildProcess::Describe() const {
  std::string s = "pid " + std::to_string(pid_);
  if (!exited_) return s + " still running";
  if (WIFEXITED(status_)) s += " exited " + std::to_string(WEXITSTATUS(status_));
  if (WIFSIGNALED(status_)) s += " killed by signal " + std::to_string(WTERMSIG(status_));
  return s + "\n--- stdout ---\n" + Stdout() + "\n--- stderr ---\n" + Stderr();
}

std::string ChildProcess::Stdout() const { return ReadOr(out_path_, "<missing>"); }
std::string ChildProcess::Stderr() const { return ReadOr(err_path_, ""); }

void ChildProcess::Poll() {
  if (pid_ <= 0 || exited_) return;
  if (waitpid(pid_, &status_, WNOHANG) == pid_) exited_ = true;
}

CommandResult RunToCompletion(const std::vector<std::string>& argv, const std::string& dir,
                              const std::string& stdin_path) {
  ChildProcess child;
  CommandResult result;
  if (!child.Start(argv, dir + "/stdout", dir + "/stderr", stdin_path)) {
    ADD_FAILURE() << "cannot start " << argv[0];
    return result;
  }
  if (!child.Wait(120 * 1000)) {
    ADD_FAILURE() << argv[0] << " did not finish: " << child.Describe();
    child.Terminate(5000);
    return result;
  }
  if (WIFEXITED(child.wait_status())) result.exit_code = WEXITSTATUS(child.wait_status());
  else ADD_FAILURE() << child.Describe();
  result.out = child.Stdout();
  result.err = child.Stderr();
  return result;
}

}  // namespace sluice::testing
