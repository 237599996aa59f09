#!/bin/bash
# sluice record vs trace-cmd record vs upstream Perfetto on the same
# workload (root).
#
#   tests/bench/record_vs_tracecmd.sh            # from the project root
#   DURATION=10 REPS=5 RATES="moderate max" tests/bench/record_vs_tracecmd.sh   # the defaults
#   RATES="moderate markers" MODES="sluice trace-cmd perfetto" tests/bench/record_vs_tracecmd.sh
#   RATES=custom SWITCH="--switch 1 --switch-freq 320000" MARKER_RATE=20000 \
#     tests/bench/record_vs_tracecmd.sh                 # a workload of your own
#
# Workload (the same for every run of a rate): stress-ng's context-switch
# stressor (pipe ping-pong between processes: sched_switch + sched_waking,
# and sched_wakeup where it is recorded) plus a small C program writing
# trace_marker lines (ftrace/print). The rates (mixes):
#   moderate  --switch 1 --switch-freq 40000 for DURATION s, 10000 numbered
#             markers/s: about 0.1-0.2 M events/s, what busy servers and
#             phones produce
#   max       --switch 2 uncapped for DURATION s, 20000 markers/s: the most
#             this machine makes
#   idle      --switch 1 --switch-freq 10 for DURATION s, no markers: what a
#             recorder costs per unit of time when almost nothing is traced
#   markers   --switch 2 --switch-ops 500000: a fixed amount of work, not
#             DURATION; the workload ends when the ops are done and the
#             markers written. During it MARKER_PAIRS (100000) atrace-style
#             slices, "B|pid|name" then "E|pid" as atrace and Perfetto's SDK
#             write them, at MARKER_RATE (100000) lines/s: the 200 k lines
#             take 2 s, less than the stressor's run on this 2-CPU machine
#             (4-5 s with a recorder), so all are written during it. Every
#             recorder records sched/sched_wakeup too in this mix. Its rates
#             per second divide by the workload's measured time.
#   custom    SWITCH and MARKER_RATE as given, for DURATION s
# Runs, REPS times each, in turn (so a drift of the machine hits all alike):
#   none             the workload alone (tracefs untouched): its baseline speed
#   sluice-mapped    build/sluice record --ftrace-read=mapped -k 1mb
#                    sched/sched_switch sched/sched_waking ftrace/print
#                    (default compact_sched; plus the process_stats and
#                    system_info sources sluice record always adds; its
#                    64 MiB central buffer is streamed into the file every
#                    second)
#   sluice-splice    the same with --ftrace-read=splice
#   sluice           the same with sluice's default (auto)
#   sluice-zstd      sluice (auto) with --compress zstd: the file written as
#                    zstd_compressed_packets (level 3) as it streams
#   sluice-zstdN     the same at zstd level N (--compress zstd:N), e.g.
#                    sluice-zstd9, sluice-zstd19
#   sluice-deflate   the same with --compress deflate
#   trace-cmd        trace-cmd record -b 1024 -e sched:sched_switch -e sched:sched_waking
#                    (zstd at the end, its default; ftrace/print has no enable
#                    switch: trace_marker lines are recorded while tracing is on)
#   trace-cmd-nocomp the same with --compression none
#   perfetto         upstream Perfetto from PERFETTO_DIR (default
#                    /work/shared/tools/perfetto): traced and traced_probes
#                    started for the run on private sockets in its directory
#                    (PERFETTO_PRODUCER_SOCK_NAME, PERFETTO_CONSUMER_SOCK_NAME
#                    for all three), then `perfetto --txt -c CONFIG -o FILE`
#                    with the config sluice record builds for the same events
#                    (perfetto_config below): linux.ftrace with compact_sched
#                    (upstream's default too) and buffer_size_kb KBUF_KB, plus
#                    linux.process_stats and linux.system_info; one 64 MiB
#                    RING_BUFFER central buffer written into the file every
#                    1000 ms (write_into_file), as sluice streams: both pay
#                    for writing the file while the workload runs, and the
#                    buffer need only hold a period. A ring, as in upstream's
#                    long_trace.cfg: DISCARD stops accepting data for good the
#                    first time the writer meets an unread chunk, which would
#                    lose the rest of the trace; a ring loses only what it
#                    overwrote. Either loss is counted.
# The default MODES are none, sluice-mapped, sluice-splice, sluice-zstd,
# trace-cmd and trace-cmd-nocomp, and perfetto where its programs run
# (otherwise a line says why it was left out).
# Every recorder starts 2 s before the workload and is stopped when the
# workload is done (sluice and the perfetto client by SIGINT: the client then
# flushes, disables the session and exits when traced has written the file;
# trace-cmd by ending the `sleep` it records around), so a workload slowed by
# the recorder is still recorded to its end.
#
# Reported per run: events in the file and the achieved rate during the
# workload, events lost, the recorder's own CPU time (user+sys of the whole
# process tree, /usr/bin/time; for perfetto traced + traced_probes + the
# client) per million events, and the same for the workload window alone
# (schedstat of the same trees), file bytes per event, the recorder's peak
# resident memory (/usr/bin/time's %M: its largest process; for perfetto
# each process's on the line below), the workload's bogo ops/s (stress-ng)
# and its slowdown against `none`, and for sluice the fullest its CPUs'
# kernel buffers were when a reader caught up (`sluice stats`' "ftrace buffer
# peak fill": how near the run came to a loss) and each of its threads' CPU
# time and wake-ups in the workload window.
# Events: sluice from `sluice stats`; trace-cmd from the per-CPU "read events"
# of `trace-cmd report --stat` (lost = overrun + commit overrun + dropped);
# perfetto from upstream's trace_processor_shell (the SQL is
# perfetto_counts.sql below). Its events are the ftrace_event rows of the
# recorded events (the importer expands compact_sched into rows there too)
# plus the compact events it keeps out of that table: each CPU's first
# switch, which has no prev_* to infer, and the wakings on a CPU before it
# (stats compact_sched_switch_skipped, compact_sched_waking_skipped). That
# equals the kernel's count of events read (ftrace_cpu_read_events_delta)
# when traced loses nothing (so it did in the runs that checked it, kernel
# losses or not). Its lost are the kernel's per-CPU overrun + commit
# overrun + dropped events over the trace (ftrace_cpu_*_delta: end minus
# start of traced_probes' FtraceStats, the counters trace-cmd's figure is
# made of) plus what the trace lost after the kernel: traced's central
# buffer's chunks overwritten before they were read or discarded (of up to
# 32 KiB; traced_buf_chunks_overwritten, _discarded) and packets a writer
# could not commit (traced_buf_trace_writer_packet_loss). Those are chunks
# and packets, not events: each is nonzero only on a real loss, and the line
# below the run's shows them apart.
#
# trace-cmd 3.1.6 on this host: it insists on writing
# /proc/sys/kernel/ftrace_enabled and on resetting set_ftrace_filter /
# set_ftrace_notrace / set_ftrace_pid at exit, and the kernel refuses those
# writes (EPERM: function tracing is locked here). trace-cmd then dies after
# recording. We run it in a private mount namespace with /dev/null
# bind-mounted over those files, which changes nothing it records.
#
# tracefs (tracing_on, buffer_size_kb, trace_clock, buffer_percent,
# set_event) is saved at the start and put back after every run (trace-cmd
# leaves buffer_size_kb at its -b; traced_probes leaves trace_clock at boot,
# buffer_size_kb at one page per CPU and every event off); a difference left
# is said on stderr. The root instance is used: do not run other tracers
# meanwhile.
set -u

