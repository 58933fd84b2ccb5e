//! Every example program, lowered to FIR and run by the FIR evaluator,
//! prints exactly what the reference interpreter prints.
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

fn load(path: &Path) -> (ir::Program, syntax::SourceMap) {
    let mut map = syntax::SourceMap::new();
    let ast = syntax::expand::load_program(&mut map, path, &Default::default())
        .unwrap_or_else(|e| panic!("{}", e.render(&map)));
    let prog = ir::anf::lower_program(&ast).unwrap_or_else(|e| panic!("{}", e.render(&map)));
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

fn check_all() {
    let mut files = Vec::new();
    for dir in [
        "examples",
        "tests/compile",
        "tests/ad",
        "tests/lang",
        "tests/regressions",
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
