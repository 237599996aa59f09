#!/bin/bash
# What a recorder costs at rest: sluice (in a file, as a flight recorder, in
# process and through the daemons) against trace-cmd, on a machine doing
# nothing else (root).
#
#   tests/bench/at_rest.sh                      # from the project root
#   REPS=3 SETTLE=5 WINDOW=30 MODES="..." tests/bench/at_rest.sh   # the defaults
#   TOGETHER=1 SETTLE=830 WINDOW=600 tests/bench/at_rest.sh  # all at once
#   SLUICE_DIR=/tmp/before tests/bench/at_rest.sh   # another build's binaries
#   SLUICE_ARGS="--file-lag 5s" MODES=sluice-file ...  # more flush rounds, to
#                                                   # see what one costs
#
# With TOGETHER=1 the modes record at once, in one window: trace-cmd starts
# first, on the top-level buffer, and each sluice then takes an instance of
# its own (it does not share a buffer another process reads), so all see
# the same machine, its drift included, in one run's time; each one's
# wake-ups are a few more events for the others.
#
# Every recorder records sluice's default events (sched, task, power and
# print: `sluice record` without events) with 2 MiB kernel buffers per CPU,
# the default of both. For each mode in turn (REPS rounds, so that a drift of
# the machine hits all alike) the recorder starts, settles SETTLE seconds,
# and is then measured over WINDOW seconds before it is stopped:
#   - the CPU time of its process trees (sluiced and sluice-probes too for
#     the daemon modes): each thread's time on a CPU from
#     /proc/PID/task/TID/schedstat, the scheduler's own count in ns;
#   - each thread's wake-ups (schedstat's third field), per second;
#   - each thread's minor page faults (/proc/PID/task/TID/stat), per second:
#     a first touch of a page costs about 20 us on a virtualised machine, so
#     they tell whether first touches are part of a round's CPU;
#   - the machine's context switches (/proc/stat ctxt), its baseline, and
#     the pids it allocated (/proc/loadavg's last pid), processes and
#     threads a recorder that names them must look up;
#   - the events the kernel wrote meanwhile and the events the recorder read
#     (per_cpu/cpuN/stats: written is entries + overrun + read events). A
#     recorder that reads at the buffer's watermark may read nothing in a
#     window and pay for it after: compare CPU where both read alike, or per
#     event read. "all written" is the window's CPU per event read times the
#     events written in it: what reading every event the window wrote costs
#     a second, the long-run rate at rest. A window of a few minutes holds
#     one to three wake-ups a CPU, so its CPU moves by a third with where
#     they fell; this figure does not.
# and over the whole run, from start to exit, the CPU of every recorder
# process (the children's times of this shell, taken as each is reaped) and
# what of it came after the window ("after": the stop, and threads that
# ended before the window): trace-cmd writes per-CPU files while it records
# and merges (and compresses) them into its trace when it stops, work a
# window does not see; sluice writes its trace while it records. That CPU per
# second of the run ("over" its length) is the rate a recorder left on for a
# day costs, its stop included.
# Modes:
#   sluice-file         sluice record -o F -t 1h -q
#   sluice-ring         the same with --ring (the flight recorder)
#   sluice-daemon-file  sluiced + sluice-probes on private sockets, and
#                       sluice record --daemon -o F
#   sluice-daemon-ring  the same with --ring
#   trace-cmd           trace-cmd record -b 2048 -e (each event) -o F
# Printed: one line per run, then the medians per mode (CPU in the window and
# over the whole run), each sluice mode against trace-cmd in the same round,
# then the wake-ups, CPU and page faults per second of each thread (medians)
# for the sluice modes.
set -u

REPS=${REPS:-3}
SETTLE=${SETTLE:-5}
WINDOW=${WINDOW:-30}
BUILD_DIR=${BUILD_DIR:-build}
SLUICE_DIR=${SLUICE_DIR:-$BUILD_DIR}
MODES=${MODES:-sluice-file sluice-ring sluice-daemon-file sluice-daemon-ring trace-cmd}
T=/sys/kernel/tracing
# shellcheck source=tests/bench/bench_common.sh
. "$(dirname "$0")/bench_common.sh"

