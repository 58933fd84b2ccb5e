//! Accumulators: a sum of vectors of reals that the backward sweep adds to
//! in place, one real per `vector-ref`, as a hand-written adjoint adds into
//! its gradient.
//!
//! A sum that a `plus` consumes (`fir::owned`: nothing reads it after) and
//! that has had many additions becomes an accumulator (`SUM_ACC`): its base
//! is then a vector `A` of its elements, which only it holds, and each
//! later addition `(i, x)` it consumes is `A[i] += x` in place, in compiled
//! code (`codegen/src/vector.rs`, `plus_hot`) or here, instead of an entry
//! of a log made dense when the sum is read. It has the value of the sum it
//! was, and `count` stays the number of entries that sum's log would have,
//! so both behave alike in everything that follows:
//! - Over a zero, an element no addition reached holds `SUM_ABSENT` (a
//!   signalling NaN, which no arithmetic makes): the first addition there is
//!   taken as it is, as `dense_of` takes it (a first -0 stays -0).
//! - Past as many additions as elements, the sum would be made dense (the
//!   absent elements become +0): the accumulator then clears them and has
//!   a base (`SUM_ACC_BASED`), with a count of 0, as a dense vector has.
//! - Anything else the runtime does with it (a `plus` that does not
//!   consume it, its elements read) first settles it (`settle`): back to a
//!   sum with a log, of an entry per element an addition reached, padded to
//!   `count` entries by additions of -0, which change no element (x + -0 is
//!   x, for every x, +0 and NaN included): the same elements, the same
//!   count. From then on it never changes again.

use super::*;
use crate::cell_layout::{SUM_ABSENT, SUM_ACC, SUM_ACC_BASED, SUM_ACC_FROM};

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
    if tag != SUM_TAG || half(v) & SUM_ACC != 0 || stride != 1 || n < SUM_ACC_FROM {
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
    let a = rt_alloc_vector(u64::from(vector_header(1, 0)), n as u64) as usize;
    let at = |i: usize| (a + VECTOR_SLOTS_AT + 8 * i) as *mut f64;
    // SAFETY: `a` has `n` reals, as `s.base` has; `s`'s entries live in
    // `v`'s log or in `v`, which the caller holds, and their indices were
    // checked when they were made.
    unsafe {
        if s.base != 0 {
            core::ptr::copy_nonoverlapping((s.base + VECTOR_SLOTS_AT) as *const f64, at(0), n);
        } else {
            let absent = f64::from_bits(SUM_ABSENT);
            for i in 0..n {
                *at(i) = absent;
            }
        }
        for k in 0..s.count {
            let (i, x) = s.entry(1, k);
            add(at(i), *x);
        }
        let based = if s.base != 0 { SUM_ACC_BASED } else { 0 };
        *((v + 4) as *mut u32) = half(v) | SUM_ACC | based;
        *((v + SUM_BASE_AT) as *mut usize) = a;
        *((v + SUM_LOG_AT) as *mut usize) = 0;
    }
    HEAP.get().written_into(v, a);
}

/// `x` added to the element at `e` of an accumulator, as compiled code
/// adds it.
///
/// # Safety
/// `e` is an element of an accumulator's vector.
#[inline(always)]
unsafe fn add(e: *mut f64, x: f64) {
    *e = if (*e).to_bits() == SUM_ABSENT {
        x
    } else {
        *e + x
    };
}

/// The accumulator `v` (whose elements were not read) with `x` added at
/// index `i` (checked), in place.
pub(super) fn add_in_place(v: usize, i: usize, x: f64) -> usize {
    // SAFETY: an accumulator's words and vector, `i` below its length.
    unsafe {
        let a = word(v, SUM_BASE_AT);
        add((a + VECTOR_SLOTS_AT + 8 * i) as *mut f64, x);
        let count = word(v, SUM_COUNT_AT) + 1;
        *((v + SUM_COUNT_AT) as *mut usize) = count;
        if count > word(v, 8) {
            made_dense(v);
        }
    }
    v
}

