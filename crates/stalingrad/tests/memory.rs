//! Peak memory of `stalingrad run` on the programs of `tests/memory/`:
//! the interpreter keeps what the program reaches, not what it has made.
//! Each program runs under a resident-memory limit (the runner samples the
//! child's RSS every few milliseconds and stops it above the limit); the
//! limits sit between what the interpreter needs and what it took when its
//! memo tables kept values the program had let go of.

mod common;

use common::*;

/// Runs `tests/memory/NAME.vlad` with `input` on standard input under a
/// limit of `mib` MiB of resident memory; checks that every line printed
/// is `line`.
fn within(name: &str, input: &str, mib: u64, line: &str) {
    let mut cmd = std::process::Command::new(binary());
    cmd.args(["run", &format!("tests/memory/{name}.vlad")])
        .current_dir(repo_root())
        .env_remove("RUST_BACKTRACE");
    let limits = runner::Limits {
        time: time_limit(),
        memory_kb: Some(mib * 1024),
    };
    let run = runner::run_text(&mut cmd, input.as_bytes(), &limits);
    assert!(
        !run.over_memory,
        "{name} with input {input:?} passed {mib} MiB of resident memory"
    );
    assert!(
        run.success(),
        "{name}: {}\n{}",
        run.describe_status(),
        run.stderr
    );
    assert!(
        !run.stdout.is_empty() && run.stdout.lines().all(|l| l == line),
        "{name} printed {:?}",
        run.stdout
    );
}

/// 16 repetitions of a nested forward-mode loop: 26 MiB; 84 MiB when the
/// memo kept the rings of primals, tangents and bundles that each
/// repetition leaves (about 3.6 MiB a repetition; particle-FF passed 7 GB).
#[test]
fn nested_forward_mode_keeps_nothing_per_repetition() {
    within("nested-forward", "16\n", 50, "0.001179599073902668");
}

/// A Hessian-vector product (forward over reverse) of a k-means cost over
/// 1000 points: 134 MiB; 183 MiB when the memo kept every transformation
/// of the closures of the tape, with 80-byte entries.
#[test]
fn a_hessian_vector_product_keeps_less_than_its_tapes_transformations() {
    within("hvp-kmeans", "1000\n", 160, "((1108 0) (0 338) (554 554))");
}
