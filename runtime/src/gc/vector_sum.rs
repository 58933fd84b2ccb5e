//! Sums of vectors of reals: reverse mode's sensitivities of vectors
//! (`fir::Op::VecZero`, `VecOneHot`, `VecPlus`; the layout is
//! `base/src/cell_layout.rs`).
//!
//! The sensitivity of `(vector-ref v i)` is the vector that is zero but
//! at `i`, and a gradient that reads v k times adds k of them: made
//! densely, O(n k). A sum is instead a base vector (or a zero) and a list
//! of additions `(index, element)`, newest first; its elements are made
//! once, when compiled code first reads them (`rt_vec_dense`). This is
//! the interpreter's `VectorSum` (`crates/interp/src/vector.rs`) step for
//! step, so that both print the same bits: `plus` folds the smaller
//! operand into the larger, the smaller's additions summed per index
//! first; over a zero base an element is its first addition, then each
//! later one added (a zero adds nothing, as `plus` skips a zero); two
//! operands with bases add densely; a sum of more additions than its
//! vector has elements is made dense at once.
//!
//! Every object here is made after what it points to, as compiled code
//! makes cells, except a sum's elements, written into it when first read:
//! `Heap::written_into` keeps the collector's invariant then.

use super::vector::rt_alloc_vector;
use super::*;
use crate::cell_layout::{
    vector_header, vector_shape, SUM_BASE_AT, SUM_BYTES, SUM_COUNT_AT, SUM_DENSE_AT, SUM_LEAF_TAG,
    SUM_LEAVES_AT, SUM_TAG, VECTOR_SLOTS_AT, VECTOR_TAG,
};

/// A leaf's slots after its header: the leaf before it, the index, then
/// the element's slots.
const LEAF_NEXT_AT: usize = 8;
const LEAF_INDEX_AT: usize = 16;
const LEAF_SLOTS_AT: usize = 24;

/// The word at `p + off`.
///
/// # Safety
/// `p + off` is a word of an object of the heap written when it was made.
unsafe fn word(p: usize, off: usize) -> usize {
    *((p + off) as *const usize)
}

/// A vector or a sum, as `plus` combines it.
#[derive(Clone, Copy)]
struct Summand {
    /// The vector the additions are made to; 0 for a zero.
    base: usize,
    /// The newest addition (0: none).
    leaves: usize,
    count: usize,
}

impl Summand {
    /// What adding it densely costs: its additions, and the elements of
    /// its base if it has one.
    fn size(&self, n: usize) -> usize {
        if self.base == 0 {
            self.count
        } else {
            n + self.count
        }
    }
}

/// The tag, slots per element and length of vector or sum `v`.
fn shape_of(v: usize) -> (u32, usize, usize) {
    // SAFETY: compiled code passes vectors and sums only (the FIR's
    // verifier and lowering see to it): a header and a length word.
    unsafe {
        let tag = *(v as *const u32);
        let (stride, _) = vector_shape(*((v + 4) as *const u32));
        (tag, stride, word(v, 8))
    }
}

fn summand(v: usize) -> Summand {
    match shape_of(v).0 {
        VECTOR_TAG => Summand {
            base: v,
            leaves: 0,
            count: 0,
        },
        // SAFETY: a sum's words, written when it was made.
        SUM_TAG => unsafe {
            Summand {
                base: word(v, SUM_BASE_AT),
                leaves: word(v, SUM_LEAVES_AT),
                count: word(v, SUM_COUNT_AT),
            }
        },
        _ => fail(&[b"error: internal error: a sum of something not a vector"]),
    }
}

/// `n` words of C memory (freed by the caller), or the end of the program.
fn words(n: usize) -> *mut usize {
    sys_alloc(8 * n.max(1)) as *mut usize
}

/// The leaves of a list, oldest first, into fresh C memory of `count`
/// words (freed by the caller).
fn leaves_oldest_first(newest: usize, count: usize) -> *mut usize {
    let out = words(count);
    let (mut k, mut l) = (count, newest);
    while l != 0 && k > 0 {
        k -= 1;
        // SAFETY: `k < count`; `l` is a leaf, whose first slot is the one
        // before it.
        unsafe {
            *out.add(k) = l;
            l = word(l, LEAF_NEXT_AT);
        }
    }
    if l != 0 || k != 0 {
        fail(&[b"error: internal error: a sum's count is not its additions'"]);
    }
    out
}

