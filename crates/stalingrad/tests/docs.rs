//! The manual in `docs/` says what it shows.
//!
//! - Every code block fenced as ` ```vlad example ` in `docs/*.md` is a
//!   complete program. Its comments `;; ===> LINE` are, in order, the lines
//!   it prints on standard output; `;; error ===> LINE` the lines it prints
//!   on standard error (then it must exit non-zero, otherwise zero);
//!   `;; input: TEXT` a line of its standard input. The program is saved as
//!   `prog.vlad` in a directory of its own, so messages read
//!   `prog.vlad:LINE:COLUMN: ...`. It is run with `stalingrad run` and
//!   compiled with `stalingrad build` and run, and both must print exactly
//!   what the block says (a program rejected by `build` must be rejected
//!   with the same message and have no expected standard output).
//! - `docs/reference.md` documents every primitive (`ir::Prim::ALL`) and
//!   every procedure the standard library defines: a name counts as
//!   documented when it appears in backquotes in a heading or in the first
//!   cell of a table row.
//! - `ARCHITECTURE.md` stays a map: under [`MAP_MAX_WORDS`] words (counted
//!   as `wc -w` counts them), and every path it names exists. A path is a
//!   name in backquotes, outside fenced blocks, with no spaces and no `*`,
//!   that contains a `/` and either ends in `/` (a directory) or in one of
//!   [`PATH_ENDINGS`]; it is looked up from the repository's root, then
//!   from `crates/` (so `fir/src/verify.rs` is `crates/fir/src/verify.rs`).

mod common;

use common::*;
use std::path::{Path, PathBuf};

/// One ` ```vlad example ` block.
struct Example {
    /// `docs/FILE.md:LINE`, where the block opens.
    origin: String,
    source: String,
    stdout: String,
    stderr: String,
    stdin: String,
}

const FENCE: &str = "```vlad example";
const STDOUT: &str = ";; ===>";
const STDERR: &str = ";; error ===>";
const STDIN: &str = ";; input:";

/// The text after `marker` on `line`, without the one space that follows it.
fn after<'a>(line: &'a str, marker: &str) -> Option<&'a str> {
    let i = line.find(marker)?;
    let rest = &line[i + marker.len()..];
    Some(rest.strip_prefix(' ').unwrap_or(rest).trim_end())
}

/// The examples of one Markdown text.
fn parse_examples(name: &str, text: &str) -> Vec<Example> {
    let mut out = Vec::new();
    let mut current: Option<Example> = None;
    for (i, line) in text.lines().enumerate() {
        match current.as_mut() {
            None => {
                if line.trim() == FENCE {
                    current = Some(Example {
                        origin: format!("{name}:{}", i + 1),
                        source: String::new(),
                        stdout: String::new(),
                        stderr: String::new(),
                        stdin: String::new(),
                    });
                }
            }
            Some(ex) => {
                if line.trim() == "```" {
                    out.extend(current.take());
                    continue;
                }
                ex.source.push_str(line);
                ex.source.push('\n');
                // `;; error ===>` contains no `;; ===>`, so the order of
                // these tests does not matter.
                if let Some(t) = after(line, STDERR) {
                    ex.stderr.push_str(t);
                    ex.stderr.push('\n');
                } else if let Some(t) = after(line, STDOUT) {
                    ex.stdout.push_str(t);
                    ex.stdout.push('\n');
                } else if let Some(t) = after(line, STDIN) {
                    ex.stdin.push_str(t);
                    ex.stdin.push('\n');
                }
            }
        }
    }
    assert!(current.is_none(), "{name}: unclosed ```vlad example block");
    out
}

fn docs_dir() -> PathBuf {
    repo_root().join("docs")
}

fn markdown_files() -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = std::fs::read_dir(docs_dir())
        .expect("docs/ exists")
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|e| e == "md"))
        .collect();
    v.sort();
    v
}

fn all_examples() -> Vec<Example> {
    let mut out = Vec::new();
    for path in markdown_files() {
        let text = std::fs::read_to_string(&path).expect("readable docs file");
        out.extend(parse_examples(&rel(&path), &text));
    }
    out
}

/// Compares one stream; `Some(message)` when it differs.
fn compare(what: &str, expected: &str, actual: &str) -> Option<String> {
    (expected != actual).then(|| {
        format!(
            "{what}: expected\n{}got\n{}",
            indent(expected),
            indent(actual)
        )
    })
}

fn indent(s: &str) -> String {
    if s.is_empty() {
        return "    <nothing>\n".into();
    }
    s.lines().map(|l| format!("    {l}\n")).collect()
}

/// Whether the run's status is what the example expects.
fn status_ok(ex: &Example, run: &Run) -> bool {
    !run.timed_out && run.status.is_some() && run.success() == ex.stderr.is_empty()
}

