#!/bin/bash
# sluice report vs the import it starts with, side by side in one run: the
# report's target is under 1.5x `sluice query`'s import alone (issue 13).
#
#   tests/bench/report_vs_import.sh                         # from the project root
#   TRACE=my.pftrace REPS=5 tests/bench/report_vs_import.sh
#
# TRACE defaults to build/bench/sched-10m.pftrace, which
# tests/bench/query_vs_trace_processor.sh records when it is missing.
# Per repetition, alternating so that load drifts hit all three:
#   import   sluice query TRACE -q 'select 1'     (the import alone)
#   report   sluice report TRACE                   (import + text sections)
#   html     sluice report TRACE --html FILE       (import + every section + page)
# Each line: wall and CPU (user+sys) seconds and peak RSS of the whole run
# (/usr/bin/time); the summary: medians, and report/import and html/import
# ratios of the medians; the page's size.
set -u

REPS=${REPS:-5}
BUILD_DIR=${BUILD_DIR:-build}
SLUICE=${SLUICE:-$BUILD_DIR/sluice}
TRACE=${TRACE:-$BUILD_DIR/bench/sched-10m.pftrace}
WORK=$(mktemp -d /tmp/sluice-report-bench.XXXXXX)
trap 'rm -rf "$WORK"' EXIT

die() { echo "report_vs_import: $*" >&2; exit 1; }
[ -x "$SLUICE" ] || die "$SLUICE not built: make $SLUICE"
[ -s "$TRACE" ] || die "no trace at $TRACE: run tests/bench/query_vs_trace_processor.sh once, or set TRACE"
[ -x /usr/bin/time ] || die "/usr/bin/time missing: apt-get install time"
echo "trace: $TRACE ($(stat -c %s "$TRACE") bytes)"

# one RUN -> "wall cpu rss_mb"
one() {
  case $1 in
    import) set -- "$SLUICE" query "$TRACE" -q 'select 1' ;;
    report) set -- "$SLUICE" report "$TRACE" ;;
    html) set -- "$SLUICE" report "$TRACE" --html "$WORK/report.html" ;;
  esac
  /usr/bin/time -o "$WORK/time" -f "%e %U %S %M" "$@" >"$WORK/out" 2>"$WORK/err" ||
    { cat "$WORK/err" >&2; die "$* failed"; }
  read -r wall user sys rss_kb < "$WORK/time"
  awk -v w="$wall" -v u="$user" -v s="$sys" -v r="$rss_kb" 'BEGIN { printf "%6.2f %6.2f %7.0f", w, u + s, r / 1024 }'
}

printf '%-8s %3s %6s %6s %7s\n' run rep wall_s cpu_s rss_mb
for rep in $(seq 1 "$REPS"); do
  for run in import report html; do
    line=$(one $run)
    printf '%-8s %3d %s\n' "$run" "$rep" "$line"
    echo "$run $line" >> "$WORK/all"
  done
done
[ -s "$WORK/report.html" ] && echo "page: $(stat -c %s "$WORK/report.html") bytes"
awk '
  { wall[$1] = wall[$1] " " $2; cpu[$1] = cpu[$1] " " $3 }
  function median(list,   n, v, i, j, t) {
    n = split(list, v, " ")
    for (i = 1; i <= n; i++) for (j = i + 1; j <= n; j++) if (v[j] < v[i]) { t = v[i]; v[i] = v[j]; v[j] = t }
    return n % 2 ? v[(n + 1) / 2] : (v[n / 2] + v[n / 2 + 1]) / 2
  }
  END {
    for (r in wall) { mw[r] = median(wall[r]); mc[r] = median(cpu[r]) }
    printf "medians: import %.2f s wall %.2f s cpu; report %.2f / %.2f; html %.2f / %.2f\n",
      mw["import"], mc["import"], mw["report"], mc["report"], mw["html"], mc["html"]
    printf "report/import: %.2fx wall, %.2fx cpu (target < 1.5x); html/import: %.2fx wall, %.2fx cpu\n",
      mw["report"] / mw["import"], mc["report"] / mc["import"], mw["html"] / mw["import"], mc["html"] / mc["import"]
  }' "$WORK/all"
