//! Applications: calls of specialisations (direct or tail), and the
//! run-time checks of constants and patterns.

use crate::lowerer::*;
use base::EntityRef;
use fir::{self, Block, Cmp, Op, Term, Ty, Val};
use flow::{Av, AvId, BindInfo, LeafKind, Plan, SpecId};

impl Lowerer<'_> {
    /// Emits a run-time check that symbolic value `x` equals the datum.
    pub(super) fn check_datum(&mut self, fb: &mut Fb, x: AvId, d: &ir::ConstDatum, err: &Term) {
        match (self.ops.dom.get(x).clone(), d) {
            (Av::Leaf(Sym(v), LeafKind::Real), ir::ConstDatum::Real(c)) => {
                let k = fb.emit1(Op::F64Const(*c), Ty::F64);
                let ok = fb.emit1(Op::FCmp(Cmp::Eq, Val::from_number(v), k), Ty::Bool);
                self.guard(fb, ok, err);
            }
            (Av::Leaf(Sym(v), LeafKind::Bool), ir::ConstDatum::Bool(c)) => {
                let ok = if *c {
                    Val::from_number(v)
                } else {
                    fb.emit1(Op::Not(Val::from_number(v)), Ty::Bool)
                };
                self.guard(fb, ok, err);
            }
            (Av::Pair(a, b), ir::ConstDatum::Pair(x, y)) => {
                self.check_datum(fb, a, x, err);
                self.check_datum(fb, b, y, err);
            }
            (Av::Leaf(..), ir::ConstDatum::Vector(ds)) => self.check_vector_datum(fb, x, ds, err),
            _ => {}
        }
    }

    /// Continues only if `ok`; otherwise the run-time error `err`.
    pub(super) fn guard(&mut self, fb: &mut Fb, ok: Val, err: &Term) {
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

    pub(super) fn lower_app(
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
                            Av::Leaf(Sym(v), LeafKind::Bool) => Val::from_number(*v),
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
            Plan::Build(elem) => match self.lower_build(fb, b, info, &elem, arg) {
                Ok(av) => Flow::Value(av),
                Err(t) => Flow::Done(t),
            },
            _ => Flow::Done(Term::Error(
                self.string("error: internal error: application"),
            )),
        }
    }

    /// A call of specialisation `s` with closure `f` and argument `arg`
    /// (symbolic), as a tail call when possible.
    pub(super) fn call_spec(
        &mut self,
        fb: &mut Fb,
        s: SpecId,
        f: AvId,
        arg: AvId,
        tail: bool,
    ) -> Flow {
        let Some(callee) = self.func_of[s.index()] else {
            // Its call is its result (`folded.rs`).
            let result = self.specs[s.index()].result;
            return Flow::Value(self.symbolize(fb, result, &mut std::iter::empty()));
        };
        // Not the whole specialisation: its plans, one per binding, are
        // not needed here (a call site each).
        let spec = &self.specs[s.index()];
        let (lambda, spec_env, spec_arg, spec_result) =
            (spec.lambda, spec.env.clone(), spec.arg, spec.result);
        let mut args = Vec::new();
        if let Av::Closure(_, env) = self.ops.dom.get(f).clone() {
            for (x, t) in env.iter().zip(&spec_env) {
                self.coerce(fb, *x, *t, &mut args);
            }
        }
        self.coerce(fb, arg, spec_arg, &mut args);
        if tail && fb.result == Some(spec_result) {
            self.record_tail_call(fb.site, lambda, callee, &args);
            return Flow::Done(Term::TailCall(callee, args));
        }
        let tys = layout_of(&self.ops.dom, spec_result);
        // A call from the user's code is where errors without a position
        // of their own are reported while it runs.
        let op = match fb.site.filter(|s| s.file.0 != 0) {
            Some(s) => {
                let at = self.site_text(s);
                Op::CallAt(callee, args, self.string(&at))
            }
            None => Op::Call(callee, args),
        };
        let results = fb.emit(op, &tys);
        if spec_result == self.ops.dom.bottom() {
            return Flow::Done(Term::Error(
                self.string("error: internal error: a call that never returns returned"),
            ));
        }
        let mut it = results.into_iter();
        Flow::Value(self.symbolize(fb, spec_result, &mut it))
    }
}
