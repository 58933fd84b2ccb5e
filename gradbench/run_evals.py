"""Runs GradBench eval scripts against a tool and times our baselines.

Called by run-evals.sh (which makes the virtual environment). This is the
part of GradBench's intermediary (`gradbench run`) that the evals need:
it starts the eval and the tool, passes each message of the eval to the
tool and each response back, one JSON line each, and logs both
(`WORK/logs/EVAL.jsonl`, one `{"message": ...}` or `{"response": ...}`
per line). Then it times the hand-written baselines (benches/baselines:
standard input N, N solves) at a workload of about a second, and prints a
Markdown table: per function, whether the eval judged the output valid,
our runs' median and minimum time per solve (the `evaluate` timings), the
baseline's time per solve, and the published figures of the peers.

Before the evals run it builds GradBench's `manual` tool in the checkout
(manual.py), which the evals validate against, and stands in for the
data files a stored snapshot of GradBench lacks: for `lstm`, whose
evals/lstm/data/lstm_full.txt is English text of which the eval reads the
first characters as one-hot vectors, the ASCII text of this project's
docs/*.md; for `ht`, whose largest inputs (hand12) are missing, the sizes
present (`--max` the last one).
"""

import argparse
import json
import os
import shlex
import statistics
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import manual  # noqa: E402

# Median ms per solve, measured with GradBench's own harness (snapshot
# f26651a7 of March 2026, MIN_SECONDS=5) on a 2-vCPU AMD EPYC virtual
# machine like ours, 2026-11-23.
PUBLISHED = {
    "enzyme": {
        ("particle", "ff"): 1.00, ("particle", "fr"): 4.29,
        ("particle", "rf"): 1.78, ("particle", "rr"): 11.32,
        ("saddle", "ff"): 1.61, ("saddle", "fr"): 1.67,
        ("saddle", "rf"): 2.17, ("saddle", "rr"): 2.32,
    },
    "futhark": {
        ("particle", "ff"): 4.33, ("particle", "fr"): 4.03,
        ("particle", "rf"): 8.61, ("particle", "rr"): 10.67,
        ("saddle", "ff"): 7.85, ("saddle", "fr"): 11.51,
        ("saddle", "rf"): 8.46, ("saddle", "rr"): 8.40,
    },
}

# The hand-written baseline of each function, where there is one.
BASELINES = {
    ("particle", "ff"): "particle-FF", ("particle", "rf"): "particle-RF",
    ("particle", "rr"): "particle-RR", ("saddle", "ff"): "saddle-FF",
    ("saddle", "rf"): "saddle-RF", ("saddle", "rr"): "saddle-RR",
}


def relay(eval_cmd, tool_cmd, cwd, env, log_path):
    """Runs one session; returns {id: message}, {id: response}, {of: analysis}."""
    ev = subprocess.Popen(eval_cmd, cwd=cwd, env=env, stdin=subprocess.PIPE,
                          stdout=subprocess.PIPE, text=True)
    tool = subprocess.Popen(tool_cmd, cwd=cwd, stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, text=True)
    messages, responses, analyses = {}, {}, {}
    with open(log_path, "w") as log:
        while True:
            line = ev.stdout.readline()
            if not line:
                break
            msg = json.loads(line)
            log.write(json.dumps({"message": msg}) + "\n")
            messages[msg["id"]] = msg
            if msg.get("kind") == "analysis":
                analyses[msg["of"]] = msg
            if msg.get("kind") == "end":
                break
            tool.stdin.write(line if line.endswith("\n") else line + "\n")
            tool.stdin.flush()
            answer = tool.stdout.readline()
            if not answer:
                print(f"error: the tool stopped (exit {tool.wait()})", file=sys.stderr)
                break
            resp = json.loads(answer)
            log.write(json.dumps({"response": resp}) + "\n")
            responses[resp["id"]] = resp
            ev.stdin.write(answer)
            ev.stdin.flush()
    for p in (ev, tool):
        try:
            p.stdin.close()
        except BrokenPipeError:
            pass
    ev.wait()
    tool.wait()
    return messages, responses, analyses


def time_baseline(path):
    """Median seconds per solve over 3 runs of about a second each."""
    def run(n):
        start = time.perf_counter()
        subprocess.run([path], input=f"{n}\n", text=True, check=True,
                       stdout=subprocess.DEVNULL)
        return time.perf_counter() - start
    one = max(run(1), 1e-4)
    n = max(1, int(1.0 / one))
    return statistics.median(run(n) / n for _ in range(3))


def lstm_stand_in(checkout, root):
    """Writes evals/lstm/data/lstm_full.txt if missing; says what it did."""
    path = os.path.join(checkout, "evals", "lstm", "data", "lstm_full.txt")
    if os.path.exists(path):
        return None
    docs = os.path.join(root, "docs")
    text = "".join(open(os.path.join(docs, f), encoding="utf8").read()
                   for f in sorted(os.listdir(docs)) if f.endswith(".md"))
    # ASCII, as English text is: 7 bits per character, as the original's.
    text = "".join(c for c in text if ord(c) < 128)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w", encoding="utf8") as f:
        f.write(text)
    return (f"lstm: evals/lstm/data/lstm_full.txt is missing; stood in "
            f"{len(text)} characters of this project's docs/*.md (ASCII)")


def ht_max(checkout):
    """The largest i with evals/ht/data/complicated_big/hand1..i present."""
    data = os.path.join(checkout, "evals", "ht", "data", "complicated_big")
    names = os.listdir(data) if os.path.isdir(data) else []
    i = 0
    while any(n.startswith(f"hand{i + 1}_") for n in names):
        i += 1
    return i


