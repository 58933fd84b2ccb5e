//! `build --time-passes`: the report names every stage of the build, each
//! optimisation pass once with its number of runs, in the documented
//! format (docs/guide.md), on standard error only; what the build makes
//! (the executable's output, `--emit`'s text) is unaffected. No timing is
//! asserted.

mod common;

use common::*;

/// One line of the report: (seconds, runs, stage with its indentation).
fn parse_line(line: &str) -> Option<(f64, usize, String)> {
    let rest = line.strip_prefix("time-passes: ")?;
    let (numbers, stage) = rest.rsplit_once(" MiB  ")?;
    let fields: Vec<&str> = numbers.split_whitespace().collect();
    // seconds, runs, heap change (`+1.0 MiB` or `-`), heap peak.
    let seconds = fields.first()?.parse().ok()?;
    let runs = fields.get(1)?.parse().ok()?;
    fields.last()?.parse::<f64>().ok()?;
    Some((seconds, runs, stage.to_string()))
}

/// The report's stages, checking the format of every line.
fn report(stderr: &str) -> Vec<(usize, String)> {
    let mut lines = stderr.lines().filter(|l| l.starts_with("time-passes:"));
    let header = lines.next().expect("a header line");
    for column in ["seconds", "runs", "heap change", "heap peak", "stage"] {
        assert!(header.contains(column), "header without {column}: {header}");
    }
    lines
        .map(|l| {
            let (seconds, runs, stage) =
                parse_line(l).unwrap_or_else(|| panic!("malformed line: {l:?}"));
            assert!(seconds >= 0.0 && runs >= 1, "{l}");
            (runs, stage)
        })
        .collect()
}

fn runs_of(stages: &[(usize, String)], stage: &str) -> Option<usize> {
    stages.iter().find(|(_, s)| s == stage).map(|(r, _)| *r)
}

const PROGRAM: &str = "tests/corpus/horner-all-modes.vlad";

#[test]
fn every_stage_and_pass_is_reported_and_the_output_is_unchanged() {
    let dir = std::env::temp_dir().join(format!("stalingrad-time-passes-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let timed = dir.join("timed");
    let plain = dir.join("plain");
    let exe = |p: &std::path::Path| p.to_string_lossy().into_owned();
    let b = run_stalingrad(
        &[
            "build".into(),
            "--time-passes".into(),
            PROGRAM.into(),
            "-o".into(),
            exe(&timed),
        ],
        None,
    );
    assert!(b.success(), "build failed: {}", b.stderr);
    assert_eq!(b.stdout, "", "the report goes to standard error");
    let stages = report(&b.stderr);
    for top in [
        "parse", "ir", "analysis", "lower", "verify", "optimize", "codegen", "link", "total",
    ] {
        assert_eq!(runs_of(&stages, top), Some(1), "{top} in {stages:?}");
    }
    for inner in ["  cranelift", "  object"] {
        assert_eq!(runs_of(&stages, inner), Some(1), "{inner} in {stages:?}");
    }
    // Each pass of the pipeline once, with the number of times it ran.
    for (name, _) in fir::passes::PIPELINE {
        let runs = fir::passes::PIPELINE
            .iter()
            .filter(|(n, _)| n == name)
            .count();
        let line = format!("  {name}");
        assert_eq!(
            stages.iter().filter(|(_, s)| *s == line).count(),
            1,
            "{name} in {stages:?}"
        );
        assert_eq!(runs_of(&stages, &line), Some(runs), "{name} in {stages:?}");
    }
    assert_eq!(stages.last().map(|(_, s)| s.as_str()), Some("total"));

    assert!(build_to(PROGRAM, &plain).success());
    let input = stdin_for(&repo_root().join(PROGRAM));
    let run_timed = run_program(&timed, &[], input.as_deref());
    let run_plain = run_program(&plain, &[], input.as_deref());
    let interpreted = run_stalingrad(&["run".into(), PROGRAM.into()], input.as_deref());
    assert!(run_timed.success(), "{}", run_timed.stderr);
    assert_eq!(run_timed.stdout, run_plain.stdout);
    assert_eq!(run_timed.stdout, interpreted.stdout);
    assert_eq!(run_timed.stderr, run_plain.stderr);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn emit_reports_the_stages_it_ran_and_prints_the_same_text() {
    for stage in ["anf", "flow", "fir"] {
        let args = |timed: bool| {
            let mut a = vec![
                "build".to_string(),
                format!("--emit={stage}"),
                PROGRAM.into(),
            ];
            if timed {
                a.push("--time-passes".into());
            }
            a
        };
        let timed = run_stalingrad(&args(true), None);
        let plain = run_stalingrad(&args(false), None);
        assert!(timed.success(), "{}", timed.stderr);
        assert_eq!(timed.stdout, plain.stdout, "--emit={stage}");
        let stages = report(&timed.stderr);
        assert_eq!(runs_of(&stages, "print"), Some(1), "{stage}: {stages:?}");
        assert_eq!(runs_of(&stages, "total"), Some(1), "{stage}: {stages:?}");
        assert_eq!(runs_of(&stages, "codegen"), None, "{stage}: {stages:?}");
        let optimized = runs_of(&stages, "optimize").is_some();
        assert_eq!(optimized, stage == "fir", "{stage}: {stages:?}");
    }
}

#[test]
fn a_failed_build_reports_the_stages_up_to_the_failure() {
    let b = run_stalingrad(
        &[
            "build".into(),
            "--time-passes".into(),
            "--emit=fir".into(),
            "tests/refused/derivative-tower.vlad".into(),
        ],
        None,
    );
    assert!(!b.success());
    assert!(b.stderr.contains("error"), "{}", b.stderr);
    let stages = report(&b.stderr);
    assert_eq!(runs_of(&stages, "analysis"), Some(1), "{stages:?}");
    assert_eq!(runs_of(&stages, "lower"), None, "{stages:?}");
    assert_eq!(stages.last().map(|(_, s)| s.as_str()), Some("total"));
}
