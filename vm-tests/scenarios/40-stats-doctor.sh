#!/bin/sh
# Captures "sluice doctor" (what this kernel supports, per feature) and
# "sluice stats" output. The host check wants both to run without crashing
# and doctor to name each feature.
. /usr/share/sluice-vm/lib.sh
need_sluice

run_doctor
sluice stats >"$OUT/stats.txt" 2>&1
echo $? >"$OUT/stats.rc"
note "doctor rc=$(cat "$OUT/doctor.rc"), stats rc=$(cat "$OUT/stats.rc")"
