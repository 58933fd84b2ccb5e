//! The printed form of values (docs/reference.md), written once for every
//! kind of value that is printed: the interpreter's values (`write`,
//! messages, `stalingrad test`), the analysis' abstract values (messages
//! it decides at compile time), lowering (compiled code printing the
//! known parts of a value as constant text and the rest at run time) and
//! the expectations of `stalingrad test`.
//!
//! Input: a value seen through [`View`], one node at a time. Output: text,
//! and the nodes only the caller can write ([`Node::Opaque`]: an unknown
//! part of an abstract value, a symbol), handed to a [`Sink`] in order.
//! Here and only here are decided: that a pair prints as a list when its
//! rest does and as a dotted pair otherwise; that a tagged pair shows as
//! the pair of its tagged halves, as the interpreter's pair operations see
//! it (`(perturbation (1 . 2))` prints `((perturbation 1) . (perturbation
//! 2))`), and a forward pair, whose tangent is a perturbation pair, as the
//! pair of forward halves; and the text of reals (`base::number_core`),
//! booleans (`base::boolean`), `()`, procedures and tagged values. How a printed value is
//! shortened in a message is `base::message`, applied by [`shortened`].

use crate::Tag;
use base::message::{value_cut, ELLIPSIS};
use base::number_core::format_real;

/// What a procedure prints as.
pub const PROCEDURE: &str = "#<procedure>";

/// One node of a value, as printing needs to know it.
pub enum Node<V> {
    Real(f64),
    Bool(bool),
    Nil,
    Procedure,
    Pair(V, V),
    /// A value wrapped in a perturbation, sensitivity or reverse tag.
    Tagged(Tag, V),
    /// A forward value: primal and tangent.
    Bundle(V, V),
    /// A vector: its elements.
    Vector(Vec<V>),
    /// A node the [`Sink`] writes.
    Opaque,
}

impl<V> Node<V> {
    /// The node with its children seen through `at`.
    pub fn map<W>(self, at: impl Fn(V) -> W) -> Node<W> {
        match self {
            Node::Real(x) => Node::Real(x),
            Node::Bool(b) => Node::Bool(b),
            Node::Nil => Node::Nil,
            Node::Procedure => Node::Procedure,
            Node::Pair(a, b) => Node::Pair(at(a), at(b)),
            Node::Tagged(t, x) => Node::Tagged(t, at(x)),
            Node::Bundle(p, t) => Node::Bundle(at(p), at(t)),
            Node::Vector(items) => Node::Vector(items.into_iter().map(at).collect()),
            Node::Opaque => Node::Opaque,
        }
    }
}

/// A value printing can look at, one node at a time.
pub trait View: Copy {
    fn node(self) -> Node<Self>;
}

/// Where printed text goes.
pub trait Sink<V> {
    fn text(&mut self, s: &str);
    /// Writes an opaque node.
    fn opaque(&mut self, v: V);
    /// Writes opaque `v` as the rest of a list after an element (from the
    /// space before its next element to the closing parenthesis), and says
    /// so; `false` has it written as ` . v)`.
    fn opaque_rest(&mut self, _v: V) -> bool {
        false
    }
    /// Writes opaque `v` under the tags `tags` (outermost first), which a
    /// vector's elements carry each (`#((reverse 1) (reverse 2))`), and
    /// says so; `false` has it written as `(reverse v)`.
    fn opaque_tagged(&mut self, _tags: &[Tag], _v: V) -> bool {
        false
    }
    /// Writes the forward value of opaque `p` with tangent `t` (the value
    /// inside its perturbation), a vector of forward values where `p` is a
    /// vector (`#((forward 1 (perturbation 0)))`), and says so; `false`
    /// has it written as `(forward p t)`.
    fn opaque_bundle(&mut self, _p: V, _t: V) -> bool {
        false
    }
}

/// A string holds the text of values without opaque nodes (those of the
/// interpreter); a value with some is written to a sink of its own.
impl<V> Sink<V> for String {
    fn text(&mut self, s: &str) {
        self.push_str(s);
    }
    fn opaque(&mut self, _v: V) {}
}

/// A value as printing shows it: a value itself, or the tagged or forward
/// half of a tagged or forward pair.
#[derive(Clone)]
pub enum Shown<V> {
    Plain(V),
    Tagged(Tag, Box<Shown<V>>),
    Bundle(Box<Shown<V>>, Box<Shown<V>>),
}

