"""GradBench's `manual` tool, the reference its evals validate against.

`build(checkout, evals)` builds `tools/manual/bin/EVAL` in a GradBench
checkout with the system's C++ compiler, as the evals' Dockerfiles do
(`make -C tools/manual bin/EVAL`), since the eval scripts run those
binaries to compute the expected outputs. GradBench's cpp/Makefile
downloads nlohmann's json.hpp; where it is absent, a one-line cpp/json.hpp
forwarding to the system's <nlohmann/json.hpp> (Debian:
nlohmann-json3-dev) stands in.

Run as a script, it rewrites the expected outputs of the protocol test's
cases (tests/gradbench/manual.jsonl, one case a line: module, function,
input, output) with what the manual tool answers for their inputs:

    python3 gradbench/manual.py GRADBENCH_CHECKOUT [tests/gradbench/manual.jsonl]
"""

import json
import os
import subprocess
import sys
import tempfile

SYSTEM_JSON = "/usr/include/nlohmann/json.hpp"


def build(checkout, evals):
    """Builds the manual tool's binaries of `evals`; raises with the reason."""
    header = os.path.join(checkout, "cpp", "json.hpp")
    if not os.path.exists(header):
        if not os.path.exists(SYSTEM_JSON):
            raise RuntimeError(
                f"{header} is missing and so is {SYSTEM_JSON}: install "
                "nlohmann's JSON for Modern C++ (Debian: apt-get install "
                "nlohmann-json3-dev) or put json.hpp v3.11 in cpp/")
        with open(header, "w") as f:
            f.write("#pragma once\n#include <nlohmann/json.hpp>\n")
    targets = [f"bin/{e}" for e in evals]
    # NATIVE=no as in the evals' images: the reference is portable code.
    p = subprocess.run(["make", "-C", os.path.join(checkout, "tools", "manual"),
                        "NATIVE=no", *targets],
                       capture_output=True, text=True)
    if p.returncode != 0:
        raise RuntimeError(f"building GradBench's manual tool failed:\n{p.stdout}{p.stderr}")


def evaluate(checkout, module, function, input):
    """The manual tool's output for one input."""
    with tempfile.NamedTemporaryFile("w", suffix=".json") as tmp:
        json.dump(input | {"min_runs": 1, "min_seconds": 0}, tmp)
        tmp.flush()
        exe = os.path.join(checkout, "tools", "manual", "bin", module)
        p = subprocess.run([exe, tmp.name, function], capture_output=True,
                           text=True, check=True)
        return json.loads(p.stdout.splitlines()[0])


def main():
    if len(sys.argv) not in (2, 3):
        print(__doc__, file=sys.stderr)
        sys.exit(2)
    checkout = os.path.abspath(sys.argv[1])
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    path = sys.argv[2] if len(sys.argv) == 3 else os.path.join(
        root, "tests", "gradbench", "manual.jsonl")
    with open(path) as f:
        cases = [json.loads(l) for l in f if l.strip()]
    build(checkout, sorted({c["module"] for c in cases}))
    for c in cases:
        c["output"] = evaluate(checkout, c["module"], c["function"], c["input"])
    with open(path, "w") as f:
        for c in cases:
            f.write(json.dumps(c) + "\n")


if __name__ == "__main__":
    main()
