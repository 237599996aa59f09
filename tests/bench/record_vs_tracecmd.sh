#!/bin/bash
# sluice record vs trace-cmd record on the same workload (root).
#
#   tests/bench/record_vs_tracecmd.sh            # from the project root
#   DURATION=10 REPS=5 RATES="moderate max" tests/bench/record_vs_tracecmd.sh   # the defaults
#   RATES=custom SWITCH="--switch 1 --switch-freq 320000" MARKER_RATE=20000 \
#     tests/bench/record_vs_tracecmd.sh                 # a workload of your own
#
# Workload (the same for every run of a rate): stress-ng's context-switch
# stressor (pipe ping-pong between processes: sched_switch + sched_waking) for
# DURATION seconds, plus a small C program writing MARKER_RATE numbered
# trace_marker lines per second (ftrace/print). The rates:
#   moderate  --switch 1 --switch-freq 40000, 10000 markers/s: about 0.1-0.2 M
#             events/s, what busy servers and phones produce
#   max       --switch 2 uncapped, 20000 markers/s: the most this machine makes
#   idle      --switch 1 --switch-freq 10, no markers: what a recorder costs
#             per unit of time when almost nothing is traced
#   custom    SWITCH and MARKER_RATE as given
# Runs, REPS times each, in turn (so a drift of the machine hits all alike):
#   none             the workload alone (tracefs untouched): its baseline speed
#   sluice-mapped    build/sluice record --ftrace-read=mapped -k 1mb
#                    sched/sched_switch sched/sched_waking ftrace/print
#                    (default compact_sched; plus the process_stats and
#                    system_info sources sluice record always adds)
#   sluice-splice    the same with --ftrace-read=splice
#   sluice           the same with sluice's default (auto)
#   trace-cmd        trace-cmd record -b 1024 -e sched:sched_switch -e sched:sched_waking
#                    (zstd at the end, its default; ftrace/print has no enable
#                    switch: trace_marker lines are recorded while tracing is on)
#   trace-cmd-nocomp the same with --compression none
# Every recorder starts 2 s before the workload and is stopped when the
# workload is done (sluice by SIGINT; trace-cmd by ending the `sleep` it
# records around), so a workload slowed by the recorder is still recorded
# to its end.
#
# Reported per run: events in the file and the achieved rate during the
# workload, events lost, the recorder's own CPU time (user+sys of the whole
# process tree, /usr/bin/time) per million events, file bytes per event, the
# recorder's peak resident memory (/usr/bin/time's %M: its largest process),
# the workload's bogo ops/s (stress-ng) and its slowdown against `none`, and
# for sluice the fullest its CPUs' kernel buffers were when a reader caught up
# (`sluice stats`' "ftrace buffer peak fill": how near the run came to a loss)
# and each of its threads' CPU time and wake-ups in the workload window.
# Events: sluice from `sluice stats`; trace-cmd from the per-CPU "read events"
# of `trace-cmd report --stat` (lost = overrun + commit overrun + dropped).
#
# trace-cmd 3.1.6 on this host: it insists on writing
# /proc/sys/kernel/ftrace_enabled and on resetting set_ftrace_filter /
# set_ftrace_notrace / set_ftrace_pid at exit, and the kernel refuses those
# writes (EPERM: function tracing is locked here). trace-cmd then dies after
# recording. We run it in a private mount namespace with /dev/null
# bind-mounted over those files, which changes nothing it records.
#
# tracefs (tracing_on, buffer_size_kb, trace_clock, set_event) is saved at the
# start and put back after every run (trace-cmd leaves buffer_size_kb at its
# -b value). The root instance is used: do not run other tracers meanwhile.
set -u

DURATION=${DURATION:-10}
REPS=${REPS:-5}
RATES=${RATES:-moderate max}
KBUF_KB=${KBUF_KB:-1024}
BUILD_DIR=${BUILD_DIR:-build}
SLUICE=${SLUICE:-$BUILD_DIR/sluice}
MODES=${MODES:-none sluice-mapped sluice-splice trace-cmd trace-cmd-nocomp}
T=/sys/kernel/tracing
WORK=$(mktemp -d /tmp/sluice-bench.XXXXXX)

