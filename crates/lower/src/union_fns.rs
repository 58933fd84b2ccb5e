//! Maps of unions: `zero`, `plus` and the tag maps of a union become a
//! function per (operation, union) that dispatches on the tag and boxes
//! each member's result.

use crate::lowerer::*;
use crate::sharing;
use crate::switch::Unlazy;
use base::EntityRef;
use fir::{self, Block, FBin, FuncId, Op, Term, Ty, Val};
use flow::{Av, AvId, LeafKind, UnionId};

impl Lowerer<'_> {
    /// `zero` of a symbolic value: no code, but for the unions inside,
    /// whose zeros are made at run time by a function per union.
    pub(super) fn zero(&mut self, fb: &mut Fb, v: AvId) -> AvId {
        if let Some(z) = self.zero_vector(fb, v) {
            return z;
        }
        if !self.ops.dom.has_union(v) && !self.holds_vector(v) {
            return self.ops.zero(v);
        }
        match self.ops.dom.get(v).clone() {
            Av::Leaf(Sym(p), LeafKind::Union(u)) => {
                let (f, z) = self.union_fn(UnionFn::Zero(u));
                let arg = Val::from_number(p);
                let r = match self.zero_made(fb, u, z, arg) {
                    Some(r) => r,
                    None => {
                        let r = fb.emit1(Op::Call(f, vec![arg]), Ty::Ptr);
                        self.record_zero(fb, u, z, arg, r);
                        r
                    }
                };
                fb.zeros.insert(r);
                self.sym(r, LeafKind::Union(z))
            }
            Av::Pair(a, b) => {
                let (a, b) = (self.zero(fb, a), self.zero(fb, b));
                self.ops.dom.pair(a, b)
            }
            Av::Bundle(a, b) => {
                let (a, b) = (self.zero(fb, a), self.zero(fb, b));
                self.ops.dom.bundle(a, b)
            }
            Av::Wrap(t, x) => {
                let x = self.zero(fb, x);
                self.ops.dom.wrap(t, x)
            }
            Av::Closure(l, env) => {
                let env = env.iter().map(|x| self.zero(fb, *x)).collect();
                self.ops.dom.closure(l, env)
            }
            _ => self.ops.zero(v),
        }
    }

    /// The function computing `zero` of a union's values, or `plus` of two
    /// unions' values, and the union of its result (made by the analysis:
    /// [`flow::Site::Zero`], [`flow::Site::Plus`]).
    pub(super) fn union_fn(&mut self, what: UnionFn) -> (FuncId, UnionId) {
        let dom = &self.ops.dom;
        let what = match what {
            UnionFn::Zero(u) => UnionFn::Zero(dom.find(u)),
            UnionFn::Force(u, w) => UnionFn::Force(dom.find(u), dom.find(w)),
            UnionFn::Plus(u, w) => UnionFn::Plus(dom.find(u), dom.find(w)),
            UnionFn::Map(op, u, w, r) => {
                UnionFn::Map(op, dom.find(u), w.map(|w| dom.find(w)), dom.find(r))
            }
        };
        let result = match what {
            UnionFn::Zero(u) => dom.union_at(flow::Site::Zero(u)),
            UnionFn::Force(_, w) => Some(w),
            UnionFn::Plus(u, w) => dom.union_at(flow::Site::Plus(u, w)),
            UnionFn::Map(_, _, _, r) => Some(r),
        }
        .unwrap_or(UnionId::new(0));
        if let Some(f) = self.union_fns.get(&what) {
            return (*f, result);
        }
        let id = FuncId::new(self.module.funcs.len());
        let (name, params) = match what {
            UnionFn::Zero(u) => (format!("zero_u{}", u.index()), vec![Ty::Ptr]),
            UnionFn::Force(u, w) => (
                format!("force_u{}_u{}", u.index(), w.index()),
                vec![Ty::Ptr],
            ),
            UnionFn::Plus(u, w) => (
                format!("plus_u{}_u{}", u.index(), w.index()),
                vec![Ty::Ptr, Ty::Ptr],
            ),
            UnionFn::Map(op, u, None, _) => {
                (format!("{}_u{}", op_name(op), u.index()), vec![Ty::Ptr])
            }
            UnionFn::Map(op, u, Some(w), _) => (
                format!("{}_u{}_u{}", op_name(op), u.index(), w.index()),
                vec![Ty::Ptr, Ty::Ptr],
            ),
        };
        self.module.funcs.push(fir::Func {
            name: name.clone(),
            params: params.clone(),
            returns: vec![Ty::Ptr],
            types: params.clone(),
            body: Block {
                insts: vec![],
                term: Term::Return(vec![]),
            },
        });
        self.union_fns.insert(what, id);
        let mut fb = self.func_builder(&params);
        let target = self.ops.dom.union_av(result);
        let results = self.known_results(&mut fb, what, result, &mut |this, fb| {
            this.walk(fb, id, what, target)
        });
        let insts = fb.blocks.pop().unwrap_or_default();
        self.note_constant(id, &insts);
        self.module.funcs[id.index()] = fir::Func {
            name,
            params,
            returns: vec![Ty::Ptr],
            types: fb.types,
            body: Block {
                insts,
                term: Term::Return(results),
            },
        };
        (id, result)
    }

    /// The walk of a map function over its operands' cells (parameters
    /// 0 and 1), boxing each result in union value `target`.
    /// `id` is the function being made: given a lazy zero, it calls
    /// itself with the cell that stands for.
    fn walk(&mut self, fb: &mut Fb, id: FuncId, what: UnionFn, target: AvId) -> Vec<Val> {
        let ptr = &[Ty::Ptr];
        let params = match what {
            UnionFn::Plus(..) | UnionFn::Map(_, _, Some(_), _) => 2,
            _ => 1,
        };
        let first = match what {
            // The operand of a lazy zero is never one: `zero` gives a zero
            // operand back.
            UnionFn::Force(..) => Unlazy::Never,
            _ => Unlazy::Call(id, params, 0),
        };
        let second = Unlazy::Call(id, params, 1);
        match what {
            UnionFn::Zero(u) | UnionFn::Force(u, _) => {
                let r = self.switch(fb, Val::new(0), u, ptr, first, &mut |this, fb, _, m| {
                    let z = this.zero(fb, m);
                    let mut out = Vec::new();
                    this.coerce(fb, z, target, &mut out);
                    Term::Yield(out)
                });
                // Every cell made here holds a zero (of a member, or of a
                // part of one).
                for inst in fb.blocks.iter_mut().flatten() {
                    sharing::mark_zero(inst);
                }
                r
            }
            UnionFn::Map(op, u, None, _) => {
                self.switch(fb, Val::new(0), u, ptr, first, &mut |this, fb, _, m| {
                    let r = this.ops.union_op(op, m, None);
                    this.map_arm(fb, r, target)
                })
            }
            UnionFn::Map(op, u, Some(w), _) => {
                self.switch(fb, Val::new(0), u, ptr, first, &mut |this, fb, _, mu| {
                    let arm =
                        this.switch(fb, Val::new(1), w, ptr, second, &mut |this, fb, _, mw| {
                            let r = this.ops.union_op(op, mu, Some(mw));
                            this.map_arm(fb, r, target)
                        });
                    Term::Yield(arm)
                })
            }
            UnionFn::Plus(u, w) => {
                self.switch(fb, Val::new(0), u, ptr, first, &mut |this, fb, _, mu| {
                    let arm =
                        this.switch(fb, Val::new(1), w, ptr, second, &mut |this, fb, _, mw| {
                            // Members of one kind whose parts do not conform (the
                            // analysis found no sum for them) fail as at run time.
                            let same_kind = this.ops.dom.kind(mu) == this.ops.dom.kind(mw);
                            let (wa, wb) = (this.ops.dom.widen(mu), this.ops.dom.widen(mw));
                            let r = if same_kind && this.ops.plus(wa, wb).is_ok() {
                                this.plus(fb, mu, mw)
                            } else if let Some(r) = this.ops.nil_sum(mu, mw) {
                                r
                            } else {
                                return this.plus_mismatch(mu, mw);
                            };
                            let mut out = Vec::new();
                            this.coerce(fb, r, target, &mut out);
                            Term::Yield(out)
                        });
                    Term::Yield(arm)
                })
            }
        }
    }

    /// The end of an arm of a map function: the member's result boxed in
    /// the result union, or the operation's error.
    pub(super) fn map_arm(&mut self, fb: &mut Fb, r: Result<AvId, String>, target: AvId) -> Term {
        match self.resolve(fb, r) {
            Ok(x) => {
                // A tangent given back as the union it was bundled from
                // is that union's value without its perturbation tag.
                let x = match (
                    self.ops.dom.get(x).clone(),
                    self.ops.dom.get(target).clone(),
                ) {
                    (Av::Wrap(_, inner), Av::Union(u))
                        if self.ops.dom.member_index(u, x).is_none() =>
                    {
                        inner
                    }
                    _ => x,
                };
                let mut out = Vec::new();
                self.coerce(fb, x, target, &mut out);
                Term::Yield(out)
            }
            Err(m) => self.error_term(None, &m),
        }
    }

    /// The run-time error of `plus` on values of different shapes (their
    /// parts of run-time shape not printed: see [`unprinted`]).
    pub(super) fn plus_mismatch(&mut self, a: AvId, b: AvId) -> Term {
        let msg = ir::message::plus_mismatch(&self.ops.describe(a), &self.ops.describe(b));
        self.error_term(None, &crate::errors::unprinted(&msg))
    }

    /// `plus` of two symbolic values of the same shape.
    pub(super) fn plus(&mut self, fb: &mut Fb, a: AvId, b: AvId) -> AvId {
        let dom = &self.ops.dom;
        match (dom.as_union_id(a), dom.as_union_id(b)) {
            (Some(u), Some(w)) => {
                let (Av::Leaf(Sym(pa), _), Av::Leaf(Sym(pb), _)) =
                    (dom.get(a).clone(), dom.get(b).clone())
                else {
                    return a;
                };
                let (f, p) = self.union_fn(UnionFn::Plus(u, w));
                // A zero made here: the sum is the other operand, as the
                // plus function's first tests would find at run time.
                let (va, vb) = (Val::from_number(pa), Val::from_number(pb));
                if fb.zeros.contains(&va) && self.interchangeable(w, p) {
                    return self.sym(vb, LeafKind::Union(p));
                }
                if fb.zeros.contains(&vb) && self.interchangeable(u, p) {
                    return self.sym(va, LeafKind::Union(p));
                }
                // The plus function's zero tests, at the call too: a zero
                // made in this function then costs no call.
                let mut tests = Vec::new();
                if self.interchangeable(w, p) {
                    tests.push((va, vb));
                }
                if self.interchangeable(u, p) {
                    tests.push((vb, va));
                }
                let r = self.zero_tests(fb, &tests, &mut |_, fb| {
                    vec![fb.emit1(Op::Call(f, vec![va, vb]), Ty::Ptr)]
                })[0];
                return self.sym(r, LeafKind::Union(p));
            }
            (Some(u), None) => return self.plus_member(fb, u, a, b, true),
            (None, Some(w)) => return self.plus_member(fb, w, b, a, false),
            (None, None) => {}
        }
        if let Some(r) = self.plus_vectors(fb, a, b) {
            return r;
        }
        let dom = &self.ops.dom;
        match (dom.get(a).clone(), dom.get(b).clone()) {
            (Av::Real(Some(x)), Av::Real(Some(y))) => {
                self.ops.dom.real(f64::from_bits(x) + f64::from_bits(y))
            }
            (Av::Real(Some(x)), _)
                if f64::from_bits(x) == 0.0 && f64::from_bits(x).is_sign_positive() =>
            {
                b
            }
            (_, Av::Real(Some(y)))
                if f64::from_bits(y) == 0.0 && f64::from_bits(y).is_sign_positive() =>
            {
                a
            }
            (
                Av::Real(_) | Av::Leaf(_, LeafKind::Real),
                Av::Real(_) | Av::Leaf(_, LeafKind::Real),
            ) => match (self.real(fb, a), self.real(fb, b)) {
                (Some(x), Some(y)) => {
                    let r = fb.emit1(Op::FBin(FBin::PlusAdd, x, y), Ty::F64);
                    self.sym(r, LeafKind::Real)
                }
                _ => a,
            },
            (Av::Pair(a1, b1), Av::Pair(a2, b2)) => {
                let (x, y) = (self.plus(fb, a1, a2), self.plus(fb, b1, b2));
                self.ops.dom.pair(x, y)
            }
            (Av::Bundle(a1, b1), Av::Bundle(a2, b2)) => {
                let (x, y) = (self.plus(fb, a1, a2), self.plus(fb, b1, b2));
                self.ops.dom.bundle(x, y)
            }
            (Av::Wrap(t, x), Av::Wrap(_, y)) => {
                let z = self.plus(fb, x, y);
                self.ops.dom.wrap(t, z)
            }
            (Av::Closure(l1, e1), Av::Closure(l2, e2)) if l1 == l2 => {
                let env = e1
                    .iter()
                    .zip(e2.iter())
                    .map(|(x, y)| self.plus(fb, *x, *y))
                    .collect();
                self.ops.dom.closure(l1, env)
            }
            (Av::Closure(..) | Av::Prim(_), _) if self.ops.nil_like(a) => b,
            _ => a,
        }
    }

    /// `plus` of union value `uv` (of union `u`) and a value `x` of one
    /// shape: the member of `x`'s kind is summed, any other is an error
    /// unless both have no reals and sum to the same shape; when no
    /// member has `x`'s kind, the members that, like `x`, have no reals
    /// sum to one of the two ([`flow::Ops::nil_sum_with_union`]).
    /// `union_first` says which operand the union was.
    pub(super) fn plus_member(
        &mut self,
        fb: &mut Fb,
        u: UnionId,
        uv: AvId,
        x: AvId,
        union_first: bool,
    ) -> AvId {
        let Av::Leaf(Sym(p), _) = self.ops.dom.get(uv).clone() else {
            return x;
        };
        let order = move |m: AvId| if union_first { (m, x) } else { (x, m) };
        // The member of `x`'s kind, if any, and the shape of the sum.
        let (member, sum) = match self.ops.dom.member_index(u, x) {
            Some(i) => {
                let member = self.ops.dom.members(u)[i];
                let (a, b) = order(member);
                let (wa, wb) = (self.ops.dom.widen(a), self.ops.dom.widen(b));
                let Ok(sum) = self.ops.plus(wa, wb) else {
                    return x;
                };
                (Some(member), sum)
            }
            None => match self.ops.nil_sum_with_union(uv, x, union_first) {
                Some(sum) => (None, sum),
                None => return x,
            },
        };
        let target = self.ops.dom.widen(sum);
        let tys = layout_of(&self.ops.dom, target);
        let results = self.switch(
            fb,
            Val::from_number(p),
            u,
            &tys,
            Unlazy::Again,
            &mut |this, fb, m, msym| {
                let (a, b) = order(msym);
                let r = match member {
                    Some(kind) if m == kind => Some(this.plus(fb, a, b)),
                    // Values without reals of other kinds sum as in the
                    // interpreter (`()` and a primitive: the tangent and
                    // the primal of a primitive chosen at run time), when
                    // the sum has the shape of the kind's.
                    Some(_) => this
                        .ops
                        .nil_sum(a, b)
                        .filter(|r| this.ops.dom.widen(*r) == target),
                    None => this.ops.nil_sum(a, b),
                };
                let Some(r) = r else {
                    return this.plus_mismatch(a, b);
                };
                let mut out = Vec::new();
                this.coerce(fb, r, target, &mut out);
                Term::Yield(out)
            },
        );
        let mut it = results.into_iter();
        self.symbolize(fb, target, &mut it)
    }
}
