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
    lower_and_optimize(analysis, map)
}

/// Lowering to FIR, then the FIR passes, unless `VLAD_NO_OPT` is set (to
/// tell a lowering bug from an optimisation bug). `build` and every test
/// that compiles go through here, so they compile alike.
///
/// The lowered module is verified in every build, not only in debug
/// builds: a lowering bug is then a clean error naming the broken
/// invariant, never a panic in a later pass or wrong code.
pub fn lower_and_optimize(
    analysis: flow::Analysis,
    map: &syntax::SourceMap,
) -> Result<fir::Module, syntax::Diagnostic> {
    let mut m = base::timing::time("lower", || lower::lower(analysis, map));
    if let Err(e) = base::timing::time("verify", || fir::verify::verify(&m)) {
        return Err(syntax::Diagnostic::new(
            None,
            format!("internal error: the compiler cannot compile this program yet (lowering broke an invariant of the FIR: {e})"),
        ));
    }
    if std::env::var_os("VLAD_NO_OPT").is_none() {
        if let Err(e) = fir::optimize(&mut m) {
            return Err(syntax::Diagnostic::new(
                None,
                format!("internal error: the compiler cannot compile this program yet ({e})"),
            ));
        }
    }
    Ok(m)
}
