#!/bin/bash
# Boots one kernel in QEMU with the vm-tests initramfs, waits for the guest
# to run the scenarios and send results through its kernel log on the serial
# console, then checks the results on the host (check_results.sh).
#
# usage: vm-tests/run-kernel.sh SPEC        (SPEC as in fetch-kernel.sh)
# Prints one "PASS|FAIL|SKIP <kernel>/<scenario> ..." line per scenario, or
# one "FAIL <kernel>: ..." / "SKIP <kernel>: ..." line for the whole kernel,
# and on any failure the last 40 console lines and where the artifacts are.
# Exit: 0 no failure, 1 a failure, 3 kernel skipped.
#
# env (defaults):
#   VM_ARCH=x86_64            x86_64: qemu-system-x86_64, console ttyS0 (8250);
#                             arm64: qemu-system-aarch64 -M virt (TCG on an
#                             x86_64 host), console ttyAMA0 (pl011)
#   VM_OUT=build/vm-tests     output root; this kernel's files go to VM_OUT/<name>/
#   VM_INITRAMFS=             prebuilt initramfs (else built into VM_OUT/initramfs.cpio.gz)
#   VM_ACCEL=auto             kvm | tcg | auto (KVM if a probe boot works, else TCG)
#   VM_TCG_THREAD=single      single | multi: TCG's vCPU threading (see below)
#   VM_BOOT_TIMEOUT=90        limit for reaching /init
#   VM_SCENARIO_TIMEOUT=      time limit base for every scenario, in seconds;
#                             default: each scenario's "# timeout-base: N"
#                             (else 120). The guest enforces base x its speed
#                             scale (guest/init).
#   VM_SPEED_FACTOR=          use this speed factor instead of the one the
#                             guest measures at boot
#   VM_STALL_TIMEOUT=60       seconds (x the guest's scale) the watchdog
#                             allows between progress lines outside a
#                             scenario, and past a scenario's own limit
#   VM_TIMEOUT=               optional hard limit for the whole boot; by
#                             default the limit follows the guest's progress
#                             (see "Watch the console" below)
#   VM_SMP=2 VM_MEM=1024      guest CPUs and MiB of memory
#   VM_ONLY=*                 glob of scenario names to run
#   VM_APPEND=                extra kernel command line
#   VM_GTEST=                 gtest filter for 50-kernel-tests (default *KernelTest*)
#   VM_GTEST_REPEAT=          run 50-kernel-tests' cases this many times (to
#                             chase a rare failure; gtest's --gtest_repeat)
#   VM_WORKLOAD_SCALE=        rate factor for the kernel tests' workloads
#                             (tests/kernel_test_util.h); default 1 under KVM,
#                             see below for TCG
#   VM_SERIAL_IRQ=ok          broken: the UART raises IRQ 7 while the kernel
#                             waits on IRQ 4 (legacy ports, pnpacpi=off): a
#                             dead interrupt line, which stalls the tty layer
#                             and must not stall the results (x86 only;
#                             vm-tests/selftest)
#   VM_SAVE_FORMATS=          if set, copy the guest's format tree to
#                             VM_SAVE_FORMATS/<name>/events/ (+ version)
set -uo pipefail

