//! The flow analysis: an abstract interpreter over the core IR that
//! specialises every procedure on the abstract values it meets.
//!
//! A specialisation ([`Spec`]) is a lambda applied to an abstract closure
//! environment and an abstract argument. Applying an abstract closure looks
//! up (or creates) the specialisation of its key and uses its current
//! result; the whole program is re-analysed from the top until no result
//! changes (results only grow, by [`Domain::join`]). AD operations act on
//! abstract values exactly as the interpreter's act on values, calling the
//! same transformations of crate `ad`: that is where the transformation of
//! closures moves from run time to compile time.
//!
//! Termination: a recursive call of a lambda already on the analysis stack
//! [`UNROLL`] times forgets its constants ([`Domain::widen`]), so a loop
//! counter unrolls a few times at most; a recursive lambda whose arguments
//! keep changing shape (a list built by a loop, the tape of reverse mode
//! through a loop) gets, after [`GROW`] specialisations, arguments joined
//! into unions of shapes ([`Site::Arg`]), which are bounded. Conditionals
//! whose arms return different shapes return a union. A binding whose
//! operand is a union is analysed once per member ([`Plan::Switch`]): code
//! dispatches on the member's tag at run time. Abstract values deeper than
//! [`MAX_DEPTH`] and more than [`MAX_SPECS`] specialisations stop the
//! analysis with an error naming the expression. The AD operations map
//! over unions member by member (`zero`, `plus`, [`Ops::map_union`]): the
//! result is a union of its own, and lowering makes a function per map
//! that loops over a recursive union at run time. An operation that needs
//! a shape and meets a union holding itself more than [`MAX_SPLITS`]
//! times stops the analysis with an error naming the expression.
//!
//! Type errors the analysis finds on a path are not compile-time errors
//! (VLAD.md section 7): they become [`Plan::Error`], a run-time error in the
//! compiled program with the interpreter's message.

use crate::domain::{Av, AvId, Domain, Site, SymKind, UnionId, UnionOp};
use ad::{AdMemo, Untransformed};
use ir::{ConstDatum, ConstId, LambdaId, Prim, PrimKind, Program, Rhs, Stmt, Tag, Var};
use std::collections::HashMap;
use syntax::{Diagnostic, Span};

/// How many specialisations a recursive lambda may get that differ only in
/// their constants: fixed-size recursions (unit vectors, `map-n` over a
/// known length) unroll fully below this; loops over run-time data widen.
/// The budget is per widened key, so that two uses of `map-n` with
/// different procedures do not share one. 64 rather than 32: in
/// `examples/11-saddle.vlad` a 5-step loop nested in a 10-step one, under
/// reverse mode, needs more than 32 and would otherwise keep a tape of
/// run-time length.
pub const UNROLL: u32 = 64;
/// Deepest abstract value accepted.
pub const MAX_DEPTH: u32 = 200;
/// Most specialisations accepted.
pub const MAX_SPECS: usize = 50_000;
/// Most passes over the program before the analysis gives up.
pub const MAX_PASSES: u32 = 1000;
/// How many times a lambda's recursive calls may pass arguments deeper
/// than any it had before, each time making a new specialisation, before
/// their arguments are joined into unions of shapes: a list of known
/// length up to about this is built as a fixed-shape value.
pub const GROW: u32 = 8;
/// How deep inside an operand a union that an operation met is looked for
/// to split on.
const SPLIT_DEPTH: usize = 64;
/// How many splits may nest in one binding: a union that holds itself
/// (a list of run-time length) met by a structural operation would
/// otherwise split forever.
const MAX_SPLITS: u32 = 8;

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct SpecId(pub u32);

/// What the code for one binding does, decided by the analysis.
#[derive(Clone, Debug, PartialEq)]
pub enum Plan {
    /// Computed from the operands' abstract values (pairs, closures, tag
    /// operations, constants, copies).
    Plain,
    /// A call of a known specialisation.
    Call(SpecId),
    /// A primitive on the argument's representation.
    Prim(Prim),
    /// `if-procedure`: the specialisations of the thunks that may run.
    If {
        then_: Option<SpecId>,
        else_: Option<SpecId>,
    },
    /// A constant pattern that must be checked at run time.
    Check,
    /// Always fails at run time with this message.
    Error(String),
    /// Never reached: an earlier binding never returns.
    Dead,
    /// The operand `var` holds, at `path` (the child taken at each step
    /// into pairs, tags, bundles and closure environments), a union: the binding is analysed once per
    /// member, with the operand narrowed to that member, and the code
    /// dispatches on the member's tag. `cases` follow the union's member
    /// order; the binding's value is the join of theirs.
    Switch {
        var: Var,
        path: Vec<u32>,
        cases: Vec<(AvId, BindInfo)>,
    },
}

#[derive(Clone, Debug, PartialEq)]
pub struct BindInfo {
    pub av: AvId,
    pub plan: Plan,
}

/// One specialised procedure.
#[derive(Clone, Debug)]
pub struct Spec {
    pub lambda: LambdaId,
    pub env: Vec<AvId>,
    pub arg: AvId,
    pub result: AvId,
    /// One entry per binding of the lambda's body (after the fixpoint).
    pub binds: Vec<BindInfo>,
    visited: u32,
    /// The context of the unions made in its body (see [`Site`]).
    ctx: u32,
}

/// The analysed program.
pub struct Analysis {
    pub ops: Ops,
    pub specs: Vec<Spec>,
    /// One entry per `Stmt::Bind` of `prog.main`, in order.
    pub main: Vec<BindInfo>,
    /// How many times the whole program was analysed.
    pub iterations: u32,
}

impl Analysis {
    pub fn spec(&self, s: SpecId) -> &Spec {
        &self.specs[s.0 as usize]
    }

    /// Is the specialisation used by the analysed program? One that only
    /// earlier passes reached (before the values it saw grew) has stale
    /// results and is never called.
    pub fn is_live(&self, s: SpecId) -> bool {
        self.specs[s.0 as usize].visited == self.iterations
    }
}

/// Analyses a whole program.
pub fn analyze(prog: Program) -> Result<Analysis, Diagnostic> {
    let mut a = Analyzer {
        ops: Ops {
            prog,
            memo: AdMemo::default(),
            dom: Domain::new(),
            zero_memo: HashMap::new(),
            consts: HashMap::new(),
            union_hit: std::cell::Cell::new(None),
            active: std::collections::HashSet::new(),
            active_maps: std::collections::HashSet::new(),
            map_origins: HashMap::new(),
            symbolic: false,
            pending: Vec::new(),
            next_virtual: 1 << 30,
        },
        specs: Vec::new(),
        index: HashMap::new(),
        budget: HashMap::new(),
        grown: HashMap::new(),
        splits: 0,
        contexts: HashMap::new(),
        ctx: u32::MAX,
        summary: HashMap::new(),
        stack: Vec::new(),
        iteration: 0,
        changed: false,
        main: Vec::new(),
    };
    loop {
        a.iteration += 1;
        a.changed = false;
        let generation = a.dom.generation;
        a.main = a.analyze_main()?;
        if std::env::var_os("VLAD_FLOW_TRACE").is_some() {
            eprintln!(
                "pass {}: {} specialisations, {} unions, generation {} -> {}",
                a.iteration,
                a.specs.len(),
                a.dom.union_ids().len(),
                generation,
                a.dom.generation
            );
        }
        if !a.changed && a.dom.generation == generation {
            break;
        }
        if a.iteration >= MAX_PASSES {
            return Err(Diagnostic::new(
                None,
                format!(
                    "the flow analysis did not converge in {MAX_PASSES} passes \
                     (the program's values keep changing shape)"
                ),
            ));
        }
    }
    Ok(Analysis {
        ops: a.ops,
        specs: a.specs,
        main: a.main,
        iterations: a.iteration,
    })
}

type SpecKey = (LambdaId, Box<[AvId]>, AvId);

