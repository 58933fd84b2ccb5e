//! Cell slots that every cell of a chain holds alike are not stored: the
//! code that reads them gets the value once, as a parameter.
//!
//! Why: the tape of reverse mode over a loop is a chain of cells, one per
//! iteration, each holding what the backward sweep reads of its iteration,
//! and lowering stores in each the whole state the loop body closed over,
//! including what the loop passes unchanged to itself. Softmax regression
//! over a list stored the twelve weights of a step in the tape cell of
//! every point (28 slots where 16 are the point's own), and its forward
//! sweep kept them across its call to itself only to store them.
//!
//! For a member `T` and one of its scalar slots `k`:
//! - a link is a pointer slot of `T` whose cell, when it is a `T`, holds
//!   at `k` what the cell linking to it holds there. Every `Alloc` of `T`
//!   must show it: the value it stores at `k` is the one the cell it
//!   stores in the link holds at `k`, or that cell is never a `T`. What a
//!   pointer holds at `k` ([`Fact`]) follows the code: an `Alloc` of `T`
//!   holds its operand, one of another member nothing; a load of a link
//!   what the cell loaded from holds; an `If` what its arms yield (a value
//!   defined inside an arm is not visible after it); a call what the
//!   callee's result holds, which is one of its parameters or what the
//!   cell in one of them holds ([`Analysis::rets`]). Links and results
//!   start optimistic and are refined to a fixpoint (cells are made in
//!   order, so a link is checked against cells made before).
//! - every `Load` of `T` slot `k` then reads a value the code already has:
//!   an operand of the `Alloc`, or what the cell in a parameter holds,
//!   which becomes a new parameter of the function and of every function
//!   whose calls pass that cell on (their callers pass the value).
//!
//! When every such load is accounted for (no function a `VecBuild` calls,
//! and none without callers, takes a new parameter), slot `k` is dropped:
//! its loads read the value instead and the `Alloc`s no longer store it.
//!
//! The slot may be a pointer (a vector every step of a loop reads), and
//! a chain may pass through cells of other members: the first steps of a
//! loop, whose index the analysis knows, are members of their own, and
//! the chain ends in a cell of yet another (reverse mode's tape over a
//! vector ends in a cell holding the vector, for the backward sweep's
//! zero sensitivity). The members a value is loaded or tested as, with
//! those whose cells a pointer slot of theirs gives, are analysed as one
//! class, each with its slot of the type analysed: an `Alloc` of any
//! holds what it stores there, and the pointer slots of all are links.
//! With the vector dropped from every member, a chain of links and reals
//! ending in an empty cell is left, which `stacks` makes a buffer. A
//! pointer slot is tried only so, with two members or more, and only when
//! what it holds is never loaded from or tested as a cell.
//!
//! An analysis walks only the functions using a member and their callers
//! ([`graph`]), each again only when what it reads of others changed.

mod graph;

use crate::{Block, Func, Inst, Module, Op, Term, Ty, Val};
use base::EntityRef;
use graph::{Chains, Fixed};
use rustc_hash::FxHashMap as HashMap;
use std::collections::{BTreeMap, BTreeSet};

/// What a cell holds at the slot under analysis, if it is a cell of the
/// member.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Fact {
    /// It never is one.
    None,
    /// This value of the function (for a function's result: one of its
    /// parameters).
    Val(Val),
    /// What the cell in this parameter holds.
    Slot(u32),
    /// Not known.
    Any,
}

fn join(a: Fact, b: Fact) -> Fact {
    match (a, b) {
        (Fact::None, x) | (x, Fact::None) => x,
        (x, y) if x == y => x,
        _ => Fact::Any,
    }
}

