//! Printing values: `ir::printer` decides the text; its known parts become
//! constant strings, unknown scalars `PrintReal`/`PrintBool`, unions a
//! call of a printer function made per union.

use crate::lowerer::*;
use crate::switch::Unlazy;
use base::EntityRef;
use fir::{self, Block, FuncId, Op, Term, Ty, Val};
use flow::text::Shape;
use flow::{Av, AvId, LeafKind, UnionId};
use ir::printer;

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
        let mut fb = self.func_builder(&[Ty::Ptr]);
        let unlazy = Unlazy::Call(id, 1, 0);
        self.switch(
            &mut fb,
            Val::new(0),
            u,
            &[],
            unlazy,
            &mut |this, fb, _, sym| {
                let shape = Shape {
                    dom: &this.ops.dom,
                    v: sym,
                };
                let mut pieces = Pieces(Vec::new());
                if tail {
                    printer::write_rest(shape, &mut pieces);
                } else {
                    printer::write(shape, &mut pieces);
                }
                this.emit_pieces(fb, pieces.0);
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

    /// Emits code printing a value; constant text is merged.
    pub(super) fn print_value(&mut self, fb: &mut Fb, av: AvId) {
        let mut pieces = Pieces(Vec::new());
        let shape = Shape {
            dom: &self.ops.dom,
            v: av,
        };
        printer::write(shape, &mut pieces);
        self.emit_pieces(fb, pieces.0);
    }

    fn emit_pieces(&mut self, fb: &mut Fb, pieces: Vec<Piece>) {
        // Constant text merged; the printers of unions made as they are
        // met, before any of this text is interned.
        let mut text = String::new();
        let mut ops = Vec::new();
        for p in pieces {
            let op = match p {
                Piece::Text(s) => {
                    text.push_str(&s);
                    continue;
                }
                Piece::Op(op) => Ok(op),
                Piece::Union(u, v, tail) => Ok(Op::Call(self.printer(u, tail), vec![v])),
                Piece::Vector(v) => Err(v),
                Piece::Tagged(tags, mut v) => {
                    for t in tags.iter().rev() {
                        v = self.ops.dom.wrap(*t, v);
                    }
                    Err(v)
                }
                Piece::Forward(p, t) => {
                    let t = self.ops.dom.wrap(ir::Tag::Perturb, t);
                    Err(self.ops.dom.bundle(p, t))
                }
            };
            ops.push((std::mem::take(&mut text), op));
        }
        for (before, op) in ops {
            if !before.is_empty() {
                self.print_str(fb, &before);
            }
            match op {
                Ok(op) => {
                    fb.emit(op, &[]);
                }
                Err(v) => self.print_vector(fb, v),
            }
        }
        if !text.is_empty() {
            self.print_str(fb, &text);
        }
    }
}

/// What printing a value emits: constant text, the printing of a scalar
/// known only at run time, or a call of the printer of a union (as the
/// rest of a list when `true`).
enum Piece {
    Text(String),
    Op(Op),
    Union(UnionId, Val, bool),
    /// A vector, printed by a loop over its elements.
    Vector(AvId),
    /// A vector under tags (outermost first), on each of its elements.
    Tagged(Vec<ir::Tag>, AvId),
    /// The forward value of a vector, with the tangent inside its
    /// perturbation: a vector of forward values.
    Forward(AvId, AvId),
}

/// Collects the pieces of a printed value, for `ir::printer`.
struct Pieces(Vec<Piece>);

impl printer::Sink<Shape<'_, Sym>> for Pieces {
    fn text(&mut self, s: &str) {
        match self.0.last_mut() {
            Some(Piece::Text(t)) => t.push_str(s),
            _ => self.0.push(Piece::Text(s.to_string())),
        }
    }
    fn opaque(&mut self, x: Shape<'_, Sym>) {
        let piece = match *x.dom.get(x.v) {
            Av::Leaf(Sym(v), LeafKind::Union(u)) => Piece::Union(u, Val::from_number(v), false),
            Av::Leaf(Sym(v), LeafKind::Real) => Piece::Op(Op::PrintReal(Val::from_number(v))),
            Av::Leaf(Sym(v), LeafKind::Bool) => Piece::Op(Op::PrintBool(Val::from_number(v))),
            Av::Leaf(_, LeafKind::Vector(..)) | Av::Vector(..) | Av::Wrap(..) | Av::Bundle(..) => {
                Piece::Vector(x.v)
            }
            // Not a value of a binding that runs.
            _ => return,
        };
        self.0.push(piece);
    }
    fn opaque_tagged(&mut self, tags: &[ir::Tag], x: Shape<'_, Sym>) -> bool {
        let vector = matches!(
            x.dom.get(x.v),
            Av::Leaf(_, LeafKind::Vector(..)) | Av::Vector(..) | Av::Wrap(..) | Av::Bundle(..)
        );
        if vector {
            self.0.push(Piece::Tagged(tags.to_vec(), x.v));
        }
        vector
    }
    fn opaque_bundle(&mut self, p: Shape<'_, Sym>, t: Shape<'_, Sym>) -> bool {
        let vector = vectorish(p.dom, p.v);
        if vector {
            self.0.push(Piece::Forward(p.v, t.v));
        }
        vector
    }
    fn opaque_rest(&mut self, x: Shape<'_, Sym>) -> bool {
        let Av::Leaf(Sym(v), LeafKind::Union(u)) = *x.dom.get(x.v) else {
            return false;
        };
        self.0.push(Piece::Union(u, Val::from_number(v), true));
        true
    }
}

/// Is `v` a vector, under tags or as the primal of forward values?
fn vectorish(dom: &flow::Domain<Sym>, v: AvId) -> bool {
    match dom.get(v) {
        Av::Leaf(_, LeafKind::Vector(..)) | Av::Vector(..) => true,
        Av::Wrap(_, x) | Av::Bundle(x, _) => vectorish(dom, *x),
        _ => false,
    }
}