/// What making the accumulator `v` dense does to a sum: its absent
/// elements become +0, and it has a base and no additions.
fn made_dense(v: usize) {
    let n = shape_of(v).2;
    // SAFETY: an accumulator's words and vector of `n` reals.
    unsafe {
        let a = word(v, SUM_BASE_AT);
        for i in 0..n {
            let e = (a + VECTOR_SLOTS_AT + 8 * i) as *mut f64;
            if (*e).to_bits() == SUM_ABSENT {
                *e = 0.0;
            }
        }
        *((v + 4) as *mut u32) = half(v) | SUM_ACC_BASED;
        *((v + SUM_COUNT_AT) as *mut usize) = 0;
    }
}

/// The elements of the accumulator `v`, a new vector: its own, absent
/// ones +0. It stays an accumulator, but its elements are made: a
/// consuming `plus` settles it first.
pub(super) fn dense(v: usize) -> usize {
    let n = shape_of(v).2;
    let d = rt_alloc_vector(u64::from(vector_header(1, 0)), n as u64) as usize;
    // SAFETY: two vectors of `n` reals; `v`'s words.
    unsafe {
        let a = word(v, SUM_BASE_AT);
        for i in 0..n {
            let e = *((a + VECTOR_SLOTS_AT + 8 * i) as *const f64);
            *((d + VECTOR_SLOTS_AT + 8 * i) as *mut f64) =
                if e.to_bits() == SUM_ABSENT { 0.0 } else { e };
        }
        *((v + SUM_DENSE_AT) as *mut usize) = d;
    }
    HEAP.get().written_into(v, d);
    d
}

/// Makes the accumulator `v` a sum with a log of the same value and count
/// (see the module's doc), in place; it never changes again.
pub(super) fn settle(v: usize) {
    let n = shape_of(v).2;
    let mut log = 0;
    // SAFETY: an accumulator's words and vector of `n` reals; the log
    // made has room for `count` entries of two words.
    unsafe {
        let a = word(v, SUM_BASE_AT);
        let count = word(v, SUM_COUNT_AT);
        let based = half(v) & SUM_ACC_BASED != 0;
        let elem = |i: usize| *((a + VECTOR_SLOTS_AT + 8 * i) as *const f64);
        if count > 0 {
            // Room to grow, as a sum's new log has: a full one would send
            // the next consumed addition to make it an accumulator again,
            // O(n).
            let room = log_room(count, n);
            log = rt_alloc_vector(u64::from(vector_header(2, 0)), (room + 1) as u64) as usize;
            let entries = (log + VECTOR_SLOTS_AT + 16) as *mut usize;
            let mut k = 0;
            let mut last = 0;
            if !based {
                for i in 0..n {
                    let e = elem(i);
                    if e.to_bits() != SUM_ABSENT {
                        *entries.add(2 * k) = i;
                        *entries.add(2 * k + 1) = e.to_bits() as usize;
                        k += 1;
                        last = i;
                    }
                }
            }
            // Over a zero, every addition made an element present: at most
            // `count` are.
            while k < count {
                *entries.add(2 * k) = last;
                *entries.add(2 * k + 1) = (-0.0f64).to_bits() as usize;
                k += 1;
            }
            *((log + VECTOR_SLOTS_AT) as *mut usize) = count;
        }
        *((v + 4) as *mut u32) = half(v) & !(SUM_ACC | SUM_ACC_BASED);
        *((v + SUM_BASE_AT) as *mut usize) = if based { a } else { 0 };
        *((v + SUM_LOG_AT) as *mut usize) = log;
    }
    if log != 0 {
        HEAP.get().written_into(v, log);
    }
}

/// An operand of [`plus_owned`] other than the accumulator it adds into:
/// an accumulator, a dense vector or a zero, all of reals; its elements
/// (absent ones `SUM_ABSENT`, none for a zero), count and whether it has
/// a base.
struct Operand {
    elems: usize,
    count: usize,
    based: bool,
}

