//! `stalingrad build --lib`: top-level procedures as C functions over
//! arrays of doubles (docs/library.md).
//!
//! Each `--export "NAME SHAPE..."` is compiled as a program of its own:
//! the source's definitions (its top-level expressions are dropped), then
//!
//! ```text
//! (define result (NAME (read-real) (list (read-real) (read-real)) ...))
//! (define end (read-real))
//! result
//! ```
//!
//! with one `(read-real)` per `real` of the shapes. The flow analysis
//! thus sees exactly what a call from C gives, unknown reals of a fixed
//! shape, and its abstract value of `result` is the export's result
//! layout: it must be reals, `()` and pairs only (no union, boolean or
//! procedure), or the build fails naming the export. The library runtime
//! (`runtime/src/library.rs`) reads the arguments from the caller's array,
//! takes the second read as the end of the call, and captures the reals
//! the final print writes, in the order printing visits them: depth first,
//! left to right, the order the header documents. Reals the analysis
//! knows are written by the C entry (`codegen::lib_export`).

use base::diag::Diagnostic;
use codegen::lib_export::{self, Export, Kind, Leaf};
use driver::Session;
use flow::{Av, AvId};
use std::path::{Path, PathBuf};

/// The shape of an argument: one real, a list of shapes, or a vector of
/// run-time length whose elements have one shape.
#[derive(Clone, Debug, PartialEq)]
pub enum Shape {
    Real,
    List(Vec<Shape>),
    Vector(Box<Shape>),
}

impl Shape {
    fn has_vector(&self) -> bool {
        match self {
            Shape::Real => false,
            Shape::List(items) => items.iter().any(Shape::has_vector),
            Shape::Vector(_) => true,
        }
    }
}

/// One `--export` as given: the procedure and its arguments' shapes.
#[derive(Clone, Debug, PartialEq)]
pub struct Spec {
    pub name: String,
    pub args: Vec<Shape>,
}

/// Reads `NAME SHAPE...`, where a shape is `real` or `(SHAPE ...)`.
pub fn parse_spec(text: &str) -> Result<Spec, String> {
    let bad = |why: &str| {
        format!("error: --export `{text}`: {why} (expected `NAME SHAPE...`, each shape `real`, `(vector SHAPE)` or a parenthesised list of shapes, as in `saddle (real real)`)")
    };
    let forms = syntax::reader::read_str(text, base::diag::FileId(0))
        .map_err(|d| bad(d.message.as_str()))?;
    let mut forms = forms.into_iter();
    let name = match forms.next().map(|f| f.kind) {
        Some(syntax::sexp::SexpKind::Symbol(s)) => s,
        _ => return Err(bad("it does not start with a procedure name")),
    };
    fn shape(f: &syntax::sexp::Sexp) -> Option<Shape> {
        match &f.kind {
            syntax::sexp::SexpKind::Symbol(s) if s == "real" => Some(Shape::Real),
            syntax::sexp::SexpKind::List(items)
                if items.len() == 2 && items[0].symbol() == Some("vector") =>
            {
                shape(&items[1]).map(|e| Shape::Vector(Box::new(e)))
            }
            syntax::sexp::SexpKind::List(items) => items
                .iter()
                .map(shape)
                .collect::<Option<_>>()
                .map(Shape::List),
            _ => None,
        }
    }
    let args = forms
        .map(|f| shape(&f))
        .collect::<Option<Vec<_>>>()
        .ok_or_else(|| bad("a shape is neither `real`, `(vector SHAPE)` nor a list of shapes"))?;
    Ok(Spec { name, args })
}

/// The call's text with `(read-real)` per real, and with `args[i]` per
/// real for the header.
fn call_texts(spec: &Spec) -> (String, String, usize) {
    fn go(s: &Shape, read: &mut String, doc: &mut String, n: &mut usize) {
        match s {
            Shape::Real => {
                read.push_str(" (read-real)");
                doc.push_str(&format!(" args[{n}]"));
                *n += 1;
            }
            // Its length, then its elements, read in index order (an
            // export over vectors documents its shapes instead).
            Shape::Vector(e) => {
                read.push_str(" (build-vector (read-real) (lambda (i)");
                let mut none = 0;
                go(e, read, &mut String::new(), &mut none);
                read.push_str("))");
            }
            Shape::List(items) => {
                read.push_str(" (list");
                doc.push_str(" (");
                let mark = doc.len();
                for i in items {
                    go(i, read, doc, n);
                }
                read.push(')');
                // `( args[0]` reads better as `(args[0]`.
                if doc.len() > mark {
                    doc.remove(mark);
                }
                doc.push(')');
            }
        }
    }
    let (mut read, mut doc, mut n) = (format!("({}", spec.name), format!("({}", spec.name), 0);
    for a in &spec.args {
        go(a, &mut read, &mut doc, &mut n);
    }
    read.push(')');
    doc.push(')');
    (read, doc, n)
}

