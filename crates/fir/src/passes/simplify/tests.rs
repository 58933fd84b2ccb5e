//! The unit tests of simplification.

use super::*;
use crate::{StrId, Ty};

use crate::testing::inst as i;

fn func(params: usize, types: usize, body: Block) -> Func {
    Func {
        name: "f".into(),
        params: vec![Ty::F64; params],
        returns: vec![Ty::F64],
        types: vec![Ty::F64; types],
        body,
    }
}

fn ops(f: &Func) -> Vec<Op> {
    f.body.insts.iter().map(|i| i.op.clone()).collect()
}

#[test]
fn exact_identities_only() {
    // v1 = 1; v2 = v0 * v1; v3 = 0; v4 = v2 + v3 (v0 may be -0: kept);
    // v5 = v4 - v3 (x - 0 = x); return v5
    let mut f = func(
        1,
        6,
        Block {
            insts: vec![
                i(&[1], Op::F64Const(1.0)),
                i(&[2], Op::FBin(FBin::Mul, Val::new(0), Val::new(1))),
                i(&[3], Op::F64Const(0.0)),
                i(&[4], Op::FBin(FBin::Add, Val::new(2), Val::new(3))),
                i(&[5], Op::FBin(FBin::Sub, Val::new(4), Val::new(3))),
            ],
            term: Term::Return(vec![Val::new(5)]),
        },
    );
    simplify_func(&mut f);
    assert_eq!(
        ops(&f),
        vec![
            Op::F64Const(0.0),
            Op::FBin(FBin::Add, Val::new(0), Val::new(1))
        ]
    );
    // Values are renumbered densely (`compact`).
    assert_eq!(f.body.term, Term::Return(vec![Val::new(2)]));
}

#[test]
fn zero_plus_square_folds_but_zero_times_never() {
    // v1 = v0 * v0; v2 = 0; v3 = v2 + v1 (a square is never -0);
    // v4 = v2 * v0 (0 * x stays); return v3, v4
    let mut f = func(
        1,
        5,
        Block {
            insts: vec![
                i(&[1], Op::FBin(FBin::Mul, Val::new(0), Val::new(0))),
                i(&[2], Op::F64Const(0.0)),
                i(&[3], Op::FBin(FBin::Add, Val::new(2), Val::new(1))),
                i(&[4], Op::FBin(FBin::Mul, Val::new(2), Val::new(0))),
            ],
            term: Term::Return(vec![Val::new(3), Val::new(4)]),
        },
    );
    simplify_func(&mut f);
    assert_eq!(f.body.term, Term::Return(vec![Val::new(1), Val::new(3)]));
    assert!(ops(&f).contains(&Op::FBin(FBin::Mul, Val::new(2), Val::new(0))));
}

#[test]
fn commutative_cse_and_constant_folding() {
    // v1 = v0 * 2 ... v3 = 2 * v0 merges with v1; v4 = 2 + 3 folds.
    let mut f = func(
        1,
        7,
        Block {
            insts: vec![
                i(&[1], Op::F64Const(2.0)),
                i(&[2], Op::FBin(FBin::Mul, Val::new(0), Val::new(1))),
                i(&[3], Op::FBin(FBin::Mul, Val::new(1), Val::new(0))),
                i(&[4], Op::F64Const(3.0)),
                i(&[5], Op::FBin(FBin::Add, Val::new(1), Val::new(4))),
                i(&[6], Op::FBin(FBin::Add, Val::new(2), Val::new(3))),
            ],
            term: Term::Return(vec![Val::new(5), Val::new(6)]),
        },
    );
    simplify_func(&mut f);
    assert_eq!(
        ops(&f),
        vec![
            Op::F64Const(2.0),
            Op::FBin(FBin::Mul, Val::new(0), Val::new(1)),
            Op::F64Const(5.0),
            Op::FBin(FBin::Add, Val::new(2), Val::new(2)),
        ]
    );
}

