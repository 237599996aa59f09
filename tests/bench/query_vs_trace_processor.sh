#!/bin/bash
# sluice query vs upstream Perfetto's trace_processor_shell on the same trace,
# side by side in one run.
#
#   tests/bench/query_vs_trace_processor.sh                 # from the project root
#   TRACE=my.pftrace REPS=3 tests/bench/query_vs_trace_processor.sh
#
# The trace: TRACE, or (default) build/bench/sched-10m.pftrace, recorded here
# when missing (root, tracefs) by sluice under the record bench's workload
# made heavier: stress-ng's context-switch stressor, two pipe ping-pong pairs
# uncapped, for 11 s, recording sched_switch, sched_waking and ftrace/print
# with compact_sched (about 1 M events/s on a 2-CPU machine: >= 10 M events).
#
# Per tool and repetition (tools alternate, so load drifts hit both), three
# runs of the tool from scratch, each importing the trace:
#   import    `select 1`: the import alone
#   cpu       select utid, sum(dur) from sched group by utid
#   latency   runnable time before running, per thread (the thread_state
#             side of a scheduling-latency question)
# Reported: wall and CPU (user+sys) seconds and peak RSS of the whole run
# (/usr/bin/time), and the query's own time as the tool reports it
# (trace_processor_shell: "Query execution time", wall; sluice query
# --timing: wall and, in parentheses, the query's CPU time).
set -u

REPS=${REPS:-3}
BUILD_DIR=${BUILD_DIR:-build}
SLUICE=${SLUICE:-$BUILD_DIR/sluice}
TRACE_PROCESSOR=${TRACE_PROCESSOR:-../shared/tools/perfetto/trace_processor_shell}
TRACE=${TRACE:-$BUILD_DIR/bench/sched-10m.pftrace}
WORK=$(mktemp -d /tmp/sluice-query-bench.XXXXXX)
trap 'rm -rf "$WORK"' EXIT

die() { echo "query_vs_trace_processor: $*" >&2; exit 1; }
[ -x "$SLUICE" ] || die "$SLUICE not built: make $SLUICE"
[ -x "$TRACE_PROCESSOR" ] || die "no trace_processor_shell at $TRACE_PROCESSOR: set TRACE_PROCESSOR"
[ -x /usr/bin/time ] || die "/usr/bin/time missing: apt-get install time"

if [ ! -s "$TRACE" ]; then
  [ "$(id -u)" = 0 ] || die "$TRACE missing and recording it needs root (tracefs)"
  command -v stress-ng >/dev/null || die "stress-ng missing: apt-get install stress-ng"
  mkdir -p "$(dirname "$TRACE")"
  echo "recording $TRACE (sluice record, stress-ng --switch 2 for 11 s)"
  ( sleep 1; stress-ng --switch 2 --timeout 11 --quiet ) &
  "$SLUICE" record -q -o "$TRACE" -t 13s -k 16mb -b 256mb \
    sched/sched_switch sched/sched_waking ftrace/print || die "recording failed"
  wait
fi
EVENTS=$("$SLUICE" stats "$TRACE" | sed -n 's/.*bytes, \([0-9]*\) ftrace events.*/\1/p')
echo "trace: $TRACE ($(stat -c %s "$TRACE") bytes, ${EVENTS:-?} ftrace events)"

cat > "$WORK/import.sql" <<'SQL'
select 1;
SQL
cat > "$WORK/cpu.sql" <<'SQL'
select utid, sum(dur) as cpu_ns from sched group by utid order by cpu_ns desc limit 10;
SQL
cat > "$WORK/latency.sql" <<'SQL'
select t.tid, t.name, r.waits, r.avg_ns, r.max_ns
from (select utid, count(*) as waits, avg(dur) as avg_ns, max(dur) as max_ns
      from thread_state where state in ('R', 'R+') group by utid) r
join thread t using(utid)
order by r.max_ns desc limit 10;
SQL

# one TOOL QUERY -> "wall cpu rss_mb query_ms"
one() {
  local tool=$1 query=$2 out="$WORK/out" err="$WORK/err"
  if [ "$tool" = sluice ]; then
    /usr/bin/time -o "$WORK/time" -f "%e %U %S %M" "$SLUICE" query "$TRACE" -f "$WORK/$query.sql" \
      --timing --format csv >"$out" 2>"$err" || { cat "$err" >&2; die "sluice query failed"; }
    qms=$(sed -n 's/.*query: \([0-9.]*\) ms (\([0-9.]*\) ms CPU).*/\1 (cpu \2)/p' "$err" | tail -n 1)
  else
    /usr/bin/time -o "$WORK/time" -f "%e %U %S %M" "$TRACE_PROCESSOR" -q "$WORK/$query.sql" "$TRACE" \
      >"$out" 2>"$err" || { cat "$err" >&2; die "trace_processor_shell failed"; }
    qms=$(sed -n 's/.*Query execution time: \([0-9.]*\) ms.*/\1/p' "$err" | tail -n 1)
  fi
  read -r wall user sys rss_kb < "$WORK/time"
  awk -v w="$wall" -v u="$user" -v s="$sys" -v r="$rss_kb" -v q="${qms:-?}" \
    'BEGIN { printf "%6.2f %6.2f %7.0f  %s", w, u + s, r / 1024, q }'
}

printf '%-22s %-8s %3s %6s %6s %7s  %s\n' tool run rep wall_s cpu_s rss_mb query_ms
for rep in $(seq 1 "$REPS"); do
  for query in import cpu latency; do
    for tool in sluice trace_processor; do
      printf '%-22s %-8s %3d %s\n' "$tool" "$query" "$rep" "$(one $tool $query)"
    done
  done
done
