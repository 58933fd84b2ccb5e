//! `stalingrad gradbench`: a GradBench tool (gradben.ch; the protocol is
//! in the CONTRIBUTING.md of github.com/gradbench/gradbench). It reads one
//! JSON message per line on standard input and answers each with one line
//! on standard output: `start`, `define`, `evaluate`, and `analysis` (and
//! any other kind) acknowledged by id.
//!
//! Modules are VLAD programs in the project (`gradbench/modules/`, with
//! the benchmark code of `benches/programs` they include), embedded here.
//! On `define` the module is compiled with `build --lib` (every function
//! an export) into a static library, and linked with a small generated C
//! driver that calls the exports; the driver runs as a child process for
//! the session. On `evaluate` the tool sends it the function, the
//! arguments as reals and the run counts; the driver calls the export
//! `min_runs` times and until `min_seconds` have passed, timing each call
//! alone with the monotonic clock (no JSON, no pipe), and answers the
//! result's reals (`%.17g`, which reads back as the same bits) and one
//! time per call, which become the `evaluate` timings.

use crate::json::Json;
use crate::library;
use std::io::{BufRead, BufReader, Write};
use std::path::PathBuf;
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};
use std::time::Instant;

/// A GradBench module implemented in VLAD.
struct Module {
    name: &'static str,
    /// The module's file in `files`.
    main: &'static str,
    /// Its functions and their export shapes.
    functions: &'static [(&'static str, &'static str)],
    /// The eval's input as the export's argument reals (a vector as its
    /// length, then its elements).
    input: fn(&Json) -> Result<Vec<f64>, String>,
    /// The result reals of the function named as the eval's output.
    output: fn(&str, &[f64]) -> Result<Json, String>,
    /// Its exports are over vectors (`docs/library.md`): arguments and
    /// results of run-time length.
    vectors: bool,
}

/// The sources the modules need, written to the session's directory so
/// that their includes find each other.
const FILES: &[(&str, &str)] = &[
    (
        "hello-module.vlad",
        include_str!("../../../gradbench/modules/hello-module.vlad"),
    ),
    (
        "particle-module.vlad",
        include_str!("../../../gradbench/modules/particle-module.vlad"),
    ),
    (
        "saddle-module.vlad",
        include_str!("../../../gradbench/modules/saddle-module.vlad"),
    ),
    (
        "lse-module.vlad",
        include_str!("../../../gradbench/modules/lse-module.vlad"),
    ),
    (
        "common.vlad",
        include_str!("../../../benches/programs/common.vlad"),
    ),
    (
        "particle.vlad",
        include_str!("../../../benches/programs/particle.vlad"),
    ),
    (
        "saddle.vlad",
        include_str!("../../../benches/programs/saddle.vlad"),
    ),
];

fn number_input(input: &Json) -> Result<Vec<f64>, String> {
    input
        .as_f64()
        .map(|x| vec![x])
        .ok_or_else(|| "the input must be a number".to_string())
}

fn w_input(input: &Json) -> Result<Vec<f64>, String> {
    input
        .get("w")
        .and_then(Json::as_f64)
        .map(|x| vec![x])
        .ok_or_else(|| "the input must have a number `w`".to_string())
}

fn start_input(input: &Json) -> Result<Vec<f64>, String> {
    let bad = || "the input must have `start`, a list of two numbers".to_string();
    match input.get("start") {
        Some(Json::Arr(items)) if items.len() == 2 => {
            items.iter().map(|x| x.as_f64().ok_or_else(bad)).collect()
        }
        _ => Err(bad()),
    }
}

/// `{"x": [...]}`: the vector x.
fn x_input(input: &Json) -> Result<Vec<f64>, String> {
    let bad = || "the input must have `x`, a list of numbers".to_string();
    match input.get("x") {
        Some(Json::Arr(items)) => {
            let mut out = Vec::with_capacity(items.len() + 1);
            out.push(items.len() as f64);
            for x in items {
                out.push(x.as_f64().ok_or_else(bad)?);
            }
            Ok(out)
        }
        _ => Err(bad()),
    }
}

