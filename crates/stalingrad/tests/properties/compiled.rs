//! Property (1): compiled programs print what the interpreter prints;
//! unbounded nesting of AD is refused quickly.

use super::*;
use process::*;

/// Compiled programs behave like the interpreter: a random whole program
/// from [`vladgen::gen_io_program`] (`f` at two points, its gradients by
/// `gradient-F` and `gradient-R`, derivatives of generated procedures,
/// lists, pairs, nested pairs, booleans, `write-real`), built with
/// `stalingrad build` and run, prints the same standard output and standard
/// error and exits with the same status as under `stalingrad run`.
///
/// The flow analysis folds every constant it sees, so the inputs are
/// hidden: even cases read them with `(read-real)` from standard input,
/// odd cases write them as `(real LITERAL)`.
///
/// Three cases in four generate `if`/`cond` (`Options::branches`), which
/// with inputs hidden makes values of run-time shape (reverse mode through
/// a conditional on run-time data). Every case must compile: a program
/// rejected as "not compiled yet" is a failure too.
#[test]
fn compiled_programs_agree_with_the_interpreter() {
    let start = Instant::now();
    let list = cases(240);
    let tally = Tally::merge(on_two_workers(
        "compiled",
        &list,
        |case, dir, tally: &mut Tally| {
            let mut built = Duration::ZERO;
            let outcome = compile_and_compare(case, dir, &mut built);
            tally.add(case, built, outcome);
        },
    ));
    let summary = tally.summary(list.len(), "", start);
    let mut failures = tally.failures;
    if tally.not_yet > 0 {
        failures.add(format!(
            "{} of {} cases were rejected as not compiled yet",
            tally.not_yet,
            list.len()
        ));
    }
    failures.finish("compiled-vs-interpreted", &summary);
}

/// The longest a generated program may take to build, timed alone (issue
/// 34): generated programs are 20 to 60 lines.
const BUILD_LIMIT: Duration = Duration::from_secs(5);

/// What the workers of a compiled-versus-interpreted property found.
#[derive(Default)]
struct Tally {
    failures: Failures,
    compared: usize,
    not_yet: usize,
    /// The slowest build and its case.
    slowest: Option<(Duration, usize)>,
}

impl Tally {
    fn add(&mut self, case: usize, built: Duration, outcome: Result<bool, String>) {
        match outcome {
            Ok(true) => self.compared += 1,
            Ok(false) => self.not_yet += 1,
            Err(e) => self.failures.add(e),
        }
        if self.slowest.is_none_or(|(t, _)| built > t) {
            self.slowest = Some((built, case));
        }
    }

    fn merge(parts: Vec<Tally>) -> Tally {
        let mut all = Tally::default();
        for part in parts {
            all.failures.0.extend(part.failures.0);
            all.compared += part.compared;
            all.not_yet += part.not_yet;
            if let Some((t, case)) = part.slowest {
                if all.slowest.is_none_or(|(s, _)| t > s) {
                    all.slowest = Some((t, case));
                }
            }
        }
        all
    }

    fn summary(&self, cases: usize, not_yet_note: &str, start: Instant) -> String {
        let slowest = match self.slowest {
            Some((t, case)) => format!("the slowest build {t:.2?} (case {case})"),
            None => "no build".to_string(),
        };
        format!(
            "{cases} cases: {} compiled and compared with `run`, {} rejected as not \
             compiled yet{not_yet_note}, {} failed; {slowest}; {:.1?}",
            self.compared,
            self.not_yet,
            cases - self.compared - self.not_yet,
            start.elapsed()
        )
    }
}

/// Case `case` of [`compiled_programs_agree_with_the_interpreter`]:
/// `Ok(true)` when compiled and compared equal, `Ok(false)` when rejected
/// as not compiled yet.
fn compile_and_compare(case: usize, dir: &Path, built: &mut Duration) -> Result<bool, String> {
    let mut rng = case_rng(1, case);
    let inputs = if case.is_multiple_of(2) {
        Inputs::Stdin
    } else {
        Inputs::RealLiterals
    };
    let opts = Options {
        depth: 3 + rng.below(2) as u32,
        branches: !case.is_multiple_of(4),
        ..Options::default()
    };
    let derivatives = rng.chance(0.5);
    let prog = gen_io_program(&mut rng, inputs, &opts, derivatives);
    let label = format!("compiled-vs-interpreted case {case} ({})", reproduce(case));
    compare_with_run(&label, &prog.text, &prog.stdin, None, dir, built)
}