/// What a shown value prints as.
pub enum Form<V> {
    /// `(a . b)`, or a list when `b` prints as one.
    Pair(Shown<V>, Shown<V>),
    /// `(perturbation x)`, `(sensitivity x)` or `(reverse x)`.
    Tagged(Tag, Shown<V>),
    /// `(forward p t)`.
    Bundle(Shown<V>, Shown<V>),
    /// `#(a b c)`.
    Vector(Vec<Shown<V>>),
    Real(f64),
    Bool(bool),
    Nil,
    Procedure,
    Opaque(V),
}

/// What `s` prints as: the one place where tagged and forward pairs
/// become pairs.
pub fn form<V: View>(s: &Shown<V>) -> Form<V> {
    match s {
        Shown::Plain(v) => match v.node() {
            Node::Pair(a, b) => Form::Pair(Shown::Plain(a), Shown::Plain(b)),
            Node::Tagged(t, x) => tagged(t, Shown::Plain(x)),
            Node::Bundle(p, t) => bundle(Shown::Plain(p), Shown::Plain(t)),
            Node::Vector(items) => Form::Vector(items.into_iter().map(Shown::Plain).collect()),
            Node::Real(x) => Form::Real(x),
            Node::Bool(b) => Form::Bool(b),
            Node::Nil => Form::Nil,
            Node::Procedure => Form::Procedure,
            Node::Opaque => Form::Opaque(*v),
        },
        Shown::Tagged(t, x) => tagged(*t, (**x).clone()),
        Shown::Bundle(p, t) => bundle((**p).clone(), (**t).clone()),
    }
}

fn tagged<V: View>(t: Tag, x: Shown<V>) -> Form<V> {
    match form(&x) {
        Form::Pair(a, b) => {
            Form::Pair(Shown::Tagged(t, Box::new(a)), Shown::Tagged(t, Box::new(b)))
        }
        Form::Vector(items) => Form::Vector(
            items
                .into_iter()
                .map(|x| Shown::Tagged(t, Box::new(x)))
                .collect(),
        ),
        _ => Form::Tagged(t, x),
    }
}

/// A forward pair or vector shows as the pair or vector of the forward
/// values of its parts.
fn bundle<V: View>(p: Shown<V>, t: Shown<V>) -> Form<V> {
    let forward = |(p, t)| {
        Shown::Bundle(
            Box::new(p),
            Box::new(Shown::Tagged(Tag::Perturb, Box::new(t))),
        )
    };
    match (form(&p), perturbation(&t).map(|ti| form(&ti))) {
        (Form::Pair(pa, pb), Some(Form::Pair(ta, tb))) => {
            Form::Pair(forward((pa, ta)), forward((pb, tb)))
        }
        (Form::Vector(ps), Some(Form::Vector(ts))) if ps.len() == ts.len() => {
            Form::Vector(ps.into_iter().zip(ts).map(forward).collect())
        }
        _ => Form::Bundle(p, t),
    }
}

/// The value inside a perturbation wrapper.
fn perturbation<V: View>(t: &Shown<V>) -> Option<Shown<V>> {
    match t {
        Shown::Plain(v) => match v.node() {
            Node::Tagged(Tag::Perturb, x) => Some(Shown::Plain(x)),
            _ => None,
        },
        Shown::Tagged(Tag::Perturb, x) => Some((**x).clone()),
        _ => None,
    }
}

/// Writes `v`'s printed form.
pub fn write<V: View>(v: V, out: &mut impl Sink<V>) {
    write_shown(&Shown::Plain(v), out);
}

/// Writes `v` as the rest of a list after an element: ` x y)` for the
/// list `(x y)`, `)` for `()`, ` . x)` for anything else.
pub fn write_rest<V: View>(v: V, out: &mut impl Sink<V>) {
    write_rest_shown(Shown::Plain(v), out);
}

/// `v`'s printed form (for values without opaque nodes).
pub fn text<V: View>(v: V) -> String {
    let mut s = String::new();
    write(v, &mut s);
    s
}

/// A value an operation of the world `world` found: the tags of the
/// derivatives in effect, outermost first (a pair operation's tag stack).
/// An error message shows it as the program made it: without those tags,
/// the primal of a forward value and the value under a perturbation,
/// sensitivity or reverse tag, at every node. Tags the program put on
/// itself (with `bundle`, `*j`, ...) lie under the world's and are kept.
#[derive(Clone, Copy)]
pub struct Found<'w, V> {
    pub world: &'w [Tag],
    pub v: V,
}