/// Drops every slot the module's chains of cells hold alike.
pub fn drop_invariant_slots(m: &mut Module) {
    let memo = super::fields::uses_memo_tables(m);
    let fixed = Fixed::of(m);
    let tags = chained(m);
    let mut chains = None;
    // Found again after each slot dropped.
    let mut base = None;
    for tag in tags {
        let Some(layout) = m.cells.get(&tag).cloned() else {
            continue;
        };
        // From the last slot down: dropping one renumbers those after it.
        // A slot some load reads from a cell not accounted for even when
        // every value is taken for equal is left alone at once (tape cells
        // of nested modes have hundreds of slots, and most are loaded
        // from cells that came out of other cells).
        let b = base.get_or_insert_with(|| Base::of(m, &fixed));
        let mut open = Analysis::new(m, &fixed, b, Members::from([(tag, None)]), false);
        let Some(facts) = open.run_facts() else {
            continue;
        };
        let cells = read_as_cells(m, &fixed, tag);
        let slots: Vec<u32> = (0..layout.len() as u32)
            .rev()
            .filter(|s| layout[*s as usize] != Ty::Ptr || !cells.contains(s))
            .filter(|s| accounted(m, &fixed, &Members::from([(tag, Some(*s))]), &facts))
            .collect();
        // Only pointer slots are tried with the class: a vector a loop
        // reads is what its first steps and its end hold too, and a
        // class's analysis walks every function using one of its members
        // and their callers (generated-3070's build took half again as
        // long with every slot tried both ways, when each analysis walked
        // the module).
        let class = if slots.iter().any(|s| layout[*s as usize] == Ty::Ptr) {
            chains.get_or_insert_with(|| Chains::of(m)).class_of(tag)
        } else {
            BTreeSet::new()
        };
        for slot in slots {
            let ty = layout[slot as usize];
            let alone = Members::from([(tag, Some(slot))]);
            if ty != Ty::Ptr {
                let b = base.get_or_insert_with(|| Base::of(m, &fixed));
                if let Some(plan) = Analysis::new(m, &fixed, b, alone.clone(), true).run() {
                    if !(memo && merges_cells(m, &alone)) {
                        apply(m, &alone, &plan);
                        base = None;
                    }
                }
                continue;
            }
            // A pointer goes only with the chain's other members: dropped
            // from `tag` alone, it would stay stored in them, and the
            // parameters that stand for it enlarge frames for little (one
            // slot of hvp-kmeans' tape cells: its heap a chunk larger).
            let mut with_class = alone;
            for n in &class {
                let Some(cells) = m.cells.get(n) else {
                    continue;
                };
                let of_ty: Vec<u32> = (0..cells.len() as u32)
                    .filter(|k| cells[*k as usize] == ty)
                    .collect();
                let k = match of_ty[..] {
                    [k] => k,
                    _ if of_ty.contains(&slot) => slot,
                    _ => continue,
                };
                with_class.insert(*n, Some(k));
            }
            if with_class.len() < 2 {
                continue;
            }
            let b = base.get_or_insert_with(|| Base::of(m, &fixed));
            if let Some(plan) = Analysis::new(m, &fixed, b, with_class.clone(), true).run() {
                if !(memo && merges_cells(m, &with_class)) {
                    apply(m, &with_class, &plan);
                    base = None;
                }
            }
        }
    }
}

/// Would dropping the slots of `members` make two `Alloc`s of one
/// function equal? `simplify` would merge them, and a memo table tells
/// cells apart by identity: what it recorded for each was computed from
/// the slot dropped, now a parameter of the code that reads it. Two
/// chains of one closure's cells, each holding its own constant factor,
/// were merged so, and reverse mode gave one chain's derivative for
/// both (`tests/compile/memo-invariant-slot.vlad`). The check is
/// `fields`' ([`super::fields::merged_by_dropping`]).
fn merges_cells(m: &Module, members: &Members) -> bool {
    let kept = |tag: u32, slot: u32| members.get(&tag) != Some(&Some(slot));
    !super::fields::merged_by_dropping(m, &kept).is_empty()
}

/// The slots of `tag` some load of which gives a pointer that is then
/// loaded from or tested as a cell: links and records, never the same in
/// every cell of a chain, which are not analysed (a pointer slot is the
/// vector a loop reads, used as a vector).
fn read_as_cells(m: &Module, fixed: &Fixed, tag: u32) -> BTreeSet<u32> {
    let mut slots = BTreeSet::new();
    for f in fixed.users(tag).iter().map(|fi| &m.funcs[*fi]) {
        let mut loaded: HashMap<Val, u32> = HashMap::default();
        f.body.for_each_inst(&mut |i| {
            if let Op::Load(_, t, s) = i.op {
                if t == tag {
                    loaded.insert(i.results[0], s);
                }
            }
        });
        if loaded.is_empty() {
            continue;
        }
        f.body.for_each_inst(&mut |i| {
            if let Op::Load(c, ..) | Op::TagIs(c, _) = i.op {
                if let Some(s) = loaded.get(&c) {
                    slots.insert(*s);
                }
            }
        });
    }
    slots
}