fn number_output(_: &str, r: &[f64]) -> Result<Json, String> {
    Ok(Json::Num(r.first().copied().unwrap_or(f64::NAN)))
}

fn list_output(_: &str, r: &[f64]) -> Result<Json, String> {
    Ok(Json::Arr(r.iter().map(|x| Json::Num(*x)).collect()))
}

/// A vector of reals as the library writes it (its length, then its
/// elements) as a JSON array.
fn vector_output(r: &[f64]) -> Result<Json, String> {
    match r.split_first() {
        Some((n, rest)) if *n as usize == rest.len() => {
            Ok(Json::Arr(rest.iter().map(|x| Json::Num(*x)).collect()))
        }
        _ => Err(format!(
            "internal error: {} reals do not make a vector",
            r.len()
        )),
    }
}

/// `lse`: the primal is a number, the gradient a vector.
fn lse_output(function: &str, r: &[f64]) -> Result<Json, String> {
    match function {
        "primal" => number_output(function, r),
        _ => vector_output(r),
    }
}

const MODULES: &[Module] = &[
    Module {
        name: "hello",
        main: "hello-module.vlad",
        functions: &[("square", "square real"), ("double", "double real")],
        input: number_input,
        output: number_output,
        vectors: false,
    },
    Module {
        name: "particle",
        main: "particle-module.vlad",
        functions: &[
            ("ff", "ff real"),
            ("fr", "fr real"),
            ("rf", "rf real"),
            ("rr", "rr real"),
        ],
        input: w_input,
        output: number_output,
        vectors: false,
    },
    Module {
        name: "saddle",
        main: "saddle-module.vlad",
        functions: &[
            ("ff", "ff (real real)"),
            ("fr", "fr (real real)"),
            ("rf", "rf (real real)"),
            ("rr", "rr (real real)"),
        ],
        input: start_input,
        output: list_output,
        vectors: false,
    },
    Module {
        name: "lse",
        main: "lse-module.vlad",
        functions: &[
            ("primal", "primal (vector real)"),
            ("gradient", "gradient (vector real)"),
        ],
        input: x_input,
        output: lse_output,
        vectors: true,
    },
];

/// A defined module: its driver process.
struct Driver {
    module: &'static Module,
    child: Child,
    to: ChildStdin,
    from: BufReader<ChildStdout>,
}

