//! Run-time values, as `ir::printer` sees them to print them
//! (docs/reference.md).
//!
//! AD tags are wrappers: `(perturb v)` of a real, a boolean, `()` or a pair
//! is `Perturbation(v)`, built in O(1), and its parts are tagged only when
//! something looks at them (the tag-aware pair operations, printing). So `*j`, `primal`,
//! `unperturb` and the other tag operations never traverse data, and type
//! predicates on transformed values never do either. Procedures are the
//! exception: a transformed closure is materialised at once as a closure of
//! the transformed lambda over the transformed environment, because applying
//! it needs exactly that, and a transformed primitive is the closure of its
//! AD prelude entry. Invariant: no wrapper ever holds a procedure.

use ir::printer::{self, Form, Node, Shown};
use ir::ExpectDatum;
use ir::{LambdaId, Prim, Tag};
use std::rc::Rc;

/// The elements of a vector, behind one thin pointer: a `Value` stays two
/// words, which the interpreter's frames and memory bounds rely on.
pub type Items = Rc<Vec<Value>>;

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
    /// A vector (docs/reference.md): its elements.
    Vector(Items),
    /// A vector made as a sum of one-hot vectors, kept as the additions
    /// themselves until something reads its elements: the sensitivity of a
    /// vector that reverse mode reads k times costs O(k), not O(n) per read
    /// (see [`crate::vector`]).
    VectorSum(Rc<crate::vector::VectorSum>),
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

    /// The printed form (docs/reference.md).
    pub fn to_text(&self) -> String {
        printer::text(self)
    }

    /// The printed form, shortened for error messages.
    pub fn describe(&self) -> String {
        printer::shortened(self.to_text())
    }

    /// The value as an error message shows it when an operation of the
    /// world `world` found it ([`printer::Found`]), shortened.
    pub fn describe_found(&self, world: &[Tag]) -> String {
        let mut s = String::new();
        printer::write_found(world, self, &mut s);
        printer::shortened(s)
    }

    /// The value as the datum it prints as, for comparing with `===>`.
    pub fn to_expect(&self) -> ExpectDatum {
        expect_of(&Shown::Plain(self))
    }

    /// Identity of a heap node, for memo tables that preserve sharing.
    pub fn addr(&self) -> Option<usize> {
        match self {
            Value::Pair(p) | Value::Bundle(p) => Some(Rc::as_ptr(p) as *const u8 as usize),
            Value::Closure(c) => Some(Rc::as_ptr(c) as *const u8 as usize),
            Value::Perturbation(x) | Value::Sensitivity(x) | Value::Reverse(x) => {
                Some(Rc::as_ptr(x) as *const u8 as usize)
            }
            Value::Vector(v) => Some(Rc::as_ptr(v) as *const u8 as usize),
            Value::VectorSum(v) => Some(Rc::as_ptr(v) as *const u8 as usize),
            _ => None,
        }
    }
}

impl printer::View for &Value {
    fn node(self) -> Node<Self> {
        match self {
            Value::Real(x) => Node::Real(*x),
            Value::Bool(b) => Node::Bool(*b),
            Value::Nil => Node::Nil,
            Value::Prim(_) | Value::Closure(_) => Node::Procedure,
            Value::Pair(p) => Node::Pair(&p.0, &p.1),
            Value::Bundle(pt) => Node::Bundle(&pt.0, &pt.1),
            Value::Perturbation(x) => Node::Tagged(Tag::Perturb, x),
            Value::Sensitivity(x) => Node::Tagged(Tag::Sensitize, x),
            Value::Reverse(x) => Node::Tagged(Tag::Reverse, x),
            Value::Vector(items) => Node::Vector(items.iter().collect()),
            Value::VectorSum(sum) => Node::Vector(sum.shown().iter().collect()),
        }
    }
}

fn expect_of(s: &Shown<&Value>) -> ExpectDatum {
    let list = |items: Vec<ExpectDatum>| {
        items.into_iter().rev().fold(ExpectDatum::Nil, |acc, x| {
            ExpectDatum::Pair(Box::new(x), Box::new(acc))
        })
    };
    let symbol = |s: &str| ExpectDatum::Symbol(s.into());
    match printer::form(s) {
        Form::Pair(a, b) => ExpectDatum::Pair(Box::new(expect_of(&a)), Box::new(expect_of(&b))),
        Form::Tagged(t, x) => list(vec![symbol(t.name()), expect_of(&x)]),
        Form::Bundle(p, t) => list(vec![
            symbol(Tag::Forward.name()),
            expect_of(&p),
            expect_of(&t),
        ]),
        Form::Vector(items) => ExpectDatum::Vector(items.iter().map(expect_of).collect()),
        Form::Real(x) => ExpectDatum::Real(x),
        Form::Bool(b) => ExpectDatum::Bool(b),
        Form::Nil => ExpectDatum::Nil,
        // A value has no opaque nodes.
        Form::Procedure | Form::Opaque(_) => symbol(printer::PROCEDURE),
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
        (ExpectDatum::Vector(a), ExpectDatum::Vector(b)) => {
            a.len() == b.len() && a.iter().zip(b).all(|(x, y)| expect_matches(x, y))
        }
        _ => false,
    }
}

/// An expectation printed the way values print.
pub fn expect_text(d: &ExpectDatum) -> String {
    let mut out = Symbols(String::new());
    printer::write(Expected(d), &mut out);
    out.0
}

/// An expectation seen by the printer: its symbols are opaque.
#[derive(Clone, Copy)]
struct Expected<'a>(&'a ExpectDatum);

impl printer::View for Expected<'_> {
    fn node(self) -> Node<Self> {
        match self.0 {
            ExpectDatum::Real(x) => Node::Real(*x),
            ExpectDatum::Bool(b) => Node::Bool(*b),
            ExpectDatum::Nil => Node::Nil,
            ExpectDatum::Pair(a, b) => Node::Pair(Expected(a), Expected(b)),
            ExpectDatum::Vector(items) => Node::Vector(items.iter().map(Expected).collect()),
            ExpectDatum::Symbol(_) => Node::Opaque,
        }
    }
}

/// Writes an expectation's symbols by name.
struct Symbols(String);

impl printer::Sink<Expected<'_>> for Symbols {
    fn text(&mut self, s: &str) {
        self.0.push_str(s);
    }
    fn opaque(&mut self, v: Expected<'_>) {
        if let ExpectDatum::Symbol(s) = v.0 {
            self.0.push_str(s);
        }
    }
}

#[cfg(test)]
mod tests {
    /// Frames of the interpreter hold values by the thousand: a vector
    /// must not make every value wider than two words.
    #[test]
    fn a_value_is_two_words() {
        assert_eq!(std::mem::size_of::<super::Value>(), 16);
    }
}
