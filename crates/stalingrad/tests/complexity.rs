//! Operation counts (docs/reference.md) of the programs of `tests/complexity/`,
//! with n on standard input, in both modes: `stalingrad run
//! --count-ops=json FILE`, and the binary of `stalingrad build --count-ops
//! FILE`. The counters are the one JSON line printed on standard error
//! after the run:
//! `{"arithmetic":{...},"arithmetic_total":N,"comparisons":N,"zero":N,"plus":N,"transform":N}`.
//! The interpreter counts a step of `zero`, `plus` or a transformation per
//! value node it walks, compiled code per union cell (values of a shape
//! known at compile time cost it nothing): the two are compared by how
//! they grow with n, each against itself.
//!
//! - The forward phase of reverse mode does exactly the primal arithmetic.
//! - A reverse-mode gradient costs a constant factor more arithmetic than
//!   the primal, the same factor for every n, and the structural AD work
//!   (`zero` + `plus` + `transform`) it needs grows linearly in n.
//! - `zero`, `plus` and `*j` preserve sharing: on an n-deep chain of shared
//!   pairs they take O(n) steps, not O(2^n).

mod common;

use common::*;
use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::atomic::{AtomicUsize, Ordering};

/// How a program is run.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
enum Mode {
    Interpreted,
    Compiled,
}

const MODES: [Mode; 2] = [Mode::Interpreted, Mode::Compiled];

/// The counters of one run.
#[derive(Debug, Clone, Copy, Default)]
struct Counts {
    arithmetic_total: u64,
    zero: u64,
    plus: u64,
    transform: u64,
}

impl Counts {
    fn structural(&self) -> u64 {
        self.zero + self.plus + self.transform
    }
}

/// The number after `"key":` in a JSON line (integers; a float is truncated).
fn json_number(line: &str, key: &str) -> Option<u64> {
    let needle = format!("\"{key}\"");
    let start = line.find(&needle)? + needle.len();
    let rest = line[start..].trim_start().strip_prefix(':')?.trim_start();
    let end = rest
        .find(|c: char| !(c.is_ascii_digit() || matches!(c, '.' | 'e' | 'E' | '+' | '-')))
        .unwrap_or(rest.len());
    let number: f64 = rest[..end].parse().ok()?;
    Some(number as u64)
}

/// Parses the counters line from standard error.
fn parse_counts(stderr: &str) -> Result<Counts, String> {
    let line = stderr
        .lines()
        .rev()
        .find(|l| l.contains("\"arithmetic_total\""))
        .ok_or("no line with \"arithmetic_total\" on standard error")?;
    let get = |key: &str| json_number(line, key).ok_or(format!("no number for {key:?} in {line}"));
    Ok(Counts {
        arithmetic_total: get("arithmetic_total")?,
        zero: get("zero")?,
        plus: get("plus")?,
        transform: get("transform")?,
    })
}

/// Runs the programs of `tests/complexity/`, building each at most once.
#[derive(Default)]
struct Runner {
    /// Binaries built with counters (`None`: the build failed).
    built: HashMap<String, Option<PathBuf>>,
    /// Names this runner's binaries (0: not yet given).
    id: usize,
    /// Where its programs are, under `tests/` (`complexity` when empty).
    dir: &'static str,
    /// Whether a build refused as "not compiled yet" is skipped rather
    /// than failed (vector programs, until `build` compiles vectors).
    accept_not_yet: bool,
    /// The programs `build` refused as not compiled yet.
    not_yet: Vec<String>,
}

impl Drop for Runner {
    fn drop(&mut self) {
        for exe in self.built.values().flatten() {
            let _ = std::fs::remove_file(exe);
        }
    }
}

impl Runner {
    fn path(&self, program: &str) -> PathBuf {
        let dir = if self.dir.is_empty() {
            "complexity"
        } else {
            self.dir
        };
        repo_root().join("tests").join(dir).join(program)
    }

