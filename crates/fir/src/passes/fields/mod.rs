//! Cell slots worth storing: a scalar of a union member is stored only if
//! some `Load` reads it for what it holds, only once, and only if it is
//! not a constant.
//!
//! Why: a backpropagator closure captures whole values (a closure's
//! environment, the state of a loop), and lowering flattens all of it into
//! the tape cell that holds the closure, although the backward sweep reads
//! only some of its reals, and nested closures capture the same values
//! again. So for each member (a `Load` carries its member's tag for this):
//! - a slot no `Load` reads, or that is read only to be stored in slots
//!   dropped ([`live`]), is dropped, and so is the code that only filled
//!   it, unless the module has memo tables and dropping it would make two
//!   cells equal that `simplify` would then merge ([`merged_by_dropping`]);
//! - a slot that holds the same value as an earlier slot in every cell is
//!   dropped, and its loads read the earlier one: the same value at every
//!   `Alloc`, or loads of slots that hold equal values themselves
//!   ([`classes`], over all members at once: the tape cells of nested modes
//!   are filled from other cells' slots; a forward-over-reverse
//!   Hessian-vector product's closures kept 111, 57 and 57 slots for 37,
//!   21 and 19 distinct values);
//! - a slot that every `Alloc` fills with the same constant is dropped,
//!   and its loads become that constant;
//! - a slot that every `Alloc` fills with a slot of a cell another kept
//!   slot holds (the same slot of the same member) is dropped, and its
//!   loads load that cell and then the slot: the tape cell of reverse mode
//!   over a list held the list and its `car` and `cdr` (sumsq-R's, 40 ->
//!   24 bytes per element). The cell may be one the function made, with
//!   the value at a slot some `Load` reads;
//! - a pointer slot read only for its length reads a slot as long
//!   ([`lengths`]), and goes as a slot no `Load` reads.
//!
//! The loads are renumbered, and the values no longer stored are dead code
//! for `simplify`. Pointers still lead a cell, since dropping keeps the
//! order.

mod classes;
mod lengths;
mod live;

use crate::{Block, Func, Inst, Module, Op, Ty, Val};
use base::EntityRef;
use rustc_hash::FxHashMap as HashMap;
use rustc_hash::FxHashSet as HashSet;

/// What becomes of a slot a `Load` reads.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Fate {
    /// Stored at this new slot number.
    Slot(u32),
    /// Not stored: every cell holds this constant there.
    Const(Constant),
    /// Not stored: every cell holds there slot `slot` of member `tag` of
    /// the cell it holds at new slot number `base`.
    Derived { base: u32, tag: u32, slot: u32 },
}

/// A constant a slot may hold (reals by their bits, so `-0` and NaNs are
/// told apart).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
enum Constant {
    Real(u64),
    Bool(bool),
}

/// How a function defines a value, as far as this pass asks.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Def {
    Const(Constant),
    /// `Load(cell, tag, slot)`.
    Load(Val, u32, u32),
}

/// What one `Alloc` puts in each slot: the value, and how it is defined
/// if it is a constant or a load; and the function (by index) it is in.
struct Site {
    func: usize,
    slots: Vec<(Val, Option<Def>)>,
}

/// How many rounds [`shrink_cells`] makes at most.
const ROUNDS: usize = 8;

/// [`drop_dead_slots`] and `simplify` until no cell shrinks: two slots of a
/// cell hold the same value at every `Alloc` often only once the loads
/// that fill them, from the previous cell of a loop's tape, read one slot
/// and `simplify` has merged them.
pub fn shrink_cells(m: &mut Module) {
    // The slots of the cells made.
    let size = |m: &Module| -> usize {
        m.allocated_tags()
            .iter()
            .map(|t| m.cells.get(t).map_or(0, Vec::len))
            .sum()
    };
    let mut before = size(m);
    // The lengths of calls' results, for `lengths` (calls and signatures
    // stay as they are here): only where some length is read.
    let mut reads_lengths = false;
    for f in &m.funcs {
        f.body
            .for_each_inst(&mut |i| reads_lengths |= matches!(i.op, Op::VecLen(_)));
    }
    let results = reads_lengths.then(|| super::lengths::result_lengths(m));
    for round in 0..ROUNDS {
        let retargeted = match &results {
            Some(r) => lengths::read_lengths_elsewhere(m, r),
            None => vec![false; m.funcs.len()],
        };
        let mut changed = base::timing::time("drop-dead-slots", || drop_dead_slots(m));
        for (c, r) in changed.iter_mut().zip(retargeted) {
            *c |= r;
        }
        // The first round simplifies every function (`results` before
        // this pass removes dead code only); later ones what the round
        // changed, the rest being simplified already.
        base::timing::time("simplify", || {
            if round == 0 {
                super::simplify::simplify(m)
            } else {
                super::simplify::simplify_changed(m, &changed)
            }
        });
        let after = size(m);
        if after == before {
            break;
        }
        before = after;
    }
}

