//! `vlad-bench`: the benchmark harness of stalingrad.
//!
//! For every program of `benches/programs` it measures the compile time of
//! `stalingrad build`, the wall time per repetition of the compiled program,
//! of the reference interpreter (at a reduced workload, scaled) and of the
//! hand-written Rust baseline (`benches/baselines`) where one exists, the
//! arithmetic operation counts of interpreter and compiled code, and the
//! peak memory of the compiled run; and, for AD on data of run-time size,
//! how compiled time per element grows with the data (`scaling`). It
//! writes `docs/benchmarks.md` and `docs/benchmarks.svg`.
//!
//! Usage: `cargo run --release -p harness -- [--quick] [--only NAME] [--limit SECS]`
//! (`target/release/stalingrad` must exist: `cargo build --release -p stalingrad`).

use std::fmt::Write as _;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

mod report;
mod scaling;

use report::{markdown, svg};

/// How a program reads its input.
#[derive(Clone, Copy, PartialEq)]
enum Kind {
    /// Reads N; one repetition = one solve.
    Reps,
    /// Reads N and S; one repetition = S = `published` steps. Compiled runs
    /// scale S (backprop: 10^6 steps per repetition).
    ScaleSteps { published: u64, interp_steps: u64 },
    /// Reads N and S; one repetition = S = `published` steps. Compiled runs
    /// scale N at S = `published`.
    ScaleReps { published: u64, interp_steps: u64 },
}

struct Program {
    name: &'static str,
    kind: Kind,
    /// The hand-written baseline binary, if any: the same algorithm over
    /// the same data structures as the VLAD program.
    baseline: Option<&'static str>,
    /// A second hand-written reference, reported under the table: its
    /// binary and what it does differently from the baseline.
    reference: Option<(&'static str, &'static str)>,
}

const BACKPROP: Kind = Kind::ScaleSteps {
    published: 1_000_000,
    interp_steps: 200,
};
const PROB: Kind = Kind::ScaleReps {
    published: 1000,
    interp_steps: 20,
};

const PROGRAMS: &[Program] = &[
    Program {
        name: "particle-FF",
        kind: Kind::Reps,
        baseline: Some("particle-FF"),
        reference: None,
    },
    Program {
        name: "particle-FR",
        kind: Kind::Reps,
        baseline: None,
        reference: None,
    },
    Program {
        name: "particle-RF",
        kind: Kind::Reps,
        baseline: Some("particle-RF"),
        reference: None,
    },
    Program {
        name: "particle-RR",
        kind: Kind::Reps,
        baseline: Some("particle-RR"),
        reference: None,
    },
    Program {
        name: "saddle-FF",
        kind: Kind::Reps,
        baseline: Some("saddle-FF"),
        reference: None,
    },
    Program {
        name: "saddle-FR",
        kind: Kind::Reps,
        baseline: None,
        reference: None,
    },
    Program {
        name: "saddle-RF",
        kind: Kind::Reps,
        baseline: Some("saddle-RF"),
        reference: None,
    },
    Program {
        name: "saddle-RR",
        kind: Kind::Reps,
        baseline: Some("saddle-RR"),
        reference: None,
    },
    Program {
        name: "backprop-Fs",
        kind: BACKPROP,
        baseline: None,
        reference: None,
    },
    Program {
        name: "backprop-R",
        kind: BACKPROP,
        baseline: Some("backprop-R"),
        reference: None,
    },
    Program {
        name: "sumsq-R",
        kind: Kind::Reps,
        baseline: Some("sumsq-R"),
        reference: Some((
            "sumsq-R-vector",
            "the same adjoint over a vector of reals, the baseline of sumsq-vector-R",
        )),
    },
    Program {
        name: "probabilistic-lambda-calculus-F",
        kind: PROB,
        baseline: None,
        reference: None,
    },
    Program {
        name: "probabilistic-lambda-calculus-R",
        kind: PROB,
        baseline: None,
        reference: None,
    },
    Program {
        name: "probabilistic-prolog-F",
        kind: PROB,
        baseline: None,
        reference: None,
    },
    Program {
        name: "probabilistic-prolog-R",
        kind: PROB,
        baseline: None,
        reference: None,
    },
    // Vectors (issue 36).
    Program {
        name: "sumsq-vector-R",
        kind: Kind::Reps,
        baseline: Some("sumsq-R-vector"),
        reference: None,
    },
    Program {
        name: "lse-F",
        kind: Kind::Reps,
        baseline: Some("lse-F"),
        reference: None,
    },
    Program {
        name: "lse-R",
        kind: Kind::Reps,
        baseline: Some("lse-R"),
        reference: None,
    },
    Program {
        name: "matvec-R",
        kind: Kind::Reps,
        baseline: Some("matvec-R"),
        reference: None,
    },
];

