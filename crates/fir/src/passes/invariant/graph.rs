//! The module's call graph, where each member is used and which members
//! a chain may pass through, as the analyses of [`super`] read them:
//! found once per pass, since dropping a slot adds arguments to calls and
//! removes loads, never a call, an allocation or a load of another slot.
//!
//! An analysis walks only the functions it can change (its scope, see
//! [`Fixed::scope`]); what the results of the others hold is what they
//! hold when no member is analysed ([`super::Base`]). generated-3070 has
//! 332 chained members over 1,190 functions: one whole-module analysis
//! per member was most of its build.

use crate::passes::flows::Flows;
use crate::{Module, Op, Ty};
use base::EntityRef;
use rustc_hash::FxHashMap as HashMap;
use std::collections::BTreeSet;

pub(super) struct Fixed {
    /// [`callees_first`].
    pub order: Vec<usize>,
    /// Per function: whether a `VecBuild` calls it.
    pub built: Vec<bool>,
    /// Per function: whether anything calls it.
    pub called: Vec<bool>,
    /// Per function: the functions calling it (once each).
    callers: Vec<Vec<usize>>,
    /// Per function: whether it returns a pointer.
    gives_ptr: Vec<bool>,
    /// Per member: the functions allocating or loading a cell of it, in
    /// order.
    users: HashMap<u32, Vec<usize>>,
}

impl Fixed {
    pub fn of(m: &Module) -> Fixed {
        let n = m.funcs.len();
        let mut called = vec![false; n];
        let mut callers: Vec<Vec<usize>> = vec![Vec::new(); n];
        let mut users: HashMap<u32, Vec<usize>> = HashMap::default();
        for (fi, f) in m.funcs.iter().enumerate() {
            f.body.for_each_call(&mut |g, _, _| {
                called[g.index()] = true;
                let cs = &mut callers[g.index()];
                if cs.last() != Some(&fi) {
                    cs.push(fi);
                }
            });
            f.body.for_each_inst(&mut |i| {
                if let Op::Alloc(t, _) | Op::AllocZero(t, _) | Op::Load(_, t, _) = i.op {
                    let us = users.entry(t).or_default();
                    if us.last() != Some(&fi) {
                        us.push(fi);
                    }
                }
            });
        }
        Fixed {
            order: callees_first(m),
            built: m.built_funcs(),
            called,
            callers,
            gives_ptr: m
                .funcs
                .iter()
                .map(|f| f.returns.contains(&Ty::Ptr))
                .collect(),
            users,
        }
    }

    /// The functions calling function `f`.
    pub fn callers(&self, f: usize) -> &[usize] {
        &self.callers[f]
    }

    /// The functions allocating or loading a cell of `tag`.
    pub fn users(&self, tag: u32) -> &[usize] {
        self.users.get(&tag).map_or(&[], Vec::as_slice)
    }

    /// The functions an analysis of `members` walks, callees first: those
    /// allocating or loading a member's cell and every function calling
    /// one of them that returns a pointer, directly or not (with `plan`,
    /// calling any of them). Outside it no function differs from what it
    /// is with no member analysed: it allocates and loads no member, and
    /// the functions it calls for a pointer are outside too. Nor is a
    /// fact of one asked for: a load of a member is inside, and with
    /// `plan` so is every caller of a function taking a new parameter.
    pub fn scope<'a>(&self, members: impl Iterator<Item = &'a u32>, plan: bool) -> Vec<usize> {
        let mut inside = vec![false; self.order.len()];
        let mut stack: Vec<usize> = members.flat_map(|t| self.users(*t)).copied().collect();
        while let Some(f) = stack.pop() {
            if !std::mem::replace(&mut inside[f], true) && (plan || self.gives_ptr[f]) {
                stack.extend(&self.callers[f]);
            }
        }
        self.order.iter().copied().filter(|f| inside[*f]).collect()
    }
}

