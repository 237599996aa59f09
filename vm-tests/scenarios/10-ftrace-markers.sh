#!/bin/sh
# ftrace source: records sched/sched_switch and ftrace/print for a few
# seconds while writing sequence-numbered trace_marker lines. The host check
# (10-ftrace-markers.check) wants every marker exactly once, zero reported
# loss, and sched_switch events decoded with this kernel's formats.
. /usr/share/sluice-vm/lib.sh
need_sluice
need_tracefs

markers=${SLUICE_VM_MARKERS:-2000}
echo "sluice-seq=" >"$OUT/marker_prefix"

start_record -o "$OUT/trace.pftrace" -t 5s sched/sched_switch ftrace/print
wait_for 20 "trace_pipe_raw open for every CPU" ftrace_readers_open
wait_for 5 "sched/sched_switch enabled" event_enabled sched/sched_switch
usleep 300000
write_markers "sluice-seq=" 1 "$markers"
still_recording
finish_record
sluice stats "$OUT/trace.pftrace" >"$OUT/stats.txt" 2>&1
echo $? >"$OUT/stats.rc"
note "wrote $(cat "$OUT/markers_written") markers, trace $(wc -c <"$OUT/trace.pftrace") bytes"
