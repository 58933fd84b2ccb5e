//! The top level: definitions and expressions of the program and the
//! library, and the renaming that keeps every top-level name unique.

use super::*;

/// A top-level item before ordering.
pub(super) struct Item {
    pub(super) kind: ItemKind,
    pub(super) from_lib: bool,
}

pub(super) enum ItemKind {
    Def {
        name: Name,
        span: Span,
        expr: Expr,
    },
    Show {
        expr: Expr,
        expect: Option<Expect>,
        span: Span,
    },
}

/// `(define ...)`: the defined name and where it is written.
pub(super) fn define_name(form: &Sexp) -> Result<Option<(Name, Span)>, Diagnostic> {
    let items = match form.list() {
        Some(items) if items.first().and_then(Sexp::symbol) == Some("define") => items,
        _ => return Ok(None),
    };
    let mut target = match items.get(1) {
        Some(t) => t,
        None => {
            return Err(Diagnostic::at(
                form.span,
                "expected `(define name expression)` or `(define (name params ...) body)`, found `(define)`",
            ))
        }
    };
    loop {
        match &target.kind {
            SexpKind::Symbol(s) => return Ok(Some((s.clone(), target.span))),
            SexpKind::List(v) if !v.is_empty() => target = &v[0],
            SexpKind::Dotted(..) => {
                return Err(Diagnostic::at(
                    target.span,
                    "rest parameters are not VLAD: every procedure takes one argument; \
                     write `(define (f x) ...)` and pass a list",
                ))
            }
            _ => {
                return Err(Diagnostic::at(
                    target.span,
                    format!(
                        "expected a name or `(name params ...)` after `define`, found {}",
                        target.describe()
                    ),
                ))
            }
        }
    }
}

/// Names defined at top level, with the first definition's span; a second
/// definition is an error.
pub(super) fn defined_names(
    map: &SourceMap,
    forms: &[TopForm],
) -> Result<HashMap<Name, Span>, Diagnostic> {
    let mut names: HashMap<Name, Span> = HashMap::new();
    for f in forms {
        if let TopForm::Form(d) = f {
            if let Some((name, _)) = define_name(d)? {
                // Both positions are those of the `(define ...)` forms.
                if let Some(first) = names.get(&name) {
                    return Err(Diagnostic::at(d.span, format!("`{name}` is defined twice"))
                        .with_note(format!("first defined at {}", map.locate(*first))));
                }
                names.insert(name, d.span);
            }
        }
    }
    Ok(names)
}

pub(super) fn expand_program(
    map: &SourceMap,
    lib_forms: &[TopForm],
    user_forms: &[TopForm],
) -> Result<Program, Diagnostic> {
    let user_names = defined_names(map, user_forms)?;
    let lib_names = defined_names(map, lib_forms)?;

    // The library sees itself and the primitives, never the user program.
    let mut lib_rename: HashMap<Name, Name> = HashMap::new();
    for name in lib_names.keys() {
        if user_names.contains_key(name) {
            lib_rename.insert(name.clone(), format!("{name} (std)"));
        }
    }
    let lib_top: HashSet<Name> = lib_names.keys().cloned().collect();
    let user_top: HashSet<Name> = user_names.keys().cloned().collect();
    let mut lib = Expander {
        top: &lib_top,
        rename: &lib_rename,
        pin_primitives: Some(&user_top),
        locals: HashMap::new(),
    };
    let empty = HashMap::new();
    let mut user = Expander {
        top: &user_top,
        rename: &empty,
        pin_primitives: None,
        locals: HashMap::new(),
    };
    let mut items = Vec::new();
    lib.top_forms(lib_forms, true, &mut items)?;
    user.top_forms(user_forms, false, &mut items)?;
    order(map, items)
}

