//! Sums passed down: a call whose result, a sum of one-hots that its loop
//! makes from zero, the caller at once adds to a sum of its own, is given
//! that sum to start from instead, and the caller's `plus` goes.
//!
//! Why: the backward sweep of `(vector-map (lambda (row) (dot row x)) m)`
//! made, for each row, the sensitivity of `x` as a sum of one one-hot per
//! element, and then added it to the sum over the rows: per row, a sum of
//! n additions made and then added again (`runtime::gc::vector_sum`), where
//! a hand-written adjoint adds each product into the gradient once. Given
//! the sum over the rows, each row's one-hots go into it, in place once it
//! is an accumulator (`fir::owned`, `codegen::vector`).
//!
//! The shape: `s = vec_plus L a r`, the only use of `r`, a result of a
//! call `r = call f(...)` in the same block, after `a` is defined. Every
//! `Return` of that result in `f` and in the functions it reaches by tail
//! calls (the group, copied for the call sites; see `tail_groups` for why a
//! group) gives a *chain*: a `vec_zero`, a `vec_one_hot`, a `vec_plus L p
//! h` of a chain `p` and a one-hot `h`, an `If` result every `Yield` of
//! which is a chain, or, in a function the group tail-calls, the parameter
//! each tail call passes a chain in. A chain value is read only as the
//! next link of its chain, for its length, or to be printed in an error
//! message (a `Capture` stretch), so that what it holds may change. A copy
//! that takes the caller's sum cannot show a chain value as the original
//! held it, so its messages show the placeholder of a value known only at
//! run time there instead. The copy takes `a` as a parameter and passes it down the tail
//! calls; each chain's first link, a zero or a one-hot, becomes `a` or
//! `vec_plus L a h`, placed where the link is read, after the checks the
//! original made before reading it.
//!
//! When that is exact: element j of `plus(a, r)` is `a_j + r_j`, each
//! summed from 0 (`runtime::gc::vector_sum`). If no two one-hots of `r`
//! share an index, `r_j` is `0 + x` or 0, and `a_j + (0 + x)` is `a_j + x`,
//! what adding the one-hot to `a` gives (`a_j`, summed from 0, is never
//! -0; and for a vector's element e, `(0 + e) + x = e + (0 + x)` for every
//! e and x). So the indices must be distinct: each one-hot's index is a
//! parameter of its function plus a whole constant (the *offset*); along
//! each chain the offsets are distinct, and with `dir` the direction the
//! loop walks (down, or up with offsets negated), a chain that goes on
//! from the parameter has offsets of at most 0 and passes on an index
//! below every offset it used, and at most its own (so every index
//! already used stays above the index parameter of the function the
//! chain goes to).

use super::inline;
use super::tail_groups::{copy_group, TailGroups};
use crate::{Block, ErrPart, FBin, Func, FuncId, Inst, Module, Op, StrId, Term, Ty, Val};
use base::EntityRef;
use rustc_hash::{FxHashMap as HashMap, FxHashSet as HashSet};

/// The largest group copied (FIR instructions of its functions).
const MAX_GROUP: usize = 800;

/// The most root-to-first-link walks through a function's chains before
/// the analysis gives up (nested `If`s double them).
const MAX_WALK: usize = 4096;

/// Offsets beyond this are not taken for whole constants kept exact.
const MAX_OFFSET: f64 = 1024.0;

