#!/bin/bash
# Installs what vm-tests needs on the host, once, if it is missing:
# qemu-system-x86 (qemu-system-x86_64; with VM_ARCH=arm64 qemu-system-arm for
# qemu-system-aarch64), busybox-static (/bin/busybox, static; for arm64 guests
# too, which list their applets with it: fetch-busybox.sh), cpio. Needs root
# for apt-get; says what to install otherwise.
set -euo pipefail

missing=()
if [ "${VM_ARCH:-x86_64}" = arm64 ]; then
  command -v qemu-system-aarch64 >/dev/null || missing+=(qemu-system-arm)
else
  command -v qemu-system-x86_64 >/dev/null || missing+=(qemu-system-x86)
fi
if ! dpkg-query -W -f='${Status}' busybox-static 2>/dev/null | grep -q 'ok installed'; then
  missing+=(busybox-static)
fi
command -v cpio >/dev/null || missing+=(cpio)
[ ${#missing[@]} -eq 0 ] && exit 0

if [ "$(id -u)" != 0 ]; then
  echo "vm-tests: missing ${missing[*]}; run: sudo apt-get install -y ${missing[*]}" >&2
  exit 1
fi
echo "vm-tests: installing ${missing[*]} (apt-get install -y, once)" >&2
apt-get update -qq >&2 || true
DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >&2
