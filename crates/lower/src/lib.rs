//! Lowering: the specialised program of the flow analysis to the
//! first-order IR of crate `fir`.
//!
//! Input: a [`flow::Analysis`] after its fixpoint. Output: a
//! [`fir::Module`] that satisfies `fir::verify` (the driver checks it
//! after lowering in every build, then runs the FIR passes): one function per live specialisation, every value in the
//! representation its abstract value calls for.

pub mod lower;

pub use lower::{layout, lower};