[ "$(id -u)" = 0 ] || bench_die "needs root (tracefs)"
[ -w $T/trace_marker ] || bench_die "no tracefs at $T"
for b in sluice sluiced sluice-probes; do
  [ -x "$SLUICE_DIR/$b" ] || bench_die "$SLUICE_DIR/$b not built: make $SLUICE_DIR/$b"
done
case " $MODES " in *" trace-cmd "*) command -v trace-cmd >/dev/null || bench_die "trace-cmd missing: apt-get install trace-cmd" ;; esac
# After the checks: a run that cannot start leaves no folder behind.
WORK=$(mktemp -d /tmp/sluice-at-rest.XXXXXX)

EVENTS="sched/sched_switch sched/sched_waking sched/sched_wakeup_new sched/sched_process_fork
sched/sched_process_exec sched/sched_process_exit sched/sched_process_free task/task_newtask
task/task_rename power/cpu_frequency power/cpu_idle"
TC_EVENTS=()
for e in $EVENTS; do TC_EVENTS+=(-e "${e/\//:}"); done

bench_save_tracefs
bench_make_tcwrap
DAEMON_PIDS=()
stop_daemons() {
  local p
  for p in "${DAEMON_PIDS[@]}"; do kill -TERM "$p" 2>/dev/null; done
  for p in "${DAEMON_PIDS[@]}"; do wait "$p" 2>/dev/null; done
  DAEMON_PIDS=()
}
# On an early exit: every recorder and daemon started (each start's
# subshell then ends), and tracefs as found.
cleanup() {
  local f pids _
  for f in "$WORK"/*/pids; do
    [ -e "$f" ] && read -r -a pids <"$f" && kill -TERM "${pids[@]}" 2>/dev/null
  done
  for _ in $(seq 100); do
    pgrep -f "$WORK/" >/dev/null || break
    sleep 0.1
  done
  bench_restore_tracefs
  rm -rf "$WORK"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# start_daemons DIR: sluiced and sluice-probes in the foreground on
# private sockets; returns once the probes registered.
start_daemons() {
  local dir=$1
  "$SLUICE_DIR/sluiced" --foreground --producer-socket "$dir/p.sock" --consumer-socket "$dir/c.sock" \
    >"$dir/sluiced.log" 2>&1 &
  DAEMON_PIDS+=($!)
  local i
  for i in $(seq 100); do [ -S "$dir/p.sock" ] && break; sleep 0.1; done
  "$SLUICE_DIR/sluice-probes" --producer-socket "$dir/p.sock" --state-dir "$dir/state" --once \
    >"$dir/probes.log" 2>&1 &
  DAEMON_PIDS+=($!)
  # It registers its data sources right after it says so.
  for i in $(seq 100); do grep -q "connected to" "$dir/probes.log" && break; sleep 0.1; done
  sleep 0.5
}

# buffer_events DIR -> "WRITTEN READ": the events the buffer the recorder of
# DIR reads took and gave to readers so far, all CPUs: a sluice that left
# the top level for an instance of its own (another recorder was there
# first, TOGETHER=1) reads instances/sluice-<its probes' pid>-N, the rest the
# top-level buffer.
buffer_events() {
  local root=$T probes instance
  probes=$(cat "$1/probes_pid")
  for instance in "$T/instances/sluice-$probes-"*; do
    [ -n "$probes" ] && [ -d "$instance" ] && root=$instance && break
  done
  cat "$root"/per_cpu/cpu*/stats 2>/dev/null |
    awk '/^entries:/ || /^overrun:/ { w += $2 } /^read events:/ { w += $3; r += $3 }
         END { printf "%d %d\n", w, r }'
}