/// Gives each call whose summed result can start from the caller's sum
/// that sum (see the module doc).
pub fn pass_sums_down(m: &mut Module) {
    let mut any = false;
    for f in &m.funcs {
        f.body
            .for_each_inst(&mut |i| any |= matches!(i.op, Op::VecPlus(..)));
    }
    if !any {
        return;
    }
    let n = m.funcs.len();
    let groups = TailGroups::new(m);
    // (callee, result) -> its plan, or None where it has none.
    let mut plans: HashMap<(usize, usize, u32), Option<Plan>> = HashMap::default();
    // Per function, its sites: the call's result -> (the sum, the plus's
    // result, the plan's key).
    let mut sites: Vec<HashMap<Val, Site>> = vec![HashMap::default(); n];
    for (gi, g) in m.funcs.iter().enumerate() {
        for site in find_sites(g) {
            let key = (site.callee, site.result, site.layout);
            let plan = plans
                .entry(key)
                .or_insert_with(|| Plan::new(m, &groups, site.callee, site.result, site.layout));
            if plan.is_some() {
                sites[gi].insert(site.r, site);
            }
        }
    }
    if sites.iter().all(|s| s.is_empty()) {
        return;
    }
    let mut keys: Vec<_> = plans
        .iter()
        .filter(|(_, p)| p.is_some())
        .map(|(k, _)| *k)
        .collect();
    keys.sort_unstable();
    keys.retain(|k| {
        sites
            .iter()
            .any(|s| s.values().any(|x| (x.callee, x.result, x.layout) == *k))
    });
    // The sites call the copies, made below in this order after the
    // functions there are: each plan's group, its entry first.
    let mut entry_copy: HashMap<(usize, usize, u32), FuncId> = HashMap::default();
    let mut next = n;
    for key in &keys {
        entry_copy.insert(*key, FuncId::new(next));
        next += plans[key].as_ref().map_or(0, |p| p.group.len());
    }
    let strings = m.strings.len();
    let placeholder = m.intern(base::message::RUN_TIME_SHAPE);
    let fresh_placeholder = m.strings.len() > strings;
    for (gi, f) in m.funcs.iter_mut().enumerate() {
        if !sites[gi].is_empty() {
            rewrite_sites(f, &sites[gi], &entry_copy, placeholder);
        }
    }
    let mut names: HashSet<String> = m.funcs.iter().map(|f| f.name.clone()).collect();
    for key in &keys {
        let plan = plans[key].as_ref().expect("kept above");
        let ids = copy_group(m, &plan.group, &mut names, "onto");
        debug_assert_eq!(ids[&plan.group[0]], entry_copy[key]);
        for (member, g) in plan.group.iter().enumerate() {
            let copy = &mut m.funcs[ids[g].index()];
            plan.rewrite(member, copy, &ids, placeholder);
            // The zeros a chain started from.
            super::simplify::dce(copy);
        }
    }
    inline::prune(m);
    // The placeholder went into no message: the module is as it was.
    if fresh_placeholder && !m.funcs.iter().any(|f| shows(&f.body, placeholder)) {
        m.strings.pop();
    }
}

/// Whether an error message in `b` shows string `s`.
fn shows(b: &Block, s: StrId) -> bool {
    let here = matches!(&b.term, Term::ErrorWith(parts) if parts.contains(&ErrPart::Str(s)));
    here || b.insts.iter().any(|i| match &i.op {
        Op::If { then_, else_, .. } => shows(then_, s) || shows(else_, s),
        _ => false,
    })
}

/// A call whose result `r` a `plus` adds to `a` at once.
#[derive(Clone, Copy, Debug)]
struct Site {
    callee: usize,
    result: usize,
    layout: u32,
    r: Val,
    a: Val,
    s: Val,
}

/// The sites of `f` (see the module doc).
fn find_sites(f: &Func) -> Vec<Site> {
    let mut uses = vec![0u32; f.types.len()];
    f.body.for_each_use(&mut |v| uses[v.index()] += 1);
    // A value an error message prints is not read by the code that goes
    // on (see `rewrite_sites`).
    fn unprinted(b: &Block, uses: &mut [u32]) {
        b.for_each_printed(&mut |v| uses[v.index()] -= 1);
        for i in &b.insts {
            if let Op::If { then_, else_, .. } = &i.op {
                unprinted(then_, uses);
                unprinted(else_, uses);
            }
        }
    }
    unprinted(&f.body, &mut uses);
    // The order in which values are defined, parameters first.
    let mut order = vec![0usize; f.types.len()];
    let mut next = 1;
    let mut out = Vec::new();
    scan_sites(&f.body, &uses, &mut order, &mut next, &mut out);
    out
}

