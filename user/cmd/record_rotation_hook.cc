#include "user/cmd/record_rotation_hook.h"

#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <vector>

#include "shm/base/errno_message.h"

extern char** environ;

namespace sluice {

RotationHook::RotationHook(std::string command) : command_(std::move(command)) {
  worker_ = std::thread([this] { Worker(); });
}

RotationHook::~RotationHook() {
  Finish();
  {
    std::lock_guard<std::mutex> lock(mu_);
    finishing_ = true;
  }
  cv_.notify_all();
  worker_.join();
}

void RotationHook::Run(const std::string& path) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    queue_.push_back(path);
  }
  cv_.notify_all();
}

void RotationHook::Finish() {
  std::unique_lock<std::mutex> lock(mu_);
  cv_.wait(lock, [this] { return queue_.empty() && !busy_; });
}

uint64_t RotationHook::runs() const {
  std::lock_guard<std::mutex> lock(mu_);
  return runs_;
}

uint64_t RotationHook::failures() const {
  std::lock_guard<std::mutex> lock(mu_);
  return failures_;
}

void RotationHook::Worker() {
  std::unique_lock<std::mutex> lock(mu_);
  for (;;) {
    cv_.wait(lock, [this] { return finishing_ || !queue_.empty(); });
    if (queue_.empty()) return;  // finishing_, nothing left.
    const std::string path = queue_.front();
    queue_.pop_front();
    busy_ = true;
    lock.unlock();
    const std::string failure = RunOnce(command_, path);
    if (!failure.empty())
      fprintf(stderr, "sluice record: --on-rotate '%s' failed for %s (%s); the recording goes on\n",
              command_.c_str(), path.c_str(), failure.c_str());
    lock.lock();
    busy_ = false;
    runs_++;
    if (!failure.empty()) failures_++;
    cv_.notify_all();
  }
}

std::string RotationHook::RunOnce(const std::string& command, const std::string& path) {
  // The path goes in as "$1" to a script that appends it: quoting in the
  // command stays the user's, and a path with spaces stays one argument.
  const std::string script = command + " \"$@\"";
  std::vector<std::string> env_strings;
  for (char** e = environ; *e; e++)
    if (strncmp(*e, "SLUICE_TRACE_FILE=", 18) != 0) env_strings.emplace_back(*e);
  env_strings.push_back("SLUICE_TRACE_FILE=" + path);
  std::vector<char*> envp;
  for (std::string& e : env_strings) envp.push_back(e.data());
  envp.push_back(nullptr);
  std::string sh = "/bin/sh", dash_c = "-c", arg0 = "sh", file = path, body = script;
  char* argv[] = {sh.data(), dash_c.data(), body.data(), arg0.data(), file.data(), nullptr};
  // In a process group of its own: the Ctrl-C that stops the recording
  // must not kill the upload of its last file.
  posix_spawnattr_t attr;
  posix_spawnattr_init(&attr);
  posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETPGROUP);
  posix_spawnattr_setpgroup(&attr, 0);
  pid_t pid = 0;
  const int err = posix_spawn(&pid, "/bin/sh", nullptr, &attr, argv, envp.data());
  posix_spawnattr_destroy(&attr);
  if (err != 0) return "cannot start /bin/sh: " + ErrnoMessage(err);
  int status = 0;
  while (waitpid(pid, &status, 0) < 0) {
    if (errno != EINTR) return "cannot wait for it: " + ErrnoMessage(errno);
  }
  if (WIFEXITED(status)) return WEXITSTATUS(status) == 0 ? "" : "exit status " + std::to_string(WEXITSTATUS(status));
  if (WIFSIGNALED(status)) return "killed by signal " + std::to_string(WTERMSIG(status));
  return "ended with status " + std::to_string(status);
}

}  // namespace sluice
