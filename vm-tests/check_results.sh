#!/bin/bash
# Judges the results one guest sent back, on the host.
#
# usage: vm-tests/check_results.sh RESULTS_DIR
# RESULTS_DIR is what the guest's /out became (run-kernel.sh unpacks it to
# build/vm-tests/<kernel>/results): guest-info, scenarios, formats/, dmesg
# and one directory per scenario with exit_code, seconds, log and whatever
# the scenario wrote.
#
# For each scenarios/NN-name.sh (matching VM_ONLY) prints one line
#   PASS <kernel>/<scenario> (<seconds>s) <detail>
#   SKIP <kernel>/<scenario>: <reason>
#   FAIL <kernel>/<scenario>: <reason>
# A scenario that exited 0 in the guest is then judged by its host check
# scenarios/NN-name.check, if there is one (see check-lib.sh); those use the
# same tools as the host integration tests: build/sluice and
# build/sluice-trace-check.
# Exit 0 when no line is FAIL.
#
# env: KERNEL_NAME (label), EXPECTED_RELEASE (uname -r the guest must show,
#      or -), VM_ONLY (glob), BUILD_DIR (default build)
set -uo pipefail

results=${1:?usage: check_results.sh RESULTS_DIR}
here=$(cd "$(dirname "$0")" && pwd)
k=${KERNEL_NAME:-guest}
only=${VM_ONLY:-*}
export BUILD_DIR=${BUILD_DIR:-build}
export SLUICE=${SLUICE:-$BUILD_DIR/sluice}
export TRACE_CHECK=${TRACE_CHECK:-$BUILD_DIR/sluice-trace-check}
export RESULTS=$results
status=0

say() {  # VERDICT SCENARIO TEXT
  case "$1" in
    PASS) echo "PASS $k/$2 $3" ;;
    *) echo "$1 $k/$2: $3" ;;
  esac
  [ "$1" = FAIL ] && status=1
  return 0
}

release=$(sed -n 's/^kernel=//p' "$results/guest-info" 2>/dev/null)
if [ -z "$release" ]; then
  say FAIL boot "no guest-info in the results"
elif [ -n "${EXPECTED_RELEASE:-}" ] && [ "$EXPECTED_RELEASE" != - ] && [ "$release" != "$EXPECTED_RELEASE" ]; then
  say FAIL boot "guest runs $release, expected $EXPECTED_RELEASE"
fi

for script in "$here"/scenarios/*.sh; do
  name=$(basename "$script" .sh)
  # shellcheck disable=SC2254  # VM_ONLY is a glob on purpose
  case "$name" in $only) ;; *) continue ;; esac
  d=$results/$name
  if [ ! -d "$d" ]; then
    say FAIL "$name" "did not run in the guest"
    continue
  fi
  if [ ! -f "$d/exit_code" ]; then
    say FAIL "$name" "did not finish in the guest; log tail: $(tail -n 1 "$d/log" 2>/dev/null)"
    continue
  fi
  code=$(cat "$d/exit_code")
  secs=$(cat "$d/seconds" 2>/dev/null || echo '?')
  case "$code" in
    0) ;;
    77) say SKIP "$name" "$(cat "$d/skip_reason" 2>/dev/null || echo 'no reason given')"; continue ;;
    *) say FAIL "$name" "exit $code in the guest: $(cat "$d/fail_reason" 2>/dev/null || tail -n 1 "$d/log")"; continue ;;
  esac
  check=$here/scenarios/$name.check
  if [ ! -f "$check" ]; then
    say PASS "$name" "(${secs}s) $(tail -n 1 "$d/log" 2>/dev/null)"
    continue
  fi
  text=$(bash "$check" "$d" 2>&1)
  crc=$?
  echo "$text" >"$d/host_check.log"
  last=$(tail -n 1 <<<"$text")
  case "$crc" in
    0) say PASS "$name" "(${secs}s) $last" ;;
    77) say SKIP "$name" "$last" ;;
    *) say FAIL "$name" "host check: $last (full output: $d/host_check.log)" ;;
  esac
done

# Kernel warnings are worth a look even when every scenario passed.
if grep -q 'WARNING:' "$results/dmesg" 2>/dev/null; then
  echo "NOTE $k: kernel WARNING in the guest's dmesg: $(grep -m1 'WARNING:' "$results/dmesg")"
fi
exit $status
