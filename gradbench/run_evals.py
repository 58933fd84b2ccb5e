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
"""

import argparse
import json
import os
import shlex
import statistics
import subprocess
import sys
import time

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
    ap.add_argument("evals", nargs="+")
    a = ap.parse_args()
    env = dict(os.environ)
    env["PYTHONPATH"] = os.path.join(a.gradbench, "python", "gradbench")
    os.makedirs(os.path.join(a.work, "logs"), exist_ok=True)
    rows, all_valid = [], True
    for e in a.evals:
        script = os.path.join(a.gradbench, "python", "gradbench", "gradbench",
                              "evals", e, "run.py")
        cmd = [sys.executable, script]
        if e != "hello":
            cmd += ["--min-runs", a.min_runs, "--min-seconds", a.min_seconds]
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
            rows.append((e, m["function"], valid, an.get("error"), times))
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
    out.append("")
    out.append("| eval | function | valid | runs | stalingrad median ms | stalingrad best ms "
               "| hand-written baseline ms | Enzyme ms (published) | Futhark ms (published) |")
    out.append("| --- | --- | --- | ---: | ---: | ---: | ---: | ---: | ---: |")
    for e, f, valid, err, times in rows:
        med = statistics.median(times) if times else None
        best = min(times) if times else None
        out.append(f"| {e} | {f} | {'yes' if valid else 'NO: ' + str(err)} | {len(times)} "
                   f"| {ms(med)} | {ms(best)} | {ms(base.get((e, f)))} "
                   f"| {ms(PUBLISHED['enzyme'].get((e, f)))} "
                   f"| {ms(PUBLISHED['futhark'].get((e, f)))} |")
    text = "\n".join(out) + "\n"
    print(text)
    with open(os.path.join(a.work, "summary.md"), "w") as f:
        f.write(text)
    sys.exit(0 if all_valid else 1)


if __name__ == "__main__":
    main()
