//! The AD transformations, as pure functions from core IR lambdas to new
//! core IR lambdas.
//!
//! Input: a [`ir::Program`] and a lambda (or a primitive). Output: the id of
//! the transformed lambda, appended to the same program. Transformations are
//! memoised per (tag, lambda) in [`AdMemo`], so a closure transformed twice
//! shares one result, and the inverse operations can find their way back
//! through [`ir::Origin`].
//!
//! Both consumers use exactly this code: the interpreter transforms a
//! closure's lambda when a program applies `*j`, `bundle`, `perturb` or
//! `sensitize` to it at run time, and the flow analysis does the same at
//! compile time. Nothing here looks at run-time values.
//!
//! - [`transform`]`(Perturb | Sensitize | Forward)` retags code: variables
//!   are renamed, constants get the tag, pair operations work one tag level
//!   deeper. The meaning of "one level deeper" for each tag is the value
//!   model's business (crate `interp`), not the code's.
//! - [`transform`]`(Reverse)` is the reverse transformation of section 4 of
//!   Pearlmutter & Siskind, "Reverse-mode AD in a functional framework": a
//!   forward phase that pairs every application with its backpropagator, and
//!   a backpropagator lambda that accumulates sensitivities with `plus` in
//!   reverse order and returns `(sensitize (cons df dx))`, `df` being the
//!   closure-shaped sensitivity of the lambda's free variables.
//! - A procedure made by `custom-*j` ([`ir::Origin::Custom`]) has the
//!   user's derivative as its reverse transform (`custom.rs`).
//! - [`prim_transform`] gives the transformed primitives, closed lambdas
//!   of the AD prelude (`ir::prelude`), which the front end wrote in VLAD
//!   and lowered: they come with the program, already core IR.
//!
//! Dependencies: `ir` and `base` only; nothing here reads source text.

mod custom;
mod prelude;
mod retag;
mod reverse;

use ir::{ConstId, GroupId, LambdaId, Prim, Program, Tag, Var};
use rustc_hash::FxHashMap as HashMap;

pub use prelude::prim_transform;

/// Memo tables of every transformation done so far on one program.
#[derive(Default, Debug)]
pub struct AdMemo {
    lambdas: HashMap<(Tag, LambdaId), LambdaId>,
    groups: HashMap<(Tag, GroupId), GroupId>,
    vars: HashMap<(Tag, Var), Var>,
    consts: HashMap<(Tag, ConstId), ConstId>,
    prims: HashMap<(Tag, Prim), LambdaId>,
    /// Count of lambdas transformed (not memo hits), for `--count-ops`.
    pub lambdas_transformed: u64,
}

/// The result of undoing a transformation.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Untransformed {
    Lambda(LambdaId),
    Prim(Prim),
}

/// `tag` applied to the code of lambda `l` (and, for members of a letrec
/// group, to the whole group).
pub fn transform(prog: &mut Program, memo: &mut AdMemo, tag: Tag, l: LambdaId) -> LambdaId {
    if let Some(&t) = memo.lambdas.get(&(tag, l)) {
        return t;
    }
    if let Some(g) = prog.lambdas[l].group {
        let members = prog.groups[g].lambdas.clone();
        let mut new_members = Vec::with_capacity(members.len());
        for m in &members {
            let t = transform_one(prog, memo, tag, *m);
            memo.lambdas.insert((tag, *m), t);
            new_members.push(t);
        }
        let free = prog.groups[g]
            .free
            .clone()
            .into_iter()
            .map(|v| tvar(prog, memo, tag, v))
            .collect::<Vec<_>>();
        let ng = prog.groups.push(ir::Group {
            lambdas: new_members.clone(),
            free,
        });
        memo.groups.insert((tag, g), ng);
        for t in &new_members {
            prog.lambdas[*t].group = Some(ng);
        }
        memo.lambdas[&(tag, l)]
    } else {
        let t = transform_one(prog, memo, tag, l);
        memo.lambdas.insert((tag, l), t);
        t
    }
}

fn transform_one(prog: &mut Program, memo: &mut AdMemo, tag: Tag, l: LambdaId) -> LambdaId {
    memo.lambdas_transformed += 1;
    match tag {
        Tag::Reverse => {
            custom::reverse(prog, memo, l).unwrap_or_else(|| reverse::reverse(prog, memo, l))
        }
        _ => retag::retag(prog, memo, tag, l),
    }
}

/// What the inverse of the outermost transformation of `l` gives back, if
/// `l` is the `tag` transformation of something.
pub fn untransform(prog: &Program, tag: Tag, l: LambdaId) -> Option<Untransformed> {
    match prog.lambdas[l].origin {
        ir::Origin::Transform { tag: t, of } if t == tag => Some(Untransformed::Lambda(of)),
        ir::Origin::PrimTransform { tag: t, prim } if t == tag => Some(Untransformed::Prim(prim)),
        _ => None,
    }
}

/// The variable standing for `tag(v)` in transformed code.
pub(crate) fn tvar(prog: &mut Program, memo: &mut AdMemo, tag: Tag, v: Var) -> Var {
    if let Some(&t) = memo.vars.get(&(tag, v)) {
        return t;
    }
    let t = prog.derived_var(v, tag.letter());
    memo.vars.insert((tag, v), t);
    t
}

/// The constant `tag(k)`.
pub(crate) fn tconst(prog: &mut Program, memo: &mut AdMemo, tag: Tag, k: ConstId) -> ConstId {
    if let Some(&t) = memo.consts.get(&(tag, k)) {
        return t;
    }
    let c = &prog.consts[k];
    let nc = ir::Const {
        datum: c.datum.clone(),
        tags: ir::push_tag(tag, &c.tags),
    };
    let t = prog.consts.push(nc);
    memo.consts.insert((tag, k), t);
    t
}

pub(crate) fn tname(prog: &Program, tag: Tag, l: LambdaId) -> Option<String> {
    prog.lambdas[l]
        .name
        .as_ref()
        .map(|n| format!("{}^{}", n, tag.letter()))
}
