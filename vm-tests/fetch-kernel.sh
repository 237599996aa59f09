#!/bin/bash
# Resolves a kernel name to a bootable image and its config, downloading and
# unpacking Debian packages into a cache outside the repo.
#
# usage: vm-tests/fetch-kernel.sh SPEC
# SPEC is one of
#   debian-6.1, debian-6.12     newest Debian linux-image-<ver>...-amd64 package
#                               (-arm64 with VM_ARCH=arm64)
#   debian-6.1-rt, debian-6.12-cloud, ...   same, other flavour (rt-amd64, cloud-amd64)
#   debian:PACKAGE              that exact package, e.g. debian:linux-image-6.1.0-47-amd64
#   host                        this machine's kernel from /boot (skipped if absent)
#   PATH[:CONFIG]               a bzImage (arm64: Image) you built; CONFIG defaults
#                               to the tree's .config when PATH is
#                               <tree>/arch/x86/boot/bzImage or <tree>/arch/arm64/boot/Image
# Prints one line: NAME<TAB>KERNEL_IMAGE<TAB>CONFIG<TAB>RELEASE<TAB>DESCRIPTION
# (CONFIG and RELEASE, the expected uname -r, may be "-" when unknown). Exit 0 found, 3 skip (reason on stderr),
# 1 error (reason on stderr).
# env: VM_ARCH x86_64 (default) or arm64: the architecture of the Debian
#      packages (amd64 or arm64; apt needs arm64 as a foreign architecture,
#      dpkg --add-architecture arm64, which mk/ensure-deps.sh arm64 adds).
#      VM_CACHE (default /var/cache/sluice-vm, or ~/.cache/sluice-vm if that
#      is not writable): debs/ holds the .deb files, kernels/<pkg>/ the
#      unpacked vmlinuz, config and release.
set -euo pipefail

spec=${1:?usage: fetch-kernel.sh SPEC}
case "${VM_ARCH:-x86_64}" in
  x86_64) deb_arch=amd64 boot_image=arch/x86/boot/bzImage ;;
  arm64) deb_arch=arm64 boot_image=arch/arm64/boot/Image ;;
  *) echo "fetch-kernel: VM_ARCH=$VM_ARCH (want x86_64 or arm64)" >&2; exit 1 ;;
esac

die() { echo "fetch-kernel: $*" >&2; exit 1; }
skip() { echo "$*" >&2; exit 3; }

. "$(dirname "$0")/cache-lib.sh"

# Newest package whose name matches the regex $1, from apt's lists; runs
# apt-get update once if the lists know no linux-image package at all.
newest_package() {
  local re=$1 names
  names=$(apt-cache pkgnames linux-image- 2>/dev/null || true)
  if [ -z "$names" ] && [ "$(id -u)" = 0 ]; then
    echo "fetch-kernel: apt lists are empty, running apt-get update" >&2
    apt-get update -qq >&2 || true
    names=$(apt-cache pkgnames linux-image- 2>/dev/null || true)
  fi
  printf '%s\n' "$names" | grep -E "$re" | sort -V | tail -n 1 || true
}

# Unpacks ./boot of PACKAGE's .deb into $cache/kernels/PACKAGE/ (once).
unpack_package() {
  local pkg=$1 cache=$2 dir="$2/kernels/$1" deb tmp
  if [ -s "$dir/vmlinuz" ] && [ -s "$dir/config" ]; then return 0; fi
  mkdir -p "$cache/debs"
  deb=$(ls "$cache/debs/${pkg}_"*.deb 2>/dev/null | sort -V | tail -n 1 || true)
  if [ -z "$deb" ]; then
    echo "fetch-kernel: downloading $pkg into $cache/debs" >&2
    (cd "$cache/debs" && apt-get download -q -o APT::Sandbox::User=root "$pkg" >&2) || {
      echo "fetch-kernel: apt-get download $pkg failed" >&2
      return 1
    }
    deb=$(ls "$cache/debs/${pkg}_"*.deb | sort -V | tail -n 1)
  fi
  tmp=$(mktemp -d "$cache/unpack.XXXXXX")
  # Only ./boot is needed: the harness loads no modules (results travel over
  # the serial port, which Debian kernels have built in).
  dpkg-deb --fsys-tarfile "$deb" | tar -x -C "$tmp" --wildcards './boot/*' ||
    { rm -rf "$tmp"; echo "fetch-kernel: cannot unpack $deb" >&2; return 1; }
  mkdir -p "$dir"
  cp "$tmp"/boot/vmlinuz-* "$dir/vmlinuz"
  cp "$tmp"/boot/config-* "$dir/config"
  basename "$tmp"/boot/vmlinuz-* | sed 's/^vmlinuz-//' >"$dir/release"
  basename "$deb" >"$dir/deb"
  rm -rf "$tmp"
}

