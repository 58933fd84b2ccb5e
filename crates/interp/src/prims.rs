//! The primitives of docs/reference.md, on untagged values. Their behaviour
//! on tagged values comes from the AD prelude (crate `ad`), never from here.

use crate::eval::{err, Interp, Result};
use crate::value::Value;
use ir::message;
use ir::{Expects, Prim, Scalar, Tag};

/// What applying a primitive gives: a value, or (for `if-procedure`) a call
/// to make in tail position.
pub enum Outcome {
    Value(Value),
    TailCall(Value, Value),
}

fn two_reals(p: Prim, v: &Value) -> Result<(f64, f64)> {
    if let Value::Pair(pr) = v {
        if let (Value::Real(a), Value::Real(b)) = (&pr.0, &pr.1) {
            return Ok((*a, *b));
        }
    }
    err(p.expects(Expects::TwoReals, &v.describe()))
}

fn one_real(p: Prim, v: &Value) -> Result<f64> {
    match v {
        Value::Real(x) => Ok(*x),
        _ => err(p.expects(Expects::Real, &v.describe())),
    }
}

fn two_values(p: Prim, v: &Value) -> Result<(Value, Value)> {
    match v {
        Value::Pair(pr) => Ok((pr.0.clone(), pr.1.clone())),
        _ => err(p.expects(Expects::TwoArguments, &v.describe())),
    }
}

impl Interp<'_> {
    pub(crate) fn prim(&mut self, p: Prim, arg: Value) -> Result<Outcome> {
        use Outcome::Value as V;
        self.counters.prim(p);
        let b = Value::Bool;
        Ok(match p {
            Prim::Add | Prim::Sub | Prim::Mul | Prim::Div | Prim::Atan => {
                let (x, y) = two_reals(p, &arg)?;
                let Some(Scalar::Bin(op)) = p.scalar() else {
                    unreachable!("binary primitives have a binary operation")
                };
                V(Value::Real(op.apply(x, y)))
            }
            Prim::Sqrt | Prim::Exp | Prim::Log | Prim::Sin | Prim::Cos => {
                let x = one_real(p, &arg)?;
                let Some(Scalar::Un(op)) = p.scalar() else {
                    unreachable!("unary primitives have a unary operation")
                };
                V(Value::Real(op.apply(x)))
            }
            Prim::Eq | Prim::Lt | Prim::Gt | Prim::Le | Prim::Ge => {
                let (x, y) = two_reals(p, &arg)?;
                let Some(Scalar::Cmp(op)) = p.scalar() else {
                    unreachable!("comparisons have a comparison")
                };
                V(b(op.apply(x, y)))
            }
            Prim::IsZero => V(b(one_real(p, &arg)? == 0.0)),
            Prim::IsPositive => V(b(one_real(p, &arg)? > 0.0)),
            Prim::IsNegative => V(b(one_real(p, &arg)? < 0.0)),
            Prim::IsNull => V(b(matches!(arg, Value::Nil))),
            Prim::IsBoolean => V(b(matches!(arg, Value::Bool(_)))),
            Prim::IsReal => V(b(matches!(arg, Value::Real(_)))),
            Prim::IsPair => V(b(matches!(arg, Value::Pair(_)))),
            Prim::IsProcedure => V(b(matches!(arg, Value::Closure(_) | Value::Prim(_)))),
            Prim::IsPerturbation => V(b(self.has_tag(&arg, Tag::Perturb))),
            Prim::IsForward => V(b(self.has_tag(&arg, Tag::Forward))),
            Prim::IsSensitivity => V(b(self.has_tag(&arg, Tag::Sensitize))),
            Prim::IsReverse => V(b(self.has_tag(&arg, Tag::Reverse))),
            Prim::IfProcedure => {
                let bad = || err(p.expects(Expects::ConditionAndThunks, &arg.describe()));
                let Value::Pair(p1) = &arg else { return bad() };
                let Value::Pair(p2) = &p1.1 else { return bad() };
                let thunk = if p1.0.is_false() { &p2.1 } else { &p2.0 };
                Outcome::TailCall(thunk.clone(), Value::Nil)
            }
            Prim::Real => V(Value::Real(one_real(p, &arg)?)),
            Prim::WriteReal => {
                one_real(p, &arg)?;
                let s = format!("{}\n", arg.to_text());
                self.emit(&s)?;
                V(arg)
            }
            Prim::Write => {
                self.settle(&arg)?;
                let s = format!("{}\n", arg.to_text());
                self.emit(&s)?;
                V(arg)
            }
            Prim::ReadReal => {
                let w = match self.read_word()? {
                    Some(w) => w,
                    None => return err(message::end_of_input()),
                };
                match base::number::parse_numeral(&w) {
                    Some(x) => V(Value::Real(x)),
                    None => return err(message::not_a_numeral(&w)),
                }
            }
            Prim::Zero => V(self.zero(&arg)?),
            Prim::Plus => {
                let (x, y) = two_values(p, &arg)?;
                V(self.plus(&x, &y)?)
            }
            Prim::CustomConform => {
                let (x, zero) = two_values(p, &arg)?;
                if !self.conforms(&x, &zero)? {
                    return err(message::nonconforming_sensitivity(
                        &zero.describe(),
                        &x.describe(),
                    ));
                }
                V(x)
            }
            Prim::Perturb => V(self.tag_wrap(Tag::Perturb, arg)?),
            Prim::Unperturb => V(self.tag_unwrap(Tag::Perturb, arg)?),
            Prim::Sensitize => V(self.tag_wrap(Tag::Sensitize, arg)?),
            Prim::Unsensitize => V(self.tag_unwrap(Tag::Sensitize, arg)?),
            Prim::StarJ => V(self.tag_wrap(Tag::Reverse, arg)?),
            Prim::StarJInverse => V(self.tag_unwrap(Tag::Reverse, arg)?),
            Prim::Bundle => {
                let (x, y) = two_values(p, &arg)?;
                V(self.bundle(x, y)?)
            }
            Prim::Primal => V(self.primal(arg)?),
            Prim::Tangent => V(self.tangent(arg)?),
            Prim::IsVector
            | Prim::VectorLength
            | Prim::VectorRef
            | Prim::BuildVector
            | Prim::ListToVector
            | Prim::VectorOneHot
            | Prim::VectorCheckLength
            | Prim::VectorCheckLengths
            | Prim::VectorCheckRange => V(self.vector_prim(p, arg)?),
        })
    }

    /// Is `v` an AD value whose outermost tag is `tag`? O(1).
    fn has_tag(&self, v: &Value, tag: Tag) -> bool {
        match v {
            Value::Closure(c) => self.prog.lambda_tag(c.lambda) == Some(tag),
            _ => v.wrapper_tag() == Some(tag),
        }
    }
}
