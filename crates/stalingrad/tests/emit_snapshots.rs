//! The text forms of the middle and back end, `--emit=flow` (the flow
//! analysis) and `--emit=ir` (the optimised FIR), of the small programs in
//! `tests/emit/`, compared with the snapshots beside them
//! (`UPDATE_SNAPSHOTS=1` rewrites them). A change to the analysis or to
//! generated code shows up in review as a diff of these files.

mod common;

use common::*;

fn check(name: &str, stage: &str) {
    let program = format!("tests/emit/{name}.vlad");
    let run = run_stalingrad(
        &[
            "build".to_string(),
            format!("--emit={stage}"),
            program.clone(),
        ],
        None,
    );
    assert!(run.success(), "{program}: {}", run.transcript());
    let snap = repo_root().join(format!("tests/emit/{name}.{stage}"));
    snapshot::check(&snap, &run.stdout);
}

#[test]
fn derivative() {
    check("derivative", "flow");
    check("derivative", "ir");
}

#[test]
fn list_sum() {
    check("list-sum", "flow");
    check("list-sum", "ir");
}

#[test]
fn gradient() {
    check("gradient", "flow");
    check("gradient", "ir");
}
