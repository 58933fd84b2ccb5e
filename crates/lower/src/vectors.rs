//! Vectors: a vector value is one `Ptr` to a vector object whose elements
//! have the scalar layout of the analysis' element value (`flow`'s
//! `Av::Vector(element, length)`), its pointers first; a vector the
//! analysis knows entirely (element and length) has no scalars. A
//! symbolic vector is `Av::Leaf(Sym(ptr), LeafKind::Vector(element,
//! length))`. Elements are made by a function per element (`VecBuild`),
//! read by `VecLoad`s, and the loops over elements (zero, plus, printing,
//! conversion to a less precise element) are such functions, but for
//! vectors whose elements are reals (all `F64` slots): their zeros,
//! one-hot vectors and sums are the runtime's sums of vectors, so that
//! reverse mode adds the sensitivity of each `vector-ref` in O(1).

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

    /// The layout of vectors of element `elem` when its slots are all
    /// `F64`: such vectors' zeros, one-hot vectors and sums are the
    /// runtime's sums of vectors (`fir::Op::VecPlus`), O(1) to make.
    pub(crate) fn sum_layout(&mut self, elem: AvId) -> Option<u32> {
        let (layout, types) = self.vec_layout(elem);
        types.iter().all(|t| *t == Ty::F64).then_some(layout)
    }

    /// The layouts of vectors of element `elem` and of its rows when
    /// `elem` is a vector (a row) whose elements are reals: such vectors'
    /// zeros, one-hot vectors and sums are the runtime's sums of rows
    /// (`fir::Op::VecZeroOf`), so that reverse mode adds the sensitivity
    /// of each row read in O(1), not in O(rows).
    pub(crate) fn rows_layout(&mut self, elem: AvId) -> Option<(u32, u32)> {
        let Av::Vector(re, _) = self.ops.dom.get(elem).clone() else {
            return None;
        };
        if self.ops.dom.is_known(re) {
            return None;
        }
        let row = self.sum_layout(re)?;
        let (layout, types) = self.vec_layout(elem);
        (types == [Ty::Ptr]).then_some((layout, row))
    }

    /// Whether `e` is a zero the analysis knows whole (a vector's `zero`
    /// has such elements).
    fn known_zero(&mut self, e: AvId) -> bool {
        self.ops.dom.is_known(e) && self.ops.zero(e) == e
    }

    /// Whether `elem` is a zero row whose elements the analysis knows: a
    /// pointer to any vector as long as it stands for it.
    fn zero_row(&mut self, elem: AvId) -> bool {
        match self.ops.dom.get(elem).clone() {
            Av::Vector(e, _) => self.known_zero(e),
            _ => false,
        }
    }

    /// Whether vectors of element `e` hold a pointer to a vector (or a
    /// sum) per element: what a zero of rows takes its rows' lengths
    /// from.
    pub(crate) fn has_rows(&mut self, e: AvId) -> bool {
        matches!(self.ops.dom.get(e), Av::Vector(..)) && self.vec_layout(e).1 == [Ty::Ptr]
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
    pub(crate) fn elem_slots(&mut self, fb: &mut Fb, x: AvId, e: AvId) -> Vec<Val> {
        let mut scalars = Vec::new();
        self.coerce(fb, x, e, &mut scalars);
        let types: Vec<Ty> = scalars.iter().map(|v| fb.types[v.index()]).collect();
        let mut out = scalars.clone();
        for (v, s) in scalars.into_iter().zip(cell_slots(&types)) {
            out[s as usize] = v;
        }
        out
    }

    /// An element `e` chosen at run time: what `yes` makes where `cond`
    /// holds, else what `no` makes, each in an arm of its own.
    pub(crate) fn elem_if(
        &mut self,
        fb: &mut Fb,
        cond: Val,
        e: AvId,
        yes: &mut dyn FnMut(&mut Self, &mut Fb) -> AvId,
        no: &mut dyn FnMut(&mut Self, &mut Fb) -> AvId,
    ) -> AvId {
        let (_, types) = self.vec_layout(e);
        let arm =
            |this: &mut Self, fb: &mut Fb, make: &mut dyn FnMut(&mut Self, &mut Fb) -> AvId| {
                fb.blocks.push(Vec::new());
                let x = make(this, fb);
                let slots = this.elem_slots(fb, x, e);
                Block {
                    insts: fb.blocks.pop().unwrap_or_default(),
                    term: Term::Yield(slots),
                }
            };
        let then_ = arm(self, fb, yes);
        let else_ = arm(self, fb, no);
        let rs = fb.emit(Op::If { cond, then_, else_ }, &cell_layout(&types));
        // The slots back in layout order, as an element.
        let mut ordered = rs.clone();
        for (k, slot) in cell_slots(&types).into_iter().enumerate() {
            ordered[k] = rs[slot as usize];
        }
        self.symbolize(fb, e, &mut ordered.into_iter())
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
        let mut fb = self.func_builder(&all);
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
    pub(crate) fn shared_elem_fn(
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
                state: None,
            },
            Ty::Ptr,
        );
        self.vector_sym(p, e, n)
    }

    pub(crate) fn vector_sym(&mut self, p: Val, e: AvId, n: AvId) -> AvId {
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
        // A vector the analysis knows whole has no scalars.
        if self.ops.dom.is_known(target) {
            return;
        }
        let Av::Vector(te, _) = self.ops.dom.get(target).clone() else {
            return;
        };
        let Some((p, se, sn)) = self.vector_ptr(fb, src) else {
            return;
        };
        // The same elements, or elements the analysis knows (the
        // pointer stands for the length: see `zero_vector`).
        if se == te || self.ops.dom.is_known(te) {
            out.push(p);
            return;
        }
        // Zeros (a vector's `zero`, with reals for elements): a zero of
        // the target's elements, made in O(1).
        let zero = self
            .ops
            .dom
            .known_real(se)
            .is_some_and(|x| x.to_bits() == 0);
        if zero {
            if let Some(layout) = self.sum_layout(te) {
                let len = self.vector_len(fb, p, sn);
                out.push(fb.emit1(Op::VecZero(layout, len), Ty::Ptr));
                return;
            }
        }
        // Zero rows: a zero of rows made in O(1), each row as long as the
        // one that stands for it.
        if self.zero_row(se) && self.has_rows(se) {
            if let Some((layout, row)) = self.rows_layout(te) {
                out.push(fb.emit1(Op::VecZeroOf { layout, row, of: p }, Ty::Ptr));
                return;
            }
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
                state: None,
            },
            Ty::Ptr,
        ));
    }

    /// The marked text of a real known only at run time, in a message.
    pub(crate) fn real_text(&mut self, fb: &mut Fb, x: AvId) -> String {
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
        // Elements the analysis knows: no code, the vector's pointer
        // standing for its length (its elements are never read). Zero rows
        // likewise: each row of `v` stands for the zero row as long.
        if self.ops.dom.is_known(ze) || (self.zero_row(ze) && self.has_rows(e)) {
            return Some(self.vector_sym(p, ze, n));
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
        // A vector of zeros (a `zero`'s: see `zero_vector`) adds nothing,
        // when the other's elements are already the sum's (`plus` of a
        // union and a zero may be another union).
        let skip = if self.known_zero(ea) && eb == pe {
            Some(b)
        } else if self.known_zero(eb) && ea == pe {
            Some(a)
        } else {
            None
        };
        if na != nb || self.ops.dom.known_real(na).is_none() {
            let lb = self.vector_len(fb, pb, nb);
            let ok = fb.emit1(Op::FCmp(Cmp::Eq, la, lb), Ty::Bool);
            let msg = ir::message::plus_mismatch(&self.ops.describe(a), &self.ops.describe(b));
            // A backward sweep's sums are not shown: a read of them in
            // this arm, before the `plus`, keeps the passes from adding
            // them in place or pairing their one-hots (sumsq-ref 1.17x).
            let backward = self
                .code_of
                .is_some_and(|l| self.ops.prog.is_backward_sweep(l));
            let msg = if backward {
                crate::errors::unprinted(&msg)
            } else {
                msg
            };
            let err = self.error_term(fb.site, &msg);
            self.guard(fb, ok, &err);
        }
        // Elements the analysis knows: the pointer stands for the length
        // (see `zero_vector`).
        if self.ops.dom.is_known(pe) {
            return Some(self.vector_sym(pa, pe, pn));
        }
        if let Some(other) = skip {
            let target = self.ops.dom.vector(pe, pn);
            let mut ps = Vec::new();
            self.coerce_vector(fb, other, target, &mut ps);
            if let [p] = ps[..] {
                return Some(self.vector_sym(p, pe, pn));
            }
        }
        let as_sum = |this: &mut Self, e: AvId| {
            e == pe || this.ops.dom.known_real(e).is_some() || this.zero_row(e)
        };
        let layout = self
            .sum_layout(pe)
            .or_else(|| self.rows_layout(pe).map(|(layout, _)| layout));
        if let Some(layout) = layout.filter(|_| as_sum(self, ea) && as_sum(self, eb)) {
            let target = self.ops.dom.vector(pe, pn);
            let mut ps = Vec::new();
            self.coerce_vector(fb, a, target, &mut ps);
            self.coerce_vector(fb, b, target, &mut ps);
            if let [x, y] = ps[..] {
                let p = fb.emit1(Op::VecPlus(layout, x, y), Ty::Ptr);
                return Some(self.vector_sym(p, pe, pn));
            }
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

    /// Emits a run-time check that symbolic vector `v` has the elements
    /// `ds` (its length first, then each element).
    pub(crate) fn check_vector_datum(
        &mut self,
        fb: &mut Fb,
        v: AvId,
        ds: &[ir::ConstDatum],
        err: &Term,
    ) {
        let Some((p, e, n)) = self.vector_ptr(fb, v) else {
            return;
        };
        if self.ops.dom.known_real(n).is_none() {
            let len = fb.emit1(Op::VecLen(p), Ty::F64);
            let want = fb.emit1(Op::F64Const(ds.len() as f64), Ty::F64);
            let ok = fb.emit1(Op::FCmp(Cmp::Eq, len, want), Ty::Bool);
            self.guard(fb, ok, err);
        }
        for (i, d) in ds.iter().enumerate() {
            let iv = fb.emit1(Op::F64Const(i as f64), Ty::F64);
            let x = self.load_elem(fb, p, iv, e);
            self.check_datum(fb, x, d, err);
        }
    }

    /// Prints a vector: `#(`, its elements separated by spaces, `)`. A
    /// tagged vector prints as the vector of its elements under the tags,
    /// and a forward vector (its tangent too, forward values of forward
    /// vectors included) as the vector of its elements' forward values,
    /// as the interpreter holds them.
    pub(crate) fn print_vector(&mut self, fb: &mut Fb, v: AvId) {
        let mut leaves = Vec::new();
        if !self.vector_leaves(fb, v, &mut leaves) {
            return;
        }
        let Some(&(p, _, n)) = leaves.first() else {
            return;
        };
        let shape = self.element_shape(v);
        let ptrs: Vec<Val> = leaves.iter().map(|l| l.0).collect();
        self.print_str(fb, "#(");
        let nil = self.ops.dom.nil();
        let f = self.shared_elem_fn(
            ("print", vec![shape]),
            vec![Ty::Ptr; ptrs.len()],
            nil,
            &mut |this, fb, ps, i| {
                this.print_space(fb, i);
                let x = this.element_of(fb, v, ps, &mut 0, i);
                // Tagging a union's cell is a map, called here.
                let x = this.resolve(fb, Ok(x)).unwrap_or(x);
                this.print_value(fb, x);
                Ok(nil)
            },
        );
        let len = self.vector_len(fb, p, n);
        self.build(fb, nil, n, len, f, ptrs);
        self.print_str(fb, ")");
    }

    /// The vectors inside `v`, a vector under tags and in forward values
    /// (its primal's first, then its tangent's), each as a pointer, its
    /// element and its length; false if `v` is no such value.
    fn vector_leaves(&mut self, fb: &mut Fb, v: AvId, out: &mut Vec<(Val, AvId, AvId)>) -> bool {
        match self.ops.dom.get(v).clone() {
            Av::Wrap(_, x) => self.vector_leaves(fb, x, out),
            Av::Bundle(a, b) => self.vector_leaves(fb, a, out) && self.vector_leaves(fb, b, out),
            _ => match self.vector_ptr(fb, v) {
                Some(l) => {
                    out.push(l);
                    true
                }
                None => false,
            },
        }
    }

    /// What an element of `v` ([`Self::vector_leaves`]) is, its vectors'
    /// elements in their place: the key of its printing function.
    fn element_shape(&mut self, v: AvId) -> AvId {
        match self.ops.dom.get(v).clone() {
            Av::Wrap(t, x) => {
                let x = self.element_shape(x);
                self.ops.dom.wrap(t, x)
            }
            Av::Bundle(a, b) => {
                let (a, b) = (self.element_shape(a), self.element_shape(b));
                self.ops.dom.bundle(a, b)
            }
            Av::Leaf(_, LeafKind::Vector(e, _)) | Av::Vector(e, _) => e,
            _ => v,
        }
    }

    /// Element `i` of `v` ([`Self::vector_leaves`]), its vectors being
    /// `ps` from the `k`-th on.
    fn element_of(&mut self, fb: &mut Fb, v: AvId, ps: &[Val], k: &mut usize, i: Val) -> AvId {
        match self.ops.dom.get(v).clone() {
            Av::Wrap(t, x) => {
                let x = self.element_of(fb, x, ps, k, i);
                self.ops.tag_wrap(t, x)
            }
            Av::Bundle(a, b) => {
                let a = self.element_of(fb, a, ps, k, i);
                let b = self.element_of(fb, b, ps, k, i);
                self.ops.bundle(a, b).unwrap_or(a)
            }
            Av::Leaf(_, LeafKind::Vector(e, _)) | Av::Vector(e, _) => {
                let x = self.load_elem(fb, ps[*k], i, e);
                *k += 1;
                x
            }
            _ => v,
        }
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
