//! The AD prelude as core IR: `tag(prim)`, the primitive `prim` seen in
//! the world `tag`, as a closed lambda for every tag and primitive.
//!
//! [`source`] owns the prelude's VLAD source; the process's one
//! [`Prelude`] ([`shared`]) lowers an entry with it the first time any
//! program of the process needs it (reading and expanding all of them would cost
//! more than a small program's whole run), into arenas of its own. Crate
//! `ad` copies an entry into a program when a transformation needs it
//! ([`Prelude::instantiate`]), so the AD transformations never see source
//! text, and a program holds only the entries it uses, numbered exactly as
//! if they had been lowered into it at that moment.
//!
//! Invariant: an entry refers only to what was built with it (its lambda
//! is closed; its constants, patterns, inner lambdas and groups are its
//! own), so copying it is shifting its ids.

pub mod source;

use std::collections::HashMap;
use std::sync::Mutex;

use base::diag::Diagnostic;

use crate::core::*;
use crate::entity::{Arena, EntityRef};
use crate::prim::Prim;

/// The entries of the AD prelude lowered so far ([`source`] lowers the
/// others).
#[derive(Debug, Default)]
pub struct Prelude {
    built: Mutex<Built>,
}

/// The prelude of the process: every program's transformations copy
/// entries from it, so each entry is lowered at most once (the REPL
/// lowers a program per input).
pub fn shared() -> &'static Prelude {
    static SHARED: std::sync::OnceLock<Prelude> = std::sync::OnceLock::new();
    SHARED.get_or_init(Prelude::default)
}

#[derive(Debug, Default)]
struct Built {
    /// The arenas the entries were lowered into, one after the other.
    code: Program,
    entries: HashMap<(Tag, Prim), Entry>,
}

/// Where an entry lies in the prelude's arenas.
#[derive(Clone, Copy, Debug)]
struct Entry {
    lambda: LambdaId,
    start: Marks,
    end: Marks,
}

/// The lengths of a program's arenas.
#[derive(Clone, Copy, Debug)]
struct Marks {
    vars: usize,
    lambdas: usize,
    groups: usize,
    consts: usize,
    patterns: usize,
}

impl Marks {
    fn of(p: &Program) -> Marks {
        Marks {
            vars: p.vars.len(),
            lambdas: p.lambdas.len(),
            groups: p.groups.len(),
            consts: p.consts.len(),
            patterns: p.patterns.len(),
        }
    }
}

impl Prelude {
    /// Copies `tag(prim)` into `prog` and returns its lambda there,
    /// lowering the entry first if no program has needed it yet. The copy
    /// appends to each arena what the entry holds, in the order it was
    /// built, so ids come out as lowering the entry into `prog` would have
    /// made them. An error is one of the prelude's own source.
    pub fn instantiate(
        &self,
        prog: &mut Program,
        tag: Tag,
        prim: Prim,
    ) -> Result<LambdaId, Diagnostic> {
        // A panic while the lock was held leaves only complete entries
        // recorded: `entries` is written once its entry is built.
        let mut built = self.built.lock().unwrap_or_else(|e| e.into_inner());
        let e = match built.entries.get(&(tag, prim)) {
            Some(e) => *e,
            None => {
                let start = Marks::of(&built.code);
                let lambda = source::entry(&mut built.code, tag, prim)?;
                let end = Marks::of(&built.code);
                let e = Entry { lambda, start, end };
                built.entries.insert((tag, prim), e);
                e
            }
        };
        Ok(copy_entry(&built.code, e, prog))
    }
}

/// Appends entry `e` of `code` to `prog`.
fn copy_entry(code: &Program, e: Entry, prog: &mut Program) -> LambdaId {
    let shift = Shift {
        from: e.start,
        to: Marks::of(prog),
    };
    // A derived name may name a variable the entry does not copy: the
    // names are written out.
    for i in e.start.vars..e.end.vars {
        prog.new_var(code.var_name(Var::new(i)));
    }
    copy(
        &code.consts,
        &mut prog.consts,
        e.start.consts,
        e.end.consts,
        |k| k.clone(),
    );
    copy(
        &code.patterns,
        &mut prog.patterns,
        e.start.patterns,
        e.end.patterns,
        |p| p.clone(),
    );
    copy(
        &code.groups,
        &mut prog.groups,
        e.start.groups,
        e.end.groups,
        |g| Group {
            lambdas: g.lambdas.iter().map(|l| shift.lambda(*l)).collect(),
            free: g.free.iter().map(|v| shift.var(*v)).collect(),
        },
    );
    copy(
        &code.lambdas,
        &mut prog.lambdas,
        e.start.lambdas,
        e.end.lambdas,
        |l| shift.lambda_data(l),
    );
    shift.lambda(e.lambda)
}

