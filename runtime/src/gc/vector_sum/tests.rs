//! Sums and accumulators against the dense additions they stand for.

use super::*;

fn elements(v: usize) -> std::vec::Vec<f64> {
    let d = rt_vec_dense(v);
    let (_, stride, n) = shape_of(d);
    // SAFETY: a dense vector of `n` elements of `stride` reals.
    unsafe { core::slice::from_raw_parts((d + VECTOR_SLOTS_AT) as *const f64, stride * n).to_vec() }
}

/// The vector of `len` elements, zero but element `i`, whose slots are
/// the reals at `slots`: the one-hot compiled code makes inline
/// (`codegen/src/vector.rs`, `VecOneHot`).
///
/// # Safety
/// `slots` points to as many reals as `shape` gives an element.
unsafe fn one_hot_object(shape: u64, len: u64, i: f64, slots: *const f64) -> usize {
    let (stride, _) = vector_shape(shape as u32);
    let s = Summand::zero(1);
    let p = new_sum(Elems::reals(stride), len as usize, s, 1 + stride);
    *((p + SUM_BYTES) as *mut usize) = i as usize;
    // Element by element: a call of `memcpy` costs more than the one or
    // two reals of most elements.
    for k in 0..stride {
        *((p + SUM_BYTES + 8) as *mut f64).add(k) = *slots.add(k);
    }
    p
}

fn one_hot(n: u64, i: f64, x: f64) -> usize {
    // SAFETY: one real, as the shape says.
    unsafe { one_hot_object(u64::from(vector_header(1, 0)), n, i, &x) }
}

