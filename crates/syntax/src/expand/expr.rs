//! The expression expander: every derived form to the core AST, keywords
//! recognised only where no variable of that name is in scope.

use super::*;

/// Words with a meaning of their own in operator position (or, for
/// `else` and `===>`, in a fixed place). A binding of the same name in
/// scope turns the word back into an ordinary variable.
pub(super) const KEYWORDS: &[&str] = &[
    "quote", "lambda", "let", "let*", "letrec", "if", "cond", "else", "and", "or", "cons", "list",
    "cons*", "vector", "define", "include", "===>",
];

/// Temporary variable of `or`; the space makes it unwritable in source.
pub(super) const OR_TEMP: &str = "or tmp";

pub(super) struct Expander<'a> {
    /// Top-level names of the unit being expanded (library or program).
    pub(super) top: &'a HashSet<Name>,
    /// Renames for free references to top-level names of this unit.
    pub(super) rename: &'a HashMap<Name, Name>,
    /// For library code: the program's top-level names. A free library
    /// reference to one of them that is not a library definition means a
    /// primitive, and is pinned with [`ast::PRIMITIVE_PREFIX`].
    pub(super) pin_primitives: Option<&'a HashSet<Name>>,
    /// Local variables in scope, with how many bindings of each are open.
    pub(super) locals: HashMap<Name, usize>,
}

pub(super) fn count_noun(n: usize, one: &str, many: &str) -> String {
    if n == 1 {
        format!("1 {one}")
    } else {
        format!("{n} {many}")
    }
}

