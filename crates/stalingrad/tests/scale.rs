//! Programs that are large only because of their length (issue 34): a
//! literal list of thousands of elements, `list` of hundreds of arguments,
//! a regression over data pasted into the source, a chain of a thousand
//! procedures each calling the one before. Each is generated here,
//! built, and its binary's output compared with `stalingrad run`'s; a
//! build must end well within the time limit (under 5 s on an idle
//! machine, where the analysis once refused them as too deep).
//! `tests/scale/*.vlad` are short programs that nest AD in the styles
//! that once took seconds to build; they are checked the same way here,
//! and `benches/build-times.sh` reports their build times.

mod common;

use common::*;
use std::path::PathBuf;
use std::time::{Duration, Instant};

/// Far above the few seconds these builds take, far below a runaway.
const BUILD_LIMIT: Duration = Duration::from_secs(60);

fn temp(name: &str) -> PathBuf {
    std::env::temp_dir().join(format!("stalingrad-scale-{}-{name}", std::process::id()))
}

/// Builds `text`, runs the binary and `stalingrad run`, and records a
/// failure when the build fails, takes too long, or the outputs differ.
fn check(failures: &mut Failures, name: &str, text: &str) {
    let src = temp(&format!("{name}.vlad"));
    let exe = temp(name);
    std::fs::write(&src, text).expect("write the program");
    let src_s = src.to_string_lossy().into_owned();
    let started = Instant::now();
    let build = build_to(&src_s, &exe);
    let took = started.elapsed();
    println!("build {name}: {:.2} s", took.as_secs_f64());
    let interp = run_stalingrad(&["run".into(), src_s], None);
    if !build.success() || took > BUILD_LIMIT {
        failures.add(format!("build {name} ({took:?}):\n{}", build.transcript()));
    } else {
        let native = run_program(&exe, &[], None);
        if native.stdout != interp.stdout || !native.success() || !interp.success() {
            failures.add(format!(
                "{name}: the binary differs from run:\n{}\n{}",
                native.transcript(),
                interp.transcript()
            ));
        }
    }
    let _ = std::fs::remove_file(&src);
    let _ = std::fs::remove_file(&exe);
}

/// `'(0 1 ... n-1)`.
fn literal(n: usize) -> String {
    let items: Vec<String> = (0..n).map(|i| i.to_string()).collect();
    format!("'({})", items.join(" "))
}

#[test]
fn long_literal_lists_build_and_run_as_run_does() {
    let mut failures = Failures::default();
    let shapes = [
        (
            "literal-2000",
            format!("(define data {})\n(length data)\n", literal(2000)),
        ),
        (
            "literal-199",
            format!("(define data {})\n(length data)\n(car (cdr data))\n", literal(199)),
        ),
        (
            "list-250",
            format!(
                "(define data (list {}))\n(length data)\n",
                (0..250).map(|i| format!("{i}")).collect::<Vec<_>>().join(" ")
            ),
        ),
        (
            "list-250-of-reals-read",
            format!(
                "(define x (real 2))\n(define data (list {}))\n(length data)\n",
                (0..250).map(|i| format!("(* x {i})")).collect::<Vec<_>>().join(" ")
            ),
        ),
        (
            "literal-2000-gradient",
            format!(
                "(define data {})\n\
                 (define (f a) (let loop ((d data) (s 0)) (if (null? d) s (loop (cdr d) (+ s (* a (car d)))))))\n\
                 ((gradient-R (lambda (p) (f (car p)))) '(2))\n",
                literal(2000)
            ),
        ),
        ("regression-300", regression(300)),
        // Lists as long as the widening leaves as pairs, and one longer.
        ("regression-16", regression(16)),
        ("regression-17", regression(17)),
    ];
    for (name, text) in &shapes {
        check(&mut failures, name, text);
    }
    failures.finish("long literal lists", shapes.len());
}

