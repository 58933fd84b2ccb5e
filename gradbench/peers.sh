#!/usr/bin/env bash
# Runs GradBench's evals with Enzyme and Futhark beside stalingrad, in one
# invocation: builds the two peers here, without Docker, then runs
# run-evals.sh with them as PEERS (each eval runs with every tool before the
# next eval starts).
#
# Usage: gradbench/peers.sh GRADBENCH --enzyme ENZYME [--futhark-package GIT]...
#                           [EVAL[:ARG,ARG...]...]
#   GRADBENCH   a checkout or git directory of github.com/gradbench/gradbench
#   --enzyme    a git directory of Enzyme whose enzyme/ builds against LLVM 19
#               (tested: the rust-lang/enzyme snapshot, upstream Enzyme of
#               2025-05-15); without it, only Futhark runs beside us
#   --futhark-package  a git directory of a Futhark package that
#               tools/futhark/futhark.pkg requires (diku-dk/linalg,
#               athas/vector, diku-dk/autodiff): its commit named there is
#               put in tools/futhark/lib, as `futhark pkg sync` would from
#               GitHub; without them, ba, gmm and ht fail to build in Futhark
#   EVAL        as for run-evals.sh (default: all twelve)
# Environment: as run-evals.sh (MIN_RUNS, MIN_SECONDS, TIMEOUT, WORK:
#   default target/gradbench-peers); NO_FUTHARK=1 leaves Futhark out.
#
# Needs root and Debian 12 (bookworm): it installs with apt-get what is
# missing of clang, lld and LLVM 19 (Debian's 19.1.7), cmake, ninja and
# debootstrap. How each peer differs from GradBench's images:
# - Enzyme: GradBench's image builds release v0.0.172 with LLVM 19 on Debian
#   13; here the given source builds the LLD plugin only (3 minutes on 2
#   idle cores, 35 on 2 shared with other builds), with Debian 12's libstdc++ 12, against which Enzyme's type
#   analysis needs `-enzyme-loose-types` (saddle's std::vector copies).
# - Futhark: not packaged for Debian 12 and its release host is not
#   reachable here; Debian 13's futhark (0.25.27; the image has 0.25.30)
#   comes from a minimal debootstrap of Debian 13 in WORK/trixie (about 2
#   minutes) and runs on this system through that tree's own loader. The C
#   it generates is compiled by this system's gcc, as in GradBench's
#   Debian 12 image. Its Python driver needs `futhark-server` from PyPI.
set -euo pipefail

if [ $# -lt 1 ]; then
  sed -n '2,34p' "$0"
  exit 2
fi
GB="$(cd "$1" && pwd)"
shift
ENZYME=""
PKGS=()
EVALS=()
while [ $# -gt 0 ]; do
  case "$1" in
    --enzyme) ENZYME="$(cd "$2" && pwd)"; shift 2 ;;
    --futhark-package) PKGS+=("$(cd "$2" && pwd)"); shift 2 ;;
    *) EVALS+=("$1"); shift ;;
  esac
done
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
export WORK="${WORK:-$ROOT/target/gradbench-peers}"
mkdir -p "$WORK/bin"
WORK="$(cd "$WORK" && pwd)"
say() { echo "[peers] $*" >&2; }

