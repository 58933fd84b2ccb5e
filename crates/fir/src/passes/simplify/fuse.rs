//! Two `If`s on one condition in one block become one, when nothing
//! between them has an effect: the first's arms run, then the second's
//! arms on the same outcome, as before, but the condition is tested once.
//!
//! Lowering tests a union's tag once per operation on it: `(car l)`,
//! `(cdr l)` and the error checks of each are an `If` on the same tag
//! test, one after the other, and a list walker such as
//! `(+ (car l) (total (cdr l)))` tested the tag of `l` four times per
//! element. What lies between two such `If`s moves above the first when
//! it is arithmetic or reads cells (cells never change) and does not read
//! the first `If`'s results; anything else (a call, a memo table, an
//! allocation, printing, an error) keeps the two apart. In the fused `If`,
//! the second arms read the values the first arms yielded where they read
//! the first `If`'s results, and an arm of the first that ends the block
//! (a return or an error) leaves the second's arm out, since it never ran.

use crate::{Block, Inst, Module, Op, Term, Ty, Val};
use base::EntityRef;
use rustc_hash::FxHashMap as HashMap;

/// Simplifies every function knowing what boolean `If` results tell of
/// conditions (the tests `null?` of a union with a lazy zero makes: where
/// `if (tag 0) true (if (tag 1) false ..)` is false, the tag is not 0),
/// which leaves the tests of the tag after it side by side; fuses them,
/// and simplifies what fused again (the `If`s a fused one decides).
pub fn fuse(m: &mut Module) {
    for f in &mut m.funcs {
        super::simplify_once(f, true);
        let mut consts = vec![false; f.types.len()];
        bool_consts(&f.body, &mut consts);
        if fuse_block(&mut f.body, &mut f.types, &mut consts) {
            super::simplify_once(f, false);
        }
    }
}

/// Marks the values that are boolean constants.
fn bool_consts(b: &Block, out: &mut [bool]) {
    for inst in &b.insts {
        match &inst.op {
            Op::BoolConst(_) => out[inst.results[0].index()] = true,
            Op::If { then_, else_, .. } => {
                bool_consts(then_, out);
                bool_consts(else_, out);
            }
            _ => {}
        }
    }
}

/// Fuses (and threads, [`super::thread`]) in `b` and the blocks nested
/// in it; whether anything changed. `consts`: the boolean constants.
pub(super) fn fuse_block(b: &mut Block, types: &mut Vec<Ty>, consts: &mut Vec<bool>) -> bool {
    let mut changed = false;
    for inst in &mut b.insts {
        if let Op::If { then_, else_, .. } = &mut inst.op {
            changed |= fuse_block(then_, types, consts);
            changed |= fuse_block(else_, types, consts);
        }
    }
    let insts = std::mem::take(&mut b.insts);
    let mut out: Vec<Inst> = Vec::with_capacity(insts.len());
    // The index in `out` of the last `If`, and the instructions after it
    // (all movable above it) waiting in `between`.
    let mut last_if: Option<usize> = None;
    let mut between: Vec<Inst> = Vec::new();
    for inst in insts {
        if let (Op::TagIs(p, tag), Some(k)) = (&inst.op, last_if) {
            if tag_into_arms(&mut out[k], *p, *tag, inst.results[0], types, consts) {
                changed = true;
                continue;
            }
        }
        if let (Op::If { cond, .. }, Some(k)) = (&inst.op, last_if) {
            let Op::If { cond: first, .. } = &out[k].op else {
                unreachable!("`last_if` names an `If`")
            };
            if cond == first {
                // The waiting instructions go above the first `If`.
                let first_if = out.pop().expect("the last `If`");
                out.append(&mut between);
                out.push(fuse_pair(first_if, inst));
                last_if = Some(out.len() - 1);
                changed = true;
                continue;
            }
            if let Some(j) = super::thread::worth_threading(&out[k], &inst, consts) {
                let first_if = out.pop().expect("the last `If`");
                out.append(&mut between);
                let mut threaded = super::thread::thread_pair(first_if, inst, j, types);
                // Each arm now ends in the copy, on what it yielded: an
                // arm that is itself an `If` yielding a constant threads
                // it further in.
                if let Op::If { then_, else_, .. } = &mut threaded.op {
                    fuse_block(then_, types, consts);
                    fuse_block(else_, types, consts);
                }
                out.push(threaded);
                last_if = Some(out.len() - 1);
                changed = true;
                continue;
            }
        }
        if let Some(k) = last_if {
            if movable(&inst.op) && !reads_any(&inst, &out[k].results) {
                between.push(inst);
                continue;
            }
        }
        out.append(&mut between);
        last_if = matches!(inst.op, Op::If { .. }).then_some(out.len());
        out.push(inst);
    }
    out.append(&mut between);
    b.insts = out;
    changed
}