/// The program, its AD memo tables and the abstract domain, with the
/// structural operations on abstract values. Lowering keeps using these
/// operations, on abstract values whose unknown leaves are symbolic
/// ([`Av::Sym`]), to find where each scalar of a result comes from: so the
/// meaning of `bundle`, `car` of a forward pair and the rest is written once
/// for compile time (here) and once for run time (crate `interp`).
pub struct Ops {
    pub prog: Program,
    pub memo: AdMemo,
    pub dom: Domain,
    zero_memo: HashMap<AvId, AvId>,
    consts: HashMap<ConstId, AvId>,
    /// Set when an operation met a union where it needs a fixed shape
    /// (names the operation): the analysis then stops with a limit error.
    union_hit: std::cell::Cell<Option<(&'static str, UnionId)>>,
    /// `zero` (`None`) and `plus` (`Some`, the other union) of unions
    /// being computed: a union that holds itself is reached again.
    active: std::collections::HashSet<(UnionId, Option<UnionId>)>,
    active_maps: std::collections::HashSet<(UnionOp, UnionId, Option<UnionId>)>,
    /// How each union made by [`Ops::map_union`] was made, so that an
    /// inverse operation gives back the union it came from.
    map_origins: HashMap<UnionId, (UnionOp, UnionId, Option<UnionId>)>,
    /// Lowering only: maps of unions met in symbolic values, which
    /// lowering turns into calls ([`Ops::take_pending`]).
    pub symbolic: bool,
    pending: Vec<PendingMap>,
    next_virtual: u32,
}

/// A map of a union that lowering must call at run time: the operation,
/// the operands' scalar numbers, and the number standing for the result.
#[derive(Clone, Debug)]
pub struct PendingMap {
    pub op: UnionOp,
    pub args: Vec<u32>,
    pub unions: (UnionId, Option<UnionId>),
    pub result: u32,
    pub result_union: UnionId,
}

struct Analyzer {
    ops: Ops,
    specs: Vec<Spec>,
    index: HashMap<SpecKey, SpecId>,
    /// Specialisations created per widened key (see [`UNROLL`]).
    budget: HashMap<SpecKey, u32>,
    /// How often a lambda's recursive calls made a specialisation deeper
    /// than all before, and that depth (see [`GROW`]).
    grown: HashMap<LambdaId, (u32, u32)>,
    /// Splits under way in the binding being analysed.
    splits: u32,
    /// Contexts of union sites, by specialisation key without unions.
    contexts: HashMap<SpecKey, u32>,
    /// The context being analysed (`u32::MAX` for the top level).
    ctx: u32,
    /// The joined environment and argument of a lambda's recursive calls,
    /// once they are joined.
    summary: HashMap<LambdaId, (Box<[AvId]>, AvId)>,
    /// Lambdas being analysed, innermost last.
    stack: Vec<LambdaId>,
    iteration: u32,
    changed: bool,
    main: Vec<BindInfo>,
}

impl std::ops::Deref for Analyzer {
    type Target = Ops;
    fn deref(&self) -> &Ops {
        &self.ops
    }
}

impl std::ops::DerefMut for Analyzer {
    fn deref_mut(&mut self) -> &mut Ops {
        &mut self.ops
    }
}

/// A failure of the analysis itself (not of the analysed program).
struct Limit {
    message: String,
    /// The innermost binding the analysis was at.
    span: Option<Span>,
}

type R<T> = Result<T, Limit>;
/// An operation on abstract values that fails the way the program would at
/// run time.
type Op<T> = Result<T, String>;

fn limit<T>(message: impl Into<String>) -> R<T> {
    Err(Limit {
        message: message.into(),
        span: None,
    })
}

impl Analyzer {
    fn analyze_main(&mut self) -> Result<Vec<BindInfo>, Diagnostic> {
        let stmts = self.prog.main.clone();
        let mut vals: HashMap<Var, AvId> = HashMap::new();
        let mut out = Vec::new();
        let mut dead = false;
        for st in &stmts {
            if let Stmt::Bind(b) = st {
                if dead {
                    out.push(BindInfo {
                        av: self.dom.bottom(),
                        plan: Plan::Dead,
                    });
                    continue;
                }
                let info = self
                    .eval_rhs(b.var, &b.rhs, &vals, &[], None)
                    .map_err(|e| Diagnostic::new(e.span.or(b.span), e.message))?;
                if info.av == self.dom.bottom() {
                    dead = true;
                }
                vals.insert(b.var, info.av);
                out.push(info);
            }
        }
        Ok(out)
    }

    /// The specialisation of `lambda` on `env` and `arg`, analysed (again)
    /// if this iteration has not done so yet.
    fn call(&mut self, lambda: LambdaId, env: &[AvId], arg: AvId) -> R<(AvId, SpecId)> {
        let recursive = self.stack.contains(&lambda);
        let wenv: Box<[AvId]> = env.iter().map(|x| self.dom.widen(*x)).collect();
        let warg = self.dom.widen(arg);
        let wkey: SpecKey = (lambda, wenv.clone(), warg);
        let (grown, deepest) = self.grown.get(&lambda).copied().unwrap_or((0, 0));
        let (env, arg): (Box<[AvId]>, AvId) = if recursive && grown >= GROW {
            self.summarise(lambda, wenv, warg)
        } else if recursive && self.budget.get(&wkey).copied().unwrap_or(0) >= UNROLL {
            (wenv, warg)
        } else {
            (env.into(), arg)
        };
        if self.dom.depth(arg) > MAX_DEPTH || env.iter().any(|x| self.dom.depth(*x) > MAX_DEPTH) {
            return limit(format!(
                "the analysis cannot bound the values passed to `{}`: they grow deeper than \
                 {MAX_DEPTH} levels",
                self.lambda_name(lambda)
            ));
        }
        let key: SpecKey = (lambda, env.clone(), arg);
        let id = match self.index.get(&key) {
            Some(id) => *id,
            None => {
                if self.specs.len() >= MAX_SPECS {
                    return limit(format!(
                        "the analysis needs more than {MAX_SPECS} specialisations (while specialising `{}`)",
                        self.lambda_name(lambda)
                    ));
                }
                let id = SpecId(self.specs.len() as u32);
                let skeleton: SpecKey = (
                    lambda,
                    env.iter().map(|x| self.dom.erase_unions(*x)).collect(),
                    self.dom.erase_unions(arg),
                );
                let n = self.contexts.len() as u32;
                let ctx = *self.contexts.entry(skeleton).or_insert(n);
                self.specs.push(Spec {
                    ctx,
                    lambda,
                    env: env.to_vec(),
                    arg,
                    result: self.dom.bottom(),
                    binds: Vec::new(),
                    visited: 0,
                });
                self.index.insert(key, id);
                *self.budget.entry(wkey).or_insert(0) += 1;
                let depth = env
                    .iter()
                    .map(|x| self.dom.depth(*x))
                    .chain([self.dom.depth(arg)])
                    .max()
                    .unwrap_or(0);
                if depth > deepest {
                    let g = grown + u32::from(recursive);
                    self.grown.insert(lambda, (g, depth));
                }
                self.changed = true;
                id
            }
        };
        let s = &self.specs[id.0 as usize];
        if s.visited == self.iteration {
            return Ok((s.result, id));
        }
        self.specs[id.0 as usize].visited = self.iteration;
        self.stack.push(lambda);
        let outer = std::mem::replace(&mut self.ctx, self.specs[id.0 as usize].ctx);
        let splits = std::mem::replace(&mut self.splits, 0);
        let r = self.analyze_body(lambda, &env, arg);
        self.ctx = outer;
        self.splits = splits;
        self.stack.pop();
        let (result, binds) = r?;
        let old = self.specs[id.0 as usize].result;
        let ctx = self.specs[id.0 as usize].ctx;
        let new = self.dom.join_at(Site::Result(ctx), old, result);
        if new != old {
            self.changed = true;
        }
        let s = &mut self.specs[id.0 as usize];
        s.result = new;
        s.binds = binds;
        Ok((new, id))
    }