DURATION=${DURATION:-10}
REPS=${REPS:-5}
RATES=${RATES:-moderate max}
KBUF_KB=${KBUF_KB:-1024}
BUILD_DIR=${BUILD_DIR:-build}
SLUICE=${SLUICE:-$BUILD_DIR/sluice}
PERFETTO_DIR=${PERFETTO_DIR:-/work/shared/tools/perfetto}
T=/sys/kernel/tracing

die() { echo "record_vs_tracecmd: $*" >&2; exit 1; }
[ "$(id -u)" = 0 ] || die "needs root (tracefs)"
[ -w $T/trace_marker ] || die "no tracefs at $T"
[ -x "$SLUICE" ] || die "$SLUICE not built: make $SLUICE"
for t in stress-ng trace-cmd /usr/bin/time unshare cc; do
  command -v $t >/dev/null || die "$t missing: apt-get install stress-ng trace-cmd time util-linux gcc"
done
# Why upstream Perfetto cannot run here, or nothing: its four programs must
# be there and run (they need libprotobuf32 and zlib1g).
perfetto_missing() {
  local b
  for b in traced traced_probes perfetto trace_processor_shell; do
    [ -x "$PERFETTO_DIR/$b" ] || { echo "no $PERFETTO_DIR/$b (PERFETTO_DIR)"; return; }
  done
  "$PERFETTO_DIR/perfetto" --version >/dev/null 2>&1 ||
    echo "$PERFETTO_DIR/perfetto does not run (libprotobuf32, zlib1g?)"
}
PERFETTO_MISSING=$(perfetto_missing)
if [ -z "${MODES:-}" ]; then
  MODES="none sluice-mapped sluice-splice sluice-zstd trace-cmd trace-cmd-nocomp"
  if [ -z "$PERFETTO_MISSING" ]; then MODES="$MODES perfetto"
  else echo "# perfetto left out: $PERFETTO_MISSING"; fi
