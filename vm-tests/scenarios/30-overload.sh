#!/bin/sh
# Forced overload: the recorder is frozen (SIGSTOP) while this shell, pinned
# to CPU 0, writes more markers than CPU 0's small kernel buffer holds (at
# least 3000, and on until per_cpu/cpu0/stats shows overwritten events; at
# most 50000).
# Only ftrace/print is recorded, so every event the kernel overwrote is a
# marker: the host check wants the reported losses to equal the number of
# missing sequence numbers, and the markers written after SIGCONT all present.
# Nothing races the clock: the recording is an hour long and stopped when the
# markers are written; after SIGCONT, one marker is written and waited for
# in the trace file before the 200 that must all be there (the reader has
# drained the stale buffer by then).
# timeout-base: 120
. /usr/share/sluice-vm/lib.sh
need_sluice
need_tracefs

before=${SLUICE_VM_OVERLOAD_MARKERS:-3000}
after=200
echo "sluice-ovl=" >"$OUT/marker_prefix"
# Streamed (write_into_file), so the file shows the markers while recording.
cat >"$OUT/config.pbtx" <<CFG
write_into_file: true
buffers { size_kb: 16384 fill_policy: DISCARD }
data_sources {
  config {
    name: "linux.ftrace"
    ftrace_config { ftrace_events: "ftrace/print" buffer_size_kb: 16 drain_period_ms: 100 }
  }
}
duration_ms: 3600000
CFG
start_record -c "$OUT/config.pbtx" --txt -o "$OUT/trace.pftrace"
wait_for 60 "trace_pipe_raw open for every CPU" ftrace_readers_open
wait_until_recording "$OUT/trace.pftrace"
# Pinned after the recorder started, so the recorder keeps both CPUs.
taskset -p -c 0 $$ >/dev/null || fail "cannot pin the marker writer to CPU 0"
overrun() { sed -n 's/^overrun: *//p' "$TRACEFS/per_cpu/cpu0/stats"; }
signal_tree STOP "$RECORD_PID"
cat "$TRACEFS/per_cpu/cpu0/stats" >"$OUT/cpu0_stats_before"
ov0=$(overrun)
# At least $before markers, and more until the kernel overwrote some: the
# recorder may have sized the buffer larger than the config asked. The cap
# (50000, a count, not a time) only ends a kernel that never overwrites.
n=0
while [ $n -lt "$before" ] || [ "$(overrun)" -le "$ov0" ]; do
  [ $n -ge 50000 ] && break
  write_markers "sluice-ovl=" $((n + 1)) $((n + 500))
  n=$((n + 500))
done
cat "$TRACEFS/per_cpu/cpu0/stats" >"$OUT/cpu0_stats_while_stopped"
echo $(($(overrun) - ov0)) >"$OUT/kernel_overrun"
signal_tree CONT "$RECORD_PID"
# One more marker of the same sequence, waited for in the trace: once it is
# there the reader has drained what the kernel kept of the stalled buffer.
n=$((n + 1))
write_markers "sluice-ovl=" $n $n
marker_in_trace() { grep -aq "sluice-ovl=$n\$" "$(being_recorded "$OUT/trace.pftrace")"; }
wait_for 60 "marker sluice-ovl=$n in the trace after SIGCONT" marker_in_trace
write_markers "sluice-ovl=" $((n + 1)) $((n + after))
echo "$((n + 1)) $((n + after))" >"$OUT/must_be_present"
stop_record
note "wrote $(cat "$OUT/markers_written") markers; kernel overwrote $(cat "$OUT/kernel_overrun") while the recorder was stopped"
