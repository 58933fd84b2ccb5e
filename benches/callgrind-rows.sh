#!/usr/bin/env bash
# Instruction counts of every benchmark row, for telling whether a change
# altered generated code: builds each program of benches/programs with the
# given compiler and runs it once under `valgrind --tool=callgrind` at the
# harness's small workload ("ops workload" in docs/benchmarks.md), and the
# vector rows once each (about 4.5 billion instructions together: a few
# minutes under callgrind).
# Counts are repeatable whatever else the machine does, so two compilers
# compare row by row:
#   benches/callgrind-rows.sh target/release/stalingrad /tmp/after
#   join /tmp/before/counts.txt /tmp/after/counts.txt
set -euo pipefail
if [ $# -ne 2 ]; then
  echo "usage: $0 STALINGRAD OUTDIR" >&2
  exit 2
fi
compiler=$(realpath "$1")
out=$(mkdir -p "$2" && realpath "$2")
cd "$(dirname "$0")/programs"
rows=(particle-FF:1 particle-FR:1 particle-RF:1 particle-RR:1
      saddle-FF:1 saddle-FR:1 saddle-RF:1 saddle-RR:1
      "backprop-Fs:1 200" "backprop-R:1 200" sumsq-R:1
      "probabilistic-lambda-calculus-F:1 20" "probabilistic-lambda-calculus-R:1 20"
      "probabilistic-prolog-F:1 20" "probabilistic-prolog-R:1 20"
      sumsq-vector-R:1 lse-F:1 lse-R:1 matvec-R:1)
: > "$out/counts.txt"
for row in "${rows[@]}"; do
  name=${row%%:*}
  input=${row#*:}
  "$compiler" build "$name.vlad" -o "$out/$name" > /dev/null
  echo "$input" | valgrind --tool=callgrind --callgrind-out-file="$out/$name.cg" \
    "$out/$name" > "$out/$name.out" 2> "$out/$name.valgrind"
  echo "$name $(awk '/^(summary|totals):/ {print $2; exit}' "$out/$name.cg")" >> "$out/counts.txt"
done
sort -o "$out/counts.txt" "$out/counts.txt"
cat "$out/counts.txt"
