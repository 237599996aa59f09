#!/usr/bin/env bash
# Installs the Debian packages sluice needs, only those missing, with one message.
#   mk/ensure-deps.sh build   what `make` needs
#   mk/ensure-deps.sh bench   plus what the benchmarks compare against
#   mk/ensure-deps.sh vm      plus what vm-tests need
#   mk/ensure-deps.sh package plus what `make deb` and its check need
set -euo pipefail
# chromium-headless-shell loads the HTML report in the tests (report_html_test.cc).
build_pkgs=(g++ make clang llvm libclang-rt-14-dev libbpf-dev libelf-dev zlib1g-dev
            libprotobuf-dev protobuf-compiler libgtest-dev libbenchmark-dev bpftool
            libtraceevent-dev libsqlite3-dev libedit-dev libsystemd-dev help2man
            chromium-headless-shell)
bench_pkgs=(trace-cmd stress-ng)
vm_pkgs=(qemu-system-x86 busybox-static cpio)
package_pkgs=(dpkg-dev lintian systemd)
want=("${build_pkgs[@]}")
case "${1:-build}" in
  build) ;;
  bench) want+=("${bench_pkgs[@]}") ;;
  vm) want+=("${vm_pkgs[@]}") ;;
  package) want+=("${package_pkgs[@]}") ;;
  all) want+=("${bench_pkgs[@]}" "${vm_pkgs[@]}" "${package_pkgs[@]}") ;;
  *) echo "ensure-deps: unknown set '$1' (build, bench, vm, package, all)" >&2; exit 2 ;;
esac
missing=()
for p in "${want[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'ok installed' || missing+=("$p")
done
[ ${#missing[@]} -eq 0 ] && exit 0
echo "sluice: installing missing Debian packages: ${missing[*]}"
if [ "$(id -u)" -ne 0 ]; then
  echo "sluice: cannot install packages as $(id -un): run 'sudo apt-get install ${missing[*]}' or run make as root" >&2
  exit 1
fi
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq >/dev/null
apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
echo "sluice: installed ${missing[*]}"
