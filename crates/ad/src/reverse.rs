//! The reverse transformation (`*j` of code), section 4 of the paper.
//!
//! For `λx0. let x1 = e1; ...; xn = en in xr` with free variables
//! `x'1 ... x'l` it builds
//!
//! ```text
//! λ x0^R. let φ(x1 = e1); ...; φ(xn = en);
//!             bp = λ s. (sensitivities, accumulated in reverse: ρ(en) ... ρ(e1))
//!                       (sensitize (cons [s(x'1) ... s(x'l)] s(x0)))
//!         in (cons xr^R bp)
//! ```
//!
//! Sensitivity variables hold sensitized values (docs/reference.md): a
//! backpropagator receives `(sensitize dy)` and returns
//! `(sensitize (cons df dx))`, where `df` is a closure of the same lambda
//! whose environment holds the sensitivities of the free variables.
//!
//! Two liberties keep the backpropagator as cheap as the paper promises
//! without changing what it computes:
//! - a sensitivity variable is only materialised (as
//!   `(sensitize (zero (*j-inverse x^R)))`) when it is read before anything
//!   was accumulated into it; the first contribution simply becomes its
//!   value, so there is no `plus` with a zero;
//! - the backpropagator of an application whose result received no
//!   sensitivity is not called: its contribution would be zero.
//!
//! Constants are not free variables here (they are bound in the body), so
//! contributions to them are dropped rather than returned in `df`.

use crate::{tconst, tname, transform, tvar, AdMemo};
use ir::{push_tag, Binding, ConstDatum, LambdaId, Origin, Prim, Program, Rhs, Tag, Var};
use rustc_hash::{FxHashMap as HashMap, FxHashSet as HashSet};