    /// The binary of `program` built with counters.
    fn binary(&mut self, program: &str, failures: &mut Failures) -> Option<PathBuf> {
        if let Some(exe) = self.built.get(program) {
            return exe.clone();
        }
        let path = self.path(program);
        // Tests run side by side: each runner has binaries of its own.
        static RUNNERS: AtomicUsize = AtomicUsize::new(0);
        if self.id == 0 {
            self.id = RUNNERS.fetch_add(1, Ordering::Relaxed) + 1;
        }
        let exe = std::env::temp_dir().join(format!(
            "stalingrad-complexity-{}-{}-{}",
            std::process::id(),
            self.id,
            program.trim_end_matches(".vlad")
        ));
        let args = vec![
            "build".to_string(),
            "--count-ops".to_string(),
            rel(&path),
            "-o".to_string(),
            exe.to_string_lossy().into_owned(),
        ];
        let build = run_stalingrad(&args, None);
        let exe = if build.success() {
            Some(exe)
        } else if self.accept_not_yet && build.stderr.contains("not compiled yet") {
            println!("skip {program}: `build` refuses it as not compiled yet");
            self.not_yet.push(program.to_string());
            None
        } else {
            failures.add(format!("{program}: build failed\n{}", build.transcript()));
            None
        };
        self.built.insert(program.to_string(), exe.clone());
        exe
    }

    /// Runs one program with n on standard input, checks its output
    /// (`None`: whatever the other mode prints), and returns its counters.
    fn measure(
        &mut self,
        mode: Mode,
        program: &str,
        n: u32,
        expected_stdout: Option<&str>,
        failures: &mut Failures,
    ) -> Option<(Counts, String)> {
        self.measure_input(mode, program, &format!("{n}\n"), expected_stdout, failures)
    }

    /// [`Runner::measure`] with any standard input.
    fn measure_input(
        &mut self,
        mode: Mode,
        program: &str,
        input: &str,
        expected_stdout: Option<&str>,
        failures: &mut Failures,
    ) -> Option<(Counts, String)> {
        let n = input.split_whitespace().collect::<Vec<_>>().join(" ");
        let path = self.path(program);
        let run = match mode {
            Mode::Interpreted => {
                let args = vec![
                    "run".to_string(),
                    "--count-ops=json".to_string(),
                    rel(&path),
                ];
                run_stalingrad(&args, Some(input.as_bytes()))
            }
            Mode::Compiled => {
                let exe = self.binary(program, failures)?;
                run_program(&exe, &[], Some(input.as_bytes()))
            }
        };
        if !run.success() {
            failures.add(format!(
                "{program} ({mode:?}) with n = {n}: run failed ({})\n{}",
                run.describe_status(),
                run.transcript()
            ));
            return None;
        }
        if let Some(expected) = expected_stdout {
            if run.stdout.trim_end() != expected {
                failures.add(format!(
                    "{program} ({mode:?}) with n = {n}: expected output {expected:?}, got {:?}",
                    run.stdout
                ));
            }
        }
        match parse_counts(&run.stderr) {
            Ok(c) => {
                println!(
                    "{program:24} {mode:11?} n = {n:>5}: arithmetic {:8}  zero {:6}  plus {:6}  transform {:6}  ({:?})",
                    c.arithmetic_total, c.zero, c.plus, c.transform, run.elapsed
                );
                Some((c, run.stdout))
            }
            Err(e) => {
                failures.add(format!(
                    "{program} ({mode:?}) with n = {n}: {e}\n{}",
                    run.transcript()
                ));
                None
            }
        }
    }
}

/// Whether a and b are within `tolerance` (relative) of each other.
fn close(a: f64, b: f64, tolerance: f64) -> bool {
    (a - b).abs() <= tolerance * a.abs().max(b.abs())
}