/// A new sum object.
fn new_sum(stride: usize, len: usize, s: Summand) -> usize {
    let p = alloc_small(SUM_BYTES / 8);
    // SAFETY: a fresh object of `SUM_BYTES` bytes, 8-byte aligned; what
    // it points to was made before it.
    unsafe {
        *(p as *mut u32) = SUM_TAG;
        *((p + 4) as *mut u32) = vector_header(stride, 0);
        for (off, w) in [
            (8, len),
            (SUM_COUNT_AT, s.count),
            (SUM_BASE_AT, s.base),
            (SUM_LEAVES_AT, s.leaves),
            (SUM_DENSE_AT, 0),
        ] {
            *((p + off) as *mut usize) = w;
        }
    }
    p
}

/// A new leaf: element `index` gets the `stride` reals at `slots`.
///
/// # Safety
/// `slots` points to `stride` reals that no allocation moves or frees.
unsafe fn new_leaf(next: usize, index: usize, stride: usize, slots: *const f64) -> usize {
    let bytes = LEAF_SLOTS_AT + 8 * stride;
    let p = if bytes < 8 * BUMP_WORDS {
        alloc_small(bytes / 8)
    } else {
        rt_alloc(bytes) as usize
    };
    *(p as *mut u32) = SUM_LEAF_TAG;
    // One leading pointer slot, shifted as a cell's header has it.
    *((p + 4) as *mut u32) = 1 << 1;
    *((p + LEAF_NEXT_AT) as *mut usize) = next;
    *((p + LEAF_INDEX_AT) as *mut usize) = index;
    // Element by element: a call of `memcpy` costs more than the one or
    // two reals of most elements.
    for k in 0..stride {
        *((p + LEAF_SLOTS_AT) as *mut f64).add(k) = *slots.add(k);
    }
    p
}

/// A new dense vector of the elements of `s` (`n` elements of `stride`
/// reals): its base's (or zeros), then each addition, oldest first, the
/// first one at an index of a zero taken as it is.
fn dense_of(s: Summand, stride: usize, n: usize) -> usize {
    let v = rt_alloc_vector(u64::from(vector_header(stride, 0)), n as u64) as usize;
    let at = |i: usize| (v + VECTOR_SLOTS_AT + 8 * stride * i) as *mut f64;
    // Over a zero: which elements an addition has set.
    let mut set: *mut u8 = core::ptr::null_mut();
    // SAFETY: `v` has `n` elements of `stride` slots, as the base has.
    unsafe {
        if s.base != 0 {
            core::ptr::copy_nonoverlapping(
                (s.base + VECTOR_SLOTS_AT) as *const f64,
                at(0),
                stride * n,
            );
        } else {
            core::ptr::write_bytes(at(0), 0, stride * n);
            set = sys_alloc(n.max(1));
            core::ptr::write_bytes(set, 0, n);
        }
    }
    let list = leaves_oldest_first(s.leaves, s.count);
    for k in 0..s.count {
        // SAFETY: `k < count`, the list's length; a leaf's index was
        // checked when it was made, and it has `stride` slots.
        unsafe {
            let l = *list.add(k);
            let i = word(l, LEAF_INDEX_AT);
            let from = (l + LEAF_SLOTS_AT) as *const f64;
            if !set.is_null() && *set.add(i) == 0 {
                *set.add(i) = 1;
                core::ptr::copy_nonoverlapping(from, at(i), stride);
            } else {
                for j in 0..stride {
                    *at(i).add(j) += *from.add(j);
                }
            }
        }
    }
    // SAFETY: both from `sys_alloc`, not used after.
    unsafe {
        free(list as *mut u8);
        if !set.is_null() {
            free(set);
        }
    }
    v
}

