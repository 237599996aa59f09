#!/bin/sh
# A recorder at rest on however many CPUs the guest has (VM_SMP; the issue's
# 16-vCPU run: make vm-test VM_SMP=16 VM_ONLY='60*'): a flight recorder
# (--ring) and a streamed file, each with the default events, left alone
# for a window after it settled. Written for the host check: the CPU count,
# each thread's wake-ups (schedstat) at the start and end of the window,
# the recorder's resident memory and open fds. The host check wants the
# threads and fds to grow with the CPUs by a fixed amount each, the readers
# of CPUs with nothing to say not to wake, and the whole recorder to wake
# about as rarely as its housekeeping. The window is a measurement, not a
# wait for something: nothing in the scenario races it.
# timeout-base: 240
. /usr/share/sluice-vm/lib.sh
need_sluice
need_tracefs

nproc >"$OUT/cpus"
window=20

# snapshot PID FILE: tid, wake-ups, name per thread.
snapshot() {
  for t in /proc/"$1"/task/*; do
    echo "${t##*/} $(cut -d' ' -f3 "$t/schedstat") $(cat "$t/comm")"
  done >"$2"
}

for mode in ring file; do
  case $mode in
    ring) start_record --ring -o "$OUT/$mode.pftrace" -t 1h -q ;;
    # The default lag (start_record asks for 1s): the flush backs off at rest.
    file) start_record --file-lag 60s -o "$OUT/$mode.pftrace" -t 1h -q ;;
  esac
  wait_for 120 "'sluice: recording' from sluice record ($mode)" recorder_ready
  sleep 5  # Settle: the start's flushes and the streaming period's first doublings.
  snapshot "$RECORD_PID" "$OUT/$mode.threads0"
  sleep "$window"
  snapshot "$RECORD_PID" "$OUT/$mode.threads1"
  grep -E '^(VmRSS|VmHWM|Threads):' "/proc/$RECORD_PID/status" >"$OUT/$mode.status"
  ls "/proc/$RECORD_PID/fd" | wc -l >"$OUT/$mode.fds"
  echo "$window" >"$OUT/window"
  stop_record
  sluice stats "$OUT/$mode.pftrace" >"$OUT/$mode.stats.txt" 2>&1
  echo $? >"$OUT/$mode.stats.rc"
  note "$mode: $(cat "$OUT/$mode.fds") fds, $(tr '\n' ' ' <"$OUT/$mode.status")"
done
