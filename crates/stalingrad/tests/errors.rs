//! Programs that must be rejected: every `tests/errors/*.vlad` (files in
//! subdirectories such as `tests/errors/inc/` are helpers, not tests).
//!
//! Each program carries header comments:
//! - `;; error: TEXT` (one or more): TEXT must appear in standard error,
//!   compared case-insensitively; `A|B|C` accepts any of the alternatives.
//! - `;; at: LINE:COL` or `;; at: FILE:LINE:COL`: standard error must
//!   contain `FILE:LINE:COL: error` where FILE defaults to the program's own
//!   file name (matched as a suffix of the path printed). Absent when no
//!   form is at fault.
//! - `;; args: ...`: extra command-line arguments.
//!
//! `stalingrad run FILE` must exit with a non-zero status, print nothing on
//! standard output (run-time errors are placed in the first expression), and
//! not panic. Standard input is the `.in` sibling or empty. A value in a
//! message shows tags (`(forward ...`, `(reverse ...`, ...) only where the
//! program put them itself, so a tag form in standard error must be in one
//! of the `;; error:` texts too.

mod common;

use common::*;

/// The required position of the error, as `(file name, line, col)`.
fn expected_position(text: &str, own_name: &str) -> Result<Option<(String, u32, u32)>, String> {
    let values = header(text, "at");
    let Some(value) = values.first() else {
        return Ok(None);
    };
    let parts: Vec<&str> = value.rsplitn(3, ':').collect();
    let bad = || format!("malformed `;; at: {value}` header");
    let (file, line, col) = match parts.as_slice() {
        [col, line] => (own_name.to_string(), *line, *col),
        [col, line, file] => (file.to_string(), *line, *col),
        _ => return Err(bad()),
    };
    let line = line.trim().parse().map_err(|_| bad())?;
    let col = col.trim().parse().map_err(|_| bad())?;
    Ok(Some((file, line, col)))
}

/// Whether `haystack` contains `FILE:LINE:COL: error` for a path ending in
/// `file` (so `dir/file` and `/abs/dir/file` both count).
fn has_position(haystack: &str, file: &str, line: u32, col: u32) -> bool {
    let needle = format!("{file}:{line}:{col}: error");
    haystack.match_indices(&needle).any(|(i, _)| {
        i == 0 || {
            let before = haystack[..i].chars().last().unwrap_or(' ');
            before == '/' || before == '\\' || before.is_whitespace()
        }
    })
}

/// How tagged values print (docs/reference.md).
const TAG_FORMS: [&str; 4] = ["(forward ", "(reverse ", "(perturbation ", "(sensitivity "];

#[test]
fn bad_programs_are_rejected_with_positions() {
    let dir = repo_root().join("tests").join("errors");
    let files = vlad_files(&dir);
    assert!(!files.is_empty(), "no programs in {dir:?}");
    let mut failures = Failures::default();
    let mut checked = 0;
    for path in &files {
        checked += 1;
        let name = rel(path);
        let own = path.file_name().unwrap().to_string_lossy().into_owned();
        let text = std::fs::read_to_string(path).expect("readable program");
        let wanted = header(&text, "error");
        let position = match expected_position(&text, &own) {
            Ok(p) => p,
            Err(e) => {
                failures.add(format!("{name}: {e}"));
                continue;
            }
        };
        if wanted.is_empty() {
            failures.add(format!("{name}: no `;; error:` header"));
            continue;
        }
        let mut args = vec!["run".to_string(), name.clone()];
        args.extend(header_args(&text));
        let run = run_stalingrad(&args, stdin_for(path).as_deref());
        let mut problems = Vec::new();
        if run.timed_out {
            problems.push("did not finish".to_string());
        }
        match run.status.and_then(|s| s.code()) {
            Some(0) => problems.push("exit status 0, expected a failure".to_string()),
            Some(_) => {}
            None => problems.push(format!("abnormal termination: {}", run.describe_status())),
        }
        if !run.stdout.is_empty() {
            problems.push("standard output is not empty".to_string());
        }
        for bad in ["panicked", "RUST_BACKTRACE"] {
            if run.stderr.contains(bad) {
                problems.push(format!("standard error mentions `{bad}`"));
            }
        }
        let stderr_lower = run.stderr.to_lowercase();
        for w in &wanted {
            let found = w
                .split('|')
                .map(|alt| alt.trim().to_lowercase())
                .any(|alt| !alt.is_empty() && stderr_lower.contains(&alt));
            if !found {
                problems.push(format!("standard error does not mention `{w}`"));
            }
        }
        for form in TAG_FORMS {
            if stderr_lower.contains(form)
                && !wanted.iter().any(|w| w.to_lowercase().contains(form))
            {
                problems.push(format!(
                    "standard error shows the tag form `{form}`, which no `;; error:` expects"
                ));
            }
        }
        match &position {
            Some((file, line, col)) => {
                if !has_position(&run.stderr, file, *line, *col) {
                    problems.push(format!(
                        "standard error does not contain `{file}:{line}:{col}: error`"
                    ));
                }
            }
            None => {
                if !run.stderr.contains("error") {
                    problems.push("standard error does not contain `error`".to_string());
                }
            }
        }
        if problems.is_empty() {
            let at = position
                .map(|(f, l, c)| format!(" at {f}:{l}:{c}"))
                .unwrap_or_default();
            println!("ok   {name}: rejected{at}, mentioning {wanted:?}");
        } else {
            failures.add(format!(
                "{name}: {}\n{}",
                problems.join("; "),
                run.transcript()
            ));
        }
    }
    failures.finish("tests/errors/*.vlad", checked);
}
