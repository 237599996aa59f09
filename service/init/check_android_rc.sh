#!/usr/bin/env bash
# Checks service/init/sluice.rc against the programs it starts, without a
# device (docs/ANDROID.md): every option on a `service` line is one the
# program's --help lists; the `socket` lines name the sockets sluiced reads
# (ANDROID_SOCKET_<name>, service/inherited_sockets.h); the consumer socket has
# no permission bits for others; every service is `disabled` and a property
# trigger starts and stops it.
#   service/init/check_android_rc.sh BUILD_DIR
set -euo pipefail
build=$1
rc=service/init/sluice.rc
failures=0
fail() { echo "init-check: FAIL: $*" >&2; failures=$((failures + 1)); }

# The .rc with continuation lines joined.
joined=$(sed -e ':a' -e '/\\$/{N; s/\\\n//; ba}' "$rc")
services=$(awk '$1 == "service" { print $2 }' <<<"$joined")
[ -n "$services" ] || fail "no service in $rc"
while read -r _ name path args; do
  bin=$build/$(basename "$path")
  [ -x "$bin" ] || { fail "$name: $bin is not built"; continue; }
  help=$("$bin" --help 2>&1)
  for opt in $(grep -oE -- '--[a-z][a-z-]*' <<<"$args" || true); do
    grep -qE -- "(^|[ ,[])$opt([ =]|$)" <<<"$help" || fail "$name: $opt is not in $(basename "$path") --help"
  done
done < <(grep '^service ' <<<"$joined")

# sluice's own pair must be there; traced's (traced_producer, traced_consumer)
# only when sluiced takes traced's place (docs/ANDROID.md), which this .rc
# does not: traced may run beside it.
for env in $(grep -oE 'ANDROID_SOCKET_sluice_[a-z_]+' service/inherited_sockets.h | sort -u); do
  grep -qE "^ +socket ${env#ANDROID_SOCKET_} stream " "$rc" || fail "no 'socket ${env#ANDROID_SOCKET_} stream' line"
done
for consumer in sluice_consumer traced_consumer; do
  grep -qE "^ +socket $consumer stream " "$rc" || continue
  consumer_mode=$(awk -v c=$consumer '$1 == "socket" && $2 == c { print $4 }' "$rc")
  if [ -z "$consumer_mode" ] || (( (8#$consumer_mode & 8#007) != 0 )); then
    fail "consumer socket $consumer mode '$consumer_mode' lets others in"
  fi
done

for s in $services; do
  awk -v s="$s" '$1 == "service" { in_s = ($2 == s) } in_s && $1 == "disabled" { found = 1 }
                 END { exit !found }' "$rc" || fail "$s is not disabled"
  grep -qE "^ +start $s\$" "$rc" || fail "no trigger starts $s"
  grep -qE "^ +stop $s\$" "$rc" || fail "no trigger stops $s"
done
grep -q '^on property:' "$rc" || fail "no property trigger"

[ $failures -eq 0 ] || { echo "init-check: $failures problem(s) in $rc" >&2; exit 1; }
echo "init-check: $rc matches the binaries (services: $(echo $services))"
