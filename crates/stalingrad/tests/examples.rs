//! End-to-end tests of whole VLAD programs.
//!
//! - Every `examples/*.vlad` and every `tests/**/*.vlad` (outside
//!   `tests/errors` and `tests/complexity`) that contains `===>`
//!   expectations is run with `stalingrad test FILE`, which must report
//!   `N passed, 0 failed` with N the number of expectations and exit 0.
//! - Every `examples/*.vlad` and `tests/run/*.vlad` with a `.out` sibling is
//!   run with `stalingrad run FILE`; its standard output must equal the
//!   `.out` file byte for byte.
//!
//! A `.in` sibling, if any, is the program's standard input (otherwise it is
//! empty); `;; args: ...` header lines give extra command-line arguments
//! (paths relative to the repository root, where the binary runs).

mod common;

use common::*;
use std::path::{Path, PathBuf};

/// Parses a summary line `N passed, M failed`.
fn summary(line: &str) -> Option<(usize, usize)> {
    let (passed, failed) = line.trim().split_once(" passed, ")?;
    let failed = failed.strip_suffix(" failed")?;
    Some((passed.trim().parse().ok()?, failed.trim().parse().ok()?))
}

/// Runs `stalingrad test` on each file; returns the number of files checked.
fn check_expectations(files: &[PathBuf], failures: &mut Failures) -> usize {
    let mut checked = 0;
    for path in files {
        let text = std::fs::read_to_string(path).expect("readable program");
        let expected = count_expectations(&text);
        if expected == 0 {
            continue;
        }
        checked += 1;
        let name = rel(path);
        let mut args = vec!["test".to_string(), name.clone()];
        args.extend(header_args(&text));
        let run = run_stalingrad(&args, stdin_for(path).as_deref());
        let last = run
            .stdout
            .lines()
            .chain(run.stderr.lines())
            .filter_map(summary)
            .next_back();
        let fails: Vec<&str> = run
            .stdout
            .lines()
            .filter(|l| l.starts_with("FAIL"))
            .collect();
        match last {
            Some((passed, 0)) if passed == expected && run.success() && fails.is_empty() => {
                println!(
                    "ok   {name}: {passed} expectations passed ({:?})",
                    run.elapsed
                );
            }
            Some((passed, failed)) => failures.add(format!(
                "{name}: expected {expected} passed, 0 failed; got {passed} passed, \
                 {failed} failed, {}\n{}",
                run.describe_status(),
                run.transcript()
            )),
            None => failures.add(format!(
                "{name}: no `N passed, M failed` line ({})\n{}",
                run.describe_status(),
                run.transcript()
            )),
        }
    }
    checked
}

/// Runs `stalingrad run` on each file that has a `.out` sibling and compares
/// standard output exactly; returns the number of files checked.
fn check_outputs(files: &[PathBuf], failures: &mut Failures) -> usize {
    let mut checked = 0;
    for path in files {
        let Some(out_path) = sibling(path, "out") else {
            continue;
        };
        checked += 1;
        let text = std::fs::read_to_string(path).expect("readable program");
        let expected = std::fs::read_to_string(&out_path).expect("readable .out file");
        let name = rel(path);
        let mut args = vec!["run".to_string(), name.clone()];
        args.extend(header_args(&text));
        let run = run_stalingrad(&args, stdin_for(path).as_deref());
        if !run.success() {
            failures.add(format!(
                "{name}: `stalingrad run` failed ({})\n{}",
                run.describe_status(),
                run.transcript()
            ));
        } else if run.stdout != expected {
            failures.add(format!(
                "{name}: standard output differs from {}\n{}",
                rel(&out_path),
                diff(&expected, &run.stdout)
            ));
        } else {
            println!(
                "ok   {name}: output matches {} ({} lines, {:?})",
                rel(&out_path),
                expected.lines().count(),
                run.elapsed
            );
        }
    }
    checked
}

/// A line-by-line comparison of expected and actual output.
fn diff(expected: &str, actual: &str) -> String {
    let e: Vec<&str> = expected.split_inclusive('\n').collect();
    let a: Vec<&str> = actual.split_inclusive('\n').collect();
    let mut out = String::new();
    for i in 0..e.len().max(a.len()) {
        let (x, y) = (e.get(i).copied(), a.get(i).copied());
        let mark = if x == y { "  " } else { "!!" };
        out.push_str(&format!(
            "{mark} line {:3}: expected {:?}, got {:?}\n",
            i + 1,
            x.unwrap_or("<none>"),
            y.unwrap_or("<none>")
        ));
    }
    out
}

fn examples_dir() -> PathBuf {
    repo_root().join("examples")
}

fn tests_dir() -> PathBuf {
    repo_root().join("tests")
}

#[test]
fn examples_meet_their_expectations() {
    let files = vlad_files(&examples_dir());
    assert!(!files.is_empty(), "no programs in {:?}", examples_dir());
    let mut failures = Failures::default();
    let checked = check_expectations(&files, &mut failures);
    failures.finish("examples/*.vlad with ===>", checked);
}

#[test]
fn test_programs_meet_their_expectations() {
    let files = vlad_files_recursive(&tests_dir(), &["tests/errors", "tests/complexity"]);
    let mut failures = Failures::default();
    let checked = check_expectations(&files, &mut failures);
    failures.finish("tests/**/*.vlad with ===>", checked);
}

#[test]
fn printed_output_is_exact() {
    let mut files = vlad_files(&examples_dir());
    files.extend(vlad_files(&tests_dir().join("run")));
    files.extend(vlad_files(&tests_dir().join("corpus")));
    let mut failures = Failures::default();
    let checked = check_outputs(&files, &mut failures);
    assert!(checked > 0, "no .vlad/.out pairs found");
    failures.finish("programs with .out files", checked);
}

#[test]
fn every_run_test_has_an_out_file() {
    let mut failures = Failures::default();
    let files = vlad_files(&tests_dir().join("run"));
    for path in &files {
        if sibling(path, "out").is_none() && !has_expectations(path) {
            failures.add(format!("{}: no .out file and no ===>", rel(path)));
        }
    }
    failures.finish("tests/run/*.vlad are all checked", files.len());
}

fn has_expectations(path: &Path) -> bool {
    std::fs::read_to_string(path).is_ok_and(|t| count_expectations(&t) > 0)
}
