//! S-expressions to the core AST: includes, derived forms, top-level order.
//!
//! [`load_program`] does everything the front end does after reading:
//!
//! 1. **Loading.** The embedded standard library becomes file 0
//!    (`<stdlib>`); the user's file and everything it `include`s are read
//!    and spliced into one sequence of top-level forms. A file is included
//!    at most once (by canonical path), a cycle is an error naming the
//!    chain.
//! 2. **Expansion.** Every form of VLAD.md section 3 becomes the small core
//!    of [`ast`]: n-ary procedures become one-argument procedures on
//!    `cons*` chains, `let*`/named `let`/`cond`/`and`/`or`/`list`/`cons*`
//!    disappear. Keywords are recognised only where no variable of that
//!    name is in scope, so a program may bind `list` or `cons` itself.
//! 3. **Scoping.** Library definitions that the program redefines are
//!    renamed to names users cannot write (`car (std)`), and library
//!    references to primitives that the program redefines are pinned with
//!    [`ast::PRIMITIVE_PREFIX`]; library definitions the program does not
//!    reach are dropped. After this every top-level name is unique.
//! 4. **Ordering.** The top level is `letrec*`: lambda definitions are
//!    grouped into strongly connected components and each group is placed
//!    just before the first item that needs it; value definitions and
//!    expressions keep their source order. A value that would be needed
//!    before it is evaluated is a compile-time error at the use.

use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};

use crate::ast::{
    self, Datum, Expect, ExpectDatum, Expr, Lambda, Name, Pattern, Program, RecBinding, TopItem,
};
use crate::reader;
use crate::sexp::{Sexp, SexpKind};
use crate::{Diagnostic, FileId, SourceMap, Span};

/// The standard library, in VLAD (see the file for what it provides).
pub const STDLIB: &str = include_str!("stdlib.vlad");

/// How to find included files.
#[derive(Clone, Debug, Default)]
pub struct Options {
    /// `-I DIR` directories, searched in order after the including file's
    /// own directory.
    pub include_dirs: Vec<PathBuf>,
}

/// Reads the program at `path` (with its includes and the standard
/// library) and expands it. `map` should be empty: the library becomes
/// file 0.
pub fn load_program(
    map: &mut SourceMap,
    path: &Path,
    opts: &Options,
) -> Result<Program, Diagnostic> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| Diagnostic::new(None, format!("cannot read {}: {e}", path.display())))?;
    load_source(map, path, text, opts)
}

/// Stack for the expander thread. Expansion recurses once per nesting
/// level of the source (up to [`reader::MAX_DEPTH`]) and unoptimised
/// builds use large frames; the memory is only reserved, not committed.
const EXPAND_STACK: usize = 256 << 20;

/// Like [`load_program`], for a main file whose text is already in hand
/// (tests, a REPL). `path` names the file in messages and is where its
/// includes are looked up from; it need not exist.
///
/// Runs on a thread of its own with a large stack, so that deeply nested
/// (or hostile) input cannot overflow the caller's stack.
pub fn load_source(
    map: &mut SourceMap,
    path: &Path,
    text: String,
    opts: &Options,
) -> Result<Program, Diagnostic> {
    std::thread::scope(|s| {
        let worker = std::thread::Builder::new()
            .name("expand".into())
            .stack_size(EXPAND_STACK)
            .spawn_scoped(s, || load_source_here(map, path, text, opts))
            .map_err(|e| Diagnostic::new(None, format!("cannot start the expander: {e}")))?;
        match worker.join() {
            Ok(r) => r,
            Err(panic) => std::panic::resume_unwind(panic),
        }
    })
}

/// [`load_source`] on the current thread.
fn load_source_here(
    map: &mut SourceMap,
    path: &Path,
    text: String,
    opts: &Options,
) -> Result<Program, Diagnostic> {
    let lib_id = map.add(PathBuf::from("<stdlib>"), STDLIB.to_string());
    let lib_forms: Vec<TopForm> = reader::read_file(map, lib_id)?
        .into_iter()
        .map(TopForm::Form)
        .collect();
    let main_id = map.add(path.to_path_buf(), text);
    let mut loader = Loader {
        opts,
        done: HashSet::new(),
        chain: Vec::new(),
        forms: Vec::new(),
    };
    let canon = std::fs::canonicalize(path).unwrap_or_else(|_| path.to_path_buf());
    loader.load(map, main_id, canon)?;
    expand_program(map, &lib_forms, &loader.forms)
}

/// Expands one `(lambda ...)` form that may refer to nothing but
/// primitives: entries of the AD prelude (crate `ad`) are written this way.
pub fn expand_closed_lambda(form: &Sexp) -> Result<Lambda, Diagnostic> {
    let top = HashSet::new();
    let rename = HashMap::new();
    let mut ex = Expander {
        top: &top,
        rename: &rename,
        pin_primitives: None,
        locals: HashMap::new(),
    };
    match ex.expr(form)? {
        Expr::Lambda(l) => Ok(*l),
        _ => Err(Diagnostic::at(form.span, "expected a lambda expression")),
    }
}

// ---------------------------------------------------------------------------
// Loading and includes

/// A top-level form, or a file boundary (so that `===>` cannot attach to an
/// expression in another file).
#[derive(Debug)]
enum TopForm {
    Form(Sexp),
    Barrier,
}

struct Loader<'o> {
    opts: &'o Options,
    /// Canonical paths of every file loaded so far.
    done: HashSet<PathBuf>,
    /// The files being loaded, outermost first: canonical path and the
    /// path as shown to the user.
    chain: Vec<(PathBuf, String)>,
    forms: Vec<TopForm>,
}

impl Loader<'_> {
    fn load(&mut self, map: &mut SourceMap, id: FileId, canon: PathBuf) -> Result<(), Diagnostic> {
        self.done.insert(canon.clone());
        self.chain.push((canon, map.path(id).display().to_string()));
        let data = reader::read_file(map, id)?;
        self.forms.push(TopForm::Barrier);
        for d in data {
            match include_target(&d)? {
                Some(name) => {
                    self.include(map, id, &d, &name)?;
                    self.forms.push(TopForm::Barrier);
                }
                None => self.forms.push(TopForm::Form(d)),
            }
        }
        self.forms.push(TopForm::Barrier);
        self.chain.pop();
        Ok(())
    }

    fn include(
        &mut self,
        map: &mut SourceMap,
        from: FileId,
        form: &Sexp,
        name: &str,
    ) -> Result<(), Diagnostic> {
        let file_name = if name.ends_with(".vlad") {
            name.to_string()
        } else {
            format!("{name}.vlad")
        };
        let mut dirs: Vec<PathBuf> = Vec::new();
        dirs.push(
            map.path(from)
                .parent()
                .map(Path::to_path_buf)
                .unwrap_or_default(),
        );
        dirs.extend(self.opts.include_dirs.iter().cloned());
        let mut tried = Vec::new();
        let mut found = None;
        for dir in dirs {
            let p = dir.join(&file_name);
            if p.is_file() {
                found = Some(p);
                break;
            }
            tried.push(p.display().to_string());
        }
        let path = match found {
            Some(p) => p,
            None => {
                return Err(Diagnostic::at(
                    form.span,
                    format!(
                        "cannot find included file `{file_name}`: tried {}",
                        tried.join(", ")
                    ),
                ))
            }
        };
        let canon = std::fs::canonicalize(&path).unwrap_or_else(|_| path.clone());
        if let Some(k) = self.chain.iter().position(|(c, _)| *c == canon) {
            let mut names: Vec<&str> = self.chain[k..].iter().map(|(_, d)| d.as_str()).collect();
            names.push(&self.chain[k].1);
            return Err(Diagnostic::at(
                form.span,
                format!("include cycle: {}", names.join(" -> ")),
            ));
        }
        if self.done.contains(&canon) {
            return Ok(());
        }
        let text = std::fs::read_to_string(&path).map_err(|e| {
            Diagnostic::at(form.span, format!("cannot read {}: {e}", path.display()))
        })?;
        let id = map.add(path, text);
        self.load(map, id, canon)
    }
}

