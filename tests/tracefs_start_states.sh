#!/usr/bin/env bash
# Runs the kernel test suites (gtest suites named *KernelTest*) from each of
# the tracefs states a user's machine is found in, and puts the state it
# found back after each. The kernel tests never assume the kernel's default
# state: each reads the state it starts from and checks that it leaves it so
# (tests/user/probes/tracefs_test_util.h), and this runs them where that
# matters. The states (docs/FTRACE_CONTROL.md, "Start states"):
#
#   default      trace_clock local, buffer_size_kb 1408, buffer_percent 50,
#                tracing_on 1, no event enabled, no instance
#   perfetto     what upstream Perfetto's traced_probes leaves: trace_clock
#                boot, buffer_size_kb 7 (its minimum) when it is done; when
#                it was killed mid-session, its events too, still on in the
#                top-level buffer (raw_syscalls among them: a reader there
#                traces its own reads; CI machines were found so,
#                2026-12-02). This state has both.
#   trace-cmd    what `trace-cmd reset` leaves on a machine where Perfetto ran:
#                tracing_on 0, trace_clock local, buffer_size_kb 7 (the size
#                it found; `trace-cmd record` itself puts back all it changes)
#   tracing-off  tracing_on 0, the rest as in default
#   foreign      another tool's instance (foreign-tracer, with an event of its
#                own enabled) and an event it enabled in the top-level buffer
#
# Usage: tests/tracefs_start_states.sh [-s] [-b SLUICE_TESTS] [-f GTEST_FILTER] [STATE...]
# Default: build/sluice_tests, *KernelTest* but ProbesAtRestKernelTest, every
# state. Needs root and tracefs. The at-rest test runs a recorder through
# 3000 flush periods (30 s, a quarter of the suites' time) in a tracefs
# instance of its own, where none of the top-level state below reaches:
# `make test` runs it once.
# -s skips a state identical to the one found: the caller has just run the
# suites from it (.ci/run after make test; a fresh machine is in default).
# Prints one line per state and "N passed, N failed" last; exits non-zero if
# a state failed or the state found could not be put back.
set -uo pipefail
cd "$(dirname "$0")/.."

tests_bin=build/sluice_tests
filter='*KernelTest*:-ProbesAtRestKernelTest.*'
skip_found=false
while getopts "sb:f:" opt; do
  case $opt in
    s) skip_found=true ;;
    b) tests_bin=$OPTARG ;;
    f) filter=$OPTARG ;;
    *) echo "usage: $0 [-s] [-b SLUICE_TESTS] [-f GTEST_FILTER] [STATE...]" >&2; exit 2 ;;
  esac
