//! The reverse transform of a procedure with a custom derivative
//! (docs/reference.md, `(custom-*j f fr)`): instead of differentiating the code,
//! which would differentiate `f`, it applies the user's `fr`.
//!
//! For the procedure `g` that `custom-*j` returns (a closure whose
//! environment holds `f` and `fr`), `(*j g)` is a closure of
//!
//! ```text
//! λ x^R. let (cons y^R bp) = ((*j-inverse fr^R) x^R)
//!        in (cons y^R (λ s. let (sensitize (cons df dx)) = (bp s)
//!                           in (sensitize (cons g' dx))))
//! ```
//!
//! where `g'`, the sensitivity of `g` itself, is a closure of `g`'s own
//! code holding `df` for `f` and a zero for `fr`: a sensitivity has the
//! shape of the procedure, ignoring the attachment (`zero` and `plus` see
//! `g` as `f`), and the user's `df` already accounts for everything `fr`
//! closes over. Being code like any other, the result transforms again:
//! `*j` of it differentiates `fr`'s own code (reverse over reverse), and
//! forward mode over it transforms `fr` too (Hessians through a custom
//! gradient). Only `*j` of `g` itself uses the attachment; forward mode
//! applied to `g` differentiates `f`.
//!
//! The shape checks of what `fr` and its backpropagator return are
//! patterns owned by `custom-*j`, so a wrong shape is a run-time error
//! naming it and the value found, in `run` and in compiled code alike.
//! So are `df` and `dx` of the wrong shape: each must conform (be a valid
//! operand of `plus`) to the zero of what it is the sensitivity of, which
//! `custom-*j-conform` checks where the backpropagator returns them rather
//! than wherever `plus` would later meet them. The check is an
//! application like any other, so it is transformed along with the rest
//! (its own transforms are in the prelude), and the flow analysis decides
//! it at compile time whenever the shapes are known.

use crate::reverse::Backward;
use crate::{transform, tvar, AdMemo};
use ir::{Binding, LambdaId, Origin, PatInfo, Prim, Program, Rhs, Tag, Var};

pub(crate) fn reverse(prog: &mut Program, memo: &mut AdMemo, l: LambdaId) -> Option<LambdaId> {
    let Origin::Custom { f, fr } = prog.lambdas[l].origin else {
        return None;
    };
    let lam = prog.lambdas[l].clone();
    let (f, fr) = (f as usize, fr as usize);
    if f >= lam.free.len() || fr >= lam.free.len() {
        return None;
    }
    let r = Tag::Reverse;
    let span = lam.span.unwrap_or(base::diag::Span {
        file: base::diag::FileId(0),
        line: 0,
        col: 0,
    });
    let free: Vec<Var> = lam.free.iter().map(|v| tvar(prog, memo, r, *v)).collect();
    let param = tvar(prog, memo, r, lam.param);

    // ---- forward phase: the user's derivative ------------------------
    let mut fwd = Backward::new();
    let fr0 = fwd.call(prog, Prim::StarJInverse, free[fr]);
    let res = fwd.emit(prog, "fr", Rhs::App { f: fr0, arg: param });
    let pat = pattern(prog, "(cons reverse-result backpropagator)", span);
    let y = fwd.emit(prog, "y", car(vec![], res, pat, true));
    let bp = fwd.emit(prog, "bp", car(vec![], res, pat, false));

    // ---- its backpropagator, answering for `g` instead of `f` ---------
    let s = prog.new_var("s");
    let mut bw = Backward::new();
    let out = bw.emit(prog, "u", Rhs::App { f: bp, arg: s });
    let pat = pattern(
        prog,
        "(sensitize (cons procedure-sensitivity argument-sensitivity))",
        span,
    );
    let sens = vec![Tag::Sensitize];
    let df = bw.emit(prog, "df", car(sens.clone(), out, pat, true));
    let dx = bw.emit(prog, "dx", car(sens.clone(), out, pat, false));
    bw.conform(prog, df, free[f]);
    bw.conform(prog, dx, param);
    let mut env = Vec::with_capacity(free.len());
    for (i, v) in free.iter().enumerate() {
        env.push(if i == f { df } else { bw.zero_sens(prog, *v) });
    }
    let sl = transform(prog, memo, Tag::Sensitize, l);
    let dg = bw.emit(prog, "dg", Rhs::Closure { lambda: sl, env });
    let result = bw.emit(
        prog,
        "sout",
        Rhs::Cons {
            tags: sens,
            car: dg,
            cdr: dx,
        },
    );
    let name = Some("custom-*j^B".to_string());
    let (bp_lambda, bp_free) = bw.into_backprop(prog, l, s, result, name, lam.span);
    let bpw = fwd.emit(
        prog,
        "bp",
        Rhs::Closure {
            lambda: bp_lambda,
            env: bp_free,
        },
    );
    let result = fwd.emit(
        prog,
        "rr",
        Rhs::Cons {
            tags: vec![],
            car: y,
            cdr: bpw,
        },
    );
    let body: Vec<Binding> = fwd.body;
    Some(prog.lambdas.push(ir::Lambda {
        param,
        body: body.into(),
        result,
        free,
        group: None,
        origin: Origin::Transform { tag: r, of: l },
        name: Some("custom-*j^R".to_string()),
        span: lam.span,
    }))
}

impl Backward {
    /// `(custom-*j-conform (unsensitize s) (zero (*j-inverse rx)))`:
    /// sensitivity `s` must have the shape of the primal value whose
    /// reverse value is `rx`. Its result is not needed: the application
    /// either returns `s`'s inside or stops the program.
    fn conform(&mut self, prog: &mut Program, s: Var, rx: Var) {
        let inside = self.call(prog, Prim::Unsensitize, s);
        let primal = self.call(prog, Prim::StarJInverse, rx);
        let zero = self.call(prog, Prim::Zero, primal);
        let pair = self.emit(
            prog,
            "c",
            Rhs::Cons {
                tags: vec![],
                car: inside,
                cdr: zero,
            },
        );
        self.call(prog, Prim::CustomConform, pair);
    }
}

/// A shape `custom-*j` requires of what the user's code returns.
fn pattern(prog: &mut Program, text: &str, span: base::diag::Span) -> ir::PatId {
    prog.patterns.push(PatInfo {
        owner: Some("custom-*j".to_string()),
        text: text.to_string(),
        span,
    })
}

fn car(tags: Vec<Tag>, pair: Var, pat: ir::PatId, is_car: bool) -> Rhs {
    let pat = Some(pat);
    if is_car {
        Rhs::Car { tags, pair, pat }
    } else {
        Rhs::Cdr { tags, pair, pat }
    }
}
