//! The stable text form of the core IR (`stalingrad build --emit=anf`).
//!
//! Variables print as `name_id` so that transformed code stays readable
//! (`x^R_12` is the reverse-transformed `x`), lambdas as `L7`. The output
//! depends only on the program, never on addresses or hash order.

use crate::core::*;
use std::fmt::Write;

pub fn var(p: &Program, v: Var) -> String {
    format!("{}_{}", p.var_name(v), v.index())
}

use crate::entity::EntityRef;

fn tags(t: &[Tag]) -> String {
    if t.is_empty() {
        String::new()
    } else {
        let s: Vec<String> = t.iter().map(|t| t.letter().to_string()).collect();
        format!("[{}]", s.join(""))
    }
}

pub fn const_text(c: &Const) -> String {
    let d = datum(&c.datum);
    if c.tags.is_empty() {
        d
    } else {
        format!("{}{}", tags(&c.tags), d)
    }
}

fn datum(d: &ConstDatum) -> String {
    match d {
        ConstDatum::Real(r) => base::number::format_real(*r),
        ConstDatum::Bool(true) => "#t".into(),
        ConstDatum::Bool(false) => "#f".into(),
        ConstDatum::Nil => "()".into(),
        ConstDatum::Prim(p) => p.name().to_string(),
        ConstDatum::Pair(a, b) => format!("({} . {})", datum(a), datum(b)),
        ConstDatum::Vector(v) => {
            format!("#({})", v.iter().map(datum).collect::<Vec<_>>().join(" "))
        }
    }
}

pub fn rhs(p: &Program, r: &Rhs) -> String {
    let v = |x: &Var| var(p, *x);
    match r {
        Rhs::Const(k) => format!("const {}", const_text(&p.consts[*k])),
        Rhs::Copy(x) => v(x),
        Rhs::Closure { lambda, env } => {
            let e: Vec<String> = env.iter().map(v).collect();
            format!("closure {} [{}]", lambda, e.join(" "))
        }
        Rhs::Sibling(i) => format!("sibling {i}"),
        Rhs::App { f, arg } => format!("call {} {}", v(f), v(arg)),
        Rhs::Cons { tags: t, car, cdr } => format!("cons{} {} {}", tags(t), v(car), v(cdr)),
        Rhs::Car { tags: t, pair, .. } => format!("car{} {}", tags(t), v(pair)),
        Rhs::Cdr { tags: t, pair, .. } => format!("cdr{} {}", tags(t), v(pair)),
        Rhs::Check {
            tags: t,
            var: x,
            expect,
            ..
        } => format!(
            "check{} {} {}",
            tags(t),
            v(x),
            const_text(&p.consts[*expect])
        ),
        Rhs::EnvRef { closure, index } => format!("env-ref {} {}", v(closure), index),
        Rhs::EnvUpdate {
            closure,
            index,
            value,
        } => format!("env-update {} {} {}", v(closure), index, v(value)),
    }
}

fn origin(o: &Origin) -> String {
    match o {
        Origin::Source => "source".into(),
        Origin::Transform { tag, of } => format!("{} of {}", tag.name(), of),
        Origin::PrimTransform { tag, prim } => format!("{} of primitive {}", tag.name(), prim),
        Origin::Backprop { of } => format!("backpropagator of {}", of),
        Origin::Custom { f, fr } => format!("custom derivative (procedure #{f}, derivative #{fr})"),
    }
}

/// One lambda, with a header line and one line per binding.
pub fn lambda(p: &Program, id: LambdaId) -> String {
    let l = &p.lambdas[id];
    let mut s = String::new();
    let free: Vec<String> = l.free.iter().map(|x| var(p, *x)).collect();
    let _ = write!(
        s,
        "lambda {} {} ({}) free [{}] ; {}",
        id,
        l.name.as_deref().unwrap_or("_"),
        var(p, l.param),
        free.join(" "),
        origin(&l.origin)
    );
    if let Some(g) = l.group {
        let _ = write!(s, " ; group {g}");
    }
    s.push('\n');
    for b in l.body.iter() {
        let _ = writeln!(s, "  {} = {}", var(p, b.var), rhs(p, &b.rhs));
    }
    let _ = writeln!(s, "  return {}", var(p, l.result));
    s
}

/// The lambdas reachable from `main` (through closures, transitively) and
/// the top-level statements.
pub fn program(p: &Program) -> String {
    let mut s = String::new();
    let mut seen = vec![false; p.lambdas.len()];
    let mut order = Vec::new();
    let mut stack: Vec<LambdaId> = Vec::new();
    let push_uses = |body: &[Binding], stack: &mut Vec<LambdaId>| {
        for b in body.iter().rev() {
            if let Rhs::Closure { lambda, .. } = b.rhs {
                stack.push(lambda);
            }
        }
    };
    let main_bindings: Vec<Binding> = p
        .main
        .iter()
        .filter_map(|st| match st {
            Stmt::Bind(b) => Some(b.clone()),
            Stmt::Show { .. } => None,
        })
        .collect();
    push_uses(&main_bindings, &mut stack);
    while let Some(l) = stack.pop() {
        if seen[l.index()] {
            continue;
        }
        seen[l.index()] = true;
        order.push(l);
        if let Some(g) = p.lambdas[l].group {
            for m in p.groups[g].lambdas.iter().rev() {
                stack.push(*m);
            }
        }
        push_uses(&p.lambdas[l].body, &mut stack);
    }
    order.sort();
    for l in order {
        s.push_str(&lambda(p, l));
        s.push('\n');
    }
    s.push_str("main\n");
    for st in &p.main {
        match st {
            Stmt::Bind(b) => {
                let _ = writeln!(s, "  {} = {}", var(p, b.var), rhs(p, &b.rhs));
            }
            Stmt::Show { var: x, .. } => {
                let _ = writeln!(s, "  show {}", var(p, *x));
            }
        }
    }
    s
}
