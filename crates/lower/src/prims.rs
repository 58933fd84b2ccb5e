//! Primitives: arithmetic on the scalars of symbolic values, and the
//! structural and AD operations, which cost no code: the flow analysis'
//! own operations applied to symbolic values say where each scalar goes.

use crate::lowerer::*;
use fir::{self, Cmp, FBin, FUn, Op, Term, Ty, Val};
use flow::{Av, AvId, BindInfo, LeafKind};
use ir::{Prim, PrimKind};

impl Lowerer<'_> {
    /// A real operand: its FIR value, materialising a constant.
    pub(super) fn real(&mut self, fb: &mut Fb, x: AvId) -> Option<Val> {
        match self.ops.dom.get(x) {
            Av::Leaf(Sym(v), LeafKind::Real) => Some(Val::from_number(*v)),
            Av::Real(Some(c)) => {
                let c = f64::from_bits(*c);
                Some(fb.emit1(Op::F64Const(c), Ty::F64))
            }
            _ => None,
        }
    }

    pub(super) fn lower_prim(
        &mut self,
        fb: &mut Fb,
        b: &ir::Binding,
        info: &BindInfo,
        p: Prim,
        arg: AvId,
    ) -> Flow {
        if matches!(p.kind(), PrimKind::Shape | PrimKind::Vector) {
            return match self.vector_prim(fb, b, info, p, arg) {
                Ok(av) => Flow::Value(av),
                Err(t) => Flow::Done(t),
            };
        }
        // Whatever the analysis already knows needs no code.
        if self.ops.dom.is_known(info.av)
            && !matches!(p, Prim::Write | Prim::WriteReal | Prim::ReadReal)
        {
            return Flow::Value(info.av);
        }
        let pair = match self.ops.dom.get(arg) {
            Av::Pair(a, b) => Some((*a, *b)),
            _ => None,
        };
        match p.kind() {
            PrimKind::Binary | PrimKind::Compare => {
                let Some((a, c)) = pair else {
                    return Flow::Value(info.av);
                };
                let (Some(x), Some(y)) = (self.real(fb, a), self.real(fb, c)) else {
                    return Flow::Value(info.av);
                };
                let (op, kind) = match p {
                    Prim::Add => (Op::FBin(FBin::Add, x, y), LeafKind::Real),
                    Prim::Sub => (Op::FBin(FBin::Sub, x, y), LeafKind::Real),
                    Prim::Mul => (Op::FBin(FBin::Mul, x, y), LeafKind::Real),
                    Prim::Div => (Op::FBin(FBin::Div, x, y), LeafKind::Real),
                    Prim::Atan => (Op::FBin(FBin::Atan2, x, y), LeafKind::Real),
                    Prim::Eq => (Op::FCmp(Cmp::Eq, x, y), LeafKind::Bool),
                    Prim::Lt => (Op::FCmp(Cmp::Lt, x, y), LeafKind::Bool),
                    Prim::Gt => (Op::FCmp(Cmp::Gt, x, y), LeafKind::Bool),
                    Prim::Le => (Op::FCmp(Cmp::Le, x, y), LeafKind::Bool),
                    _ => (Op::FCmp(Cmp::Ge, x, y), LeafKind::Bool),
                };
                let t = if kind == LeafKind::Real {
                    Ty::F64
                } else {
                    Ty::Bool
                };
                let r = fb.emit1(op, t);
                Flow::Value(self.sym(r, kind))
            }
            PrimKind::Unary => {
                let Some(x) = self.real(fb, arg) else {
                    return Flow::Value(info.av);
                };
                let op = match p {
                    Prim::Sqrt => FUn::Sqrt,
                    Prim::Exp => FUn::Exp,
                    Prim::Log => FUn::Log,
                    Prim::Sin => FUn::Sin,
                    _ => FUn::Cos,
                };
                let r = fb.emit1(Op::FUn(op, x), Ty::F64);
                Flow::Value(self.sym(r, LeafKind::Real))
            }
            PrimKind::Predicate => {
                let Some(x) = self.real(fb, arg) else {
                    return Flow::Value(info.av);
                };
                let zero = fb.emit1(Op::F64Const(0.0), Ty::F64);
                let cmp = match p {
                    Prim::IsZero => Cmp::Eq,
                    Prim::IsPositive => Cmp::Gt,
                    _ => Cmp::Lt,
                };
                let r = fb.emit1(Op::FCmp(cmp, x, zero), Ty::Bool);
                Flow::Value(self.sym(r, LeafKind::Bool))
            }
            PrimKind::Control => match p {
                Prim::Real => match self.real(fb, arg) {
                    Some(x) => Flow::Value(self.sym(x, LeafKind::Real)),
                    None => Flow::Value(info.av),
                },
                Prim::Write | Prim::WriteReal => {
                    self.print_value(fb, arg);
                    self.print_str(fb, "\n");
                    Flow::Value(arg)
                }
                Prim::ReadReal => {
                    let text = self.error_text(b.span, &ir::message::end_of_input());
                    let msg = self.string(&text);
                    let r = fb.emit1(Op::ReadReal(msg), Ty::F64);
                    Flow::Value(self.sym(r, LeafKind::Real))
                }
                _ => Flow::Done(Term::Error(
                    self.string("error: internal error: control primitive"),
                )),
            },
            PrimKind::Ad => {
                let r = match p {
                    Prim::Zero => Ok(self.zero(fb, arg)),
                    Prim::Plus => match pair {
                        Some((a, c)) => Ok(self.plus(fb, a, c)),
                        None => Err(p.expects(ir::Expects::TwoArguments, &self.ops.describe(arg))),
                    },
                    Prim::CustomConform => match pair {
                        Some((x, zero)) => self.ops.custom_conform(x, zero),
                        None => Err(p.expects(ir::Expects::TwoArguments, &self.ops.describe(arg))),
                    },
                    Prim::Perturb => Ok(self.ops.tag_wrap(ir::Tag::Perturb, arg)),
                    Prim::Sensitize => Ok(self.ops.tag_wrap(ir::Tag::Sensitize, arg)),
                    Prim::StarJ => Ok(self.ops.tag_wrap(ir::Tag::Reverse, arg)),
                    Prim::Unperturb => self.ops.tag_unwrap(ir::Tag::Perturb, arg),
                    Prim::Unsensitize => self.ops.tag_unwrap(ir::Tag::Sensitize, arg),
                    Prim::StarJInverse => self.ops.tag_unwrap(ir::Tag::Reverse, arg),
                    Prim::Bundle => match pair {
                        Some((a, c)) => self.ops.bundle(a, c),
                        None => Err(p.expects(ir::Expects::TwoArguments, &self.ops.describe(arg))),
                    },
                    Prim::Primal => self.ops.forward_half(arg, true),
                    _ => self.ops.forward_half(arg, false),
                };
                match self.resolve(fb, r) {
                    Ok(av) => Flow::Value(av),
                    Err(m) => Flow::Done(self.error_term(b.span, &m)),
                }
            }
            PrimKind::Shape | PrimKind::Vector => Flow::Done(Term::Error(
                self.string("error: internal error: a vector primitive"),
            )),
        }
    }
}