/// The members analysed with their slots (`None`: every value stored is
/// taken for the same, [`Fact::Val`] of [`any_slot`]).
type Members = BTreeMap<u32, Option<u32>>;

/// The members some `Alloc` of which stores in a pointer slot a value
/// that may be a cell of the member made before: a call's or an `If`'s
/// result, a parameter, or a load from a cell of the member. Only such
/// members can have links.
fn chained(m: &Module) -> BTreeSet<u32> {
    /// What a value may be a cell of.
    #[derive(Clone, Copy, PartialEq)]
    enum Def {
        Any,
        LoadedFrom(u32),
        Nothing,
    }
    let mut out = BTreeSet::new();
    for f in &m.funcs {
        let mut defs = vec![Def::Nothing; f.types.len()];
        for d in defs.iter_mut().take(f.params.len()) {
            *d = Def::Any;
        }
        f.body.for_each_inst(&mut |i| {
            let def = match &i.op {
                Op::Call(..) | Op::CallAt(..) | Op::If { .. } => Def::Any,
                Op::Load(_, t, _) => Def::LoadedFrom(*t),
                _ => Def::Nothing,
            };
            for r in &i.results {
                defs[r.index()] = def;
            }
        });
        f.body.for_each_inst(&mut |i| {
            if let Op::Alloc(t, fields) | Op::AllocZero(t, fields) = &i.op {
                let Some(layout) = m.cells.get(t) else {
                    return;
                };
                let linked = fields.iter().zip(layout).any(|(v, ty)| {
                    let def = defs.get(v.index()).copied().unwrap_or(Def::Nothing);
                    *ty == Ty::Ptr && (def == Def::Any || def == Def::LoadedFrom(*t))
                });
                if linked {
                    out.insert(*t);
                }
            }
        });
    }
    out
}

/// Whether every load of a member's slot in `members` reads a cell whose
/// fact (in `facts`, by function) is known.
fn accounted(m: &Module, fixed: &Fixed, members: &Members, facts: &[Facts]) -> bool {
    let mut ok = true;
    for fi in members.keys().flat_map(|t| fixed.users(*t)) {
        let (f, facts) = (&m.funcs[*fi], &facts[*fi]);
        f.body.for_each_inst(&mut |i| {
            if let Op::Load(c, t, s) = i.op {
                ok &= members.get(&t) != Some(&Some(s))
                    || c.index() < f.params.len()
                    || facts.get(c.index()).is_some_and(|x| *x != Fact::Any);
            }
        });
    }
    ok
}

/// What to change once a slot is found invariant: per function, the
/// parameters whose cell's slot it takes as new parameters (in order),
/// and the [`Fact`] of every pointer value.
struct Plan {
    needs: Vec<BTreeSet<u32>>,
    facts: Vec<Facts>,
}

struct Analysis<'a> {
    m: &'a Module,
    /// What dropping slots never changes (it adds arguments to calls,
    /// never calls), found once for every analysis of the pass.
    fixed: &'a Fixed,
    /// The members analysed and the slot of each.
    members: Members,
    /// Per member analysed and slot: whether it is (still thought) a link.
    links: BTreeMap<u32, Vec<bool>>,
    /// Per function and result: what a result cell holds at the slot,
    /// over the function's parameters (`None` outside the scope: then
    /// the function's entry in `base`).
    rets: Vec<Option<Vec<Fact>>>,
    base: &'a [Vec<Fact>],
    /// The functions walked, callees first ([`Fixed::scope`]).
    scope: Vec<usize>,
}

/// What each function's results hold when no member is analysed (no
/// cell is one): what the functions outside an analysis' scope give it.
struct Base {
    rets: Vec<Vec<Fact>>,
}