die() { echo "record_vs_tracecmd: $*" >&2; exit 1; }
[ "$(id -u)" = 0 ] || die "needs root (tracefs)"
[ -w $T/trace_marker ] || die "no tracefs at $T"
[ -x "$SLUICE" ] || die "$SLUICE not built: make $SLUICE"
for t in stress-ng trace-cmd /usr/bin/time unshare cc; do
  command -v $t >/dev/null || die "$t missing: apt-get install stress-ng trace-cmd time util-linux gcc"
done

# --- tracefs save / restore -------------------------------------------------
SAVED_ON=$(cat $T/tracing_on)
SAVED_KB=$(sed 's/.*expanded: \([0-9]*\).*/\1/' $T/buffer_size_kb)
SAVED_CLOCK=$(sed 's/.*\[\(.*\)\].*/\1/' $T/trace_clock)
cp $T/set_event "$WORK/set_event.saved"
restore_tracefs() {
  : > $T/set_event
  while read -r e; do [ -n "$e" ] && echo "$e" >> $T/set_event; done < "$WORK/set_event.saved"
  echo "$SAVED_CLOCK" > $T/trace_clock
  [ "$(cat $T/buffer_size_kb)" = "$SAVED_KB" ] || echo "$SAVED_KB" > $T/buffer_size_kb
  echo "$SAVED_ON" > $T/tracing_on
}
cleanup() { restore_tracefs; rm -rf "$WORK"; }
trap cleanup EXIT
trap 'exit 130' INT TERM

# --- the marker writer ------------------------------------------------------
cat > "$WORK/markers.c" <<'EOF'
// markers RATE SECONDS: writes RATE numbered trace_marker lines per second,
// in 1 ms batches, for SECONDS; prints how many it wrote.
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>
int main(int argc, char** argv) {
  long rate = atol(argv[1]), secs = atol(argv[2]);
  int fd = open("/sys/kernel/tracing/trace_marker", O_WRONLY);
  if (fd < 0) { perror("trace_marker"); return 1; }
  struct timespec next;
  clock_gettime(CLOCK_MONOTONIC, &next);
  long written = 0, per_ms = rate / 1000;
  char buf[64];
  for (long ms = 0; ms < secs * 1000; ms++) {
    for (long i = 0; i < per_ms; i++) {
      int n = snprintf(buf, sizeof(buf), "bench-marker %ld", written);
      if (write(fd, buf, n) == n) written++;
    }
    next.tv_nsec += 1000000;
    if (next.tv_nsec >= 1000000000) { next.tv_sec++; next.tv_nsec -= 1000000000; }
    clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &next, NULL);
  }
  printf("%ld\n", written);
  return 0;
}
EOF
cc -O2 -o "$WORK/markers" "$WORK/markers.c" || die "cannot compile the marker writer"

# trace-cmd's wrapper: see the header comment.
cat > "$WORK/tcwrap.sh" <<EOF
#!/bin/sh
for f in /proc/sys/kernel/ftrace_enabled $T/set_ftrace_filter $T/set_ftrace_notrace \\
         $T/set_ftrace_pid $T/set_ftrace_notrace_pid; do
  [ -e "\$f" ] && mount --bind /dev/null "\$f"
done
exec "\$@"
EOF
chmod +x "$WORK/tcwrap.sh"

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

# One line per thread of PID's process (the recorder's own threads, for
# sluice): TID, time on a CPU in ns and wake-ups (schedstat), name.
threads_of() {
  local t
  for t in /proc/"$1"/task/*; do
    echo "${t##*/} $(cut -d' ' -f1,3 "$t/schedstat" 2>/dev/null) $(cat "$t/comm" 2>/dev/null)"
  done
}

