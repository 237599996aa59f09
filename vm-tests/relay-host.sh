#!/bin/bash
# The host's half of scenario 70-relay: run by run-kernel.sh beside QEMU
# when the relay scenario is planned. It does nothing until the guest asks:
# guest and host talk in lines over the virtio-serial port
# org.sluice.causality (QEMU's unix socket SOCKDIR/cause.sock, joined to
# this script by unix-bridge.py), and the same port carries the causality
# test's numbered bytes.
#
# usage: vm-tests/relay-host.sh SOCKDIR OUTDIR CONSOLE QEMU_PID
#   SOCKDIR  short private directory: cause.sock (QEMU listens), relay.sock
#            (sluiced listens, QEMU's org.sluice.relay connects to it), and
#            sluiced's own producer and consumer sockets
#   OUTDIR   the host's files: hostP.pftrace, logs; the host check
#            (scenarios/70-relay.check) reads them
#   CONSOLE  the guest's console.log: the scenario's end line there ends
#            every wait here (a guest that failed or timed out)
# env: BUILD_DIR (build): the host's sluice, sluiced, sluice-probes.
#
# Lines from the guest, and what the host does:
#   ping N            "pong N" (the port works both ways)
#   start P [EVENTS]  start sluiced --relay-socket, sluice-probes and
#                     `sluice record --daemon` (ftrace/print and EVENTS in
#                     tracefs instance INSTANCE, system info, process tree)
#                     into OUTDIR/hostP.pftrace; once a host ready marker
#                     is in that file: "recording P INSTANCE"
#   look P PATTERN    wait until PATTERN (a marker prefix) is in the file
#                     being recorded: "seen P PATTERN"
#   markers P N       write host markers sluice-hostP=1..N, then the
#                     causality test: for i = 1..N/20 mark sluice-cause-send=i,
#                     send "cause i", wait for "ack i", mark sluice-cause-ack=i;
#                     then "marked P"
#   done P            stop the recording (SIGTERM, wait): "stopped P"
#   relay-stopped P   stop sluice-probes and sluiced: "down P"
#   end               exit
# Nothing here waits on the wall clock: every wait ends on its condition,
# on the guest's scenario end line, or when QEMU is gone.
set -euo pipefail

sockdir=${1:?usage: relay-host.sh SOCKDIR OUTDIR CONSOLE QEMU_PID}
out=${2:?} console=${3:?} qpid=${4:?}
build=${BUILD_DIR:-build}
mkdir -p "$out"
exec >>"$out/host.log" 2>&1
log() { echo "$(date +%T.%N | cut -c1-12) $*"; }

tracefs=/sys/kernel/tracing
[ -e $tracefs/trace_marker ] || tracefs=/sys/kernel/debug/tracing
instance=sluice_vm_relay_$$
pids=()
stop_pid() {  # PID: SIGTERM, then wait for it (it is our child)
  kill -TERM "$1" 2>/dev/null || true
  wait "$1" 2>/dev/null || true
}
cleanup() {
  local p
  for p in "${pids[@]}"; do stop_pid "$p"; done
  [ -n "${CTL_PID:-}" ] && kill "$CTL_PID" 2>/dev/null
  rm -f "$sockdir"/{producer,consumer,relay}.sock
}
trap cleanup EXIT
trap 'exit 1' TERM INT

guest_ended() { grep -aq 'SLUICE-VM: scenario 70-relay end' "$console"; }
qemu_alive() { kill -0 "$qpid" 2>/dev/null; }
# wait_until WHAT CMD...: CMD every 0.1 s until it succeeds; gives up when
# the guest's scenario ended or QEMU is gone.
wait_until() {
  local what=$1
  shift
  until "$@"; do
    if guest_ended || ! qemu_alive; then log "gave up waiting for $what: the guest's scenario ended"; exit 1; fi
    sleep 0.1
  done
}

# The control port: QEMU creates cause.sock at start-up.
wait_until "QEMU's cause.sock" test -S "$sockdir/cause.sock"
coproc CTL { exec python3 "$(dirname "$0")/unix-bridge.py" "$sockdir/cause.sock"; }
send() { log "-> $*"; echo "$*" >&"${CTL[1]}"; }
# next_line: the guest's next line into $line (1 s reads, between which the
# guest's end is checked); returns 1 at the end of the channel.
next_line() {
  while :; do
    if read -r -t 1 line <&"${CTL[0]}"; then log "<- $line"; return 0; else rc=$?; fi
    [ "$rc" -gt 128 ] || return 1  # EOF, not a timeout
    if guest_ended || ! qemu_alive; then return 1; fi
  done
}