/// Appends items `start..end` of `from` to `to`, each through `f`.
fn copy<K: EntityRef, V>(
    from: &Arena<K, V>,
    to: &mut Arena<K, V>,
    start: usize,
    end: usize,
    f: impl Fn(&V) -> V,
) {
    for i in start..end {
        to.push(f(&from[K::new(i)]));
    }
}

/// Moves ids of an entry from the prelude's arenas to a program's.
struct Shift {
    from: Marks,
    to: Marks,
}

/// `k`, an id at or after `from` in its arena, moved to start at `to`.
fn moved<K: EntityRef>(k: K, from: usize, to: usize) -> K {
    assert!(
        k.index() >= from,
        "an AD prelude entry refers to another entry (the prelude's invariant)"
    );
    K::new(k.index() - from + to)
}

impl Shift {
    fn var(&self, v: Var) -> Var {
        moved(v, self.from.vars, self.to.vars)
    }
    fn lambda(&self, l: LambdaId) -> LambdaId {
        moved(l, self.from.lambdas, self.to.lambdas)
    }
    fn group(&self, g: GroupId) -> GroupId {
        moved(g, self.from.groups, self.to.groups)
    }
    fn konst(&self, k: ConstId) -> ConstId {
        moved(k, self.from.consts, self.to.consts)
    }
    fn pat(&self, p: Option<PatId>) -> Option<PatId> {
        p.map(|p| moved(p, self.from.patterns, self.to.patterns))
    }

    fn lambda_data(&self, l: &Lambda) -> Lambda {
        Lambda {
            param: self.var(l.param),
            body: l
                .body
                .iter()
                .map(|b| Binding {
                    var: self.var(b.var),
                    rhs: self.rhs(&b.rhs),
                    span: b.span,
                })
                .collect(),
            result: self.var(l.result),
            free: l.free.iter().map(|v| self.var(*v)).collect(),
            group: l.group.map(|g| self.group(g)),
            origin: match l.origin {
                Origin::Transform { tag, of } => Origin::Transform {
                    tag,
                    of: self.lambda(of),
                },
                Origin::Backprop { of } => Origin::Backprop {
                    of: self.lambda(of),
                },
                o @ (Origin::Source | Origin::PrimTransform { .. } | Origin::Custom { .. }) => o,
            },
            name: l.name.clone(),
            span: l.span,
        }
    }

    fn rhs(&self, r: &Rhs) -> Rhs {
        match r {
            Rhs::Const(k) => Rhs::Const(self.konst(*k)),
            Rhs::Copy(v) => Rhs::Copy(self.var(*v)),
            Rhs::Closure { lambda, env } => Rhs::Closure {
                lambda: self.lambda(*lambda),
                env: env.iter().map(|v| self.var(*v)).collect(),
            },
            Rhs::Sibling(i) => Rhs::Sibling(*i),
            Rhs::App { f, arg } => Rhs::App {
                f: self.var(*f),
                arg: self.var(*arg),
            },
            Rhs::Cons { tags, car, cdr } => Rhs::Cons {
                tags: tags.clone(),
                car: self.var(*car),
                cdr: self.var(*cdr),
            },
            Rhs::Car { tags, pair, pat } => Rhs::Car {
                tags: tags.clone(),
                pair: self.var(*pair),
                pat: self.pat(*pat),
            },
            Rhs::Cdr { tags, pair, pat } => Rhs::Cdr {
                tags: tags.clone(),
                pair: self.var(*pair),
                pat: self.pat(*pat),
            },
            Rhs::Check {
                tags,
                var,
                expect,
                pat,
            } => Rhs::Check {
                tags: tags.clone(),
                var: self.var(*var),
                expect: self.konst(*expect),
                pat: self.pat(*pat),
            },
            Rhs::EnvRef { closure, index } => Rhs::EnvRef {
                closure: self.var(*closure),
                index: *index,
            },
            Rhs::EnvUpdate {
                closure,
                index,
                value,
            } => Rhs::EnvUpdate {
                closure: self.var(*closure),
                index: *index,
                value: self.var(*value),
            },
        }
    }
}
