#!/usr/bin/env bash
# Installs the Debian packages sluice needs, only those missing, with one message.
#   mk/ensure-deps.sh build   what `make` needs
#   mk/ensure-deps.sh bench   plus what the benchmarks compare against
#   mk/ensure-deps.sh vm      plus what vm-tests need: QEMU for VM_ARCH
#                             (x86_64 or arm64), busybox-static, cpio
#   mk/ensure-deps.sh package plus what `make deb` and its check need
#   mk/ensure-deps.sh arm64   plus what `make ARCH=arm64` needs: the aarch64
#                             cross compiler and the :arm64 -dev packages of the
#                             libraries sluice links (arm64 becomes a foreign
#                             dpkg architecture first); protoc, bpftool and clang
#                             stay the host's (same versions as the libraries)
set -euo pipefail
# chromium-headless-shell loads the HTML report in the tests (report_html_test.cc).
# libcpp-httplib-dev serves `sluice query --httpd`; python3-protobuf and
# python3-pandas run Perfetto's Python client against it in the tests.
# libzstd-dev compresses traces; libcurl4-openssl-dev is the HTTP client of
# `sluice export --clickhouse`. clickhouse-server is what the tests load
# traces into (clickhouse_export_test.cc runs its own server on a free
# loopback port; where systemd runs, the package also starts the system's
# server on 8123, which the tests leave alone); clickhouse-client feeds the
# load benchmark's baseline.
build_pkgs=(g++ make clang llvm libclang-rt-14-dev libbpf-dev libelf-dev zlib1g-dev
            libprotobuf-dev protobuf-compiler libgtest-dev libbenchmark-dev bpftool
            libtraceevent-dev libsqlite3-dev libedit-dev libsystemd-dev help2man
            chromium-headless-shell libcpp-httplib-dev python3-protobuf
            python3-pandas libzstd-dev libcurl4-openssl-dev clickhouse-server)
bench_pkgs=(trace-cmd stress-ng clickhouse-client)
if [ "${VM_ARCH:-x86_64}" = arm64 ]; then qemu_pkg=qemu-system-arm; else qemu_pkg=qemu-system-x86; fi
vm_pkgs=("$qemu_pkg" busybox-static cpio)
package_pkgs=(dpkg-dev lintian systemd)
arm64_pkgs=(g++-aarch64-linux-gnu libc6:arm64 libbpf-dev:arm64 libelf-dev:arm64 zlib1g-dev:arm64
            libprotobuf-dev:arm64 libsqlite3-dev:arm64 libedit-dev:arm64
            libsystemd-dev:arm64 libgtest-dev:arm64 libcpp-httplib-dev:arm64
            libzstd-dev:arm64 libcurl4-openssl-dev:arm64)
want=("${build_pkgs[@]}")
case "${1:-build}" in
  build) ;;
  bench) want+=("${bench_pkgs[@]}") ;;
  vm) want+=("${vm_pkgs[@]}") ;;
  package) want+=("${package_pkgs[@]}") ;;
  arm64) want+=("${arm64_pkgs[@]}") ;;
  all) want+=("${bench_pkgs[@]}" "${vm_pkgs[@]}" "${package_pkgs[@]}") ;;
  *) echo "ensure-deps: unknown set '$1' (build, bench, vm, package, arm64, all)" >&2; exit 2 ;;
esac
find_missing() {
  missing=()
  for p in "${want[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'ok installed' || missing+=("$p")
  done
}
find_missing
[ ${#missing[@]} -eq 0 ] && exit 0
if [ "$(id -u)" -ne 0 ]; then
  echo "sluice: cannot install packages as $(id -un): run 'sudo apt-get install ${missing[*]}' or run make as root" >&2
  exit 1
fi
# Two makes on a fresh machine (`make run` in one terminal and `make test` in
# another, or CI beside a load build) would both run apt-get, and the second
# fails on apt's lock. The second waits here instead, then installs only what
# the first did not.
lock_dir=/run/lock
[ -d "$lock_dir" ] || lock_dir=/tmp  # Minimal containers may lack /run/lock.
exec {lock_fd}>"$lock_dir/sluice-ensure-deps.lock"
if ! flock -n "$lock_fd"; then
  echo "sluice: waiting for another sluice build that is installing packages"
  flock "$lock_fd"
  find_missing
  [ ${#missing[@]} -eq 0 ] && exit 0
fi
echo "sluice: installing missing Debian packages: ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
if [ "${1:-build}" = arm64 ] && ! dpkg --print-foreign-architectures | grep -qx arm64; then
  echo "sluice: adding arm64 as a foreign dpkg architecture (dpkg --add-architecture arm64)"
  dpkg --add-architecture arm64
fi
# Maintainer scripts of some packages (libc6:arm64's postinst among them)
# run `systemctl daemon-reexec` when /run/systemd/system exists, and fail
# where systemd is not PID 1 (containers, CI runners): every :arm64 package
# is then left unconfigured. Without systemd as PID 1 there is no manager to
# talk to, so a systemctl that does nothing is the truth; it is first in PATH
# for this install only.
if [ "$(cat /proc/1/comm 2>/dev/null)" != systemd ]; then
  shim=$(mktemp -d)
  trap 'rm -rf "$shim"' EXIT
  printf '#!/bin/sh\n# sluice ensure-deps: no systemd manager here (PID 1 is not systemd)\nexit 0\n' >"$shim/systemctl"
  chmod 0755 "$shim/systemctl"
  export PATH="$shim:$PATH"
fi
# A previous install that stopped half-way (the failure above) is finished
# first, or apt-get refuses to run.
if [ -n "$(dpkg --audit 2>/dev/null)" ]; then
  echo "sluice: finishing packages a previous install left unconfigured (dpkg --configure -a)"
  dpkg --configure -a >/dev/null || true
fi
# Other apt users (unattended-upgrades, an admin) are waited for, not failed on.
apt_wait=(-o DPkg::Lock::Timeout=600)
apt-get "${apt_wait[@]}" update -qq >/dev/null
if ! apt-get "${apt_wait[@]}" install -y -qq --no-install-recommends "${missing[@]}" >/dev/null; then
  echo "sluice: apt-get install ${missing[*]} failed; see 'dpkg --audit' and run make again" >&2
  exit 1
fi
echo "sluice: installed ${missing[*]}"
