#!/usr/bin/python3
"""Perfetto's Python API, unchanged, against a trace_processor HTTP server.

Run by tests/user/cmd/query_httpd_python_test.cc, once against sluice and,
where ../shared/tools/perfetto has it, once against upstream's
trace_processor_shell: the same checks pass on both, so they test the
protocol, not sluice's reading of it.

  query_httpd_python_check.py --server sluice --bin-dir build
  query_httpd_python_check.py --server upstream --tp PATH/trace_processor_shell

Both ways of reaching a server are used: the client starting it itself
(TraceProcessorConfig(bin_path=...), the trace uploaded with /parse) and a
server already running with the trace from its command line
(TraceProcessor(addr=...)). Rows are compared with the committed expected
answers in tests/data/query/expected/, which are upstream's; on sluice they
are also compared with `sluice query --format csv`.
"""

import argparse
import csv
import os
import re
import socket
import subprocess
import sys
import time
import urllib.request

from perfetto.trace_processor import TraceProcessor, TraceProcessorConfig
from perfetto.trace_processor.api import TraceProcessorException

DATA = 'tests/data/query'
# Every query on these traces; the core tables on every trace.
FULL_TRACES = ['loss_kernel', 'track_events', 'critical_path']
CORE_QUERIES = ['sched', 'thread', 'process', 'thread_state', 'counter']

failures = []


def fail(message):
  failures.append(message)
  print('FAIL: ' + message, flush=True)


# Queries whose upstream answer query_reference_test.cc normalises first
# (sluice's own stats rows, config fields upstream cannot name, arg set ids
# numbered differently): that test compares them; this one leaves them out.
NORMALISED = {'stats', 'data_loss'}
NOT_COMPARED = {
    'metadata_config': {'bpf', 'loss_bpf', 'loss_bpf_ext', 'atrace_bpf', 'arm64_bpf', 'upstream'},
    'ps_slices_with_context': {'syscalls', 'syscalls_x86_64_names', 'syscalls_aarch64_names',
                               'syscalls_rec', 'android_kernel', 'track_events'},
}


def compared(trace, query):
  return query not in NORMALISED and trace not in NOT_COMPARED.get(query, ())


def upstream_csv(column_names, rows):
  """Rows as trace_processor_shell -q prints them, which is how the
  expected answers are kept: names and strings in quotes (not escaped),
  NULL as "[NULL]", reals with %f, blobs as "<raw bytes>"."""
  def cell(value):
    if value is None:
      return '"[NULL]"'
    if isinstance(value, bytes):
      return '"<raw bytes>"'
    if isinstance(value, float):
      return '%f' % value
    if isinstance(value, int):
      return str(value)
    return '"' + value.split('\0')[0] + '"'
  lines = [','.join('"' + c + '"' for c in column_names)]
  lines += [','.join(cell(v) for v in row) for row in rows]
  return '\n'.join(lines) + '\n'


def check_query(tp, trace, query):
  with open(f'{DATA}/expected/{trace}.{query}.csv') as f:
    expected = f.read()
  with open(f'{DATA}/queries/{query}.sql') as f:
    sql = f.read()
  try:
    result = tp.query(sql)
  except TraceProcessorException as e:
    fail(f'{trace}.{query}: the query failed: {e}')
    return
  names = list(result.column_names)
  rows = [[getattr(row, c) for c in names] for row in result]
  if not names:
    if expected.strip():
      fail(f'{trace}.{query}: no columns where {expected[:80]!r} was expected')
    return
  got = upstream_csv(names, rows)
  # The client gets the last statement's rows; upstream's -q printed every
  # statement's, a blank line between them.
  if expected == got or expected.endswith('\n\n' + got):
    return
  want_lines, got_lines = expected.split('\n'), got.split('\n')
  tail = want_lines[-len(got_lines):]
  first = next((i for i, (a, b) in enumerate(zip(tail, got_lines)) if a != b), min(len(tail), len(got_lines)))
  fail(f'{trace}.{query}: {len(got_lines) - 2} rows; first difference at line {first + 1}: '
       f'got {got_lines[first][:160] if first < len(got_lines) else None!r}, '
       f'want {tail[first][:160] if first < len(tail) else None!r}')


