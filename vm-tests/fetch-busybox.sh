#!/bin/bash
# Prints the path of a static busybox for the guest architecture VM_ARCH.
#
# usage: vm-tests/fetch-busybox.sh
# x86_64 (default): the host's /bin/busybox (Debian's busybox-static, which
# mk/ensure-deps.sh vm installs). arm64: Debian's busybox-static:arm64,
# which cannot be installed beside the amd64 one (it is not Multi-Arch:
# same), so its .deb is downloaded into VM_CACHE/debs/ (apt-get download,
# once; arm64 must be a foreign dpkg architecture) and unpacked into
# VM_CACHE/busybox-arm64/.
# env: VM_ARCH, VM_CACHE (cache-lib.sh), BUSYBOX (a busybox to use instead).
set -euo pipefail

if [ -n "${BUSYBOX:-}" ]; then echo "$BUSYBOX"; exit 0; fi
case "${VM_ARCH:-x86_64}" in
  x86_64) echo /bin/busybox; exit 0 ;;
  arm64) ;;
  *) echo "fetch-busybox: VM_ARCH=$VM_ARCH (want x86_64 or arm64)" >&2; exit 1 ;;
esac

. "$(dirname "$0")/cache-lib.sh"
cache=$(cache_dir)
dir=$cache/busybox-arm64
if [ ! -x "$dir/bin/busybox" ]; then
  exec 9>"$cache/.lock"
  flock 9
  mkdir -p "$cache/debs"
  deb=$(ls "$cache"/debs/busybox-static_*_arm64.deb 2>/dev/null | sort -V | tail -n 1 || true)
  if [ -z "$deb" ]; then
    echo "fetch-busybox: downloading busybox-static:arm64 into $cache/debs" >&2
    (cd "$cache/debs" && apt-get download -q -o APT::Sandbox::User=root busybox-static:arm64 >&2) ||
      { echo "fetch-busybox: apt-get download busybox-static:arm64 failed (dpkg --add-architecture arm64 && apt-get update?)" >&2; exit 1; }
    deb=$(ls "$cache"/debs/busybox-static_*_arm64.deb | sort -V | tail -n 1)
  fi
  tmp=$(mktemp -d "$cache/unpack.XXXXXX")
  dpkg-deb -x "$deb" "$tmp" || { rm -rf "$tmp"; echo "fetch-busybox: cannot unpack $deb" >&2; exit 1; }
  mkdir -p "$dir/bin"
  cp "$tmp/bin/busybox" "$dir/bin/busybox.tmp" && mv "$dir/bin/busybox.tmp" "$dir/bin/busybox"
  basename "$deb" >"$dir/deb"
  rm -rf "$tmp"
fi
echo "$dir/bin/busybox"
