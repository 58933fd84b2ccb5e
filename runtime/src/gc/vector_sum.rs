//! Sums of vectors of reals: reverse mode's sensitivities of vectors
//! (`fir::Op::VecZero`, `VecOneHot`, `VecPlus`; the layout is
//! `base/src/cell_layout.rs`).
//!
//! The sensitivity of `(vector-ref v i)` is the vector that is zero but
//! at `i`, and a gradient that reads v k times adds k of them: made
//! densely, O(n k). A sum is instead a base vector (or a zero) and the
//! additions `(index, element)` made to it, oldest first; its elements are
//! made once, when compiled code first reads them (`rt_vec_dense`). This
//! is the interpreter's `VectorSum` (`crates/interp/src/vector.rs`) step
//! for step, so that both print the same bits: `plus` folds the smaller
//! operand into the larger, the smaller's additions summed per index
//! first; an element is 0 plus the base's (0 over a zero base; the base's
//! as it is while nothing is added), then each addition in turn (a zero
//! adds nothing, as `plus` skips a zero); two operands with bases add
//! densely; a sum of more additions than its vector has elements is made
//! dense at once. Starting at 0, no value depends on which operand was
//! the larger, nor on when a sum is made dense.
//!
//! The additions live in a log, a vector without pointers that sums
//! share: a sum reads the first `count` entries, and adding to the sum
//! that reads all the log has written (the backward sweep's accumulator,
//! which each `plus` replaces by the next) writes the next entries in
//! place, 16 bytes for an addition of a real. Adding to an older sum
//! copies its entries into a log of its own first, so every sum keeps its
//! value. A one-hot holds its one addition itself, after its pointers,
//! and so does a pair of one-hots its two.
//!
//! A sum of vectors of vectors of reals (`SUM_ROWS_TAG`) is the same with
//! a pointer to a row for an element, rows added by `plus` of rows: the
//! k-means cost reads a row of points and of centroids per step, and a
//! dense sensitivity per read made its gradient quadratic. Its zero is
//! made "of" a vector (the primal whose sensitivity it is): row i of the
//! zero is the zero as long as that vector's element i, made when the
//! sum's elements are first read.
//!
//! Every object here is made after what it points to, as compiled code
//! makes cells, except a sum's elements, written into it when first read,
//! and the rows written into a log in place: `Heap::written_into` keeps
//! the collector's invariant then. The vectors of rows the runtime fills
//! while it adds rows are filled as `VecBuild` fills one (`vector.rs`).

mod accumulator;

use super::vector::{rt_alloc_vector, rt_vec_build_begin, rt_vec_build_end};
use super::*;
use crate::cell_layout::{
    vector_header, vector_shape, SUM_ACC, SUM_BASE_AT, SUM_BYTES, SUM_COUNT_AT, SUM_DENSE_AT,
    SUM_LOG_AT, SUM_ROWS_TAG, SUM_TAG, SUM_ZERO_OF, VECTOR_MAX_STRIDE, VECTOR_SLOTS_AT, VECTOR_TAG,
};

/// The word at `p + off`.
///
/// # Safety
/// `p + off` is a word of an object of the heap written when it was made.
unsafe fn word(p: usize, off: usize) -> usize {
    *((p + off) as *const usize)
}

/// What the elements of a sum are: `stride` reals, or (`rows`) one
/// pointer to a row, a vector of reals whose zero has the header given.
#[derive(Clone, Copy)]
struct Elems {
    stride: usize,
    rows: Option<u32>,
}

impl Elems {
    const fn reals(stride: usize) -> Elems {
        Elems { stride, rows: None }
    }
}

/// A vector or a sum, as `plus` combines it.
#[derive(Clone, Copy)]
struct Summand {
    /// The vector the additions are made to; 0 for a zero.
    base: usize,
    /// Whether `base` gives only the lengths of a zero's rows.
    zero_of: bool,
    /// The first entry of its additions (`1 + stride` words each: the
    /// index, then the element's slots), in its log or in its one-hot;
    /// 0 when it has none.
    entries: usize,
    /// Its log (0: none).
    log: usize,
    count: usize,
}

impl Summand {
    /// A zero with `count` additions held elsewhere (none, or a one-hot's
    /// one, written after the sum object).
    const fn zero(count: usize) -> Summand {
        Summand {
            base: 0,
            zero_of: false,
            entries: 0,
            log: 0,
            count,
        }
    }

