//! Runs the front end over the repository's example and test programs:
//! every program that should run must load, and every compile-time error
//! test (`tests/errors/*.vlad` with `;; error:` and `;; at:` headers) that
//! the front end rejects must be rejected with the expected message and
//! position. Errors found by later stages (unbound variables, run-time
//! errors) load successfully here and are checked elsewhere.

use std::path::{Path, PathBuf};

use base::diag::SourceMap;
use syntax::expand::{load_program, Options};

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn vlad_files(dir: &Path) -> Vec<PathBuf> {
    let mut out: Vec<PathBuf> = match std::fs::read_dir(dir) {
        Ok(rd) => rd
            .filter_map(|e| e.ok().map(|e| e.path()))
            .filter(|p| p.extension().is_some_and(|x| x == "vlad"))
            .collect(),
        Err(_) => Vec::new(),
    };
    out.sort();
    out
}

/// Header lines `;; key: value`.
fn headers(text: &str, key: &str) -> Vec<String> {
    let prefix = format!(";; {key}:");
    text.lines()
        .filter_map(|l| l.strip_prefix(&prefix).map(|v| v.trim().to_string()))
        .collect()
}

/// `-I` directories from an `;; args:` header, relative to the repository.
fn options(text: &str) -> Options {
    let mut include_dirs = Vec::new();
    for args in headers(text, "args") {
        let words: Vec<&str> = args.split_whitespace().collect();
        for w in words.windows(2) {
            if w[0] == "-I" {
                include_dirs.push(repo().join(w[1]));
            }
        }
    }
    Options { include_dirs }
}

#[test]
fn programs_that_run_load() {
    let mut files = vlad_files(&repo().join("examples"));
    files.extend(vlad_files(&repo().join("tests/run")));
    files.extend(vlad_files(&repo().join("tests/complexity")));
    for f in files {
        let text = std::fs::read_to_string(&f).unwrap_or_default();
        let mut map = SourceMap::new();
        if let Err(e) = load_program(&mut map, &f, &options(&text)) {
            panic!("{}: {}", f.display(), e.render(&map));
        }
    }
}

#[test]
fn compile_time_errors() {
    for f in vlad_files(&repo().join("tests/errors")) {
        let text = std::fs::read_to_string(&f).unwrap_or_default();
        let mut map = SourceMap::new();
        let e = match load_program(&mut map, &f, &options(&text)) {
            Ok(_) => continue, // found by a later stage
            Err(e) => e,
        };
        let rendered = e.render(&map);
        for want in headers(&text, "error") {
            assert!(
                want.split('|').any(|alt| rendered.contains(alt)),
                "{}: expected {want:?} in {rendered}",
                f.display()
            );
        }
        for at in headers(&text, "at") {
            let span = e
                .span
                .unwrap_or_else(|| panic!("{}: no position", f.display()));
            let (file, lc) = match at.rsplit_once(':').and_then(|(a, c)| {
                a.rsplit_once(':')
                    .map(|(file, l)| (Some(file.to_string()), format!("{l}:{c}")))
            }) {
                Some((Some(file), lc)) if !file.is_empty() => (Some(file), lc),
                _ => (None, at.clone()),
            };
            let got = format!("{}:{}", span.line, span.col);
            assert_eq!(got, lc, "{}: {rendered}", f.display());
            let path = map.path(span.file).display().to_string();
            match file {
                Some(file) => assert!(path.ends_with(&file), "{}: {rendered}", f.display()),
                None => assert_eq!(map.path(span.file), f.as_path(), "{rendered}"),
            }
        }
    }
}

/// Prints what the front end says about each error test, for a human to
/// read: `cargo test -p syntax --test repo_programs -- --ignored --nocapture`.
#[test]
#[ignore]
fn show_error_messages() {
    for f in vlad_files(&repo().join("tests/errors")) {
        let text = std::fs::read_to_string(&f).unwrap_or_default();
        let mut map = SourceMap::new();
        match load_program(&mut map, &f, &options(&text)) {
            Ok(_) => println!("{}: loads", f.display()),
            Err(e) => println!("{}", e.render(&map)),
        }
    }
}
