//! FIR-to-FIR: instructions whose results only one arm of a later `If`
//! reads move into that arm, so that they run only when it does.
//!
//! Lowering computes every binding where the program binds it, and
//! reverse mode binds many values that only one outcome of a later test
//! needs: the sensitivity of `(car l)` is `(cons ds (zero (cdr l)))`, and
//! `plus` of it with the sensitivity of the rest is `if (is_zero rest)
//! (zero (cdr l)) rest`, so every step of sumsq-R's backward sweep made
//! five lazy zero cells of which, on a list, it used none (80 of its 104
//! bytes allocated per element). Here a lazy zero moves into the arm of
//! the `plus` that takes it, with the test and the loads that only it
//! needs, and the common path allocates the one cell it keeps.
//!
//! What moves: arithmetic and constants, tag and zero tests, loads (cells
//! never change) and allocations, and an `If` of only those (with their
//! operation counters, which then count what runs). Nothing that can
//! fail, print, call, or read or fill a memo table moves, so the
//! program's effects and their order are the same; an instruction moved
//! into an arm runs at most as often as before. Instructions are taken
//! from the last to the first, so that a chain of them (a load, the test
//! of what it loaded, the `If` on that test) moves into the arm together,
//! in its order, and then the arms are sunk into in turn. The functions
//! it changed are simplified again: what moved into an arm meets what the
//! arm's condition decides.

use crate::{Block, Func, Inst, Module, Op, Term, Val};
use rustc_hash::FxHashMap as HashMap;

/// Sinks in every function, and simplifies those it changed: what moved
/// into an arm meets what the arm's condition decides (a second `plus`
/// on the same zero test).
pub fn sink(m: &mut Module) {
    let changed: Vec<bool> = m.funcs.iter_mut().map(sink_func).collect();
    super::simplify::simplify_changed(m, &changed);
}

/// Whether anything moved.
pub fn sink_func(f: &mut Func) -> bool {
    sink_block(&mut f.body)
}

/// Where the values of a block are read, as far as one walk from the end
/// has seen.
#[derive(Clone, Copy, PartialEq)]
enum Readers {
    /// Only inside one arm (0: then, 1: else) of the `If` that is
    /// instruction `inst` of the block.
    Arm { inst: usize, arm: u8 },
    /// Anywhere else, or in more than one place.
    Many,
}

fn note(readers: &mut HashMap<Val, Readers>, v: Val, at: Readers) {
    readers
        .entry(v)
        .and_modify(|r| {
            if *r != at {
                *r = Readers::Many;
            }
        })
        .or_insert(at);
}

/// May the instruction run later, and not at all? See the module doc.
fn movable(op: &Op) -> bool {
    match op {
        Op::If { then_, else_, .. } => movable_block(then_) && movable_block(else_),
        op => {
            op.is_pure()
                || matches!(
                    op,
                    Op::Load(..)
                        | Op::TagIs(..)
                        | Op::IsZero(_)
                        | Op::Alloc(..)
                        | Op::AllocZero(..)
                )
        }
    }
}

fn movable_block(b: &Block) -> bool {
    matches!(b.term, Term::Yield(_))
        && b.insts
            .iter()
            .all(|i| matches!(i.op, Op::Count(_)) || movable(&i.op))
}