    /// Whether its base is a zero: then `plus` takes the other operand's.
    fn zero_base(&self) -> bool {
        self.base == 0 || self.zero_of
    }

    /// What adding it densely costs: its additions, and the elements of
    /// its base if it has one.
    fn size(&self, n: usize) -> usize {
        if self.zero_base() {
            self.count
        } else {
            n + self.count
        }
    }

    /// Entry `k` (below `count`): its index and its slots.
    ///
    /// # Safety
    /// `k < self.count`; entries are `1 + stride` words.
    unsafe fn entry(&self, stride: usize, k: usize) -> (usize, *const f64) {
        let e = self.entries + 8 * (1 + stride) * k;
        (word(e, 0), (e + 8) as *const f64)
    }
}

/// The tag, slots per element and length of vector or sum `v`.
fn shape_of(v: usize) -> (u32, usize, usize) {
    // SAFETY: compiled code passes vectors and sums only (the FIR's
    // verifier and lowering see to it): a header and a length word.
    unsafe {
        let tag = *(v as *const u32);
        let (stride, _) = vector_shape(*((v + 4) as *const u32));
        let stride = if tag == SUM_ROWS_TAG { 1 } else { stride };
        (tag, stride, word(v, 8))
    }
}

/// The second half of `v`'s header.
fn half(v: usize) -> u32 {
    // SAFETY: as in `shape_of`.
    unsafe { *((v + 4) as *const u32) }
}

/// The elements of `plus`'s operands: rows if either is a sum of rows,
/// whose zero rows the result makes (two vectors of rows add row by row,
/// and make no zero).
fn elems_of(a: usize, b: usize) -> Elems {
    for v in [a, b] {
        if shape_of(v).0 == SUM_ROWS_TAG {
            return Elems {
                stride: 1,
                rows: Some(half(v) & !SUM_ZERO_OF),
            };
        }
    }
    let (_, stride, _) = shape_of(a);
    if vector_shape(half(a)).1 > 0 {
        // Vectors of rows.
        Elems {
            stride: 1,
            rows: Some(0),
        }
    } else {
        Elems::reals(stride)
    }
}

#[inline(always)]
fn summand(v: usize, stride: usize) -> Summand {
    match shape_of(v).0 {
        VECTOR_TAG => Summand {
            base: v,
            zero_of: false,
            entries: 0,
            log: 0,
            count: 0,
        },
        // SAFETY: a sum's words, written when it was made.
        tag @ (SUM_TAG | SUM_ROWS_TAG) => unsafe {
            let (log, count) = (word(v, SUM_LOG_AT), word(v, SUM_COUNT_AT));
            let entries = if log != 0 {
                log + VECTOR_SLOTS_AT + 8 * (1 + stride)
            } else if count == 1 || count == 2 && tag == SUM_TAG && half(v) & SUM_ACC == 0 {
                v + SUM_BYTES
            } else {
                0
            };
            Summand {
                base: word(v, SUM_BASE_AT),
                zero_of: tag == SUM_ROWS_TAG && half(v) & SUM_ZERO_OF != 0,
                entries,
                log,
                count,
            }
        },
        _ => fail(&[b"error: internal error: a sum of something not a vector"]),
    }
}

/// `n` words of C memory (freed by the caller), or the end of the program.
fn words(n: usize) -> *mut usize {
    sys_alloc(8 * n.max(1)) as *mut usize
}

/// A fresh object of `n` words of the heap.
fn alloc_words(n: usize) -> usize {
    if n < BUMP_WORDS {
        alloc_small(n)
    } else {
        rt_alloc(8 * n) as usize
    }
}

/// A new sum object (with room for `inline` words after its pointers).
#[inline(always)]
fn new_sum(el: Elems, len: usize, s: Summand, inline: usize) -> usize {
    let p = alloc_words(SUM_BYTES / 8 + inline);
    // SAFETY: a fresh object of `SUM_BYTES` bytes and more, 8-byte
    // aligned; what it points to was made before it.
    unsafe {
        let (tag, half) = match el.rows {
            None => (SUM_TAG, vector_header(el.stride, 0)),
            Some(row) => (SUM_ROWS_TAG, row | if s.zero_of { SUM_ZERO_OF } else { 0 }),
        };
        *(p as *mut u32) = tag;
        *((p + 4) as *mut u32) = half;
        for (off, w) in [
            (8, len),
            (SUM_COUNT_AT, s.count),
            (SUM_BASE_AT, s.base),
            (SUM_LOG_AT, s.log),
            (SUM_DENSE_AT, 0),
        ] {
            *((p + off) as *mut usize) = w;
        }
    }
    p
}