fn scan_sites(b: &Block, uses: &[u32], order: &mut [usize], next: &mut usize, out: &mut Vec<Site>) {
    // The calls of this block: result -> (callee, position, when).
    let mut calls: HashMap<Val, (usize, usize, usize)> = HashMap::default();
    // The calls that have a site: one each.
    let mut taken: HashSet<usize> = HashSet::default();
    for i in &b.insts {
        if let Op::If { then_, else_, .. } = &i.op {
            scan_sites(then_, uses, order, next, out);
            scan_sites(else_, uses, order, next, out);
        }
        let now = *next;
        *next += 1;
        for r in &i.results {
            order[r.index()] = now;
        }
        match &i.op {
            Op::Call(g, _) | Op::CallAt(g, _, _) => {
                for (k, r) in i.results.iter().enumerate() {
                    calls.insert(*r, (g.index(), k, now));
                }
            }
            Op::VecPlus(layout, a, r) => {
                if let Some(&(callee, result, when)) = calls.get(r) {
                    if uses[r.index()] == 1 && order[a.index()] < when && taken.insert(when) {
                        out.push(Site {
                            callee,
                            result,
                            layout: *layout,
                            r: *r,
                            a: *a,
                            s: i.results[0],
                        });
                    }
                }
            }
            _ => {}
        }
    }
}

/// Calls the copies at the sites of `f`, giving them the sums, and drops
/// the `plus`es. An error message after such a call can no longer show
/// the call's result or the sum given, as they were before the `plus`:
/// the placeholder of a value known only at run time stands for them.
fn rewrite_sites(
    f: &mut Func,
    sites: &HashMap<Val, Site>,
    entry_copy: &HashMap<(usize, usize, u32), FuncId>,
    placeholder: StrId,
) {
    let mut subst: HashMap<Val, Val> = HashMap::default();
    let dropped: HashSet<Val> = sites.values().map(|s| s.s).collect();
    rewrite_site_block(&mut f.body, sites, entry_copy, &dropped, &mut subst);
    unprint_after_sites(&mut f.body, sites, &mut HashSet::default(), placeholder);
    f.body.for_each_use_mut(&mut |v| {
        if let Some(r) = subst.get(v) {
            *v = *r;
        }
    });
}

fn rewrite_site_block(
    b: &mut Block,
    sites: &HashMap<Val, Site>,
    entry_copy: &HashMap<(usize, usize, u32), FuncId>,
    dropped: &HashSet<Val>,
    subst: &mut HashMap<Val, Val>,
) {
    b.insts.retain_mut(|i| {
        match &mut i.op {
            Op::Call(g, args) | Op::CallAt(g, args, _) => {
                if let Some(site) = i.results.iter().find_map(|r| sites.get(r)) {
                    *g = entry_copy[&(site.callee, site.result, site.layout)];
                    args.push(site.a);
                }
            }
            Op::VecPlus(..) if dropped.contains(&i.results[0]) => {
                if let Op::VecPlus(_, _, r) = i.op {
                    subst.insert(i.results[0], r);
                }
                return false;
            }
            Op::If { then_, else_, .. } => {
                rewrite_site_block(then_, sites, entry_copy, dropped, subst);
                rewrite_site_block(else_, sites, entry_copy, dropped, subst);
            }
            _ => {}
        }
        true
    });
}

/// The placeholder for each value of `gone` printed in the error messages
/// of `b`'s blocks, where they follow a site's call (which adds `gone`).
fn unprint_after_sites(
    b: &mut Block,
    sites: &HashMap<Val, Site>,
    gone: &mut HashSet<Val>,
    placeholder: StrId,
) {
    let mut added = Vec::new();
    for i in &mut b.insts {
        if let Some(site) = i.results.iter().find_map(|r| sites.get(r)) {
            for v in [site.r, site.a] {
                if gone.insert(v) {
                    added.push(v);
                }
            }
        }
        if let Op::If { then_, else_, .. } = &mut i.op {
            unprint_after_sites(then_, sites, gone, placeholder);
            unprint_after_sites(else_, sites, gone, placeholder);
        }
    }
    if !gone.is_empty() {
        b.unprint(&|v| gone.contains(&v), placeholder);
    }
    for v in added {
        gone.remove(&v);
    }
}

/// How the copies of a group start their chains from the caller's sum.
#[derive(Debug)]
struct Plan {
    group: Vec<usize>,
    layout: u32,
    result: usize,
    /// Per member, the parameter its chain comes in by (none for the
    /// first).
    carried: Vec<Option<usize>>,
    /// Per member, whether it takes the sum (it starts a chain, or passes
    /// the sum to a member that does).
    needs: Vec<bool>,
    /// Per member, the chain values whose links are rewritten where they
    /// are read: `vec_plus`es and `If` results.
    links: Vec<HashSet<Val>>,
}