#[test]
fn sums_are_the_dense_additions_from_zero() {
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
        !e[3].is_sign_negative(),
        "an element starts at 0: 0 + -0 is 0"
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

/// `rt_vec_plus_hot` is `rt_vec_plus` of the one-hot it never makes,
/// bit for bit, in either order, from every kind of sum: a zero, a
/// one-hot, a dense vector, sums with a log (read whole or not) and a
/// sum about to be made dense.
#[test]
fn adding_an_entry_is_adding_its_one_hot() {
    let _globals = crate::TEST_GLOBALS.lock();
    let n = 5u64;
    let bits =
        |v: usize| -> std::vec::Vec<u64> { elements(v).iter().map(|x| x.to_bits()).collect() };
    let zero = rt_vec_zero(u64::from(vector_header(1, 0)), n);
    let dense = rt_vec_plus(
        rt_vec_plus(one_hot(n, 0.0, 1.5), one_hot(n, 1.0, -0.0)),
        rt_vec_plus(one_hot(n, 0.0, 2.0), one_hot(n, 4.0, 3.0)),
    );
    let dense = rt_vec_dense(dense);
    let mut sums = vec![zero, one_hot(n, 2.0, -0.0), dense];
    let mut acc = zero;
    for (k, x) in [0.5, -0.0, 0.25, 1.0, 2.0].into_iter().enumerate() {
        acc = rt_vec_plus(acc, one_hot(n, (k % 3) as f64, x));
        sums.push(acc);
    }
    for &s in &sums {
        for (i, x) in [(2u64, -0.0), (3, 0.125)] {
            for first in [0, 1] {
                let hot = one_hot(n, i as f64, x);
                let want = if first == 1 {
                    rt_vec_plus(hot, s)
                } else {
                    rt_vec_plus(s, hot)
                };
                let got = rt_vec_plus_hot(s, i, x, first);
                assert_eq!(
                    bits(got),
                    bits(want),
                    "sum {:?}, first {first}",
                    elements(s)
                );
            }
        }
    }
}

#[test]
fn a_log_is_sized_by_its_entries_not_by_the_vector() {
    let _globals = crate::TEST_GLOBALS.lock();
    // Two reads of one element of a long vector, summed, then a third:
    // a log of a few entries (one of the vector's length made the
    // gradient of such a loop quadratic).
    let n = 1 << 20;
    let pair = rt_vec_plus(one_hot(n, 7.0, 1.0), one_hot(n, 7.0, 2.0));
    let three = rt_vec_plus(pair, one_hot(n, 9.0, 1.0));
    // SAFETY: a sum made by `rt_vec_plus`, with a log.
    let log = unsafe { word(three, SUM_LOG_AT) };
    assert!(log != 0 && log_fill(log) == (3, 16), "{:?}", log_fill(log));
    let mut acc = pair;
    for i in 0..100 {
        acc = rt_vec_plus(acc, one_hot(n, i as f64, 1.0));
    }
    // SAFETY: as above.
    let (written, room) = log_fill(unsafe { word(acc, SUM_LOG_AT) });
    assert_eq!((written, room), (102, 256));
}

#[test]
fn grouping_by_slot_and_by_sorting_agree_bit_for_bit() {
    let _globals = crate::TEST_GLOBALS.lock();
    let n = 64;
    let mut acc = one_hot(n, 3.0, 0.1);
    let mut x = 0.37f64;
    for k in 0..40 {
        // Repeated indices, values of many magnitudes and a -0.
        x = (x * 7.31).fract();
        let v = if k == 5 {
            -0.0
        } else {
            x * 10f64.powi(k % 7 - 3)
        };
        acc = rt_vec_plus(acc, one_hot(n, ((k * 5) % 11) as f64, v));
    }
    let s = summand(acc, 1);
    assert_eq!(s.count, 41);
    // SAFETY: `acc` is a sum of reals with `s.count` additions; each
    // buffer has room for an entry per addition.
    unsafe {
        let (a, b) = (words(2 * s.count), words(2 * s.count));
        let (ga, gb) = (
            group_by_slot(&s, 1, n as usize, a),
            group_by_sorting(&s, Elems::reals(1), b),
        );
        assert_eq!(ga, gb);
        for k in 0..2 * ga {
            assert_eq!(*a.add(k), *b.add(k), "word {k}");
        }
        free(a as *mut u8);
        free(b as *mut u8);
    }
    // A few additions, grouped on the stack: as by sorting.
    let mut few = one_hot(n, 9.0, 0.25);
    for (i, v) in [(4.0, 1e-3), (9.0, -0.0), (2.0, 7.5), (9.0, 3.0), (4.0, 1e9)] {
        few = rt_vec_plus(few, one_hot(n, i, v));
    }
    let s = summand(few, 1);
    assert!(s.count <= SMALL_ADDITIONS && s.count > 4);
    // SAFETY: as above.
    unsafe {
        let b = words(2 * s.count);
        let gb = group_by_sorting(&s, Elems::reals(1), b);
        let got = with_groups(&s, 1, n as usize, |a, ga| {
            (0..2 * ga).map(|k| *a.add(k)).collect::<std::vec::Vec<_>>()
        });
        let want: std::vec::Vec<usize> = (0..2 * gb).map(|k| *b.add(k)).collect();
        assert_eq!((got.len(), got), (6, want));
        free(b as *mut u8);
    }
}

/// A vector of reals with the given elements.
fn reals(xs: &[f64]) -> usize {
    let v = rt_alloc_vector(u64::from(vector_header(1, 0)), xs.len() as u64) as usize;
    for (i, x) in xs.iter().enumerate() {
        // SAFETY: `v` has `xs.len()` elements of one real.
        unsafe { *((v + VECTOR_SLOTS_AT + 8 * i) as *mut f64) = *x };
    }
    v
}

/// The rows of a sum of rows, each row's elements.
fn rows_of(v: usize) -> std::vec::Vec<std::vec::Vec<f64>> {
    let d = rt_vec_dense(v);
    (0..shape_of(d).2)
        // SAFETY: a dense vector of rows, one pointer each.
        .map(|i| elements(unsafe { word(d, VECTOR_SLOTS_AT + 8 * i) }))
        .collect()
}

#[test]
fn sums_of_rows_add_rows_and_make_zero_rows_as_long_as_the_primal() {
    let _globals = crate::TEST_GLOBALS.lock();
    let row = u64::from(vector_header(1, 0));
    // A ragged primal: rows of 2, 3 and 1 reals.
    let primal = rt_alloc_vector(u64::from(vector_header(1, 1)), 3) as usize;
    for (i, xs) in [&[1.0, 2.0][..], &[3.0, 4.0, 5.0], &[6.0]]
        .iter()
        .enumerate()
    {
        let r = reals(xs);
        // SAFETY: `primal` has three pointer slots.
        unsafe { *((primal + VECTOR_SLOTS_AT + 8 * i) as *mut usize) = r };
    }
    let zero = rt_vec_zero_of(row, primal);
    assert_eq!(rows_of(zero), [vec![0.0; 2], vec![0.0; 3], vec![0.0]]);
    // Row 0 read three times, row 2 once; row 1 never.
    let mut acc = zero;
    for (i, xs) in [
        (0, [1.0, 2.0]),
        (2, [5.0, 0.0]),
        (0, [0.5, 0.25]),
        (0, [4.0, 8.0]),
    ] {
        let r = reals(if i == 2 { &xs[..1] } else { &xs[..] });
        acc = rt_vec_plus(rt_vec_one_hot_of(row, primal, i, r), acc);
    }
    let want = [vec![5.5, 10.25], vec![0.0; 3], vec![5.0]];
    assert_eq!(rows_of(acc), want);
    // Two sums of several additions each: the smaller's summed per
    // row, then added to the larger.
    let mut other = rt_vec_zero_of(row, primal);
    for (i, xs) in [(2, &[1.0][..]), (1, &[1.0, 1.0, 1.0]), (2, &[2.0])] {
        other = rt_vec_plus(other, rt_vec_one_hot_of(row, primal, i, reals(xs)));
    }
    let both = rt_vec_plus(acc, other);
    assert_eq!(rows_of(both), [vec![5.5, 10.25], vec![1.0; 3], vec![8.0]]);
    // A dense vector of rows plus a sum of rows: row by row.
    let dense = rt_vec_dense(both);
    assert_eq!(
        rows_of(rt_vec_plus(dense, acc)),
        [vec![11.0, 20.5], vec![1.0; 3], vec![13.0]]
    );
    // The sums kept their own additions.
    assert_eq!(rows_of(acc), want);
}

#[test]
fn sums_sharing_a_log_keep_their_own_additions() {
    let _globals = crate::TEST_GLOBALS.lock();
    let n = 64;
    let mut acc = one_hot(n, 0.0, 1.0);
    let mut sums = std::vec::Vec::new();
    for i in 1..20 {
        acc = rt_vec_plus(acc, one_hot(n, i as f64, i as f64));
        sums.push(acc);
    }
    // Later additions went into the log the earlier sums read, past
    // their ends: each still has its own.
    let tenth = sums[9];
    let mut want = vec![0.0; n as usize];
    for (i, w) in want.iter_mut().enumerate().take(11) {
        *w = if i == 0 { 1.0 } else { i as f64 };
    }
    assert_eq!(elements(tenth), want);
    // Adding to an older sum copies it: neither sees the other's.
    let fork = rt_vec_plus(tenth, one_hot(n, 5.0, 100.0));
    let later = rt_vec_plus(acc, one_hot(n, 5.0, 1000.0));
    want[5] += 100.0;
    assert_eq!(elements(fork), want);
    let e = elements(later);
    assert_eq!(e[5], 1005.0);
    assert_eq!(e[19], 19.0);
    assert_eq!(elements(tenth)[5], 5.0);
    // The one-hot added in place is the newest sum's only.
    assert_eq!(elements(sums[18])[5], 5.0);
}

/// The additions of the accumulator tests: repeated indices below 70 of
/// 80, values of many magnitudes, a -0 now and then.
fn additions(count: usize, seed: f64) -> std::vec::Vec<(u64, f64)> {
    let mut x = seed;
    (0..count)
        .map(|k| {
            x = (x * 7.31).fract();
            let v = if k % 13 == 0 {
                -0.0
            } else {
                x * 10f64.powi(k as i32 % 5 - 2)
            };
            (((k * 7) % 70) as u64, v)
        })
        .collect()
}

/// A zero of 80 reals with `adds` added, one-hot first every other time;
/// each `plus` consumes the sum if `owned`.
fn chain(adds: &[(u64, f64)], owned: bool) -> usize {
    let mut s = rt_vec_zero(u64::from(vector_header(1, 0)), 80);
    for (k, &(i, x)) in adds.iter().enumerate() {
        let first = (k % 2) as u64;
        s = rt_vec_plus_hot(s, i, x, first | if owned { 2 } else { 0 });
    }
    s
}

fn bits(v: usize) -> std::vec::Vec<u64> {
    elements(v).iter().map(|x| x.to_bits()).collect()
}

/// A sum each `plus` consumes (`rt_vec_plus_hot`'s bit 1) becomes an
/// accumulator and is added to in place; bit for bit, it is what the same
/// additions make of a sum nothing consumes (which keeps a log): before
/// and after it has had more additions than elements (made dense), after
/// its elements are read, and as either operand of a `plus` of two sums.
/// A -0 added where nothing was gives 0 in both.
#[test]
fn an_accumulator_is_the_sum_it_stands_for() {
    let _globals = crate::TEST_GLOBALS.lock();
    let adds = additions(75, 0.37);
    let (acc, log) = (chain(&adds, true), chain(&adds, false));
    assert!(accumulator::is_acc(acc), "75 additions make an accumulator");
    assert!(!accumulator::is_acc(log));
    // As operands of `plus`, unread: settled, the same count and elements.
    let other = chain(&additions(5, 0.91), false);
    let (a, b) = (chain(&adds, true), chain(&adds, false));
    assert_eq!(bits(rt_vec_plus(a, other)), bits(rt_vec_plus(b, other)));
    let (a, b) = (chain(&adds, true), chain(&adds, false));
    assert_eq!(bits(rt_vec_plus(other, a)), bits(rt_vec_plus(other, b)));
    let (a, b) = (chain(&adds, true), chain(&adds, false));
    let (c, d) = (chain(&adds[..70], true), chain(&adds[..70], false));
    assert_eq!(bits(rt_vec_plus(a, c)), bits(rt_vec_plus(b, d)));
    // Read, then added to by consuming `plus`es (it settles first): what
    // was read stays as it was.
    let before = bits(acc);
    assert_eq!(before, bits(log));
    let read = rt_vec_dense(acc);
    assert!(
        !accumulator::is_acc(acc),
        "read: no longer added to in place"
    );
    let (mut acc, mut log) = (acc, log);
    for (k, &(i, x)) in additions(40, 0.53).iter().enumerate() {
        let first = (k % 2) as u64;
        acc = rt_vec_plus_hot(acc, i, x, first | 2);
        log = rt_vec_plus_hot(log, i, x, first);
    }
    assert_eq!(bits(acc), bits(log));
    assert_eq!(bits(read), before);
    // Past 80 additions unread, then a -0 where none was added.
    let mut adds = additions(120, 0.29);
    adds.push((75, -0.0));
    let (acc, log) = (chain(&adds, true), chain(&adds, false));
    let (e, f) = (bits(acc), bits(log));
    assert_eq!(e, f);
    assert_eq!(f64::from_bits(e[75]).to_bits(), 0.0f64.to_bits());
    // Before it has as many additions as elements, too.
    let mut adds = additions(70, 0.61);
    adds.push((77, -0.0));
    let (acc, log) = (chain(&adds, true), chain(&adds, false));
    assert!(accumulator::is_acc(acc));
    let e = bits(acc);
    assert_eq!(e, bits(log));
    assert_eq!(e[77], 0.0f64.to_bits());
    assert_eq!(e[79], 0.0f64.to_bits());
}

/// `plus` that consumes an accumulator adds the other operand into it in
/// place: bit for bit (also in what later additions and reads give) what
/// `plus` of the sums they stand for makes, for
/// either operand consumed, with another accumulator, a dense vector or a
/// zero beside it.
#[test]
fn a_plus_consuming_an_accumulator_is_the_plus_of_the_sums() {
    let _globals = crate::TEST_GLOBALS.lock();
    let n = 80u64;
    let reals = u64::from(vector_header(1, 0));
    let (long, short, over) = (
        additions(75, 0.37),
        additions(66, 0.83),
        additions(100, 0.11),
    );
    // A few additions, two at one index (0 and 70), as a step of a
    // backward sweep adds its reads together before its running sum.
    let few = additions(11, 0.29);
    let dense = rt_vec_dense(chain(&additions(30, 0.7), false));
    let zero = || rt_vec_zero(reals, n);
    type Make<'a> = &'a dyn Fn(bool) -> usize;
    let operands: [(&str, Make); 6] = [
        ("long", &|o| chain(&long, o)),
        ("short", &|o| chain(&short, o)),
        ("few", &|o| chain(&few, o)),
        ("made dense", &|o| chain(&over, o)),
        ("dense", &|_| dense),
        ("zero", &|_| zero()),
    ];
    let later = additions(20, 0.45);
    for (na, a) in &operands {
        for (nb, b) in &operands {
            for owned in [1u64, 2, 3] {
                let (a1, b1) = (a(owned & 1 != 0), b(owned & 2 != 0));
                if a1 == b1 {
                    continue;
                }
                let mut got = rt_vec_plus_owned(a1, b1, owned);
                let mut want = rt_vec_plus(a(false), b(false));
                // Later additions see the same elements.
                for &(i, x) in &later {
                    got = rt_vec_plus_hot(got, i + 7, x, 2);
                    want = rt_vec_plus_hot(want, i + 7, x, 0);
                }
                assert_eq!(bits(got), bits(want), "{na} + {nb}, owned {owned}");
            }
        }
    }
}

/// An accumulator settled by a `plus` that does not consume it is not
/// made an accumulator again by the next `plus` that does: that sum no
/// longer reads all its log (the first `plus` wrote past it), and copying
/// its entries costs O(count), where remaking the accumulator and settling
/// it again, in a loop that adds to its sum both ways, cost O(n) a step.
/// Settled, it is the sum of no additions to its elements.
#[test]
fn a_settled_accumulator_grows_its_log_before_it_is_remade() {
    let _globals = crate::TEST_GLOBALS.lock();
    let adds = additions(70, 0.37);
    let (mut acc, mut log) = (chain(&adds, true), chain(&adds, false));
    assert!(accumulator::is_acc(acc));
    // Eight steps: its count stays below its length (past it, a sum is
    // made dense anyway, and an accumulator is as cheap).
    for (k, &(i, x)) in additions(8, 0.53).iter().enumerate() {
        // Added to without being consumed, then consumed.
        let (side, side_log) = (rt_vec_plus_hot(acc, i, x, 0), rt_vec_plus_hot(log, i, x, 0));
        assert_eq!(bits(side), bits(side_log), "step {k}");
        acc = rt_vec_plus_hot(acc, (i + 3) % 80, x, 2);
        log = rt_vec_plus_hot(log, (i + 3) % 80, x, 0);
        assert!(!accumulator::is_acc(acc), "step {k}: remade at once");
    }
    assert_eq!(bits(acc), bits(log));
    let settled = chain(&adds, true);
    assert!(accumulator::is_acc(settled));
    settle(settled);
    // SAFETY: a sum's words.
    let (count, log) = unsafe { (word(settled, SUM_COUNT_AT), word(settled, SUM_LOG_AT)) };
    assert_eq!((count, log), (0, 0));
    assert_eq!(bits(settled), bits(chain(&adds, false)));
}

/// The pair `plus` makes of two one-hots holds both additions itself,
/// with no log; bit for bit, it is the sum with a log the same additions
/// made before: read, added to a zero, to a one-hot, to a sum with a
/// log, to an accumulator (consumed or not), and added to.
#[test]
fn a_pair_of_one_hots_is_the_sum_of_its_two_additions() {
    let _globals = crate::TEST_GLOBALS.lock();
    let n = 80u64;
    let el = Elems::reals(1);
    for (i1, x1, i2, x2) in [
        (3.0, 0.1, 3.0, 0.2),
        (3.0, -0.0, 3.0, -0.0),
        (5.0, 1e16, 2.0, -1.0),
        (0.0, -0.0, 79.0, 2.5),
    ] {
        let pair = || rt_vec_plus(one_hot(n, i1, x1), one_hot(n, i2, x2));
        // The sum with a log, as `plus` made it before.
        let logged = || {
            let (a, b) = (one_hot(n, i1, x1), one_hot(n, i2, x2));
            // SAFETY: both one-hots are held by this frame.
            unsafe {
                let (a, b) = (summand(a, 1), summand(b, 1));
                finish(
                    append_copy(a, el, n as usize, b.entries as *const usize, 1),
                    el,
                    n as usize,
                )
            }
        };
        let p = pair();
        // SAFETY: a sum's words.
        unsafe {
            assert_eq!((word(p, SUM_LOG_AT), word(p, SUM_COUNT_AT)), (0, 2));
        }
        assert_eq!(bits(p), bits(logged()));
        let zero = || rt_vec_zero(u64::from(vector_header(1, 0)), n);
        assert_eq!(
            bits(rt_vec_plus(zero(), pair())),
            bits(rt_vec_plus(zero(), logged()))
        );
        let hot = || one_hot(n, i2, 0.75);
        assert_eq!(
            bits(rt_vec_plus(hot(), pair())),
            bits(rt_vec_plus(hot(), logged()))
        );
        assert_eq!(
            bits(rt_vec_plus(pair(), hot())),
            bits(rt_vec_plus(logged(), hot()))
        );
        let adds = additions(30, 0.53);
        let with_log = || chain(&adds, false);
        assert_eq!(
            bits(rt_vec_plus(with_log(), pair())),
            bits(rt_vec_plus(with_log(), logged()))
        );
        assert_eq!(
            bits(rt_vec_plus(pair(), with_log())),
            bits(rt_vec_plus(logged(), with_log()))
        );
        let long = additions(75, 0.29);
        let acc = || chain(&long, true);
        assert_eq!(
            bits(rt_vec_plus(acc(), pair())),
            bits(rt_vec_plus(acc(), logged()))
        );
        assert_eq!(
            bits(rt_vec_plus_owned(acc(), pair(), 1)),
            bits(rt_vec_plus_owned(acc(), logged(), 1))
        );
        // Added in place, as `plus` of the settled accumulator adds it.
        assert_eq!(
            bits(rt_vec_plus_owned(acc(), pair(), 1)),
            bits(rt_vec_plus(acc(), pair()))
        );
        assert_eq!(
            bits(rt_vec_plus_owned(acc(), one_hot(n, i1, x1), 1)),
            bits(rt_vec_plus(acc(), one_hot(n, i1, x1)))
        );
        assert_eq!(
            bits(rt_vec_plus_hot(pair(), 7, 0.5, 0)),
            bits(rt_vec_plus_hot(logged(), 7, 0.5, 0))
        );
    }
    // More additions than elements: made dense, as before.
    let tiny = rt_vec_plus(one_hot(1, 0.0, 1.0), one_hot(1, 0.0, 2.0));
    assert_eq!(shape_of(tiny).0, VECTOR_TAG);
    assert_eq!(elements(tiny), [3.0]);
}