/// Keeps only the slots worth storing, for every member, and the layouts
/// of the tags some operation still names. Says which functions it
/// changed.
pub fn drop_dead_slots(m: &mut Module) -> Vec<bool> {
    let mut keep = HashSet::default();
    let mut live = live::live_slots(m, &keep);
    if uses_memo_tables(m) {
        // Keeping more slots only tells more cells apart: once suffices.
        keep = merged_by_dropping(m, &|tag, slot| live.contains(&(tag, slot)));
        if !keep.is_empty() {
            live = live::live_slots(m, &keep);
        }
    }
    let removed = live::remove_dead(m, &live, &keep);
    let mut read: HashMap<u32, Vec<u32>> = HashMap::default();
    let mut sites: HashMap<u32, Vec<Site>> = HashMap::default();
    let defs: Vec<HashMap<Val, Def>> = m.funcs.iter().map(definitions).collect();
    let mut loaded: HashSet<(u32, u32)> = HashSet::default();
    for f in &m.funcs {
        f.body.for_each_inst(&mut |i| {
            if let Op::Load(_, tag, slot) = i.op {
                loaded.insert((tag, slot));
            }
        });
    }
    for (func, f) in m.funcs.iter().enumerate() {
        let made = cells_made(f);
        let known = Known {
            defs: &defs[func],
            made: &made,
            loaded: &loaded,
        };
        scan(&f.body, func, &known, &mut read, &mut sites);
    }
    for tag in &keep {
        let width = m.cells.get(tag).map_or(0, Vec::len) as u32;
        read.entry(*tag).or_default().extend(0..width);
    }
    for slots in read.values_mut() {
        slots.sort_unstable();
        slots.dedup();
    }
    let classes = classes::classes(m, &read, &sites, &defs);
    let mut fates: HashMap<(u32, u32), Fate> = HashMap::default();
    for (tag, slots) in read {
        let sites = sites.remove(&tag).unwrap_or_default();
        let width = m.cells.get(&tag).map_or(0, Vec::len);
        let class = classes.get(&tag).map_or(&[][..], Vec::as_slice);
        for (slot, fate) in fates_of(&slots, &sites, width, class) {
            fates.insert((tag, slot), fate);
        }
    }
    let named = named_tags(m);
    let cells = std::mem::take(&mut m.cells);
    m.cells = cells
        .into_iter()
        .filter(|(tag, _)| named.contains(tag))
        .map(|(tag, slots)| (tag, kept_slots(tag, &slots, &fates)))
        .collect();
    m.funcs
        .iter_mut()
        .zip(removed)
        .map(|(f, removed)| rewrite(&mut f.body, &fates, &mut f.types) || removed)
        .collect()
}

/// Does `m` look cells up in memo tables?
pub(super) fn uses_memo_tables(m: &Module) -> bool {
    let mut memo = false;
    for f in &m.funcs {
        f.body.for_each_inst(&mut |i| {
            memo |= matches!(i.op, Op::MemoGet(..) | Op::MemoPut(..));
        });
    }
    memo
}

/// The members two of whose `Alloc`s in one function store the same in
/// every slot `kept` says stays but not in all: dropping the others would
/// make the cells equal, and `simplify` would merge them. A memo table tells
/// cells apart by identity, and what it records for a cell was computed
/// from all of the cell, also from slots whose loads `simplify` answered
/// with what the `Alloc` stored (no `Load` is left to make them live):
/// such a merge made a lookup of one cell find what was recorded for the
/// other (the sensitivity of a chain of closures of run-time length, cut
/// short: `tests/regressions/reverse-closure-chain-run-time-depth.vlad`).
pub(super) fn merged_by_dropping(m: &Module, kept: &dyn Fn(u32, u32) -> bool) -> HashSet<u32> {
    let mut out = HashSet::default();
    for f in &m.funcs {
        merged_in(&f.body, kept, &mut vec![HashMap::default()], &mut out);
    }
    out
}

/// The `Alloc`s that dominate a point, as `simplify` finds them: by
/// member, zero mark and kept slots' values, the values of all slots.
type Made = HashMap<(u32, bool, Vec<Val>), Vec<Val>>;

