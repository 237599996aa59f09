#!/bin/sh
# kprobes (FtraceConfig.kprobe_events): records a kprobe and a kretprobe on
# do_sys_openat2, which every open(2) reaches, while a child shell opens a
# file 50 times, then stops the recorder. The host check (15-kprobes.check)
# wants the hits as Perfetto's KprobeEvent, imported as do_sys_openat2
# slices on the opening threads' tracks, each ended, and none of sluice's
# probes left in kprobe_events. The host kernel has no kprobes: there this
# is a skip that names the missing feature.
# timeout-base: 120
. /usr/share/sluice-vm/lib.sh
need_sluice
need_tracefs
[ -e "$TRACEFS/kprobe_events" ] || skip "no kprobe_events in tracefs: this kernel has no kprobes (CONFIG_KPROBE_EVENTS)"
grep -q ' do_sys_openat2$' /proc/kallsyms || skip "no do_sys_openat2 in /proc/kallsyms to probe"

cat >"$OUT/kprobes.pbtx" <<'CONFIG'
buffers { size_kb: 8192 }
write_into_file: true
file_write_period_ms: 500
data_sources {
  config {
    name: "linux.ftrace"
    ftrace_config {
      ftrace_events: "ftrace/print"
      kprobe_events { probe: "do_sys_openat2" type: KPROBE_TYPE_BOTH }
    }
  }
}
duration_ms: 3600000
CONFIG
start_record -c "$OUT/kprobes.pbtx" --txt -o "$OUT/trace.pftrace"
wait_for 60 "the kprobe on do_sys_openat2 enabled" event_enabled sluice_kprobes/do_sys_openat2
wait_for 60 "the kretprobe on do_sys_openat2 enabled" event_enabled sluice_kretprobes/do_sys_openat2
wait_until_recording "$OUT/trace.pftrace"
# The opens run in a shell of their own, which has exited before the
# recorder stops: each of its calls has returned, so each slice has its end.
# This shell cannot be the opener: while it waits for the recorder to exit it
# opens /dev/null (kill -0 ... 2>/dev/null), and such a call can be in flight
# when the probes go (CI saw 2 slices with no end that way).
sh -c 'echo $$ >"$1/opener_pid"
  i=0
  while [ $i -lt 50 ]; do
    read -r _ </proc/version  # read is a builtin: this shell opens the file.
    i=$((i + 1))
  done' opener "$OUT"
echo 50 >"$OUT/opens"
stop_record
grep -c 'sluice_k' "$TRACEFS/kprobe_events" >"$OUT/kprobes_left"
note "opened /proc/version 50 times, trace $(wc -c <"$OUT/trace.pftrace") bytes"
