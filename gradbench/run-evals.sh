#!/usr/bin/env bash
# Runs GradBench's own `particle` and `saddle` evals (their Python eval
# scripts, unchanged) against `stalingrad gradbench`, and times our
# hand-written baselines (benches/baselines) in the same run.
#
# Usage: gradbench/run-evals.sh GRADBENCH_CHECKOUT [EVAL...]
#   GRADBENCH_CHECKOUT  a checkout of github.com/gradbench/gradbench
#   EVAL                evals to run (default: particle saddle; hello works too)
# Environment: MIN_RUNS (default 10), MIN_SECONDS (default 2) for the evals,
#   WORK (default target/gradbench) for the virtual environment and logs.
#
# Needs python3 >= 3.11 with venv; installs numpy and pydantic into
# WORK/venv with pip (the eval scripts need them), or says what is missing.
# Prints a Markdown table and writes it, with the message logs, to WORK.
set -euo pipefail

if [ $# -lt 1 ]; then
  sed -n '2,16p' "$0"
  exit 2
fi
GB="$(cd "$1" && pwd)"
shift
EVALS="${*:-particle saddle}"
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
WORK="${WORK:-$ROOT/target/gradbench}"
mkdir -p "$WORK"
WORK="$(cd "$WORK" && pwd)"

for e in $EVALS; do
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
if ! "$VENV/bin/python" -c 'import numpy, pydantic' 2>/dev/null; then
  "$PY" -m venv "$VENV" || {
    echo "error: cannot make a virtual environment: install python3's venv module (Debian: apt-get install python3-venv)" >&2
    exit 1
  }
  "$VENV/bin/pip" install -q 'numpy<3' 'pydantic>=2,<3' || {
    echo "error: cannot install numpy and pydantic into $VENV with pip; install them there by hand: $VENV/bin/pip install numpy pydantic" >&2
    exit 1
  }
fi

echo "[run-evals] cargo build --release -p stalingrad -p baselines" >&2
(cd "$ROOT" && cargo build -q --release -p stalingrad -p baselines)
TARGET="${CARGO_TARGET_DIR:-$ROOT/target}"

exec "$VENV/bin/python" "$ROOT/gradbench/run_evals.py" \
  --gradbench "$GB" --tool "$TARGET/release/stalingrad gradbench" \
  --baselines "$TARGET/release" --work "$WORK" \
  --min-runs "${MIN_RUNS:-10}" --min-seconds "${MIN_SECONDS:-2}" $EVALS
