// Kernel integration test of `sluice doctor` (user/cmd/doctor_command.h): run
// against this machine as root, it must find tracefs, BTF and the BPF ringbuf
// (the host and every vm-tests kernel have them), and leave tracefs exactly as
// it found it.
#include <unistd.h>

#include <filesystem>
#include <map>
#include <string>

#include <gtest/gtest.h>

#include "tests/kernel_test_util.h"
#include "user/cmd/doctor_command.h"
#include "user/probes/tracefs.h"

namespace sluice {
namespace {

// The tracefs state a test must not change, keyed by file; plus the
// instances and the tracefs mounts.
std::map<std::string, std::string> TracefsSnapshot(const std::string& root) {
  std::map<std::string, std::string> s;
  for (const char* f : {"tracing_on", "trace_clock", "buffer_size_kb", "set_event", "current_tracer",
                        "events/sched/sched_switch/enable", "events/ftrace/print/enable"}) {
    StatusOr<std::string> text = ReadFile(root + "/" + f);
    s[f] = text.ok() ? text.value() : "<" + text.status().message() + ">";
  }
  std::error_code ec;
  for (const auto& e : std::filesystem::directory_iterator(root + "/instances", ec)) {
    s["instances"] += e.path().filename().string() + " ";
  }
  StatusOr<std::string> mounts = ReadFile("/proc/self/mountinfo");
  if (mounts.ok()) {
    for (size_t pos = 0; (pos = mounts.value().find(" - tracefs ", pos)) != std::string::npos; pos++) {
      s["tracefs mounts"] += "+";
    }
  }
  return s;
}

TEST(DoctorKernelTest, ReportsThisMachine) {
  if (geteuid() != 0) SLUICE_KERNEL_SKIP("sluice doctor's kernel test needs root");
  if (access("/sys/kernel/tracing/tracing_on", F_OK) != 0) {
    SLUICE_KERNEL_SKIP("tracefs is not mounted at /sys/kernel/tracing");
  }
  const std::string root(Tracefs::kDefaultRoot);
  const auto before = TracefsSnapshot(root);
  DoctorOptions options;
  // The test binary has threads: it must not move into a new mount namespace.
  options.allow_private_mount = false;
  std::vector<DoctorCheck> checks = RunDoctorChecks(options);
  std::map<std::string, const DoctorCheck*> by_name;
  for (const DoctorCheck& c : checks) by_name[c.name] = &c;
  for (const char* name : {"kernel", "permissions", "tracefs", "events", "btf", "ringbuf",
                           "bpf tracepoint"}) {
    ASSERT_TRUE(by_name.count(name)) << name;
    EXPECT_EQ(by_name[name]->state, DoctorState::kPass)
        << name << ": " << by_name[name]->detail << "\n" << FormatDoctorReport(checks);
  }
  EXPECT_EQ(DoctorExitCode(checks), 0) << FormatDoctorReport(checks);
  const std::string report = FormatDoctorReport(checks);
  EXPECT_NE(report.find("PASS  tracefs"), std::string::npos);
  EXPECT_NE(report.find("default recording: ready"), std::string::npos);
  EXPECT_EQ(TracefsSnapshot(root), before);
}

}  // namespace
}  // namespace sluice
