//! The reference interpreter: `stalingrad run` and `stalingrad test`.
//!
//! Input: a core IR [`ir::Program`]. Output: the program's printed values
//! (or test report) and operation counts. It applies the AD
//! transformations of crate `ad` at run time, memoised per lambda, so it is
//! the oracle compiled code is checked against: simple, exact, and faithful
//! to the language's definition rather than fast.
//!
//! Dependencies: `base` (positions, errors, numerals), `ir` and `ad`, not
//! the front end: crate `driver` loads programs and hands them over.

mod adops;
pub mod count;
pub mod eval;
mod memo;
mod prims;
pub mod value;
pub mod vector;

pub use count::Counters;
pub use eval::{Interp, Mode, RunError, TestReport};
pub use value::Value;
