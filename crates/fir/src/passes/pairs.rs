//! Pairs of one-hots: `plus` of a sum and `(plus h1 h2)`, where `h1` and
//! `h2` are one-hots and nothing else reads their `plus`, becomes `plus`
//! of the sum and each one-hot in turn, or of one one-hot of `x1 + x2`
//! where the two indices are equal.
//!
//! Why: a step of a backward sweep that reads a vector twice (`(* (vector-ref
//! v i) (vector-ref v i))`) adds its two one-hots together, then that pair
//! to its running sensitivity. The pair is a sum of its own, with a log
//! the runtime makes and copies, and adding it groups its additions by
//! index in the runtime (`runtime::gc::vector_sum`): 60% of the
//! instructions of sumsq by `vector-ref`. A one-hot added to a sum is added
//! inline instead, in place once the sum is an accumulator
//! (`codegen::vector`).
//!
//! When that is exact: element j of `plus(s, plus(h1, h2))` is `s_j` plus
//! the pair's additions at j summed first, whichever operand is the
//! larger (`runtime::gc::vector_sum`). At distinct indices each element
//! gets at most one of them: `s_j + x1`, what adding `h1` and then `h2`
//! gives. At one index it gets `x1 + x2`, summed in the order the pair
//! holds them, `h1`'s first (the runtime appends the second operand's
//! addition to the first's), as one addition: a one-hot of `x1 + x2`.
//! Where the two indices are one value, that is all (no `If`).
//! Lengths were checked before each `plus`, as they are here.

use super::simplify;
use crate::{Block, Cmp, FBin, Func, Inst, Module, Op, Term, Ty, Val};
use base::EntityRef;

/// Rewrites every such `plus` in the module (see the module doc).
pub fn split_pairs(m: &mut Module) {
    for f in &mut m.funcs {
        if split_in(f) {
            simplify::dce(f);
        }
    }
}

/// A one-hot's operands: its layout, length, index and slots.
#[derive(Clone)]
struct OneHot {
    layout: u32,
    len: Val,
    i: Val,
    vals: Vec<Val>,
}

/// What defines each value that matters here.
#[derive(Clone)]
enum Def {
    OneHot(OneHot),
    /// `plus` of two one-hots, by their values.
    Pair(u32, Val, Val),
    Other,
}

fn split_in(f: &mut Func) -> bool {
    let n = f.types.len();
    let mut uses = vec![0u32; n];
    f.body.for_each_use(&mut |v| uses[v.index()] += 1);
    let mut defs = vec![Def::Other; n];
    f.body.for_each_inst(&mut |inst| {
        let Some(&r) = inst.results.first() else {
            return;
        };
        match &inst.op {
            Op::VecOneHot {
                layout,
                len,
                i,
                vals,
            } => {
                defs[r.index()] = Def::OneHot(OneHot {
                    layout: *layout,
                    len: *len,
                    i: *i,
                    vals: vals.clone(),
                })
            }
            Op::VecPlus(l, a, b) => {
                let hot = |v: &Val| matches!(&defs[v.index()], Def::OneHot(h) if h.layout == *l);
                if hot(a) && hot(b) {
                    defs[r.index()] = Def::Pair(*l, *a, *b);
                }
            }
            _ => {}
        }
    });
    let mut cx = Cx {
        types: &mut f.types,
        defs: &defs,
        uses: &uses,
        changed: false,
    };
    cx.block(&mut f.body);
    cx.changed
}

struct Cx<'a> {
    types: &'a mut Vec<Ty>,
    defs: &'a [Def],
    uses: &'a [u32],
    changed: bool,
}

impl Cx<'_> {
    fn fresh(&mut self, ty: Ty) -> Val {
        self.types.push(ty);
        Val::new(self.types.len() - 1)
    }

    fn one_hot(&self, v: Val) -> OneHot {
        match &self.defs[v.index()] {
            Def::OneHot(h) => h.clone(),
            _ => unreachable!("a pair's operands are one-hots"),
        }
    }

    /// The pair `plus` reads as `v`, read by nothing else: its layout and
    /// one-hots.
    fn pair(&self, v: Val) -> Option<(u32, Val, Val)> {
        match self.defs[v.index()] {
            Def::Pair(l, a, b) if self.uses[v.index()] == 1 => Some((l, a, b)),
            _ => None,
        }
    }

    fn block(&mut self, b: &mut Block) {
        let insts = std::mem::take(&mut b.insts);
        for mut inst in insts {
            if let Op::If { then_, else_, .. } = &mut inst.op {
                self.block(then_);
                self.block(else_);
            }
            let split = match &inst.op {
                Op::VecPlus(l, a, s) => self
                    .pair(*a)
                    .map(|p| (p, *s))
                    .or_else(|| self.pair(*s).map(|p| (p, *a)))
                    .filter(|((pl, ..), _)| pl == l),
                _ => None,
            };
            match split {
                Some(((l, h1, h2), sum)) => {
                    let r = inst.results[0];
                    b.insts.extend(self.split(r, l, h1, h2, sum));
                    self.changed = true;
                }
                None => b.insts.push(inst),
            }
        }
    }

    /// `r = plus(sum, plus(h1, h2))` as an `If` on the indices' equality.
    fn split(&mut self, r: Val, l: u32, h1: Val, h2: Val, sum: Val) -> Vec<Inst> {
        let (a, b) = (self.one_hot(h1), self.one_hot(h2));
        let same = self.fresh(Ty::Bool);
        let mut then_ = Vec::new();
        let mut vals = Vec::new();
        for (x, y) in a.vals.iter().zip(&b.vals) {
            let s = self.fresh(Ty::F64);
            then_.push(Inst {
                results: vec![s],
                op: Op::FBin(FBin::PlusAdd, *x, *y),
            });
            vals.push(s);
        }
        let hot = self.fresh(Ty::Ptr);
        then_.push(Inst {
            results: vec![hot],
            op: Op::VecOneHot {
                layout: l,
                len: a.len,
                i: a.i,
                vals,
            },
        });
        // One index (a step that reads one element twice, its reads
        // merged): the sum's is the only arm.
        let same_index = a.i == b.i;
        let one = if same_index { r } else { self.fresh(Ty::Ptr) };
        then_.push(Inst {
            results: vec![one],
            op: Op::VecPlus(l, hot, sum),
        });
        if same_index {
            return then_;
        }
        let (t, two) = (self.fresh(Ty::Ptr), self.fresh(Ty::Ptr));
        let else_ = vec![
            Inst {
                results: vec![t],
                op: Op::VecPlus(l, h1, sum),
            },
            Inst {
                results: vec![two],
                op: Op::VecPlus(l, h2, t),
            },
        ];
        vec![
            Inst {
                results: vec![same],
                op: Op::FCmp(Cmp::Eq, a.i, b.i),
            },
            Inst {
                results: vec![r],
                op: Op::If {
                    cond: same,
                    then_: Block {
                        insts: then_,
                        term: Term::Yield(vec![one]),
                    },
                    else_: Block {
                        insts: else_,
                        term: Term::Yield(vec![two]),
                    },
                },
            },
        ]
    }
}
