//! S-expressions to the core AST: includes, derived forms, top-level order.
//!
//! [`load_program`] does everything the front end does after reading:
//!
//! 1. **Loading.** The embedded standard library becomes file 0
//!    (`<stdlib>`); the user's file and everything it `include`s are read
//!    and spliced into one sequence of top-level forms. A file is included
//!    at most once (by canonical path), a cycle is an error naming the
//!    chain.
//! 2. **Expansion.** Every form of docs/reference.md becomes the small core
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

use crate::ast::{self, Datum, Expr, Lambda, Name, Pattern, Program, RecBinding, TopItem};
use crate::reader;
use crate::sexp::{Sexp, SexpKind};
use base::diag::{Diagnostic, FileId, SourceMap, Span};
use ir::{Expect, ExpectDatum};

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
    // A thread whose stack is already that large (the driver's) expands
    // here: under an address-space cap there may be no room for another.
    if base::stack::size_mib() >= EXPAND_STACK >> 20 {
        return load_source_here(map, path, text, opts);
    }
    let spawned = std::thread::scope(|s| {
        let worker = std::thread::Builder::new()
            .name("expand".into())
            .stack_size(EXPAND_STACK)
            .spawn_scoped(s, || load_source_here(map, path, text.clone(), opts))
            .ok()?;
        Some(match worker.join() {
            Ok(r) => r,
            Err(panic) => std::panic::resume_unwind(panic),
        })
    });
    match spawned {
        Some(r) => r,
        // No room for the thread's stack (an address-space cap): expand
        // here; the reader's nesting bound keeps the recursion modest.
        None => load_source_here(map, path, text, opts),
    }
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

/// The name a top-level `(define ...)` form defines, if `form` is a
/// well-formed one (a REPL replaces an earlier definition of that name).
pub fn defined_name(form: &Sexp) -> Option<Name> {
    define_name(form).ok().flatten().map(|(name, _)| name)
}

/// Replaces every `(include "name")` among `forms` (read from files
/// already in `map`) by the forms of the file it names, recursively, as
/// [`load_program`] does; includes are looked up from the directory of the
/// file the include is written in, then in `opts.include_dirs`.
pub fn splice_includes(
    map: &mut SourceMap,
    forms: Vec<Sexp>,
    opts: &Options,
) -> Result<Vec<Sexp>, Diagnostic> {
    let mut loader = Loader {
        opts,
        done: HashSet::new(),
        chain: Vec::new(),
        forms: Vec::new(),
    };
    for d in forms {
        match include_target(&d)? {
            Some(name) => loader.include(map, d.span.file, &d, &name)?,
            None => loader.forms.push(TopForm::Form(d)),
        }
    }
    Ok(loader
        .forms
        .into_iter()
        .filter_map(|f| match f {
            TopForm::Form(d) => Some(d),
            TopForm::Barrier => None,
        })
        .collect())
}

/// A source map holding the standard library as file 0, for
/// [`expand_forms`].
pub fn library_map() -> SourceMap {
    let mut map = SourceMap::new();
    map.add(PathBuf::from("<stdlib>"), STDLIB.to_string());
    map
}

/// Expands top-level forms already read (and spliced by
/// [`splice_includes`]) with the standard library, as [`load_program`]
/// does for a file: a REPL keeps the forms of its session and expands them
/// with each new input. `map` must come from [`library_map`]. A `===>`
/// only attaches to an expression of the same file. Expands on the
/// caller's thread, so that thread needs a stack like the driver's
/// (expansion recurses once per nesting level, up to
/// [`reader::MAX_DEPTH`]).
pub fn expand_forms(map: &SourceMap, forms: &[Sexp]) -> Result<Program, Diagnostic> {
    let lib_id = FileId(0);
    if map.is_empty() || map.path(lib_id) != Path::new("<stdlib>") {
        return Err(Diagnostic::new(
            None,
            "internal error: the source map does not start with the library",
        ));
    }
    let lib_forms: Vec<TopForm> = reader::read_file(map, lib_id)?
        .into_iter()
        .map(TopForm::Form)
        .collect();
    let mut user_forms = Vec::new();
    let mut file = None;
    for d in forms {
        if file != Some(d.span.file) {
            user_forms.push(TopForm::Barrier);
            file = Some(d.span.file);
        }
        user_forms.push(TopForm::Form(d.clone()));
    }
    user_forms.push(TopForm::Barrier);
    expand_program(map, &lib_forms, &user_forms)
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

mod expr;
mod order;
mod top;

use expr::*;
use order::*;
use top::*;
#[cfg(test)]
mod stress;
#[cfg(test)]
mod tests;