/// The generated definitions' names.
const RESULT: &str = "stalingrad-export-result";
const END: &str = "stalingrad-export-end";
const WRITE: &str = "stalingrad-export-write";

/// What [`result_layout`] calls a vector: a result that makes the export
/// one over vectors.
const VECTOR: &str = "a vector";

/// The main of an export over vectors: its result is written real by real
/// with `write-real`, each vector as its length and then its elements, by
/// the last top-level expression (whose own value, `()`, prints no real).
/// `real` keeps reals the analysis knows from being printed as text,
/// which the library would not capture.
fn dynamic_main(read_call: &str) -> String {
    format!(
        "(define {RESULT} {read_call})\n\
         (define {END} (read-real))\n\
         (define ({WRITE} v)\n\
         \x20 (cond ((real? v) (let ((x (write-real (real v)))) '()))\n\
         \x20       ((pair? v) (let ((a ({WRITE} (car v)))) ({WRITE} (cdr v))))\n\
         \x20       ((vector? v)\n\
         \x20        (let ((n (write-real (real (vector-length v)))))\n\
         \x20          (vector-fold (lambda (acc x) ({WRITE} x)) '() v)))\n\
         \x20       (else '())))\n\
         ({WRITE} {RESULT})\n"
    )
}

/// The result of an export over vectors, as the header shows it, or what
/// it is instead: reals, `()`, pairs and vectors of such.
fn dynamic_layout(dom: &flow::Domain, av: AvId) -> Result<String, String> {
    Ok(match dom.get(av) {
        Av::Real(_) => "real".into(),
        Av::Nil => "()".into(),
        Av::Pair(a, b) => format!(
            "(cons {} {})",
            dynamic_layout(dom, *a)?,
            dynamic_layout(dom, *b)?
        ),
        Av::Vector(e, _) => format!("(vector {})", dynamic_layout(dom, *e)?),
        Av::Bool(_) => return Err("a boolean".into()),
        Av::Union(_) => {
            return Err("a value whose shape is only known at run time (a list of run-time length, or a choice of shapes)".into())
        }
        Av::Bottom => return Err("nothing: the call never returns".into()),
        Av::Prim(_) | Av::Closure(..) => return Err("a procedure".into()),
        Av::Wrap(..) | Av::Bundle(..) => return Err("a value tagged by differentiation".into()),
        Av::Leaf(l, _) => match *l {},
    })
}

/// The result's reals and its shape's text, or what it is instead.
fn result_layout(dom: &flow::Domain, av: AvId) -> Result<(Vec<Leaf>, String), String> {
    fn go(
        dom: &flow::Domain,
        av: AvId,
        leaves: &mut Vec<Leaf>,
        text: &mut String,
    ) -> Result<(), String> {
        match dom.get(av) {
            Av::Real(bits) => {
                text.push_str(&format!("results[{}]", leaves.len()));
                leaves.push(bits.map_or(Leaf::Computed, Leaf::Constant));
                Ok(())
            }
            Av::Nil => {
                text.push_str("()");
                Ok(())
            }
            Av::Pair(..) => {
                text.push('(');
                let mut cur = av;
                let mut first = true;
                loop {
                    match dom.get(cur) {
                        Av::Pair(a, b) => {
                            if !first {
                                text.push(' ');
                            }
                            first = false;
                            go(dom, *a, leaves, text)?;
                            cur = *b;
                        }
                        Av::Nil => break,
                        _ => {
                            text.push_str(" . ");
                            go(dom, cur, leaves, text)?;
                            break;
                        }
                    }
                }
                text.push(')');
                Ok(())
            }
            Av::Bool(_) => Err("a boolean".into()),
            Av::Union(_) => {
                Err("a value whose shape is only known at run time (a list of run-time length, or a choice of shapes)".into())
            }
            Av::Bottom => Err("nothing: the call never returns".into()),
            Av::Prim(_) | Av::Closure(..) => Err("a procedure".into()),
            Av::Wrap(..) | Av::Bundle(..) => Err("a value tagged by differentiation".into()),
            Av::Vector(..) => Err(VECTOR.into()),
            Av::Leaf(l, _) => match *l {},
        }
    }
    let (mut leaves, mut text) = (Vec::new(), String::new());
    go(dom, av, &mut leaves, &mut text)?;
    Ok((leaves, text))
}