/// The number of entries written into `log`, and its room for entries.
fn log_fill(log: usize) -> (usize, usize) {
    // SAFETY: a log is a vector whose element 0 holds the number written.
    unsafe { (word(log, VECTOR_SLOTS_AT), word(log, 8) - 1) }
}

/// Copies the `m` entries at `from` after the `count` entries of `log`
/// (which has room for them) and records them written. Word by word: a
/// call of `memcpy` costs more than the two or three words of most
/// entries, and the two of an entry of a real are the backward sweep's
/// every step.
///
/// # Safety
/// `log` is a log of entries of `w` words with room for `count + m`;
/// `from` points to `m` entries that no allocation moves or frees.
#[inline(always)]
unsafe fn write_entries(log: usize, w: usize, count: usize, from: *const usize, m: usize) {
    let to = (log + VECTOR_SLOTS_AT + 8 * w * (1 + count)) as *mut usize;
    if w * m == 2 {
        *to = *from;
        *to.add(1) = *from.add(1);
    } else {
        for k in 0..w * m {
            *to.add(k) = *from.add(k);
        }
    }
    *((log + VECTOR_SLOTS_AT) as *mut usize) = count + m;
}

/// `big` with the `m` entries at `from` (`1 + stride` words each) added
/// after its own: written into its log when it reads all of it and the
/// log has room, else into a new log after a copy of its entries.
///
/// # Safety
/// `from` points to `m` entries that no allocation moves or frees.
#[inline(always)]
unsafe fn append(big: Summand, el: Elems, n: usize, from: *const usize, m: usize) -> Summand {
    let count = big.count + m;
    if big.log != 0 {
        let (written, room) = log_fill(big.log);
        if written == big.count && room >= count {
            write_entries(big.log, 1 + el.stride, big.count, from, m);
            if el.rows.is_some() {
                // The log may be older than the rows.
                let h = HEAP.get();
                for k in 0..m {
                    h.written_into(big.log, *from.add(2 * k + 1));
                }
            }
            return Summand { count, ..big };
        }
    }
    append_copy(big, el, n, from, m)
}

/// The entries a new log of a sum of `count` additions has room for.
fn log_room(count: usize, n: usize) -> usize {
    let mut room = 4;
    while room < 4 * count {
        room *= 4;
    }
    room.min(n).max(count)
}

/// [`append`] into a new log.
///
/// # Safety
/// As [`append`]'s.
#[inline(never)]
unsafe fn append_copy(big: Summand, el: Elems, n: usize, from: *const usize, m: usize) -> Summand {
    let w = 1 + el.stride;
    let count = big.count + m;
    if w >= VECTOR_MAX_STRIDE {
        fail(&[b"error: internal error: a sum's element is too large"]);
    }
    // Room for 4 to 16 times its entries, as a power of 4 (every size of
    // log is a size class of the heap, with chunks of its own: fewer
    // sizes keep fewer chunks part-filled), but no more than a sum holds
    // before it is made dense.
    let room = log_room(count, n);
    // Every word of a log of rows is scanned (see `SUM_ROWS_TAG`).
    let pointers = if el.rows.is_some() { w } else { 0 };
    let log = rt_alloc_vector(u64::from(vector_header(w, pointers)), (room + 1) as u64) as usize;
    if big.count > 0 {
        write_entries(log, w, 0, big.entries as *const usize, big.count);
    }
    write_entries(log, w, big.count, from, m);
    Summand {
        entries: log + VECTOR_SLOTS_AT + 8 * w,
        log,
        count,
        ..big
    }
}

