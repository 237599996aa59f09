# Helpers for host-side scenario checks (scenarios/NN-name.check), sourced
# as  . "$(dirname "$0")/../check-lib.sh"  and run by check_results.sh as
#   bash NN-name.check RESULT_DIR
# with SLUICE, TRACE_CHECK, BUILD_DIR and RESULTS (the whole guest output)
# in the environment. A check ends with pass/skip/fail; its last line of
# output is the detail check_results.sh prints.

RES=${1:?usage: NN-name.check RESULT_DIR}

pass() { echo "$*"; exit 0; }
skip() { echo "$*"; exit 77; }
fail() { echo "$*"; exit 1; }

# The trace checker shared with the host integration tests. Contract
# (docs/vm-tests.md): sluice-trace-check TRACE [options], exit 0 = pass,
# last output line = one-line summary.
need_trace_check() {
  [ -x "$TRACE_CHECK" ] ||
    skip "$* — not verified: $TRACE_CHECK not yet available (build it to check markers and losses)"
}

# trace_check ARGS...: runs the checker, keeps its output in RES/trace_check.txt.
trace_check() {
  "$TRACE_CHECK" "$@" >"$RES/trace_check.txt" 2>&1
  local rc=$?
  [ $rc -eq 0 ] || fail "sluice-trace-check: $(tail -n 1 "$RES/trace_check.txt")"
  pass "$(tail -n 1 "$RES/trace_check.txt")"
}

# host_stats TRACE: "sluice stats TRACE" on the host, into RES/host_stats.txt.
host_stats() {
  [ -x "$SLUICE" ] || fail "$SLUICE missing on the host, but the guest had it"
  "$SLUICE" stats "$1" >"$RES/host_stats.txt" 2>&1 ||
    fail "sluice stats cannot read $1: $(tail -n 1 "$RES/host_stats.txt")"
}

# need_trace: the scenario's trace.pftrace exists and is not empty.
need_trace() {
  [ -s "$RES/trace.pftrace" ] || fail "no trace.pftrace (sluice record rc=$(cat "$RES/record.rc" 2>/dev/null))"
}

# A command that ended by a signal (exit code > 128) crashed.
not_crashed() {  # WHAT RC_FILE
  local rc
  rc=$(cat "$2" 2>/dev/null) || fail "$1: no exit code recorded"
  [ "$rc" -lt 128 ] || fail "$1 crashed (exit $rc)"
}
