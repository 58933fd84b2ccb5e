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
import queue
import resource
import shlex
import signal
import statistics
import subprocess
import sys
import threading
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


def forward(stream, lines):
    for line in stream:
        lines.put(line)
    lines.put("")


def relay(eval_cmd, tool_cmd, cwd, env, log_path, timeout, memory_limit=None):
    """Runs one session; returns {id: message}, {id: response}, {of: analysis}.

    A message the tool has not answered after `timeout` seconds ends the
    session, as in GradBench's intermediary: the tool (and what it started)
    is killed and the message gets an unsuccessful response saying so.
    `memory_limit` (bytes) bounds the address space of the tool and what it
    starts, so that on a shared machine it fails with "out of memory"
    instead of taking the machine's memory.
    """
    def limit():
        if memory_limit:
            resource.setrlimit(resource.RLIMIT_AS, (memory_limit, memory_limit))

    ev = subprocess.Popen(eval_cmd, cwd=cwd, env=env, stdin=subprocess.PIPE,
                          stdout=subprocess.PIPE, text=True)
    tool = subprocess.Popen(tool_cmd, cwd=cwd, env=env, stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, text=True,
                            start_new_session=True, preexec_fn=limit)
    # The tool's lines come through a queue, so that waiting for one can
    # end at the timeout; "" when the tool has closed its output.
    answers = queue.Queue()
    threading.Thread(target=forward, args=(tool.stdout, answers), daemon=True).start()
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
            start = time.perf_counter()
            try:
                tool.stdin.write(line if line.endswith("\n") else line + "\n")
                tool.stdin.flush()
                answer = answers.get(timeout=timeout)
            except BrokenPipeError:
                answer = ""
            except queue.Empty:
                os.killpg(tool.pid, signal.SIGKILL)
                resp = {"id": msg["id"], "success": False,
                        "error": f"no response within {timeout} s",
                        "elapsed_seconds": time.perf_counter() - start}
                log.write(json.dumps({"response": resp}) + "\n")
                responses[msg["id"]] = resp
                print(f"error: the tool did not answer message {msg['id']} within "
                      f"{timeout} s", file=sys.stderr)
                break
            elapsed = time.perf_counter() - start
            if not answer:
                print(f"error: the tool stopped (exit {tool.wait()})", file=sys.stderr)
                break
            resp = json.loads(answer)
            # The wall time of the whole message, which GradBench's
            # intermediary limits (600 s by default).
            resp["elapsed_seconds"] = elapsed
            log.write(json.dumps({"response": resp}) + "\n")
            responses[resp["id"]] = resp
            ev.stdin.write(answer)
            ev.stdin.flush()
    for p in (ev, tool):
        try:
            p.stdin.close()
        except BrokenPipeError:
            pass
    for p in (ev, tool):
        try:
            p.wait(timeout=30)
        except subprocess.TimeoutExpired:
            if p is tool:
                os.killpg(p.pid, signal.SIGKILL)
            else:
                p.kill()
            p.wait()
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


def run_eval(tool, e, cmd, a, env):
    """One tool on one eval: rows (tool, eval, function, workload, valid,
    error, times ms, elapsed s), whether every output was valid, and the
    longest time the tool took to answer a message (define included)."""
    name, tool_cmd = tool
    log = os.path.join(a.work, "logs", f"{e}.jsonl" if name == "stalingrad"
                       else f"{name}-{e}.jsonl")
    print(f"[run-evals] eval {e}, tool {name}", file=sys.stderr)
    # The limit is ours to keep; the peers run as GradBench runs them.
    limit = int(a.memory_limit * 2**30) if a.memory_limit and name == "stalingrad" else None
    messages, responses, analyses = relay(cmd, shlex.split(tool_cmd), a.gradbench,
                                          env, log, a.timeout, limit)
    longest = max((r.get("elapsed_seconds", 0.0) for r in responses.values()), default=0.0)
    defined = [r for i, r in responses.items() if messages[i].get("kind") == "define"]
    if not defined or not defined[0].get("success"):
        err = (defined[0].get("error", "") if defined else "no response")[-300:]
        print(f"error: {e}: {name} did not define the module: {err}", file=sys.stderr)
        return [(name, e, "define", "", False, err, [], 0.0)], False, longest
    rows, all_valid = [], True
    for i, m in sorted(messages.items()):
        if m.get("kind") != "evaluate":
            continue
        r = responses.get(i, {})
        an = analyses.get(i, {})
        valid = bool(r.get("success")) and an.get("valid", False)
        all_valid &= valid
        times = [t["nanoseconds"] / 1e6 for t in r.get("timings", [])
                 if t.get("name") == "evaluate"]
        err = an.get("error") or r.get("error")
        rows.append((name, e, m["function"], m.get("description", ""), valid, err,
                     times, r.get("elapsed_seconds", 0.0)))
    return rows, all_valid, longest


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--gradbench", required=True)
    ap.add_argument("--tool", required=True)
    ap.add_argument("--peer", action="append", default=[],
                    help="NAME=COMMAND of another tool to run on every eval")
    ap.add_argument("--baselines", required=True)
    ap.add_argument("--work", required=True)
    ap.add_argument("--min-runs", default="10")
    ap.add_argument("--min-seconds", default="2")
    ap.add_argument("--timeout", type=float, default=600.0)
    ap.add_argument("--memory-limit", type=float, default=0.0,
                    help="GiB of address space for our tool (0: no limit)")
    ap.add_argument("evals", nargs="+", help="EVAL or EVAL:ARG,ARG...")
    a = ap.parse_args()
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    specs = [(s.split(":", 1)[0], s.split(":", 1)[1].split(",") if ":" in s else [])
             for s in a.evals]
    a.evals = [e for e, _ in specs]
    tools = [("stalingrad", a.tool)] + [tuple(p.split("=", 1)) for p in a.peer]
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
    rows, all_valid, longest = [], True, {}
    for e, extra in specs:
        script = os.path.join(a.gradbench, "python", "gradbench", "gradbench",
                              "evals", e, "run.py")
        cmd = [sys.executable, script]
        if e != "hello":
            cmd += ["--min-runs", a.min_runs, "--min-seconds", a.min_seconds]
        if e == "ht" and "--max" not in extra:
            top = ht_max(a.gradbench)
            if top < 12:
                missing = "hand12 is" if top == 11 else f"hand{top + 1} to hand12 are"
                notes.append(f"ht: the inputs {missing} missing; "
                             f"ran sizes 1 to {top} (--max {top})")
                cmd += ["--max", str(top)]
        cmd += extra
        # Each eval runs with every tool before the next eval, so that the
        # tools' times of one eval are as close in time as they can be.
        for tool in tools:
            got, valid, longest[(tool[0], e)] = run_eval(tool, e, cmd, a, env)
            rows += got
            if tool[0] == "stalingrad":
                all_valid &= valid
    print(f"[run-evals] baselines", file=sys.stderr)
    base = {}
    for key, name in BASELINES.items():
        path = os.path.join(a.baselines, name)
        if os.path.exists(path) and key[0] in a.evals:
            base[key] = time_baseline(path) * 1e3
    text = summary(a, tools, notes, rows, base, longest)
    print(text)
    with open(os.path.join(a.work, "summary.md"), "w") as f:
        f.write(text)
    sys.exit(0 if all_valid else 1)