/// The C driver of a module's library: reads `F MIN_RUNS MIN_SECONDS N
/// x1 ... xN` lines, answers `ok r1 ... rM` (or `error MESSAGE`) and a
/// line of nanoseconds, one per call.
fn driver_c(prefix: &str, m: &Module) -> String {
    let names: Vec<String> = m
        .functions
        .iter()
        .map(|(f, _)| format!("{prefix}_{}", codegen::lib_export::c_identifier(f)))
        .collect();
    let fns = names.join(", ");
    let results = names
        .iter()
        .map(|n| format!("{}_RESULTS", n.to_ascii_uppercase()))
        .collect::<Vec<_>>()
        .join(", ");
    // The exports' calling convention: fixed arrays, or arrays over
    // vectors with the result's length returned (`docs/library.md`).
    let abi = if m.vectors {
        format!(
            "typedef int (*export_fn)(const double *, size_t, double *, size_t, size_t *);\n\
             static const export_fn fns[] = {{ {fns} }};\n\
             #define CALL(f) fns[f](args, (size_t)n, results, results_cap, &written)\n\
             #define COUNT(f) written"
        )
    } else {
        format!(
            "typedef int (*export_fn)(const double *, double *);\n\
             static const export_fn fns[] = {{ {fns} }};\n\
             static const size_t n_results[] = {{ {results} }};\n\
             #define CALL(f) fns[f](args, results)\n\
             #define COUNT(f) n_results[f]"
        )
    };
    format!(
        r#"/* Generated by `stalingrad gradbench` for the module `{module}`. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "lib{prefix}.h"

{abi}

static long long now(void) {{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (long long)t.tv_sec * 1000000000LL + t.tv_nsec;
}}

int main(void) {{
    int f, n;
    long long min_runs;
    double min_seconds;
    long long *times = NULL;
    size_t cap = 0;
    size_t results_cap = 64;
    double *results = malloc(results_cap * sizeof *results);
    while (scanf("%d %lld %lf %d", &f, &min_runs, &min_seconds, &n) == 4) {{
        if (f < 0 || f >= (int)(sizeof fns / sizeof fns[0]) || n < 0)
            return 2;
        double *args = malloc((n ? n : 1) * sizeof *args);
        if (!args || !results)
            return 3;
        for (int i = 0; i < n; i++)
            if (scanf("%lf", &args[i]) != 1)
                return 2;
        size_t written = 0;
        size_t runs = 0;
        long long total = 0;
        int rc = 0;
        do {{
            long long a = now();
            rc = CALL(f);
            long long b = now();
            if (rc == 2) {{
                /* The result did not fit: make room and call again. */
                results_cap = written;
                results = realloc(results, results_cap * sizeof *results);
                if (!results)
                    return 3;
                runs = 0;
                total = 0;
                rc = 0;
                continue;
            }}
            if (runs == cap) {{
                cap = cap ? 2 * cap : 1024;
                times = realloc(times, cap * sizeof *times);
                if (!times)
                    return 3;
            }}
            times[runs++] = b - a;
            total += b - a;
        }} while (rc == 0 && ((long long)runs < min_runs || total < min_seconds * 1e9));
        if (rc != 0) {{
            const char *msg = {prefix}_last_error();
            printf("error ");
            for (const char *p = msg; *p; p++)
                putchar(*p == '\n' ? ' ' : *p);
        }} else {{
            printf("ok");
            for (size_t i = 0; i < COUNT(f); i++)
                printf(" %.17g", results[i]);
        }}
        free(args);
        printf("\n");
        for (size_t i = 0; i < runs; i++)
            printf(i ? " %lld" : "%lld", times[i]);
        printf("\n");
        fflush(stdout);
    }}
    return 0;
}}
"#,
        module = m.name,
    )
}

/// The session: a scratch directory and the modules defined so far.
struct Session {
    dir: PathBuf,
    /// `-I` directories, searched after the modules' own.
    include: Vec<PathBuf>,
    drivers: Vec<Driver>,
}

impl Session {
    fn define(&mut self, name: &str) -> Result<(), String> {
        if self.drivers.iter().any(|d| d.module.name == name) {
            return Ok(());
        }
        let m = MODULES
            .iter()
            .find(|m| m.name == name)
            .ok_or_else(|| format!("stalingrad has no module `{name}`"))?;
        let lib = self.dir.join(format!("lib{}.a", m.name));
        let exports: Vec<String> = m.functions.iter().map(|(_, e)| e.to_string()).collect();
        library::build(&library::Request {
            file: &self.dir.join(m.main),
            include: &self.include,
            exports: &exports,
            output: Some(lib.clone()),
            header: None,
            keep_temps: false,
        })?;
        let prefix = library::prefix_of(&lib);
        let c = self.dir.join(format!("{}-driver.c", m.name));
        std::fs::write(&c, driver_c(&prefix, m))
            .map_err(|e| format!("cannot write {}: {e}", c.display()))?;
        let exe = self.dir.join(format!("{}-driver", m.name));
        let out = Command::new("cc")
            .args(["-O2", "-I"])
            .arg(&self.dir)
            .arg(&c)
            .arg(&lib)
            .args(["-lm", "-lpthread", "-o"])
            .arg(&exe)
            .output()
            .map_err(|e| format!("cannot run `cc`: {e}"))?;
        if !out.status.success() {
            return Err(format!(
                "compiling the driver failed:\n{}",
                String::from_utf8_lossy(&out.stderr)
            ));
        }
        let mut child = Command::new(&exe)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .map_err(|e| format!("cannot run {}: {e}", exe.display()))?;
        let (Some(to), Some(from)) = (child.stdin.take(), child.stdout.take()) else {
            return Err("the driver has no pipes".into());
        };
        self.drivers.push(Driver {
            module: m,
            child,
            to,
            from: BufReader::new(from),
        });
        Ok(())
    }

