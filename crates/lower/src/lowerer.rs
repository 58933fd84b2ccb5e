//! The state of lowering, the layout of values and the bindings: each
//! specialisation to one function.
//!
//! Representation follows the abstract value ([`layout`]): constants take no
//! scalars, an unknown real one `F64`, an unknown boolean one `Bool`, pairs
//! and closures the concatenation of their parts. While lowering a function,
//! every value is held as a *symbolic* abstract value whose unknown leaves
//! are `Av::Leaf(Sym(n), _)`, naming FIR value `n`. Pair operations, closure
//! environments and the AD operations other than `plus` are then just the
//! flow analysis' own structural operations ([`flow::Ops`]) applied to
//! symbolic values, in lowering's mode (`symbolic.rs`): the leaves of the
//! result say which scalars it is made of, and no code is emitted for them
//! at all.
//!
//! A union of shapes is one `Ptr` to a cell holding the member's tag and
//! its scalars ([`fir::Op::Alloc`]). A value is boxed where the analysis
//! joined it into a union ([`Lowerer::coerce`]), and a binding the analysis
//! split ([`Plan::Switch`]) tests the tag and unboxes the member in each
//! arm. Printing a union calls a printer function made per union.

use base::diag::{SourceMap, Span};
use fir::{self, Block, FuncId, Inst, Op, StrId, Term, Ty, Val};
use flow::{Av, AvId, BindInfo, LeafKind, Ops, Plan, Spec, SpecId, UnionId, UnionOp};
use ir::{EntityRef, Rhs, Stmt, Var};
// Fx, not std's SipHash: lowering looks up every binding of every
// specialisation.
use rustc_hash::FxHashMap as HashMap;

use crate::sharing;
pub(crate) use crate::symbolic::Sym;
use crate::symbolic::Symbolic;

/// The scalars representing an abstract value, in order.
pub fn layout<L: flow::Leaf>(dom: &flow::Domain<L>, av: AvId, out: &mut Vec<Ty>) {
    if dom.is_known(av) {
        return;
    }
    match dom.get(av) {
        Av::Real(None) | Av::Leaf(_, LeafKind::Real) => out.push(Ty::F64),
        Av::Bool(None) | Av::Leaf(_, LeafKind::Bool) => out.push(Ty::Bool),
        Av::Union(_) | Av::Leaf(_, LeafKind::Union(_)) => out.push(Ty::Ptr),
        // A vector is a pointer to its elements (a known one is nothing).
        Av::Vector(..) | Av::Leaf(_, LeafKind::Vector(..)) => out.push(Ty::Ptr),
        Av::Pair(a, b) | Av::Bundle(a, b) => {
            layout(dom, *a, out);
            layout(dom, *b, out);
        }
        Av::Closure(_, env) => {
            for x in env.iter() {
                layout(dom, *x, out);
            }
        }
        Av::Wrap(_, x) => layout(dom, *x, out),
        Av::Bottom | Av::Real(Some(_)) | Av::Bool(Some(_)) | Av::Nil | Av::Prim(_) => {}
    }
}

pub(crate) fn layout_of<L: flow::Leaf>(dom: &flow::Domain<L>, av: AvId) -> Vec<Ty> {
    let mut v = Vec::new();
    layout(dom, av, &mut v);
    v
}

/// Where each scalar of a union member's layout lies in its cell: the
/// pointers first, each group in layout order, so that the collector scans
/// only a cell's leading pointer slots (the cell's header says how many),
/// never its reals (a tape cell of particle-RR holds thousands).
pub(crate) fn cell_slots(types: &[Ty]) -> Vec<u32> {
    let pointers = types.iter().filter(|t| **t == Ty::Ptr).count() as u32;
    let (mut p, mut s) = (0, pointers);
    types
        .iter()
        .map(|t| {
            let slot = if *t == Ty::Ptr { &mut p } else { &mut s };
            *slot += 1;
            *slot - 1
        })
        .collect()
}

/// The slots of the cells of a member of layout `types`: each scalar at
/// its [`cell_slots`] number.
pub(crate) fn cell_layout(types: &[Ty]) -> Vec<Ty> {
    let mut slots = types.to_vec();
    for (t, slot) in types.iter().zip(cell_slots(types)) {
        slots[slot as usize] = *t;
    }
    slots
}

