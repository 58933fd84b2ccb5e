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
    let results = on_two_workers("compiled", &list, |case, dir, state| {
        let (failures, compared, not_yet): &mut (Failures, usize, usize) = state;
        match compile_and_compare(case, dir) {
            Ok(true) => *compared += 1,
            Ok(false) => *not_yet += 1,
            Err(e) => failures.add(e),
        }
    });
    let mut failures = Failures::default();
    let (mut compared, mut not_yet) = (0, 0);
    for (f, c, n) in results {
        failures.0.extend(f.0);
        compared += c;
        not_yet += n;
    }
    let summary = format!(
        "{} cases: {compared} compiled and compared with `run`, {not_yet} rejected as \
         not compiled yet, {} failed; {:.1?}",
        list.len(),
        list.len() - compared - not_yet,
        start.elapsed()
    );
    if not_yet > 0 {
        failures.add(format!(
            "{not_yet} of {} cases were rejected as not compiled yet",
            list.len()
        ));
    }
    failures.finish("compiled-vs-interpreted", &summary);
}

/// Case `case` of [`compiled_programs_agree_with_the_interpreter`]:
/// `Ok(true)` when compiled and compared equal, `Ok(false)` when rejected
/// as not compiled yet.
fn compile_and_compare(case: usize, dir: &Path) -> Result<bool, String> {
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
    let ctx = |what: &str| {
        format!(
            "compiled-vs-interpreted case {case} ({}): {what}\n--- program ---\n{}\n--- stdin ---\n{}",
            reproduce(case),
            prog.text,
            prog.stdin
        )
    };
    std::fs::write(dir.join("prog.vlad"), &prog.text).expect("write program");
    let exe = dir.join("prog");
    let _ = std::fs::remove_file(&exe);
    let stdin = prog.stdin.as_bytes();
    let build = run_binary(&["build", "prog.vlad", "-o", "prog"], dir);
    let run = run_process(
        Path::new(env!("CARGO_BIN_EXE_stalingrad")),
        &["run", "prog.vlad"],
        dir,
        stdin,
    );
    if !run.success() {
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
    let native = run_process(&exe, &[], dir, stdin);
    if native.stdout != run.stdout
        || native.stderr != run.stderr
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