impl Expander<'_> {
    pub(super) fn is_bound(&self, name: &str) -> bool {
        self.locals.contains_key(name) || self.top.contains(name)
    }

    pub(super) fn is_keyword(&self, name: &str) -> bool {
        KEYWORDS.contains(&name) && !self.is_bound(name)
    }

    /// Brings `vars` into scope, rejecting a name bound twice in the group;
    /// `what` says what the group is, for the message.
    pub(super) fn bind_checked(
        &mut self,
        vars: &[(Name, Span)],
        what: &str,
    ) -> Result<Vec<Name>, Diagnostic> {
        let mut seen = HashSet::new();
        for (n, s) in vars {
            if !seen.insert(n) {
                return Err(Diagnostic::at(
                    *s,
                    format!("`{n}` is bound twice in one {what}"),
                ));
            }
        }
        let names: Vec<Name> = vars.iter().map(|(n, _)| n.clone()).collect();
        for n in &names {
            *self.locals.entry(n.clone()).or_insert(0) += 1;
        }
        Ok(names)
    }

    pub(super) fn unbind(&mut self, names: &[Name]) {
        for n in names {
            if let Some(c) = self.locals.get_mut(n) {
                *c -= 1;
                if *c == 0 {
                    self.locals.remove(n);
                }
            }
        }
    }

    pub(super) fn var(&self, name: &str, span: Span) -> Expr {
        if !self.locals.contains_key(name) {
            if let Some(new) = self.rename.get(name) {
                return Expr::Var(new.clone(), span);
            }
            if let Some(user) = self.pin_primitives {
                if !self.top.contains(name) && user.contains(name) {
                    return Expr::Var(format!("{}{name}", ast::PRIMITIVE_PREFIX), span);
                }
            }
        }
        Expr::Var(name.to_string(), span)
    }

    pub(super) fn expr(&mut self, d: &Sexp) -> Result<Expr, Diagnostic> {
        let span = d.span;
        match &d.kind {
            SexpKind::Number(x) => Ok(Expr::Const(Datum::Real(*x), span)),
            SexpKind::Bool(b) => Ok(Expr::Const(Datum::Bool(*b), span)),
            SexpKind::String(_) => Err(Diagnostic::at(
                span,
                "expected an expression, found a string: strings appear only in `(include \"file\")`",
            )),
            SexpKind::Symbol(s) => {
                if self.is_keyword(s) {
                    self.keyword_as_value(s, span)
                } else {
                    Ok(self.var(s, span))
                }
            }
            SexpKind::Dotted(..) => Err(Diagnostic::at(
                span,
                "expected an expression, found a dotted list",
            )),
            // A vector literal evaluates to itself, as in R7RS.
            SexpKind::Vector(_) => Ok(Expr::Const(super::top::quoted(d)?, span)),
            SexpKind::List(v) if v.is_empty() => Err(Diagnostic::at(
                span,
                "expected an expression, found `()`: write '() for the empty list",
            )),
            SexpKind::List(v) => {
                if let Some(head) = v[0].symbol() {
                    if self.is_keyword(head) {
                        return self.special(head, v, span);
                    }
                }
                let f = self.expr(&v[0])?;
                let arg = self.cons_star(&v[1..], span)?;
                Ok(Expr::App(Box::new(f), Box::new(arg), span))
            }
        }
    }

    /// A keyword outside operator position. `cons` and `cons*` make sense
    /// as procedures; the others do not.
    pub(super) fn keyword_as_value(&self, s: &str, span: Span) -> Result<Expr, Diagnostic> {
        match s {
            // (lambda (x y) (cons x y)); its argument is the pair (x . y).
            "cons" => {
                let (x, y) = ("x (cons)".to_string(), "y (cons)".to_string());
                Ok(Expr::Lambda(Box::new(Lambda {
                    param: Pattern::Cons(
                        Box::new(Pattern::Var(x.clone(), span)),
                        Box::new(Pattern::Var(y.clone(), span)),
                        span,
                    ),
                    body: Expr::Cons(
                        Box::new(Expr::Var(x, span)),
                        Box::new(Expr::Var(y, span)),
                        span,
                    ),
                    span,
                    name: Some("cons".into()),
                })))
            }
            // The argument of (f a b c) already is (cons* a b c).
            "cons*" => {
                let x = "x (cons*)".to_string();
                Ok(Expr::Lambda(Box::new(Lambda {
                    param: Pattern::Var(x.clone(), span),
                    body: Expr::Var(x, span),
                    span,
                    name: Some("cons*".into()),
                })))
            }
            "else" => Err(Diagnostic::at(
                span,
                "`else` is only allowed as the test of the last `cond` clause",
            )),
            "===>" => Err(Diagnostic::at(
                span,
                "`===>` is only allowed after a top-level expression",
            )),
            "define" | "include" => Err(Diagnostic::at(
                span,
                format!("`{s}` is only allowed as a top-level form"),
            )),
            _ => Err(Diagnostic::at(
                span,
                format!("expected an expression, found the keyword `{s}`: it is not a value"),
            )),
        }
    }

    /// `(cons* e ...)`: `()` for none, `e` for one, right-nested pairs
    /// otherwise. Also the argument of an n-ary application. Built
    /// iteratively from the right.
    pub(super) fn cons_star(&mut self, items: &[Sexp], nil_span: Span) -> Result<Expr, Diagnostic> {
        let mut it = self.exprs(items)?.into_iter().rev();
        let mut out = match it.next() {
            Some(last) => last,
            None => return Ok(Expr::Const(Datum::Nil, nil_span)),
        };
        for e in it {
            let s = e.span();
            out = Expr::Cons(Box::new(e), Box::new(out), s);
        }
        Ok(out)
    }

    /// A special form. Each form has its own method: one big `match`
    /// would put every arm's locals in one stack frame per nesting level.
    pub(super) fn special(
        &mut self,
        head: &str,
        v: &[Sexp],
        span: Span,
    ) -> Result<Expr, Diagnostic> {
        let args = &v[1..];
        match head {
            "quote" => match args {
                [d] => Ok(Expr::Const(quoted(d)?, span)),
                _ => Err(Diagnostic::at(
                    span,
                    format!("`quote` takes exactly one datum, found {}", args.len()),
                )),
            },
            "lambda" => self.lambda_form(args, span),
            "let" => match args.first() {
                Some(Sexp {
                    kind: SexpKind::Symbol(name),
                    span: name_span,
                }) => self.named_let(name, *name_span, &args[1..], span),
                _ => self.let_form(args, span),
            },
            "let*" => {
                let (binds, body) = let_shape("let*", args, span)?;
                self.let_star(&binds, body, span)
            }
            "letrec" => self.letrec_form(args, span),
            "if" => self.if_form(args, span),
            "cond" => self.cond(args, span),
            "and" => self.and_form(args, span),
            "or" => self.or_form(args, span),
            "cons" => self.cons_form(args, span),
            "list" => self.list_form(args, span),
            "vector" => self.vector_form(args, span),
            "cons*" => self.cons_star(args, span),
            "else" | "===>" | "define" | "include" => self.keyword_as_value(head, span),
            _ => Err(Diagnostic::at(span, format!("unknown keyword `{head}`"))),
        }
    }

    pub(super) fn lambda_form(&mut self, args: &[Sexp], span: Span) -> Result<Expr, Diagnostic> {
        match args {
            [params, body] => {
                let items = match &params.kind {
                    SexpKind::List(items) => items,
                    _ => return Err(bad_params(params)),
                };
                let param = self.params(items, params.span)?;
                let names = self.bind_checked(&param.vars(), "parameter list")?;
                let body = self.expr(body);
                self.unbind(&names);
                Ok(Expr::Lambda(Box::new(Lambda {
                    param,
                    body: body?,
                    span,
                    name: None,
                })))
            }
            [_] | [] => Err(Diagnostic::at(
                span,
                "expected `(lambda (params ...) body)`, found a lambda without a body",
            )),
            _ => Err(Diagnostic::at(
                args[2].span,
                format!(
                    "a lambda body is exactly one expression, found {}",
                    args.len() - 1
                ),
            )),
        }
    }

    /// `(let ((p e) ...) body)`: all right-hand sides in the outer scope.
    pub(super) fn let_form(&mut self, args: &[Sexp], span: Span) -> Result<Expr, Diagnostic> {
        let (binds, body) = let_shape("let", args, span)?;
        let mut rhss = Vec::new();
        let mut pats = Vec::new();
        for (p, e) in &binds {
            rhss.push(self.expr(e)?);
            pats.push(self.pattern(p)?);
        }
        if pats.is_empty() {
            return self.expr(body);
        }
        let vars: Vec<(Name, Span)> = pats.iter().flat_map(Pattern::vars).collect();
        let names = self.bind_checked(&vars, "`let`")?;
        let body = self.expr(body);
        self.unbind(&names);
        Ok(Expr::Let(
            pats.into_iter().zip(rhss).collect(),
            Box::new(body?),
            span,
        ))
    }

    pub(super) fn letrec_form(&mut self, args: &[Sexp], span: Span) -> Result<Expr, Diagnostic> {
        let (binds, body) = let_shape("letrec", args, span)?;
        let mut vars = Vec::new();
        for (p, _) in &binds {
            match p.symbol() {
                Some(s) => vars.push((s.to_string(), p.span)),
                None => {
                    return Err(Diagnostic::at(
                        p.span,
                        format!(
                            "expected a variable name in a `letrec` binding, found {}",
                            p.describe()
                        ),
                    ))
                }
            }
        }
        let names = self.bind_checked(&vars, "`letrec`")?;
        let result = self.letrec_body(&binds, &vars, body, span);
        self.unbind(&names);
        result
    }

    pub(super) fn if_form(&mut self, args: &[Sexp], span: Span) -> Result<Expr, Diagnostic> {
        match args {
            [c, a, b] => Ok(Expr::If(
                Box::new(self.expr(c)?),
                Box::new(self.expr(a)?),
                Box::new(self.expr(b)?),
                span,
            )),
            _ => Err(Diagnostic::at(
                span,
                format!(
                    "if needs a condition and two arms: expected `(if c a b)`, found {}",
                    count_noun(args.len(), "subform", "subforms")
                ),
            )),
        }
    }

    pub(super) fn exprs(&mut self, args: &[Sexp]) -> Result<Vec<Expr>, Diagnostic> {
        args.iter().map(|x| self.expr(x)).collect()
    }

    /// `(and a b c)` is `(if a (if b c #f) #f)`.
    pub(super) fn and_form(&mut self, args: &[Sexp], span: Span) -> Result<Expr, Diagnostic> {
        let mut it = self.exprs(args)?.into_iter().rev();
        let mut out = match it.next() {
            Some(last) => last,
            None => return Ok(Expr::Const(Datum::Bool(true), span)),
        };
        for e in it {
            let s = e.span();
            out = Expr::If(
                Box::new(e),
                Box::new(out),
                Box::new(Expr::Const(Datum::Bool(false), s)),
                s,
            );
        }
        Ok(out)
    }

    /// `(or a b)` is `(let ((t a)) (if t t b))`, `t` unwritable.
    pub(super) fn or_form(&mut self, args: &[Sexp], span: Span) -> Result<Expr, Diagnostic> {
        let mut it = self.exprs(args)?.into_iter().rev();
        let mut out = match it.next() {
            Some(last) => last,
            None => return Ok(Expr::Const(Datum::Bool(false), span)),
        };
        for e in it {
            let s = e.span();
            let t = || Expr::Var(OR_TEMP.to_string(), s);
            out = Expr::Let(
                vec![(Pattern::Var(OR_TEMP.to_string(), s), e)],
                Box::new(Expr::If(Box::new(t()), Box::new(t()), Box::new(out), s)),
                s,
            );
        }
        Ok(out)
    }

    pub(super) fn cons_form(&mut self, args: &[Sexp], span: Span) -> Result<Expr, Diagnostic> {
        match args {
            [a, b] => Ok(Expr::Cons(
                Box::new(self.expr(a)?),
                Box::new(self.expr(b)?),
                span,
            )),
            _ => Err(Diagnostic::at(
                span,
                format!("`cons` takes exactly two arguments, found {}", args.len()),
            )),
        }
    }

    pub(super) fn list_form(&mut self, args: &[Sexp], span: Span) -> Result<Expr, Diagnostic> {
        let mut out = Expr::Const(Datum::Nil, span);
        for e in self.exprs(args)?.into_iter().rev() {
            let s = e.span();
            out = Expr::Cons(Box::new(e), Box::new(out), s);
        }
        Ok(out)
    }

    /// `(vector e ...)`: `(list->vector (list e ...))`, through the
    /// primitive itself whatever the program defines.
    pub(super) fn vector_form(&mut self, args: &[Sexp], span: Span) -> Result<Expr, Diagnostic> {
        let items = self.list_form(args, span)?;
        let f = Expr::Var(format!("{}list->vector", ast::PRIMITIVE_PREFIX), span);
        Ok(Expr::App(Box::new(f), Box::new(items), span))
    }

    pub(super) fn letrec_body(
        &mut self,
        binds: &[(&Sexp, &Sexp)],
        vars: &[(Name, Span)],
        body: &Sexp,
        span: Span,
    ) -> Result<Expr, Diagnostic> {
        let mut out = Vec::new();
        for ((_, rhs), (name, name_span)) in binds.iter().zip(vars) {
            match self.expr(rhs)? {
                Expr::Lambda(mut l) => {
                    if l.name.is_none() {
                        l.name = Some(name.clone());
                    }
                    out.push(RecBinding {
                        name: name.clone(),
                        span: *name_span,
                        lambda: *l,
                    });
                }
                _ => {
                    return Err(Diagnostic::at(
                        rhs.span,
                        format!(
                            "`letrec` binds only procedures: expected a `(lambda ...)` for `{name}`, found {}",
                            rhs.describe()
                        ),
                    ))
                }
            }
        }
        let body = self.expr(body)?;
        Ok(Expr::Letrec(out, Box::new(body), span))
    }

    /// `(let* ((p e) ...) body)`: one `let` per binding.
    pub(super) fn let_star(
        &mut self,
        binds: &[(&Sexp, &Sexp)],
        body: &Sexp,
        span: Span,
    ) -> Result<Expr, Diagnostic> {
        let ((p, e), rest) = match binds.split_first() {
            Some(x) => x,
            None => return self.expr(body),
        };
        let rhs = self.expr(e)?;
        let pat = self.pattern(p)?;
        let names = self.bind_checked(&pat.vars(), "pattern")?;
        // Inner `let`s are located at their binding.
        let inner_span = rest.first().map_or(span, |(q, _)| q.span);
        let inner = self.let_star(rest, body, inner_span);
        self.unbind(&names);
        Ok(Expr::Let(vec![(pat, rhs)], Box::new(inner?), span))
    }

    /// `(let name ((p e) ...) body)` is
    /// `((letrec ((name (lambda (p ...) body))) name) e ...)`: the initial
    /// values are evaluated outside the scope of `name`.
    pub(super) fn named_let(
        &mut self,
        name: &str,
        name_span: Span,
        rest: &[Sexp],
        span: Span,
    ) -> Result<Expr, Diagnostic> {
        let (binds, body) = let_shape("named let", rest, span)?;
        let inits: Vec<Sexp> = binds.iter().map(|(_, e)| (*e).clone()).collect();
        let arg = self.cons_star(&inits, span)?;
        let pats: Vec<Sexp> = binds.iter().map(|(p, _)| (*p).clone()).collect();
        let loop_names = self.bind_checked(&[(name.to_string(), name_span)], "`let`")?;
        let lambda = (|| {
            let param = self.params(&pats, span)?;
            let names = self.bind_checked(&param.vars(), "`let`")?;
            let body = self.expr(body);
            self.unbind(&names);
            Ok(Lambda {
                param,
                body: body?,
                span,
                name: Some(name.to_string()),
            })
        })();
        self.unbind(&loop_names);
        let rec = Expr::Letrec(
            vec![RecBinding {
                name: name.to_string(),
                span: name_span,
                lambda: lambda?,
            }],
            Box::new(Expr::Var(name.to_string(), name_span)),
            span,
        );
        Ok(Expr::App(Box::new(rec), Box::new(arg), span))
    }

    pub(super) fn cond(&mut self, clauses: &[Sexp], span: Span) -> Result<Expr, Diagnostic> {
        let (last, init) =
            match clauses.split_last() {
                Some(x) => x,
                None => return Err(Diagnostic::at(
                    span,
                    "cond needs an `(else expression)` clause as its last clause, found no clauses",
                )),
            };
        let clause = |c: &Sexp| -> Result<(Sexp, Sexp), Diagnostic> {
            match c.list() {
                Some([t, e]) => Ok((t.clone(), e.clone())),
                Some(items) if items.iter().any(|x| x.symbol() == Some("=>")) => {
                    Err(Diagnostic::at(c.span, "`=>` in `cond` clauses is not VLAD"))
                }
                _ => Err(Diagnostic::at(
                    c.span,
                    format!(
                        "expected a `cond` clause `(test expression)`, found {}",
                        c.describe()
                    ),
                )),
            }
        };
        let (t, e) = clause(last)?;
        if t.symbol() != Some("else") || self.is_bound("else") {
            return Err(Diagnostic::at(
                span,
                "cond needs an `(else expression)` clause as its last clause",
            ));
        }
        let mut out = self.expr(&e)?;
        let mut tests = Vec::new();
        for c in init {
            let (t, e) = clause(c)?;
            if t.symbol() == Some("else") && !self.is_bound("else") {
                return Err(Diagnostic::at(
                    c.span,
                    "`else` clause before the end of `cond`",
                ));
            }
            tests.push((self.expr(&t)?, self.expr(&e)?, c.span));
        }
        for (t, e, s) in tests.into_iter().rev() {
            out = Expr::If(Box::new(t), Box::new(e), Box::new(out), s);
        }
        Ok(out)
    }

    /// A parameter list `(p ...)`: `()` for none, `p` for one, and the
    /// `cons*` of the patterns for more (arity is sugar over pairs).
    pub(super) fn params(&self, items: &[Sexp], span: Span) -> Result<Pattern, Diagnostic> {
        let pats = items
            .iter()
            .map(|p| self.pattern(p))
            .collect::<Result<Vec<_>, _>>()?;
        Ok(cons_star_pattern(pats, span))
    }

    pub(super) fn pattern(&self, p: &Sexp) -> Result<Pattern, Diagnostic> {
        let span = p.span;
        match &p.kind {
            SexpKind::Symbol(s) => Ok(Pattern::Var(s.clone(), span)),
            SexpKind::Number(x) => Ok(Pattern::Const(Datum::Real(*x), span)),
            SexpKind::Bool(b) => Ok(Pattern::Const(Datum::Bool(*b), span)),
            SexpKind::List(v) if !v.is_empty() => match (v[0].symbol(), &v[1..]) {
                (Some("quote"), [d]) => Ok(Pattern::Const(quoted(d)?, span)),
                (Some("cons"), [a, b]) => Ok(Pattern::Cons(
                    Box::new(self.pattern(a)?),
                    Box::new(self.pattern(b)?),
                    span,
                )),
                (Some("cons"), args) => Err(Diagnostic::at(
                    span,
                    format!(
                        "a `(cons p q)` pattern has exactly two parts, found {}",
                        args.len()
                    ),
                )),
                (Some("cons*"), args) => self.params(args, span),
                (Some("list"), args) => {
                    let mut out = Pattern::Const(Datum::Nil, span);
                    for a in args.iter().rev() {
                        let q = self.pattern(a)?;
                        let s = q.span();
                        out = Pattern::Cons(Box::new(q), Box::new(out), s);
                    }
                    Ok(out)
                }
                _ => Err(bad_pattern(p)),
            },
            _ => Err(bad_pattern(p)),
        }
    }
}

