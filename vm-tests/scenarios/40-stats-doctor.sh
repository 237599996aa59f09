#!/bin/sh
# Captures what sluice says about this kernel: "sluice doctor" (features
# supported, with fixes), "sluice ftrace-formats" (the event layouts it reads
# from this kernel's tracefs) and "sluice version". "sluice stats" output is
# captured by the recording scenarios (stats.txt next to each trace).
. /usr/share/sluice-vm/lib.sh
need_sluice

run_doctor
sluice ftrace-formats >"$OUT/ftrace_formats.txt" 2>&1
echo $? >"$OUT/ftrace_formats.rc"
sluice version >"$OUT/version.txt" 2>&1
note "doctor rc=$(cat "$OUT/doctor.rc"), ftrace-formats rc=$(cat "$OUT/ftrace_formats.rc")"