pub(crate) struct Lowerer<'m> {
    pub(crate) ops: Ops<Symbolic>,
    pub(crate) specs: Vec<Spec>,
    /// The function of each specialisation; none for those whose calls
    /// are their constant result (`folded.rs`).
    pub(crate) func_of: Vec<Option<FuncId>>,
    pub(crate) module: fir::Module,
    pub(crate) strings: HashMap<String, StrId>,
    /// Printer functions of unions: (union, prints a list's tail).
    pub(crate) printers: HashMap<(UnionId, bool), FuncId>,
    /// `zero` and `plus` functions of unions.
    pub(crate) union_fns: HashMap<UnionFn, FuncId>,
    /// The element functions of vectors that depend only on the elements'
    /// values (zero, plus, conversion, printing), by what and of what.
    pub(crate) vector_fns: HashMap<(&'static str, Vec<AvId>), FuncId>,
    /// Representation classes and memo tables of the maps of unions.
    pub(crate) sharing: sharing::Sharing,
    pub(crate) map: &'m SourceMap,
    /// The function being lowered (`None`: `vlad_main`) and the lambda
    /// whose code it is.
    pub(crate) lowering: Option<FuncId>,
    pub(crate) code_of: Option<ir::LambdaId>,
    /// Tail calls from the user's code into library code, and the
    /// functions whose parameter pattern can fail (`sites.rs`).
    pub(crate) tail_sites: Vec<crate::sites::TailSite>,
    pub(crate) pattern_sites: std::collections::HashSet<FuncId>,
    /// The calls that apply derivative operators, for error notes.
    pub(crate) operator_sites: ir::operators::OperatorSites,
    /// The printing of each part of a value an error message shows that
    /// code run then prints: the function and its arguments, by the
    /// number its `ErrPart::Captured` has until [`Lowerer::expand_captures`].
    pub(crate) captures: Vec<(FuncId, Vec<Val>)>,
    /// The functions printing those values, by the value with its leaves
    /// numbered as the function's parameters, and whether as the rest of
    /// a list.
    pub(crate) error_printers: HashMap<(AvId, bool), FuncId>,
}

/// One function under construction.
pub(crate) struct Fb {
    pub(crate) types: Vec<Ty>,
    /// Instruction lists of the open blocks, innermost last.
    pub(crate) blocks: Vec<Vec<Inst>>,
    /// The abstract result of the function (for tail calls).
    pub(crate) result: Option<AvId>,
    /// The position of the binding being lowered.
    pub(crate) site: Option<Span>,
    /// The results of the maps of unions called so far
    /// ([`Lowerer::resolve`]).
    pub(crate) maps: KnownMaps,
    /// Values made by `zero` of a union: `plus` gives back its other
    /// operand for them, as its first test would.
    pub(crate) zeros: std::collections::HashSet<Val>,
}

/// What maps of unions gave, by memo table and operands: each result, the
/// result of the call that made it known and where that call is (an open
/// block and an index in it), so that it is used only while that call's
/// block is open, after it.
pub(crate) type KnownMaps = HashMap<(u32, Vec<Val>), (Val, Val, usize, usize)>;

impl Fb {
    pub(crate) fn new_val(&mut self, t: Ty) -> Val {
        self.types.push(t);
        Val::new(self.types.len() - 1)
    }
    pub(crate) fn emit(&mut self, op: Op, result_tys: &[Ty]) -> Vec<Val> {
        let results: Vec<Val> = result_tys.iter().map(|t| self.new_val(*t)).collect();
        let cur = self.blocks.last_mut().expect("an open block");
        cur.push(Inst {
            results: results.clone(),
            op,
        });
        results
    }
    pub(crate) fn emit1(&mut self, op: Op, t: Ty) -> Val {
        self.emit(op, &[t])[0]
    }
}

/// A function made per union (see [`Lowerer::union_fn`]).
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) enum UnionFn {
    Zero(UnionId),
    /// The zero of a value of the first union, as a cell of the second:
    /// what a lazy zero stands for ([`sharing`]).
    Force(UnionId, UnionId),
    Plus(UnionId, UnionId),
    /// The last union is the result's.
    Map(UnionOp, UnionId, Option<UnionId>, UnionId),
}

pub(crate) fn op_name(op: UnionOp) -> String {
    match op {
        UnionOp::Wrap(t) => format!("wrap_{}", t.name()),
        UnionOp::Unwrap(t) => format!("unwrap_{}", t.name()),
        UnionOp::Half(true) => "primal".into(),
        UnionOp::Half(false) => "tangent".into(),
        UnionOp::Bundle(_) => "bundle".into(),
    }
}

/// How a body ended early.
pub(crate) enum Flow {
    /// The body's value.
    Value(AvId),
    /// The block is already terminated (an error, a tail call).
    Done(Term),
}

