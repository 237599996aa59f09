#!/bin/bash
# What `sluice clone` costs on a full 64 MiB ring session in sluiced, and
# whether the session it copies is disturbed (docs/PERFORMANCE.md, "Clones").
# Root; it uses the root tracefs instance (hold the kernel-test lock).
#
#   tests/bench/clone_cost.sh            # from the project root, after make
#
# It starts sluiced and sluice-probes on sockets in a temp dir, detaches a
# `--ring -b 64mb ftrace/print` session, writes 500000 numbered 200-byte
# trace_marker lines from one CPU (about 100 MB: the ring wraps), clones it
# twice (sluice clone's wall time and peak RSS, sluiced's RSS and peak RSS,
# and sluiced's log line with the time the copy held the service mutex),
# writes 100000 more markers, stops the session with --attach --stop, and
# checks each file's markers: one gap-free run, each once; `sluice stats`
# of the session's own trace.
set -euo pipefail
B=${B:-$(cd "$(dirname "$0")/../.." && pwd)/build}
D=$(mktemp -d /tmp/sluice-clone-cost-XXXXXX)
C=$D/consumer.sock
M=/sys/kernel/tracing/trace_marker
$B/sluiced --foreground --producer-socket $D/producer.sock --consumer-socket $C >$D/sluiced.out 2>$D/sluiced.err &
SL=$!
$B/sluice-probes --producer-socket $D/producer.sock >$D/probes.out 2>$D/probes.err &
PR=$!
trap 'kill $PR 2>/dev/null; wait $PR 2>/dev/null; kill $SL 2>/dev/null; wait $SL 2>/dev/null' EXIT
until grep -q "producer 1 .* connected" $D/sluiced.err; do sleep 0.1; done
$B/sluice record --daemon --consumer-socket $C --detach=bench --ring -b 64mb -k 64mb -t 1h -q ftrace/print -o $D/trace.pftrace
until echo cost-ready > $M && $B/sluice clone bench -o $D/ready.pftrace --consumer-socket $C >/dev/null && grep -q cost-ready $D/ready.pftrace; do sleep 0.1; done
rss() { awk '/^(VmRSS|VmHWM)/ {printf "%s %d MiB  ", $1, $2/1024}' /proc/$SL/status; echo; }
# Markers "cost-<seq>-" padded to 200 bytes, from one CPU, in bursts the
# readers keep up with.
write_markers() {  # first count
  taskset -c 0 python3 - "$1" "$2" <<'PY'
import os, sys, time
first, count = int(sys.argv[1]), int(sys.argv[2])
fd = os.open("/sys/kernel/tracing/trace_marker", os.O_WRONLY)
for i in range(first, first + count):
    os.write(fd, (b"cost-%d-" % i).ljust(200, b"x"))
    if i % 20000 == 19999: time.sleep(0.2)
os.close(fd)
PY
}
echo "sluiced before filling: $(rss)"
write_markers 0 500000            # ~100 MB of markers: the 64 MiB ring wraps
echo "sluiced with a full ring: $(rss)"
$B/sluice sessions --consumer-socket $C | sed -n '1,4p'
for i in 1 2; do
  /usr/bin/time -f "sluice clone: %e s wall, %M KiB max RSS (the client)" $B/sluice clone bench -o $D/clone$i.pftrace --consumer-socket $C
  echo "sluiced after clone $i (freed): $(rss)"
  grep "cloned into" $D/sluiced.err | tail -1
done
write_markers 500000 100000       # after the clones
$B/sluice record --attach=bench --stop -q --consumer-socket $C >$D/attach.out
$B/sluice stats $D/trace.pftrace | tail -n +1 | head -20 || true
for f in $D/clone1.pftrace $D/clone2.pftrace $D/trace.pftrace; do
  ls -l $f | awk '{print $5, $9}'
  # Every "cost-N-" once; first and last N and whether the run is gap-free.
  grep -ao 'cost-[0-9]*-' $f | tr -dc '0-9\n' | sort -n | uniq -c | awk '
    { if ($1 != 1) dup++; n = $2; if (NR == 1) first = n; else if (n != last + 1) gaps++; last = n; count++ }
    END { printf "  markers %d..%d: %d, gaps %d, duplicates %d\n", first, last, count, gaps + 0, dup + 0 }'
done
echo "dir: $D"
