//! Core AST to core IR: alpha conversion and A-normal form.
//!
//! Every subexpression gets its own variable; every binder gets a fresh
//! [`Var`], so the IR invariants of [`crate::core`] hold by construction.
//! Names are resolved here: local and top-level bindings first, then the
//! primitives. `if` becomes `if-procedure` applied to two thunks, patterns
//! become `car`/`cdr`/`check` bindings that remember the pattern for error
//! messages.

use crate::core::*;
use crate::prim::Prim;
use base::diag::{Diagnostic, Span};
use syntax::ast::{self, Datum, Expr, Pattern};

/// The name of the procedure `custom-*j` returns, in `stdlib.vlad`; its
/// free variables `f` and `fr` are the procedure and its derivative.
pub const CUSTOM_PROCEDURE: &str = "custom-procedure";

type Result<T> = std::result::Result<T, Diagnostic>;

/// Converts a whole expanded program.
pub fn lower_program(ast: &ast::Program) -> Result<Program> {
    let mut prog = Program::default();
    let mut lw = Lowerer {
        prog: &mut prog,
        scope: Vec::new(),
    };
    let mut main = Vec::new();
    for item in &ast.items {
        match item {
            ast::TopItem::Define { name, expr, .. } => {
                let mut out = Vec::new();
                let v = lw.expr(expr, &mut out, Some(name))?;
                main.extend(out.into_iter().map(Stmt::Bind));
                lw.scope.push((name.clone(), v));
            }
            ast::TopItem::Rec(bs) => {
                let mut out = Vec::new();
                lw.letrec(bs, &mut out)?;
                main.extend(out.into_iter().map(Stmt::Bind));
            }
            ast::TopItem::Show { expr, expect, span } => {
                let mut out = Vec::new();
                let v = lw.expr(expr, &mut out, None)?;
                main.extend(out.into_iter().map(Stmt::Bind));
                main.push(Stmt::Show {
                    var: v,
                    expect: expect.clone(),
                    span: *span,
                });
            }
        }
    }
    prog.main = main;
    Ok(prog)
}

/// Converts a closed lambda expression (one that refers to nothing but
/// primitives) into `prog`, e.g. an entry of the AD prelude.
pub fn lower_closed_lambda(
    prog: &mut Program,
    lam: &ast::Lambda,
    origin: Origin,
) -> Result<LambdaId> {
    let mut lw = Lowerer {
        prog,
        scope: Vec::new(),
    };
    let id = lw.lambda(lam, None)?;
    if !lw.prog.lambdas[id].free.is_empty() {
        return Err(Diagnostic::at(
            lam.span,
            "expected a closed lambda expression",
        ));
    }
    lw.prog.lambdas[id].origin = origin;
    Ok(id)
}

struct Lowerer<'a> {
    prog: &'a mut Program,
    /// Innermost binding last.
    scope: Vec<(String, Var)>,
}

fn bind(out: &mut Vec<Binding>, var: Var, rhs: Rhs, span: Option<Span>) -> Var {
    out.push(Binding { var, rhs, span });
    var
}

pub(crate) fn const_datum(d: &Datum) -> ConstDatum {
    match d {
        Datum::Real(r) => ConstDatum::Real(*r),
        Datum::Bool(b) => ConstDatum::Bool(*b),
        Datum::Nil => ConstDatum::Nil,
        Datum::Pair(a, b) => ConstDatum::Pair(Box::new(const_datum(a)), Box::new(const_datum(b))),
        Datum::Vector(v) => ConstDatum::Vector(v.iter().map(const_datum).collect()),
    }
}