/// Runs `ex` interpreted and compiled in `dir`; the mismatches found.
fn check(ex: &Example, dir: &Path) -> Vec<String> {
    let _ = std::fs::create_dir_all(dir);
    let src = dir.join("prog.vlad");
    std::fs::write(&src, &ex.source).expect("writable temporary directory");
    let prefix = format!("{}{}", dir.display(), std::path::MAIN_SEPARATOR);
    let clean = |s: &str| s.replace(&prefix, "");
    let src_arg = src.to_string_lossy().into_owned();
    let stdin = Some(ex.stdin.as_bytes());
    let mut problems = Vec::new();

    let interp = run_stalingrad(&["run".into(), src_arg.clone()], stdin);
    let mut report = |how: &str, run: &Run| {
        let stderr = clean(&run.stderr);
        let found: Vec<String> = [
            compare("standard output", &ex.stdout, &run.stdout),
            compare("standard error", &ex.stderr, &stderr),
            (!status_ok(ex, run)).then(|| format!("unexpected {}", run.describe_status())),
        ]
        .into_iter()
        .flatten()
        .collect();
        if !found.is_empty() {
            problems.push(format!("{how}:\n{}", found.join("")));
        }
    };
    report("stalingrad run", &interp);

    let exe = dir.join("prog");
    let build = build_to(&src_arg, &exe);
    if build.success() {
        let compiled = run_program(&exe, &[], stdin);
        report("compiled", &compiled);
    } else if ex.stdout.is_empty() && !ex.stderr.is_empty() {
        report("stalingrad build", &build);
    } else {
        problems.push(format!(
            "stalingrad build failed ({})\n{}",
            build.describe_status(),
            clean(&build.stderr)
        ));
    }
    problems
}

fn scratch(name: &str) -> PathBuf {
    std::env::temp_dir().join(format!("stalingrad-docs-{}-{name}", std::process::id()))
}

#[test]
fn the_manuals_examples_print_what_they_say() {
    let examples = all_examples();
    assert!(
        examples.len() >= 10,
        "only {} ```vlad example blocks in docs/*.md",
        examples.len()
    );
    let root = scratch("examples");
    let mut failures = Failures::default();
    for (i, ex) in examples.iter().enumerate() {
        let problems = check(ex, &root.join(i.to_string()));
        if problems.is_empty() {
            println!("ok   {}", ex.origin);
        } else {
            failures.add(format!(
                "{}:\n{}\n--- program ---\n{}",
                ex.origin,
                problems.join("\n"),
                ex.source
            ));
        }
    }
    let _ = std::fs::remove_dir_all(&root);
    failures.finish("```vlad example blocks of docs/*.md", examples.len());
}

/// The checker itself: a wrong expectation on either stream, or a wrong
/// status, is reported, by the interpreter and by compiled code.
#[test]
fn a_wrong_expectation_is_caught() {
    let text = "```vlad example\n(+ 1 2) ;; ===> 4\n```\n\
                ```vlad example\n(car 5) ;; ===> 5\n```\n\
                ```vlad example\n(+ 1 2) ;; ===> 3\n;; error ===> boom\n```\n\
                ```vlad example\n(read-real) ;; ===> 7\n;; input: 7\n```\n";
    let examples = parse_examples("inline", text);
    assert_eq!(examples.len(), 4);
    let root = scratch("self-check");
    for (i, ex) in examples.iter().take(3).enumerate() {
        let problems = check(ex, &root.join(i.to_string()));
        assert_eq!(
            problems.len(),
            2,
            "both runs must fail for {:?}: {problems:?}",
            ex.source
        );
    }
    let problems = check(&examples[3], &root.join("3"));
    assert!(problems.is_empty(), "{problems:?}");
    let _ = std::fs::remove_dir_all(&root);
}

/// Names in backquotes in the headings and first table cells of `text`.
fn documented_names(text: &str) -> std::collections::BTreeSet<String> {
    let mut out = std::collections::BTreeSet::new();
    for line in text.lines() {
        let t = line.trim_start();
        let part = if t.starts_with('#') {
            t
        } else if let Some(row) = t.strip_prefix('|') {
            row.split('|').next().unwrap_or("")
        } else {
            continue;
        };
        for (i, piece) in part.split('`').enumerate() {
            if i % 2 == 1 {
                // A cell may show a call, `(car p)`: its operator is the name.
                let name = piece.trim_start_matches('(').split_whitespace().next();
                out.extend(name.map(|n| n.trim_end_matches(')').to_string()));
            }
        }
    }
    out
}

/// The names `(define (NAME ...` / `(define ((NAME ...` / `(define NAME`
/// at the start of a line of the standard library.
fn library_names() -> Vec<String> {
    syntax::expand::STDLIB
        .lines()
        .filter_map(|l| l.strip_prefix("(define "))
        .filter_map(|rest| {
            let name: String = rest
                .trim_start_matches('(')
                .chars()
                .take_while(|c| !c.is_whitespace() && *c != ')')
                .collect();
            (!name.is_empty()).then_some(name)
        })
        .collect()
}