fi
case " $MODES " in
  *" perfetto "*) [ -z "$PERFETTO_MISSING" ] || die "MODES has perfetto, but: $PERFETTO_MISSING" ;;
esac
WORK=$(mktemp -d /tmp/sluice-bench.XXXXXX)

# shellcheck source=tests/bench/bench_common.sh
. "$(dirname "$0")/bench_common.sh"
bench_save_tracefs
restore_tracefs() { bench_restore_tracefs; }
# An interrupted perfetto run's processes (pfwrap.sh lists them in the run's
# directory, and removes the list once it has ended them itself): ended by
# pid, if the pid is still theirs, before tracefs is put back.
stop_perfetto_leftovers() {
  local f p left=
  for f in "$WORK"/*/perfetto.pids; do
    [ -f "$f" ] || continue
    while read -r p; do
      case $(cat /proc/"$p"/comm 2>/dev/null) in
        traced|traced_probes|perfetto) kill -TERM "$p"; left="$left $p" ;;
      esac
    done < "$f"
  done
  for _ in $(seq 20); do
    for p in $left; do [ -d /proc/"$p" ] && { sleep 0.1; continue 2; }; done
    break
  done
}
cleanup() { stop_perfetto_leftovers; restore_tracefs; rm -rf "$WORK"; }
trap cleanup EXIT
trap 'exit 130' INT TERM

# --- the marker writer ------------------------------------------------------
cat > "$WORK/markers.c" <<'EOF'
// markers RATE SECONDS: writes RATE numbered trace_marker lines per second
// ("bench-marker N") for SECONDS.
// markers -p PAIRS RATE: writes PAIRS atrace-style slices, "B|pid|name" then
// "E|pid" (2 * PAIRS lines), at RATE lines per second; 0: as fast as it can.
// Lines go out in 1 ms batches, each catching up to RATE * the time since
// the start. Prints how many lines it wrote.
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
int main(int argc, char** argv) {
  int pairs = argc == 4 && strcmp(argv[1], "-p") == 0;
  if (!pairs && argc != 3) {
    fprintf(stderr, "usage: markers RATE SECONDS | markers -p PAIRS RATE\n");
    return 2;
  }
  long rate = atol(argv[pairs ? 3 : 1]);
  long lines = pairs ? 2 * atol(argv[2]) : -1;        // -1: bounded by time
  long limit_ms = pairs ? -1 : atol(argv[2]) * 1000;  // -1: bounded by lines
  int fd = open("/sys/kernel/tracing/trace_marker", O_WRONLY);
  if (fd < 0) { perror("trace_marker"); return 1; }
  struct timespec next;
  clock_gettime(CLOCK_MONOTONIC, &next);
  long tried = 0, written = 0;
  int pid = getpid();
  char buf[64];
  for (long ms = 0; limit_ms < 0 || ms < limit_ms; ms++) {
    long due = pairs && rate == 0 ? lines : rate * (ms + 1) / 1000;
    if (lines >= 0 && due > lines) due = lines;
    for (; tried < due; tried++) {
      int n = !pairs          ? snprintf(buf, sizeof(buf), "bench-marker %ld", written)
              : tried % 2 == 0 ? snprintf(buf, sizeof(buf), "B|%d|bench-slice %ld", pid, tried / 2)
                               : snprintf(buf, sizeof(buf), "E|%d", pid);
      if (write(fd, buf, n) == n) written++;
    }
    if (lines >= 0 && tried >= lines) break;
    next.tv_nsec += 1000000;
    if (next.tv_nsec >= 1000000000) { next.tv_sec++; next.tv_nsec -= 1000000000; }
    clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &next, NULL);
  }
  printf("%ld\n", written);
  return 0;
}
EOF
cc -O2 -o "$WORK/markers" "$WORK/markers.c" || die "cannot compile the marker writer"

bench_make_tcwrap

# --- upstream Perfetto --------------------------------------------------------
# pfwrap.sh PERFETTO_DIR DIR CONFIG OUT: traced and traced_probes on private
# sockets in DIR (no other Perfetto on the machine is seen or disturbed),
# then the perfetto client recording CONFIG into OUT until it is sent SIGINT
# (its pid is the last line of DIR/perfetto.pids). When the client is done
# the daemons are ended and waited for, so that /usr/bin/time above this
# wrapper counts the CPU of all three.
cat > "$WORK/pfwrap.sh" <<'EOF'
#!/bin/bash
pd=$1 dir=$2 cfg=$3 out=$4
export PERFETTO_PRODUCER_SOCK_NAME=$dir/producer.sock PERFETTO_CONSUMER_SOCK_NAME=$dir/consumer.sock
"$pd/traced" >"$dir/traced.log" 2>&1 &
traced=$!
echo $traced > "$dir/perfetto.pids"
for _ in $(seq 100); do [ -S "$dir/producer.sock" ] && [ -S "$dir/consumer.sock" ] && break; sleep 0.05; done
"$pd/traced_probes" >"$dir/traced_probes.log" 2>&1 &
probes=$!
echo $probes >> "$dir/perfetto.pids"
# Its data sources registered before the session starts: upstream logs this
# once connected (without the line the client starts after 5 s anyway).
for _ in $(seq 100); do grep -q "Connected to the service" "$dir/traced_probes.log" && break; sleep 0.05; done
"$pd/perfetto" --txt -c "$cfg" -o "$out" >"$dir/perfetto.log" 2>&1 &
client=$!
echo $client >> "$dir/perfetto.pids"
wait $client
rc=$?
kill -TERM $probes $traced 2>/dev/null
wait $probes $traced
rm -f "$dir/perfetto.pids"
exit $rc
EOF
chmod +x "$WORK/pfwrap.sh"

# perfetto_config EVENTS...: the TraceConfig sluice record builds from
# `-k KBUF_KB EVENTS` (user/cmd/record_config.cc: compact_sched,
# process_stats with the scan at start and thread names, system_info,
# streamed into the file every second through its default 64 MiB ring), in
# text for upstream's client. No flush_period_ms: by default upstream flushes
# the data sources before each periodic write (v58: write_flush_mode AUTO,
# which then ignores flush_period_ms), as sluice's flush_period_ms does at
# the same period.
perfetto_config() {
  local e
  echo 'buffers { size_kb: 65536 fill_policy: RING_BUFFER }'
  echo 'data_sources { config { name: "linux.ftrace" ftrace_config {'
  for e in "$@"; do echo "  ftrace_events: \"$e\""; done
  echo '  compact_sched { enabled: true }'
  echo "  buffer_size_kb: $KBUF_KB"
  echo '} } }'
  echo 'data_sources { config { name: "linux.process_stats" process_stats_config {'
  echo '  scan_all_processes_on_start: true record_thread_names: true } } }'
  echo 'data_sources { config { name: "linux.system_info" } }'
  echo "duration_ms: $(( (DURATION + 600) * 1000 ))"
  echo 'write_into_file: true'
  echo 'file_write_period_ms: 1000'
}

# What upstream's trace processor counts in a perfetto run's trace, as CSV
# rows "key","value" (pf_count reads them).
cat > "$WORK/perfetto_counts.sql" <<'EOF'
-- events: every kept event of the recorded kinds. ftrace_event (the old raw
-- table) has a row per full event and per compact_sched switch and waking,
-- except the compact ones the importer cannot place: each CPU's first switch
-- (no prev_* to infer from) and the wakings on a CPU before it. Those are in
-- the file too, and two stats count them.
select 'events' as key,
  (select count(*) from ftrace_event
   where name in ('sched_switch', 'sched_waking', 'sched_wakeup', 'print'))
  + (select coalesce(sum(value), 0) from stats
     where name in ('compact_sched_switch_skipped', 'compact_sched_waking_skipped')) as value
-- The kernel's count of events read out of its buffers (per CPU, end minus
-- start): the events above when nothing is lost after the kernel.
union all select 'read_events', (select coalesce(sum(value), 0) from stats
  where name = 'ftrace_cpu_read_events_delta')
-- Events the kernel lost (per CPU, end minus start): overwritten before they
-- were read, lost in a commit race, dropped on a full buffer. trace-cmd's
-- "lost" is the same three counters.
union all select 'kernel_lost', (select coalesce(sum(value), 0) from stats
  where name in ('ftrace_cpu_overrun_delta', 'ftrace_cpu_commit_overrun_delta',
                 'ftrace_cpu_dropped_events_delta'))
-- What traced's central buffer lost: chunks overwritten before they were
-- read (RING_BUFFER) or refused (DISCARD), and packets a trace writer could
-- not commit (its shared memory was full).
union all select 'chunks_overwritten', (select coalesce(sum(value), 0) from stats
  where name = 'traced_buf_chunks_overwritten')
union all select 'chunks_discarded', (select coalesce(sum(value), 0) from stats
  where name = 'traced_buf_chunks_discarded')
union all select 'packets_lost', (select coalesce(sum(value), 0) from stats
  where name = 'traced_buf_trace_writer_packet_loss');
EOF
# pf_count KEY FILE: KEY's value in perfetto_counts.sql's output FILE.
pf_count() { awk -F, -v k="\"$1\"" '$1 == k { gsub(/"/, "", $2); print $2 + 0 }' "$2"; }

# --- one run ------------------------------------------------------------------
# CPU time in ns of PID and all its descendants, for the workload window:
# each live thread's time on a CPU (the first field of
# /proc/PID/task/TID/schedstat, the scheduler's own count in ns) plus the
# user+sys of children that ended and were reaped (cutime, cstime, in ticks),
# so that a helper ending inside the window is not taken off it. Ticks alone
# (/proc/PID/stat's utime and stime) were too coarse: a recorder's window at
# the moderate rate is 5-8 ticks of 10 ms, and a tick either way is 15%.
# The stat files come through cat, which skips one whose process ended
# after the glob: given it as a file, Debian's awk (mawk) stops there and
# prints nothing, which read as a window of 0 or less CPU on a machine that
# started and ended processes meanwhile.
tree_cpu_ns() {
  local reaped pids ns
  read -r reaped pids < <(cat /proc/[0-9]*/stat 2>/dev/null | awk -v root="$1" '
    { line = $0; pid = $1; sub(/^.*\) /, "", line); split(line, f, " ")
      ppid[pid] = f[2]; reaped_ticks[pid] = f[14] + f[15] }
    END {
      in_tree[root] = 1
      do { changed = 0
           for (p in ppid) if (!(p in in_tree) && (ppid[p] in in_tree)) { in_tree[p] = 1; changed = 1 }
      } while (changed)
      list = ""
      for (p in in_tree) { s += reaped_ticks[p]; list = list " " p }
      print s + 0 list
    }')
  ns=$(for p in $pids; do cat /proc/"$p"/task/*/schedstat 2>/dev/null; done |
       awk '{ s += $1 } END { printf "%.0f", s }')
  echo $(( ${ns:-0} + reaped * 1000000000 / HZ ))
}
HZ=$(getconf CLK_TCK)

# stop_recorder MODE TIME_PID DIR: the recorder is /usr/bin/time's child (time
# itself ignores SIGINT while it waits); for perfetto, the client under
# pfwrap.sh, which ends the session on SIGINT (a flush, then the session
# disabled, then its exit once traced has written the file).
stop_recorder() {
  local recorder
  recorder=$(pgrep -P "$2" | head -1)
  [ -n "$recorder" ] || return 0
  case $1 in
    sluice*) kill -INT "$recorder" ;;
    trace-cmd*) pkill -INT -x sleep -P "$recorder" ;;
    perfetto)
      recorder=$(sed -n 3p "$3/perfetto.pids" 2>/dev/null)
      [ -n "$recorder" ] && [ "$(cat /proc/"$recorder"/comm 2>/dev/null)" = perfetto ] &&
        kill -INT "$recorder" ;;
  esac
}

# run MODE REP -> one result line on stdout
run() {
  local mode=$1 rep=$2 dir="$WORK/$1-$2" rec_pid=
  mkdir -p "$dir"
  sync  # What earlier runs and other jobs wrote is on disk before this one starts.
  # A bound only: the recorder is stopped when the workload is done.
  local rec_secs=$((DURATION + 600))
  local read_mode=() compression=()
  case $mode in
    sluice-mapped) read_mode=(--ftrace-read=mapped) ;;
    sluice-splice) read_mode=(--ftrace-read=splice) ;;
    sluice-zstd) compression=(--compress zstd) ;;
    sluice-zstd[0-9]*) compression=(--compress "zstd:${mode#sluice-zstd}") ;;
    sluice-deflate) compression=(--compress deflate) ;;
    trace-cmd-nocomp) compression=(--compression none) ;;
  esac
  # The mix's events, as sluice and Perfetto name them and as trace-cmd's -e.
  local events_sl=(sched/sched_switch sched/sched_waking) events_tc=(-e sched:sched_switch -e sched:sched_waking)
  if [ "$WAKEUP" = 1 ]; then events_sl+=(sched/sched_wakeup); events_tc+=(-e sched:sched_wakeup); fi
  events_sl+=(ftrace/print)
  case $mode in
    sluice*)
      /usr/bin/time -f "%e %U %S %M" -o "$dir/time" \
        "$SLUICE" record "${read_mode[@]}" "${compression[@]}" -o "$dir/trace.pftrace" -t ${rec_secs}s -k ${KBUF_KB}kb -q \
        "${events_sl[@]}" >"$dir/rec.out" 2>"$dir/rec.err" &
      rec_pid=$! ;;
    trace-cmd*)
      /usr/bin/time -f "%e %U %S %M" -o "$dir/time" \
        unshare --mount --propagation private "$WORK/tcwrap.sh" \
        trace-cmd record "${compression[@]}" -b $KBUF_KB "${events_tc[@]}" \
        -o "$dir/trace.dat" sleep $rec_secs >"$dir/rec.out" 2>"$dir/rec.err" &
      rec_pid=$! ;;
    perfetto)
      perfetto_config "${events_sl[@]}" > "$dir/perfetto.cfg"
      /usr/bin/time -f "%e %U %S %M" -o "$dir/time" \
        "$WORK/pfwrap.sh" "$PERFETTO_DIR" "$dir" "$dir/perfetto.cfg" "$dir/trace.pftrace" \
        >"$dir/rec.out" 2>"$dir/rec.err" &
      rec_pid=$! ;;
  esac
  sleep 2
  local ctxt0 ctxt1 win0=0 win1=0 t0 t1
  [ -n "$rec_pid" ] && win0=$(tree_cpu_ns $rec_pid)
  # sluice's threads are the recorder's (time's child) own.
  local sluice_pid=
  case $mode in sluice*) sluice_pid=$(pgrep -P "$rec_pid" | head -1) ;; esac
  [ -n "$sluice_pid" ] && bench_threads_of "$sluice_pid" >"$dir/threads0"
  ctxt0=$(awk '/^ctxt/{print $2}' /proc/stat)
  t0=$(date +%s%N)
  if [ -n "$MARKER_PAIRS" ]; then
    "$WORK/markers" -p "$MARKER_PAIRS" "$MARKER_RATE" >"$dir/markers.out" 2>&1 &
  else
    "$WORK/markers" "$MARKER_RATE" "$DURATION" >"$dir/markers.out" 2>&1 &
  fi
  local mk_pid=$!
  # shellcheck disable=SC2086
  stress-ng $SWITCH $STRESS_TIME --metrics-brief >"$dir/stress.out" 2>&1
  wait $mk_pid
  t1=$(date +%s%N)
  ctxt1=$(awk '/^ctxt/{print $2}' /proc/stat)
  [ -n "$rec_pid" ] && win1=$(tree_cpu_ns $rec_pid)
  [ -n "$sluice_pid" ] && bench_threads_of "$sluice_pid" >"$dir/threads1"
  # Perfetto's processes' peak resident memory (VmHWM) so far, each.
  local pf_rss=
  if [ "$mode" = perfetto ] && [ -f "$dir/perfetto.pids" ]; then
    pf_rss=$(while read -r p; do
               awk -v c="$(cat /proc/"$p"/comm 2>/dev/null)" '/^VmHWM:/ { printf "%s %.0f MiB, ", c, $2 / 1024 }' \
                 /proc/"$p"/status 2>/dev/null
             done < "$dir/perfetto.pids" | sed 's/, $//')
  fi
  local rec_rc=0
  if [ -n "$rec_pid" ]; then
    stop_recorder $mode $rec_pid "$dir"
    wait $rec_pid; rec_rc=$?
  fi
  # Rates per second: over DURATION, or the time the workload took where its
  # end is its amount of work (the markers mix).
  local dur=$DURATION
  [ "$TIMED" = 1 ] || dur=$(awk -v ns=$(( t1 - t0 )) 'BEGIN { printf "%.3f", ns / 1e9 }')
  local bogo bogo_cpu
  bogo=$(awk '/metrc:.* switch +[0-9]/{print $(NF-1); exit}' "$dir/stress.out")
  bogo_cpu=$(awk '/metrc:.* switch +[0-9]/{print $NF; exit}' "$dir/stress.out")
  local ctxt_rate
  ctxt_rate=$(awk -v n=$(( ctxt1 - ctxt0 )) -v d="$dur" 'BEGIN { printf "%d", n / d }')
  local events=0 lost=0 bytes=0 raw=0 u=0 s=0 elapsed=0 rss_kb=0 peak='' pf=''
  case $mode in
    sluice*)
      "$SLUICE" stats "$dir/trace.pftrace" >"$dir/stats.out" 2>&1
      events=$(sed -n 's/.* \([0-9]*\) ftrace events.*/\1/p' "$dir/stats.out" | head -1)
      lost=$(sed -n 's/^data loss: \([0-9]*\).*/\1/p' "$dir/stats.out")
      # The fullest any CPU's kernel buffer was when its reader caught up.
      peak=$(sed -n 's/^ftrace buffer peak fill: \(.*\) (the most.*/\1/p' "$dir/stats.out" |
        tr ',' '\n' | sed -n 's/ *\([0-9]*\)%.*/\1/p' | sort -n | tail -1)
      bytes=$(stat -c %s "$dir/trace.pftrace") ;;
    trace-cmd*)
      trace-cmd report --stat -i "$dir/trace.dat" >"$dir/stats.out" 2>&1
      events=$(awk '/^read events:/{s+=$3} END{print s+0}' "$dir/stats.out")
      lost=$(awk '/^overrun:/{s+=$2} /^commit overrun:/{s+=$3} /^dropped events:/{s+=$3} END{print s+0}' "$dir/stats.out")
      bytes=$(stat -c %s "$dir/trace.dat")
      # trace-cmd 3.x compresses the per-CPU data at the end of the recording.
      raw=$(cat "$dir/rec.out" "$dir/rec.err" | sed -n 's/.*(\([0-9]*\) uncompressed).*/\1/p' | awk '{s+=$1} END{print s+0}') ;;
    perfetto)
      "$PERFETTO_DIR/trace_processor_shell" -q "$WORK/perfetto_counts.sql" "$dir/trace.pftrace" \
        >"$dir/stats.out" 2>"$dir/tp.err"
      events=$(pf_count events "$dir/stats.out")
      local kernel_lost over disc packets read_events
      kernel_lost=$(pf_count kernel_lost "$dir/stats.out")
      over=$(pf_count chunks_overwritten "$dir/stats.out")
      disc=$(pf_count chunks_discarded "$dir/stats.out")
      packets=$(pf_count packets_lost "$dir/stats.out")
      read_events=$(pf_count read_events "$dir/stats.out")
      lost=$(( ${kernel_lost:-0} + ${over:-0} + ${disc:-0} + ${packets:-0} ))
      pf="kernel lost ${kernel_lost:-?} events, traced's buffer ${over:-?} chunks overwritten + ${disc:-?} discarded + ${packets:-?} packets lost; the kernel read ${read_events:-?} events"
      [ -n "$pf_rss" ] && pf="$pf; peak RSS $pf_rss"
      [ -f "$dir/trace.pftrace" ] && bytes=$(stat -c %s "$dir/trace.pftrace") ;;
  esac
  [ -n "$rec_pid" ] && read -r elapsed u s rss_kb < "$dir/time"
  [ "${KEEP:-0}" = 1 ] && cp -r "$dir" /tmp/ 2>/dev/null
  # The run's trace goes now. Left in the page cache, the runs after it would
  # pay for its writeback: a max-rate trace-cmd-nocomp run writes 0.7 GB,
  # and with five of them kept the recorders' cost rose run after run.
  rm -f "$dir"/trace.*
  local threads=
  if [ -s "$dir/threads1" ]; then
    threads=$(awk 'NR == FNR { ns[$1] = $2; w[$1] = $3; next }
                   ($1 in ns) { printf "%s%s %.1f ms %d w", sep, $4, ($2 - ns[$1]) / 1e6, $3 - w[$1]; sep = ", " }' \
              "$dir/threads0" "$dir/threads1")
  fi
  awk -v mode=$mode -v rep=$rep -v ev=${events:-0} -v lost=${lost:-0} -v bytes=$bytes -v raw=$raw \
      -v u=${u:-0} -v s=${s:-0} -v win_ns=$(( win1 - win0 )) -v dur=$dur \
      -v bogo=${bogo:-0} -v bogo_cpu=${bogo_cpu:-0} -v rc=$rec_rc -v rss=${rss_kb:-0} -v ctxt=$ctxt_rate -v mk="$(cat "$dir/markers.out")" \
      -v peak="$peak" -v threads="$threads" -v pf="$pf" 'BEGIN {
    if (mode == "none") {
      printf "%-16s %d  ctxt/s %8d  markers %7s  bogo ops/s %10.0f  per-cpu-s %10.0f\n", mode, rep, ctxt, mk, bogo, bogo_cpu
      exit
    }
    cpu = u + s; wcpu = win_ns / 1e9
    printf "%-16s %d  ctxt/s %8d  markers %7s  bogo ops/s %10.0f  per-cpu-s %10.0f  events %9d (%.2f M/s)  lost %d  cpu %.2f s (workload window %.2f s) = %.3f s/M (window %.3f)  %.1f B/ev  rss %.0f MiB  rc %d\n",
      mode, rep, ctxt, mk, bogo, bogo_cpu, ev, ev / dur / 1e6, lost, cpu, wcpu, ev ? cpu / (ev / 1e6) : 0,
      ev ? wcpu / (ev / 1e6) : 0, ev ? bytes / ev : 0, rss / 1024, rc
    if (raw > 0 && ev) printf "          (trace-cmd data before its compression: %.1f B/ev)\n", raw / ev
    if (peak != "") printf "          (peak fill of the kernel buffers: %s%%)\n", peak
    if (threads != "") printf "          (threads in the window, CPU and wake-ups: %s)\n", threads
    if (pf != "") printf "          (perfetto: %s)\n", pf
  }'
  restore_tracefs
}