/// A new dense vector of the elements of `s` (`n` elements of `stride`
/// reals): 0 plus its base's (or zeros; its base's as they are if it has
/// no additions), then each addition, oldest first.
fn dense_of(s: Summand, el: Elems, n: usize) -> usize {
    if let Some(row) = el.rows {
        return dense_rows(s, row, n);
    }
    let stride = el.stride;
    let v = rt_alloc_vector(u64::from(vector_header(stride, 0)), n as u64) as usize;
    let at = |i: usize| (v + VECTOR_SLOTS_AT + 8 * stride * i) as *mut f64;
    // SAFETY: `v` has `n` elements of `stride` slots, as the base has.
    unsafe {
        if s.base != 0 {
            let base = (s.base + VECTOR_SLOTS_AT) as *const f64;
            if s.count == 0 {
                core::ptr::copy_nonoverlapping(base, at(0), stride * n);
            } else {
                for k in 0..stride * n {
                    *at(0).add(k) = 0.0 + *base.add(k);
                }
            }
        } else {
            core::ptr::write_bytes(at(0), 0, stride * n);
        }
    }
    if stride == 1 {
        // The backward sweep's sum, an entry per element read: a real per
        // entry, without the general loop's per-slot loop.
        // SAFETY: as below, entries of two words: an index, a real.
        unsafe {
            for k in 0..s.count {
                let e = (s.entries + 16 * k) as *const usize;
                *at(*e) += *(e.add(1) as *const f64);
            }
        }
        return v;
    }
    for k in 0..s.count {
        // SAFETY: `k < count`; an entry's index was checked when it was
        // made, and it has `stride` slots.
        unsafe {
            let (i, from) = s.entry(stride, k);
            for j in 0..stride {
                *at(i).add(j) += *from.add(j);
            }
        }
    }
    v
}

/// [`dense_of`] for rows: each row the base's (or, over a zero, the first
/// added, or else the zero row as long as the base's), then each addition
/// added to it by `plus` of rows, oldest first.
fn dense_rows(s: Summand, row: u32, n: usize) -> usize {
    let v = rt_alloc_vector(u64::from(vector_header(1, 1)), n as u64) as usize;
    let at = |i: usize| (v + VECTOR_SLOTS_AT + 8 * i) as *mut usize;
    // Rows are made while it is filled: it is filled as `VecBuild` fills
    // a vector (its slots are zero, and a row is never 0).
    rt_vec_build_begin(v);
    // SAFETY: `v` has `n` pointer slots, as the base has; the entries
    // live in an object the caller holds, which nothing moves, and their
    // indices were checked when they were made.
    unsafe {
        if !s.zero_base() {
            core::ptr::copy_nonoverlapping((s.base + VECTOR_SLOTS_AT) as *const usize, at(0), n);
        }
        for k in 0..s.count {
            let (i, from) = s.entry(1, k);
            let r = *(from as *const usize);
            *at(i) = if *at(i) == 0 {
                r
            } else {
                rt_vec_plus(*at(i), r)
            };
        }
        if s.zero_of {
            let of = rt_vec_dense(s.base);
            for i in 0..n {
                if *at(i) == 0 {
                    let len = word(*((of + VECTOR_SLOTS_AT + 8 * i) as *const usize), 8);
                    *at(i) = rt_vec_zero(u64::from(row), len as u64);
                }
            }
        }
    }
    rt_vec_build_end(v);
    v
}

/// The elements of `s`, made if it has additions.
fn materialise(s: Summand, el: Elems, n: usize) -> usize {
    if s.count == 0 && !s.zero_base() {
        s.base
    } else {
        dense_of(s, el, n)
    }
}

/// The zero vector of `len` elements (`shape`: `vector_header`, no
/// pointers).
#[no_mangle]
pub extern "C" fn rt_vec_zero(shape: u64, len: u64) -> usize {
    let (stride, _) = vector_shape(shape as u32);
    let s = Summand::zero(0);
    new_sum(Elems::reals(stride), len as usize, s, 0)
}

/// A zero of rows of header `row` "of" the vector `of`: as long as it,
/// row i as long as its element i.
#[no_mangle]
pub extern "C" fn rt_vec_zero_of(row: u64, of: usize) -> usize {
    let s = Summand {
        base: of,
        zero_of: true,
        ..Summand::zero(0)
    };
    new_sum(rows(row), shape_of(of).2, s, 0)
}