impl Base {
    fn of(m: &Module, fixed: &Fixed) -> Base {
        let rets = m
            .funcs
            .iter()
            .map(|f| Some(vec![Fact::None; f.returns.len()]))
            .collect();
        let mut a = Analysis {
            m,
            fixed,
            members: Members::new(),
            links: BTreeMap::new(),
            rets,
            base: &[],
            scope: fixed.order.clone(),
        };
        a.settle();
        Base {
            rets: a.rets.into_iter().map(Option::unwrap_or_default).collect(),
        }
    }
}

/// The fact of each value of a function, by number: [`Fact::Any`] for
/// those not pointers, and for every value of a function not walked.
type Facts = Vec<Fact>;

/// What walking one function finds.
struct Walk {
    facts: Facts,
    /// The depth of the block defining each value (parameters: 0).
    depth: Vec<u32>,
    rets: Vec<Fact>,
    /// Links found holding another value: (member, slot).
    broken: Vec<(u32, usize)>,
}

/// The value every [`Fact::Val`] is when no slot is analysed.
fn any_slot() -> Val {
    Val::from_number(u32::MAX)
}

impl<'a> Analysis<'a> {
    /// An analysis of `members`; with `plan`, one whose facts may make a
    /// [`Plan`] ([`Fixed::scope`]).
    fn new(m: &'a Module, fixed: &'a Fixed, base: &'a Base, members: Members, plan: bool) -> Self {
        // The slot analysed holds a value, not a link, whatever its type.
        let links = members
            .iter()
            .map(|(t, slot)| {
                let l = m.cells[t]
                    .iter()
                    .enumerate()
                    .map(|(k, ty)| *ty == Ty::Ptr && *slot != Some(k as u32))
                    .collect();
                (*t, l)
            })
            .collect();
        let scope = fixed.scope(members.keys(), plan);
        let mut rets = vec![None; m.funcs.len()];
        for fi in &scope {
            rets[*fi] = Some(vec![Fact::None; m.funcs[*fi].returns.len()]);
        }
        Analysis {
            m,
            fixed,
            members,
            links,
            rets,
            base: &base.rets,
            scope,
        }
    }

    /// Whether every value stored is taken for the same.
    fn open(&self) -> bool {
        self.members.values().any(Option::is_none)
    }

    /// What result `j` of function `g` holds.
    fn ret(&self, g: usize, j: usize) -> Fact {
        match &self.rets[g] {
            Some(rets) => rets[j],
            None => self.base[g][j],
        }
    }

    fn is_link(&self, t: u32, s: u32) -> bool {
        self.links
            .get(&t)
            .is_some_and(|l| l.get(s as usize) == Some(&true))
    }

    /// The plan, if the slot is invariant along a link and every load of
    /// it is accounted for.
    fn run(mut self) -> Option<Plan> {
        let facts = self.run_facts()?;
        let needs = self.needs(&facts)?;
        Some(Plan { needs, facts })
    }

    /// The facts of every function's pointers once links and results are
    /// settled, if some link remains.
    fn run_facts(&mut self) -> Option<Vec<Facts>> {
        let walks = self.settle()?;
        Some(
            walks
                .into_iter()
                .map(|w| w.map(|w| w.facts).unwrap_or_default())
                .collect(),
        )
    }

    /// Walks the scope until links and results are settled; the last walk
    /// of each function, if some link remains (or no member is analysed).
    fn settle(&mut self) -> Option<Vec<Option<Walk>>> {
        // Callees before callers, each function's results and links
        // updated as soon as it is walked: a fact crosses a chain of calls
        // in one round.
        // A walk depends only on its callees' results and the links of the
        // members it allocates or loads: only a function whose inputs
        // changed is walked again.
        let order = std::mem::take(&mut self.scope);
        let mut walks: Vec<Option<Walk>> = self.m.funcs.iter().map(|_| None).collect();
        let mut stale = vec![false; self.m.funcs.len()];
        for fi in &order {
            stale[*fi] = true;
        }
        loop {
            let mut walked = false;
            for &fi in order.iter() {
                if !std::mem::replace(&mut stale[fi], false) {
                    continue;
                }
                walked = true;
                let w = self.walk(&self.m.funcs[fi]);
                let mut changed = false;
                if let Some(rets) = &mut self.rets[fi] {
                    for (old, r) in rets.iter_mut().zip(&w.rets) {
                        let new = join(*old, *r);
                        changed |= new != *old;
                        *old = new;
                    }
                }
                if changed {
                    for c in self.fixed.callers(fi) {
                        stale[*c] = true;
                    }
                }
                for (t, l) in &w.broken {
                    if let Some(link) = self.links.get_mut(t).and_then(|ls| ls.get_mut(*l)) {
                        if std::mem::replace(link, false) {
                            for u in self.fixed.users(*t) {
                                stale[*u] = true;
                            }
                        }
                    }
                }
                if !self.members.is_empty() && !self.links.values().flatten().any(|l| *l) {
                    return None;
                }
                walks[fi] = Some(w);
            }
            if !walked {
                break;
            }
        }
        self.scope = order;
        Some(walks)
    }

