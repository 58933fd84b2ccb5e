//! Lowering: the specialised program of the flow analysis to the
//! first-order IR of [`fir`].
//!
//! (The flow analysis and the lowering itself are being written; the FIR,
//! its text form and its evaluator come first so that code generation can
//! be built and tested against them.)

pub mod fir;
