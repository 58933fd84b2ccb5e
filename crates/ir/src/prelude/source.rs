//! The AD prelude's source: the transformed primitives written by hand in
//! `prelude.vlad`, and the templates that give the others. Each entry is
//! read, expanded and lowered here, the first time a program of the
//! process needs it, into the [`crate::prelude::Prelude`] that crate `ad` copies entries
//! from: the AD transformations never see source text.

use std::sync::OnceLock;

use crate::anf;
use crate::{LambdaId, Origin, Prim, PrimKind, Program, Tag};
use base::diag::{Diagnostic, FileId};
use syntax::sexp::{Sexp, SexpKind};
use syntax::{expand, reader};

const PRELUDE: &str = include_str!("prelude.vlad");

/// `prelude.vlad`, read once.
fn parsed() -> &'static Result<Vec<Sexp>, Diagnostic> {
    static PARSED: OnceLock<Result<Vec<Sexp>, Diagnostic>> = OnceLock::new();
    PARSED.get_or_init(|| reader::read_str(PRELUDE, FileId(0)))
}

/// Lowers `tag(prim)` into `code` and returns its lambda, creating
/// everything the entry refers to and nothing else.
pub(super) fn entry(code: &mut Program, tag: Tag, prim: Prim) -> Result<LambdaId, Diagnostic> {
    let sexp = match template(tag, prim) {
        Some(src) => reader::read_str(&src, FileId(0))?
            .pop()
            .ok_or_else(|| Diagnostic::new(None, "empty template"))?,
        None => written(parsed().as_ref().map_err(Clone::clone)?, tag, prim)?,
    };
    let lam = expand::expand_closed_lambda(&sexp)?;
    let l = anf::lower_closed_lambda(code, &lam, Origin::PrimTransform { tag, prim })?;
    code.lambdas[l].name = Some(format!("{}^{}", prim.name(), tag.letter()));
    Ok(l)
}

/// The VLAD source of `tag(prim)` when it follows a template.
fn template(tag: Tag, prim: Prim) -> Option<String> {
    let p = prim.name();
    Some(match tag {
        // In these worlds a primitive computes what it computes untagged.
        Tag::Perturb => format!("(lambda (v) (perturb ({p} (unperturb v))))"),
        Tag::Sensitize => format!("(lambda (v) (sensitize ({p} (unsensitize v))))"),
        Tag::Forward => match prim.kind() {
            PrimKind::Compare | PrimKind::Predicate => {
                format!("(lambda (v) (let ((r ({p} (primal v)))) (bundle r (perturb r))))")
            }
            PrimKind::Shape => {
                format!("(lambda (v) (let ((r ({p} (primal v)))) (bundle r (perturb (zero r)))))")
            }
            PrimKind::Ad if matches!(prim, Prim::Bundle | Prim::Plus) => format!(
                "(lambda (v) (let (((cons a b) (primal v)) ((cons da db) (unperturb (tangent v)))) \
                 (bundle ({p} a b) (perturb ({p} da db)))))"
            ),
            // The remaining AD operations are linear in their argument.
            PrimKind::Ad => format!(
                "(lambda (v) (bundle ({p} (primal v)) (perturb ({p} (unperturb (tangent v))))))"
            ),
            _ => return None,
        },
        Tag::Reverse => match prim.kind() {
            PrimKind::Compare | PrimKind::Predicate | PrimKind::Shape => format!(
                "(lambda (v) (let ((x (*j-inverse v))) \
                 (cons (*j ({p} x)) (lambda (s) (sensitize (cons '() (zero x)))))))"
            ),
            _ => return None,
        },
    })
}

/// The hand-written entry `(TAG PRIM LAMBDA)` of `prelude.vlad`.
fn written(data: &[Sexp], tag: Tag, prim: Prim) -> Result<Sexp, Diagnostic> {
    for d in data {
        if let SexpKind::List(v) = &d.kind {
            if v.len() == 3
                && v[0].symbol() == Some(tag.name())
                && v[1].symbol() == Some(prim.name())
            {
                return Ok(v[2].clone());
            }
        }
    }
    Err(Diagnostic::new(None, "no such entry"))
}

#[cfg(test)]
mod tests {
    use super::*;

    const TAGS: [Tag; 4] = [Tag::Perturb, Tag::Forward, Tag::Sensitize, Tag::Reverse];

    /// Every transformed primitive builds and copies into a program as a
    /// closed lambda: the prelude is complete and well formed.
    #[test]
    fn every_entry_builds() {
        let prelude = crate::prelude::shared();
        let mut prog = Program::default();
        for tag in TAGS {
            for p in Prim::ALL {
                let l = prelude.instantiate(&mut prog, tag, *p);
                let l = l.unwrap_or_else(|e| panic!("{} {}: {e}", tag.name(), p.name()));
                assert!(prog.lambdas[l].free.is_empty());
                assert_eq!(
                    prog.lambdas[l].origin,
                    Origin::PrimTransform { tag, prim: *p }
                );
            }
        }
    }

    /// A copied entry is numbered as lowering it into the program would
    /// number it, wherever the prelude had built it: dumps of transformed
    /// code do not depend on which program needed an entry first.
    #[test]
    fn a_copy_is_the_lowering() {
        let prelude = crate::prelude::shared();
        let (mut copied, mut lowered) = (Program::default(), Program::default());
        for (tag, p) in [(Tag::Reverse, Prim::Mul), (Tag::Forward, Prim::IfProcedure)] {
            let a = prelude.instantiate(&mut copied, tag, p);
            let b = entry(&mut lowered, tag, p).unwrap_or_else(|e| panic!("{e}"));
            assert_eq!(a, Ok(b));
        }
        assert!(copied.lambdas.len() > 2);
        assert_eq!(
            crate::print::program(&copied),
            crate::print::program(&lowered)
        );
        assert_eq!(copied.vars.len(), lowered.vars.len());
        assert_eq!(copied.consts.len(), lowered.consts.len());
        assert_eq!(copied.patterns.len(), lowered.patterns.len());
    }
}