    /// What the cell `v` of function `f` holds at the slot.
    fn fact(&self, f: &Func, facts: &[Fact], v: Val) -> Fact {
        if v.index() < f.params.len() {
            return if f.params[v.index()] == Ty::Ptr {
                Fact::Slot(v.number())
            } else {
                Fact::Any
            };
        }
        facts.get(v.index()).copied().unwrap_or(Fact::Any)
    }

    /// A callee's result fact `r`, at a call passing `args`.
    fn at_call(&self, f: &Func, facts: &[Fact], r: Fact, args: &[Val]) -> Fact {
        match r {
            Fact::Val(p) if self.open() => Fact::Val(p),
            Fact::Val(p) => args.get(p.index()).map_or(Fact::Any, |a| Fact::Val(*a)),
            Fact::Slot(i) => args
                .get(i as usize)
                .map_or(Fact::Any, |a| self.fact(f, facts, *a)),
            x => x,
        }
    }

    fn walk(&self, f: &Func) -> Walk {
        let mut w = Walk {
            facts: vec![Fact::Any; f.types.len()],
            depth: vec![0; f.types.len()],
            rets: vec![Fact::None; f.returns.len()],
            broken: Vec::new(),
        };
        self.walk_block(f, &f.body, 0, &mut w);
        w
    }

    /// Walks `b` (at depth `d`); returns the facts of what it yields.
    fn walk_block(&self, f: &Func, b: &Block, d: u32, w: &mut Walk) -> Option<Vec<Fact>> {
        for i in &b.insts {
            for r in &i.results {
                w.depth[r.index()] = d;
            }
            let ptr = |v: &Val| f.types[v.index()] == Ty::Ptr;
            match &i.op {
                Op::Alloc(t, fields) | Op::AllocZero(t, fields) => {
                    let fact = match self.members.get(t) {
                        Some(slot) => {
                            let stored = slot.map_or(any_slot(), |k| fields[k as usize]);
                            for (l, v) in fields.iter().enumerate() {
                                if self.is_link(*t, l as u32) {
                                    let held = self.fact(f, &w.facts, *v);
                                    if held != Fact::None && held != Fact::Val(stored) {
                                        w.broken.push((*t, l));
                                    }
                                }
                            }
                            Fact::Val(stored)
                        }
                        None => Fact::None,
                    };
                    w.facts[i.results[0].index()] = fact;
                }
                Op::Load(c, t, s) if ptr(&i.results[0]) => {
                    let fact = if self.is_link(*t, *s) {
                        self.fact(f, &w.facts, *c)
                    } else {
                        Fact::Any
                    };
                    w.facts[i.results[0].index()] = fact;
                }
                Op::Call(g, args) | Op::CallAt(g, args, _) => {
                    for (j, r) in i.results.iter().enumerate() {
                        if ptr(r) {
                            let fact = self.at_call(f, &w.facts, self.ret(g.index(), j), args);
                            w.facts[r.index()] = fact;
                        }
                    }
                }
                Op::If { then_, else_, .. } => {
                    let a = self.walk_block(f, then_, d + 1, w);
                    let b = self.walk_block(f, else_, d + 1, w);
                    // A value defined inside an arm is not visible after it.
                    let outside = |x: Fact| match x {
                        Fact::Val(v) if w.depth.get(v.index()).is_some_and(|e| *e > d) => Fact::Any,
                        x => x,
                    };
                    for (j, r) in i.results.iter().enumerate() {
                        if ptr(r) {
                            let of = |y: &Option<Vec<Fact>>| {
                                y.as_ref().map_or(Fact::None, |y| outside(y[j]))
                            };
                            let fact = join(of(&a), of(&b));
                            w.facts[r.index()] = fact;
                        }
                    }
                }
                _ => {
                    for r in &i.results {
                        if ptr(r) {
                            w.facts[r.index()] = Fact::Any;
                        }
                    }
                }
            }
        }
        // A result's fact is over the parameters: a value must be one.
        let over_params = |x: Fact| match x {
            Fact::Val(v) if v.index() >= f.params.len() && v != any_slot() => Fact::Any,
            x => x,
        };
        match &b.term {
            Term::Yield(vals) => Some(vals.iter().map(|v| self.fact(f, &w.facts, *v)).collect()),
            Term::Return(vals) => {
                for (j, v) in vals.iter().enumerate() {
                    if f.returns[j] == Ty::Ptr {
                        let x = over_params(self.fact(f, &w.facts, *v));
                        w.rets[j] = join(w.rets[j], x);
                    }
                }
                None
            }
            Term::TailCall(g, args) => {
                for j in 0..f.returns.len() {
                    if f.returns[j] == Ty::Ptr {
                        let x = self.at_call(f, &w.facts, self.ret(g.index(), j), args);
                        w.rets[j] = join(w.rets[j], over_params(x));
                    }
                }
                None
            }
            Term::Error(_) | Term::ErrorWith(_) => None,
        }
    }

