#!/usr/bin/env bash
# Checks the Debian package `make deb` built (CI: `make deb-check`):
#   1. its contents: every file make install installs, under /usr, nothing else;
#   2. its control file: Depends from dpkg-shlibdeps, Recommends the libraries
#      sluice loads with dlopen, the maintainer scripts;
#   3. the paths baked into it: units and postinst use the package's prefix;
#   4. systemd-analyze verify on every unit, in the unpacked tree;
#   5. the sysusers.d and tmpfiles.d entries, applied to a scratch root;
#   6. man pages render without warnings, bash completion loads and completes
#      without tracefs;
#   7. lintian: errors fail the check, warnings are printed.
# Needs no root and changes nothing outside a scratch directory.
#   mk/deb/check.sh build/deb/sluice.deb
set -euo pipefail
deb=$1
failures=0
fail() { echo "deb-check: FAIL: $*" >&2; failures=$((failures + 1)); }
pass() { echo "deb-check: ok: $*"; }
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
root=$scratch/root
dpkg-deb -x "$deb" "$root"
dpkg-deb -e "$deb" "$scratch/DEBIAN"

# 1. Contents.
expected=(
  usr/bin/sluice usr/sbin/sluiced usr/sbin/sluice-probes usr/sbin/sluice-relay
  usr/share/sluice/kconfigs/base.config usr/share/sluice/kconfigs/ftrace.config
  usr/share/sluice/report/40_cpu_by_thread.sql usr/share/sluice/report/60_sched_latency.sql
  usr/share/doc/sluice/README.md usr/share/doc/sluice/SERVICE.md usr/share/doc/sluice/ANDROID.md
  usr/share/doc/sluice/copyright usr/share/doc/sluice/changelog.gz
  usr/share/man/man1/sluice.1.gz usr/share/man/man1/sluice-record.1.gz
  usr/share/man/man1/sluice-stats.1.gz usr/share/man/man1/sluice-query.1.gz
  usr/share/man/man1/sluice-report.1.gz
  usr/share/man/man1/sluice-sessions.1.gz usr/share/man/man1/sluice-clone.1.gz
  usr/share/man/man1/sluice-trigger.1.gz usr/share/man/man1/sluice-export.1.gz
  usr/share/man/man1/sluice-doctor.1.gz usr/share/man/man1/sluice-ftrace-formats.1.gz
  usr/share/man/man8/sluiced.8.gz usr/share/man/man8/sluice-probes.8.gz
  usr/share/man/man8/sluice-relay.8.gz
  usr/share/bash-completion/completions/sluice usr/share/bash-completion/completions/sluiced
  usr/share/bash-completion/completions/sluice-probes
  usr/lib/systemd/system/sluiced.socket usr/lib/systemd/system/sluiced.service
  usr/lib/systemd/system/sluice-probes.service usr/lib/systemd/system/sluice-relay.socket
  usr/lib/sysusers.d/sluice.conf usr/lib/tmpfiles.d/sluice.conf
)
missing=0
for f in "${expected[@]}"; do
  [ -f "$root/$f" ] || { fail "missing /$f"; missing=1; }
done
[ $missing -eq 1 ] || pass "all ${#expected[@]} expected files are in the package"
outside=$(cd "$root" && find . -mindepth 1 -maxdepth 1 ! -name usr)
[ -z "$outside" ] && pass "nothing outside /usr" || fail "files outside /usr: $outside"
[ ! -e "$root/usr/local" ] && pass "nothing under /usr/local" || fail "/usr/local in the package"
for b in usr/bin/sluice usr/sbin/sluiced usr/sbin/sluice-probes usr/sbin/sluice-relay; do
  [ -x "$root/$b" ] || fail "/$b is not executable"
done

# 2. Control file and maintainer scripts.
depends=$(sed -n 's/^Depends: //p' "$scratch/DEBIAN/control")
for lib in libc6 libstdc++6 libprotobuf libbpf1 libsystemd0 libsqlite3 zlib1g libcpp-httplib; do
  grep -q "$lib" <<<"$depends" || fail "Depends lacks $lib: $depends"
done
pass "Depends: $depends"
# What sluice opens with dlopen when a feature needs it (shm/base/shared_library.h):
# dpkg-shlibdeps cannot see those, and a run without them lacks only that feature.
recommends=$(sed -n 's/^Recommends: //p' "$scratch/DEBIAN/control")
for lib in libcurl4 libedit2; do
  grep -q "$lib" <<<"$recommends" || fail "Recommends lacks $lib (loaded with dlopen): $recommends"
done
pass "Recommends: $recommends"
for s in postinst prerm postrm; do
  [ -x "$scratch/DEBIAN/$s" ] || fail "no executable $s"
  sh -n "$scratch/DEBIAN/$s" || fail "$s: shell syntax"
done

# 3. Paths baked in: the package's prefix, nothing from the default one.
if grep -rnI '/usr/local\|@[A-Z_]*@' "$root/usr/lib" "$scratch/DEBIAN/postinst"; then
  fail "a unit or the postinst names /usr/local or an unrendered @VARIABLE@"
else
  pass "units and postinst use the /usr prefix"
