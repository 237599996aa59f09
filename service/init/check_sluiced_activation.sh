#!/usr/bin/env bash
# Starts the built sluiced as its systemd units would, and records through it
# (CI: `make unit-check`; no root, no tracefs, no BPF: no probes run):
#   - the arguments are ExecStart='s from the rendered sluiced.service, the
#     binary being the build's;
#   - the sockets are sluiced.socket's ListenStream= lines, in their order,
#     moved into a scratch directory, passed by systemd-socket-activate
#     (LISTEN_FDS=2, blocking sockets, as systemd passes them);
#   - sluiced tells systemd it is ready (Type=notify): READY=1 on the
#     NOTIFY_SOCKET datagram socket (read with python3; skipped without it);
#   - two `sluice record --daemon` runs in a row must finish (a blocking
#     accept once hung the daemon after the first connection), then SIGTERM
#     must make it exit 0;
#   - as root: the sockets given the socket unit's SocketMode= and a group
#     (SocketGroup= if it exists here, else root's), a user outside the group
#     is refused with the fix and a member records (setpriv, user nobody);
#   - an error line goes to the journal with the error priority: with stderr
#     named by JOURNAL_STREAM, a bad option gives a "<3>" line.
#   service/init/check_sluiced_activation.sh BUILD_DIR
set -euo pipefail
build=$1
failures=0
fail() { echo "unit-check: FAIL: $*" >&2; failures=$((failures + 1)); }
scratch=$(mktemp -d /tmp/sluice-unit-check-XXXXXX)
daemon_pid=
cleanup() {
  [ -z "$daemon_pid" ] || kill -9 "$daemon_pid" 2>/dev/null || true
  rm -rf "$scratch"
}
trap cleanup EXIT

exec_start=$(sed -n 's/^ExecStart=//p' "$build/init/sluiced.service")
args=${exec_start#* }
[ "$args" != "$exec_start" ] || args=
listen=()
while read -r path; do
  listen+=(-l "$scratch/$(basename "$path")")
done < <(sed -n 's/^ListenStream=//p' "$build/init/sluiced.socket")
[ ${#listen[@]} -eq 4 ] || fail "sluiced.socket has $(( ${#listen[@]} / 2 )) ListenStream= lines, not 2"
consumer=$scratch/$(sed -n 's/^ListenStream=//p' "$build/init/sluiced.socket" | sed -n 2p | xargs basename)

# A stand-in for systemd's notification socket: the first datagram sluiced sends.
notify_env=()
if command -v python3 >/dev/null; then
  python3 - "$scratch/notify" >"$scratch/notified" 2>&1 <<'PY' &
import socket, sys
s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
s.bind(sys.argv[1])
s.settimeout(120)
print(s.recv(4096).decode())
PY
  notify_pid=$!
  for _ in $(seq 100); do [ -S "$scratch/notify" ] && break; sleep 0.1; done
  notify_env=(-E "NOTIFY_SOCKET=$scratch/notify")
fi
# shellcheck disable=SC2086  # ExecStart's arguments are words.
systemd-socket-activate "${notify_env[@]}" "${listen[@]}" "$build/sluiced" $args >"$scratch/log" 2>&1 &
daemon_pid=$!
for _ in $(seq 100); do [ -S "$consumer" ] && break; sleep 0.1; done
for i in 1 2; do
  if ! timeout 120 "$build/sluice" record --daemon --consumer-socket "$consumer" -t 1s -q \
      -o "$scratch/trace$i.pftrace" >"$scratch/record$i" 2>&1; then
    fail "record $i through the socket-activated sluiced: $(cat "$scratch/record$i")"
  fi
done
if [ ${#notify_env[@]} -gt 0 ]; then
  wait "$notify_pid" || true
  grep -q '^READY=1$' "$scratch/notified" || fail "sluiced did not send READY=1: $(cat "$scratch/notified")"
fi
if [ "$(id -u)" -eq 0 ]; then
  chmod 0755 "$scratch"
  mkdir -m 1777 "$scratch/out"
  mode=$(sed -n 's/^SocketMode=//p' "$build/init/sluiced.socket")
  group=$(sed -n 's/^SocketGroup=//p' "$build/init/sluiced.socket")
  getent group "$group" >/dev/null || group=root
  gid=$(getent group "$group" | cut -d: -f3)
  chgrp "$group" "$scratch"/*.sock && chmod "$mode" "$scratch"/*.sock
  if setpriv --reuid=nobody --regid=nogroup --clear-groups "$build/sluice" record --daemon \
      --consumer-socket "$consumer" -t 1s -q -o "$scratch/out/refused.pftrace" >"$scratch/refused" 2>&1; then
    fail "a user outside group $group recorded through a $mode socket"
  fi
  grep -q "Permission denied: the socket is $mode root:$group.*usermod -aG $group" "$scratch/refused" ||
    fail "the refusal does not say how to get in: $(cat "$scratch/refused")"
  setpriv --reuid=nobody --regid=nogroup --groups="$gid" "$build/sluice" record --daemon \
      --consumer-socket "$consumer" -t 1s -q -o "$scratch/out/member.pftrace" >"$scratch/member" 2>&1 ||
    fail "a member of group $group could not record: $(cat "$scratch/member")"
else
  echo "unit-check: not root: the unprivileged-user checks are skipped"
fi
grep -q 'listening on fd 3 from systemd (producers) and fd 4 from systemd (consumers)' "$scratch/log" ||
  fail "sluiced did not take the activated sockets: $(cat "$scratch/log")"
kill -TERM "$daemon_pid"
status=0
for _ in $(seq 300); do kill -0 "$daemon_pid" 2>/dev/null || break; sleep 0.1; done
if kill -0 "$daemon_pid" 2>/dev/null; then
  fail "sluiced did not exit within 30 s of SIGTERM"
else
  wait "$daemon_pid" || status=$?
  daemon_pid=
  [ $status -eq 0 ] || fail "sluiced exited $status after SIGTERM: $(cat "$scratch/log")"
fi

# The journal's priority prefix, with stderr a file that JOURNAL_STREAM names.
: >"$scratch/stderr"
journal_stream=$(stat -c '%d:%i' "$scratch/stderr")
JOURNAL_STREAM=$journal_stream "$build/sluiced" --foreground --socket-group no-such-group-x \
  2>>"$scratch/stderr" && fail "sluiced accepted a missing group"
grep -q '^<3>sluiced: ' "$scratch/stderr" ||
  fail "sluiced's error is not at error priority: $(cat "$scratch/stderr")"
"$build/sluiced" --foreground --socket-group no-such-group-x 2>"$scratch/plain" || true
grep -q '^<' "$scratch/plain" && fail "priority prefix written to a stderr that is not the journal"

[ $failures -eq 0 ] || { echo "unit-check: $failures failure(s)" >&2; exit 1; }
echo "unit-check: sluiced ran as its units start it: socket activation, READY=1, two recordings, socket permissions, SIGTERM, error priority"
