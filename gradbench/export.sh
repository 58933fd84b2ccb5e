#!/usr/bin/env bash
# Prints the path of a GradBench source tree to run evals in.
#
# Usage: gradbench/export.sh GRADBENCH WORK
#   GRADBENCH  a checkout of github.com/gradbench/gradbench (printed as it
#              is), or a git directory of it, a stored snapshot, whose files
#              are exported to WORK/src, leaving out those whose contents
#              the snapshot lacks (it names them on standard error; stored
#              snapshots lack a few large data files, so `git archive` of
#              all would fail)
set -euo pipefail
GB="$(cd "$1" && pwd)"
WORK="$2"
if [ -d "$GB/python" ] || ! git -C "$GB" rev-parse --git-dir >/dev/null 2>&1; then
  echo "$GB"
  exit 0
fi
SRC="$WORK/src"
echo "[export] exporting $(git -C "$GB" rev-parse HEAD) of $GB to $SRC" >&2
rm -rf "$SRC"
mkdir -p "$SRC"
git -C "$GB" ls-tree -r HEAD | while read -r _ type obj path; do
  if [ "$type" = blob ] && git -C "$GB" cat-file -e "$obj" 2>/dev/null; then
    printf '%s\0' "$path"
  else
    echo "[export] the snapshot lacks $path" >&2
  fi
done | xargs -0 git -C "$GB" archive HEAD -- 2> >(grep -v '^error: invalid object' >&2) |
  tar -x -i -C "$SRC"
echo "$SRC"