def check_types(tp, sluice_csv):
  """NULLs, reals, blobs and 64-bit integers, into a DataFrame."""
  sql = ("select 1.5 as r, null as n, x'00ff' as b, 'text' as s, "
         "9223372036854775807 as big, -9223372036854775807 - 1 as small, "
         "0.1 + 0.2 as sum, 1e300 as huge")
  df = tp.query(sql).as_pandas_dataframe()
  row = df.iloc[0]
  want = {'r': 1.5, 'n': None, 'b': b'\x00\xff', 's': 'text',
          'big': 9223372036854775807, 'small': -9223372036854775808,
          'sum': 0.1 + 0.2, 'huge': 1e300}
  for column, value in want.items():
    if row[column] != value and not (value is None and row[column] is None):
      fail(f'types: {column} = {row[column]!r}, want {value!r}')
  if sluice_csv:
    # The same row as `sluice query --format csv` prints it.
    lines = sluice_csv(sql).splitlines()
    fields = next(csv.reader([lines[1]]))
    for column, text in zip(lines[0].split(','), fields):
      value = row[column]
      if value is None:
        ok = text == ''
      elif isinstance(value, bytes):
        ok = text == "X'" + value.hex() + "'"
      elif isinstance(value, float):
        ok = float(text) == value
      else:
        ok = text == str(value)
      if not ok:
        fail(f'types: {column}: client {value!r}, sluice query --format csv {text!r}')


def check_errors(tp):
  try:
    tp.query('select no_such_column from sched')
    fail('a bad query raised nothing')
  except TraceProcessorException as e:
    if 'no_such_column' not in str(e):
      fail(f'a bad query raised {e!r}, without the name of the bad column')
  # The connection serves on after an error.
  if tp.query('select 1 as one').as_pandas_dataframe()['one'][0] != 1:
    fail('the query after an error failed')


SUMMARY_SPEC = 'user/query/summary/specs/cpu_per_process.textproto'


def check_summary(tp, args, trace):
  """trace_summary() gives what the command line gives for the same spec."""
  with open(SUMMARY_SPEC) as f:
    spec_text = f.read()
  if args.server == 'sluice':
    cmd = [f'{args.bin_dir}/sluice', 'query', trace]
  else:
    cmd = [args.tp]
  cmd += ['--summary', '--summary-spec', SUMMARY_SPEC, '--summary-metrics-v2', 'cpu_time_per_process',
          '--summary-format', 'binary']
  if args.server == 'upstream':
    cmd.append(trace)
  command_line = subprocess.run(cmd, check=True, capture_output=True).stdout
  expected = tp.protos.TraceSummary()
  expected.ParseFromString(command_line)
  for metric_ids in (None, ['cpu_time_per_process']):
    got = tp.trace_summary([spec_text], metric_ids)
    if got != expected:
      fail(f'trace_summary(metric_ids={metric_ids}) differs from the command line: '
           f'{len(got.metric_bundles)} bundles, {sum(len(b.row) for b in got.metric_bundles)} rows; want '
           f'{sum(len(b.row) for b in expected.metric_bundles)} rows')
  if not expected.metric_bundles or not expected.metric_bundles[0].row:
    fail('the summary has no rows to compare')
  try:
    tp.trace_summary(['metric_spec { id: "x" value: "v" query { table { table_name: "nope" } } }'])
    fail('a summary of a missing table raised nothing')
  except TraceProcessorException:
    pass


def free_port():
  with socket.socket() as s:
    s.bind(('127.0.0.1', 0))
    return s.getsockname()[1]