/// A chain program, its expected output, the counter it exercises, and how
/// to read that counter.
type ChainCase = (&'static str, &'static str, &'static str, fn(&Counts) -> u64);

const SIZES: [u32; 3] = [10, 100, 1000];

/// Checks one family (`NAME-primal`, `NAME-forward`, `NAME-gradient`).
fn check_family(
    runner: &mut Runner,
    mode: Mode,
    family: &str,
    primal_out: [&str; 3],
    gradient_out: &str,
    failures: &mut Failures,
) -> usize {
    let mut checks = 0;
    let mut primal = Vec::new();
    let mut gradient = Vec::new();
    for (i, &n) in SIZES.iter().enumerate() {
        let mut measure = |program: String, out: &str| {
            runner
                .measure(mode, &program, n, Some(out), failures)
                .map(|(c, _)| c)
        };
        let p = measure(format!("{family}-primal.vlad"), primal_out[i]);
        let f = measure(format!("{family}-forward.vlad"), primal_out[i]);
        let g = measure(format!("{family}-gradient.vlad"), gradient_out);
        checks += 3;
        if let (Some(p), Some(f)) = (p, f) {
            checks += 1;
            if p.arithmetic_total != f.arithmetic_total {
                failures.add(format!(
                    "{family} ({mode:?}), n = {n}: forward phase does {} arithmetic operations, \
                     the primal {}; they must be equal",
                    f.arithmetic_total, p.arithmetic_total
                ));
            } else {
                println!(
                    "ok   {family} ({mode:?}), n = {n}: forward phase arithmetic = primal arithmetic = {}",
                    p.arithmetic_total
                );
            }
        }
        if let (Some(p), Some(g)) = (p, g) {
            primal.push(p);
            gradient.push(g);
        }
    }
    if primal.len() != SIZES.len() {
        return checks;
    }
    // The gradient/primal ratio must not depend on n. Small constant
    // overheads weigh most at n = 10, so the totals are compared at the two
    // larger sizes and the increments between consecutive sizes everywhere.
    let ratio = |i: usize| gradient[i].arithmetic_total as f64 / primal[i].arithmetic_total as f64;
    let marginal = |i: usize| {
        (gradient[i + 1].arithmetic_total as f64 - gradient[i].arithmetic_total as f64)
            / (primal[i + 1].arithmetic_total as f64 - primal[i].arithmetic_total as f64)
    };
    let (r10, r100, r1000) = (ratio(0), ratio(1), ratio(2));
    let (m1, m2) = (marginal(0), marginal(1));
    println!(
        "{family} ({mode:?}): gradient/primal arithmetic ratio {r10:.3} (n=10), {r100:.3} (n=100), \
         {r1000:.3} (n=1000); per added element {m1:.3} (10..100), {m2:.3} (100..1000)"
    );
    checks += 2;
    if !close(r100, r1000, 0.10) {
        failures.add(format!(
            "{family} ({mode:?}): gradient/primal ratio changes with n: {r100:.3} at n = 100, \
             {r1000:.3} at n = 1000 (more than 10% apart)"
        ));
    }
    if !close(m1, m2, 0.10) || !m1.is_finite() {
        failures.add(format!(
            "{family} ({mode:?}): gradient arithmetic per added element relative to the primal's \
             changes with n: {m1:.3} from 10 to 100, {m2:.3} from 100 to 1000"
        ));
    }
    // The structural work of the gradient must be linear in n as well:
    // from 100 to 1000 it grows 10 times as much as from 10 to 100.
    checks += 1;
    let s: Vec<f64> = gradient.iter().map(|c| c.structural() as f64).collect();
    let (d1, d2) = (s[1] - s[0], s[2] - s[1]);
    let linear = if d1 == 0.0 {
        d2 == 0.0
    } else {
        close(d2 / d1, 10.0, 0.10)
    };
    println!(
        "{family} ({mode:?}): gradient zero+plus+transform steps {} / {} / {} for n = 10 / 100 / 1000",
        s[0], s[1], s[2]
    );
    if !linear {
        failures.add(format!(
            "{family} ({mode:?}): the gradient's zero+plus+transform steps are not linear in n: \
             {} / {} / {} for n = 10 / 100 / 1000",
            s[0], s[1], s[2]
        ));
    }
    checks
}

#[test]
fn reverse_mode_has_the_complexity_of_the_primal() {
    let mut failures = Failures::default();
    let mut runner = Runner::default();
    let mut checks = 0;
    for mode in MODES {
        checks += check_family(
            &mut runner,
            mode,
            "sumsq",
            ["332.5", "333325", "333333250"],
            "1",
            &mut failures,
        );
        checks += check_family(
            &mut runner,
            mode,
            "dot",
            ["357.5", "335825", "333583250"],
            "(1 0.5)",
            &mut failures,
        );
    }
    failures.finish("reverse-mode complexity", checks);
}

#[test]
fn ad_operations_preserve_sharing() {
    const N: [u32; 3] = [10, 20, 40];
    const SLACK: u64 = 50;
    let mut failures = Failures::default();
    let mut runner = Runner::default();
    let mut checks = 0;
    let cases: [ChainCase; 5] = [
        ("chain-zero.vlad", "0", "zero", |c| c.zero),
        ("chain-zero-dropped.vlad", "0", "zero", |c| c.zero),
        ("chain-triple.vlad", "1", "zero", |c| c.zero),
        ("chain-plus.vlad", "2", "plus", |c| c.plus),
        ("chain-transform.vlad", "1", "transform", |c| c.transform),
    ];
    for mode in MODES {
        for (program, out, key, get) in cases {
            let counts: Vec<Option<Counts>> = N
                .iter()
                .map(|&n| {
                    runner
                        .measure(mode, program, n, Some(out), &mut failures)
                        .map(|(c, _)| c)
                })
                .collect();
            checks += 3;
            let Some(counts) = counts.into_iter().collect::<Option<Vec<Counts>>>() else {
                continue;
            };
            let c: Vec<u64> = counts.iter().map(get).collect();
            checks += 2;
            let (d1, d2) = (c[1] as f64 - c[0] as f64, c[2] as f64 - c[1] as f64);
            let linear = if d1 == 0.0 {
                d2 == 0.0
            } else {
                close(d2, 2.0 * d1, 0.10)
            };
            if !linear {
                failures.add(format!(
                    "{program} ({mode:?}): `{key}` counts {} / {} / {} for n = 10 / 20 / 40 do \
                     not grow linearly (count(40) - count(20) should be 2 (count(20) - count(10)))",
                    c[0], c[1], c[2]
                ));
            }
            if c[2] >= 10 * 40 + SLACK {
                failures.add(format!(
                    "{program} ({mode:?}): `{key}` count {} for n = 40 is not below 10 n + {SLACK}",
                    c[2]
                ));
            }
            if linear && c[2] < 10 * 40 + SLACK {
                println!(
                    "ok   {program} ({mode:?}): `{key}` steps {} / {} / {} for n = 10 / 20 / 40: linear",
                    c[0], c[1], c[2]
                );
            }
        }
    }
    failures.finish("sharing in zero, plus and *j", checks);
}

#[test]
fn json_counter_line_parses() {
    let line = r#"{"arithmetic":{"+":3,"-":0,"*":2,"/":0,"sqrt":0,"exp":0,"log":0,"sin":0,"cos":0,"atan":0},"comparisons":1,"zero":4,"plus":5,"transform":6,"arithmetic_total":5}"#;
    let c = parse_counts(&format!("noise\n{line}\n")).expect("parses");
    assert_eq!(
        (c.arithmetic_total, c.zero, c.plus, c.transform),
        (5, 4, 5, 6)
    );
    assert_eq!(json_number(r#"{"a" : 12 }"#, "a"), Some(12));
    assert_eq!(json_number(r#"{"a":1}"#, "b"), None);
}

/// Every program here builds (the analysis and lowering treat a shared
/// structure as a DAG, not a tree: the chains once never finished
/// building), and its binary prints what `run` prints, at a small n and
/// at one where a walk of the chains as trees would never end.
#[test]
fn complexity_programs_build_and_agree_with_run() {
    let dir = repo_root().join("tests/complexity");
    let mut failures = Failures::default();
    let mut runner = Runner::default();
    let files = vlad_files(&dir);
    for path in &files {
        let name = rel(path);
        let program = path.file_name().unwrap_or_default().to_string_lossy();
        for n in [12, 60] {
            let interp = runner.measure(Mode::Interpreted, &program, n, None, &mut failures);
            let native = runner.measure(Mode::Compiled, &program, n, None, &mut failures);
            if let (Some((_, a)), Some((_, b))) = (interp, native) {
                if a != b {
                    failures.add(format!(
                        "{name} with n = {n}: compiled prints {b:?}, run prints {a:?}"
                    ));
                }
            }
        }
    }
    failures.finish("tests/complexity programs built", files.len());
}

/// A measure of a run, and its name.
type Measure = (&'static str, fn(&Counts) -> u64);

/// The sizes and expected outputs of a `grow-*` program, from its
/// `;; n: N ===> OUTPUT` header lines.
fn grow_cases(text: &str) -> Result<Vec<(u32, String)>, String> {
    header(text, "n")
        .iter()
        .map(|line| {
            let (n, out) = line
                .split_once("===>")
                .ok_or(format!("`;; n:` line without `===>`: {line:?}"))?;
            let n = n
                .trim()
                .parse()
                .map_err(|_| format!("`;; n:` line with a size that is not a count: {line:?}"))?;
            Ok((n, out.trim().to_string()))
        })
        .collect()
}

/// Whether counts at three increasing sizes grow linearly: the increment
/// from the second size to the third is the increment from the first to
/// the second scaled by the sizes' increments (within 10%).
fn grows_linearly(n: &[u32], c: &[u64]) -> bool {
    let (d1, d2) = (c[1] as f64 - c[0] as f64, c[2] as f64 - c[1] as f64);
    let scale = (n[2] - n[1]) as f64 / (n[1] - n[0]) as f64;
    if d1 == 0.0 {
        d2 == 0.0
    } else {
        close(d2, scale * d1, 0.10)
    }
}

/// The `grow-*` programs (lists of pairs, `map` with closures, trees,
/// lists of closures, Hessian-vector products by forward over reverse and
/// reverse over reverse, reverse over reverse through a loop, a sum of
/// squares by non-tail recursion over a list built at run time): in both
/// modes, at each size of the header, they print the expected output, and
/// their structural AD work (`zero` + `plus` + `transform`) and their
/// arithmetic grow linearly in n.
#[test]
fn ad_on_data_of_run_time_size_is_linear_in_both_modes() {
    let dir = repo_root().join("tests/complexity");
    let mut failures = Failures::default();
    let mut runner = Runner::default();
    let mut checks = 0;
    let files: Vec<PathBuf> = vlad_files(&dir)
        .into_iter()
        .filter(|p| {
            p.file_name()
                .is_some_and(|f| f.to_string_lossy().starts_with("grow-"))
        })
        .collect();
    for path in &files {
        let program = path.file_name().unwrap_or_default().to_string_lossy();
        let text = std::fs::read_to_string(path).unwrap_or_default();
        let cases = match grow_cases(&text) {
            Ok(c) if c.len() == 3 && c[0].0 < c[1].0 && c[1].0 < c[2].0 => c,
            Ok(_) => {
                failures.add(format!(
                    "{program}: needs three `;; n: N ===> OUTPUT` lines with increasing N"
                ));
                continue;
            }
            Err(e) => {
                failures.add(format!("{program}: {e}"));
                continue;
            }
        };
        let sizes: Vec<u32> = cases.iter().map(|(n, _)| *n).collect();
        for mode in MODES {
            let counts: Option<Vec<Counts>> = cases
                .iter()
                .map(|(n, out)| {
                    runner
                        .measure(mode, &program, *n, Some(out), &mut failures)
                        .map(|(c, _)| c)
                })
                .collect();
            checks += 3;
            let Some(counts) = counts else { continue };
            checks += check_linear(&program, mode, &sizes, &counts, &mut failures);
        }
    }
    if files.len() < 8 {
        failures.add(format!(
            "expected the eight grow-* programs in tests/complexity, found {}",
            files.len()
        ));
    }
    failures.finish("AD on data of run-time size", checks);
}

/// Checks that the structural AD work and the arithmetic of `program` (run
/// in `mode`) at three sizes grow linearly; the number of checks made.
fn check_linear(
    program: &str,
    mode: Mode,
    sizes: &[u32],
    counts: &[Counts],
    failures: &mut Failures,
) -> usize {
    let measures: [Measure; 2] = [
        ("zero+plus+transform steps", Counts::structural),
        ("arithmetic operations", |c| c.arithmetic_total),
    ];
    for (what, get) in measures {
        let c: Vec<u64> = counts.iter().map(get).collect();
        if grows_linearly(sizes, &c) {
            println!(
                "ok   {program} ({mode:?}): {what} {} / {} / {} for n = {} / {} / {}: linear",
                c[0], c[1], c[2], sizes[0], sizes[1], sizes[2]
            );
        } else {
            failures.add(format!(
                "{program} ({mode:?}): {what} {} / {} / {} for n = {} / {} / {} do not \
                 grow linearly",
                c[0], c[1], c[2], sizes[0], sizes[1], sizes[2]
            ));
        }
    }
    measures.len()
}

#[path = "complexity/vectors.rs"]
mod vectors;

#[test]
fn grow_headers_parse() {
    let cases = grow_cases(";; n: 10 ===> (1 2)\n;; n: 20 ===> 3\n(car 1)").expect("parses");
    assert_eq!(
        cases,
        vec![(10, "(1 2)".to_string()), (20, "3".to_string())]
    );
    assert!(grow_cases(";; n: ten ===> 1").is_err());
    assert!(grow_cases(";; n: 10 1").is_err());
    assert!(grows_linearly(&[100, 200, 400], &[10, 20, 40]));
    assert!(grows_linearly(&[100, 200, 400], &[5, 5, 5]));
    assert!(!grows_linearly(&[100, 200, 400], &[10, 40, 160]));
}

/// A fixed-point iteration with a custom derivative (implicit
/// differentiation, `tests/complexity/custom-fixed-point.vlad`): its
/// reverse pass costs the same whatever the number of iterations, which
/// grows as the tolerance shrinks; the same iteration differentiated
/// through every step costs more with more steps.
#[test]
fn custom_fixed_point_reverse_pass_is_independent_of_iterations() {
    let mut failures = Failures::default();
    let mut runner = Runner::default();
    runner.dir = "custom";
    let program = "fixed-point.vlad";
    let mut checks = 0;
    for mode in MODES {
        let mut measure = |what: u32, tolerance: &str| {
            let input = format!("{what} {tolerance} 2\n");
            runner
                .measure_input(mode, program, &input, None, &mut failures)
                .map(|(c, _)| c)
        };
        let (coarse, fine) = ("1e-2", "1e-14");
        let runs = (
            measure(0, coarse),
            measure(0, fine),
            measure(1, coarse),
            measure(1, fine),
            measure(2, coarse),
            measure(2, fine),
        );
        let (Some(p1), Some(p2), Some(c1), Some(c2), Some(t1), Some(t2)) = runs else {
            continue;
        };
        checks += 1;
        // What more iterations add to each run. Compiled code may fold
        // some primal operations differently inside the derivative, so
        // the reverse pass is judged by its growth, not its size: it must
        // add nothing beyond the primal's growth.
        let growth = |a: Counts, b: Counts| {
            (
                b.arithmetic_total as i64 - a.arithmetic_total as i64,
                b.structural() as i64 - a.structural() as i64,
            )
        };
        let (primal, custom, through) = (growth(p1, p2), growth(c1, c2), growth(t1, t2));
        println!(
            "{mode:?}: from tolerance {coarse} to {fine}, (arithmetic, structural) grows by \
             {primal:?} in the primal, {custom:?} with the custom derivative, {through:?} \
             differentiated through every iteration"
        );
        if primal.0 <= 0 {
            failures.add(format!(
                "{mode:?}: the primal iteration should take more steps at tolerance {fine} \
                 than at {coarse}: its operations grow by {primal:?}"
            ));
        }
        if custom.0 > primal.0 || custom.1 > primal.1 {
            failures.add(format!(
                "{mode:?}: with the custom derivative the gradient's operations grow by \
                 {custom:?} when the primal's grow by {primal:?}: the reverse pass must not \
                 depend on the number of iterations"
            ));
        }
        if through.0 <= primal.0 {
            failures.add(format!(
                "{mode:?}: differentiated through every iteration, the gradient's operations \
                 should grow faster than the primal's: {through:?} against {primal:?}"
            ));
        }
    }
    failures.finish("custom fixed point in both modes", checks);
}