# Medians per mode, and the slowdown against `none` (the workload alone).
print_medians() {
awk -v rate="$MEDIANS_OF" '
  $1 ~ /^\(/ { next }
  { mode = $1
    for (i = 2; i <= NF; i++) {
      if ($i == "ops/s") bogo[mode, ++nb[mode]] = $(i + 1)
      if ($i == "ctxt/s") ctxt[mode, ++nx[mode]] = $(i + 1)
      if ($i == "per-cpu-s") bcpu[mode, ++nc[mode]] = $(i + 1)
      if ($i == "events") ev[mode, ++ne[mode]] = $(i + 1)
      if ($i == "lost") lost[mode, ++nl[mode]] = $(i + 1)
      if ($i == "s/M") spm[mode, ++ns[mode]] = $(i - 1)
      if ($i == "(window") { w = $(i + 1); sub(/\)/, "", w); wspm[mode, ++nw[mode]] = w }
      if ($i == "B/ev") bpe[mode, ++np[mode]] = $(i - 1)
    }
    modes[mode] = 1 }
  function median(arr, mode, n,   i, j, t, v) {
    for (i = 1; i <= n; i++) v[i] = arr[mode, i] + 0
    for (i = 1; i <= n; i++) for (j = i + 1; j <= n; j++) if (v[j] < v[i]) { t = v[i]; v[i] = v[j]; v[j] = t }
    return n ? (n % 2 ? v[(n + 1) / 2] : (v[n / 2] + v[n / 2 + 1]) / 2) : 0
  }
  END {
    base = median(bogo, "none", nb["none"]); cbase = median(bcpu, "none", nc["none"])
    print "# medians, rate " rate " (the machine with no tracer: " median(ctxt, "none", nx["none"]) " context switches/s)"
    for (m in modes) {
      b = median(bogo, m, nb[m]); c = median(bcpu, m, nc[m])
      if (m == "none") {
        printf "%-16s bogo ops/s %10.0f  per workload CPU s %10.0f\n", m, b, c
        continue
      }
      printf "%-16s bogo ops/s %10.0f (%+.1f%%)  per workload CPU s %10.0f (%+.1f%%)  events %9.0f  lost %d  %.3f CPU s per M events (%.3f in the workload window)  %.1f bytes/event\n",
        m, b, base ? 100 * (b - base) / base : 0, c, cbase ? 100 * (c - cbase) / cbase : 0,
        median(ev, m, ne[m]), median(lost, m, nl[m]), median(spm, m, ns[m]),
        median(wspm, m, nw[m]), median(bpe, m, np[m])
    }
  }' "$1"
}