/// [`merged_by_dropping`] in a block, where `scopes` holds the `Alloc`s
/// of the blocks around it before it.
fn merged_in(
    b: &Block,
    kept: &dyn Fn(u32, u32) -> bool,
    scopes: &mut Vec<Made>,
    out: &mut HashSet<u32>,
) {
    for i in &b.insts {
        let (tag, zero, args) = match &i.op {
            Op::Alloc(tag, args) => (*tag, false, args),
            Op::AllocZero(tag, args) => (*tag, true, args),
            Op::If { then_, else_, .. } => {
                for arm in [then_, else_] {
                    scopes.push(HashMap::default());
                    merged_in(arm, kept, scopes, out);
                    scopes.pop();
                }
                continue;
            }
            _ => continue,
        };
        let kept: Vec<Val> = (0..args.len())
            .filter(|s| kept(tag, *s as u32))
            .map(|s| args[s])
            .collect();
        if kept.len() == args.len() {
            continue;
        }
        let key = (tag, zero, kept);
        match scopes.iter().rev().find_map(|s| s.get(&key)) {
            Some(all) if all != args => {
                out.insert(tag);
            }
            Some(_) => {}
            None => {
                if let Some(top) = scopes.last_mut() {
                    top.insert(key, args.clone());
                }
            }
        }
    }
}

/// The tags the operations of `m` name.
fn named_tags(m: &Module) -> std::collections::BTreeSet<u32> {
    let mut out = std::collections::BTreeSet::new();
    for f in &m.funcs {
        f.body.for_each_inst(&mut |i| out.extend(i.op.tag()));
    }
    out
}

/// The layout of member `tag` once only the slots stored are: those whose
/// fate is a slot, at their new numbers (as [`rewrite`] keeps them in an
/// `Alloc`).
fn kept_slots(tag: u32, slots: &[Ty], fates: &HashMap<(u32, u32), Fate>) -> Vec<Ty> {
    let mut kept: Vec<(u32, Ty)> = slots
        .iter()
        .enumerate()
        .filter_map(|(s, t)| match fates.get(&(tag, s as u32)) {
            Some(Fate::Slot(n)) => Some((*n, *t)),
            _ => None,
        })
        .collect();
    kept.sort_by_key(|(n, _)| *n);
    kept.dedup_by_key(|(n, _)| *n);
    kept.into_iter().map(|(_, t)| t).collect()
}

/// The fates of the slots `read` of one member of `width` slots, given
/// what its `Alloc`s store and the class of each slot (slots of a class
/// hold equal values in every cell: [`classes`]). Without any `Alloc`
/// (cells never made) every slot keeps its number.
fn fates_of(read: &[u32], sites: &[Site], width: usize, class: &[u32]) -> Vec<(u32, Fate)> {
    if sites.is_empty()
        || sites.iter().any(|site| site.slots.len() != width)
        || class.len() != width
        || read.iter().any(|s| *s as usize >= width)
    {
        // No cell is made, or a cell or a load disagrees with the layout
        // (which the verifier rejects): keep every slot where it is.
        return (0..width as u32)
            .chain(read.iter().copied())
            .map(|s| (s, Fate::Slot(s)))
            .collect();
    }
    let column = |s: u32| -> Vec<(Val, Option<Def>)> {
        sites.iter().map(|site| site.slots[s as usize]).collect()
    };
    let constant = |d: Option<Def>| match d {
        Some(Def::Const(c)) => Some(c),
        _ => None,
    };
    // The first read slot holding each value at the first site.
    let mut at_first: HashMap<Val, u32> = HashMap::default();
    for &b in read {
        at_first.entry(sites[0].slots[b as usize].0).or_insert(b);
    }
    // The slots whose value every site loads from the cell it stores in
    // another read slot (the same for every site), by the same member and
    // slot: (that other slot, the member, the slot loaded).
    let derive = |s: u32| -> Option<(u32, u32, u32)> {
        let Some(Def::Load(x, tag, slot)) = sites[0].slots[s as usize].1 else {
            return None;
        };
        let base = at_first
            .get(&x)
            .copied()
            .filter(|&b| b != s && constant(sites[0].slots[b as usize].1).is_none())?;
        sites
            .iter()
            .all(|site| {
                matches!(site.slots[s as usize].1,
                    Some(Def::Load(x, t, k)) if x == site.slots[base as usize].0 && (t, k) == (tag, slot))
            })
            .then_some((base, tag, slot))
    };
    let derived: HashMap<u32, (u32, u32, u32)> = read
        .iter()
        .filter_map(|&s| derive(s).map(|d| (s, d)))
        .collect();
    // A derived slot's base stays stored (it is not derived itself).
    let derived: HashMap<u32, (u32, u32, u32)> = derived
        .iter()
        .filter(|(_, (base, ..))| !derived.contains_key(base))
        .map(|(s, d)| (*s, *d))
        .collect();
    // The slot standing for each read slot: the first one of its class.
    let mut first_of: HashMap<u32, u32> = HashMap::default();
    let mut kept: Vec<u32> = Vec::new();
    let mut stands: Vec<(u32, Result<u32, Constant>)> = Vec::new();
    for &s in read {
        let col = column(s);
        let same_constant =
            constant(col[0].1).filter(|c| col.iter().all(|(_, d)| constant(*d) == Some(*c)));
        if let Some(c) = same_constant {
            stands.push((s, Err(c)));
            continue;
        }
        if derived.contains_key(&s) {
            continue;
        }
        let rep = *first_of.entry(class[s as usize]).or_insert(s);
        if rep == s {
            kept.push(s);
        }
        stands.push((s, Ok(rep)));
    }
    let rank: HashMap<u32, u32> = kept
        .iter()
        .enumerate()
        .map(|(i, s)| (*s, i as u32))
        .collect();
    let stood: HashMap<u32, Result<u32, Constant>> = stands.iter().copied().collect();
    // A base holds a cell at every site, never a constant, and is not
    // derived: it is stored, at its representative's number.
    let derived_fates: Vec<(u32, Fate)> = derived
        .iter()
        .map(|(&s, &(base, tag, slot))| {
            let base = match stood[&base] {
                Ok(rep) => rank[&rep],
                Err(_) => unreachable!("a constant slot holds no cell to load from"),
            };
            (s, Fate::Derived { base, tag, slot })
        })
        .collect();
    stands
        .iter()
        .map(|&(s, r)| {
            let fate = match r {
                Ok(rep) => Fate::Slot(rank[&rep]),
                Err(c) => Fate::Const(c),
            };
            (s, fate)
        })
        .chain(derived_fates)
        .collect()
}

