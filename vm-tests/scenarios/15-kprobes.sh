#!/bin/sh
# kprobes (FtraceConfig.kprobe_events): records a kprobe and a kretprobe on
# do_sys_openat2, which every open(2) reaches, while this shell opens a file
# 50 times, then stops the recorder. The host check (15-kprobes.check) wants
# the hits as Perfetto's KprobeEvent, imported as do_sys_openat2 slices on
# the opening threads' tracks, each ended, and none of sluice's probes left
# in kprobe_events. The host kernel has no kprobes: there this is a skip
# that names the missing feature.
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
i=0
while [ $i -lt 50 ]; do
  read -r _ </proc/version
  i=$((i + 1))
done
echo 50 >"$OUT/opens"
echo $$ >"$OUT/shell_pid"  # read is a builtin: this shell opened the file.
stop_record
grep -c 'sluice_k' "$TRACEFS/kprobe_events" >"$OUT/kprobes_left"
note "opened /proc/version 50 times, trace $(wc -c <"$OUT/trace.pftrace") bytes"