impl Expander<'_> {
    pub(super) fn top_forms(
        &mut self,
        forms: &[TopForm],
        from_lib: bool,
        items: &mut Vec<Item>,
    ) -> Result<(), Diagnostic> {
        // Index in `items` of the expression a `===>` may attach to.
        let mut last_show: Option<usize> = None;
        let mut i = 0;
        while i < forms.len() {
            let d = match &forms[i] {
                TopForm::Barrier => {
                    last_show = None;
                    i += 1;
                    continue;
                }
                TopForm::Form(d) => d,
            };
            i += 1;
            if d.symbol() == Some("===>") {
                let target = match last_show {
                    Some(t) => t,
                    None => {
                        return Err(Diagnostic::at(
                            d.span,
                            "`===>` must follow a top-level expression",
                        ))
                    }
                };
                let datum = match forms.get(i) {
                    Some(TopForm::Form(x)) if x.symbol() != Some("===>") => x,
                    Some(TopForm::Form(x)) => {
                        return Err(Diagnostic::at(
                            x.span,
                            "expected the expected value after `===>`, found `===>`",
                        ))
                    }
                    _ => {
                        return Err(Diagnostic::at(
                            d.span,
                            "expected the expected value after `===>`, found end of file",
                        ))
                    }
                };
                i += 1;
                let expect = Expect {
                    datum: expect_datum(datum)?,
                    span: datum.span,
                };
                if let Some(Item {
                    kind: ItemKind::Show { expect: slot, .. },
                    ..
                }) = items.get_mut(target)
                {
                    *slot = Some(expect);
                }
                last_show = None;
                continue;
            }
            if let Some((name, name_span)) = define_name(d)? {
                let expr = self.define(d)?;
                let name = self.top_name(&name);
                items.push(Item {
                    kind: ItemKind::Def {
                        name,
                        span: name_span,
                        expr,
                    },
                    from_lib,
                });
                last_show = None;
            } else {
                let expr = self.expr(d)?;
                items.push(Item {
                    kind: ItemKind::Show {
                        expr,
                        expect: None,
                        span: d.span,
                    },
                    from_lib,
                });
                last_show = Some(items.len() - 1);
            }
        }
        Ok(())
    }

    /// The right-hand side of a `(define ...)` form, curried heads turned
    /// into nested lambdas.
    pub(super) fn define(&mut self, form: &Sexp) -> Result<Expr, Diagnostic> {
        let items = form.list().unwrap_or(&[]);
        let (target, body) = match items {
            [_, target, body] => (target, body),
            [_, target] => {
                return Err(Diagnostic::at(
                    form.span,
                    format!(
                        "expected an expression after {} in `define`, found nothing",
                        target.describe()
                    ),
                ))
            }
            _ => {
                return Err(Diagnostic::at(
                    form.span,
                    format!(
                        "a definition has exactly one body expression, found {}",
                        items.len().saturating_sub(2)
                    ),
                ))
            }
        };
        // Parameter lists from outermost to innermost:
        // ((f a) b) gives [(a), (b)].
        let mut params: Vec<&Sexp> = Vec::new();
        let mut t = target;
        let mut name = String::new();
        loop {
            match &t.kind {
                SexpKind::Symbol(s) => {
                    name = s.clone();
                    break;
                }
                SexpKind::List(v) if !v.is_empty() => {
                    params.push(t);
                    t = &v[0];
                }
                _ => break, // rejected by define_name
            }
        }
        params.reverse();
        let mut expr = if params.is_empty() {
            self.expr(body)?
        } else {
            self.nested_lambdas(&params, body)?
        };
        if let Expr::Lambda(l) = &mut expr {
            if l.name.is_none() {
                l.name = Some(name);
            }
        }
        Ok(expr)
    }

    /// `heads[0]` is `(f p ...)`: a lambda over its parameters whose body is
    /// the lambda of `heads[1..]`, ... and finally `body`.
    pub(super) fn nested_lambdas(
        &mut self,
        heads: &[&Sexp],
        body: &Sexp,
    ) -> Result<Expr, Diagnostic> {
        let (head, rest) = match heads.split_first() {
            Some(x) => x,
            None => return self.expr(body),
        };
        let items = head.list().unwrap_or(&[]);
        let param = self.params(&items[1..], head.span)?;
        let names = self.bind_checked(&param.vars(), "parameter list")?;
        let inner = self.nested_lambdas(rest, body);
        self.unbind(&names);
        Ok(Expr::Lambda(Box::new(Lambda {
            param,
            body: inner?,
            span: head.span,
            name: None,
        })))
    }

    /// The name a top-level definition gets after renaming.
    pub(super) fn top_name(&self, name: &str) -> Name {
        self.rename
            .get(name)
            .cloned()
            .unwrap_or_else(|| name.to_string())
    }
}

/// The datum after `===>`: kept as a tree (it may mention symbols such as
/// `perturbation`, compared against printed values).
pub(super) fn expect_datum(d: &Sexp) -> Result<ExpectDatum, Diagnostic> {
    Ok(match &d.kind {
        SexpKind::Number(x) => ExpectDatum::Real(*x),
        SexpKind::Bool(b) => ExpectDatum::Bool(*b),
        SexpKind::Symbol(s) => ExpectDatum::Symbol(s.clone()),
        SexpKind::String(_) => {
            return Err(Diagnostic::at(
                d.span,
                "expected a value after `===>`, found a string: VLAD has no strings",
            ))
        }
        SexpKind::List(v) => {
            let mut out = ExpectDatum::Nil;
            for x in v.iter().rev() {
                out = ExpectDatum::Pair(Box::new(expect_datum(x)?), Box::new(out));
            }
            out
        }
        SexpKind::Dotted(v, tail) => {
            let mut out = expect_datum(tail)?;
            for x in v.iter().rev() {
                out = ExpectDatum::Pair(Box::new(expect_datum(x)?), Box::new(out));
            }
            out
        }
        SexpKind::Vector(v) => {
            ExpectDatum::Vector(v.iter().map(expect_datum).collect::<Result<_, _>>()?)
        }
    })
}

/// The constant a quoted datum denotes.
pub(super) fn quoted(d: &Sexp) -> Result<Datum, Diagnostic> {
    Ok(match &d.kind {
        SexpKind::Number(x) => Datum::Real(*x),
        SexpKind::Bool(b) => Datum::Bool(*b),
        SexpKind::Symbol(s) => {
            return Err(Diagnostic::at(
                d.span,
                format!("cannot quote the symbol `{s}`: VLAD has no symbols as values"),
            ))
        }
        SexpKind::String(_) => {
            return Err(Diagnostic::at(
                d.span,
                "cannot quote a string: VLAD has no strings as values",
            ))
        }
        SexpKind::List(v) => {
            let mut out = Datum::Nil;
            for x in v.iter().rev() {
                out = Datum::Pair(Box::new(quoted(x)?), Box::new(out));
            }
            out
        }
        SexpKind::Dotted(v, tail) => {
            let mut out = quoted(tail)?;
            for x in v.iter().rev() {
                out = Datum::Pair(Box::new(quoted(x)?), Box::new(out));
            }
            out
        }
        SexpKind::Vector(v) => Datum::Vector(v.iter().map(quoted).collect::<Result<_, _>>()?),
    })
}