/// What the analysis knows of a value of a member.
#[derive(Clone, Debug)]
enum Def {
    Param(usize),
    Zero(u32),
    OneHot(u32, Val),
    Plus(u32, Val, Val),
    /// An `If` result: what its arms yield there.
    If(Vec<Val>),
    Const(f64),
    Add(Val, Val),
    Sub(Val, Val),
    Other,
}

/// A member's values, as the analysis reads them.
struct Member<'a> {
    f: &'a Func,
    defs: Vec<Def>,
    /// Uses of each value, all of them.
    uses: Vec<u32>,
    /// Uses that only read a vector's length.
    length_uses: Vec<u32>,
    /// Uses as an argument of a call that prints into an error message.
    error_uses: Vec<u32>,
    /// The `Return`s' values at the result, and the tail calls:
    /// (callee, arguments).
    returns: Vec<Val>,
    tail_calls: Vec<(usize, Vec<Val>)>,
}

impl<'a> Member<'a> {
    fn new(f: &'a Func, result: usize) -> Option<Member<'a>> {
        let n = f.types.len();
        let mut m = Member {
            f,
            defs: vec![Def::Other; n],
            uses: vec![0; n],
            length_uses: vec![0; n],
            error_uses: vec![0; n],
            returns: Vec::new(),
            tail_calls: Vec::new(),
        };
        for (k, d) in m.defs.iter_mut().enumerate().take(f.params.len()) {
            *d = Def::Param(k);
        }
        f.body.for_each_use(&mut |v| m.uses[v.index()] += 1);
        let mut ok = true;
        m.scan(&f.body, result, &mut ok);
        ok.then_some(m)
    }

    fn scan(&mut self, b: &Block, result: usize, ok: &mut bool) {
        b.for_each_printed(&mut |v| self.error_uses[v.index()] += 1);
        for i in &b.insts {
            let def = match &i.op {
                Op::VecZero(l, _) => Def::Zero(*l),
                Op::VecOneHot { layout, i, .. } => Def::OneHot(*layout, *i),
                Op::VecPlus(l, a, b) => Def::Plus(*l, *a, *b),
                Op::F64Const(c) => Def::Const(*c),
                Op::FBin(FBin::Add, a, b) => Def::Add(*a, *b),
                Op::FBin(FBin::Sub, a, b) => Def::Sub(*a, *b),
                Op::VecLen(v) | Op::VecIndexOk(v, _) => {
                    self.length_uses[v.index()] += 1;
                    Def::Other
                }
                Op::If { then_, else_, .. } => {
                    for (k, r) in i.results.iter().enumerate() {
                        let yields = [then_, else_]
                            .iter()
                            .filter_map(|arm| match &arm.term {
                                Term::Yield(vs) => vs.get(k).copied(),
                                _ => None,
                            })
                            .collect();
                        self.defs[r.index()] = Def::If(yields);
                    }
                    self.scan(then_, result, ok);
                    self.scan(else_, result, ok);
                    continue;
                }
                _ => Def::Other,
            };
            if let [r] = i.results[..] {
                self.defs[r.index()] = def;
            }
        }
        match &b.term {
            Term::Return(vs) => match vs.get(result) {
                Some(v) => self.returns.push(*v),
                None => *ok = false,
            },
            Term::TailCall(g, args) => self.tail_calls.push((g.index(), args.clone())),
            _ => {}
        }
    }

    /// Whether `v` may be a chain with links of `layout` (a first guess,
    /// for finding the parameter a chain comes in by).
    fn looks_like_chain(&self, v: Val, layout: u32, depth: usize) -> bool {
        match &self.defs[v.index()] {
            Def::Zero(l) | Def::OneHot(l, _) | Def::Plus(l, ..) => *l == layout,
            Def::If(ys) => {
                depth < 8
                    && ys
                        .iter()
                        .any(|y| self.looks_like_chain(*y, layout, depth + 1))
            }
            _ => false,
        }
    }

    /// The parameters the chain `v` may start from, through the first
    /// operands of `plus`es of `layout` and the yields into `If` results.
    fn param_heads(&self, v: Val, layout: u32, depth: usize, out: &mut Vec<usize>) {
        match &self.defs[v.index()] {
            Def::Param(p) if !out.contains(p) => out.push(*p),
            Def::Plus(l, p, _) if *l == layout && depth < 4096 => {
                self.param_heads(*p, layout, depth + 1, out)
            }
            Def::If(ys) if depth < 64 => {
                for y in ys {
                    self.param_heads(*y, layout, depth + 1, out);
                }
            }
            _ => {}
        }
    }

    /// `v` as a parameter plus a whole constant.
    fn offset(&self, v: Val, depth: usize) -> Option<(usize, f64)> {
        if depth > 16 {
            return None;
        }
        let whole = |c: f64| c.fract() == 0.0 && c.abs() <= MAX_OFFSET;
        match self.defs[v.index()] {
            Def::Param(p) => Some((p, 0.0)),
            Def::Add(a, b) => match (&self.defs[a.index()], &self.defs[b.index()]) {
                (_, Def::Const(c)) if whole(*c) => {
                    self.offset(a, depth + 1).map(|(p, o)| (p, o + c))
                }
                (Def::Const(c), _) if whole(*c) => {
                    self.offset(b, depth + 1).map(|(p, o)| (p, o + c))
                }
                _ => None,
            },
            Def::Sub(a, b) => match &self.defs[b.index()] {
                Def::Const(c) if whole(*c) => self.offset(a, depth + 1).map(|(p, o)| (p, o - c)),
                _ => None,
            },
            _ => None,
        }
        .filter(|(_, o)| o.abs() <= MAX_OFFSET)
    }
}

/// One walk from a root of a member's chain back to its first link.
#[derive(Default, Clone)]
struct Walk {
    /// The one-hots met (index parameter, offset).
    offsets: Vec<(usize, f64)>,
    seen: Vec<Val>,
    /// Whether the chain comes in by the carried parameter.
    carried: bool,
}

/// A walk, with the tail call it starts at (the member called, which of
/// the caller's tail calls), if it does not start at a `Return`.
type Rooted = (Walk, Option<(usize, usize)>);

impl Plan {
    fn new(m: &Module, groups: &TailGroups, f: usize, result: usize, layout: u32) -> Option<Plan> {
        if m.main == Some(FuncId::new(f)) || m.funcs[f].returns.get(result) != Some(&Ty::Ptr) {
            return None;
        }
        // The entry of a group is entered only by the calls given the sum.
        let group = groups.of(f).filter(|_| !groups.is_tail_called(f))?;
        let size: usize = group.iter().map(|g| m.funcs[*g].body.size()).sum();
        if size > MAX_GROUP {
            return None;
        }
        let members: Vec<Member> = group
            .iter()
            .map(|g| Member::new(&m.funcs[*g], result))
            .collect::<Option<_>>()?;
        let at = |g: usize| group.iter().position(|x| *x == g);
        // The parameter each member's chain comes in by: the one its
        // returns' chains lead back to, or else where every tail call into
        // it passes what looks like a chain.
        let mut carried: Vec<Option<usize>> = members
            .iter()
            .enumerate()
            .map(|(k, mem)| {
                let mut heads = Vec::new();
                for v in &mem.returns {
                    mem.param_heads(*v, layout, 0, &mut heads);
                }
                heads.dedup();
                match heads[..] {
                    [p] if k != 0 => Some(p),
                    _ => None,
                }
            })
            .collect();
        for mem in &members {
            for (callee, args) in &mem.tail_calls {
                let to = at(*callee)?;
                if to == 0 || carried[to].is_some() {
                    continue;
                }
                let like: Vec<usize> = args
                    .iter()
                    .enumerate()
                    .filter(|(_, a)| mem.looks_like_chain(**a, layout, 0))
                    .map(|(p, _)| p)
                    .collect();
                match like[..] {
                    [p] => carried[to] = Some(p),
                    _ => return None,
                }
            }
        }
        let mut plan = Plan {
            group: group.clone(),
            layout,
            result,
            carried,
            needs: vec![false; group.len()],
            links: vec![HashSet::default(); group.len()],
        };
        // The index parameter of each member, from its one-hots.
        let mut index: Vec<Option<usize>> = vec![None; group.len()];
        let mut walks: Vec<Vec<Rooted>> = Vec::new();
        for (k, mem) in members.iter().enumerate() {
            let mut all = Vec::new();
            let mut budget = MAX_WALK;
            for v in &mem.returns {
                for w in plan.walk(mem, k, *v, &mut budget)? {
                    all.push((w, None));
                }
            }
            for (c, (callee, args)) in mem.tail_calls.iter().enumerate() {
                let to = at(*callee)?;
                let p = plan.carried[to]?;
                for w in plan.walk(mem, k, *args.get(p)?, &mut budget)? {
                    all.push((w, Some((to, c))));
                }
            }
            for (w, _) in &all {
                for (p, _) in &w.offsets {
                    match index[k] {
                        None => index[k] = Some(*p),
                        Some(q) if q == *p => {}
                        Some(_) => return None,
                    }
                }
                plan.needs[k] |= !w.carried;
            }
            walks.push(all);
        }
        // Distinct indices, the loop walking down or up.
        let fits = |dir: f64| {
            walks.iter().enumerate().all(|(k, all)| {
                all.iter().all(|(w, to)| {
                    let offs: Vec<f64> = w.offsets.iter().map(|(_, o)| dir * o).collect();
                    let distinct = offs.iter().enumerate().all(|(i, o)| !offs[..i].contains(o));
                    let below = !w.carried || offs.iter().all(|o| *o <= 0.0);
                    let passed = match to {
                        None => true,
                        Some((to, c)) => {
                            let (Some(q), Some(p)) = (index[k], index[*to]) else {
                                return false;
                            };
                            let Some(arg) = members[k].tail_calls[*c].1.get(p).copied() else {
                                return false;
                            };
                            match members[k].offset(arg, 0) {
                                Some((p, d)) if p == q => {
                                    let d = dir * d;
                                    offs.iter().all(|o| d < *o) && (!w.carried || d <= 0.0)
                                }
                                _ => false,
                            }
                        }
                    };
                    distinct && below && passed
                })
            })
        };
        if !fits(1.0) && !fits(-1.0) {
            return None;
        }
        // Every member whose tail callee needs the sum needs it.
        loop {
            let mut changed = false;
            for (k, mem) in members.iter().enumerate() {
                for (callee, _) in &mem.tail_calls {
                    let to = at(*callee)?;
                    if plan.needs[to] && !plan.needs[k] {
                        plan.needs[k] = true;
                        changed = true;
                    }
                }
            }
            if !changed {
                break;
            }
        }
        plan.needs[0] = true;
        // A chain value is read only as its chain's next link, or for
        // its length.
        for (k, mem) in members.iter().enumerate() {
            let mut chain_uses: HashMap<Val, u32> = HashMap::default();
            count_chain_uses(&mem.f.body, &plan.links[k], &mut chain_uses);
            for v in &mem.returns {
                *chain_uses.entry(*v).or_default() += 1;
            }
            for (callee, args) in &mem.tail_calls {
                let p = plan.carried[at(*callee)?]?;
                *chain_uses.entry(args[p]).or_default() += 1;
            }
            let mut linear = plan.links[k].iter().copied().collect::<Vec<_>>();
            linear.extend(plan.carried[k].map(Val::new));
            for v in linear {
                let chain = chain_uses.get(&v).copied().unwrap_or(0);
                let other = mem.length_uses[v.index()] + mem.error_uses[v.index()];
                if mem.uses[v.index()] != chain + other {
                    return None;
                }
            }
        }
        Some(plan)
    }

