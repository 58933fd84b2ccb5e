//! FIR-to-FIR: the tags a pointer can have, over the whole module, and
//! the tag tests that decides.
//!
//! A union's cells all have tags of its representation class, and a
//! dispatch tests each of them; but which cells reach a dispatch is
//! narrower. The zero of a list is a lazy cell of a tag of its own, so a
//! dispatch on lists tests that tag too, after the members' tags: on a
//! list nothing ever zeroed (the primal list of a gradient), the test
//! keeps the dispatch from showing that the list's tag is known after it,
//! and the next dispatch on the list tests again (sumsq-R's forward sweep
//! tested the tags of each element eight times). Here every pointer value
//! gets the set of allocation sites that may have made the cell it points
//! to, a site being a function and a tag (its `Alloc`s of that tag): a
//! cell made here has its own, a load those stored in that slot at the
//! sites the cell may come from, a parameter those of every call's
//! argument, a result those of every return, a memo lookup those of what
//! its table was given (a `VecBuild`'s calls are calls; what a vector
//! holds is any cell). Sites, not tags, since the sensitivity lists of a
//! gradient share the tags of the primal list (their representation) and
//! hold lazy zeros; per allocation, up to [`SITES_PER_TAG`] per function
//! and tag (the rest of a function's allocations of a tag share one):
//! one site per function and tag made a list built at the top level and
//! the first cons of the gradient taken of it one site, and the list's
//! dispatches tested for the gradient's lazy zeros; one per allocation
//! without a bound was ten times slower on a recursive evaluator (18,710
//! sites, 0.7 s; 2,112 sites, 0.07 s; now 0.085 s). A tag test is false when
//! no site of the set makes that tag, true when all do, and inside the
//! arms of an undecided test (and after one whose other arm fails) the
//! set is narrowed to the sites that make, or do not make, the tag;
//! [`super::simplify`] then drops what they decided.
//!
//! Sets start empty and only grow, so the fixpoint is the least one. No
//! value from outside the module is a pointer: `main` and a library's
//! entries take none, and memo tables give back only what was put in.

use crate::{Block, Func, Module, Op, Term, Ty, Val};
use base::EntityRef;
use rustc_hash::FxHashMap as HashMap;

/// Sets of sites larger than this are not told apart from "any cell".
const MAX_SITES: usize = 32;
/// A function's allocations of one tag are sites of their own up to this
/// many; the rest share the last. Per function only, the top level's
/// cells of a list built there and of the gradient taken of it were one
/// site, and the list's dispatches tested for the gradient's lazy zeros.
const SITES_PER_TAG: usize = 8;
/// A fixpoint not reached in this many rounds decides nothing.
const MAX_ROUNDS: usize = 64;

/// The sites a pointer's cell may come from: a sorted set of their
/// numbers, or `None` for any.
type Tags = Option<Vec<u32>>;

fn join(into: &mut Tags, from: &Tags) -> bool {
    let Some(have) = into else {
        return false;
    };
    let Some(add) = from else {
        *into = None;
        return true;
    };
    let mut changed = false;
    for t in add {
        if let Err(i) = have.binary_search(t) {
            have.insert(i, *t);
            changed = true;
        }
    }
    if have.len() > MAX_SITES {
        *into = None;
    }
    changed
}

/// What the module's pointers can be, per function parameter and result,
/// per slot of a member and per memo table.
#[derive(Default)]
struct Facts {
    params: Vec<Vec<Tags>>,
    returns: Vec<Vec<Tags>>,
    /// The tag each site makes, by number.
    site_tags: Vec<u32>,
    /// Each function's sites' numbers, by the cell its allocation makes.
    func_sites: Vec<HashMap<Val, u32>>,
    /// What sites store in their slots, by (site, slot).
    slots: HashMap<(u32, u32), Tags>,
    memos: HashMap<u32, Tags>,
    changed: bool,
    /// Counts the changes: the number of the last one.
    stamp: u64,
    /// The number of the last change of each function's parameters, of
    /// each function's results, of the slots of each (tag, slot) and of
    /// each memo table.
    params_at: Vec<u64>,
    returns_at: Vec<u64>,
    slots_at: HashMap<(u32, u32), u64>,
    memos_at: HashMap<u32, u64>,
}

