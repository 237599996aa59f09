#!/bin/bash
# Boots one kernel in QEMU with the vm-tests initramfs, waits for the guest
# to run the scenarios and send results over the second serial port, then
# checks the results on the host (check_results.sh).
#
# usage: vm-tests/run-kernel.sh SPEC        (SPEC as in fetch-kernel.sh)
# Prints one "PASS|FAIL|SKIP <kernel>/<scenario> ..." line per scenario, or
# one "FAIL <kernel>: ..." / "SKIP <kernel>: ..." line for the whole kernel,
# and on any failure the last 40 console lines and where the artifacts are.
# Exit: 0 no failure, 1 a failure, 3 kernel skipped.
#
# env (defaults):
#   VM_OUT=build/vm-tests     output root; this kernel's files go to VM_OUT/<name>/
#   VM_INITRAMFS=             prebuilt initramfs (else built into VM_OUT/initramfs.cpio.gz)
#   VM_ACCEL=auto             kvm | tcg | auto (KVM if a probe boot works, else TCG)
#   VM_TCG_THREAD=single      single | multi: TCG's vCPU threading (see below)
#   VM_TIMEOUT=170            hard limit for the whole boot, in seconds
#   VM_BOOT_TIMEOUT=90        limit for reaching /init
#   VM_SCENARIO_TIMEOUT=60    limit per scenario, enforced in the guest
#   VM_SMP=2 VM_MEM=1024      guest CPUs and MiB of memory
#   VM_ONLY=*                 glob of scenario names to run
#   VM_APPEND=                extra kernel command line
#   VM_GTEST=                 gtest filter for 50-kernel-tests (default *KernelTest*)
#   VM_WORKLOAD_SCALE=        rate factor for the kernel tests' workloads
#                             (tests/kernel_test_util.h); default 1 under KVM,
#                             see below for TCG
#   VM_SAVE_FORMATS=          if set, copy the guest's format tree to
#                             VM_SAVE_FORMATS/<name>/events/ (+ version)
set -uo pipefail

spec=${1:?usage: run-kernel.sh SPEC}
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/.." && pwd)
VM_OUT=${VM_OUT:-build/vm-tests}
VM_TIMEOUT=${VM_TIMEOUT:-170}
VM_BOOT_TIMEOUT=${VM_BOOT_TIMEOUT:-90}
VM_SCENARIO_TIMEOUT=${VM_SCENARIO_TIMEOUT:-60}
VM_SMP=${VM_SMP:-2}
VM_MEM=${VM_MEM:-1024}
VM_ONLY=${VM_ONLY:-*}
VM_ACCEL=${VM_ACCEL:-auto}
VM_TCG_THREAD=${VM_TCG_THREAD:-single}

# Resolve the kernel.
errf=$(mktemp)
info=$(bash "$here/fetch-kernel.sh" "$spec" 2>"$errf")
rc=$?
reason=$(tail -n 3 "$errf" | tr '\n' ' ')
rm -f "$errf"
if [ $rc -eq 3 ]; then echo "SKIP $spec: $reason"; exit 3; fi
if [ $rc -ne 0 ]; then echo "FAIL $spec: cannot get the kernel: $reason"; exit 1; fi
IFS=$'\t' read -r name image config release desc <<<"$info"

out=$VM_OUT/$name
rm -rf "$out"
mkdir -p "$out"
echo "$desc" >"$out/kernel"

initramfs=${VM_INITRAMFS:-}
if [ -z "$initramfs" ]; then
  initramfs=$VM_OUT/initramfs.cpio.gz
  bash "$here/build-initramfs.sh" "$initramfs" >/dev/null || { echo "FAIL $name: initramfs build failed"; exit 1; }
fi

if [ "$VM_ACCEL" = auto ]; then
  VM_ACCEL=$(bash "$here/pick-accel.sh" "$image")
fi
# TCG runs the vCPUs in one host thread by default. With one thread per vCPU
# (QEMU 7.2, thread=multi) a Debian 6.12 guest died with "Oops: int3" in
# __schedule or ttwu_do_activate in 2 boots of 5: sluice's kernel tests
# enable and disable tracepoints, the kernel live-patches their static keys
# with text_poke_bp (an int3 first, then the new bytes, then an IPI to make
# every CPU resynchronise), and another vCPU still executed the stale int3
# after the patcher had retired it. Real CPUs and KVM honour that protocol;
# single-threaded TCG, where only one vCPU runs at a time, cannot break it
# (0 oopses in 43 boots running the same tests). docs/vm-tests.md has more.
#
# The price: both vCPUs share one host thread, and the kernel tests' paced
# workloads, sized for a busy real machine, saturate the guest; then the BPF
# consumer thread gets too little CPU and the ring overflows (losses counted
# exactly, but the zero-loss checks fail: 3 runs in 11). Under TCG the tests
# run their workloads at a quarter of the rate (VM_WORKLOAD_SCALE): targets
# of 40k sched events/s and 10k markers/s, the same counts as on the host.
case "$VM_ACCEL" in
  kvm) cpu=host accel=kvm default_scale=1 ;;
  tcg)
    cpu=max accel=tcg,thread=$VM_TCG_THREAD default_scale=0.25
    case "$VM_TCG_THREAD" in single|multi) ;; *)
      echo "FAIL $name: VM_TCG_THREAD=$VM_TCG_THREAD (want single or multi)"; exit 1 ;;
    esac ;;
  *) echo "FAIL $name: VM_ACCEL=$VM_ACCEL (want kvm, tcg or auto)"; exit 1 ;;