    /// The walks from the chain value `v` of member `k` back to its first
    /// links, recording the links; `None` if `v` is no chain.
    fn walk(&mut self, mem: &Member, k: usize, v: Val, budget: &mut usize) -> Option<Vec<Walk>> {
        let mut out = Vec::new();
        self.walk_from(mem, k, v, Walk::default(), budget, &mut out)?;
        Some(out)
    }

    fn walk_from(
        &mut self,
        mem: &Member,
        k: usize,
        v: Val,
        mut w: Walk,
        budget: &mut usize,
        out: &mut Vec<Walk>,
    ) -> Option<()> {
        *budget = budget.checked_sub(1)?;
        let one_hot = |h: Val, w: &mut Walk| -> Option<()> {
            match mem.defs[h.index()] {
                Def::OneHot(l, i) if l == self.layout && !w.seen.contains(&h) => {
                    w.seen.push(h);
                    w.offsets.push(mem.offset(i, 0)?);
                    Some(())
                }
                _ => None,
            }
        };
        match &mem.defs[v.index()] {
            Def::Param(p) if Some(*p) == self.carried[k] => {
                w.carried = true;
                out.push(w);
            }
            Def::Zero(l) if *l == self.layout => out.push(w),
            Def::OneHot(..) => {
                one_hot(v, &mut w)?;
                out.push(w);
            }
            Def::Plus(l, p, h) if *l == self.layout => {
                let (p, h) = (*p, *h);
                one_hot(h, &mut w)?;
                self.links[k].insert(v);
                self.walk_from(mem, k, p, w, budget, out)?;
            }
            Def::If(ys) => {
                self.links[k].insert(v);
                for y in ys.clone() {
                    self.walk_from(mem, k, y, w.clone(), budget, out)?;
                }
            }
            _ => return None,
        }
        Some(())
    }