class RunningServer:
  """A server for addr=, started with the trace on its command line or
  none."""

  def __init__(self, args, trace):
    self.log = open(os.devnull, 'w')
    if args.server == 'sluice':
      cmd = [f'{args.bin_dir}/sluice', 'query', '--httpd', '--http-port', '0'] + ([trace] if trace else [])
      self.proc = subprocess.Popen(cmd, stderr=subprocess.PIPE, stdout=self.log, text=True)
      line = self.proc.stderr.readline()
      m = re.search(r'http://127\.0\.0\.1:(\d+)', line)
      if not m:
        self.stop()
        raise RuntimeError(f'sluice query --httpd said {line!r}')
      self.port = int(m.group(1))
    else:
      self.port = free_port()
      cmd = [args.tp, '-D', '--http-port', str(self.port)] + ([trace] if trace else [])
      self.proc = subprocess.Popen(cmd, stderr=self.log, stdout=self.log)
    self.wait_ready()

  def wait_ready(self):
    # Upstream prints nothing to wait on: poll /status until it answers or
    # the server exits (no fixed deadline: a busy machine is slow).
    while self.proc.poll() is None:
      try:
        urllib.request.urlopen(f'http://127.0.0.1:{self.port}/status', timeout=30).read()
        return
      except OSError:
        time.sleep(0.05)
    raise RuntimeError(f'the server exited with {self.proc.returncode}')

  def stop(self):
    self.proc.terminate()
    self.proc.wait(timeout=60)
    if self.proc.stderr:
      self.proc.stderr.close()
    self.log.close()


def main():
  parser = argparse.ArgumentParser()
  parser.add_argument('--server', choices=['sluice', 'upstream'], required=True)
  parser.add_argument('--bin-dir', default='build')
  parser.add_argument('--tp')
  args = parser.parse_args()
  if args.server == 'sluice':
    bin_path = f'{args.bin_dir}/sluice-trace-processor'

    def sluice_csv(sql, trace=f'{DATA}/loss_kernel.pftrace'):
      return subprocess.run([f'{args.bin_dir}/sluice', 'query', trace, '-q', sql, '--format', 'csv'],
                            check=True, capture_output=True, text=True).stdout
  else:
    bin_path = args.tp
    sluice_csv = None

  traces = sorted(f[:-len('.pftrace')] for f in os.listdir(DATA) if f.endswith('.pftrace'))
  queries = sorted(f[:-len('.sql')] for f in os.listdir(f'{DATA}/queries') if f.endswith('.sql'))

  # 1. The client starts the server itself and uploads the trace.
  for trace in FULL_TRACES:
    # The client passes --no-ftrace-raw unless told otherwise: upstream then
    # leaves ftrace_event empty, which its expected answers did not; sluice
    # keeps every event either way.
    config = TraceProcessorConfig(bin_path=bin_path, unique_port=True, ingest_ftrace_in_raw=True)
    with TraceProcessor(trace=f'{DATA}/{trace}.pftrace', config=config) as tp:
      for query in queries:
        if compared(trace, query):
          check_query(tp, trace, query)
      if trace == 'loss_kernel':
        check_types(tp, sluice_csv)
        check_errors(tp)
        check_summary(tp, args, f'{DATA}/{trace}.pftrace')
  print(f'bin_path: {len(FULL_TRACES)} traces checked', flush=True)

  # 2. One running server; the client uploads every committed trace in turn
  # (each upload replaces the trace before it).
  server = RunningServer(args, None)
  try:
    for trace in traces:
      tp = TraceProcessor(trace=f'{DATA}/{trace}.pftrace', addr=f'127.0.0.1:{server.port}')
      for query in CORE_QUERIES:
        if compared(trace, query):
          check_query(tp, trace, query)
      tp.close()
  finally:
    server.stop()
  print(f'addr, uploaded: {len(traces)} traces checked', flush=True)

  # 3. A running server, the trace from its command line.
  for trace in FULL_TRACES:
    server = RunningServer(args, f'{DATA}/{trace}.pftrace')
    try:
      tp = TraceProcessor(addr=f'127.0.0.1:{server.port}')
      for query in queries:
        if compared(trace, query):
          check_query(tp, trace, query)
      check_errors(tp)
      if trace == 'loss_kernel':
        check_summary(tp, args, f'{DATA}/{trace}.pftrace')
      tp.close()
    finally:
      server.stop()
  print(f'addr, from the command line: {len(FULL_TRACES)} traces checked', flush=True)

  if failures:
    print(f'{len(failures)} checks failed', flush=True)
    return 1
  print('all checks passed', flush=True)
  return 0


if __name__ == '__main__':
  try:
    sys.exit(main())
  finally:
    # The client polls a server it starts with urlretrieve() and no file
    # name: each poll's answer stays in a /tmp/tmpXXXXXXXX until this.
    urllib.request.urlcleanup()