# set_rate RATE: the mix's stressor (SWITCH, and STRESS_TIME: its time bound),
# markers (MARKER_RATE lines/s; MARKER_PAIRS B/E pairs, or numbered lines for
# DURATION if empty), whether sched_wakeup is recorded (WAKEUP) and whether
# the workload lasts DURATION (TIMED) or ends with its work.
set_rate() {
  MARKER_PAIRS='' WAKEUP=0 TIMED=1 STRESS_TIME="-t ${DURATION}s"
  case $1 in
    moderate) SWITCH="--switch 1 --switch-freq 40000"; MARKER_RATE=10000 ;;
    max) SWITCH="--switch 2"; MARKER_RATE=20000 ;;
    idle) SWITCH="--switch 1 --switch-freq 10"; MARKER_RATE=0 ;;
    markers)
      SWITCH="--switch 2 --switch-ops 500000"; MARKER_PAIRS=$ENV_MARKER_PAIRS
      MARKER_RATE=${ENV_MARKER_RATE:-100000}; WAKEUP=1; TIMED=0
      STRESS_TIME="-t 300s" ;;  # a bound only: the ops end it
    custom) SWITCH=${ENV_SWITCH:?RATES=custom needs SWITCH}; MARKER_RATE=${ENV_MARKER_RATE:-20000} ;;
    *) die "unknown rate $1 (moderate, max, idle, markers, custom)" ;;
  esac
}
# As given in the environment: set_rate's values must not leak into the
# next rate's.
ENV_SWITCH=${SWITCH:-} ENV_MARKER_RATE=${MARKER_RATE:-} ENV_MARKER_PAIRS=${MARKER_PAIRS:-100000}

echo "# $(date -u +%FT%TZ)  $(uname -r)  $(nproc) CPUs  load: $(cut -d' ' -f1-3 /proc/loadavg)"
for rate in $RATES; do
  set_rate "$rate"
  : > "$WORK/results"
  if [ "$TIMED" = 1 ]; then
    echo "# rate $rate: stress-ng $SWITCH -t ${DURATION}s + $MARKER_RATE markers/s; kernel buffer ${KBUF_KB} KiB/CPU"
  else
    echo "# rate $rate: stress-ng $SWITCH (until done) + $MARKER_PAIRS B/E marker pairs at $MARKER_RATE lines/s; sched_wakeup recorded too; kernel buffer ${KBUF_KB} KiB/CPU"
  fi
  for rep in $(seq 1 "$REPS"); do
    for mode in $MODES; do
      run "$mode" "$rep" | tee -a "$WORK/results"
    done
  done
  echo "# load at the end: $(cut -d' ' -f1-3 /proc/loadavg)"
  MEDIANS_OF="$rate" print_medians "$WORK/results"
done
