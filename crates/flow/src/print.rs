//! Text forms: abstract values, and the analysis' view of a program
//! (`stalingrad build --emit=flow`).

use crate::analysis::{Analysis, Plan};
use crate::domain::{Av, AvId, Domain};
use ir::Program;
use std::fmt::Write;
use syntax::number::format_real;

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

fn plan_text(p: &Plan) -> String {
    match p {
        Plan::Plain => String::new(),
        Plan::Call(s) => format!("  ; calls S{}", s.0),
        Plan::Prim(p) => format!("  ; primitive {p}"),
        Plan::If { then_, else_ } => {
            let f = |x: &Option<crate::SpecId>| x.map_or("-".to_string(), |s| format!("S{}", s.0));
            format!("  ; if then {} else {}", f(then_), f(else_))
        }
        Plan::Check => "  ; checked at run time".into(),
        Plan::Error(m) => format!("  ; run-time error: {m}"),
        Plan::Dead => "  ; never reached".into(),
    }
}

/// Every specialisation with the abstract value of each binding.
pub fn analysis_text(a: &Analysis) -> String {
    let mut s = String::new();
    let _ = writeln!(
        s,
        "; {} specialisations, {} analysis passes",
        a.specs.len(),
        a.iterations
    );
    for (i, spec) in a.specs.iter().enumerate() {
        let lam = &a.ops.prog.lambdas[spec.lambda];
        let env: Vec<String> = lam
            .free
            .iter()
            .zip(&spec.env)
            .map(|(v, x)| {
                format!(
                    "{}={}",
                    ir::print::var(&a.ops.prog, *v),
                    av_text(&a.ops.dom, &a.ops.prog, *x)
                )
            })
            .collect();
        let _ = writeln!(
            s,
            "spec S{i} = {} {} [{}] ({}={}) -> {}",
            spec.lambda,
            lam.name.as_deref().unwrap_or("_"),
            env.join(" "),
            ir::print::var(&a.ops.prog, lam.param),
            av_text(&a.ops.dom, &a.ops.prog, spec.arg),
            av_text(&a.ops.dom, &a.ops.prog, spec.result)
        );
        for (b, info) in lam.body.iter().zip(&spec.binds) {
            let _ = writeln!(
                s,
                "  {} : {}{}",
                ir::print::var(&a.ops.prog, b.var),
                av_text(&a.ops.dom, &a.ops.prog, info.av),
                plan_text(&info.plan)
            );
        }
    }
    s.push_str("main\n");
    let binds = a.ops.prog.main.iter().filter_map(|st| match st {
        ir::Stmt::Bind(b) => Some(b),
        ir::Stmt::Show { .. } => None,
    });
    for (b, info) in binds.zip(&a.main) {
        let _ = writeln!(
            s,
            "  {} : {}{}",
            ir::print::var(&a.ops.prog, b.var),
            av_text(&a.ops.dom, &a.ops.prog, info.av),
            plan_text(&info.plan)
        );
    }
    s
}
