"""The tables and plot of docs/gradbench.md from runs of the evals.

    python3 gradbench/report.py GRADBENCH_GIT SVG WORK [WORK...]

Each WORK is a directory run-evals.sh (or peers.sh) wrote: its logs/ hold
each tool's session of each eval (EVAL.jsonl ours, TOOL-EVAL.jsonl a
peer's), from which the times and validity are read; all tools of an
eval must come from one run. GRADBENCH_GIT is a git directory of
gradbench/gradbench whose branch `ci/refs/heads/nightly` holds GradBench's
published nightly figures (evals/EVAL/summary.json: each tool's time of
the primal and the derivative per workload, measured on GitHub's
runners); they are shown beside ours, labelled, for the workloads we ran.

Prints Markdown: per eval and function, each tool's time summed over the
workloads; per eval, GradBench's score (the sum over workloads of primal
plus derivative time); and writes SVG, a bar chart of those scores on a
log scale. Python's standard library only.
"""

import glob
import json
import math
import os
import statistics
import subprocess
import sys

NIGHTLY_REF = "refs/heads/ci/refs/heads/nightly"
NIGHTLY_TOOLS = ["enzyme", "futhark", "jax", "pytorch"]
EVALS = ["particle", "saddle", "lse", "llsq", "det", "kmeans", "ode", "gmm", "lstm", "ba", "ht"]
# A tool's colour; its published nightly figures are the same colour, paler.
COLOURS = {"stalingrad": "#1b6ca8", "enzyme": "#d1495b", "futhark": "#edae49",
           "jax": "#66a182", "pytorch": "#8d6cab"}


def nightly(git, evals):
    """{eval: {tool: {workload or function: {function: ms}}}} and the date."""
    out, date = {}, "?"
    try:
        top = json.loads(subprocess.run(["git", "-C", git, "show", f"{NIGHTLY_REF}:summary.json"],
                                        capture_output=True, text=True, check=True).stdout)
        date = top.get("date", "?")
    except (subprocess.CalledProcessError, json.JSONDecodeError):
        return out, date
    for e in evals:
        p = subprocess.run(["git", "-C", git, "show", f"{NIGHTLY_REF}:evals/{e}/summary.json"],
                           capture_output=True, text=True)
        if p.returncode != 0:
            continue
        d = json.loads(p.stdout)
        names = {"primal": d.get("primal"), "derivative": d.get("derivative")}
        per = {}
        for tool, work in d.get("tools", {}).items():
            t = {}
            for w, v in work.items():
                if "secs" in v:  # particle, saddle: one time per function
                    t.setdefault("", {})[w] = v["secs"] * 1e3 + v["nanos"] / 1e6
                else:
                    t[w] = {names[k]: x["secs"] * 1e3 + x["nanos"] / 1e6
                            for k, x in v.items() if k in names}
            per[tool] = t
        out[e] = per
    return out, date


def ms(x):
    if x is None:
        return ""
    return f"{x:.3g}" if x < 100 else f"{x:,.0f}"


def sessions(work):
    """Rows (tool, eval, function, workload, valid, times ms) of WORK's logs."""
    rows = []
    for path in sorted(glob.glob(os.path.join(work, "logs", "*.jsonl"))):
        stem = os.path.basename(path)[:-len(".jsonl")]
        tool, e = stem.split("-", 1) if "-" in stem else ("stalingrad", stem)
        messages, responses, analyses = {}, {}, {}
        with open(path) as f:
            for line in f:
                d = json.loads(line)
                if "message" in d:
                    m = d["message"]
                    messages[m["id"]] = m
                    if m.get("kind") == "analysis":
                        analyses[m["of"]] = m
                else:
                    responses[d["response"]["id"]] = d["response"]
        for i, m in sorted(messages.items()):
            if m.get("kind") != "evaluate":
                continue
            r = responses.get(i, {})
            valid = bool(r.get("success")) and analyses.get(i, {}).get("valid", False)
            times = [t["nanoseconds"] / 1e6 for t in r.get("timings", [])
                     if t.get("name") == "evaluate"]
            rows.append({"tool": tool, "eval": e, "function": m["function"],
                         "workload": m.get("description", ""), "valid": valid,
                         "times_ms": times})
    return rows


