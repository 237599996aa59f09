// Helpers for kernel integration tests (tests/**/*_kernel_test.cc).
//
// A kernel integration test may skip when the machine truly lacks a feature
// (not root, no tracefs, no BPF), and says why. Under CI=true a skip is a
// failure: CI runs as root on a kernel that has everything.
#ifndef SLUICE_TESTS_KERNEL_TEST_UTIL_H_
#define SLUICE_TESTS_KERNEL_TEST_UTIL_H_

#include <cstdlib>
#include <cstring>

#include <gtest/gtest.h>

namespace sluice::testing {
inline bool RunningUnderCi() {
  const char* ci = std::getenv("CI");
  return ci != nullptr && std::strcmp(ci, "true") == 0;
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