def ms(x):
    return "" if x is None else (f"{x:.3g}" if x < 10 else f"{x:.1f}")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--gradbench", required=True)
    ap.add_argument("--tool", required=True)
    ap.add_argument("--baselines", required=True)
    ap.add_argument("--work", required=True)
    ap.add_argument("--min-runs", default="10")
    ap.add_argument("--min-seconds", default="2")
    ap.add_argument("evals", nargs="+", help="EVAL or EVAL:ARG,ARG...")
    a = ap.parse_args()
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    specs = [(s.split(":", 1)[0], s.split(":", 1)[1].split(",") if ":" in s else [])
             for s in a.evals]
    a.evals = [e for e, _ in specs]
    env = dict(os.environ)
    env["PYTHONPATH"] = os.path.join(a.gradbench, "python", "gradbench")
    os.makedirs(os.path.join(a.work, "logs"), exist_ok=True)
    notes = []
    with open(os.path.join(a.gradbench, "tools", "manual", "evals.txt")) as f:
        validated = set(f.read().split())
    to_build = [e for e in a.evals if e in validated]
    if to_build:
        print(f"[run-evals] building GradBench's manual tool: {' '.join(to_build)}",
              file=sys.stderr)
        try:
            manual.build(a.gradbench, to_build)
        except RuntimeError as err:
            print(f"error: {err}", file=sys.stderr)
            sys.exit(1)
    if "lstm" in a.evals:
        note = lstm_stand_in(a.gradbench, root)
        if note:
            notes.append(note)
    rows, all_valid = [], True
    for e, extra in specs:
        script = os.path.join(a.gradbench, "python", "gradbench", "gradbench",
                              "evals", e, "run.py")
        cmd = [sys.executable, script]
        if e != "hello":
            cmd += ["--min-runs", a.min_runs, "--min-seconds", a.min_seconds]
        if e == "ht" and "--max" not in extra:
            top = ht_max(a.gradbench)
            if top < 12:
                notes.append(f"ht: the inputs hand{top + 1} to hand12 are missing; "
                             f"ran sizes 1 to {top} (--max {top})")
                cmd += ["--max", str(top)]
        cmd += extra
        print(f"[run-evals] eval {e}", file=sys.stderr)
        log = os.path.join(a.work, "logs", f"{e}.jsonl")
        messages, responses, analyses = relay(cmd, shlex.split(a.tool),
                                              a.gradbench, env, log)
        defined = [r for i, r in responses.items()
                   if messages[i].get("kind") == "define"]
        if not defined or not defined[0].get("success"):
            print(f"error: {e}: the tool did not define the module", file=sys.stderr)
            all_valid = False
            continue
        for i, m in sorted(messages.items()):
            if m.get("kind") != "evaluate":
                continue
            r = responses.get(i, {})
            an = analyses.get(i, {})
            valid = bool(r.get("success")) and an.get("valid", False)
            all_valid &= valid
            times = [t["nanoseconds"] / 1e6 for t in r.get("timings", [])
                     if t.get("name") == "evaluate"]
            rows.append((e, m["function"], m.get("description", ""), valid,
                         an.get("error"), times))
    print(f"[run-evals] baselines", file=sys.stderr)
    base = {}
    for key, name in BASELINES.items():
        path = os.path.join(a.baselines, name)
        if os.path.exists(path) and key[0] in a.evals:
            base[key] = time_baseline(path) * 1e3
    host = "?"
    try:
        with open("/proc/cpuinfo") as f:
            host = next(l.split(":", 1)[1].strip() for l in f if l.startswith("model name"))
    except (OSError, StopIteration):
        pass
    out = []
    out.append(f"date: {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}; "
               f"machine: {os.cpu_count()} cores, {host}; min_runs={a.min_runs} "
               f"min_seconds={a.min_seconds}")
    for note in notes:
        out.append(f"- {note}")
    out.append("")
    out.append("| eval | function | workload | valid | runs | stalingrad median ms "
               "| stalingrad best ms | hand-written baseline ms | Enzyme ms (published) "
               "| Futhark ms (published) |")
    out.append("| --- | --- | --- | --- | ---: | ---: | ---: | ---: | ---: | ---: |")
    score = {}
    for e, f, workload, valid, err, times in rows:
        med = statistics.median(times) if times else None
        best = min(times) if times else None
        # GradBench's score: the sum over workloads of every function's time.
        score[e] = score.get(e, 0.0) + (med or 0.0)
        error = str(err).replace("\n", " ").replace("|", "/")
        out.append(f"| {e} | {f} | {workload} | {'yes' if valid else 'NO: ' + error} "
                   f"| {len(times)} "
                   f"| {ms(med)} | {ms(best)} | {ms(base.get((e, f)))} "
                   f"| {ms(PUBLISHED['enzyme'].get((e, f)))} "
                   f"| {ms(PUBLISHED['futhark'].get((e, f)))} |")
    out.append("")
    out.append("| eval | stalingrad score ms (sum of medians) |")
    out.append("| --- | ---: |")
    for e, total in score.items():
        out.append(f"| {e} | {ms(total)} |")
    text = "\n".join(out) + "\n"
    print(text)
    with open(os.path.join(a.work, "summary.md"), "w") as f:
        f.write(text)
    sys.exit(0 if all_valid else 1)


if __name__ == "__main__":
    main()