    /// Joins a recursive call's (widened) environment and argument into the
    /// lambda's summary of its recursive calls, and returns the summary.
    fn summarise(&mut self, l: LambdaId, env: Box<[AvId]>, arg: AvId) -> (Box<[AvId]>, AvId) {
        let joined = match self.summary.get(&l).cloned() {
            None => (env, arg),
            Some((pe, pa)) if pe.len() == env.len() => {
                let e = pe
                    .iter()
                    .zip(env.iter())
                    .enumerate()
                    .map(|(i, (x, y))| self.dom.join_at(Site::Env(l, i as u32), *x, *y))
                    .collect();
                (e, self.dom.join_at(Site::Arg(l), pa, arg))
            }
            Some(_) => (env, arg),
        };
        self.summary.insert(l, joined.clone());
        joined
    }

    fn lambda_name(&self, l: LambdaId) -> String {
        self.prog.lambdas[l]
            .name
            .clone()
            .unwrap_or_else(|| format!("lambda {l}"))
    }

    fn analyze_body(&mut self, l: LambdaId, env: &[AvId], arg: AvId) -> R<(AvId, Vec<BindInfo>)> {
        let lam = self.prog.lambdas[l].clone();
        let mut vals: HashMap<Var, AvId> = HashMap::with_capacity(lam.body.len() + env.len() + 1);
        for (v, a) in lam.free.iter().zip(env) {
            vals.insert(*v, *a);
        }
        vals.insert(lam.param, arg);
        let mut binds = Vec::with_capacity(lam.body.len());
        let mut dead = false;
        for b in &lam.body {
            if dead {
                binds.push(BindInfo {
                    av: self.dom.bottom(),
                    plan: Plan::Dead,
                });
                continue;
            }
            let info = self
                .eval_rhs(b.var, &b.rhs, &vals, env, lam.group)
                .map_err(|mut e| {
                    if e.span.is_none() {
                        e.span = b.span;
                    }
                    e
                })?;
            if info.av == self.dom.bottom() {
                dead = true;
            }
            vals.insert(b.var, info.av);
            binds.push(info);
        }
        let result = if dead {
            self.dom.bottom()
        } else {
            vals.get(&lam.result).copied().unwrap_or(self.dom.bottom())
        };
        Ok((result, binds))
    }

    /// The abstract value and plan of binding `var = rhs`. An operation
    /// that needs the shape of a value and finds a union there (it records
    /// the union, [`Ops::hit`]) is analysed again once per member of that
    /// union, with the operand narrowed to the member ([`Plan::Switch`]).
    fn eval_rhs(
        &mut self,
        var: Var,
        rhs: &Rhs,
        vals: &HashMap<Var, AvId>,
        env: &[AvId],
        group: Option<ir::GroupId>,
    ) -> R<BindInfo> {
        self.ops.union_hit.set(None);
        let info = self.eval_rhs_plain(var, rhs, vals, env, group)?;
        let Some((op, u)) = self.ops.union_hit.take() else {
            return Ok(info);
        };
        let found = rhs_operands(rhs).into_iter().find_map(|x| {
            let mut path = Vec::new();
            let whole = vals.get(&x).copied()?;
            self.path_to(whole, u, &mut path, SPLIT_DEPTH)
                .then_some((x, path))
        });
        let Some((x, path)) = found else {
            return limit(format!(
                "not compiled yet: {op} of a value whose shape is known only at run time"
            ));
        };
        if self.splits >= MAX_SPLITS {
            let mut shapes = crate::print::union_text(&self.dom, &self.prog, u);
            shorten(&mut shapes, 300);
            return limit(format!(
                "not compiled yet: {op} of a value whose shape is known only at run time \
                 and holds itself (such as a list of run-time length): {shapes}"
            ));
        }
        let whole = vals.get(&x).copied().unwrap_or(AvId(0));
        let members = self.dom.members(u).to_vec();
        let mut narrowed = vals.clone();
        let mut av = self.dom.bottom();
        let mut cases = Vec::with_capacity(members.len());
        self.splits += 1;
        for m in members {
            let part = self.replace_at(whole, &path, m);
            narrowed.insert(x, part);
            let info = self.eval_rhs(var, rhs, &narrowed, env, group);
            let info = match info {
                Ok(i) => i,
                Err(e) => {
                    self.splits -= 1;
                    return Err(e);
                }
            };
            let site = Site::Switch(var, self.ctx);
            av = self.dom.join_at(site, av, info.av);
            cases.push((m, info));
        }
        self.splits -= 1;
        Ok(BindInfo {
            av,
            plan: Plan::Switch {
                var: x,
                path,
                cases,
            },
        })
    }

    /// Finds union `u` in `v`, within `depth` constructors (pairs, tags,
    /// bundles, closure environments); `path` gives the child taken at
    /// each step.
    fn path_to(&self, v: AvId, u: UnionId, path: &mut Vec<u32>, depth: usize) -> bool {
        if self.dom.as_union_id(v) == Some(u) {
            return true;
        }
        if depth == 0 {
            return false;
        }
        let children: Vec<AvId> = match self.dom.get(v) {
            Av::Pair(a, b) | Av::Bundle(a, b) => vec![*a, *b],
            Av::Wrap(_, x) => vec![*x],
            Av::Closure(_, env) => env.to_vec(),
            _ => return false,
        };
        for (i, c) in children.into_iter().enumerate() {
            path.push(i as u32);
            if self.path_to(c, u, path, depth - 1) {
                return true;
            }
            path.pop();
        }
        false
    }

    fn eval_rhs_plain(
        &mut self,
        var: Var,
        rhs: &Rhs,
        vals: &HashMap<Var, AvId>,
        env: &[AvId],
        group: Option<ir::GroupId>,
    ) -> R<BindInfo> {
        let v = |x: &Var| vals.get(x).copied().unwrap_or(AvId(0));
        let plain = |r: Op<AvId>, dom: &Domain| match r {
            Ok(av) => BindInfo {
                av,
                plan: Plan::Plain,
            },
            Err(m) => BindInfo {
                av: dom.bottom(),
                plan: Plan::Error(m),
            },
        };
        Ok(match rhs {
            Rhs::Const(k) => {
                let av = self.const_value(*k);
                BindInfo {
                    av,
                    plan: Plan::Plain,
                }
            }
            Rhs::Copy(x) => BindInfo {
                av: v(x),
                plan: Plan::Plain,
            },
            Rhs::Closure { lambda, env } => {
                let e = env.iter().map(v).collect();
                BindInfo {
                    av: self.dom.closure(*lambda, e),
                    plan: Plan::Plain,
                }
            }
            Rhs::Sibling(i) => {
                let Some(g) = group else {
                    return limit("internal error: sibling reference outside a group");
                };
                let l = self.prog.groups[g].lambdas[*i as usize];
                BindInfo {
                    av: self.dom.closure(l, env.to_vec()),
                    plan: Plan::Plain,
                }
            }
            Rhs::App { f, arg } => return self.apply(var, v(f), v(arg)),
            Rhs::Cons { tags, car, cdr } => {
                let r = self.cons_t(tags, v(car), v(cdr));
                plain(r, &self.dom)
            }
            Rhs::Car { tags, pair, pat } | Rhs::Cdr { tags, pair, pat } => {
                let is_car = matches!(rhs, Rhs::Car { .. });
                let p = v(pair);
                let r = self
                    .car_t(tags, p, is_car)
                    .map_err(|_| self.pattern_message(*pat, p));
                plain(r, &self.dom)
            }
            Rhs::Check {
                tags,
                var,
                expect,
                pat,
            } => {
                let x = v(var);
                match self.check_t(tags, x, *expect) {
                    Ok(Some(true)) => BindInfo {
                        av: x,
                        plan: Plan::Plain,
                    },
                    Ok(None) => BindInfo {
                        av: x,
                        plan: Plan::Check,
                    },
                    Ok(Some(false)) | Err(_) => BindInfo {
                        av: self.dom.bottom(),
                        plan: Plan::Error(self.pattern_message(*pat, x)),
                    },
                }
            }
            Rhs::EnvRef { closure, index } => {
                self.ops.hit("a procedure's environment", v(closure));
                let r = match self.dom.get(v(closure)).clone() {
                    Av::Closure(_, e) => e
                        .get(*index as usize)
                        .copied()
                        .ok_or_else(|| "internal error: environment slot out of range".to_string()),
                    Av::Bottom => Ok(self.dom.bottom()),
                    _ => Err(format!(
                        "expected the sensitivity of a procedure, found {}",
                        self.describe(v(closure))
                    )),
                };
                plain(r, &self.dom)
            }
            Rhs::EnvUpdate {
                closure,
                index,
                value,
            } => {
                self.ops.hit("a procedure's environment", v(closure));
                let r = match self.dom.get(v(closure)).clone() {
                    Av::Closure(l, e) if (*index as usize) < e.len() => {
                        let mut e = e.to_vec();
                        e[*index as usize] = v(value);
                        Ok(self.dom.closure(l, e))
                    }
                    Av::Bottom => Ok(self.dom.bottom()),
                    _ => Err(format!(
                        "expected the sensitivity of a procedure, found {}",
                        self.describe(v(closure))
                    )),
                };
                plain(r, &self.dom)
            }
        })
    }

