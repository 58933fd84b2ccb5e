//! The layout of union cells that compiled code and the runtime's heap
//! must agree on. Written once: code generation (`codegen`) emits the
//! allocation fast path from it, and the runtime (`runtime/src/gc/`,
//! which includes this file) keeps the regions it describes.
//!
//! A cell is a header word (the member's tag in its first four bytes; in
//! the next four, the number of leading pointer slots shifted left by one,
//! and the zero mark in bit 0) and then one 8-byte slot per scalar.

/// Cells of fewer words than this (header included) are allocated by
/// compiled code itself, by bumping a pointer through the region the
/// runtime gives each size ([`bump_slot`]); larger ones call `rt_alloc`.
pub const BUMP_WORDS: usize = 64;

/// Index in the runtime's `rt_bump` array of the next free address of the
/// region for cells of `words` words; the region's end is at the next
/// index. Both are 0 when the size has no region (compiled code then
/// calls `rt_alloc`, which sets one up).
pub const fn bump_slot(words: usize) -> usize {
    2 * words
}