def summary(a, tools, notes, rows, base, longest):
    """The Markdown tables: per function and workload, then per eval."""
    host = "?"
    try:
        with open("/proc/cpuinfo") as f:
            host = next(l.split(":", 1)[1].strip() for l in f if l.startswith("model name"))
    except (OSError, StopIteration):
        pass
    peers = [t for t, _ in tools[1:]]
    out = [f"date: {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}; "
           f"machine: {os.cpu_count()} cores, {host}; min_runs={a.min_runs} "
           f"min_seconds={a.min_seconds}; timeout={a.timeout:g} s"
           + (f"; memory limit {a.memory_limit:g} GiB" if a.memory_limit else "")]
    out += [f"- {note}" for note in notes]
    out.append("")
    by = {(t, e, f, w): (v, err, times, el) for t, e, f, w, v, err, times, el in rows}
    cells = [f"{p} median ms" for p in peers] or ["Enzyme ms (published)",
                                                   "Futhark ms (published)"]
    out.append("| eval | function | workload | valid | runs | stalingrad median ms "
               "| stalingrad best ms | hand-written baseline ms | " + " | ".join(cells) + " |")
    out.append("| --- | --- | --- | --- | ---: | ---: | ---: | ---: |" + " ---: |" * len(cells))
    for t, e, f, w, valid, err, times, _ in rows:
        if t != "stalingrad":
            continue
        med = statistics.median(times) if times else None
        error = str(err).replace("\n", " ").replace("|", "/")[:300]
        if peers:
            other = []
            for p in peers:
                pv = by.get((p, e, f, w))
                other.append("not run" if pv is None else
                             ms(statistics.median(pv[2])) if pv[0] and pv[2] else "invalid")
        else:
            other = [ms(PUBLISHED[p].get((e, f))) for p in ("enzyme", "futhark")]
        out.append(f"| {e} | {f} | {w} | {'yes' if valid else 'NO: ' + error} "
                   f"| {len(times)} | {ms(med)} | {ms(min(times) if times else None)} "
                   f"| {ms(base.get((e, f)))} | " + " | ".join(other) + " |")
    out.append("")
    # GradBench's score: the sum over workloads of every function's median
    # time; a tool with an invalid or missing output has none.
    out.append("| eval | " + " | ".join(f"{t} score ms" for t, _ in tools)
               + " | " + " | ".join(f"{t} longest message s" for t, _ in tools) + " |")
    out.append("| --- |" + " ---: |" * (2 * len(tools)))
    for e in dict.fromkeys(r[1] for r in rows):
        scores, slowest = [], []
        for t, _ in tools:
            mine = [r for r in rows if r[0] == t and r[1] == e]
            ok = mine and all(r[4] and r[6] for r in mine)
            n_ours = len([r for r in rows if r[0] == "stalingrad" and r[1] == e])
            ok = ok and len(mine) == n_ours
            scores.append(ms(sum(statistics.median(r[6]) for r in mine)) if ok else "incomplete")
            slowest.append(f"{longest.get((t, e), 0.0):.1f}")
        out.append(f"| {e} | " + " | ".join(scores) + " | " + " | ".join(slowest) + " |")
    return "\n".join(out) + "\n"


if __name__ == "__main__":
    main()