    /// Rewrites member `member`'s copy `f` (see the module doc); `ids`
    /// maps the group's functions to their copies.
    fn rewrite(
        &self,
        member: usize,
        f: &mut Func,
        ids: &HashMap<usize, FuncId>,
        placeholder: StrId,
    ) {
        let np = f.params.len();
        let shift = |v: Val| {
            if v.index() >= np {
                Val::new(v.index() + 1)
            } else {
                v
            }
        };
        let mut links: HashSet<Val> = HashSet::default();
        let sum = if self.needs[member] {
            let map: HashMap<Val, Val> = (np..f.types.len())
                .map(|v| (Val::new(v), Val::new(v + 1)))
                .collect();
            inline::rename_block(&mut f.body, &map);
            f.types.insert(np, Ty::Ptr);
            f.params.push(Ty::Ptr);
            links.extend(self.links[member].iter().map(|v| shift(*v)));
            Some(Val::new(np))
        } else {
            links.extend(self.links[member].iter().copied());
            None
        };
        let mut r = Relink {
            plan: self,
            links: &links,
            carried: self.carried[member].map(Val::new),
            sum,
            types: &mut f.types,
            ids,
            placeholder,
        };
        let mut body = std::mem::replace(
            &mut f.body,
            Block {
                insts: Vec::new(),
                term: Term::Return(Vec::new()),
            },
        );
        r.block(&mut body);
        f.body = body;
    }
}

/// How often each value is read as the next link of a chain in `b`: the
/// first operand of a `plus` that is a link, or a `Yield` into an `If`
/// result that is.
fn count_chain_uses(b: &Block, links: &HashSet<Val>, out: &mut HashMap<Val, u32>) {
    for i in &b.insts {
        match &i.op {
            Op::VecPlus(_, p, _) if links.contains(&i.results[0]) => {
                *out.entry(*p).or_default() += 1;
            }
            Op::If { then_, else_, .. } => {
                for arm in [then_, else_] {
                    if let Term::Yield(vs) = &arm.term {
                        for (r, v) in i.results.iter().zip(vs) {
                            if links.contains(r) {
                                *out.entry(*v).or_default() += 1;
                            }
                        }
                    }
                    count_chain_uses(arm, links, out);
                }
            }
            _ => {}
        }
    }
}

/// The rewrite of one member's copy.
struct Relink<'a> {
    plan: &'a Plan,
    links: &'a HashSet<Val>,
    /// The parameter the chain comes in by, if any.
    carried: Option<Val>,
    /// The caller's sum, if this member takes it.
    sum: Option<Val>,
    types: &'a mut Vec<Ty>,
    ids: &'a HashMap<usize, FuncId>,
    /// The text shown for a chain value an error message printed.
    placeholder: StrId,
}