    /// The output and the time of each call.
    fn evaluate(&mut self, msg: &Json) -> Result<(Json, Vec<u64>), String> {
        let module = msg.get("module").and_then(Json::as_str).unwrap_or("");
        let function = msg.get("function").and_then(Json::as_str).unwrap_or("");
        let d = self
            .drivers
            .iter_mut()
            .find(|d| d.module.name == module)
            .ok_or_else(|| format!("module `{module}` was not defined"))?;
        let f = d
            .module
            .functions
            .iter()
            .position(|(name, _)| *name == function)
            .ok_or_else(|| format!("module `{module}` has no function `{function}`"))?;
        let input = msg.get("input").cloned().unwrap_or(Json::Null);
        let args = (d.module.input)(&input)?;
        let min_runs = input
            .get("min_runs")
            .and_then(Json::as_f64)
            .unwrap_or(1.0)
            .max(1.0);
        let min_seconds = input
            .get("min_seconds")
            .and_then(Json::as_f64)
            .unwrap_or(0.0)
            .max(0.0);
        let mut line = format!("{f} {} {min_seconds:?} {}", min_runs as u64, args.len());
        for a in &args {
            line.push_str(&format!(" {a:?}"));
        }
        line.push('\n');
        let lost = |e: std::io::Error| format!("the driver of `{module}` stopped: {e}");
        d.to.write_all(line.as_bytes()).map_err(lost)?;
        d.to.flush().map_err(lost)?;
        let (mut answer, mut times) = (String::new(), String::new());
        d.from.read_line(&mut answer).map_err(lost)?;
        d.from.read_line(&mut times).map_err(lost)?;
        if answer.is_empty() {
            return Err(format!("the driver of `{module}` stopped"));
        }
        if let Some(message) = answer.strip_prefix("error ") {
            return Err(message.trim_end().to_string());
        }
        let reals = answer
            .strip_prefix("ok")
            .unwrap_or("")
            .split_whitespace()
            .map(|w| w.parse::<f64>())
            .collect::<Result<Vec<_>, _>>()
            .map_err(|e| format!("the driver answered `{}`: {e}", answer.trim_end()))?;
        let times = times
            .split_whitespace()
            .map(|w| w.parse::<u64>())
            .collect::<Result<Vec<_>, _>>()
            .map_err(|e| format!("the driver's timings: {e}"))?;
        Ok(((d.module.output)(function, &reals)?, times))
    }
}