spec=${1:?usage: run-kernel.sh SPEC}
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/.." && pwd)
VM_OUT=${VM_OUT:-build/vm-tests}
VM_TIMEOUT=${VM_TIMEOUT:-}
VM_BOOT_TIMEOUT=${VM_BOOT_TIMEOUT:-90}
VM_SCENARIO_TIMEOUT=${VM_SCENARIO_TIMEOUT:-}
VM_SPEED_FACTOR=${VM_SPEED_FACTOR:-}
VM_STALL_TIMEOUT=${VM_STALL_TIMEOUT:-60}
VM_SERIAL_IRQ=${VM_SERIAL_IRQ:-ok}
VM_SMP=${VM_SMP:-2}
VM_MEM=${VM_MEM:-1024}
VM_ONLY=${VM_ONLY:-*}
VM_ACCEL=${VM_ACCEL:-auto}
VM_TCG_THREAD=${VM_TCG_THREAD:-single}
VM_ARCH=${VM_ARCH:-x86_64}
case "$VM_ARCH" in x86_64|arm64) ;; *) echo "FAIL $spec: VM_ARCH=$VM_ARCH (want x86_64 or arm64)"; exit 1 ;; esac

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
#
# arm64 under TCG: -cpu max with pauth-impdef=on, QEMU's cheap stand-in for
# the architected pointer-authentication algorithm (QARMA), whose emulation
# otherwise dominates the guest's run time; the kernel still uses pauth.
tcg_cpu=max
[ "$VM_ARCH" = arm64 ] && tcg_cpu=max,pauth-impdef=on
case "$VM_ACCEL" in
  kvm) cpu=host accel=kvm default_scale=1 ;;
  tcg)
    cpu=$tcg_cpu accel=tcg,thread=$VM_TCG_THREAD default_scale=0.25
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

# The relay scenario (70-relay) is the only one that needs more from QEMU
# than the console: two virtio-serial ports and a host-side helper that
# runs beside the guest (relay-host.sh). The other scenarios boot without
# them.
relay=0
# shellcheck disable=SC2254  # VM_ONLY is a glob on purpose
case 70-relay in $VM_ONLY) [ -f "$here/scenarios/70-relay.sh" ] && relay=1 ;; esac

# Per kernel, a second gzip'ed cpio appended to the shared initramfs (the
# kernel unpacks concatenated archives in order) adds the kernel's config as
# /boot/config-<release>, where sluice doctor looks for it, and for the
# relay scenario the virtio_console driver when the kernel has it as a
# module (Debian 6.1; 6.12 builds it in): taken from the kernel's package
# once and kept beside the unpacked kernel (kernel-modules.sh).
if [ "$config" != - ] && [ "$release" != - ]; then
  extra=$(mktemp -d)
  mkdir -p "$extra/boot"
  cp "$config" "$extra/boot/config-$release"
  if [ "$relay" = 1 ]; then
    kdir=$(dirname "$image")
    mods=$kdir/relay-modules
    if [ ! -f "$mods/lib/modules/$release/sluice-load-order" ] && [ -f "$kdir/deb" ]; then
      rm -rf "$mods.tmp"
      bash "$here/kernel-modules.sh" "$config" "$(. "$here/cache-lib.sh"; cache_dir)/debs/$(cat "$kdir/deb")" \
        "$release" "$mods.tmp" CONFIG_VIRTIO_CONSOLE:virtio_console CONFIG_VIRTIO_PCI:virtio_pci \
        2>"$out/relay-modules.log" && mv "$mods.tmp" "$mods"
    fi
    if [ -f "$mods/lib/modules/$release/sluice-load-order" ]; then
      cp -r "$mods/lib" "$extra/"
    elif grep -q '^CONFIG_VIRTIO_CONSOLE=m' "$config"; then
      mkdir -p "$extra/lib/modules/$release"
      echo "virtio_console is a module in this kernel and none could be taken from its package: $(tail -n 1 "$out/relay-modules.log" 2>/dev/null)" \
        >"$extra/lib/modules/$release/sluice-modules-missing"
    fi
  fi
  (cd "$extra" && find . | cpio --quiet -o -H newc -R 0:0) | gzip -1 >"$out/extra.cpio.gz"
  rm -rf "$extra"
  cat "$initramfs" "$out/extra.cpio.gz" >"$out/initramfs.cpio.gz"
  initramfs=$out/initramfs.cpio.gz
fi

console=$out/console.log
# no_timer_check: under TCG on a busy host the boot-time IO-APIC timer test
# can miss its ticks and panic ("IO-APIC + timer doesn't work!", seen here).
# nosoftlockup: a descheduled vCPU thread is not a guest bug.
# printk.devkmsg=on: /dev/kmsg takes every line /init writes (the default
# rate limit keeps 10 per 5 s); loglevel=7 prints them (level 5) on the
# console; log_buf_len=16M holds the results while a console printed by a
# kernel thread catches up (guest/init, "Send /out").
if [ "$VM_ARCH" = arm64 ]; then
  # The virt machine's first UART is a pl011; no IO-APIC timer check there.
  append="console=ttyAMA0 panic=-1 nosoftlockup sluice.accel=$VM_ACCEL"
