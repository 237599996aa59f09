#!/bin/bash
# Builds the vm-tests initramfs: busybox-static, guest/init, guest/lib.sh,
# scenarios/*.sh, and the sluice binaries from BUILD_DIR (when built:
# sluice, sluice-probes, sluiced, sluice-relay, sluice_tests; debug info stripped) with
# every shared library ldd finds for them, the dynamic loader included.
#
# usage: vm-tests/build-initramfs.sh OUT.cpio.gz
# env:   BUILD_DIR   where the sluice binaries are (default: build)
#        VM_GUEST_BUILD_DIR  where the guest's binaries are, when they are not
#                    the host's (make vm-test ARCH=arm64: build/arm64)
#        VM_ARCH     x86_64 (default) or arm64: the guest's architecture. For
#                    arm64 the busybox is Debian's arm64 one
#                    (fetch-busybox.sh) and the libraries are found from the
#                    binaries' ELF headers in the arm64 multiarch directories,
#                    since the host's ldd cannot run an aarch64 binary
#        VM_EXTRA    extra host files to put in the guest at the same path
#                    (space-separated; their libraries are copied too)
# Writes OUT.cpio.gz and OUT.cpio.gz.manifest (one line per included file).
# The initramfs does not depend on the kernel: no modules are needed, since
# results come back through the kernel log on the serial console (see
# docs/vm-tests.md).
set -euo pipefail

out=${1:?usage: build-initramfs.sh OUT.cpio.gz}
here=$(cd "$(dirname "$0")" && pwd)
build_dir=${VM_GUEST_BUILD_DIR:-${BUILD_DIR:-build}}
vm_arch=${VM_ARCH:-x86_64}
# sluice_tests: the unit + kernel integration test binary; scenario
# 50-kernel-tests runs its *KernelTest* suites inside each guest kernel.
binaries="sluice sluice-probes sluiced sluice-relay sluice_tests"

# Debian's busybox-static installs /bin/busybox; a dynamic one would need libc.
busybox=$(bash "$here/fetch-busybox.sh") || exit 1
if [ "$vm_arch" = x86_64 ] && [ -x "$busybox" ] && ldd "$busybox" >/dev/null 2>&1; then
  echo "build-initramfs: $busybox is dynamically linked; install busybox-static" >&2
  exit 1
fi
[ -x "$busybox" ] || { echo "build-initramfs: no busybox; run mk/ensure-deps.sh vm" >&2; exit 1; }

root=$(mktemp -d "${TMPDIR:-/tmp}/sluice-initramfs.XXXXXX")
trap 'rm -rf "$root"' EXIT
mkdir -p "$root"/{bin,sbin,usr/bin,usr/sbin,proc,sys,dev,tmp,out,root,etc,scenarios,usr/share/sluice-vm}

cp "$busybox" "$root/bin/busybox"
# The applet links. A foreign busybox cannot run here to list its applets;
# the host's busybox-static is the same Debian version and configuration.
list_busybox=$busybox
[ "$vm_arch" = x86_64 ] || list_busybox=/bin/busybox
for applet in $("$list_busybox" --list); do
  [ -e "$root/bin/$applet" ] || ln -s busybox "$root/bin/$applet"
done
# The kernel opens /dev/console for PID 1 before /init mounts devtmpfs.
mknod -m 600 "$root/dev/console" c 5 1 2>/dev/null || true

install -m 755 "$here/guest/init" "$root/init"
install -m 644 "$here/guest/lib.sh" "$root/usr/share/sluice-vm/lib.sh"
install -m 644 "$here/guest/base.sh" "$root/usr/share/sluice-vm/base.sh"
install -m 755 "$here/guest/capture-formats.sh" "$root/usr/share/sluice-vm/capture-formats.sh"
# The kconfig fragments, where sluice doctor looks for them.
mkdir -p "$root/usr/share/sluice/kconfigs"
cp "$here"/../kconfigs/*.config "$root/usr/share/sluice/kconfigs/"
for s in "$here"/scenarios/*.sh; do
  install -m 755 "$s" "$root/scenarios/"
done

# Copies host file $1 to the same path in the guest, following symlinks.
copy_file() {
  local src=$1 dst="$root$1"
  [ -e "$dst" ] && return 0
  mkdir -p "$(dirname "$dst")"
  cp -L "$src" "$dst"
}

# The shared libraries an executable needs, one path a line. x86_64: ldd
# resolves the whole closure (the "=> /path" and the bare loader path are
# both picked up; a static binary or a script has none). arm64: the program
# interpreter and the DT_NEEDED entries, followed through the libraries, in
# the arm64 multiarch directories (where the :arm64 packages put them and
# where the guest's ld.so looks).
arm64_lib_dirs="/lib/aarch64-linux-gnu /usr/lib/aarch64-linux-gnu"
needed_libs() {
  if [ "$vm_arch" = x86_64 ]; then
    { ldd "$1" 2>/dev/null || true; } | awk '/=> \//{print $3} /^[ \t]*\//{print $1}'
    return
  fi
  local -A seen=()
  local todo=("$1") f name dir found
  { readelf -lW "$1" 2>/dev/null || true; } | sed -n 's/.*Requesting program interpreter: \(.*\)]$/\1/p'
  while [ ${#todo[@]} -gt 0 ]; do
    f=${todo[0]} todo=("${todo[@]:1}")
    for name in $({ readelf -dW "$f" 2>/dev/null || true; } | sed -n 's/.*(NEEDED).*\[\(.*\)\]$/\1/p'); do
      [ -n "${seen[$name]:-}" ] && continue
      seen[$name]=1 found=
      for dir in $arm64_lib_dirs; do
        [ -e "$dir/$name" ] && { found=$dir/$name; break; }
      done
      [ -n "$found" ] || { echo "build-initramfs: $name (needed by $f) not found in $arm64_lib_dirs" >&2; exit 1; }
      echo "$found"
      todo+=("$found")
    done
  done
}
strip_tool=strip
[ "$vm_arch" = arm64 ] && strip_tool=aarch64-linux-gnu-strip

# Copies an executable and the shared libraries it needs.
copy_with_libs() {
  local exe=$1 dst=$2 libs
  mkdir -p "$(dirname "$root$dst")"
  # Without debug info: a fraction of the size, symbols kept for backtraces.
  "$strip_tool" --strip-debug -o "$root$dst" "$exe" 2>/dev/null || cp -L "$exe" "$root$dst"
  libs=$(needed_libs "$exe") || exit 1
  for lib in $libs; do copy_file "$lib"; done
}

for b in $binaries; do
  if [ -x "$build_dir/$b" ]; then
    copy_with_libs "$build_dir/$b" "/usr/bin/$b"
  fi
done
for f in ${VM_EXTRA:-}; do
  copy_with_libs "$f" "$f"
done

mkdir -p "$(dirname "$out")"
(cd "$root" && find . | LC_ALL=C sort | cpio --quiet -o -H newc -R 0:0) | gzip -1 >"$out.tmp"
mv "$out.tmp" "$out"
(cd "$root" && find . -type f | LC_ALL=C sort) >"$out.manifest"
echo "initramfs: $out ($(du -h "$out" | cut -f1)," \
  "sluice binaries: $(for b in $binaries; do [ -e "$root/usr/bin/$b" ] && printf '%s ' "$b"; done; true))"
