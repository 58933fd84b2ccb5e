//! Slots read only for their length: where every `Alloc` of a member
//! stores at pointer slot `a` a vector as long as the one it stores at
//! slot `b`, and every `Load` of slot `a` is read only for its length
//! (`vec_len`, `vec_index_ok`), those loads read slot `b` instead, and
//! slot `a`, read by nothing, is dropped with the other dead slots.
//!
//! Why: the tape cell of reverse over reverse through a loop over a vector
//! holds, per element, the sensitivity the inner backward sweep had before
//! and after the step and the one-hot it added, and the outer backward
//! sweep reads the three only for the lengths its checks of `plus`
//! compare, each as long as the vector the loop reads, which the cell
//! holds too: three pointers a cell, and each one-hot kept alive as an
//! object of its own where adding it in place would have made none.
//!
//! Which vectors are as long as which, in a function: a `vec_len`'s
//! result is its vector's length; a zero, a one-hot or a built vector is as
//! long as the number it was made with, a `plus` as its operands (it
//! fails on vectors of two lengths), a `VecZeroOf` or `VecOneHotOf` as the
//! vector it was made of; and after an `If` on `x = y` whose other arm
//! leaves (a length check that fails with an error), `x` is `y`. What an
//! arm learns holds in that arm only.

use crate::passes::lengths::Len;
use crate::{Block, Cmp, Module, Op, Term, Ty, Val};
use base::EntityRef;
use rustc_hash::FxHashMap as HashMap;

/// A length, in a function: that of a vector (`true`) or a number.
type Key = (Val, bool);

/// Classes of lengths known equal, with the changes made in an arm undone
/// when the walk leaves it.
#[derive(Default)]
struct Equal {
    parent: HashMap<Key, Key>,
    undo: Vec<Key>,
}

impl Equal {
    fn find(&self, mut k: Key) -> Key {
        while let Some(p) = self.parent.get(&k) {
            k = *p;
        }
        k
    }

    fn union(&mut self, a: Key, b: Key) {
        let (a, b) = (self.find(a), self.find(b));
        if a != b {
            self.parent.insert(a, b);
            self.undo.push(a);
        }
    }

    fn undo_to(&mut self, mark: usize) {
        while self.undo.len() > mark {
            if let Some(k) = self.undo.pop() {
                self.parent.remove(&k);
            }
        }
    }
}

/// Per member: for each pair of its pointer slots, whether every `Alloc`
/// seen so far stores vectors of one length there.
type Pairs = HashMap<u32, Vec<Vec<bool>>>;

/// What a walk of one function reads: the module, and the lengths of
/// each function's results ([`crate::passes::lengths::result_lengths`]).
struct Ctx<'a> {
    m: &'a Module,
    results: &'a [Vec<Len>],
}

