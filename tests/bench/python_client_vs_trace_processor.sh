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
# `trace_processor_shell -D`) and, once it answers /status:
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
PYTHONPATH=$CLIENT exec /usr/bin/python3 - "$SLUICE" "$TRACE_PROCESSOR" "$TRACE" "$SQL" "$REPS" <<'PY'
import re, socket, statistics, subprocess, sys, time, urllib.request
from perfetto.trace_processor import TraceProcessor

sluice, tp_shell, trace, sql, reps = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4], int(sys.argv[5])

def free_port():
  with socket.socket() as s:
    s.bind(('127.0.0.1', 0))
    return s.getsockname()[1]

def start(server):
  port = free_port()
  if server == 'sluice':
    cmd = [sluice, 'query', '--httpd', '--http-port', str(port), trace]
  else:
    cmd = [tp_shell, '-D', '--http-port', str(port), trace]
  t0 = time.monotonic()
  proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
  while proc.poll() is None:
    try:
      urllib.request.urlopen(f'http://127.0.0.1:{port}/status', timeout=600).read()
      return proc, port, time.monotonic() - t0
    except OSError:
      time.sleep(0.05)
  raise SystemExit(f'{server} exited with {proc.returncode}')

def peak_rss_mb(pid):
  with open(f'/proc/{pid}/status') as f:
    return int(re.search(r'VmHWM:\s+(\d+)', f.read()).group(1)) / 1024

results = {'sluice': [], 'upstream': []}
cli_rss = []
for rep in range(reps):
  for server in (('sluice', 'upstream') if rep % 2 == 0 else ('upstream', 'sluice')):
    proc, port, ready = start(server)
    try:
      tp = TraceProcessor(addr=f'127.0.0.1:{port}')
      t0 = time.monotonic()
      result = tp.query(sql)
      t1 = time.monotonic()
      df = result.as_pandas_dataframe()
      t2 = time.monotonic()
      rss = peak_rss_mb(proc.pid)
      rows = len(df)
      del df, result
      tp.close()
    finally:
      proc.terminate()
      proc.wait()
    results[server].append((ready, t1 - t0, t2 - t1, rss))
    print(f'rep {rep + 1} {server:8}: ready {ready:6.2f} s  query {t1 - t0:6.2f} s  frame {t2 - t1:6.2f} s  '
          f'total {t2 - t0:6.2f} s  server peak RSS {rss:7.0f} MB  rows {rows}', flush=True)
  out = subprocess.run(['/usr/bin/time', '-f', '%M', sluice, 'query', trace, '-q', sql, '--format', 'csv'],
                       stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, check=True)
  cli_rss.append(int(out.stderr.strip().splitlines()[-1]) / 1024)
  print(f'rep {rep + 1} sluice query -q (CLI): peak RSS {cli_rss[-1]:7.0f} MB', flush=True)

print('medians:')
for server, runs in results.items():
  med = [statistics.median(r[i] for r in runs) for i in range(4)]
  print(f'  {server:8}: ready {med[0]:6.2f} s  query {med[1]:6.2f} s  frame {med[2]:6.2f} s  '
        f'query+frame {statistics.median(r[1] + r[2] for r in runs):6.2f} s  server peak RSS {med[3]:7.0f} MB')
print(f'  sluice query -q peak RSS {statistics.median(cli_rss):7.0f} MB')
PY