/// Compiled vector programs behave like the interpreter, as in
/// [`compiled_programs_agree_with_the_interpreter`]: three cases in four
/// are programs from [`vladgen::gen_io_program`] with
/// [`vladgen::Options::vectors`] (`f` of a vector, vectors, vectors of
/// vectors and gradients with respect to vectors printed), one in four a
/// program that fails on a vector ([`vladgen::vector_error_program`]),
/// which `run` must end with its message. Until `build` compiles vectors,
/// it may refuse them as "not compiled yet": such cases are counted, not
/// failed, and are compared as soon as `build` makes an executable.
#[test]
fn compiled_vector_programs_agree_with_the_interpreter() {
    let start = Instant::now();
    let list = cases(80);
    let tally = Tally::merge(on_two_workers(
        "compiled-vectors",
        &list,
        |case, dir, tally: &mut Tally| {
            let mut rng = case_rng(10, case);
            let label = format!(
                "compiled-vs-interpreted vector case {case} ({})",
                reproduce(case)
            );
            let mut built = Duration::ZERO;
            let outcome = if case % 4 == 3 {
                let prog = vladgen::vector_error_program(&mut rng);
                compare_with_run(&label, &prog.text, "", Some(&prog.message), dir, &mut built)
            } else {
                let inputs = if case.is_multiple_of(2) {
                    Inputs::Stdin
                } else {
                    Inputs::RealLiterals
                };
                let opts = Options {
                    depth: 3,
                    vectors: true,
                    ..Options::default()
                };
                let derivatives = rng.chance(0.5);
                let prog = gen_io_program(&mut rng, inputs, &opts, derivatives);
                compare_with_run(&label, &prog.text, &prog.stdin, None, dir, &mut built)
            };
            tally.add(case, built, outcome);
        },
    ));
    let summary = tally.summary(
        list.len(),
        " (accepted for vectors until they compile)",
        start,
    );
    tally
        .failures
        .finish("compiled-vs-interpreted vectors", &summary);
}

/// The part of the first line of `stderr` from `error: ` on: the message
/// without its position.
fn error_message(stderr: &str) -> Option<&str> {
    let first = stderr.lines().next()?;
    first.find("error: ").map(|i| &first[i..])
}