impl Lowerer<'_> {
    pub(crate) fn string(&mut self, s: &str) -> StrId {
        if let Some(id) = self.strings.get(s) {
            return *id;
        }
        let id = StrId::new(self.module.strings.len());
        self.module.strings.push(s.to_string());
        self.strings.insert(s.to_string(), id);
        id
    }

    /// The scalars of symbolic value `src` in the layout of the (possibly
    /// less precise) abstract value `target`: constants the target does not
    /// know are materialised, and values that the target has as members of
    /// a union are boxed.
    pub(crate) fn coerce(&mut self, fb: &mut Fb, src: AvId, target: AvId, out: &mut Vec<Val>) {
        let dom = &self.ops.dom;
        // A known target has no scalars: nothing to materialise or box.
        if dom.is_known(target) {
            return;
        }
        match (dom.get(src).clone(), dom.get(target).clone()) {
            (_, Av::Bottom) => {}
            (Av::Leaf(Sym(v), LeafKind::Union(_)), Av::Union(_)) => out.push(Val::from_number(v)),
            (_, Av::Vector(..)) => self.coerce_vector(fb, src, target, out),
            (_, Av::Union(u)) => {
                let Some(k) = dom.member_index(u, src) else {
                    // Not a value of the union: the analysis never lets
                    // one reach here.
                    return;
                };
                let member = dom.members(u)[k];
                let mut scalars = Vec::new();
                self.coerce(fb, src, member, &mut scalars);
                let types: Vec<Ty> = scalars.iter().map(|v| fb.types[v.index()]).collect();
                let mut fields = scalars.clone();
                for (v, slot) in scalars.into_iter().zip(cell_slots(&types)) {
                    fields[slot as usize] = v;
                }
                let tag = self.cell_tag(u, k);
                out.push(fb.emit1(Op::Alloc(tag, fields), Ty::Ptr));
            }
            (Av::Leaf(Sym(v), _), Av::Real(None) | Av::Bool(None)) => out.push(Val::from_number(v)),
            (Av::Real(Some(x)), Av::Real(None)) => {
                out.push(fb.emit1(Op::F64Const(f64::from_bits(x)), Ty::F64))
            }
            (Av::Bool(Some(b)), Av::Bool(None)) => out.push(fb.emit1(Op::BoolConst(b), Ty::Bool)),
            (Av::Pair(a, b), Av::Pair(c, d)) | (Av::Bundle(a, b), Av::Bundle(c, d)) => {
                self.coerce(fb, a, c, out);
                self.coerce(fb, b, d, out);
            }
            (Av::Wrap(_, x), Av::Wrap(_, y)) => self.coerce(fb, x, y, out),
            (Av::Closure(_, e1), Av::Closure(_, e2)) => {
                for (x, y) in e1.iter().zip(e2.iter()) {
                    self.coerce(fb, *x, *y, out);
                }
            }
            _ => {}
        }
    }

    /// A function of these parameters and results, its body made later
    /// ([`Self::finish_func`]).
    pub(crate) fn new_func(&mut self, name: &str, params: &[Ty], returns: &[Ty]) -> FuncId {
        let id = FuncId::new(self.module.funcs.len());
        self.module.funcs.push(fir::Func {
            name: format!("{name}_{}", id.index()),
            params: params.to_vec(),
            returns: returns.to_vec(),
            types: params.to_vec(),
            body: Block {
                insts: vec![],
                term: Term::Return(vec![]),
            },
        });
        id
    }

    /// A builder for the body of a function of these parameters.
    pub(crate) fn func_builder(&self, params: &[Ty]) -> Fb {
        Fb {
            types: params.to_vec(),
            blocks: vec![Vec::new()],
            result: None,
            site: None,
            maps: Default::default(),
            zeros: Default::default(),
        }
    }

    /// Gives function `id` ([`Self::new_func`]) the body `fb` built,
    /// ending in `term`.
    pub(crate) fn finish_func(&mut self, id: FuncId, mut fb: Fb, term: Term) {
        let f = &mut self.module.funcs[id.index()];
        f.types = fb.types;
        f.body = Block {
            insts: fb.blocks.pop().unwrap_or_default(),
            term,
        };
    }

    /// Specialisation `id`'s code, as function `func` (its prototype in
    /// the module).
    pub(crate) fn lower_spec(&mut self, id: SpecId, func: FuncId) -> fir::Func {
        let s = self.specs[id.index()].clone();
        let proto = self.module.funcs[func.index()].clone();
        self.lowering = Some(func);
        self.code_of = Some(s.lambda);
        let mut fb = Fb {
            types: proto.params.clone(),
            blocks: vec![Vec::new()],
            result: Some(s.result),
            site: None,
            maps: Default::default(),
            zeros: Default::default(),
        };
        let mut params = (0..proto.params.len() as u32).map(Val::from_number);
        let lam = self.ops.prog.lambdas[s.lambda].clone();
        let mut vals: HashMap<Var, AvId> = HashMap::default();
        let mut env_syms = Vec::with_capacity(s.env.len());
        for (v, av) in lam.free.iter().zip(&s.env) {
            let sym = self.symbolize(&mut fb, *av, &mut params);
            env_syms.push(sym);
            vals.insert(*v, sym);
        }
        let arg = self.symbolize(&mut fb, s.arg, &mut params);
        vals.insert(lam.param, arg);
        let term = match self.lower_body(
            &mut fb,
            &lam.body,
            &s.binds,
            &mut vals,
            &env_syms,
            lam.group,
            Some(lam.result),
        ) {
            Flow::Done(t) => t,
            Flow::Value(_) => {
                let r = vals.get(&lam.result).copied().unwrap_or(AvId::new(0));
                let mut out = Vec::new();
                self.coerce(&mut fb, r, s.result, &mut out);
                Term::Return(out)
            }
        };
        let insts = fb.blocks.pop().unwrap_or_default();
        fir::Func {
            name: proto.name,
            params: proto.params,
            returns: proto.returns,
            types: fb.types,
            body: Block { insts, term },
        }
    }

    pub(crate) fn lower_main(&mut self, infos: &[BindInfo]) -> fir::Func {
        self.lowering = None;
        self.code_of = None;
        let mut fb = Fb {
            types: vec![],
            blocks: vec![Vec::new()],
            result: None,
            site: None,
            maps: Default::default(),
            zeros: Default::default(),
        };
        let stmts = self.ops.prog.main.clone();
        let mut vals: HashMap<Var, AvId> = HashMap::default();
        let mut infos = infos.iter();
        let mut term = Term::Return(vec![]);
        for st in &stmts {
            match st {
                Stmt::Bind(b) => {
                    let Some(info) = infos.next() else { break };
                    match self.lower_binding(&mut fb, b, info, &vals, &[], None, false) {
                        Flow::Value(av) => {
                            vals.insert(b.var, av);
                        }
                        Flow::Done(t) => {
                            term = t;
                            break;
                        }
                    }
                }
                Stmt::Show { var, .. } => {
                    let av = vals.get(var).copied().unwrap_or(AvId::new(0));
                    self.print_value(&mut fb, av);
                    self.print_str(&mut fb, "\n");
                }
            }
        }
        let insts = fb.blocks.pop().unwrap_or_default();
        fir::Func {
            name: "vlad_main".into(),
            params: vec![],
            returns: vec![],
            types: fb.types,
            body: Block { insts, term },
        }
    }

    #[allow(clippy::too_many_arguments)]
    pub(crate) fn lower_body(
        &mut self,
        fb: &mut Fb,
        body: &[ir::Binding],
        binds: &[BindInfo],
        vals: &mut HashMap<Var, AvId>,
        env: &[AvId],
        group: Option<ir::GroupId>,
        result: Option<Var>,
    ) -> Flow {
        let n = body.len();
        for (i, (b, info)) in body.iter().zip(binds).enumerate() {
            let tail = i + 1 == n && Some(b.var) == result;
            match self.lower_binding(fb, b, info, vals, env, group, tail) {
                Flow::Value(av) => {
                    vals.insert(b.var, av);
                }
                done => return done,
            }
        }
        Flow::Value(AvId::new(0))
    }

    #[allow(clippy::too_many_arguments)]
    pub(crate) fn lower_binding(
        &mut self,
        fb: &mut Fb,
        b: &ir::Binding,
        info: &BindInfo,
        vals: &HashMap<Var, AvId>,
        env: &[AvId],
        group: Option<ir::GroupId>,
        tail: bool,
    ) -> Flow {
        // The analysis gave every operand a value (it fails otherwise); a
        // missing one is a bug of lowering, said so, not read as bottom.
        if b.rhs.each_use().any(|x| !vals.contains_key(&x)) {
            return Flow::Done(Term::Error(
                self.string("error: internal error: an operand without a value"),
            ));
        }
        let bottom = self.ops.dom.bottom();
        let v = |x: &Var| vals.get(x).copied().unwrap_or(bottom);
        match &info.plan {
            Plan::Dead => {
                return Flow::Done(Term::Error(
                    self.string("error: internal error: unreachable code"),
                ))
            }
            Plan::Error(m) => {
                for x in b.rhs.uses() {
                    self.show_vectors(fb, v(&x));
                }
                let m = self.error_message(b, vals, m);
                self.ops.dom.forget_shown();
                let pat = match &b.rhs {
                    Rhs::Car { pat, .. } | Rhs::Cdr { pat, .. } | Rhs::Check { pat, .. } => *pat,
                    _ => None,
                };
                return Flow::Done(self.error_term_at(b.span, &m, pat));
            }
            Plan::Switch(sw) => {
                let flow::Switch { var, path, cases } = &**sw;
                return self.lower_switch(fb, b, info, (*var, path, cases), vals, env, group, tail);
            }
            _ => {}
        }
        let structural = |r: Result<AvId, String>, this: &mut Self| match r {
            Ok(av) => Flow::Value(av),
            Err(m) => Flow::Done(this.error_term(b.span, &m)),
        };
        match &b.rhs {
            Rhs::Const(k) => {
                let av = self.ops.const_value(*k);
                let c = if self.ops.dom.is_known(av) {
                    av
                } else {
                    self.const_tagged(fb, *k)
                };
                // A long list the analysis widened to one of run-time
                // length (`flow::Domain::widen_long_lists`) is made here.
                if info.av != av {
                    let mut scalars = Vec::new();
                    self.coerce(fb, c, info.av, &mut scalars);
                    return Flow::Value(self.symbolize(fb, info.av, &mut scalars.into_iter()));
                }
                Flow::Value(c)
            }
            Rhs::Copy(x) => Flow::Value(v(x)),
            Rhs::Closure { lambda, env } => {
                let e = env.iter().map(v).collect();
                Flow::Value(self.ops.dom.closure(*lambda, e))
            }
            Rhs::Sibling(i) => {
                let l = group.map(|g| self.ops.prog.groups[g].lambdas[*i as usize]);
                match l {
                    Some(l) => Flow::Value(self.ops.dom.closure(l, env.to_vec())),
                    None => Flow::Done(Term::Error(self.string("error: internal error: sibling"))),
                }
            }
            Rhs::Cons { tags, car, cdr } => {
                let r = self.ops.cons_t(tags, v(car), v(cdr));
                let r = self.resolve(fb, r);
                structural(r, self)
            }
            Rhs::Car { tags, pair, .. } => {
                let r = self.ops.car_t(tags, v(pair), true);
                let r = self.resolve(fb, r);
                structural(r, self)
            }
            Rhs::Cdr { tags, pair, .. } => {
                let r = self.ops.car_t(tags, v(pair), false);
                let r = self.resolve(fb, r);
                structural(r, self)
            }
            Rhs::Check {
                tags,
                var,
                expect,
                pat,
            } => {
                if info.plan == Plan::Check {
                    self.show_vectors(fb, v(var));
                    let msg = self.ops.pattern_message(tags, *pat, v(var));
                    self.ops.dom.forget_shown();
                    let err = self.error_term_at(b.span, &msg, *pat);
                    let mut x = v(var);
                    for t in tags {
                        let r = match t {
                            ir::Tag::Forward => self.ops.forward_half(x, true),
                            _ => self.ops.tag_unwrap(*t, x),
                        };
                        let r = self.resolve(fb, r);
                        x = r.unwrap_or(x);
                    }
                    let d = self.ops.prog.consts[*expect].datum.clone();
                    self.check_datum(fb, x, &d, &err);
                }
                Flow::Value(v(var))
            }
            Rhs::EnvRef { closure, index } => match self.ops.dom.get(v(closure)).clone() {
                Av::Closure(_, e) => {
                    Flow::Value(e.get(*index as usize).copied().unwrap_or(AvId::new(0)))
                }
                _ => Flow::Done(Term::Error(self.string("error: internal error: env-ref"))),
            },
            Rhs::EnvUpdate {
                closure,
                index,
                value,
            } => match self.ops.dom.get(v(closure)).clone() {
                Av::Closure(l, e) => {
                    let mut e = e.to_vec();
                    if let Some(slot) = e.get_mut(*index as usize) {
                        *slot = v(value);
                    }
                    Flow::Value(self.ops.dom.closure(l, e))
                }
                _ => Flow::Done(Term::Error(
                    self.string("error: internal error: env-update"),
                )),
            },
            Rhs::App { f, arg } => {
                fb.site = b.span;
                self.lower_app(fb, b, info, v(f), v(arg), tail)
            }
        }
    }
}
