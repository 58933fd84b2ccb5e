//! The core IR of `stalingrad` and its construction from the core AST.
//!
//! Input: [`syntax::ast::Program`]. Output: [`core::Program`], alpha-converted
//! A-normal form held in arenas (`base::entity`). The AD transformations (crate
//! `ad`) map lambdas of this IR to new lambdas of the same IR; the
//! interpreter and the flow analysis both consume it. [`print`](mod@print) gives its
//! stable text form, [`message`] the wording of run-time errors and
//! [`printer`] the printed form of values.
//!
//! [`anf`] is the conversion (alpha conversion and A-normal form), and
//! [`prelude`] the AD prelude as core IR, which crate `ad` copies
//! transformed primitives from.
//!
//! Dependencies: `base` and the front end (`syntax`, whose AST is this
//! crate's input). What later stages need of the source (spans, the
//! expectations of `stalingrad test`) the IR holds in its own types, so
//! that they need only this crate and `base`.

pub mod anf;
pub mod core;
pub mod message;
pub mod operators;
pub mod prelude;
pub mod prim;
pub mod print;
pub mod printer;

pub use crate::core::*;
pub use base::entity;
pub use base::entity::{Arena, EntityRef};
pub use message::Expects;
pub use prim::{Prim, PrimKind, Scalar};
