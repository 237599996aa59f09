#!/bin/bash
# Lists, per feature, which options of kconfigs/*.config a kernel config lacks.
#
# usage: kconfigs/check.sh [CONFIG [FRAGMENT...]]
#   CONFIG     a .config, or a gzip'ed one such as /proc/config.gz
#              (default: /proc/config.gz, else /boot/config-$(uname -r))
#   FRAGMENT   fragments to check (default: every kconfigs/*.config)
# Output: one line per option that is not as the fragment wants, then one
# summary line per feature:
#   bpf: MISSING CONFIG_DEBUG_INFO_BTF=y (is: not set) -- /sys/kernel/btf/vmlinux, which ...
#   bpf: want CONFIG_BPF_JIT=y (is: not set) -- JIT-compiled programs ...
#   feature bpf: MISSING 1 required, 1 recommended
# Exit: 0 when every required option of every non-optional feature is set,
# 1 when one is missing, 2 on usage or fragment errors.
#
# Fragment format (also what merge_config.sh reads: it ignores the comments):
#   # about: one line on the feature
#   # optional: why the feature may be left out        (feature is optional)
#   # need: reason | # want: reason                    (before each option)
#   # or: OTHER=y                                      (alternatives, any line count;
#                                                       no CONFIG_ prefix, which
#                                                       merge_config.sh would match)
#   CONFIG_NAME=value
set -uo pipefail

here=$(cd "$(dirname "$0")" && pwd)
config=${1:-}
shift || true
if [ -z "$config" ]; then
  if [ -r /proc/config.gz ]; then config=/proc/config.gz
  else config=/boot/config-$(uname -r)
  fi
fi
[ -r "$config" ] || { echo "kconfig-check: cannot read $config (pass KCONFIG=path/to/.config)" >&2; exit 2; }
if [ $# -eq 0 ]; then
  # Dependency order first, then any other fragment.
  for f in base ftrace events bpf kprobes vm; do [ -f "$here/$f.config" ] && set -- "$@" "$here/$f.config"; done
  for f in "$here"/*.config; do
    case " base ftrace events bpf kprobes vm " in *" $(basename "$f" .config) "*) ;; *) set -- "$@" "$f" ;; esac
  done
fi

case "$config" in
  *.gz) reader=(gzip -dc "$config") ;;
  *) reader=(cat "$config") ;;
esac

echo "kconfig-check: $config"
"${reader[@]}" | awk -v fragments="$*" '
  # Pass 1 (stdin): the kernel config. "# CONFIG_X is not set" and absence
  # both read as "not set".
  /^CONFIG_[A-Za-z0-9_]+=/ { i = index($0, "="); have[substr($0, 1, i - 1)] = substr($0, i + 1); next }

  function value_of(name) { return (name in have) ? have[name] : "not set" }
  function satisfied(opt,   i, n) {  # opt is NAME=VALUE
    i = index(opt, "=")
    return value_of(substr(opt, 1, i - 1)) == substr(opt, i + 1)
  }
  function lint(file, line, msg) { printf "kconfig-check: %s:%d: %s\n", file, line, msg > "/dev/stderr"; bad = 1 }

  END {
    nf = split(fragments, files, " ")
    status = 0
    for (f = 1; f <= nf; f++) {
      file = files[f]
      feature = file; sub(/.*\//, "", feature); sub(/\.config$/, "", feature)
      optional = 0; kind = ""; reason = ""; nalt = 0; missing = 0; wanted = 0; count = 0; lineno = 0
      while ((getline line < file) > 0) {
        lineno++
        if (line ~ /^# optional:/) { optional = 1; continue }
        if (line ~ /^# (need|want):/) {
          if (kind != "") lint(file, lineno, "reason line without an option after it")
          kind = substr(line, 3, 4); reason = substr(line, 9); nalt = 0; continue
        }
        if (line ~ /^# or: [A-Za-z0-9_]+=/) { alt[++nalt] = "CONFIG_" substr(line, 7); continue }
        if (line ~ /^CONFIG_[A-Za-z0-9_]+=/) {
          if (kind == "") { lint(file, lineno, "option without a \"# need:\" or \"# want:\" reason line"); continue }
          count++
          ok = satisfied(line)
          for (a = 1; a <= nalt && !ok; a++) ok = satisfied(alt[a])
          if (!ok) {
            name = substr(line, 1, index(line, "=") - 1)
            printf "%s: %s %s (is: %s) -- %s\n", feature, kind == "need" ? "MISSING" : "want", line, value_of(name), reason
            if (kind == "need") missing++; else wanted++
          }
          kind = ""; nalt = 0; continue
        }
        if (line ~ /^CONFIG_|^# CONFIG_.* is not set/) lint(file, lineno, "unexpected option syntax")
      }
      close(file)
      if (kind != "") lint(file, lineno, "reason line without an option after it")
      if (count == 0) lint(file, lineno, "no options")
      tag = optional ? " (optional)" : ""
      if (missing) printf "feature %s%s: MISSING %d required, %d recommended\n", feature, tag, missing, wanted
      else if (wanted) printf "feature %s%s: ok, %d recommended not set\n", feature, tag, wanted
      else printf "feature %s%s: ok (%d options)\n", feature, tag, count
      if (missing && !optional) status = 1
    }
    exit bad ? 2 : status
  }
'
