//! The core IR of `stalingrad`: what the front end (crate `syntax`,
//! `syntax::anf`) produces and every later stage reads.
//!
//! [`core::Program`] is alpha-converted A-normal form held in arenas
//! (`base::entity`). The AD transformations (crate `ad`) map lambdas of
//! this IR to new lambdas of the same IR; the interpreter and the flow
//! analysis both consume it. [`print`] gives its stable text form.
//!
//! Dependencies: `base` only. What later stages need of the source (spans,
//! the expectations of `stalingrad test`) the IR holds in its own types,
//! so that no stage after the front end depends on it.

pub mod core;
pub mod prelude;
pub mod prim;
pub mod print;

pub use crate::core::*;
pub use base::entity;
pub use base::entity::{Arena, EntityRef};
pub use prim::{Expects, Prim, PrimKind, Scalar};
