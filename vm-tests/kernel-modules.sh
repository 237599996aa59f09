#!/bin/bash
# Puts kernel modules (and the modules they depend on) from a Debian kernel
# package into a directory that becomes part of the guest's initramfs, for
# the one scenario that needs a driver the harness otherwise does without
# (70-relay: virtio_console, which Debian's 6.1 builds as a module and 6.12
# builds in).
#
# usage: vm-tests/kernel-modules.sh CONFIG DEB RELEASE DEST CONFIG_SYMBOL:MODULE...
# For each CONFIG_SYMBOL:MODULE pair: =y in CONFIG needs nothing, =m takes
# MODULE and its dependencies (modules.dep) out of DEB into
# DEST/lib/modules/RELEASE/, decompressed (6.12 ships .ko.xz, which busybox
# insmod cannot load), and appends them, dependencies first, to
# DEST/lib/modules/RELEASE/sluice-load-order (paths as the guest sees them),
# which the scenario loads with insmod. Anything else (not set, no package
# to take a module from) is an error with the reason on stderr.
set -euo pipefail

config=${1:?usage: kernel-modules.sh CONFIG DEB RELEASE DEST SYMBOL:MODULE...}
deb=${2:?} release=${3:?} dest=${4:?}
shift 4
moddir=lib/modules/$release
mkdir -p "$dest/$moddir"
order=$dest/$moddir/sluice-load-order
: >"$order"

want=()
for pair in "$@"; do
  sym=${pair%%:*} mod=${pair#*:}
  case "$(sed -n "s/^$sym=//p" "$config")" in
    y) ;;
    m) want+=("$mod") ;;
    *) echo "kernel-modules: $sym is not set in $config" >&2; exit 1 ;;
  esac
done
[ ${#want[@]} -eq 0 ] && exit 0
[ -f "$deb" ] || { echo "kernel-modules: ${want[*]} are modules and there is no package to take them from" >&2; exit 1; }

tmp=$(mktemp -d "${TMPDIR:-/tmp}/sluice-modules.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
# The package has no modules.dep (depmod makes it at install): take each
# module by name, read its dependencies from its .modinfo, and take those
# too, until none is missing. Each pass decompresses the package once.
declare -A have=() deps=()
paths=()
todo=("${want[@]}")
while [ ${#todo[@]} -gt 0 ]; do
  globs=()
  for m in "${todo[@]}"; do globs+=("./$moddir/kernel/*/${m}.ko*"); done
  dpkg-deb --fsys-tarfile "$deb" | tar -x -C "$tmp" --wildcards "${globs[@]}" 2>/dev/null || true
  next=()
  for m in "${todo[@]}"; do
    f=$(find "$tmp/$moddir/kernel" -name "$m.ko*" -print -quit)
    [ -n "$f" ] || { echo "kernel-modules: no $m.ko in $deb" >&2; exit 1; }
    have[$m]=${f#"$tmp/$moddir/"}
    # .modinfo holds NUL-terminated "key=value" strings: depends=a,b
    deps[$m]=$(case "$f" in *.xz) xz -dc "$f" ;; *.zst) zstd -qdc "$f" ;; *) cat "$f" ;; esac |
      tr '\0' '\n' | sed -n 's/^depends=//p' | head -n 1 | tr ',' ' ')
    for d in ${deps[$m]}; do
      d=${d//-/_}
      [ -n "${have[$d]:-}" ] || [[ " ${next[*]:-} ${todo[*]} " == *" $d "* ]] || next+=("$d")
    done
  done
  todo=(${next[@]+"${next[@]}"})
done
# Dependencies first, each once.
declare -A added=()
add() {
  local m=$1 d
  [ -n "${added[$m]:-}" ] && return 0
  added[$m]=1
  for d in ${deps[$m]}; do add "${d//-/_}"; done
  paths+=("${have[$m]}")
}
for m in "${want[@]}"; do add "$m"; done

for p in "${paths[@]}"; do
  src=$tmp/$moddir/$p plain=${p%.xz}
  plain=${plain%.zst}
  mkdir -p "$(dirname "$dest/$moddir/$plain")"
  case "$p" in
    *.xz) xz -dc "$src" >"$dest/$moddir/$plain" ;;
    *.zst) zstd -qdc "$src" >"$dest/$moddir/$plain" ;;
    *) cp "$src" "$dest/$moddir/$plain" ;;
  esac
  echo "/$moddir/$plain" >>"$order"
done
