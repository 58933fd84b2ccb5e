//! The FIR of every example, test and benchmark program satisfies the
//! FIR's invariants (`fir::verify`) right after lowering and after each
//! optimisation pass, run one at a time so that a failure names the pass.

use std::path::{Path, PathBuf};

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn programs() -> Vec<PathBuf> {
    let mut files = Vec::new();
    for dir in [
        "examples",
        "tests/compile",
        "tests/ad",
        "tests/lang",
        "tests/regressions",
        "tests/emit",
        "benches/programs",
    ] {
        let Ok(rd) = std::fs::read_dir(root().join(dir)) else {
            continue;
        };
        let mut v: Vec<PathBuf> = rd
            .filter_map(|e| e.ok().map(|e| e.path()))
            .filter(|p| p.extension().is_some_and(|x| x == "vlad"))
            .collect();
        v.sort();
        files.extend(v);
    }
    files
}

/// `None` for a file that is not a program (a benchmark's shared
/// definitions, included by the programs).
fn lower_program(path: &Path) -> Option<Result<fir::Module, String>> {
    let mut map = syntax::SourceMap::new();
    let ast = match syntax::expand::load_program(&mut map, path, &Default::default()) {
        Ok(a) => a,
        Err(e) => return Some(Err(e.render(&map))),
    };
    let prog = match ir::anf::lower_program(&ast) {
        Ok(p) => p,
        Err(e) => return Some(Err(e.render(&map))),
    };
    let analysis = match flow::analyze(prog) {
        Ok(a) => a,
        Err(e) => return Some(Err(e.render(&map))),
    };
    let m = lower::lower(analysis, &map);
    // Definitions only: `main` prints nothing and calls nothing.
    let main = m.main?;
    if m.func(main).body.insts.is_empty() && m.funcs.len() == 1 {
        return None;
    }
    Some(Ok(m))
}

#[test]
fn every_program_verifies_after_lowering_and_after_each_pass() {
    std::thread::Builder::new()
        .stack_size(1 << 30)
        .spawn(check_all)
        .expect("thread")
        .join()
        .expect("the check panicked");
}

fn check_all() {
    let files = programs();
    assert!(files.len() > 40, "found only {} programs", files.len());
    let mut failures = Vec::new();
    let mut verified = 0;
    for f in &files {
        let name = f.strip_prefix(root()).unwrap_or(f).display().to_string();
        let mut m = match lower_program(f) {
            None => continue,
            Some(Err(e)) => {
                failures.push(format!("{name}: does not compile: {e}"));
                continue;
            }
            Some(Ok(m)) => m,
        };
        if let Err(e) = fir::verify::verify(&m) {
            failures.push(format!("{name}: after lowering: {e}"));
            continue;
        }
        for (pass, run) in fir::passes::PIPELINE {
            run(&mut m);
            if let Err(e) = fir::verify::verify(&m) {
                failures.push(format!("{name}: after `{pass}`: {e}"));
                break;
            }
        }
        verified += 1;
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    println!("{verified} programs verified");
}