/// The constants and loads a function defines, by value.
fn definitions(f: &Func) -> HashMap<Val, Def> {
    fn walk(b: &Block, out: &mut HashMap<Val, Def>) {
        for i in &b.insts {
            match (&i.op, i.results.first()) {
                (Op::F64Const(x), Some(r)) => {
                    out.insert(*r, Def::Const(Constant::Real(x.to_bits())));
                }
                (Op::BoolConst(x), Some(r)) => {
                    out.insert(*r, Def::Const(Constant::Bool(*x)));
                }
                (Op::Load(cell, tag, slot), Some(r)) => {
                    out.insert(*r, Def::Load(*cell, *tag, *slot));
                }
                (Op::If { then_, else_, .. }, _) => {
                    walk(then_, out);
                    walk(else_, out);
                }
                _ => {}
            }
        }
    }
    let mut out = HashMap::default();
    walk(&f.body, &mut out);
    out
}

/// The cells a function makes with `Alloc`: member and operands.
fn cells_made(f: &Func) -> HashMap<Val, (u32, Vec<Val>)> {
    let mut out = HashMap::default();
    f.body.for_each_inst(&mut |i| {
        if let (Op::Alloc(tag, fields), [r]) = (&i.op, &i.results[..]) {
            out.insert(*r, (*tag, fields.clone()));
        }
    });
    out
}

/// What [`scan`] knows of one function's values.
struct Known<'a> {
    /// Its constants and loads.
    defs: &'a HashMap<Val, Def>,
    /// The cells it makes.
    made: &'a HashMap<Val, (u32, Vec<Val>)>,
    /// The (member, slot)s some `Load` of the module reads.
    loaded: &'a HashSet<(u32, u32)>,
}

impl Known<'_> {
    /// How each of the `fields` of an `Alloc` is defined: a constant or
    /// a load, or, where another of the fields is a cell made here with
    /// the value at a slot some `Load` reads, a load of that slot (the
    /// tape cell of reverse over reverse held the inner tape's cell and
    /// its link to the one before, the link that cell holds).
    fn defs_of(&self, fields: &[Val]) -> Vec<Option<Def>> {
        // What the cells among the fields hold, at slots some `Load`
        // reads: the first such place of each value.
        let mut held: HashMap<Val, Def> = HashMap::default();
        for c in fields {
            let Some((tag, args)) = self.made.get(c) else {
                continue;
            };
            for (k, a) in args.iter().enumerate() {
                if self.loaded.contains(&(*tag, k as u32)) {
                    held.entry(*a).or_insert(Def::Load(*c, *tag, k as u32));
                }
            }
        }
        fields
            .iter()
            .map(|v| self.defs.get(v).or_else(|| held.get(v)).copied())
            .collect()
    }
}