    fn apply(&mut self, site: Var, f: AvId, arg: AvId) -> R<BindInfo> {
        let bottom = self.dom.bottom();
        if arg == bottom {
            return Ok(BindInfo {
                av: bottom,
                plan: Plan::Dead,
            });
        }
        match self.dom.get(f).clone() {
            Av::Bottom => Ok(BindInfo {
                av: bottom,
                plan: Plan::Dead,
            }),
            Av::Closure(l, env) => {
                let (av, s) = self.call(l, &env, arg)?;
                Ok(BindInfo {
                    av,
                    plan: Plan::Call(s),
                })
            }
            Av::Prim(Prim::IfProcedure) => self.if_procedure(site, arg),
            Av::Union(_) => {
                self.ops.hit("application", f);
                Ok(BindInfo {
                    av: bottom,
                    plan: Plan::Dead,
                })
            }
            Av::Prim(p) => Ok(match self.prim(p, arg) {
                Ok(av) => BindInfo {
                    av,
                    plan: Plan::Prim(p),
                },
                Err(m) => BindInfo {
                    av: bottom,
                    plan: Plan::Error(m),
                },
            }),
            _ => Ok(BindInfo {
                av: bottom,
                plan: Plan::Error(format!(
                    "cannot apply a non-procedure: found {}",
                    self.describe(f)
                )),
            }),
        }
    }

    fn if_procedure(&mut self, site: Var, arg: AvId) -> R<BindInfo> {
        let bottom = self.dom.bottom();
        let bad = |s: &Self| BindInfo {
            av: bottom,
            plan: Plan::Error(format!(
                "`if-procedure` expects a condition and two thunks, found {}",
                s.describe(arg)
            )),
        };
        let Av::Pair(c, te) = self.dom.get(arg).clone() else {
            return Ok(bad(self));
        };
        let Av::Pair(t, e) = self.dom.get(te).clone() else {
            return Ok(bad(self));
        };
        self.ops.hit("a conditional", c);
        if self.ops.union_hit.get().is_some() {
            return Ok(BindInfo {
                av: bottom,
                plan: Plan::Dead,
            });
        }
        let (take_then, take_else) = match self.dom.get(c) {
            Av::Bool(Some(false)) => (false, true),
            Av::Bool(None) => (true, true),
            Av::Bottom => (false, false),
            _ => (true, false),
        };
        let nil = self.dom.nil();
        let mut result = bottom;
        let mut specs = [None, None];
        for (i, (take, thunk)) in [(take_then, t), (take_else, e)].into_iter().enumerate() {
            if !take {
                continue;
            }
            let info = self.apply(site, thunk, nil)?;
            match info.plan {
                Plan::Call(s) => specs[i] = Some(s),
                Plan::Dead => {}
                // The interpreter calls the chosen "thunk" whatever it is:
                // when only it can be chosen, its application's error is
                // the error.
                Plan::Error(m) if !(take_then && take_else) => {
                    return Ok(BindInfo {
                        av: bottom,
                        plan: Plan::Error(m),
                    });
                }
                _ => {
                    // A thunk that is a primitive or not a procedure: only
                    // reachable through misuse of `if-procedure`.
                    return Ok(BindInfo {
                        av: bottom,
                        plan: Plan::Error(format!(
                            "`if-procedure` expects a condition and two thunks, found {}",
                            self.describe(arg)
                        )),
                    });
                }
            }
            let at = Site::If(site, self.ctx);
            result = self.dom.join_at(at, result, info.av);
        }
        Ok(BindInfo {
            av: result,
            plan: Plan::If {
                then_: specs[0],
                else_: specs[1],
            },
        })
    }
}

impl Ops {
    // ---- constants -------------------------------------------------------

    pub fn const_value(&mut self, k: ConstId) -> AvId {
        if let Some(a) = self.consts.get(&k) {
            return *a;
        }
        let c = self.prog.consts[k].clone();
        let mut v = self.datum(&c.datum);
        for tag in c.tags.iter().rev() {
            v = match tag {
                Tag::Forward => {
                    let z = self.zero(v);
                    let t = self.tag_wrap(Tag::Perturb, z);
                    self.bundle(v, t).unwrap_or(AvId(0))
                }
                _ => self.tag_wrap(*tag, v),
            };
        }
        self.consts.insert(k, v);
        v
    }

    fn datum(&mut self, d: &ConstDatum) -> AvId {
        match d {
            ConstDatum::Real(r) => self.dom.real(*r),
            ConstDatum::Bool(b) => self.dom.boolean(Some(*b)),
            ConstDatum::Nil => self.dom.nil(),
            ConstDatum::Prim(p) => self.dom.intern(Av::Prim(*p)),
            ConstDatum::Pair(a, b) => {
                let (a, b) = (self.datum(a), self.datum(b));
                self.dom.pair(a, b)
            }
        }
    }
}

// The abstract versions of the interpreter's AD operations and primitives
// (crate `interp`, `adops.rs` and `prims.rs`): keep them in step.
impl Ops {
    /// Records that an operation needed a fixed shape and met a union
    /// (`v`), so that the binding is split on it.
    fn hit(&self, op: &'static str, v: AvId) {
        if let Some(u) = self.dom.as_union_id(v) {
            if self.union_hit.get().is_none() {
                self.union_hit.set(Some((op, u)));
            }
        }
    }

    /// `v` with the part at `path` (see [`Plan::Switch`]) replaced by
    /// `part`.
    pub fn replace_at(&mut self, v: AvId, path: &[u32], part: AvId) -> AvId {
        let Some((i, rest)) = path.split_first() else {
            return part;
        };
        let i = *i as usize;
        match self.dom.get(v).clone() {
            Av::Pair(a, b) | Av::Bundle(a, b) => {
                let (mut a, mut b) = (a, b);
                if i == 0 {
                    a = self.replace_at(a, rest, part);
                } else {
                    b = self.replace_at(b, rest, part);
                }
                if matches!(self.dom.get(v), Av::Pair(..)) {
                    self.dom.pair(a, b)
                } else {
                    self.dom.bundle(a, b)
                }
            }
            Av::Wrap(t, x) => {
                let x = self.replace_at(x, rest, part);
                self.dom.wrap(t, x)
            }
            Av::Closure(l, env) if i < env.len() => {
                let mut env = env.to_vec();
                env[i] = self.replace_at(env[i], rest, part);
                self.dom.closure(l, env)
            }
            _ => v,
        }
    }

    /// The part of `v` at `path` (see [`Plan::Switch`]).
    pub fn part_at(&self, v: AvId, path: &[u32]) -> AvId {
        let Some((i, rest)) = path.split_first() else {
            return v;
        };
        let i = *i as usize;
        match self.dom.get(v) {
            Av::Pair(a, b) | Av::Bundle(a, b) => self.part_at(if i == 0 { *a } else { *b }, rest),
            Av::Wrap(_, x) => self.part_at(*x, rest),
            Av::Closure(_, env) if i < env.len() => self.part_at(env[i], rest),
            _ => v,
        }
    }

