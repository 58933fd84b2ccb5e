//! The primitives on abstract values: the compile-time twin of
//! `interp/src/prims.rs`, over the same scalar semantics (`ir::Prim`) and
//! messages. A primitive whose argument's parts are all known is folded to
//! its result; otherwise the result is the widest value of its kind.

use super::{Mode, Op, Ops};
use crate::domain::{Av, AvId, LeafKind, Site};
use ir::{Expects, Prim, PrimKind, Scalar, Tag};

impl<M: Mode> Ops<M> {
    fn has_tag(&self, v: AvId, tag: Tag) -> bool {
        match self.dom.get(v) {
            Av::Closure(l, _) => self.prog.lambda_tag(*l) == Some(tag),
            Av::Wrap(t, _) => *t == tag,
            Av::Bundle(..) => tag == Tag::Forward,
            _ => false,
        }
    }

    /// An untagged primitive applied to an abstract argument (elements
    /// of vectors that differ in shape are not joined: only what fails is
    /// wanted).
    pub fn prim(&mut self, p: Prim, arg: AvId) -> Op<AvId> {
        self.prim_at(p, arg, None)
    }

    /// [`Self::prim`], the elements of a vector it makes joined at `site`.
    pub fn prim_at(&mut self, p: Prim, arg: AvId, site: Option<Site>) -> Op<AvId> {
        let bottom = self.dom.bottom();
        // Arithmetic, comparisons and predicates look at their argument,
        // and all but the predicates of shape at the two parts of a pair
        // argument (operands, or the parts an error message shows):
        // `null?` of a pair is false whatever its cdr, and splitting on
        // the cdr made every step of a loop over a list dispatch on the
        // next element too. (`write` prints any value; the AD operations
        // handle unions, or record the ones they cannot, themselves.)
        // A list made a vector is walked whatever its length: splitting
        // on its union would peel it one element per split.
        let whole_list = matches!(p, Prim::ListToVector | Prim::VectorCheckLengths);
        if p.kind() != PrimKind::Ad && p != Prim::Write && !whole_list {
            let name = "a primitive";
            self.hit(name, arg);
            let of_shape = p.kind() == PrimKind::Predicate
                && !matches!(p, Prim::IsZero | Prim::IsPositive | Prim::IsNegative);
            match self.dom.get(arg).clone() {
                Av::Pair(a, b) if !of_shape => {
                    self.hit(name, a);
                    self.hit(name, b);
                }
                _ => {}
            }
            if self.union_hit.get().is_some() {
                return Ok(bottom);
            }
        }
        let describe = |s: &Self| s.describe(arg);
        let reals2 = |s: &Self| -> Op<Option<(Option<f64>, Option<f64>)>> {
            match s.dom.get(arg) {
                Av::Pair(a, b) => match (s.dom.get(*a), s.dom.get(*b)) {
                    (Av::Real(x), Av::Real(y)) => {
                        Ok(Some((x.map(f64::from_bits), y.map(f64::from_bits))))
                    }
                    (Av::Bottom, _) | (_, Av::Bottom) => Ok(None),
                    _ => Err(p.expects(Expects::TwoReals, &describe(s))),
                },
                _ => Err(p.expects(Expects::TwoReals, &describe(s))),
            }
        };
        let real1 = |s: &Self| -> Op<Option<Option<f64>>> {
            match s.dom.get(arg) {
                Av::Real(x) => Ok(Some(x.map(f64::from_bits))),
                _ => Err(p.expects(Expects::Real, &describe(s))),
            }
        };
        let pair2 = |s: &Self| -> Op<(AvId, AvId)> {
            match s.dom.get(arg) {
                Av::Pair(a, b) => Ok((*a, *b)),
                _ => Err(p.expects(Expects::TwoArguments, &describe(s))),
            }
        };
        Ok(match p.kind() {
            PrimKind::Binary | PrimKind::Compare => {
                let Some((x, y)) = reals2(self)? else {
                    return Ok(bottom);
                };
                match (x, y) {
                    (Some(x), Some(y)) => match p.scalar() {
                        Some(Scalar::Bin(op)) => self.dom.real(op.apply(x, y)),
                        Some(Scalar::Cmp(op)) => self.dom.boolean(Some(op.apply(x, y))),
                        _ => return Err(format!("internal error: `{p}` is not binary")),
                    },
                    _ if p.kind() == PrimKind::Binary => self.dom.any_real(),
                    _ => self.dom.boolean(None),
                }
            }
            PrimKind::Unary => match real1(self)? {
                Some(Some(x)) => match p.scalar() {
                    Some(Scalar::Un(op)) => self.dom.real(op.apply(x)),
                    _ => return Err(format!("internal error: `{p}` is not unary")),
                },
                _ => self.dom.any_real(),
            },
            PrimKind::Predicate => {
                let a = self.dom.get(arg).clone();
                let known = |b: bool| Some(b);
                let r = match p {
                    Prim::IsZero | Prim::IsPositive | Prim::IsNegative => match real1(self)? {
                        Some(Some(x)) => known(match p {
                            Prim::IsZero => x == 0.0,
                            Prim::IsPositive => x > 0.0,
                            _ => x < 0.0,
                        }),
                        _ => None,
                    },
                    Prim::IsNull => known(matches!(a, Av::Nil)),
                    Prim::IsBoolean => known(matches!(a, Av::Bool(_))),
                    Prim::IsReal => known(matches!(a, Av::Real(_))),
                    Prim::IsPair => known(matches!(a, Av::Pair(..))),
                    Prim::IsProcedure => known(matches!(a, Av::Closure(..) | Av::Prim(_))),
                    Prim::IsVector => known(matches!(
                        a,
                        Av::Vector(..) | Av::Leaf(_, LeafKind::Vector(..))
                    )),
                    Prim::IsPerturbation => known(self.has_tag(arg, Tag::Perturb)),
                    Prim::IsForward => known(self.has_tag(arg, Tag::Forward)),
                    Prim::IsSensitivity => known(self.has_tag(arg, Tag::Sensitize)),
                    _ => known(self.has_tag(arg, Tag::Reverse)),
                };
                self.dom.boolean(r)
            }
            PrimKind::Control => match p {
                // `real` hides its argument's value from the compiler.
                Prim::Real => match real1(self)? {
                    Some(_) => self.dom.any_real(),
                    None => bottom,
                },
                Prim::WriteReal => match real1(self)? {
                    Some(_) => arg,
                    None => bottom,
                },
                Prim::Write => arg,
                Prim::ReadReal => self.dom.any_real(),
                _ => unreachable!("if-procedure is applied by `if_procedure`"),
            },
            PrimKind::Ad => match p {
                Prim::Zero => self.zero(arg),
                Prim::Plus => {
                    let (a, b) = pair2(self)?;
                    self.plus(a, b)?
                }
                Prim::CustomConform => {
                    let (x, zero) = pair2(self)?;
                    self.custom_conform(x, zero)?
                }
                Prim::Perturb => self.tag_wrap(Tag::Perturb, arg),
                Prim::Sensitize => self.tag_wrap(Tag::Sensitize, arg),
                Prim::StarJ => self.tag_wrap(Tag::Reverse, arg),
                Prim::Unperturb => self.tag_unwrap(Tag::Perturb, arg)?,
                Prim::Unsensitize => self.tag_unwrap(Tag::Sensitize, arg)?,
                Prim::StarJInverse => self.tag_unwrap(Tag::Reverse, arg)?,
                Prim::Bundle => {
                    let (a, b) = pair2(self)?;
                    self.bundle(a, b)?
                }
                Prim::Primal => self.forward_half(arg, true)?,
                _ => self.forward_half(arg, false)?,
            },
            PrimKind::Shape | PrimKind::Vector => {
                if arg == bottom {
                    return Ok(bottom);
                }
                self.vector_prim(p, arg, site)?
            }
        })
    }
}
