#!/bin/bash
# What `sluice query --httpd` costs between queries and per query, for two
# builds side by side (no root needed; nothing touches tracefs).
#
#   tests/bench/httpd_connection_cost.sh BASELINE_SLUICE [SLUICE] [REPS]
#     SLUICE defaults to build/sluice, REPS to 3. Each binary needs its
#     plugin (sluice-query-httpd.so) beside it.
#
# Each round starts the baseline's server, then this build's (on a free port,
# with tests/data/query/loss_kernel.pftrace), and drives it with Perfetto's
# Python client (../shared/tools/perfetto/python, Debian's python3):
#   idle    the client connected after one query, then idle for IDLE_S (10)
#           seconds: the server's wake-ups and CPU per second over them
#           (every thread's /proc/PID/task/TID/schedstat)
#   query   QUERIES (500) times `select 1`: wall time per query in the
#           client, and the server's CPU per query
# Printed: each round's figures, then the medians per build.
set -euo pipefail
baseline=${1:?usage: tests/bench/httpd_connection_cost.sh BASELINE_SLUICE [SLUICE] [REPS]}
current=${2:-build/sluice}
reps=${3:-3}
idle_s=${IDLE_S:-10}
queries=${QUERIES:-500}
client=${CLIENT:-../shared/tools/perfetto/python}
trace=tests/data/query/loss_kernel.pftrace
[ -d "$client/perfetto" ] || { echo "httpd_connection_cost.sh: no Perfetto Python client at $client: set CLIENT" >&2; exit 1; }
out=$(mktemp -d /tmp/sluice-httpd-bench.XXXXXX)
server=
cleanup() {
  [ -z "$server" ] || { kill "$server" 2>/dev/null; wait "$server" 2>/dev/null; }
  rm -rf "$out"
}
trap cleanup EXIT

# The client: one query, then a line on stdout; waits for a line on stdin
# (the idle period is measured meanwhile); then the timed queries.
cat >"$out/client.py" <<'EOF'
import sys, time
from perfetto.trace_processor import TraceProcessor
tp = TraceProcessor(addr=sys.argv[1])
tp.query('select 1')
print('connected', flush=True)
sys.stdin.readline()
n = int(sys.argv[2])
start = time.perf_counter()
for _ in range(n):
    tp.query('select 1')
print('%.1f' % ((time.perf_counter() - start) / n * 1e6), flush=True)
EOF

# Sum over the server's threads: "cpu_ns wakeups".
server_schedstat() {
  cat /proc/"$server"/task/*/schedstat | awk '{cpu += $1; wakes += $3} END {print cpu, wakes}'
}

# One round of one build: "idle_wakeups_per_s idle_cpu_ms_per_s query_us server_cpu_us_per_query".
measure() {
  local bin=$1 port
  : >"$out/server.log"
  "$bin" query --httpd --http-port 0 "$trace" 2>"$out/server.log" &
  server=$!
  until port=$(sed -n 's/.*serving on http:\/\/127\.0\.0\.1:\([0-9]*\).*/\1/p' "$out/server.log") && [ -n "$port" ]; do
    kill -0 "$server" 2>/dev/null || { cat "$out/server.log" >&2; exit 1; }
    sleep 0.1
  done
  coproc CLIENT_PROC { PYTHONPATH=$client exec /usr/bin/python3 "$out/client.py" "127.0.0.1:$port" "$queries"; }
  local line
  read -r line <&"${CLIENT_PROC[0]}"
  [ "$line" = connected ] || { echo "httpd_connection_cost.sh: the client failed" >&2; exit 1; }
  local c0 w0 c1 w1 c2 w2 per_query
  read -r c0 w0 < <(server_schedstat)
  sleep "$idle_s"
  read -r c1 w1 < <(server_schedstat)
  echo go >&"${CLIENT_PROC[1]}"
  read -r per_query <&"${CLIENT_PROC[0]}"
  read -r c2 w2 < <(server_schedstat)
  wait "$CLIENT_PROC_PID" 2>/dev/null || true
  kill "$server"
  wait "$server" 2>/dev/null || true
  server=
  awk -v c0="$c0" -v w0="$w0" -v c1="$c1" -v w1="$w1" -v c2="$c2" -v s="$idle_s" -v q="$per_query" -v n="$queries" \
    'BEGIN {printf "%.1f %.3f %s %.1f\n", (w1 - w0) / s, (c1 - c0) / 1e6 / s, q, (c2 - c1) / 1e3 / n}'
}

echo "idle ${idle_s} s with a connected client; $queries x 'select 1'; $reps rounds; load: $(cut -d' ' -f1-3 /proc/loadavg)"
echo "build: idle wake-ups/s, idle CPU ms/s, us per query (client wall), server CPU us per query"
for round in $(seq "$reps"); do
  for which in baseline current; do
    # Not in a $(...) subshell: the EXIT trap must see $server.
    measure "${!which}" >"$out/figures"
    cat "$out/figures" >>"$out/$which"
    echo "round $round $which: $(cat "$out/figures")"
  done
done
for which in baseline current; do
  printf '%s (%s), medians: ' "$which" "${!which}"
  for col in 1 2 3 4; do
    sort -n -k"$col","$col" "$out/$which" | awk -v c="$col" '{v[NR] = $c} END {printf "%s ", v[int((NR + 1) / 2)]}'
  done
  echo
done