/// A datum as VLAD source would write it.
pub fn datum_text(d: &Datum) -> String {
    match d {
        Datum::Real(r) => base::number::format_real(*r),
        Datum::Bool(true) => "#t".into(),
        Datum::Bool(false) => "#f".into(),
        Datum::Nil => "'()".into(),
        Datum::Vector(v) => {
            let items: Vec<String> = v
                .iter()
                .map(|x| datum_text(x).trim_start_matches('\'').to_string())
                .collect();
            format!("#({})", items.join(" "))
        }
        Datum::Pair(..) => {
            let mut s = String::from("'(");
            let mut cur = d;
            let mut first = true;
            loop {
                match cur {
                    Datum::Pair(a, b) => {
                        if !first {
                            s.push(' ');
                        }
                        first = false;
                        s.push_str(datum_text(a).trim_start_matches('\''));
                        cur = b;
                    }
                    Datum::Nil => break,
                    other => {
                        s.push_str(" . ");
                        s.push_str(datum_text(other).trim_start_matches('\''));
                        break;
                    }
                }
            }
            s.push(')');
            s
        }
    }
}

/// A pattern as VLAD source would write it.
pub fn pattern_text(p: &Pattern) -> String {
    match p {
        Pattern::Var(n, _) => n.clone(),
        Pattern::Const(d, _) => datum_text(d),
        Pattern::Cons(a, b, _) => format!("(cons {} {})", pattern_text(a), pattern_text(b)),
    }
}

