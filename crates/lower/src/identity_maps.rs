//! Tag maps that cost nothing: a `wrap` or `unwrap` of a union whose
//! cells it only copies under other tags becomes the identity.
//!
//! A tag has no bits at run time: the wrap of a real is that real, of a
//! pair its two parts wrapped, of a closure the transformed lambda over its
//! environment wrapped. So the map function of `wrap` (or `unwrap`) over a
//! union often loads each slot of the cell, maps the cells it points to by
//! maps of the same kind, and allocates a cell of the same layout under
//! the tag of the matching member of the result union. Given the same tag
//! as the operand's member, that new cell would be the old one: the map is
//! the identity, and a cell of the operand union stands for its image in
//! the result union. This module finds those maps in the lowered module,
//! gives each operand member's tag and its image's one number, and makes
//! the maps return their operand. Nested modes wrap and unwrap a tape at
//! every step of a loop; the interpreter wraps a list in O(1), where a
//! walk, a copy and two memo entries per cell were made
//! (grow-horner-rr: 38 memo lookups per step).
//!
//! A map is kept as it is when anything but that copy happens in it: a
//! member on which the operation fails (a run-time error), a lazy zero to
//! make first, a constant to box, a map of a cell that is not the identity
//! in turn. Tags are merged only where no dispatch then tests two of them
//! (the tags of one representation class, and the lazy zeros a dispatch on
//! it meets, stay distinct); a map whose merge would break that is kept.

use crate::lowerer::*;
use base::EntityRef;
use fir::{self, Block, FuncId, Inst, Op, StrId, Term, Ty, Val};
use flow::UnionOp;
use std::collections::HashMap;
use std::collections::{BTreeMap, HashSet};

/// What the check of a map's body knows of a value.
#[derive(Clone, Copy, PartialEq)]
enum Fact {
    /// Slot `.1` of the operand, a cell of tag `.0`.
    Slot(u32, u32),
    /// That slot mapped by a map that is the identity.
    Mapped(u32, u32),
    /// A copy of the operand from tag `.0` to tag `.1`.
    Copy(u32, u32),
    /// The result of a dispatch all of whose arms copy the operand.
    Image,
    /// `TagIs(operand, .0)`.
    Test(u32),
    True,
    /// Whether a memo lookup of the operand found it; `.0` is what it
    /// found.
    Found(Val),
}

/// A map's body as a copy: the tag pairs it copies between and the maps
/// it calls on the operand's slots.
#[derive(Default)]
struct Copies {
    pairs: Vec<(u32, u32)>,
    calls: Vec<FuncId>,
    /// The memo tables it looks up or records in.
    tables: Vec<u32>,
}

struct Check<'a> {
    m: &'a fir::Module,
    /// The layouts of the tags whose cells some `Alloc` makes.
    cells: &'a BTreeMap<u32, Vec<Ty>>,
    candidates: &'a HashSet<FuncId>,
    unknown_tag: Option<StrId>,
    facts: HashMap<Val, Fact>,
    out: Copies,
}

