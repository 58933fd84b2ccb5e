//! `stalingrad gradbench`: a whole GradBench protocol session, as an eval
//! drives it (start, define, evaluate, analysis), over the nine functions
//! of `hello`, `particle` and `saddle`. Outputs must be the published
//! answers to 1e-9 relative; every evaluate answer carries one `evaluate`
//! timing per run, at least `min_runs`, each a whole number of
//! nanoseconds; unknown modules and functions are `success: false`. The
//! array evals' outputs must be those of GradBench's reference (its
//! `manual` tool) on small inputs at GradBench's tolerance.

mod common;

#[path = "../src/json.rs"]
#[allow(dead_code)]
mod json;

use common::*;
use json::Json;
use std::io::{BufRead, BufReader, Write};
use std::process::{Command, Stdio};

const PARTICLE: f64 = 0.2071918746486116;
const SADDLE: f64 = 8.246324826140356e-06;

fn close(got: f64, want: f64) -> bool {
    ((got - want) / want).abs() <= 1e-9
}

struct Tool {
    child: std::process::Child,
    to: std::process::ChildStdin,
    from: BufReader<std::process::ChildStdout>,
    id: u64,
}

impl Tool {
    fn start() -> Tool {
        let mut child = Command::new(binary())
            .arg("gradbench")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .expect("run stalingrad gradbench");
        let to = child.stdin.take().expect("stdin");
        let from = BufReader::new(child.stdout.take().expect("stdout"));
        Tool {
            child,
            to,
            from,
            id: 0,
        }
    }

    /// Sends `{"id": N, ...fields}` and returns the answer, checking its id.
    fn send(&mut self, fields: &str) -> Json {
        let line = format!("{{\"id\":{},{fields}}}\n", self.id);
        self.to.write_all(line.as_bytes()).expect("write");
        self.to.flush().expect("flush");
        let mut answer = String::new();
        self.from.read_line(&mut answer).expect("read");
        let v = json::parse(answer.trim()).unwrap_or_else(|e| panic!("{e}: {answer}"));
        assert_eq!(
            v.get("id").and_then(Json::as_f64),
            Some(self.id as f64),
            "{answer}"
        );
        // Ids are written as integers, as GradBench's own tools do.
        assert!(
            answer.starts_with(&format!("{{\"id\":{},", self.id))
                || answer.trim() == format!("{{\"id\":{}}}", self.id),
            "{answer}"
        );
        self.id += 1;
        v
    }

    fn evaluate(&mut self, module: &str, function: &str, input: &str, min_runs: usize) -> Json {
        let v = self.send(&format!(
            "\"kind\":\"evaluate\",\"module\":\"{module}\",\"function\":\"{function}\",\"input\":{input}"
        ));
        assert_eq!(
            v.get("success"),
            Some(&Json::Bool(true)),
            "{module} {function}: {v:?}"
        );
        let Some(Json::Arr(timings)) = v.get("timings") else {
            panic!("{module} {function}: no timings: {v:?}");
        };
        assert!(
            timings.len() >= min_runs,
            "{module} {function}: {} runs",
            timings.len()
        );
        for t in timings {
            assert_eq!(t.get("name").and_then(Json::as_str), Some("evaluate"));
            let ns = t
                .get("nanoseconds")
                .and_then(Json::as_f64)
                .expect("nanoseconds");
            assert!(ns > 0.0 && ns.fract() == 0.0, "{t:?}");
        }
        // The next message is the eval's analysis of this answer.
        let of = self.id - 1;
        let ack = self.send(&format!("\"kind\":\"analysis\",\"of\":{of},\"valid\":true"));
        assert_eq!(ack.get("success"), None);
        v.get("output").cloned().expect("output")
    }

    fn define(&mut self, module: &str) -> Json {
        self.send(&format!("\"kind\":\"define\",\"module\":\"{module}\""))
    }
}

