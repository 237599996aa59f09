#!/bin/bash
# The harness's own test: proves boot, initramfs, scenario driving, results
# transport (also with a dead serial interrupt line), host checks, and the
# failure paths (panic, hang, a guest that stops making progress, guest-side
# scenario timeout), without the real sluice binaries. Uses the stand-in
# vm-tests/selftest/sluice as the "build" and one kernel (SELFTEST_KERNEL,
# default debian-6.12). Output under $VM_OUT/selftest/<case>/.
# Ends with "vm-selftest: N passed, N failed".
set -uo pipefail

here=$(cd "$(dirname "$0")/.." && pwd)
kernel=${SELFTEST_KERNEL:-debian-6.12}
base=${VM_OUT:-build/vm-tests}/selftest
mkdir -p "$base"
bash "$here/../mk/ensure-deps.sh" vm || exit 1

export BUILD_DIR=$here/selftest VM_INITRAMFS=$base/initramfs.cpio.gz
bash "$here/build-initramfs.sh" "$VM_INITRAMFS" || exit 1
info=$(bash "$here/fetch-kernel.sh" "$kernel") || exit 1
VM_ACCEL=${VM_ACCEL:-$(bash "$here/pick-accel.sh" "$(cut -f2 <<<"$info")")}
export VM_ACCEL
pass=0 fail=0

# run_case NAME MAX_SECONDS EXPECT_RC [VAR=VALUE...] -- GREP_PATTERN...
# Runs run-kernel.sh with the settings, then wants its exit code, a run no
# longer than MAX_SECONDS, and every pattern among its output lines.
run_case() {
  local name=$1 max=$2 want_rc=$3 start rc secs ok=1
  shift 3
  local env=()
  while [ "$1" != -- ]; do env+=("$1"); shift; done
  shift
  start=$(date +%s)
  env VM_OUT="$base/$name" "${env[@]}" bash "$here/run-kernel.sh" "$kernel" >"$base/$name.log" 2>&1
  rc=$?
  secs=$(($(date +%s) - start))
  [ "$rc" = "$want_rc" ] || { echo "  exit code $rc, want $want_rc"; ok=0; }
  [ "$secs" -le "$max" ] || { echo "  took ${secs}s, limit ${max}s"; ok=0; }
  for pat in "$@"; do
    grep -Eq -- "$pat" "$base/$name.log" || { echo "  no line matches: $pat"; ok=0; }
  done
  if [ $ok = 1 ]; then
    echo "PASS selftest/$name (${secs}s)"; pass=$((pass + 1))
  else
    echo "FAIL selftest/$name (${secs}s), output in $base/$name.log:"; tail -n 15 "$base/$name.log" | sed 's/^/    | /'
    fail=$((fail + 1))
  fi
}

# Every scenario runs against the stand-in; the host checks run on what it
# wrote (raw pages, in which the marker strings sit verbatim).
run_case scenarios 150 0 -- \
  '^PASS [^ ]+/00-env ' \
  '^PASS [^ ]+/10-ftrace-markers .*2000 of 2000 markers, each once' \
  '^SKIP [^ ]+/20-bpf: sluice doctor: bpf: not available' \
  '^PASS [^ ]+/30-overload .*markers lost and [0-9]+ reported lost' \
  '^PASS [^ ]+/40-stats-doctor ' \
  '^SKIP [^ ]+/50-kernel-tests: '
# A kernel that panics: failed at once, with the console tail.
run_case panic 60 1 VM_APPEND="rdinit=/nonexistent root=/dev/nonexistent" -- \
  '^FAIL [^ ]+: kernel panic' 'last 40 console lines' 'Kernel panic'
# A kernel that never gets to /init (here: a shell waiting on the console).
run_case no-init 60 1 VM_APPEND="rdinit=/bin/sh" VM_BOOT_TIMEOUT=15 -- \
  '^FAIL [^ ]+: never reached /init within 15s' 'last 40 console lines'
# A guest that hangs after /init: the hard limit, when one is set, ends it.
run_case hang 60 1 VM_APPEND="rdinit=/bin/sh" VM_BOOT_TIMEOUT=100 VM_TIMEOUT=20 -- \
  '^FAIL [^ ]+: timed out after 20s' 'last 40 console lines'
# A guest that stops making progress after /init (no hard limit): the
# progress watchdog ends it.
run_case stall 90 1 VM_APPEND="sluice.stall=1" VM_SPEED_FACTOR=1 VM_STALL_TIMEOUT=10 -- \
  '^FAIL [^ ]+: no progress for 10s .*last progress: SLUICE-VM: speed ' 'last 40 console lines'
# A scenario over its limit (base 3 s x scale 1; the stand-in recorder
# ignores SIGTERM) is stopped in the guest; the others still run.
run_case scenario-timeout 150 1 VM_SCENARIO_TIMEOUT=3 VM_SPEED_FACTOR=1 VM_ONLY='[14]0-*' \
  VM_APPEND="SLUICE_STANDIN_HANG=1" -- \
  '^FAIL [^ ]+/10-ftrace-markers: exit 124 in the guest: timed out after 3s' '^PASS [^ ]+/40-stats-doctor '
# The serial port's interrupt never arrives (the UART is wired to another
# IRQ than the kernel's): the tty layer stalls (the guest's probe of 64 KiB
# through /dev/ttyS0 times out), and still every progress line and the
# results arrive, through the kernel log on the polled console.
run_case serial-irq-broken 150 0 VM_SERIAL_IRQ=broken VM_APPEND="sluice.tty_probe=1" VM_ONLY='[014]0-*' -- \
  '^PASS [^ ]+/00-env ' '^PASS [^ ]+/10-ftrace-markers .*2000 of 2000 markers, each once' \
  '^PASS [^ ]+/40-stats-doctor ' '^NOTE [^ ]+: tty probe rc=143 '

echo "vm-selftest: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
