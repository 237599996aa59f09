#!/bin/sh
# The relay (issue 38): the guest's sluice-probes record through
# sluice-relay over the virtio-serial port org.sluice.relay into the host's
# sluiced, which records its own kernel in the same session. The host's half
# is vm-tests/relay-host.sh, started by run-kernel.sh; the two talk in lines
# over the second port, org.sluice.causality, which also carries the
# causality test's numbered bytes. Two phases, each one host recording:
#   1. the link at full speed: host and guest markers (sluice-host1=N,
#      sluice-guest1=N), sched_switch on both, and the causality test: the
#      host marks sluice-cause-send=i and sends "cause i"; the guest marks
#      sluice-cause-recv=i on receipt and answers "ack i", which the host
#      marks sluice-cause-ack=i.
#   2. the link throttled (sluice-relay --max-rate, a small --buffer-size):
#      a burst of guest markers from CPU 0 (sluice-guest2=N) the link cannot
#      carry, then tail markers until one reaches the host.
# The host check (70-relay.check) judges both traces. Every wait is on a
# condition: the host answers each step once it holds.
# timeout-base: 300
. /usr/share/sluice-vm/lib.sh
need_tracefs

GUEST_MARKERS=${SLUICE_VM_RELAY_MARKERS:-2000}
BURST_MARKERS=${SLUICE_VM_RELAY_BURST:-8000}
# Phase 2's link: 64 KiB/s and a 64 KiB queue (its least), against a burst
# of ~300 KiB written in well under a second.
MAX_RATE=64kb
QUEUE=64kb

# The virtio_console driver: built in (6.12) or modules the host put in the
# initramfs (6.1: run-kernel.sh, kernel-modules.sh).
order=/lib/modules/$(uname -r)/sluice-load-order
[ -f "/lib/modules/$(uname -r)/sluice-modules-missing" ] &&
  skip "$(cat "/lib/modules/$(uname -r)/sluice-modules-missing")"
if [ -f "$order" ]; then
  for m in $(cat "$order"); do
    insmod "$m" >>"$OUT/insmod.log" 2>&1 || grep -q "^$(basename "$m" .ko) " /proc/modules ||
      fail "insmod $m failed: $(tail -n 1 "$OUT/insmod.log")"
  done
fi
# No udev here: the /dev/virtio-ports/NAME links are ours to make.
ports_named() {
  local p
  for p in /sys/class/virtio-ports/*; do
    [ -r "$p/name" ] || continue
    mkdir -p /dev/virtio-ports
    [ -s "$p/name" ] && ln -sf "../$(basename "$p")" "/dev/virtio-ports/$(cat "$p/name")"
  done
  [ -e /dev/virtio-ports/org.sluice.relay ] && [ -e /dev/virtio-ports/org.sluice.causality ]
}
wait_for 30 "virtio-serial ports org.sluice.relay and org.sluice.causality (is the host's QEMU giving them?)" ports_named
ls -l /dev/virtio-ports/ >"$OUT/ports.txt"

# The control port: one fd, read by the reader below, written by both.
exec 4<>/dev/virtio-ports/org.sluice.causality
send() { echo "$*" >&4; echo "-> $*" >>"$OUT/control.log"; }
: >"$OUT/control.in"
# The reader: answers "cause i" at once (marks sluice-cause-recv=i in the
# instance the host named, then "ack i"); every other line goes to
# control.in for the waits below.
(
  while read -r cmd arg rest <&4; do
    case "$cmd" in
      cause)
        echo "sluice-cause-recv=$arg" >"$TRACEFS/instances/$(cat "$OUT/instance")/trace_marker"
        echo "ack $arg" >&4 ;;
      *) echo "$cmd $arg $rest" >>"$OUT/control.in" ;;
    esac
  done
) &
READER_PID=$!
trap 'kill $READER_PID $RELAY_PID $PROBES_PID 2>/dev/null; [ -n "${RECORD_PID:-}" ] && kill "$RECORD_PID" 2>/dev/null' EXIT
RELAY_PID= PROBES_PID=

heard() { grep -q "^$*" "$OUT/control.in"; }
alive() { kill -0 "$1" 2>/dev/null && ! grep -q '^State:[[:space:]]*Z' "/proc/$1/status" 2>/dev/null; }
relay_and_probes_alive() {
  alive "$RELAY_PID" || fail "sluice-relay exited: $(tail -n 2 "$OUT/relay$PHASE.log")"
  alive "$PROBES_PID" || fail "sluice-probes exited: $(tail -n 2 "$OUT/probes$PHASE.log")"
}
# The host's session reached this guest: our probes made the instance the
# host's config names and read every CPU's buffer (ftrace/print has no
# enable switch to look at).
session_here() {
  relay_and_probes_alive
  [ -d "$TRACEFS/instances/$INSTANCE" ] && ftrace_readers_open
}
# look PREFIX: writes PREFIX<k> markers, 0.4 s apart, until the host says
# one is in its trace.
look_tick() {
  local i=0
  LOOK_SEQ=$((LOOK_SEQ + 1))
  echo "$LOOK_PREFIX$LOOK_SEQ" >"$TRACEFS/instances/$INSTANCE/trace_marker"
  while [ $i -lt 4 ]; do
    heard "seen $PHASE $LOOK_PREFIX" && return 0
    usleep 100000
    i=$((i + 1))
  done
  relay_and_probes_alive
  return 1
}
look() {
  LOOK_PREFIX=$1 LOOK_SEQ=0
  send "look $PHASE $1"
  # Generous: after the relay dropped chunks, the host's buffer may hold
  # the sequence's later packets back for a while (a gap it waits on).
  wait_for 120 "the host seeing a $1 marker from this guest" look_tick
}
# Stops sluice-relay (SIGTERM) and waits; its last line has its totals.
stop_relay_and_probes() {
  kill -TERM "$PROBES_PID" "$RELAY_PID"
  wait_for 60 "sluice-probes and sluice-relay to exit" sh -c "! kill -0 $PROBES_PID 2>/dev/null && ! kill -0 $RELAY_PID 2>/dev/null"
  wait "$RELAY_PID"
  echo $? >"$OUT/relay$PHASE.rc"
  wait "$PROBES_PID"
  echo $? >"$OUT/probes$PHASE.rc"
  RELAY_PID= PROBES_PID=
  grep 'sluice-relay: .*dropped [0-9]* chunks' "$OUT/relay$PHASE.log" | tail -n 1 >"$OUT/relay$PHASE.totals" ||
    fail "sluice-relay printed no totals at exit: $(tail -n 1 "$OUT/relay$PHASE.log")"
}

# phase P EVENTS RELAY_ARGS...
phase() {
  PHASE=$1
  send "start $PHASE $2"
  shift 2
  wait_for 120 "the host recording (phase $PHASE)" heard "recording $PHASE "
  INSTANCE=$(sed -n "s/^recording $PHASE \([^ ]*\).*/\1/p" "$OUT/control.in")
  echo "$INSTANCE" >"$OUT/instance"
  sluice-relay --to virtio:org.sluice.relay --machine-name sluice-vm-guest "$@" >"$OUT/relay$PHASE.log" 2>&1 &
  RELAY_PID=$!
  wait_for 60 "sluice-relay's producer socket" sh -c "[ -S /run/sluice/producer.sock ] || ! kill -0 $RELAY_PID"
  sluice-probes >"$OUT/probes$PHASE.log" 2>&1 &
  PROBES_PID=$!
  wait_for 120 "the host's session to start this guest's ftrace (instance $INSTANCE)" session_here
  look sluice-gready-
}

