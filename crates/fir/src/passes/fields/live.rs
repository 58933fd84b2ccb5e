//! Which slots are read for what they hold, not only to be stored again.
//!
//! Why: forward over reverse mode bundles a backpropagator closure with
//! its tangent, then takes the bundle's primal and tangent apart again, so
//! each slot of the closure's cell is loaded, stored in the bundle's cell,
//! loaded from there and stored in a new closure's cell, round and round.
//! A `Load` alone says nothing: in a forward-over-reverse Hessian-vector
//! product, every slot of the cells of `min`'s backpropagators (and of
//! their bundles) was read only to be stored in another of them, and so
//! were 27 of the 37 slots of the loop's (`tests/memory/hvp-kmeans.vlad`).
//!
//! So, as dead-code removal that follows values through cells: a slot is
//! live if a `Load` of it is needed, where an `Alloc` needs its operand
//! only at a live slot. This is the least fixpoint, found from no live
//! slot up (a cycle of slots that only fill each other stays dead), by
//! [`simplify::needed_slots`] (the marking of [`simplify::dce_slots`],
//! removing nothing); then that removal on the functions drops the dead
//! loads and what only they needed.

use super::super::simplify::{self, Slots};
use crate::Module;
use rustc_hash::FxHashSet as HashSet;

/// A slot: (member tag, slot number).
pub(super) type Slot = (u32, u32);

/// Slots stored: those found live so far, and every slot of a member
/// whose `Alloc`s disagree with its layout (which the verifier rejects,
/// and the fields pass leaves as it is). Collects the slots live `Load`s
/// read.
struct Policy<'a> {
    live: &'a HashSet<Slot>,
    rigid: &'a HashSet<u32>,
    read: HashSet<Slot>,
}

impl Slots for Policy<'_> {
    fn stored(&self, tag: u32, slot: usize) -> bool {
        self.rigid.contains(&tag) || self.live.contains(&(tag, slot as u32))
    }
    fn read(&mut self, tag: u32, slot: u32) {
        self.read.insert((tag, slot));
    }
}

/// The slots live in `m`, every slot of the members `keep` being stored.
pub(super) fn live_slots(m: &Module, keep: &HashSet<u32>) -> HashSet<Slot> {
    let mut rigid = rigid_tags(m);
    rigid.extend(keep.iter().copied());
    let made: Vec<HashSet<u32>> = m.funcs.iter().map(made_tags).collect();
    let mut live: HashSet<Slot> = HashSet::default();
    // The slots each function's needed loads read, given `live`; a
    // function is walked again only when a member it makes gained a live
    // slot (nothing else it asks of `live` changed).
    let mut reads: Vec<HashSet<Slot>> = vec![HashSet::default(); m.funcs.len()];
    let mut grown: Option<HashSet<u32>> = None;
    loop {
        for (i, f) in m.funcs.iter().enumerate() {
            if grown.as_ref().is_some_and(|g| g.is_disjoint(&made[i])) {
                continue;
            }
            let mut policy = Policy {
                live: &live,
                rigid: &rigid,
                read: HashSet::default(),
            };
            simplify::needed_slots(f, &mut policy);
            reads[i] = policy.read;
        }
        // More slots live make more loads needed: the sets only grow.
        let read: HashSet<Slot> = reads.iter().flatten().copied().collect();
        if read.len() == live.len() {
            return live;
        }
        grown = Some(read.difference(&live).map(|(tag, _)| *tag).collect());
        live = read;
    }
}

/// Removes from `m` the loads not needed, and what only they needed, the
/// slots `live` (of [`live_slots`] with the same `keep`) being known;
/// returns which functions changed. What an `Alloc` stores at a slot not
/// live may then be a value removed: the caller drops those slots.
pub(super) fn remove_dead(m: &mut Module, live: &HashSet<Slot>, keep: &HashSet<u32>) -> Vec<bool> {
    let mut rigid = rigid_tags(m);
    rigid.extend(keep.iter().copied());
    let mut policy = Policy {
        live,
        rigid: &rigid,
        read: HashSet::default(),
    };
    m.funcs
        .iter_mut()
        .map(|f| {
            // Removal only drops instructions and results.
            let before = f.body.size() + results(&f.body);
            simplify::dce_slots(f, &mut policy);
            f.body.size() + results(&f.body) != before
        })
        .collect()
}

/// The members whose cells a function makes.
fn made_tags(f: &crate::Func) -> HashSet<u32> {
    let mut out = HashSet::default();
    f.body.for_each_inst(&mut |i| {
        if let crate::Op::Alloc(tag, _) | crate::Op::AllocZero(tag, _) = &i.op {
            out.insert(*tag);
        }
    });
    out
}

/// The number of results of the instructions of `b` and the blocks in it.
fn results(b: &crate::Block) -> usize {
    let mut n = 0;
    b.for_each_inst(&mut |i| n += i.results.len());
    n
}

/// The members some `Alloc` of which gives a number of slots other than
/// its layout's.
fn rigid_tags(m: &Module) -> HashSet<u32> {
    let mut out = HashSet::default();
    for f in &m.funcs {
        f.body.for_each_inst(&mut |i| {
            if let crate::Op::Alloc(tag, args) | crate::Op::AllocZero(tag, args) = &i.op {
                if m.cells.get(tag).map(Vec::len) != Some(args.len()) {
                    out.insert(*tag);
                }
            }
        });
    }
    out
}
