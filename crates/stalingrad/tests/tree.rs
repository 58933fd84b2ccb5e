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
