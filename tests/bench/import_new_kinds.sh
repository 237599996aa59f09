#!/bin/bash
# The import of every event kind beyond the core ones at a high rate
# (tests/bench/new_kinds_trace.py), sluice query vs upstream's
# trace_processor_shell, at two sizes: memory that stays bounded grows with
# the events in proportion (the tables), not faster.
#
#   tests/bench/import_new_kinds.sh            # from the project root
#   SIZES="1000000" REPS=1 tests/bench/import_new_kinds.sh
#
# The traces are written once to build/bench/new-kinds-<events>.pftrace.
# Per size, query_vs_trace_processor.sh's import run (`select 1`): wall and
# CPU seconds and peak RSS of each tool.
set -eu

BUILD_DIR=${BUILD_DIR:-build}
here=$(dirname "$0")
for events in ${SIZES:-1000000 5000000}; do
  trace=$BUILD_DIR/bench/new-kinds-$events.pftrace
  if [ ! -s "$trace" ]; then
    mkdir -p "$(dirname "$trace")"
    python3 "$here/new_kinds_trace.py" "$trace.tmp" "$events" && mv "$trace.tmp" "$trace"
  fi
  TRACE=$trace QUERIES=import REPS=${REPS:-3} "$here/query_vs_trace_processor.sh"
done
