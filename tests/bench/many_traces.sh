#!/bin/bash
# Many traces, one question: `sluice query DIR` (every trace of a directory in
# one process, several at once) vs one `sluice query TRACE` process per trace
# vs upstream's trace_processor_shell per trace, side by side in one run.
#
#   tests/bench/many_traces.sh                      # from the project root, as root
#   COUNT=100 DISTINCT=4 REPS=3 tests/bench/many_traces.sh
#   TRACES=dir/of/traces tests/bench/many_traces.sh  # traces of your own: no recording
#
# The traces: DISTINCT (4) recorded here by `sluice record` on the running
# kernel (root, tracefs), each of about 100 k events: sched_switch,
# sched_waking and ftrace/print with compact_sched while stress-ng's
# context-switch stressor passes a fixed number of messages (8 MiB kernel
# buffers per CPU: the burst is lost in none)
# (`--switch 1 --switch-ops 25000`: the same count of events however loaded
# the machine is); copied round-robin into COUNT (100) files,
# trace-000.pftrace ...
# The recordings are kept in build/bench/many-traces/ and reused.
#
# The question, for every tool: per-process CPU time from sched, thread and
# process (below, $WORK/cpu.sql). Per repetition, in turn:
#   dir      sluice query DIR -f cpu.sql --format csv          (one process)
#   dir-j1   the same with -j 1: one trace at a time (what the threads add)
#   each     sluice query TRACE -f cpu.sql --format csv, per trace, serially
#   upstream trace_processor_shell -q cpu.sql TRACE, per trace, serially
# Each line: wall seconds, traces per second, CPU (user+sys) seconds and the
# largest peak RSS of one process (/usr/bin/time; for `each` and `upstream`
# summed or maxed over their processes), and the load average (1 min) before
# the run. The summary: medians, and how much faster `dir` is than the others.
# `dir`'s rows are checked against `each`'s concatenated under a trace column
# in the first repetition.
set -u

COUNT=${COUNT:-100}
DISTINCT=${DISTINCT:-4}
REPS=${REPS:-3}
BUILD_DIR=${BUILD_DIR:-build}
SLUICE=${SLUICE:-$BUILD_DIR/sluice}
TRACE_PROCESSOR=${TRACE_PROCESSOR:-../shared/tools/perfetto/trace_processor_shell}
RECORDED=${RECORDED:-$BUILD_DIR/bench/many-traces}
T=${T:-/sys/kernel/tracing}
WORK=$(mktemp -d /tmp/sluice-many-traces.XXXXXX)
trap 'rm -rf "$WORK"' EXIT
. "$(dirname "$0")/bench_common.sh"

[ -x "$SLUICE" ] || bench_die "$SLUICE not built: make $SLUICE"
[ -x "$TRACE_PROCESSOR" ] || bench_die "no trace_processor_shell at $TRACE_PROCESSOR: set TRACE_PROCESSOR"
[ -x /usr/bin/time ] || bench_die "/usr/bin/time missing: apt-get install time"

# ---- the traces ----------------------------------------------------------------
if [ -z "${TRACES:-}" ]; then
  mkdir -p "$RECORDED"
  for i in $(seq 1 "$DISTINCT"); do
    f=$RECORDED/rec-$i.pftrace
    [ -s "$f" ] && continue
    [ "$(id -u)" = 0 ] || bench_die "$f missing and recording it needs root (tracefs)"
    command -v stress-ng >/dev/null || bench_die "stress-ng missing: apt-get install stress-ng"
    [ -d "$T" ] || bench_die "no tracefs at $T"
    bench_save_tracefs
    echo "recording $f (sluice record, stress-ng --switch 1 --switch-ops 25000)"
    ( sleep 0.3; stress-ng --switch 1 --switch-ops 25000 --quiet ) &
    "$SLUICE" record -q -o "$f" -t 3s -k 8mb sched/sched_switch sched/sched_waking ftrace/print >"$WORK/record.log" 2>&1 ||
      { cat "$WORK/record.log" >&2; bench_die "recording $f failed"; }
    wait
    bench_restore_tracefs
  done
  TRACES=$WORK/traces
  mkdir -p "$TRACES"
  for n in $(seq 0 $((COUNT - 1))); do
    cp "$RECORDED/rec-$((n % DISTINCT + 1)).pftrace" "$(printf '%s/trace-%03d.pftrace' "$TRACES" "$n")"
  done
fi
mapfile -t FILES < <(find "$TRACES" -maxdepth 1 -type f -name '*.pftrace' | sort)
[ "${#FILES[@]}" -gt 0 ] || bench_die "no *.pftrace in $TRACES"
events=0
for f in $(printf '%s\n' "${FILES[@]}" | xargs -n1 cksum | sort -u -k1,2 | awk '{ print $3 }'); do
  "$SLUICE" stats "$f" > "$WORK/stats"
  e=$(sed -n 's/.*bytes, \([0-9]*\) ftrace events.*/\1/p' "$WORK/stats")
  echo "distinct trace: $f ($(stat -c %s "$f") bytes, ${e:-?} ftrace events, $(grep -q 'no losses' "$WORK/stats" && echo 'no losses' || echo 'LOSSES: see sluice stats'))"