    pub fn tag_wrap(&mut self, tag: Tag, v: AvId) -> AvId {
        match self.dom.get(v).clone() {
            Av::Bottom => v,
            // Tags on pairs and atoms are wrappers, so a union of those
            // is tagged as a whole; procedures must be transformed one
            // by one.
            Av::Union(u) | Av::Sym(_, SymKind::Union(u)) => {
                if !self.dom.data_only(u) {
                    self.map_union(UnionOp::Wrap(tag), v, None)
                } else {
                    self.dom.wrap(tag, v)
                }
            }
            Av::Closure(l, env) => {
                let l2 = ad::transform(&mut self.prog, &mut self.memo, tag, l);
                let env = env.iter().map(|x| self.tag_wrap(tag, *x)).collect();
                self.dom.closure(l2, env)
            }
            Av::Prim(p) => {
                let l = ad::prim_transform(&mut self.prog, &mut self.memo, tag, p);
                self.dom.closure(l, vec![])
            }
            _ => self.dom.wrap(tag, v),
        }
    }

    pub fn tag_unwrap(&mut self, tag: Tag, v: AvId) -> Op<AvId> {
        match self.dom.get(v).clone() {
            Av::Bottom => Ok(v),
            Av::Union(_) | Av::Sym(_, SymKind::Union(_)) => {
                Ok(self.map_union(UnionOp::Unwrap(tag), v, None))
            }
            Av::Wrap(t, x) if t == tag => Ok(x),
            Av::Closure(l, env) => match ad::untransform(&self.prog, tag, l) {
                Some(Untransformed::Prim(p)) => Ok(self.dom.intern(Av::Prim(p))),
                Some(Untransformed::Lambda(l0)) => {
                    let mut e = Vec::with_capacity(env.len());
                    for x in env.iter() {
                        e.push(self.tag_unwrap(tag, *x)?);
                    }
                    Ok(self.dom.closure(l0, e))
                }
                None => Err(self.not_tagged(tag, v)),
            },
            _ => Err(self.not_tagged(tag, v)),
        }
    }

    fn not_tagged(&self, tag: Tag, v: AvId) -> String {
        let (op, what) = match tag {
            Tag::Perturb => ("unperturb", "a perturbation"),
            Tag::Sensitize => ("unsensitize", "a sensitivity"),
            Tag::Reverse => ("*j-inverse", "a reverse value"),
            Tag::Forward => ("primal", "a forward value"),
        };
        format!("`{op}` expects {what}, found {}", self.describe(v))
    }

    pub fn prim_chain(&self, mut l: LambdaId) -> Option<Vec<Tag>> {
        let mut tags = Vec::new();
        loop {
            match self.prog.lambdas[l].origin {
                ir::Origin::Transform { tag, of } => {
                    tags.push(tag);
                    l = of;
                }
                ir::Origin::PrimTransform { tag, .. } => {
                    tags.push(tag);
                    return Some(tags);
                }
                _ => return None,
            }
        }
    }

    pub fn nil_like(&self, v: AvId) -> bool {
        match self.dom.get(v) {
            Av::Nil | Av::Prim(_) => true,
            Av::Closure(l, env) => env.is_empty() && self.prim_chain(*l).is_some(),
            Av::Wrap(_, x) => self.nil_like(*x),
            Av::Bundle(p, t) => self.nil_like(*p) && self.nil_like(*t),
            _ => false,
        }
    }

    fn nil_perturbation(&self, t: AvId) -> bool {
        match self.dom.get(t) {
            Av::Wrap(Tag::Perturb, x) => self.nil_like(*x),
            Av::Closure(l, _) => self.nil_like(t) && self.prog.lambda_tag(*l) == Some(Tag::Perturb),
            _ => false,
        }
    }

    fn shallow_conform(&self, p: AvId, t: AvId) -> bool {
        match (self.dom.get(p), self.dom.get(t)) {
            (Av::Real(_) | Av::Sym(_, SymKind::Real), Av::Real(_) | Av::Sym(_, SymKind::Real))
            | (Av::Nil, Av::Nil)
            | (Av::Pair(..), Av::Pair(..))
            | (Av::Bool(_) | Av::Sym(_, SymKind::Bool), Av::Sym(_, SymKind::Bool))
            | (Av::Sym(_, SymKind::Bool), Av::Bool(_)) => true,
            (Av::Bool(a), Av::Bool(b)) => a.is_none() || b.is_none() || a == b,
            (Av::Wrap(t1, _), Av::Wrap(t2, _)) => t1 == t2,
            (Av::Bundle(..), Av::Bundle(..)) => true,
            _ => false,
        }
    }

    pub fn bundle(&mut self, p: AvId, t: AvId) -> Op<AvId> {
        let bottom = self.dom.bottom();
        if p == bottom || t == bottom {
            return Ok(bottom);
        }
        if let Av::Wrap(Tag::Perturb, x) = self.dom.get(t).clone() {
            // Bundles of pairs and atoms are wrappers, checked one layer
            // deep; so are bundles of two unions of those (the layer is
            // checked where the halves are taken apart).
            if let (Some(u), Some(w)) = (self.dom.as_union_id(p), self.dom.as_union_id(x)) {
                if self.dom.data_only(u) && self.dom.data_only(w) {
                    return Ok(self.dom.bundle(p, t));
                }
                return Ok(self.map_union(UnionOp::Bundle(true), p, Some(x)));
            }
            self.hit("`bundle`", x);
        }
        if self.dom.as_union_id(p).is_some() && self.dom.as_union_id(t).is_some() {
            return Ok(self.map_union(UnionOp::Bundle(false), p, Some(t)));
        }
        self.hit("`bundle`", p);
        self.hit("`bundle`", t);
        if self.union_hit.get().is_some() {
            return Ok(bottom);
        }
        match (self.dom.get(p).clone(), self.dom.get(t).clone()) {
            (Av::Closure(lc, ec), Av::Closure(ld, ed))
                if ad::untransform(&self.prog, Tag::Perturb, ld) == Some(Untransformed::Lambda(lc))
                    && ec.len() == ed.len() =>
            {
                let l = ad::transform(&mut self.prog, &mut self.memo, Tag::Forward, lc);
                let mut env = Vec::with_capacity(ec.len());
                for (a, b) in ec.iter().zip(ed.iter()) {
                    env.push(self.bundle(*a, *b)?);
                }
                Ok(self.dom.closure(l, env))
            }
            (Av::Prim(q), _) if self.nil_perturbation(t) => {
                let l = ad::prim_transform(&mut self.prog, &mut self.memo, Tag::Forward, q);
                Ok(self.dom.closure(l, vec![]))
            }
            (Av::Closure(lc, ec), _)
                if ec.is_empty() && self.prim_chain(lc).is_some() && self.nil_perturbation(t) =>
            {
                let l = ad::transform(&mut self.prog, &mut self.memo, Tag::Forward, lc);
                Ok(self.dom.closure(l, vec![]))
            }
            (_, Av::Wrap(Tag::Perturb, x)) if self.shallow_conform(p, x) => Ok(self.dom.bundle(p, t)),
            _ => Err(format!(
                "`bundle` expects a tangent that is a perturbation of the same shape as the primal {}, found {}",
                self.describe(p),
                self.describe(t)
            )),
        }
    }

    pub fn forward_half(&mut self, v: AvId, primal: bool) -> Op<AvId> {
        match self.dom.get(v).clone() {
            Av::Bottom => Ok(v),
            Av::Union(_) | Av::Sym(_, SymKind::Union(_)) => {
                Ok(self.map_union(UnionOp::Half(primal), v, None))
            }
            Av::Bundle(p, t) => Ok(if primal { p } else { t }),
            Av::Closure(l, env) => match ad::untransform(&self.prog, Tag::Forward, l) {
                Some(Untransformed::Prim(p)) => Ok(if primal {
                    self.dom.intern(Av::Prim(p))
                } else {
                    let n = self.dom.nil();
                    self.dom.wrap(Tag::Perturb, n)
                }),
                // A transformed primitive has no tangent of its own: its
                // tangent is a zero, as `bundle` built it.
                Some(Untransformed::Lambda(l0))
                    if !primal && env.is_empty() && self.prim_chain(l0).is_some() =>
                {
                    let p = self.dom.closure(l0, vec![]);
                    let z = self.zero(p);
                    Ok(self.tag_wrap(Tag::Perturb, z))
                }
                Some(Untransformed::Lambda(l0)) => {
                    let l = if primal {
                        l0
                    } else {
                        ad::transform(&mut self.prog, &mut self.memo, Tag::Perturb, l0)
                    };
                    let mut e = Vec::with_capacity(env.len());
                    for x in env.iter() {
                        e.push(self.forward_half(*x, primal)?);
                    }
                    Ok(self.dom.closure(l, e))
                }
                None => Err(self.not_forward(primal, v)),
            },
            _ => Err(self.not_forward(primal, v)),
        }
    }