pkgs=(nlohmann-json3-dev)
[ -n "$ENZYME" ] && pkgs+=(cmake ninja-build libzstd-dev llvm-19-dev clang-19 libclang-19-dev lld-19)
[ -z "${NO_FUTHARK:-}" ] && pkgs+=(debootstrap)
missing=()
for p in "${pkgs[@]}"; do dpkg -s "$p" >/dev/null 2>&1 || missing+=("$p"); done
if [ ${#missing[@]} -gt 0 ]; then
  say "apt-get install ${missing[*]}"
  apt-get update -q >/dev/null
  DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends "${missing[@]}" >/dev/null
fi

SRC="$("$ROOT/gradbench/export.sh" "$GB" "$WORK")"
printf '#pragma once\n#include <nlohmann/json.hpp>\n' >"$SRC/cpp/json.hpp"
VENV="$WORK/venv"
if ! "$VENV/bin/python" -c 'import numpy, scipy, pydantic, dataclasses_json, futhark_server' 2>/dev/null; then
  python3 -m venv "$VENV"
  "$VENV/bin/pip" install -q -r "$ROOT/gradbench/requirements.txt" 'futhark-server<2'
fi
PEERS=""

# Each tool's command is a script in WORK/bin, run from the GradBench tree.
if [ -n "$ENZYME" ]; then
  build="$WORK/enzyme-build"
  if [ ! -f "$build/Enzyme/LLDEnzyme-19.so" ]; then
    rm -rf "$WORK/enzyme-src" "$build"
    mkdir -p "$WORK/enzyme-src" "$build"
    # enzyme/benchmarks is not needed and has data a snapshot may lack.
    git -C "$ENZYME" archive HEAD $(git -C "$ENZYME" ls-tree --name-only HEAD enzyme/ |
      grep -v '^enzyme/benchmarks$') | tar -x -C "$WORK/enzyme-src"
    say "building Enzyme $(git -C "$ENZYME" rev-parse --short HEAD)'s LLD plugin"
    # The configuration of GradBench's image (no build type); only the
    # plugin its Makefile loads.
    (cd "$build" && cmake -G Ninja "$WORK/enzyme-src/enzyme" \
      -DLLVM_DIR=/usr/lib/llvm-19/lib/cmake/llvm/ \
      -DClang_DIR=/usr/lib/llvm-19/lib/cmake/clang/ >cmake.log 2>&1 &&
      ninja LLDEnzyme-19 >ninja.log 2>&1) || { say "Enzyme did not build: see $build"; exit 1; }
  fi
  # tools/enzyme/Makefile calls `clang++`; Debian's is clang++-19.
  mkdir -p "$WORK/clang"
  ln -sf "$(command -v clang++-19)" "$WORK/clang/clang++"
  cat >"$WORK/bin/enzyme" <<EOF
#!/bin/sh
export PATH="$WORK/clang:\$PATH" ENZYME_LIB="$build/Enzyme"
export LDFLAGS="-lm -Wl,-mllvm,-load=$build/Enzyme/LLDEnzyme-19.so -Wl,-mllvm,-enzyme-loose-types=1"
exec "$VENV/bin/python" python/gradbench/gradbench/cpp.py enzyme
EOF
  chmod +x "$WORK/bin/enzyme"
  PEERS="$PEERS enzyme=$WORK/bin/enzyme"
fi

if [ -z "${NO_FUTHARK:-}" ]; then
  tree="$WORK/trixie"
  if [ ! -x "$tree/usr/bin/futhark" ]; then
    say "debootstrap of Debian 13 with futhark into $tree"
    debootstrap --variant=minbase --include=futhark trixie "$tree" >"$WORK/debootstrap.log" 2>&1 ||
      { say "debootstrap failed: see $WORK/debootstrap.log"; exit 1; }
  fi
  mkdir -p "$WORK/futhark"
  cat >"$WORK/futhark/futhark" <<EOF
#!/bin/sh
exec "$tree/lib64/ld-linux-x86-64.so.2" --library-path "$tree/lib/x86_64-linux-gnu:$tree/usr/lib/x86_64-linux-gnu" "$tree/usr/bin/futhark" "\$@"
EOF
  chmod +x "$WORK/futhark/futhark"
  say "$("$WORK/futhark/futhark" --version | head -1)"
  # What `futhark pkg sync` would fetch: lib/github.com/OWNER/NAME of each
  # required package at the commit futhark.pkg names.
  for g in "${PKGS[@]}"; do
    dir="$(git -C "$g" ls-tree -r --name-only HEAD lib/github.com | head -1 | cut -d/ -f1-4)"
    name="${dir#lib/}"
    commit="$(sed -n "s|^ *$name [^ ]* #\([0-9a-f]*\).*|\1|p" "$SRC/tools/futhark/futhark.pkg")"
    [ -n "$commit" ] || { say "tools/futhark/futhark.pkg does not require $name ($g)"; exit 1; }
    say "futhark package $name at $commit"
    git -C "$g" archive "$commit" "$dir" | tar -x -C "$SRC/tools/futhark"
  done
  cat >"$WORK/bin/futhark" <<EOF
#!/bin/sh
export PATH="$WORK/futhark:\$PATH"
exec "$VENV/bin/python" tools/futhark/run.py
EOF
  chmod +x "$WORK/bin/futhark"
  PEERS="$PEERS futhark=$WORK/bin/futhark"
fi

PEERS="$PEERS" exec "$ROOT/gradbench/run-evals.sh" "$SRC" "${EVALS[@]}"
