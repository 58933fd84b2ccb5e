//! Every example program, lowered to FIR and run by the FIR evaluator,
//! prints exactly what the reference interpreter prints; and the FIR of
//! every example, test and benchmark program satisfies the FIR's
//! invariants (`fir::verify`) right after lowering and after each
//! optimisation pass, run one at a time so that a failure names the pass.
//!
//! Programs the flow analysis cannot compile yet (they need unions of
//! shapes) are listed in [`NOT_YET_COMPILED`]; the test checks that they
//! are rejected with the analysis' message, so the list cannot go stale
//! silently.

use std::io::BufReader;
use std::path::{Path, PathBuf};

const NOT_YET_COMPILED: &[&str] = &[];

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn load(path: &Path) -> (ir::Program, base::diag::SourceMap) {
    let mut map = base::diag::SourceMap::new();
    let ast = syntax::expand::load_program(&mut map, path, &Default::default())
        .unwrap_or_else(|e| panic!("{}", e.render(&map)));
    let prog = syntax::anf::lower_program(&ast).unwrap_or_else(|e| panic!("{}", e.render(&map)));
    (prog, map)
}

fn input_for(path: &Path) -> Vec<u8> {
    std::fs::read(path.with_extension("in")).unwrap_or_default()
}

/// What the interpreter prints (and its error, if any).
fn interpret(path: &Path) -> (String, Option<String>) {
    let (prog, map) = load(path);
    let input = input_for(path);
    let mut inp = BufReader::new(&input[..]);
    let mut out = Vec::new();
    let mut it = interp::Interp::new(prog, &mut inp, &mut out);
    let r = it.run_main(interp::Mode::Run, &map);
    drop(it);
    (
        String::from_utf8_lossy(&out).into_owned(),
        r.err().map(|d| d.render(&map)),
    )
}

/// The interpreter, the analysis and the FIR evaluator recurse on the Rust
/// stack as deep as the programs do.
#[test]
fn fir_prints_what_the_interpreter_prints() {
    std::thread::Builder::new()
        .stack_size(1 << 30)
        .spawn(check_all)
        .expect("thread")
        .join()
        .expect("the check panicked");
}

/// The `.vlad` files of the given directories of the repository, sorted.
fn programs(dirs: &[&str]) -> Vec<PathBuf> {
    let mut files = Vec::new();
    for dir in dirs {
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

const EXAMPLES: &[&str] = &[
    "examples",
    "tests/compile",
    "tests/ad",
    "tests/lang",
    "tests/regressions",
];

fn check_all() {
    let files = programs(EXAMPLES);
    let mut failures = Vec::new();
    for f in &files {
        let name = f
            .file_name()
            .and_then(|n| n.to_str())
            .unwrap_or("")
            .to_string();
        let (prog, map) = load(f);
        let module = match lower::compile(prog, &map) {
            Ok(m) => m,
            Err(d) => {
                let msg = d.render(&map);
                if NOT_YET_COMPILED.contains(&name.as_str()) && msg.contains("not compiled yet") {
                    println!("{name}: not compiled yet (as listed)");
                } else {
                    failures.push(format!("{name}: compile error: {msg}"));
                }
                continue;
            }
        };
        if NOT_YET_COMPILED.contains(&name.as_str()) {
            failures.push(format!(
                "{name}: compiles now; take it off NOT_YET_COMPILED"
            ));
        }
        let input = input_for(f);
        let mut inp = BufReader::new(&input[..]);
        let mut out = Vec::new();
        let r = fir::eval::run(&module, &mut inp, &mut out);
        let fir_out = String::from_utf8_lossy(&out).into_owned();
        let (want, want_err) = interpret(f);
        if fir_out != want {
            failures.push(format!(
                "{name}: output differs\n--- interpreter\n{want}--- FIR\n{fir_out}"
            ));
        } else if r.is_err() != want_err.is_some() {
            failures.push(format!("{name}: error differs: {r:?} vs {want_err:?}"));
        } else {
            println!("{name}: {} lines identical", want.lines().count());
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// `None` for a file that is not a program (a benchmark's shared
/// definitions, included by the programs).
fn lower_program(path: &Path) -> Option<Result<fir::Module, String>> {
    let mut map = base::diag::SourceMap::new();
    let ast = match syntax::expand::load_program(&mut map, path, &Default::default()) {
        Ok(a) => a,
        Err(e) => return Some(Err(e.render(&map))),
    };
    let prog = match syntax::anf::lower_program(&ast) {
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
        .spawn(verify_all)
        .expect("thread")
        .join()
        .expect("the check panicked");
}

fn verify_all() {
    let mut dirs = EXAMPLES.to_vec();
    dirs.extend(["tests/emit", "benches/programs"]);
    let files = programs(&dirs);
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