impl Facts {
    /// Joins `from` into `slot`, giving the change its number if it is one.
    fn add(slot: &mut Tags, from: &Tags, changed: &mut bool, stamp: &mut u64) -> Option<u64> {
        if join(slot, from) {
            *changed = true;
            *stamp += 1;
            Some(*stamp)
        } else {
            None
        }
    }
    fn param(&mut self, f: usize, i: usize, from: &Tags) {
        if let Some(at) = Self::add(
            &mut self.params[f][i],
            from,
            &mut self.changed,
            &mut self.stamp,
        ) {
            self.params_at[f] = at;
        }
    }
    fn ret(&mut self, f: usize, i: usize, from: &Tags) {
        if let Some(at) = Self::add(
            &mut self.returns[f][i],
            from,
            &mut self.changed,
            &mut self.stamp,
        ) {
            self.returns_at[f] = at;
        }
    }
    fn slot(&mut self, key: (u32, u32), from: &Tags) {
        let slot = self.slots.entry(key).or_insert_with(|| Some(Vec::new()));
        if let Some(at) = Self::add(slot, from, &mut self.changed, &mut self.stamp) {
            let tag = self
                .site_tags
                .get(key.0 as usize)
                .copied()
                .unwrap_or(u32::MAX);
            self.slots_at.insert((tag, key.1), at);
        }
    }
    fn memo(&mut self, table: u32, from: &Tags) {
        let slot = self.memos.entry(table).or_insert_with(|| Some(Vec::new()));
        if let Some(at) = Self::add(slot, from, &mut self.changed, &mut self.stamp) {
            self.memos_at.insert(table, at);
        }
    }
}

/// What a walk of a function reads of [`Facts`] besides its parameters:
/// the results of its callees, the slots it loads (by tag and slot) and
/// the memo tables it looks up.
struct Reads {
    callees: Vec<usize>,
    slots: Vec<(u32, u32)>,
    memos: Vec<u32>,
}

impl Reads {
    fn of(f: &Func) -> Reads {
        let mut callees = Vec::new();
        f.body.for_each_call(&mut |g, _, _| callees.push(g.index()));
        let (mut slots, mut memos) = (Vec::new(), Vec::new());
        f.body.for_each_inst(&mut |i| match i.op {
            Op::Load(_, tag, slot) => slots.push((tag, slot)),
            Op::MemoGet(table, _) => memos.push(table),
            _ => {}
        });
        callees.sort_unstable();
        callees.dedup();
        slots.sort_unstable();
        slots.dedup();
        memos.sort_unstable();
        memos.dedup();
        Reads {
            callees,
            slots,
            memos,
        }
    }

    /// Has any of it changed since change number `at`?
    fn changed_since(&self, facts: &Facts, f: usize, at: u64) -> bool {
        let after = |x: Option<&u64>| x.is_some_and(|x| *x > at);
        facts.params_at[f] > at
            || self.callees.iter().any(|&g| facts.returns_at[g] > at)
            || self.slots.iter().any(|k| after(facts.slots_at.get(k)))
            || self.memos.iter().any(|t| after(facts.memos_at.get(t)))
    }
}

/// Makes constants of the tag tests the sites of pointers decide (the
/// simplifier that follows in the pipeline drops what they decided).
pub fn known_tags(m: &mut Module) {
    let Some(mut facts) = fixpoint(m) else {
        return;
    };
    // At the fixpoint a walk adds nothing: it only gives each value's tags.
    for (i, f) in m.funcs.iter_mut().enumerate() {
        let mut env = Env::new(f, &facts.params[i], false);
        env.block(&f.body, i, &mut facts);
        env.decide(&mut f.body, &facts.site_tags);
    }
}