# stop_recorder MODE TIME_PID: the recorder is /usr/bin/time's child (time
# itself ignores SIGINT while it waits).
stop_recorder() {
  local recorder
  recorder=$(pgrep -P "$2" | head -1)
  [ -n "$recorder" ] || return 0
  case $1 in
    sluice*) kill -INT "$recorder" ;;
    trace-cmd*) pkill -INT -x sleep -P "$recorder" ;;
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
    trace-cmd-nocomp) compression=(--compression none) ;;
  esac
  case $mode in
    sluice*)
      /usr/bin/time -f "%e %U %S %M" -o "$dir/time" \
        "$SLUICE" record "${read_mode[@]}" -o "$dir/trace.pftrace" -t ${rec_secs}s -k ${KBUF_KB}kb -q \
        sched/sched_switch sched/sched_waking ftrace/print >"$dir/rec.out" 2>"$dir/rec.err" &
      rec_pid=$! ;;
    trace-cmd*)
      /usr/bin/time -f "%e %U %S %M" -o "$dir/time" \
        unshare --mount --propagation private "$WORK/tcwrap.sh" \
        trace-cmd record "${compression[@]}" -b $KBUF_KB -e sched:sched_switch -e sched:sched_waking \
        -o "$dir/trace.dat" sleep $rec_secs >"$dir/rec.out" 2>"$dir/rec.err" &
      rec_pid=$! ;;
  esac
  sleep 2
  local ctxt0 ctxt1 win0=0 win1=0
  [ -n "$rec_pid" ] && win0=$(tree_cpu_ns $rec_pid)
  # sluice's threads are the recorder's (time's child) own.
  local sluice_pid=
  case $mode in sluice*) sluice_pid=$(pgrep -P "$rec_pid" | head -1) ;; esac
  [ -n "$sluice_pid" ] && threads_of "$sluice_pid" >"$dir/threads0"
  ctxt0=$(awk '/^ctxt/{print $2}' /proc/stat)
  "$WORK/markers" $MARKER_RATE $DURATION >"$dir/markers.out" 2>&1 &
  local mk_pid=$!
  # shellcheck disable=SC2086
  stress-ng $SWITCH -t ${DURATION}s --metrics-brief >"$dir/stress.out" 2>&1
  wait $mk_pid
  ctxt1=$(awk '/^ctxt/{print $2}' /proc/stat)
  [ -n "$rec_pid" ] && win1=$(tree_cpu_ns $rec_pid)
  [ -n "$sluice_pid" ] && threads_of "$sluice_pid" >"$dir/threads1"
  local rec_rc=0
  if [ -n "$rec_pid" ]; then
    stop_recorder $mode $rec_pid
    wait $rec_pid; rec_rc=$?
  fi
  local bogo bogo_cpu
  bogo=$(awk '/metrc:.* switch +[0-9]/{print $(NF-1); exit}' "$dir/stress.out")
  bogo_cpu=$(awk '/metrc:.* switch +[0-9]/{print $NF; exit}' "$dir/stress.out")
  local ctxt_rate=$(( (ctxt1 - ctxt0) / DURATION ))
  local events=0 lost=0 bytes=0 raw=0 u=0 s=0 elapsed=0 rss_kb=0 peak=
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
      -v u=${u:-0} -v s=${s:-0} -v win_ns=$(( win1 - win0 )) -v dur=$DURATION \
      -v bogo=${bogo:-0} -v bogo_cpu=${bogo_cpu:-0} -v rc=$rec_rc -v rss=${rss_kb:-0} -v ctxt=$ctxt_rate -v mk="$(cat "$dir/markers.out")" \
      -v peak="$peak" -v threads="$threads" 'BEGIN {
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

set_rate() {
  case $1 in
    moderate) SWITCH="--switch 1 --switch-freq 40000"; MARKER_RATE=10000 ;;
    max) SWITCH="--switch 2"; MARKER_RATE=20000 ;;
    idle) SWITCH="--switch 1 --switch-freq 10"; MARKER_RATE=0 ;;
    custom) SWITCH=${SWITCH:?RATES=custom needs SWITCH}; MARKER_RATE=${MARKER_RATE:-20000} ;;
    *) die "unknown rate $1 (moderate, max, idle, custom)" ;;
  esac
}

echo "# $(date -u +%FT%TZ)  $(uname -r)  $(nproc) CPUs  load: $(cut -d' ' -f1-3 /proc/loadavg)"
for rate in $RATES; do
  set_rate "$rate"
  : > "$WORK/results"
  echo "# rate $rate: stress-ng $SWITCH -t ${DURATION}s + $MARKER_RATE markers/s; kernel buffer ${KBUF_KB} KiB/CPU"
  for rep in $(seq 1 "$REPS"); do
    for mode in $MODES; do
      run "$mode" "$rep" | tee -a "$WORK/results"
    done
  done
  echo "# load at the end: $(cut -d' ' -f1-3 /proc/loadavg)"
  MEDIANS_OF="$rate" print_medians "$WORK/results"
done