/// A test of the tag of `p`, a result of the `If` `first` that each arm
/// yielding it allocates there (a cell of one known tag, an `If` choosing
/// between two closures, say), becomes a result of that `If`, `result`: a
/// constant in each arm. An `If` on the test then threads into its arms
/// ([`super::thread`]), and the cells, only tested, die. Whether it did.
fn tag_into_arms(
    first: &mut Inst,
    p: Val,
    tag: u32,
    result: Val,
    types: &mut Vec<Ty>,
    consts: &mut Vec<bool>,
) -> bool {
    let Some(j) = first.results.iter().position(|r| *r == p) else {
        return false;
    };
    let Op::If { then_, else_, .. } = &mut first.op else {
        return false;
    };
    // The tag of the cell an arm yields, if it allocates it; `Some(None)`
    // for an arm that never yields.
    let made = |b: &Block| -> Option<Option<u32>> {
        let Term::Yield(ys) = &b.term else {
            return Some(None);
        };
        b.insts.iter().find_map(|i| match &i.op {
            Op::Alloc(t, _) | Op::AllocZero(t, _) if i.results.first() == Some(&ys[j]) => {
                Some(Some(*t))
            }
            _ => None,
        })
    };
    let (Some(t1), Some(t2)) = (made(then_), made(else_)) else {
        return false;
    };
    for (arm, t) in [(then_, t1), (else_, t2)] {
        let Some(t) = t else { continue };
        let Term::Yield(ys) = &mut arm.term else {
            continue;
        };
        types.push(Ty::Bool);
        let v = Val::new(types.len() - 1);
        consts.resize(types.len(), false);
        consts[v.index()] = true;
        arm.insts.push(Inst {
            results: vec![v],
            op: Op::BoolConst(t == tag),
        });
        ys.push(v);
    }
    first.results.push(result);
    true
}

/// What may move above an `If`: arithmetic, and reads of cells.
fn movable(op: &Op) -> bool {
    op.is_pure() || matches!(op, Op::Load(..) | Op::TagIs(..) | Op::IsZero(_))
}

fn reads_any(inst: &Inst, vals: &[Val]) -> bool {
    let mut reads = false;
    inst.op.for_each_operand(|v| reads |= vals.contains(&v));
    reads
}

/// The `If` that runs `first`'s arms, then `second`'s on the same
/// outcome.
fn fuse_pair(first: Inst, second: Inst) -> Inst {
    let (
        Op::If {
            cond,
            then_: t1,
            else_: e1,
        },
        Op::If {
            then_: t2,
            else_: e2,
            ..
        },
    ) = (first.op, second.op)
    else {
        unreachable!("`fuse_pair` takes two `If`s")
    };
    let n2 = second.results.len();
    let then_ = fuse_arms(t1, t2, &first.results, n2);
    let else_ = fuse_arms(e1, e2, &first.results, n2);
    let mut results = first.results;
    results.extend(second.results);
    Inst {
        results,
        op: Op::If { cond, then_, else_ },
    }
}