/// A logistic regression on `n` points pasted into the source, by 20
/// steps of gradient descent with reverse mode.
fn regression(n: usize) -> String {
    // Deterministic points on both sides of the line x1 + x2 / 2 = 0.
    let points: Vec<String> = (0..n)
        .map(|i| {
            let x1 = ((i * 37) % 41) as f64 / 10.0 - 2.0;
            let x2 = ((i * 53) % 43) as f64 / 10.0 - 2.1;
            let y = u8::from(x1 + 0.5 * x2 > 0.0);
            format!("({x1} {x2} {y})")
        })
        .collect();
    format!(
        "(define data '({}))\n\
         (define (sigmoid z) (/ 1 (+ 1 (exp (- 0 z)))))\n\
         (define (loss w)\n\
         \x20 (let loop ((d data) (acc 0))\n\
         \x20   (if (null? d) acc\n\
         \x20       (let* ((p (car d)) (x1 (car p)) (x2 (car (cdr p))) (y (car (cdr (cdr p))))\n\
         \x20              (s (sigmoid (+ (car w) (+ (* (car (cdr w)) x1) (* (car (cdr (cdr w))) x2))))))\n\
         \x20         (loop (cdr d) (- acc (+ (* y (log s)) (* (- 1 y) (log (- 1 s))))))))))\n\
         (define (gd w k)\n\
         \x20 (if (zero? k) w\n\
         \x20     (gd (map2 (lambda (wi gi) (- wi (* 0.01 gi))) w ((gradient-R loss) w)) (- k 1))))\n\
         (length data)\n\
         (loss '(0 0 0))\n\
         (gd '(0 0 0) 20)\n",
        points.join(" ")
    )
}

/// `n` top-level procedures, each calling the one before, and the
/// derivative by forward mode of the derivative by reverse mode of the
/// last, at `x`.
fn chain(n: usize, x: &str) -> String {
    let mut text = String::from("(define (h0 x) (sin x))\n");
    for i in 1..=n {
        text.push_str(&format!(
            "(define (f{i} x) (* {} x))\n(define (h{i} x) (+ (f{i} x) (h{} x)))\n",
            i % 7 + 1,
            i - 1
        ));
    }
    text.push_str(&format!("((derivative-F (derivative-R h{n})) {x})\n"));
    text
}

#[test]
fn long_chains_of_procedures_build_and_run_as_run_does() {
    let mut failures = Failures::default();
    let shapes = [
        ("chain-400", chain(400, "0.5")),
        ("chain-1000", chain(1000, "0.5")),
        // The argument known only at run time: the derivatives are
        // computed by the binary.
        ("chain-400-run-time", chain(400, "(real 0.5)")),
    ];
    for (name, text) in &shapes {
        check(&mut failures, name, text);
    }
    failures.finish("long chains of procedures", shapes.len());
}

/// Programs of the generator's long shapes (`vladgen::long_literal_program`,
/// `vladgen::chain_program`), one per seed: each element width, form of
/// literal, use of the data and derivative occurs.
#[test]
fn generated_long_programs_build_and_run_as_run_does() {
    let mut failures = Failures::default();
    let mut checked = 0;
    for seed in 0..6 {
        let literal = vladgen::long_literal_program(&mut vladgen::Rng::new(seed), 2000);
        check(
            &mut failures,
            &format!("generated-literal-{seed}"),
            &literal,
        );
        let chain = vladgen::chain_program(&mut vladgen::Rng::new(seed), 400);
        check(&mut failures, &format!("generated-chain-{seed}"), &chain);
        checked += 2;
    }
    failures.finish("generated long programs", checked);
}

/// The nested-AD programs of `tests/scale/` (a hyperparameter gradient
/// through an inner descent, k-means with a Newton step, MAML, a
/// determinant's gradient, mutual recursion, combinators, streams, and a
/// generated program of the property tests that once took 12 s): built,
/// and their binaries' output compared with `stalingrad run`'s.
#[test]
fn nested_ad_programs_build_and_run_as_run_does() {
    let mut failures = Failures::default();
    let mut checked = 0;
    let mut paths: Vec<PathBuf> = std::fs::read_dir(repo_root().join("tests/scale"))
        .expect("tests/scale")
        .map(|e| e.expect("a directory entry").path())
        .filter(|p| p.extension().is_some_and(|e| e == "vlad"))
        .collect();
    paths.sort();
    for path in &paths {
        let name = path.file_stem().expect("a file name").to_string_lossy();
        let text = std::fs::read_to_string(path).expect("read the program");
        check(&mut failures, &name, &text);
        checked += 1;
    }
    assert!(checked >= 7, "the programs of tests/scale are there");
    failures.finish("nested-AD programs", checked);
}
