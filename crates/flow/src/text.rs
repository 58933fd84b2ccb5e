//! The text of abstract values: as shapes (for the `--emit=flow` dump and
//! the analysis' errors) and as VLAD prints values (for the messages of
//! run-time errors the analysis finds, with marks where a scalar is known
//! only at run time).

use crate::domain::{Av, AvId, Domain};
use base::number::format_real;
use ir::EntityRef;
use ir::Program;
use std::fmt::Write;

/// An abstract value in the notation of printed values: `R` is an unknown
/// real, `B` an unknown boolean, `<L3 f: ...>` a closure with its
/// environment, `_` no value.
pub fn av_text(dom: &Domain, prog: &Program, v: AvId) -> String {
    let mut s = String::new();
    write_av(dom, prog, v, &mut s);
    s
}

fn write_av(dom: &Domain, prog: &Program, v: AvId, s: &mut String) {
    match dom.get(v) {
        Av::Bottom => s.push('_'),
        Av::Union(u) => {
            let _ = write!(s, "U{}", dom.find(*u).index());
        }
        Av::Sym(n, crate::domain::SymKind::Union(u)) => {
            let _ = write!(s, "U{}@{n}", dom.find(*u).index());
        }
        Av::Real(Some(x)) => s.push_str(&format_real(f64::from_bits(*x))),
        Av::Real(None) | Av::Sym(_, crate::domain::SymKind::Real) => s.push('R'),
        Av::Sym(_, crate::domain::SymKind::Bool) => s.push('B'),
        Av::Bool(Some(true)) => s.push_str("#t"),
        Av::Bool(Some(false)) => s.push_str("#f"),
        Av::Bool(None) => s.push('B'),
        Av::Nil => s.push_str("()"),
        Av::Prim(p) => s.push_str(p.name()),
        Av::Pair(a, b) => {
            s.push('(');
            write_av(dom, prog, *a, s);
            let mut rest = *b;
            loop {
                match dom.get(rest) {
                    Av::Pair(a, b) => {
                        s.push(' ');
                        write_av(dom, prog, *a, s);
                        rest = *b;
                    }
                    Av::Nil => break,
                    _ => {
                        s.push_str(" . ");
                        write_av(dom, prog, rest, s);
                        break;
                    }
                }
            }
            s.push(')');
        }
        Av::Closure(l, env) => {
            let _ = write!(s, "<{}", l);
            if let Some(n) = &prog.lambdas[*l].name {
                let _ = write!(s, " {n}");
            }
            for x in env.iter() {
                s.push(' ');
                write_av(dom, prog, *x, s);
            }
            s.push('>');
        }
        Av::Wrap(t, x) => {
            let _ = write!(s, "({} ", t.name());
            write_av(dom, prog, *x, s);
            s.push(')');
        }
        Av::Bundle(p, t) => {
            s.push_str("(forward ");
            write_av(dom, prog, *p, s);
            s.push(' ');
            write_av(dom, prog, *t, s);
            s.push(')');
        }
    }
}

/// Brackets a symbolic leaf in [`value_text`]: `\u{1}R12\u{1}` is the
/// real held in FIR value 12 (see crate `lower`).
pub const SYM_MARK: char = '\u{1}';

/// Brackets the text of a value containing symbolic leaves in an error
/// message, so that lowering can shorten it at run time.
pub const VALUE_MARK: char = '\u{2}';

/// A value tree in the shape the interpreter prints (crate `interp`,
/// `value.rs`): tags are wrappers that a pair view pushes into the halves.
enum View {
    Atom(String),
    Pair(Box<View>, Box<View>),
    Tagged(ir::Tag, Box<View>),
    Bundle(Box<View>, Box<View>),
}

