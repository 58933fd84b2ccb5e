//! The perturbation, sensitivity and forward transformations of code.
//!
//! All three have the same shape: every variable `x` becomes `T(x)`,
//! constants become `T(c)`, pair operations get `T` pushed on their tag
//! stack, closures are built from `T` of their lambda, and applications
//! stay applications (a transformed procedure maps transformed arguments to
//! transformed results).

use crate::{tconst, tname, transform, tvar, AdMemo};
use ir::{push_tag, Binding, LambdaId, Origin, Program, Rhs, Tag};

pub(crate) fn retag(prog: &mut Program, memo: &mut AdMemo, tag: Tag, l: LambdaId) -> LambdaId {
    let lam = prog.lambdas[l].clone();
    let mut t = |prog: &mut Program, v| tvar(prog, memo, tag, v);
    let param = t(prog, lam.param);
    let result = t(prog, lam.result);
    let free: Vec<_> = lam.free.iter().map(|v| t(prog, *v)).collect();
    let mut body = Vec::with_capacity(lam.body.len());
    for b in lam.body.iter() {
        let rhs = retag_rhs(prog, memo, tag, &b.rhs);
        let var = tvar(prog, memo, tag, b.var);
        body.push(Binding {
            var,
            rhs,
            span: b.span,
        });
    }
    let name = tname(prog, tag, l);
    prog.lambdas.push(ir::Lambda {
        param,
        body: body.into(),
        result,
        free,
        group: None,
        origin: Origin::Transform { tag, of: l },
        name,
        span: lam.span,
    })
}

fn retag_rhs(prog: &mut Program, memo: &mut AdMemo, tag: Tag, rhs: &Rhs) -> Rhs {
    let mut t = |prog: &mut Program, v| tvar(prog, memo, tag, v);
    match rhs {
        Rhs::Const(k) => Rhs::Const(tconst(prog, memo, tag, *k)),
        Rhs::Copy(v) => Rhs::Copy(t(prog, *v)),
        Rhs::Closure { lambda, env } => {
            let env = env.iter().map(|v| t(prog, *v)).collect();
            Rhs::Closure {
                lambda: transform(prog, memo, tag, *lambda),
                env,
            }
        }
        Rhs::Sibling(i) => Rhs::Sibling(*i),
        Rhs::App { f, arg } => Rhs::App {
            f: t(prog, *f),
            arg: t(prog, *arg),
        },
        Rhs::Cons { tags, car, cdr } => Rhs::Cons {
            tags: push_tag(tag, tags),
            car: t(prog, *car),
            cdr: t(prog, *cdr),
        },
        Rhs::Car { tags, pair, pat } => Rhs::Car {
            tags: push_tag(tag, tags),
            pair: t(prog, *pair),
            pat: *pat,
        },
        Rhs::Cdr { tags, pair, pat } => Rhs::Cdr {
            tags: push_tag(tag, tags),
            pair: t(prog, *pair),
            pat: *pat,
        },
        Rhs::Check {
            tags,
            var,
            expect,
            pat,
        } => Rhs::Check {
            tags: push_tag(tag, tags),
            var: t(prog, *var),
            expect: *expect,
            pat: *pat,
        },
        Rhs::EnvRef { closure, index } => Rhs::EnvRef {
            closure: t(prog, *closure),
            index: *index,
        },
        Rhs::EnvUpdate {
            closure,
            index,
            value,
        } => Rhs::EnvUpdate {
            closure: t(prog, *closure),
            index: *index,
            value: t(prog, *value),
        },
    }
}