/// The one-hot of rows of header `row` "of" the vector `of`: zero as in
/// [`rt_vec_zero_of`] but row `i` (an index of `of`, checked), which is
/// `val`.
#[no_mangle]
pub extern "C" fn rt_vec_one_hot_of(row: u64, of: usize, i: u64, val: usize) -> usize {
    let s = Summand {
        base: of,
        zero_of: true,
        ..Summand::zero(1)
    };
    let p = new_sum(rows(row), shape_of(of).2, s, 2);
    // SAFETY: `new_sum` left two words after the sum's pointers; `val`
    // was made before it.
    unsafe {
        *((p + SUM_BYTES) as *mut usize) = i as usize;
        *((p + SUM_BYTES + 8) as *mut usize) = val;
    }
    p
}

/// The elements of sums of rows of header `row`.
fn rows(row: u64) -> Elems {
    Elems {
        stride: 1,
        rows: Some(row as u32),
    }
}

/// `plus` of `sum` and `one_hot` when `one_hot` is a one-hot and the
/// larger operand is `sum` (`sum_first`: it is `plus`'s first operand,
/// which ties go to): the backward sweep's step, `plus_general`'s
/// one-addition case without its general steps and frame.
#[inline(always)]
fn plus_one_hot(sum: usize, one_hot: usize, sum_first: bool) -> Option<usize> {
    // SAFETY: compiled code passes vectors and sums of one length; a
    // one-hot's entry lives in it, which the caller's frame holds.
    unsafe {
        // Of reals only: a row's one-hot takes `plus_general`'s path.
        if *(one_hot as *const u32) != SUM_TAG
            || word(one_hot, SUM_LOG_AT) != 0
            || word(one_hot, SUM_COUNT_AT) != 1
        {
            return None;
        }
        plus_entry(sum, (one_hot + SUM_BYTES) as *const usize, sum_first)
    }
}

/// [`plus_one_hot`] of the one-hot whose one entry is at `entry`.
///
/// # Safety
/// `entry` points to an entry of `sum`'s stride that no allocation moves
/// or frees.
#[inline(always)]
unsafe fn plus_entry(sum: usize, entry: *const usize, sum_first: bool) -> Option<usize> {
    if *(sum as *const u32) == SUM_ROWS_TAG {
        return None;
    }
    let (stride, n) = (vector_shape(half(sum)).0, word(sum, 8));
    let el = Elems::reals(stride);
    // Of reals: its base is never a zero's "of".
    let big = Summand {
        zero_of: false,
        ..summand(sum, stride)
    };
    let larger = if sum_first {
        big.size(n) >= 1
    } else {
        big.size(n) > 1
    };
    if !larger {
        return None;
    }
    if big.count == 1 && big.log == 0 && big.base == 0 && n >= 2 {
        // Two one-hots (a step that reads a vector twice): a pair that
        // holds both additions itself, as a one-hot holds its one, where
        // a log of its own took four times the memory.
        return Some(pair_of(big.entries as *const usize, entry, el, n));
    }
    let s = append(big, el, n, entry, 1);
    Some(finish(s, el, n))
}

/// `plus` of `sum` and the one-hot as long as it that is `x` at index
/// `i` (checked), the one-hot first if bit 0 of `flags` is set: what
/// [`rt_vec_plus`] gives of `sum` and a one-hot of one real
/// (`fir::Op::VecOneHot`), for code generation to call instead when
/// nothing else reads the one-hot, which is then never made. Bit 1 says
/// the `plus` consumes `sum` (`fir::owned`): an accumulator is then added
/// to in place, and a sum of many additions becomes one.
#[no_mangle]
pub extern "C" fn rt_vec_plus_hot(sum: usize, i: u64, x: f64, flags: u64) -> usize {
    if flags & 2 != 0 {
        if accumulator::is_acc(sum) {
            return accumulator::add_in_place(sum, i as usize, x);
        }
        if accumulator::worth_accumulating(sum) {
            accumulator::accumulate(sum);
            return accumulator::add_in_place(sum, i as usize, x);
        }
    }
    settle(sum);
    let hot_first = flags & 1;
    let entry = [i as usize, x.to_bits() as usize];
    // SAFETY: `entry` lives in this frame until the sum is made; `sum`
    // is a vector or a sum of reals of one slot (code generation's
    // condition), so its entries have `entry`'s two words.
    if let Some(p) = unsafe { plus_entry(sum, entry.as_ptr(), hot_first == 0) } {
        return p;
    }
    // The cases of `rt_vec_plus` that take the one-hot as it is.
    let hot = new_sum(Elems::reals(1), shape_of(sum).2, Summand::zero(1), 2);
    // SAFETY: `new_sum` left two words after the sum's pointers.
    unsafe {
        *((hot + SUM_BYTES) as *mut usize) = entry[0];
        *((hot + SUM_BYTES + 8) as *mut usize) = entry[1];
    }
    if hot_first != 0 {
        rt_vec_plus(hot, sum)
    } else {
        rt_vec_plus(sum, hot)
    }
}

