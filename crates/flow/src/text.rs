//! The text of abstract values: as shapes (for the `--emit=flow` dump and
//! the analysis' errors) and as VLAD prints values (for the messages of
//! run-time errors the analysis finds, with marks where a scalar is known
//! only at run time).

use crate::domain::{Av, AvId, Domain, Leaf, LeafKind, NoLeaf};
use ir::printer::{self, Node};
use ir::EntityRef;
use ir::Program;
use std::fmt::Write;

/// An abstract value in the notation of printed values: `R` is an unknown
/// real, `B` an unknown boolean, `<L3 f: ...>` a closure with its
/// environment, `_` no value; tags and forward values are written as
/// they are held, not pushed into pairs.
pub fn av_text(dom: &Domain, prog: &Program, v: AvId) -> String {
    let mut out = Dump {
        prog,
        text: String::new(),
    };
    printer::write(Held { dom, v }, &mut out);
    out.text
}

/// An abstract value as the dump shows it: only pairs and known atoms
/// are printed as values are.
#[derive(Clone, Copy)]
struct Held<'a> {
    dom: &'a Domain,
    v: AvId,
}

impl printer::View for Held<'_> {
    fn node(self) -> Node<Self> {
        let at = |v| Held { dom: self.dom, v };
        match self.dom.get(self.v) {
            Av::Pair(a, b) => Node::Pair(at(*a), at(*b)),
            Av::Real(Some(x)) => Node::Real(f64::from_bits(*x)),
            Av::Bool(Some(b)) => Node::Bool(*b),
            Av::Nil => Node::Nil,
            _ => Node::Opaque,
        }
    }
}

struct Dump<'a> {
    prog: &'a Program,
    text: String,
}

impl<'a> printer::Sink<Held<'a>> for Dump<'_> {
    fn text(&mut self, s: &str) {
        self.text.push_str(s);
    }
    fn opaque(&mut self, x: Held<'a>) {
        let dom = x.dom;
        let at = |v| Held { dom, v };
        match dom.get(x.v) {
            Av::Bottom => self.text.push('_'),
            Av::Union(u) => {
                let _ = write!(self.text, "U{}", dom.find(*u).index());
            }
            Av::Real(_) => self.text.push('R'),
            Av::Bool(_) => self.text.push('B'),
            Av::Prim(p) => self.text.push_str(p.name()),
            Av::Closure(l, env) => {
                let _ = write!(self.text, "<{}", l);
                if let Some(n) = &self.prog.lambdas[*l].name {
                    let _ = write!(self.text, " {n}");
                }
                for v in env.iter() {
                    self.text.push(' ');
                    printer::write(at(*v), self);
                }
                self.text.push('>');
            }
            Av::Wrap(t, v) => {
                let _ = write!(self.text, "({} ", t.name());
                printer::write(at(*v), self);
                self.text.push(')');
            }
            Av::Bundle(p, t) => {
                self.text.push_str("(forward ");
                printer::write(at(*p), self);
                self.text.push(' ');
                printer::write(at(*t), self);
                self.text.push(')');
            }
            Av::Vector(e, n) => {
                self.text.push_str("#(");
                printer::write(at(*e), self);
                self.text.push_str(" ...");
                printer::write(at(*n), self);
                self.text.push(')');
            }
            Av::Pair(..) | Av::Nil => {}
            Av::Leaf(l, _) => match *l {},
        }
    }
}

/// Brackets the text of a value with leaves ([`Av::Leaf`]) in an error
/// message, so that the mode's crate can shorten it at run time.
pub const VALUE_MARK: char = '\u{2}';

/// An abstract value as `ir::printer` sees it: known parts as the
/// interpreter's values print; unknown ones opaque, written by
/// [`value_text`] and by lowering's printing.
#[derive(Clone, Copy)]
pub struct Shape<'a, L = NoLeaf> {
    pub dom: &'a Domain<L>,
    pub v: AvId,
}

