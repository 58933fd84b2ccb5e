//! Call sites: where an error raised without a position of its own is
//! reported (`fir::ErrPart::Site`), and the note on the derivatives in
//! effect there.
//!
//! A call from the user's code is a `CallAt` of its position. A tail call
//! from the user's code into code that is not the user's would leave the
//! site of the call around it, so an error of the callee would be
//! reported at the wrong call. The interpreter blames the tail call
//! (`interp`'s `TailSites`) for what a primitive as the user sees it
//! raises (a transformed primitive of the AD prelude, anywhere in it) and
//! for a parameter of a procedure of the standard library that does not
//! match. Such tail calls are recorded while lowering, and afterwards each
//! one whose callee can raise such an error becomes a `CallAt` and a
//! return. Only those change: a callee that cannot fail so keeps its tail
//! call, so the code of programs without such errors is what it was.

use crate::lowerer::Lowerer;
use base::diag::Span;
use base::EntityRef;
use fir::{Block, ErrPart, FuncId, Inst, Module, Op, Term, Val};

/// A tail call from the user's code into library code.
pub(crate) struct TailSite {
    /// The calling function (`None`: `vlad_main`).
    pub(crate) caller: Option<FuncId>,
    pub(crate) callee: FuncId,
    /// Is the callee the code of a primitive?
    pub(crate) primitive: bool,
    pub(crate) args: Vec<Val>,
    /// The text of the call site ([`Lowerer::site_text`]).
    pub(crate) at: String,
}

impl Lowerer<'_> {
    /// The call site at `s` as compiled code holds it: its position, then
    /// the note on the derivatives in effect in the code being lowered
    /// (`base::message::SITE_NOTE`), which ends the message.
    pub(crate) fn site_text(&self, s: Span) -> String {
        format!("{}{}", self.map.locate(s), self.derivative_note())
    }

    /// `\n  note: ...` on the derivatives in effect in the code being
    /// lowered, or nothing.
    pub(crate) fn derivative_note(&self) -> String {
        self.code_of
            .and_then(|l| {
                ir::message::derivative_note(&self.ops.prog, &self.operator_sites, l, self.map)
            })
            .map(|n| format!("\n  note: {n}"))
            .unwrap_or_default()
    }

    /// Records a tail call at `site` of `callee`, specialisation of
    /// `lambda`, when it goes from the user's code into library code.
    pub(crate) fn record_tail_call(
        &mut self,
        site: Option<Span>,
        lambda: ir::LambdaId,
        callee: FuncId,
        args: &[Val],
    ) {
        let user = |s: Option<Span>| s.is_some_and(|s| s.file.0 != 0);
        let Some(s) = site.filter(|s| user(Some(*s))) else {
            return;
        };
        if user(self.ops.prog.lambdas[lambda].span) {
            return;
        }
        let at = self.site_text(s);
        self.tail_sites.push(TailSite {
            caller: self.lowering,
            callee,
            primitive: self.ops.prog.prim_chain(lambda).is_some(),
            args: args.to_vec(),
            at,
        });
    }

    /// Makes each recorded tail call whose callee can raise an error the
    /// call is blamed for a call at that site and a return.
    pub(crate) fn place_tail_calls(&mut self) {
        let sites = std::mem::take(&mut self.tail_sites);
        if sites.is_empty() {
            return;
        }
        let raises = raises_at_site(&self.module);
        for t in sites {
            let blamed = if t.primitive {
                raises[t.callee.index()]
            } else {
                self.pattern_sites.contains(&t.callee)
            };
            if !blamed {
                continue;
            }
            let Some(caller) = t.caller.or(self.module.main) else {
                continue;
            };
            let at = self.string(&t.at);
            let returns = self.module.funcs[t.callee.index()].returns.clone();
            let f = &mut self.module.funcs[caller.index()];
            let mut types = std::mem::take(&mut f.types);
            if let Some(b) = find_tail_call(&mut f.body, t.callee, &t.args) {
                let results: Vec<Val> = returns
                    .iter()
                    .map(|ty| {
                        types.push(*ty);
                        Val::new(types.len() - 1)
                    })
                    .collect();
                b.insts.push(Inst {
                    results: results.clone(),
                    op: Op::CallAt(t.callee, t.args, at),
                });
                b.term = Term::Return(results);
            }
            f.types = types;
        }
    }
}

/// The block of `b` (or `b` itself) that ends in a tail call of `callee`
/// with `args`.
fn find_tail_call<'b>(b: &'b mut Block, callee: FuncId, args: &[Val]) -> Option<&'b mut Block> {
    if matches!(&b.term, Term::TailCall(g, a) if *g == callee && a == args) {
        return Some(b);
    }
    for i in &mut b.insts {
        if let Op::If { then_, else_, .. } = &mut i.op {
            if let Some(found) = find_tail_call(then_, callee, args) {
                return Some(found);
            }
            if let Some(found) = find_tail_call(else_, callee, args) {
                return Some(found);
            }
        }
    }
    None
}

/// Which functions can raise an error reported at the running call site:
/// one with such an error term or a `read-real` whose message has no
/// position (`base::message::UNPLACED`), or calling one without a site of
/// its own.
fn raises_at_site(m: &Module) -> Vec<bool> {
    let n = m.funcs.len();
    let mut raises = vec![false; n];
    // The callees each function passes the running site on to.
    let mut inherits: Vec<Vec<FuncId>> = vec![Vec::new(); n];
    for (i, f) in m.funcs.iter().enumerate() {
        each_block(&f.body, &mut |b| {
            match &b.term {
                Term::ErrorWith(parts) if parts.contains(&ErrPart::Site) => raises[i] = true,
                Term::TailCall(g, _) => inherits[i].push(*g),
                _ => {}
            }
            for inst in &b.insts {
                match &inst.op {
                    Op::ReadReal(s)
                        if m.strings[s.index()].starts_with(base::message::UNPLACED) =>
                    {
                        raises[i] = true
                    }
                    Op::Call(g, _)
                    | Op::VecBuild {
                        func: g, at: None, ..
                    } => inherits[i].push(*g),
                    _ => {}
                }
            }
        });
    }
    let mut changed = true;
    while changed {
        changed = false;
        for i in 0..n {
            if !raises[i] && inherits[i].iter().any(|g| raises[g.index()]) {
                raises[i] = true;
                changed = true;
            }
        }
    }
    raises
}

/// Calls `f` on `b` and every block nested in it.
fn each_block(b: &Block, f: &mut impl FnMut(&Block)) {
    f(b);
    for i in &b.insts {
        if let Op::If { then_, else_, .. } = &i.op {
            each_block(then_, f);
            each_block(else_, f);
        }
    }
}