/// A workload: the standard input, and how many published repetitions it
/// amounts to.
struct Workload {
    input: String,
    reps: f64,
}

impl Kind {
    /// The compiled/baseline workload at scale k.
    fn scaled(self, k: u64) -> Workload {
        match self {
            Kind::Reps => Workload {
                input: format!("{k}\n"),
                reps: k as f64,
            },
            Kind::ScaleSteps { published, .. } => {
                let s = 1000 * k;
                Workload {
                    input: format!("1 {s}\n"),
                    reps: s as f64 / published as f64,
                }
            }
            Kind::ScaleReps { published, .. } => Workload {
                input: format!("{k} {published}\n"),
                reps: k as f64,
            },
        }
    }

    /// The small workload of the interpreter (and of the op counts), and
    /// the same with N = 0 (start-up cost, subtracted).
    fn small(self) -> (Workload, String) {
        match self {
            Kind::Reps => (
                Workload {
                    input: "1\n".into(),
                    reps: 1.0,
                },
                "0\n".into(),
            ),
            Kind::ScaleSteps {
                published,
                interp_steps,
            }
            | Kind::ScaleReps {
                published,
                interp_steps,
            } => (
                Workload {
                    input: format!("1 {interp_steps}\n"),
                    reps: interp_steps as f64 / published as f64,
                },
                format!("0 {interp_steps}\n"),
            ),
        }
    }

    fn describe_small(self) -> String {
        match self {
            Kind::Reps => "N=1".into(),
            Kind::ScaleSteps { interp_steps, .. } | Kind::ScaleReps { interp_steps, .. } => {
                format!("N=1 S={interp_steps}")
            }
        }
    }

    fn describe_rep(self) -> &'static str {
        match self {
            Kind::Reps => "one solve",
            Kind::ScaleSteps { .. } => "10^6 steps",
            Kind::ScaleReps { .. } => "1000 steps",
        }
    }
}

/// The outcome of one run.
enum Run {
    Done {
        secs: f64,
        stdout: String,
        stderr: String,
    },
    TimedOut,
    Failed(String),
}

struct Ctx {
    root: PathBuf,
    work: PathBuf,
    stalingrad: PathBuf,
    time_bin: Option<PathBuf>,
    runs: usize,
    limit: f64,
}

impl Ctx {
    /// Runs `cmd` with `input` on stdin, killing it after `limit` seconds.
    fn run(&self, cmd: &mut Command, input: &str, limit: f64) -> Run {
        let limits = runner::Limits {
            time: Duration::from_secs_f64(limit),
            memory_kb: None,
        };
        let o = match runner::run(cmd, input.as_bytes(), &limits) {
            Ok(o) => o,
            Err(e) => return Run::Failed(format!("cannot start: {e}")),
        };
        if o.timed_out {
            return Run::TimedOut;
        }
        let stdout = String::from_utf8_lossy(&o.stdout).into_owned();
        let stderr = String::from_utf8_lossy(&o.stderr).into_owned();
        match o.status {
            Some(status) if status.success() => Run::Done {
                secs: o.elapsed.as_secs_f64(),
                stdout,
                stderr,
            },
            Some(status) => {
                let first = stderr
                    .lines()
                    .find(|l| !l.trim().is_empty())
                    .unwrap_or("")
                    .to_string();
                Run::Failed(format!("{status}: {first}"))
            }
            None => Run::Failed("could not be waited for".into()),
        }
    }

