//! Lowering: the specialised program of the flow analysis to the
//! first-order IR of [`fir`].
//!
//! (The flow analysis and the lowering itself are being written; the FIR,
//! its text form and its evaluator come first so that code generation can
//! be built and tested against them.)

pub mod fir;
pub mod fir_eval;
pub mod fir_print;
pub mod lower;
pub mod opt;
pub mod params;
pub mod schedule;
pub mod simplify;

pub use lower::{layout, lower};

/// The whole middle end: flow analysis, then lowering to FIR.
pub fn compile(
    prog: ir::Program,
    map: &syntax::SourceMap,
) -> Result<fir::Module, syntax::Diagnostic> {
    let analysis = flow::analyze(prog)?;
    let mut m = lower::lower(analysis, map);
    opt::optimize(&mut m);
    Ok(m)
}
