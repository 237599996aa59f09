// Mounts tracefs for the kernel integration tests when the machine has not
// (a fresh machine may boot without it), and unmounts it at the end, so the
// machine is left as it was found. sluice itself mounts tracefs when it
// records (FindTracefsRoot in user/probes/tracefs.h).
//
// Then, before any test reads the state it starts from, it puts back what
// dead sluice processes left changed (their state files in
// /run/sluice/tracefs-state), as the first recorder would. Otherwise the
// first test to record does that cleanup and finds tracefs changed under it:
// a CI machine was found with such a file from a sluice killed before the
// machine was snapshotted, and its first record test failed "tracefs not
// left as found" (2026-12-02).
//
// The recorders the tests run create that state directory (and /run/sluice)
// when it is missing; the end of the run removes what it created, if empty,
// so that a machine is left as it was found there too.
#include <errno.h>
#include <fcntl.h>
#include <sys/file.h>
#include <sys/mount.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <string>

#include <gtest/gtest.h>

#include "shm/base/errno_message.h"
#include "shm/base/file_util.h"
#include "shm/base/scoped_fd.h"
#include "tests/kernel_test_util.h"
#include "user/probes/tracefs.h"
#include "user/probes/tracefs_cleanup.h"
#include "user/probes/tracefs_state_file.h"

namespace sluice::testing {
namespace {

class TracefsMountEnvironment : public ::testing::Environment {
 public:
  void SetUp() override {
    // The tests use the root at /sys/kernel/tracing, not a debugfs automount.
    if (geteuid() != 0) return;
    if (!PathExists(root_ + "/tracing_on")) {
      mounted_here_ = mount("nodev", root_.c_str(), "tracefs", 0, nullptr) == 0;
      if (!mounted_here_) {
        fprintf(stderr, "kernel tests: %s\n", WithErrno("cannot mount tracefs at " + root_, errno).c_str());
        return;
      }
    }
    state_dir_existed_ = PathExists(state_dir_);
    run_dir_existed_ = PathExists(run_dir_);
    const TracefsCleanupReport report = RestoreTracefsLeftByDeadOwners(kDefaultTracefsStateDir);
    for (const auto& lines : {report.restored, report.deferred, report.errors})
      for (const std::string& line : lines) fprintf(stderr, "kernel tests, before the first: %s\n", line.c_str());
  }
  void TearDown() override {
    if (mounted_here_) umount2(root_.c_str(), MNT_DETACH);
    if (geteuid() != 0) return;
    if (!state_dir_existed_) RemoveStateDirIfUnused();
    if (!run_dir_existed_) rmdir(run_dir_.c_str());
  }

  // The directory holds its lock file and, while a recorder runs or after
  // one died, state files. Removed only with nothing but the lock in it and
  // the lock held (no recorder is starting), unlinked under the lock so
  // that nobody can take it meanwhile.
  void RemoveStateDirIfUnused() {
    const std::string lock_path = state_dir_ + "/.lock";
    ScopedFd lock(open(lock_path.c_str(), O_RDWR | O_CLOEXEC));
    // A sluice process a last test started may still be on its way out with
    // the lock (seen once at the end of a full run): wait for it, up to a
    // bound, rather than leave the directory behind.
    if (lock.valid()) {
      const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(ScaledTimeoutMs(30000));
      while (flock(lock.get(), LOCK_EX | LOCK_NB) != 0) {
        if (std::chrono::steady_clock::now() > deadline) {
          fprintf(stderr, "kernel tests: %s is still locked by a sluice process; left in place\n", state_dir_.c_str());
          return;
        }
        usleep(50 * 1000);
      }
    }
    std::error_code error;
    for (const auto& entry : std::filesystem::directory_iterator(state_dir_, error))
      if (entry.path().filename() != ".lock") return;
    if (error) return;
    if (lock.valid()) unlink(lock_path.c_str());
    rmdir(state_dir_.c_str());
  }

 private:
  const std::string root_{Tracefs::kDefaultRoot};
  const std::string state_dir_{kDefaultTracefsStateDir};
  const std::string run_dir_{state_dir_.substr(0, state_dir_.rfind('/'))};
  bool mounted_here_ = false;
  bool state_dir_existed_ = true;
  bool run_dir_existed_ = true;
};

[[maybe_unused]] ::testing::Environment* const kTracefsEnvironment =
    ::testing::AddGlobalTestEnvironment(new TracefsMountEnvironment);

}  // namespace
}  // namespace sluice::testing