fn view(dom: &Domain, v: AvId) -> View {
    match dom.get(v) {
        Av::Pair(a, b) => View::Pair(Box::new(view(dom, *a)), Box::new(view(dom, *b))),
        Av::Wrap(t, x) => View::Tagged(*t, Box::new(view(dom, *x))),
        Av::Bundle(p, t) => View::Bundle(Box::new(view(dom, *p)), Box::new(view(dom, *t))),
        Av::Prim(_) | Av::Closure(..) => View::Atom("#<procedure>".into()),
        Av::Real(Some(x)) => View::Atom(format_real(f64::from_bits(*x))),
        Av::Real(None) => View::Atom("R".into()),
        Av::Bool(None) => View::Atom("B".into()),
        // Lowering turns these markers into the run-time values.
        Av::Sym(n, crate::domain::SymKind::Real) => View::Atom(format!("{SYM_MARK}R{n}{SYM_MARK}")),
        Av::Sym(n, crate::domain::SymKind::Bool) => View::Atom(format!("{SYM_MARK}B{n}{SYM_MARK}")),
        Av::Bool(Some(true)) => View::Atom("#t".into()),
        Av::Bool(Some(false)) => View::Atom("#f".into()),
        Av::Nil => View::Atom("()".into()),
        Av::Bottom => View::Atom("_".into()),
        Av::Union(_) | Av::Sym(_, crate::domain::SymKind::Union(_)) => {
            View::Atom("#<value of run-time shape>".into())
        }
    }
}

fn pair_view(v: &View) -> Option<(View, View)> {
    match v {
        View::Pair(a, b) => Some((clone_view(a), clone_view(b))),
        View::Tagged(t, x) => {
            let (a, b) = pair_view(x)?;
            Some((View::Tagged(*t, Box::new(a)), View::Tagged(*t, Box::new(b))))
        }
        View::Bundle(p, t) => {
            let (pa, pb) = pair_view(p)?;
            let View::Tagged(ir::Tag::Perturb, ti) = &**t else {
                return None;
            };
            let (ta, tb) = pair_view(ti)?;
            let wrap = |x| Box::new(View::Tagged(ir::Tag::Perturb, Box::new(x)));
            Some((
                View::Bundle(Box::new(pa), wrap(ta)),
                View::Bundle(Box::new(pb), wrap(tb)),
            ))
        }
        View::Atom(_) => None,
    }
}

fn clone_view(v: &View) -> View {
    match v {
        View::Atom(s) => View::Atom(s.clone()),
        View::Pair(a, b) => View::Pair(Box::new(clone_view(a)), Box::new(clone_view(b))),
        View::Tagged(t, x) => View::Tagged(*t, Box::new(clone_view(x))),
        View::Bundle(a, b) => View::Bundle(Box::new(clone_view(a)), Box::new(clone_view(b))),
    }
}

fn write_view(v: &View, out: &mut String) {
    if let Some((a, b)) = pair_view(v) {
        out.push('(');
        write_view(&a, out);
        let mut rest = b;
        loop {
            if let Some((a, b)) = pair_view(&rest) {
                out.push(' ');
                write_view(&a, out);
                rest = b;
            } else if matches!(&rest, View::Atom(s) if s == "()") {
                break;
            } else {
                out.push_str(" . ");
                write_view(&rest, out);
                break;
            }
        }
        out.push(')');
        return;
    }
    match v {
        View::Atom(s) => out.push_str(s),
        View::Bundle(p, t) => {
            out.push_str("(forward ");
            write_view(p, out);
            out.push(' ');
            write_view(t, out);
            out.push(')');
        }
        View::Tagged(t, x) => {
            out.push('(');
            out.push_str(t.name());
            out.push(' ');
            write_view(x, out);
            out.push(')');
        }
        View::Pair(..) => {}
    }
}

/// An abstract value printed the way the interpreter prints the value.
pub fn value_text(dom: &Domain, v: AvId) -> String {
    let mut s = String::new();
    write_view(&view(dom, v), &mut s);
    s
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
        Site::Arg(l) => format!("the arguments of {l}"),
        Site::Env(l, i) => format!("environment slot {i} of {l}"),
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
