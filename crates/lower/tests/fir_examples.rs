//! Every example program, lowered to FIR and run by the FIR evaluator,
//! prints exactly what the reference interpreter prints; and the FIR of
//! every example, test and benchmark program satisfies the FIR's
//! invariants (`fir::verify`) right after lowering and after each
//! optimisation pass, run one at a time so that a failure names the pass;
//! and, lowered and optimised, its text form (`fir::print`) reads back
//! (`fir::read`) into the same module, which verifies and prints the same
//! text.
//!
//! Programs the flow analysis cannot compile yet (they need unions of
//! shapes) are listed in [`NOT_YET_COMPILED`]; the test checks that they
//! are rejected with the analysis' message, so the list cannot go stale
//! silently.

use std::io::BufReader;
use std::path::{Path, PathBuf};

const NOT_YET_COMPILED: &[&str] = &[];

/// Is `f` one of [`NOT_YET_COMPILED`]?
fn listed(f: &Path) -> bool {
    let name = f.file_name().and_then(|n| n.to_str()).unwrap_or("");
    NOT_YET_COMPILED.contains(&name)
}

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn load(path: &Path) -> (ir::Program, driver::Session) {
    let mut session = driver::Session::new(Vec::new());
    let prog = session
        .load(path)
        .unwrap_or_else(|e| panic!("{}", session.render(&e)));
    (prog, session)
}

fn input_for(path: &Path) -> Vec<u8> {
    std::fs::read(path.with_extension("in")).unwrap_or_default()
}

/// What the interpreter prints (and its error, if any).
fn interpret(path: &Path) -> (String, Option<String>) {
    let (prog, session) = load(path);
    let input = input_for(path);
    let mut inp = BufReader::new(&input[..]);
    let mut out = Vec::new();
    let ran = session.interpret(prog, interp::Mode::Run, 0, &mut inp, &mut out);
    (
        String::from_utf8_lossy(&out).into_owned(),
        ran.result.err().map(|d| session.render(&d)),
    )
}

/// The interpreter, the analysis and the FIR evaluator recurse on the Rust
/// stack as deep as the programs do.
#[test]
fn fir_prints_what_the_interpreter_prints() {
    if let Err(e) = driver::stack::on_deep_stack(check_all) {
        panic!("{e}");
    }
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
        let (prog, session) = load(f);
        let module = match session.compile(prog) {
            Ok(m) => m,
            Err(d) => {
                let msg = session.render(&d);
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
fn lowered(path: &Path) -> Option<Result<fir::Module, String>> {
    let mut session = driver::Session::new(Vec::new());
    let lowered = session
        .load(path)
        .and_then(|prog| session.analyse(prog))
        .and_then(|analysis| session.lower_unoptimised(analysis));
    let m = match lowered {
        Ok(m) => m,
        Err(e) => return Some(Err(session.render(&e))),
    };
    // Definitions only: `main` prints nothing and calls nothing.
    let main = m.main?;
    if m.func(main).body.insts.is_empty() && m.funcs.len() == 1 {
        return None;
    }
    Some(Ok(m))
}

#[test]
fn every_program_verifies_after_lowering_and_after_each_pass() {
    if let Err(e) = driver::stack::on_deep_stack(verify_all) {
        panic!("{e}");
    }
}

fn verify_all() {
    let mut dirs = EXAMPLES.to_vec();
    dirs.extend(["tests/emit", "tests/corpus", "benches/programs"]);
    let files = programs(&dirs);
    assert!(files.len() > 40, "found only {} programs", files.len());
    let mut failures = Vec::new();
    let mut verified = 0;
    for f in &files {
        let name = f.strip_prefix(root()).unwrap_or(f).display().to_string();
        let mut m = match lowered(f) {
            None => continue,
            Some(Err(e)) if e.contains("not compiled yet") && listed(f) => continue,
            Some(Err(e)) => {
                failures.push(format!("{name}: does not compile: {e}"));
                continue;
            }
            Some(Ok(m)) => m,
        };
        if let Err(e) = reads_back(&m) {
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
        // Once more at the end only: reading after every pass too costs
        // seconds, and the filetests read the modules passes see.
        if let Err(e) = reads_back(&m) {
            failures.push(format!("{name}: optimised: {e}"));
        }
        verified += 1;
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    println!("{verified} programs verified");
}

/// The text form of `m` reads back into a module that verifies, prints
/// the same text and is `m` (but for the types of values never defined).
fn reads_back(m: &fir::Module) -> Result<(), String> {
    let text = fir::print::module(m);
    let back = fir::read::module(&text).map_err(|e| format!("its text does not read back: {e}"))?;
    fir::verify::verify(&back)
        .map_err(|e| format!("its text reads back into a module that does not verify: {e}"))?;
    if fir::print::module(&back) != text {
        return Err("its text reads back into a module that prints differently".into());
    }
    // And it is the module printed, with the types of the values it
    // defines (`Debug`, under which a NaN constant equals itself).
    if (&back.strings, back.main, back.funcs.len()) != (&m.strings, m.main, m.funcs.len()) {
        return Err("its text reads back into another module".into());
    }
    for (f, g) in m.funcs.iter().zip(&back.funcs) {
        let mut defined: Vec<usize> = (0..f.params.len()).collect();
        g.body
            .clone()
            .for_each_result_mut(&mut |v| defined.push(v.number() as usize));
        let same_types = defined.iter().all(|&i| f.types.get(i) == g.types.get(i));
        let shown =
            |f: &fir::Func| format!("{} {:?} {:?} {:?}", f.name, f.params, f.returns, f.body);
        if !same_types || shown(f) != shown(g) {
            return Err(format!(
                "its text reads back into another function `{}`",
                f.name
            ));
        }
    }
    Ok(())
}