impl<L: Leaf> printer::View for Shape<'_, L> {
    fn node(self) -> Node<Self> {
        let at = |v| Shape { dom: self.dom, v };
        match self.dom.get(self.v) {
            Av::Pair(a, b) => Node::Pair(at(*a), at(*b)),
            // A tagged vector of a mode's leaves is printed element by
            // element by that mode, the tag on each.
            Av::Wrap(_, x) if matches!(self.dom.get(*x), Av::Leaf(_, LeafKind::Vector(..))) => {
                Node::Opaque
            }
            // So is a forward vector of forward vectors, at any depth.
            Av::Bundle(p, _) if vector_leaf(self.dom, *p) => Node::Opaque,
            Av::Wrap(t, x) => Node::Tagged(*t, at(*x)),
            Av::Bundle(p, t) => Node::Bundle(at(*p), at(*t)),
            Av::Prim(_) | Av::Closure(..) => Node::Procedure,
            Av::Real(Some(x)) => Node::Real(f64::from_bits(*x)),
            Av::Bool(Some(b)) => Node::Bool(*b),
            Av::Nil => Node::Nil,
            // A vector whose every element is known (the same value) is
            // written out; any other is opaque (its elements are joined).
            Av::Vector(e, n) => match (self.dom.is_known(*e), self.dom.get(*n)) {
                (true, Av::Real(Some(n))) if f64::from_bits(*n) <= MAX_SHOWN as f64 => {
                    Node::Vector(vec![at(*e); f64::from_bits(*n) as usize])
                }
                _ => Node::Opaque,
            },
            Av::Leaf(_, LeafKind::Vector(..)) => match self.dom.shown_items(self.v) {
                Some(items) => Node::Vector(items.iter().map(|x| at(*x)).collect()),
                None => Node::Opaque,
            },
            Av::Real(None) | Av::Bool(None) | Av::Leaf(..) | Av::Bottom | Av::Union(_) => {
                Node::Opaque
            }
        }
    }
}

/// Is `v` a vector of a mode's leaves, under tags or as the primal of
/// forward values? (Not where only a tangent is one: a value found in a
/// forward derivative shows its primal, known or not.)
fn vector_leaf<L: Leaf>(dom: &Domain<L>, v: AvId) -> bool {
    match dom.get(v) {
        Av::Leaf(_, LeafKind::Vector(..)) => true,
        Av::Wrap(_, x) | Av::Bundle(x, _) => vector_leaf(dom, *x),
        _ => false,
    }
}

/// The longest vector of known elements written out in messages (the
/// interpreter shortens longer text anyway).
const MAX_SHOWN: usize = 64;

/// A value as a message shows it: a [`Shape`], except that a tagged or
/// forward vector of leaves whose elements lowering has loaded
/// (`Domain::show_items`) is a tagged or forward vector, as the
/// interpreter's is, whose tags an error inside a derivative takes off
/// (`printer::Found`).
#[derive(Clone, Copy)]
struct Said<'a, L>(Shape<'a, L>);

impl<L: Leaf> printer::View for Said<'_, L> {
    fn node(self) -> Node<Self> {
        let Shape { dom, v } = self.0;
        let at = |v| Said(Shape { dom, v });
        let shown = |x: &AvId| dom.shown_items(*x).is_some();
        match dom.get(v) {
            Av::Wrap(t, x) if shown(x) => Node::Tagged(*t, at(*x)),
            Av::Bundle(p, t) if shown(p) => Node::Bundle(at(*p), at(*t)),
            _ => self.0.node().map(Said),
        }
    }
}

/// Writes the unknown parts of a value in a message; `leaves` is set
/// when one of them is a leaf ([`Leaf::write_message`],
/// [`Leaf::write_printed`]). Parts of a value found in a derivative
/// (`printed` is false), whose tags `printer::Found` would take off, are
/// not printed at run time.
struct Message {
    text: String,
    leaves: bool,
    printed: bool,
}

