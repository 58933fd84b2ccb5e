//! Printing values: known parts as constant strings, unknown scalars with
//! `PrintReal`/`PrintBool`, unions through a printer function made per
//! union.

use crate::lowerer::*;
use crate::switch::Unlazy;
use base::EntityRef;
use fir::{self, Block, FuncId, Op, Term, Ty, Val};
use flow::{Av, AvId, SymKind, UnionId};

impl Lowerer<'_> {
    /// The function printing a value of union `u` (as the tail of a list,
    /// from the space before its next element to its closing parenthesis,
    /// when `tail`).
    pub(super) fn printer(&mut self, u: UnionId, tail: bool) -> FuncId {
        let u = self.ops.dom.find(u);
        if let Some(f) = self.printers.get(&(u, tail)) {
            return *f;
        }
        let id = FuncId::new(self.module.funcs.len());
        let name = format!("print_u{}{}", u.index(), if tail { "_tail" } else { "" });
        let empty = Block {
            insts: vec![],
            term: Term::Return(vec![]),
        };
        self.module.funcs.push(fir::Func {
            name: name.clone(),
            params: vec![Ty::Ptr],
            returns: vec![],
            types: vec![Ty::Ptr],
            body: empty,
        });
        self.printers.insert((u, tail), id);
        let mut fb = Fb {
            types: vec![Ty::Ptr],
            blocks: vec![Vec::new()],
            result: None,
            site: None,
        };
        let unlazy = Unlazy::Call(id, 1, 0);
        self.switch(
            &mut fb,
            Val::new(0),
            u,
            &[],
            unlazy,
            &mut |this, fb, _, sym| {
                let mut pieces = Vec::new();
                if tail {
                    this.tail_pieces(sym, &mut pieces);
                } else {
                    this.pieces(sym, &mut pieces);
                }
                this.emit_pieces(fb, pieces);
                Term::Yield(vec![])
            },
        );
        self.module.funcs[id.index()] = fir::Func {
            name,
            params: vec![Ty::Ptr],
            returns: vec![],
            types: fb.types,
            body: Block {
                insts: fb.blocks.pop().unwrap_or_default(),
                term: Term::Return(vec![]),
            },
        };
        id
    }

    pub(super) fn print_str(&mut self, fb: &mut Fb, s: &str) {
        let id = self.string(s);
        fb.emit(Op::PrintStr(id), &[]);
    }

    pub(super) fn pair_view(&mut self, av: AvId) -> Option<(AvId, AvId)> {
        match self.ops.dom.get(av).clone() {
            Av::Pair(a, b) => Some((a, b)),
            Av::Wrap(t, x) => {
                let (a, b) = self.pair_view(x)?;
                Some((self.ops.dom.wrap(t, a), self.ops.dom.wrap(t, b)))
            }
            Av::Bundle(p, t) => {
                let (pa, pb) = self.pair_view(p)?;
                let Av::Wrap(ir::Tag::Perturb, ti) = self.ops.dom.get(t).clone() else {
                    return None;
                };
                let (ta, tb) = self.pair_view(ti)?;
                let (wa, wb) = (
                    self.ops.dom.wrap(ir::Tag::Perturb, ta),
                    self.ops.dom.wrap(ir::Tag::Perturb, tb),
                );
                Some((self.ops.dom.bundle(pa, wa), self.ops.dom.bundle(pb, wb)))
            }
            _ => None,
        }
    }

    /// Emits code printing a value; constant text is merged.
    pub(super) fn print_value(&mut self, fb: &mut Fb, av: AvId) {
        let mut pieces = Vec::new();
        self.pieces(av, &mut pieces);
        self.emit_pieces(fb, pieces);
    }

    fn emit_pieces(&mut self, fb: &mut Fb, pieces: Vec<Piece>) {
        let mut text = String::new();
        for p in pieces {
            match p {
                Piece::Text(s) => text.push_str(&s),
                Piece::Call(f, v) => {
                    if !text.is_empty() {
                        self.print_str(fb, &std::mem::take(&mut text));
                    }
                    fb.emit(Op::Call(f, vec![v]), &[]);
                }
                Piece::Real(v) | Piece::Bool(v) => {
                    if !text.is_empty() {
                        self.print_str(fb, &std::mem::take(&mut text));
                    }
                    let is_real = matches!(p, Piece::Real(_));
                    fb.emit(
                        if is_real {
                            Op::PrintReal(v)
                        } else {
                            Op::PrintBool(v)
                        },
                        &[],
                    );
                }
            }
        }
        if !text.is_empty() {
            self.print_str(fb, &text);
        }
    }

    fn pieces(&mut self, av: AvId, out: &mut Vec<Piece>) {
        if let Some((a, b)) = self.pair_view(av) {
            out.push(Piece::Text("(".into()));
            self.pieces(a, out);
            self.tail_pieces(b, out);
            return;
        }
        match self.ops.dom.get(av).clone() {
            Av::Sym(v, SymKind::Union(u)) => {
                let f = self.printer(u, false);
                out.push(Piece::Call(f, Val::from_number(v)));
            }
            Av::Real(Some(x)) => {
                out.push(Piece::Text(base::number::format_real(f64::from_bits(x))))
            }
            Av::Sym(v, SymKind::Real) => out.push(Piece::Real(Val::from_number(v))),
            Av::Sym(v, SymKind::Bool) => out.push(Piece::Bool(Val::from_number(v))),
            Av::Bool(Some(b)) => out.push(Piece::Text(if b { "#t" } else { "#f" }.into())),
            Av::Nil => out.push(Piece::Text("()".into())),
            Av::Prim(_) | Av::Closure(..) => out.push(Piece::Text("#<procedure>".into())),
            Av::Bundle(p, t) => {
                out.push(Piece::Text("(forward ".into()));
                self.pieces(p, out);
                out.push(Piece::Text(" ".into()));
                self.pieces(t, out);
                out.push(Piece::Text(")".into()));
            }
            Av::Wrap(t, x) => {
                out.push(Piece::Text(format!("({} ", t.name())));
                self.pieces(x, out);
                out.push(Piece::Text(")".into()));
            }
            Av::Real(None) | Av::Bool(None) | Av::Bottom | Av::Pair(..) | Av::Union(_) => {}
        }
    }

    /// The rest of a list after an element: ` x y)`, `)`, or ` . x)`.
    fn tail_pieces(&mut self, mut rest: AvId, out: &mut Vec<Piece>) {
        loop {
            if let Some((a, b)) = self.pair_view(rest) {
                out.push(Piece::Text(" ".into()));
                self.pieces(a, out);
                rest = b;
                continue;
            }
            match self.ops.dom.get(rest).clone() {
                Av::Nil => {}
                Av::Sym(v, SymKind::Union(u)) => {
                    let f = self.printer(u, true);
                    out.push(Piece::Call(f, Val::from_number(v)));
                    return;
                }
                _ => {
                    out.push(Piece::Text(" . ".into()));
                    self.pieces(rest, out);
                }
            }
            break;
        }
        out.push(Piece::Text(")".into()));
    }
}

#[derive(Clone)]
enum Piece {
    Text(String),
    /// A call of a printer function on a union cell.
    Call(FuncId, Val),
    Real(Val),
    Bool(Val),
}