else
  append="console=ttyS0 panic=-1 no_timer_check nosoftlockup sluice.accel=$VM_ACCEL"
fi
append+=" printk.devkmsg=on loglevel=7 log_buf_len=16M"
append+=" sluice.only=$VM_ONLY"
append+=" sluice.workload_scale=${VM_WORKLOAD_SCALE:-$default_scale}"
[ -n "$VM_SCENARIO_TIMEOUT" ] && append+=" sluice.timeout_base=$VM_SCENARIO_TIMEOUT"
[ -n "$VM_SPEED_FACTOR" ] && append+=" sluice.speed=$VM_SPEED_FACTOR"
[ -n "${VM_GTEST:-}" ] && append+=" sluice.gtest=$VM_GTEST"
[ -n "${VM_GTEST_REPEAT:-}" ] && append+=" sluice.gtest_repeat=$VM_GTEST_REPEAT"

# One serial port, ttyS0 (arm64: ttyAMA0): the kernel console, which
# carries the kernel log, the guest's progress lines and its results
# (guest/init).
serial=(-serial chardev:con)
case "$VM_SERIAL_IRQ" in
  ok) ;;
  broken)
    [ "$VM_ARCH" = x86_64 ] || { echo "FAIL $name: VM_SERIAL_IRQ=broken is x86_64 only (legacy ISA ports)"; exit 1; }
    # The kernel takes the legacy ttyS0 (0x3f8, IRQ 4) instead of the ACPI
    # description, and the UART is wired to IRQ 7, which no driver claims:
    # not one transmit interrupt arrives, as after "Disabling IRQ #4".
    # shellcheck disable=SC2054  # one -device argument, commas and all
    serial=(-device isa-serial,chardev=con,iobase=0x3f8,irq=7)
    append+=" pnpacpi=off" ;;
  *) echo "FAIL $name: VM_SERIAL_IRQ=$VM_SERIAL_IRQ (want ok or broken)"; exit 1 ;;
esac
append+=" ${VM_APPEND:-}"

# -no-reboot + panic=-1: a panicking kernel ends QEMU instead of looping.
# arm64: the `virt` board (GICv2, pl011, PSCI, whose SYSTEM_OFF ends QEMU at
# poweroff -f).
if [ "$VM_ARCH" = arm64 ]; then
  machine=(qemu-system-aarch64 -M virt)
else
  machine=(qemu-system-x86_64)
fi
qemu=("${machine[@]}" -accel "$accel" -cpu "$cpu" -smp "$VM_SMP" -m "$VM_MEM"
  -nodefaults -display none -no-reboot
  -kernel "$image" -initrd "$initramfs" -append "$append"
  -chardev "file,id=con,path=$console" "${serial[@]}")
# The relay scenario's ports (docs/RELAY.md has the same for your own
# QEMU): org.sluice.relay, a client of the unix socket the host's sluiced
# --relay-socket listens on (relay-host.sh starts sluiced when the guest asks
# and restarts it between the scenario's phases: reconnect=1 has QEMU retry
# every second while nothing listens), and org.sluice.causality, whose
# socket QEMU serves for relay-host.sh (the scenario's control lines and the
# causality test's bytes). The socket paths are short: a unix socket path
# has at most 107 bytes, and $out may be deep.
if [ "$relay" = 1 ]; then
  relay_dir=$(mktemp -d /tmp/sluice-vm-relay.XXXXXX)
  qemu+=(-device virtio-serial-pci,id=vser
    -chardev "socket,id=relay,path=$relay_dir/relay.sock,reconnect=1"
    -device virtserialport,bus=vser.0,chardev=relay,name=org.sluice.relay
    -chardev "socket,id=cause,path=$relay_dir/cause.sock,server=on,wait=off"
    -device virtserialport,bus=vser.0,chardev=cause,name=org.sluice.causality)