    /// The parameters whose cell's slot each function must take, or `None`
    /// if some load of the slot reads a cell not accounted for, or a
    /// function that cannot take parameters would have to.
    fn needs(&self, facts: &[Facts]) -> Option<Vec<BTreeSet<u32>>> {
        let m = self.m;
        let mut needs = vec![BTreeSet::new(); m.funcs.len()];
        let mut ok = true;
        // Only the scope loads a member or calls a function that does.
        for &fi in &self.scope {
            let f = &m.funcs[fi];
            f.body.for_each_inst(&mut |i| {
                if let Op::Load(c, t, s) = i.op {
                    if self.members.get(&t) == Some(&Some(s)) {
                        match self.fact(f, &facts[fi], c) {
                            Fact::Slot(p) => {
                                needs[fi].insert(p);
                            }
                            Fact::Any => ok = false,
                            Fact::Val(_) | Fact::None => {}
                        }
                    }
                }
            });
        }
        loop {
            let mut changed = false;
            for &fi in &self.scope {
                let f = &m.funcs[fi];
                f.body.for_each_call(&mut |g, args, _| {
                    for p in needs[g.index()].clone() {
                        let Some(a) = args.get(p as usize) else {
                            ok = false;
                            continue;
                        };
                        match self.fact(f, &facts[fi], *a) {
                            Fact::Slot(q) => changed |= needs[fi].insert(q),
                            Fact::Any => ok = false,
                            Fact::Val(_) | Fact::None => {}
                        }
                    }
                });
            }
            if !ok {
                return None;
            }
            if !changed {
                break;
            }
        }
        let stuck = (0..m.funcs.len()).any(|fi| {
            !needs[fi].is_empty()
                && (self.fixed.built[fi]
                    || !self.fixed.called[fi]
                    || m.main.is_some_and(|g| g.index() == fi))
        });
        (!stuck).then_some(needs)
    }
}