impl Operand {
    fn of(v: usize) -> Option<Operand> {
        let (tag, stride, _) = shape_of(v);
        if stride != 1 {
            return None;
        }
        // SAFETY: a vector's or a sum's words.
        unsafe {
            match tag {
                VECTOR_TAG if vector_shape(half(v)).1 == 0 => Some(Operand {
                    elems: v,
                    count: 0,
                    based: true,
                }),
                SUM_TAG if half(v) & SUM_ACC != 0 => Some(Operand {
                    elems: word(v, SUM_BASE_AT),
                    count: word(v, SUM_COUNT_AT),
                    based: half(v) & SUM_ACC_BASED != 0,
                }),
                SUM_TAG if word(v, SUM_BASE_AT) == 0 && word(v, SUM_COUNT_AT) == 0 => {
                    Some(Operand {
                        elems: 0,
                        count: 0,
                        based: false,
                    })
                }
                _ => None,
            }
        }
    }

    /// What `plus` takes its size to be (`Summand::size`).
    fn size(&self, n: usize) -> usize {
        if self.based {
            n + self.count
        } else {
            self.count
        }
    }

    /// Element `i`, `SUM_ABSENT`'s bits where it has none.
    ///
    /// # Safety
    /// `i` is below the length.
    unsafe fn bits(&self, i: usize) -> u64 {
        if self.elems == 0 {
            SUM_ABSENT
        } else {
            *((self.elems + VECTOR_SLOTS_AT + 8 * i) as *const u64)
        }
    }
}

/// `plus` of `a` and `b` (reals, one length) when it consumes one of them
/// (`a_owned`, `b_owned`) that is an accumulator whose elements were not
/// read, and the other is an accumulator, a dense vector or a zero: into
/// the consumed accumulator, in place, what `plus_general` would make,
/// element for element and count for count. `None` otherwise.
pub(super) fn plus_owned(a: usize, b: usize, a_owned: bool, b_owned: bool) -> Option<usize> {
    if a == b {
        return None;
    }
    // SAFETY: a sum's words.
    let unread = |v: usize| is_acc(v) && unsafe { word(v, SUM_DENSE_AT) } == 0;
    let t = if a_owned && unread(a) {
        a
    } else if b_owned && unread(b) {
        b
    } else {
        return None;
    };
    let (x, y) = (Operand::of(a)?, Operand::of(b)?);
    let n = shape_of(a).2;
    // `plus_general`'s choice: the larger, the first on a tie.
    let (big, big_ptr, small) = if x.size(n) >= y.size(n) {
        (&x, a, &y)
    } else {
        (&y, b, &x)
    };
    if !small.based && small.count == 0 {
        // Adding a zero.
        return Some(big_ptr);
    }
    let (target, other) = if t == a { (&x, &y) } else { (&y, &x) };
    let absent = SUM_ABSENT;
    // SAFETY: `target.elems` is `t`'s vector of `n` reals, which only `t`
    // holds; `other`'s has `n` as well (or is a zero's).
    unsafe {
        let at = |i: usize| (target.elems + VECTOR_SLOTS_AT + 8 * i) as *mut u64;
        if small.based {
            // Both with bases: made dense, then added.
            let dense = |e: u64| if e == absent { 0.0 } else { f64::from_bits(e) };
            for i in 0..n {
                let sum = dense(*at(i)) + dense(other.bits(i));
                *at(i) = sum.to_bits();
            }
            *((t + 4) as *mut u32) = half(t) | SUM_ACC_BASED;
            *((t + SUM_COUNT_AT) as *mut usize) = 0;
            return Some(t);
        }
        // The smaller's additions, one per element it has, after the
        // larger's: an element either lacks is the other's.
        let mut groups = 0;
        for i in 0..n {
            let (p, q) = (*at(i), other.bits(i));
            if small.bits(i) != absent {
                groups += 1;
            }
            *at(i) = if q == absent {
                p
            } else if p == absent {
                q
            } else {
                (f64::from_bits(p) + f64::from_bits(q)).to_bits()
            };
        }
        let based = if big.based { SUM_ACC_BASED } else { 0 };
        *((t + 4) as *mut u32) = (half(t) & !SUM_ACC_BASED) | based;
        *((t + SUM_COUNT_AT) as *mut usize) = big.count + groups;
    }
    // SAFETY: an accumulator's words.
    if unsafe { word(t, SUM_COUNT_AT) } > n {
        made_dense(t);
    }
    Some(t)
}