done
shift $((OPTIND - 1))
states=("$@")
[ ${#states[@]} -eq 0 ] && states=(default perfetto trace-cmd tracing-off foreign)

T=/sys/kernel/tracing
if [ ! -e $T/tracing_on ]; then
  mount -t tracefs nodev $T 2>/dev/null || true
fi
[ -w $T/tracing_on ] || { echo "tracefs_start_states: $T is not writable: run as root with tracefs" >&2; exit 2; }
[ -x "$tests_bin" ] || { echo "tracefs_start_states: no $tests_bin: run make first" >&2; exit 2; }

foreign_event=signal:signal_generate  # An event no sluice test enables (set_event form).
foreign_instance=foreign-tracer
# The events a killed traced_probes left on (set_event form; found on a CI machine).
perfetto_events="task:task_newtask sched:sched_process_free raw_syscalls:sys_enter raw_syscalls:sys_exit power:cpu_frequency power:cpu_idle"

w() { printf '%s' "$2" >"$T/$1" || echo "tracefs_start_states: cannot write '$2' to $T/$1" >&2; }
selected_clock() { sed 's/.*\[\(.*\)\].*/\1/' $T/trace_clock; }
# buffer_size_kb as a value to write back: "7 (expanded: 1408)" cannot be
# recreated (the expansion is one-way), so the size it expands to.
buffer_kb() { sed 's/.*expanded: \([0-9]*\)).*/\1/; s/ .*//' $T/buffer_size_kb; }
describe() {
  echo "clock=$(selected_clock) buffer_size_kb=$(buffer_kb) buffer_percent=$(cat $T/buffer_percent 2>/dev/null)" \
       "tracing_on=$(cat $T/tracing_on) events=[$(tr '\n' ' ' <$T/set_event)] instances=[$(ls $T/instances | tr '\n' ' ')]"
}

found_clock=$(selected_clock)
found_kb=$(buffer_kb)
found_percent=$(cat $T/buffer_percent 2>/dev/null || echo)
found_on=$(cat $T/tracing_on)
found_events=$(cat $T/set_event)
found_instances=$(ls $T/instances)
found=$(describe)

# The state found, back, whatever the tests or a state changed.
restore() {
  [ -d $T/instances/$foreign_instance ] && ! grep -qx "$foreign_instance" <<<"$found_instances" &&
    { printf '\n' >$T/instances/$foreign_instance/set_event; rmdir $T/instances/$foreign_instance; }
  printf '\n' >$T/set_event
  while IFS= read -r e; do [ -n "$e" ] && printf '%s\n' "$e" >>$T/set_event; done <<<"$found_events"
  w trace_clock "$found_clock"
  [ "$(buffer_kb)" = "$found_kb" ] || w buffer_size_kb "$found_kb"
  [ -n "$found_percent" ] && w buffer_percent "$found_percent"
  w tracing_on "$found_on"
}
trap restore EXIT

apply() {
  restore
  w trace_clock local
  w buffer_size_kb 1408
  [ -n "$found_percent" ] && w buffer_percent 50
  w tracing_on 1
  printf '\n' >$T/set_event
  case $1 in
    default) ;;
    perfetto)
      w trace_clock boot; w buffer_size_kb 7
      printf '%s\n' $perfetto_events >>$T/set_event ;;
    trace-cmd) w buffer_size_kb 7; w tracing_on 0 ;;
    tracing-off) w tracing_on 0 ;;
    foreign)
      mkdir -p $T/instances/$foreign_instance
      printf '%s\n' "$foreign_event" >>$T/instances/$foreign_instance/set_event
      printf '%s\n' "$foreign_event" >>$T/set_event ;;
    *) echo "tracefs_start_states: unknown state '$1' (default perfetto trace-cmd tracing-off foreign)" >&2; return 1 ;;
  esac
}

passed=0 failed=0
log_dir=$(mktemp -d /tmp/sluice-start-states.XXXXXX)
echo "tracefs_start_states: found $found"
for state in "${states[@]}"; do
  apply "$state" || { failed=$((failed + 1)); continue; }
  if $skip_found && [ "$(describe)" = "$found" ]; then
    echo "tracefs_start_states: $state: the state found, where the suites have just run (-s): not run again"
    continue
  fi
  start=$SECONDS
  log=$log_dir/$state.log
  if "$tests_bin" --gtest_filter="$filter" >"$log" 2>&1; then
    passed=$((passed + 1)); verdict=passed
  else
    failed=$((failed + 1)); verdict="FAILED ($log)"
    # Each failed test's own output (its messages say why), not only its
    # name: CI keeps no log file, only what is printed.
    awk '/^\[ RUN      \]/ { body = ""; n = 0 }
         { if (n < 40) body = body "    " $0 "\n"; n++ }
         /^\[  FAILED  \] [A-Za-z].*\([0-9]+ ms\)$/ { printf "%s", body; body = "" }' "$log" | head -n 200
  fi
  summary=$(sed -n 's/^\[==========\] \(.*\) ran.*/\1/p' "$log" | tail -1)
  echo "tracefs_start_states: $state: $verdict, $summary, $((SECONDS - start)) s"
done
restore
trap - EXIT
if [ "$(describe)" != "$found" ]; then
  echo "tracefs_start_states: could not put back the state found: $found; now $(describe)" >&2
  failed=$((failed + 1))
fi
[ $failed -eq 0 ] && rm -rf "$log_dir"
echo "start-states: $passed passed, $failed failed"
[ $failed -eq 0 ]
