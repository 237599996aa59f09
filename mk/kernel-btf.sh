#!/usr/bin/env bash
# Writes the BTF of a kernel that does not run here, for the vmlinux.h of a
# cross build (make ARCH=arm64, mk/bpf.mk): the kernel is fetched as the
# vm-tests fetch it (vm-tests/fetch-kernel.sh: a Debian linux-image package,
# downloaded once into VM_CACHE) and its BTF is cut out of the boot image.
#
# usage: VM_ARCH=arm64 mk/kernel-btf.sh KERNEL OUT.btf     (KERNEL: debian-6.12, ...)
#
# Why from the image: Debian ships the vmlinux ELF (with its .BTF section)
# only in the -dbg package, about a gigabyte. The arm64 boot image (Debian's
# vmlinuz is a plain, uncompressed Image) holds the same .BTF section
# verbatim, since the kernel serves it as /sys/kernel/btf/vmlinux. It starts
# with the BTF header (include/uapi/linux/btf.h): magic 0xeb9f, version 1,
# flags 0, hdr_len 24, then type_off, type_len, str_off, str_len (u32,
# little-endian); the blob is hdr_len + str_off + str_len bytes. bpftool
# checks what we cut by parsing it.
set -euo pipefail
kernel=${1:?usage: kernel-btf.sh KERNEL OUT.btf}
out=${2:?usage: kernel-btf.sh KERNEL OUT.btf}
here=$(cd "$(dirname "$0")" && pwd)
bpftool=${BPFTOOL:-$(command -v bpftool || echo /usr/sbin/bpftool)}

info=$(bash "$here/../vm-tests/fetch-kernel.sh" "$kernel") ||
  { echo "kernel-btf: cannot fetch kernel $kernel (VM_ARCH=${VM_ARCH:-x86_64}); see above" >&2; exit 1; }
image=$(cut -f2 <<<"$info")
case "$(od -An -c -j 56 -N 4 "$image" | tr -d ' ')" in
  ARMd) ;;   # the arm64 Image header's magic at offset 56 (Documentation/arch/arm64/booting.rst)
  *) echo "kernel-btf: $image is not an uncompressed arm64 Image; cannot find its BTF" >&2; exit 1 ;;
esac
# The header: magic 9f eb, version 01, flags 00, hdr_len 24.
offsets=$(LC_ALL=C grep -obUaP '\x9f\xeb\x01\x00\x18\x00\x00\x00' "$image" | cut -d: -f1)
for off in $offsets; do
  read -r type_off type_len str_off str_len < <(od -An -tu4 -j $((off + 8)) -N 16 "$image")
  [ $((type_off + type_len)) -le "$str_off" ] || continue
  len=$((24 + str_off + str_len))
  dd if="$image" of="$out.tmp" bs=1M iflag=skip_bytes,count_bytes skip="$off" count="$len" status=none
  if "$bpftool" btf dump file "$out.tmp" >/dev/null 2>&1; then
    mv "$out.tmp" "$out"
    echo "kernel-btf: $out: $len bytes of BTF from $(cut -f5 <<<"$info")"
    exit 0
  fi
done
rm -f "$out.tmp"
echo "kernel-btf: no BTF found in $image (is CONFIG_DEBUG_INFO_BTF=y in that kernel?)" >&2
exit 1