/// `plus` of two vectors or sums of one length (checked by compiled code).
/// The backward sweep's step first, in a frame of its own: the general
/// case's frame (six saved registers and 300 bytes) cost as much as the
/// step itself.
#[no_mangle]
pub extern "C" fn rt_vec_plus(a: usize, b: usize) -> usize {
    settle(a);
    settle(b);
    // A sensitivity's step is `plus` of the one-hot a `vector-ref` made
    // and the sum of the reads after it: try that order first.
    match plus_one_hot(b, a, false).or_else(|| plus_one_hot(a, b, true)) {
        Some(p) => p,
        None => plus_general(a, b),
    }
}

/// [`rt_vec_plus`] where the `plus` consumes `a` (bit 0 of `owned`), `b`
/// (bit 1) or both (`fir::owned`): an accumulator consumed is added to in
/// place.
#[no_mangle]
pub extern "C" fn rt_vec_plus_owned(a: usize, b: usize, owned: u64) -> usize {
    match accumulator::plus_owned(a, b, owned & 1 != 0, owned & 2 != 0) {
        Some(p) => p,
        None => rt_vec_plus(a, b),
    }
}

#[inline(never)]
fn plus_general(a: usize, b: usize) -> usize {
    let (_, stride, n) = shape_of(a);
    if shape_of(b).2 != n {
        fail(&[b"error: internal error: a sum of vectors of two lengths"]);
    }
    let el = elems_of(a, b);
    let (x, y) = (summand(a, stride), summand(b, stride));
    let (big, big_ptr, small) = if x.size(n) >= y.size(n) {
        (x, a, y)
    } else {
        (y, b, x)
    };
    if !small.zero_base() {
        // Both with bases: elementwise.
        let p = materialise(big, el, n);
        let q = materialise(small, el, n);
        if el.rows.is_some() {
            return plus_rows(p, q, n);
        }
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
        // SAFETY: `small`'s entry lives in an object the caller's frame
        // holds (and this one, by its interior pointer): nothing moves it.
        let s = unsafe { append(big, el, n, small.entries as *const usize, 1) };
        return finish(s, el, n);
    }
    if el.rows.is_some() {
        // SAFETY: as below.
        let s = unsafe { append_grouped_rows(big, el, n, &small) };
        return finish(s, el, n);
    }
    // The smaller's additions summed per index (in the order they were
    // made at each), each then one addition to the larger, in the order
    // of their indices.
    // SAFETY: the entries are reachable from `small`'s sum, which the
    // caller's frame holds.
    let s = unsafe {
        with_groups(&small, stride, n, |sums, groups| {
            append(big, el, n, sums, groups)
        })
    };
    finish(s, el, n)
}

/// The sum of the additions at `first` and then at `second` to a zero,
/// holding the two after its pointers (`summand` reads them there: a sum
/// of reals, not an accumulator, with no log and two additions).
///
/// # Safety
/// `first` and `second` point to entries of `el`'s stride that no
/// allocation moves or frees.
unsafe fn pair_of(first: *const usize, second: *const usize, el: Elems, n: usize) -> usize {
    let w = 1 + el.stride;
    let p = new_sum(el, n, Summand::zero(2), 2 * w);
    let to = (p + SUM_BYTES) as *mut usize;
    for (k, from) in [first, second].into_iter().enumerate() {
        for j in 0..w {
            *to.add(k * w + j) = *from.add(j);
        }
    }
    p
}