#[test]
fn division_by_a_power_of_two_multiplies() {
    // v1 = 4; v2 = v0 / v1 becomes v0 * 0.25; v3 = 3; v4 = v0 / v3 stays.
    let mut f = func(
        1,
        5,
        Block {
            insts: vec![
                i(&[1], Op::F64Const(4.0)),
                i(&[2], Op::FBin(FBin::Div, Val::new(0), Val::new(1))),
                i(&[3], Op::F64Const(3.0)),
                i(&[4], Op::FBin(FBin::Div, Val::new(0), Val::new(3))),
            ],
            term: Term::Return(vec![Val::new(2), Val::new(4)]),
        },
    );
    simplify_func(&mut f);
    assert_eq!(
        ops(&f),
        vec![
            Op::F64Const(0.25),
            Op::FBin(FBin::Mul, Val::new(0), Val::new(1)),
            Op::F64Const(3.0),
            Op::FBin(FBin::Div, Val::new(0), Val::new(3)),
        ]
    );
    assert_eq!(f.types.len(), 5);
}

#[test]
fn dead_if_results_and_effects() {
    // v1, v2 = if (v0 < v0) { print; yield v0, v0 } else { yield v0, v0 }
    // only v1 is used; the print keeps the If.
    let cond = i(&[3], Op::FCmp(Cmp::Lt, Val::new(0), Val::new(0)));
    let mut f = func(
        1,
        4,
        Block {
            insts: vec![
                cond,
                i(
                    &[1, 2],
                    Op::If {
                        cond: Val::new(3),
                        then_: Block {
                            insts: vec![i(&[], Op::PrintStr(StrId::new(0)))],
                            term: Term::Yield(vec![Val::new(0), Val::new(0)]),
                        },
                        else_: Block {
                            insts: vec![],
                            term: Term::Yield(vec![Val::new(0), Val::new(0)]),
                        },
                    },
                ),
            ],
            term: Term::Return(vec![Val::new(1)]),
        },
    );
    simplify_func(&mut f);
    // Both arms yield v0: the result is v0, the If stays for its print
    // with no results.
    assert_eq!(f.body.term, Term::Return(vec![Val::new(0)]));
    match &f.body.insts[1] {
        Inst {
            results,
            op: Op::If { then_, .. },
        } => {
            assert!(results.is_empty());
            assert_eq!(then_.insts.len(), 1);
        }
        other => panic!("expected the If, got {other:?}"),
    }
}

#[test]
fn cells_made_here_are_known() {
    // v0: a cell, v1: a real.
    // v3 = if is_zero v0 { v0 } else { alloc_zero #2(v0) }: a zero;
    // v5 = is_zero v3 (true); v6 = alloc #1(v1); v7 = load v6 #1.0
    // (v1); v8 = tag_is v6 #1 (true); return v5, v7, v8.
    let p = |n| Val::new(n);
    let then_ = Block {
        insts: vec![],
        term: Term::Yield(vec![p(0)]),
    };
    let else_ = Block {
        insts: vec![i(&[4], Op::AllocZero(2, vec![p(0)]))],
        term: Term::Yield(vec![p(4)]),
    };
    let mut f = Func {
        name: "f".into(),
        params: vec![Ty::Ptr, Ty::F64],
        returns: vec![Ty::Bool, Ty::F64, Ty::Bool],
        types: vec![
            Ty::Ptr,
            Ty::F64,
            Ty::Bool,
            Ty::Ptr,
            Ty::Ptr,
            Ty::Bool,
            Ty::Ptr,
            Ty::F64,
            Ty::Bool,
        ],
        body: Block {
            insts: vec![
                i(&[2], Op::IsZero(p(0))),
                i(
                    &[3],
                    Op::If {
                        cond: p(2),
                        then_,
                        else_,
                    },
                ),
                i(&[5], Op::IsZero(p(3))),
                i(&[6], Op::Alloc(1, vec![p(1)])),
                i(&[7], Op::Load(p(6), 1, 0)),
                i(&[8], Op::TagIs(p(6), 1)),
            ],
            term: Term::Return(vec![p(5), p(7), p(8)]),
        },
    };
    simplify_func(&mut f);
    // One constant `true` is left; the zero and the cell are not made.
    assert_eq!(ops(&f), vec![Op::BoolConst(true)]);
    let t = f.body.insts[0].results[0];
    assert_eq!(f.body.term, Term::Return(vec![t, p(1), t]));
}

