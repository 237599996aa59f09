#!/bin/sh
# Trivial scenario that needs no sluice binary: proves the harness (boot,
# initramfs, tracefs mount, results transport) and captures this kernel's
# ftrace format tree for the ftrace parser tests (results/00-env/formats/).
. /usr/share/sluice-vm/lib.sh

cat /proc/version >"$OUT/proc_version" || fail "cannot read /proc/version"
need_tracefs
capture_formats "$OUT/formats"
[ -s "$OUT/formats/events/header_page" ] || fail "events/header_page is missing or empty"
[ -s "$OUT/formats/events/sched/sched_switch/format" ] || fail "sched/sched_switch/format is missing"
[ -s "$OUT/formats/events/ftrace/print/format" ] || fail "ftrace/print/format is missing"
ls /sys/kernel/btf/vmlinux >"$OUT/btf" 2>&1
note "captured $(find "$OUT/formats/events" -name format | wc -l) event formats"