impl Check<'_> {
    /// Does the block end in the operand copied (`Some(())`), given the
    /// tag a test before it established?
    fn block(&mut self, b: &Block, known: Option<u32>) -> Option<()> {
        for inst in &b.insts {
            self.inst(inst)?;
        }
        match &b.term {
            Term::Yield(vs) | Term::Return(vs) if vs.len() == 1 => match self.facts.get(&vs[0])? {
                Fact::Copy(a, b) => {
                    if known.is_some_and(|k| k != *a) {
                        return None;
                    }
                    self.out.pairs.push((*a, *b));
                    Some(())
                }
                Fact::Image => Some(()),
                _ => None,
            },
            // The end of a dispatch no cell of the union reaches.
            Term::Error(s) if Some(*s) == self.unknown_tag => Some(()),
            _ => None,
        }
    }

    fn inst(&mut self, inst: &Inst) -> Option<()> {
        let operand = Val::new(0);
        let result = inst.results.first().copied();
        let fact = match &inst.op {
            Op::Count(_) => return Some(()),
            Op::Load(p, tag, slot) if *p == operand => Fact::Slot(*tag, *slot),
            Op::TagIs(p, tag) if *p == operand => Fact::Test(*tag),
            Op::BoolConst(true) => Fact::True,
            Op::Call(g, args) if args.len() == 1 && self.candidates.contains(g) => {
                let Fact::Slot(tag, slot) = *self.facts.get(&args[0])? else {
                    return None;
                };
                self.out.calls.push(*g);
                Fact::Mapped(tag, slot)
            }
            Op::Alloc(b, fields) => {
                let mut from = None;
                for (i, v) in fields.iter().enumerate() {
                    let (Fact::Slot(a, s) | Fact::Mapped(a, s)) = *self.facts.get(v)? else {
                        return None;
                    };
                    if s as usize != i || from.is_some_and(|f| f != a) {
                        return None;
                    }
                    from = Some(a);
                }
                let a = from?;
                if self.cells.get(&a) != self.cells.get(b) {
                    return None;
                }
                Fact::Copy(a, *b)
            }
            Op::MemoGet(t, key) if key == &[operand] && inst.results.len() == 2 => {
                self.out.tables.push(*t);
                Fact::Found(inst.results[1])
            }
            Op::MemoPut(t, vals) => {
                self.out.tables.push(*t);
                let image = |v: &Val| v == &operand || self.facts.get(v) == Some(&Fact::Image);
                return vals.iter().all(image).then_some(());
            }
            Op::If { cond, then_, else_ } => {
                match *self.facts.get(cond)? {
                    Fact::Test(a) => {
                        self.block(then_, Some(a))?;
                        self.block(else_, None)?;
                    }
                    Fact::True => {
                        self.block(then_, None)?;
                        self.block(else_, None)?;
                    }
                    // A lookup that found the operand's image gives it back.
                    Fact::Found(v) => {
                        if !then_.insts.is_empty() || then_.term != Term::Yield(vec![v]) {
                            return None;
                        }
                        self.block(else_, None)?;
                    }
                    _ => return None,
                }
                Fact::Image
            }
            _ => return None,
        };
        self.facts.insert(result?, fact);
        Some(())
    }
}

/// A union-find over tags.
struct Tags(BTreeMap<u32, u32>);

impl Tags {
    fn rep(&self, t: u32) -> u32 {
        let mut t = t;
        while let Some(p) = self.0.get(&t).filter(|p| **p != t) {
            t = *p;
        }
        t
    }

    fn merge(&mut self, a: u32, b: u32) {
        let (ra, rb) = (self.rep(a), self.rep(b));
        if ra != rb {
            self.0.insert(ra.max(rb), ra.min(rb));
        }
    }
}