/// Drops each member's slot in `members` as `plan` says.
fn apply(m: &mut Module, members: &Members, plan: &Plan) {
    let dropped: BTreeMap<u32, u32> = members
        .iter()
        .filter_map(|(t, k)| k.map(|k| (*t, k)))
        .collect();
    let Some((tag, slot)) = dropped.first_key_value().map(|(t, k)| (*t, *k)) else {
        return;
    };
    let ty = m.cells[&tag][slot as usize];
    let needs = &plan.needs;
    for (fi, f) in m.funcs.iter_mut().enumerate() {
        let np = f.params.len();
        let old = f.types.len();
        // The new parameters, first as values past the others.
        let new: HashMap<u32, Val> = needs[fi]
            .iter()
            .map(|p| {
                f.types.push(ty);
                (*p, Val::new(f.types.len() - 1))
            })
            .collect();
        let mut r = Rewrite {
            dropped: &dropped,
            ty,
            needs,
            facts: &plan.facts[fi],
            new: &new,
            np,
            types: &mut f.types,
            subst: HashMap::default(),
        };
        r.block(&mut f.body);
        let subst = r.subst;
        let resolve = |mut v: Val| {
            while let Some(n) = subst.get(&v) {
                v = *n;
            }
            v
        };
        f.body.for_each_use_mut(&mut |v| *v = resolve(*v));
        if !new.is_empty() {
            // The new parameters become values `np..`, the values that
            // followed the parameters move up past them, and those the
            // rewrite made (constants) stay.
            let added = new.len();
            let mut map: HashMap<Val, Val> = HashMap::default();
            for v in np..old {
                map.insert(Val::new(v), Val::new(v + added));
            }
            for k in 0..added {
                map.insert(Val::new(old + k), Val::new(np + k));
            }
            crate::passes::inline::rename_block(&mut f.body, &map);
            let mut types = f.types[..np].to_vec();
            types.extend(std::iter::repeat_n(ty, added));
            types.extend_from_slice(&f.types[np..old]);
            types.extend_from_slice(&f.types[old + added..]);
            f.types = types;
            f.params.extend(std::iter::repeat_n(ty, added));
        }
    }
    for (t, k) in &dropped {
        if let Some(layout) = m.cells.get_mut(t) {
            layout.remove(*k as usize);
        }
    }
}

struct Rewrite<'a> {
    /// The slot dropped of each member.
    dropped: &'a BTreeMap<u32, u32>,
    ty: Ty,
    needs: &'a [BTreeSet<u32>],
    facts: &'a [Fact],
    new: &'a HashMap<u32, Val>,
    np: usize,
    types: &'a mut Vec<Ty>,
    /// Loads removed, by the value each reads instead.
    subst: HashMap<Val, Val>,
}

