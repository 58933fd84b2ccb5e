//! Which slots of a member hold the same value in every cell of it, over
//! all members at once.
//!
//! Why: the tape cell of a nested mode is filled, at many of its `Alloc`s,
//! from the slots of another cell (the transformed closure it was made
//! from, the cell of the previous step of a loop), so two of its slots
//! hold the same value at every `Alloc` only if the slots they were loaded
//! from do, which in turn may depend on this member. Compared value by
//! value at each `Alloc` alone, such slots look distinct: a closure of
//! forward over reverse mode kept 57 slots where its `Alloc`s fill 27
//! distinct values.
//!
//! So the question is answered optimistically, as global value numbering
//! does: first every slot of a member is taken to equal every other of its
//! type, and a class of slots is split wherever some `Alloc` fills two of
//! them with values not known equal, until no class splits. Two values at
//! one `Alloc` are known equal when they are the same value or the same
//! constant, or when both are loads, from cells known equal, of slots of
//! one class. At the fixpoint, slots of one class hold equal values in
//! every cell, by induction over the order in which the cells are made (a
//! cell loaded from was made before; a `Load` reads the member its cell
//! holds).

use super::{Constant, Def, Site};
use crate::{Module, Ty, Val};
use rustc_hash::FxHashMap as HashMap;

/// The class of each slot, by member: slots of one class hold equal values
/// in every cell. Class numbers are unique over all members.
pub(super) type Classes = HashMap<u32, Vec<u32>>;

/// What a value is known to be: a value of the function, or a constant,
/// then loaded from, slot class after slot class.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
struct Key {
    base: Base,
    loads: Vec<u32>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
enum Base {
    Val(Val),
    Const(Constant),
}

/// The classes of the slots of every member with a layout, given the
/// slots some `Load` reads (`read`, sorted), what the `Alloc`s of each
/// store (`sites`) and the definitions of each function's constants and
/// loads (`defs`, by function index). A slot no `Load` reads (which is
/// dropped) has a class of its own, and so has every slot of a member
/// whose cells are never made here or whose `Alloc`s disagree with its
/// layout.
pub(super) fn classes(
    m: &Module,
    read: &HashMap<u32, Vec<u32>>,
    sites: &HashMap<u32, Vec<Site>>,
    defs: &[HashMap<Val, Def>],
) -> Classes {
    let mut next = 0u32;
    let mut fresh = || {
        next += 1;
        next - 1
    };
    let mut class: Classes = HashMap::default();
    // Members whose classes may still split.
    let mut open: std::collections::BTreeSet<u32> = Default::default();
    for (&tag, layout) in &m.cells {
        let made = sites
            .get(&tag)
            .filter(|s| !s.is_empty() && s.iter().all(|s| s.slots.len() == layout.len()));
        let ids: Vec<u32> = if made.is_some() {
            open.insert(tag);
            let read = read.get(&tag).map_or(&[][..], Vec::as_slice);
            let mut by_type: HashMap<Ty, u32> = HashMap::default();
            layout
                .iter()
                .enumerate()
                .map(|(s, t)| {
                    if read.binary_search(&(s as u32)).is_ok() {
                        *by_type.entry(*t).or_insert_with(&mut fresh)
                    } else {
                        fresh()
                    }
                })
                .collect()
        } else {
            layout.iter().map(|_| fresh()).collect()
        };
        class.insert(tag, ids);
    }
    let mut tags: Vec<u32> = class.keys().copied().collect();
    tags.sort_unstable();
    let mut count = next as usize;
    loop {
        let mut refined: Classes = HashMap::default();
        let mut total = 0;
        for &tag in &tags {
            let mut label = class[&tag].clone();
            if open.contains(&tag) {
                // Labels past every one the member has so far.
                let mut fresh = label.iter().max().map_or(0, |l| l + 1);
                // The slots of classes of two slots or more: only these
                // may split.
                let mut slots: Vec<usize> = (0..label.len()).collect();
                for site in &sites[&tag] {
                    slots = shared(&label, slots);
                    if slots.is_empty() {
                        break;
                    }
                    let mut ids: HashMap<(u32, Key), u32> = HashMap::default();
                    for &s in &slots {
                        let k = key(site.slots[s].0, &defs[site.func], &class);
                        label[s] = *ids.entry((label[s], k)).or_insert_with(|| {
                            fresh += 1;
                            fresh - 1
                        });
                    }
                }
            }
            // Numbered from `total` up, in order of first slot.
            let mut number: HashMap<u32, u32> = HashMap::default();
            let ids = label
                .iter()
                .map(|l| {
                    let n = total + number.len() as u32;
                    *number.entry(*l).or_insert(n)
                })
                .collect();
            total += number.len() as u32;
            refined.insert(tag, ids);
        }
        class = refined;
        if total as usize == count {
            return class;
        }
        count = total as usize;
    }
}

/// The slots of `slots` whose class (`label`) holds another of them.
fn shared(label: &[u32], slots: Vec<usize>) -> Vec<usize> {
    let mut size: HashMap<u32, u32> = HashMap::default();
    for &s in &slots {
        *size.entry(label[s]).or_default() += 1;
    }
    slots.into_iter().filter(|s| size[&label[*s]] > 1).collect()
}

/// What `v` is known to be under the classes `class`.
fn key(v: Val, defs: &HashMap<Val, Def>, class: &Classes) -> Key {
    let mut loads = Vec::new();
    let mut v = v;
    let base = loop {
        match defs.get(&v) {
            Some(Def::Const(c)) => break Base::Const(*c),
            Some(Def::Load(cell, tag, slot)) => {
                // A load of a slot outside the layout (which the verifier
                // rejects) is only itself.
                match class.get(tag).and_then(|c| c.get(*slot as usize)) {
                    Some(c) => loads.push(*c),
                    None => break Base::Val(v),
                }
                v = *cell;
            }
            None => break Base::Val(v),
        }
    };
    Key { base, loads }
}
