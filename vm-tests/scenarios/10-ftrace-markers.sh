#!/bin/sh
# ftrace source: records sched/sched_switch and ftrace/print while writing
# sequence-numbered trace_marker lines, then stops the recorder. The host
# check (10-ftrace-markers.check) wants every marker exactly once, zero
# reported loss, and sched_switch events decoded with this kernel's formats.
# No step depends on the wall clock: the recording starts long (1 h), the
# markers are written once a ready marker is in the trace file, and the
# recorder is stopped when they are all written.
# timeout-base: 120
. /usr/share/sluice-vm/lib.sh
need_sluice
need_tracefs

markers=${SLUICE_VM_MARKERS:-2000}
echo "sluice-seq=" >"$OUT/marker_prefix"

start_record -o "$OUT/trace.pftrace" -t 1h sched/sched_switch ftrace/print
wait_for 60 "trace_pipe_raw open for every CPU" ftrace_readers_open
wait_for 60 "sched/sched_switch enabled" event_enabled sched/sched_switch
wait_until_recording "$OUT/trace.pftrace"
write_markers "sluice-seq=" 1 "$markers"
stop_record
sluice stats "$OUT/trace.pftrace" >"$OUT/stats.txt" 2>&1
echo $? >"$OUT/stats.rc"
note "wrote $(cat "$OUT/markers_written") markers, trace $(wc -c <"$OUT/trace.pftrace") bytes"