/// `Some(name)` for an `(include "name")` form, an error for a malformed
/// include, `None` for anything else.
fn include_target(d: &Sexp) -> Result<Option<String>, Diagnostic> {
    let items = match d.list() {
        Some(items) if items.first().and_then(Sexp::symbol) == Some("include") => items,
        _ => return Ok(None),
    };
    match items {
        [_, Sexp {
            kind: SexpKind::String(s),
            ..
        }] => Ok(Some(s.clone())),
        [_, other] => Err(Diagnostic::at(
            other.span,
            format!(
                "expected a file name string in `(include \"name\")`, found {}",
                other.describe()
            ),
        )),
        _ => Err(Diagnostic::at(
            d.span,
            format!(
                "`include` takes exactly one file name string, found {} arguments",
                items.len() - 1
            ),
        )),
    }
}

// ---------------------------------------------------------------------------
// Top level

/// A top-level item before ordering.
struct Item {
    kind: ItemKind,
    from_lib: bool,
}

enum ItemKind {
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
fn define_name(form: &Sexp) -> Result<Option<(Name, Span)>, Diagnostic> {
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
fn defined_names(map: &SourceMap, forms: &[TopForm]) -> Result<HashMap<Name, Span>, Diagnostic> {
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

fn expand_program(
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
    fn top_forms(
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
    fn define(&mut self, form: &Sexp) -> Result<Expr, Diagnostic> {
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
    fn nested_lambdas(&mut self, heads: &[&Sexp], body: &Sexp) -> Result<Expr, Diagnostic> {
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
    fn top_name(&self, name: &str) -> Name {
        self.rename
            .get(name)
            .cloned()
            .unwrap_or_else(|| name.to_string())
    }
}

/// The datum after `===>`: kept as a tree (it may mention symbols such as
/// `perturbation`, compared against printed values).
fn expect_datum(d: &Sexp) -> Result<ExpectDatum, Diagnostic> {
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
    })
}

/// The constant a quoted datum denotes.
fn quoted(d: &Sexp) -> Result<Datum, Diagnostic> {
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
    })
}

// ---------------------------------------------------------------------------
// Expressions

/// Words with a meaning of their own in operator position (or, for
/// `else` and `===>`, in a fixed place). A binding of the same name in
/// scope turns the word back into an ordinary variable.
const KEYWORDS: &[&str] = &[
    "quote", "lambda", "let", "let*", "letrec", "if", "cond", "else", "and", "or", "cons", "list",
    "cons*", "define", "include", "===>",
];

/// Temporary variable of `or`; the space makes it unwritable in source.
const OR_TEMP: &str = "or tmp";

struct Expander<'a> {
    /// Top-level names of the unit being expanded (library or program).
    top: &'a HashSet<Name>,
    /// Renames for free references to top-level names of this unit.
    rename: &'a HashMap<Name, Name>,
    /// For library code: the program's top-level names. A free library
    /// reference to one of them that is not a library definition means a
    /// primitive, and is pinned with [`ast::PRIMITIVE_PREFIX`].
    pin_primitives: Option<&'a HashSet<Name>>,
    /// Local variables in scope, with how many bindings of each are open.
    locals: HashMap<Name, usize>,
}

fn count_noun(n: usize, one: &str, many: &str) -> String {
    if n == 1 {
        format!("1 {one}")
    } else {
        format!("{n} {many}")
    }
}

impl Expander<'_> {
    fn is_bound(&self, name: &str) -> bool {
        self.locals.contains_key(name) || self.top.contains(name)
    }

    fn is_keyword(&self, name: &str) -> bool {
        KEYWORDS.contains(&name) && !self.is_bound(name)
    }

