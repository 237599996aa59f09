#!/usr/bin/env bash
# Kernel check, not run by CI's unit-check: root, real tracefs and BPF. Hold
# the kernel-test lock (flock /tmp/sluice-kernel-tests.lock ...).
#
# Starts sluiced and sluice-probes with exactly the arguments of their
# rendered units (BUILD_DIR/init/), sluiced on the sockets of sluiced.socket
# passed as systemd passes them (as user sluiced if it exists), sluice-probes
# with the unit's CapabilityBoundingSet= and NoNewPrivileges=, records through
# them, stops the probes, runs the unit's ExecStopPost=, and checks that
# tracefs is as it was (tracing_on, set_event, current_tracer). The sockets
# and the tracefs state directory are moved into a scratch directory (their
# unit paths, under /run/sluice, would be left behind: systemd, not sluiced,
# removes the sockets it passes).
#
#   service/init/check_probes_unit.sh BUILD_DIR            the unit's capabilities
#   CAPS=bpf,perfmon service/init/check_probes_unit.sh BUILD_DIR
#   CAPS=bpf,perfmon RECORD_ARGS=--bpf service/init/check_probes_unit.sh BUILD_DIR
#                                                          measure: a smaller set
# Exit 0 when the recording has ftrace events and tracefs is restored.
set -euo pipefail
build=$1
init=$build/init
tracefs=${TRACEFS:-/sys/kernel/tracing}
failures=0
fail() { echo "probes-unit-check: FAIL: $*" >&2; failures=$((failures + 1)); }
scratch=$(mktemp -d /tmp/sluice-probes-unit-XXXXXX)
sluiced_pid='' probes_pid=''
cleanup() {
  for p in $probes_pid $sluiced_pid; do kill -TERM "$p" 2>/dev/null || true; done
  sleep 1
  for p in $probes_pid $sluiced_pid; do kill -9 "$p" 2>/dev/null || true; done
  rm -rf "$scratch"
}
trap cleanup EXIT

args_of() {  # the arguments of KEY= in a unit, without the binary
  local line
  line=$(sed -n "s/^$1=//p" "$2" | head -1)
  [ "${line#* }" != "$line" ] && echo "${line#* }" || true
}
tracefs_state() {
  for f in tracing_on current_tracer set_event buffer_size_kb trace_clock; do
    echo "$f: $(cat "$tracefs/$f" 2>/dev/null | tr '\n' ' ')"
  done
}

before=$(tracefs_state)
sluiced_args=$(args_of ExecStart "$init/sluiced.service")
probes_args=$(args_of ExecStart "$init/sluice-probes.service")
stop_post_args=$(args_of ExecStopPost "$init/sluice-probes.service")
caps=${CAPS:-$(sed -n 's/^CapabilityBoundingSet=//p' "$init/sluice-probes.service" |
  tr 'A-Z' 'a-z' | sed 's/cap_//g; s/ /,+/g; s/^/+/')}
[[ $caps == +* ]] || caps=$(sed 's/^/+/; s/,/,+/g' <<<"$caps")
# The units' paths, moved into the scratch directory.
in_scratch() { sed "s|/run/sluice/|$scratch/|g"; }
probes_args=$(in_scratch <<<"$probes_args")
stop_post_args=$(in_scratch <<<"$stop_post_args")
listen=()
while read -r path; do listen+=(-l "$path"); done < <(sed -n 's/^ListenStream=//p' "$init/sluiced.socket" | in_scratch)
consumer=$(sed -n 's/^ListenStream=//p' "$init/sluiced.socket" | sed -n 2p | in_scratch)
as_sluiced=() sluiced_user=root
getent passwd sluiced >/dev/null && sluiced_user=sluiced && as_sluiced=(setpriv --reuid=sluiced --regid=sluiced --clear-groups
  --inh-caps=-all --bounding-set=-all --no-new-privs)

mkdir -p "$scratch/tracefs-state"
# shellcheck disable=SC2086
systemd-socket-activate "${listen[@]}" "${as_sluiced[@]}" "$build/sluiced" $sluiced_args \
  >"$scratch/sluiced.log" 2>&1 &
sluiced_pid=$!
# shellcheck disable=SC2086
setpriv --bounding-set=-all,$caps --no-new-privs "$build/sluice-probes" $probes_args \
  >"$scratch/probes.log" 2>&1 &
probes_pid=$!
for _ in $(seq 600); do grep -q 'connected to' "$scratch/probes.log" && break; sleep 0.1; done
grep -q 'connected to' "$scratch/probes.log" || fail "sluice-probes did not connect: $(cat "$scratch/probes.log")"

# shellcheck disable=SC2086
if timeout 300 "$build/sluice" record --daemon --consumer-socket "$consumer" -t 3s -q ${RECORD_ARGS:-} \
    -o "$scratch/trace.pftrace" >"$scratch/record.log" 2>&1; then
  # (stats exits 1 when something was lost: not this check's business.)
  events=$({ "$build/sluice" stats "$scratch/trace.pftrace" || true; } |
    sed -n 's/.* \([0-9][0-9]*\) ftrace events.*/\1/p')
  [ "${events:-0}" -gt 0 ] || fail "no ftrace events in the trace"
  if [[ ${RECORD_ARGS:-} == *--bpf* ]]; then
    # A BPF source that fails to start leaves an ftrace-only trace; the
    # probes and the recorder say why.
    ! grep -h -i -m1 'linux.bpf.*\(needs\|fail\|cannot\|error\)' "$scratch/probes.log" "$scratch/record.log" ||
      fail "the BPF source did not start"
  fi
else
  fail "record through the units' daemons: $(cat "$scratch/record.log")"
fi

kill -TERM "$probes_pid"
wait "$probes_pid" || fail "sluice-probes exited $? on SIGTERM: $(tail -5 "$scratch/probes.log")"
probes_pid=
# shellcheck disable=SC2086
setpriv --bounding-set=-all,$caps --no-new-privs "$build/sluice-probes" $stop_post_args ||
  fail "ExecStopPost ($stop_post_args) failed"
after=$(tracefs_state)
[ "$before" = "$after" ] || fail "tracefs changed:"$'\n'"before: $before"$'\n'"after:  $after"

echo "probes-unit-check: sluice-probes with capabilities $caps; sluiced as $sluiced_user"
[ $failures -eq 0 ] || { echo "probes-unit-check: $failures failure(s)" >&2; exit 1; }
echo "probes-unit-check: recorded through the units' daemons; tracefs as it was"
