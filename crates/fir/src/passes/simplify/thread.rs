//! An `If` on a boolean the `If` before it gave, constant in some of its
//! arms, moves into each of that `If`'s arms (jump threading): where the
//! boolean is a constant, the simplifier then keeps one arm of it.
//!
//! `(null? l)` of a list whose cells may be lazy zeros is
//! `if (tag 0) true (if (tag 1) false (.. the forced cell's tag 0))`, and
//! the body of a list walker branches on that boolean: the tag was tested
//! twice, the boolean made and tested again (`total` in sumsq-R: 9 of its
//! 41 instructions per element). Threaded, the nil and pair arms branch
//! straight to their code, and only the lazy zero's arm keeps the test.
//! The `If` is copied once per arm of the first that yields (arms that end
//! the block never reach it), so only one of bounded size moves.

use super::super::inline::rename_block;
use crate::{Block, Inst, Op, Term, Ty, Val};
use base::EntityRef;
use rustc_hash::FxHashMap as HashMap;

/// The largest `If` (instructions, nested ones included) copied into the
/// arms of the one before.
pub(super) const MAX_SIZE: usize = 400;

/// Should `second`, an `If` on result `j` of `first`, move into
/// `first`'s arms: is that result a constant in one of them?
pub(super) fn worth_threading(first: &Inst, second: &Inst, consts: &[bool]) -> Option<usize> {
    let (Op::If { then_, else_, .. }, Op::If { cond, .. }) = (&first.op, &second.op) else {
        return None;
    };
    let j = first.results.iter().position(|r| r == cond)?;
    let constant = |b: &Block| match &b.term {
        Term::Yield(ys) => consts.get(ys[j].index()).copied().unwrap_or(false),
        _ => false,
    };
    let size = match &second.op {
        Op::If { then_, else_, .. } => then_.size() + else_.size(),
        _ => return None,
    };
    ((constant(then_) || constant(else_)) && size <= MAX_SIZE).then_some(j)
}

/// The `If` that runs `first`'s arms and then, in each, a copy of
/// `second` on what that arm yielded for result `j`; its results are
/// `first`'s and `second`'s. New values are typed in `types`.
pub(super) fn thread_pair(first: Inst, second: Inst, j: usize, types: &mut Vec<Ty>) -> Inst {
    let Op::If {
        cond,
        then_: t1,
        else_: e1,
    } = first.op
    else {
        unreachable!("`thread_pair` takes two `If`s")
    };
    let mut arm = |mut a: Block| {
        let Term::Yield(ys) = &a.term else {
            // The arm ends the block: the second `If` never ran after it.
            return a;
        };
        let ys = ys.clone();
        // A copy with every value it defines fresh, reading what the arm
        // yielded where it read the first `If`'s results.
        let mut copy = Block {
            insts: vec![second.clone()],
            term: Term::Yield(vec![]),
        };
        let mut fresh: HashMap<Val, Val> = HashMap::default();
        copy.for_each_result_mut(&mut |v| {
            types.push(types[v.index()]);
            fresh.insert(*v, Val::new(types.len() - 1));
        });
        for (r, y) in first.results.iter().zip(&ys) {
            fresh.insert(*r, *y);
        }
        rename_block(&mut copy, &fresh);
        let mut inst = copy.insts.pop().expect("the copied `If`");
        if let Op::If { cond, .. } = &mut inst.op {
            *cond = ys[j];
        }
        let mut yields = ys;
        yields.extend(inst.results.iter().copied());
        a.insts.push(inst);
        a.term = Term::Yield(yields);
        a
    };
    let then_ = arm(t1);
    let else_ = arm(e1);
    let mut results = first.results;
    results.extend(second.results);
    Inst {
        results,
        op: Op::If { cond, then_, else_ },
    }
}
