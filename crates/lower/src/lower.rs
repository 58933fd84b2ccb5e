//! The analysed program to FIR: one function per specialisation.
//!
//! Representation follows the abstract value ([`layout`]): constants take no
//! scalars, an unknown real one `F64`, an unknown boolean one `Bool`, pairs
//! and closures the concatenation of their parts. While lowering a function,
//! every value is held as a *symbolic* abstract value whose unknown leaves
//! are `Av::Sym(n)`, naming FIR value `n`. Pair operations, closure
//! environments and the AD operations other than `plus` are then just the
//! flow analysis' own structural operations ([`flow::Ops`]) applied to
//! symbolic values: the leaves of the result say which scalars it is made
//! of, and no code is emitted for them at all.
//!
//! A union of shapes is one `Ptr` to a cell holding the member's tag and
//! its scalars ([`fir::Op::Alloc`]). A value is boxed where the analysis
//! joined it into a union ([`Lowerer::coerce`]), and a binding the analysis
//! split ([`Plan::Switch`]) tests the tag and unboxes the member in each
//! arm. Printing a union calls a printer function made per union.

use fir::{self, Block, Cmp, FBin, FUn, FuncId, Inst, Op, StrId, Term, Ty, Val};
use flow::{Analysis, Av, AvId, BindInfo, Ops, Plan, Spec, SpecId, SymKind, UnionId, UnionOp};
use ir::{Prim, PrimKind, Rhs, Stmt, Var};
use std::collections::HashMap;
use syntax::{SourceMap, Span};