# start MODE DIR: starts MODE's recorder, and for the daemon modes its
# sluiced and sluice-probes, in a subshell of their own that waits for them
# and then writes `times` to DIR/times: the CPU of every process it reaped,
# the recorder's whole run from start to exit (its stop, its reaped
# children and its daemons included), apart from every other recorder's.
# Returns once the recorder reads. DIR/pids: the recorder's pid, then the
# daemons'; DIR/probes_pid: the process that runs the ftrace readers.
start() {
  local mode=$1 dir=$2
  mkdir -p "$dir"
  date +%s.%N >"$dir/started"
  (
    DAEMON_PIDS=()
    case $mode in
      sluice-*)
        args=(-o "$dir/trace.pftrace" -t 1h -q ${SLUICE_ARGS:-})
        case $mode in *-ring) args+=(--ring) ;; esac
        case $mode in
          sluice-daemon-*)
            start_daemons "$dir"
            args+=(--daemon --consumer-socket "$dir/c.sock") ;;
        esac
        "$SLUICE_DIR/sluice" record "${args[@]}" $EVENTS >"$dir/rec.out" 2>"$dir/rec.err" &
        rec=$!
        echo "${DAEMON_PIDS[1]:-$rec}" >"$dir/probes_pid" ;;
      trace-cmd)
        unshare --mount --propagation private "$WORK/tcwrap.sh" \
          trace-cmd record -b 2048 "${TC_EVENTS[@]}" -o "$dir/trace.dat" >"$dir/rec.out" 2>"$dir/rec.err" &
        rec=$!
        : >"$dir/probes_pid" ;;
    esac
    echo "$rec ${DAEMON_PIDS[*]}" >"$dir/pids"
    wait "$rec"
    echo $? >"$dir/rc"
    stop_daemons
    times >"$dir/times"
  ) &
  echo $! >"$dir/wrapper"
  local _
  for _ in $(seq 300); do [ -s "$dir/pids" ] && break; sleep 0.1; done
  for _ in $(seq 300); do reading "$dir" && break; sleep 0.1; done
}

# reading DIR: whether DIR's recorder reads: its probes (sluice) or one of
# the processes it forked (trace-cmd) has a trace_pipe_raw open.
reading() {
  local p pids
  if [ -s "$1/probes_pid" ]; then pids=$(cat "$1/probes_pid"); else pids=$(pgrep -P "$(cut -d' ' -f1 "$1/pids")"); fi
  for p in $pids; do
    ls -l "/proc/$p/fd" 2>/dev/null | grep -q trace_pipe_raw && return 0
  done
  return 1
}

# snapshot DIR N: the threads of DIR's recorder (trace-cmd's whole tree:
# its readers are processes of their own) to DIR/tN, its buffer's events to
# DIR/evN.
snapshot() {
  local dir=$1 n=$2 pids p
  read -r -a pids <"$dir/pids"
  [ -s "$dir/probes_pid" ] || mapfile -t pids < <(pstree -p "${pids[0]}" | grep -o '([0-9]*)' | tr -d '()')
  for p in "${pids[@]}"; do bench_threads_of "$p"; done >"$dir/t$n"
  buffer_events "$dir" >"$dir/ev$n"
}

# stop DIR: SIGINT to the recorder (and trace-cmd's readers), then waits for
# its subshell.
stop() {
  local dir=$1 rec
  rec=$(cut -d' ' -f1 "$dir/pids")
  kill -INT "$rec" 2>/dev/null
  [ -s "$dir/probes_pid" ] || pkill -INT -P "$rec" 2>/dev/null
  wait "$(cat "$dir/wrapper")"
  date +%s.%N >"$dir/ended"
}

# machine N: the machine's context switches (/proc/stat ctxt) and last pid
# (/proc/loadavg) to $WORK/machineN.
machine() {
  echo "$(awk '/^ctxt/{print $2}' /proc/stat) $(awk '{print $5}' /proc/loadavg)" >"$WORK/machine$1"
}

