#!/bin/sh
# Rewrites the expected answers: upstream trace_processor_shell on each
# trace with queries.sql (see README.md).
set -eu
here=$(cd "$(dirname "$0")" && pwd)
tp=${TRACE_PROCESSOR:-$here/../../../../../shared/tools/perfetto/trace_processor_shell}
for trace in two_guests host_only; do
  "$tp" -q "$here/queries.sql" "$here/$trace.pftrace" > "$here/$trace.csv" 2>/dev/null
done
