#!/bin/sh
# Runs the kernel integration tests (tests/**/*_kernel_test.cc, gtest suites
# named *KernelTest) of build/sluice_tests inside this kernel, so that every
# feature they cover is tried on every kernel of the set, not just the host's.
# Skips inside the tests (a feature this kernel lacks) are reported, not failed.
# The tests get SLUICE_TEST_TIMEOUT_SCALE (the guest's speed scale, /init) for
# their waits, and SLUICE_TEST_WORKLOAD_SCALE for their paced workloads.
# About 50 s at scale 1 (the reference TCG guest); the base is ten times that.
# timeout-base: 480
. /usr/share/sluice-vm/lib.sh
command -v sluice_tests >/dev/null 2>&1 ||
  skip "sluice_tests not in the initramfs (build/sluice_tests not built on the host)"
need_tracefs

cd /tmp || fail "no /tmp"
# Each test's start also goes to the console as a progress line, so that when
# the kernel dies mid-run the host's verdict names the test that was running
# (gtest.txt dies with the guest).
{ sluice_tests --gtest_filter="${SLUICE_VM_GTEST_FILTER:-*KernelTest*}" \
    --gtest_repeat="${SLUICE_VM_GTEST_REPEAT:-1}" 2>&1; echo $? >"$OUT/gtest.rc"; } |
  while IFS= read -r line; do
    printf '%s\n' "$line" >>"$OUT/gtest.txt"
    case "$line" in
      '[ RUN      ] '*) say "test ${line#\[ RUN      \] }" ;;
    esac
  done
rc=$(cat "$OUT/gtest.rc" 2>/dev/null || echo 1)
# With a repeat, gtest prints these per round: sum them.
passed=$(sed -n 's/^\[  PASSED  \] \([0-9]*\) test.*/\1/p' "$OUT/gtest.txt" | awk '{n += $1} END {print n + 0}')
skipped=$(sed -n 's/^\[  SKIPPED \] \([0-9]*\) test.*/\1/p' "$OUT/gtest.txt" | awk '{n += $1} END {print n + 0}')
failed=$(grep '^\[  FAILED  \] [A-Za-z]' "$OUT/gtest.txt" | sed 's/^\[  FAILED  \] //; s/ .*//' | sort -u | tr '\n' ' ')
summary="${passed:-0} passed, ${skipped:-0} skipped"
[ -n "$failed" ] && fail "kernel tests failed: $failed($summary; see gtest.txt)"
[ $rc -eq 0 ] || fail "sluice_tests exited $rc ($summary; see gtest.txt)"
grep -q '^\[==========\] 0 tests' "$OUT/gtest.txt" && skip "no *KernelTest* suite in sluice_tests"
note "$summary"
