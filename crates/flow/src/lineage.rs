//! The lineage of unions made from unions: which earlier unions a union
//! has the same shapes as, by the operations that made it.
//!
//! `zero`, `plus` and the maps of unions ([`Site::Zero`], [`Site::Plus`],
//! [`Site::Map`]) each make a union of their own per operand union. Where
//! the program sums sensitivities in a loop whose values are unions (the
//! environments of closures built by recursion, under reverse over
//! reverse), each round's operand is the last round's sum, so each round
//! would make a new union, and new specialisations for it, without end.
//! Such a sum descends from the other operand through operations that
//! keep shapes: `plus` and `zero` keep them, and a tag put on by one map
//! and taken off by another cancels out. `plus` then adds into the
//! accumulated sum's union instead (`Ops::accumulator`), which closes the
//! loop. Maps need no such rule: a map undoing the one that made its
//! operand gives that union back (`Ops::map_union`).

use crate::domain::{Domain, Leaf, Site, UnionId, UnionOp};
use ir::Tag;
use std::collections::HashSet;

/// How many (union, pending tags) states a search visits at most.
const MAX_STATES: usize = 64;
/// How many tags may be pending on a path (a tag put on, to be taken off
/// further up, or the reverse).
const MAX_PENDING: usize = 4;

/// A tag put on (`true`) or taken off (`false`) between a union and an
/// ancestor.
type Step = (bool, Tag);

/// The unions `u` descends from through operations that keep shapes, so
/// that every value of `u` has the shape of a value of each of them;
/// nearest first, `u` itself excluded.
pub fn same_shape_ancestors<L: Leaf>(dom: &Domain<L>, u: UnionId) -> Vec<UnionId> {
    let u = dom.find(u);
    let mut out = Vec::new();
    let mut seen: HashSet<(UnionId, Vec<Step>)> = HashSet::new();
    let mut level: Vec<(UnionId, Vec<Step>)> = vec![(u, Vec::new())];
    while !level.is_empty() && seen.len() < MAX_STATES {
        let mut next = Vec::new();
        for (x, pending) in level {
            if !seen.insert((x, pending.clone())) {
                continue;
            }
            if pending.is_empty() && x != u && !out.contains(&x) {
                out.push(x);
            }
            for (parent, step) in parents(dom, x) {
                let mut p = pending.clone();
                if let Some(s) = step {
                    // The value at `x` is the parent's with tag `s.1` put
                    // on (or taken off); a step that undoes the last
                    // pending one cancels it.
                    if p.last() == Some(&(!s.0, s.1)) {
                        p.pop();
                    } else {
                        p.push(s);
                    }
                }
                if p.len() <= MAX_PENDING {
                    next.push((dom.find(parent), p));
                }
            }
        }
        level = next;
    }
    out
}

/// The unions union `x` was made from by an operation that keeps shapes
/// up to a tag, with that tag.
fn parents<L: Leaf>(dom: &Domain<L>, x: UnionId) -> Vec<(UnionId, Option<Step>)> {
    match dom.origin(x) {
        Some(Site::Plus(a, b)) => vec![(a, None), (b, None)],
        Some(Site::Zero(a)) => vec![(a, None)],
        Some(Site::Map(UnionOp::Wrap(t), a, None)) => vec![(a, Some((true, t)))],
        Some(Site::Map(UnionOp::Unwrap(t), a, None)) => vec![(a, Some((false, t)))],
        _ => Vec::new(),
    }
}