impl Lowerer<'_> {
    fn lookup(&self, name: &str) -> Option<Var> {
        self.scope
            .iter()
            .rev()
            .find(|(n, _)| n == name)
            .map(|(_, v)| *v)
    }

    fn fresh(&mut self, name: &str) -> Var {
        self.prog.new_var(name)
    }

    fn constant(&mut self, datum: ConstDatum, out: &mut Vec<Binding>, span: Span) -> Var {
        let k = self.prog.consts.push(Const {
            datum,
            tags: Vec::new(),
        });
        let v = self.fresh("k");
        bind(out, v, Rhs::Const(k), Some(span))
    }

    /// `name` is the definition this expression is the right-hand side of.
    fn expr(&mut self, e: &Expr, out: &mut Vec<Binding>, name: Option<&str>) -> Result<Var> {
        match e {
            Expr::Const(d, span) => Ok(self.constant(const_datum(d), out, *span)),
            Expr::Var(n, span) => {
                let forced = ast::forced_primitive(n);
                if let (None, Some(v)) = (forced, self.lookup(n)) {
                    Ok(v)
                } else if let Some(p) = Prim::from_name(forced.unwrap_or(n)) {
                    let k = self.prog.consts.push(Const {
                        datum: ConstDatum::Prim(p),
                        tags: Vec::new(),
                    });
                    let v = self.fresh(p.name());
                    Ok(bind(out, v, Rhs::Const(k), Some(*span)))
                } else {
                    Err(Diagnostic::at(*span, format!("unbound variable `{n}`")))
                }
            }
            Expr::Lambda(l) => {
                let mut l2;
                let lam = if l.name.is_none() && name.is_some() {
                    l2 = (**l).clone();
                    l2.name = name.map(str::to_string);
                    &l2
                } else {
                    &**l
                };
                let id = self.lambda(lam, None)?;
                let env = self.prog.lambdas[id].free.clone();
                let v = self.fresh(name.unwrap_or("f"));
                Ok(bind(out, v, Rhs::Closure { lambda: id, env }, Some(l.span)))
            }
            Expr::App(f, a, span) => {
                let vf = self.expr(f, out, None)?;
                let va = self.expr(a, out, None)?;
                let v = self.fresh("t");
                Ok(bind(out, v, Rhs::App { f: vf, arg: va }, Some(*span)))
            }
            Expr::Cons(a, b, span) => {
                let va = self.expr(a, out, None)?;
                let vb = self.expr(b, out, None)?;
                let v = self.fresh("p");
                Ok(bind(
                    out,
                    v,
                    Rhs::Cons {
                        tags: vec![],
                        car: va,
                        cdr: vb,
                    },
                    Some(*span),
                ))
            }
            Expr::If(c, a, b, span) => {
                let vc = self.expr(c, out, None)?;
                let ta = self.thunk(a, out, THEN)?;
                let tb = self.thunk(b, out, ELSE)?;
                let arms = self.fresh("p");
                bind(
                    out,
                    arms,
                    Rhs::Cons {
                        tags: vec![],
                        car: ta,
                        cdr: tb,
                    },
                    Some(*span),
                );
                let args = self.fresh("p");
                bind(
                    out,
                    args,
                    Rhs::Cons {
                        tags: vec![],
                        car: vc,
                        cdr: arms,
                    },
                    Some(*span),
                );
                let k = self.prog.consts.push(Const {
                    datum: ConstDatum::Prim(Prim::IfProcedure),
                    tags: vec![],
                });
                let ip = self.fresh("if-procedure");
                bind(out, ip, Rhs::Const(k), Some(*span));
                let v = self.fresh("t");
                Ok(bind(out, v, Rhs::App { f: ip, arg: args }, Some(*span)))
            }
            Expr::Let(bs, body, _span) => {
                let mut vals = Vec::with_capacity(bs.len());
                for (p, e) in bs {
                    let n = match p {
                        Pattern::Var(n, _) => Some(n.as_str()),
                        _ => None,
                    };
                    vals.push(self.expr(e, out, n)?);
                }
                let mark = self.scope.len();
                for ((p, _), v) in bs.iter().zip(vals) {
                    match p {
                        Pattern::Var(n, _) => self.scope.push((n.clone(), v)),
                        _ => {
                            let pat = self.pat_info(p, Some("let"));
                            self.bind_pattern(p, v, pat, out);
                        }
                    }
                }
                let r = self.expr(body, out, name);
                self.scope.truncate(mark);
                r
            }
            Expr::Letrec(bs, body, _span) => {
                let mark = self.scope.len();
                self.letrec(bs, out)?;
                let r = self.expr(body, out, name);
                self.scope.truncate(mark);
                r
            }
        }
    }

    fn thunk(&mut self, e: &Expr, out: &mut Vec<Binding>, what: &str) -> Result<Var> {
        let param = self.fresh("_");
        let mut body = Vec::new();
        let result = self.expr(e, &mut body, None)?;
        let free = free_vars(param, &body, result);
        let id = self.prog.lambdas.push(Lambda {
            param,
            body: body.into(),
            result,
            free: free.clone(),
            group: None,
            origin: Origin::Source,
            name: Some(what.to_string()),
            span: Some(e.span()),
        });
        let v = self.fresh(what);
        Ok(bind(
            out,
            v,
            Rhs::Closure {
                lambda: id,
                env: free,
            },
            Some(e.span()),
        ))
    }

    fn pat_info(&mut self, p: &Pattern, owner: Option<&str>) -> PatId {
        self.prog.patterns.push(PatInfo {
            owner: owner.map(str::to_string),
            text: pattern_text(p),
            span: p.span(),
        })
    }

    fn bind_pattern(&mut self, p: &Pattern, v: Var, pat: PatId, out: &mut Vec<Binding>) {
        match p {
            Pattern::Var(n, _) => self.scope.push((n.clone(), v)),
            Pattern::Cons(a, b, span) => {
                let va = self.fresh(match &**a {
                    Pattern::Var(n, _) => n.as_str(),
                    _ => "a",
                });
                bind(
                    out,
                    va,
                    Rhs::Car {
                        tags: vec![],
                        pair: v,
                        pat: Some(pat),
                    },
                    Some(*span),
                );
                let vb = self.fresh(match &**b {
                    Pattern::Var(n, _) => n.as_str(),
                    _ => "d",
                });
                bind(
                    out,
                    vb,
                    Rhs::Cdr {
                        tags: vec![],
                        pair: v,
                        pat: Some(pat),
                    },
                    Some(*span),
                );
                self.bind_pattern(a, va, pat, out);
                self.bind_pattern(b, vb, pat, out);
            }
            Pattern::Const(d, span) => {
                let k = self.prog.consts.push(Const {
                    datum: const_datum(d),
                    tags: vec![],
                });
                let c = self.fresh("_");
                bind(
                    out,
                    c,
                    Rhs::Check {
                        tags: vec![],
                        var: v,
                        expect: k,
                        pat: Some(pat),
                    },
                    Some(*span),
                );
            }
        }
    }

    /// Converts a lambda expression; `siblings` are the names of the other
    /// members of its letrec group, reached through `Rhs::Sibling`.
    fn lambda(&mut self, l: &ast::Lambda, siblings: Option<&[String]>) -> Result<LambdaId> {
        let mark = self.scope.len();
        let mut prologue_vars = Vec::new();
        if let Some(names) = siblings {
            for n in names {
                let v = self.fresh(n);
                self.scope.push((n.clone(), v));
                prologue_vars.push(v);
            }
        }
        let param = self.fresh(match &l.param {
            Pattern::Var(n, _) => n.as_str(),
            _ => "arg",
        });
        let mut body = Vec::new();
        match &l.param {
            Pattern::Var(n, _) => self.scope.push((n.clone(), param)),
            p => {
                let pat = self.pat_info(p, Some(l.name.as_deref().unwrap_or("lambda")));
                self.bind_pattern(p, param, pat, &mut body);
            }
        }
        let result = self.expr(&l.body, &mut body, None);
        self.scope.truncate(mark);
        let result = result?;
        if !prologue_vars.is_empty() {
            // Only the siblings actually referenced get a prologue binding.
            let mut used = free_vars(param, &body, result);
            used.retain(|v| prologue_vars.contains(v));
            let mut pro: Vec<Binding> = Vec::new();
            for (i, v) in prologue_vars.iter().enumerate() {
                if used.contains(v) {
                    pro.push(Binding {
                        var: *v,
                        rhs: Rhs::Sibling(i as u32),
                        span: Some(l.span),
                    });
                }
            }
            pro.append(&mut body);
            body = pro;
        }
        let free = free_vars(param, &body, result);
        let origin = self.custom_origin(l, &free).unwrap_or(Origin::Source);
        Ok(self.prog.lambdas.push(Lambda {
            param,
            body: body.into(),
            result,
            free,
            group: None,
            origin,
            name: l.name.clone(),
            span: Some(l.span),
        }))
    }

    /// The procedure the standard library's `custom-*j` returns is marked
    /// here, where its free variables get their slots: it is ordinary
    /// code (so the interpreter, the analysis and lowering need nothing
    /// new) except that crate `ad` gives it the user's reverse transform.
    /// Only the library (file 0) can define it, so no user lambda of the
    /// same name is mistaken for it.
    fn custom_origin(&self, l: &ast::Lambda, free: &[Var]) -> Option<Origin> {
        if l.span.file != base::diag::FileId(0) || l.name.as_deref() != Some(CUSTOM_PROCEDURE) {
            return None;
        }
        let slot = |name: &str| {
            let i = free.iter().position(|v| self.prog.var_name(*v) == name)?;
            u32::try_from(i).ok()
        };
        Some(Origin::Custom {
            f: slot("f")?,
            fr: slot("fr")?,
        })
    }

    fn letrec(&mut self, bs: &[ast::RecBinding], out: &mut Vec<Binding>) -> Result<()> {
        let names: Vec<String> = bs.iter().map(|b| b.name.clone()).collect();
        let mut ids = Vec::with_capacity(bs.len());
        for b in bs {
            let mut lam = b.lambda.clone();
            if lam.name.is_none() {
                lam.name = Some(b.name.clone());
            }
            ids.push(self.lambda(&lam, Some(&names))?);
        }
        let mut free: Vec<Var> = ids
            .iter()
            .flat_map(|id| self.prog.lambdas[*id].free.iter().copied())
            .collect();
        free.sort();
        free.dedup();
        let g = self.prog.groups.push(Group {
            lambdas: ids.clone(),
            free: free.clone(),
        });
        for id in &ids {
            self.prog.lambdas[*id].free = free.clone();
            self.prog.lambdas[*id].group = Some(g);
        }
        let vars: Vec<Var> = bs.iter().map(|b| self.fresh(&b.name)).collect();
        for ((b, id), v) in bs.iter().zip(&ids).zip(&vars) {
            bind(
                out,
                *v,
                Rhs::Closure {
                    lambda: *id,
                    env: free.clone(),
                },
                Some(b.span),
            );
        }
        for (b, v) in bs.iter().zip(vars) {
            self.scope.push((b.name.clone(), v));
        }
        Ok(())
    }
}
