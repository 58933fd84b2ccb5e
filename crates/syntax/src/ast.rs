//! The core AST: what the expander produces and `ir::anf` consumes.
//!
//! Invariants established by [`crate::expand`]:
//! - every top-level name is unique in the whole program (library names
//!   that a user program redefines are renamed out of the way);
//! - top-level items appear in evaluation order, and every top-level name an
//!   item refers to is bound by an earlier item or by the item itself (for
//!   the mutually recursive lambdas of one [`TopItem::Rec`]);
//! - no pattern or binding group binds a name twice.
//!
//! Local names are not yet unique; `ir::anf` alpha-converts. A name that is
//! bound nowhere is a primitive or an error, decided by `ir::anf`.

use std::collections::{HashMap, HashSet};

use base::diag::Span;

pub type Name = String;

/// A [`Expr::Var`] named `#%NAME` always means the primitive `NAME`, even
/// when the program defines `NAME` itself. The expander writes such names
/// only in standard-library code whose primitive references a user
/// definition would otherwise capture (e.g. a program that defines its own
/// `sqrt` must not change the library's `magnitude`). Users cannot write
/// them: the reader rejects `#%`.
pub const PRIMITIVE_PREFIX: &str = "#%";

/// The primitive a variable name denotes when it uses [`PRIMITIVE_PREFIX`].
pub fn forced_primitive(name: &str) -> Option<&str> {
    name.strip_prefix(PRIMITIVE_PREFIX)
}

/// A constant: what `quote` and self-evaluating forms denote.
#[derive(Clone, Debug, PartialEq)]
pub enum Datum {
    Real(f64),
    Bool(bool),
    Nil,
    Pair(Box<Datum>, Box<Datum>),
    Vector(Vec<Datum>),
}

#[derive(Clone, Debug, PartialEq)]
pub enum Expr {
    Const(Datum, Span),
    Var(Name, Span),
    Lambda(Box<Lambda>),
    /// `(f a)`: every procedure takes one argument; n-ary calls have been
    /// turned into a call on a `cons*` chain.
    App(Box<Expr>, Box<Expr>, Span),
    /// Pair construction, `(cons a b)`.
    Cons(Box<Expr>, Box<Expr>, Span),
    /// `(if c a b)`: lowered to the primitive `if-procedure` on two thunks.
    If(Box<Expr>, Box<Expr>, Box<Expr>, Span),
    /// `(let ((p e) ...) body)`: all right-hand sides are evaluated, left to
    /// right, in the outer scope; then all patterns are matched.
    Let(Vec<(Pattern, Expr)>, Box<Expr>, Span),
    /// Mutually recursive local procedures.
    Letrec(Vec<RecBinding>, Box<Expr>, Span),
}

#[derive(Clone, Debug, PartialEq)]
pub struct Lambda {
    pub param: Pattern,
    pub body: Expr,
    pub span: Span,
    /// The name it was defined with, for messages and dumps.
    pub name: Option<Name>,
}

#[derive(Clone, Debug, PartialEq)]
pub struct RecBinding {
    pub name: Name,
    pub span: Span,
    pub lambda: Lambda,
}

#[derive(Clone, Debug, PartialEq)]
pub enum Pattern {
    Var(Name, Span),
    Cons(Box<Pattern>, Box<Pattern>, Span),
    /// Matches only a value equal to the datum.
    Const(Datum, Span),
}

impl Pattern {
    pub fn span(&self) -> Span {
        match self {
            Pattern::Var(_, s) | Pattern::Cons(_, _, s) | Pattern::Const(_, s) => *s,
        }
    }

    /// The variables the pattern binds, left to right, with their spans.
    pub fn vars(&self) -> Vec<(Name, Span)> {
        let mut out = Vec::new();
        let mut todo = vec![self];
        while let Some(p) = todo.pop() {
            match p {
                Pattern::Var(n, s) => out.push((n.clone(), *s)),
                Pattern::Cons(a, b, _) => {
                    todo.push(b);
                    todo.push(a);
                }
                Pattern::Const(..) => {}
            }
        }
        out
    }
}

impl Expr {
    pub fn span(&self) -> Span {
        match self {
            Expr::Const(_, s)
            | Expr::Var(_, s)
            | Expr::App(_, _, s)
            | Expr::Cons(_, _, s)
            | Expr::If(_, _, _, s)
            | Expr::Let(_, _, s)
            | Expr::Letrec(_, _, s) => *s,
            Expr::Lambda(l) => l.span,
        }
    }

