//! How a boolean prints, written once for `ir::printer` (booleans known
//! where printing is decided) and for the FIR evaluator and the native
//! runtime (booleans known only at run time), as `number_core` is for
//! reals. Core-only: the runtime includes this file with `#[path]`.

/// The printed form of `b`.
pub fn text(b: bool) -> &'static str {
    if b {
        "#t"
    } else {
        "#f"
    }
}
