#!/bin/sh
# BPF source (linux.bpf): same events and markers as 10-ftrace-markers, taken
# by BPF programs on tracepoints into a BPF ringbuf (sluice record --bpf).
# Skipped, with the reason sluice doctor gives, where the kernel cannot run it.
# As in 10, the recorder runs until the markers are written (no clock race).
# timeout-base: 120
. /usr/share/sluice-vm/lib.sh
need_sluice
need_tracefs

run_doctor
# sluice doctor prints one "<feature>: ok" or "<feature>: <what is missing>"
# line per feature; the BPF source's line starts with "bpf". Without such a
# line (doctor not written yet), BTF decides.
line=$(grep -Ei '^[[:space:]]*bpf[^:]*:' "$OUT/doctor.txt" | head -n 1)
if [ -n "$line" ]; then
  echo "$line" | grep -Eiq ':[[:space:]]*ok([[:space:]]|$)' || skip "sluice doctor: $line"
else
  [ -e /sys/kernel/btf/vmlinux ] ||
    skip "no /sys/kernel/btf/vmlinux (CONFIG_DEBUG_INFO_BTF off) and sluice doctor gave no bpf: line"
  note "sluice doctor gave no bpf: line; BTF is there, trying"
fi

markers=${SLUICE_VM_MARKERS:-2000}
echo "sluice-bpf=" >"$OUT/marker_prefix"
start_record -o "$OUT/trace.pftrace" -t 1h --bpf sched/sched_switch ftrace/print
wait_for 60 "BPF program loaded" bpf_loaded
wait_until_recording "$OUT/trace.pftrace"
write_markers "sluice-bpf=" 1 "$markers"
stop_record
sluice stats "$OUT/trace.pftrace" >"$OUT/stats.txt" 2>&1
echo $? >"$OUT/stats.rc"
note "wrote $(cat "$OUT/markers_written") markers, trace $(wc -c <"$OUT/trace.pftrace") bytes"