/// Per function, for the result of each tag test: the tags the cell it
/// tests may have (`None`: any), or `None` if the analysis does not
/// settle. Tests inside an arm another test decides are not walked, and
/// have none.
pub fn tested_tags(m: &Module) -> Option<Vec<HashMap<Val, Option<Vec<u32>>>>> {
    let mut facts = fixpoint(m)?;
    let mut out = Vec::with_capacity(m.funcs.len());
    for (i, f) in m.funcs.iter().enumerate() {
        let mut env = Env::new(f, &facts.params[i], true);
        env.block(&f.body, i, &mut facts);
        let tested = env
            .tested
            .into_iter()
            .map(|(r, sites)| {
                let tags = sites.map(|sites| {
                    let mut tags: Vec<u32> = sites
                        .iter()
                        .filter_map(|s| facts.site_tags.get(*s as usize).copied())
                        .collect();
                    tags.sort_unstable();
                    tags.dedup();
                    tags
                });
                (r, tags)
            })
            .collect();
        out.push(tested);
    }
    Some(out)
}

/// The sites of every pointer at the least fixpoint, or `None` if it is
/// not reached in [`MAX_ROUNDS`].
fn fixpoint(m: &Module) -> Option<Facts> {
    let mut facts = Facts {
        params: m
            .funcs
            .iter()
            .map(|f| vec![Some(Vec::new()); f.params.len()])
            .collect(),
        returns: m
            .funcs
            .iter()
            .map(|f| vec![Some(Vec::new()); f.returns.len()])
            .collect(),
        params_at: vec![0; m.funcs.len()],
        returns_at: vec![0; m.funcs.len()],
        ..Facts::default()
    };
    for f in &m.funcs {
        let mut allocs = Vec::new();
        sites(&f.body, &mut allocs);
        // Per tag: the sites made so far, the last of which takes the
        // allocations past the first SITES_PER_TAG.
        let mut by_tag: HashMap<u32, (u32, u32)> = HashMap::default();
        let mut by_alloc = HashMap::default();
        for (cell, t) in allocs {
            let new_site = |facts: &mut Facts| {
                facts.site_tags.push(t);
                facts.site_tags.len() as u32 - 1
            };
            let site = match by_tag.get_mut(&t) {
                Some((n, last)) if *n as usize >= SITES_PER_TAG => *last,
                Some((n, last)) => {
                    *n += 1;
                    *last = new_site(&mut facts);
                    *last
                }
                None => {
                    let site = new_site(&mut facts);
                    by_tag.insert(t, (1, site));
                    site
                }
            };
            by_alloc.insert(cell, site);
        }
        facts.func_sites.push(by_alloc);
    }
    // A walk adds only what the facts it reads give, and adding is
    // idempotent: a function none of whose facts changed since its last
    // walk began would add nothing, and is not walked again. The rounds
    // and what each adds stay those of walking every function (the
    // fixpoint of generated-3070 took seven rounds over the whole module).
    let reads: Vec<Reads> = m.funcs.iter().map(Reads::of).collect();
    let mut walked_at: Vec<Option<u64>> = vec![None; m.funcs.len()];
    let mut rounds = 0;
    loop {
        facts.changed = false;
        for (i, f) in m.funcs.iter().enumerate() {
            if let Some(at) = walked_at[i] {
                if !reads[i].changed_since(&facts, i, at) {
                    continue;
                }
            }
            walked_at[i] = Some(facts.stamp);
            let mut env = Env::new(f, &facts.params[i], false);
            env.block(&f.body, i, &mut facts);
        }
        if !facts.changed {
            break;
        }
        rounds += 1;
        if rounds == MAX_ROUNDS {
            return None;
        }
    }
    Some(facts)
}

/// The allocations of a block: the cell each makes, and its tag.
fn sites(b: &Block, out: &mut Vec<(Val, u32)>) {
    for inst in &b.insts {
        match &inst.op {
            Op::Alloc(tag, _) | Op::AllocZero(tag, _) => out.push((inst.results[0], *tag)),
            Op::If { then_, else_, .. } => {
                sites(then_, out);
                sites(else_, out);
            }
            _ => {}
        }
    }
}