def main():
    if len(sys.argv) < 4:
        print(__doc__, file=sys.stderr)
        sys.exit(2)
    git, svg_path = sys.argv[1], sys.argv[2]
    rows = [r for work in sys.argv[3:] for r in sessions(work)]
    evals = [e for e in EVALS if any(r["eval"] == e for r in rows)]
    tools = ["stalingrad"] + sorted({r["tool"] for r in rows} - {"stalingrad"})
    # (tool, eval, function, workload) -> median ms, None if not valid.
    median = {(r["tool"], r["eval"], r["function"], r["workload"]):
              statistics.median(r["times_ms"]) if r["valid"] and r["times_ms"] else None
              for r in rows}
    ours = [r for r in rows if r["tool"] == "stalingrad" and r["eval"] in evals]
    published, date = nightly(git, evals)
    pub_tools = [t for t in NIGHTLY_TOOLS if any(t in published.get(e, {}) for e in evals)]

    def ran(tool, e, fns):
        """Sum of `tool`'s medians in this run over our workloads of `fns`."""
        keys = [(r["function"], r["workload"]) for r in ours if r["eval"] == e
                and r["function"] in fns]
        got = [median.get((tool, e, f, w)) for f, w in keys]
        if not keys or any(g is None for g in got):
            n = sum(g is not None for g in got)
            return None, f"{n} of {len(keys)} valid"
        return sum(got), ""

    def pub(tool, e, fns):
        keys = [(r["function"], r["workload"]) for r in ours if r["eval"] == e
                and r["function"] in fns]
        t = published.get(e, {}).get(tool)
        if t is None:
            return None, "not published"
        got = [t.get("", {}).get(f) if "" in t else t.get(w, {}).get(f) for f, w in keys]
        if any(g is None for g in got):
            n = sum(g is not None for g in got)
            return None, f"{n} of {len(keys)} published"
        return sum(got), ""

    def cell(v):
        return ms(v[0]) if v[0] is not None else v[1]

    head = ["eval", "function", "workloads"] + [f"{t}" for t in tools] + \
        [f"{t} (nightly)" for t in pub_tools]
    out = ["| " + " | ".join(head) + " |", "| --- | --- | ---: |" + " ---: |" * (len(head) - 3)]
    for e in evals:
        for f in dict.fromkeys(r["function"] for r in ours if r["eval"] == e):
            n = sum(1 for r in ours if r["eval"] == e and r["function"] == f)
            cells = [cell(ran(t, e, {f})) for t in tools] + [cell(pub(t, e, {f})) for t in pub_tools]
            out.append(f"| {e} | {f} | {n} | " + " | ".join(cells) + " |")
    out.append("")
    out.append("GradBench's score (ms): the sum over workloads of primal plus derivative time.")
    out.append("")
    head = ["eval"] + tools + [f"{t} (nightly)" for t in pub_tools]
    out += ["| " + " | ".join(head) + " |", "| --- |" + " ---: |" * (len(head) - 1)]
    scores = {}
    for e in evals:
        fns = set(r["function"] for r in ours if r["eval"] == e)
        vals = [ran(t, e, fns) for t in tools] + [pub(t, e, fns) for t in pub_tools]
        scores[e] = [v[0] for v in vals]
        out.append(f"| {e} | " + " | ".join(cell(v) for v in vals) + " |")
    out.append("")
    out.append(f"Nightly: GradBench's published figures of {date} (GitHub's runners), "
               "over the same workloads; not measured here.")
    print("\n".join(out))
    with open(svg_path, "w") as f:
        f.write(plot(evals, tools + [f"{t} (nightly)" for t in pub_tools], scores))


def plot(evals, names, scores):
    """Grouped horizontal bars of each eval's scores, log-scaled ms."""
    vals = [v for e in evals for v in scores[e] if v]
    lo = math.floor(math.log10(min(vals))) if vals else 0
    hi = math.ceil(math.log10(max(vals))) if vals else 1
    hi = max(hi, lo + 1)
    left, width, bar = 90, 560, 9
    group = bar * len(names) + 12
    top = 40
    height = top + group * len(evals) + 40 + 16 * len(names)

    def x(v):
        return left + width * (math.log10(v) - lo) / (hi - lo)

    def fill(j):
        tool = names[j].split(" ")[0]
        pale = ' fill-opacity="0.4"' if "nightly" in names[j] else ""
        return f'fill="{COLOURS.get(tool, "#777777")}"{pale}'

    s = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{left + width + 30}" '
         f'height="{height}" font-family="sans-serif" font-size="11">',
         f'<text x="{left}" y="16" font-size="13">GradBench score per eval '
         f'(ms, log scale; sum of primal and derivative over workloads)</text>']
    for p in range(lo, hi + 1):
        s.append(f'<line x1="{x(10 ** p):.1f}" y1="{top - 6}" x2="{x(10 ** p):.1f}" '
                 f'y2="{top + group * len(evals)}" stroke="#ddd"/>')
        s.append(f'<text x="{x(10 ** p):.1f}" y="{top - 9}" text-anchor="middle">'
                 f'{10.0 ** p:g}</text>')
    for i, e in enumerate(evals):
        y0 = top + i * group
        s.append(f'<text x="{left - 6}" y="{y0 + group / 2:.1f}" text-anchor="end">{e}</text>')
        for j, v in enumerate(scores[e]):
            if not v:
                continue
            y = y0 + j * bar
            s.append(f'<rect x="{left}" y="{y}" width="{max(x(v) - left, 1):.1f}" '
                     f'height="{bar - 1}" {fill(j)}/>')
    y = top + group * len(evals) + 20
    for j, n in enumerate(names):
        s.append(f'<rect x="{left}" y="{y + 16 * j - 9}" width="10" height="10" {fill(j)}/>')
        s.append(f'<text x="{left + 16}" y="{y + 16 * j}">{n}</text>')
    s.append("</svg>")
    return "\n".join(s) + "\n"


if __name__ == "__main__":
    main()