impl Drop for Session {
    fn drop(&mut self) {
        for d in &mut self.drivers {
            let _ = d.child.kill();
            let _ = d.child.wait();
        }
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

fn timing(name: &str, nanoseconds: u64) -> Json {
    Json::Obj(vec![
        ("name".into(), Json::Str(name.into())),
        ("nanoseconds".into(), Json::Num(nanoseconds as f64)),
    ])
}

/// The answer to one message.
fn respond(session: &mut Session, msg: &Json) -> Json {
    let id = msg.get("id").cloned().unwrap_or(Json::Null);
    let mut fields = vec![("id".to_string(), id)];
    match msg.get("kind").and_then(Json::as_str) {
        Some("start") => fields.push(("tool".into(), Json::Str("stalingrad".into()))),
        Some("define") => {
            let module = msg.get("module").and_then(Json::as_str).unwrap_or("");
            let start = Instant::now();
            match session.define(module) {
                Ok(()) => {
                    let ns = start.elapsed().as_nanos() as u64;
                    fields.push(("success".into(), Json::Bool(true)));
                    fields.push(("timings".into(), Json::Arr(vec![timing("compile", ns)])));
                }
                Err(e) => {
                    fields.push(("success".into(), Json::Bool(false)));
                    fields.push(("error".into(), Json::Str(e)));
                }
            }
        }
        Some("evaluate") => match session.evaluate(msg) {
            Ok((output, times)) => {
                fields.push(("success".into(), Json::Bool(true)));
                fields.push(("output".into(), output));
                let timings = times.iter().map(|t| timing("evaluate", *t)).collect();
                fields.push(("timings".into(), Json::Arr(timings)));
            }
            Err(e) => {
                fields.push(("success".into(), Json::Bool(false)));
                fields.push(("error".into(), Json::Str(e)));
            }
        },
        _ => {}
    }
    Json::Obj(fields)
}

/// A new directory holding the modules' sources.
fn session_dir() -> Result<PathBuf, String> {
    let base = std::env::temp_dir();
    for n in 0..1000u32 {
        let dir = base.join(format!("stalingrad-gradbench-{}-{n}", std::process::id()));
        match std::fs::create_dir(&dir) {
            Ok(()) => {
                for (name, text) in FILES {
                    let p = dir.join(name);
                    std::fs::write(&p, text)
                        .map_err(|e| format!("cannot write {}: {e}", p.display()))?;
                }
                return Ok(dir);
            }
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => continue,
            Err(e) => return Err(format!("cannot create {}: {e}", dir.display())),
        }
    }
    Err(format!("cannot create a directory in {}", base.display()))
}

/// Runs the protocol until standard input ends.
pub fn serve(
    input: &mut dyn BufRead,
    out: &mut dyn Write,
    include: &[PathBuf],
) -> Result<(), String> {
    let mut session = Session {
        dir: session_dir()?,
        include: include.to_vec(),
        drivers: Vec::new(),
    };
    let mut line = String::new();
    loop {
        line.clear();
        let n = input
            .read_line(&mut line)
            .map_err(|e| format!("cannot read standard input: {e}"))?;
        if n == 0 {
            return Ok(());
        }
        if line.trim().is_empty() {
            continue;
        }
        let msg = crate::json::parse(line.trim())?;
        let answer = respond(&mut session, &msg).to_line();
        writeln!(out, "{answer}")
            .and_then(|()| out.flush())
            .map_err(|e| format!("cannot write standard output: {e}"))?;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_module_file_is_embedded() {
        for m in MODULES {
            assert!(FILES.iter().any(|(n, _)| *n == m.main));
        }
    }

    #[test]
    fn inputs() {
        let j = crate::json::parse(r#"{"start":[1,2],"min_runs":3}"#).unwrap();
        assert_eq!(start_input(&j).unwrap(), vec![1.0, 2.0]);
        assert!(w_input(&j).is_err());
        let j = crate::json::parse(r#"{"w":0.5}"#).unwrap();
        assert_eq!(w_input(&j).unwrap(), vec![0.5]);
        assert!(number_input(&j).is_err());
        let j = crate::json::parse(r#"{"x":[1,2.5]}"#).unwrap();
        assert_eq!(x_input(&j).unwrap(), vec![2.0, 1.0, 2.5]);
        assert!(x_input(&crate::json::parse(r#"{"x":[true]}"#).unwrap()).is_err());
    }

    #[test]
    fn outputs() {
        assert_eq!(
            lse_output("gradient", &[2.0, 0.25, 0.75])
                .unwrap()
                .to_line(),
            "[0.25,0.75]"
        );
        assert_eq!(lse_output("primal", &[1.5]).unwrap().to_line(), "1.5");
        assert!(vector_output(&[3.0, 1.0]).is_err());
    }
}
