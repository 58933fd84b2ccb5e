//! The first-order IR (FIR): what lowering produces and code generation
//! consumes, with its text form ([`print`], `--emit=fir`), an evaluator
//! ([`eval`], for testing lowering without machine code), the verifier of
//! its invariants ([`verify`]) and the FIR-to-FIR passes ([`passes`]).
//! [`read`] parses the text form back, so that the passes are tested on
//! modules written as text: the filetests of `tests/filetests` (a module
//! before a pass and the module expected after it; see the README there).
//! Depends on `base` only: code generation needs nothing of the front end.
//!
//! A [`Module`] is a set of first-order functions over unboxed scalars.
//! Every VLAD value has already been given its representation: a known
//! constant has none, an unknown real is one `F64`, an unknown boolean one
//! `Bool`, and a pair or closure of fixed shape is the concatenation of its
//! parts' scalars. So a VLAD procedure of a 2-vector takes two `F64`
//! parameters, and a backpropagator closure is just the reals it captured.
//! A vector is a `Ptr` to its elements, each the scalars of one
//! representation. There are no closures, no indirect calls and no AD
//! operations left.
//!
//! Invariants (checked by [`verify::verify`]):
//! - values are numbered per function; parameters are values
//!   `0..params.len()`; every other value is defined exactly once, by an
//!   [`Inst`] result, before it is used, and is visible in the rest of its
//!   block and in blocks nested in it (not after an enclosing `If`);
//! - every block ends in a [`Term`]; the blocks of an `If` end in
//!   `Yield` (or diverge), yielding values of the `If`'s result types;
//!   a function body never ends in `Yield`;
//! - `Call` and `TailCall` pass exactly the callee's parameter types and a
//!   `Call`'s results have the callee's return types; a `TailCall` is only
//!   made to a function with the caller's return types;
//! - every member tag an operation names has a layout in
//!   [`Module::cells`], the types of its cells' slots, pointers first, so
//!   that the collector scans only the leading pointer slots of a cell;
//!   an `Alloc` gives a value of each slot's type, and a `Load` names a
//!   slot of the layout and gives a value of that slot's type;
//! - every vector layout an operation names is in [`Module::vectors`]
//!   (an element's slot types, pointers first); a `VecOf` gives values of
//!   its elements' slot types, a `VecLoad` names a slot of its layout and
//!   gives its type, a `VecBuild`'s callee takes its arguments and then
//!   the index (`F64`) and returns an element's slots, and a `VecZero`,
//!   `VecOneHot` or `VecPlus` names a layout whose slots are all `F64`
//!   (a one-hot's values, one per slot), or (`VecZeroOf`, `VecOneHotOf`,
//!   `VecPlus`) one `Ptr` to rows of such a layout; lengths and indices are `F64`s, checked (`IsCount`,
//!   `VecIndexOk`) before an operation takes them;
//! - a `Load` from a cell reads the member the cell holds: code tests the
//!   tag (`TagIs`) first, or knows it otherwise (the last member of a
//!   dispatch whose other tests failed, a cell a slot of a known member
//!   holds). The verifier checks what the function itself shows: a
//!   `Load` of a member that the cell's definition (an `Alloc`, an `If`
//!   yielding cells) and the `TagIs` tests the code passed or failed rule
//!   out is an error, unless they rule out every member, which shows the
//!   code never runs (see [`verify`]);
//! - arithmetic is IEEE binary64 exactly as written: no reassociation, no
//!   fused multiply-add, so results equal the interpreter's bit for bit.

mod capture;
pub mod eval;
mod module;
pub mod owned;
pub mod passes;
pub mod print;
pub mod read;
#[cfg(test)]
mod testing;
pub mod verify;
pub mod visit;
pub mod whole;

pub use module::*;
pub use passes::optimize;
pub use visit::CallKind;
