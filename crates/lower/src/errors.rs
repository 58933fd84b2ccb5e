//! Error terms: a run-time error of the program (a message the analysis
//! found, with its position and the values known only at run time) as a
//! FIR terminator.

use crate::lowerer::*;
use crate::symbolic::Sym;
use crate::symbolic::SYM_MARK;
use base::diag::Span;
use base::EntityRef;
use fir::{self, Block, FuncId, Inst, Op, Term, Ty, Val};
use flow::{Av, AvId, LeafKind};
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
            let mut fields = piece[1..].split(':');
            let n = fields
                .next()
                .and_then(|n| n.parse::<u32>().ok())
                .unwrap_or(0);
            let tags: Vec<ir::Tag> = fields.filter_map(crate::symbolic::tag_of_number).collect();
            parts.push(match piece.as_bytes().first() {
                Some(b'R') => fir::ErrPart::Real(Val::from_number(n)),
                Some(b'B') => fir::ErrPart::Bool(Val::from_number(n)),
                Some(k) => {
                    let rest = *k == b'T';
                    let mut v = AvId::new(n as usize);
                    for t in tags.iter().rev() {
                        v = self.ops.dom.wrap(*t, v);
                    }
                    match self.error_printer(v, rest) {
                        Some(call) => {
                            self.captures.push(call);
                            fir::ErrPart::Captured(self.captures.len() as u32 - 1)
                        }
                        None => fir::ErrPart::Str(self.string(&run_time_shape(rest))),
                    }
                }
                None => continue,
            });
        }
        Term::ErrorWith(parts)
    }

    /// A function printing symbolic value `v` as `print` does (as the rest
    /// of a list after an element when `rest`), and the scalars of `v` to
    /// call it with, for an error message that shows `v`; `None` if a part
    /// of `v` is not a scalar, a cell or a vector that a call can pass.
    fn error_printer(&mut self, v: AvId, rest: bool) -> Option<(FuncId, Vec<Val>)> {
        let mut types = Vec::new();
        if !self.passable(v, &mut types) {
            return None;
        }
        let mut args = Vec::new();
        self.scalars_of(v, &mut args);
        let mut fb = self.func_builder(&types);
        // The maps of unions met so far belong to the function whose
        // error this is, and are called there.
        let outer = self.ops.mode.take_pending();
        let x = self.resymbolize(&mut fb, v, &mut (0..types.len()).map(Val::new));
        // Values of one shape, their leaves numbered alike, are printed
        // by one function (evaluator-constants: 758 messages).
        if let Some(f) = self.error_printers.get(&(x, rest)) {
            self.ops.mode.restore_pending(outer);
            return Some((*f, args));
        }
        let id = self.new_func("print_error", &types, &[]);
        self.error_printers.insert((x, rest), id);
        match (rest, self.ops.dom.get(x).clone()) {
            (true, Av::Leaf(Sym(p), LeafKind::Union(u))) => {
                let tail = self.printer(u, true);
                fb.emit(Op::Call(tail, vec![Val::from_number(p)]), &[]);
            }
            _ => self.print_value(&mut fb, x),
        }
        self.ops.mode.restore_pending(outer);
        self.finish_func(id, fb, Term::Return(vec![]));
        Some((id, args))
    }

    /// Whether every part of symbolic value `v` is known or a leaf, inside
    /// pairs, tags, bundles and closures (what [`Lowerer::scalars_of`]
    /// passes and [`Lowerer::resymbolize`] takes back), with the types of
    /// its leaves, in order.
    fn passable(&self, v: AvId, types: &mut Vec<Ty>) -> bool {
        let dom = &self.ops.dom;
        if dom.is_known(v) {
            return true;
        }
        match dom.get(v) {
            Av::Leaf(_, k) => {
                types.push(match k {
                    LeafKind::Real => Ty::F64,
                    LeafKind::Bool => Ty::Bool,
                    LeafKind::Union(_) | LeafKind::Vector(..) => Ty::Ptr,
                });
                true
            }
            Av::Pair(a, b) | Av::Bundle(a, b) => {
                let (a, b) = (*a, *b);
                self.passable(a, types) && self.passable(b, types)
            }
            Av::Wrap(_, x) => self.passable(*x, types),
            Av::Closure(_, env) => env.clone().iter().all(|x| self.passable(*x, types)),
            _ => false,
        }
    }

    /// Makes each part of an error message printed at run time
    /// (`ErrPart::Captured`, numbered by [`Lowerer::captures`]) a call of
    /// its printing function in a stretch of `Op::Capture` before the
    /// message, wherever the message was placed, and numbers the parts
    /// of each message from 0.
    pub(super) fn expand_captures(&mut self) {
        if self.captures.is_empty() {
            return;
        }
        for f in &mut self.module.funcs {
            expand_block(&mut f.body, &self.captures);
        }
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
                // Its procedure is not one: the analysis applied it to
                // each index of a known length (after checking the length).
                Av::Prim(p @ ir::Prim::BuildVector)
                    if analysed.starts_with(&ir::message::not_a_procedure("")) =>
                {
                    match self.ops.dom.get(v(arg)).clone() {
                        Av::Pair(_, g)
                            if !matches!(
                                self.ops.dom.get(g),
                                Av::Closure(..) | Av::Prim(_) | Av::Bottom
                            ) =>
                        {
                            Err(ir::message::not_a_procedure(&self.ops.describe(g)))
                        }
                        _ => self.ops.prim(p, v(arg)).map(|_| ()),
                    }
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

fn expand_block(b: &mut Block, captures: &[(FuncId, Vec<Val>)]) {
    for i in &mut b.insts {
        if let Op::If { then_, else_, .. } = &mut i.op {
            expand_block(then_, captures);
            expand_block(else_, captures);
        }
    }
    let Term::ErrorWith(parts) = &mut b.term else {
        return;
    };
    let mut k = 0;
    for p in parts.iter_mut() {
        let fir::ErrPart::Captured(id) = p else {
            continue;
        };
        let Some((g, args)) = captures.get(*id as usize) else {
            continue;
        };
        let inst = |op| Inst {
            results: vec![],
            op,
        };
        b.insts.push(inst(Op::Capture(true)));
        b.insts.push(inst(Op::Call(*g, args.clone())));
        b.insts.push(inst(Op::Capture(false)));
        *p = fir::ErrPart::Captured(k);
        k += 1;
    }
}

/// `msg` with the parts of run-time shape that code run then would print
/// (the marks of [`Leaf::write_printed`](flow::Leaf::write_printed))
/// shown as `#<value of run-time shape>` instead. For `plus` of values
/// of different shapes: the sums of reverse mode's sensitivities, added
/// in place by the operation whose check this is, would each be read once
/// more by the message (matvec-R took twice the instructions).
pub(crate) fn unprinted(msg: &str) -> String {
    let mut out = String::new();
    for (i, piece) in msg.split(SYM_MARK).enumerate() {
        match piece.as_bytes().first() {
            _ if i % 2 == 0 => out.push_str(piece),
            Some(b'P') => out.push_str(&run_time_shape(false)),
            Some(b'T') => out.push_str(&run_time_shape(true)),
            _ => {
                out.push(SYM_MARK);
                out.push_str(piece);
                out.push(SYM_MARK);
            }
        }
    }
    // A value left with no part known only at run time is shortened now,
    // as `Ops::describe` shortens such values.
    let mark = flow::text::VALUE_MARK;
    let mut done = String::new();
    for (i, piece) in out.split(mark).enumerate() {
        match i % 2 {
            1 if !piece.contains(SYM_MARK) => done.push_str(&ir::printer::shortened(piece.into())),
            1 => {
                done.push(mark);
                done.push_str(piece);
                done.push(mark);
            }
            _ => done.push_str(piece),
        }
    }
    done
}

/// How a message shows a part of a value no code prints (as the rest of a
/// list after an element when `rest`: `printer::Sink::opaque_rest`).
fn run_time_shape(rest: bool) -> String {
    let shape = flow::text::RUN_TIME_SHAPE;
    if rest {
        format!(" . {shape})")
    } else {
        shape.into()
    }
}