/// Compiles one export to an object whose entry is `body_symbol`: over
/// vectors when its arguments hold one, or when its result turns out to.
fn compile_export(
    file: &Path,
    include: &[PathBuf],
    spec: &Spec,
    prefix: &str,
    index: usize,
) -> Result<Export, String> {
    let _export = base::timing::span(format!("export {}", spec.name));
    let dynamic = spec.args.iter().any(Shape::has_vector);
    match compile_as(file, include, spec, prefix, index, dynamic) {
        Err(Failure::ResultHasVector) => compile_as(file, include, spec, prefix, index, true),
        other => other,
    }
    .map_err(|f| match f {
        Failure::Message(m) => m,
        Failure::ResultHasVector => format!(
            "error: internal error: export `{}`: its result holds a vector",
            spec.name
        ),
    })
}

/// Why an export did not compile.
enum Failure {
    Message(String),
    /// Compiled with a result of fixed length, it returns a vector.
    ResultHasVector,
}

/// What an export's result is, as the C entry writes it.
enum Layout {
    Fixed(Vec<Leaf>, String),
    Dynamic(String),
}

fn compile_as(
    file: &Path,
    include: &[PathBuf],
    spec: &Spec,
    prefix: &str,
    index: usize,
    dynamic: bool,
) -> Result<Export, Failure> {
    let mut session = Session::for_forms(include.to_vec());
    let render = |d: &Diagnostic, session: &Session| Failure::Message(session.render(d));
    let text = std::fs::read_to_string(file)
        .map_err(|e| Failure::Message(format!("error: cannot read {}: {e}", file.display())))?;
    let forms = session
        .read_forms(file.to_path_buf(), text)
        .map_err(|d| render(&d, &session))?;
    let forms = session
        .splice_includes(forms)
        .map_err(|d| render(&d, &session))?;
    let mut kept: Vec<syntax::sexp::Sexp> = forms
        .into_iter()
        .filter(|f| syntax::expand::defined_name(f).is_some())
        .collect();
    let Some(definition) = kept
        .iter()
        .find(|f| syntax::expand::defined_name(f).as_deref() == Some(spec.name.as_str()))
    else {
        return Err(Failure::Message(format!(
            "error: export `{}`: {} has no top-level definition of that name",
            spec.name,
            file.display()
        )));
    };
    if let Some(params) = parameters(definition) {
        if params.len() != spec.args.len() {
            let example: Vec<&str> = params.iter().map(|_| "real").collect();
            let message = format!(
                "export `{}` takes {} ({}), but {} shape{} given: give one shape per argument, as in --export \"{} {}\"",
                spec.name,
                match params.len() {
                    1 => "1 argument".to_string(),
                    n => format!("{n} arguments"),
                },
                params.join(" "),
                spec.args.len(),
                if spec.args.len() == 1 { " is" } else { "s are" },
                spec.name,
                example.join(" ")
            );
            return Err(render(&Diagnostic::at(definition.span, message), &session));
        }
    }
    let (read_call, doc_call, n_args) = call_texts(spec);
    let main = if dynamic {
        dynamic_main(&read_call)
    } else {
        format!("(define {RESULT} {read_call})\n(define {END} (read-real))\n{RESULT}\n")
    };
    let main_name = PathBuf::from(format!("<export {}>", spec.name));
    kept.extend(
        session
            .read_forms(main_name, main)
            .map_err(|d| render(&d, &session))?,
    );
    let ast = session.expand(&kept).map_err(|d| render(&d, &session))?;
    let prog = session.core(&ast).map_err(|d| render(&d, &session))?;
    let mut needs_dynamic = false;
    let check = |analysis: &flow::Analysis| {
        let result = result_av(analysis, dynamic).ok_or_else(|| {
            Diagnostic::new(
                None,
                format!(
                    "internal error: export `{}`: the result's binding was not found",
                    spec.name
                ),
            )
        })?;
        let dom = &analysis.ops.dom;
        let layout = if dynamic {
            dynamic_layout(dom, result).map(Layout::Dynamic)
        } else {
            result_layout(dom, result).map(|(leaves, text)| Layout::Fixed(leaves, text))
        };
        layout.map_err(|what| {
            if what == VECTOR {
                needs_dynamic = true;
            }
            Diagnostic::new(None, format!(
                "export `{}`: its result must be reals in lists of fixed shape and vectors of them, but for arguments of the shapes given it is {what}",
                spec.name
            ))
        })
    };
    let compiled = session.compile_checked(prog, check);
    if needs_dynamic {
        return Err(Failure::ResultHasVector);
    }
    let (module, layout) = compiled.map_err(|d| render(&d, &session))?;
    let body_symbol = format!(
        "vlad_export{index}_{}",
        lib_export::c_identifier(&spec.name)
    );
    let out = session
        .codegen_export(&module, &body_symbol)
        .map_err(|e| Failure::Message(format!("error: {e}")))?;
    let (results, result_text) = match layout {
        Layout::Fixed(leaves, text) => (leaves, text),
        Layout::Dynamic(text) => (Vec::new(), text),
    };
    Ok(Export {
        name: spec.name.clone(),
        c_name: format!("{prefix}_{}", lib_export::c_identifier(&spec.name)),
        body_symbol,
        object: out.object,
        n_args,
        call_text: if dynamic { spec_text(spec) } else { doc_call },
        results,
        result_text,
        dynamic,
    })
}

