//! The project stands on its own: no file names a path of the machine it
//! was developed on or material outside the repository, and every
//! `examples/...` file the README and the CLI's help name exists.

mod common;

use common::*;
use std::path::{Path, PathBuf};

/// Every file of the repository but build output and version control.
fn files(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for e in entries.flatten() {
        let p = e.path();
        let name = e.file_name();
        let name = name.to_string_lossy();
        if name == "target" || name == ".git" || name.starts_with(".ci-") {
            continue;
        }
        if p.is_dir() {
            files(&p, out);
        } else {
            out.push(p);
        }
    }
}

#[test]
fn no_file_names_the_development_machine() {
    // Assembled so that this file does not match itself.
    let forbidden = [
        format!("..{}shared", '/'),
        format!("{}work{}", '/', '/'),
        format!("{}home{}", '/', '/'),
        format!("{}root{}", '/', '/'),
    ];
    let mut all = Vec::new();
    files(&repo_root(), &mut all);
    let mut failures = Failures::default();
    for f in &all {
        let Ok(text) = std::fs::read_to_string(f) else {
            continue; // binary files
        };
        for bad in &forbidden {
            if let Some(line) = text.lines().position(|l| l.contains(bad.as_str())) {
                failures.add(format!("{}:{}: names `{bad}`", rel(f), line + 1));
            }
        }
    }
    failures.finish("files free of machine paths", all.len());
}

#[test]
fn the_examples_the_readme_and_help_name_exist() {
    let root = repo_root();
    let mut texts = vec![std::fs::read_to_string(root.join("README.md")).unwrap_or_default()];
    texts.push(
        std::fs::read_to_string(root.join("crates/stalingrad/src/main.rs")).unwrap_or_default(),
    );
    let mut failures = Failures::default();
    let mut checked = 0;
    for text in &texts {
        for (i, _) in text.match_indices("examples/") {
            let name: String = text[i..]
                .chars()
                .take_while(|c| c.is_ascii_alphanumeric() || matches!(c, '/' | '-' | '_' | '.'))
                .collect();
            let name = name.trim_end_matches('.');
            if !name.ends_with(".vlad") {
                continue;
            }
            checked += 1;
            if !root.join(name).is_file() {
                failures.add(format!("`{name}` is named but does not exist"));
            }
        }
    }
    assert!(checked > 0, "no examples named");
    failures.finish("examples named in the README and the help", checked);
}

/// The wording of run-time errors is written once, in `ir::message` (and,
/// for the native runtime's `read-real`, `base::message`): no other source
/// file spells a message of a primitive, of application or of patterns in
/// a string literal. Unit tests, which state the text they expect, are
/// left out.
#[test]
fn run_time_messages_are_written_only_in_their_table() {
    let root = repo_root();
    let tables = ["crates/ir/src/message.rs", "crates/base/src/message.rs"];
    let fragments = [
        " expects ",
        base::message::END_OF_INPUT,
        "non-procedure",
        "expected a pair",
    ];
    let mut sources = Vec::new();
    for dir in ["crates", "runtime"] {
        files(&root.join(dir), &mut sources);
    }
    sources.retain(|f| {
        let r = rel(f);
        r.ends_with(".rs") && r.contains("/src/") && !tables.contains(&r.as_str())
    });
    let mut failures = Failures::default();
    for f in &sources {
        let Ok(text) = std::fs::read_to_string(f) else {
            continue;
        };
        let code = text.lines().take_while(|l| l.trim() != "#[cfg(test)]");
        for (i, line) in code.enumerate() {
            if line.trim_start().starts_with("//") {
                continue;
            }
            // The odd pieces between quotes are the string literals.
            let literals = line.split('"').skip(1).step_by(2);
            for lit in literals {
                if let Some(frag) = fragments.iter().find(|x| lit.contains(*x)) {
                    failures.add(format!(
                        "{}:{}: spells `{frag}` outside the table of messages",
                        rel(f),
                        i + 1
                    ));
                }
            }
        }
    }
    assert!(sources.len() > 50, "too few sources found");
    failures.finish("sources free of message literals", sources.len());
}

/// The pipeline is run by crate `driver` alone: outside it, no source
/// (test or not) calls a stage's entry point, but in the crate that
/// defines that stage. So each build, run and test composes the stages
/// one way (`driver::Session`), with its timing, memory phase and stack.
#[test]
fn only_the_driver_calls_the_stages() {
    let root = repo_root();
    // Entry point, and the crate that defines it. Assembled so that this
    // file does not match itself.
    let stages = [
        ("expand::load_program", "crates/syntax/"),
        ("expand::load_source", "crates/syntax/"),
        ("expand::expand_forms", "crates/syntax/"),
        ("lower_program", "crates/ir/"),
        ("flow::analyze", "crates/flow/"),
        ("lower::to_fir", "crates/lower/"),
        ("fir::optimize", "crates/fir/"),
        ("Interp::new", "crates/interp/"),
    ];
    let mut sources = Vec::new();
    for dir in ["crates", "benches"] {
        files(&root.join(dir), &mut sources);
    }
    sources.retain(|f| {
        let r = rel(f);
        r.ends_with(".rs") && !r.starts_with("crates/driver/")
    });
    let mut failures = Failures::default();
    for f in &sources {
        let r = rel(f);
        let Ok(text) = std::fs::read_to_string(f) else {
            continue;
        };
        for (i, line) in text.lines().enumerate() {
            if line.trim_start().starts_with("//") {
                continue;
            }
            for (entry, home) in &stages {
                if line.contains(&format!("{entry}(")) && !r.starts_with(home) {
                    failures.add(format!(
                        "{r}:{}: calls `{entry}`, a stage only the driver runs",
                        i + 1
                    ));
                }
            }
        }
    }
    assert!(sources.len() > 100, "too few sources found");
    failures.finish("stage entry points outside the driver", sources.len());
}
