//! Long lists of known length widened to lists of run-time length.
//!
//! A list's abstract value as the program builds it (a constant, or `cons`
//! and `list` in straight-line code) is a chain of pairs as long as the
//! list: analysing a procedure on it would specialise the procedure per
//! length on the way down (and the analysis bounds depth). Past
//! [`MAX_LIST_LENGTH`] elements, a list passed to a procedure is widened
//! to a list of the join of its elements, `U = () | (E . U)`, the shape a
//! list of run-time length has: its procedures are then analysed once.

use super::{Av, AvId, Domain, Leaf, Site, UnionId};

/// The longest list passed to a procedure, or bound to a literal, as a
/// chain of pairs; a longer one is widened (see the module documentation).
/// The examples, benchmarks and corpus pass lists of at most 11 elements,
/// so their code is as before. Each element of a list kept as pairs costs
/// the analysis of what uses it: a logistic regression by reverse mode
/// over 16 points pasted into its source builds in 1 s, over 40 in 2.5 s
/// (widened: 0.3 s for 300 points).
pub const MAX_LIST_LENGTH: u32 = 16;

impl<L: Leaf> Domain<L> {
    /// `v` with every list inside it longer than [`MAX_LIST_LENGTH`]
    /// widened to a list of the join of its elements.
    pub fn widen_long_lists(&mut self, v: AvId) -> AvId {
        // A list of n elements is at least n + 1 levels deep.
        if self.depth(v) <= MAX_LIST_LENGTH {
            return v;
        }
        if self.long_lists_generation != self.generation {
            self.long_lists.clear();
            self.long_lists_generation = self.generation;
        }
        if let Some(w) = self.long_lists.get(&v) {
            return *w;
        }
        let w = match self.list_items(v) {
            Some(items) if items.len() > MAX_LIST_LENGTH as usize => {
                let u = self.list_union(v, &items);
                self.union_av(u)
            }
            _ => self.map_parts(v, Self::widen_long_lists),
        };
        // Widening may have added members to a new union: cached under the
        // generation that follows.
        if self.long_lists_generation != self.generation {
            self.long_lists.clear();
            self.long_lists_generation = self.generation;
        }
        self.long_lists.insert(v, w);
        w
    }

    /// The elements of `v` if it is a proper list of pairs (ending in `()`).
    fn list_items(&self, mut v: AvId) -> Option<Vec<AvId>> {
        let mut items = Vec::new();
        loop {
            match self.get(v) {
                Av::Pair(a, b) => {
                    items.push(*a);
                    v = *b;
                }
                Av::Nil => return Some(items),
                _ => return None,
            }
        }
    }

    /// The union `() | (E . itself)` of list `v` ([`Site::List`]), `E` the
    /// join of its items, each widened in turn.
    fn list_union(&mut self, v: AvId, items: &[AvId]) -> UnionId {
        let u = self.site_union(Site::List(v));
        let nil = self.nil();
        self.add_member(u, nil);
        let mut seen = std::collections::HashSet::new();
        for x in items {
            if !seen.insert(*x) {
                continue;
            }
            let x = self.widen_long_lists(*x);
            let uv = self.union_av(u);
            let p = self.pair(x, uv);
            self.add_member(u, p);
        }
        self.find(u)
    }
}