#[test]
fn a_session_over_the_nine_functions() {
    let mut tool = Tool::start();
    let started = tool.send("\"kind\":\"start\",\"eval\":\"particle\"");
    assert_eq!(
        started.get("tool").and_then(Json::as_str),
        Some("stalingrad")
    );

    let d = tool.define("hello");
    assert_eq!(d.get("success"), Some(&Json::Bool(true)), "{d:?}");
    let mut x = 1.5;
    for _ in 0..2 {
        let y = tool.evaluate("hello", "square", &format!("{x:?}"), 1);
        assert_eq!(y.as_f64(), Some(x * x));
        x = tool
            .evaluate("hello", "double", &format!("{:?}", x * x), 1)
            .as_f64()
            .expect("a number");
    }
    assert_eq!(x, 40.5);

    assert_eq!(
        tool.define("particle").get("success"),
        Some(&Json::Bool(true))
    );
    for f in ["rr", "ff", "fr", "rf"] {
        let out = tool.evaluate(
            "particle",
            f,
            "{\"w\":0.0,\"min_runs\":3,\"min_seconds\":0}",
            3,
        );
        let w = out.as_f64().unwrap_or(f64::NAN);
        assert!(close(w, PARTICLE), "particle {f}: {w}");
    }

    assert_eq!(
        tool.define("saddle").get("success"),
        Some(&Json::Bool(true))
    );
    for f in ["rr", "ff", "fr", "rf"] {
        let out = tool.evaluate(
            "saddle",
            f,
            "{\"start\":[1.0,1.0],\"min_runs\":2,\"min_seconds\":0.01}",
            2,
        );
        let Json::Arr(xs) = &out else {
            panic!("saddle {f}: {out:?}")
        };
        assert_eq!(xs.len(), 4, "saddle {f}: {out:?}");
        for x in xs {
            let x = x.as_f64().unwrap_or(f64::NAN);
            assert!(close(x, SADDLE), "saddle {f}: {x}");
        }
    }

    // An eval over arrays: lse's primal and gradient (the softmax).
    assert_eq!(tool.define("lse").get("success"), Some(&Json::Bool(true)));
    let out = tool.evaluate("lse", "primal", "{\"x\":[1,2,3],\"min_runs\":2}", 2);
    assert_eq!(out.as_f64(), Some(3.4076059644443806));
    let out = tool.evaluate("lse", "gradient", "{\"x\":[1,2,3],\"min_runs\":2}", 2);
    let Json::Arr(g) = &out else {
        panic!("lse gradient: {out:?}")
    };
    let g: Vec<f64> = g.iter().map(|x| x.as_f64().unwrap_or(f64::NAN)).collect();
    assert_eq!(
        g,
        [0.09003057317038045, 0.2447284710547976, 0.6652409557748219]
    );
    // A gradient longer than the driver's first buffer (64 reals).
    let xs: Vec<String> = (0..1000)
        .map(|i| format!("{}", f64::from(i) / 1000.0))
        .collect();
    let input = format!("{{\"x\":[{}],\"min_runs\":1}}", xs.join(","));
    let Json::Arr(g) = tool.evaluate("lse", "gradient", &input, 1) else {
        panic!("lse gradient of 1000")
    };
    assert_eq!(g.len(), 1000);

    // What the tool has not: an answer, not a crash.
    let d = tool.define("no-such-eval");
    assert_eq!(d.get("success"), Some(&Json::Bool(false)));
    assert!(d
        .get("error")
        .and_then(Json::as_str)
        .unwrap_or("")
        .contains("no-such-eval"));
    let v = tool.send("\"kind\":\"evaluate\",\"module\":\"saddle\",\"function\":\"xx\",\"input\":{\"start\":[1,1]}");
    assert_eq!(v.get("success"), Some(&Json::Bool(false)));
    let v = tool.send(
        "\"kind\":\"evaluate\",\"module\":\"particle\",\"function\":\"ff\",\"input\":{\"v\":1}",
    );
    assert_eq!(v.get("success"), Some(&Json::Bool(false)));

    drop(tool.to);
    let status = tool.child.wait().expect("wait");
    assert!(status.success(), "{status}");
}

/// GradBench's comparison (python/gradbench/gradbench/comparison.py): the
/// same JSON shape, and numbers within 1e-4 of each other relative to the
/// larger of 1 and the sum of their magnitudes.
fn mismatches(want: &Json, got: &Json, path: &str, out: &mut Vec<String>) {
    match (want, got) {
        (Json::Num(w), Json::Num(g)) => {
            if (w - g).abs() / (w.abs() + g.abs()).max(1.0) > 1e-4 {
                out.push(format!("{path}: {w} != {g}"));
            }
        }
        (Json::Arr(w), Json::Arr(g)) if w.len() == g.len() => {
            for (i, (w, g)) in w.iter().zip(g).enumerate() {
                mismatches(w, g, &format!("{path}[{i}]"), out);
            }
        }
        (Json::Obj(w), Json::Obj(g)) if w.len() == g.len() => {
            for (k, w) in w {
                match got.get(k) {
                    Some(g) => mismatches(w, g, &format!("{path}.{k}"), out),
                    None => out.push(format!("{path}.{k}: missing")),
                }
            }
        }
        _ => out.push(format!("{path}: expected {want:?}, got {got:?}")),
    }
}

/// The array evals on small inputs against GradBench's reference: each line
/// of tests/gradbench/manual.jsonl is a module, a function, an input and
/// the output GradBench's `manual` tool computes for it (rewritten by
/// `python3 gradbench/manual.py GRADBENCH_CHECKOUT`).
#[test]
fn the_array_evals_agree_with_the_manual_tool() {
    let cases = std::fs::read_to_string(repo_root().join("tests/gradbench/manual.jsonl"))
        .expect("tests/gradbench/manual.jsonl");
    let mut tool = Tool::start();
    tool.send("\"kind\":\"start\",\"eval\":\"llsq\"");
    let mut defined = Vec::new();
    let mut checked = 0;
    for line in cases.lines().filter(|l| !l.trim().is_empty()) {
        let case = json::parse(line).unwrap_or_else(|e| panic!("{e}: {line}"));
        let field = |k: &str| case.get(k).unwrap_or_else(|| panic!("no `{k}`: {line}"));
        let module = field("module").as_str().expect("module");
        let function = field("function").as_str().expect("function");
        if !defined.contains(&module.to_string()) {
            let d = tool.define(module);
            assert_eq!(d.get("success"), Some(&Json::Bool(true)), "{module}: {d:?}");
            defined.push(module.to_string());
        }
        let got = tool.evaluate(module, function, &field("input").to_line(), 1);
        let mut bad = Vec::new();
        mismatches(field("output"), &got, "", &mut bad);
        assert!(bad.is_empty(), "{module} {function}: {}", bad.join("; "));
        checked += 1;
    }
    assert!(checked >= 8, "only {checked} cases");
    drop(tool.to);
    assert!(tool.child.wait().expect("wait").success());
}