    fn build(&self, name: &str, out: &Path, count_ops: bool) -> Result<f64, String> {
        let mut cmd = Command::new(&self.stalingrad);
        cmd.arg("build");
        if count_ops {
            cmd.arg("--count-ops");
        }
        cmd.arg(self.root.join(format!("benches/programs/{name}.vlad")))
            .arg("-I")
            .arg(self.root.join("benches/programs"))
            .arg("-o")
            .arg(out);
        match self.run(&mut cmd, "", 600.0) {
            Run::Done { secs, .. } => Ok(secs),
            Run::TimedOut => Err("build timed out (600 s)".into()),
            Run::Failed(msg) => Err(msg),
        }
    }

    /// Median time per repetition of `exe`: calibrates the scale so that a
    /// run takes at least ~0.2 s, then times `runs` runs.
    fn time_native(&self, exe: &Path, kind: Kind, label: &str) -> Measure {
        let mut k = 1u64;
        let mut last;
        loop {
            let w = kind.scaled(k);
            match self.run(&mut Command::new(exe), &w.input, self.limit) {
                Run::Done { secs, .. } => last = secs,
                Run::TimedOut => return Measure::OverLimit,
                Run::Failed(m) => return Measure::Failed(m),
            }
            if last >= 0.2 || k >= 1 << 40 {
                break;
            }
            let factor = (0.3 / last.max(1e-4)).ceil() as u64;
            k *= factor.clamp(2, 1000);
        }
        let w = kind.scaled(k);
        let mut times = Vec::new();
        for _ in 0..self.runs {
            match self.run(&mut Command::new(exe), &w.input, self.limit) {
                Run::Done { secs, .. } => times.push(secs / w.reps),
                Run::TimedOut => return Measure::OverLimit,
                Run::Failed(m) => return Measure::Failed(m),
            }
        }
        let m = median(&mut times);
        eprintln!(
            "  {label}: {} per repetition (input {:?}, median of {})",
            fmt_time(m),
            w.input.trim(),
            times.len()
        );
        Measure::Time {
            secs: m,
            runs: times.len(),
            input: w.input.trim().to_string(),
        }
    }

    /// Max RSS in KiB of one run of `exe` at `input`, via /usr/bin/time.
    fn max_rss(&self, exe: &Path, input: &str) -> Option<u64> {
        let time_bin = self.time_bin.as_ref()?;
        let rss = self.work.join("rss");
        let mut cmd = Command::new(time_bin);
        cmd.arg("-f").arg("%M").arg("-o").arg(&rss).arg(exe);
        match self.run(&mut cmd, input, self.limit) {
            Run::Done { .. } => fs::read_to_string(&rss)
                .ok()?
                .trim()
                .lines()
                .last()?
                .parse()
                .ok(),
            _ => None,
        }
    }
}

enum Measure {
    Time {
        secs: f64,
        runs: usize,
        input: String,
    },
    OverLimit,
    Failed(String),
    NotApplicable,
}

impl Measure {
    fn secs(&self) -> Option<f64> {
        match self {
            Measure::Time { secs, .. } => Some(*secs),
            _ => None,
        }
    }
}

/// Everything measured for one program.
struct Row {
    name: &'static str,
    kind: Kind,
    build: Result<f64, String>,
    compiled: Measure,
    interp: Measure,
    baseline: Measure,
    /// The second reference (see [`Program::reference`]) and its time.
    reference: Option<(&'static str, &'static str, Measure)>,
    ops_interp: Option<u64>,
    ops_compiled: Option<u64>,
    rss_kib: Option<u64>,
    output: &'static str,
    limit: f64,
}

fn median(v: &mut [f64]) -> f64 {
    v.sort_by(|a, b| a.total_cmp(b));
    let n = v.len();
    if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    }
}

fn fmt_time(s: f64) -> String {
    let (v, unit) = if s < 1e-6 {
        (s * 1e9, "ns")
    } else if s < 1e-3 {
        (s * 1e6, "µs")
    } else if s < 1.0 {
        (s * 1e3, "ms")
    } else {
        (s, "s")
    };
    let digits = if v >= 100.0 {
        0
    } else if v >= 10.0 {
        1
    } else {
        2
    };
    format!("{v:.digits$} {unit}")
}