esac

# The host config, checked against kconfigs/ (informational: the guest's
# sluice doctor and the scenarios decide; this tells why when they skip).
if [ "$config" != - ]; then
  bash "$root/kconfigs/check.sh" "$config" >"$out/kconfig-check.txt" 2>&1
fi

# Per kernel, a second gzip'ed cpio appended to the shared initramfs (the
# kernel unpacks concatenated archives in order) adds the kernel's config as
# /boot/config-<release>, where sluice doctor looks for it.
if [ "$config" != - ] && [ "$release" != - ]; then
  extra=$(mktemp -d)
  mkdir -p "$extra/boot"
  cp "$config" "$extra/boot/config-$release"
  (cd "$extra" && find . | cpio --quiet -o -H newc -R 0:0) | gzip -1 >"$out/extra.cpio.gz"
  rm -rf "$extra"
  cat "$initramfs" "$out/extra.cpio.gz" >"$out/initramfs.cpio.gz"
  initramfs=$out/initramfs.cpio.gz
fi

console=$out/console.log
results=$out/results.b64
# no_timer_check: under TCG on a busy host the boot-time IO-APIC timer test
# can miss its ticks and panic ("IO-APIC + timer doesn't work!", seen here).
# nosoftlockup: a descheduled vCPU thread is not a guest bug.
append="console=ttyS0 panic=-1 no_timer_check nosoftlockup sluice.accel=$VM_ACCEL"
append+=" sluice.timeout=$VM_SCENARIO_TIMEOUT sluice.only=$VM_ONLY"
append+=" sluice.workload_scale=${VM_WORKLOAD_SCALE:-$default_scale}"
[ -n "${VM_GTEST:-}" ] && append+=" sluice.gtest=$VM_GTEST"
append+=" ${VM_APPEND:-}"

# ttyS0: console and progress lines. ttyS1: results only (see guest/init).
# -no-reboot + panic=-1: a panicking kernel ends QEMU instead of looping.
qemu=(qemu-system-x86_64 -accel "$accel" -cpu "$cpu" -smp "$VM_SMP" -m "$VM_MEM"
  -nodefaults -display none -no-reboot
  -kernel "$image" -initrd "$initramfs" -append "$append"
  -chardev "file,id=con,path=$console" -serial chardev:con
  -chardev "file,id=res,path=$results" -serial chardev:res)
printf '%q ' "${qemu[@]}" >"$out/qemu-cmdline"
echo >>"$out/qemu-cmdline"

start=$(date +%s%N)
elapsed() { echo $((($(date +%s%N) - start) / 1000000)); }   # ms
: >"$console"
timeout -k 5 $((VM_TIMEOUT + 10)) "${qemu[@]}" >"$out/qemu.log" 2>&1 &
qpid=$!

# Watch the console: stop at a panic, a missed deadline, or after poweroff
# when the guest cannot power itself off.
verdict="" boot_ms="" poweroff_ms=""
panic_re='Kernel panic - not syncing|end Kernel panic'
while kill -0 $qpid 2>/dev/null; do
  sleep 0.5
  ms=$(elapsed)
  if [ -z "$boot_ms" ] && grep -q '^SLUICE-VM: init started' "$console"; then boot_ms=$ms; fi
  if grep -Eq "$panic_re" "$console"; then
    sleep 2
    # The first oops says what killed it; the last progress line says what the
    # guest was doing (which scenario, and in 50-kernel-tests which test).
    oops=$(grep -Eao '(Oops|BUG|kernel BUG at)[: ].*' "$console" | head -n 1 | tr -d '\r')
    rip=$(grep -Eao 'RIP: 0010:[^ ]*' "$console" | head -n 1 | sed 's/RIP: 0010://')
    progress=$(grep -a '^SLUICE-VM:' "$console" | tail -n 1 | tr -d '\r')
    verdict="kernel panic${oops:+: $oops}${rip:+ at $rip}; ${progress:+last progress: }${progress:-before /init ran}"
    break
  fi
  if [ -z "$poweroff_ms" ] && grep -q '^SLUICE-VM: poweroff' "$console"; then poweroff_ms=$ms; fi
  if [ -n "$poweroff_ms" ] && [ $((ms - poweroff_ms)) -gt 10000 ]; then break; fi
  if [ -z "$boot_ms" ] && [ "$ms" -gt $((VM_BOOT_TIMEOUT * 1000)) ]; then
    verdict="never reached /init within ${VM_BOOT_TIMEOUT}s (hang or boot failure)"; break
  fi
  if [ "$ms" -gt $((VM_TIMEOUT * 1000)) ]; then
    verdict="timed out after ${VM_TIMEOUT}s (guest hang?); last progress: $(grep '^SLUICE-VM:' "$console" | tail -n 1)"
    break
  fi