/// The sites a function's values may come from.
struct Env {
    ptr: Vec<bool>,
    tags: Vec<Tags>,
    /// The tag tests (and constants) the sets decide so far: the arm a
    /// decided test does not take is not walked, so that the cells a
    /// dispatch would make of a lazy zero that never comes do not count.
    decided: HashMap<Val, bool>,
    /// The tag tests not decided, by result: the cell and the tag.
    tests: HashMap<Val, (Val, u32)>,
    /// The sites of the cell each tag test walked tests, by its result,
    /// when `record_tested` (only the last walk's are asked for: the
    /// fixpoint's walks would copy a set per test for nothing).
    tested: HashMap<Val, Tags>,
    record_tested: bool,
}

/// What nothing is known of.
const TOP: &Tags = &None;

impl Env {
    fn new(func: &Func, params: &[Tags], record_tested: bool) -> Self {
        let mut tags = vec![Some(Vec::new()); func.types.len()];
        tags[..params.len()].clone_from_slice(params);
        let ptr = func.types.iter().map(|t| *t == Ty::Ptr).collect();
        Env {
            ptr,
            tags,
            decided: HashMap::default(),
            tests: HashMap::default(),
            tested: HashMap::default(),
            record_tested,
        }
    }

    fn is_ptr(&self, v: Val) -> bool {
        self.ptr.get(v.index()).copied().unwrap_or(false)
    }

    fn of(&self, v: Val) -> &Tags {
        self.tags.get(v.index()).unwrap_or(TOP)
    }

    fn set(&mut self, v: Val, t: Tags) {
        if let Some(slot) = self.tags.get_mut(v.index()) {
            *slot = t;
        }
    }

    /// Walks a block of function `f`, adding to `facts` what it passes on.
    /// Gives what it yields (`None`: it does not yield).
    fn block(&mut self, b: &Block, f: usize, facts: &mut Facts) -> Option<Vec<Tags>> {
        for inst in &b.insts {
            match &inst.op {
                Op::BoolConst(k) => {
                    self.decided.insert(inst.results[0], *k);
                }
                Op::TagIs(p, tag) => {
                    if let Some(k) = self.test(*p, *tag, &facts.site_tags) {
                        self.decided.insert(inst.results[0], k);
                    }
                    if self.record_tested {
                        self.tested.insert(inst.results[0], self.of(*p).clone());
                    }
                }
                Op::Alloc(_, fields) | Op::AllocZero(_, fields) => {
                    let site = facts.func_sites[f]
                        .get(&inst.results[0])
                        .copied()
                        .unwrap_or(0);
                    for (slot, v) in fields.iter().enumerate() {
                        if self.is_ptr(*v) {
                            facts.slot((site, slot as u32), self.of(*v));
                        }
                    }
                    self.set(inst.results[0], Some(vec![site]));
                }
                Op::Load(p, tag, slot) => {
                    let r = inst.results[0];
                    if self.is_ptr(r) {
                        let t = match self.of(*p) {
                            None => None,
                            Some(from) => {
                                let mut t = Some(Vec::new());
                                for s in from {
                                    if facts.site_tags.get(*s as usize) == Some(tag) {
                                        if let Some(x) = facts.slots.get(&(*s, *slot)) {
                                            join(&mut t, x);
                                        }
                                    }
                                }
                                t
                            }
                        };
                        self.set(r, t);
                    }
                }
                Op::Call(g, args) | Op::CallAt(g, args, _) => {
                    let g = g.index();
                    for (i, a) in args.iter().enumerate() {
                        if self.is_ptr(*a) && i < facts.params[g].len() {
                            facts.param(g, i, self.of(*a));
                        }
                    }
                    for (j, r) in inst.results.iter().enumerate() {
                        if let Some(t) = facts.returns[g].get(j).cloned() {
                            self.set(*r, t);
                        }
                    }
                }
                // The calls of a `VecBuild` pass its arguments (and an
                // index, no pointer); its elements are any cells. A state
                // is the first one's, then what each call returns last.
                Op::VecBuild {
                    func, args, state, ..
                } => {
                    let g = func.index();
                    for (i, a) in args.iter().enumerate() {
                        if self.is_ptr(*a) && i < facts.params[g].len() {
                            facts.param(g, i, self.of(*a));
                        }
                    }
                    if let Some(v) = state {
                        let i = args.len();
                        if i < facts.params[g].len() {
                            facts.param(g, i, self.of(*v));
                            if let Some(t) = facts.returns[g].last().cloned() {
                                facts.param(g, i, &t);
                            }
                        }
                    }
                    self.set(inst.results[0], None);
                }
                Op::MemoGet(table, _) => {
                    let t = facts.memos.get(table).cloned();
                    if let Some(r) = inst.results.get(1) {
                        self.set(*r, t.unwrap_or_else(|| Some(Vec::new())));
                    }
                }
                Op::MemoPut(table, args) => {
                    if let Some(v) = args.last() {
                        facts.memo(*table, self.of(*v));
                    }
                }
                Op::If { cond, then_, else_ } => {
                    let taken = self.decided.get(cond).copied();
                    let a = if taken == Some(false) {
                        None
                    } else {
                        self.block(then_, f, facts)
                    };
                    let b = if taken == Some(true) {
                        None
                    } else {
                        self.block(else_, f, facts)
                    };
                    for (i, r) in inst.results.iter().enumerate() {
                        let mut t = Some(Vec::new());
                        for arm in [&a, &b].into_iter().flatten() {
                            join(&mut t, &arm[i]);
                        }
                        self.set(*r, t);
                    }
                }
                _ => {
                    // Results of other instructions are not pointers.
                    for r in &inst.results {
                        if self.is_ptr(*r) {
                            self.set(*r, None);
                        }
                    }
                }
            }
        }
        match &b.term {
            Term::Yield(vs) => Some(vs.iter().map(|v| self.of(*v).clone()).collect()),
            Term::Return(vs) => {
                for (j, v) in vs.iter().enumerate() {
                    if self.is_ptr(*v) {
                        facts.ret(f, j, self.of(*v));
                    }
                }
                None
            }
            Term::TailCall(g, vs) => {
                let g = g.index();
                for (i, v) in vs.iter().enumerate() {
                    if self.is_ptr(*v) && i < facts.params[g].len() {
                        facts.param(g, i, self.of(*v));
                    }
                }
                for j in 0..facts.returns[f].len() {
                    if let Some(t) = facts.returns[g].get(j).cloned() {
                        facts.ret(f, j, &t);
                    }
                }
                None
            }
            Term::Error(_) | Term::ErrorWith(_) => None,
        }
    }