/// The elements of `s`, made if it has additions.
fn materialise(s: Summand, stride: usize, n: usize) -> usize {
    if s.leaves == 0 && s.base != 0 {
        s.base
    } else {
        dense_of(s, stride, n)
    }
}

/// The zero vector of `len` elements (`shape`: `vector_header`, no
/// pointers).
#[no_mangle]
pub extern "C" fn rt_vec_zero(shape: u64, len: u64) -> usize {
    let (stride, _) = vector_shape(shape as u32);
    let s = Summand {
        base: 0,
        leaves: 0,
        count: 0,
    };
    new_sum(stride, len as usize, s)
}

/// The vector of `len` elements, zero but element `i` (an index, checked
/// by compiled code), whose slots are the reals at `slots`.
///
/// # Safety
/// `slots` points to as many reals as `shape` gives an element.
#[no_mangle]
pub unsafe extern "C" fn rt_vec_one_hot(shape: u64, len: u64, i: f64, slots: *const f64) -> usize {
    let (stride, _) = vector_shape(shape as u32);
    let leaf = new_leaf(0, i as usize, stride, slots);
    let s = Summand {
        base: 0,
        leaves: leaf,
        count: 1,
    };
    new_sum(stride, len as usize, s)
}

/// `plus` of two vectors or sums of one length (checked by compiled code).
#[no_mangle]
pub extern "C" fn rt_vec_plus(a: usize, b: usize) -> usize {
    let (_, stride, n) = shape_of(a);
    if shape_of(b).2 != n {
        fail(&[b"error: internal error: a sum of vectors of two lengths"]);
    }
    let (x, y) = (summand(a), summand(b));
    let (big, big_ptr, small) = if x.size(n) >= y.size(n) {
        (x, a, y)
    } else {
        (y, b, x)
    };
    if small.base != 0 {
        // Both with bases: elementwise.
        let p = materialise(big, stride, n);
        let q = materialise(small, stride, n);
        let v = rt_alloc_vector(u64::from(vector_header(stride, 0)), n as u64) as usize;
        // SAFETY: three vectors of `n` elements of `stride` reals.
        unsafe {
            let (p, q, r) = (
                (p + VECTOR_SLOTS_AT) as *const f64,
                (q + VECTOR_SLOTS_AT) as *const f64,
                (v + VECTOR_SLOTS_AT) as *mut f64,
            );
            for k in 0..stride * n {
                *r.add(k) = *p.add(k) + *q.add(k);
            }
        }
        return v;
    }
    if small.count == 0 {
        // Adding a zero.
        return big_ptr;
    }
    if small.count == 1 {
        // One addition (a `vector-ref`'s sensitivity): one more to the
        // larger.
        let l = small.leaves;
        // SAFETY: a leaf of `stride` slots, which `small`'s sum (held by
        // the caller's frame) keeps alive; nothing moves it.
        let leaf = unsafe {
            new_leaf(
                big.leaves,
                word(l, LEAF_INDEX_AT),
                stride,
                (l + LEAF_SLOTS_AT) as *const f64,
            )
        };
        let s = Summand {
            base: big.base,
            leaves: leaf,
            count: big.count + 1,
        };
        return finish(s, stride, n);
    }
    // The smaller's additions summed per index (in the order they were
    // made at each), each then one addition to the larger.
    let list = leaves_oldest_first(small.leaves, small.count);
    let order = words(small.count);
    // SAFETY: both hold `small.count` words; the list's leaves are
    // reachable from `small`'s sum, which the caller's frame holds.
    let groups = unsafe {
        for k in 0..small.count {
            *order.add(k) = k;
        }
        let order_s = core::slice::from_raw_parts_mut(order, small.count);
        order_s.sort_unstable_by_key(|&k| (word(*list.add(k), LEAF_INDEX_AT), k));
        // The sums, `stride + 1` words each (index, then the slots), in C
        // memory: the allocations below may collect.
        let sums = words(small.count * (stride + 1));
        let mut groups = 0;
        let mut last = usize::MAX;
        for &k in order_s.iter() {
            let l = *list.add(k);
            let i = word(l, LEAF_INDEX_AT);
            let from = (l + LEAF_SLOTS_AT) as *const f64;
            if i != last {
                let g = sums.add(groups * (stride + 1));
                *g = i;
                core::ptr::copy_nonoverlapping(from, g.add(1) as *mut f64, stride);
                groups += 1;
                last = i;
            } else {
                let g = sums.add((groups - 1) * (stride + 1)).add(1) as *mut f64;
                for j in 0..stride {
                    *g.add(j) += *from.add(j);
                }
            }
        }
        free(list as *mut u8);
        free(order as *mut u8);
        let mut head = big.leaves;
        for g in 0..groups {
            let at = sums.add(g * (stride + 1));
            head = new_leaf(head, *at, stride, at.add(1) as *const f64);
        }
        free(sums as *mut u8);
        Summand {
            base: big.base,
            leaves: head,
            count: big.count + groups,
        }
    };
    finish(groups, stride, n)
}

