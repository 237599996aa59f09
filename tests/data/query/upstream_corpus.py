#!/usr/bin/env python3
"""Runs upstream Perfetto's own parser checks (its diff tests) against sluice
query and prints how many give upstream's answer.

This is how the importer-parity figure in docs/QUERY.md is measured: each
check is a small trace (a text proto), a query and the CSV upstream's
trace_processor gives; sluice passes a check when its CSV has the same rows.
It is a development tool, not a CI test: it needs a checkout of upstream's
test and proto trees, and its expectations are upstream's, not committed here.

usage: upstream_corpus.py --upstream DIR [--sluice PATH] [--suite NAME...]
                          [--show-failures] [--only TEST]
  DIR is a tree of Perfetto's source at the tag whose trace_processor_shell
  ../shared/tools/perfetto holds, e.g.
    git -C /work/.mirror/google+perfetto/repo archive v58.2 \
      test/trace_processor/diff_tests test/synth_common.py \
      python/generators/diff_tests protos/perfetto protos/third_party \
      | tar -x -C /tmp/pf58
  A check whose query names a table, function or module sluice does not have
  is counted apart as out of scope; so is a trace that is not a text proto.
"""

import argparse
import csv
import importlib
import importlib.util
import inspect
import io
import os
import subprocess
import sys
import tempfile
import types

# The Linux-kernel suites of upstream's parser checks: the ones whose traces a
# Linux or Android kernel recording makes, and track events (what SDK apps
# and daemons write). Android framework, Chrome, GPU, profiling and the other
# formats are out of sluice's scope.
DEFAULT_SUITES = [
    'ftrace/block_io_tests', 'ftrace/ftrace_crop_tests',
    'ftrace/generic_ftrace_tests', 'ftrace/kprobes_tests',
    'ftrace/kernel_trackevent_tests', 'parsing/tests',
    'parsing/tests_concurrent_sessions', 'parsing/tests_memory_counters',
    'parsing/tests_rss_stats', 'parsing/tests_sys_stats',
    'parsing/tests_traced_stats', 'process_tracking/tests', 'sched/tests',
    'linux/tests', 'memory/tests', 'power/tests_linux_sysfs_power',
    'atrace/tests', 'atrace/tests_error_handling', 'smoke/tests_sched_events',
    'track_event/tests',
]

# A check that needs a table, function or module sluice does not have at all is
# out of scope; a missing column of a table sluice has is a miss.
OUT_OF_SCOPE_ERRORS = ('no such table', 'no such function', 'no such module',
                       'is written for android', 'is written for chrome')


def stub_protobuf():
  """testing.py imports protobuf's text_format only for a default argument;
  a stand-in keeps this tool free of the Python protobuf package."""
  google = types.ModuleType('google')
  protobuf = types.ModuleType('google.protobuf')
  text_format = types.ModuleType('google.protobuf.text_format')
  text_format.MessageToString = lambda message: str(message)
  protobuf.text_format = text_format
  google.protobuf = protobuf
  for name, module in (('google', google), ('google.protobuf', protobuf),
                       ('google.protobuf.text_format', text_format)):
    sys.modules.setdefault(name, module)


def load_checks(upstream, suite):
  """(name, blueprint, suite directory) for each check of one suite file."""
  # By file: the package name 'test' is taken by Python's own tests.
  suite_dir = os.path.join(upstream, 'test/trace_processor/diff_tests/parser',
                           os.path.dirname(suite))
  path = os.path.join(upstream, 'test/trace_processor/diff_tests/parser',
                      suite + '.py')
  spec = importlib.util.spec_from_file_location(
      'upstream_' + suite.replace('/', '_'), path)
  module = importlib.util.module_from_spec(spec)
  try:
    spec.loader.exec_module(module)
  except ImportError as e:  # suites that synthesise traces with Python protobuf
    print(f'SKIP {suite}: {e}', file=sys.stderr)
    return []
  testing = sys.modules['python.generators.diff_tests.testing']
  checks = []
  for _, cls in inspect.getmembers(module, inspect.isclass):
    if not issubclass(cls, testing.TestSuite) or cls is testing.TestSuite:
      continue
    instance = cls.__new__(cls)  # fetch() needs none of __init__'s paths
    for method_name in sorted(dir(cls)):
      if method_name.startswith('test_'):
        checks.append((f'{cls.__name__}:{method_name[5:]}',
                       getattr(instance, method_name)(), suite_dir))
  return checks


def text(value, suite_dir, testing):
  if isinstance(value, testing.Path) and not isinstance(value, testing.DataPath):
    with open(os.path.join(suite_dir, value.filename)) as f:
      return f.read()
  return value


