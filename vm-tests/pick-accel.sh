#!/bin/bash
# Prints the QEMU accelerator to use: "kvm" or "tcg".
#
# usage: vm-tests/pick-accel.sh KERNEL_IMAGE
# KVM is picked only when /dev/kvm opens read-write AND a probe boot of
# KERNEL_IMAGE under KVM prints the kernel banner on the console within
# VM_KVM_PROBE_SECS (default 10) seconds. /dev/kvm being there is not enough:
# under nested virtualisation QEMU can abort at start ("failed to set MSR",
# seen with -cpu host) or run a guest that never prints anything (seen with
# -cpu qemu64). The answer is cached per host boot in
# VM_CACHE/accel.<boot_id>, so the probe costs at most once per machine boot.
set -uo pipefail

# Another architecture than the host's (VM_ARCH=arm64 on x86_64) is TCG only.
host_arch=$(uname -m)
[ "$host_arch" = aarch64 ] && host_arch=arm64
if [ "${VM_ARCH:-x86_64}" != "$host_arch" ]; then echo tcg; exit 0; fi

image=${1:?usage: pick-accel.sh KERNEL_IMAGE}
cache=${VM_CACHE:-/var/cache/sluice-vm}
[ -w "$cache" ] || cache=${XDG_CACHE_HOME:-$HOME/.cache}/sluice-vm
mkdir -p "$cache" 2>/dev/null
boot_id=$(cat /proc/sys/kernel/random/boot_id 2>/dev/null || echo unknown)
memo=$cache/accel.$boot_id
if [ -s "$memo" ]; then cat "$memo"; exit 0; fi

answer=tcg
if [ -c /dev/kvm ] && [ -r /dev/kvm ] && [ -w /dev/kvm ]; then
  log=$(mktemp)
  # The subshell keeps bash from reporting QEMU's abort as a job message.
  (timeout -k 2 "${VM_KVM_PROBE_SECS:-10}" qemu-system-x86_64 -accel kvm -cpu host -m 256 \
    -nodefaults -display none -no-reboot -kernel "$image" \
    -append "console=ttyS0 panic=-1" -serial "file:$log" >/dev/null 2>&1 || true) 2>/dev/null &
  pid=$!
  for _ in $(seq 1 $((${VM_KVM_PROBE_SECS:-10} * 5))); do
    if grep -q 'Linux version' "$log" 2>/dev/null; then answer=kvm; break; fi
    kill -0 $pid 2>/dev/null || break
    sleep 0.2
  done
  kill $pid 2>/dev/null
  wait $pid 2>/dev/null
  rm -f "$log"
fi
echo "$answer" >"$memo" 2>/dev/null
echo "$answer"
