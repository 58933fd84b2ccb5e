//! Lowering: the specialised program of the flow analysis to the
//! first-order IR of crate `fir`.
//!
//! Input: a [`flow::Analysis`] after its fixpoint. Output: a
//! [`fir::Module`] that satisfies `fir::verify` (checked after lowering in
//! debug builds): one function per live specialisation, every value in the
//! representation its abstract value calls for.

pub mod lower;

pub use lower::{layout, lower};

/// The whole middle end: flow analysis, lowering to FIR, then the FIR
/// passes (skipped when `VLAD_NO_OPT` is set, as `build` does).
pub fn compile(
    prog: ir::Program,
    map: &syntax::SourceMap,
) -> Result<fir::Module, syntax::Diagnostic> {
    let analysis = flow::analyze(prog)?;
    let mut m = lower::lower(analysis, map);
    if std::env::var_os("VLAD_NO_OPT").is_none() {
        fir::optimize(&mut m);
    }
    Ok(m)
}
