//! Which call in the user's files applied a derivative operator: for the
//! note of an error inside a derivative ("while taking derivative-F at
//! a.vlad:2:2 of derivative-R at a.vlad:2:30", `message::derivative_note`).
//!
//! Input: a program's core IR. Output: its operator sites, each with the
//! code that may run under it. The interpreter and lowering compute the
//! note from the program's text alone, with this module, so that `run` and
//! the compiled binary print the same bytes: compiled code cannot know at
//! run time which call made a derivative it runs (the analysis shares one
//! specialisation between calls), and the interpreter answers as compiled
//! code must.
//!
//! An operator site is a call from the user's files of `derivative-F`,
//! `gradient-F`, `j*` (forward) or `derivative-R`, `gradient-R` (reverse)
//! of the standard library, or of the primitives `bundle` (forward) and
//! `*j` (reverse). Its reach is every lambda whose code may run under the
//! derivative it takes: the code of the procedures it is given, of the
//! closures they make and of the procedures they call, as far as the
//! program's text says which they are. A procedure called through a
//! value the text does not name (a parameter, a pair's part) makes the
//! reach unknown, which is any lambda.
//!
//! The code at fault ran under the transformation `tag` of lambda `root`;
//! the site that took it is one whose reach holds `root`, or is unknown.
//! When exactly one site of that tag qualifies it is named; otherwise the
//! note says only what kind of derivative it is. Sound by construction:
//! a named site is the only call of the program that can have taken
//! that derivative. When the program passes an operator around as a
//! value, any call may apply it, so no site is named.

use crate::{LambdaId, Prim, PrimKind, Program, Rhs, Stmt, Tag, Var};
use base::diag::Span;
use std::collections::{BTreeSet, HashMap};

/// The operators of the standard library, by name, with their tag.
const LIBRARY: [(&str, Tag); 5] = [
    ("derivative-F", Tag::Forward),
    ("gradient-F", Tag::Forward),
    ("j*", Tag::Forward),
    ("derivative-R", Tag::Reverse),
    ("gradient-R", Tag::Reverse),
];

/// The primitives that transform a procedure given to them.
fn primitive_operator(p: Prim) -> Option<Tag> {
    match p {
        Prim::Bundle => Some(Tag::Forward),
        Prim::StarJ => Some(Tag::Reverse),
        _ => None,
    }
}

/// What a variable may hold that matters here: procedures.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Debug)]
enum Proc {
    Lambda(LambdaId),
    Prim(Prim),
}

/// The procedures a value may be or contain; `None`: unknown.
type Procs = Option<BTreeSet<Proc>>;