fn fmt_ratio(r: f64) -> String {
    if r >= 100.0 {
        format!("{r:.0}")
    } else if r >= 10.0 {
        format!("{r:.1}")
    } else {
        format!("{r:.2}")
    }
}

/// `arithmetic_total` from the JSON line of `--count-ops`.
fn arithmetic_total(stderr: &str) -> Option<u64> {
    let line = stderr
        .lines()
        .rev()
        .find(|l| l.contains("\"arithmetic_total\""))?;
    let rest = &line[line.find("\"arithmetic_total\":")? + "\"arithmetic_total\":".len()..];
    let digits: String = rest
        .trim_start()
        .chars()
        .take_while(|c| c.is_ascii_digit())
        .collect();
    digits.parse().ok()
}

fn sh(cmd: &str, args: &[&str]) -> Option<String> {
    let out = Command::new(cmd).args(args).output().ok()?;
    out.status
        .success()
        .then(|| String::from_utf8_lossy(&out.stdout).trim().to_string())
}

fn bench(ctx: &Ctx, p: &Program) -> Row {
    eprintln!("== {}", p.name);
    let exe = ctx.work.join(p.name);
    let exe_ops = ctx.work.join(format!("{}-count-ops", p.name));
    let (small, startup) = p.kind.small();

    // Compile time and the compiled run.
    let build = ctx.build(p.name, &exe, false);
    match &build {
        Ok(s) => eprintln!("  build: {s:.2} s"),
        Err(m) => eprintln!("  build failed: {m}"),
    }
    let (compiled, rss_kib) = if build.is_ok() {
        let m = ctx.time_native(&exe, p.kind, "compiled");
        let rss = match &m {
            Measure::Time { input, .. } => ctx.max_rss(&exe, &format!("{input}\n")),
            _ => None,
        };
        (m, rss)
    } else {
        (Measure::NotApplicable, None)
    };

    // Compiled op counts (and output) at the small workload.
    let mut ops_compiled = None;
    let mut compiled_small_out = None;
    if build.is_ok() && ctx.build(p.name, &exe_ops, true).is_ok() {
        if let Run::Done { stdout, stderr, .. } =
            ctx.run(&mut Command::new(&exe_ops), &small.input, ctx.limit)
        {
            ops_compiled = arithmetic_total(&stderr);
            compiled_small_out = Some(stdout);
        }
    }

    // The interpreter at the small workload, with the start-up (N = 0) cost
    // subtracted; runs stop early once their total passes the limit.
    let interp_cmd = || {
        let mut c = Command::new(&ctx.stalingrad);
        c.arg("run")
            .arg("--count-ops=json")
            .arg(ctx.root.join(format!("benches/programs/{}.vlad", p.name)))
            .arg("-I")
            .arg(ctx.root.join("benches/programs"));
        c
    };
    let t0 = match ctx.run(&mut interp_cmd(), &startup, ctx.limit) {
        Run::Done { secs, .. } => secs,
        _ => 0.0,
    };
    let mut times = Vec::new();
    let mut ops_interp = None;
    let mut interp_out = None;
    let mut interp = Measure::NotApplicable;
    let mut total = 0.0;
    for _ in 0..ctx.runs {
        match ctx.run(&mut interp_cmd(), &small.input, ctx.limit) {
            Run::Done {
                secs,
                stdout,
                stderr,
            } => {
                total += secs;
                times.push((secs - t0).max(0.0) / small.reps);
                ops_interp = arithmetic_total(&stderr);
                interp_out = Some(stdout);
            }
            Run::TimedOut => {
                if times.is_empty() {
                    interp = Measure::OverLimit;
                }
                break;
            }
            Run::Failed(m) => {
                interp = Measure::Failed(m);
                break;
            }
        }
        if total > ctx.limit {
            break;
        }
    }
    if !times.is_empty() {
        let n = times.len();
        let m = median(&mut times);
        eprintln!(
            "  interpreter: {} per repetition ({}, median of {n})",
            fmt_time(m),
            p.kind.describe_small()
        );
        interp = Measure::Time {
            secs: m,
            runs: n,
            input: small.input.trim().to_string(),
        };
    } else if let Measure::OverLimit = interp {
        eprintln!("  interpreter: > {} s", ctx.limit);
    }

    let baseline = match p.baseline {
        Some(b) => ctx.time_native(&ctx.root.join("target/release").join(b), p.kind, "baseline"),
        None => Measure::NotApplicable,
    };
    let reference = p.reference.map(|(exe, what)| {
        let exe_path = ctx.root.join("target/release").join(exe);
        (exe, what, ctx.time_native(&exe_path, p.kind, exe))
    });

    let output = match (&compiled_small_out, &interp_out) {
        (Some(a), Some(b)) if a == b => "same",
        (Some(_), Some(_)) => "DIFFERS",
        _ => "n/a",
    };
    if let (Some(a), Some(b)) = (ops_interp, ops_compiled) {
        eprintln!("  ops: interpreter {a}, compiled {b}");
    }
    Row {
        name: p.name,
        kind: p.kind,
        build,
        compiled,
        interp,
        baseline,
        reference,
        ops_interp,
        ops_compiled,
        rss_kib,
        output,
        limit: ctx.limit,
    }
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let mut quick = false;
    let mut only: Option<String> = None;
    let mut limit: Option<f64> = None;
    let mut it = args.iter();
    while let Some(a) = it.next() {
        match a.as_str() {
            "--quick" => quick = true,
            "--only" => only = it.next().cloned(),
            "--limit" => limit = it.next().and_then(|s| s.parse().ok()),
            "-h" | "--help" => {
                println!("usage: vlad-bench [--quick] [--only NAME] [--limit SECS]\n\n--only NAME measures the programs whose name contains NAME and prints the table without writing docs/.");
                return;
            }
            other => {
                eprintln!("unknown argument {other} (try --help)");
                std::process::exit(2);
            }
        }
    }
    let root = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../..")
        .canonicalize()
        .expect("workspace root");
    let stalingrad = root.join("target/release/stalingrad");
    if !stalingrad.exists() {
        eprintln!(
            "{} not found: run `cargo build --release -p stalingrad` first",
            stalingrad.display()
        );
        std::process::exit(1);
    }
    // The baselines: built here (std only, a few seconds).
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let ok = Command::new(&cargo)
        .args(["build", "--release", "-q", "-p", "baselines"])
        .current_dir(&root)
        .status()
        .is_ok_and(|s| s.success());
    if !ok {
        eprintln!("warning: building the baselines failed; they will be reported as failed");
    }
    let work = std::env::temp_dir().join(format!("vlad-bench-{}", std::process::id()));
    fs::create_dir_all(&work).expect("work directory");
    let time_bin = Path::new("/usr/bin/time")
        .exists()
        .then(|| PathBuf::from("/usr/bin/time"));
    let ctx = Ctx {
        root: root.clone(),
        work: work.clone(),
        stalingrad,
        time_bin,
        runs: if quick { 3 } else { 5 },
        limit: limit.unwrap_or(if quick { 60.0 } else { 300.0 }),
    };
    let start = Instant::now();
    let rows: Vec<Row> = PROGRAMS
        .iter()
        .filter(|p| only.as_ref().is_none_or(|o| p.name.contains(o.as_str())))
        .map(|p| bench(&ctx, p))
        .collect();
    let scaled: Vec<scaling::Scaled> = scaling::CASES
        .iter()
        .filter(|c| only.as_ref().is_none_or(|o| c.name.contains(o.as_str())))
        .map(|c| scaling::measure(&ctx, c))
        .collect();
    let _ = fs::remove_dir_all(&work);
    let md = markdown(
        &rows,
        &scaling::markdown(&scaled),
        &ctx,
        quick,
        start.elapsed().as_secs_f64(),
    );
    if only.is_some() {
        println!("{md}");
        return;
    }
    fs::write(root.join("docs/benchmarks.md"), &md).expect("writing docs/benchmarks.md");
    fs::write(root.join("docs/benchmarks.svg"), svg(&rows)).expect("writing docs/benchmarks.svg");
    println!("{md}");
    eprintln!("wrote docs/benchmarks.md and docs/benchmarks.svg");
}