impl Rewrite<'_> {
    /// The value standing for what the cell `c` holds at the slot, made
    /// before `out`'s end if it is a constant (the cell is never one of
    /// the member there).
    fn value(&mut self, c: Val, out: &mut Vec<Inst>) -> Val {
        let fact = if c.index() < self.np {
            Fact::Slot(c.number())
        } else {
            self.facts.get(c.index()).copied().unwrap_or(Fact::Any)
        };
        match fact {
            Fact::Val(v) => v,
            Fact::Slot(p) => self.new[&p],
            // A pointer stands for itself: any pointer will do, and it
            // keeps no more alive than its cell did.
            Fact::None | Fact::Any if self.ty == Ty::Ptr => c,
            Fact::None | Fact::Any => {
                let v = Val::new(self.types.len());
                self.types.push(self.ty);
                let op = match self.ty {
                    Ty::Bool => Op::BoolConst(false),
                    _ => Op::F64Const(0.0),
                };
                out.push(Inst {
                    results: vec![v],
                    op,
                });
                v
            }
        }
    }

    /// The arguments a call of `g` passes for its new parameters.
    fn extra_args(&mut self, g: usize, args: &[Val], out: &mut Vec<Inst>) -> Vec<Val> {
        let ps: Vec<u32> = self.needs[g].iter().copied().collect();
        ps.into_iter()
            .map(|p| self.value(args[p as usize], out))
            .collect()
    }

    fn block(&mut self, b: &mut Block) {
        let insts = std::mem::take(&mut b.insts);
        let mut out = Vec::with_capacity(insts.len());
        for mut i in insts {
            match &mut i.op {
                Op::Load(c, t, s) if self.dropped.contains_key(t) => {
                    let k = self.dropped[t];
                    if *s == k {
                        let c = *c;
                        let v = self.value(c, &mut out);
                        self.subst.insert(i.results[0], v);
                        continue;
                    }
                    if *s > k {
                        *s -= 1;
                    }
                }
                Op::Alloc(t, fields) | Op::AllocZero(t, fields) if self.dropped.contains_key(t) => {
                    fields.remove(self.dropped[t] as usize);
                }
                Op::Call(g, args) | Op::CallAt(g, args, _) => {
                    let extra = self.extra_args(g.index(), &args.clone(), &mut out);
                    args.extend(extra);
                }
                Op::If { then_, else_, .. } => {
                    self.block(then_);
                    self.block(else_);
                }
                _ => {}
            }
            out.push(i);
        }
        if let Term::TailCall(g, args) = &mut b.term {
            let extra = self.extra_args(g.index(), &args.clone(), &mut out);
            args.extend(extra);
        }
        b.insts = out;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `build(w, n)` makes a chain of `n` cells holding `w` and their own
    /// `n`, passing `next` (`v0`, or `v7`: `w + w`) to the next; `sweep`
    /// sums `w * n` over it.
    fn chain(next: &str) -> Module {
        let text = format!(
            "str s0 = \"end of input\"
func f0 main() -> () {{
  v0 = read_real s0
  v1 = read_real s0
  v2 = call f1(v0, v1)
  v3 = call f2(v2)
  print_real v3
  return
}}
func f1 build(v0: f64, v1: f64) -> (ptr) {{
  v2 = f64 0.0
  v3 = feq v1 v2
  v10 = if v3 {{
    v4 = alloc #0()
    yield v4
  }} else {{
    v5 = f64 1.0
    v6 = fsub v1 v5
    v7 = fadd v0 v0
    v8 = call f1({next}, v6)
    v9 = alloc #1(v8, v0, v1)
    yield v9
  }}
  return v10
}}
func f2 sweep(v0: ptr) -> (f64) {{
  v1 = tag_is v0 #0
  v9 = if v1 {{
    v2 = f64 0.0
    yield v2
  }} else {{
    v3 = load v0 #1.0
    v4 = load v0 #1.1
    v5 = load v0 #1.2
    v6 = call f2(v3)
    v7 = fmul v4 v5
    v8 = fadd v6 v7
    yield v8
  }}
  return v9
}}
main f0
"
        );
        crate::read::module(&text).expect("the module reads")
    }

    fn output(m: &Module) -> String {
        crate::eval::printed(m, "2.5\n4\n")
    }

    #[test]
    fn a_value_every_cell_of_a_chain_holds_is_passed_not_stored() {
        let mut m = chain("v0");
        assert_eq!(output(&m), "25");
        drop_invariant_slots(&mut m);
        assert_eq!(crate::verify::verify(&m), Ok(()));
        assert_eq!(m.cells[&1], [Ty::Ptr, Ty::F64]);
        assert_eq!(m.funcs[2].params, [Ty::Ptr, Ty::F64]);
        assert_eq!(output(&m), "25");
    }

    /// A chain of three members holding a vector (the filetest
    /// `invariant/chain-of-members`): the vector leaves all three, and
    /// `stacks` then makes the chain a buffer; the module prints the same
    /// throughout.
    #[test]
    fn a_pointer_every_member_of_a_chain_holds_is_passed_not_stored() {
        let text = include_str!("../../tests/filetests/invariant/chain-of-members.fir");
        let input = text.split("; expect:").next().unwrap_or_default();
        let mut m = crate::read::module(input).expect("the module reads");
        let run = |m: &Module| crate::eval::printed(m, "3\n4\n");
        // 3 * (4 + 3 + 2 + 1) for the cells, 3 for the end, 3 * 0.5.
        assert_eq!(run(&m), "34.5");
        drop_invariant_slots(&mut m);
        assert_eq!(crate::verify::verify(&m), Ok(()));
        assert_eq!(m.cells[&2], [Ty::Ptr, Ty::F64]);
        assert_eq!(m.cells[&3], []);
        assert_eq!(run(&m), "34.5");
        crate::passes::stacks::stack_lists(&mut m);
        assert_eq!(crate::verify::verify(&m), Ok(()));
        assert!(m.allocated_tags().is_empty());
        assert_eq!(run(&m), "34.5");
    }

    /// Each cell holds twice what the next holds: nothing is dropped.
    #[test]
    fn a_value_the_loop_changes_stays_in_its_cells() {
        let mut m = chain("v7");
        let before = m.clone();
        drop_invariant_slots(&mut m);
        assert_eq!(m, before);
        assert_eq!(output(&m), "65");
    }
}
