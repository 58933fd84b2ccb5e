//! The FIR-to-FIR passes, in the order [`optimize`] runs them. Each takes a
//! module that satisfies the invariants of [`crate::verify`] and leaves one
//! that does; in debug builds `optimize` checks that after every pass.

pub mod compact;
pub mod fields;
pub mod inline;
pub mod known;
pub mod params;
pub mod results;
pub mod returns;
pub mod schedule;
pub mod simplify;
pub mod sink;
pub mod tags;

use crate::Module;

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
/// gives equal, dropping the results no caller reads (before and after
/// `fields`, whose dropped slots leave more of them unread), keeping in
/// cells only the slots worth storing, moving what only one arm of a
/// conditional needs into that arm, and scheduling last.
pub const PIPELINE: &[Pass] = &[
    ("inline", inline::inline),
    ("simplify", simplify::simplify),
    ("inline-bottom-up", inline::inline_bottom_up),
    ("tags", tags::known_tags),
    ("simplify", simplify::simplify),
    ("fuse", simplify::fuse::fuse),
    ("params", params::shrink),
    ("returns", returns::merge_equal_results),
    ("results", results::drop_dead),
    ("fields", fields::shrink_cells),
    ("params", params::shrink),
    ("results", results::drop_dead),
    ("sink", sink::sink),
    ("schedule", schedule::schedule),
];

/// Runs [`PIPELINE`]. In debug builds the module is verified after each
/// pass, so a pass that breaks an invariant is named at once instead of
/// surfacing as a code generation error. Each pass is a stage of
/// `--time-passes` (`base::timing`), whose clock `VLAD_PASS_TRACE` prints
/// with the module's size after the pass.
pub fn optimize(m: &mut Module) {
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
    for (name, pass) in PIPELINE {
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
        if cfg!(debug_assertions) {
            if let Err(e) = crate::verify::verify(m) {
                panic!("internal error: the FIR pass `{name}` broke an invariant: {e}");
            }
        }
    }
}
