//! Run-time values and their printed form (docs/reference.md).
//!
//! AD tags are wrappers: `(perturb v)` of a real, a boolean, `()` or a pair
//! is `Perturbation(v)`, built in O(1), and its parts are tagged only when
//! something looks at them ([`Value::pair_view`]). So `*j`, `primal`,
//! `unperturb` and the other tag operations never traverse data, and type
//! predicates on transformed values never do either. Procedures are the
//! exception: a transformed closure is materialised at once as a closure of
//! the transformed lambda over the transformed environment, because applying
//! it needs exactly that, and a transformed primitive is the closure of its
//! AD prelude entry. Invariant: no wrapper ever holds a procedure.

use base::number::format_real;
use ir::ExpectDatum;
use ir::{LambdaId, Prim, Tag};
use std::rc::Rc;

#[derive(Clone, Debug)]
pub enum Value {
    Real(f64),
    Bool(bool),
    Nil,
    Prim(Prim),
    Pair(Rc<(Value, Value)>),
    Closure(Rc<Closure>),
    Perturbation(Rc<Value>),
    /// A forward value: primal, and tangent (itself a perturbation).
    Bundle(Rc<(Value, Value)>),
    Sensitivity(Rc<Value>),
    Reverse(Rc<Value>),
}

#[derive(Debug)]
pub struct Closure {
    pub lambda: LambdaId,
    /// One value per slot of the lambda's `free` list.
    pub env: Box<[Value]>,
}

impl Value {
    pub fn pair(a: Value, b: Value) -> Value {
        Value::Pair(Rc::new((a, b)))
    }

    pub fn is_false(&self) -> bool {
        matches!(self, Value::Bool(false))
    }

    /// The wrapper tag of a non-procedure value.
    pub fn wrapper_tag(&self) -> Option<Tag> {
        match self {
            Value::Perturbation(_) => Some(Tag::Perturb),
            Value::Bundle(_) => Some(Tag::Forward),
            Value::Sensitivity(_) => Some(Tag::Sensitize),
            Value::Reverse(_) => Some(Tag::Reverse),
            _ => None,
        }
    }

    /// Wraps a non-procedure value in `tag` (the forward wrapper needs a
    /// tangent, so it is not handled here).
    pub fn wrap(tag: Tag, v: Value) -> Value {
        match tag {
            Tag::Perturb => Value::Perturbation(Rc::new(v)),
            Tag::Sensitize => Value::Sensitivity(Rc::new(v)),
            Tag::Reverse => Value::Reverse(Rc::new(v)),
            Tag::Forward => unreachable!("forward values are built with a tangent"),
        }
    }

    /// A pair, or a tagged pair seen as the pair of its tagged halves.
    /// Used by printing and expectations; evaluation uses the tag-aware
    /// pair operations of the interpreter.
    pub fn pair_view(&self) -> Option<(Value, Value)> {
        match self {
            Value::Pair(p) => Some((p.0.clone(), p.1.clone())),
            Value::Perturbation(x) | Value::Sensitivity(x) | Value::Reverse(x) => {
                let (a, b) = x.pair_view()?;
                let tag = self.wrapper_tag()?;
                Some((Value::wrap(tag, a), Value::wrap(tag, b)))
            }
            Value::Bundle(pt) => {
                let (pa, pb) = pt.0.pair_view()?;
                let t = match &pt.1 {
                    Value::Perturbation(t) => t,
                    _ => return None,
                };
                let (ta, tb) = t.pair_view()?;
                Some((
                    Value::Bundle(Rc::new((pa, Value::wrap(Tag::Perturb, ta)))),
                    Value::Bundle(Rc::new((pb, Value::wrap(Tag::Perturb, tb)))),
                ))
            }
            _ => None,
        }
    }

    /// The printed form (docs/reference.md).
    pub fn to_text(&self) -> String {
        let mut s = String::new();
        self.write_text(&mut s);
        s
    }

    pub fn write_text(&self, out: &mut String) {
        if let Some((a, b)) = self.pair_view() {
            out.push('(');
            a.write_text(out);
            let mut rest = b;
            loop {
                if let Some((a, b)) = rest.pair_view() {
                    out.push(' ');
                    a.write_text(out);
                    rest = b;
                } else if matches!(rest, Value::Nil) {
                    break;
                } else {
                    out.push_str(" . ");
                    rest.write_text(out);
                    break;
                }
            }
            out.push(')');
            return;
        }
        match self {
            Value::Real(x) => out.push_str(&format_real(*x)),
            Value::Bool(true) => out.push_str("#t"),
            Value::Bool(false) => out.push_str("#f"),
            Value::Nil => out.push_str("()"),
            Value::Prim(_) | Value::Closure(_) => out.push_str("#<procedure>"),
            Value::Bundle(pt) => {
                out.push_str("(forward ");
                pt.0.write_text(out);
                out.push(' ');
                pt.1.write_text(out);
                out.push(')');
            }
            Value::Perturbation(x) | Value::Sensitivity(x) | Value::Reverse(x) => {
                out.push('(');
                out.push_str(self.wrapper_tag().map(Tag::name).unwrap_or("?"));
                out.push(' ');
                x.write_text(out);
                out.push(')');
            }
            Value::Pair(_) => unreachable!("pairs print as lists above"),
        }
    }