/// How many additions of reals (of up to [`SMALL_STRIDE`] slots) a sum
/// may have for [`with_groups`] to sum them per index on the stack. A
/// step of a backward sweep adds a few one-hots together, then that sum
/// to its running sensitivity (sumsq by `vector-ref`: two reads a step);
/// taking memory from the system and sorting there cost such a step 60%
/// of its instructions.
const SMALL_ADDITIONS: usize = 8;
const SMALL_STRIDE: usize = 4;

/// Calls `then` with the additions of `small` (reals, `stride` slots
/// each) summed per index, as [`group_by_sorting`] writes them, and how
/// many there are.
///
/// # Safety
/// `small`'s entries stay where they are while `then` runs: the sums are
/// on the stack or in C memory, not in the heap, so `then` may allocate.
unsafe fn with_groups<R>(
    small: &Summand,
    stride: usize,
    n: usize,
    then: impl FnOnce(*const usize, usize) -> R,
) -> R {
    let (k, w) = (small.count, 1 + stride);
    let el = Elems::reals(stride);
    if k <= SMALL_ADDITIONS && stride <= SMALL_STRIDE {
        let mut sums =
            core::mem::MaybeUninit::<[usize; SMALL_ADDITIONS * (1 + SMALL_STRIDE)]>::uninit();
        let mut order = [0usize; SMALL_ADDITIONS];
        let groups = sort_groups(small, el, sums.as_mut_ptr() as *mut usize, &mut order[..k]);
        return then(sums.as_ptr() as *const usize, groups);
    }
    let sums = words(k * w);
    let groups = if 4 * k >= n {
        group_by_slot(small, stride, n, sums)
    } else {
        group_by_sorting(small, el, sums)
    };
    let r = then(sums, groups);
    free(sums as *mut u8);
    r
}

/// Two vectors of rows of length `n`, added row by row.
fn plus_rows(p: usize, q: usize, n: usize) -> usize {
    let v = rt_alloc_vector(u64::from(vector_header(1, 1)), n as u64) as usize;
    rt_vec_build_begin(v);
    let at = |v: usize, i: usize| (v + VECTOR_SLOTS_AT + 8 * i) as *mut usize;
    for i in 0..n {
        // SAFETY: three vectors of `n` rows, which the caller's frame and
        // the collector's list of vectors being filled hold.
        unsafe { *at(v, i) = rt_vec_plus(*at(p, i), *at(q, i)) };
    }
    rt_vec_build_end(v);
    v
}

/// `big` with the additions of `small` (rows) summed per index, as
/// [`group_by_sorting`] sums them, added: the sums are made by `plus` of
/// rows, which allocates, so they are kept in a vector of the heap,
/// filled as `VecBuild` fills one.
///
/// # Safety
/// `small`'s entries stay where they are.
unsafe fn append_grouped_rows(big: Summand, el: Elems, n: usize, small: &Summand) -> Summand {
    let scratch = rt_alloc_vector(u64::from(vector_header(2, 2)), small.count as u64) as usize;
    rt_vec_build_begin(scratch);
    let sums = (scratch + VECTOR_SLOTS_AT) as *mut usize;
    let groups = group_by_sorting(small, el, sums);
    let s = append(big, el, n, sums, groups);
    rt_vec_build_end(scratch);
    s
}

/// Writes into `sums` the additions of `s` summed per index, in the
/// order of the indices, each index's in the order they were made (the
/// first taken as it is: an element of a sum starts at 0 anyway, so the
/// sign of a zero it gives is never seen); returns how many. By sorting:
/// O(k log k) for k additions.
///
/// # Safety
/// `s`'s entries stay where they are; `sums` has room for an entry per
/// addition.
unsafe fn group_by_sorting(s: &Summand, el: Elems, sums: *mut usize) -> usize {
    let order = words(s.count);
    let groups = sort_groups(s, el, sums, core::slice::from_raw_parts_mut(order, s.count));
    free(order as *mut u8);
    groups
}

