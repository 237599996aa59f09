#!/bin/bash
# Runs the vm-tests for a list of kernels: builds the initramfs once, picks
# the accelerator once, then run-kernel.sh per kernel, one after the other.
#
# usage: vm-tests/run.sh [KERNEL...]     (default: debian-6.1 debian-6.12 host;
#                                        with VM_ARCH=arm64 debian-6.12)
# env: see run-kernel.sh (VM_ARCH, VM_OUT, VM_ACCEL, VM_TIMEOUT, VM_ONLY, ...)
#      and build-initramfs.sh (BUILD_DIR, VM_GUEST_BUILD_DIR: the guest's
#      binaries; BUILD_DIR's sluice and sluice-trace-check check the results
#      on the host). VM_REQUIRE_SLUICE=1 fails the run when the guest's build
#      lacks sluice, sluice-probes or sluiced, instead of letting the
#      scenarios that need them skip.
# Ends with "vm-tests: N passed, N failed, N skipped" (scenario counts; a
# kernel that fails or is skipped as a whole counts once). Exit 1 if any
# failed.
set -uo pipefail

here=$(cd "$(dirname "$0")" && pwd)
if [ $# -eq 0 ]; then
  if [ "${VM_ARCH:-x86_64}" = arm64 ]; then set -- debian-6.12; else set -- debian-6.1 debian-6.12 host; fi
fi
export VM_OUT=${VM_OUT:-build/vm-tests}
mkdir -p "$VM_OUT"

bash "$here/../mk/ensure-deps.sh" vm || exit 1
if [ "${VM_REQUIRE_SLUICE:-0}" = 1 ]; then
  guest_build=${VM_GUEST_BUILD_DIR:-${BUILD_DIR:-build}}
  for b in sluice sluice-probes sluiced; do
    [ -x "$guest_build/$b" ] || { echo "vm-tests: VM_REQUIRE_SLUICE=1 but $guest_build/$b is not built"; exit 1; }
  done
fi

export VM_INITRAMFS=$VM_OUT/initramfs.cpio.gz
bash "$here/build-initramfs.sh" "$VM_INITRAMFS" || { echo "vm-tests: initramfs build failed"; exit 1; }

pass=0 fail=0 skipped=0
summary=()
for spec in "$@"; do
  echo "== kernel $spec"
  start=$(date +%s)
  # Pick the accelerator with the first kernel that resolves.
  if [ "${VM_ACCEL:-auto}" = auto ]; then
    if info=$(bash "$here/fetch-kernel.sh" "$spec" 2>/dev/null); then
      VM_ACCEL=$(bash "$here/pick-accel.sh" "$(cut -f2 <<<"$info")")
      export VM_ACCEL
      echo "vm-tests: accelerator $VM_ACCEL (override with VM_ACCEL=kvm|tcg)"
    fi
  fi
  log=$VM_OUT/$(printf '%s' "$spec" | tr -c 'A-Za-z0-9._+-' '_').run.log
  bash "$here/run-kernel.sh" "$spec" 2>&1 | tee "$log"
  rc=${PIPESTATUS[0]}
  p=$(grep -c '^PASS ' "$log")
  f=$(grep -c '^FAIL ' "$log")
  s=$(grep -c '^SKIP ' "$log")
  [ "$rc" -ne 0 ] && [ "$rc" -ne 3 ] && [ "$f" -eq 0 ] && f=1
  pass=$((pass + p)) fail=$((fail + f)) skipped=$((skipped + s))
  summary+=("$(printf '%-14s %3ss  %d passed, %d failed, %d skipped' "$spec" $(($(date +%s) - start)) "$p" "$f" "$s")")
done
echo "== summary"
printf '%s\n' "${summary[@]}"
echo "vm-tests: $pass passed, $fail failed, $skipped skipped"
[ "$fail" -eq 0 ]
