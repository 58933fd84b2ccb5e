//! The transformed primitives: entries of the AD prelude, which the front
//! end attached to the program already lowered (`ir::prelude`).

use crate::AdMemo;
use ir::{LambdaId, Prim, Program, Tag};

/// `tag(prim)` as a closed lambda of `prog`, copied from the program's
/// prelude once per program.
///
/// Panics if `prog` has no prelude: the front end attaches one to every
/// program it lowers.
pub fn prim_transform(prog: &mut Program, memo: &mut AdMemo, tag: Tag, prim: Prim) -> LambdaId {
    if let Some(&l) = memo.prims.get(&(tag, prim)) {
        return l;
    }
    let prelude = prog.prelude.clone().unwrap_or_else(|| {
        panic!(
            "{}({}) asked of a program without the AD prelude",
            tag.name(),
            prim.name()
        )
    });
    // The prelude is embedded source, complete and well formed: the front
    // end's unit tests build every entry.
    let l = prelude
        .instantiate(prog, tag, prim)
        .unwrap_or_else(|e| panic!("AD prelude entry {} {}: {e}", tag.name(), prim.name()));
    memo.prims.insert((tag, prim), l);
    l
}
