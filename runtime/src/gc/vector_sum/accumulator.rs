//! Accumulators: a sum of vectors of reals that the backward sweep adds to
//! in place, one real per `vector-ref`, as a hand-written adjoint adds into
//! its gradient.
//!
//! A sum that a `plus` consumes (`fir::owned`: nothing reads it after) and
//! that has had many additions becomes an accumulator (`SUM_ACC`): its base
//! is then a vector `A` of its elements, which only it holds, and each
//! later addition `(i, x)` it consumes is `A[i] += x` in place, in compiled
//! code (`codegen/src/vector.rs`, `plus_hot`) or here, instead of an entry
//! of a log made dense when the sum is read. Every element of a sum starts
//! at 0 (the module above), so `A` is exactly the elements the sum's log
//! would make: made dense, or with more additions, it would have the same
//! ones.
//!
//! Anything else the runtime does with it (its elements read, a `plus`
//! that does not consume it) first settles it (`settle`, O(1)): it becomes
//! the sum of no additions to the base `A`, whose elements are `A`'s as
//! they are, and never changes again.

use super::*;
use crate::cell_layout::{SUM_ACC, SUM_ACC_FROM};

/// Whether `v` (a vector or a sum) is an accumulator.
#[inline(always)]
pub(super) fn is_acc(v: usize) -> bool {
    shape_of(v).0 == SUM_TAG && half(v) & SUM_ACC != 0
}

/// Whether the sum `v` (reals, one slot each), which a `plus` consumes,
/// is better made an accumulator before its next addition (compiled code
/// asks when the sum's log is full): it is long, it has had many, it
/// reads all its log, and a new log would have room for a quarter of its
/// elements or more (two words an entry: half their bytes).
#[inline(always)]
pub(super) fn worth_accumulating(v: usize) -> bool {
    let (tag, stride, n) = shape_of(v);
    if tag != SUM_TAG || is_acc(v) || stride != 1 || n < SUM_ACC_FROM {
        return false;
    }
    // SAFETY: a sum's words, written when it was made.
    let (count, dense, log) = unsafe {
        (
            word(v, SUM_COUNT_AT),
            word(v, SUM_DENSE_AT),
            word(v, SUM_LOG_AT),
        )
    };
    // A sum whose log others have written past (a fork, a `plus` that did
    // not consume it) copies its entries, O(count), not its elements,
    // O(n): a loop that forks its sum every step would remake one every
    // step.
    let forked = log != 0 && log_fill(log).0 != count;
    dense == 0 && !forked && count + 1 >= SUM_ACC_FROM && 4 * log_room(count + 1, n) >= n
}

/// Makes the sum `v` (reals, one slot; see [`worth_accumulating`]) an
/// accumulator of the same value, in place.
pub(super) fn accumulate(v: usize) {
    let n = shape_of(v).2;
    let s = summand(v, 1);
    // `dense_of` makes what reading the sum would: its elements.
    let a = dense_of(s, Elems::reals(1), n);
    // SAFETY: `v`'s words; `a` is new, and only `v` will hold it.
    unsafe {
        *((v + 4) as *mut u32) = half(v) | SUM_ACC;
        *((v + SUM_BASE_AT) as *mut usize) = a;
        *((v + SUM_LOG_AT) as *mut usize) = 0;
    }
    HEAP.get().written_into(v, a);
}

/// The accumulator `v` with `x` added at index `i` (checked), in place.
pub(super) fn add_in_place(v: usize, i: usize, x: f64) -> usize {
    // SAFETY: an accumulator's words and vector, `i` below its length.
    unsafe {
        let e = (word(v, SUM_BASE_AT) + VECTOR_SLOTS_AT + 8 * i) as *mut f64;
        *e += x;
    }
    v
}

/// Makes the accumulator `v` the sum of no additions to its vector, in
/// place; it never changes again.
pub(super) fn settle(v: usize) {
    // SAFETY: an accumulator's words.
    unsafe {
        *((v + 4) as *mut u32) = half(v) & !SUM_ACC;
        *((v + SUM_COUNT_AT) as *mut usize) = 0;
    }
}