pub(crate) fn reverse(prog: &mut Program, memo: &mut AdMemo, l: LambdaId) -> LambdaId {
    let lam = prog.lambdas[l].clone();
    let r = Tag::Reverse;
    let mut rv = |prog: &mut Program, v: Var| tvar(prog, memo, r, v);

    // ---- forward phase ---------------------------------------------------
    let param = rv(prog, lam.param);
    let mut fwd: Vec<Binding> = Vec::new();
    // The backpropagator variable of each application binding.
    let mut bps: HashMap<Var, Var> = HashMap::default();
    let mut consts: HashSet<Var> = HashSet::default();
    for b in lam.body.iter() {
        let x = tvar(prog, memo, r, b.var);
        let rhs = match &b.rhs {
            Rhs::Const(k) => {
                consts.insert(b.var);
                Rhs::Const(tconst(prog, memo, r, *k))
            }
            Rhs::Copy(y) => Rhs::Copy(tvar(prog, memo, r, *y)),
            Rhs::Closure { lambda, env } => {
                let env = env.iter().map(|v| tvar(prog, memo, r, *v)).collect();
                Rhs::Closure {
                    lambda: transform(prog, memo, r, *lambda),
                    env,
                }
            }
            Rhs::Sibling(i) => Rhs::Sibling(*i),
            Rhs::App { f, arg } => {
                let (f, arg) = (tvar(prog, memo, r, *f), tvar(prog, memo, r, *arg));
                let t = prog.new_var("fb");
                fwd.push(Binding {
                    var: t,
                    rhs: Rhs::App { f, arg },
                    span: b.span,
                });
                let bp = prog.derived_var(b.var, 'B');
                bps.insert(b.var, bp);
                fwd.push(Binding {
                    var: x,
                    rhs: Rhs::Car {
                        tags: vec![],
                        pair: t,
                        pat: None,
                    },
                    span: b.span,
                });
                fwd.push(Binding {
                    var: bp,
                    rhs: Rhs::Cdr {
                        tags: vec![],
                        pair: t,
                        pat: None,
                    },
                    span: b.span,
                });
                continue;
            }
            Rhs::Cons { tags, car, cdr } => Rhs::Cons {
                tags: push_tag(r, tags),
                car: tvar(prog, memo, r, *car),
                cdr: tvar(prog, memo, r, *cdr),
            },
            Rhs::Car { tags, pair, pat } => Rhs::Car {
                tags: push_tag(r, tags),
                pair: tvar(prog, memo, r, *pair),
                pat: *pat,
            },
            Rhs::Cdr { tags, pair, pat } => Rhs::Cdr {
                tags: push_tag(r, tags),
                pair: tvar(prog, memo, r, *pair),
                pat: *pat,
            },
            Rhs::Check {
                tags,
                var,
                expect,
                pat,
            } => Rhs::Check {
                tags: push_tag(r, tags),
                var: tvar(prog, memo, r, *var),
                expect: *expect,
                pat: *pat,
            },
            Rhs::EnvRef { closure, index } => Rhs::EnvRef {
                closure: tvar(prog, memo, r, *closure),
                index: *index,
            },
            Rhs::EnvUpdate {
                closure,
                index,
                value,
            } => Rhs::EnvUpdate {
                closure: tvar(prog, memo, r, *closure),
                index: *index,
                value: tvar(prog, memo, r, *value),
            },
        };
        fwd.push(Binding {
            var: x,
            rhs,
            span: b.span,
        });
    }

    // ---- reverse phase ---------------------------------------------------
    let s_in = prog.derived_var(lam.result, 'S');
    let mut bw = Backward {
        body: Vec::new(),
        cur: HashMap::default(),
        consts,
        prims: HashMap::default(),
    };
    bw.accumulate(prog, lam.result, s_in);
    for b in lam.body.iter().rev() {
        let Some(s) = bw.cur.get(&b.var).copied() else {
            continue;
        };
        match &b.rhs {
            Rhs::Const(_) => {}
            Rhs::Copy(y) | Rhs::Check { var: y, .. } => bw.accumulate(prog, *y, s),
            Rhs::Closure { env, .. } => {
                for (i, y) in env.iter().enumerate() {
                    let t = bw.emit(
                        prog,
                        "se",
                        Rhs::EnvRef {
                            closure: s,
                            index: i as u32,
                        },
                    );
                    bw.accumulate(prog, *y, t);
                }
            }
            Rhs::Sibling(_) => {
                // A sibling's environment is this lambda's environment.
                for (i, y) in lam.free.iter().enumerate() {
                    let t = bw.emit(
                        prog,
                        "se",
                        Rhs::EnvRef {
                            closure: s,
                            index: i as u32,
                        },
                    );
                    bw.accumulate(prog, *y, t);
                }
            }
            Rhs::App { f, arg } => {
                let bp = bps[&b.var];
                let t = bw.emit(prog, "sb", Rhs::App { f: bp, arg: s });
                let sf = bw.emit(
                    prog,
                    "sf",
                    Rhs::Car {
                        tags: vec![Tag::Sensitize],
                        pair: t,
                        pat: None,
                    },
                );
                let sa = bw.emit(
                    prog,
                    "sa",
                    Rhs::Cdr {
                        tags: vec![Tag::Sensitize],
                        pair: t,
                        pat: None,
                    },
                );
                bw.accumulate(prog, *f, sf);
                bw.accumulate(prog, *arg, sa);
            }
            Rhs::Cons { tags, car, cdr } => {
                let st = push_tag(Tag::Sensitize, tags);
                let sa = bw.emit(
                    prog,
                    "sa",
                    Rhs::Car {
                        tags: st.clone(),
                        pair: s,
                        pat: None,
                    },
                );
                let sd = bw.emit(
                    prog,
                    "sd",
                    Rhs::Cdr {
                        tags: st,
                        pair: s,
                        pat: None,
                    },
                );
                bw.accumulate(prog, *car, sa);
                bw.accumulate(prog, *cdr, sd);
            }
            Rhs::Car { tags, pair, .. } | Rhs::Cdr { tags, pair, .. } => {
                let is_car = matches!(b.rhs, Rhs::Car { .. });
                let rp = tvar(prog, memo, r, *pair);
                let rt = push_tag(r, tags);
                let other_rhs = if is_car {
                    Rhs::Cdr {
                        tags: rt,
                        pair: rp,
                        pat: None,
                    }
                } else {
                    Rhs::Car {
                        tags: rt,
                        pair: rp,
                        pat: None,
                    }
                };
                let other = bw.emit(prog, "o", other_rhs);
                let z = bw.zero_sens(prog, other);
                let (a, d) = if is_car { (s, z) } else { (z, s) };
                let c = bw.emit(
                    prog,
                    "sp",
                    Rhs::Cons {
                        tags: push_tag(Tag::Sensitize, tags),
                        car: a,
                        cdr: d,
                    },
                );
                bw.accumulate(prog, *pair, c);
            }
            Rhs::EnvRef { closure, index } => {
                let rc = tvar(prog, memo, r, *closure);
                let z = bw.zero_sens(prog, rc);
                let u = bw.emit(
                    prog,
                    "su",
                    Rhs::EnvUpdate {
                        closure: z,
                        index: *index,
                        value: s,
                    },
                );
                bw.accumulate(prog, *closure, u);
            }
            Rhs::EnvUpdate {
                closure,
                index,
                value,
            } => {
                let rvv = tvar(prog, memo, r, *value);
                let zv = bw.zero_sens(prog, rvv);
                let u = bw.emit(
                    prog,
                    "su",
                    Rhs::EnvUpdate {
                        closure: s,
                        index: *index,
                        value: zv,
                    },
                );
                bw.accumulate(prog, *closure, u);
                let e = bw.emit(
                    prog,
                    "se",
                    Rhs::EnvRef {
                        closure: s,
                        index: *index,
                    },
                );
                bw.accumulate(prog, *value, e);
            }
        }
    }
    let mut df_env = Vec::with_capacity(lam.free.len());
    for y in &lam.free {
        let ry = tvar(prog, memo, r, *y);
        df_env.push(bw.materialize(prog, *y, ry));
    }
    let dx = bw.materialize(prog, lam.param, param);
    let sl = transform(prog, memo, Tag::Sensitize, l);
    let df = bw.emit(
        prog,
        "df",
        Rhs::Closure {
            lambda: sl,
            env: df_env,
        },
    );
    let out = bw.emit(
        prog,
        "sout",
        Rhs::Cons {
            tags: vec![Tag::Sensitize],
            car: df,
            cdr: dx,
        },
    );
    let name = prog.lambdas[l].name.as_ref().map(|n| format!("{n}^B"));
    let (bp_lambda, bp_free) = bw.into_backprop(prog, l, s_in, out, name, lam.span);
    let bpv = prog.new_var("bp");
    fwd.push(Binding {
        var: bpv,
        rhs: Rhs::Closure {
            lambda: bp_lambda,
            env: bp_free,
        },
        span: lam.span,
    });
    let rres = tvar(prog, memo, r, lam.result);
    let res = prog.new_var("rr");
    fwd.push(Binding {
        var: res,
        rhs: Rhs::Cons {
            tags: vec![],
            car: rres,
            cdr: bpv,
        },
        span: lam.span,
    });
    let free = lam.free.iter().map(|v| tvar(prog, memo, r, *v)).collect();
    let name = tname(prog, r, l);
    prog.lambdas.push(ir::Lambda {
        param,
        body: fwd.into(),
        result: res,
        free,
        group: None,
        origin: Origin::Transform { tag: r, of: l },
        name,
        span: lam.span,
    })
}

