#!/bin/sh
# BPF source (linux.bpf): same events and markers as 10-ftrace-markers, taken
# by BPF programs on tracepoints into a BPF ringbuf. Skipped, with the reason
# sluice doctor gives, where the kernel cannot run it.
. /usr/share/sluice-vm/lib.sh
need_sluice
need_tracefs

run_doctor
# sluice doctor prints one "<feature>: ok" or "<feature>: <what is missing>"
# line per feature; the BPF source's line starts with "bpf".
line=$(grep -Ei '^[[:space:]]*bpf[^:]*:' "$OUT/doctor.txt" | head -n 1)
[ -n "$line" ] || skip "sluice doctor printed no 'bpf:' line (see doctor.txt)"
echo "$line" | grep -Eiq ':[[:space:]]*ok([[:space:]]|$)' || skip "sluice doctor: $line"

markers=${SLUICE_VM_MARKERS:-2000}
echo "sluice-bpf=" >"$OUT/marker_prefix"
cat >"$OUT/config.pbtx" <<CFG
buffers { size_kb: 16384 fill_policy: DISCARD }
data_sources {
  config {
    name: "linux.bpf"
    ftrace_config { ftrace_events: "sched/sched_switch" ftrace_events: "ftrace/print" }
  }
}
duration_ms: 6000
CFG
start_record -c "$OUT/config.pbtx" --txt -o "$OUT/trace.pftrace"
wait_bpf_attached 20 || fail "no BPF program loaded within 20s (see record.log)"
sleep 1
write_markers "sluice-bpf=" 1 "$markers"
still_recording
finish_record
note "wrote $(cat "$OUT/markers_written") markers, trace $(wc -c <"$OUT/trace.pftrace") bytes"