    fn not_forward(&self, primal: bool, v: AvId) -> String {
        format!(
            "`{}` expects a forward value, found {}",
            if primal { "primal" } else { "tangent" },
            self.describe(v)
        )
    }

    pub fn zero(&mut self, v: AvId) -> AvId {
        if let Some(u) = self.dom.as_union_id(v) {
            return self.zero_union(u);
        }
        // A union inside may still gain members: recompute.
        let cacheable = !self.dom.has_union(v);
        if let Some(z) = self.zero_memo.get(&v).filter(|_| cacheable) {
            return *z;
        }
        let z = match self.dom.get(v).clone() {
            Av::Bottom | Av::Bool(_) | Av::Nil | Av::Sym(_, SymKind::Bool) => v,
            Av::Union(_) | Av::Sym(_, SymKind::Union(_)) => self.dom.bottom(),
            Av::Real(_) | Av::Sym(_, SymKind::Real) => self.dom.real(0.0),
            Av::Prim(_) => self.dom.nil(),
            Av::Pair(a, b) => {
                let (a, b) = (self.zero(a), self.zero(b));
                self.dom.pair(a, b)
            }
            Av::Bundle(a, b) => {
                let (a, b) = (self.zero(a), self.zero(b));
                self.dom.bundle(a, b)
            }
            Av::Wrap(t, x) => {
                let x = self.zero(x);
                self.dom.wrap(t, x)
            }
            Av::Closure(l, env) => match self.prim_chain(l) {
                Some(tags) if env.is_empty() => {
                    let mut z = self.dom.nil();
                    for t in tags.iter().rev() {
                        z = match t {
                            Tag::Forward => {
                                let pz = self.dom.wrap(Tag::Perturb, z);
                                self.dom.bundle(z, pz)
                            }
                            _ => self.dom.wrap(*t, z),
                        };
                    }
                    z
                }
                _ => {
                    let env = env.iter().map(|x| self.zero(*x)).collect();
                    self.dom.closure(l, env)
                }
            },
        };
        if cacheable {
            self.zero_memo.insert(v, z);
        }
        z
    }

    /// `zero` of a union: the union of its members' zeros ([`Site::Zero`]).
    pub fn zero_union(&mut self, u: UnionId) -> AvId {
        let u = self.dom.find(u);
        let z = self.dom.site_union(Site::Zero(u));
        if self.active.insert((u, None)) {
            for m in self.dom.members(u).to_vec() {
                let zm = self.zero(m);
                self.dom.add_member(z, zm);
            }
            self.active.remove(&(u, None));
        }
        self.dom.union_av(z)
    }

    /// A structural operation on every member of union value `v` (and,
    /// for `bundle`, paired with every member of `w`): the union of the
    /// results ([`Site::Map`]); members on which it fails are errors at
    /// run time. In lowering, on symbolic values, it stands for a call
    /// made later ([`Ops::take_pending`]).
    pub fn map_union(&mut self, op: UnionOp, v: AvId, w: Option<AvId>) -> AvId {
        let Some(u) = self.dom.as_union_id(v) else {
            return self.dom.bottom();
        };
        let wu = w.and_then(|w| self.dom.as_union_id(w));
        // An operation undoing the one that made the union gives back the
        // union it came from (so that tagging and untagging in a loop does
        // not make a new union each time round).
        if let Some((op0, u0, w0)) = self.map_origins.get(&u).copied() {
            let back = match (op0, op) {
                (UnionOp::Wrap(t0), UnionOp::Unwrap(t))
                | (UnionOp::Unwrap(t0), UnionOp::Wrap(t))
                    if t0 == t =>
                {
                    Some(self.dom.union_av(u0))
                }
                (UnionOp::Bundle(_), UnionOp::Half(true)) => Some(self.dom.union_av(u0)),
                (UnionOp::Bundle(wrapped), UnionOp::Half(false)) => w0.map(|w0| {
                    let t = self.dom.union_av(w0);
                    if wrapped {
                        self.dom.wrap(Tag::Perturb, t)
                    } else {
                        t
                    }
                }),
                _ => None,
            };
            if let Some(b) = back {
                if !self.symbolic {
                    return b;
                }
                // In lowering, a call converts the cell to one of the
                // union given back (its tags differ).
                let (inner, tag) = match self.dom.get(b).clone() {
                    Av::Wrap(t, x) => (x, Some(t)),
                    _ => (b, None),
                };
                if let Some(ub) = self.dom.as_union_id(inner) {
                    let r = self.pending_map(op, v, w, (u, wu), ub);
                    return match tag {
                        Some(t) => self.dom.wrap(t, r),
                        None => r,
                    };
                }
            }
        }
        let r = self.dom.site_union(Site::Map(op, u, wu));
        self.map_origins.entry(r).or_insert((op, u, wu));
        if self.symbolic {
            return self.pending_map(op, v, w, (u, wu), r);
        }
        if self.active_maps.insert((op, u, wu)) {
            for mu in self.dom.members(u).to_vec() {
                match wu {
                    None => {
                        if let Ok(x) = self.union_op(op, mu, None) {
                            self.dom.add_member(r, x);
                        }
                    }
                    Some(wu) => {
                        for mw in self.dom.members(wu).to_vec() {
                            if let Ok(x) = self.union_op(op, mu, Some(mw)) {
                                self.dom.add_member(r, x);
                            }
                        }
                    }
                }
            }
            self.active_maps.remove(&(op, u, wu));
        }
        self.dom.union_av(r)
    }

    /// A map that lowering will call, giving a cell of union `r`.
    fn pending_map(
        &mut self,
        op: UnionOp,
        v: AvId,
        w: Option<AvId>,
        unions: (UnionId, Option<UnionId>),
        r: UnionId,
    ) -> AvId {
        let mut args = Vec::new();
        for x in [Some(v), w].into_iter().flatten() {
            if let Av::Sym(n, _) = self.dom.get(x) {
                args.push(*n);
            }
        }
        let result = self.next_virtual;
        self.next_virtual += 1;
        self.pending.push(PendingMap {
            op,
            args,
            unions,
            result,
            result_union: r,
        });
        self.dom.intern(Av::Sym(result, SymKind::Union(r)))
    }

    /// The operation of a [`UnionOp`] on members.
    pub fn union_op(&mut self, op: UnionOp, a: AvId, b: Option<AvId>) -> Op<AvId> {
        match (op, b) {
            (UnionOp::Wrap(t), _) => Ok(self.tag_wrap(t, a)),
            (UnionOp::Unwrap(t), _) => self.tag_unwrap(t, a),
            (UnionOp::Half(primal), _) => self.forward_half(a, primal),
            (UnionOp::Bundle(wrapped), Some(b)) => {
                let t = if wrapped {
                    self.dom.wrap(Tag::Perturb, b)
                } else {
                    b
                };
                self.bundle(a, t)
            }
            (UnionOp::Bundle(_), None) => Err("internal error: bundle of one value".into()),
        }
    }

    /// The maps of unions met since the last call (lowering only).
    pub fn take_pending(&mut self) -> Vec<PendingMap> {
        std::mem::take(&mut self.pending)
    }