/// The functions of `m`, each after the functions it calls (but in a
/// cycle of calls).
fn callees_first(m: &Module) -> Vec<usize> {
    let callees: Vec<Vec<usize>> = m
        .funcs
        .iter()
        .map(|f| {
            let mut out = Vec::new();
            f.body.for_each_call(&mut |g, _, _| out.push(g.index()));
            out
        })
        .collect();
    let mut seen = vec![false; m.funcs.len()];
    let mut order = Vec::with_capacity(m.funcs.len());
    for root in 0..m.funcs.len() {
        if seen[root] {
            continue;
        }
        seen[root] = true;
        // (function, next callee to visit)
        let mut stack = vec![(root, 0)];
        while let Some((f, k)) = stack.pop() {
            if let Some(&g) = callees[f].get(k) {
                stack.push((f, k + 1));
                if !seen[g] {
                    seen[g] = true;
                    stack.push((g, 0));
                }
            } else {
                order.push(f);
            }
        }
    }
    order
}

/// What tells the members a chain may pass through: closing over "a
/// value made, loaded or tested as one may be one made, loaded or tested
/// as the other" ([`Flows`]) and "a pointer loaded from a cell of one may
/// be one made, loaded or tested as the other". Found once per pass:
/// dropping a slot read as a vector removes no such evidence.
pub(super) struct Chains {
    /// The members seen in each class of values.
    seen: Vec<BTreeSet<u32>>,
    /// (member, class of values) for each pointer loaded from a member.
    links: Vec<(u32, usize)>,
}

impl Chains {
    pub fn of(m: &Module) -> Chains {
        let mut flows = Flows::new(m, &mut |_, _, _| {});
        let mut seen: Vec<(usize, u32)> = Vec::new();
        let mut loaded: Vec<(u32, usize)> = Vec::new();
        for (fi, f) in m.funcs.iter().enumerate() {
            f.body.for_each_inst(&mut |i| match i.op {
                Op::Load(c, t, s) => {
                    seen.push((flows.val(fi, c), t));
                    if m.cells.get(&t).and_then(|l| l.get(s as usize)) == Some(&Ty::Ptr) {
                        loaded.push((t, flows.val(fi, i.results[0])));
                    }
                }
                Op::TagIs(c, t) => seen.push((flows.val(fi, c), t)),
                Op::Alloc(t, _) | Op::AllocZero(t, _) => {
                    seen.push((flows.val(fi, i.results[0]), t))
                }
                _ => {}
            });
        }
        // Classes of values numbered densely, by their roots.
        let mut number: HashMap<usize, usize> = HashMap::default();
        let mut class = |flows: &mut Flows, v: usize| {
            let root = flows.find(v);
            let n = number.len();
            *number.entry(root).or_insert(n)
        };
        let mut by_class: Vec<BTreeSet<u32>> = Vec::new();
        for (v, t) in seen {
            let k = class(&mut flows, v);
            if k == by_class.len() {
                by_class.push(BTreeSet::new());
            }
            by_class[k].insert(t);
        }
        let links = loaded
            .into_iter()
            .map(|(t, v)| (t, class(&mut flows, v)))
            .collect();
        Chains {
            seen: by_class,
            links,
        }
    }

    /// The members other than `tag` that a chain of `tag` may pass
    /// through.
    pub fn class_of(&self, tag: u32) -> BTreeSet<u32> {
        let mut class = BTreeSet::from([tag]);
        loop {
            let before = class.len();
            for ts in &self.seen {
                if ts.iter().any(|t| class.contains(t)) {
                    class.extend(ts.iter().copied());
                }
            }
            for (t, k) in &self.links {
                if class.contains(t) {
                    if let Some(ts) = self.seen.get(*k) {
                        class.extend(ts.iter().copied());
                    }
                }
            }
            if class.len() == before {
                break;
            }
        }
        class.remove(&tag);
        class
    }
}