fi
printf '%q ' "${qemu[@]}" >"$out/qemu-cmdline"
echo >>"$out/qemu-cmdline"

start=$(date +%s%N)
elapsed() { echo $((($(date +%s%N) - start) / 1000000)); }   # ms
: >"$console"
"${qemu[@]}" >"$out/qemu.log" 2>&1 &
qpid=$!
trap 'kill $qpid 2>/dev/null' EXIT
# A run stopped from outside (CI's timeout, a ^C, a killed make) ends
# through the EXIT trap too, so that QEMU, the relay host and its sockets'
# folder do not outlive it (bash runs no EXIT trap on a fatal signal).
trap 'exit 143' TERM INT HUP
if [ "$relay" = 1 ]; then
  BUILD_DIR=${BUILD_DIR:-build} bash "$here/relay-host.sh" "$relay_dir" "$out/relay" "$console" "$qpid" &
  relay_pid=$!
  trap 'kill $qpid $relay_pid 2>/dev/null; wait $relay_pid 2>/dev/null; rm -rf "$relay_dir"' EXIT
fi

# The guest's progress lines, without the printk prefix ("[   12.345678] ",
# and "[T1] " with CONFIG_PRINTK_CALLER) or the console's \r.
progress_lines() { grep -a 'SLUICE-VM: ' "$console" | sed 's/^.*SLUICE-VM: /SLUICE-VM: /; s/\r$//'; }
last_progress() { progress_lines | tail -n 1; }
# field KEY LINE: the value of KEY=VALUE in LINE.
field() { sed -n "s/.* $1=\([^ ]*\).*/\1/p" <<<"$2"; }