    /// `plus` of two unions: the union of the sums of their members of one
    /// kind ([`Site::Plus`]); members of different kinds do not conform,
    /// an error at run time.
    pub fn plus_unions(&mut self, u: UnionId, w: UnionId) -> AvId {
        let (u, w) = (self.dom.find(u), self.dom.find(w));
        let p = self.dom.site_union(Site::Plus(u, w));
        if self.active.insert((u, Some(w))) {
            for mu in self.dom.members(u).to_vec() {
                let Some(j) = self.dom.member_index(w, mu) else {
                    continue;
                };
                let mw = self.dom.members(w)[j];
                if let Ok(r) = self.plus_inner(mu, mw) {
                    self.dom.add_member(p, r);
                }
            }
            self.active.remove(&(u, Some(w)));
        }
        self.dom.union_av(p)
    }

    pub fn plus(&mut self, a: AvId, b: AvId) -> Op<AvId> {
        self.plus_inner(a, b).map_err(|_| {
            format!(
                "`plus` expects two values of the same shape, found {} and {}",
                self.describe(a),
                self.describe(b)
            )
        })
    }

    fn plus_inner(&mut self, a: AvId, b: AvId) -> Op<AvId> {
        let bottom = self.dom.bottom();
        if a == bottom || b == bottom {
            return Ok(bottom);
        }
        // With a union on one side, the sum has the shape of the sum of
        // the other side and the union's member of its kind; with unions
        // on both, it is a union.
        match (self.dom.as_union_id(a), self.dom.as_union_id(b)) {
            (Some(u), Some(w)) => return Ok(self.plus_unions(u, w)),
            (Some(u), None) => {
                let i = self.dom.member_index(u, b).ok_or_else(String::new)?;
                let m = self.dom.members(u)[i];
                return self.plus_inner(m, b);
            }
            (None, Some(w)) => {
                let i = self.dom.member_index(w, a).ok_or_else(String::new)?;
                let m = self.dom.members(w)[i];
                return self.plus_inner(a, m);
            }
            (None, None) => {}
        }
        match (self.dom.get(a).clone(), self.dom.get(b).clone()) {
            (Av::Real(x), Av::Real(y)) => Ok(match (x, y) {
                (Some(x), Some(y)) => self.dom.real(f64::from_bits(x) + f64::from_bits(y)),
                _ => self.dom.any_real(),
            }),
            (Av::Bool(x), Av::Bool(y)) if x.is_none() || y.is_none() || x == y => Ok(a),
            (Av::Nil, Av::Nil) => Ok(a),
            (Av::Prim(p), Av::Prim(q)) if p == q => Ok(a),
            (Av::Pair(a1, b1), Av::Pair(a2, b2)) => {
                let (x, y) = (self.plus_inner(a1, a2)?, self.plus_inner(b1, b2)?);
                Ok(self.dom.pair(x, y))
            }
            (Av::Bundle(a1, b1), Av::Bundle(a2, b2)) => {
                let (x, y) = (self.plus_inner(a1, a2)?, self.plus_inner(b1, b2)?);
                Ok(self.dom.bundle(x, y))
            }
            (Av::Closure(l1, e1), Av::Closure(l2, e2)) if l1 == l2 && e1.len() == e2.len() => {
                let mut env = Vec::with_capacity(e1.len());
                for (x, y) in e1.iter().zip(e2.iter()) {
                    env.push(self.plus_inner(*x, *y)?);
                }
                Ok(self.dom.closure(l1, env))
            }
            (Av::Wrap(t1, x), Av::Wrap(t2, y)) if t1 == t2 => {
                let z = self.plus_inner(x, y)?;
                Ok(self.dom.wrap(t1, z))
            }
            (ka, _) if self.nil_like(a) && self.nil_like(b) => {
                Ok(if matches!(ka, Av::Closure(..) | Av::Prim(_)) {
                    b
                } else {
                    a
                })
            }
            _ => Err(String::new()),
        }
    }

    pub fn cons_t(&mut self, tags: &[Tag], a: AvId, b: AvId) -> Op<AvId> {
        let bottom = self.dom.bottom();
        if a == bottom || b == bottom {
            return Ok(bottom);
        }
        match tags.split_first() {
            None => Ok(self.dom.pair(a, b)),
            Some((Tag::Forward, rest)) => {
                let (pa, pb) = (self.forward_half(a, true)?, self.forward_half(b, true)?);
                let ta = self.forward_half(a, false)?;
                let ta = self.tag_unwrap(Tag::Perturb, ta)?;
                let tb = self.forward_half(b, false)?;
                let tb = self.tag_unwrap(Tag::Perturb, tb)?;
                let p = self.cons_t(rest, pa, pb)?;
                let t = self.cons_t(rest, ta, tb)?;
                let wt = self.dom.wrap(Tag::Perturb, t);
                Ok(self.dom.bundle(p, wt))
            }
            Some((t, rest)) => {
                let a = self.tag_unwrap(*t, a)?;
                let b = self.tag_unwrap(*t, b)?;
                let p = self.cons_t(rest, a, b)?;
                Ok(self.dom.wrap(*t, p))
            }
        }
    }

    pub fn car_t(&mut self, tags: &[Tag], v: AvId, car: bool) -> Op<AvId> {
        if v == self.dom.bottom() {
            return Ok(v);
        }
        match tags.split_first() {
            None => match self.dom.get(v) {
                Av::Pair(a, b) => Ok(if car { *a } else { *b }),
                Av::Union(_) | Av::Sym(_, SymKind::Union(_)) => {
                    self.hit("taking apart a pair", v);
                    Ok(self.dom.bottom())
                }
                _ => Err(String::new()),
            },
            Some((Tag::Forward, rest)) => {
                let p = self.forward_half(v, true)?;
                let t = self.forward_half(v, false)?;
                let t = self.tag_unwrap(Tag::Perturb, t)?;
                let a = self.car_t(rest, p, car)?;
                let da = self.car_t(rest, t, car)?;
                let da = self.tag_wrap(Tag::Perturb, da);
                self.bundle(a, da)
            }
            Some((t, rest)) => {
                let x = self.tag_unwrap(*t, v)?;
                let a = self.car_t(rest, x, car)?;
                Ok(self.tag_wrap(*t, a))
            }
        }
    }

    /// `Some(matches)` when decided now, `None` when it needs a run-time
    /// comparison.
    pub fn check_t(&mut self, tags: &[Tag], v: AvId, k: ConstId) -> Op<Option<bool>> {
        let mut x = v;
        for t in tags {
            x = match t {
                Tag::Forward => self.forward_half(x, true)?,
                _ => self.tag_unwrap(*t, x)?,
            };
        }
        let d = self.prog.consts[k].datum.clone();
        Ok(self.match_datum(x, &d))
    }

    fn match_datum(&self, v: AvId, d: &ConstDatum) -> Option<bool> {
        match (self.dom.get(v), d) {
            (Av::Union(_) | Av::Sym(_, SymKind::Union(_)), _) => {
                self.hit("a constant pattern", v);
                None
            }
            (Av::Real(Some(x)), ConstDatum::Real(y)) => Some(f64::from_bits(*x) == *y),
            (Av::Real(None) | Av::Sym(_, SymKind::Real), ConstDatum::Real(_)) => None,
            (Av::Sym(_, SymKind::Bool), ConstDatum::Bool(_)) => None,
            (Av::Bool(Some(x)), ConstDatum::Bool(y)) => Some(x == y),
            (Av::Bool(None), ConstDatum::Bool(_)) => None,
            (Av::Nil, ConstDatum::Nil) => Some(true),
            (Av::Pair(a, b), ConstDatum::Pair(x, y)) => {
                match (self.match_datum(*a, x), self.match_datum(*b, y)) {
                    (Some(false), _) | (_, Some(false)) => Some(false),
                    (Some(true), Some(true)) => Some(true),
                    _ => None,
                }
            }
            _ => Some(false),
        }
    }

    pub fn pattern_message(&self, pat: Option<ir::PatId>, found: AvId) -> String {
        match pat {
            Some(p) => {
                let info = &self.prog.patterns[p];
                format!(
                    "pattern mismatch: `{}` expects an argument matching {}, found {}",
                    info.owner.as_deref().unwrap_or("lambda"),
                    info.text,
                    self.describe(found)
                )
            }
            None => format!("expected a pair, found {}", self.describe(found)),
        }
    }