/// The call an export over vectors documents: its shapes, as given.
fn spec_text(spec: &Spec) -> String {
    fn go(s: &Shape, out: &mut String) {
        match s {
            Shape::Real => out.push_str("real"),
            Shape::Vector(e) => {
                out.push_str("(vector ");
                go(e, out);
                out.push(')');
            }
            Shape::List(items) => {
                out.push('(');
                for (i, x) in items.iter().enumerate() {
                    if i > 0 {
                        out.push(' ');
                    }
                    go(x, out);
                }
                out.push(')');
            }
        }
    }
    let mut out = format!("({}", spec.name);
    for a in &spec.args {
        out.push(' ');
        go(a, &mut out);
    }
    out.push(')');
    out
}

/// The parameters of `(define (NAME p ...) body)`, as written; `None` for
/// any other definition (a value, a curried head), whose arguments the
/// analysis finds.
fn parameters(definition: &syntax::sexp::Sexp) -> Option<Vec<String>> {
    let form = definition.list()?;
    let head = form.get(1)?.list()?;
    head.first()?.symbol()?;
    Some(
        head[1..]
            .iter()
            .map(|p| match p.symbol() {
                Some(s) => s.to_string(),
                None => "...".to_string(),
            })
            .collect(),
    )
}

/// The abstract value of the result: the value the program's last
/// top-level expression shows (the generated `result`), or, for an export
/// over vectors, its argument (`(write result)`).
fn result_av(a: &flow::Analysis, dynamic: bool) -> Option<AvId> {
    let prog = &a.ops.prog;
    let shown = prog.main.iter().rev().find_map(|s| match s {
        ir::Stmt::Show { var, .. } => Some(*var),
        _ => None,
    })?;
    let binds: Vec<&ir::Binding> = prog
        .main
        .iter()
        .filter_map(|s| match s {
            ir::Stmt::Bind(b) => Some(b),
            _ => None,
        })
        .collect();
    let position = |v: ir::Var| binds.iter().position(|b| b.var == v);
    let var = if dynamic {
        match &binds[position(shown)?].rhs {
            ir::Rhs::App { arg, .. } => *arg,
            _ => return None,
        }
    } else {
        shown
    };
    a.main.get(position(var)?).map(|info| info.av)
}