# instance_markers PREFIX N: PREFIX1..PREFIXN into the instance's
# trace_marker through one fd; the count written goes to markers_written.
instance_markers() {
  local n=1 ok=0
  exec 3>"$TRACEFS/instances/$INSTANCE/trace_marker"
  while [ $n -le "$2" ]; do
    echo "$1$n" >&3 2>/dev/null && ok=$((ok + 1))
    n=$((n + 1))
  done
  exec 3>&-
  echo "$ok" >"$OUT/markers_written"
  [ "$ok" = "$2" ] || fail "$(($2 - ok)) of $2 trace_marker writes failed"
}

# Both directions of the control port work.
send "ping 0"
wait_for 60 "the host's answer on org.sluice.causality (relay-host.sh running?)" heard "pong 0"

need_sluice
command -v sluice-relay >/dev/null 2>&1 ||
  skip "sluice-relay not in the initramfs (build/sluice-relay not built on the host); the ports work: $(ls /dev/virtio-ports | tr '\n' ' ')"

# Phase 1: full speed, markers on both sides, causality.
phase 1 sched/sched_switch
send "markers 1 $GUEST_MARKERS"
instance_markers sluice-guest1= "$GUEST_MARKERS"
wait_for 120 "the host's markers and causality round trips" heard "marked 1"
send "done 1"
wait_for 120 "the host to stop recording" heard "stopped 1"
stop_relay_and_probes
send "relay-stopped 1"
wait_for 60 "the host to stop sluiced" heard "down 1"

# Phase 2: the link throttled; a burst from CPU 0 (one ftrace sequence).
phase 2 "" --max-rate "$MAX_RATE" --buffer-size "$QUEUE"
# From here this shell (the burst and the tail markers) runs on CPU 0 only.
taskset -p 1 $$ >/dev/null || fail "taskset -p 1 failed"
burst_start=$(cut -d' ' -f1 /proc/uptime)
# The burst lands in the guest's ftrace buffer in a fraction of a second
# and leaves it as a few large bundles, each packet fragmented over several
# chunks: a dropped chunk loses the whole bundle, so under TCG most or all
# of the burst is lost; the check wants each lost run behind a loss flag.
taskset 1 sh -c 'exec 3>"$1"; n=1; while [ $n -le $2 ]; do echo "sluice-guest2=$n" >&3 || exit 1; n=$((n + 1)); done' \
  sh "$TRACEFS/instances/$INSTANCE/trace_marker" "$BURST_MARKERS" || fail "burst markers: a trace_marker write failed"
echo "$BURST_MARKERS" >"$OUT/burst_markers"
echo "burst: $BURST_MARKERS markers from $burst_start to $(cut -d' ' -f1 /proc/uptime) s (uptime)" >>"$OUT/control.log"
# The link carries data again after the losses.
look sluice-gtail-
send "done 2"
wait_for 120 "the host to stop recording" heard "stopped 2"
stop_relay_and_probes
send "relay-stopped 2"
wait_for 60 "the host to stop sluiced" heard "down 2"
send end
note "phase 1: $GUEST_MARKERS guest markers; phase 2: $BURST_MARKERS in a burst, relay: $(cat "$OUT/relay2.totals")"
