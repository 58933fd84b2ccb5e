//! The vector primitives on symbolic values: the checks the analysis left
//! to run time (indices, lengths, ranges, with the interpreter's messages
//! and the run-time values in them), then the value (`vectors.rs` holds
//! the representation and the functions over elements); and
//! `build-vector`, a function per element applying the procedure as the
//! analysis planned ([`flow::Plan::Build`]).

use crate::lowerer::*;
use base::EntityRef;
use fir::{self, Cmp, Op, Term, Ty, Val};
use flow::{Av, AvId, LeafKind};
use ir::message;

impl Lowerer<'_> {
    /// Does symbolic value `v` hold a vector the code has a pointer to?
    pub(crate) fn holds_vector(&self, v: AvId) -> bool {
        let dom = &self.ops.dom;
        match dom.get(v) {
            Av::Leaf(_, LeafKind::Vector(..)) => true,
            Av::Pair(a, b) | Av::Bundle(a, b) => self.holds_vector(*a) || self.holds_vector(*b),
            Av::Wrap(_, x) => self.holds_vector(*x),
            Av::Closure(_, env) => !dom.is_known(v) && env.iter().any(|x| self.holds_vector(*x)),
            _ => false,
        }
    }

    /// A vector primitive (or check) on symbolic argument `arg`: the
    /// checks the analysis left to run time, then the value.
    pub(crate) fn vector_prim(
        &mut self,
        fb: &mut Fb,
        b: &ir::Binding,
        info: &flow::BindInfo,
        p: ir::Prim,
        arg: AvId,
    ) -> Result<AvId, Term> {
        use ir::Prim;
        fb.site = b.span;
        let dom = &self.ops.dom;
        let pair = |x: AvId| match dom.get(x) {
            Av::Pair(a, c) => Some((*a, *c)),
            _ => None,
        };
        let internal =
            |this: &mut Self| Term::Error(this.string("error: internal error: a vector primitive"));
        match p {
            Prim::VectorLength => {
                if self.ops.dom.is_known(info.av) {
                    return Ok(info.av);
                }
                let Some((v, _, n)) = self.vector_ptr(fb, arg) else {
                    return Err(internal(self));
                };
                let len = self.vector_len(fb, v, n);
                Ok(self.sym(len, LeafKind::Real))
            }
            Prim::VectorRef => {
                let Some((v, i)) = pair(arg) else {
                    return Err(internal(self));
                };
                let Some((pv, e, n)) = self.vector_ptr(fb, v) else {
                    return Err(internal(self));
                };
                let Some(iv) = self.check_index(fb, p.name(), pv, n, i) else {
                    return Err(internal(self));
                };
                if self.ops.dom.is_known(e) {
                    return Ok(e);
                }
                Ok(self.load_elem(fb, pv, iv, e))
            }
            Prim::ListToVector => {
                let Av::Vector(e, n) = self.ops.dom.get(info.av).clone() else {
                    return Err(internal(self));
                };
                if self.ops.dom.is_known(info.av) {
                    return Ok(info.av);
                }
                let mut items = Vec::new();
                let mut l = arg;
                while let Av::Pair(a, c) = self.ops.dom.get(l).clone() {
                    items.push(a);
                    l = c;
                }
                match self.ops.dom.get(l).clone() {
                    Av::Nil => {}
                    Av::Leaf(Sym(p), LeafKind::Union(u)) => {
                        let p = Val::from_number(p);
                        return Ok(self.list_to_vector(fb, &items, p, u, e, n));
                    }
                    _ => return Err(internal(self)),
                }
                let pv = self.vector_of(fb, &items, e);
                Ok(self.vector_sym(pv, e, n))
            }
            Prim::VectorCheckLength => {
                let Some((code, nv)) = pair(arg) else {
                    return Err(internal(self));
                };
                let who = self.who(code);
                if self.check_count(fb, b, who, nv).is_none() {
                    return Err(internal(self));
                }
                Ok(nv)
            }
            Prim::VectorCheckLengths => {
                let Some((code, mut l)) = pair(arg) else {
                    return Err(internal(self));
                };
                let who = self.who(code);
                let mut first: Option<AvId> = None;
                while let Av::Pair(v, rest) = self.ops.dom.get(l).clone() {
                    l = rest;
                    // The analysis passes over an item that is no vector
                    // where the list's length is known only at run time
                    // (a union member the dispatch split on): this arm
                    // meets it, as the interpreter would.
                    let Some((pv, _, n)) = self.vector_ptr(fb, v) else {
                        let msg = message::not_a_vector(who, &self.ops.describe(v));
                        return Err(self.error_term(b.span, &msg));
                    };
                    let len = self.vector_len(fb, pv, n);
                    let len = match self.ops.dom.known_real(n) {
                        Some(_) => n,
                        None => self.sym(len, LeafKind::Real),
                    };
                    let Some(m) = first else {
                        first = Some(len);
                        continue;
                    };
                    if self.ops.dom.known_real(m).is_some() && m == len {
                        continue;
                    }
                    let (Some(x), Some(y)) = (self.real(fb, m), self.real(fb, len)) else {
                        return Err(internal(self));
                    };
                    let ok = fb.emit1(Op::FCmp(Cmp::Eq, x, y), Ty::Bool);
                    let msg = message::different_lengths(
                        who,
                        &self.real_text(fb, m),
                        &self.real_text(fb, len),
                    );
                    let err = self.error_term(b.span, &msg);
                    self.guard(fb, ok, &err);
                }
                Ok(first.unwrap_or_else(|| self.ops.dom.real(0.0)))
            }
            Prim::VectorCheckRange => {
                let parts = pair(arg).and_then(|(c, r)| {
                    let (v, se) = pair(r)?;
                    let (s, e) = pair(se)?;
                    Some((c, v, s, e))
                });
                let Some((code, v, s, e)) = parts else {
                    return Err(internal(self));
                };
                let who = self.who(code);
                let Some((pv, _, n)) = self.vector_ptr(fb, v) else {
                    return Err(internal(self));
                };
                let len = self.vector_len(fb, pv, n);
                let (Some(sv), Some(ev)) = (self.real(fb, s), self.real(fb, e)) else {
                    return Err(internal(self));
                };
                let lt = self.sym(len, LeafKind::Real);
                let msg = message::bad_range(
                    who,
                    &self.real_text(fb, lt),
                    &self.ops.describe(s),
                    &self.ops.describe(e),
                );
                let err = self.error_term(b.span, &msg);
                for ok in [
                    Op::IsCount(sv),
                    Op::IsCount(ev),
                    Op::FCmp(Cmp::Le, sv, ev),
                    Op::FCmp(Cmp::Le, ev, len),
                ] {
                    let ok = fb.emit1(ok, Ty::Bool);
                    self.guard(fb, ok, &err);
                }
                Ok(self.ops.dom.nil())
            }
            Prim::VectorOneHot => {
                let parts = pair(arg).and_then(|(v, r)| {
                    let (i, s) = pair(r)?;
                    Some((v, i, s))
                });
                let Some((v, i, s)) = parts else {
                    return Err(internal(self));
                };
                let Av::Vector(re, rn) = self.ops.dom.get(info.av).clone() else {
                    return Err(internal(self));
                };
                let Some((pv, e, n)) = self.vector_ptr(fb, v) else {
                    return Err(internal(self));
                };
                let Some(iv) = self.check_index(fb, p.name(), pv, n, i) else {
                    return Err(internal(self));
                };
                let len = self.vector_len(fb, pv, n);
                if let Some(layout) = self.sum_layout(re) {
                    let vals = self.elem_slots(fb, s, re);
                    let op = Op::VecOneHot {
                        layout,
                        len,
                        i: iv,
                        vals,
                    };
                    let p = fb.emit1(op, Ty::Ptr);
                    return Ok(self.vector_sym(p, re, rn));
                }
                if let Some((layout, row)) = self.rows_layout(re).filter(|_| self.has_rows(e)) {
                    let val = match self.elem_slots(fb, s, re)[..] {
                        [val] => val,
                        _ => return Err(internal(self)),
                    };
                    let op = Op::VecOneHotOf {
                        layout,
                        row,
                        of: pv,
                        i: iv,
                        val,
                    };
                    let p = fb.emit1(op, Ty::Ptr);
                    return Ok(self.vector_sym(p, re, rn));
                }
                // Element j is `s` at i, else the zero of v's element j
                // (made from it: a vector's zero has its length).
                let mut params = vec![Ty::Ptr, Ty::F64];
                params.extend(layout_of(&self.ops.dom, s));
                let mut args = vec![pv, iv];
                self.scalars_of(s, &mut args);
                let func = self.elem_fn("vector_one_hot", params, re, &mut |this, fb, ps, j| {
                    let mut it = ps[2..].iter().copied();
                    let sv = this.resymbolize(fb, s, &mut it);
                    let at = fb.emit1(Op::FCmp(Cmp::Eq, j, ps[1]), Ty::Bool);
                    Ok(this.elem_if(fb, at, re, &mut |_, _| sv, &mut |this, fb| {
                        let x = this.load_elem(fb, ps[0], j, e);
                        this.zero(fb, x)
                    }))
                });
                Ok(self.build(fb, re, rn, len, func, args))
            }
            _ => Err(internal(self)),
        }
    }

    /// The procedure a vector check's code names.
    fn who(&self, code: AvId) -> &'static str {
        self.ops
            .dom
            .known_real(code)
            .and_then(message::vector_procedure)
            .unwrap_or("?")
    }

    /// The length `n` as an `F64`, checked at run time (when the analysis
    /// does not know it) to be a count, as `who` requires.
    fn check_count(&mut self, fb: &mut Fb, b: &ir::Binding, who: &str, n: AvId) -> Option<Val> {
        let len = self.real(fb, n)?;
        if self.ops.dom.known_real(n).is_none() {
            let ok = fb.emit1(Op::IsCount(len), Ty::Bool);
            let msg = message::bad_length(who, &self.real_text(fb, n));
            let err = self.error_term(b.span, &msg);
            self.guard(fb, ok, &err);
        }
        Some(len)
    }

    /// `(build-vector n f)`: a function per element calling `f`'s
    /// application (`elem`, as the analysis planned it) on the index.
    pub(crate) fn lower_build(
        &mut self,
        fb: &mut Fb,
        b: &ir::Binding,
        info: &flow::BindInfo,
        elem: &flow::BindInfo,
        arg: AvId,
    ) -> Result<AvId, Term> {
        let Av::Vector(e, n) = self.ops.dom.get(info.av).clone() else {
            return Err(Term::Error(
                self.string("error: internal error: build-vector"),
            ));
        };
        let Av::Pair(nv, f) = self.ops.dom.get(arg).clone() else {
            return Err(Term::Error(
                self.string("error: internal error: build-vector"),
            ));
        };
        let Some(len) = self.check_count(fb, b, ir::Prim::BuildVector.name(), nv) else {
            return Err(Term::Error(
                self.string("error: internal error: build-vector"),
            ));
        };
        if self.ops.dom.known_real(nv) == Some(0.0) {
            return Ok(info.av);
        }
        let params = layout_of(&self.ops.dom, f);
        let mut fargs = Vec::new();
        self.scalars_of(f, &mut fargs);
        let elem = elem.clone();
        let fv = f;
        let b2 = b.clone();
        let func = self.elem_fn("build_vector", params, e, &mut |this, fb, ps, i| {
            let mut it = ps.iter().copied();
            let f = this.resymbolize(fb, fv, &mut it);
            let i = this.sym(i, LeafKind::Real);
            // The analysis found that the element procedure cannot be
            // applied (a length known only at run time leaves it to the
            // first call): its message, with the values run time has.
            if let flow::Plan::Error(m) = &elem.plan {
                let m = match this.ops.dom.get(f) {
                    Av::Closure(..) | Av::Prim(_) => m.to_string(),
                    _ => {
                        this.show_vectors(fb, f);
                        let m = ir::message::not_a_procedure(&this.ops.describe(f));
                        this.ops.dom.forget_shown();
                        m
                    }
                };
                return Err(this.error_term(b2.span, &m));
            }
            match this.lower_app(fb, &b2, &elem, f, i, false) {
                Flow::Value(x) => Ok(x),
                Flow::Done(t) => Err(t),
            }
        });
        Ok(self.build(fb, e, n, len, func, fargs))
    }

    /// The scalars of symbolic value `v`, in layout order.
    pub(crate) fn scalars_of(&self, v: AvId, out: &mut Vec<Val>) {
        let dom = &self.ops.dom;
        if dom.is_known(v) {
            return;
        }
        match dom.get(v).clone() {
            Av::Leaf(Sym(s), _) => out.push(Val::from_number(s)),
            Av::Pair(a, c) | Av::Bundle(a, c) => {
                self.scalars_of(a, out);
                self.scalars_of(c, out);
            }
            Av::Wrap(_, x) => self.scalars_of(x, out),
            Av::Closure(_, env) => {
                for x in env.iter() {
                    self.scalars_of(*x, out);
                }
            }
            _ => {}
        }
    }

    /// Symbolic value `v` with its leaves replaced by `vals`, in order.
    pub(crate) fn resymbolize(
        &mut self,
        fb: &mut Fb,
        v: AvId,
        vals: &mut dyn Iterator<Item = Val>,
    ) -> AvId {
        let dom = &self.ops.dom;
        if dom.is_known(v) {
            return v;
        }
        match dom.get(v).clone() {
            Av::Leaf(_, k) => {
                let s = vals.next().unwrap_or(Val::new(0));
                self.sym(s, k)
            }
            Av::Pair(a, c) => {
                let (a, c) = (self.resymbolize(fb, a, vals), self.resymbolize(fb, c, vals));
                self.ops.dom.pair(a, c)
            }
            Av::Bundle(a, c) => {
                let (a, c) = (self.resymbolize(fb, a, vals), self.resymbolize(fb, c, vals));
                self.ops.dom.bundle(a, c)
            }
            Av::Wrap(t, x) => {
                let x = self.resymbolize(fb, x, vals);
                self.ops.dom.wrap(t, x)
            }
            Av::Closure(l, env) => {
                let env = env.iter().map(|x| self.resymbolize(fb, *x, vals)).collect();
                self.ops.dom.closure(l, env)
            }
            _ => self.symbolize(fb, v, vals),
        }
    }
}