/// One call in the user's files that applies a derivative operator.
#[derive(Clone, Debug)]
struct Site {
    span: Span,
    /// The operators the callee may be (name and tag).
    ops: Vec<(&'static str, Tag)>,
    /// The lambdas whose code may run under it; `None`: any.
    reach: Option<BTreeSet<LambdaId>>,
    /// The lambdas whose code applies the derivative it makes (`None` for
    /// the top level); `None`: unknown, the derivative is passed on.
    applied_in: Option<BTreeSet<Option<LambdaId>>>,
}

/// A program's operator sites.
#[derive(Clone, Debug, Default)]
pub struct OperatorSites {
    sites: Vec<Site>,
    /// An operator is passed around as a value: any call may apply it.
    escapes: bool,
}

/// The operator of the note for one tag: its name and where it was
/// applied.
pub struct Applied {
    pub name: &'static str,
    pub span: Span,
}

impl OperatorSites {
    /// The operator sites of `prog`'s source code; `main` is its top
    /// level (the interpreter holds it apart while it runs).
    pub fn new(prog: &Program, main: &[Stmt]) -> OperatorSites {
        let mut a = Analysis::new(prog, main);
        let mut sites = Vec::new();
        let mut escapes = false;
        let mut calls = Vec::new();
        for (_, lam) in prog.lambdas.iter() {
            if matches!(lam.origin, crate::Origin::Source) {
                calls.extend(lam.body.iter());
            }
        }
        for s in main {
            if let Stmt::Bind(b) = s {
                calls.push(b);
            }
        }
        for b in calls {
            let passed = |a: &mut Analysis, v: Var| {
                let ops = a.operators(v);
                !ops.is_empty()
            };
            escapes |= match &b.rhs {
                Rhs::App { arg, .. } => passed(&mut a, *arg),
                Rhs::Cons { car, cdr, .. } => passed(&mut a, *car) || passed(&mut a, *cdr),
                _ => false,
            };
            let Rhs::App { f, arg } = &b.rhs else {
                continue;
            };
            let Some(span) = b.span.filter(|s| s.file.0 != 0) else {
                continue;
            };
            let ops = a.operators(*f);
            if ops.is_empty() {
                continue;
            }
            let reach = a.reach(*arg);
            let applied_in = a.applied_in(b.var);
            sites.push(Site {
                span,
                ops,
                reach,
                applied_in,
            });
        }
        // A procedure whose result is an operator hands it out too.
        for (_, lam) in prog.lambdas.iter() {
            if matches!(lam.origin, crate::Origin::Source)
                && lam.span.is_some_and(|s| s.file.0 != 0)
                && !a.operators(lam.result).is_empty()
            {
                escapes = true;
            }
        }
        OperatorSites { sites, escapes }
    }

    /// The calls that took the derivatives `tags` (outermost first) of
    /// lambda `root`, each when the program's text says which call it is.
    ///
    /// The site of each derivative must reach `root`, and the derivative
    /// inside another must be applied by code under that other one. Of
    /// the assignments of sites to the derivatives that agree with that,
    /// a derivative is named when all give it the same site and name.
    pub fn chain(&self, tags: &[Tag], root: LambdaId) -> Vec<Option<Applied>> {
        let mut named: Vec<Option<Applied>> = tags.iter().map(|_| None).collect();
        let ad = |t: &Tag| matches!(t, Tag::Forward | Tag::Reverse);
        if self.escapes || !tags.iter().all(ad) {
            return named;
        }
        let candidates: Vec<Vec<usize>> = tags
            .iter()
            .map(|t| {
                (0..self.sites.len())
                    .filter(|&i| {
                        let s = &self.sites[i];
                        s.ops.iter().any(|(_, u)| u == t)
                            && s.reach.as_ref().is_none_or(|r| r.contains(&root))
                    })
                    .collect()
            })
            .collect();
        let mut found: Vec<Vec<usize>> = Vec::new();
        let mut partial = Vec::new();
        self.assign(&candidates, &mut partial, &mut found);
        let Some(first) = found.first() else {
            return named;
        };
        for (k, slot) in named.iter_mut().enumerate() {
            let i = first[k];
            if found.iter().any(|f| f[k] != i) {
                continue;
            }
            let site = &self.sites[i];
            let mut names = site
                .ops
                .iter()
                .filter(|(_, t)| *t == tags[k])
                .map(|(n, _)| *n);
            let Some(name) = names.next() else { continue };
            if names.all(|n| n == name) {
                *slot = Some(Applied {
                    name,
                    span: site.span,
                });
            }
        }
        named
    }

    /// Extends `partial` (sites of the outermost derivatives) in every
    /// way that agrees, into `found`; at most a few, enough to tell
    /// whether they differ.
    fn assign(
        &self,
        candidates: &[Vec<usize>],
        partial: &mut Vec<usize>,
        found: &mut Vec<Vec<usize>>,
    ) {
        const ENOUGH: usize = 64;
        if found.len() >= ENOUGH {
            return;
        }
        let Some(next) = candidates.get(partial.len()) else {
            found.push(partial.clone());
            return;
        };
        for &i in next {
            if partial.last().is_some_and(|&o| !self.inside(i, o)) {
                continue;
            }
            partial.push(i);
            self.assign(candidates, partial, found);
            partial.pop();
        }
    }

