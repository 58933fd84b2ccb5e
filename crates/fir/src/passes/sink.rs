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
//! What moves: allocations, loads and tag and zero tests (cells never
//! change), and an `If` of only arithmetic, tests, loads and allocations
//! that allocates (with its operation counters, which then count what
//! runs); then those of the others only what moved reads. Nothing that can fail, print, call,
//! or read or fill a memo table moves, so the program's effects and their
//! order are the same; an instruction moved into an arm runs at most as
//! often as before. An `If` on the condition of the `If` it would move
//! into moves too: simplification then folds it. Arithmetic that the arm
//! itself reads stays: the
//! scheduler starts it early, before the test (moved into the arms of
//! saddle-FF's loop, such arithmetic cost it 25%). Instructions are taken
//! from the last to the first, so that a chain of them (a load, the test
//! of what it loaded, the `If` on that test) moves into the arm together,
//! in its order, and then the arms are sunk into in turn. A function
//! where an `If` moved into an arm of an `If` on the same condition is
//! simplified again, which folds it (simplifying every function the pass
//! changed cost a tenth of the FIR passes' time on a large program), and
//! sunk in again: a test both arms read, one through what folded away,
//! is read by one now (sumsq-R's backward sweep loaded and tested the
//! `cdr` of the list at every element for the lazy zero one arm makes:
//! 187.0M -> 177.7M instructions per 10 gradients).

use crate::{Block, Func, Inst, Module, Op, Term, Val};
use rustc_hash::FxHashMap as HashMap;

/// Sinks in every function, and simplifies those where an `If` moved
/// into an arm its condition decides (a second `plus` on the same zero
/// test), then sinks in them again: the copy the other arm folded away
/// was the only reader there of a test both arms read before.
pub fn sink(m: &mut Module) {
    let decided: Vec<bool> = m.funcs.iter_mut().map(sink_func).collect();
    super::simplify::simplify_changed(m, &decided);
    for (f, d) in m.funcs.iter_mut().zip(&decided) {
        if *d {
            sink_func(f);
        }
    }
}

/// Whether an `If` moved into an arm of an `If` on its condition.
pub fn sink_func(f: &mut Func) -> bool {
    // What moves is an allocation or what feeds one (or an `If` its arm
    // decides, which comes with them): a function that allocates nothing
    // is left as it is, unwalked.
    allocates_in(&f.body) && sink_block(&mut f.body)
}

/// Where the values of a block are read, as far as one walk from the end
/// has seen.
#[derive(Clone, Copy, PartialEq)]
enum Readers {
    /// Only inside one arm (0: then, 1: else) of the `If` that is
    /// instruction `inst` of the block; `moved`: only by instructions
    /// moving there.
    Arm { inst: usize, arm: u8, moved: bool },
    /// Anywhere else, or in more than one place.
    Many,
}

fn note(readers: &mut HashMap<Val, Readers>, v: Val, at: Readers) {
    readers
        .entry(v)
        .and_modify(|r| {
            *r = match (*r, at) {
                (
                    Readers::Arm { inst, arm, moved },
                    Readers::Arm {
                        inst: i,
                        arm: a,
                        moved: m,
                    },
                ) if (inst, arm) == (i, a) => Readers::Arm {
                    inst,
                    arm,
                    moved: moved && m,
                },
                _ => Readers::Many,
            }
        })
        .or_insert(at);
}

/// Where all the results of an instruction are read, if in one arm.
fn readers_of(readers: &HashMap<Val, Readers>, results: &[Val]) -> Option<(usize, u8, bool)> {
    let mut at: Option<(usize, u8, bool)> = None;
    for v in results {
        let Some(&Readers::Arm { inst, arm, moved }) = readers.get(v) else {
            return None;
        };
        at = match at {
            None => Some((inst, arm, moved)),
            Some((i, a, m)) if (i, a) == (inst, arm) => Some((i, a, m && moved)),
            Some(_) => return None,
        };
    }
    at
}

/// Does the instruction allocate a cell (in an arm, for an `If`)?
fn allocates(op: &Op) -> bool {
    match op {
        Op::Alloc(..) | Op::AllocZero(..) => true,
        Op::If { then_, else_, .. } => allocates_in(then_) || allocates_in(else_),
        _ => false,
    }
}

