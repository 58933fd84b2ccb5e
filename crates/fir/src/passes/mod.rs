//! The FIR-to-FIR passes, in the order [`optimize`] runs them. Each takes a
//! module that satisfies the invariants of [`crate::verify`] and leaves one
//! that does; asked to (the driver asks in debug builds and with
//! `VLAD_VERIFY_PASSES` set, as every test that compiles sets it),
//! `optimize` checks that after every pass.

pub mod accumulate;
pub mod compact;
pub mod counted;
pub mod fields;
pub mod flows;
pub mod inline;
pub mod invariant;
pub mod known;
pub mod lengths;
pub mod outline;
pub mod pairs;
pub mod params;
pub mod results;
pub mod returns;
pub mod room;
pub mod schedule;
pub mod simplify;
pub mod sink;
pub mod split;
pub mod stacks;
pub mod tags;
mod tail_groups;
pub mod unrecurse;
pub mod unzip;

use crate::verify::VerifyError;
use crate::Module;
use std::fmt;

/// One pass, by name (for `--emit`, tests and verifier reports).
pub type Pass = (&'static str, fn(&mut Module));

/// The optimisation pipeline: inlining (thunks first, turning loops back
/// into self tail calls), simplification, inlining bottom up (which
/// simplifies what it changed), the tag tests that the cells pointers can
/// point to decide, again simplification, fusing the `If`s on one
/// condition (with what `null?`'s results tell), parameter merging (which drops
/// the parameters nothing reads, so the loads that fed them die, and
/// simplifies what it changed: it leaves every function simplified),
/// merging results every return
/// gives equal, copying a function for the calls that read fewer of its
/// results, dropping the results no caller reads (before and after
/// `fields`, whose dropped slots leave more of them unread), not building
/// the vectors only taken apart slot by slot, keeping in
/// cells only the slots worth storing, and not those every cell of a chain
/// holds alike (their readers take them as parameters), making the lists whose cells are
/// left with their link and reals a buffer of reals and a count, telling
/// the pushes of a counting loop how many follow, adding a pair of
/// one-hots to a sum one at a time, returning at once what
/// the loops left only counting (a list of nothing, say) count, moving the large pieces of a
/// function that calls itself into functions of their own (its frame is
/// on the stack once per level), moving what only one arm of a
/// conditional needs into that arm, and scheduling last.
pub const PIPELINE: &[Pass] = &[
    ("inline", inline::inline),
    ("simplify", simplify::simplify),
    ("inline-bottom-up", inline::inline_bottom_up),
    ("tags", tags::known_tags),
    ("simplify", simplify::simplify),
    ("fuse", simplify::fuse::fuse),
    ("lengths", lengths::known_lengths),
    ("params", params::shrink),
    ("returns", returns::merge_equal_results),
    ("split", split::split_by_results),
    ("results", results::drop_dead),
    ("unzip", unzip::unzip_builds),
    ("fields", fields::shrink_cells),
    ("invariant", invariant::drop_invariant_slots),
    ("stacks", stacks::stack_lists),
    ("params", params::shrink),
    ("results", results::drop_dead),
    ("accumulate", accumulate::pass_sums_down),
    ("counted", counted::closed_forms),
    ("unrecurse", unrecurse::unrecurse),
    ("room", room::expect_room),
    ("pairs", pairs::split_pairs),
    ("outline", outline::outline_recursion),
    ("sink", sink::sink),
    ("schedule", schedule::schedule),
];

/// A pass that left a module breaking an invariant.
#[derive(Clone, Debug, PartialEq)]
pub struct PassError {
    pub pass: &'static str,
    pub error: VerifyError,
}

impl fmt::Display for PassError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "the FIR pass `{}` broke an invariant: {}",
            self.pass, self.error
        )
    }
}

impl std::error::Error for PassError {}

/// Runs [`PIPELINE`]. With `verify_each_pass` the module is verified
/// after each pass, so that a pass that breaks an
/// invariant is named at once (the error) instead of surfacing as a code
/// generation error or as wrong code. Each pass is a stage of
/// `--time-passes` (`base::timing`), whose clock `VLAD_PASS_TRACE` prints
/// with the module's size after the pass. `VLAD_PASS_STOP=N` runs only the
/// first N passes: a wrong answer that optimisation brings is bisected to
/// its pass in a few builds.
pub fn optimize(m: &mut Module, verify_each_pass: bool) -> Result<(), PassError> {
    run(m, PIPELINE, verify_each_pass)
}

/// Runs `passes` on `m`, verifying the module after each if `verify`.
fn run(m: &mut Module, passes: &[Pass], verify: bool) -> Result<(), PassError> {
    let _optimize = base::timing::span("optimize");
    let trace = std::env::var_os("VLAD_PASS_TRACE").is_some();
    if trace {
        let values: usize = m.funcs.iter().map(|f| f.types.len()).sum();
        let insts: usize = m.funcs.iter().map(|f| f.body.size()).sum();
        eprintln!(
            "lowered: {} functions, {values} values, {insts} instructions",
            m.funcs.len()
        );
    }
    let stop = std::env::var("VLAD_PASS_STOP")
        .ok()
        .and_then(|s| s.parse::<usize>().ok());
    for (k, (name, pass)) in passes.iter().enumerate() {
        if stop.is_some_and(|n| k >= n) {
            break;
        }
        let span = base::timing::span(*name);
        pass(m);
        let elapsed = span.end();
        if trace {
            let values: usize = m.funcs.iter().map(|f| f.types.len()).sum();
            let insts: usize = m.funcs.iter().map(|f| f.body.size()).sum();
            eprintln!(
                "pass {name}: {elapsed:.2?}, {} functions, {values} values, {insts} instructions",
                m.funcs.len()
            );
        }
        if verify {
            crate::verify::verify(m).map_err(|error| PassError { pass: name, error })?;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Block, Func, Op, Term, Ty};

    /// `main` printing a real.
    fn module() -> Module {
        let body = Block {
            insts: vec![
                crate::testing::inst(&[0], Op::F64Const(1.0)),
                crate::testing::inst(&[], Op::PrintReal(crate::Val::from_number(0))),
            ],
            term: Term::Return(vec![]),
        };
        Module {
            funcs: vec![Func {
                name: "main".into(),
                params: vec![],
                returns: vec![],
                types: vec![Ty::F64],
                body,
            }],
            main: Some(<crate::FuncId as base::EntityRef>::new(0)),
            vectors: Default::default(),
            strings: vec![],
            cells: Default::default(),
        }
    }

    /// Makes the real printed a boolean.
    fn retype(m: &mut Module) {
        m.funcs[0].body.insts[0].op = Op::BoolConst(true);
        m.funcs[0].types[0] = Ty::Bool;
    }

    #[test]
    fn a_pass_that_breaks_an_invariant_is_named() {
        let passes: &[Pass] = &[("simplify", simplify::simplify), ("retype", retype)];
        let mut m = module();
        let e = run(&mut m, passes, true).expect_err("the module no longer verifies");
        assert_eq!(e.pass, "retype");
        assert!(
            e.to_string()
                .starts_with("the FIR pass `retype` broke an invariant: function `main`"),
            "{e}"
        );
        let mut m = module();
        assert_eq!(run(&mut m, passes, false), Ok(()));
    }
}
