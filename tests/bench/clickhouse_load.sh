#!/bin/bash
# sluice export --clickhouse: load throughput (rows per second) of a 10 M-event
# trace into a local ClickHouse, beside ClickHouse's own ingest of the same
# rows in the same run.
#
#   tests/bench/clickhouse_load.sh                # from the project root
#   TRACE=my.pftrace REPS=3 tests/bench/clickhouse_load.sh
#
# The trace: TRACE, or (default) build/bench/sched-10m.pftrace, recorded here
# when missing (root, tracefs) as query_vs_trace_processor.sh records it:
# sluice record of sched_switch, sched_waking and ftrace/print (compact_sched)
# while stress-ng --switch 2 runs uncapped for 11 s (about 1 M events/s on a
# 2-CPU machine: >= 10 M events).
#
# The server: Debian's clickhouse-server started for the run on free
# loopback ports (HTTP, and the native port clickhouse-client needs), its
# files in the run's temporary directory; stopped and removed at the end.
#
# Per repetition, each into a fresh database:
#   sluice      build/sluice export TRACE --clickhouse URL: the import of the
#               trace and the load of its 19 tables (sched, thread_state, ...)
#               into staging partitions, then REPLACE PARTITION and the
#               traces row. Reported: the load's rows and seconds as sluice
#               prints them (the import excluded), and the whole command's
#               wall and CPU seconds and peak RSS (/usr/bin/time).
#   client      clickhouse-client --query 'INSERT INTO t FORMAT TabSeparated'
#               < t.tsv per table, with the same rows (dumped from sluice's
#               load beforehand, SELECT * ... FORMAT TabSeparated): ClickHouse's
#               own fastest way in (the client parses, the native protocol
#               carries blocks). Its wall seconds, summed over the tables.
#   http        curl -X POST -T t.tsv (streamed) to the HTTP interface, the path
#               sluice uses, with the same files.
# The baselines read ready-made text; sluice also reads the trace's tables
# out of its query engine and writes the text.
set -u

REPS=${REPS:-3}
BUILD_DIR=${BUILD_DIR:-build}
SLUICE=${SLUICE:-$BUILD_DIR/sluice}
TRACE=${TRACE:-$BUILD_DIR/bench/sched-10m.pftrace}
WORK=$(mktemp -d /tmp/sluice-clickhouse-bench.XXXXXX)
SERVER_PID=
cleanup() {
  if [ -n "$SERVER_PID" ]; then
    kill -TERM "$SERVER_PID" 2>/dev/null
    wait "$SERVER_PID" 2>/dev/null
  fi
  rm -rf "$WORK"
}
trap cleanup EXIT

die() { echo "clickhouse_load: $*" >&2; exit 1; }
[ -x "$SLUICE" ] || die "$SLUICE not built: make $SLUICE"
[ -x /usr/bin/time ] || die "/usr/bin/time missing: apt-get install time"
SERVER=$(command -v clickhouse-server || ls /usr/sbin/clickhouse-server 2>/dev/null) ||
  die "no clickhouse-server: mk/ensure-deps.sh bench (apt-get install clickhouse-server clickhouse-client)"
command -v clickhouse-client >/dev/null || die "no clickhouse-client: apt-get install clickhouse-client"

. "$(dirname "$0")/bench_common.sh"
bench_record_sched_10m "$SLUICE" "$TRACE"
EVENTS=$("$SLUICE" stats "$TRACE" | sed -n 's/.*bytes, \([0-9]*\) ftrace events.*/\1/p')
echo "trace: $TRACE ($(stat -c %s "$TRACE") bytes, ${EVENTS:-?} ftrace events)"

free_port() {
  python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}
HTTP_PORT=$(free_port)
TCP_PORT=$(free_port)
mkdir -p "$WORK/ch"
cat > "$WORK/ch/config.xml" <<EOF
<?xml version="1.0"?>
<yandex>
  <logger><level>warning</level><log>$WORK/ch/server.log</log><errorlog>$WORK/ch/error.log</errorlog><console>0</console></logger>
  <listen_host>127.0.0.1</listen_host>
  <http_port>$HTTP_PORT</http_port>
  <tcp_port>$TCP_PORT</tcp_port>
  <path>$WORK/ch/data/</path>
  <tmp_path>$WORK/ch/tmp/</tmp_path>
  <user_files_path>$WORK/ch/user_files/</user_files_path>
  <format_schema_path>$WORK/ch/format_schemas/</format_schema_path>
  <mark_cache_size>268435456</mark_cache_size>
  <users_config>$WORK/ch/users.xml</users_config>
  <default_profile>default</default_profile>
  <default_database>default</default_database>