pub(super) fn bad_pattern(p: &Sexp) -> Diagnostic {
    Diagnostic::at(
        p.span,
        format!(
            "expected a pattern (a variable, a constant, `(cons p q)`, `(cons* p ...)` or \
             `(list p ...)`), found {}",
            p.describe()
        ),
    )
}

pub(super) fn bad_params(p: &Sexp) -> Diagnostic {
    match &p.kind {
        SexpKind::Symbol(_) | SexpKind::Dotted(..) => Diagnostic::at(
            p.span,
            "rest parameters are not VLAD: every procedure takes one argument; \
             write `(lambda (x) ...)` and pass a list",
        ),
        _ => Diagnostic::at(
            p.span,
            format!(
                "expected a parameter list `(p ...)`, found {}",
                p.describe()
            ),
        ),
    }
}

/// `()` for no patterns, the pattern itself for one, right-nested `Cons`
/// patterns for more.
pub(super) fn cons_star_pattern(pats: Vec<Pattern>, nil_span: Span) -> Pattern {
    let mut it = pats.into_iter().rev();
    let mut out = match it.next() {
        Some(last) => last,
        None => return Pattern::Const(Datum::Nil, nil_span),
    };
    for p in it {
        let s = p.span();
        out = Pattern::Cons(Box::new(p), Box::new(out), s);
    }
    out
}

