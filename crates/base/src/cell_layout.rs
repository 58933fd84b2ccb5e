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

/// A vector is a header word, a length word (the number of elements, an
/// unsigned 64-bit integer) and then the elements' slots, element after
/// element, a stride of 8-byte slots each (see [`vector_header`]), the pointers of each
/// element first. Its header's first four bytes are this tag, which no
/// member has; the next four hold [`vector_header`].
pub const VECTOR_TAG: u32 = u32::MAX;

/// Bytes before a vector's first slot: the header and the length.
pub const VECTOR_SLOTS_AT: usize = 16;

/// Elements of a vector have fewer slots than this, and fewer pointer
/// slots than half of it.
pub const VECTOR_MAX_STRIDE: usize = 1 << 15;

/// The second half of a vector's header: the number of leading pointer
/// slots of each element shifted left by one (as in a cell, with bit 0,
/// the zero mark, clear) and the number of slots per element (the
/// stride) from bit 16, so that the collector needs no table of layouts.
pub const fn vector_header(stride: usize, pointers: usize) -> u32 {
    ((stride as u32) << 16) | ((pointers as u32) << 1)
}

/// The slots per element and the leading pointer slots per element a
/// vector header's second half gives.
pub const fn vector_shape(header: u32) -> (usize, usize) {
    ((header >> 16) as usize, ((header >> 1) & 0x7fff) as usize)
}

/// A sum of vectors of reals (reverse mode's sensitivities: `fir::Op::
/// VecZero`, `VecOneHot`, `VecPlus`; the runtime's `gc/vector_sum.rs`):
/// a header whose first four bytes are this tag and whose next four are
/// [`vector_header`] (no pointers), the length word where a vector has
/// it (so that compiled code reads either's length alike), then the
/// words of [`SUM_COUNT_AT`] and the pointers that follow it. Compiled
/// code reads the elements of a vector whose tag is not [`VECTOR_TAG`]
/// through `rt_vec_dense`.
pub const SUM_TAG: u32 = u32::MAX - 1;

/// A sum of vectors of vectors of reals (`fir::Op::VecZeroOf`,
/// `VecOneHotOf`, and `VecPlus` of their layout): laid out as a
/// [`SUM_TAG`] sum whose element is one pointer, to a vector or a sum of
/// vectors of reals (a row), that `plus` adds as such. Its header's second
/// half is the [`vector_header`] of its rows (the zero rows it makes),
/// with bit 0 set when its base is not its elements but a vector whose
/// elements' lengths are those of a zero's rows (a zero "of" that
/// vector). Every word of its log's entries is scanned (an index is never
/// the address of an object), and so is a one-hot's entry.
pub const SUM_ROWS_TAG: u32 = u32::MAX - 2;

/// The bit of a [`SUM_ROWS_TAG`] header's second half that says its base
/// gives only the lengths of its rows.
pub const SUM_ZERO_OF: u32 = 1;

/// The bit of a [`SUM_TAG`] header's second half that says the sum is
/// an accumulator (the runtime's `gc/vector_sum/accumulator.rs`): its
/// base is a vector of its elements, which only it holds, and a `plus`
/// that consumes it adds to them in place.
pub const SUM_ACC: u32 = 1;

/// Sums shorter than this, or of fewer additions, stay sums with a log.
pub const SUM_ACC_FROM: usize = 64;

/// A sum's number of additions, then its three pointers: the vector it
/// adds to (0: a zero), the log of its additions (0: none, or the one
/// addition of a one-hot, written after [`SUM_BYTES`]), and the vector of
/// its elements once made (0: not yet). The log is a vector without
/// pointers whose element 0 holds the number of additions written into
/// it, and element `k + 1` the `k`-th addition: its index, then its
/// element's slots. A sum reads the first `count` of them, so sums that
/// share a log see their own additions: the log is only written past the
/// end of every sum that reads it.
pub const SUM_COUNT_AT: usize = 16;
pub const SUM_BASE_AT: usize = 24;
pub const SUM_LOG_AT: usize = 32;
pub const SUM_DENSE_AT: usize = 40;
pub const SUM_BYTES: usize = 48;

/// The two stacks of saved values (`fir::Op::Save`, `runtime/src/saves.rs`):
/// `rt_saves` holds a top and an end for each, and `rt_saves_grow` takes
/// which one grows. Pointers go to the first, which the collector scans;
/// reals and booleans to the second, which it never reads.
pub const SAVES_POINTERS: usize = 0;
pub const SAVES_REALS: usize = 1;