/// [`group_by_sorting`], with `order` (an entry per addition) to sort
/// the additions in.
///
/// # Safety
/// As [`group_by_sorting`]'s.
unsafe fn sort_groups(s: &Summand, el: Elems, sums: *mut usize, order: &mut [usize]) -> usize {
    let stride = el.stride;
    let w = 1 + stride;
    if order.len() <= SMALL_ADDITIONS {
        // By insertion, in the order made: each addition goes after those
        // at its index or below, so each index's stay in that order.
        for k in 0..order.len() {
            let i = s.entry(stride, k).0;
            let mut at = k;
            while at > 0 && s.entry(stride, order[at - 1]).0 > i {
                order[at] = order[at - 1];
                at -= 1;
            }
            order[at] = k;
        }
    } else {
        for (k, o) in order.iter_mut().enumerate() {
            *o = k;
        }
        order.sort_unstable_by_key(|&k| (s.entry(stride, k).0, k));
    }
    let mut groups = 0;
    let mut last = usize::MAX;
    for &k in order.iter() {
        let (i, from) = s.entry(stride, k);
        if i != last {
            let g = sums.add(groups * w);
            *g = i;
            core::ptr::copy_nonoverlapping(from, g.add(1) as *mut f64, stride);
            groups += 1;
            last = i;
        } else if el.rows.is_some() {
            let g = sums.add((groups - 1) * w).add(1);
            *g = rt_vec_plus(*g, *(from as *const usize));
        } else {
            let g = sums.add((groups - 1) * w).add(1) as *mut f64;
            for j in 0..stride {
                *g.add(j) += *from.add(j);
            }
        }
    }
    groups
}

/// [`group_by_sorting`]'s sums, made in a dense scratch of the `n`
/// elements instead: O(n + k), for sums with additions at a good part of
/// the indices (the sensitivity of a row read whole).
///
/// # Safety
/// As [`group_by_sorting`]'s.
unsafe fn group_by_slot(s: &Summand, stride: usize, n: usize, sums: *mut usize) -> usize {
    let w = 1 + stride;
    let scratch = sys_alloc(8 * (stride * n).max(1)) as *mut f64;
    let set = sys_alloc(n.max(1));
    core::ptr::write_bytes(set, 0, n);
    for k in 0..s.count {
        let (i, from) = s.entry(stride, k);
        let at = scratch.add(stride * i);
        if *set.add(i) == 0 {
            *set.add(i) = 1;
            core::ptr::copy_nonoverlapping(from, at, stride);
        } else {
            for j in 0..stride {
                *at.add(j) += *from.add(j);
            }
        }
    }
    let mut groups = 0;
    for i in 0..n {
        if *set.add(i) != 0 {
            let g = sums.add(groups * w);
            *g = i;
            core::ptr::copy_nonoverlapping(scratch.add(stride * i), g.add(1) as *mut f64, stride);
            groups += 1;
        }
    }
    free(scratch as *mut u8);
    free(set);
    groups
}

/// The sum `s`, or its elements if it has more additions than elements.
#[inline(always)]
fn finish(s: Summand, el: Elems, n: usize) -> usize {
    if s.count > n {
        return dense_of(s, el, n);
    }
    new_sum(el, n, s, 0)
}

/// The elements of `v`: `v` itself if it is a vector; a sum's, made the
/// first time they are read.
#[no_mangle]
pub extern "C" fn rt_vec_dense(v: usize) -> usize {
    // SAFETY: a vector's or a sum's header and words, written when it was
    // made (a sum's elements, by this function).
    unsafe {
        if *(v as *const u32) == VECTOR_TAG {
            return v;
        }
        let made = word(v, SUM_DENSE_AT);
        if made != 0 {
            return made;
        }
    }
    make_dense(v)
}

/// An accumulator `v` made a sum with a log; any other `v` as it is.
#[inline(always)]
fn settle(v: usize) {
    if accumulator::is_acc(v) {
        accumulator::settle(v);
    }
}

/// [`rt_vec_dense`] of a sum whose elements are not made yet.
#[inline(never)]
fn make_dense(v: usize) -> usize {
    // An accumulator's elements are its vector's: it gives them up.
    settle(v);
    let (tag, stride, n) = shape_of(v);
    let el = if tag == SUM_ROWS_TAG {
        rows(u64::from(half(v) & !SUM_ZERO_OF))
    } else {
        Elems::reals(stride)
    };
    let d = materialise(summand(v, stride), el, n);
    // SAFETY: the sum's last word, which only this function writes.
    unsafe { *((v + SUM_DENSE_AT) as *mut usize) = d };
    HEAP.get().written_into(v, d);
    d
}

#[cfg(test)]
mod tests;
