//! Helpers shared by the end-to-end tests: locating the repository and its
//! VLAD programs, running the `stalingrad` binary with a time limit, and
//! reading the `;; key: value` headers of test programs.
//!
//! Each test binary uses a different subset of these helpers.
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

/// The repository root (two levels above this crate's manifest).
pub fn repo_root() -> PathBuf {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("..").join("..");
    dir.canonicalize().unwrap_or(dir)
}

/// The `stalingrad` binary built for these tests.
pub fn binary() -> &'static str {
    env!("CARGO_BIN_EXE_stalingrad")
}

/// A path relative to the repository root, for messages and command lines.
pub fn rel(path: &Path) -> String {
    let root = repo_root();
    path.strip_prefix(&root)
        .unwrap_or(path)
        .to_string_lossy()
        .into_owned()
}

/// The `.vlad` files directly in `dir`, sorted.
pub fn vlad_files(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    if let Ok(entries) = std::fs::read_dir(dir) {
        for entry in entries.flatten() {
            let path = entry.path();
            if path.is_file() && path.extension().is_some_and(|e| e == "vlad") {
                out.push(path);
            }
        }
    }
    out.sort();
    out
}

/// The `.vlad` files anywhere below `dir`, sorted, skipping directories
/// whose paths relative to the repository root are in `exclude`.
pub fn vlad_files_recursive(dir: &Path, exclude: &[&str]) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        if exclude.iter().any(|x| Path::new(&rel(&d)) == Path::new(x)) {
            continue;
        }
        out.extend(vlad_files(&d));
        if let Ok(entries) = std::fs::read_dir(&d) {
            for entry in entries.flatten() {
                if entry.path().is_dir() {
                    stack.push(entry.path());
                }
            }
        }
    }
    out.sort();
    out
}

/// `path` with its extension replaced by `ext`, if that file exists.
pub fn sibling(path: &Path, ext: &str) -> Option<PathBuf> {
    let p = path.with_extension(ext);
    p.is_file().then_some(p)
}

/// The text of a program with `;` comments removed (VLAD has strings only
/// in `include`, and those never contain `;`).
pub fn strip_comments(text: &str) -> String {
    text.lines()
        .map(|l| match l.find(';') {
            Some(i) => &l[..i],
            None => l,
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// The number of `===>` expectations in a program.
pub fn count_expectations(text: &str) -> usize {
    strip_comments(text)
        .split(|c: char| c.is_whitespace() || c == '(' || c == ')')
        .filter(|t| *t == "===>")
        .count()
}

/// The values of the header lines `;; key: value` of a program.
pub fn header(text: &str, key: &str) -> Vec<String> {
    let prefix = format!(";; {key}:");
    text.lines()
        .filter_map(|l| l.trim_start().strip_prefix(&prefix))
        .map(|v| v.trim().to_string())
        .collect()
}

/// Extra command-line arguments from `;; args:` headers (whitespace separated).
pub fn header_args(text: &str) -> Vec<String> {
    header(text, "args")
        .iter()
        .flat_map(|v| v.split_whitespace().map(str::to_string).collect::<Vec<_>>())
        .collect()
}

/// The result of one run of a process.
pub use runner::Run;

/// The time limit for one run: `STALINGRAD_TEST_TIMEOUT` seconds, default 300.
pub fn time_limit() -> Duration {
    let secs = std::env::var("STALINGRAD_TEST_TIMEOUT")
        .ok()
        .and_then(|s| s.parse::<u64>().ok())
        .unwrap_or(300);
    Duration::from_secs(secs)
}

/// Runs `stalingrad ARGS...` in the repository root with `stdin` as its
/// standard input (empty when `None`), killing it after [`time_limit`].
pub fn run_stalingrad(args: &[String], stdin: Option<&[u8]>) -> Run {
    run_program(Path::new(binary()), args, stdin)
}

/// Runs any program (e.g. one `stalingrad build` made) the same way.
pub fn run_program(program: &Path, args: &[String], stdin: Option<&[u8]>) -> Run {
    let mut cmd = Command::new(program);
    cmd.args(args);
    run_command(cmd, stdin)
}

/// [`run_program`] with the address space of the process capped at
/// `kib` KiB ([`runner::capped_command`]).
pub fn run_program_capped(program: &Path, args: &[String], stdin: Option<&[u8]>, kib: u64) -> Run {
    let mut cmd = runner::capped_command(program, kib);
    cmd.args(args);
    run_command(cmd, stdin)
}

/// `stalingrad build SRC -o EXE`.
pub fn build_to(src: &str, exe: &Path) -> Run {
    run_stalingrad(
        &[
            "build".into(),
            src.to_string(),
            "-o".into(),
            exe.to_string_lossy().into_owned(),
        ],
        None,
    )
}

/// Runs `cmd` as [`run_program`] does (for a command with its own
/// environment or shell).
pub fn run_command(mut cmd: Command, stdin: Option<&[u8]>) -> Run {
    // Every build of the tests has Cranelift verify what code generation
    // makes, and the FIR verifier what each FIR pass makes (release builds
    // of the compiler skip both).
    cmd.current_dir(repo_root())
        .env_remove("RUST_BACKTRACE")
        .env("VLAD_VERIFY_CLIF", "1")
        .env("VLAD_VERIFY_PASSES", "1");
    let limits = runner::Limits {
        time: time_limit(),
        memory_kb: None,
    };
    runner::run_text(&mut cmd, stdin.unwrap_or(&[]), &limits)
}

/// The standard input for a program: the contents of its `.in` sibling.
pub fn stdin_for(path: &Path) -> Option<Vec<u8>> {
    sibling(path, "in").and_then(|p| std::fs::read(p).ok())
}

/// Collects failures so that a test reports all of them, not just the first.
#[derive(Default)]
pub struct Failures {
    messages: Vec<String>,
}

impl Failures {
    pub fn add(&mut self, message: String) {
        eprintln!("FAILED: {message}");
        self.messages.push(message);
    }

    /// Panics with every collected failure, if there were any.
    pub fn finish(self, what: &str, checked: usize) {
        if self.messages.is_empty() {
            println!("{what}: all {checked} checks passed");
            return;
        }
        panic!(
            "{what}: {} of {checked} checks failed:\n\n{}",
            self.messages.len(),
            self.messages.join("\n\n")
        );
    }
}
