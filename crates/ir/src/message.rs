//! The wording of a program's run-time errors: what each primitive and AD
//! operation expects of its argument, and the errors of application and
//! of patterns. Every stage takes its text from here: the interpreter, the
//! flow analysis (errors it decides at compile time), lowering (the same
//! errors in compiled code, with values known only at run time) and, for
//! `read-real`, the FIR evaluator and the native runtime through
//! [`base::message`]. A `found` argument is a value as messages show it:
//! printed by [`crate::printer`] and shortened by `base::message`.

use crate::operators::OperatorSites;
use crate::{LambdaId, Prim, Program, Tag};
use base::diag::SourceMap;
use base::message::{END_OF_INPUT, NOT_A_NUMERAL};

/// What a primitive expects of its argument, when the argument does not
/// fit ([`Prim::expects`]).
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Expects {
    TwoReals,
    Real,
    TwoArguments,
    /// `if-procedure`'s argument.
    ConditionAndThunks,
    /// A value of this tag, the argument of an operation that removes it.
    Tagged(Tag),
    Vector,
    /// `vector-ref`'s argument.
    VectorAndIndex,
    /// `build-vector`'s argument.
    LengthAndProcedure,
    /// `list->vector`'s argument.
    List,
}

impl Prim {
    /// The error for an argument that is not what the primitive expects.
    pub fn expects(self, what: Expects, found: &str) -> String {
        let what = match what {
            Expects::TwoReals => "two reals",
            Expects::Real => "a real",
            Expects::TwoArguments => "two arguments",
            Expects::ConditionAndThunks => "a condition and two thunks",
            Expects::Tagged(Tag::Perturb) => "a perturbation",
            Expects::Tagged(Tag::Forward) => "a forward value",
            Expects::Tagged(Tag::Sensitize) => "a sensitivity",
            Expects::Tagged(Tag::Reverse) => "a reverse value",
            Expects::Vector => "a vector",
            Expects::VectorAndIndex => "a vector and an index",
            Expects::LengthAndProcedure => "a length and a procedure",
            Expects::List => "a proper list",
        };
        format!("`{self}` expects {what}, found {found}")
    }
}

/// The error of removing `tag` from a value without it: `unperturb`,
/// `unsensitize`, `*j-inverse`, and `primal` for the forward tag.
pub fn not_tagged(tag: Tag, found: &str) -> String {
    let op = match tag {
        Tag::Perturb => Prim::Unperturb,
        Tag::Sensitize => Prim::Unsensitize,
        Tag::Reverse => Prim::StarJInverse,
        Tag::Forward => Prim::Primal,
    };
    op.expects(Expects::Tagged(tag), found)
}

/// The error of `primal` (or `tangent`, when not `primal`) of a value that
/// is not a forward value.
pub fn not_forward(primal: bool, found: &str) -> String {
    let op = if primal { Prim::Primal } else { Prim::Tangent };
    op.expects(Expects::Tagged(Tag::Forward), found)
}

/// The error of `plus` of two values of different shapes.
pub fn plus_mismatch(a: &str, b: &str) -> String {
    format!(
        "`{}` expects two values of the same shape, found {a} and {b}",
        Prim::Plus
    )
}

/// The error of `bundle` whose tangent does not fit its primal.
pub fn bundle_mismatch(primal: &str, tangent: &str) -> String {
    format!(
        "`{}` expects a tangent that is a perturbation of the same shape as the primal {primal}, found {tangent}",
        Prim::Bundle
    )
}

/// The error of `custom-*j-conform`: a custom derivative's backpropagator
/// returned a sensitivity `found` not shaped like `zero`, the zero of the
/// value it is the sensitivity of. Named after `custom-*j`, whose contract
/// the user broke (docs/reference.md).
pub fn nonconforming_sensitivity(zero: &str, found: &str) -> String {
    format!("`custom-*j` expects a sensitivity of the same shape as {zero}, found {found}")
}