    fn has_tag(&self, v: AvId, tag: Tag) -> bool {
        match self.dom.get(v) {
            Av::Closure(l, _) => self.prog.lambda_tag(*l) == Some(tag),
            Av::Wrap(t, _) => *t == tag,
            Av::Bundle(..) => tag == Tag::Forward,
            _ => false,
        }
    }

    /// An untagged primitive applied to an abstract argument.
    pub fn prim(&mut self, p: Prim, arg: AvId) -> Op<AvId> {
        let bottom = self.dom.bottom();
        // Arithmetic, comparisons and predicates look at their argument,
        // or at the two parts of a pair argument. (`write` prints any
        // value; the AD operations handle unions, or record the ones they
        // cannot, themselves.)
        if p.kind() != PrimKind::Ad && p != Prim::Write {
            let name = "a primitive";
            self.hit(name, arg);
            if let Av::Pair(a, b) = self.dom.get(arg).clone() {
                self.hit(name, a);
                self.hit(name, b);
            }
            if self.union_hit.get().is_some() {
                return Ok(bottom);
            }
        }
        let describe = |s: &Self| s.describe(arg);
        let reals2 = |s: &Self| -> Op<Option<(Option<f64>, Option<f64>)>> {
            match s.dom.get(arg) {
                Av::Pair(a, b) => match (s.dom.get(*a), s.dom.get(*b)) {
                    (Av::Real(x), Av::Real(y)) => {
                        Ok(Some((x.map(f64::from_bits), y.map(f64::from_bits))))
                    }
                    (Av::Bottom, _) | (_, Av::Bottom) => Ok(None),
                    _ => Err(format!(
                        "`{}` expects two reals, found {}",
                        p.name(),
                        describe(s)
                    )),
                },
                _ => Err(format!(
                    "`{}` expects two reals, found {}",
                    p.name(),
                    describe(s)
                )),
            }
        };
        let real1 = |s: &Self| -> Op<Option<Option<f64>>> {
            match s.dom.get(arg) {
                Av::Real(x) => Ok(Some(x.map(f64::from_bits))),
                _ => Err(format!(
                    "`{}` expects a real, found {}",
                    p.name(),
                    describe(s)
                )),
            }
        };
        let pair2 = |s: &Self| -> Op<(AvId, AvId)> {
            match s.dom.get(arg) {
                Av::Pair(a, b) => Ok((*a, *b)),
                _ => Err(format!(
                    "`{}` expects two arguments, found {}",
                    p.name(),
                    describe(s)
                )),
            }
        };
        Ok(match p.kind() {
            PrimKind::Binary | PrimKind::Compare => {
                let Some((x, y)) = reals2(self)? else {
                    return Ok(bottom);
                };
                match (x, y) {
                    (Some(x), Some(y)) => match p {
                        Prim::Add => self.dom.real(x + y),
                        Prim::Sub => self.dom.real(x - y),
                        Prim::Mul => self.dom.real(x * y),
                        Prim::Div => self.dom.real(x / y),
                        Prim::Atan => self.dom.real(x.atan2(y)),
                        Prim::Eq => self.dom.boolean(Some(x == y)),
                        Prim::Lt => self.dom.boolean(Some(x < y)),
                        Prim::Gt => self.dom.boolean(Some(x > y)),
                        Prim::Le => self.dom.boolean(Some(x <= y)),
                        _ => self.dom.boolean(Some(x >= y)),
                    },
                    _ if p.kind() == PrimKind::Binary => self.dom.any_real(),
                    _ => self.dom.boolean(None),
                }
            }
            PrimKind::Unary => match real1(self)? {
                Some(Some(x)) => self.dom.real(match p {
                    Prim::Sqrt => x.sqrt(),
                    Prim::Exp => x.exp(),
                    Prim::Log => x.ln(),
                    Prim::Sin => x.sin(),
                    _ => x.cos(),
                }),
                _ => self.dom.any_real(),
            },
            PrimKind::Predicate => {
                let a = self.dom.get(arg).clone();
                let known = |b: bool| Some(b);
                let r = match p {
                    Prim::IsZero | Prim::IsPositive | Prim::IsNegative => match real1(self)? {
                        Some(Some(x)) => known(match p {
                            Prim::IsZero => x == 0.0,
                            Prim::IsPositive => x > 0.0,
                            _ => x < 0.0,
                        }),
                        _ => None,
                    },
                    Prim::IsNull => known(matches!(a, Av::Nil)),
                    Prim::IsBoolean => known(matches!(a, Av::Bool(_))),
                    Prim::IsReal => known(matches!(a, Av::Real(_))),
                    Prim::IsPair => known(matches!(a, Av::Pair(..))),
                    Prim::IsProcedure => known(matches!(a, Av::Closure(..) | Av::Prim(_))),
                    Prim::IsPerturbation => known(self.has_tag(arg, Tag::Perturb)),
                    Prim::IsForward => known(self.has_tag(arg, Tag::Forward)),
                    Prim::IsSensitivity => known(self.has_tag(arg, Tag::Sensitize)),
                    _ => known(self.has_tag(arg, Tag::Reverse)),
                };
                self.dom.boolean(r)
            }
            PrimKind::Control => match p {
                // `real` hides its argument's value from the compiler.
                Prim::Real => match real1(self)? {
                    Some(_) => self.dom.any_real(),
                    None => bottom,
                },
                Prim::WriteReal => match real1(self)? {
                    Some(_) => arg,
                    None => bottom,
                },
                Prim::Write => arg,
                Prim::ReadReal => self.dom.any_real(),
                _ => unreachable!("if-procedure is applied by `if_procedure`"),
            },
            PrimKind::Ad => match p {
                Prim::Zero => self.zero(arg),
                Prim::Plus => {
                    let (a, b) = pair2(self)?;
                    self.plus(a, b)?
                }
                Prim::Perturb => self.tag_wrap(Tag::Perturb, arg),
                Prim::Sensitize => self.tag_wrap(Tag::Sensitize, arg),
                Prim::StarJ => self.tag_wrap(Tag::Reverse, arg),
                Prim::Unperturb => self.tag_unwrap(Tag::Perturb, arg)?,
                Prim::Unsensitize => self.tag_unwrap(Tag::Sensitize, arg)?,
                Prim::StarJInverse => self.tag_unwrap(Tag::Reverse, arg)?,
                Prim::Bundle => {
                    let (a, b) = pair2(self)?;
                    self.bundle(a, b)?
                }
                Prim::Primal => self.forward_half(arg, true)?,
                _ => self.forward_half(arg, false)?,
            },
        })
    }

    /// An abstract value as the interpreter would print the value in an
    /// error message (unknown reals and booleans as `R` and `B`).
    pub fn describe(&self, v: AvId) -> String {
        let mut s = crate::print::value_text(&self.dom, v);
        // A value with parts known only at run time is shortened at run
        // time: lowering turns the marks into `ErrPart::ValueStart/End`.
        if s.contains(crate::print::SYM_MARK) {
            return format!("{0}{s}{0}", crate::print::VALUE_MARK);
        }
        shorten(&mut s, 120);
        s
    }
}

/// Cuts `s` to at most `max` bytes, ending in `...` when cut, as the
/// interpreter shortens values in messages.
fn shorten(s: &mut String, max: usize) {
    if s.len() > max {
        let mut cut = max - 3;
        while !s.is_char_boundary(cut) {
            cut -= 1;
        }
        s.truncate(cut);
        s.push_str("...");
    }
}

/// The variables a binding's right-hand side reads.
fn rhs_operands(rhs: &Rhs) -> Vec<Var> {
    match rhs {
        Rhs::App { f, arg } => vec![*f, *arg],
        Rhs::Cons { car, cdr, .. } => vec![*car, *cdr],
        Rhs::Car { pair, .. } | Rhs::Cdr { pair, .. } => vec![*pair],
        Rhs::Check { var, .. } => vec![*var],
        Rhs::EnvRef { closure, .. } => vec![*closure],
        Rhs::EnvUpdate { closure, value, .. } => vec![*closure, *value],
        Rhs::Copy(x) => vec![*x],
        Rhs::Closure { env, .. } => env.clone(),
        Rhs::Const(_) | Rhs::Sibling(_) => vec![],
    }
}
