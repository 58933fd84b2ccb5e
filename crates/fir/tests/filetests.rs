//! The filetests of the FIR (format: `filetests/README.md`): each
//! `filetests/<pass>/<name>.fir` holds a module and, after `; expect:`,
//! the module the pass named in its first line must make of it. The test
//! reads the module, checks that it verifies, runs the pass (by its name in
//! `fir::passes::PIPELINE`), checks that the result verifies and compares
//! its text with the expectation. Those of `filetests/eval` expect what
//! `fir::eval` prints running the module, those of `filetests/verify` the
//! verifier's error. Every module must print as text that reads back as
//! the same module. With `UPDATE_SNAPSHOTS=1` it writes what the test
//! gives as the expectation instead.

use std::path::{Path, PathBuf};

const EXPECT: &str = "; expect:\n";

#[test]
fn filetests() {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/filetests");
    let mut files = Vec::new();
    fir_files(&root, &mut files);
    files.sort();
    assert!(!files.is_empty(), "no filetests in {}", root.display());
    let failures: Vec<String> = files
        .iter()
        .filter_map(|f| {
            let name = f.strip_prefix(&root).unwrap_or(f).display().to_string();
            run(f).err().map(|e| format!("{name}: {e}"))
        })
        .collect();
    assert!(
        failures.is_empty(),
        "{} of {} filetests failed:\n{}",
        failures.len(),
        files.len(),
        failures.join("\n")
    );
}

/// The `.fir` files under `dir`, at any depth.
fn fir_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for e in entries.flatten() {
        let p = e.path();
        if p.is_dir() {
            fir_files(&p, out);
        } else if p.extension().is_some_and(|x| x == "fir") {
            out.push(p);
        }
    }
}

/// What a filetest does with its module, by its first line.
enum Kind {
    /// `; pass: NAME`: the module after the pass.
    Pass(fir::passes::Pass),
    /// `; eval`: what `fir::eval` prints, then the run-time error if any.
    Eval,
    /// `; verify`: the verifier's error (the module must not verify).
    Verify,
}

/// One filetest.
fn run(path: &Path) -> Result<(), String> {
    let text = std::fs::read_to_string(path).map_err(|e| format!("cannot read: {e}"))?;
    let first = text.lines().next().unwrap_or("");
    let (name, kind) = match first.trim() {
        "; eval" => ("eval", Kind::Eval),
        "; verify" => ("verify", Kind::Verify),
        _ => {
            let name = first
                .strip_prefix("; pass: ")
                .map(str::trim)
                .ok_or_else(|| {
                    format!("1:1: expected `; pass: NAME`, `; eval` or `; verify`, found `{first}`")
                })?;
            let pass = fir::passes::PIPELINE
                .iter()
                .find(|(n, _)| *n == name)
                .ok_or_else(|| format!("no pass `{name}` in fir::passes::PIPELINE"))?;
            (name, Kind::Pass(*pass))
        }
    };
    let dir = path
        .parent()
        .and_then(|d| d.file_name())
        .and_then(|d| d.to_str());
    if dir != Some(name) {
        return Err(format!(
            "the test `{name}` lives in the directory `{name}`, not `{}`",
            dir.unwrap_or("")
        ));
    }
    // The expectation starts at a line of its own.
    let (input, expected) = match text.find(&format!("\n{EXPECT}")) {
        Some(at) => (&text[..at + 1], Some(&text[at + 1 + EXPECT.len()..])),
        None => (&text[..], None),
    };
    let mut m = fir::read::module(input).map_err(|e| e.to_string())?;
    // Reading is the inverse of printing.
    let printed = fir::print::module(&m);
    let again = fir::read::module(&printed)
        .map_err(|e| format!("the printed module does not read: {e}"))?;
    if fir::print::module(&again) != printed {
        return Err(format!("the printed module reads as another:\n{printed}"));
    }
    let actual = match kind {
        Kind::Pass((name, pass)) => {
            fir::verify::verify(&m).map_err(|e| format!("the input does not verify: {e}"))?;
            pass(&mut m);
            fir::verify::verify(&m).map_err(|e| format!("`{name}` broke an invariant: {e}"))?;
            fir::print::module(&m)
        }
        Kind::Eval => {
            fir::verify::verify(&m).map_err(|e| format!("the input does not verify: {e}"))?;
            let mut out = Vec::new();
            let r = fir::eval::run(&m, &mut "".as_bytes(), &mut out);
            let mut actual = String::from_utf8_lossy(&out).into_owned();
            if let Err(e) = r {
                actual.push_str(&format!("\n; error: {e}\n"));
            }
            actual
        }
        Kind::Verify => match fir::verify::verify(&m) {
            Ok(()) => return Err("the module verifies".into()),
            Err(e) => format!("{e}\n"),
        },
    };
    if snapshot::updating() {
        let sep = if input.ends_with('\n') { "" } else { "\n" };
        return std::fs::write(path, format!("{input}{sep}{EXPECT}{actual}"))
            .map_err(|e| format!("cannot write: {e}"));
    }
    match expected {
        None => Err(format!(
            "no `{}` line (UPDATE_SNAPSHOTS=1 writes what the test gives)",
            EXPECT.trim_end()
        )),
        Some(e) if e == actual => Ok(()),
        Some(e) => Err(format!(
            "`{name}` gives another result (UPDATE_SNAPSHOTS=1 to accept it):\n{}",
            snapshot::diff(e, &actual)
        )),
    }
}
