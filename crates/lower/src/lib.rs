//! Lowering: the specialised program of the flow analysis to the
//! first-order IR of crate `fir`.
//!
//! Input: a [`flow::Analysis`] after its fixpoint. Output: a
//! [`fir::Module`] that satisfies `fir::verify` (checked after lowering in
//! debug builds): one function per live specialisation, every value in the
//! representation its abstract value calls for.

pub mod lower;

pub use lower::{layout, lower};

/// The whole middle end: flow analysis, then [`lower_and_optimize`].
pub fn compile(
    prog: ir::Program,
    map: &syntax::SourceMap,
) -> Result<fir::Module, syntax::Diagnostic> {
    let analysis = flow::analyze(prog)?;
    Ok(lower_and_optimize(analysis, map))
}

/// Lowering to FIR, then the FIR passes, unless `VLAD_NO_OPT` is set (to
/// tell a lowering bug from an optimisation bug). `build` and every test
/// that compiles go through here, so they compile alike.
pub fn lower_and_optimize(analysis: flow::Analysis, map: &syntax::SourceMap) -> fir::Module {
    let mut m = lower::lower(analysis, map);
    if std::env::var_os("VLAD_NO_OPT").is_none() {
        fir::optimize(&mut m);
    }
    m
}