impl<L: Leaf> printer::Sink<Said<'_, L>> for Message {
    fn text(&mut self, s: &str) {
        self.text.push_str(s);
    }
    fn opaque(&mut self, Said(x): Said<'_, L>) {
        match x.dom.get(x.v) {
            Av::Real(None) => self.text.push('R'),
            Av::Bool(None) => self.text.push('B'),
            Av::Leaf(l, k @ (LeafKind::Real | LeafKind::Bool)) => {
                l.write_message(*k, &mut self.text);
                self.leaves = true;
            }
            Av::Bottom => self.text.push('_'),
            _ if self.printed
                && printable(x.dom, x.v)
                && L::write_printed(x.v, &[], false, &mut self.text) =>
            {
                self.leaves = true;
            }
            _ => self.text.push_str(RUN_TIME_SHAPE),
        }
    }
    fn opaque_rest(&mut self, Said(x): Said<'_, L>) -> bool {
        let rest = self.printed
            && matches!(x.dom.get(x.v), Av::Leaf(_, LeafKind::Union(_)))
            && L::write_printed(x.v, &[], true, &mut self.text);
        self.leaves |= rest;
        rest
    }
    fn opaque_tagged(&mut self, tags: &[ir::Tag], Said(x): Said<'_, L>) -> bool {
        let vector = !matches!(x.dom.get(x.v), Av::Leaf(_, LeafKind::Union(_)));
        let shown = self.printed
            && vector
            && printable(x.dom, x.v)
            && L::write_printed(x.v, tags, false, &mut self.text);
        self.leaves |= shown;
        shown
    }
}

pub use base::message::RUN_TIME_SHAPE;

/// Can code run then print `v`, a part of a value [`Shape`] leaves
/// opaque: the cells of a union, or a vector of run-time length, tags and
/// tangents on it included?
fn printable<L: Leaf>(dom: &Domain<L>, v: AvId) -> bool {
    match dom.get(v) {
        Av::Leaf(_, LeafKind::Union(_) | LeafKind::Vector(..)) => true,
        Av::Wrap(_, x) => printable(dom, *x),
        Av::Bundle(p, t) => printable(dom, *p) && printable(dom, *t),
        _ => false,
    }
}

/// An abstract value printed the way the interpreter prints the value
/// found in the world `world` (`ir::printer::Found`), and whether the text
/// has leaves in it.
pub fn value_text<L: Leaf>(dom: &Domain<L>, world: &[ir::Tag], v: AvId) -> (String, bool) {
    let mut out = Message {
        text: String::new(),
        leaves: false,
        printed: world.is_empty(),
    };
    printer::write_found(world, Said(Shape { dom, v }), &mut out);
    (out.text, out.leaves)
}

/// A union and its members: `U3 = () | (R . U3)`.
pub fn union_text(dom: &Domain, prog: &Program, u: crate::UnionId) -> String {
    let members: Vec<String> = dom
        .members(u)
        .iter()
        .map(|m| av_text(dom, prog, *m))
        .collect();
    format!("U{} = {}", dom.find(u).index(), members.join(" | "))
}

pub(crate) fn site_text(prog: &Program, site: &crate::Site) -> String {
    use crate::Site;
    let ctx = |c: u32| {
        if c == u32::MAX {
            "top level".to_string()
        } else {
            format!("context {c}")
        }
    };
    match site {
        Site::If(v, c) => format!("the conditional {} ({})", ir::print::var(prog, *v), ctx(*c)),
        Site::Switch(v, c) => format!("the split {} ({})", ir::print::var(prog, *v), ctx(*c)),
        Site::Result(c) => format!("a result ({})", ctx(*c)),
        Site::Literal(k) => format!("the vectors of constant {k}"),
        Site::List(v) => format!("the long list {v}"),
        Site::Elements(v, c) => format!(
            "the elements of the vector {} ({})",
            ir::print::var(prog, *v),
            ctx(*c)
        ),
        Site::Arg(l, _) => format!("the arguments of {l}"),
        Site::Env(l, i, _) => format!("environment slot {i} of {l}"),
        Site::Part(u, _) => format!("parts of U{}", u.index()),
        Site::Zero(u) => format!("zero of U{}", u.index()),
        Site::Map(op, u, w) => match w {
            Some(w) => format!("{op:?} of U{} and U{}", u.index(), w.index()),
            None => format!("{op:?} of U{}", u.index()),
        },
        Site::Within(base, path) => {
            format!("a part ({path:x}) of the values joined at site {base}")
        }
        Site::Plus(u, w) => format!("plus of U{} and U{}", u.index(), w.index()),
    }
}