/// Runs `text` (with `stdin`) under `stalingrad run`, builds it and runs
/// the executable: `Ok(true)` when both print the same standard output and
/// standard error and exit alike, `Ok(false)` when `build` refuses the
/// program as not compiled yet. With `error`, `run` must fail with that
/// message, and the executable may place it differently (compiled code
/// does not track the call chain the interpreter places errors in library
/// code by; see `robustness::known_difference`). `built` is set to the
/// build's time; a build over [`BUILD_LIMIT`] is timed again alone, and
/// fails when it is still over.
fn compare_with_run(
    label: &str,
    text: &str,
    stdin: &str,
    error: Option<&str>,
    dir: &Path,
    built: &mut Duration,
) -> Result<bool, String> {
    let ctx =
        |what: &str| format!("{label}: {what}\n--- program ---\n{text}\n--- stdin ---\n{stdin}");
    std::fs::write(dir.join("prog.vlad"), text).expect("write program");
    let exe = dir.join("prog");
    let _ = std::fs::remove_file(&exe);
    let stdin = stdin.as_bytes();
    let args = ["build", "prog.vlad", "-o", "prog"];
    let mut build = run_binary(&args, dir);
    // Also a build stopped at the time limit: the other workers' and the
    // machine's load may have slowed it that far.
    if build.elapsed > BUILD_LIMIT {
        let alone = run_binary_alone(&args, dir);
        if alone.elapsed < build.elapsed || build.status.is_none() {
            build = alone;
        }
    }
    *built = build.elapsed;
    let run = run_process(
        Path::new(env!("CARGO_BIN_EXE_stalingrad")),
        &["run", "prog.vlad"],
        dir,
        stdin,
    );
    if let Some(message) = error {
        let expected = format!("error: {message}");
        if run.success()
            || run.status.and_then(|s| s.code()) != Some(1)
            || error_message(&run.stderr) != Some(expected.as_str())
        {
            return Err(ctx(&format!(
                "`stalingrad run` should fail with {expected:?} ({}):\n{}{}",
                run.describe_status(),
                run.stdout,
                run.stderr
            )));
        }
    } else if !run.success() {
        return Err(ctx(&format!(
            "`stalingrad run` failed ({}):\n{}{}",
            run.describe_status(),
            run.stdout,
            run.stderr
        )));
    }
    if !build.success() {
        if build.status.is_some() && build.stderr.contains("not compiled yet") {
            return Ok(false);
        }
        return Err(ctx(&format!(
            "`stalingrad build` failed ({}):\n{}",
            build.describe_status(),
            build.stderr
        )));
    }
    if build.elapsed > BUILD_LIMIT {
        return Err(ctx(&format!(
            "`stalingrad build` took {:.2?} alone, over the limit of {BUILD_LIMIT:?}",
            build.elapsed
        )));
    }
    let native = run_process(&exe, &[], dir, stdin);
    let same_stderr = match error {
        None => native.stderr == run.stderr,
        Some(_) => error_message(&native.stderr) == error_message(&run.stderr),
    };
    if native.stdout != run.stdout
        || !same_stderr
        || native.status.map(|s| s.code()) != run.status.map(|s| s.code())
    {
        return Err(ctx(&format!(
            "the compiled program and `stalingrad run` differ\n\
             --- run: {} ---\n--- run stdout ---\n{}--- run stderr ---\n{}\
             --- compiled: {} ---\n--- compiled stdout ---\n{}--- compiled stderr ---\n{}",
            run.describe_status(),
            run.stdout,
            run.stderr,
            native.describe_status(),
            native.stdout,
            native.stderr,
        )));
    }
    Ok(true)
}

/// Programs whose AD nesting depth is read at run time (derivative towers
/// of run-time height in the shapes people write them,
/// [`vladgen::unbounded_program`]): no finite specialisation covers them,
/// so `build` must refuse each cleanly (exit 1, no panic), quickly (within
/// the 10 s and 1 GiB every build here runs under), with an error
/// positioned in the program that says what grows. `run` answers them (at
/// height 2).
#[test]
fn unbounded_ad_nesting_is_refused_quickly() {
    let start = Instant::now();
    let list = cases(8);
    let dir = scratch("unbounded");
    let mut failures = Failures::default();
    let mut slowest = Duration::ZERO;
    for &case in &list {
        let mut rng = case_rng(7, case);
        let text = vladgen::unbounded_program(&mut rng);
        std::fs::write(dir.join("prog.vlad"), &text).expect("write program");
        let ctx = |what: String| {
            format!(
                "unbounded case {case} ({}): {what}\n--- program ---\n{text}",
                reproduce(case)
            )
        };
        let bin = Path::new(env!("CARGO_BIN_EXE_stalingrad"));
        let run = run_process(bin, &["run", "prog.vlad"], &dir, b"2");
        if !run.success() {
            failures.add(ctx(format!(
                "`run` failed ({}):\n{}",
                run.describe_status(),
                run.stderr
            )));
            continue;
        }
        let build = run_binary(&["build", "prog.vlad", "-o", "prog"], &dir);
        slowest = slowest.max(build.elapsed);
        let first = build.stderr.lines().next().unwrap_or_default();
        let refused = build.status.and_then(|s| s.code()) == Some(1)
            && first.starts_with("prog.vlad:")
            && first.contains(": error: ")
            && first.contains("grow")
            && !build.stderr.contains("panicked");
        if !refused {
            failures.add(ctx(format!(
                "`build` did not refuse it cleanly ({}):\n{}",
                build.describe_status(),
                build.stderr
            )));
        }
    }
    let summary = format!(
        "{} cases refused, the slowest build in {:.1?}; {:.1?}",
        list.len(),
        slowest,
        start.elapsed()
    );
    failures.finish("unbounded AD nesting", &summary);
}

// ---------------------------------------------------------------------------