#[test]
fn a_dispatch_tells_the_next_one_the_tag() {
    // v2 = if tag_is v0 #0 { error } else if tag_is v0 #1 { load v0
    // #1.0 } else { error }; then the same again as v7: after the
    // first, the tag is known to be #1, so the second is one load.
    let p = |n: u32| Val::from_number(n);
    let err = || Block {
        insts: vec![],
        term: Term::Error(StrId::new(0)),
    };
    let dispatch = |t: u32, l: u32, r: u32| {
        vec![
            i(&[t], Op::TagIs(p(0), 0)),
            i(
                &[r],
                Op::If {
                    cond: p(t),
                    then_: err(),
                    else_: Block {
                        insts: vec![
                            i(&[t + 1], Op::TagIs(p(0), 1)),
                            i(
                                &[r - 1],
                                Op::If {
                                    cond: p(t + 1),
                                    then_: Block {
                                        insts: vec![i(&[l], Op::Load(p(0), 1, 0))],
                                        term: Term::Yield(vec![p(l)]),
                                    },
                                    else_: err(),
                                },
                            ),
                        ],
                        term: Term::Yield(vec![p(r - 1)]),
                    },
                },
            ),
        ]
    };
    let mut insts = dispatch(1, 3, 5);
    insts.extend(dispatch(6, 8, 10));
    insts.push(i(&[11], Op::FBin(FBin::Mul, p(5), p(10))));
    let mut types = vec![Ty::F64; 12];
    types[0] = Ty::Ptr;
    for b in [1, 2, 6, 7] {
        types[b] = Ty::Bool;
    }
    let mut f = Func {
        name: "f".into(),
        params: vec![Ty::Ptr],
        returns: vec![Ty::F64],
        types,
        body: Block {
            insts,
            term: Term::Return(vec![p(11)]),
        },
    };
    simplify_func(&mut f);
    let tests = |b: &Block| {
        let mut n = 0;
        let mut count = |b: &Block| {
            for inst in &b.insts {
                if matches!(inst.op, Op::TagIs(..)) {
                    n += 1;
                }
            }
        };
        count(b);
        n
    };
    // The first dispatch's two tests stay; the second makes none.
    let ifs = f
        .body
        .insts
        .iter()
        .filter(|i| matches!(i.op, Op::If { .. }))
        .count();
    assert_eq!(ifs, 1);
    assert_eq!(tests(&f.body), 1);
    assert!(matches!(
        f.body.insts.last().map(|i| &i.op),
        Some(Op::FBin(FBin::Mul, _, _))
    ));
}

/// Slots stored as a set says; records the slots read.
struct SomeSlots {
    stored: Vec<(u32, usize)>,
    read: Vec<(u32, u32)>,
}

impl Slots for SomeSlots {
    fn stored(&self, tag: u32, slot: usize) -> bool {
        self.stored.contains(&(tag, slot))
    }
    fn read(&mut self, tag: u32, slot: u32) {
        self.read.push((tag, slot));
    }
}

#[test]
fn needed_slots_reads_what_dead_code_removal_keeps() {
    // An `If` whose second result nothing uses (its arms' loads of slot
    // #0.1 are not needed), an arm left idle once its dead load goes, and
    // a cell whose slot 1 is stored only if the policy says so.
    let text = r#"
func f0 main() -> () {
  v0 = f64 1.5
  v1 = alloc #0(v0, v0)
  v2 = call f1(v1)
  print_real v2
  return
}

func f1 f(v0: ptr) -> (f64) {
  v1 = load v0 #0.0
  v2 = f64 0.0
  v3 = flt v1 v2
  v4, v5 = if v3 {
    v6 = load v0 #0.1
    yield v1, v6
  } else {
    v7 = load v0 #0.1
    v8 = fadd v7 v7
    yield v2, v8
  }
  if v3 {
    v10 = load v0 #0.1
    yield
  } else {
    yield
  }
  v11 = load v0 #0.1
  v12 = alloc #0(v4, v11)
  v13 = load v12 #0.0
  return v13
}

main f0
"#;
    let m = crate::read::module(text).expect("the module reads");
    for stored in [vec![], vec![(0, 0)], vec![(0, 0), (0, 1)]] {
        for f in &m.funcs {
            let mut removed = SomeSlots {
                stored: stored.clone(),
                read: vec![],
            };
            dce_slots(&mut f.clone(), &mut removed);
            let mut marked = SomeSlots {
                stored: stored.clone(),
                read: vec![],
            };
            needed_slots(f, &mut marked);
            assert_eq!(marked.read, removed.read, "{}, stored {stored:?}", f.name);
        }
    }
}