    /// Can the derivative site `inner` makes be applied under the one
    /// site `outer` makes?
    fn inside(&self, inner: usize, outer: usize) -> bool {
        let (Some(applied), Some(reach)) =
            (&self.sites[inner].applied_in, &self.sites[outer].reach)
        else {
            return true;
        };
        applied
            .iter()
            .any(|h| h.is_some_and(|l| reach.contains(&l)))
    }
}

/// How a variable got its value.
#[derive(Clone, Copy)]
enum Def<'p> {
    /// By a binding in lambda `holder` (`None`: the top level).
    Bound(Option<LambdaId>, &'p Rhs),
    Param,
}

struct Analysis<'p> {
    prog: &'p Program,
    defs: HashMap<Var, Def<'p>>,
    memo: HashMap<Var, Procs>,
    library: HashMap<LambdaId, (&'static str, Tag)>,
}

impl<'p> Analysis<'p> {
    fn new(prog: &'p Program, main: &'p [Stmt]) -> Analysis<'p> {
        let mut defs = HashMap::new();
        let mut library = HashMap::new();
        for (l, lam) in prog.lambdas.iter() {
            if !matches!(lam.origin, crate::Origin::Source) {
                continue;
            }
            defs.insert(lam.param, Def::Param);
            for b in lam.body.iter() {
                defs.insert(b.var, Def::Bound(Some(l), &b.rhs));
            }
            let in_library = lam.span.is_none_or(|s| s.file.0 == 0);
            if let Some(&(name, tag)) = LIBRARY
                .iter()
                .find(|(n, _)| in_library && lam.name.as_deref() == Some(n))
            {
                library.insert(l, (name, tag));
            }
        }
        for s in main {
            if let Stmt::Bind(b) = s {
                defs.insert(b.var, Def::Bound(None, &b.rhs));
            }
        }
        Analysis {
            prog,
            defs,
            memo: HashMap::new(),
            library,
        }
    }

    /// The operators variable `v` may be, as the callee of a call.
    fn operators(&mut self, v: Var) -> Vec<(&'static str, Tag)> {
        let Some(procs) = self.procs(v) else {
            return Vec::new();
        };
        procs
            .iter()
            .filter_map(|p| match p {
                Proc::Lambda(l) => self.library.get(l).copied(),
                Proc::Prim(p) => primitive_operator(*p).map(|t| (p.name(), t)),
            })
            .collect()
    }

    /// The procedures `v`'s value may be or contain.
    fn procs(&mut self, v: Var) -> Procs {
        if let Some(p) = self.memo.get(&v) {
            return p.clone();
        }
        // A value defined through itself: unknown.
        self.memo.insert(v, None);
        let p = self.procs_of_def(v);
        self.memo.insert(v, p.clone());
        p
    }

    fn procs_of_def(&mut self, v: Var) -> Procs {
        let Some(Def::Bound(holder, rhs)) = self.defs.get(&v).copied() else {
            return None;
        };
        match rhs {
            Rhs::Const(k) => Some(match self.prog.consts[*k].datum {
                crate::ConstDatum::Prim(p) => BTreeSet::from([Proc::Prim(p)]),
                _ => BTreeSet::new(),
            }),
            Rhs::Copy(x) | Rhs::Check { var: x, .. } => self.procs(*x),
            Rhs::Car { pair, .. } | Rhs::Cdr { pair, .. } => self.procs(*pair),
            Rhs::Closure { lambda, .. } => Some(BTreeSet::from([Proc::Lambda(*lambda)])),
            Rhs::Sibling(i) => {
                let g = holder.and_then(|h| self.prog.lambdas[h].group)?;
                let l = *self.prog.groups[g].lambdas.get(*i as usize)?;
                Some(BTreeSet::from([Proc::Lambda(l)]))
            }
            Rhs::Cons { car, cdr, .. } => {
                let mut a = self.procs(*car)?;
                a.extend(self.procs(*cdr)?);
                Some(a)
            }
            Rhs::App { f, arg } => {
                let mut out = BTreeSet::new();
                for callee in self.procs(*f)? {
                    out.extend(self.result_of(callee, *arg)?);
                }
                Some(out)
            }
            Rhs::EnvRef { .. } | Rhs::EnvUpdate { .. } => None,
        }
    }