/// The scalars representing an abstract value, in order.
pub fn layout(dom: &flow::Domain, av: AvId, out: &mut Vec<Ty>) {
    match dom.get(av) {
        Av::Real(None) | Av::Sym(_, SymKind::Real) => out.push(Ty::F64),
        Av::Bool(None) | Av::Sym(_, SymKind::Bool) => out.push(Ty::Bool),
        Av::Union(_) | Av::Sym(_, SymKind::Union(_)) => out.push(Ty::Ptr),
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

fn layout_of(dom: &flow::Domain, av: AvId) -> Vec<Ty> {
    let mut v = Vec::new();
    layout(dom, av, &mut v);
    v
}

/// Lowers an analysed program.
pub fn lower(analysis: Analysis, map: &SourceMap) -> fir::Module {
    let live: Vec<bool> = (0..analysis.specs.len() as u32)
        .map(|i| analysis.is_live(SpecId(i)))
        .collect();
    let Analysis {
        mut ops,
        specs,
        main,
        ..
    } = analysis;
    ops.symbolic = true;
    let mut lw = Lowerer {
        ops,
        specs,
        module: fir::Module::default(),
        strings: HashMap::new(),
        printers: HashMap::new(),
        union_fns: HashMap::new(),
        map,
    };
    for (i, s) in lw.specs.iter().enumerate() {
        let name = format!(
            "{}_{}",
            lw.ops.prog.lambdas[s.lambda]
                .name
                .as_deref()
                .unwrap_or("lambda")
                .replace(|c: char| !c.is_ascii_alphanumeric(), "_"),
            i
        );
        let mut params = Vec::new();
        for e in &s.env {
            layout(&lw.ops.dom, *e, &mut params);
        }
        layout(&lw.ops.dom, s.arg, &mut params);
        let returns = layout_of(&lw.ops.dom, s.result);
        lw.module.funcs.push(fir::Func {
            name,
            params,
            returns,
            types: Vec::new(),
            body: Block {
                insts: vec![],
                term: Term::Return(vec![]),
            },
        });
    }
    for (i, live) in live.into_iter().enumerate() {
        if live {
            let f = lw.lower_spec(SpecId(i as u32));
            lw.module.funcs[i] = f;
        } else {
            // Never called: its analysis is stale.
            let msg = lw.string("error: internal error: a dead specialisation was called");
            let f = &mut lw.module.funcs[i];
            f.types = f.params.clone();
            f.body.term = Term::Error(msg);
        }
    }
    let m = lw.lower_main(&main);
    lw.module.main = Some(FuncId(lw.module.funcs.len() as u32));
    lw.module.funcs.push(m);
    if cfg!(debug_assertions) {
        if let Err(e) = fir::verify::verify(&lw.module) {
            panic!("internal error: lowering broke an invariant of the FIR: {e}");
        }
    }
    lw.module
}

struct Lowerer<'m> {
    ops: Ops,
    specs: Vec<Spec>,
    module: fir::Module,
    strings: HashMap<String, StrId>,
    /// Printer functions of unions: (union, prints a list's tail).
    printers: HashMap<(UnionId, bool), FuncId>,
    /// `zero` and `plus` functions of unions.
    union_fns: HashMap<UnionFn, FuncId>,
    map: &'m SourceMap,
}

/// One function under construction.
struct Fb {
    types: Vec<Ty>,
    /// Instruction lists of the open blocks, innermost last.
    blocks: Vec<Vec<Inst>>,
    /// The abstract result of the function (for tail calls).
    result: Option<AvId>,
    /// The position of the binding being lowered.
    site: Option<Span>,
}

impl Fb {
    fn new_val(&mut self, t: Ty) -> Val {
        self.types.push(t);
        Val(self.types.len() as u32 - 1)
    }
    fn emit(&mut self, op: Op, result_tys: &[Ty]) -> Vec<Val> {
        let results: Vec<Val> = result_tys.iter().map(|t| self.new_val(*t)).collect();
        let cur = self.blocks.last_mut().expect("an open block");
        cur.push(Inst {
            results: results.clone(),
            op,
        });
        results
    }
    fn emit1(&mut self, op: Op, t: Ty) -> Val {
        self.emit(op, &[t])[0]
    }
}

/// A function made per union (see [`Lowerer::union_fn`]).
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
enum UnionFn {
    Zero(UnionId),
    Plus(UnionId, UnionId),
    /// The last union is the result's.
    Map(UnionOp, UnionId, Option<UnionId>, UnionId),
}

fn op_name(op: UnionOp) -> String {
    match op {
        UnionOp::Wrap(t) => format!("wrap_{}", t.name()),
        UnionOp::Unwrap(t) => format!("unwrap_{}", t.name()),
        UnionOp::Half(true) => "primal".into(),
        UnionOp::Half(false) => "tangent".into(),
        UnionOp::Bundle(_) => "bundle".into(),
    }
}

/// How a body ended early.
enum Flow {
    /// The body's value.
    Value(AvId),
    /// The block is already terminated (an error, a tail call).
    Done(Term),
}

impl Lowerer<'_> {
    fn string(&mut self, s: &str) -> StrId {
        if let Some(id) = self.strings.get(s) {
            return *id;
        }
        let id = StrId(self.module.strings.len() as u32);
        self.module.strings.push(s.to_string());
        self.strings.insert(s.to_string(), id);
        id
    }

    /// The run-time error term for `msg` at `span`: values known only at
    /// run time (marked by `flow::print::SYM_MARK`) are printed then.
    fn error_term(&mut self, span: Option<Span>, msg: &str) -> Term {
        self.error_term_at(span, msg, None)
    }

    /// [`Self::error_term`], placed as the interpreter places it: at the
    /// form when that is in the user's files, else at the innermost call
    /// from the user's files that is running (`ErrPart::Site`). A parameter
    /// pattern that does not match (`pattern` is its `PatInfo`) is the
    /// caller's fault, so it is placed at the call, with a note saying
    /// where the pattern is.
    fn error_term_at(&mut self, span: Option<Span>, msg: &str, pattern: Option<ir::PatId>) -> Term {
        let (blame_caller, note) = match pattern {
            Some(p) => {
                let info = &self.ops.prog.patterns[p];
                (
                    info.owner.as_deref() != Some("let"),
                    format!("\n  note: the pattern is at {}", self.map.locate(info.span)),
                )
            }
            None => (false, String::new()),
        };
        let here = span.filter(|s| s.file.0 != 0 && !blame_caller);
        let text = match here {
            Some(s) => format!("{}: error: {msg}{note}", self.map.locate(s)),
            None => format!("error: {msg}{note}"),
        };
        if here.is_some() && !text.contains(flow::print::SYM_MARK) {
            return Term::Error(self.string(&text));
        }
        let mut parts = Vec::new();
        if here.is_none() {
            parts.push(fir::ErrPart::Site);
        }
        let mut in_value = false;
        for (i, piece) in text.split(flow::print::SYM_MARK).enumerate() {
            if i % 2 == 0 {
                for (j, s) in piece.split(flow::print::VALUE_MARK).enumerate() {
                    if j > 0 {
                        parts.push(if in_value {
                            fir::ErrPart::ValueEnd
                        } else {
                            fir::ErrPart::ValueStart
                        });
                        in_value = !in_value;
                    }
                    if !s.is_empty() {
                        parts.push(fir::ErrPart::Str(self.string(s)));
                    }
                }
                continue;
            }
            let n = piece[1..].parse::<u32>().unwrap_or(0);
            parts.push(if piece.starts_with('R') {
                fir::ErrPart::Real(Val(n))
            } else {
                fir::ErrPart::Bool(Val(n))
            });
        }
        Term::ErrorWith(parts)
    }

    /// The message of a run-time error the analysis found, derived again
    /// from the operands as this function holds them, so that values known
    /// only at run time can be shown.
    fn error_message(
        &mut self,
        b: &ir::Binding,
        vals: &HashMap<Var, AvId>,
        analysed: &str,
    ) -> String {
        let v = |x: &Var| vals.get(x).copied().unwrap_or(AvId(0));
        let again = match &b.rhs {
            Rhs::App { f, arg } => match self.ops.dom.get(v(f)).clone() {
                Av::Prim(ir::Prim::IfProcedure) if analysed.starts_with("`if-procedure`") => {
                    Err(format!(
                        "`if-procedure` expects a condition and two thunks, found {}",
                        self.ops.describe(v(arg))
                    ))
                }
                // The chosen thunk is not a procedure (the condition is
                // known: see `flow::analysis` on `if-procedure`).
                Av::Prim(ir::Prim::IfProcedure) => {
                    let chosen = self.pair_view(v(arg)).and_then(|(c, te)| {
                        let (t, e) = self.pair_view(te)?;
                        let no = matches!(self.ops.dom.get(c), Av::Bool(Some(false)));
                        Some(if no { e } else { t })
                    });
                    match chosen {
                        Some(x) => Err(format!(
                            "cannot apply a non-procedure: found {}",
                            self.ops.describe(x)
                        )),
                        None => Ok(()),
                    }
                }
                Av::Prim(p) => self.ops.prim(p, v(arg)).map(|_| ()),
                Av::Closure(..) | Av::Bottom => Ok(()),
                _ => Err(format!(
                    "cannot apply a non-procedure: found {}",
                    self.ops.describe(v(f))
                )),
            },
            Rhs::Car { pat, pair, .. } | Rhs::Cdr { pat, pair, .. } => {
                Err(self.ops.pattern_message(*pat, v(pair)))
            }
            Rhs::Check { pat, var, .. } => Err(self.ops.pattern_message(*pat, v(var))),
            Rhs::Cons { tags, car, cdr } => self.ops.cons_t(tags, v(car), v(cdr)).map(|_| ()),
            _ => Ok(()),
        };
        // Only the message was wanted: no code for maps of unions.
        self.ops.take_pending();
        match again {
            Err(m) if !m.is_empty() => m,
            _ => analysed.to_string(),
        }
    }

    fn error_text(&self, span: Option<Span>, msg: &str) -> String {
        match span.filter(|s| s.file.0 != 0) {
            Some(s) => format!("{}: error: {msg}", self.map.locate(s)),
            None => format!("error: {msg}"),
        }
    }

    /// Replaces the unknown leaves of `av` with fresh parameters.
    fn symbolize(&mut self, fb: &mut Fb, av: AvId, vals: &mut dyn Iterator<Item = Val>) -> AvId {
        let dom = &mut self.ops.dom;
        match dom.get(av).clone() {
            Av::Real(None) => {
                let v = vals.next().unwrap_or_else(|| fb.new_val(Ty::F64));
                dom.intern(Av::Sym(v.0, SymKind::Real))
            }
            Av::Bool(None) => {
                let v = vals.next().unwrap_or_else(|| fb.new_val(Ty::Bool));
                dom.intern(Av::Sym(v.0, SymKind::Bool))
            }
            Av::Union(u) => {
                let u = dom.find(u);
                let v = vals.next().unwrap_or_else(|| fb.new_val(Ty::Ptr));
                dom.intern(Av::Sym(v.0, SymKind::Union(u)))
            }
            Av::Pair(a, b) => {
                let a = self.symbolize(fb, a, vals);
                let b = self.symbolize(fb, b, vals);
                self.ops.dom.pair(a, b)
            }
            Av::Bundle(a, b) => {
                let a = self.symbolize(fb, a, vals);
                let b = self.symbolize(fb, b, vals);
                self.ops.dom.bundle(a, b)
            }
            Av::Wrap(t, x) => {
                let x = self.symbolize(fb, x, vals);
                self.ops.dom.wrap(t, x)
            }
            Av::Closure(l, env) => {
                let env = env.iter().map(|x| self.symbolize(fb, *x, vals)).collect();
                self.ops.dom.closure(l, env)
            }
            _ => av,
        }
    }

    /// The scalars of symbolic value `src` in the layout of the (possibly
    /// less precise) abstract value `target`: constants the target does not
    /// know are materialised, and values that the target has as members of
    /// a union are boxed.
    fn coerce(&mut self, fb: &mut Fb, src: AvId, target: AvId, out: &mut Vec<Val>) {
        let dom = &self.ops.dom;
        match (dom.get(src).clone(), dom.get(target).clone()) {
            (_, Av::Bottom) => {}
            (Av::Sym(v, SymKind::Union(_)), Av::Union(_)) => out.push(Val(v)),
            (_, Av::Union(u)) => {
                let Some(tag) = dom.member_index(u, src) else {
                    // Not a value of the union: the analysis never lets
                    // one reach here.
                    return;
                };
                let member = dom.members(u)[tag];
                let mut fields = Vec::new();
                self.coerce(fb, src, member, &mut fields);
                out.push(fb.emit1(Op::Alloc(tag as u32, fields), Ty::Ptr));
            }
            (Av::Sym(v, _), Av::Real(None) | Av::Bool(None)) => out.push(Val(v)),
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

    fn lower_spec(&mut self, id: SpecId) -> fir::Func {
        let s = self.specs[id.0 as usize].clone();
        let proto = self.module.funcs[id.0 as usize].clone();
        let mut fb = Fb {
            types: proto.params.clone(),
            blocks: vec![Vec::new()],
            result: Some(s.result),
            site: None,
        };
        let mut params = (0..proto.params.len() as u32).map(Val);
        let lam = self.ops.prog.lambdas[s.lambda].clone();
        let mut vals: HashMap<Var, AvId> = HashMap::new();
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
                let r = vals.get(&lam.result).copied().unwrap_or(AvId(0));
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

    fn lower_main(&mut self, infos: &[BindInfo]) -> fir::Func {
        let mut fb = Fb {
            types: vec![],
            blocks: vec![Vec::new()],
            result: None,
            site: None,
        };
        let stmts = self.ops.prog.main.clone();
        let mut vals: HashMap<Var, AvId> = HashMap::new();
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
                    let av = vals.get(var).copied().unwrap_or(AvId(0));
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
    fn lower_body(
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
        Flow::Value(AvId(0))
    }

    #[allow(clippy::too_many_arguments)]
    fn lower_binding(
        &mut self,
        fb: &mut Fb,
        b: &ir::Binding,
        info: &BindInfo,
        vals: &HashMap<Var, AvId>,
        env: &[AvId],
        group: Option<ir::GroupId>,
        tail: bool,
    ) -> Flow {
        let v = |x: &Var| vals.get(x).copied().unwrap_or(AvId(0));
        match &info.plan {
            Plan::Dead => {
                return Flow::Done(Term::Error(
                    self.string("error: internal error: unreachable code"),
                ))
            }
            Plan::Error(m) => {
                let m = self.error_message(b, vals, m);
                let pat = match &b.rhs {
                    Rhs::Car { pat, .. } | Rhs::Cdr { pat, .. } | Rhs::Check { pat, .. } => *pat,
                    _ => None,
                };
                return Flow::Done(self.error_term_at(b.span, &m, pat));
            }
            Plan::Switch { var, path, cases } => {
                return self.lower_switch(fb, b, info, (*var, path, cases), vals, env, group, tail)
            }
            _ => {}
        }
        let structural = |r: Result<AvId, String>, this: &mut Self| match r {
            Ok(av) => Flow::Value(av),
            Err(m) => Flow::Done(this.error_term(b.span, &m)),
        };
        match &b.rhs {
            Rhs::Const(k) => Flow::Value(self.ops.const_value(*k)),
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
                    let msg = self.ops.pattern_message(*pat, v(var));
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
                    Flow::Value(e.get(*index as usize).copied().unwrap_or(AvId(0)))
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

    /// A binding split on a union operand: dispatches on the tag and lowers
    /// the binding once per member, with the operand narrowed.
    #[allow(clippy::too_many_arguments)]
    fn lower_switch(
        &mut self,
        fb: &mut Fb,
        b: &ir::Binding,
        info: &BindInfo,
        (var, path, cases): (Var, &[u32], &[(AvId, BindInfo)]),
        vals: &HashMap<Var, AvId>,
        env: &[AvId],
        group: Option<ir::GroupId>,
        tail: bool,
    ) -> Flow {
        let whole = vals.get(&var).copied().unwrap_or(AvId(0));
        let (ptr, u) = match self.ops.dom.get(self.ops.part_at(whole, path)) {
            Av::Sym(p, SymKind::Union(u)) => (Val(*p), *u),
            _ => {
                return Flow::Done(Term::Error(
                    self.string("error: internal error: switch on a value that is not a union"),
                ))
            }
        };
        let tys = layout_of(&self.ops.dom, info.av);
        let tail = tail && fb.result == Some(info.av);
        let mut narrowed = vals.clone();
        let results = self.switch(fb, ptr, u, &tys, &mut |this, fb, member, sym| {
            let Some((_, case)) = cases.iter().find(|(m, _)| *m == member) else {
                return Term::Error(this.string("error: internal error: a member without a case"));
            };
            let operand = this.ops.replace_at(whole, path, sym);
            narrowed.insert(var, operand);
            match this.lower_binding(fb, b, case, &narrowed, env, group, tail) {
                Flow::Value(r) => {
                    let mut out = Vec::new();
                    this.coerce(fb, r, info.av, &mut out);
                    Term::Yield(out)
                }
                Flow::Done(t) => t,
            }
        });
        if info.av == self.ops.dom.bottom() {
            return Flow::Done(Term::Error(
                self.string("error: internal error: a switch that never returns returned"),
            ));
        }
        let mut it = results.into_iter();
        Flow::Value(self.symbolize(fb, info.av, &mut it))
    }

    /// Emits a dispatch on the tag of the cell `ptr` of union `u`: one `If`
    /// per member, whose arm `arm` fills given the member and its symbolic
    /// value read from the cell. Gives the results (of types `tys`).
    fn switch(
        &mut self,
        fb: &mut Fb,
        ptr: Val,
        u: UnionId,
        tys: &[Ty],
        arm: &mut dyn FnMut(&mut Self, &mut Fb, AvId, AvId) -> Term,
    ) -> Vec<Val> {
        let members = self.ops.dom.members(u).to_vec();
        self.switch_from(fb, ptr, &members, 0, tys, arm)
    }

    fn switch_from(
        &mut self,
        fb: &mut Fb,
        ptr: Val,
        members: &[AvId],
        k: usize,
        tys: &[Ty],
        arm: &mut dyn FnMut(&mut Self, &mut Fb, AvId, AvId) -> Term,
    ) -> Vec<Val> {
        if members.is_empty() {
            // A union no value ever reached.
            let cond = fb.emit1(Op::BoolConst(false), Ty::Bool);
            let dead = Term::Error(self.string("error: internal error: a value of an empty union"));
            let block = |term: Term| Block {
                insts: vec![],
                term,
            };
            return fb.emit(
                Op::If {
                    cond,
                    then_: block(dead.clone()),
                    else_: block(dead),
                },
                tys,
            );
        }
        let cond = fb.emit1(Op::TagIs(ptr, k as u32), Ty::Bool);
        // The arm of member k.
        fb.blocks.push(Vec::new());
        let member = members[k];
        let mut loads = Vec::new();
        for (i, t) in layout_of(&self.ops.dom, member).into_iter().enumerate() {
            loads.push(fb.emit1(Op::Load(ptr, i as u32), t));
        }
        let sym = self.symbolize(fb, member, &mut loads.into_iter());
        let term = arm(self, fb, member, sym);
        let then_ = Block {
            insts: fb.blocks.pop().unwrap_or_default(),
            term,
        };
        // The other members.
        fb.blocks.push(Vec::new());
        let term = if k + 1 < members.len() {
            Term::Yield(self.switch_from(fb, ptr, members, k + 1, tys, arm))
        } else {
            Term::Error(self.string("error: internal error: a union cell with an unknown tag"))
        };
        let else_ = Block {
            insts: fb.blocks.pop().unwrap_or_default(),
            term,
        };
        fb.emit(Op::If { cond, then_, else_ }, tys)
    }

    /// The function printing a value of union `u` (as the tail of a list,
    /// from the space before its next element to its closing parenthesis,
    /// when `tail`).
    fn printer(&mut self, u: UnionId, tail: bool) -> FuncId {
        let u = self.ops.dom.find(u);
        if let Some(f) = self.printers.get(&(u, tail)) {
            return *f;
        }
        let id = FuncId(self.module.funcs.len() as u32);
        let name = format!("print_u{}{}", u.0, if tail { "_tail" } else { "" });
        let empty = Block {
            insts: vec![],
            term: Term::Return(vec![]),
        };
        self.module.funcs.push(fir::Func {
            name: name.clone(),
            params: vec![Ty::Ptr],
            returns: vec![],
            types: vec![Ty::Ptr],
            body: empty,
        });
        self.printers.insert((u, tail), id);
        let mut fb = Fb {
            types: vec![Ty::Ptr],
            blocks: vec![Vec::new()],
            result: None,
            site: None,
        };
        self.switch(&mut fb, Val(0), u, &[], &mut |this, fb, _, sym| {
            let mut pieces = Vec::new();
            if tail {
                this.tail_pieces(sym, &mut pieces);
            } else {
                this.pieces(sym, &mut pieces);
            }
            this.emit_pieces(fb, pieces);
            Term::Yield(vec![])
        });
        self.module.funcs[id.0 as usize] = fir::Func {
            name,
            params: vec![Ty::Ptr],
            returns: vec![],
            types: fb.types,
            body: Block {
                insts: fb.blocks.pop().unwrap_or_default(),
                term: Term::Return(vec![]),
            },
        };
        id
    }

    /// Emits a run-time check that symbolic value `x` equals the datum.
    fn check_datum(&mut self, fb: &mut Fb, x: AvId, d: &ir::ConstDatum, err: &Term) {
        match (self.ops.dom.get(x).clone(), d) {
            (Av::Sym(v, SymKind::Real), ir::ConstDatum::Real(c)) => {
                let k = fb.emit1(Op::F64Const(*c), Ty::F64);
                let ok = fb.emit1(Op::FCmp(Cmp::Eq, Val(v), k), Ty::Bool);
                self.guard(fb, ok, err);
            }
            (Av::Sym(v, SymKind::Bool), ir::ConstDatum::Bool(c)) => {
                let ok = if *c {
                    Val(v)
                } else {
                    fb.emit1(Op::Not(Val(v)), Ty::Bool)
                };
                self.guard(fb, ok, err);
            }
            (Av::Pair(a, b), ir::ConstDatum::Pair(x, y)) => {
                self.check_datum(fb, a, x, err);
                self.check_datum(fb, b, y, err);
            }
            _ => {}
        }
    }

    /// Continues only if `ok`; otherwise the run-time error `err`.
    fn guard(&mut self, fb: &mut Fb, ok: Val, err: &Term) {
        fb.emit(
            Op::If {
                cond: ok,
                then_: Block {
                    insts: vec![],
                    term: Term::Yield(vec![]),
                },
                else_: Block {
                    insts: vec![],
                    term: err.clone(),
                },
            },
            &[],
        );
    }

    fn lower_app(
        &mut self,
        fb: &mut Fb,
        b: &ir::Binding,
        info: &BindInfo,
        f: AvId,
        arg: AvId,
        tail: bool,
    ) -> Flow {
        match info.plan.clone() {
            Plan::Call(s) => self.call_spec(fb, s, f, arg, tail),
            Plan::If { then_, else_ } => {
                let (c, t, e) = match self.ops.dom.get(arg).clone() {
                    Av::Pair(c, te) => match self.ops.dom.get(te).clone() {
                        Av::Pair(t, e) => (c, t, e),
                        _ => {
                            return Flow::Done(Term::Error(
                                self.string("error: internal error: if"),
                            ))
                        }
                    },
                    _ => return Flow::Done(Term::Error(self.string("error: internal error: if"))),
                };
                let nil = self.ops.dom.nil();
                match (then_, else_) {
                    (Some(s), None) => self.call_spec(fb, s, t, nil, tail),
                    (None, Some(s)) => self.call_spec(fb, s, e, nil, tail),
                    (Some(st), Some(se)) => {
                        let cond = match self.ops.dom.get(c) {
                            Av::Sym(v, SymKind::Bool) => Val(*v),
                            _ => {
                                return Flow::Done(Term::Error(
                                    self.string("error: internal error: if condition"),
                                ))
                            }
                        };
                        let joined = info.av;
                        let tys = layout_of(&self.ops.dom, joined);
                        let mut arms = Vec::new();
                        for (s, th) in [(st, t), (se, e)] {
                            fb.blocks.push(Vec::new());
                            let term = match self.call_spec(
                                fb,
                                s,
                                th,
                                nil,
                                tail && fb.result == Some(joined),
                            ) {
                                Flow::Done(t) => t,
                                Flow::Value(r) => {
                                    let mut out = Vec::new();
                                    self.coerce(fb, r, joined, &mut out);
                                    Term::Yield(out)
                                }
                            };
                            let insts = fb.blocks.pop().unwrap_or_default();
                            arms.push(Block { insts, term });
                        }
                        let else_b = arms.pop().unwrap_or(Block {
                            insts: vec![],
                            term: Term::Yield(vec![]),
                        });
                        let then_b = arms.pop().unwrap_or(Block {
                            insts: vec![],
                            term: Term::Yield(vec![]),
                        });
                        let results = fb.emit(
                            Op::If {
                                cond,
                                then_: then_b,
                                else_: else_b,
                            },
                            &tys,
                        );
                        let mut it = results.into_iter();
                        Flow::Value(self.symbolize(fb, joined, &mut it))
                    }
                    (None, None) => Flow::Done(Term::Error(
                        self.string("error: internal error: unreachable code"),
                    )),
                }
            }
            Plan::Prim(p) => self.lower_prim(fb, b, info, p, arg),
            _ => Flow::Done(Term::Error(
                self.string("error: internal error: application"),
            )),
        }
    }

    /// A call of specialisation `s` with closure `f` and argument `arg`
    /// (symbolic), as a tail call when possible.
    fn call_spec(&mut self, fb: &mut Fb, s: SpecId, f: AvId, arg: AvId, tail: bool) -> Flow {
        let spec = self.specs[s.0 as usize].clone();
        let mut args = Vec::new();
        if let Av::Closure(_, env) = self.ops.dom.get(f).clone() {
            for (x, t) in env.iter().zip(&spec.env) {
                self.coerce(fb, *x, *t, &mut args);
            }
        }
        self.coerce(fb, arg, spec.arg, &mut args);
        let callee = FuncId(s.0);
        if tail && fb.result == Some(spec.result) {
            return Flow::Done(Term::TailCall(callee, args));
        }
        let tys = layout_of(&self.ops.dom, spec.result);
        // A call from the user's code is where errors without a position
        // of their own are reported while it runs.
        let op = match fb.site.filter(|s| s.file.0 != 0) {
            Some(s) => {
                let at = self.map.locate(s);
                Op::CallAt(callee, args, self.string(&at))
            }
            None => Op::Call(callee, args),
        };
        let results = fb.emit(op, &tys);
        if spec.result == self.ops.dom.bottom() {
            return Flow::Done(Term::Error(
                self.string("error: internal error: a call that never returns returned"),
            ));
        }
        let mut it = results.into_iter();
        Flow::Value(self.symbolize(fb, spec.result, &mut it))
    }

    /// A real operand: its FIR value, materialising a constant.
    fn real(&mut self, fb: &mut Fb, x: AvId) -> Option<Val> {
        match self.ops.dom.get(x) {
            Av::Sym(v, SymKind::Real) => Some(Val(*v)),
            Av::Real(Some(c)) => {
                let c = f64::from_bits(*c);
                Some(fb.emit1(Op::F64Const(c), Ty::F64))
            }
            _ => None,
        }
    }

    fn sym(&mut self, v: Val, k: SymKind) -> AvId {
        self.ops.dom.intern(Av::Sym(v.0, k))
    }

    fn lower_prim(
        &mut self,
        fb: &mut Fb,
        b: &ir::Binding,
        info: &BindInfo,
        p: Prim,
        arg: AvId,
    ) -> Flow {
        // Whatever the analysis already knows needs no code.
        if self.ops.dom.is_known(info.av)
            && !matches!(p, Prim::Write | Prim::WriteReal | Prim::ReadReal)
        {
            return Flow::Value(info.av);
        }
        let pair = match self.ops.dom.get(arg) {
            Av::Pair(a, b) => Some((*a, *b)),
            _ => None,
        };
        match p.kind() {
            PrimKind::Binary | PrimKind::Compare => {
                let Some((a, c)) = pair else {
                    return Flow::Value(info.av);
                };
                let (Some(x), Some(y)) = (self.real(fb, a), self.real(fb, c)) else {
                    return Flow::Value(info.av);
                };
                let (op, kind) = match p {
                    Prim::Add => (Op::FBin(FBin::Add, x, y), SymKind::Real),
                    Prim::Sub => (Op::FBin(FBin::Sub, x, y), SymKind::Real),
                    Prim::Mul => (Op::FBin(FBin::Mul, x, y), SymKind::Real),
                    Prim::Div => (Op::FBin(FBin::Div, x, y), SymKind::Real),
                    Prim::Atan => (Op::FBin(FBin::Atan2, x, y), SymKind::Real),
                    Prim::Eq => (Op::FCmp(Cmp::Eq, x, y), SymKind::Bool),
                    Prim::Lt => (Op::FCmp(Cmp::Lt, x, y), SymKind::Bool),
                    Prim::Gt => (Op::FCmp(Cmp::Gt, x, y), SymKind::Bool),
                    Prim::Le => (Op::FCmp(Cmp::Le, x, y), SymKind::Bool),
                    _ => (Op::FCmp(Cmp::Ge, x, y), SymKind::Bool),
                };
                let t = if kind == SymKind::Real {
                    Ty::F64
                } else {
                    Ty::Bool
                };
                let r = fb.emit1(op, t);
                Flow::Value(self.sym(r, kind))
            }
            PrimKind::Unary => {
                let Some(x) = self.real(fb, arg) else {
                    return Flow::Value(info.av);
                };
                let op = match p {
                    Prim::Sqrt => FUn::Sqrt,
                    Prim::Exp => FUn::Exp,
                    Prim::Log => FUn::Log,
                    Prim::Sin => FUn::Sin,
                    _ => FUn::Cos,
                };
                let r = fb.emit1(Op::FUn(op, x), Ty::F64);
                Flow::Value(self.sym(r, SymKind::Real))
            }
            PrimKind::Predicate => {
                let Some(x) = self.real(fb, arg) else {
                    return Flow::Value(info.av);
                };
                let zero = fb.emit1(Op::F64Const(0.0), Ty::F64);
                let cmp = match p {
                    Prim::IsZero => Cmp::Eq,
                    Prim::IsPositive => Cmp::Gt,
                    _ => Cmp::Lt,
                };
                let r = fb.emit1(Op::FCmp(cmp, x, zero), Ty::Bool);
                Flow::Value(self.sym(r, SymKind::Bool))
            }
            PrimKind::Control => match p {
                Prim::Real => match self.real(fb, arg) {
                    Some(x) => Flow::Value(self.sym(x, SymKind::Real)),
                    None => Flow::Value(info.av),
                },
                Prim::Write | Prim::WriteReal => {
                    self.print_value(fb, arg);
                    self.print_str(fb, "\n");
                    Flow::Value(arg)
                }
                Prim::ReadReal => {
                    let text = self.error_text(b.span, "`read-real` reached the end of input");
                    let msg = self.string(&text);
                    let r = fb.emit1(Op::ReadReal(msg), Ty::F64);
                    Flow::Value(self.sym(r, SymKind::Real))
                }
                _ => Flow::Done(Term::Error(
                    self.string("error: internal error: control primitive"),
                )),
            },
            PrimKind::Ad => {
                let r = match p {
                    Prim::Zero => Ok(self.zero(fb, arg)),
                    Prim::Plus => match pair {
                        Some((a, c)) => Ok(self.plus(fb, a, c)),
                        None => Err("`plus` expects two arguments".to_string()),
                    },
                    Prim::Perturb => Ok(self.ops.tag_wrap(ir::Tag::Perturb, arg)),
                    Prim::Sensitize => Ok(self.ops.tag_wrap(ir::Tag::Sensitize, arg)),
                    Prim::StarJ => Ok(self.ops.tag_wrap(ir::Tag::Reverse, arg)),
                    Prim::Unperturb => self.ops.tag_unwrap(ir::Tag::Perturb, arg),
                    Prim::Unsensitize => self.ops.tag_unwrap(ir::Tag::Sensitize, arg),
                    Prim::StarJInverse => self.ops.tag_unwrap(ir::Tag::Reverse, arg),
                    Prim::Bundle => match pair {
                        Some((a, c)) => self.ops.bundle(a, c),
                        None => Err("`bundle` expects two arguments".to_string()),
                    },
                    Prim::Primal => self.ops.forward_half(arg, true),
                    _ => self.ops.forward_half(arg, false),
                };
                match self.resolve(fb, r) {
                    Ok(av) => Flow::Value(av),
                    Err(m) => Flow::Done(self.error_term(b.span, &m)),
                }
            }
        }
    }

    /// Emits the calls for the maps of unions that an operation on
    /// symbolic values met ([`flow::Ops::map_union`]), and puts their
    /// results in its value.
    fn resolve(&mut self, fb: &mut Fb, r: Result<AvId, String>) -> Result<AvId, String> {
        let pending = self.ops.take_pending();
        if pending.is_empty() {
            return r;
        }
        let mut subst: HashMap<u32, u32> = HashMap::new();
        for p in pending {
            let args: Vec<Val> = p
                .args
                .iter()
                .map(|a| Val(subst.get(a).copied().unwrap_or(*a)))
                .collect();
            let (f, _) = self.union_fn(UnionFn::Map(p.op, p.unions.0, p.unions.1, p.result_union));
            let v = fb.emit1(Op::Call(f, args), Ty::Ptr);
            subst.insert(p.result, v.0);
        }
        r.map(|av| self.substitute(av, &subst))
    }

    /// `v` with its symbolic scalars renumbered.
    fn substitute(&mut self, v: AvId, subst: &HashMap<u32, u32>) -> AvId {
        let dom = &mut self.ops.dom;
        match dom.get(v).clone() {
            Av::Sym(n, k) => match subst.get(&n) {
                Some(m) => dom.intern(Av::Sym(*m, k)),
                None => v,
            },
            Av::Pair(a, b) => {
                let (a, b) = (self.substitute(a, subst), self.substitute(b, subst));
                self.ops.dom.pair(a, b)
            }
            Av::Bundle(a, b) => {
                let (a, b) = (self.substitute(a, subst), self.substitute(b, subst));
                self.ops.dom.bundle(a, b)
            }
            Av::Wrap(t, x) => {
                let x = self.substitute(x, subst);
                self.ops.dom.wrap(t, x)
            }
            Av::Closure(l, env) => {
                let env = env.iter().map(|x| self.substitute(*x, subst)).collect();
                self.ops.dom.closure(l, env)
            }
            _ => v,
        }
    }

    /// `zero` of a symbolic value: no code, but for the unions inside,
    /// whose zeros are made at run time by a function per union.
    fn zero(&mut self, fb: &mut Fb, v: AvId) -> AvId {
        if !self.ops.dom.has_union(v) {
            return self.ops.zero(v);
        }
        match self.ops.dom.get(v).clone() {
            Av::Sym(p, SymKind::Union(u)) => {
                let (f, z) = self.union_fn(UnionFn::Zero(u));
                let r = fb.emit1(Op::Call(f, vec![Val(p)]), Ty::Ptr);
                self.sym(r, SymKind::Union(z))
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
    fn union_fn(&mut self, what: UnionFn) -> (FuncId, UnionId) {
        let dom = &self.ops.dom;
        let what = match what {
            UnionFn::Zero(u) => UnionFn::Zero(dom.find(u)),
            UnionFn::Plus(u, w) => UnionFn::Plus(dom.find(u), dom.find(w)),
            UnionFn::Map(op, u, w, r) => {
                UnionFn::Map(op, dom.find(u), w.map(|w| dom.find(w)), dom.find(r))
            }
        };
        let result = match what {
            UnionFn::Zero(u) => dom.union_at(flow::Site::Zero(u)),
            UnionFn::Plus(u, w) => dom.union_at(flow::Site::Plus(u, w)),
            UnionFn::Map(_, _, _, r) => Some(r),
        }
        .unwrap_or(UnionId(0));
        if let Some(f) = self.union_fns.get(&what) {
            return (*f, result);
        }
        let id = FuncId(self.module.funcs.len() as u32);
        let (name, params) = match what {
            UnionFn::Zero(u) => (format!("zero_u{}", u.0), vec![Ty::Ptr]),
            UnionFn::Plus(u, w) => (format!("plus_u{}_u{}", u.0, w.0), vec![Ty::Ptr, Ty::Ptr]),
            UnionFn::Map(op, u, None, _) => (format!("{}_u{}", op_name(op), u.0), vec![Ty::Ptr]),
            UnionFn::Map(op, u, Some(w), _) => (
                format!("{}_u{}_u{}", op_name(op), u.0, w.0),
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
        let mut fb = Fb {
            types: params.clone(),
            blocks: vec![Vec::new()],
            result: None,
            site: None,
        };
        let target = self.ops.dom.union_av(result);
        let results = match what {
            UnionFn::Zero(u) => {
                self.switch(&mut fb, Val(0), u, &[Ty::Ptr], &mut |this, fb, _, m| {
                    let z = this.zero(fb, m);
                    let mut out = Vec::new();
                    this.coerce(fb, z, target, &mut out);
                    Term::Yield(out)
                })
            }
            UnionFn::Map(op, u, None, _) => {
                self.switch(&mut fb, Val(0), u, &[Ty::Ptr], &mut |this, fb, _, m| {
                    let r = this.ops.union_op(op, m, None);
                    this.map_arm(fb, r, target)
                })
            }
            UnionFn::Map(op, u, Some(w), _) => {
                self.switch(&mut fb, Val(0), u, &[Ty::Ptr], &mut |this, fb, _, mu| {
                    let arm = this.switch(fb, Val(1), w, &[Ty::Ptr], &mut |this, fb, _, mw| {
                        let r = this.ops.union_op(op, mu, Some(mw));
                        this.map_arm(fb, r, target)
                    });
                    Term::Yield(arm)
                })
            }
            UnionFn::Plus(u, w) => {
                self.switch(&mut fb, Val(0), u, &[Ty::Ptr], &mut |this, fb, _, mu| {
                    let arm = this.switch(fb, Val(1), w, &[Ty::Ptr], &mut |this, fb, _, mw| {
                        if this.ops.dom.kind(mu) != this.ops.dom.kind(mw) {
                            return this.plus_mismatch(mu, mw);
                        }
                        let r = this.plus(fb, mu, mw);
                        let mut out = Vec::new();
                        this.coerce(fb, r, target, &mut out);
                        Term::Yield(out)
                    });
                    Term::Yield(arm)
                })
            }
        };
        self.module.funcs[id.0 as usize] = fir::Func {
            name,
            params,
            returns: vec![Ty::Ptr],
            types: fb.types,
            body: Block {
                insts: fb.blocks.pop().unwrap_or_default(),
                term: Term::Return(results),
            },
        };
        (id, result)
    }

    /// The end of an arm of a map function: the member's result boxed in
    /// the result union, or the operation's error.
    fn map_arm(&mut self, fb: &mut Fb, r: Result<AvId, String>, target: AvId) -> Term {
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

    /// The run-time error of `plus` on values of different shapes.
    fn plus_mismatch(&mut self, a: AvId, b: AvId) -> Term {
        let msg = format!(
            "`plus` expects two values of the same shape, found {} and {}",
            self.ops.describe(a),
            self.ops.describe(b)
        );
        self.error_term(None, &msg)
    }

    /// `plus` of two symbolic values of the same shape.
    fn plus(&mut self, fb: &mut Fb, a: AvId, b: AvId) -> AvId {
        let dom = &self.ops.dom;
        match (dom.as_union_id(a), dom.as_union_id(b)) {
            (Some(u), Some(w)) => {
                let (Av::Sym(pa, _), Av::Sym(pb, _)) = (dom.get(a).clone(), dom.get(b).clone())
                else {
                    return a;
                };
                let (f, p) = self.union_fn(UnionFn::Plus(u, w));
                let r = fb.emit1(Op::Call(f, vec![Val(pa), Val(pb)]), Ty::Ptr);
                return self.sym(r, SymKind::Union(p));
            }
            (Some(u), None) => return self.plus_member(fb, u, a, b, true),
            (None, Some(w)) => return self.plus_member(fb, w, b, a, false),
            (None, None) => {}
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
            (Av::Real(_) | Av::Sym(_, SymKind::Real), Av::Real(_) | Av::Sym(_, SymKind::Real)) => {
                match (self.real(fb, a), self.real(fb, b)) {
                    (Some(x), Some(y)) => {
                        let r = fb.emit1(Op::FBin(FBin::PlusAdd, x, y), Ty::F64);
                        self.sym(r, SymKind::Real)
                    }
                    _ => a,
                }
            }
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
    /// shape: the member of `x`'s kind is summed, any other is an error.
    /// `union_first` says which operand the union was.
    fn plus_member(
        &mut self,
        fb: &mut Fb,
        u: UnionId,
        uv: AvId,
        x: AvId,
        union_first: bool,
    ) -> AvId {
        let Av::Sym(p, _) = self.ops.dom.get(uv).clone() else {
            return x;
        };
        let Some(i) = self.ops.dom.member_index(u, x) else {
            return x;
        };
        let member = self.ops.dom.members(u)[i];
        let (a, b) = if union_first {
            (member, x)
        } else {
            (x, member)
        };
        let wx = self.ops.dom.widen(b);
        let wa = self.ops.dom.widen(a);
        let Ok(sum) = self.ops.plus(wa, wx) else {
            return x;
        };
        let target = self.ops.dom.widen(sum);
        let tys = layout_of(&self.ops.dom, target);
        let results = self.switch(fb, Val(p), u, &tys, &mut |this, fb, m, msym| {
            if m != member {
                return if union_first {
                    this.plus_mismatch(msym, x)
                } else {
                    this.plus_mismatch(x, msym)
                };
            }
            let r = if union_first {
                this.plus(fb, msym, x)
            } else {
                this.plus(fb, x, msym)
            };
            let mut out = Vec::new();
            this.coerce(fb, r, target, &mut out);
            Term::Yield(out)
        });
        let mut it = results.into_iter();
        self.symbolize(fb, target, &mut it)
    }

    // ---- printing (VLAD.md section 8; mirrors interp::value) -------------

    fn print_str(&mut self, fb: &mut Fb, s: &str) {
        let id = self.string(s);
        fb.emit(Op::PrintStr(id), &[]);
    }

    fn pair_view(&mut self, av: AvId) -> Option<(AvId, AvId)> {
        match self.ops.dom.get(av).clone() {
            Av::Pair(a, b) => Some((a, b)),
            Av::Wrap(t, x) => {
                let (a, b) = self.pair_view(x)?;
                Some((self.ops.dom.wrap(t, a), self.ops.dom.wrap(t, b)))
            }
            Av::Bundle(p, t) => {
                let (pa, pb) = self.pair_view(p)?;
                let Av::Wrap(ir::Tag::Perturb, ti) = self.ops.dom.get(t).clone() else {
                    return None;
                };
                let (ta, tb) = self.pair_view(ti)?;
                let (wa, wb) = (
                    self.ops.dom.wrap(ir::Tag::Perturb, ta),
                    self.ops.dom.wrap(ir::Tag::Perturb, tb),
                );
                Some((self.ops.dom.bundle(pa, wa), self.ops.dom.bundle(pb, wb)))
            }
            _ => None,
        }
    }

    /// Emits code printing a value; constant text is merged.
    fn print_value(&mut self, fb: &mut Fb, av: AvId) {
        let mut pieces = Vec::new();
        self.pieces(av, &mut pieces);
        self.emit_pieces(fb, pieces);
    }

    fn emit_pieces(&mut self, fb: &mut Fb, pieces: Vec<Piece>) {
        let mut text = String::new();
        for p in pieces {
            match p {
                Piece::Text(s) => text.push_str(&s),
                Piece::Call(f, v) => {
                    if !text.is_empty() {
                        self.print_str(fb, &std::mem::take(&mut text));
                    }
                    fb.emit(Op::Call(f, vec![v]), &[]);
                }
                Piece::Real(v) | Piece::Bool(v) => {
                    if !text.is_empty() {
                        self.print_str(fb, &std::mem::take(&mut text));
                    }
                    let is_real = matches!(p, Piece::Real(_));
                    fb.emit(
                        if is_real {
                            Op::PrintReal(v)
                        } else {
                            Op::PrintBool(v)
                        },
                        &[],
                    );
                }
            }
        }
        if !text.is_empty() {
            self.print_str(fb, &text);
        }
    }

    fn pieces(&mut self, av: AvId, out: &mut Vec<Piece>) {
        if let Some((a, b)) = self.pair_view(av) {
            out.push(Piece::Text("(".into()));
            self.pieces(a, out);
            self.tail_pieces(b, out);
            return;
        }
        match self.ops.dom.get(av).clone() {
            Av::Sym(v, SymKind::Union(u)) => {
                let f = self.printer(u, false);
                out.push(Piece::Call(f, Val(v)));
            }
            Av::Real(Some(x)) => {
                out.push(Piece::Text(syntax::number::format_real(f64::from_bits(x))))
            }
            Av::Sym(v, SymKind::Real) => out.push(Piece::Real(Val(v))),
            Av::Sym(v, SymKind::Bool) => out.push(Piece::Bool(Val(v))),
            Av::Bool(Some(b)) => out.push(Piece::Text(if b { "#t" } else { "#f" }.into())),
            Av::Nil => out.push(Piece::Text("()".into())),
            Av::Prim(_) | Av::Closure(..) => out.push(Piece::Text("#<procedure>".into())),
            Av::Bundle(p, t) => {
                out.push(Piece::Text("(forward ".into()));
                self.pieces(p, out);
                out.push(Piece::Text(" ".into()));
                self.pieces(t, out);
                out.push(Piece::Text(")".into()));
            }
            Av::Wrap(t, x) => {
                out.push(Piece::Text(format!("({} ", t.name())));
                self.pieces(x, out);
                out.push(Piece::Text(")".into()));
            }
            Av::Real(None) | Av::Bool(None) | Av::Bottom | Av::Pair(..) | Av::Union(_) => {}
        }
    }

    /// The rest of a list after an element: ` x y)`, `)`, or ` . x)`.
    fn tail_pieces(&mut self, mut rest: AvId, out: &mut Vec<Piece>) {
        loop {
            if let Some((a, b)) = self.pair_view(rest) {
                out.push(Piece::Text(" ".into()));
                self.pieces(a, out);
                rest = b;
                continue;
            }
            match self.ops.dom.get(rest).clone() {
                Av::Nil => {}
                Av::Sym(v, SymKind::Union(u)) => {
                    let f = self.printer(u, true);
                    out.push(Piece::Call(f, Val(v)));
                    return;
                }
                _ => {
                    out.push(Piece::Text(" . ".into()));
                    self.pieces(rest, out);
                }
            }
            break;
        }
        out.push(Piece::Text(")".into()));
    }
}

#[derive(Clone)]
enum Piece {
    Text(String),
    /// A call of a printer function on a union cell.
    Call(FuncId, Val),
    Real(Val),
    Bool(Val),
}