/// The note on the derivatives in effect where an error is placed, in
/// the code of lambda `l`: each derivative, outermost first, named by the
/// operator and the call in the user's files that applied it when the
/// program's text says which call that is (`operators`), else by its
/// kind, then the procedure of the user's it was taken of when the
/// innermost is not named. `None` when `l` is the user's code
/// untransformed. Values in the message are shown without the tags of
/// these derivatives (`printer::Found`).
pub fn derivative_note(
    prog: &Program,
    sites: &OperatorSites,
    l: LambdaId,
    map: &SourceMap,
) -> Option<String> {
    let (tags, root) = prog.transforms(l);
    if tags.is_empty() {
        return None;
    }
    let named = sites.chain(&tags, root);
    let mut parts = Vec::new();
    for (t, a) in tags.iter().zip(&named) {
        parts.push(match a {
            Some(a) => format!("{} at {}", a.name, map.locate(a.span)),
            None => match t {
                Tag::Forward => "the forward derivative",
                Tag::Reverse => "the reverse derivative",
                Tag::Perturb => "the perturbation",
                Tag::Sensitize => "the sensitivity",
            }
            .to_string(),
        });
    }
    let mut note = format!("while taking {}", parts.join(" of "));
    if named.last().is_some_and(|a| a.is_none()) {
        note.push_str(" of the procedure");
        if let Some(s) = prog.lambdas[prog.procedure_of(root)].span {
            note.push_str(" at ");
            note.push_str(&map.locate(s));
        }
    }
    Some(note)
}

/// The error of `read-real` at the end of its input.
pub fn end_of_input() -> String {
    format!("`{}` {END_OF_INPUT}", Prim::ReadReal)
}

/// The error of `read-real` given `word`, which is not a numeral.
pub fn not_a_numeral(word: &str) -> String {
    let [before, after] = NOT_A_NUMERAL;
    format!("`{}` {before}{word}{after}", Prim::ReadReal)
}

/// The error of applying `found`, which is not a procedure.
pub fn not_a_procedure(found: &str) -> String {
    format!("cannot apply a non-procedure: found {found}")
}

/// The error of an argument `found` that does not match the parameter
/// pattern `pattern` (its text) of `owner` (a procedure's name, `lambda`
/// or `let`).
pub fn pattern_mismatch(owner: &str, pattern: &str, found: &str) -> String {
    format!("pattern mismatch: `{owner}` expects an argument matching {pattern}, found {found}")
}

/// The error of taking a pair apart that is not one, where no pattern
/// says more.
pub fn not_a_pair(found: &str) -> String {
    format!("expected a pair, found {found}")
}

/// The library procedures that check vector lengths through
/// `vector-check-length`, `vector-check-lengths` and `vector-check-range`,
/// by the code (a real) those primitives take to name them.
pub const VECTOR_PROCEDURES: [&str; 4] =
    ["make-vector", "vector-map", "vector-fold", "vector-copy"];

/// The procedure a vector check's code names.
pub fn vector_procedure(code: f64) -> Option<&'static str> {
    VECTOR_PROCEDURES
        .iter()
        .enumerate()
        .find(|(i, _)| *i as f64 == code)
        .map(|(_, name)| *name)
}

/// The error of a value that is not a vector, given where vectors are.
pub fn not_a_vector(who: &str, found: &str) -> String {
    format!("`{who}` expects a vector, found {found}")
}

/// The error of a vector too large for memory.
pub fn out_of_memory() -> String {
    "out of memory: a vector too large to make".to_string()
}

/// The error of a length that is not an integer from 0 to
/// `base::number::MAX_COUNT`.
pub fn bad_length(who: &str, found: &str) -> String {
    format!("`{who}` expects a length that is an integer from 0 to 2^40, found {found}")
}

/// The error of an index that is not an integer below the length `len`.
pub fn bad_index(who: &str, len: &str, found: &str) -> String {
    format!("`{who}` expects an index i with 0 <= i < {len}, found {found}")
}

/// The error of vectors of different lengths given to one procedure.
pub fn different_lengths(who: &str, a: &str, b: &str) -> String {
    format!("`{who}` expects vectors of the same length, found lengths {a} and {b}")
}

/// The error of a part of a vector that is not one.
pub fn bad_range(who: &str, len: &str, start: &str, end: &str) -> String {
    format!(
        "`{who}` expects integers 0 <= start <= end <= {len}, found start {start} and end {end}"
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn messages_name_the_operation_and_what_it_expects() {
        assert_eq!(
            Prim::Add.expects(Expects::TwoReals, "(1 . #t)"),
            "`+` expects two reals, found (1 . #t)"
        );
        assert_eq!(
            not_tagged(Tag::Reverse, "3"),
            "`*j-inverse` expects a reverse value, found 3"
        );
        assert_eq!(
            not_forward(false, "()"),
            "`tangent` expects a forward value, found ()"
        );
        assert_eq!(not_a_numeral("x"), "`read-real` expects a real, found `x`");
        assert_eq!(end_of_input(), "`read-real` reached the end of input");
    }
}
