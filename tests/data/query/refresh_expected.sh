#!/bin/bash
# Regenerates tests/data/query/expected/<trace>.<query>.csv: every query in
# queries/ run over every trace here by upstream Perfetto's
# trace_processor_shell, whose -q CSV output is what
# tests/user/query/query_reference_test.cc compares sluice's engine against.
#
#   tests/data/query/refresh_expected.sh            # from anywhere
#   tests/data/query/refresh_expected.sh ps_sched_states ...   # only these queries
#   TRACES="process_memory syscalls" tests/data/query/refresh_expected.sh   # only these traces
#   TRACE_PROCESSOR=/path/to/trace_processor_shell tests/data/query/refresh_expected.sh
#
# Run it after adding a trace or a query, or after moving to a newer
# trace_processor_shell (then read the diff: upstream changes show there).
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
repo=$(cd "$here/../../.." && pwd)
tp=${TRACE_PROCESSOR:-$repo/../shared/tools/perfetto/trace_processor_shell}
if [[ ! -x $tp ]]; then
  echo "refresh_expected.sh: no trace_processor_shell at $tp: set TRACE_PROCESSOR=/path/to/it" >&2
  exit 1
fi

mkdir -p "$here/expected"
traces=()
if [[ -n ${TRACES:-} ]]; then
  for t in $TRACES; do traces+=("$here/$t.pftrace"); done
else
  traces=("$here"/*.pftrace)
fi
queries=()
if [[ $# -gt 0 ]]; then
  for q in "$@"; do queries+=("$here/queries/$q.sql"); done
else
  queries=("$here"/queries/*.sql)
fi
for trace in "${traces[@]}"; do
  for query in "${queries[@]}"; do rm -f "$here/expected/$(basename "$trace" .pftrace).$(basename "$query" .sql).csv"; done
done
for trace in "${traces[@]}"; do
  t=$(basename "$trace" .pftrace)
  for query in "${queries[@]}"; do
    q=$(basename "$query" .sql)
    out="$here/expected/$t.$q.csv"
    # stderr carries the shell's load log; a failing query exits non-zero.
    if ! "$tp" -q "$query" "$trace" >"$out" 2>"$out.err"; then
      echo "refresh_expected.sh: $q on $t failed:" >&2
      grep -v '^Loading trace' "$out.err" | tail -5 >&2
      rm -f "$out" "$out.err"
      exit 1
    fi
    rm -f "$out.err"
  done
done
"$tp" --version 2>/dev/null | head -1 >"$here/expected/VERSION"
echo "refreshed $(ls "$here"/expected/*.csv | wc -l) files with $("$tp" --version 2>/dev/null | head -1)"