# Prints the line for Debian package $1 under the name $2, downloading and
# unpacking it first if needed; returns 1 if that fails.
debian_kernel() {
  local pkg=$1 name=$2 cache
  cache=$(cache_dir)
  exec 9>"$cache/.lock"
  flock 9
  unpack_package "$pkg" "$cache" || return 1
  local dir="$cache/kernels/$pkg"
  printf '%s\t%s\t%s\t%s\t%s\n' "$name" "$dir/vmlinuz" "$dir/config" \
    "$(cat "$dir/release")" "$pkg ($(cat "$dir/deb"))"
}

# The release (uname -r) a bzImage will report, read from its boot header:
# "HdrS" at 0x202, and at 0x20e the offset (minus 0x200) of the version string.
bzimage_release() {
  local off
  [ "$(dd if="$1" bs=1 skip=514 count=4 2>/dev/null)" = HdrS ] || { echo -; return; }
  off=$(od -An -tu2 -j 526 -N 2 "$1" | tr -d ' ')
  dd if="$1" bs=1 skip=$((off + 512)) count=200 2>/dev/null | tr '\0' '\n' | head -n 1 | cut -d' ' -f1
}

case "$spec" in
  debian-[0-9]*)
    ver=${spec#debian-}
    flavour=$deb_arch
    case "$ver" in *-*) flavour=${ver#*-}-$deb_arch; ver=${ver%%-*} ;; esac
    [[ "$ver" =~ ^[0-9]+\.[0-9]+$ ]] || die "bad kernel name '$spec' (want debian-MAJOR.MINOR[-flavour])"
    vre=${ver//./\\.}
    # 6.1 is named linux-image-6.1.0-56-amd64, 6.12 linux-image-6.12.117+deb12-amd64
    # (-arm64 for arm64).
    re="^linux-image-${vre}(\.0-[0-9]+|\.[0-9]+(\+deb[0-9]+)?)-${flavour}\$"
    pkg=$(newest_package "$re")
    [ -n "$pkg" ] && debian_kernel "$pkg" "$spec" && exit 0
    # A stale apt list can name a version the mirror no longer has.
    if [ "$(id -u)" = 0 ]; then
      echo "fetch-kernel: refreshing apt lists (apt-get update) and retrying" >&2
      apt-get update -qq >&2 || true
      pkg=$(newest_package "$re")
      [ -n "$pkg" ] && debian_kernel "$pkg" "$spec" && exit 0
    fi
    # Offline: the newest kernel of that series already in the cache.
    cached=$(ls "$(cache_dir)/kernels" 2>/dev/null | grep -E "$re" | sort -V | tail -n 1 || true)
    if [ -n "$cached" ]; then
      echo "fetch-kernel: using cached $cached" >&2
      debian_kernel "$cached" "$spec" && exit 0
    fi
    die "no Debian package for $spec could be fetched (apt-cache search linux-image-$ver; is bookworm-security in the apt sources?)"
    ;;
  debian:*)
    pkg=${spec#debian:}
    debian_kernel "$pkg" "${pkg#linux-image-}" || die "cannot fetch Debian package $pkg"
    ;;
  host)
    rel=$(uname -r)
    img=/boot/vmlinuz-$rel
    [ -r "$img" ] || skip "host kernel $rel: no $img on this machine (the kernel was loaded from outside this filesystem, e.g. by a VM monitor), so it cannot be booted here"
    cfg=/boot/config-$rel
    if [ ! -r "$cfg" ] && [ -r /proc/config.gz ]; then
      cfg=$(cache_dir)/host-config-$rel
      zcat /proc/config.gz >"$cfg"
    fi
    [ -r "$cfg" ] || cfg=-
    printf '%s\t%s\t%s\t%s\t%s\n' host "$img" "$cfg" "$rel" "host kernel $rel"
    ;;
  *)
    img=${spec%%:*}
    cfg=-
    [ "$img" != "$spec" ] && cfg=${spec#*:}
    [ -f "$img" ] || die "unknown kernel '$spec': not a debian-X.Y/debian:PKG/host name and no such file"
    if [ "$cfg" = - ]; then
      case "$img" in
        */$boot_image) [ -f "${img%/"$boot_image"}/.config" ] && cfg=${img%/"$boot_image"}/.config ;;
      esac
    fi
    [ "$cfg" = - ] || [ -f "$cfg" ] || die "kernel config $cfg not found"
    # A name safe for a directory: the tree's (or file's) base name.
    base=${img%/"$boot_image"}
    name=local-$(basename "$base" | tr -c 'A-Za-z0-9._+\n-' '_')
    printf '%s\t%s\t%s\t%s\t%s\n' "$name" "$(realpath "$img")" \
      "$( [ "$cfg" = - ] && echo - || realpath "$cfg")" "$(bzimage_release "$img")" "local kernel $img"
    ;;
esac