    /// Does the cell `p` points to have tag `tag`, if its sites say?
    fn test(&self, p: Val, tag: u32, site_tags: &[u32]) -> Option<bool> {
        let set = self.of(p).as_ref()?;
        let makes = |s: &u32| site_tags.get(*s as usize) == Some(&tag);
        if set.iter().all(makes) && !set.is_empty() {
            Some(true)
        } else if !set.iter().any(makes) {
            Some(false)
        } else {
            None
        }
    }

    /// Replaces the tag tests the sites decide by constants; says whether
    /// it did. Inside the arms of a test the cell's sites are those
    /// that make (or do not make) the tag tested, and so they are after
    /// the test when its other arm fails, so a dispatch's last test, of
    /// the one tag left, is decided too.
    fn decide(&mut self, b: &mut Block, site_tags: &[u32]) -> bool {
        let mut did = false;
        let mut restore = Vec::new();
        for inst in &mut b.insts {
            match &mut inst.op {
                Op::TagIs(p, tag) => {
                    if let Some(k) = self.test(*p, *tag, site_tags) {
                        inst.op = Op::BoolConst(k);
                        did = true;
                    } else if let Some(r) = inst.results.first() {
                        self.tests.insert(*r, (*p, *tag));
                    }
                }
                Op::If { cond, then_, else_ } => {
                    let test = self.tests.get(cond).copied();
                    let mut goes_on = Vec::new();
                    for (arm, b) in [(then_, true), (else_, false)] {
                        let saved = test.map(|(p, tag)| self.narrow(p, tag, b, site_tags));
                        did |= self.decide(arm, site_tags);
                        if let Some((p, old)) = saved {
                            self.tags[p.index()] = old;
                        }
                        goes_on.push(matches!(arm.term, Term::Yield(_)));
                    }
                    if let (Some((p, tag)), [t, e]) = (test, goes_on.as_slice()) {
                        if t != e {
                            restore.push(self.narrow(p, tag, *t, site_tags));
                        }
                    }
                }
                _ => {}
            }
        }
        for (p, old) in restore.into_iter().rev() {
            self.tags[p.index()] = old;
        }
        did
    }

