#!/usr/bin/env bash
# The relay's socket unit (sluice-relay.socket, docs/RELAY.md) against
# sluiced.socket and the built sluiced (CI: `make unit-check`; no root
# needed):
#   - the unit: one ListenStream=, FileDescriptorName=relay (sluiced tells
#     it from sluiced.socket's two by name: systemd orders sockets of
#     different units as it likes), Service=sluiced.service, and the
#     producer socket's owner, group and mode (a relay produces);
#   - once sluiced has --relay-socket: started as systemd starts it with
#     both units enabled (three sockets, LISTEN_FDNAMES
#     relay:sluiced.socket:sluiced.socket: the relay first, the order a
#     separate unit may get), it takes fd 3 as the relay socket (a
#     connection to it is accepted) and records through the consumer
#     socket.
#   service/init/check_relay_socket.sh BUILD_DIR
set -euo pipefail
build=$1
unit=$build/init/sluice-relay.socket
main=$build/init/sluiced.socket
failures=0
fail() { echo "unit-check: FAIL: $*" >&2; failures=$((failures + 1)); }
key() { sed -n "s/^$1=//p" "$2"; }

[ "$(key ListenStream "$unit" | wc -l)" = 1 ] || fail "$unit: want one ListenStream= line"
[ "$(key FileDescriptorName "$unit")" = relay ] || fail "$unit: FileDescriptorName=relay missing"
[ "$(key Service "$unit")" = sluiced.service ] || fail "$unit: Service=sluiced.service missing"
for k in SocketUser SocketGroup SocketMode; do
  [ "$(key $k "$unit")" = "$(key $k "$main")" ] ||
    fail "$unit: $k=$(key $k "$unit"), sluiced.socket has $(key $k "$main")"
done
[ "$(dirname "$(key ListenStream "$unit")")" = "$(dirname "$(key ListenStream "$main" | head -n 1)")" ] ||
  fail "$unit: the relay socket is not beside sluiced's"

if ! "$build/sluiced" --help 2>&1 | grep -q -- '--relay-socket'; then
  echo "unit-check: sluiced has no --relay-socket yet: the relay unit's activation is not run"
else
  scratch=$(mktemp -d /tmp/sluice-relay-unit-XXXXXX)
  daemon_pid=
  trap '[ -z "$daemon_pid" ] || kill -9 "$daemon_pid" 2>/dev/null; rm -rf "$scratch"' EXIT
  systemd-socket-activate -l "$scratch/relay.sock" -l "$scratch/producer.sock" -l "$scratch/consumer.sock" \
    --fdname=relay:sluiced.socket:sluiced.socket "$build/sluiced" >"$scratch/log" 2>&1 &
  daemon_pid=$!
  for _ in $(seq 100); do [ -S "$scratch/consumer.sock" ] && break; sleep 0.1; done
  timeout 120 "$build/sluice" record --daemon --consumer-socket "$scratch/consumer.sock" -t 1s -q \
    -o "$scratch/trace.pftrace" >"$scratch/record" 2>&1 ||
    fail "record through sluiced activated with the relay socket: $(cat "$scratch/record") $(cat "$scratch/log")"
  python3 -c 'import socket, sys; s = socket.socket(socket.AF_UNIX); s.connect(sys.argv[1])' "$scratch/relay.sock" ||
    fail "the activated relay socket refuses a connection"
  grep -qi 'relay' "$scratch/log" || fail "sluiced's log does not mention the relay socket it took: $(cat "$scratch/log")"
  kill -TERM "$daemon_pid"
  status=0
  wait "$daemon_pid" || status=$?
  daemon_pid=
  [ $status -eq 0 ] || fail "sluiced exited $status after SIGTERM: $(cat "$scratch/log")"
fi
[ $failures -eq 0 ] || { echo "unit-check: relay socket: $failures failure(s)" >&2; exit 1; }
echo "unit-check: sluice-relay.socket: one named socket beside sluiced's, same owner and mode"