impl Relink<'_> {
    /// `v`, read as a chain's next link: the sum where `v` is a zero, the
    /// sum plus `v` where it is a one-hot (made in `insts`).
    fn first_link(&mut self, v: Val, insts: &mut Vec<Inst>, defs: &HashMap<Val, bool>) -> Val {
        let Some(sum) = self.sum else {
            return v;
        };
        match defs.get(&v) {
            Some(true) => sum,
            Some(false) => {
                self.types.push(Ty::Ptr);
                let t = Val::new(self.types.len() - 1);
                insts.push(Inst {
                    results: vec![t],
                    op: Op::VecPlus(self.plan.layout, sum, v),
                });
                t
            }
            None => v,
        }
    }

    fn block(&mut self, b: &mut Block) {
        let mut defs: HashMap<Val, bool> = HashMap::default();
        self.firsts(b, &mut defs);
        self.block_with(b, &defs);
    }

    /// The zeros (true) and one-hots (false) of the plan's layout in `b`
    /// and the blocks in it.
    fn firsts(&self, b: &Block, defs: &mut HashMap<Val, bool>) {
        b.for_each_inst(&mut |i| match &i.op {
            Op::VecZero(l, _) if *l == self.plan.layout => {
                defs.insert(i.results[0], true);
            }
            Op::VecOneHot { layout, .. } if *layout == self.plan.layout => {
                defs.insert(i.results[0], false);
            }
            _ => {}
        });
    }

    fn block_with(&mut self, b: &mut Block, defs: &HashMap<Val, bool>) {
        let old = std::mem::take(&mut b.insts);
        let mut insts = Vec::with_capacity(old.len());
        for mut i in old {
            match &mut i.op {
                Op::VecPlus(_, p, _) if self.links.contains(&i.results[0]) => {
                    *p = self.first_link(*p, &mut insts, defs);
                }
                Op::If { then_, else_, .. } => {
                    let chained: Vec<bool> =
                        i.results.iter().map(|r| self.links.contains(r)).collect();
                    for arm in [then_, else_] {
                        self.block_with(arm, defs);
                        if let Term::Yield(vs) = &mut arm.term {
                            for (k, v) in vs.iter_mut().enumerate() {
                                if chained[k] {
                                    *v = self.first_link(*v, &mut arm.insts, defs);
                                }
                            }
                        }
                    }
                }
                _ => {}
            }
            insts.push(i);
        }
        match &mut b.term {
            Term::Return(vs) => {
                let k = self.plan.result;
                vs[k] = self.first_link(vs[k], &mut insts, defs);
            }
            Term::TailCall(g, args) => {
                // `copy_group` made the copies call one another.
                let to = self.plan.group.iter().position(|x| self.ids[x] == *g);
                if let Some(to) = to {
                    if let Some(p) = self.plan.carried[to] {
                        args[p] = self.first_link(args[p], &mut insts, defs);
                    }
                    if self.plan.needs[to] {
                        if let Some(sum) = self.sum {
                            args.push(sum);
                        }
                    }
                }
            }
            _ => {}
        }
        b.insts = insts;
        self.unprint_chains(b);
    }

    /// In a block that ends in an error message, the placeholder in place
    /// of each printed chain value: in every copy, it now holds the
    /// caller's sum too.
    fn unprint_chains(&self, b: &mut Block) {
        let chained = |v: Val| self.links.contains(&v) || self.carried == Some(v);
        b.unprint(&chained, self.placeholder);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The module of a filetest, before its expectation.
    fn module(text: &str) -> Module {
        let input = &text[..text.find("; expect:").expect("a filetest")];
        crate::read::module(input).expect("the filetest reads")
    }

    #[test]
    fn the_sum_passed_down_prints_what_the_plus_gave() {
        let mut m = module(include_str!(
            "../../tests/filetests/accumulate/onto-callers-sum.fir"
        ));
        let before = crate::eval::printed(&m, "5\n");
        assert_eq!(before, "08");
        pass_sums_down(&mut m);
        assert!(m.funcs.iter().any(|f| f.name == "row_onto"));
        crate::verify::verify(&m).expect("verifies");
        assert_eq!(crate::eval::printed(&m, "5\n"), before);
        // One element: the loop's last step returns the sum it was given.
        let mut m = module(include_str!(
            "../../tests/filetests/accumulate/onto-callers-sum.fir"
        ));
        let one = crate::eval::printed(&m, "1\n");
        pass_sums_down(&mut m);
        assert_eq!(crate::eval::printed(&m, "1\n"), one);
    }

    #[test]
    fn one_hots_at_one_index_keep_their_sum() {
        let mut m = module(include_str!(
            "../../tests/filetests/accumulate/same-index.fir"
        ));
        let before = m.clone();
        pass_sums_down(&mut m);
        assert_eq!(m, before);
    }
}