    /// Narrows the sites of `p`'s cell to those that make `tag`
    /// (`has`) or do not; gives back what they were.
    fn narrow(&mut self, p: Val, tag: u32, has: bool, site_tags: &[u32]) -> (Val, Tags) {
        let narrowed = self.of(p).as_ref().map(|set| {
            set.iter()
                .copied()
                .filter(|s| (site_tags.get(*s as usize) == Some(&tag)) == has)
                .collect()
        });
        (p, std::mem::replace(&mut self.tags[p.index()], narrowed))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::inst as i;
    use crate::FuncId;

    /// `main` makes a list cell `#1(#0())` and passes it to `f`, which
    /// tests its tag for #1, for #2 (a lazy zero nothing makes) and the
    /// tag of its tail for #0, and makes a #2 cell of its own that `g`
    /// tests: only that test stays.
    fn module() -> Module {
        let v = Val::new;
        let main = Func {
            name: "main".into(),
            params: vec![],
            returns: vec![],
            types: vec![Ty::Ptr, Ty::Ptr],
            body: Block {
                insts: vec![
                    i(&[0], Op::Alloc(0, vec![])),
                    i(&[1], Op::Alloc(1, vec![v(0)])),
                    i(&[], Op::Call(FuncId::new(1), vec![v(1)])),
                ],
                term: Term::Return(vec![]),
            },
        };
        let f = Func {
            name: "f".into(),
            params: vec![Ty::Ptr],
            returns: vec![],
            types: vec![Ty::Ptr, Ty::Bool, Ty::Bool, Ty::Ptr, Ty::Bool, Ty::Ptr],
            body: Block {
                insts: vec![
                    i(&[1], Op::TagIs(v(0), 1)),
                    i(&[2], Op::TagIs(v(0), 2)),
                    i(&[3], Op::Load(v(0), 1, 0)),
                    i(&[4], Op::TagIs(v(3), 0)),
                    i(&[], Op::PrintBool(v(1))),
                    i(&[], Op::PrintBool(v(2))),
                    i(&[], Op::PrintBool(v(4))),
                    i(&[5], Op::AllocZero(2, vec![v(0)])),
                    i(&[], Op::Call(FuncId::new(2), vec![v(5)])),
                    i(&[], Op::Call(FuncId::new(2), vec![v(0)])),
                ],
                term: Term::Return(vec![]),
            },
        };
        let g = Func {
            name: "g".into(),
            params: vec![Ty::Ptr],
            returns: vec![],
            types: vec![Ty::Ptr, Ty::Bool],
            body: Block {
                insts: vec![i(&[1], Op::TagIs(v(0), 2)), i(&[], Op::PrintBool(v(1)))],
                term: Term::Return(vec![]),
            },
        };
        Module {
            funcs: vec![main, f, g],
            main: Some(FuncId::new(0)),
            vectors: Default::default(),
            strings: vec![],
            cells: [(0, vec![]), (1, vec![Ty::Ptr]), (2, vec![Ty::Ptr])].into(),
        }
    }

    #[test]
    fn tests_the_sites_decide_are_constants() {
        let mut m = module();
        known_tags(&mut m);
        let prints: Vec<Op> = m.funcs[1]
            .body
            .insts
            .iter()
            .filter(|i| matches!(i.op, Op::BoolConst(_) | Op::TagIs(..)))
            .map(|i| i.op.clone())
            .collect();
        assert_eq!(
            prints,
            vec![
                Op::BoolConst(true),
                Op::BoolConst(false),
                Op::BoolConst(true)
            ]
        );
        assert!(m.funcs[2]
            .body
            .insts
            .iter()
            .any(|i| matches!(i.op, Op::TagIs(_, 2))));
        assert_eq!(crate::verify::verify(&m), Ok(()));
    }
}
