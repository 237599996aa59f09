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
#include <errno.h>
#include <sys/mount.h>
#include <unistd.h>

#include <cstdio>
#include <string>

#include <gtest/gtest.h>

#include "shm/base/errno_message.h"
#include "shm/base/file_util.h"
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
    const TracefsCleanupReport report = RestoreTracefsLeftByDeadOwners(kDefaultTracefsStateDir);
    for (const auto& lines : {report.restored, report.deferred, report.errors})
      for (const std::string& line : lines) fprintf(stderr, "kernel tests, before the first: %s\n", line.c_str());
  }
  void TearDown() override {
    if (mounted_here_) umount2(root_.c_str(), MNT_DETACH);
  }

 private:
  const std::string root_{Tracefs::kDefaultRoot};
  bool mounted_here_ = false;
};

[[maybe_unused]] ::testing::Environment* const kTracefsEnvironment =
    ::testing::AddGlobalTestEnvironment(new TracefsMountEnvironment);

}  // namespace
}  // namespace sluice::testing