impl<'w, V: View> Found<'w, V> {
    /// The same value with the world's outer tags taken off as far as
    /// they are on it.
    fn settle(self) -> Self {
        let mut x = self;
        while let Some((&outer, inner)) = x.world.split_first() {
            x = match x.v.node() {
                Node::Tagged(t, v) if t == outer => Found { world: inner, v },
                Node::Bundle(v, _) if outer == Tag::Forward => Found { world: inner, v },
                _ => break,
            };
        }
        x
    }
}

impl<V: View> View for Found<'_, V> {
    fn node(self) -> Node<Self> {
        let x = self.settle();
        let world = x.world;
        x.v.node().map(|v| Found { world, v })
    }
}

/// Writes the opaque nodes of a [`Found`] value with the sink of the
/// value itself.
struct FoundSink<'s, S>(&'s mut S);

impl<V: View, S: Sink<V>> Sink<Found<'_, V>> for FoundSink<'_, S> {
    fn text(&mut self, s: &str) {
        self.0.text(s);
    }
    fn opaque(&mut self, x: Found<'_, V>) {
        self.0.opaque(x.settle().v);
    }
    fn opaque_rest(&mut self, x: Found<'_, V>) -> bool {
        self.0.opaque_rest(x.settle().v)
    }
}

/// Writes `v`, found in `world`, as an error message shows it ([`Found`]).
pub fn write_found<V: View>(world: &[Tag], v: V, out: &mut impl Sink<V>) {
    if world.is_empty() {
        write(v, out);
    } else {
        write(Found { world, v }, &mut FoundSink(out));
    }
}

/// A value's printed form shortened for an error message.
pub fn shortened(mut text: String) -> String {
    if let Some(cut) = value_cut(text.as_bytes()) {
        text.truncate(cut);
        text.push_str(ELLIPSIS);
    }
    text
}

fn write_shown<V: View>(s: &Shown<V>, out: &mut impl Sink<V>) {
    match form(s) {
        Form::Pair(a, b) => {
            out.text("(");
            write_shown(&a, out);
            write_rest_shown(b, out);
        }
        Form::Tagged(t, x) => {
            if let Some((tags, v)) = tagged_opaque(t, &x) {
                if out.opaque_tagged(&tags, v) {
                    return;
                }
            }
            out.text("(");
            out.text(t.name());
            out.text(" ");
            write_shown(&x, out);
            out.text(")");
        }
        Form::Bundle(p, t) => {
            if let (Form::Opaque(pv), Some(Shown::Plain(tv))) = (form(&p), perturbation(&t)) {
                if out.opaque_bundle(pv, tv) {
                    return;
                }
            }
            out.text("(");
            out.text(Tag::Forward.name());
            out.text(" ");
            write_shown(&p, out);
            out.text(" ");
            write_shown(&t, out);
            out.text(")");
        }
        Form::Real(x) => out.text(format_real(x).as_str()),
        Form::Bool(b) => out.text(base::boolean::text(b)),
        Form::Nil => out.text("()"),
        Form::Procedure => out.text(PROCEDURE),
        Form::Vector(items) => {
            out.text("#(");
            for (i, x) in items.iter().enumerate() {
                if i > 0 {
                    out.text(" ");
                }
                write_shown(x, out);
            }
            out.text(")");
        }
        Form::Opaque(v) => out.opaque(v),
    }
}

/// The tags over an opaque node, outermost first, if `x` under `t` is
/// one under tags.
fn tagged_opaque<V: View>(t: Tag, x: &Shown<V>) -> Option<(Vec<Tag>, V)> {
    let mut tags = vec![t];
    let mut x = x.clone();
    loop {
        match form(&x) {
            Form::Tagged(t, y) => {
                tags.push(t);
                x = y;
            }
            Form::Opaque(v) => return Some((tags, v)),
            _ => return None,
        }
    }
}