#[test]
fn the_reference_covers_every_primitive_and_library_procedure() {
    let path = docs_dir().join("reference.md");
    let text = std::fs::read_to_string(&path).expect("docs/reference.md exists");
    let documented = documented_names(&text);
    let library = library_names();
    assert!(library.len() > 30, "too few library names: {library:?}");
    let mut failures = Failures::default();
    for p in ir::Prim::ALL {
        if !documented.contains(p.name()) {
            failures.add(format!("primitive `{}` is not documented", p.name()));
        }
    }
    for name in &library {
        if !documented.contains(name) {
            failures.add(format!("library procedure `{name}` is not documented"));
        }
    }
    failures.finish(
        "docs/reference.md documents the primitives and the library",
        ir::Prim::ALL.len() + library.len(),
    );
}

/// The most words `ARCHITECTURE.md` may have (issue 31: a map, not a history).
const MAP_MAX_WORDS: usize = 2_500;

/// The endings of a name in backquotes that make it a file path.
const PATH_ENDINGS: [&str; 7] = [".rs", ".md", ".vlad", ".c", ".toml", ".sh", ".svg"];

/// The names in backquotes of `text` that are paths, with their line
/// numbers; fenced blocks are skipped. A code span does not cross lines.
fn named_paths(text: &str) -> Vec<(usize, &str)> {
    let mut out = Vec::new();
    let mut fenced = false;
    for (i, line) in text.lines().enumerate() {
        if line.trim_start().starts_with("```") {
            fenced = !fenced;
            continue;
        }
        if fenced {
            continue;
        }
        for (j, span) in line.split('`').enumerate() {
            let is_path = j % 2 == 1
                && span.contains('/')
                && !span.contains(|c: char| c.is_whitespace() || c == '*')
                && (span.ends_with('/') || PATH_ENDINGS.iter().any(|e| span.ends_with(e)));
            if is_path {
                out.push((i + 1, span));
            }
        }
    }
    out
}

/// Whether `path`, as `ARCHITECTURE.md` writes it, exists under `root`:
/// from the root or from `crates/`, a directory when it ends in `/`.
fn path_exists(root: &Path, path: &str) -> bool {
    [root.to_path_buf(), root.join("crates")]
        .iter()
        .any(|base| {
            let p = base.join(path.trim_end_matches('/'));
            if path.ends_with('/') {
                p.is_dir()
            } else {
                p.is_file()
            }
        })
}

/// What is wrong with the map `text` (named `name`) under `root`, and how
/// many paths it names.
fn map_problems(root: &Path, name: &str, text: &str) -> (Vec<String>, usize) {
    let mut problems = Vec::new();
    let words = text.split_whitespace().count();
    if words >= MAP_MAX_WORDS {
        problems.push(format!(
            "{name} has {words} words; a map stays under {MAP_MAX_WORDS}"
        ));
    }
    let paths = named_paths(text);
    for (line, path) in &paths {
        if !path_exists(root, path) {
            problems.push(format!(
                "{name}:{line}: `{path}` exists neither from the root nor from crates/"
            ));
        }
    }
    (problems, paths.len())
}

#[test]
fn the_architecture_map_is_short_and_its_paths_exist() {
    let root = repo_root();
    let text = std::fs::read_to_string(root.join("ARCHITECTURE.md")).expect("ARCHITECTURE.md");
    let (problems, paths) = map_problems(&root, "ARCHITECTURE.md", &text);
    // The map points a newcomer at the files of every crate.
    assert!(paths >= 40, "ARCHITECTURE.md names only {paths} paths");
    let mut failures = Failures::default();
    for p in problems {
        failures.add(p);
    }
    failures.finish(
        "ARCHITECTURE.md: its length and the paths it names",
        paths + 1,
    );
}

/// The checker itself: which spans count as paths, both ways of writing
/// them, a missing file or directory, and the length limit.
#[test]
fn a_wrong_map_is_caught() {
    let root = repo_root();
    let text = "Read `fir/src/verify.rs`, `crates/fir/src/lib.rs`, `runtime/`\n\
                and `tests/emit/`; not `fir::verify`, `a b/c.rs`, `x/*.rs`, `+/-`.\n\
                ```\n`not/a/path.rs`\n```\n\
                Gone: `fir/src/nothing.rs` and `crates/nowhere/`.\n";
    let found: Vec<&str> = named_paths(text).into_iter().map(|(_, p)| p).collect();
    assert_eq!(
        found,
        [
            "fir/src/verify.rs",
            "crates/fir/src/lib.rs",
            "runtime/",
            "tests/emit/",
            "fir/src/nothing.rs",
            "crates/nowhere/"
        ]
    );
    let (problems, paths) = map_problems(&root, "inline", text);
    assert_eq!(paths, 6);
    assert_eq!(problems.len(), 2, "{problems:?}");
    assert!(problems[0].starts_with("inline:6: `fir/src/nothing.rs`"));
    // A file named as a directory is missing too.
    assert!(!path_exists(&root, "crates/fir/src/lib.rs/"));
    let long = "word ".repeat(MAP_MAX_WORDS);
    assert_eq!(map_problems(&root, "long", &long).0.len(), 1);
}
