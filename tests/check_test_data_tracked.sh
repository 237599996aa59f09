#!/bin/sh
# Fails when a file under tests/ is in the working tree but ignored by git:
# the tests here read it, and CI's fresh clone would not have it (a reference
# trace matched by `*.pftrace` in .gitignore once failed CI this way).
# Nothing to check outside a git work tree (a source tarball).
cd "$(dirname "$0")/.." || exit 2
git rev-parse --is-inside-work-tree >/dev/null 2>&1 || exit 0
ignored=$(git ls-files --others --ignored --exclude-standard -- tests/)
[ -z "$ignored" ] && exit 0
echo "tests/ holds files git ignores, which a fresh clone lacks: $(echo $ignored)" \
     "(add a !pattern for them to .gitignore and commit them, or remove them)" >&2
exit 1
