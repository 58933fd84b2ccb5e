//! The transformed primitives: `prelude.vlad` plus templates.

use crate::AdMemo;
use base::diag::{Diagnostic, FileId};
use ir::{LambdaId, Origin, Prim, PrimKind, Program, Tag};
use std::sync::OnceLock;
use syntax::sexp::{Sexp, SexpKind};

const PRELUDE: &str = include_str!("prelude.vlad");

/// `tag(prim)` as a closed lambda of `prog`, built once per program.
///
/// Panics only if the embedded prelude itself is malformed, which the unit
/// tests of this crate rule out.
pub fn prim_transform(prog: &mut Program, memo: &mut AdMemo, tag: Tag, prim: Prim) -> LambdaId {
    if let Some(&l) = memo.prims.get(&(tag, prim)) {
        return l;
    }
    let l = build(prog, tag, prim)
        .unwrap_or_else(|e| panic!("AD prelude entry {} {}: {e}", tag.name(), prim.name()));
    memo.prims.insert((tag, prim), l);
    l
}

fn build(prog: &mut Program, tag: Tag, prim: Prim) -> Result<LambdaId, Diagnostic> {
    let sexp = match template(tag, prim) {
        Some(src) => {
            let mut v = syntax::reader::read_str(&src, FileId(0))?;
            v.pop()
                .ok_or_else(|| Diagnostic::new(None, "empty template"))?
        }
        None => entry(tag, prim)?,
    };
    let lam = syntax::expand::expand_closed_lambda(&sexp)?;
    let l = syntax::anf::lower_closed_lambda(prog, &lam, Origin::PrimTransform { tag, prim })?;
    prog.lambdas[l].name = Some(format!("{}^{}", prim.name(), tag.letter()));
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
            PrimKind::Compare | PrimKind::Predicate => format!(
                "(lambda (v) (let ((x (*j-inverse v))) \
                 (cons (*j ({p} x)) (lambda (s) (sensitize (cons '() (zero x)))))))"
            ),
            _ => return None,
        },
    })
}

fn parsed() -> &'static Result<Vec<Sexp>, Diagnostic> {
    static PARSED: OnceLock<Result<Vec<Sexp>, Diagnostic>> = OnceLock::new();
    PARSED.get_or_init(|| syntax::reader::read_str(PRELUDE, FileId(0)))
}

/// The hand-written entry of `prelude.vlad`.
fn entry(tag: Tag, prim: Prim) -> Result<Sexp, Diagnostic> {
    let data = parsed().as_ref().map_err(Clone::clone)?;
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

    /// Every transformed primitive builds: the prelude is complete and
    /// well formed.
    #[test]
    fn every_entry_builds() {
        let mut prog = Program::default();
        let mut memo = AdMemo::default();
        for tag in [Tag::Perturb, Tag::Forward, Tag::Sensitize, Tag::Reverse] {
            for p in Prim::ALL {
                let l = prim_transform(&mut prog, &mut memo, tag, *p);
                assert!(prog.lambdas[l].free.is_empty());
            }
        }
    }
}