/// The library's name prefix: the output's file name without `lib` and
/// the extension, spelled for C.
pub fn prefix_of(output: &Path) -> String {
    let stem = output
        .file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_default();
    let stem = stem.strip_prefix("lib").unwrap_or(&stem);
    lib_export::c_identifier(stem)
}

/// What `build --lib` was asked.
pub struct Request<'a> {
    pub file: &'a Path,
    pub include: &'a [PathBuf],
    pub exports: &'a [String],
    pub output: Option<PathBuf>,
    pub header: Option<PathBuf>,
    pub keep_temps: bool,
}

/// Builds the library and its header; returns the paths written, or the
/// error's whole text (`file:line:col: error: ...` or `error: ...`).
pub fn build(r: &Request) -> Result<(PathBuf, PathBuf), String> {
    if r.exports.is_empty() {
        return Err("error: --lib needs at least one --export \"NAME SHAPE...\"".into());
    }
    let output = r.output.clone().unwrap_or_else(|| {
        let stem = r
            .file
            .file_stem()
            .map(|s| s.to_string_lossy().into_owned())
            .unwrap_or_else(|| "vlad".into());
        PathBuf::from(format!("lib{stem}.so"))
    });
    let kind = match output.extension().and_then(|e| e.to_str()) {
        Some("a") => Kind::Static,
        Some("so") => Kind::Shared,
        _ => {
            return Err(format!(
                "error: --lib: the output {} must end in .so (shared) or .a (static)",
                output.display()
            ))
        }
    };
    let prefix = prefix_of(&output);
    let mut exports = Vec::new();
    for (i, text) in r.exports.iter().enumerate() {
        let spec = parse_spec(text)?;
        let e = compile_export(r.file, r.include, &spec, &prefix, i)?;
        if let Some(other) = exports.iter().find(|o: &&Export| o.c_name == e.c_name) {
            return Err(format!(
                "error: exports `{}` and `{}` would both be the C function `{}`",
                other.name, e.name, e.c_name
            ));
        }
        exports.push(e);
    }
    let header = r
        .header
        .clone()
        .unwrap_or_else(|| output.with_extension("h"));
    let source = r
        .file
        .file_name()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_default();
    std::fs::write(&header, lib_export::header(&prefix, &source, &exports))
        .map_err(|e| format!("error: cannot write {}: {e}", header.display()))?;
    let dir = base::timing::time("link", || {
        lib_export::link_library(&prefix, &exports, &output, kind, r.keep_temps)
    })
    .map_err(|e| format!("error: {e}"))?;
    if r.keep_temps {
        eprintln!("kept temporary files in {}", dir.display());
    }
    Ok((output, header))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn specs() {
        let s = parse_spec("saddle (real real) real").unwrap();
        assert_eq!(s.name, "saddle");
        assert_eq!(
            s.args,
            vec![Shape::List(vec![Shape::Real, Shape::Real]), Shape::Real]
        );
        let (read, doc, n) = call_texts(&s);
        assert_eq!(read, "(saddle (list (read-real) (read-real)) (read-real))");
        assert_eq!(doc, "(saddle (args[0] args[1]) args[2])");
        assert_eq!(n, 3);
        let v = parse_spec("lse (vector real) (vector (real real))").unwrap();
        assert_eq!(
            v.args,
            vec![
                Shape::Vector(Box::new(Shape::Real)),
                Shape::Vector(Box::new(Shape::List(vec![Shape::Real, Shape::Real])))
            ]
        );
        let (read, doc, _) = call_texts(&v);
        assert_eq!(
            read,
            "(lse (build-vector (read-real) (lambda (i) (read-real))) \
             (build-vector (read-real) (lambda (i) (list (read-real) (read-real)))))"
        );
        assert_eq!(doc, "(lse)");
        assert_eq!(spec_text(&v), "(lse (vector real) (vector (real real)))");
        assert!(parse_spec("f (vector)").is_err());
        assert!(parse_spec("f int").is_err());
        assert!(parse_spec("(f) real").is_err());
        assert!(parse_spec("").is_err());
        assert_eq!(parse_spec("f").unwrap().args, vec![]);
    }

    #[test]
    fn prefixes() {
        assert_eq!(prefix_of(Path::new("out/libparticle.so")), "particle");
        assert_eq!(prefix_of(Path::new("my-lib.a")), "my_lib");
    }
}