    /// The procedures the result of applying `callee` to `arg` may hold.
    fn result_of(&mut self, callee: Proc, arg: Var) -> Procs {
        match callee {
            // A derivative runs the procedure it was taken of.
            Proc::Lambda(l) if self.library.contains_key(&l) => self.procs(arg),
            Proc::Lambda(l) => self.procs(self.prog.lambdas[l].result),
            Proc::Prim(p) => match p.kind() {
                PrimKind::Binary | PrimKind::Unary | PrimKind::Compare | PrimKind::Predicate => {
                    Some(BTreeSet::new())
                }
                _ => {
                    let given = self.procs(arg)?;
                    let mut out = given.clone();
                    if calls_procedures(p) {
                        for q in given {
                            if let Proc::Lambda(l) = q {
                                out.extend(self.procs(self.prog.lambdas[l].result)?);
                            }
                        }
                    }
                    Some(out)
                }
            },
        }
    }

    /// The lambdas whose code applies the value of `v` (`None` for the
    /// top level); `None` when it is used otherwise than applied.
    fn applied_in(&self, v: Var) -> Option<BTreeSet<Option<LambdaId>>> {
        let mut aliases = BTreeSet::from([v]);
        let mut grew = true;
        while grew {
            grew = false;
            for (x, d) in &self.defs {
                if let Def::Bound(_, Rhs::Copy(y)) = d {
                    if aliases.contains(y) && aliases.insert(*x) {
                        grew = true;
                    }
                }
            }
        }
        let mut out = BTreeSet::new();
        for d in self.defs.values() {
            let Def::Bound(holder, rhs) = d else { continue };
            match rhs {
                Rhs::Copy(_) | Rhs::Closure { .. } => {}
                Rhs::App { f, arg } if aliases.contains(f) && !aliases.contains(arg) => {
                    out.insert(*holder);
                }
                _ if rhs.uses().iter().any(|u| aliases.contains(u)) => return None,
                _ => {}
            }
        }
        let returned = self.prog.lambdas.iter().any(|(_, lam)| {
            matches!(lam.origin, crate::Origin::Source) && aliases.contains(&lam.result)
        });
        if returned {
            return None;
        }
        Some(out)
    }

    /// The lambdas whose code may run under a derivative of `arg`.
    fn reach(&mut self, arg: Var) -> Option<BTreeSet<LambdaId>> {
        let mut seen = BTreeSet::new();
        let mut todo: Vec<LambdaId> = lambdas(&self.procs(arg)?).collect();
        while let Some(l) = todo.pop() {
            if self.library.contains_key(&l) || !seen.insert(l) {
                continue;
            }
            for b in self.prog.lambdas[l].body.iter() {
                match &b.rhs {
                    Rhs::Closure { lambda, .. } => todo.push(*lambda),
                    Rhs::App { f, arg } => {
                        for callee in self.procs(*f)? {
                            match callee {
                                Proc::Lambda(m) => todo.push(m),
                                Proc::Prim(p) if calls_procedures(p) => {
                                    todo.extend(lambdas(&self.procs(*arg)?));
                                }
                                Proc::Prim(_) => {}
                            }
                        }
                    }
                    _ => {}
                }
            }
        }
        Some(seen)
    }
}

/// The primitives that apply procedures they are given.
fn calls_procedures(p: Prim) -> bool {
    matches!(p, Prim::IfProcedure | Prim::BuildVector)
}

fn lambdas(procs: &BTreeSet<Proc>) -> impl Iterator<Item = LambdaId> + '_ {
    procs.iter().filter_map(|p| match p {
        Proc::Lambda(l) => Some(*l),
        Proc::Prim(_) => None,
    })
}
