# Shared by the record benchmarks (sourced, not run): tracefs saved and put
# back, trace-cmd's mount-namespace wrapper, and per-thread schedstat.
# The sourcing script sets T (the tracefs root) and WORK (its scratch
# directory) first.

bench_die() { echo "${0##*/}: $*" >&2; exit 1; }

# tracefs as found: tracing_on, the root buffer's size, the clock,
# buffer_percent and the enabled events. Each recorder's run is followed by
# bench_restore_tracefs, so that one recorder's leftovers never reach the
# next: trace-cmd leaves buffer_size_kb at its -b; upstream Perfetto's
# traced_probes leaves trace_clock at boot, buffer_size_kb at one page per
# CPU, buffer_percent at 50 and every event disabled.
bench_save_tracefs() {
  SAVED_ON=$(cat "$T"/tracing_on)
  SAVED_KB=$(sed 's/.*expanded: \([0-9]*\).*/\1/' "$T"/buffer_size_kb)
  SAVED_CLOCK=$(sed 's/.*\[\(.*\)\].*/\1/' "$T"/trace_clock)
  SAVED_PERCENT=$(cat "$T"/buffer_percent 2>/dev/null)
  cp "$T"/set_event "$WORK/set_event.saved"
  bench_tracefs_state > "$WORK/tracefs.saved"
}
bench_restore_tracefs() {
  : > "$T"/set_event
  while read -r e; do [ -n "$e" ] && echo "$e" >> "$T"/set_event; done < "$WORK/set_event.saved"
  echo "$SAVED_CLOCK" > "$T"/trace_clock
  [ "$(cat "$T"/buffer_size_kb)" = "$SAVED_KB" ] || echo "$SAVED_KB" > "$T"/buffer_size_kb
  [ -z "$SAVED_PERCENT" ] || echo "$SAVED_PERCENT" > "$T"/buffer_percent
  echo "$SAVED_ON" > "$T"/tracing_on
  # Said, not fixed: what differs was left by a recorder this file does not
  # know how to undo.
  bench_tracefs_state | diff "$WORK/tracefs.saved" - >&2 ||
    echo "${0##*/}: tracefs not as found (above: < as found, > now)" >&2
}
# What bench_restore_tracefs puts back, as one comparable text.
bench_tracefs_state() {
  local f
  for f in tracing_on trace_clock buffer_percent current_tracer; do
    [ -r "$T/$f" ] && echo "$f: $(cat "$T/$f")"
  done
  echo "buffer_size_kb: $(bench_buffer_size_kb)"
  sed 's/^/set_event: /' "$T"/set_event | sort
}
# buffer_size_kb as the size the buffer has once expanded. A root buffer
# unused since boot reads "7 (expanded: 1408)"; the first recorder expands
# it for good, and writing 1408 back gives whole pages of header_page's data
# size (354 x 4080 bytes, read back as 1410): the same buffer, shown so.
bench_buffer_size_kb() {
  local text kb data
  text=$(cat "$T"/buffer_size_kb)
  case $text in
    *"(expanded: "*)
      kb=${text##*expanded: }
      kb=${kb%%)*}
      data=$(sed -n 's/.*field: char data;.*size:\([0-9]*\);.*/\1/p' "$T"/events/header_page)
      [ -n "$data" ] && kb=$(((kb * 1024 + data - 1) / data * data / 1024))
      echo "$kb" ;;
    *) echo "$text" ;;
  esac
}

# trace-cmd 3.1.6 insists on writing /proc/sys/kernel/ftrace_enabled and on
# resetting set_ftrace_filter / set_ftrace_notrace / set_ftrace_pid at exit;
# where function tracing is locked (this host) the kernel refuses (EPERM)
# and trace-cmd dies after recording. $WORK/tcwrap.sh runs a command in a
# private mount namespace with /dev/null bind-mounted over those files,
# which changes nothing trace-cmd records: unshare --mount --propagation
# private "$WORK/tcwrap.sh" trace-cmd record ...
bench_make_tcwrap() {
  cat > "$WORK/tcwrap.sh" <<EOW
#!/bin/sh
for f in /proc/sys/kernel/ftrace_enabled $T/set_ftrace_filter $T/set_ftrace_notrace \\
         $T/set_ftrace_pid $T/set_ftrace_notrace_pid; do
  [ -e "\$f" ] && mount --bind /dev/null "\$f"
done
exec "\$@"
EOW
  chmod +x "$WORK/tcwrap.sh"
}

# One line per thread of PID's process: TID, time on a CPU in ns and
# wake-ups (the first and third fields of /proc/PID/task/TID/schedstat, the
# scheduler's own counts), name, and last its minor page faults (the 10th
# field of .../stat; counted from after the name in brackets, which may hold
# spaces, and last for the same reason: read it as $NF).
bench_threads_of() {
  local t
  for t in /proc/"$1"/task/*; do
    echo "${t##*/} $(cut -d' ' -f1,3 "$t/schedstat" 2>/dev/null) $(cat "$t/comm" 2>/dev/null)" \
      "$(sed 's/.*) //' "$t/stat" 2>/dev/null | cut -d' ' -f8)"
  done
}

# The query and ClickHouse benchmarks' 10 M-event trace, recorded at $2 by
# sluice ($1) when missing (root, tracefs): sched_switch, sched_waking and
# ftrace/print with compact_sched while stress-ng's context-switch stressor
# runs two pipe ping-pong pairs uncapped for 11 s (about 1 M events/s on a
# 2-CPU machine: >= 10 M events).
bench_record_sched_10m() {
  local sluice=$1 trace=$2
  [ -s "$trace" ] && return 0
  [ "$(id -u)" = 0 ] || bench_die "$trace missing and recording it needs root (tracefs)"
  command -v stress-ng >/dev/null || bench_die "stress-ng missing: apt-get install stress-ng"
  mkdir -p "$(dirname "$trace")"
  echo "recording $trace (sluice record, stress-ng --switch 2 for 11 s)"
  ( sleep 1; stress-ng --switch 2 --timeout 11 --quiet ) &
  "$sluice" record -q -o "$trace" -t 13s -k 16mb -b 256mb \
    sched/sched_switch sched/sched_waking ftrace/print || bench_die "recording $trace failed"
  wait
}
