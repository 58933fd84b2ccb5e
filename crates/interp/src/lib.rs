//! The reference interpreter: `stalingrad run` and `stalingrad test`.
//!
//! Input: a core IR [`ir::Program`]. Output: the program's printed values
//! (or test report) and operation counts. It applies the AD
//! transformations of crate `ad` at run time, memoised per lambda, so it is
//! the oracle compiled code is checked against: simple, exact, and faithful
//! to the language's definition rather than fast.
//!
//! Dependencies: `base` (positions, errors, numerals), `ir` and `ad`; the
//! front end (`syntax`) only for [`run_text`], which loads a program from
//! source text.

mod adops;
pub mod count;
pub mod eval;
mod memo;
mod prims;
pub mod value;

pub use count::Counters;
pub use eval::{Interp, Mode, RunError, TestReport};
pub use value::Value;

/// Loads, expands and runs the program `text` (named `gen.vlad` in
/// messages) with `stdin` as its standard input, on a thread with a stack
/// of `stack` bytes: what the program printed, or the rendered error. A
/// panic of the interpreter is an `Err` starting with `PANIC`. For tests
/// that run many generated programs in-process.
pub fn run_text(text: String, stdin: Vec<u8>, stack: usize) -> Result<String, String> {
    let spawned = std::thread::Builder::new()
        .stack_size(stack)
        .spawn(move || {
            let mut map = base::diag::SourceMap::new();
            let opts = syntax::expand::Options::default();
            let path = std::path::Path::new("gen.vlad");
            let ast = syntax::expand::load_source(&mut map, path, text, &opts)
                .map_err(|d| d.render(&map))?;
            let prog = syntax::anf::lower_program(&ast).map_err(|d| d.render(&map))?;
            let mut input: &[u8] = &stdin;
            let mut out = Vec::new();
            let mut it = Interp::new(prog, &mut input, &mut out);
            let r = it.run_main(Mode::Run, &map);
            drop(it);
            r.map_err(|d| d.render(&map))?;
            Ok(String::from_utf8_lossy(&out).into_owned())
        });
    let handle =
        spawned.map_err(|e| format!("PANIC: cannot start the interpreter's thread: {e}"))?;
    handle.join().unwrap_or_else(|p| {
        let msg = p
            .downcast_ref::<String>()
            .cloned()
            .or_else(|| p.downcast_ref::<&str>().map(|s| s.to_string()))
            .unwrap_or_default();
        Err(format!("PANIC in the interpreter: {msg}"))
    })
}
