#!/usr/bin/env bash
# Build times of the nested-AD programs of tests/scale (issue 34: each
# should build in under 2 s on an idle machine), or of the programs given:
# for each, the wall and CPU time of one build, the compiler's heap peak,
# and the lines of `--time-passes` (seconds, runs, heap change and peak,
# stage) of the stages that took a tenth of a second or more.
#   benches/build-times.sh [STALINGRAD] [PROGRAM.vlad ...]
# Wall times vary with the machine's load; CPU time varies less.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
compiler=$(realpath "${1:-$root/target/release/stalingrad}")
shift || true
if [ $# -eq 0 ]; then
  set -- "$root"/tests/scale/*.vlad
fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
for program in "$@"; do
  /usr/bin/time -f "%e %U %S" -o "$tmp/time" \
    "$compiler" build --time-passes "$program" -o "$tmp/exe" 2> "$tmp/passes" > /dev/null \
    || { echo "$(basename "$program"): build failed"; cat "$tmp/passes"; continue; }
  read -r wall user sys < "$tmp/time"
  peak=$(awk '/ total$/ {print $(NF-2), $(NF-1)}' "$tmp/passes")
  cpu=$(echo "$user + $sys" | bc)
  flag=""
  if (( $(echo "$wall >= 2" | bc) )); then flag="  (2 s or more)"; fi
  echo "$(basename "$program"): ${wall} s wall, ${cpu} s CPU, heap peak ${peak}${flag}"
  awk '$1 == "time-passes:" && $2 ~ /^[0-9.]+$/ && $2 >= 0.1 && $NF != "total" {
         sub(/^time-passes: */, "    "); print }' "$tmp/passes"
done
