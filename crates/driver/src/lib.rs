//! The driver: the one place that runs stalingrad's pipeline.
//!
//! ```text
//! .vlad --Parse--> core AST --Core--> core IR --Run--> output          (run, test, repl)
//!                                      core IR --Analysis--> flow::Analysis
//!       --Lower (+ verify, FIR passes)--> fir::Module --Codegen--> object --Link--> executable
//! ```
//!
//! Input: a program (a file, a text, or forms read by the REPL or a
//! library build) and the options of a command. Output: whatever stage
//! the caller stops at: the core IR, its output under the interpreter,
//! the text of a stage (`--emit`), a FIR module, an object, an
//! executable.
//!
//! Invariants:
//! - every stage is entered through [`Stage::run`], which sets its memory
//!   phase and opens its `--time-passes` span: the stages are data
//!   ([`STAGES`]), not conventions repeated at each call site;
//! - no other crate calls two stages in sequence: the CLI (`build`, `run`,
//!   `test`, `repl`, `--lib`, `gradbench`) and the tests go through a
//!   [`Session`];
//! - the stack the stages recurse on is sized here ([`stack`]), and the
//!   memory budget set here ([`set_memory_budget`]).

mod emit;
mod session;
pub mod stack;
mod stage;

pub use emit::{renamed, Emit, NAMES as EMIT_NAMES};
pub use session::{Interpreted, Session};
pub use stage::{Stage, StageInfo, STAGES};

/// Caps the memory every later allocation counts against (`base::memory`):
/// `bytes`, or by default three quarters of the smaller of physical memory
/// and the address-space cap.
pub fn set_memory_budget(bytes: Option<usize>) {
    if let Some(budget) = bytes.or_else(base::memory::default_budget) {
        base::memory::set_budget(budget);
    }
}

/// Runs the program `text` (named `gen.vlad` in messages) with the
/// interpreter, `stdin` as its input, on a thread of `stack` bytes: what it
/// printed, or the rendered error. A panic is an `Err` starting with
/// `PANIC`. For tests that run many generated programs in one process.
pub fn run_text(text: String, stdin: Vec<u8>, stack: usize) -> Result<String, String> {
    let ran = stack::on_stack(stack, move || {
        let mut session = Session::new(Vec::new());
        let prog = session
            .load_text(std::path::Path::new("gen.vlad"), text)
            .map_err(|d| session.render(&d))?;
        let mut input: &[u8] = &stdin;
        let mut out = Vec::new();
        let ran = session.interpret(prog, interp::Mode::Run, 0, &mut input, &mut out);
        ran.result.map_err(|d| session.render(&d))?;
        Ok(String::from_utf8_lossy(&out).into_owned())
    });
    match ran {
        Ok(r) => r,
        Err(stack::Failure::Panicked(msg)) => Err(format!("PANIC in the interpreter: {msg}")),
        Err(e @ stack::Failure::NoStack { .. }) => {
            Err(format!("PANIC: cannot start the interpreter's thread: {e}"))
        }
    }
}