done
echo "traces: ${#FILES[@]} in $TRACES, $(du -sh "$TRACES" | cut -f1); $(nproc) CPUs, $(free -m | awk '/^Mem:/ { print $7 }') MB available"

cat > "$WORK/cpu.sql" <<'SQL'
select p.upid, p.pid, p.name, sum(s.dur) as cpu_ns
from sched s join thread t using(utid) left join process p using(upid)
group by p.upid order by cpu_ns desc, p.upid;
SQL

# one TOOL -> "wall traces/s cpu rss_mb" (output in $WORK/TOOL.out)
one() {
  local tool=$1 out=$WORK/$1.out start end f
  : > "$out"
  : > "$WORK/times"
  start=$(date +%s.%N)
  case $tool in
    dir | dir-j1)
      /usr/bin/time -a -o "$WORK/times" -f "%U %S %M" "$SLUICE" query "$TRACES" -f "$WORK/cpu.sql" --format csv \
        $([ "$tool" = dir-j1 ] && echo -j 1) >"$out" 2>"$WORK/err" ||
        { cat "$WORK/err" >&2; bench_die "sluice query $TRACES failed"; } ;;
    each)
      for f in "${FILES[@]}"; do
        /usr/bin/time -a -o "$WORK/times" -f "%U %S %M" "$SLUICE" query "$f" -f "$WORK/cpu.sql" --format csv \
          >>"$out" 2>"$WORK/err" || { cat "$WORK/err" >&2; bench_die "sluice query $f failed"; }
      done ;;
    upstream)
      for f in "${FILES[@]}"; do
        /usr/bin/time -a -o "$WORK/times" -f "%U %S %M" "$TRACE_PROCESSOR" -q "$WORK/cpu.sql" "$f" \
          >>"$out" 2>"$WORK/err" || { cat "$WORK/err" >&2; bench_die "trace_processor_shell $f failed"; }
      done ;;
  esac
  end=$(date +%s.%N)
  awk -v s="$start" -v e="$end" -v n="${#FILES[@]}" '
    { cpu += $1 + $2; if ($3 > rss) rss = $3 }
    END { w = e - s; printf "%7.2f %7.1f %7.2f %7.0f", w, n / w, cpu, rss / 1024 }' "$WORK/times"
}

# dir's rows are each's under a trace column, in the order of the files.
check_dir_against_each() {
  local expected=$WORK/expected f
  printf 'trace,upid,pid,name,cpu_ns\r\n' > "$expected"
  for f in "${FILES[@]}"; do
    "$SLUICE" query "$f" -f "$WORK/cpu.sql" --format csv | tail -n +2 | sed "s|^|$f,|"
  done >> "$expected"
  cmp -s "$expected" "$WORK/dir.out" || bench_die "sluice query DIR's rows differ from the per-trace runs' ($expected)"
  echo "check: sluice query DIR's $(($(wc -l < "$WORK/dir.out") - 1)) rows are the per-trace runs' under a trace column"
}

printf '%-9s %3s %7s %7s %7s %7s  %s\n' tool rep wall_s trace/s cpu_s rss_mb load
for rep in $(seq 1 "$REPS"); do
  for tool in dir dir-j1 each upstream; do
    load=$(cut -d' ' -f1 /proc/loadavg)
    line=$(one $tool) || exit 1
    printf '%-9s %3d %s  %s\n' "$tool" "$rep" "$line" "$load"
    echo "$tool $line" >> "$WORK/all"
  done
  [ "$rep" = 1 ] && check_dir_against_each
done
awk '
  { wall[$1] = wall[$1] " " $2; cpu[$1] = cpu[$1] " " $4 }
  function median(list,   n, v, i, j, t) {
    n = split(list, v, " ")
    for (i = 1; i <= n; i++) for (j = i + 1; j <= n; j++) if (v[j] < v[i]) { t = v[i]; v[i] = v[j]; v[j] = t }
    return n % 2 ? v[(n + 1) / 2] : (v[n / 2] + v[n / 2 + 1]) / 2
  }
  END {
    for (t in wall) { mw[t] = median(wall[t]); mc[t] = median(cpu[t]) }
    printf "medians of %d runs, %d traces:\n", reps, n
    printf "%-9s %7s %7s %7s\n", "tool", "wall_s", "trace/s", "cpu_s"
    split("dir dir-j1 each upstream", order, " ")
    for (i = 1; i <= 4; i++) { t = order[i]; printf "%-9s %7.2f %7.1f %7.2f\n", t, mw[t], n / mw[t], mc[t] }
    printf "dir is %.2fx faster than each, %.2fx faster than upstream (wall); -j 1 %.2fx slower than dir\n",
      mw["each"] / mw["dir"], mw["upstream"] / mw["dir"], mw["dir-j1"] / mw["dir"]
  }' n="${#FILES[@]}" reps="$REPS" "$WORK/all"
