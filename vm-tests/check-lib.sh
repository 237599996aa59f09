# shellcheck shell=bash
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
# check_markers TRACE PREFIX N no-loss|loss [A-B] [EXTRA CHECKER ARGS...]
#   no-loss: markers PREFIX1..PREFIXN each exactly once, no loss reported;
#   loss:    loss reported, missing sequence numbers == reported losses, and
#            A..B all present.
# Uses sluice-trace-check when built; until then a byte scan of the trace
# (marker strings sit verbatim in PrintFtraceEvent.buf of an uncompressed
# trace) checks the markers, and the event checks wait for the checker.
check_markers() {
  local trace=$1 prefix=$2 n=$3 mode=$4 range=${5:-} args
  shift 5 2>/dev/null || shift $#
  if [ -x "$TRACE_CHECK" ]; then
    args=(--marker-prefix="$prefix" --markers="$n")
    if [ "$mode" = loss ]; then args+=(--expect-loss --require-markers="$range"); else args+=(--expect-no-loss); fi
    "$TRACE_CHECK" "$trace" "${args[@]}" "$@" >"$RES/trace_check.txt" 2>&1 ||
      fail "sluice-trace-check: $(tail -n 1 "$RES/trace_check.txt")"
    pass "$(tail -n 1 "$RES/trace_check.txt")"
  fi
  local seen="$RES/markers_seen.txt" distinct total missing reported a b
  grep -ao "${prefix}[0-9]*" "$trace" | sed "s/^${prefix}//" | sort -n >"$seen"
  total=$(wc -l <"$seen")
  distinct=$(uniq "$seen" | wc -l)
  missing=$((n - distinct))
  [ "$(uniq -d "$seen" | wc -l)" = 0 ] || fail "markers duplicated in the trace: $(uniq -d "$seen" | head -n 3 | tr '\n' ' ')"
  [ "$(awk -v n="$n" '$1 < 1 || $1 > n' "$seen" | wc -l)" = 0 ] || fail "markers outside 1..$n in the trace"
  local note="(byte scan; $TRACE_CHECK not yet available for the event checks)"
  if [ "$mode" = no-loss ]; then
    [ "$missing" = 0 ] || fail "$missing of $n markers missing from the trace $note"
    pass "$total of $n markers, each once $note"
  fi
  reported=$(sed -n 's/^data loss: \([0-9]*\).*/\1/p' "$RES/host_stats.txt")
  a=${range%-*} b=${range#*-}
  [ "$(awk -v a="$a" -v b="$b" '$1 >= a && $1 <= b' "$seen" | wc -l)" = $((b - a + 1)) ] ||
    fail "markers written after the recorder resumed ($range) are missing $note"
  [ "$missing" = "${reported:-0}" ] ||
    fail "$missing markers missing, but sluice stats reports ${reported:-0} lost $note"
  pass "$missing of $n markers lost and $reported reported lost; $range all present $note"
}

# host_stats TRACE no-loss|loss: "sluice stats TRACE" on the host, into
# RES/host_stats.txt. sluice stats exits 0 when the trace reports no loss,
# 1 when it reports some (or has no TraceStats, so that losses are unknown),
# 2 when it cannot read the trace.
host_stats() {
  local rc
  [ -x "$SLUICE" ] || fail "$SLUICE missing on the host, but the guest had it"
  "$SLUICE" stats "$1" >"$RES/host_stats.txt" 2>&1
  rc=$?
  case "$2:$rc" in
    no-loss:0|loss:1) ;;
    no-loss:1) fail "sluice stats reports data loss: $(grep -m1 'data loss' "$RES/host_stats.txt")" ;;
    loss:0) fail "the kernel overwrote events, but sluice stats reports no loss" ;;
    *) fail "sluice stats cannot read $1 (exit $rc): $(tail -n 1 "$RES/host_stats.txt")" ;;
  esac
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