/// A load or a test of a cell: cheap to start late, and one an arm alone
/// reads (the zero test of a `plus` operand only the lazy-zero arm
/// needs) costs a load and a register on every path that does not.
fn reads_cell(op: &Op) -> bool {
    matches!(op, Op::Load(..) | Op::TagIs(..) | Op::IsZero(_))
}

fn allocates_in(b: &Block) -> bool {
    b.insts.iter().any(|i| allocates(&i.op))
}

/// May the instruction run later, and not at all? What may go unused
/// ([`Op::is_removable`]) but a memo lookup, which a record in between
/// would change.
fn movable(op: &Op) -> bool {
    match op {
        Op::If { then_, else_, .. } => movable_block(then_) && movable_block(else_),
        op => op.is_removable() && !matches!(op, Op::MemoGet(..)),
    }
}

fn movable_block(b: &Block) -> bool {
    matches!(b.term, Term::Yield(_))
        && b.insts
            .iter()
            .all(|i| matches!(i.op, Op::Count(_)) || movable(&i.op))
}

/// Whether an `If` moved into an arm of an `If` on its condition.
fn sink_block(b: &mut Block) -> bool {
    let insts = std::mem::take(&mut b.insts);
    let mut readers: HashMap<Val, Readers> = HashMap::default();
    b.term
        .for_each_operand(|v| note(&mut readers, v, Readers::Many));
    // Per instruction of the block: the instructions moving to the start
    // of its arms, last first.
    let mut moving: HashMap<(usize, u8), Vec<Inst>> = HashMap::default();
    let mut kept: Vec<(usize, Inst)> = Vec::with_capacity(insts.len());
    let mut decided_moved = false;
    // The conditions of the `If`s kept.
    let mut conds: HashMap<usize, Val> = HashMap::default();
    for (i, inst) in insts.into_iter().enumerate().rev() {
        // A cell moves, and what only moving instructions read; arithmetic
        // an arm reads itself stays, where scheduling can start it early
        // (moved into the arms of saddle-FF's loop, it cost 25%).
        // So does an `If` on the condition of the `If` it moves into,
        // which simplification then folds (`plus` of `plus` on one zero
        // test).
        let decided = |j: usize| match &inst.op {
            Op::If { cond, .. } => conds.get(&j) == Some(cond),
            _ => false,
        };
        let target = readers_of(&readers, &inst.results).filter(|&(j, _, moved)| {
            movable(&inst.op)
                && (moved || allocates(&inst.op) || reads_cell(&inst.op) || decided(j))
        });
        if let Some((j, arm, _)) = target {
            decided_moved |= decided(j);
            let at = Readers::Arm {
                inst: j,
                arm,
                moved: true,
            };
            // Its operands are now read in that arm, by what moved there.
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
        if let Op::If { cond, then_, else_ } = &inst.op {
            conds.insert(i, *cond);
            for (arm, block) in [(0, then_), (1, else_)] {
                let at = Readers::Arm {
                    inst: i,
                    arm,
                    moved: false,
                };
                block.for_each_use(&mut |v| note(&mut readers, v, at));
            }
        }
        kept.push((i, inst));
    }
    kept.reverse();
    let mut changed = decided_moved;
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
        sink_func(&mut f);
        let m = Module {
            funcs: vec![f],
            main: None,
            vectors: Default::default(),
            strings: vec![],
            cells: [(1, vec![Ty::Ptr]), (2, vec![Ty::Ptr])].into(),
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

    #[test]
    fn a_load_and_a_test_only_an_arm_reads_move_into_it() {
        let v = Val::new;
        // The lazy zero already in the arm of `plus` that takes it; the
        // load and the zero test it reads are before the `If`.
        let mut f = plus_of_a_lazy_zero();
        let lazy = f.body.insts.remove(2);
        let Op::If { then_, .. } = &mut f.body.insts[3].op else {
            panic!("expected the `If` of `plus`");
        };
        then_.insts.push(lazy);
        then_.term = Term::Yield(vec![v(5)]);
        sink_func(&mut f);
        let left: Vec<u32> = f.body.insts.iter().map(|i| i.results[0].number()).collect();
        assert_eq!(left, [6, 7]);
        let Op::If { then_, .. } = &f.body.insts[1].op else {
            panic!("expected the `If` of `plus`");
        };
        let moved: Vec<u32> = then_.insts.iter().map(|i| i.results[0].number()).collect();
        assert_eq!(moved, [2, 3, 5]);
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
