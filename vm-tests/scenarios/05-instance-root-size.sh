#!/bin/sh
# A freshly booted kernel keeps the root ring buffer at its boot size, "7
# (expanded: 1408)", until something uses it. Before Linux 6.6 resizing an
# instance set the kernel-wide "expanded" flag and left such a root at 7 KiB
# for good; sluice then expands it (user/probes/ftrace/ftrace_settings.cc).
# This records into an instance of 512 KiB per CPU and saves the root's
# buffer_size_kb before and after; the host check wants the root not left at
# its boot size. It runs second, before any scenario sizes or uses the root.
# The recording's length is not checked: it ends by its duration.
# timeout-base: 120
. /usr/share/sluice-vm/lib.sh
need_sluice
need_tracefs

cat "$TRACEFS/buffer_size_kb" >"$OUT/root_before"
cat >"$OUT/config.txt" <<'CFG'
buffers { size_kb: 4096 }
duration_ms: 500
data_sources {
  config {
    name: "linux.ftrace"
    ftrace_config {
      instance_name: "sluice-vm-05"
      buffer_size_kb: 512
      ftrace_events: "sched/sched_switch"
    }
  }
}
CFG
sluice record --txt -c "$OUT/config.txt" -o "$OUT/trace.pftrace" >"$OUT/record.log" 2>&1
echo $? >"$OUT/record.rc"
cat "$TRACEFS/buffer_size_kb" >"$OUT/root_after"
ls "$TRACEFS/instances" >"$OUT/instances_after"
note "root buffer_size_kb: '$(cat "$OUT/root_before")' before, '$(cat "$OUT/root_after")' after"