    /// The printed form, shortened for error messages.
    pub fn describe(&self) -> String {
        let mut s = self.to_text();
        if let Some(cut) = base::message::value_cut(s.as_bytes()) {
            s.truncate(cut);
            s.push_str(base::message::ELLIPSIS);
        }
        s
    }

    /// The value as the datum it prints as, for comparing with `===>`.
    pub fn to_expect(&self) -> ExpectDatum {
        if let Some((a, b)) = self.pair_view() {
            return ExpectDatum::Pair(Box::new(a.to_expect()), Box::new(b.to_expect()));
        }
        let list = |items: Vec<ExpectDatum>| {
            items.into_iter().rev().fold(ExpectDatum::Nil, |acc, x| {
                ExpectDatum::Pair(Box::new(x), Box::new(acc))
            })
        };
        match self {
            Value::Real(x) => ExpectDatum::Real(*x),
            Value::Bool(b) => ExpectDatum::Bool(*b),
            Value::Nil => ExpectDatum::Nil,
            Value::Prim(_) | Value::Closure(_) => ExpectDatum::Symbol("#<procedure>".into()),
            Value::Bundle(pt) => list(vec![
                ExpectDatum::Symbol("forward".into()),
                pt.0.to_expect(),
                pt.1.to_expect(),
            ]),
            Value::Perturbation(x) | Value::Sensitivity(x) | Value::Reverse(x) => list(vec![
                ExpectDatum::Symbol(self.wrapper_tag().map(Tag::name).unwrap_or("?").into()),
                x.to_expect(),
            ]),
            Value::Pair(_) => unreachable!("pairs are handled above"),
        }
    }

    /// Identity of a heap node, for memo tables that preserve sharing.
    pub fn addr(&self) -> Option<usize> {
        match self {
            Value::Pair(p) | Value::Bundle(p) => Some(Rc::as_ptr(p) as *const u8 as usize),
            Value::Closure(c) => Some(Rc::as_ptr(c) as *const u8 as usize),
            Value::Perturbation(x) | Value::Sensitivity(x) | Value::Reverse(x) => {
                Some(Rc::as_ptr(x) as *const u8 as usize)
            }
            _ => None,
        }
    }
}

/// Equality of reals for `stalingrad test`: within 1e-9 relative or 1e-12
/// absolute (docs/reference.md).
pub fn reals_match(a: f64, b: f64) -> bool {
    if a == b || (a.is_nan() && b.is_nan()) {
        return true;
    }
    let d = (a - b).abs();
    d <= 1e-12 || d <= 1e-9 * a.abs().max(b.abs())
}

/// Does a value's printed datum match an expectation?
pub fn expect_matches(got: &ExpectDatum, want: &ExpectDatum) -> bool {
    match (got, want) {
        (ExpectDatum::Real(a), ExpectDatum::Real(b)) => reals_match(*a, *b),
        (ExpectDatum::Bool(a), ExpectDatum::Bool(b)) => a == b,
        (ExpectDatum::Nil, ExpectDatum::Nil) => true,
        (ExpectDatum::Symbol(a), ExpectDatum::Symbol(b)) => a == b,
        (ExpectDatum::Pair(a1, b1), ExpectDatum::Pair(a2, b2)) => {
            expect_matches(a1, a2) && expect_matches(b1, b2)
        }
        _ => false,
    }
}

/// An expectation printed the way values print.
pub fn expect_text(d: &ExpectDatum) -> String {
    match d {
        ExpectDatum::Real(x) => format_real(*x),
        ExpectDatum::Bool(true) => "#t".into(),
        ExpectDatum::Bool(false) => "#f".into(),
        ExpectDatum::Nil => "()".into(),
        ExpectDatum::Symbol(s) => s.clone(),
        ExpectDatum::Pair(..) => {
            let mut s = String::from("(");
            let mut cur = d;
            let mut first = true;
            loop {
                match cur {
                    ExpectDatum::Pair(a, b) => {
                        if !first {
                            s.push(' ');
                        }
                        first = false;
                        s.push_str(&expect_text(a));
                        cur = b;
                    }
                    ExpectDatum::Nil => break,
                    other => {
                        s.push_str(" . ");
                        s.push_str(&expect_text(other));
                        break;
                    }
                }
            }
            s.push(')');
            s
        }
    }
}
