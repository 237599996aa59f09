#!/bin/sh
# Copies the ftrace format files a parser needs from the guest's tracefs into
# DST/events/ (same layout as tracefs' events/ dir): header_page, header_event
# and the format of every event of the given groups or group/event names.
# Also saves available_events. Used by /init (always, as a failure artifact)
# and by scenario 00-env.
# usage: capture-formats.sh TRACEFS DST [SELECTOR...]
# Without selectors: the events sluice records or may record.
tracefs=$1 dst=$2
shift 2
[ $# -gt 0 ] || set -- sched task ftrace/print raw_syscalls syscalls/sys_enter_write \
  syscalls/sys_exit_write irq power/cpu_idle power/cpu_frequency
mkdir -p "$dst/events"
for f in header_page header_event; do
  cat "$tracefs/events/$f" >"$dst/events/$f" 2>/dev/null
done
for sel in "$@"; do
  for fmt in "$tracefs"/events/$sel/format "$tracefs"/events/$sel/*/format; do
    [ -f "$fmt" ] || continue
    rel=${fmt#"$tracefs"/events/}
    mkdir -p "$dst/events/${rel%/format}"
    cat "$fmt" >"$dst/events/$rel"
  done
done
cat "$tracefs/available_events" >"$dst/available_events" 2>/dev/null
exit 0
