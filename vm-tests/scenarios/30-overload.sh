#!/bin/sh
# Forced overload: the recorder is frozen (SIGSTOP) while this shell, pinned
# to CPU 0, writes more markers than CPU 0's small kernel buffer holds (at
# least 3000, and on until per_cpu/cpu0/stats shows overwritten events;
# at most 4 s of writing).
# Only ftrace/print is recorded, so every event the kernel overwrote is a
# marker: the host check wants the reported losses to equal the number of
# missing sequence numbers, and the markers written after SIGCONT all present.
. /usr/share/sluice-vm/lib.sh
need_sluice
need_tracefs

before=${SLUICE_VM_OVERLOAD_MARKERS:-3000}
after=200
echo "sluice-ovl=" >"$OUT/marker_prefix"
cat >"$OUT/config.pbtx" <<CFG
buffers { size_kb: 16384 fill_policy: DISCARD }
data_sources {
  config {
    name: "linux.ftrace"
    ftrace_config { ftrace_events: "ftrace/print" buffer_size_kb: 16 drain_period_ms: 100 }
  }
}
duration_ms: 10000
CFG
start_record -c "$OUT/config.pbtx" --txt -o "$OUT/trace.pftrace"
wait_for 20 "trace_pipe_raw open for every CPU" ftrace_readers_open
# Pinned after the recorder started, so the recorder keeps both CPUs.
taskset -p -c 0 $$ >/dev/null || fail "cannot pin the marker writer to CPU 0"
sleep 1
overrun() { sed -n 's/^overrun: *//p' "$TRACEFS/per_cpu/cpu0/stats"; }
signal_tree STOP "$RECORD_PID"
cat "$TRACEFS/per_cpu/cpu0/stats" >"$OUT/cpu0_stats_before"
ov0=$(overrun)
# At least $before markers, and more until the kernel overwrote some: the
# recorder may have sized the buffer larger than the config asked.
# Capped at 4 s of writing, so the recording (10 s) outlasts the scenario.
n=0
t0=$(cut -d. -f1 /proc/uptime)
while [ $n -lt "$before" ] || [ "$(overrun)" -le "$ov0" ]; do
  write_markers "sluice-ovl=" $((n + 1)) $((n + 500))
  n=$((n + 500))
  [ $(($(cut -d. -f1 /proc/uptime) - t0)) -ge 4 ] && break
done
cat "$TRACEFS/per_cpu/cpu0/stats" >"$OUT/cpu0_stats_while_stopped"
echo $(($(overrun) - ov0)) >"$OUT/kernel_overrun"
signal_tree CONT "$RECORD_PID"
sleep 1
write_markers "sluice-ovl=" $((n + 1)) $((n + after))
echo "$((n + 1)) $((n + after))" >"$OUT/must_be_present"
still_recording
finish_record
note "wrote $(cat "$OUT/markers_written") markers; kernel overwrote $(cat "$OUT/kernel_overrun") while the recorder was stopped"