impl Lowerer<'_> {
    /// Makes the `wrap` and `unwrap` maps that only copy their operand
    /// the identity (see the module's documentation). Runs once every
    /// function is lowered.
    pub(super) fn identity_maps(&mut self) {
        let mut candidates: HashSet<FuncId> = self
            .union_fns
            .iter()
            .filter(|(what, _)| {
                matches!(
                    what,
                    UnionFn::Map(UnionOp::Wrap(_) | UnionOp::Unwrap(_), _, None, _)
                )
            })
            .map(|(_, f)| *f)
            .collect();
        if candidates.is_empty() {
            return;
        }
        let allocated = self.module.allocated_tags();
        let cells: BTreeMap<u32, Vec<Ty>> = self
            .module
            .cells
            .iter()
            .filter(|(t, _)| allocated.contains(t))
            .map(|(t, slots)| (*t, slots.clone()))
            .collect();
        let unknown_tag = self
            .strings
            .get("error: internal error: a union cell with an unknown tag")
            .copied();
        let groups = self.dispatch_groups();
        let mut readers: HashMap<u32, Vec<FuncId>> = HashMap::new();
        for (i, f) in self.module.funcs.iter().enumerate() {
            memo_reads(&f.body, &mut |t| {
                readers.entry(t).or_default().push(FuncId::new(i))
            });
        }
        loop {
            // The maps that copy, assuming every candidate is the identity.
            let mut copies = Vec::new();
            for f in candidates
                .iter()
                .copied()
                .collect::<std::collections::BTreeSet<_>>()
            {
                let mut check = Check {
                    m: &self.module,
                    cells: &cells,
                    candidates: &candidates,
                    unknown_tag,
                    facts: HashMap::new(),
                    out: Copies::default(),
                };
                let func = check.m.func(f);
                if func.params.len() == 1 && check.block(&func.body, None).is_some() {
                    copies.push((f, check.out));
                }
            }
            let copying: HashSet<FuncId> = copies.iter().map(|(f, _)| *f).collect();
            let mut dropped: Vec<FuncId> = candidates.difference(&copying).copied().collect();
            // Of those whose callees all copy, merge the tags of each in
            // turn unless that puts two tags of one dispatch together.
            let mut tags = Tags(BTreeMap::new());
            for (f, c) in &copies {
                // A map that stops recording what it gave (in its own
                // table and in those of the maps undoing it) would leave
                // the maps still reading those tables to walk again: a
                // round trip through an identity and a walk would walk
                // the whole structure at every step.
                let unread = |t: &u32| {
                    readers
                        .get(t)
                        .is_none_or(|fs| fs.iter().all(|g| copying.contains(g)))
                };
                if c.calls.iter().any(|g| !copying.contains(g)) || !c.tables.iter().all(unread) {
                    dropped.push(*f);
                    continue;
                }
                let before = tags.0.clone();
                for (a, b) in &c.pairs {
                    tags.merge(*a, *b);
                }
                if !groups.iter().all(|g| distinct(&tags, g)) {
                    tags.0 = before;
                    dropped.push(*f);
                }
            }
            if dropped.is_empty() {
                self.apply(&tags, &candidates);
                return;
            }
            for f in dropped {
                candidates.remove(&f);
            }
            if candidates.is_empty() {
                return;
            }
        }
    }

    /// Gives merged tags one number (and one layout, which they share)
    /// and makes the maps the identity.
    fn apply(&mut self, tags: &Tags, maps: &HashSet<FuncId>) {
        if !tags.0.is_empty() {
            for f in &mut self.module.funcs {
                retag_block(&mut f.body, tags);
            }
            self.module.cells.retain(|t, _| tags.rep(*t) == *t);
        }
        for f in maps {
            let func = &mut self.module.funcs[f.index()];
            func.types = func.params.clone();
            func.body = Block {
                insts: vec![],
                term: Term::Return(vec![Val::new(0)]),
            };
        }
    }
}

/// No two tags of the group became one.
fn distinct(tags: &Tags, group: &[u32]) -> bool {
    let mut seen = HashMap::new();
    group
        .iter()
        .all(|t| *seen.entry(tags.rep(*t)).or_insert(*t) == *t)
}

/// The memo tables a block looks up.
fn memo_reads(b: &Block, f: &mut impl FnMut(u32)) {
    for inst in &b.insts {
        match &inst.op {
            Op::MemoGet(t, _) => f(*t),
            Op::If { then_, else_, .. } => {
                memo_reads(then_, f);
                memo_reads(else_, f);
            }
            _ => {}
        }
    }
}

fn retag_block(b: &mut Block, tags: &Tags) {
    for inst in &mut b.insts {
        match &mut inst.op {
            Op::Alloc(t, _) | Op::AllocZero(t, _) | Op::TagIs(_, t) | Op::Load(_, t, _) => {
                *t = tags.rep(*t);
            }
            Op::If { then_, else_, .. } => {
                retag_block(then_, tags);
                retag_block(else_, tags);
            }
            _ => {}
        }
    }
}
