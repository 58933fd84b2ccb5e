//! Vectors: a vector value is one `Ptr` to a vector object whose elements
//! have the scalar layout of the analysis' element value (`flow`'s
//! `Av::Vector(element, length)`), its pointers first; a vector the
//! analysis knows entirely (element and length) has no scalars. A
//! symbolic vector is `Av::Leaf(Sym(ptr), LeafKind::Vector(element,
//! length))`. Elements are made by a function per element (`VecBuild`),
//! read by `VecLoad`s, and the loops over elements (zero, plus, printing,
//! conversion to a less precise element) are such functions.

use crate::lowerer::*;
use base::EntityRef;
use fir::{self, Block, Cmp, FuncId, Op, Term, Ty, Val};
use flow::{Av, AvId, LeafKind};
use ir::message;

/// The body of an element function: given the function's parameters
/// (but the index) and the index, the element's symbolic value, or the
/// term ending it.
type ElemBody<'b> = dyn FnMut(&mut Lowerer<'_>, &mut Fb, &[Val], Val) -> Result<AvId, Term> + 'b;

impl Lowerer<'_> {
    /// The layout number of vectors of element `elem` (an analysis value),
    /// and the element's scalars in layout order.
    pub(crate) fn vec_layout(&mut self, elem: AvId) -> (u32, Vec<Ty>) {
        let types = layout_of(&self.ops.dom, elem);
        let slots = cell_layout(&types);
        if let Some((k, _)) = self.module.vectors.iter().find(|(_, s)| **s == slots) {
            return (*k, types);
        }
        let k = self.module.vectors.len() as u32;
        self.module.vectors.insert(k, slots);
        (k, types)
    }

    /// The pointer, element and length of a symbolic vector; a vector the
    /// analysis knows is made here.
    pub(crate) fn vector_ptr(&mut self, fb: &mut Fb, v: AvId) -> Option<(Val, AvId, AvId)> {
        match self.ops.dom.get(v).clone() {
            Av::Leaf(Sym(p), LeafKind::Vector(e, n)) => Some((Val::from_number(p), e, n)),
            Av::Vector(e, n) if self.ops.dom.is_known(v) => {
                let (layout, _) = self.vec_layout(e);
                let len = self.ops.dom.known_real(n).unwrap_or(0.0) as u32;
                Some((fb.emit1(Op::VecOf(layout, len, vec![]), Ty::Ptr), e, n))
            }
            _ => None,
        }
    }

    /// The length of a vector, as an `F64`.
    pub(crate) fn vector_len(&mut self, fb: &mut Fb, p: Val, n: AvId) -> Val {
        match self.ops.dom.known_real(n) {
            Some(x) => fb.emit1(Op::F64Const(x), Ty::F64),
            None => fb.emit1(Op::VecLen(p), Ty::F64),
        }
    }

    /// Element `i` (checked) of vector `p` of element `e`.
    pub(crate) fn load_elem(&mut self, fb: &mut Fb, p: Val, i: Val, e: AvId) -> AvId {
        let (layout, types) = self.vec_layout(e);
        let vals: Vec<Val> = types
            .iter()
            .zip(cell_slots(&types))
            .map(|(t, s)| fb.emit1(Op::VecLoad(p, i, layout, s), *t))
            .collect();
        self.symbolize(fb, e, &mut vals.into_iter())
    }

    /// The slots of symbolic value `x` as an element `e`, in slot order.
    fn elem_slots(&mut self, fb: &mut Fb, x: AvId, e: AvId) -> Vec<Val> {
        let mut scalars = Vec::new();
        self.coerce(fb, x, e, &mut scalars);
        let types: Vec<Ty> = scalars.iter().map(|v| fb.types[v.index()]).collect();
        let mut out = scalars.clone();
        for (v, s) in scalars.into_iter().zip(cell_slots(&types)) {
            out[s as usize] = v;
        }
        out
    }

    /// A function of `params` and an index returning the slots of an
    /// element `e`, made by `body`.
    pub(crate) fn elem_fn(
        &mut self,
        name: &str,
        params: Vec<Ty>,
        e: AvId,
        body: &mut ElemBody<'_>,
    ) -> FuncId {
        let id = FuncId::new(self.module.funcs.len());
        let name = format!("{name}_{}", id.index());
        let mut all = params.clone();
        all.push(Ty::F64);
        let (_, types) = self.vec_layout(e);
        let returns = cell_layout(&types);
        self.module.funcs.push(fir::Func {
            name: name.clone(),
            params: all.clone(),
            returns: returns.clone(),
            types: all.clone(),
            body: Block {
                insts: vec![],
                term: Term::Return(vec![]),
            },
        });
        let mut fb = Fb {
            types: all.clone(),
            blocks: vec![Vec::new()],
            result: None,
            site: None,
        };
        let ps: Vec<Val> = (0..params.len()).map(Val::new).collect();
        let term = match body(self, &mut fb, &ps, Val::new(params.len())) {
            // An element of no value is never made (its vector is empty,
            // or making it never returns).
            Ok(x) if x == self.ops.dom.bottom() => {
                Term::Error(self.string("error: internal error: an element of no value"))
            }
            Ok(x) => Term::Return(self.elem_slots(&mut fb, x, e)),
            Err(t) => t,
        };
        self.module.funcs[id.index()] = fir::Func {
            name,
            params: all,
            returns,
            types: fb.types,
            body: Block {
                insts: fb.blocks.pop().unwrap_or_default(),
                term,
            },
        };
        id
    }

    /// [`Self::elem_fn`], made once per `key`.
    fn shared_elem_fn(
        &mut self,
        key: (&'static str, Vec<AvId>),
        params: Vec<Ty>,
        e: AvId,
        body: &mut ElemBody<'_>,
    ) -> FuncId {
        if let Some(f) = self.vector_fns.get(&key) {
            return *f;
        }
        let f = self.elem_fn(&format!("vector_{}", key.0), params, e, body);
        self.vector_fns.insert(key, f);
        f
    }

    /// A new vector of element `e` and length `len` (checked), element
    /// `i` being `f(args..., i)`.
    pub(crate) fn build(
        &mut self,
        fb: &mut Fb,
        e: AvId,
        n: AvId,
        len: Val,
        func: FuncId,
        args: Vec<Val>,
    ) -> AvId {
        let (layout, _) = self.vec_layout(e);
        let at = fb.site.filter(|s| s.file.0 != 0).map(|s| {
            let at = self.map.locate(s);
            self.string(&at)
        });
        let p = fb.emit1(
            Op::VecBuild {
                layout,
                len,
                func,
                args,
                at,
            },
            Ty::Ptr,
        );
        self.vector_sym(p, e, n)
    }

    fn vector_sym(&mut self, p: Val, e: AvId, n: AvId) -> AvId {
        if self.ops.dom.known_real(n).is_none() {
            let any = self.ops.dom.any_real();
            return self.sym(p, LeafKind::Vector(e, any));
        }
        self.sym(p, LeafKind::Vector(e, n))
    }

    /// The scalars of symbolic vector `src` as a vector of the analysis
    /// value `target` (a vector, not known): the same pointer when the
    /// elements have one representation, else a converted copy.
    pub(crate) fn coerce_vector(
        &mut self,
        fb: &mut Fb,
        src: AvId,
        target: AvId,
        out: &mut Vec<Val>,
    ) {
        let Av::Vector(te, _) = self.ops.dom.get(target).clone() else {
            return;
        };
        let Some((p, se, sn)) = self.vector_ptr(fb, src) else {
            return;
        };
        if se == te {
            out.push(p);
            return;
        }
        // Elements of no value: the vector is empty.
        if se == self.ops.dom.bottom() {
            let (layout, _) = self.vec_layout(te);
            out.push(fb.emit1(Op::VecOf(layout, 0, vec![]), Ty::Ptr));
            return;
        }
        let f = self.shared_elem_fn(
            ("convert", vec![se, te]),
            vec![Ty::Ptr],
            te,
            &mut |this, fb, ps, i| Ok(this.load_elem(fb, ps[0], i, se)),
        );
        let len = self.vector_len(fb, p, sn);
        let (layout, _) = self.vec_layout(te);
        out.push(fb.emit1(
            Op::VecBuild {
                layout,
                len,
                func: f,
                args: vec![p],
                at: None,
            },
            Ty::Ptr,
        ));
    }

    /// The marked text of a real known only at run time, in a message.
    fn real_text(&mut self, fb: &mut Fb, x: AvId) -> String {
        match self.ops.dom.known_real(x) {
            Some(r) => base::number::format_real(r),
            None => match self.real(fb, x) {
                Some(v) => format!(
                    "{}R{}{}",
                    crate::symbolic::SYM_MARK,
                    v.number(),
                    crate::symbolic::SYM_MARK
                ),
                None => self.ops.describe(x),
            },
        }
    }

    /// Checks at run time that `i` indexes vector `p` (length `n`).
    pub(crate) fn check_index(
        &mut self,
        fb: &mut Fb,
        who: &str,
        p: Val,
        n: AvId,
        i: AvId,
    ) -> Option<Val> {
        let iv = self.real(fb, i)?;
        let fine = match (self.ops.dom.known_real(n), self.ops.dom.known_real(i)) {
            (Some(n), Some(i)) => flow::adops::is_count(i) && i < n,
            _ => false,
        };
        if !fine {
            let ok = fb.emit1(Op::VecIndexOk(p, iv), Ty::Bool);
            let len = self.vector_len(fb, p, n);
            let len = self.sym(len, LeafKind::Real);
            let msg = message::bad_index(who, &self.real_text(fb, len), &self.real_text(fb, i));
            let err = self.error_term(fb.site, &msg);
            self.guard(fb, ok, &err);
        }
        Some(iv)
    }

    /// `zero` of a symbolic vector: a vector of its elements' zeros
    /// (nothing, when the analysis knows them and the length).
    pub(crate) fn zero_vector(&mut self, fb: &mut Fb, v: AvId) -> Option<AvId> {
        let (p, e, n) = match self.ops.dom.get(v).clone() {
            Av::Leaf(Sym(p), LeafKind::Vector(e, n)) => (Val::from_number(p), e, n),
            _ => return None,
        };
        let ze = self.ops.zero(e);
        let z = self.ops.dom.vector(ze, n);
        if self.ops.dom.is_known(z) {
            return Some(z);
        }
        let f = self.shared_elem_fn(
            ("zero", vec![e]),
            vec![Ty::Ptr],
            ze,
            &mut |this, fb, ps, i| {
                let x = this.load_elem(fb, ps[0], i, e);
                Ok(this.zero(fb, x))
            },
        );
        let len = self.vector_len(fb, p, n);
        Some(self.build(fb, ze, n, len, f, vec![p]))
    }

    /// `plus` of two symbolic vectors: elementwise, an error when their
    /// lengths differ.
    pub(crate) fn plus_vectors(&mut self, fb: &mut Fb, a: AvId, b: AvId) -> Option<AvId> {
        let (pa, ea, na) = self.vector_ptr(fb, a)?;
        let (pb, eb, nb) = self.vector_ptr(fb, b)?;
        let (va, vb) = (self.ops.dom.vector(ea, na), self.ops.dom.vector(eb, nb));
        let Ok(r) = self.ops.plus(va, vb) else {
            return None;
        };
        let Av::Vector(pe, pn) = self.ops.dom.get(r).clone() else {
            return None;
        };
        let la = self.vector_len(fb, pa, na);
        if na != nb || self.ops.dom.known_real(na).is_none() {
            let lb = self.vector_len(fb, pb, nb);
            let ok = fb.emit1(Op::FCmp(Cmp::Eq, la, lb), Ty::Bool);
            let msg = ir::message::plus_mismatch(&self.ops.describe(a), &self.ops.describe(b));
            let err = self.error_term(fb.site, &msg);
            self.guard(fb, ok, &err);
        }
        let f = self.shared_elem_fn(
            ("plus", vec![ea, eb]),
            vec![Ty::Ptr, Ty::Ptr],
            pe,
            &mut |this, fb, ps, i| {
                let x = this.load_elem(fb, ps[0], i, ea);
                let y = this.load_elem(fb, ps[1], i, eb);
                Ok(this.plus(fb, x, y))
            },
        );
        Some(self.build(fb, pe, pn, la, f, vec![pa, pb]))
    }

    /// A vector of the given symbolic elements, of element `e`.
    pub(crate) fn vector_of(&mut self, fb: &mut Fb, items: &[AvId], e: AvId) -> Val {
        let (layout, _) = self.vec_layout(e);
        let mut slots = Vec::new();
        for x in items {
            let s = self.elem_slots(fb, *x, e);
            slots.extend(s);
        }
        fb.emit1(Op::VecOf(layout, items.len() as u32, slots), Ty::Ptr)
    }

    /// The symbolic value of a constant of abstract value `av`: its
    /// vectors made (their elements are joined in `av`).
    pub(crate) fn const_sym(
        &mut self,
        fb: &mut Fb,
        av: AvId,
        d: &ir::ConstDatum,
        k: ir::ConstId,
    ) -> AvId {
        if self.ops.dom.is_known(av) {
            return av;
        }
        match (self.ops.dom.get(av).clone(), d) {
            (Av::Pair(a, b), ir::ConstDatum::Pair(x, y)) => {
                let (a, b) = (self.const_sym(fb, a, x, k), self.const_sym(fb, b, y, k));
                self.ops.dom.pair(a, b)
            }
            (Av::Vector(e, n), ir::ConstDatum::Vector(ds)) => {
                let mut items = Vec::with_capacity(ds.len());
                for x in ds {
                    let xv = self.ops.datum_value(x, k);
                    items.push(self.const_sym(fb, xv, x, k));
                }
                let p = self.vector_of(fb, &items, e);
                self.vector_sym(p, e, n)
            }
            _ => av,
        }
    }

    /// The symbolic value of constant `k` (tags and all) whose vectors
    /// are made here, as `flow::Ops::const_value` makes its value.
    pub(crate) fn const_tagged(&mut self, fb: &mut Fb, k: ir::ConstId) -> AvId {
        let c = self.ops.prog.consts[k].clone();
        let base = self.ops.datum_value(&c.datum, k);
        let mut v = self.const_sym(fb, base, &c.datum, k);
        for tag in c.tags.iter().rev() {
            v = match tag {
                ir::Tag::Forward => {
                    let z = self.zero(fb, v);
                    let t = self.ops.tag_wrap(ir::Tag::Perturb, z);
                    self.ops.bundle(v, t).unwrap_or(AvId::new(0))
                }
                _ => self.ops.tag_wrap(*tag, v),
            };
        }
        v
    }

    /// Reads the elements of the vectors of known length in symbolic
    /// value `v` (at most `SHOWN` each), so that an error message about
    /// it shows them as the interpreter does.
    pub(crate) fn show_vectors(&mut self, fb: &mut Fb, v: AvId) {
        const SHOWN: f64 = 64.0;
        match self.ops.dom.get(v).clone() {
            Av::Pair(a, b) | Av::Bundle(a, b) => {
                self.show_vectors(fb, a);
                self.show_vectors(fb, b);
            }
            Av::Wrap(_, x) => self.show_vectors(fb, x),
            Av::Leaf(Sym(p), LeafKind::Vector(e, n)) => {
                let Some(len) = self.ops.dom.known_real(n).filter(|n| *n <= SHOWN) else {
                    return;
                };
                let mut items = Vec::new();
                for i in 0..len as u32 {
                    let iv = fb.emit1(Op::F64Const(i as f64), Ty::F64);
                    let x = self.load_elem(fb, Val::from_number(p), iv, e);
                    self.show_vectors(fb, x);
                    items.push(x);
                }
                self.ops.dom.show_items(v, items);
            }
            _ => {}
        }
    }

    /// Prints a vector: `#(`, its elements separated by spaces, `)`.
    pub(crate) fn print_vector(&mut self, fb: &mut Fb, v: AvId) {
        // A forward vector prints as the vector of its elements' forward
        // values.
        if let Av::Bundle(pv, tv) = self.ops.dom.get(v).clone() {
            let Av::Wrap(ir::Tag::Perturb, tv) = self.ops.dom.get(tv).clone() else {
                return;
            };
            let (Some((p, e, n)), Some((q, te, _))) =
                (self.vector_ptr(fb, pv), self.vector_ptr(fb, tv))
            else {
                return;
            };
            self.print_str(fb, "#(");
            let nil = self.ops.dom.nil();
            let f = self.shared_elem_fn(
                ("print_forward", vec![e, te]),
                vec![Ty::Ptr, Ty::Ptr],
                nil,
                &mut |this, fb, ps, i| {
                    this.print_space(fb, i);
                    let x = this.load_elem(fb, ps[0], i, e);
                    let dx = this.load_elem(fb, ps[1], i, te);
                    let dx = this.ops.tag_wrap(ir::Tag::Perturb, dx);
                    let b = this.ops.bundle(x, dx).unwrap_or(x);
                    this.print_value(fb, b);
                    Ok(nil)
                },
            );
            let len = self.vector_len(fb, p, n);
            self.build(fb, nil, n, len, f, vec![p, q]);
            self.print_str(fb, ")");
            return;
        }
        let mut tags = Vec::new();
        let mut v = v;
        while let Av::Wrap(t, x) = self.ops.dom.get(v).clone() {
            tags.push(t);
            v = x;
        }
        let Some((p, e, n)) = self.vector_ptr(fb, v) else {
            return;
        };
        let mut shown = e;
        for t in tags.iter().rev() {
            shown = self.ops.dom.wrap(*t, shown);
        }
        self.print_str(fb, "#(");
        let nil = self.ops.dom.nil();
        let f = self.shared_elem_fn(
            ("print", vec![shown]),
            vec![Ty::Ptr],
            nil,
            &mut |this, fb, ps, i| {
                this.print_space(fb, i);
                let mut x = this.load_elem(fb, ps[0], i, e);
                for t in tags.iter().rev() {
                    x = this.ops.tag_wrap(*t, x);
                }
                this.print_value(fb, x);
                Ok(nil)
            },
        );
        let len = self.vector_len(fb, p, n);
        self.build(fb, nil, n, len, f, vec![p]);
        self.print_str(fb, ")");
    }

    /// Prints a space before every element but the first.
    fn print_space(&mut self, fb: &mut Fb, i: Val) {
        let zero = fb.emit1(Op::F64Const(0.0), Ty::F64);
        let later = fb.emit1(Op::FCmp(Cmp::Gt, i, zero), Ty::Bool);
        let space = self.string(" ");
        fb.emit(
            Op::If {
                cond: later,
                then_: Block {
                    insts: vec![fir::Inst {
                        results: vec![],
                        op: Op::PrintStr(space),
                    }],
                    term: Term::Yield(vec![]),
                },
                else_: Block {
                    insts: vec![],
                    term: Term::Yield(vec![]),
                },
            },
            &[],
        );
    }
}

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
                if !matches!(self.ops.dom.get(l), Av::Nil) {
                    return Err(internal(self));
                }
                let pv = self.vector_of(fb, &items, e);
                Ok(self.vector_sym(pv, e, n))
            }
            Prim::VectorCheckLength => {
                let Some((code, nv)) = pair(arg) else {
                    return Err(internal(self));
                };
                let who = self
                    .ops
                    .dom
                    .known_real(code)
                    .and_then(message::vector_procedure)
                    .unwrap_or("?");
                if self.ops.dom.known_real(nv).is_none() {
                    let Some(len) = self.real(fb, nv) else {
                        return Err(internal(self));
                    };
                    let ok = fb.emit1(Op::IsCount(len), Ty::Bool);
                    let msg = message::bad_length(who, &self.real_text(fb, nv));
                    let err = self.error_term(b.span, &msg);
                    self.guard(fb, ok, &err);
                }
                Ok(nv)
            }
            Prim::VectorCheckLengths => {
                let Some((code, mut l)) = pair(arg) else {
                    return Err(internal(self));
                };
                let who = self
                    .ops
                    .dom
                    .known_real(code)
                    .and_then(message::vector_procedure)
                    .unwrap_or("?");
                let mut first: Option<AvId> = None;
                while let Av::Pair(v, rest) = self.ops.dom.get(l).clone() {
                    l = rest;
                    let Some((pv, _, n)) = self.vector_ptr(fb, v) else {
                        return Err(internal(self));
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
                let who = self
                    .ops
                    .dom
                    .known_real(code)
                    .and_then(message::vector_procedure)
                    .unwrap_or("?");
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
                // Element j is `s` at i, else the zero of v's element j
                // (made from it: a vector's zero has its length).
                let mut params = vec![Ty::Ptr, Ty::F64];
                params.extend(layout_of(&self.ops.dom, s));
                let mut args = vec![pv, iv];
                self.coerce_same(fb, s, &mut args);
                let func = self.elem_fn("vector_one_hot", params, re, &mut |this, fb, ps, j| {
                    let mut it = ps[2..].iter().copied();
                    let sv = this.resymbolize(fb, s, &mut it);
                    let at = fb.emit1(Op::FCmp(Cmp::Eq, j, ps[1]), Ty::Bool);
                    let (_, types) = this.vec_layout(re);
                    let tys = cell_layout(&types);
                    fb.blocks.push(Vec::new());
                    let yes = this.elem_slots(fb, sv, re);
                    let then_ = Block {
                        insts: fb.blocks.pop().unwrap_or_default(),
                        term: Term::Yield(yes),
                    };
                    fb.blocks.push(Vec::new());
                    let x = this.load_elem(fb, ps[0], j, e);
                    let z = this.zero(fb, x);
                    let no = this.elem_slots(fb, z, re);
                    let else_ = Block {
                        insts: fb.blocks.pop().unwrap_or_default(),
                        term: Term::Yield(no),
                    };
                    let rs = fb.emit(
                        Op::If {
                            cond: at,
                            then_,
                            else_,
                        },
                        &tys,
                    );
                    // The slots back in layout order, as an element.
                    let mut ordered = rs.clone();
                    for (k, slot) in cell_slots(&types).into_iter().enumerate() {
                        ordered[k] = rs[slot as usize];
                    }
                    let mut it = ordered.into_iter();
                    Ok(this.symbolize(fb, re, &mut it))
                });
                Ok(self.build(fb, re, rn, len, func, args))
            }
            _ => Err(internal(self)),
        }
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
        let Some(len) = self.real(fb, nv) else {
            return Err(Term::Error(
                self.string("error: internal error: build-vector"),
            ));
        };
        if self.ops.dom.known_real(nv).is_none() {
            let ok = fb.emit1(Op::IsCount(len), Ty::Bool);
            let msg = message::bad_length(ir::Prim::BuildVector.name(), &self.real_text(fb, nv));
            let err = self.error_term(b.span, &msg);
            self.guard(fb, ok, &err);
        }
        if self.ops.dom.known_real(nv) == Some(0.0) {
            return Ok(info.av);
        }
        let params = layout_of(&self.ops.dom, f);
        let mut fargs = Vec::new();
        self.coerce_same(fb, f, &mut fargs);
        let elem = elem.clone();
        let fv = f;
        let b2 = b.clone();
        let func = self.elem_fn("build_vector", params, e, &mut |this, fb, ps, i| {
            let mut it = ps.iter().copied();
            let f = this.resymbolize(fb, fv, &mut it);
            let i = this.sym(i, LeafKind::Real);
            match this.lower_app(fb, &b2, &elem, f, i, false) {
                Flow::Value(x) => Ok(x),
                Flow::Done(t) => Err(t),
            }
        });
        Ok(self.build(fb, e, n, len, func, fargs))
    }

    /// The scalars of symbolic value `v`, in layout order.
    pub(crate) fn coerce_same(&mut self, _fb: &mut Fb, v: AvId, out: &mut Vec<Val>) {
        let dom = &self.ops.dom;
        if dom.is_known(v) {
            return;
        }
        match dom.get(v).clone() {
            Av::Leaf(Sym(s), _) => out.push(Val::from_number(s)),
            Av::Pair(a, c) | Av::Bundle(a, c) => {
                self.coerce_same(_fb, a, out);
                self.coerce_same(_fb, c, out);
            }
            Av::Wrap(_, x) => self.coerce_same(_fb, x, out),
            Av::Closure(_, env) => {
                for x in env.iter() {
                    self.coerce_same(_fb, *x, out);
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