being_recorded() {  # FILE: what `sluice record -o FILE` writes while it records
  local f
  for f in "$1" "$1".recording-*; do [ -e "$f" ] && { echo "$f"; return; }; done
  echo "$1"
}
in_trace() { grep -aq -- "$2" "$(being_recorded "$1")" 2>/dev/null; }
marker() { echo "$1" >"$tracefs/instances/$instance/trace_marker"; }
host_ready_tick() {
  ready_seq=$((ready_seq + 1))
  marker "sluice-hready-$ready_seq" 2>/dev/null || true
  sleep 0.2
  in_trace "$trace" 'sluice-hready-'
}
record_alive() { kill -0 "$record_pid" 2>/dev/null; }
recording() {
  record_alive || { log "sluice record exited early: $(tail -n 3 "$out/record$phase.log")"; exit 1; }
  # --daemon says no "sluice: recording"; the ready markers below prove the
  # whole path once the file is being written. -s: the background job may
  # not have made its log yet.
  grep -qs '^sluice record: writing' "$out/record$phase.log"
}

start_phase() {
  phase=$1 events=${2:-}
  trace=$out/host$phase.pftrace
  local cfg=$out/host$phase.pbtx ev
  {
    echo 'buffers { size_kb: 32768 fill_policy: RING_BUFFER }'
    echo 'data_sources { config { name: "linux.ftrace" ftrace_config {'
    echo "  instance_name: \"$instance\" ftrace_events: \"ftrace/print\""
    for ev in ${events//,/ }; do echo "  ftrace_events: \"$ev\""; done
    echo '} } }'
    echo 'data_sources { config { name: "linux.system_info" } }'
    echo 'data_sources { config { name: "linux.process_stats" process_stats_config { scan_all_processes_on_start: true } } }'
    # Streamed into the file (the waits below look into it), a second behind.
    echo 'write_into_file: true file_write_period_ms: 1000'
    echo 'duration_ms: 3600000'
  } >"$cfg"
  "$build/sluiced" --producer-socket "$sockdir/producer.sock" --consumer-socket "$sockdir/consumer.sock" \
    --relay-socket "unix:$sockdir/relay.sock" >"$out/sluiced$phase.log" 2>&1 &
  pids+=($!)
  wait_until "sluiced's sockets" test -S "$sockdir/relay.sock" -a -S "$sockdir/consumer.sock"
  # Its tracefs state in the private directory: .ci/run checks that the run
  # leaves /run/sluice as it found it (nothing, on a fresh machine).
  "$build/sluice-probes" --producer-socket "$sockdir/producer.sock" --state-dir "$sockdir/state" \
    >"$out/probes$phase.log" 2>&1 &
  pids+=($!)
  wait_until "sluice-probes registered" probes_registered
  "$build/sluice" record --daemon --consumer-socket "$sockdir/consumer.sock" --file-lag 1s \
    -c "$cfg" --txt -o "$trace" >"$out/record$phase.log" 2>&1 &
  record_pid=$!
  pids+=("$record_pid")
  wait_until "'sluice record: writing'" recording
  ready_seq=0
  wait_until "a host ready marker in $trace" host_ready_tick
  send "recording $phase $instance"
}

# The host's sluice-probes connected to sluiced (a data source that
# registers after the session started is started then too, as the guest's
# do; this only keeps the host's start-up in order).
probes_registered() { grep -q "producer [0-9]* 'sluice-probes' connected" "$out/sluiced$phase.log"; }

causality() {  # N round trips, one at a time
  local i n=$1
  for ((i = 1; i <= n; i++)); do
    marker "sluice-cause-send=$i"
    echo "cause $i" >&"${CTL[1]}"
    while next_line; do
      [ "$line" = "ack $i" ] && break
      pending+=("$line")
    done
    [ "$line" = "ack $i" ] || { log "no ack $i"; exit 1; }
    marker "sluice-cause-ack=$i"
  done
}

pending=()
while :; do
  if [ ${#pending[@]} -gt 0 ]; then
    line=${pending[0]} pending=("${pending[@]:1}")
  else
    next_line || break
  fi
  set -- $line
  case "${1:-}" in
    ping) send "pong $2" ;;
    start) start_phase "$2" "${3:-}" ;;
    look)
      wait_until "$3 in $trace" in_trace "$trace" "$3"
      send "seen $2 $3" ;;
    markers)
      exec 7>"$tracefs/instances/$instance/trace_marker"
      for ((i = 1; i <= $3; i++)); do echo "sluice-host$2=$i" >&7; done
      exec 7>&-
      causality $(($3 / 20))
      send "marked $2" ;;
    done)
      kill -TERM "$record_pid"
      rc=0
      wait "$record_pid" || rc=$?
      echo "$rc" >"$out/record$2.rc"
      send "stopped $2" ;;
    relay-stopped)
      for p in "${pids[@]}"; do stop_pid "$p"; done
      pids=()
      # The next phase's waits look for these sockets: none may be stale.
      rm -f "$sockdir"/{producer,consumer,relay}.sock
      send "down $2" ;;
    end) break ;;
    *) log "unknown line from the guest: $line" ;;
  esac
done
log "end"
