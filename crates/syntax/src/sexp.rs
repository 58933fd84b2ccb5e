//! S-expressions as read, each node with the position it starts at.

use base::diag::Span;

#[derive(Clone, Debug, PartialEq)]
pub struct Sexp {
    pub kind: SexpKind,
    pub span: Span,
}

#[derive(Clone, Debug, PartialEq)]
pub enum SexpKind {
    Number(f64),
    Bool(bool),
    Symbol(String),
    /// Only `include` takes one.
    String(String),
    /// `(a b c)`; `()` is an empty list.
    List(Vec<Sexp>),
    /// `(a b . c)`: at least one element before the dot.
    Dotted(Vec<Sexp>, Box<Sexp>),
    /// `#(a b c)`: a vector literal.
    Vector(Vec<Sexp>),
}

impl Sexp {
    pub fn symbol(&self) -> Option<&str> {
        match &self.kind {
            SexpKind::Symbol(s) => Some(s),
            _ => None,
        }
    }

    pub fn list(&self) -> Option<&[Sexp]> {
        match &self.kind {
            SexpKind::List(v) => Some(v),
            _ => None,
        }
    }

    /// A short description of what this form is, for "expected X, found Y".
    pub fn describe(&self) -> String {
        match &self.kind {
            SexpKind::Number(n) => format!("the number {}", base::number::format_real(*n)),
            SexpKind::Bool(b) => (if *b { "#t" } else { "#f" }).to_string(),
            SexpKind::Symbol(s) => format!("the symbol `{s}`"),
            SexpKind::String(s) => format!("the string {s:?}"),
            SexpKind::List(v) if v.is_empty() => "()".to_string(),
            SexpKind::List(v) => match v[0].symbol() {
                Some(h) => format!("a `({h} ...)` form"),
                None => "a list".to_string(),
            },
            SexpKind::Dotted(..) => "a dotted list".to_string(),
            SexpKind::Vector(_) => "a vector literal".to_string(),
        }
    }
}
