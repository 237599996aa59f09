#!/bin/bash
# What a run of sluice pays before it does anything (the dynamic loader, its
# libraries, protobuf's descriptors), and a short recording, for two builds
# side by side (root: the recording touches tracefs).
#
#   tests/bench/startup.sh BASELINE_SLUICE [SLUICE] [REPS]
#     SLUICE defaults to build/sluice, REPS to 10.
#
# Each round runs, for the baseline and then this build, `sluice --version`
# and `sluice record -t 200ms -q` of the idle machine (its default events)
# under `perf stat -e task-clock,page-faults`; alternating, so a drift of
# the machine hits both alike. Printed: the medians (min-max) per build.
# tracefs is left as found: sluice record puts back what it changed, and
# /run/sluice (its tracefs state directory) is removed if it did not exist.
set -euo pipefail
baseline=${1:?usage: tests/bench/startup.sh BASELINE_SLUICE [SLUICE] [REPS]}
current=${2:-build/sluice}
reps=${3:-10}
command -v perf >/dev/null || { echo "startup.sh: needs perf (apt install linux-perf)" >&2; exit 1; }
out=$(mktemp -d /tmp/sluice-startup.XXXXXX)
run_sluice_existed=$([ -e /run/sluice ] && echo 1 || true)
cleanup() {
  rm -rf "$out"
  [ -n "$run_sluice_existed" ] || rm -rf /run/sluice
}
trap cleanup EXIT

# One measured run: "task-clock-ms page-faults" appended to $1.
measure() {
  local into=$1
  shift
  perf stat -x, -e task-clock,page-faults -o "$out/stat" "$@" >/dev/null 2>&1
  awk -F, '/task-clock/ {t = $1} /page-faults/ {f = $1} END {print t, f}' "$out/stat" >>"$into"
}

for _ in $(seq "$reps"); do
  for which in baseline current; do
    bin=${!which}
    measure "$out/$which.version" "$bin" --version
    measure "$out/$which.record" "$bin" record -t 200ms -q -o "$out/trace.pftrace"
    rm -f "$out/trace.pftrace"
  done
done

python3 - "$out" "$baseline" "$current" <<'PY'
import statistics, sys
out, names = sys.argv[1], {"baseline": sys.argv[2], "current": sys.argv[3]}
for kind, what in (("version", "sluice --version"), ("record", "sluice record -t 200ms -q")):
    print(what)
    for which in ("baseline", "current"):
        rows = [line.split() for line in open(f"{out}/{which}.{kind}") if line.strip()]
        ms = [float(r[0]) for r in rows]
        faults = [float(r[1]) for r in rows]
        print(f"  {which:8} {names[which]}: {statistics.median(ms):.1f} ms of CPU "
              f"({min(ms):.1f}-{max(ms):.1f}), {statistics.median(faults):.0f} page faults")
PY