</yandex>
EOF
cat > "$WORK/ch/users.xml" <<'EOF'
<?xml version="1.0"?>
<yandex>
  <profiles><default></default></profiles>
  <users><default><password></password><networks><ip>127.0.0.1</ip></networks><profile>default</profile><quota>default</quota></default></users>
  <quotas><default></default></quotas>
</yandex>
EOF
"$SERVER" --config-file="$WORK/ch/config.xml" >"$WORK/ch/stdout" 2>&1 &
SERVER_PID=$!
for _ in $(seq 1 600); do
  [ "$(curl -s "http://127.0.0.1:$HTTP_PORT/ping")" = "Ok." ] && break
  kill -0 "$SERVER_PID" 2>/dev/null || die "clickhouse-server exited: $(cat "$WORK/ch/stdout" "$WORK/ch/error.log" 2>/dev/null)"
  sleep 0.1
done
[ "$(curl -s "http://127.0.0.1:$HTTP_PORT/ping")" = "Ok." ] || die "clickhouse-server did not answer /ping"
ch() { curl -sS "http://127.0.0.1:$HTTP_PORT/" --data-binary "$1"; }
echo "server: ClickHouse $(ch 'SELECT version()') on 127.0.0.1:$HTTP_PORT (native $TCP_PORT)"
# Wall seconds, CPU seconds, peak RSS (MB) of a command, from /usr/bin/time.
timed() {
  /usr/bin/time -f '%e %U %S %M' -o "$WORK/time" "$@"
  local rc=$?
  read -r wall user sys rss < "$WORK/time"
  TIMED="wall ${wall}s cpu $(echo "$user + $sys" | bc)s rss $((rss / 1024))MB"
  return $rc
}

# The rows, dumped from a first load, for the baselines: one file per table.
"$SLUICE" export "$TRACE" --clickhouse "http://127.0.0.1:$HTTP_PORT/?database=dump" >/dev/null ||
  die "the first load failed"
TABLES=$(ch "SELECT name FROM system.tables WHERE database = 'dump' AND name NOT LIKE 'sluice_staging_%' AND name != 'traces' FORMAT TabSeparated")
ROWS=0
for t in $TABLES; do
  ch "SELECT * FROM dump.$t FORMAT TabSeparated" > "$WORK/$t.tsv"
  ROWS=$((ROWS + $(wc -l < "$WORK/$t.tsv")))
done
echo "rows: $ROWS in $(echo $TABLES | wc -w) tables, $(du -cb "$WORK"/*.tsv | tail -n 1 | cut -f1) bytes of TabSeparated"
echo

for rep in $(seq 1 "$REPS"); do
  db=s$rep
  timed "$SLUICE" export "$TRACE" --clickhouse "http://127.0.0.1:$HTTP_PORT/?database=$db" > "$WORK/out" ||
    die "sluice export failed: $(cat "$WORK/out")"
  line=$(cat "$WORK/out")
  rows=$(echo "$line" | sed -n 's/.*tables, \([0-9]*\) rows in \([0-9.]*\) s (\([0-9]*\) rows\/s).*/\1 \2 \3/p')
  read -r n secs rate <<<"$rows"
  echo "rep $rep  sluice  load: $n rows in ${secs}s = $rate rows/s; whole command (import + load): $TIMED"

  for how in client http; do
    db=$how$rep
    ch "CREATE DATABASE $db"
    for t in $TABLES; do ch "CREATE TABLE $db.$t AS dump.$t"; done
    start=$(date +%s.%N)
    for t in $TABLES; do
      [ -s "$WORK/$t.tsv" ] || continue  # Both refuse an insert without rows.
      if [ $how = client ]; then
        clickhouse-client --port "$TCP_PORT" --query "INSERT INTO $db.$t FORMAT TabSeparated" < "$WORK/$t.tsv" ||
          die "clickhouse-client failed on $t"
      else
        curl -sS --fail -X POST -T "$WORK/$t.tsv" \
          "http://127.0.0.1:$HTTP_PORT/?query=INSERT%20INTO%20$db.$t%20FORMAT%20TabSeparated" ||
          die "curl failed on $t"
      fi
    done
    end=$(date +%s.%N)
    secs=$(echo "$end - $start" | bc)
    echo "rep $rep  $how  load: $ROWS rows in ${secs}s = $(echo "$ROWS / $secs" | bc) rows/s"
  done
  got=$(ch "SELECT sum(rows) FROM system.parts WHERE active AND database IN ('s$rep') AND table NOT LIKE 'sluice_staging_%' AND table != 'traces' FORMAT TabSeparated")
  [ "$got" = "$ROWS" ] || echo "rep $rep: sluice's database holds $got rows, not $ROWS" >&2
done