# report MODE REP DIR -> one result line on stdout; the thread table in
# $WORK/all-threads
report() {
  local mode=$1 rep=$2 dir=$3 ctxt0 ctxt1 lastpid0 lastpid1 w0 r0 w1 r1
  read -r ctxt0 lastpid0 <"$WORK/machine0"
  read -r ctxt1 lastpid1 <"$WORK/machine1"
  read -r w0 r0 <"$dir/ev0"
  read -r w1 r1 <"$dir/ev1"
  local run_s whole_ms upto_ms
  run_s=$(awk '{ t[FILENAME] = $1 } END { printf "%.1f", t[ARGV[2]] - t[ARGV[1]] }' "$dir/started" "$dir/ended")
  # `times`' second line: the children's user and system time, 0m0.123s.
  whole_ms=$(awk 'function s(t,  m) { m = t; sub(/m.*/, "", m); sub(/^[0-9]+m/, "", t); sub(/s$/, "", t); return m * 60 + t }
                  NR == 2 { printf "%.1f", (s($1) + s($2)) * 1000 }' "$dir/times")
  # Per thread: CPU ms per s, wake-ups per s and minor faults per s over the
  # window.
  awk -v w="$WINDOW" 'NR == FNR { ns[$1] = $2; wk[$1] = $3; mf[$1] = $NF; next }
       ($1 in ns) { printf "%s %.4f %.2f %.2f\n", $4, ($2 - ns[$1]) / 1e6 / w, ($3 - wk[$1]) / w,
                           ($NF - mf[$1]) / w }' \
    "$dir/t0" "$dir/t1" >"$dir/threads"
  # The CPU of the threads alive at the window's end, up to it.
  upto_ms=$(awk '{ ns += $2 } END { printf "%.1f", ns / 1e6 }' "$dir/t1")
  awk -v mode="$mode" -v rep="$rep" -v rc="$(cat "$dir/rc")" -v ctxt=$(( (ctxt1 - ctxt0) / WINDOW )) \
      -v written=$(( w1 - w0 )) -v read=$(( r1 - r0 )) -v w="$WINDOW" -v whole="$whole_ms" -v upto="$upto_ms" \
      -v pids=$(( lastpid1 - lastpid0 )) -v run_s="$run_s" '
    { cpu += $2; wk += $3 }
    END { printf "%-20s %d  ctxt/s %6d  cpu %.4f ms/s  wake-ups %.2f /s  rc %d  events written %d read %d  us/k read %s  whole run %.1f ms, after the window %.1f  new pids/s %s  over %.1f s  all written %s ms/s\n",
                 mode, rep, ctxt, cpu, wk, rc, written, read,
                 (read > 0 ? sprintf("%.1f", cpu * w * 1e6 / read) : "-"), whole, whole - upto,
                 (pids >= 0 ? sprintf("%.2f", pids / w) : "-"), run_s,
                 (read > 0 ? sprintf("%.4f", cpu * written / read) : "-") }' \
    "$dir/threads"
  sed "s/^/$mode $rep /" "$dir/threads" >>"$WORK/all-threads"
  # What the trace says of its readers: how full a buffer got, and whether
  # sluice lowered the watermark.
  [ -e "$dir/trace.pftrace" ] &&
    "$SLUICE_DIR/sluice" stats "$dir/trace.pftrace" 2>/dev/null |
    grep -E '^ftrace (buffer peak fill|reader watermark)' | sed "s/^/$mode $rep: /" >>"$WORK/trace-stats"
  rm -f "$dir"/trace.*
}

# measure REP MODE...: the given modes recording at once, in one window.
measure() {
  local rep=$1 mode
  shift
  for mode in "$@"; do sync; start "$mode" "$WORK/$mode-$rep"; done
  sleep "$SETTLE"
  for mode in "$@"; do snapshot "$WORK/$mode-$rep" 0; done
  machine 0
  sleep "$WINDOW"
  machine 1
  for mode in "$@"; do snapshot "$WORK/$mode-$rep" 1; done
  for mode in "$@"; do stop "$WORK/$mode-$rep"; done
  bench_restore_tracefs
  for mode in "$@"; do report "$mode" "$rep" "$WORK/$mode-$rep"; done
}

# One round: MODES in turn, each alone; with TOGETHER=1 all at once.
round() {
  local rep=$1 mode
  if [ "${TOGETHER:-0}" = 1 ]; then
    # shellcheck disable=SC2086 # MODES is a list of words
    measure "$rep" $MODES
  else
    for mode in $MODES; do measure "$rep" "$mode"; done
  fi
}

# Together, trace-cmd goes first: it would read the top-level buffer
# whoever else does, where sluice moves to an instance.
if [ "${TOGETHER:-0}" = 1 ]; then
  case " $MODES " in *" trace-cmd "*) MODES="trace-cmd $(echo " $MODES " | sed 's/ trace-cmd / /')" ;; esac