fn sink_block(b: &mut Block) -> bool {
    let insts = std::mem::take(&mut b.insts);
    let mut readers: HashMap<Val, Readers> = HashMap::default();
    b.term
        .for_each_operand(|v| note(&mut readers, v, Readers::Many));
    // Per instruction of the block: the instructions moving to the start
    // of its arms, last first.
    let mut moving: HashMap<(usize, u8), Vec<Inst>> = HashMap::default();
    let mut kept: Vec<(usize, Inst)> = Vec::with_capacity(insts.len());
    for (i, inst) in insts.into_iter().enumerate().rev() {
        let target = match inst.results.first().map(|v| readers.get(v)) {
            Some(Some(&at @ Readers::Arm { .. })) if movable(&inst.op) => {
                let all_there = inst.results.iter().all(|v| readers.get(v) == Some(&at));
                all_there.then_some(at)
            }
            _ => None,
        };
        if let Some(at @ Readers::Arm { inst: j, arm }) = target {
            // Its operands are now read in that arm.
            inst.op.for_each_operand(|v| note(&mut readers, v, at));
            if let Op::If { then_, else_, .. } = &inst.op {
                then_.for_each_use(&mut |v| note(&mut readers, v, at));
                else_.for_each_use(&mut |v| note(&mut readers, v, at));
            }
            moving.entry((j, arm)).or_default().push(inst);
            continue;
        }
        inst.op
            .for_each_operand(|v| note(&mut readers, v, Readers::Many));
        if let Op::If { then_, else_, .. } = &inst.op {
            then_.for_each_use(&mut |v| note(&mut readers, v, Readers::Arm { inst: i, arm: 0 }));
            else_.for_each_use(&mut |v| note(&mut readers, v, Readers::Arm { inst: i, arm: 1 }));
        }
        kept.push((i, inst));
    }
    kept.reverse();
    let mut changed = !moving.is_empty();
    b.insts = kept
        .into_iter()
        .map(|(i, mut inst)| {
            if let Op::If { then_, else_, .. } = &mut inst.op {
                for (arm, block) in [(0u8, &mut *then_), (1u8, &mut *else_)] {
                    if let Some(mut moved) = moving.remove(&(i, arm)) {
                        moved.reverse();
                        moved.append(&mut block.insts);
                        block.insts = moved;
                    }
                    changed |= sink_block(block);
                }
            }
            inst
        })
        .collect();
    changed
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::inst as i;
    use crate::Ty;
    use base::EntityRef;

    /// `f(l, rest)`, the shape of `plus` of `(zero (cdr l))` and `rest`:
    /// loads `(cdr l)`, makes its lazy zero unless it is one (counting it),
    /// then returns `rest`, or the zero when `rest` is a zero.
    fn plus_of_a_lazy_zero() -> Func {
        let v = Val::new;
        let yields = |x: usize| Block {
            insts: vec![],
            term: Term::Yield(vec![v(x)]),
        };
        Func {
            name: "f".into(),
            params: vec![Ty::Ptr, Ty::Ptr],
            returns: vec![Ty::Ptr],
            types: vec![
                Ty::Ptr,
                Ty::Ptr,
                Ty::Ptr,
                Ty::Bool,
                Ty::Ptr,
                Ty::Ptr,
                Ty::Bool,
                Ty::Ptr,
            ],
            body: Block {
                insts: vec![
                    i(&[2], Op::Load(v(0), 1, 0)),
                    i(&[3], Op::IsZero(v(2))),
                    i(
                        &[5],
                        Op::If {
                            cond: v(3),
                            then_: yields(2),
                            else_: Block {
                                insts: vec![
                                    i(&[], Op::Count(1)),
                                    i(&[4], Op::AllocZero(2, vec![v(2)])),
                                ],
                                term: Term::Yield(vec![v(4)]),
                            },
                        },
                    ),
                    i(&[6], Op::IsZero(v(1))),
                    i(
                        &[7],
                        Op::If {
                            cond: v(6),
                            then_: yields(5),
                            else_: yields(1),
                        },
                    ),
                ],
                term: Term::Return(vec![v(7)]),
            },
        }
    }

    #[test]
    fn a_lazy_zero_moves_into_the_arm_that_takes_it() {
        let mut f = plus_of_a_lazy_zero();
        assert!(sink_func(&mut f));
        let m = Module {
            funcs: vec![f],
            main: None,
            strings: vec![],
        };
        assert_eq!(crate::verify::verify(&m), Ok(()));
        let body = &m.funcs[0].body;
        // Left: the test of `rest` and the `If` on it.
        let left: Vec<u32> = body.insts.iter().map(|i| i.results[0].number()).collect();
        assert_eq!(left, [6, 7]);
        let Op::If { then_, else_, .. } = &body.insts[1].op else {
            panic!("expected the `If` of `plus`");
        };
        // The load, its zero test and the lazy zero, in their order, in
        // the arm that returns the zero; the other arm is untouched.
        let moved: Vec<u32> = then_.insts.iter().map(|i| i.results[0].number()).collect();
        assert_eq!(moved, [2, 3, 5]);
        assert!(else_.insts.is_empty());
    }

    /// A value read in two places, or by an instruction that stays, or by
    /// an `If` that can fail, stays where it is.
    #[test]
    fn what_more_than_one_arm_reads_stays() {
        let v = Val::new;
        let mut f = plus_of_a_lazy_zero();
        // The result also returns the loaded `(cdr l)`.
        f.returns.push(Ty::Ptr);
        f.body.term = Term::Return(vec![v(7), v(2)]);
        sink_func(&mut f);
        let left: Vec<u32> = f.body.insts.iter().map(|i| i.results[0].number()).collect();
        assert_eq!(left, [2, 6, 7]);
        // An arm that fails keeps its `If` in place.
        let mut g = plus_of_a_lazy_zero();
        if let Op::If { else_, .. } = &mut g.body.insts[2].op {
            else_.term = Term::Error(crate::StrId::new(0));
        }
        sink_func(&mut g);
        let left: Vec<u32> = g.body.insts.iter().map(|i| i.results[0].number()).collect();
        assert_eq!(left, [2, 3, 5, 6, 7]);
    }
}