fi
grep -q '^ExecStart=/usr/sbin/sluiced\( \|$\)' "$root/usr/lib/systemd/system/sluiced.service" ||
  fail "sluiced.service does not start /usr/sbin/sluiced"
# (--help only reads: doctor itself would probe tracefs and BPF.)
"$root/usr/bin/sluice" doctor --help | grep -q "/usr/share/sluice/kconfigs" ||
  fail "sluice doctor does not know /usr/share/sluice/kconfigs"
if grep -q '^Requires=\|^Wants=' "$root/usr/lib/systemd/system/sluice-probes.service"; then
  fail "sluice-probes.service pulls another unit in (it must not start sluiced at boot)"
fi
grep -q '^WantedBy=sockets.target' "$root/usr/lib/systemd/system/sluiced.socket" ||
  fail "sluiced.socket is not wanted by sockets.target"
if grep -q '^WantedBy=' "$root/usr/lib/systemd/system/sluiced.service"; then
  fail "sluiced.service would start at boot"
fi

# 4. systemd-analyze verify, in a copy of the unpacked tree (where the
# ExecStart= binaries are) given the build machine's own units (the targets
# ours name). Any output is a finding.
vroot=$scratch/verify-root
cp -a "$root" "$vroot"
cp -rn /usr/lib/systemd/system/. "$vroot/usr/lib/systemd/system/"
units=()
for u in "$root"/usr/lib/systemd/system/*; do units+=("$vroot/usr/lib/systemd/system/${u##*/}"); done
if verify=$(systemd-analyze verify --root="$vroot" --man=no "${units[@]}" 2>&1) && [ -z "$verify" ]; then
  pass "systemd-analyze verify: ${#units[@]} units clean"
else
  fail "systemd-analyze verify:"$'\n'"$verify"
fi

# 5. sysusers.d and tmpfiles.d applied to a scratch root.
mkdir -p "$root/etc"
systemd-sysusers --root="$root" >/dev/null 2>&1
if grep -q '^sluice:' "$root/etc/group" && grep -q '^sluiced:' "$root/etc/passwd"; then
  pass "sysusers.d creates group sluice and user sluiced"
else
  fail "sysusers.d did not create group sluice and user sluiced"
fi
systemd-tmpfiles --root="$root" --create "$root/usr/lib/tmpfiles.d/sluice.conf" 2>/dev/null || true
if [ "$(stat -c %a "$root/run/sluice/tracefs-state" 2>/dev/null)" = 700 ]; then
  pass "tmpfiles.d creates /run/sluice/tracefs-state 0700"
else
  fail "tmpfiles.d did not create /run/sluice/tracefs-state 0700"
fi

# 6. Man pages and bash completion.
for page in "$root"/usr/share/man/man*/*.gz; do
  warnings=$(LC_ALL=C.UTF-8 MANROFFSEQ='' MANWIDTH=80 man --warnings -E UTF-8 -l "$page" 2>&1 >/dev/null || true)
  [ -z "$warnings" ] || fail "$(basename "$page"): $warnings"
  zcat "$page" | grep -q '^\.SH DESCRIPTION\|^\.SH OPTIONS\|^\.SS\|^\.TP' ||
    fail "$(basename "$page") has no options (help2man output?)"
done
pass "man pages render"
completion=$root/usr/share/bash-completion/completions/sluice
words=$(PATH="$root/usr/bin:$root/usr/sbin:$PATH" bash -c '
  source "$1"
  _sluice_tracefs_dirs=(/nonexistent)   # No tracefs: the fallback groups.
  COMP_WORDS=(sluice re); COMP_CWORD=1; _sluice; echo "${COMPREPLY[*]}"
  COMP_WORDS=(sluice report --sql cpu_by_t); COMP_CWORD=3; _sluice; echo "${COMPREPLY[*]}"
  COMP_WORDS=(sluice record --bu); COMP_CWORD=2; _sluice; echo "${COMPREPLY[*]}"
  COMP_WORDS=(sluice record sch); COMP_CWORD=2; _sluice; echo "${COMPREPLY[*]}"
  COMP_WORDS=(sluiced --consumer-s); COMP_CWORD=1; _sluice_daemon; echo "${COMPREPLY[*]}"
' _ "$completion" 2>&1)
expected_words=$'record report\ncpu_by_thread\n--buffer\nsched/* \n--consumer-socket --consumer-socket-mode'
[ "$words" = "$expected_words" ] && pass "bash completion: commands, flags, events, report sections, daemons" ||
  fail "bash completion gave:"$'\n'"$words"$'\n'"expected:"$'\n'"$expected_words"

# 7. lintian.
# TMPDIR: lintian leaves an mldbm-elf-* cache file in its temp dir each run.
lintian_out=$(TMPDIR=$scratch lintian --info --tag-display-limit 0 "$deb" 2>&1 |
  grep -v '^running with root privileges') && lintian_rc=0 || lintian_rc=$?
echo "deb-check: lintian says (exit $lintian_rc):"
if [ -n "$lintian_out" ]; then sed 's/^/    /' <<<"$lintian_out"; else echo "    (nothing)"; fi
grep -q '^E: ' <<<"$lintian_out" && fail "lintian errors"

if [ $failures -ne 0 ]; then
  echo "deb-check: $failures check(s) failed" >&2
  exit 1
fi
echo "deb-check: $deb is good"
