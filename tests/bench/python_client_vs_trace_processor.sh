#!/bin/bash
# Perfetto's Python client against sluice's trace_processor HTTP server and
# against upstream's trace_processor_shell, side by side in one run, on the
# same trace (issue 36, item 6).
#
#   tests/bench/python_client_vs_trace_processor.sh         # from the project root
#   TRACE=my.pftrace REPS=5 SQL='select * from thread_state' tests/bench/python_client_vs_trace_processor.sh
#
# The trace: TRACE, or build/bench/sched-10m.pftrace (tests/bench/
# query_vs_trace_processor.sh records it). In each repetition both servers
# run, one after the other, the first one alternating (load drifts hit both,
# and so does the slower first decode in a fresh Python heap). Each is
# started with the trace on its command line (`sluice query --httpd`,
# `trace_processor_shell -D`) by a Python process of its own, which, once
# the server answers /status, measures:
#   query     the client's tp.query(SQL): request, streamed reply, decoding
#   frame     .as_pandas_dataframe() on it
#   rss       the server's peak RSS (VmHWM) after the query
# and once per repetition `sluice query TRACE -q SQL --format csv` run to
# /dev/null, whose peak RSS the server's is compared with. Medians last.
set -u

REPS=${REPS:-3}
BUILD_DIR=${BUILD_DIR:-build}
SLUICE=${SLUICE:-$BUILD_DIR/sluice}
TRACE_PROCESSOR=${TRACE_PROCESSOR:-../shared/tools/perfetto/trace_processor_shell}
CLIENT=${CLIENT:-../shared/tools/perfetto/python}
TRACE=${TRACE:-$BUILD_DIR/bench/sched-10m.pftrace}
SQL=${SQL:-select * from sched}

die() { echo "python_client_vs_trace_processor: $*" >&2; exit 1; }
[ -x "$SLUICE" ] || die "$SLUICE not built: make $SLUICE"
[ -x "$TRACE_PROCESSOR" ] || die "no trace_processor_shell at $TRACE_PROCESSOR: set TRACE_PROCESSOR"
[ -s "$TRACE" ] || die "no trace at $TRACE: run tests/bench/query_vs_trace_processor.sh once, or set TRACE"
[ -d "$CLIENT/perfetto" ] || die "no Perfetto Python client at $CLIENT: set CLIENT"

echo "trace: $TRACE ($(du -h "$TRACE" | cut -f1)); query: $SQL; $REPS reps; $(nproc) CPUs"
WORK=$(mktemp -d /tmp/sluice-python-bench.XXXXXX)
trap 'rm -rf "$WORK"' EXIT

# One measurement, in a Python process of its own (a notebook's first
# query): a process that has decoded a result before decodes the next one
# at another speed, whichever server sent it.
cat >"$WORK/one.py" <<'PY'
import json, re, socket, subprocess, sys, time, urllib.request
from perfetto.trace_processor import TraceProcessor

server, sluice, tp_shell, trace, sql = sys.argv[1:6]

def free_port():
  with socket.socket() as s:
    s.bind(('127.0.0.1', 0))
    return s.getsockname()[1]

port = free_port()
if server == 'sluice':
  cmd = [sluice, 'query', '--httpd', '--http-port', str(port), trace]
else:
  cmd = [tp_shell, '-D', '--http-port', str(port), trace]
t0 = time.monotonic()
proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
while True:
  if proc.poll() is not None:
    sys.exit(f'{server} exited with {proc.returncode}')
  try:
    urllib.request.urlopen(f'http://127.0.0.1:{port}/status', timeout=600).read()
    break
  except OSError:
    time.sleep(0.05)
ready = time.monotonic() - t0
try:
  tp = TraceProcessor(addr=f'127.0.0.1:{port}')
  t1 = time.monotonic()
  result = tp.query(sql)
  t2 = time.monotonic()
  df = result.as_pandas_dataframe()
  t3 = time.monotonic()
  with open(f'/proc/{proc.pid}/status') as f:
    rss = int(re.search(r'VmHWM:\s+(\d+)', f.read()).group(1)) / 1024
finally:
  proc.kill()
  proc.wait()
print(json.dumps({'ready': ready, 'query': t2 - t1, 'frame': t3 - t2, 'rss': rss, 'rows': len(df)}))
PY

PYTHONPATH=$CLIENT exec /usr/bin/python3 - "$SLUICE" "$TRACE_PROCESSOR" "$TRACE" "$SQL" "$REPS" "$WORK/one.py" <<'PY'
import json, statistics, subprocess, sys

sluice, tp_shell, trace, sql, reps, one = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4], int(sys.argv[5]), sys.argv[6]

results = {'sluice': [], 'upstream': []}
cli_rss = []
for rep in range(reps):
  for server in (('sluice', 'upstream') if rep % 2 == 0 else ('upstream', 'sluice')):
    out = subprocess.run([sys.executable, one, server, sluice, tp_shell, trace, sql],
                         check=True, capture_output=True, text=True).stdout
    r = json.loads(out)
    results[server].append(r)
    print(f"rep {rep + 1} {server:8}: ready {r['ready']:6.2f} s  query {r['query']:6.2f} s  frame {r['frame']:6.2f} s  "
          f"total {r['query'] + r['frame']:6.2f} s  server peak RSS {r['rss']:7.0f} MB  rows {r['rows']}", flush=True)
  out = subprocess.run(['/usr/bin/time', '-f', '%M', sluice, 'query', trace, '-q', sql, '--format', 'csv'],
                       stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, check=True)
  cli_rss.append(int(out.stderr.strip().splitlines()[-1]) / 1024)
  print(f'rep {rep + 1} sluice query -q (CLI): peak RSS {cli_rss[-1]:7.0f} MB', flush=True)

print('medians:')
for server, runs in results.items():
  med = lambda key: statistics.median(r[key] for r in runs)
  print(f"  {server:8}: ready {med('ready'):6.2f} s  query {med('query'):6.2f} s  frame {med('frame'):6.2f} s  "
        f"query+frame {statistics.median(r['query'] + r['frame'] for r in runs):6.2f} s  server peak RSS {med('rss'):7.0f} MB")
print(f'  sluice query -q peak RSS {statistics.median(cli_rss):7.0f} MB')
PY