# Watch the console: stop at a panic, a guest that stops making progress,
# or after poweroff when the guest cannot power itself off. There is no
# fixed limit for the whole run (unless VM_TIMEOUT is set): a slow guest
# that makes progress runs to the end.
#  - until "init started": VM_BOOT_TIMEOUT;
#  - then every progress line (or results line) allows VM_STALL_TIMEOUT more
#    seconds, times the guest's scale once its "speed" line said it;
#  - a scenario may run its own limit (timeout= in its start line, enforced
#    in the guest) plus that stall allowance, whatever lines it prints;
#  - overall, at most the sum of the scenario limits, one stall allowance
#    per scenario and two more, from the speed line on; the results, which
#    are counted in lines, get a stall allowance and 0.25 s (scaled) a line.
verdict="" boot_ms="" poweroff_ms=""
seen=0 last_ms=0 phase_ms=0 cap_ms=0 scale=1 phase_line=""
panic_re='Kernel panic - not syncing|end Kernel panic'
stall_ms() { awk -v s="$VM_STALL_TIMEOUT" -v k="$scale" 'BEGIN{printf "%d", s * k * 1000}'; }
while kill -0 $qpid 2>/dev/null; do
  sleep 0.5
  ms=$(elapsed)
  if [ -z "$boot_ms" ] && grep -aq 'SLUICE-VM: init started' "$console"; then boot_ms=$ms; fi
  if grep -Eaq "$panic_re" "$console"; then
    sleep 2
    # The first oops says what killed it; the last progress line says what the
    # guest was doing (which scenario, and in 50-kernel-tests which test).
    oops=$(grep -Eao '(Oops|BUG|kernel BUG at)[: ].*' "$console" | head -n 1 | tr -d '\r')
    # Where it hit: x86's "RIP: 0010:func+off/len", arm64's "pc : func+off/len".
    rip=$(grep -Eao 'RIP: 0010:[^ ]*|pc : [^ ]*' "$console" | head -n 1 | sed 's/RIP: 0010://; s/pc : //')
    progress=$(last_progress)
    verdict="kernel panic${oops:+: $oops}${rip:+ at $rip}; ${progress:+last progress: }${progress:-before /init ran}"
    break
  fi
  if [ -z "$boot_ms" ]; then
    if [ "$ms" -gt $((VM_BOOT_TIMEOUT * 1000)) ]; then
      verdict="never reached /init within ${VM_BOOT_TIMEOUT}s (hang or boot failure)"; break
    fi
  else
    now_seen=$(grep -ac 'SLUICE-' "$console")
    if [ "$now_seen" != "$seen" ]; then
      seen=$now_seen last_ms=$ms
      line=$(progress_lines | grep -E '^SLUICE-VM: (speed unit=|scenario .* (start|end)|results begin|poweroff)' | tail -n 1)
      if [ "$line" != "$phase_line" ]; then
        phase_line=$line phase_ms=0
        case "$line" in
          'SLUICE-VM: speed unit='*)
            scale=$(field scale "$line")
            [ -n "$scale" ] || scale=1
            cap_ms=$(awk -v now="$ms" -v t="$(field total "$line")" -v n="$(grep -o ':' <<<"$line" | wc -l)" \
              -v st="$(stall_ms)" 'BEGIN{printf "%d", now + t * 1000 + (n + 2) * st}') ;;
          'SLUICE-VM: scenario '*' start '*)
            limit=$(field timeout "$line")
            phase_ms=$((ms + ${limit:-0} * 1000 + $(stall_ms))) ;;
          'SLUICE-VM: results begin '*)
            cap_ms=$(awk -v now="$ms" -v l="$(field lines "$line")" -v k="$scale" -v st="$(stall_ms)" \
              'BEGIN{printf "%d", now + st + l * 250 * k}') ;;
          'SLUICE-VM: poweroff'*) poweroff_ms=$ms ;;
        esac
      fi
    fi
    if [ -n "$poweroff_ms" ] && [ $((ms - poweroff_ms)) -gt 10000 ]; then break; fi
    if [ "$ms" -gt $((last_ms + $(stall_ms))) ] && [ "$ms" -gt "$phase_ms" ]; then
      verdict="no progress for $(($(stall_ms) / 1000))s (guest hang?); last progress: $(last_progress)"
      break
    fi
    if [ "$cap_ms" -gt 0 ] && [ "$ms" -gt "$cap_ms" ]; then
      verdict="over the limit of $((cap_ms / 1000))s the guest's own timeouts allow (guest hang?); last progress: $(last_progress)"
      break
    fi
  fi
  if [ -n "$VM_TIMEOUT" ] && [ "$ms" -gt $((VM_TIMEOUT * 1000)) ]; then
    verdict="timed out after ${VM_TIMEOUT}s (VM_TIMEOUT; guest hang?); last progress: $(last_progress)"
    break
  fi
done
if kill -0 $qpid 2>/dev/null; then
  kill $qpid 2>/dev/null; sleep 1; kill -9 $qpid 2>/dev/null
fi
wait $qpid 2>/dev/null
if [ "$relay" = 1 ]; then
  # It ends with QEMU (its channel closes); SIGTERM stops what it started.
  kill "$relay_pid" 2>/dev/null
  wait "$relay_pid" 2>/dev/null
  rm -rf "$relay_dir"
fi
total_ms=$(elapsed)
secs() { awk -v m="$1" 'BEGIN{printf "%.1f", m/1000}'; }
echo "$total_ms" >"$out/total_ms"

