#!/bin/bash
# Writes expected/NAME.txt for every case of cases.txt with upstream's
# trace_processor_shell (TP=path/to/trace_processor_shell; default
# /work/shared/tools/perfetto/trace_processor_shell, v58.2). Run from the
# project root: tests/data/query/summary/refresh_expected.sh
set -euo pipefail
TP=${TP:-/work/shared/tools/perfetto/trace_processor_shell}
DIR=tests/data/query/summary
grep -v '^#' "$DIR/cases.txt" | while read -r name trace spec metrics metadata compare; do
  [ -n "$name" ] || continue
  case "$spec" in
    shipped:*) spec_path=user/query/summary/specs/${spec#shipped:}.textproto ;;
    *) spec_path=$DIR/specs/$spec.textproto ;;
  esac
  args=(--summary --summary-spec "$spec_path" --summary-metrics-v2 "$metrics")
  [ "$metadata" = - ] || args+=(--summary-metadata-query "$metadata")
  out=$DIR/expected/$name.txt
  if [ "$compare" = error ]; then
    # Upstream reports a failed summary on stderr (its last line) and
    # prints nothing on stdout.
    if "$TP" "${args[@]}" "tests/data/query/$trace.pftrace" >/dev/null 2>"$out.err"; then
      echo "$name: upstream did not fail" >&2; rm -f "$out.err"; exit 1
    fi
    tail -n 1 "$out.err" >"$out"; rm -f "$out.err"
  else
    "$TP" "${args[@]}" "tests/data/query/$trace.pftrace" >"$out" 2>/dev/null
  fi
done
