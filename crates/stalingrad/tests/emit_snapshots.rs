//! Every stage's text form for each program of `tests/emit/`: `--emit=anf`
//! (the core IR), `flow` (the flow analysis), `fir` (the optimised FIR)
//! and `clif` (Cranelift's IR), and what the program prints under `run`,
//! compared with the snapshots beside it (`NAME.anf`, ..., `NAME.out`;
//! `UPDATE_SNAPSHOTS=1` rewrites them). A change to any stage shows up in
//! review as a diff of these files. The compiled program must print the
//! same bytes as `run`, error and exit status included.

mod common;

use common::*;
use std::path::Path;

const STAGES: [&str; 4] = ["anf", "flow", "fir", "clif"];

/// What a run printed, as the `.out` snapshot holds it: standard output,
/// then, for a run that failed, its exit status and standard error.
fn transcript(run: &Run) -> String {
    let mut text = run.stdout.clone();
    if !run.success() {
        text.push_str(&format!(
            "--- {}, standard error:\n{}",
            run.describe_status(),
            run.stderr
        ));
    }
    text
}

fn check_program(program: &Path, failures: &mut Failures) -> usize {
    let name = rel(program);
    let stem = program.with_extension("");
    let stdin = stdin_for(program);
    let mut checked = 0;
    for stage in STAGES {
        let run = run_stalingrad(
            &["build".to_string(), format!("--emit={stage}"), name.clone()],
            None,
        );
        checked += 1;
        if !run.success() {
            failures.add(format!(
                "{name}: --emit={stage} failed: {}",
                run.transcript()
            ));
            continue;
        }
        let snap = stem.with_extension(stage);
        if let Err(e) = std::panic::catch_unwind(|| snapshot::check(&snap, &run.stdout)) {
            let msg = e.downcast_ref::<String>().cloned().unwrap_or_default();
            failures.add(msg);
        }
    }
    let interpreted = run_stalingrad(&["run".to_string(), name.clone()], stdin.as_deref());
    let expected = transcript(&interpreted);
    if let Err(e) =
        std::panic::catch_unwind(|| snapshot::check(&stem.with_extension("out"), &expected))
    {
        failures.add(e.downcast_ref::<String>().cloned().unwrap_or_default());
    }
    let exe = std::env::temp_dir().join(format!(
        "stalingrad-emit-{}-{}",
        std::process::id(),
        program
            .file_stem()
            .and_then(|s| s.to_str())
            .unwrap_or("prog")
    ));
    let built = build_to(&name, &exe);
    checked += 2;
    if !built.success() {
        failures.add(format!("{name}: build failed: {}", built.transcript()));
        return checked;
    }
    let compiled = run_program(&exe, &[], stdin.as_deref());
    let _ = std::fs::remove_file(&exe);
    if transcript(&compiled) != expected {
        failures.add(format!(
            "{name}: the compiled program printed\n{}\nwhere run printed\n{expected}",
            transcript(&compiled)
        ));
    }
    checked
}

#[test]
fn every_stage_of_every_program() {
    let programs = vlad_files(&repo_root().join("tests/emit"));
    assert!(
        programs.len() >= 12,
        "only {} programs in tests/emit",
        programs.len()
    );
    let mut failures = Failures::default();
    let mut checked = 0;
    for p in &programs {
        checked += check_program(p, &mut failures);
    }
    failures.finish("tests/emit", checked);
}

/// `--emit=ir`, the former name of `--emit=fir`, still prints the FIR for
/// one release, with a note on standard error naming the new one.
#[test]
fn the_former_name_ir_prints_the_fir_with_a_note() {
    let program = "tests/emit/derivative.vlad".to_string();
    let build = |stage: &str| {
        run_stalingrad(
            &[
                "build".to_string(),
                format!("--emit={stage}"),
                program.clone(),
            ],
            None,
        )
    };
    let (old, new) = (build("ir"), build("fir"));
    assert!(old.success() && new.success(), "{}", old.transcript());
    assert_eq!(old.stdout, new.stdout);
    assert!(new.stderr.is_empty(), "{}", new.transcript());
    assert!(
        old.stderr.contains("`--emit=ir` is now `--emit=fir`"),
        "{}",
        old.transcript()
    );
    let bogus = build("asm");
    assert!(!bogus.success());
    assert!(
        bogus
            .stderr
            .contains("expected one of anf, flow, fir, clif, obj, found `asm`"),
        "{}",
        bogus.transcript()
    );
}
