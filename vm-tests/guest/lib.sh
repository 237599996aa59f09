# Helpers for guest scenarios (busybox sh). Every helper keeps its variables
# "local": a scenario's own variables must survive the calls. Sourced as
#   . /usr/share/sluice-vm/lib.sh
# by every vm-tests/scenarios/*.sh. $1 of the scenario is its output dir,
# which the host receives as results/<scenario>/.
#
# Exit convention: 0 = ran (the host-side check judges the files),
# 77 = skipped (skip_reason written), anything else = failed (fail_reason).

OUT=${1:?usage: scenario.sh OUTDIR}
mkdir -p "$OUT"
# say, scaled: every time limit below is a base at scale 1 passed through
# scaled (the guest's speed, measured by /init).
. /usr/share/sluice-vm/base.sh

skip() { echo "$*" >"$OUT/skip_reason"; echo "SKIP: $*"; exit 77; }
fail() { echo "$*" >"$OUT/fail_reason"; echo "FAIL: $*"; exit 1; }
note() { echo "$*"; }

# Skips the scenario unless the sluice binaries were put in the initramfs
# (the host copies build/sluice, build/sluice-probes, build/sluiced when built).
need_sluice() {
  command -v sluice >/dev/null 2>&1 ||
    skip "sluice binary not in the initramfs (build/sluice not built on the host)"
}

need_tracefs() {
  [ -n "$TRACEFS" ] && [ -e "$TRACEFS/trace_marker" ] ||
    skip "no tracefs in this kernel (CONFIG_FTRACE/CONFIG_TRACING off?)"
}

# capture_formats DST: saves this kernel's format tree into DST/events/.
capture_formats() {
  sh /usr/share/sluice-vm/capture-formats.sh "$TRACEFS" "$1"
}

# wait_for SECS WHAT CMD...: runs CMD every 0.1 s until it succeeds; fails
# the scenario after SECS (scaled) seconds of the guest clock (not loop
# counts: under TCG one round can take far longer than its sleep), or at
# once when the recorder started by start_record has exited, with the end of
# its log. SECS is generous: it only matters when something is broken.
wait_for() {
  local secs what deadline
  secs=$(scaled "$1")
  what=$2
  shift 2
  deadline=$(($(cut -d. -f1 /proc/uptime) + secs))
  until "$@"; do
    if [ -n "${RECORD_PID:-}" ] && ! recorder_alive; then
      wait "$RECORD_PID"
      echo $? >"$OUT/record.rc"
      fail "sluice record exited (rc $(cat "$OUT/record.rc")) before $what: $(tail -n 1 "$OUT/record.log")"
    fi
    [ "$(cut -d. -f1 /proc/uptime)" -ge "$deadline" ] && fail "no $what within ${secs}s (see record.log)"
    usleep 100000
  done
}

# event_enabled EVENT: the recorder switched EVENT (group/name) on, in the
# root instance or any other.
event_enabled() { cat "$TRACEFS/events/$1/enable" "$TRACEFS"/instances/*/events/"$1"/enable 2>/dev/null | grep -q 1; }

# ftrace_readers_open: some process holds per_cpu/cpuN/trace_pipe_raw open
# for every CPU, i.e. the ftrace readers of the recorder are running.
ftrace_readers_open() {
  local want
  want=$(ls -d "$TRACEFS"/per_cpu/cpu* | wc -l)
  [ "$(ls -l /proc/[0-9]*/fd/ 2>/dev/null | grep -o 'cpu[0-9]*/trace_pipe_raw' | sort -u | wc -l)" -ge "$want" ]
}