/// One arm of the fused `If`: `a` (of the first, whose results are
/// `firsts`), then `b` (of the second, with `n2` results) reading what
/// `a` yielded in their place.
fn fuse_arms(mut a: Block, mut b: Block, firsts: &[Val], n2: usize) -> Block {
    let Term::Yield(ys) = &a.term else {
        // The arm ends the block: the second `If` never ran after it.
        return a;
    };
    let by: HashMap<Val, Val> = firsts.iter().copied().zip(ys.iter().copied()).collect();
    b.for_each_use_mut(&mut |v| {
        if let Some(w) = by.get(v) {
            *v = *w;
        }
    });
    let Term::Yield(ys) = std::mem::replace(&mut a.term, Term::Yield(vec![])) else {
        unreachable!("matched above")
    };
    a.insts.append(&mut b.insts);
    a.term = match b.term {
        Term::Yield(y2) => {
            debug_assert_eq!(y2.len(), n2);
            Term::Yield(ys.into_iter().chain(y2).collect())
        }
        t => t,
    };
    a
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::inst as i;
    use crate::{FBin, Func, FuncId, StrId, Ty};
    use base::EntityRef;

    fn v(n: u32) -> Val {
        Val::from_number(n)
    }

    fn arm(insts: Vec<Inst>, term: Term) -> Block {
        Block { insts, term }
    }

    /// `f(v0: f64, v1: bool)` with `types` values (v1 and `bools` of type
    /// bool, the rest f64), printed after `pass`.
    fn run(insts: Vec<Inst>, ret: u32, types: usize, bools: &[u32], pass: fn(&mut Func)) -> String {
        let mut tys = vec![Ty::F64; types];
        for b in std::iter::once(&1).chain(bools) {
            tys[*b as usize] = Ty::Bool;
        }
        let mut f = Func {
            name: "f".into(),
            params: vec![Ty::F64, Ty::Bool],
            returns: vec![Ty::F64],
            types: tys,
            body: arm(insts, Term::Return(vec![v(ret)])),
        };
        pass(&mut f);
        crate::print::func(FuncId::new(0), &f)
    }

    fn fuse_only(f: &mut Func) {
        let mut consts = vec![false; f.types.len()];
        bool_consts(&f.body, &mut consts);
        fuse_block(&mut f.body, &mut f.types, &mut consts);
    }

    /// v2 = if v1 {1} else {2}; v5 = v0 + v0; then an `If` on v1 whose
    /// then arm reads v2 and v5 and whose else arm fails.
    fn two_ifs(between: Inst) -> Vec<Inst> {
        vec![
            i(
                &[2],
                Op::If {
                    cond: v(1),
                    then_: arm(vec![i(&[3], Op::F64Const(1.0))], Term::Yield(vec![v(3)])),
                    else_: arm(vec![i(&[4], Op::F64Const(2.0))], Term::Yield(vec![v(4)])),
                },
            ),
            between,
            i(
                &[6],
                Op::If {
                    cond: v(1),
                    then_: arm(
                        vec![i(&[7], Op::FBin(FBin::Add, v(2), v(5)))],
                        Term::Yield(vec![v(7)]),
                    ),
                    else_: arm(vec![], Term::Error(StrId::new(0))),
                },
            ),
            i(&[8], Op::FBin(FBin::Mul, v(2), v(6))),
        ]
    }

    #[test]
    fn ifs_on_one_condition_fuse_and_read_what_the_first_yielded() {
        let add = i(&[5], Op::FBin(FBin::Add, v(0), v(0)));
        let out = run(two_ifs(add), 8, 9, &[], fuse_only);
        let expected = "\
func f0 f(v0: f64, v1: bool) -> (f64) {
  v5 = fadd v0 v0
  v2, v6 = if v1 {
    v3 = f64 1.0
    v7 = fadd v3 v5
    yield v3, v7
  } else {
    v4 = f64 2.0
    error s0
  }
  v8 = fmul v2 v6
  return v8
}
";
        assert_eq!(out, expected);
    }

    #[test]
    fn an_effect_or_a_read_of_the_first_result_keeps_them_apart() {
        let print = i(&[], Op::PrintReal(v(0)));
        let reads_first = i(&[5], Op::FBin(FBin::Add, v(2), v(0)));
        for between in [print, reads_first] {
            let out = run(two_ifs(between), 8, 9, &[], fuse_only);
            assert_eq!(out.matches("if v1").count(), 2, "{out}");
        }
    }

    /// v3 = if v1 {v4 = true} else {v2 = v0 < v0}: a boolean `If` result
    /// constant in one arm, as `null?` of a union with a lazy zero makes.
    fn true_or_less() -> Inst {
        i(
            &[3],
            Op::If {
                cond: v(1),
                then_: arm(vec![i(&[4], Op::BoolConst(true))], Term::Yield(vec![v(4)])),
                else_: arm(
                    vec![i(&[2], Op::FCmp(crate::Cmp::Lt, v(0), v(0)))],
                    Term::Yield(vec![v(2)]),
                ),
            },
        )
    }

    #[test]
    fn a_boolean_result_tells_its_arms_condition() {
        // v3 = if v1 {true} else {v2 = v0 < v0}; if v3 {0} else {if v1
        // {error} else {v0}}: where v3 is false, v1 is, and the inner `If`
        // goes.
        let insts = vec![
            true_or_less(),
            i(
                &[7],
                Op::If {
                    cond: v(3),
                    then_: arm(vec![i(&[5], Op::F64Const(0.0))], Term::Yield(vec![v(5)])),
                    else_: arm(
                        vec![i(
                            &[6],
                            Op::If {
                                cond: v(1),
                                then_: arm(vec![], Term::Error(StrId::new(0))),
                                else_: arm(vec![], Term::Yield(vec![v(0)])),
                            },
                        )],
                        Term::Yield(vec![v(6)]),
                    ),
                },
            ),
        ];
        let with = run(insts.clone(), 7, 8, &[2, 3, 4], |f| {
            super::super::simplify_once(f, true)
        });
        assert_eq!(with.matches("if v1").count(), 1, "{with}");
        assert!(!with.contains("error"), "{with}");
        // Plain simplification (before `tags`) keeps the test.
        let without = run(insts, 7, 8, &[2, 3, 4], super::super::simplify_func);
        assert_eq!(without.matches("if v1").count(), 2, "{without}");
    }

    #[test]
    fn an_if_on_a_boolean_constant_in_an_arm_before_moves_into_the_arms() {
        // v3 = if v1 {true} else {v2 = v0 < v0}; v7 = if v3 {0} else
        // {v0 + v0}: the nil-like arm takes 0 at once, the other tests v2.
        let insts = vec![
            true_or_less(),
            i(
                &[7],
                Op::If {
                    cond: v(3),
                    then_: arm(vec![i(&[5], Op::F64Const(0.0))], Term::Yield(vec![v(5)])),
                    else_: arm(
                        vec![i(&[6], Op::FBin(FBin::Add, v(0), v(0)))],
                        Term::Yield(vec![v(6)]),
                    ),
                },
            ),
        ];
        let out = run(insts, 7, 8, &[2, 3, 4], |f| {
            fuse_only(f);
            super::super::simplify_func(f);
        });
        let expected = "\
func f0 f(v0: f64, v1: bool) -> (f64) {
  v7 = if v1 {
    v2 = f64 0.0
    yield v2
  } else {
    v3 = flt v0 v0
    v6 = if v3 {
      v4 = f64 0.0
      yield v4
    } else {
      v5 = fadd v0 v0
      yield v5
    }
    yield v6
  }
  return v7
}
";
        assert_eq!(out, expected);
    }
}