def build_trace(trace, suite_dir, testing, upstream, python, tmp):
  """Writes the check's trace as a binary proto file; None if it cannot."""
  proto = os.path.join(upstream, 'protos/perfetto/trace/perfetto_trace.proto')
  out = os.path.join(tmp, 'trace.pb')
  if isinstance(trace, testing.Path) and not isinstance(trace, testing.DataPath):
    path = os.path.join(suite_dir, trace.filename)
    if path.endswith('.textproto'):
      with open(path) as f:
        trace = testing.TextProto(f.read())
    elif path.endswith('.py'):
      descriptor = os.path.join(tmp, 'trace.descriptor')
      if not os.path.exists(descriptor):
        # synth_common wants the unmerged protos and the Chrome and Android
        # framework extensions it names.
        extensions = []
        for folder in ('protos/third_party/chromium',
                       'protos/third_party/android/frameworks/native/tracing'):
          extensions += [os.path.join(folder, f) for f in
                         sorted(os.listdir(os.path.join(upstream, folder)))
                         if f.endswith('.proto')]
        subprocess.run(['protoc', '--include_imports', '-I', upstream,
                        '--descriptor_set_out', descriptor,
                        'protos/perfetto/trace/trace.proto'] + extensions,
                       cwd=upstream, check=True)
      env = dict(os.environ, PYTHONPATH=os.path.join(upstream, 'test'))
      with open(out, 'wb') as f:
        made = subprocess.run([python, path, descriptor], env=env, stdout=f,
                              stderr=subprocess.DEVNULL)
      return out if made.returncode == 0 else None
  if not isinstance(trace, testing.TextProto):
    return None
  encoded = subprocess.run(
      ['protoc', '--encode=perfetto.protos.Trace', '-I', upstream, proto],
      input=trace.contents.encode(), capture_output=True)
  if encoded.returncode != 0:
    return None
  with open(out, 'wb') as f:
    f.write(encoded.stdout)
  return out


def rows(csv_text):
  """A CSV as a list of rows; upstream's [NULL] and sluice's empty field agree."""
  out = []
  # Upstream's expectations are indented in its Python sources.
  lines = '\n'.join(line.strip() for line in csv_text.strip().splitlines())
  for row in csv.reader(io.StringIO(lines)):
    out.append(['' if cell == '[NULL]' else cell for cell in row])
  return [r for r in out if r]


def same_cell(a, b):
  if a == b:
    return True
  try:
    x, y = float(a), float(b)
  except ValueError:
    return False
  return abs(x - y) <= 1e-6 * max(1.0, abs(x), abs(y))


def same_rows(expected, actual):
  if len(expected) != len(actual):
    return False
  return all(
      len(e) == len(a) and all(same_cell(x, y) for x, y in zip(e, a))
      for e, a in zip(expected, actual))


def main():
  parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
  parser.add_argument('--upstream', required=True)
  parser.add_argument('--sluice', default=os.path.join(
      os.path.dirname(__file__), '../../../build/sluice'))
  parser.add_argument('--suite', action='append')
  parser.add_argument('--only')
  parser.add_argument('--show-failures', action='store_true')
  parser.add_argument('--python', default='/usr/bin/python3',
                      help="a Python with Debian's python3-protobuf, to run "
                      "upstream's trace synthesis scripts")
  args = parser.parse_args()

  upstream = os.path.abspath(args.upstream)
  sys.path.insert(0, upstream)
  stub_protobuf()
  testing = importlib.import_module('python.generators.diff_tests.testing')

  counts = {'pass': 0, 'fail': 0, 'out of scope': 0, 'trace not built': 0}
  failures = []
  with tempfile.TemporaryDirectory() as tmp:
    for suite in args.suite or DEFAULT_SUITES:
      for name, bp, suite_dir in load_checks(upstream, suite):
        full_name = f'{suite}:{name}'
        if args.only and args.only not in full_name:
          continue
        query = text(bp.query, suite_dir, testing)
        expected = text(bp.out, suite_dir, testing)
        if isinstance(expected, testing.Csv):
          expected = expected.contents
        if not isinstance(query, str) or not isinstance(expected, str):
          counts['out of scope'] += 1  # metrics, summaries, error checks
          continue
        trace_file = build_trace(bp.trace, suite_dir, testing, upstream,
                                 args.python, tmp)
        if trace_file is None:
          counts['trace not built'] += 1
          continue
        result = subprocess.run(
            [args.sluice, 'query', trace_file, '--format', 'csv', '-q', query],
            capture_output=True, text=True)
        if result.returncode != 0 and any(
            e in result.stderr for e in OUT_OF_SCOPE_ERRORS):
          counts['out of scope'] += 1
          if args.show_failures:
            print(f'SCOPE {full_name}: {result.stderr.strip()}')
          continue
        if result.returncode == 0 and same_rows(rows(expected),
                                                rows(result.stdout)):
          counts['pass'] += 1
          continue
        counts['fail'] += 1
        failures.append(full_name)
        if args.show_failures:
          print(f'FAIL {full_name}')
          if result.returncode != 0:
            print('  error: ' + result.stderr.strip())
          else:
            print('  expected:\n    ' + '\n    '.join(expected.strip().splitlines()[:12]))
            print('  sluice:\n    ' + '\n    '.join(result.stdout.strip().splitlines()[:12]))
  if not args.show_failures:
    for name in failures:
      print('FAIL ' + name)
  in_scope = counts['pass'] + counts['fail']
  print(f"{counts['pass']} of {in_scope} in scope give upstream's answer; "
        f"{counts['out of scope']} out of scope, "
        f"{counts['trace not built']} whose trace this tool cannot build "
        "(binary files of upstream's test data, JSON, systrace)")
  return 0 if counts['fail'] == 0 else 1


if __name__ == '__main__':
  sys.exit(main())
