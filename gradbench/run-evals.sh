#!/usr/bin/env bash
# Runs GradBench's own evals (their Python eval scripts, unchanged, at
# their default workloads) against `stalingrad gradbench`, and times our
# hand-written baselines (benches/baselines) in the same run.
#
# Usage: gradbench/run-evals.sh GRADBENCH [EVAL[:ARG,ARG...]...]
#   GRADBENCH  a checkout of github.com/gradbench/gradbench, or a git
#              directory of it (a snapshot; its files are exported to
#              WORK/src, leaving out those whose contents it lacks)
#   EVAL       evals to run (default: all twelve); ARGs are passed to the
#              eval's script, e.g. `llsq:-n,16,32` for smaller workloads
# Environment: MIN_RUNS (default 10), MIN_SECONDS (default 2) for the evals,
#   WORK (default target/gradbench) for the virtual environment and logs,
#   TIMEOUT (default 600, GradBench's) seconds a tool may take per message,
#   MEMORY_LIMIT (GiB, default none) of address space for our tool, which
#   then stops with "out of memory" instead of filling a shared machine,
#   PEERS="NAME=COMMAND ..." other tools to run on every eval right after
#   ours (commands without spaces; gradbench/peers.sh sets it).
#
# Needs python3 >= 3.11 with venv, make and a C++ compiler (GradBench's
# `manual` tool, which the evals validate against, is built in the
# checkout) and nlohmann's json.hpp (Debian: nlohmann-json3-dev) unless the
# checkout has cpp/json.hpp; installs numpy, scipy, pydantic and
# dataclasses-json into WORK/venv with pip (the eval scripts need them),
# or says what is missing. Prints a Markdown table and writes it, with the
# message logs, to WORK.
set -euo pipefail

if [ $# -lt 1 ]; then
  sed -n '2,26p' "$0"
  exit 2
fi
GB="$(cd "$1" && pwd)"
shift
EVALS="${*:-hello particle saddle lse llsq det kmeans ode gmm lstm ba ht}"
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
WORK="${WORK:-$ROOT/target/gradbench}"
mkdir -p "$WORK"
WORK="$(cd "$WORK" && pwd)"

GB="$("$ROOT/gradbench/export.sh" "$GB" "$WORK")"

for e in $EVALS; do
  e="${e%%:*}"
  if [ ! -f "$GB/python/gradbench/gradbench/evals/$e/run.py" ]; then
    echo "error: $GB is not a GradBench checkout with the eval \`$e\` (no python/gradbench/gradbench/evals/$e/run.py)" >&2
    exit 1
  fi
done

PY=python3
if ! command -v "$PY" >/dev/null || ! "$PY" -c 'import sys; sys.exit(sys.version_info < (3, 11))'; then
  echo "error: GradBench's eval scripts need python3 >= 3.11 on PATH" >&2
  exit 1
fi
VENV="$WORK/venv"
if ! "$VENV/bin/python" -c 'import numpy, scipy, pydantic, dataclasses_json' 2>/dev/null; then
  "$PY" -m venv "$VENV" || {
    echo "error: cannot make a virtual environment: install python3's venv module (Debian: apt-get install python3-venv)" >&2
    exit 1
  }
  "$VENV/bin/pip" install -q -r "$ROOT/gradbench/requirements.txt" || {
    echo "error: cannot install numpy, scipy, pydantic and dataclasses-json into $VENV with pip; install them there by hand: $VENV/bin/pip install numpy scipy pydantic dataclasses-json" >&2
    exit 1
  }
fi

echo "[run-evals] cargo build --release -p stalingrad -p baselines" >&2
(cd "$ROOT" && cargo build -q --release -p stalingrad -p baselines)
TARGET="${CARGO_TARGET_DIR:-$ROOT/target}"

exec "$VENV/bin/python" "$ROOT/gradbench/run_evals.py" \
  --gradbench "$GB" --tool "$TARGET/release/stalingrad gradbench" \
  --baselines "$TARGET/release" --work "$WORK" \
  --min-runs "${MIN_RUNS:-10}" --min-seconds "${MIN_SECONDS:-2}" \
  --timeout "${TIMEOUT:-600}" --memory-limit "${MEMORY_LIMIT:-0}" $(for p in ${PEERS:-}; do echo --peer "$p"; done) $EVALS