fn write_rest_shown<V: View>(mut rest: Shown<V>, out: &mut impl Sink<V>) {
    loop {
        match form(&rest) {
            Form::Pair(a, b) => {
                out.text(" ");
                write_shown(&a, out);
                rest = b;
                continue;
            }
            Form::Nil => {}
            Form::Opaque(v) if out.opaque_rest(v) => return,
            _ => {
                out.text(" . ");
                write_shown(&rest, out);
            }
        }
        break;
    }
    out.text(")");
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A value as the tests build it, in an arena.
    enum T {
        Real(f64),
        Bool(bool),
        Nil,
        Proc,
        Pair(usize, usize),
        Tagged(Tag, usize),
        Bundle(usize, usize),
        Vector(&'static [usize]),
        Sym(&'static str),
    }

    #[derive(Clone, Copy)]
    struct V<'a>(&'a [T], usize);

    impl View for V<'_> {
        fn node(self) -> Node<Self> {
            let at = |i| V(self.0, i);
            match self.0[self.1] {
                T::Real(x) => Node::Real(x),
                T::Bool(b) => Node::Bool(b),
                T::Nil => Node::Nil,
                T::Proc => Node::Procedure,
                T::Pair(a, b) => Node::Pair(at(a), at(b)),
                T::Tagged(t, x) => Node::Tagged(t, at(x)),
                T::Bundle(p, t) => Node::Bundle(at(p), at(t)),
                T::Vector(items) => Node::Vector(items.iter().map(|&i| at(i)).collect()),
                T::Sym(_) => Node::Opaque,
            }
        }
    }

    /// Writes symbols, and a symbol `...` as the rest of a list.
    struct Syms(String);

    impl Sink<V<'_>> for Syms {
        fn text(&mut self, s: &str) {
            self.0.push_str(s);
        }
        fn opaque(&mut self, v: V<'_>) {
            if let T::Sym(s) = v.0[v.1] {
                self.0.push_str(s);
            }
        }
        fn opaque_rest(&mut self, v: V<'_>) -> bool {
            let rest = matches!(v.0[v.1], T::Sym("..."));
            if rest {
                self.0.push_str(" ...)");
            }
            rest
        }
    }

    /// The text of the last node of `arena`.
    fn show(arena: &[T]) -> String {
        let mut out = Syms(String::new());
        write(V(arena, arena.len() - 1), &mut out);
        out.0
    }

    #[test]
    fn atoms() {
        assert_eq!(show(&[T::Real(2.5)]), "2.5");
        assert_eq!(show(&[T::Real(-0.0)]), "0");
        assert_eq!(show(&[T::Real(1e21)]), "1e+21");
        assert_eq!(show(&[T::Bool(true)]), "#t");
        assert_eq!(show(&[T::Bool(false)]), "#f");
        assert_eq!(show(&[T::Nil]), "()");
        assert_eq!(show(&[T::Proc]), "#<procedure>");
    }

    #[test]
    fn lists_dotted_pairs_and_nesting() {
        use T::*;
        // (1 2 3)
        let list = [
            Nil,
            Real(3.0),
            Pair(1, 0),
            Real(2.0),
            Pair(3, 2),
            Real(1.0),
            Pair(5, 4),
        ];
        assert_eq!(show(&list), "(1 2 3)");
        // (1 2 . #t)
        let dotted = [Bool(true), Real(2.0), Pair(1, 0), Real(1.0), Pair(3, 2)];
        assert_eq!(show(&dotted), "(1 2 . #t)");
        // ((1 . 2) (()) #<procedure>)
        let nested = [
            Real(1.0),
            Real(2.0),
            Pair(0, 1),
            Nil,
            Pair(3, 3),
            Proc,
            Pair(5, 3),
            Pair(4, 6),
            Pair(2, 7),
        ];
        assert_eq!(show(&nested), "((1 . 2) (()) #<procedure>)");
    }

    #[test]
    fn tagged_pairs_print_as_pairs_of_tagged_halves() {
        use T::*;
        assert_eq!(
            show(&[Real(1.0), Tagged(Tag::Sensitize, 0)]),
            "(sensitivity 1)"
        );
        let pair = [Real(1.0), Real(2.0), Pair(0, 1), Tagged(Tag::Perturb, 2)];
        assert_eq!(show(&pair), "((perturbation 1) . (perturbation 2))");
        // A tagged list: the tagged `()` ends no list.
        let list = [Nil, Real(1.0), Pair(1, 0), Tagged(Tag::Reverse, 2)];
        assert_eq!(show(&list), "((reverse 1) . (reverse ()))");
        // Tags nest outermost first.
        let nested = [
            Real(1.0),
            Real(2.0),
            Pair(0, 1),
            Tagged(Tag::Reverse, 2),
            Tagged(Tag::Perturb, 3),
        ];
        assert_eq!(
            show(&nested),
            "((perturbation (reverse 1)) . (perturbation (reverse 2)))"
        );
    }

    #[test]
    fn forward_pairs_print_as_pairs_of_forward_halves() {
        use T::*;
        assert_eq!(
            show(&[Real(1.0), Real(0.5), Tagged(Tag::Perturb, 1), Bundle(0, 2)]),
            "(forward 1 (perturbation 0.5))"
        );
        let pair = [
            Real(1.0),
            Real(2.0),
            Pair(0, 1),
            Real(3.0),
            Real(4.0),
            Pair(3, 4),
            Tagged(Tag::Perturb, 5),
            Bundle(2, 6),
        ];
        assert_eq!(
            show(&pair),
            "((forward 1 (perturbation 3)) . (forward 2 (perturbation 4)))"
        );
        // A tangent that is no perturbation leaves the pair whole.
        let odd = [Real(1.0), Real(2.0), Pair(0, 1), Bundle(2, 2)];
        assert_eq!(show(&odd), "(forward (1 . 2) (1 . 2))");
    }

    /// The forward vector of primal `#(1 2)` and tangent `#(3 4)`.
    const FORWARD_VECTOR: [T; 8] = [
        T::Real(1.0),
        T::Real(2.0),
        T::Vector(&[0, 1]),
        T::Real(3.0),
        T::Real(4.0),
        T::Vector(&[3, 4]),
        T::Tagged(Tag::Perturb, 5),
        T::Bundle(2, 6),
    ];

    #[test]
    fn vectors_print_with_their_tags_on_the_elements() {
        use T::*;
        assert_eq!(show(&[Vector(&[])]), "#()");
        let m = [Real(1.0), Real(2.0), Vector(&[0, 1]), Vector(&[2, 2])];
        assert_eq!(show(&m), "#(#(1 2) #(1 2))");
        let r = [Real(1.0), Nil, Vector(&[0, 1]), Tagged(Tag::Reverse, 2)];
        assert_eq!(show(&r), "#((reverse 1) (reverse ()))");
        let f = FORWARD_VECTOR;
        assert_eq!(
            show(&f),
            "#((forward 1 (perturbation 3)) (forward 2 (perturbation 4)))"
        );
    }

    #[test]
    fn opaque_nodes_are_the_sinks() {
        use T::*;
        let list = [Sym("x"), Sym("..."), Pair(0, 1), Real(1.0), Pair(3, 2)];
        assert_eq!(show(&list), "(1 x ...)");
        let dotted = [Sym("x"), Real(1.0), Pair(1, 0)];
        assert_eq!(show(&dotted), "(1 . x)");
        let mut rest = Syms(String::new());
        write_rest(V(&list, 2), &mut rest);
        assert_eq!(rest.0, " x ...)");
    }

    /// The text of the last node of `arena`, found in `world`.
    fn found(world: &[Tag], arena: &[T]) -> String {
        let mut out = Syms(String::new());
        write_found(world, V(arena, arena.len() - 1), &mut out);
        out.0
    }

    #[test]
    fn values_found_inside_derivatives_lose_the_derivatives_tags() {
        use T::*;
        // (forward (reverse 2) (perturbation (reverse 0))), found under
        // forward of reverse: 2.
        let nested = [
            Real(2.0),
            Tagged(Tag::Reverse, 0),
            Real(0.0),
            Tagged(Tag::Reverse, 2),
            Tagged(Tag::Perturb, 3),
            Bundle(1, 4),
        ];
        assert_eq!(found(&[Tag::Forward, Tag::Reverse], &nested), "2");
        // Only the world's tags go: one tag the program put on stays.
        assert_eq!(found(&[Tag::Forward], &nested), "(reverse 2)");
        assert_eq!(found(&[], &nested), show(&nested));
        // A reverse pair and a reverse list of reverse values.
        let pair = [Real(1.0), Real(2.0), Pair(0, 1), Tagged(Tag::Reverse, 2)];
        assert_eq!(found(&[Tag::Reverse], &pair), "(1 . 2)");
        let list = [
            Nil,
            Tagged(Tag::Reverse, 0),
            Real(1.0),
            Tagged(Tag::Reverse, 2),
            Pair(3, 1),
        ];
        assert_eq!(found(&[Tag::Reverse], &list), "(1)");
        // A forward vector shows its primals.
        let f = FORWARD_VECTOR;
        assert_eq!(found(&[Tag::Forward], &f), "#(1 2)");
        // Opaque nodes are written by the sink, under the tags taken off.
        let sym = [Sym("x"), Tagged(Tag::Sensitize, 0)];
        assert_eq!(found(&[Tag::Sensitize], &sym), "x");
    }

    #[test]
    fn long_text_is_shortened() {
        assert_eq!(shortened("(1 2)".into()), "(1 2)");
        let long = shortened("x".repeat(200));
        assert_eq!(long.len(), base::message::VALUE_MAX);
        assert!(long.ends_with(ELLIPSIS));
    }
}
