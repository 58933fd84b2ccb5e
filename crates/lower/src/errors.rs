//! Error terms: a run-time error of the program (a message the analysis
//! found, with its position and the values known only at run time) as a
//! FIR terminator.

use crate::lowerer::*;
use crate::symbolic::SYM_MARK;
use base::diag::Span;
use base::EntityRef;
use fir::{self, Term, Val};
use flow::{Av, AvId};
use ir::{Rhs, Var};
use rustc_hash::FxHashMap as HashMap;

impl Lowerer<'_> {
    /// The run-time error term for `msg` at `span`: values known only at
    /// run time (marked by `SYM_MARK`) are printed then.
    pub(super) fn error_term(&mut self, span: Option<Span>, msg: &str) -> Term {
        self.error_term_at(span, msg, None)
    }

    /// [`Self::error_term`], placed as the interpreter places it: at the
    /// form when that is in the user's files, else at the innermost call
    /// from the user's files that is running (`ErrPart::Site`). A parameter
    /// pattern that does not match (`pattern` is its `PatInfo`) is the
    /// caller's fault, so it is placed at the call, with a note saying
    /// where the pattern is.
    pub(super) fn error_term_at(
        &mut self,
        span: Option<Span>,
        msg: &str,
        pattern: Option<ir::PatId>,
    ) -> Term {
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
            Some(s) => format!(
                "{}: error: {msg}{note}{}",
                self.map.locate(s),
                self.derivative_note()
            ),
            None => format!("error: {msg}{note}"),
        };
        if here.is_some() && !text.contains(SYM_MARK) {
            return Term::Error(self.string(&text));
        }
        let mut parts = Vec::new();
        if here.is_none() {
            parts.push(fir::ErrPart::Site);
            if blame_caller {
                if let Some(f) = self.lowering {
                    self.pattern_sites.insert(f);
                }
            }
        }
        let mut in_value = false;
        for (i, piece) in text.split(SYM_MARK).enumerate() {
            if i % 2 == 0 {
                for (j, s) in piece.split(flow::text::VALUE_MARK).enumerate() {
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
                fir::ErrPart::Real(Val::from_number(n))
            } else {
                fir::ErrPart::Bool(Val::from_number(n))
            });
        }
        Term::ErrorWith(parts)
    }

    /// The message of a run-time error the analysis found, derived again
    /// from the operands as this function holds them, so that values known
    /// only at run time can be shown.
    pub(super) fn error_message(
        &mut self,
        b: &ir::Binding,
        vals: &HashMap<Var, AvId>,
        analysed: &str,
    ) -> String {
        let v = |x: &Var| vals.get(x).copied().unwrap_or(AvId::new(0));
        let again = match &b.rhs {
            Rhs::App { f, arg } => match self.ops.dom.get(v(f)).clone() {
                Av::Prim(ir::Prim::IfProcedure) if analysed.starts_with("`if-procedure`") => {
                    Err(ir::Prim::IfProcedure
                        .expects(ir::Expects::ConditionAndThunks, &self.ops.describe(v(arg))))
                }
                // The chosen thunk is not a procedure (the condition is
                // known: see `flow::analysis` on `if-procedure`).
                Av::Prim(ir::Prim::IfProcedure) => {
                    let dom = &self.ops.dom;
                    let chosen = match dom.get(v(arg)) {
                        Av::Pair(c, te) => match dom.get(*te) {
                            Av::Pair(t, e) => {
                                let no = matches!(dom.get(*c), Av::Bool(Some(false)));
                                Some(if no { *e } else { *t })
                            }
                            _ => None,
                        },
                        _ => None,
                    };
                    match chosen {
                        Some(x) => Err(ir::message::not_a_procedure(&self.ops.describe(x))),
                        None => Ok(()),
                    }
                }
                // The analysis checks `build-vector`'s argument itself
                // (`flow::analysis`): its message, with the value as it
                // is at run time.
                Av::Prim(p @ ir::Prim::BuildVector)
                    if !matches!(self.ops.dom.get(v(arg)), Av::Pair(..)) =>
                {
                    Err(p.expects(ir::Expects::LengthAndProcedure, &self.ops.describe(v(arg))))
                }
                Av::Prim(p) => self.ops.prim(p, v(arg)).map(|_| ()),
                Av::Closure(..) | Av::Bottom => Ok(()),
                _ => {
                    let world = match self.code_of {
                        Some(l) => self.ops.prog.world(l),
                        None => Vec::new(),
                    };
                    Err(ir::message::not_a_procedure(
                        &self.ops.describe_found(&world, v(f)),
                    ))
                }
            },
            Rhs::Car { tags, pat, pair } | Rhs::Cdr { tags, pat, pair } => {
                Err(self.ops.pattern_message(tags, *pat, v(pair)))
            }
            Rhs::Check { tags, pat, var, .. } => Err(self.ops.pattern_message(tags, *pat, v(var))),
            Rhs::Cons { tags, car, cdr } => self.ops.cons_t(tags, v(car), v(cdr)).map(|_| ()),
            _ => Ok(()),
        };
        // Only the message was wanted: no code for maps of unions.
        self.ops.mode.take_pending();
        match again {
            Err(m) if !m.is_empty() => m,
            _ => analysed.to_string(),
        }
    }

    pub(super) fn error_text(&self, span: Option<Span>, msg: &str) -> String {
        match span.filter(|s| s.file.0 != 0) {
            Some(s) => format!("{}: error: {msg}", self.map.locate(s)),
            None => format!("error: {msg}"),
        }
    }
}