fail_tail() {
  echo "---- last 40 console lines ($console; results lines left out) ----"
  grep -av 'SLUICE-R ' "$console" | tail -n 40 | sed 's/\r$//'
  # A failed gtest case says why in gtest.txt, which the guest sent back;
  # CI keeps only this output, so show each failure's own lines here.
  local gt
  for gt in "$out"/results/*/gtest.txt; do
    [ -f "$gt" ] && grep -q '^\[  FAILED  \]' "$gt" || continue
    echo "---- failures in $gt (first 60 lines) ----"
    awk '/^\[ RUN      \]/ {buf = $0; n = 1; next}
         /^\[       OK \]|^\[  SKIPPED \]/ {buf = ""; next}
         /^\[  FAILED  \]/ && buf != "" {print buf; print; buf = ""; next}
         buf != "" && n < 40 {buf = buf "\n" $0; n++}' "$gt" | head -n 60
  done
  echo "---- artifacts: $out (console.log, results/formats/events = guest format tree, results/<scenario>/log) ----"
}

if [ -z "$verdict" ] && [ -z "$boot_ms" ]; then
  verdict="QEMU exited before /init ran: $(tail -n 2 "$out/qemu.log" | tr '\n' ' ')"
fi
if [ -z "$verdict" ] && grep -Eq '(^|\] )(Oops|BUG):' "$console"; then
  verdict="kernel reported $(grep -Eo '(Oops|BUG):.*' "$console" | head -n 1)"
fi

# Results: numbered base64 lines of a tar.gz between a header (size, md5,
# line count) and an end line, all in the console (guest/init). Every line
# number must be there once, then size and md5 must match.
decode_results() {
  local hdr size md5 lines got missing
  hdr=$(progress_lines | grep -m1 '^SLUICE-VM: results begin')
  [ -n "$hdr" ] || { echo "no results received"; return 1; }
  size=$(field size "$hdr") md5=$(field md5 "$hdr") lines=$(field lines "$hdr")
  # grep -c reads to the end: grep -q would stop early, and under pipefail
  # the SIGPIPE of the writer would fail the test.
  [ "$(progress_lines | grep -c '^SLUICE-VM: results end')" -gt 0 ] ||
    { echo "results cut short (no end line)"; return 1; }
  grep -a 'SLUICE-R ' "$console" | sed 's/^.*SLUICE-R //; s/\r$//' >"$out/results.lines"
  missing=$(awk -v want="$lines" '{ if (!($1 in seen)) n++; seen[$1] = 1 }
    END { for (i = 1; i <= want; i++) if (!(i in seen)) { printf "line %d of %d missing", i, want; exit }
          if (n != want) printf "%d lines, want %d", n, want }' "$out/results.lines")
  if [ -n "$missing" ]; then
    echo "results incomplete: $missing$(grep -ao '[0-9]* printk messages dropped' "$console" | head -n 1 | sed 's/^/ (the kernel says: /; s/$/)/')"
    return 1
  fi
  # One copy of each line, in order, for base64 -d (and for a look by hand).
  sort -n -k1,1 -u "$out/results.lines" | cut -d' ' -f2 >"$out/results.b64"
  base64 -d <"$out/results.b64" >"$out/results.tgz" 2>/dev/null || { echo "results are not valid base64"; return 1; }
  got=$(stat -c %s "$out/results.tgz")
  [ "$got" = "$size" ] || { echo "results size mismatch (got $got, want $size)"; return 1; }
  [ "$(md5sum "$out/results.tgz" | cut -d' ' -f1)" = "$md5" ] || { echo "results md5 mismatch"; return 1; }
  mkdir -p "$out/results"
  tar -C "$out/results" -xzf "$out/results.tgz" || { echo "results tarball does not unpack"; return 1; }
}

if [ -z "$verdict" ]; then
  why=$(decode_results) || verdict="$why; last progress: $(last_progress)"
fi

speed=$(progress_lines | grep -m1 '^SLUICE-VM: speed unit=')
summary="$desc, $accel, /init at $(secs "${boot_ms:-0}")s${speed:+, speed factor $(field factor "$speed") (scale $(field scale "$speed"))}, total $(secs "$total_ms")s"
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
# sluice.tty_probe=1 (selftest): did 64 KiB get through the tty layer?
# rc=0 yes, rc=143 it stalled.
[ -f "$out/results/tty-probe" ] && echo "NOTE $name: tty probe $(cat "$out/results/tty-probe")"
echo "     $name: $summary"
if [ "$check_rc" -ne 0 ] || grep -q '^FAIL' "$out/verdicts"; then
  fail_tail
  exit 1
fi
exit 0