# bpf_loaded: some process holds a BPF link or a loaded BPF program (fdinfo
# shows link_type: or prog_type:); callers give it a moment to attach.
bpf_loaded() { cat /proc/[0-9]*/fdinfo/* 2>/dev/null | grep -Eq '^(link_type|prog_type):'; }

# write_markers PREFIX FIRST LAST: writes the lines "PREFIX<n>" for n = FIRST
# .. LAST to trace_marker through one open fd (busybox echo is a builtin, so
# no process is created per marker). Adds the number of successful and
# failed writes to OUT/markers_written and OUT/markers_failed.
write_markers() {
  local prefix=$1 n=$2 last=$3 ok=0 bad=0
  exec 3>"$TRACEFS/trace_marker" || fail "cannot open $TRACEFS/trace_marker"
  while [ "$n" -le "$last" ]; do
    if echo "$prefix$n" >&3 2>/dev/null; then ok=$((ok + 1)); else bad=$((bad + 1)); fi
    n=$((n + 1))
  done
  exec 3>&-
  echo $(($(cat "$OUT/markers_written" 2>/dev/null || echo 0) + ok)) >"$OUT/markers_written"
  echo $(($(cat "$OUT/markers_failed" 2>/dev/null || echo 0) + bad)) >"$OUT/markers_failed"
}

# Starts "sluice record ARGS..." in the background with its output in
# OUT/record.log; sets RECORD_PID. Give it a duration far beyond the
# scenario's (-t 1h, duration_ms: 3600000): the scenario stops it with
# stop_record when its workload is done, so the recording cannot end before
# the workload, however slow the guest.
start_record() {
  # --file-lag 1s: the streamed file a second behind even at rest, which
  # wait_until_recording relies on (the default lets it fall a minute behind).
  sluice record --file-lag 1s "$@" >"$OUT/record.log" 2>&1 &
  RECORD_PID=$!
}

# recorder_alive: the recorder runs (kill -0 alone also answers for a
# zombie, which the shell has not reaped yet).
recorder_alive() {
  kill -0 "$RECORD_PID" 2>/dev/null && ! grep -q '^State:[[:space:]]*Z' "/proc/$RECORD_PID/status" 2>/dev/null
}

# recorder_ready: sluice record said "sluice: recording" (every data source
# started or failed to).
recorder_ready() { grep -q '^sluice: recording' "$OUT/record.log" 2>/dev/null; }

# wait_until_recording TRACE: the recording reaches TRACE. Waits for the
# recorder's "sluice: recording" line, then writes "sluice-ready-<k>" markers
# to trace_marker, one every 0.4 s, until one of them is in TRACE (the
# recorder streams its file about once a second: start_record's --file-lag).
# Markers written before the data sources were live are simply not
# recorded; the first one in the file proves the whole path, kernel to file,
# runs. Their prefix is none of the
# scenarios' sequence prefixes, so the marker checks do not count them.
wait_until_recording() {
  READY_TRACE=$1 READY_SEQ=0
  wait_for 60 "'sluice: recording' from sluice record" recorder_ready
  wait_for 60 "a sluice-ready marker in $(basename "$1")" ready_marker_recorded
}
ready_marker_recorded() {
  READY_SEQ=$((READY_SEQ + 1))
  echo "sluice-ready-$READY_SEQ" >"$TRACEFS/trace_marker"
  usleep 400000
  grep -aq 'sluice-ready-[0-9]' "$(being_recorded "$READY_TRACE")"
}
# being_recorded FILE: the file `sluice record -o FILE` writes while it
# records (FILE.recording-XXXXXX, renamed to FILE at the end), else FILE.
being_recorded() {
  for f in "$1" "$1".recording-*; do
    if [ -e "$f" ]; then echo "$f"; return; fi
  done
  echo "$1"
}

# stop_record: stops the recorder started by start_record (SIGTERM: the same
# clean stop as SIGINT, which a non-interactive shell leaves ignored in
# background commands) and waits for it to exit, up to 120 s (scaled);
# writes OUT/record.rc and fails the scenario if it exited non-zero, or had
# exited before it was asked to.
stop_record() {
  local rc deadline
  recorder_alive || {
    wait "$RECORD_PID"
    rc=$?
    echo "$rc" >"$OUT/record.rc"
    RECORD_PID=
    fail "sluice record exited (rc $rc) before the scenario stopped it: $(tail -n 1 "$OUT/record.log")"
  }
  kill -TERM "$RECORD_PID"
  deadline=$(($(cut -d. -f1 /proc/uptime) + $(scaled 120)))
  while recorder_alive; do
    [ "$(cut -d. -f1 /proc/uptime)" -ge "$deadline" ] &&
      fail "sluice record did not exit within $(scaled 120)s of SIGTERM (see record.log)"
    usleep 100000
  done
  wait "$RECORD_PID"
  rc=$?
  RECORD_PID=
  echo "$rc" >"$OUT/record.rc"
  [ "$rc" -eq 0 ] || fail "sluice record exited $rc: $(tail -n 1 "$OUT/record.log")"
}

# signal_tree SIG PID: sends SIG to PID and all its descendants (the
# recorder may run helpers as child processes).
signal_tree() {
  local sig=$1 pid=$2 child
  kill "-$sig" "$pid" 2>/dev/null
  for child in $(ps -o pid,ppid | awk -v p="$pid" '$2 == p {print $1}'); do
    signal_tree "$sig" "$child"
  done
}

# Runs "sluice doctor" into OUT/doctor.txt (exit code in OUT/doctor.rc).
run_doctor() {
  sluice doctor >"$OUT/doctor.txt" 2>&1
  echo $? >"$OUT/doctor.rc"
}

# Stops the recorder when the scenario fails half-way, so it does not keep
# tracefs busy for the next scenario.
trap '[ -n "${RECORD_PID:-}" ] && kill "$RECORD_PID" 2>/dev/null' EXIT