done
if kill -0 $qpid 2>/dev/null; then
  kill $qpid 2>/dev/null; sleep 1; kill -9 $qpid 2>/dev/null
fi
wait $qpid 2>/dev/null
total_ms=$(elapsed)
secs() { awk -v m="$1" 'BEGIN{printf "%.1f", m/1000}'; }
echo "$total_ms" >"$out/total_ms"

fail_tail() {
  echo "---- last 40 console lines ($console) ----"
  tail -n 40 "$console" | sed 's/\r$//'
  echo "---- artifacts: $out (console.log, results/formats/events = guest format tree, results/<scenario>/log) ----"
}

if [ -z "$verdict" ] && [ -z "$boot_ms" ]; then
  verdict="QEMU exited before /init ran: $(tail -n 2 "$out/qemu.log" | tr '\n' ' ')"
fi
if [ -z "$verdict" ] && grep -Eq '(^|\] )(Oops|BUG):' "$console"; then
  verdict="kernel reported $(grep -Eo '(Oops|BUG):.*' "$console" | head -n 1)"
fi

# Results: base64 of a tar.gz between marker lines, with size and md5.
decode_results() {
  local hdr size md5 got
  # grep reads the file itself: "tr | grep -m1" would fail under pipefail
  # when grep stops early and tr gets SIGPIPE.
  hdr=$(grep -a -m1 '^SLUICE-RESULTS-BEGIN' "$results" | tr -d '\r')
  [ -n "$hdr" ] || { echo "no results received"; return 1; }
  grep -aq '^SLUICE-RESULTS-END' "$results" || { echo "results cut short (no end marker)"; return 1; }
  size=$(sed -n 's/.*size=\([0-9]*\).*/\1/p' <<<"$hdr")
  md5=$(sed -n 's/.*md5=\([0-9a-f]*\).*/\1/p' <<<"$hdr")
  tr -d '\r' <"$results" | sed -n '/^SLUICE-RESULTS-BEGIN/,/^SLUICE-RESULTS-END/p' | sed '1d;$d' |
    base64 -d >"$out/results.tgz" 2>/dev/null || { echo "results are not valid base64"; return 1; }
  got=$(stat -c %s "$out/results.tgz")
  [ "$got" = "$size" ] || { echo "results size mismatch (got $got, want $size)"; return 1; }
  [ "$(md5sum "$out/results.tgz" | cut -d' ' -f1)" = "$md5" ] || { echo "results md5 mismatch"; return 1; }
  mkdir -p "$out/results"
  tar -C "$out/results" -xzf "$out/results.tgz" || { echo "results tarball does not unpack"; return 1; }
}

if [ -z "$verdict" ]; then
  why=$(decode_results) || verdict="$why; last progress: $(grep '^SLUICE-VM:' "$console" | tail -n 1)"
fi

summary="$desc, $accel, /init at $(secs "${boot_ms:-0}")s, total $(secs "$total_ms")s"
if [ -n "$verdict" ]; then
  echo "FAIL $name: $verdict ($summary)"
  fail_tail
  exit 1
fi

if [ -n "${VM_SAVE_FORMATS:-}" ] && [ -d "$out/results/formats/events" ]; then
  dst=$VM_SAVE_FORMATS/$name
  rm -rf "$dst"; mkdir -p "$dst"
  cp -r "$out/results/formats/events" "$dst/"
  cp "$out/results/formats/available_events" "$dst/" 2>/dev/null
  sed -n 's/^version=//p' "$out/results/guest-info" >"$dst/version"
  echo "saved format tree: $dst ($(cat "$dst/version" | cut -d' ' -f3))"
fi

KERNEL_NAME=$name EXPECTED_RELEASE=$release VM_ONLY=$VM_ONLY \
  bash "$here/check_results.sh" "$out/results" | tee "$out/verdicts"
check_rc=${PIPESTATUS[0]}
echo "     $name: $summary"
if [ "$check_rc" -ne 0 ] || grep -q '^FAIL' "$out/verdicts"; then
  fail_tail
  exit 1
fi
exit 0