/// The elements of `v`, an operand of [`plus_owned`] beside the
/// accumulator it adds into: an accumulator's, a dense vector's of reals
/// or a sum's of no additions; `Some(0)` for a zero; `None` for anything
/// else.
fn elements(v: usize) -> Option<usize> {
    let (tag, stride, _) = shape_of(v);
    if stride != 1 {
        return None;
    }
    // SAFETY: a vector's or a sum's words.
    unsafe {
        match tag {
            VECTOR_TAG if vector_shape(half(v)).1 == 0 => Some(v),
            SUM_TAG if word(v, SUM_COUNT_AT) == 0 || is_acc(v) => Some(word(v, SUM_BASE_AT)),
            _ => None,
        }
    }
}

/// `plus` of `a` and `b` (reals, one length) when it consumes one of them
/// (`a_owned`, `b_owned`) that is an accumulator, and the other is an
/// accumulator, a dense vector, a sum of no additions or a zero: into the
/// consumed accumulator, in place, what `plus_general` would make, element
/// for element. `None` otherwise.
pub(super) fn plus_owned(a: usize, b: usize, a_owned: bool, b_owned: bool) -> Option<usize> {
    if a == b {
        return None;
    }
    let t = if a_owned && is_acc(a) {
        a
    } else if b_owned && is_acc(b) {
        b
    } else {
        return None;
    };
    let other_ptr = if t == a { b } else { a };
    let Some(other) = elements(other_ptr) else {
        return add_grouped(t, other_ptr);
    };
    if other == 0 {
        // Adding a zero.
        return Some(t);
    }
    let n = shape_of(t).2;
    // SAFETY: `t`'s vector, which only `t` holds, and `other` have `n`
    // reals each.
    unsafe {
        let to = (word(t, SUM_BASE_AT) + VECTOR_SLOTS_AT) as *mut f64;
        let from = (other + VECTOR_SLOTS_AT) as *const f64;
        for k in 0..n {
            // In `plus`'s order: a single addition, the same either way.
            *to.add(k) += *from.add(k);
        }
    }
    Some(t)
}

/// [`plus_owned`] of the accumulator `t` and `other`, a sum of additions
/// to a zero (a step's few one-hots added together, say): each index's
/// additions summed, then added in place, as `plus_general` would append
/// them to the log of the settled `t` for its elements to add once made
/// (an element is the same whichever operand is the larger: the module
/// above). `None` for anything else. Settling `t` instead made
/// it an accumulator again only once its log filled, copying its `n`
/// elements each time.
fn add_grouped(t: usize, other: usize) -> Option<usize> {
    let (tag, stride, n) = shape_of(other);
    if tag != SUM_TAG || stride != 1 || is_acc(other) || shape_of(t).2 != n {
        return None;
    }
    let s = summand(other, 1);
    if !s.zero_base() {
        return None;
    }
    // SAFETY: `other`'s entries, held by the caller, stay where they are;
    // `t`'s vector, which only `t` holds, has `n` reals, and each group's
    // index is below `n`.
    unsafe {
        let to = (word(t, SUM_BASE_AT) + VECTOR_SLOTS_AT) as *mut f64;
        if (1..=2).contains(&s.count) {
            // A one-hot or a pair (a step's two reads): its groups
            // without sorting, as `with_groups` makes them: one index's
            // additions summed in the order made, each index once.
            let (i, x) = s.entry(1, 0);
            if s.count == 2 {
                let (j, y) = s.entry(1, 1);
                if i == j {
                    *to.add(i) += *x + *y;
                    return Some(t);
                }
                *to.add(j) += *y;
            }
            *to.add(i) += *x;
            return Some(t);
        }
        with_groups(&s, 1, n, |sums, groups| {
            for g in 0..groups {
                let e = sums.add(2 * g);
                *to.add(*e) += *(e.add(1) as *const f64);
            }
        });
    }
    Some(t)
}
