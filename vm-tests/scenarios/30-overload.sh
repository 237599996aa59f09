#!/bin/sh
# Forced overload: the recorder is frozen (SIGSTOP) while this shell, pinned
# to CPU 0, writes far more markers than CPU 0's small kernel buffer holds.
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
duration_ms: 8000
CFG
start_record -c "$OUT/config.pbtx" --txt -o "$OUT/trace.pftrace"
wait_ftrace_readers 20 || fail "sluice record did not open trace_pipe_raw within 20s (see record.log)"
# Pinned after the recorder started, so the recorder keeps both CPUs.
taskset -p -c 0 $$ >/dev/null || fail "cannot pin the marker writer to CPU 0"
sleep 1
signal_tree STOP "$RECORD_PID"
write_markers "sluice-ovl=" 1 "$before"
cat "$TRACEFS/per_cpu/cpu0/stats" >"$OUT/cpu0_stats_while_stopped"
signal_tree CONT "$RECORD_PID"
sleep 1
write_markers "sluice-ovl=" $((before + 1)) $((before + after))
echo "$((before + 1)) $((before + after))" >"$OUT/must_be_present"
still_recording
finish_record
note "wrote $(cat "$OUT/markers_written") markers; kernel: $(grep overrun "$OUT/cpu0_stats_while_stopped" | tr '\n' ' ')"