fi
for rep in $(seq "$REPS"); do round "$rep"; done | tee "$WORK/runs"

echo "# medians of $REPS (window ${WINDOW}s after ${SETTLE}s; $SLUICE_DIR)"
awk '{ m = $1; c[m, ++n[m]] = $6; w[m, n[m]] = $9; x[m, n[m]] = $4; r[m, n[m]] = $17; a[m, n[m]] = $23; s[m, n[m]] = $28
    r_s[m, n[m]] = $23 / $33; p[m, n[m]] = $31; e[m, n[m]] = $37 }
  function med(a, m, k,   i, j, t, v) {
    for (i = 1; i <= k; i++) v[i] = a[m, i] + 0
    for (i = 1; i <= k; i++) for (j = i + 1; j <= k; j++) if (v[j] < v[i]) { t = v[i]; v[i] = v[j]; v[j] = t }
    return k % 2 ? v[(k + 1) / 2] : (v[k / 2] + v[k / 2 + 1]) / 2
  }
  END { for (m in n) printf "%-20s cpu %.4f ms/s  wake-ups %.2f /s  events read %d  whole run %.1f ms (%.4f ms/s), after the window %.1f  (machine: %d context switches/s, %.2f new pids/s)  all written %.4f ms/s\n",
                            m, med(c, m, n[m]), med(w, m, n[m]), med(r, m, n[m]), med(a, m, n[m]), med(r_s, m, n[m]),
                            med(s, m, n[m]), med(x, m, n[m]), med(p, m, n[m]), med(e, m, n[m]) }' "$WORK/runs" | sort
# Each sluice mode against trace-cmd, run by run (in turn, the same
# round): the window's CPU, and the same read every event written (the
# long-run cost at rest, free of how many wake-ups fell in the window).
awk '$1 == "trace-cmd" { tc_c[$2] = $6; tc_e[$2] = $37; tcs++; next }
     { mode[++k] = $1; rep[k] = $2; c[k] = $6; e[k] = $37 }
     END { if (k == 0 || tcs == 0) exit
           print "# against trace-cmd in the same round: window CPU, all written"
           for (i = 1; i <= k; i++) if (rep[i] in tc_c)
             printf "%-20s %d  %.2fx  %s\n", mode[i], rep[i], c[i] / tc_c[rep[i]],
                    (e[i] != "-" && tc_e[rep[i]] != "-" && tc_e[rep[i]] > 0 ? sprintf("%.2fx", e[i] / tc_e[rep[i]]) : "-") }' "$WORK/runs"
echo "# per second, each thread's wake-ups, CPU and minor faults (medians; threads of one name summed per run)"
awk '{ k = $1 " " $3; c[k, $2] += $4; w[k, $2] += $5; f[k, $2] += $6; reps[k] = reps[k] " " $2 }
  function med(list,   v, n, i, j, t) {
    n = split(list, v, " ")
    for (i = 1; i <= n; i++) for (j = i + 1; j <= n; j++) if (v[j] + 0 < v[i] + 0) { t = v[i]; v[i] = v[j]; v[j] = t }
    return n % 2 ? v[(n + 1) / 2] : (v[n / 2] + v[n / 2 + 1]) / 2
  }
  END {
    for (k in reps) {
      n = split(reps[k], rs, " "); wl = ""; cl = ""; fl = ""; delete seen
      for (i = 1; i <= n; i++) if (!(rs[i] in seen)) {
        seen[rs[i]] = 1; wl = wl " " w[k, rs[i]]; cl = cl " " c[k, rs[i]]; fl = fl " " f[k, rs[i]]
      }
      printf "%-40s %6.2f wake-ups/s  %.4f ms/s  %6.2f faults/s\n", k, med(wl), med(cl), med(fl)
    }
  }' "$WORK/all-threads" | grep -v '^trace-cmd' | sort
if [ -s "$WORK/trace-stats" ]; then
  echo "# what each sluice trace says of its readers (sluice stats)"
  cat "$WORK/trace-stats"
fi
