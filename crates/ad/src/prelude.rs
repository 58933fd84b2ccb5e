//! The transformed primitives: entries of the AD prelude, already lowered
//! to core IR (`ir::prelude`).

use crate::AdMemo;
use ir::{LambdaId, Prim, Program, Tag};

/// `tag(prim)` as a closed lambda of `prog`, copied from the process's
/// prelude once per program.
pub fn prim_transform(prog: &mut Program, memo: &mut AdMemo, tag: Tag, prim: Prim) -> LambdaId {
    if let Some(&l) = memo.prims.get(&(tag, prim)) {
        return l;
    }
    // The prelude is embedded source, complete and well formed: its unit
    // tests (`ir::prelude::source`) build every entry.
    let l = ir::prelude::shared()
        .instantiate(prog, tag, prim)
        .unwrap_or_else(|e| panic!("AD prelude entry {} {}: {e}", tag.name(), prim.name()));
    memo.prims.insert((tag, prim), l);
    l
}
