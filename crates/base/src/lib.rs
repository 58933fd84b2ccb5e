//! What several stages share and must not write twice, with no
//! dependencies of its own, so that every crate (the FIR and code
//! generation included, which know nothing of the front end) can use it.
//!
//! - [`boolean`]: how a boolean prints.
//! - [`counters`]: the layout of the operation counters.
//! - [`diag`]: source positions, the files a program was read from, and
//!   the error every stage reports with (the front end makes them, every
//!   later stage reports through them).
//! - [`entity`]: typed ids into arenas.
//! - [`message`]: how values are shortened in error messages.
//! - [`scalar`]: the arithmetic of reals, for every stage that computes it.
//! - [`flush`]: when printed output leaves its buffer (`run` and the
//!   runtime).
//! - [`memory`]: the memory budget, and out-of-memory as a clean error.
//! - [`timing`]: the time and heap of each stage of a build
//!   (`--time-passes`, `VLAD_PASS_TRACE`).
//! - [`stack_sizes`]: the stacks the CLI and compiled programs ask for.
//! - [`stack`]: the stack a thread may recurse on, checked where the
//!   interpreter and the analysis recurse.
//! - [`scc`]: strongly connected components (the top level's `letrec*`
//!   ordering, the FIR inliner's call graph).
//! - [`number`]: reading and printing reals (for every stage but the
//!   runtime), over [`number_core`].
//! - [`number_core`]: reading and printing reals. It uses only `core`:
//!   the native runtime (`runtime/`, `no_std`, built by `rustc` without
//!   Cargo) includes the very file with `#[path]`, so that compiled
//!   programs print byte for byte as the interpreter does. Every module
//!   marked *core-only* below is shared the same way; keep them free of
//!   `std` and `alloc`.

/// Core-only.
pub mod boolean;
/// Core-only.
pub mod cell_layout;
/// Core-only.
pub mod counters;
pub mod diag;
pub mod entity;
/// Core-only.
pub mod flush;
pub mod memory;
/// Core-only.
pub mod message;
pub mod number;
/// Core-only.
pub mod number_core;
pub mod scalar;
pub mod scc;
pub mod stack;
/// Core-only.
pub mod stack_sizes;
pub mod timing;

pub use entity::{Arena, EntityRef};
