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
# The machine it was recorded on has no cpufreq: a copy of the trace gets
# a cpu_frequency event per CPU every 10 ms (a packet appended, the same
# for both tools), so that the frequency-weighted queries have work to do.
#
# Per tool and repetition (tools alternate, so load drifts hit both), runs
# of the tool from scratch, each importing the trace:
#   import    `select 1`: the import alone
#   cpu       select utid, sum(dur) from sched group by utid
#   latency   runnable time before running, per thread (the thread_state
#             side of a scheduling-latency question)
# and PerfettoSQL, each as upstream's docs write it:
#   time_in_state  sched.time_in_state: sched_time_in_state_for_thread
#   utilization    linux.cpu.utilization.system: cpu_utilization_per_second
#                  and cpu_cycles (every slice cut at frequency changes)
#   sched_latency  sched.latency: sched_latency_for_running_interval
#   span_join      the docs' SPAN_JOIN of sched and CPU frequency
# QUERIES="import cpu" picks some.
# Reported: wall and CPU (user+sys) seconds and peak RSS of the whole run
# (/usr/bin/time), and the query's own time as the tool reports it
# (trace_processor_shell: "Query execution time", wall; sluice query
# --timing: the whole script's wall and, in parentheses, its CPU time).
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

. "$(dirname "$0")/bench_common.sh"
bench_record_sched_10m "$SLUICE" "$TRACE"
EVENTS=$("$SLUICE" stats "$TRACE" | sed -n 's/.*bytes, \([0-9]*\) ftrace events.*/\1/p')
echo "trace: $TRACE ($(stat -c %s "$TRACE") bytes, ${EVENTS:-?} ftrace events)"

# The copy with cpu_frequency events appended.
bounds=$("$SLUICE" query "$TRACE" -q "select trace_start(), trace_end(), (select count(*) from cpu)" --format csv |
  tail -n 1 | tr -d '\r')
IFS=, read -r start_ns end_ns cpus <<<"$bounds"
python3 - "$start_ns" "$end_ns" "$cpus" >"$WORK/freq.textproto" <<'PY'
import sys
start, end, cpus = (int(x) for x in sys.argv[1:4])
steps = [1200000, 1800000, 2400000, 3000000]
print("packet { trusted_packet_sequence_id: 99 ftrace_events { cpu: 0")
for i, ts in enumerate(range(start, end, 10_000_000)):
    for cpu in range(cpus):
        print(f"  event {{ timestamp: {ts} pid: 0 cpu_frequency {{ state: {steps[(i + cpu) % 4]} cpu_id: {cpu} }} }}")
print("} }")
PY
protoc -Iprotos --encode=perfetto.protos.Trace perfetto/trace/trace.proto <"$WORK/freq.textproto" >"$WORK/freq.pb" ||
  die "cannot encode the cpu_frequency packet (protoc)"
FREQ_TRACE="$WORK/with-cpufreq.pftrace"
cat "$TRACE" "$WORK/freq.pb" >"$FREQ_TRACE"
echo "with cpufreq: $FREQ_TRACE (+$(grep -c cpu_frequency "$WORK/freq.textproto") cpu_frequency events)"

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

cat > "$WORK/time_in_state.sql" <<'SQL'
INCLUDE PERFETTO MODULE sched.time_in_state;
select count(*) as rows, sum(time_in_state) as ns from sched_time_in_state_for_thread;
SQL
cat > "$WORK/utilization.sql" <<'SQL'
INCLUDE PERFETTO MODULE linux.cpu.utilization.system;
select (select count(*) from cpu_utilization_per_second) as seconds,
  (select sum(utilization) from cpu_utilization_per_second) as utilization,
  (select megacycles from cpu_cycles) as megacycles;
SQL
cat > "$WORK/sched_latency.sql" <<'SQL'
INCLUDE PERFETTO MODULE sched.latency;
select count(*) as rows, sum(latency_dur) as ns from sched_latency_for_running_interval;
SQL
cat > "$WORK/span_join.sql" <<'SQL'
create view sp_sched as select ts, dur, cpu, utid from sched where dur > 0;
create view sp_frequency as
  select ts, lead(ts, 1, trace_end()) over (partition by track_id order by ts) - ts as dur, cpu, value as freq
  from counter join cpu_counter_track on counter.track_id = cpu_counter_track.id
  where cpu_counter_track.name = 'cpufreq';
create virtual table sched_with_frequency using span_join(sp_sched partitioned cpu, sp_frequency partitioned cpu);
select count(*) as rows, sum(dur) as ns, sum(dur * freq) / 1e9 as kcycles from sched_with_frequency;
SQL

# The frequency queries read the copy with cpu_frequency events.
trace_for() { case $1 in utilization|span_join) echo "$FREQ_TRACE" ;; *) echo "$TRACE" ;; esac; }

# one TOOL QUERY -> "wall cpu rss_mb query_ms"
one() {
  local tool=$1 query=$2 out="$WORK/out" err="$WORK/err"
  if [ "$tool" = sluice ]; then
    /usr/bin/time -o "$WORK/time" -f "%e %U %S %M" "$SLUICE" query "$(trace_for "$query")" -f "$WORK/$query.sql" \
      --timing --format csv >"$out" 2>"$err" || { cat "$err" >&2; die "sluice query failed"; }
    qms=$(sed -n 's/.*script: \([0-9.]*\) ms (\([0-9.]*\) ms CPU).*/\1 (cpu \2)/p' "$err" | tail -n 1)
  else
    /usr/bin/time -o "$WORK/time" -f "%e %U %S %M" "$TRACE_PROCESSOR" -q "$WORK/$query.sql" "$(trace_for "$query")" \
      >"$out" 2>"$err" || { cat "$err" >&2; die "trace_processor_shell failed"; }
    qms=$(sed -n 's/.*Query execution time: \([0-9.]*\) ms.*/\1/p' "$err" | tail -n 1)
  fi
  read -r wall user sys rss_kb < "$WORK/time"
  awk -v w="$wall" -v u="$user" -v s="$sys" -v r="$rss_kb" -v q="${qms:-?}" \
    'BEGIN { printf "%6.2f %6.2f %7.0f  %s", w, u + s, r / 1024, q }'
}

printf '%-22s %-8s %3s %6s %6s %7s  %s\n' tool run rep wall_s cpu_s rss_mb query_ms
for rep in $(seq 1 "$REPS"); do
  for query in ${QUERIES:-import cpu latency time_in_state utilization sched_latency span_join}; do
    for tool in sluice trace_processor; do
      printf '%-22s %-8s %3d %s\n' "$tool" "$query" "$rep" "$(one $tool $query)"
    done
  done
done