    /// Brings `vars` into scope, rejecting a name bound twice in the group;
    /// `what` says what the group is, for the message.
    fn bind_checked(&mut self, vars: &[(Name, Span)], what: &str) -> Result<Vec<Name>, Diagnostic> {
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

    fn unbind(&mut self, names: &[Name]) {
        for n in names {
            if let Some(c) = self.locals.get_mut(n) {
                *c -= 1;
                if *c == 0 {
                    self.locals.remove(n);
                }
            }
        }
    }

    fn var(&self, name: &str, span: Span) -> Expr {
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

    fn expr(&mut self, d: &Sexp) -> Result<Expr, Diagnostic> {
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
    fn keyword_as_value(&self, s: &str, span: Span) -> Result<Expr, Diagnostic> {
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
    fn cons_star(&mut self, items: &[Sexp], nil_span: Span) -> Result<Expr, Diagnostic> {
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
    fn special(&mut self, head: &str, v: &[Sexp], span: Span) -> Result<Expr, Diagnostic> {
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
            "cons*" => self.cons_star(args, span),
            "else" | "===>" | "define" | "include" => self.keyword_as_value(head, span),
            _ => Err(Diagnostic::at(span, format!("unknown keyword `{head}`"))),
        }
    }

    fn lambda_form(&mut self, args: &[Sexp], span: Span) -> Result<Expr, Diagnostic> {
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
    fn let_form(&mut self, args: &[Sexp], span: Span) -> Result<Expr, Diagnostic> {
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

    fn letrec_form(&mut self, args: &[Sexp], span: Span) -> Result<Expr, Diagnostic> {
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

    fn if_form(&mut self, args: &[Sexp], span: Span) -> Result<Expr, Diagnostic> {
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

    fn exprs(&mut self, args: &[Sexp]) -> Result<Vec<Expr>, Diagnostic> {
        args.iter().map(|x| self.expr(x)).collect()
    }

    /// `(and a b c)` is `(if a (if b c #f) #f)`.
    fn and_form(&mut self, args: &[Sexp], span: Span) -> Result<Expr, Diagnostic> {
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
    fn or_form(&mut self, args: &[Sexp], span: Span) -> Result<Expr, Diagnostic> {
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

    fn cons_form(&mut self, args: &[Sexp], span: Span) -> Result<Expr, Diagnostic> {
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

    fn list_form(&mut self, args: &[Sexp], span: Span) -> Result<Expr, Diagnostic> {
        let mut out = Expr::Const(Datum::Nil, span);
        for e in self.exprs(args)?.into_iter().rev() {
            let s = e.span();
            out = Expr::Cons(Box::new(e), Box::new(out), s);
        }
        Ok(out)
    }

    fn letrec_body(
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
    fn let_star(
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
    fn named_let(
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

    fn cond(&mut self, clauses: &[Sexp], span: Span) -> Result<Expr, Diagnostic> {
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
    fn params(&self, items: &[Sexp], span: Span) -> Result<Pattern, Diagnostic> {
        let pats = items
            .iter()
            .map(|p| self.pattern(p))
            .collect::<Result<Vec<_>, _>>()?;
        Ok(cons_star_pattern(pats, span))
    }

    fn pattern(&self, p: &Sexp) -> Result<Pattern, Diagnostic> {
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

fn bad_pattern(p: &Sexp) -> Diagnostic {
    Diagnostic::at(
        p.span,
        format!(
            "expected a pattern (a variable, a constant, `(cons p q)`, `(cons* p ...)` or \
             `(list p ...)`), found {}",
            p.describe()
        ),
    )
}

fn bad_params(p: &Sexp) -> Diagnostic {
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
fn cons_star_pattern(pats: Vec<Pattern>, nil_span: Span) -> Pattern {
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
type Bindings<'s> = Vec<(&'s Sexp, &'s Sexp)>;

/// The bindings and body of `let`, `let*`, `letrec` and named `let`.
fn let_shape<'s>(
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

// ---------------------------------------------------------------------------
// Ordering

/// Turns the expanded items into evaluation order (see the module doc):
/// drops unreachable library items, groups lambda definitions into
/// strongly connected components, places each group before its first use,
/// and rejects values used before they are evaluated.
fn order(map: &SourceMap, items: Vec<Item>) -> Result<Program, Diagnostic> {
    let n = items.len();
    let mut index: HashMap<Name, usize> = HashMap::new();
    for (i, it) in items.iter().enumerate() {
        if let ItemKind::Def { name, .. } = &it.kind {
            index.insert(name.clone(), i);
        }
    }
    // Top-level references of each item, with the span of the first use.
    let refs: Vec<Vec<(usize, Span)>> = items
        .iter()
        .map(|it| {
            let e = match &it.kind {
                ItemKind::Def { expr, .. } | ItemKind::Show { expr, .. } => expr,
            };
            e.free_vars()
                .into_iter()
                .filter_map(|(name, span)| index.get(&name).map(|&j| (j, span)))
                .collect()
        })
        .collect();
    let is_lambda: Vec<bool> = items
        .iter()
        .map(|it| {
            matches!(
                &it.kind,
                ItemKind::Def {
                    expr: Expr::Lambda(_),
                    ..
                }
            )
        })
        .collect();

    // Keep every program item and the library items they reach.
    let mut keep = vec![false; n];
    let mut todo: Vec<usize> = (0..n).filter(|&i| !items[i].from_lib).collect();
    for &i in &todo {
        keep[i] = true;
    }
    while let Some(i) = todo.pop() {
        for &(j, _) in &refs[i] {
            if !keep[j] {
                keep[j] = true;
                todo.push(j);
            }
        }
    }

    // Strongly connected components of the kept lambda definitions.
    let lambdas: Vec<usize> = (0..n).filter(|&i| keep[i] && is_lambda[i]).collect();
    let mut dense = vec![usize::MAX; n];
    for (k, &i) in lambdas.iter().enumerate() {
        dense[i] = k;
    }
    let graph: Vec<Vec<usize>> = lambdas
        .iter()
        .map(|&i| {
            refs[i]
                .iter()
                .map(|&(j, _)| dense[j])
                .filter(|&k| k != usize::MAX)
                .collect()
        })
        .collect();
    // Members of each component in source order.
    let sccs: Vec<Vec<usize>> = base::scc::sccs(&graph)
        .into_iter()
        .map(|comp| {
            let mut items: Vec<usize> = comp.into_iter().map(|k| lambdas[k]).collect();
            items.sort_unstable();
            items
        })
        .collect();
    let mut group_of: Vec<usize> = vec![usize::MAX; n];
    for (g, members) in sccs.iter().enumerate() {
        for &i in members {
            group_of[i] = g;
        }
    }

    let mut items: Vec<Option<Item>> = items.into_iter().map(Some).collect();
    let mut st = Placer {
        map,
        items: &mut items,
        refs: &refs,
        is_lambda: &is_lambda,
        sccs: &sccs,
        group_of: &group_of,
        placed: vec![false; sccs.len()],
        evaluated: vec![false; n],
        out: Vec::new(),
    };
    for i in 0..n {
        if !keep[i] || is_lambda[i] {
            continue;
        }
        for &(j, span) in &refs[i] {
            if is_lambda[j] {
                st.place(group_of[j], span)?;
            } else if !st.evaluated[j] {
                return Err(st.used_early(j, span));
            }
        }
        st.evaluated[i] = true;
        st.emit_value(i);
    }
    // Groups nothing evaluated needs, in source order.
    let mut rest: Vec<usize> = (0..sccs.len()).collect();
    rest.sort_by_key(|&g| sccs[g].first().copied().unwrap_or(0));
    for g in rest {
        let span = st.def_span(sccs[g].first().copied().unwrap_or(0));
        st.place(g, span)?;
    }
    Ok(Program { items: st.out })
}

struct Placer<'a> {
    map: &'a SourceMap,
    items: &'a mut Vec<Option<Item>>,
    refs: &'a [Vec<(usize, Span)>],
    is_lambda: &'a [bool],
    sccs: &'a [Vec<usize>],
    group_of: &'a [usize],
    placed: Vec<bool>,
    evaluated: Vec<bool>,
    out: Vec<TopItem>,
}

impl Placer<'_> {
    fn def_span(&self, i: usize) -> Span {
        match self
            .items
            .get(i)
            .and_then(Option::as_ref)
            .map(|it| &it.kind)
        {
            Some(ItemKind::Def { span, .. }) | Some(ItemKind::Show { span, .. }) => *span,
            None => Span {
                file: FileId(0),
                line: 1,
                col: 1,
            },
        }
    }

    fn name(&self, i: usize) -> String {
        match self
            .items
            .get(i)
            .and_then(Option::as_ref)
            .map(|it| &it.kind)
        {
            Some(ItemKind::Def { name, .. }) => name.clone(),
            _ => String::new(),
        }
    }

    fn used_early(&self, j: usize, span: Span) -> Diagnostic {
        let name = self.name(j);
        let shown = name.strip_suffix(" (std)").unwrap_or(&name);
        Diagnostic::at(
            span,
            format!("`{shown}` is used before its definition is evaluated"),
        )
        .with_note(format!(
            "`{shown}` is defined at {}",
            self.map.locate(self.def_span(j))
        ))
    }

    /// Emits lambda group `g` (after the groups it needs), checking that
    /// every value it closes over has been evaluated. `use_span` is the
    /// use that made the group necessary.
    fn place(&mut self, g: usize, use_span: Span) -> Result<(), Diagnostic> {
        if self.placed[g] {
            return Ok(());
        }
        self.placed[g] = true;
        let (sccs, refs, group_of) = (self.sccs, self.refs, self.group_of);
        let members = &sccs[g];
        for &i in members {
            for &(j, span) in &refs[i] {
                if self.is_lambda[j] {
                    if group_of[j] != g {
                        self.place(group_of[j], use_span)?;
                    }
                } else if !self.evaluated[j] {
                    return Err(self.used_early(j, span).with_note(format!(
                        "it is needed by `{}`, which is used at {}",
                        self.name(i),
                        self.map.locate(use_span)
                    )));
                }
            }
        }
        let mut binds = Vec::new();
        for &i in members {
            if let Some(Item {
                kind:
                    ItemKind::Def {
                        name,
                        span,
                        expr: Expr::Lambda(l),
                    },
                ..
            }) = self.items[i].take()
            {
                binds.push(RecBinding {
                    name,
                    span,
                    lambda: *l,
                });
            }
        }
        self.out.push(TopItem::Rec(binds));
        Ok(())
    }

    fn emit_value(&mut self, i: usize) {
        match self.items[i].take().map(|it| it.kind) {
            Some(ItemKind::Def { name, span, expr }) => {
                self.out.push(TopItem::Define { name, span, expr })
            }
            Some(ItemKind::Show { expr, expect, span }) => {
                self.out.push(TopItem::Show { expr, expect, span })
            }
            None => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::number::format_real;

    fn load(src: &str) -> Result<(SourceMap, Program), Diagnostic> {
        let mut map = SourceMap::new();
        let p = load_source(
            &mut map,
            Path::new("test.vlad"),
            src.to_string(),
            &Options::default(),
        )?;
        Ok((map, p))
    }

    fn prog(src: &str) -> Program {
        match load(src) {
            Ok((_, p)) => p,
            Err(e) => panic!("{src:?}: {e:?}"),
        }
    }

    fn err(src: &str) -> Diagnostic {
        match load(src) {
            Ok((_, p)) => panic!("{src:?} should fail, got {}", show_program(&p)),
            Err(e) => e,
        }
    }

    /// Checks message and position (in the main file, FileId(1)).
    fn err_at(src: &str, line: u32, col: u32, msg: &str) {
        let e = err(src);
        assert!(e.message.contains(msg), "{src:?}: message {:?}", e.message);
        assert_eq!(
            e.span,
            Some(Span {
                file: FileId(1),
                line,
                col
            }),
            "{src:?}: {e:?}"
        );
    }

    fn show_datum(d: &Datum) -> String {
        match d {
            Datum::Real(x) => format_real(*x),
            Datum::Bool(b) => if *b { "#t" } else { "#f" }.into(),
            Datum::Nil => "()".into(),
            Datum::Pair(a, b) => format!("({} . {})", show_datum(a), show_datum(b)),
        }
    }

    fn show_pat(p: &Pattern) -> String {
        match p {
            Pattern::Var(n, _) => n.clone(),
            Pattern::Cons(a, b, _) => format!("(cons {} {})", show_pat(a), show_pat(b)),
            Pattern::Const(d, _) => format!("'{}", show_datum(d)),
        }
    }

    fn show_lambda(l: &Lambda) -> String {
        let name = l.name.as_ref().map(|n| format!(":{n}")).unwrap_or_default();
        format!("(lambda{name} {} {})", show_pat(&l.param), show(&l.body))
    }

    fn show(e: &Expr) -> String {
        match e {
            Expr::Const(d, _) => format!("'{}", show_datum(d)),
            Expr::Var(n, _) => n.clone(),
            Expr::Lambda(l) => show_lambda(l),
            Expr::App(f, a, _) => format!("(@ {} {})", show(f), show(a)),
            Expr::Cons(a, b, _) => format!("(cons {} {})", show(a), show(b)),
            Expr::If(c, a, b, _) => format!("(if {} {} {})", show(c), show(a), show(b)),
            Expr::Let(bs, body, _) => format!(
                "(let ({}) {})",
                bs.iter()
                    .map(|(p, e)| format!("({} {})", show_pat(p), show(e)))
                    .collect::<Vec<_>>()
                    .join(" "),
                show(body)
            ),
            Expr::Letrec(bs, body, _) => format!(
                "(letrec ({}) {})",
                bs.iter()
                    .map(|b| format!("({} {})", b.name, show_lambda(&b.lambda)))
                    .collect::<Vec<_>>()
                    .join(" "),
                show(body)
            ),
        }
    }

    fn show_expect(d: &ExpectDatum) -> String {
        match d {
            ExpectDatum::Real(x) => format_real(*x),
            ExpectDatum::Bool(b) => if *b { "#t" } else { "#f" }.into(),
            ExpectDatum::Nil => "()".into(),
            ExpectDatum::Symbol(s) => s.clone(),
            ExpectDatum::Pair(a, b) => format!("({} . {})", show_expect(a), show_expect(b)),
        }
    }

    fn show_item(it: &TopItem) -> String {
        match it {
            TopItem::Define { name, expr, .. } => format!("(define {name} {})", show(expr)),
            TopItem::Rec(bs) => format!(
                "(rec {})",
                bs.iter()
                    .map(|b| format!("({} {})", b.name, show_lambda(&b.lambda)))
                    .collect::<Vec<_>>()
                    .join(" ")
            ),
            TopItem::Show { expr, expect, .. } => match expect {
                None => format!("(show {})", show(expr)),
                Some(x) => format!("(show {} ===> {})", show(expr), show_expect(&x.datum)),
            },
        }
    }

    fn show_program(p: &Program) -> String {
        p.items.iter().map(show_item).collect::<Vec<_>>().join("\n")
    }

    /// Expands `src` and renders the program.
    fn ex(src: &str) -> String {
        show_program(&prog(src))
    }

    /// Expands a single expression (that uses no library names).
    fn ex1(src: &str) -> String {
        let p = prog(src);
        assert_eq!(p.items.len(), 1, "{}", show_program(&p));
        match &p.items[0] {
            TopItem::Show { expr, .. } => show(expr),
            other => show_item(other),
        }
    }

    fn sp(line: u32, col: u32) -> Span {
        Span {
            file: FileId(1),
            line,
            col,
        }
    }

    #[test]
    fn constants_and_variables() {
        assert_eq!(ex1("3"), "'3");
        assert_eq!(ex1("#t"), "'#t");
        assert_eq!(ex1("'()"), "'()");
        assert_eq!(ex1("'(1 #f)"), "'(1 . (#f . ()))");
        assert_eq!(ex1("(quote (1 . 2))"), "'(1 . 2)");
        assert_eq!(ex1("x"), "x");
        assert_eq!(ex1("'3.5"), "'3.5");
    }

    #[test]
    fn exact_ast_with_spans() {
        let p = prog("(f 1\n   x)");
        let want = TopItem::Show {
            expr: Expr::App(
                Box::new(Expr::Var("f".into(), sp(1, 2))),
                Box::new(Expr::Cons(
                    Box::new(Expr::Const(Datum::Real(1.0), sp(1, 4))),
                    Box::new(Expr::Var("x".into(), sp(2, 4))),
                    sp(1, 4),
                )),
                sp(1, 1),
            ),
            expect: None,
            span: sp(1, 1),
        };
        assert_eq!(p.items, vec![want]);

        let p = prog("(lambda () 1)");
        let want = Expr::Lambda(Box::new(Lambda {
            param: Pattern::Const(Datum::Nil, sp(1, 9)),
            body: Expr::Const(Datum::Real(1.0), sp(1, 12)),
            span: sp(1, 1),
            name: None,
        }));
        assert!(matches!(&p.items[0], TopItem::Show { expr, .. } if *expr == want));
    }

    #[test]
    fn lambda_and_application_arity() {
        assert_eq!(ex1("(lambda () x)"), "(lambda '() x)");
        assert_eq!(ex1("(lambda (a) a)"), "(lambda a a)");
        assert_eq!(ex1("(lambda (a b c) a)"), "(lambda (cons a (cons b c)) a)");
        assert_eq!(ex1("(f)"), "(@ f '())");
        assert_eq!(ex1("(f a)"), "(@ f a)");
        assert_eq!(ex1("(f a b c)"), "(@ f (cons a (cons b c)))");
        assert_eq!(ex1("((g 1) 2)"), "(@ (@ g '1) '2)");
    }

    #[test]
    fn binding_forms() {
        assert_eq!(
            ex1("(let ((a 1) (b 2)) (+ a b))"),
            "(let ((a '1) (b '2)) (@ + (cons a b)))"
        );
        assert_eq!(ex1("(let () 5)"), "'5");
        assert_eq!(ex1("(let* () 5)"), "'5");
        assert_eq!(
            ex1("(let* ((a 1) (b a)) b)"),
            "(let ((a '1)) (let ((b a)) b))"
        );
        assert_eq!(
            ex1("(letrec ((f (lambda (x) (g x))) (g (lambda (y) (f y)))) (f 1))"),
            "(letrec ((f (lambda:f x (@ g x))) (g (lambda:g y (@ f y)))) (@ f '1))"
        );
        assert_eq!(
            ex1("(let loop ((i 0) (a 1)) (loop i a))"),
            "(@ (letrec ((loop (lambda:loop (cons i a) (@ loop (cons i a))))) loop) (cons '0 '1))"
        );
        // The initial values are outside the scope of the loop name.
        assert_eq!(
            ex1("(let loop ((i loop)) i)"),
            "(@ (letrec ((loop (lambda:loop i i))) loop) loop)"
        );
        assert_eq!(
            ex1("(let ((x 1)) (let ((list 2)) (list x)))"),
            "(let ((x '1)) (let ((list '2)) (@ list x)))"
        );
    }

    #[test]
    fn conditionals() {
        assert_eq!(ex1("(if a b c)"), "(if a b c)");
        assert_eq!(ex1("(cond (a 1) (b 2) (else 3))"), "(if a '1 (if b '2 '3))");
        assert_eq!(ex1("(cond (else 3))"), "'3");
        assert_eq!(ex1("(and)"), "'#t");
        assert_eq!(ex1("(and a)"), "a");
        assert_eq!(ex1("(and a b c)"), "(if a (if b c '#f) '#f)");
        assert_eq!(ex1("(or)"), "'#f");
        assert_eq!(ex1("(or a)"), "a");
        assert_eq!(
            ex1("(or a b c)"),
            "(let ((or tmp a)) (if or tmp or tmp (let ((or tmp b)) (if or tmp or tmp c))))"
        );
    }

    #[test]
    fn pair_construction() {
        assert_eq!(ex1("(cons a b)"), "(cons a b)");
        assert_eq!(ex1("(list)"), "'()");
        assert_eq!(ex1("(list a b)"), "(cons a (cons b '()))");
        assert_eq!(ex1("(cons*)"), "'()");
        assert_eq!(ex1("(cons* a)"), "a");
        assert_eq!(ex1("(cons* a b c)"), "(cons a (cons b c))");
        assert_eq!(
            ex1("(f cons)"),
            "(@ f (lambda:cons (cons x (cons) y (cons)) (cons x (cons) y (cons))))"
        );
        assert_eq!(ex1("(f cons*)"), "(@ f (lambda:cons* x (cons*) x (cons*)))");
        // Shadowed: an ordinary variable and call.
        assert_eq!(
            ex1("(lambda (cons) (cons 1 2))"),
            "(lambda cons (@ cons (cons '1 '2)))"
        );
        assert_eq!(
            ex1("(lambda (if) (if 1 2 3))"),
            "(lambda if (@ if (cons '1 (cons '2 '3))))"
        );
    }

    #[test]
    fn patterns() {
        assert_eq!(
            ex1("(lambda ((cons a b) (list c d) (cons* e f g)) a)"),
            "(lambda (cons (cons a b) (cons (cons c (cons d '())) (cons e (cons f g)))) a)"
        );
        assert_eq!(
            ex1("(lambda (1 #t '() '(1 2) (cons*) (cons* x)) 0)"),
            "(lambda (cons '1 (cons '#t (cons '() (cons '(1 . (2 . ())) (cons '() x))))) '0)"
        );
        assert_eq!(ex1("(let (((cons a b) p)) a)"), "(let (((cons a b) p)) a)");
    }

    #[test]
    fn definitions() {
        assert_eq!(ex("(define x 1) x"), "(define x '1)\n(show x)");
        assert_eq!(
            ex("(define (f a b) a)"),
            "(rec (f (lambda:f (cons a b) a)))"
        );
        assert_eq!(ex("(define (f) 1)"), "(rec (f (lambda:f '() '1)))");
        assert_eq!(
            ex("(define ((f a) b) (+ a b))"),
            "(rec (f (lambda:f a (lambda b (@ + (cons a b))))))"
        );
        assert_eq!(ex("(define f (lambda (x) x))"), "(rec (f (lambda:f x x)))");
        // `cons` as a value is a lambda, so it is hoisted like one.
        assert_eq!(
            ex("(define k cons) 1"),
            "(show '1)\n(rec (k (lambda:cons (cons x (cons) y (cons)) (cons x (cons) y (cons)))))"
        );
        // A top-level definition shadows a keyword in the whole program.
        assert_eq!(
            ex("(define (list x) x) (list 1 2)"),
            "(rec (list (lambda:list x x)))\n(show (@ list (cons '1 '2)))"
        );
    }

    #[test]
    fn expectations() {
        assert_eq!(ex("1 ===> 1"), "(show '1 ===> 1)");
        assert_eq!(
            ex("(f 1) ===> (forward 3 (perturbation 1)) 2 ===> (1 . #t)"),
            "(show (@ f '1) ===> (forward . (3 . ((perturbation . (1 . ())) . ()))))\n(show '2 ===> (1 . #t))"
        );
        err_at("===> 1", 1, 1, "`===>` must follow a top-level expression");
        err_at(
            "(define x 1) ===> 1",
            1,
            14,
            "`===>` must follow a top-level expression",
        );
        err_at(
            "1 ===> 1 ===> 2",
            1,
            10,
            "`===>` must follow a top-level expression",
        );
        err_at("1\n===>", 2, 1, "found end of file");
        err_at("1 ===> \"s\"", 1, 8, "VLAD has no strings");
        err_at(
            "(+ ===> 1)",
            1,
            4,
            "`===>` is only allowed after a top-level expression",
        );
    }

    #[test]
    fn expansion_errors() {
        let cases: &[(&str, (u32, u32), &str)] = &[
            ("'a", (1, 2), "cannot quote the symbol `a`: VLAD has no symbols as values"),
            ("'(1 b)", (1, 5), "VLAD has no symbols as values"),
            ("(quote 1 2)", (1, 1), "`quote` takes exactly one datum, found 2"),
            ("(if 1 2)", (1, 1), "if needs a condition and two arms: expected `(if c a b)`, found 2 subforms"),
            ("(if 1 2 3 4)", (1, 1), "if needs a condition and two arms"),
            ("(cond (a 1))", (1, 1), "cond needs an `(else expression)` clause as its last clause"),
            ("(cond)", (1, 1), "cond needs an `(else expression)` clause as its last clause, found no clauses"),
            ("(cond (else 1) (else 2))", (1, 7), "`else` clause before the end of `cond`"),
            ("(cond (a => f) (else 1))", (1, 7), "`=>` in `cond` clauses is not VLAD"),
            ("(cond (a) (else 1))", (1, 7), "expected a `cond` clause `(test expression)`"),
            ("(cons 1)", (1, 1), "`cons` takes exactly two arguments, found 1"),
            ("(cons 1 2 3)", (1, 1), "`cons` takes exactly two arguments, found 3"),
            ("(lambda (x) 1 2)", (1, 15), "a lambda body is exactly one expression, found 2"),
            ("(lambda (x))", (1, 1), "without a body"),
            ("(lambda x x)", (1, 9), "rest parameters are not VLAD"),
            ("(lambda (a . b) a)", (1, 9), "rest parameters are not VLAD"),
            ("(lambda (x y x) 1)", (1, 14), "`x` is bound twice in one parameter list"),
            ("(lambda ((cons x x)) 1)", (1, 18), "`x` is bound twice"),
            ("(let ((x 1) (x 2)) x)", (1, 14), "`x` is bound twice in one `let`"),
            ("(let ((x 1)) x x)", (1, 16), "a `let` body is exactly one expression, found 2"),
            ("(let ((x)) x)", (1, 7), "expected a `let` binding `(pattern expression)`"),
            ("(let x 1)", (1, 1), "found no body"),
            ("(letrec ((f (lambda (x) x)) (f (lambda (y) y))) f)", (1, 30), "`f` is bound twice in one `letrec`"),
            ("(letrec ((f 1)) f)", (1, 13), "`letrec` binds only procedures: expected a `(lambda ...)` for `f`, found the number 1"),
            ("(letrec (((cons a b) (lambda (x) x))) 1)", (1, 11), "expected a variable name in a `letrec` binding"),
            ("(let loop ((i 0) (i 1)) i)", (1, 19), "`i` is bound twice"),
            ("(lambda ((f x)) 1)", (1, 10), "expected a pattern"),
            ("(lambda ((cons a)) 1)", (1, 10), "a `(cons p q)` pattern has exactly two parts, found 1"),
            ("(lambda (()) 1)", (1, 10), "expected a pattern"),
            ("()", (1, 1), "found `()`: write '() for the empty list"),
            ("\"s\"", (1, 1), "strings appear only in `(include \"file\")`"),
            ("(a . b)", (1, 1), "found a dotted list"),
            ("(f lambda)", (1, 4), "found the keyword `lambda`: it is not a value"),
            ("(f list)", (1, 4), "found the keyword `list`"),
            ("else", (1, 1), "`else` is only allowed as the test of the last `cond` clause"),
            ("(f (define x 1))", (1, 4), "`define` is only allowed as a top-level form"),
            ("(f (include \"x\"))", (1, 4), "`include` is only allowed as a top-level form"),
            ("(define x)", (1, 1), "expected an expression after the symbol `x`"),
            ("(define x 1 2)", (1, 1), "a definition has exactly one body expression, found 2"),
            ("(define)", (1, 1), "found `(define)`"),
            ("(define 3 4)", (1, 9), "expected a name or `(name params ...)` after `define`"),
            ("(define (f . x) 1)", (1, 9), "rest parameters are not VLAD"),
            ("(define (f x x) 1)", (1, 14), "`x` is bound twice"),
            ("(define x 1)\n(define (x) 2)", (2, 1), "`x` is defined twice"),
            ("(include 3)", (1, 10), "expected a file name string"),
            ("(include)", (1, 1), "`include` takes exactly one file name string, found 0"),
        ];
        for (src, (line, col), msg) in cases {
            err_at(src, *line, *col, msg);
        }
        // The note points at the first definition.
        let e = err("(define x 1)\n(define x 2)");
        assert_eq!(e.notes, vec!["first defined at test.vlad:1:1".to_string()]);
    }

    #[test]
    fn top_level_order() {
        // Lambdas are hoisted to just before their first use; values and
        // expressions stay in order.
        assert_eq!(
            ex("(define a 1)\n(f a)\n(define (f x) (g x))\n(define (g y) (* a y))"),
            "(define a '1)\n(rec (g (lambda:g y (@ * (cons a y)))))\n(rec (f (lambda:f x (@ g x))))\n(show (@ f a))"
        );
        // Mutual recursion forms one group, in source order.
        assert_eq!(
            ex("(define (ev n) (od n)) (define (od n) (ev n)) (define (h) 1) (ev 3)"),
            "(rec (ev (lambda:ev n (@ od n))) (od (lambda:od n (@ ev n))))\n(show (@ ev '3))\n(rec (h (lambda:h '() '1)))"
        );
        // A lambda may refer to a value defined later if it is only used
        // after that value.
        assert_eq!(
            ex("(define (f) w) (define w 2) (f)"),
            "(define w '2)\n(rec (f (lambda:f '() w)))\n(show (@ f '()))"
        );
        // Unused groups go to the end, after their own dependencies.
        assert_eq!(
            ex("(define (u) (v)) (define (v) 1) 7"),
            "(show '7)\n(rec (v (lambda:v '() '1)))\n(rec (u (lambda:u '() (@ v '()))))"
        );
    }

    #[test]
    fn use_before_evaluation() {
        err_at(
            "(define x (+ x 1))",
            1,
            14,
            "`x` is used before its definition is evaluated",
        );
        err_at(
            "(define x y) (define y 1)",
            1,
            11,
            "`y` is used before its definition is evaluated",
        );
        err_at("w (define w 1)", 1, 1, "`w` is used before");
        let e = err("(define (f) w)\n(f)\n(define w 2)");
        assert_eq!(e.span, Some(sp(1, 13)));
        assert!(e
            .message
            .contains("`w` is used before its definition is evaluated"));
        assert!(
            e.notes
                .iter()
                .any(|n| n.contains("needed by `f`, which is used at test.vlad:2:2")),
            "{:?}",
            e.notes
        );
        // Indirectly, through another lambda.
        err_at(
            "(define (f) (g))\n(define (g) w)\n(f)\n(define w 2)",
            2,
            13,
            "`w` is used before",
        );
        // A value that closes over a later value.
        err_at(
            "(define k (let ((a 1)) (lambda (x) w)))\n(define w 2)",
            1,
            36,
            "`w` is used before",
        );
    }

    #[test]
    fn library_scoping() {
        // Only what is reached is kept; library code keeps its own names.
        let p = ex("(second '(1 2))");
        assert_eq!(
            p,
            "(rec (car (lambda:car (cons a d) a)))\n(rec (cdr (lambda:cdr (cons a d) d)))\n(rec (second (lambda:second l (@ car (@ cdr l)))))\n(show (@ second '(1 . (2 . ()))))"
        );
        // A user `car` shadows the library's, which the library still uses.
        let p = ex("(define (car x) 42) (car (second '(1 2)))");
        assert!(
            p.contains("(rec (car (std) (lambda:car (cons a d) a)))"),
            "{p}"
        );
        assert!(
            p.contains("(lambda:second l (@ car (std) (@ cdr l)))"),
            "{p}"
        );
        assert!(p.contains("(rec (car (lambda:car x '42)))"), "{p}");
        // Library references to primitives the program shadows are pinned.
        let p = ex("(define (sqrt x) x) (magnitude '(3 4))");
        assert!(p.contains("(@ #%sqrt (@ dot (cons v v)))"), "{p}");
        // A program defining its own library-like procedures works unchanged.
        let p = ex("(define (map f l) (if (null? l) '() (cons (f (car l)) (map f (cdr l))))) (map car '((1)))");
        assert!(p.contains("(rec (map (lambda:map"), "{p}");
        assert!(!p.contains("map (std)"), "{p}");
        // Nothing reached, nothing kept.
        assert_eq!(ex("1"), "(show '1)");
    }

    #[test]
    fn whole_library_expands() {
        let names = [
            "car",
            "cdr",
            "first",
            "second",
            "third",
            "fourth",
            "rest",
            "not",
            "abs",
            "sqr",
            "max",
            "min",
            "length",
            "list-ref",
            "append",
            "map",
            "map2",
            "map-n",
            "reduce",
            "equal?",
            "dot",
            "v+",
            "v-",
            "k*v",
            "magnitude",
            "magnitude-squared",
            "distance",
            "e",
            "j*",
            "derivative-F",
            "derivative-R",
            "gradient-F",
            "gradient-R",
        ];
        let src = names.iter().map(|n| format!("{n}\n")).collect::<String>();
        let p = prog(&src);
        let shows = p
            .items
            .iter()
            .filter(|i| matches!(i, TopItem::Show { .. }))
            .count();
        assert_eq!(shows, names.len());
        for n in names {
            assert!(
                p.items
                    .iter()
                    .any(|i| matches!(i, TopItem::Rec(bs) if bs.iter().any(|b| b.name == n))),
                "library lacks {n}"
            );
        }
        // Every library name is bound by an earlier item (ordering invariant).
        let mut bound: HashSet<String> = HashSet::new();
        for it in &p.items {
            match it {
                TopItem::Rec(bs) => {
                    for b in bs {
                        bound.insert(b.name.clone());
                    }
                    for b in bs {
                        for (v, _) in Expr::Lambda(Box::new(b.lambda.clone())).free_vars() {
                            assert!(!names.contains(&v.as_str()) || bound.contains(&v), "{v}");
                        }
                    }
                }
                TopItem::Show { expr, .. } => {
                    for (v, _) in expr.free_vars() {
                        assert!(bound.contains(&v), "{v}");
                    }
                }
                TopItem::Define { .. } => {}
            }
        }
    }

    #[test]
    fn free_vars_are_scope_aware() {
        let p = prog(
            "(lambda (x) (let ((y x) (z w)) (letrec ((f (lambda (a) (f y q)))) (cons z x2))))",
        );
        let e = match &p.items[0] {
            TopItem::Show { expr, .. } => expr,
            _ => panic!("expected a show"),
        };
        let fv: Vec<String> = e.free_vars().into_iter().map(|(n, _)| n).collect();
        assert_eq!(fv, vec!["w", "q", "x2"]);
    }

    /// A fresh directory under the system temp dir.
    fn temp_dir(tag: &str) -> PathBuf {
        let d = std::env::temp_dir().join(format!(
            "syntax-expand-{tag}-{}-{:?}",
            std::process::id(),
            std::thread::current().id()
        ));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(&d).unwrap_or_else(|e| panic!("{e}"));
        d
    }

    fn write(dir: &Path, name: &str, text: &str) -> PathBuf {
        let p = dir.join(name);
        if let Some(parent) = p.parent() {
            std::fs::create_dir_all(parent).unwrap_or_else(|e| panic!("{e}"));
        }
        std::fs::write(&p, text).unwrap_or_else(|e| panic!("{e}"));
        p
    }

    fn load_file(path: &Path, dirs: Vec<PathBuf>) -> Result<(SourceMap, Program), Diagnostic> {
        let mut map = SourceMap::new();
        let p = load_program(&mut map, path, &Options { include_dirs: dirs })?;
        Ok((map, p))
    }

    #[test]
    fn includes() {
        let d = temp_dir("inc");
        let main = write(
            &d,
            "main.vlad",
            "(include \"a\")\n(include \"b.vlad\")\n(include \"a\")\n(f (g 1))",
        );
        write(&d, "a.vlad", "(define (f x) x)\n(include \"b\")");
        write(&d, "b.vlad", "(define (g x) x)");
        let (map, p) = match load_file(&main, vec![]) {
            Ok(x) => x,
            Err(e) => panic!("{e:?}"),
        };
        assert_eq!(
            show_program(&p),
            "(rec (f (lambda:f x x)))\n(rec (g (lambda:g x x)))\n(show (@ f (@ g '1)))"
        );
        assert_eq!(map.path(FileId(0)), Path::new("<stdlib>"));
        assert_eq!(map.path(FileId(1)), main.as_path());
        assert!(map.path(FileId(3)).ends_with("b.vlad"));

        // -I directories, in order, after the including file's directory.
        let lib1 = d.join("lib1");
        let lib2 = d.join("lib2");
        write(&lib1, "m.vlad", "(define (m) 1)");
        write(&lib2, "m.vlad", "(define (m) 2)");
        write(&lib2, "n.vlad", "(define (n) 3)");
        let main2 = write(
            &d,
            "main2.vlad",
            "(include \"m\") (include \"n\") (+ (m) (n))",
        );
        let p = match load_file(&main2, vec![lib1.clone(), lib2.clone()]) {
            Ok((_, p)) => show_program(&p),
            Err(e) => panic!("{e:?}"),
        };
        assert!(
            p.contains("(lambda:m '() '1)") && p.contains("(lambda:n '() '3)"),
            "{p}"
        );

        // Missing include: names every path tried, at the include form.
        let main3 = write(&d, "main3.vlad", "1\n  (include \"nope\")");
        let e = match load_file(&main3, vec![lib1.clone()]) {
            Err(e) => e,
            Ok(_) => panic!("missing include accepted"),
        };
        assert_eq!(
            e.span,
            Some(Span {
                file: FileId(1),
                line: 2,
                col: 3
            })
        );
        assert!(
            e.message.contains("cannot find included file `nope.vlad`"),
            "{}",
            e.message
        );
        assert!(e
            .message
            .contains(&d.join("nope.vlad").display().to_string()));
        assert!(e
            .message
            .contains(&lib1.join("nope.vlad").display().to_string()));

        // Errors inside an included file point into that file.
        write(&d, "bad.vlad", "\n (if 1 2)");
        let main4 = write(&d, "main4.vlad", "(include \"bad\")");
        let (e, map) = {
            let mut map = SourceMap::new();
            let r = load_program(&mut map, &main4, &Options::default());
            (r.err(), map)
        };
        let e = e.unwrap_or_else(|| panic!("bad include accepted"));
        let rendered = e.render(&map);
        assert!(
            rendered.contains("bad.vlad:2:2: error: if needs"),
            "{rendered}"
        );

        // `===>` cannot reach across a file boundary.
        write(&d, "arrow.vlad", "===> 1");
        let main5 = write(&d, "main5.vlad", "1 (include \"arrow\")");
        assert!(load_file(&main5, vec![]).is_err());

        // Definitions in included files count for duplicates.
        write(&d, "dup.vlad", "(define (f) 1)");
        let main6 = write(&d, "main6.vlad", "(include \"dup\")\n(define f 2)");
        let e = match load_file(&main6, vec![]) {
            Err(e) => e,
            Ok(_) => panic!("duplicate accepted"),
        };
        assert!(e.message.contains("`f` is defined twice"));
        let _ = std::fs::remove_dir_all(&d);
    }

    #[test]
    fn include_cycle_and_missing_main() {
        let d = temp_dir("cycle");
        let a = write(&d, "a.vlad", "(include \"b\")");
        write(&d, "b.vlad", "(include \"a\")");
        let e = match load_file(&a, vec![]) {
            Err(e) => e,
            Ok(_) => panic!("cycle accepted"),
        };
        let a_s = a.display().to_string();
        let b_s = d.join("b.vlad").display().to_string();
        assert_eq!(e.message, format!("include cycle: {a_s} -> {b_s} -> {a_s}"));
        assert_eq!(e.span.map(|s| s.file), Some(FileId(2)));

        let self_inc = write(&d, "self.vlad", "(include \"self.vlad\")");
        assert!(load_file(&self_inc, vec![]).is_err());

        let missing = d.join("missing.vlad");
        let e = match load_file(&missing, vec![]) {
            Err(e) => e,
            Ok(_) => panic!("missing main accepted"),
        };
        assert_eq!(e.span, None);
        assert!(e
            .message
            .starts_with(&format!("cannot read {}: ", missing.display())));
        let _ = std::fs::remove_dir_all(&d);
    }
}

#[cfg(test)]
mod stress {
    use super::*;

    fn try_load(src: &str) -> Result<Program, Diagnostic> {
        let mut map = SourceMap::new();
        load_source(
            &mut map,
            Path::new("stress.vlad"),
            src.to_string(),
            &Options::default(),
        )
    }

    #[test]
    fn deepest_nesting_fits_the_stack() {
        let d = crate::reader::MAX_DEPTH - 3;
        let forms = [
            format!("{}1{}", "(f ".repeat(d), ")".repeat(d)),
            format!("{}x{}", "(lambda (x) ".repeat(d), ")".repeat(d)),
            format!("{}x{}", "(let ((x 1)) ".repeat(d), ")".repeat(d)),
            format!("{}x{}", "(let* ((x 1)) ".repeat(d), ")".repeat(d)),
            format!("{}1{}", "(or a ".repeat(d), ")".repeat(d)),
            format!(
                "{}1{}",
                "(cond (a ".repeat(d / 2),
                ") (else 1))".repeat(d / 2)
            ),
            format!("'{}1{}", "(".repeat(d - 1), ")".repeat(d - 1)),
            format!(
                "(lambda ({}x{}) x)",
                "(cons 1 ".repeat(d - 2),
                ")".repeat(d - 2)
            ),
        ];
        for src in &forms {
            if let Err(e) = try_load(src) {
                panic!("{}: {e:?}", &src[..40.min(src.len())]);
            }
        }
    }

    #[test]
    fn long_lists() {
        let n = 20000;
        let nums: String = (0..n).map(|i| format!("{i} ")).collect();
        for src in [
            format!("(list {nums})"),
            format!("'({nums})"),
            format!("(f {nums})"),
            format!(
                "(lambda ({}) 1)",
                (0..n).map(|i| format!("x{i} ")).collect::<String>()
            ),
        ] {
            assert!(try_load(&src).is_ok());
        }
    }

    #[test]
    fn random_programs_do_not_panic() {
        let words = [
            "(", ")", "(", ")", "define", "lambda", "let", "let*", "letrec", "if", "cond", "else",
            "and", "or", "cons", "list", "cons*", "quote", "'", "x", "y", "f", "1", "#t", "===>",
            ".", "include", "\"s\"", "car", "map", "[", "]", "loop", "()", "=>",
        ];
        let mut s: u64 = 0x2545f4914f6cdd1d;
        for _ in 0..1000 {
            let mut src = String::new();
            s ^= s << 13;
            s ^= s >> 7;
            s ^= s << 17;
            let len = s % 30;
            for _ in 0..len {
                s ^= s << 13;
                s ^= s >> 7;
                s ^= s << 17;
                src.push_str(words[(s % words.len() as u64) as usize]);
                src.push(' ');
            }
            // Close what is open, so that more programs get past the reader.
            let opens = src
                .matches('(')
                .count()
                .saturating_sub(src.matches(')').count());
            src.push_str(&")".repeat(opens));
            let _ = try_load(&src);
        }
    }
}