    /// The variables that occur free in the expression, each once, in order
    /// of first occurrence, with the span of that occurrence. Scope aware:
    /// names bound by a lambda parameter, `let` pattern or `letrec` are not
    /// free where they are bound. Used to order top-level definitions and
    /// to report the use at fault; later stages may use it for closure
    /// conversion.
    pub fn free_vars(&self) -> Vec<(Name, Span)> {
        let mut fv = FreeVars::default();
        fv.expr(self);
        fv.out
    }
}

/// Walks an expression keeping a count of how often each name is bound
/// in the current scope (counts, not a set, because scopes nest and may
/// rebind the same name).
#[derive(Default)]
struct FreeVars {
    bound: HashMap<Name, usize>,
    seen: HashSet<Name>,
    out: Vec<(Name, Span)>,
}

impl FreeVars {
    fn bind(&mut self, names: &[Name]) {
        for n in names {
            *self.bound.entry(n.clone()).or_insert(0) += 1;
        }
    }

    fn unbind(&mut self, names: &[Name]) {
        for n in names {
            if let Some(c) = self.bound.get_mut(n) {
                *c -= 1;
                if *c == 0 {
                    self.bound.remove(n);
                }
            }
        }
    }

    fn pattern_names(p: &Pattern) -> Vec<Name> {
        p.vars().into_iter().map(|(n, _)| n).collect()
    }

    fn lambda(&mut self, l: &Lambda) {
        let names = Self::pattern_names(&l.param);
        self.bind(&names);
        self.expr(&l.body);
        self.unbind(&names);
    }

    fn expr(&mut self, e: &Expr) {
        // Loop on the last child so that long right-nested chains (lists,
        // n-ary calls) do not use stack.
        let mut e = e;
        let mut scopes: Vec<Vec<Name>> = Vec::new();
        loop {
            match e {
                Expr::Const(..) => break,
                Expr::Var(n, s) => {
                    if !self.bound.contains_key(n) && self.seen.insert(n.clone()) {
                        self.out.push((n.clone(), *s));
                    }
                    break;
                }
                Expr::Lambda(l) => {
                    self.lambda(l);
                    break;
                }
                Expr::App(a, b, _) | Expr::Cons(a, b, _) => {
                    self.expr(a);
                    e = b;
                }
                Expr::If(c, a, b, _) => {
                    self.expr(c);
                    self.expr(a);
                    e = b;
                }
                Expr::Let(binds, body, _) => {
                    let mut names = Vec::new();
                    for (p, rhs) in binds {
                        self.expr(rhs);
                        names.extend(Self::pattern_names(p));
                    }
                    self.bind(&names);
                    scopes.push(names);
                    e = body;
                }
                Expr::Letrec(binds, body, _) => {
                    let names: Vec<Name> = binds.iter().map(|b| b.name.clone()).collect();
                    self.bind(&names);
                    for b in binds {
                        self.lambda(&b.lambda);
                    }
                    scopes.push(names);
                    e = body;
                }
            }
        }
        for names in scopes.iter().rev() {
            self.unbind(names);
        }
    }
}

#[derive(Clone, Debug, PartialEq)]
pub enum TopItem {
    /// `(define name expr)` where expr is not a lambda (or is needed as a
    /// value before the lambda group could be formed).
    Define { name: Name, span: Span, expr: Expr },
    /// A strongly connected group of lambda definitions.
    Rec(Vec<RecBinding>),
    /// A top-level expression: its value is printed by `run`; `expect` is
    /// the datum after `===>`, used by `stalingrad test`.
    Show {
        expr: Expr,
        expect: Option<Expect>,
        span: Span,
    },
}

/// The datum after `===>`, with where it was written.
#[derive(Clone, Debug, PartialEq)]
pub struct Expect {
    pub datum: ExpectDatum,
    pub span: Span,
}

/// An expectation may mention things a constant cannot: tagged atoms are
/// written as lists (`(perturbation 1)`) and compare against the printed
/// form of a value, so an expectation is kept as a general tree.
#[derive(Clone, Debug, PartialEq)]
pub enum ExpectDatum {
    Real(f64),
    Bool(bool),
    Nil,
    Symbol(String),
    Pair(Box<ExpectDatum>, Box<ExpectDatum>),
    Vector(Vec<ExpectDatum>),
}

#[derive(Clone, Debug, PartialEq, Default)]
pub struct Program {
    pub items: Vec<TopItem>,
}