fn scan(
    b: &Block,
    func: usize,
    known: &Known,
    read: &mut HashMap<u32, Vec<u32>>,
    sites: &mut HashMap<u32, Vec<Site>>,
) {
    for i in &b.insts {
        match &i.op {
            Op::Load(_, tag, slot) => read.entry(*tag).or_default().push(*slot),
            Op::Alloc(tag, fields) | Op::AllocZero(tag, fields) => {
                let slots = fields.iter().copied().zip(known.defs_of(fields)).collect();
                sites.entry(*tag).or_default().push(Site { func, slots });
            }
            Op::If { then_, else_, .. } => {
                scan(then_, func, known, read, sites);
                scan(else_, func, known, read, sites);
            }
            _ => {}
        }
    }
}

/// Whether it changed anything.
fn rewrite(b: &mut Block, fates: &HashMap<(u32, u32), Fate>, types: &mut Vec<Ty>) -> bool {
    let mut changed = false;
    let insts = std::mem::take(&mut b.insts);
    b.insts.reserve(insts.len());
    for mut i in insts {
        match &mut i.op {
            Op::Load(cell, tag, slot) => match fates.get(&(*tag, *slot)) {
                Some(&Fate::Derived {
                    base,
                    tag: t,
                    slot: k,
                }) => {
                    // The cell the base slot holds, then its slot, as
                    // member `t` keeps it: renumbered, a constant, or
                    // derived in turn.
                    let mut from = (*cell, *tag, base);
                    let (mut t, mut k) = (t, k);
                    loop {
                        let x = Val::new(types.len());
                        types.push(Ty::Ptr);
                        b.insts.push(Inst {
                            results: vec![x],
                            op: Op::Load(from.0, from.1, from.2),
                        });
                        match fates.get(&(t, k)) {
                            Some(&Fate::Derived { base, tag, slot }) => {
                                from = (x, t, base);
                                (t, k) = (tag, slot);
                            }
                            Some(Fate::Slot(n)) => {
                                i.op = Op::Load(x, t, *n);
                                break;
                            }
                            Some(Fate::Const(Constant::Real(bits))) => {
                                i.op = Op::F64Const(f64::from_bits(*bits));
                                break;
                            }
                            Some(Fate::Const(Constant::Bool(c))) => {
                                i.op = Op::BoolConst(*c);
                                break;
                            }
                            None => {
                                i.op = Op::Load(x, t, k);
                                break;
                            }
                        }
                    }
                    changed = true;
                }
                Some(Fate::Slot(n)) => {
                    changed |= *slot != *n;
                    *slot = *n
                }
                Some(Fate::Const(Constant::Real(bits))) => {
                    i.op = Op::F64Const(f64::from_bits(*bits));
                    changed = true;
                }
                Some(Fate::Const(Constant::Bool(x))) => {
                    i.op = Op::BoolConst(*x);
                    changed = true;
                }
                // Every load's slot has a fate.
                None => {}
            },
            Op::Alloc(tag, fields) | Op::AllocZero(tag, fields) => {
                let tag = *tag;
                let old = std::mem::take(fields);
                let mut kept: Vec<(u32, Val)> = old
                    .iter()
                    .copied()
                    .enumerate()
                    .filter_map(|(s, v)| match fates.get(&(tag, s as u32)) {
                        // A slot stands for itself where its new number is
                        // first given; its duplicates map to the same one.
                        Some(Fate::Slot(n)) => Some((*n, v)),
                        _ => None,
                    })
                    .collect();
                kept.sort_by_key(|(n, _)| *n);
                kept.dedup_by_key(|(n, _)| *n);
                let new: Vec<Val> = kept.into_iter().map(|(_, v)| v).collect();
                changed |= new != old;
                *fields = new;
            }
            Op::If { then_, else_, .. } => {
                changed |= rewrite(then_, fates, types);
                changed |= rewrite(else_, fates, types);
            }
            _ => {}
        }
        b.insts.push(i);
    }
    changed
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::inst as i;
    use crate::{Func, FuncId, Term, Ty, Val};
    use base::EntityRef;

    /// `main`: a cell of member #0 with a pointer and three reals, of which
    /// only the pointer and the last real are read, and the cell of member
    /// #1 it points to, whose first slot only is read.
    fn module() -> Module {
        let v = Val::new;
        let body = Block {
            insts: vec![
                i(&[0], Op::F64Const(1.0)),
                i(&[1], Op::F64Const(2.0)),
                i(&[2], Op::Alloc(1, vec![v(0), v(1)])),
                i(&[3], Op::Alloc(0, vec![v(2), v(0), v(1), v(0)])),
                i(&[4], Op::Load(v(3), 0, 3)),
                i(&[5], Op::Load(v(3), 0, 0)),
                i(&[6], Op::Load(v(5), 1, 0)),
                i(&[], Op::PrintReal(v(4))),
                i(&[], Op::PrintReal(v(6))),
            ],
            term: Term::Return(vec![]),
        };
        Module {
            funcs: vec![Func {
                name: "main".into(),
                params: vec![],
                returns: vec![],
                types: vec![
                    Ty::F64,
                    Ty::F64,
                    Ty::Ptr,
                    Ty::Ptr,
                    Ty::F64,
                    Ty::Ptr,
                    Ty::F64,
                ],
                body,
            }],
            main: Some(FuncId::new(0)),
            vectors: Default::default(),
            strings: vec![],
            cells: [
                (0, vec![Ty::Ptr, Ty::F64, Ty::F64, Ty::F64]),
                (1, vec![Ty::F64, Ty::F64]),
            ]
            .into(),
        }
    }

    #[test]
    fn drops_unread_and_constant_slots() {
        let mut m = module();
        drop_dead_slots(&mut m);
        let v = Val::new;
        let ops: Vec<&Op> = m.funcs[0].body.insts.iter().map(|i| &i.op).collect();
        // The constant 2, stored only in slots not read, is gone.
        assert_eq!(ops[0], &Op::F64Const(1.0));
        assert_eq!(ops[1], &Op::Alloc(1, vec![]));
        // Slot 3 always holds the constant 1.
        assert_eq!(ops[2], &Op::Alloc(0, vec![v(2)]));
        assert_eq!(ops[3], &Op::F64Const(1.0));
        assert_eq!(ops[4], &Op::Load(v(3), 0, 0));
        // Member #1's slot 0 always holds 1 too; its slot 1 is not read.
        assert_eq!(ops[5], &Op::F64Const(1.0));
        assert_eq!(m.cells, [(0, vec![Ty::Ptr]), (1, vec![])].into());
        assert_eq!(crate::verify::verify(&m), Ok(()));
    }

    /// `main` makes two cells of member #0 that differ only in their one
    /// slot, which nothing loads, and records each in a memo table: the
    /// slot stays, or the cells would become one.
    #[test]
    fn keeps_the_slots_that_tell_memo_keys_apart() {
        let v = Val::new;
        let body = Block {
            insts: vec![
                i(&[0], Op::F64Const(1.0)),
                i(&[1], Op::F64Const(2.0)),
                i(&[2], Op::Alloc(0, vec![v(0)])),
                i(&[3], Op::Alloc(0, vec![v(1)])),
                i(&[], Op::MemoPut(0, vec![v(2), v(3)])),
                i(&[], Op::MemoPut(0, vec![v(3), v(2)])),
            ],
            term: Term::Return(vec![]),
        };
        let mut m = Module {
            funcs: vec![Func {
                name: "main".into(),
                params: vec![],
                returns: vec![],
                types: vec![Ty::F64, Ty::F64, Ty::Ptr, Ty::Ptr],
                body,
            }],
            main: Some(FuncId::new(0)),
            vectors: Default::default(),
            strings: vec![],
            cells: [(0, vec![Ty::F64])].into(),
        };
        let mut plain = m.clone();
        drop_dead_slots(&mut m);
        assert_eq!(m.cells, [(0, vec![Ty::F64])].into());
        assert_eq!(crate::verify::verify(&m), Ok(()));
        // Without the memo table the slot is dead (and so are the cells).
        plain.funcs[0].body.insts.truncate(4);
        drop_dead_slots(&mut plain);
        assert!(plain.cells.get(&0).is_none_or(Vec::is_empty));
    }

    /// `f(x, y)` stores `(x, y, x)` and reads slots 2 and 0, which always
    /// hold the same value, so the cell keeps one of them.
    #[test]
    fn stores_a_value_filled_into_two_slots_once() {
        let v = Val::new;
        let mut m = Module {
            funcs: vec![Func {
                name: "f".into(),
                params: vec![Ty::F64, Ty::F64],
                returns: vec![Ty::F64],
                types: vec![Ty::F64, Ty::F64, Ty::Ptr, Ty::F64, Ty::F64, Ty::F64],
                body: Block {
                    insts: vec![
                        i(&[2], Op::Alloc(0, vec![v(0), v(1), v(0)])),
                        i(&[3], Op::Load(v(2), 0, 2)),
                        i(&[4], Op::Load(v(2), 0, 0)),
                        i(&[5], Op::FBin(crate::FBin::Add, v(3), v(4))),
                    ],
                    term: Term::Return(vec![v(5)]),
                },
            }],
            main: None,
            vectors: Default::default(),
            strings: vec![],
            cells: [(0, vec![Ty::F64, Ty::F64, Ty::F64])].into(),
        };
        drop_dead_slots(&mut m);
        let ops: Vec<&Op> = m.funcs[0].body.insts.iter().map(|i| &i.op).collect();
        assert_eq!(ops[0], &Op::Alloc(0, vec![v(0)]));
        assert_eq!(ops[1], &Op::Load(v(2), 0, 0));
        assert_eq!(ops[2], &Op::Load(v(2), 0, 0));
        assert_eq!(m.cells, [(0, vec![Ty::F64])].into());
        assert_eq!(crate::verify::verify(&m), Ok(()));
    }

    /// `f(l)` stores `l`, its `cdr` and its `car` in a cell of member #2
    /// (the tape cell of reverse mode over a list) and reads all three
    /// back: the cell keeps `l` only, and the other two are loaded from it.
    #[test]
    fn stores_a_cell_not_what_it_loaded_from_it() {
        let v = Val::new;
        let mut m = Module {
            funcs: vec![Func {
                name: "f".into(),
                params: vec![Ty::Ptr],
                returns: vec![Ty::Ptr, Ty::F64, Ty::Ptr],
                types: vec![
                    Ty::Ptr,
                    Ty::Ptr,
                    Ty::F64,
                    Ty::Ptr,
                    Ty::Ptr,
                    Ty::F64,
                    Ty::Ptr,
                ],
                body: Block {
                    insts: vec![
                        i(&[1], Op::Load(v(0), 1, 0)),
                        i(&[2], Op::Load(v(0), 1, 1)),
                        i(&[3], Op::Alloc(2, vec![v(0), v(1), v(2)])),
                        i(&[4], Op::Load(v(3), 2, 0)),
                        i(&[5], Op::Load(v(3), 2, 2)),
                        i(&[6], Op::Load(v(3), 2, 1)),
                    ],
                    term: Term::Return(vec![v(4), v(5), v(6)]),
                },
            }],
            main: None,
            vectors: Default::default(),
            strings: vec![],
            cells: [
                (1, vec![Ty::Ptr, Ty::F64]),
                (2, vec![Ty::Ptr, Ty::Ptr, Ty::F64]),
            ]
            .into(),
        };
        drop_dead_slots(&mut m);
        let f = &m.funcs[0];
        let ops: Vec<&Op> = f.body.insts.iter().map(|i| &i.op).collect();
        assert_eq!(ops[2], &Op::Alloc(2, vec![v(0)]));
        assert_eq!(ops[3], &Op::Load(v(3), 2, 0));
        // `car`: the cell, then its slot 1 (a new value, 7, for the cell).
        assert_eq!(ops[4], &Op::Load(v(3), 2, 0));
        assert_eq!(f.body.insts[4].results, vec![v(7)]);
        assert_eq!(ops[5], &Op::Load(v(7), 1, 1));
        assert_eq!(f.types[7], Ty::Ptr);
        // Member #1, read but never made here, keeps its layout.
        assert_eq!(
            m.cells,
            [(1, vec![Ty::Ptr, Ty::F64]), (2, vec![Ty::Ptr])].into()
        );
        assert_eq!(crate::verify::verify(&m), Ok(()));
    }

    /// Two cells of the member: both store `l` in slot 0 and its `car` in
    /// slot 2, but slot 1 holds `(cdr l)` in one and `l` in the other. Slot
    /// 2 is loaded from slot 0's cell; slot 1 stays.
    #[test]
    fn a_slot_one_site_fills_otherwise_stays() {
        let v = Val::new;
        let mut m = Module {
            funcs: vec![Func {
                name: "f".into(),
                params: vec![Ty::Ptr],
                returns: vec![Ty::Ptr, Ty::Ptr, Ty::F64],
                types: vec![
                    Ty::Ptr,
                    Ty::Ptr,
                    Ty::F64,
                    Ty::Ptr,
                    Ty::Ptr,
                    Ty::Ptr,
                    Ty::F64,
                    Ty::Ptr,
                ],
                body: Block {
                    insts: vec![
                        i(&[1], Op::Load(v(0), 1, 0)),
                        i(&[2], Op::Load(v(0), 1, 1)),
                        i(&[3], Op::Alloc(2, vec![v(0), v(1), v(2)])),
                        i(&[4], Op::Alloc(2, vec![v(0), v(0), v(2)])),
                        i(&[5], Op::Load(v(3), 2, 0)),
                        i(&[6], Op::Load(v(4), 2, 2)),
                        i(&[7], Op::Load(v(4), 2, 1)),
                    ],
                    term: Term::Return(vec![v(5), v(7), v(6)]),
                },
            }],
            main: None,
            vectors: Default::default(),
            strings: vec![],
            cells: [
                (1, vec![Ty::Ptr, Ty::F64]),
                (2, vec![Ty::Ptr, Ty::Ptr, Ty::F64]),
            ]
            .into(),
        };
        drop_dead_slots(&mut m);
        let ops: Vec<&Op> = m.funcs[0].body.insts.iter().map(|i| &i.op).collect();
        assert_eq!(ops[2], &Op::Alloc(2, vec![v(0), v(1)]));
        assert_eq!(ops[3], &Op::Alloc(2, vec![v(0), v(0)]));
        assert_eq!(ops[4], &Op::Load(v(3), 2, 0));
        // Slot 2: the cell in slot 0 (value 8, new), then its `car`.
        assert_eq!(ops[5], &Op::Load(v(4), 2, 0));
        assert_eq!(ops[6], &Op::Load(v(8), 1, 1));
        assert_eq!(ops[7], &Op::Load(v(4), 2, 1));
        assert_eq!(m.cells[&2], [Ty::Ptr, Ty::Ptr]);
        assert_eq!(crate::verify::verify(&m), Ok(()));
    }

    /// `f(x)` makes a cell of member #0 holding `x` and one of member #1
    /// holding what it loads from the first (a closure, then its bundle
    /// with a tangent), returns both cells, and prints the second's slot
    /// if `print`.
    fn copied(print: bool) -> Module {
        let v = Val::new;
        let mut insts = vec![
            i(&[1], Op::Alloc(0, vec![v(0)])),
            i(&[2], Op::Load(v(1), 0, 0)),
            i(&[3], Op::Alloc(1, vec![v(2)])),
            i(&[4], Op::Load(v(3), 1, 0)),
        ];
        if print {
            insts.push(i(&[], Op::PrintReal(v(4))));
        }
        Module {
            funcs: vec![Func {
                name: "f".into(),
                params: vec![Ty::F64],
                returns: vec![Ty::Ptr, Ty::Ptr],
                types: vec![Ty::F64, Ty::Ptr, Ty::F64, Ty::Ptr, Ty::F64],
                body: Block {
                    insts,
                    term: Term::Return(vec![v(1), v(3)]),
                },
            }],
            main: None,
            vectors: Default::default(),
            strings: vec![],
            cells: [(0, vec![Ty::F64]), (1, vec![Ty::F64])].into(),
        }
    }

    /// A slot read only to be stored in a slot nothing needs is not
    /// stored, nor is that one.
    #[test]
    fn a_slot_read_only_to_be_stored_again_is_dropped() {
        let mut m = copied(false);
        drop_dead_slots(&mut m);
        let ops: Vec<&Op> = m.funcs[0].body.insts.iter().map(|i| &i.op).collect();
        assert_eq!(ops, [&Op::Alloc(0, vec![]), &Op::Alloc(1, vec![])]);
        assert_eq!(m.cells, [(0, vec![]), (1, vec![])].into());
        assert_eq!(crate::verify::verify(&m), Ok(()));
        let mut m = copied(true);
        drop_dead_slots(&mut m);
        assert_eq!(m.cells, [(0, vec![Ty::F64]), (1, vec![Ty::F64])].into());
        assert_eq!(crate::verify::verify(&m), Ok(()));
    }

    fn output(m: &Module) -> Result<String, String> {
        let mut out = Vec::new();
        crate::eval::run(m, &mut &b""[..], &mut out)?;
        Ok(String::from_utf8_lossy(&out).into_owned())
    }

    #[test]
    fn the_evaluator_gives_the_same_output_after_it() {
        let before = output(&module());
        assert_eq!(before, Ok("11".to_string()));
        let mut m = module();
        drop_dead_slots(&mut m);
        assert_eq!(output(&m), before);
    }
}