/// `(pattern expression)` pairs of a binding form.
pub(super) type Bindings<'s> = Vec<(&'s Sexp, &'s Sexp)>;

/// The bindings and body of `let`, `let*`, `letrec` and named `let`.
pub(super) fn let_shape<'s>(
    what: &str,
    args: &'s [Sexp],
    span: Span,
) -> Result<(Bindings<'s>, &'s Sexp), Diagnostic> {
    let (binds, body) = match args {
        [binds, body] => (binds, body),
        [] | [_] => {
            return Err(Diagnostic::at(
                span,
                format!("expected `({what} ((pattern expression) ...) body)`, found no body"),
            ))
        }
        _ => {
            return Err(Diagnostic::at(
                args[2].span,
                format!(
                    "a `{what}` body is exactly one expression, found {}",
                    args.len() - 1
                ),
            ))
        }
    };
    let list = match binds.list() {
        Some(l) => l,
        None => {
            return Err(Diagnostic::at(
                binds.span,
                format!(
                    "expected the bindings `((pattern expression) ...)` of `{what}`, found {}",
                    binds.describe()
                ),
            ))
        }
    };
    let mut out = Vec::new();
    for b in list {
        match b.list() {
            Some([p, e]) => out.push((p, e)),
            _ => {
                return Err(Diagnostic::at(
                    b.span,
                    format!(
                        "expected a `{what}` binding `(pattern expression)`, found {}",
                        b.describe()
                    ),
                ))
            }
        }
    }
    Ok((out, body))
}