/// The sum `s`, or its elements if it has more additions than elements.
fn finish(s: Summand, stride: usize, n: usize) -> usize {
    if s.count > n {
        return dense_of(s, stride, n);
    }
    new_sum(stride, n, s)
}

/// The elements of `v`: `v` itself if it is a vector; a sum's, made the
/// first time they are read.
#[no_mangle]
pub extern "C" fn rt_vec_dense(v: usize) -> usize {
    let (tag, stride, n) = shape_of(v);
    if tag == VECTOR_TAG {
        return v;
    }
    // SAFETY: a sum's word, written when it was made or by this function.
    let made = unsafe { word(v, SUM_DENSE_AT) };
    if made != 0 {
        return made;
    }
    let d = dense_of(summand(v), stride, n);
    // SAFETY: the sum's last word, which only this function writes.
    unsafe { *((v + SUM_DENSE_AT) as *mut usize) = d };
    HEAP.get().written_into(v, d);
    d
}

#[cfg(test)]
mod tests {
    use super::*;

    fn elements(v: usize) -> std::vec::Vec<f64> {
        let d = rt_vec_dense(v);
        let (_, stride, n) = shape_of(d);
        // SAFETY: a dense vector of `n` elements of `stride` reals.
        unsafe {
            core::slice::from_raw_parts((d + VECTOR_SLOTS_AT) as *const f64, stride * n).to_vec()
        }
    }

    fn one_hot(n: u64, i: f64, x: f64) -> usize {
        // SAFETY: one real, as the shape says.
        unsafe { rt_vec_one_hot(u64::from(vector_header(1, 0)), n, i, &x) }
    }

    #[test]
    fn sums_are_the_dense_additions_and_keep_a_first_negative_zero() {
        let _globals = crate::TEST_GLOBALS.lock();
        let zero = rt_vec_zero(u64::from(vector_header(1, 0)), 4);
        assert_eq!(elements(zero), [0.0; 4]);
        let mut acc = zero;
        for (i, x) in [(1.0, 2.0), (3.0, -0.0), (1.0, 0.5), (1.0, 0.25)] {
            acc = rt_vec_plus(acc, one_hot(4, i, x));
        }
        let e = elements(acc);
        assert_eq!(e, [0.0, 2.75, 0.0, 0.0]);
        assert!(
            e[3].is_sign_negative(),
            "a first addition is taken as it is"
        );
        // More additions than elements: made dense.
        let dense = rt_vec_plus(one_hot(4, 0.0, 1.0), acc);
        assert_eq!(shape_of(dense).0, VECTOR_TAG);
        assert_eq!(elements(dense), [1.0, 2.75, 0.0, 0.0]);
        assert!(!elements(dense)[0].is_sign_negative());
        // Two sums: the smaller's additions per index, into the larger.
        let a = rt_vec_plus(one_hot(4, 2.0, 1.0), one_hot(4, 2.0, 2.0));
        let b = rt_vec_plus(acc, a);
        assert_eq!(elements(b), [0.0, 2.75, 3.0, 0.0]);
        // Reading a sum twice makes its elements once.
        assert_eq!(rt_vec_dense(b), rt_vec_dense(b));
    }
}