fn walk(
    b: &Block,
    eq: &mut Equal,
    cmps: &mut HashMap<Val, (Val, Val)>,
    pairs: &mut Pairs,
    cx: &Ctx,
) {
    let m = cx.m;
    let vec = |v: Val| (v, true);
    let num = |v: Val| (v, false);
    for i in &b.insts {
        let r = i.results.first().copied();
        match &i.op {
            Op::VecLen(v) => {
                if let Some(r) = r {
                    eq.union(vec(*v), num(r));
                }
            }
            Op::VecZero(_, n) | Op::VecOneHot { len: n, .. } | Op::VecBuild { len: n, .. } => {
                if let Some(r) = r {
                    eq.union(vec(r), num(*n));
                }
            }
            Op::VecPlus(_, a, x) => {
                if let Some(r) = r {
                    eq.union(vec(r), vec(*a));
                    eq.union(vec(r), vec(*x));
                }
            }
            Op::VecZeroOf { of, .. } | Op::VecOneHotOf { of, .. } => {
                if let Some(r) = r {
                    eq.union(vec(r), vec(*of));
                }
            }
            Op::Call(g, args) | Op::CallAt(g, args, _) => {
                let lens = cx.results.get(g.index()).map_or(&[][..], Vec::as_slice);
                for (r, len) in i.results.iter().zip(lens) {
                    match len {
                        Len::Of(p) => eq.union(vec(*r), vec(args[*p])),
                        Len::Is(p) => eq.union(vec(*r), num(args[*p])),
                        _ => {}
                    }
                }
            }
            Op::FCmp(Cmp::Eq, x, y) => {
                if let Some(r) = r {
                    cmps.insert(r, (*x, *y));
                }
            }
            Op::Alloc(tag, args) | Op::AllocZero(tag, args) => {
                let Some(layout) = m.cells.get(tag) else {
                    continue;
                };
                let n = layout.len();
                let same = pairs.entry(*tag).or_insert_with(|| vec![vec![true; n]; n]);
                for a in 0..n.min(args.len()) {
                    for c in 0..n.min(args.len()) {
                        if a != c && same[a][c] {
                            let ptrs = layout[a] == Ty::Ptr && layout[c] == Ty::Ptr;
                            same[a][c] = ptrs && eq.find(vec(args[a])) == eq.find(vec(args[c]));
                        }
                    }
                }
            }
            Op::If { cond, then_, else_ } => {
                let mark = eq.undo.len();
                walk(then_, eq, cmps, pairs, cx);
                eq.undo_to(mark);
                walk(else_, eq, cmps, pairs, cx);
                eq.undo_to(mark);
                // A check: the arm that fails leaves, so after the `If`
                // the test held.
                let leaves = |t: &Term| !matches!(t, Term::Yield(_));
                if leaves(&else_.term) && !leaves(&then_.term) {
                    if let Some((x, y)) = cmps.get(cond).copied() {
                        eq.union(num(x), num(y));
                    }
                }
            }
            _ => {}
        }
    }
}

/// Retargets the loads of each slot read only for its length to a slot
/// as long (see the module doc). Says which functions it changed.
pub(super) fn read_lengths_elsewhere(m: &mut Module, results: &[Vec<Len>]) -> Vec<bool> {
    let mut pairs = Pairs::default();
    let cx = Ctx { m, results };
    for f in &m.funcs {
        walk(
            &f.body,
            &mut Equal::default(),
            &mut HashMap::default(),
            &mut pairs,
            &cx,
        );
    }
    // Per (member, slot): whether every value loaded from it is read only
    // for its length.
    let mut length_only: HashMap<(u32, u32), bool> = HashMap::default();
    for f in &m.funcs {
        let mut uses = vec![0u32; f.types.len()];
        let mut lengths = vec![0u32; f.types.len()];
        f.body.for_each_use(&mut |v| uses[v.index()] += 1);
        f.body.for_each_inst(&mut |i| {
            if let Op::VecLen(v) | Op::VecIndexOk(v, _) = i.op {
                lengths[v.index()] += 1;
            }
        });
        f.body.for_each_inst(&mut |i| {
            if let (Op::Load(_, tag, slot), [r]) = (&i.op, &i.results[..]) {
                let only = uses[r.index()] == lengths[r.index()];
                *length_only.entry((*tag, *slot)).or_insert(true) &= only;
            }
        });
    }
    // Each slot read for its length alone reads a slot as long that is
    // read for more, or, where all are read for their lengths, the first.
    let mut to: HashMap<(u32, u32), u32> = HashMap::default();
    for (tag, same) in &pairs {
        for a in 0..same.len() {
            if length_only.get(&(*tag, a as u32)) != Some(&true) {
                continue;
            }
            let kept = |c: usize| length_only.get(&(*tag, c as u32)) != Some(&true);
            let b = (0..same.len())
                .filter(|c| same[a][*c] && same[*c][a])
                .find(|c| kept(*c) || *c < a)
                .filter(|c| kept(*c) || !to.contains_key(&(*tag, *c as u32)));
            if let Some(b) = b {
                to.insert((*tag, a as u32), b as u32);
            }
        }
    }
    m.funcs
        .iter_mut()
        .map(|f| !to.is_empty() && retarget(&mut f.body, &to))
        .collect()
}

fn retarget(b: &mut Block, to: &HashMap<(u32, u32), u32>) -> bool {
    let mut changed = false;
    b.for_each_inst_mut(&mut |i| {
        if let Op::Load(_, tag, slot) = &mut i.op {
            if let Some(c) = to.get(&(*tag, *slot)) {
                *slot = *c;
                changed = true;
            }
        }
    });
    changed
}
