// Helpers for kernel integration tests (tests/**/*_kernel_test.cc).
//
// A kernel integration test may skip when the machine truly lacks a feature
// (not root, no tracefs, no BPF), and says why. Under CI=true a skip is a
// failure: CI runs as root on a kernel that has everything.
#ifndef SLUICE_TESTS_KERNEL_TEST_UTIL_H_
#define SLUICE_TESTS_KERNEL_TEST_UTIL_H_

#include <cstdint>
#include <cstdlib>
#include <cstring>

#include <gtest/gtest.h>

namespace sluice::testing {
inline bool RunningUnderCi() {
  const char* ci = std::getenv("CI");
  return ci != nullptr && std::strcmp(ci, "true") == 0;
}

// The factor (0 < f <= 1, default 1) by which tests that drive a workload at
// a fixed rate slow it down: SLUICE_TEST_WORKLOAD_SCALE. The rates are chosen
// for real hardware; vm-tests set it for a guest under TCG, whose two vCPUs
// share one host thread, so that "a busy system" does not become "an
// overloaded one" there (docs/vm-tests.md). The counts checked stay the same.
inline double WorkloadScale() {
  const char* env = std::getenv("SLUICE_TEST_WORKLOAD_SCALE");
  if (!env) return 1.0;
  double f = std::strtod(env, nullptr);
  return f > 0 && f <= 1 ? f : 1.0;
}

// The factor (>= 1, default 1) by which waits on conditions stretch their
// timeouts: SLUICE_TEST_TIMEOUT_SCALE. vm-tests measure how fast the guest
// runs at boot and set it (docs/vm-tests.md). Timeouts only bound how long a
// broken run takes to fail; no test passes or fails on how fast it ran.
inline double TimeoutScale() {
  const char* env = std::getenv("SLUICE_TEST_TIMEOUT_SCALE");
  if (!env) return 1.0;
  double f = std::strtod(env, nullptr);
  return f >= 1 && f <= 1000 ? f : 1.0;
}

// A timeout for a wait on a condition, stretched by TimeoutScale().
inline uint64_t ScaledTimeoutMs(uint64_t ms) {
  return static_cast<uint64_t>(static_cast<double>(ms) * TimeoutScale());
}
}  // namespace sluice::testing

#define SLUICE_KERNEL_SKIP(reason)                                        \
  do {                                                                    \
    if (::sluice::testing::RunningUnderCi()) {                            \
      FAIL() << "kernel integration test cannot run under CI=true: "      \
             << (reason);                                                 \
    } else {                                                              \
      GTEST_SKIP() << (reason);                                           \
    }                                                                     \
  } while (0)

#endif  // SLUICE_TESTS_KERNEL_TEST_UTIL_H_