/// The backpropagator body under construction (also the emitter of the
/// custom reverse transform, `custom.rs`).
pub(crate) struct Backward {
    pub(crate) body: Vec<Binding>,
    /// Primal variable to the variable holding its sensitivity so far.
    cur: HashMap<Var, Var>,
    /// Variables bound to constants: their sensitivities are not wanted.
    consts: HashSet<Var>,
    /// Variables bound to the AD primitives the backpropagator calls.
    prims: HashMap<Prim, Var>,
}

impl Backward {
    pub(crate) fn new() -> Backward {
        Backward {
            body: Vec::new(),
            cur: HashMap::default(),
            consts: HashSet::default(),
            prims: HashMap::default(),
        }
    }

    /// The backpropagator of lambda `of`: parameter `param`, this body,
    /// result `out`; with its free variables (the closure's environment).
    pub(crate) fn into_backprop(
        self,
        prog: &mut Program,
        of: LambdaId,
        param: Var,
        out: Var,
        name: Option<String>,
        span: Option<base::diag::Span>,
    ) -> (LambdaId, Vec<Var>) {
        let free = ir::free_vars(param, &self.body, out);
        let id = prog.lambdas.push(ir::Lambda {
            param,
            body: self.body.into(),
            result: out,
            free: free.clone(),
            group: None,
            origin: Origin::Backprop { of },
            name,
            span,
        });
        (id, free)
    }

    pub(crate) fn emit(&mut self, prog: &mut Program, name: &str, rhs: Rhs) -> Var {
        let v = prog.new_var(name);
        self.body.push(Binding {
            var: v,
            rhs,
            span: None,
        });
        v
    }

    pub(crate) fn prim(&mut self, prog: &mut Program, p: Prim) -> Var {
        if let Some(v) = self.prims.get(&p) {
            return *v;
        }
        let k = prog.consts.push(ir::Const {
            datum: ConstDatum::Prim(p),
            tags: vec![],
        });
        let v = self.emit(prog, p.name(), Rhs::Const(k));
        self.prims.insert(p, v);
        v
    }

    pub(crate) fn call(&mut self, prog: &mut Program, p: Prim, arg: Var) -> Var {
        let f = self.prim(prog, p);
        self.emit(prog, "t", Rhs::App { f, arg })
    }

    /// `x`'s sensitivity += `s`.
    fn accumulate(&mut self, prog: &mut Program, x: Var, s: Var) {
        if self.consts.contains(&x) {
            return;
        }
        let new = match self.cur.get(&x) {
            None => s,
            Some(&old) => {
                let pair = self.emit(
                    prog,
                    "p",
                    Rhs::Cons {
                        tags: vec![],
                        car: old,
                        cdr: s,
                    },
                );
                self.call(prog, Prim::Plus, pair)
            }
        };
        self.cur.insert(x, new);
    }

    /// `(sensitize (zero (*j-inverse rx)))`: a zero sensitivity shaped like
    /// the primal value whose reverse value is `rx`.
    pub(crate) fn zero_sens(&mut self, prog: &mut Program, rx: Var) -> Var {
        let a = self.call(prog, Prim::StarJInverse, rx);
        let b = self.call(prog, Prim::Zero, a);
        self.call(prog, Prim::Sensitize, b)
    }

    /// The final sensitivity of `x` (zero if nothing reached it).
    fn materialize(&mut self, prog: &mut Program, x: Var, rx: Var) -> Var {
        match self.cur.get(&x) {
            Some(&s) => s,
            None => self.zero_sens(prog, rx),
        }
    }
}
