//! The wording of a program's run-time errors: what each primitive and AD
//! operation expects of its argument, and the errors of application and
//! of patterns. Every stage takes its text from here: the interpreter, the
//! flow analysis (errors it decides at compile time), lowering (the same
//! errors in compiled code, with values known only at run time) and, for
//! `read-real`, the FIR evaluator and the native runtime through
//! [`base::message`]. A `found` argument is a value as messages show it:
//! printed by [`crate::printer`] and shortened by `base::message`.

use crate::{Prim, Tag};
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
