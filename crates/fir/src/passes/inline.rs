//! FIR-to-FIR optimisation: inlining.
//!
//! Specialisation leaves many tiny functions (a thunk per arm of every
//! conditional, a function per transformed primitive) and turns every loop
//! into tail calls between the loop and the thunk of its arm. Inlining
//! small callees and callees with a single call site removes the calls and,
//! by splicing a tail-called thunk into the loop, turns the loop back into
//! a self tail call, which code generation compiles as a jump.
//!
//! Two forms, both preserving the FIR invariants:
//! - a `TailCall` term is replaced by the callee's renamed body (any
//!   callee: its own terms, `Return` included, are valid in tail position);
//! - a `Call` instruction is replaced by the callee's renamed instructions
//!   when the callee returns only from its last term; its results are then
//!   substituted by the returned values. So is a `CallAt` (a call from the
//!   user's code whose callee may report an error at it, such as `car` of
//!   a list): the callee's errors then name the position themselves
//!   (`ErrPart::At`) and its calls run under it.
//!
//! Growth is bounded by a size limit per function and a number of rounds,
//! so recursion cannot make it unroll without end.

mod dead;

use crate::{Block, Func, FuncId, Inst, Module, Op, Term, Ty, Val};
use base::EntityRef;
use dead::{Dead, DeadModel};
use rustc_hash::FxHashMap as HashMap;

/// Callees at most this big (instructions, nested ones included) are
/// inlined at every call site. Measured with callgrind (2026-11-23): 40 to
/// 200 took particle-FF from 26.6M to 20.9M instructions per solve and
/// saddle-FF from 22.6M to 16.2M; particle-RF from 382 ms to 186 ms per
/// solve; particle-RR's build from 4.3 s to 9.6 s.
const SMALL: usize = 200;
/// No function grows beyond this many instructions by inlining.
const MAX_SIZE: usize = 4000;
const ROUNDS: usize = 6;

/// Inlines across the module in place: first in rounds, then bottom up
/// over the call graph, each followed by pruning what `main` no longer
/// reaches.
pub fn inline(m: &mut Module) {
    let budget = budget(m);
    drop_unneeded_sites(m);
    rounds(m, budget);
    prune(m);
    // Calls inlined from a `CallAt` run under its position: only those
    // whose callee may report at it need to.
    drop_unneeded_sites(m);
}

/// Each inlining pass grows the module to at most `GROWTH` times its size
/// at the pass's start plus `SLACK` instructions. The limit per function
/// ([`MAX_SIZE`]) bounds no module: a recursive evaluator of 8 thousand
/// instructions after lowering grew to 419 thousand, 248 functions at the
/// limit, and code generation took seconds per build. The benchmark
/// programs stay within it (saddle-FF, whose copies mostly fold away,
/// reaches 160 thousand from 1.6 thousand: a lower `SLACK` changes its
/// code, as does `GROWTH` 1). With `GROWTH` 8, the larger programs of
/// union maps grew by copies that fold into little: 49 thousand
/// instructions of tests/corpus/second-derivative-unrolled-loop became
/// 289 thousand, 170 thousand with 2, and its build took 3.1 s, 2.0 s with
/// 2 (its compiled code runs 0.5% more instructions, the evaluator
/// as many).
const GROWTH: usize = 2;
const SLACK: usize = 200_000;

/// The size the module may grow to, from its size now.
fn budget(m: &Module) -> usize {
    let size: usize = m.funcs.iter().map(|f| f.body.size()).sum();
    GROWTH.saturating_mul(size).saturating_add(SLACK)
}

/// What the bottom-up inlining may add to the module, in instructions.
/// The benchmark programs add at most 5.5 thousand (saddle-FF), and their
/// code is the same with this limit as with the rounds' budget; programs
/// of many mid-sized callees grew by copies that do not fold: a generated
/// property-test program from 125 to 364 thousand instructions (build
/// 9.9 s of CPU, 4.9 s with this limit), tests/corpus/evaluator.vlad from
/// 109 to 171 thousand (3.8 s, 2.8 s), tests/scale/determinant.vlad from
/// 85 to 148 thousand (2.2 s, 1.5 s).
const BOTTOM_UP_GROWTH: usize = 20_000;

/// The second inlining: every non-recursive callee within the size limit,
/// bottom up over the call graph's strongly connected components. Expects
/// every function simplified (as the pipeline leaves them after the first
/// inlining), and leaves them so: it simplifies the functions it changed,
/// a few of a large module.
pub fn inline_bottom_up(m: &mut Module) {
    let size: usize = m.funcs.iter().map(|f| f.body.size()).sum();
    let budget = size.saturating_add(BOTTOM_UP_GROWTH);
    let mut changed = bottom_up(m, budget);
    if let Some(live) = prune(m) {
        let mut keep = live.iter();
        changed.retain(|_| keep.next().copied().unwrap_or(false));
    }
    // Turning a `CallAt` into a `Call` leaves a function simplified.
    drop_unneeded_sites(m);
    super::simplify::simplify_changed(m, &changed);
}

/// Inlining in rounds: small callees and callees with one call site,
/// tail-called thunks above all, while the module stays within `budget`
/// (moving a callee of one call site costs nothing, each copy of another
/// costs its size).
fn rounds(m: &mut Module, budget: usize) {
    // Each function's size, and its callees with repeats (one walk gives
    // the call sites, the call graph and the last callers): walked again
    // after a round only for the functions it changed.
    let mut sizes: Vec<usize> = m.funcs.iter().map(|f| f.body.size()).collect();
    let mut calls: Vec<Vec<usize>> = m.funcs.iter().map(|f| callees_of(&f.body)).collect();
    let mut said = reads_said(m);
    let mut dead: Vec<Option<Dead>> = (0..m.funcs.len()).map(|_| None).collect();
    for _ in 0..ROUNDS {
        let mut sites = vec![0usize; m.funcs.len()];
        let mut last_caller = vec![0usize; m.funcs.len()];
        for (i, out) in calls.iter().enumerate() {
            for &g in out {
                sites[g] += 1;
                last_caller[g] = last_caller[g].max(i);
            }
        }
        if let Some(main) = m.main {
            sites[main.index()] += 1;
        }
        let live = m.main.map(|main| reached(&calls, main.index()));
        if let Some(live) = &live {
            for (i, f) in m.funcs.iter_mut().enumerate() {
                if !live[i] && dead[i].is_none() {
                    dead[i] = Some(Dead::of(&f.body));
                    f.body = Block {
                        insts: vec![],
                        term: Term::Return(vec![]),
                    };
                    f.types.truncate(f.params.len());
                }
            }
        }
        let (graph, _, _, recursive) = call_graph_of(calls.clone());
        // What is called (functions only dead ones call are counted too,
        // as their calls are).
        let total: usize = (0..m.funcs.len())
            .filter(|&g| sites[g] > 0)
            .map(|g| sizes[g])
            .sum();
        let mut left = budget.saturating_sub(total);
        let admitted = admit(&sizes, &sites, &recursive, left);
        // The callees as they were at the start of the round, for those
        // the round may inline: a function not processed yet still is as
        // it was, and one processed was copied first if a function after
        // it may inline it (a copy of every candidate per round was most
        // of the inlining time of large programs, and its peak of heap).
        let candidate: Vec<bool> = (0..m.funcs.len())
            .map(|g| sites[g] == 1 || admitted[g])
            .collect();
        let mut saved: Vec<Option<Func>> = vec![None; m.funcs.len()];
        let reads = reads_unplaced(m, said.as_ref());
        let mut changed = false;
        let mut next_sizes = sizes.clone();
        // Dead functions as the round reads them (as at its start), and
        // as it leaves them.
        let mut next_dead: Vec<(usize, Dead)> = Vec::new();
        let mut live_calls: HashMap<usize, Dead> = HashMap::default();
        for i in 0..m.funcs.len() {
            // A function that calls no candidate but itself is left as it
            // is (its entry in the module stays the one to copy from), and
            // not rebuilt.
            if !graph[i].iter().any(|&g| g != i && candidate[g]) {
                continue;
            }
            if let Some(d) = &dead[i] {
                let mut model = DeadModel {
                    sizes: &sizes,
                    sites: &sites,
                    candidate: &candidate,
                    reads_unplaced: &reads,
                    dead: &dead,
                    saved: &saved,
                    funcs: &m.funcs,
                    live_calls: &mut live_calls,
                };
                if let Some((d, size)) = model.inline(i, d, &mut left) {
                    changed = true;
                    calls[i] = d.callees();
                    next_sizes[i] = size;
                    next_dead.push((i, d));
                }
                continue;
            }
            if candidate[i] && last_caller[i] > i {
                saved[i] = Some(m.funcs[i].clone());
            }
            let mut f = std::mem::replace(&mut m.funcs[i], placeholder());
            let mut cx = Inliner {
                me: FuncId::new(i),
                reads_unplaced: &reads,
                funcs: Callees::Round {
                    candidate: &candidate,
                    saved: &saved,
                    funcs: &m.funcs,
                },
                policy: Policy::Rounds {
                    sizes: &sizes,
                    sites: &sites,
                },
                size: sizes[i],
                max_size: MAX_SIZE,
                budget: left,
                types: std::mem::take(&mut f.types),
                subst: HashMap::default(),
                changed: false,
            };
            cx.block(&mut f.body);
            if !cx.subst.is_empty() {
                substitute_block(&mut f.body, &cx.subst);
            }
            f.types = cx.types;
            left = cx.budget;
            if cx.changed {
                super::compact::compact(&mut f);
                changed = true;
                next_sizes[i] = f.body.size();
                calls[i] = callees_of(&f.body);
                if let Some(said) = &mut said {
                    said.update(i, &f.body, &m.strings);
                }
            }
            m.funcs[i] = f;
        }
        for (i, d) in next_dead {
            dead[i] = Some(d);
        }
        if !changed {
            break;
        }
        sizes = next_sizes;
    }
}

/// The functions `main` reaches through `calls` (each function's callees).
fn reached(calls: &[Vec<usize>], main: usize) -> Vec<bool> {
    let mut live = vec![false; calls.len()];
    live[main] = true;
    let mut work = vec![main];
    while let Some(f) = work.pop() {
        for &g in &calls[f] {
            if !live[g] {
                live[g] = true;
                work.push(g);
            }
        }
    }
    live
}

fn callees_of(b: &Block) -> Vec<usize> {
    let mut out = Vec::new();
    callees(b, &mut out);
    out
}

/// Which callees of more than one call site a round may copy into their
/// callers, given `left`, what remains of the module's budget: all of
/// them while copying each into every caller fits in it; otherwise the
/// most profitable first, while they fit: callees outside any recursive
/// cycle (copying a function of a cycle into another unrolls the
/// recursion, a copy per level, and saves one call per level at most),
/// then the smallest.
fn admit(sizes: &[usize], sites: &[usize], recursive: &[bool], left: usize) -> Vec<bool> {
    let n = sizes.len();
    let cost = |g: usize| sizes[g] * (sites[g] - 1);
    let candidates: Vec<usize> = (0..n)
        .filter(|&g| sites[g] > 1 && sizes[g] <= SMALL)
        .collect();
    let mut admitted = vec![false; n];
    if candidates.iter().map(|&g| cost(g)).sum::<usize>() <= left {
        for g in candidates {
            admitted[g] = true;
        }
        return admitted;
    }
    let mut order = candidates;
    order.sort_by_key(|&g| (recursive[g], sizes[g], g));
    let mut left = left;
    for g in order {
        if cost(g) <= left {
            left -= cost(g);
            admitted[g] = true;
        }
    }
    admitted
}

/// The call graph (the callees of each function), the strongly connected
/// component of each function in it, in reverse topological order, and
/// whether each function is recursive (in a cycle of the graph).
type CallGraph = (Vec<Vec<usize>>, Vec<Vec<usize>>, Vec<usize>, Vec<bool>);

fn call_graph(m: &Module) -> CallGraph {
    call_graph_of(
        m.funcs
            .iter()
            .map(|f| {
                let mut out = Vec::new();
                callees(&f.body, &mut out);
                out
            })
            .collect(),
    )
}

/// [`call_graph`] from each function's callees, with repeats.
fn call_graph_of(mut graph: Vec<Vec<usize>>) -> CallGraph {
    for out in &mut graph {
        out.sort_unstable();
        out.dedup();
    }
    let comps = base::scc::sccs(&graph);
    let mut scc = vec![0usize; graph.len()];
    for (c, members) in comps.iter().enumerate() {
        for &f in members {
            scc[f] = c;
        }
    }
    let recursive = (0..graph.len())
        .map(|f| comps[scc[f]].len() > 1 || graph[f].binary_search(&f).is_ok())
        .collect();
    (graph, comps, scc, recursive)
}

/// Largest function the bottom-up pass makes by inlining.
const MAX_SIZE_BOTTOM_UP: usize = 6000;

/// Inlines, bottom up over the call graph, every call of a function that
/// is not recursive (in no cycle of the call graph) into its callers, as
/// long as the caller stays below [`MAX_SIZE_BOTTOM_UP`]. Callees come
/// first, so what is spliced in has had its own calls inlined already.
/// Says which functions it changed.
fn bottom_up(m: &mut Module, budget: usize) -> Vec<bool> {
    let (graph, comps, scc, recursive) = call_graph(m);
    let reads = reads_unplaced(m, reads_said(m).as_ref());
    let mut changed_funcs = vec![false; m.funcs.len()];
    let mut left = budget.saturating_sub(m.funcs.iter().map(|f| f.body.size()).sum());
    let mut sizes: Vec<usize> = m.funcs.iter().map(|f| f.body.size()).collect();
    for members in &comps {
        for &i in members {
            if !graph[i].iter().any(|&g| !recursive[g] && scc[g] != scc[i]) {
                continue;
            }
            let mut body = std::mem::replace(
                &mut m.funcs[i].body,
                Block {
                    insts: vec![],
                    term: Term::Return(vec![]),
                },
            );
            let types = std::mem::take(&mut m.funcs[i].types);
            let mut cx = Inliner {
                me: FuncId::new(i),
                reads_unplaced: &reads,
                funcs: Callees::Module(&m.funcs),
                policy: Policy::BottomUp {
                    sizes: &sizes,
                    scc: &scc,
                    recursive: &recursive,
                },
                size: sizes[i],
                max_size: MAX_SIZE_BOTTOM_UP.max(sizes[i]),
                budget: left,
                types,
                subst: HashMap::default(),
                changed: false,
            };
            cx.block(&mut body);
            if !cx.subst.is_empty() {
                substitute_block(&mut body, &cx.subst);
            }
            let (types, changed) = (cx.types, cx.changed);
            left = cx.budget;
            sizes[i] = body.size();
            m.funcs[i].body = body;
            m.funcs[i].types = types;
            if changed {
                super::compact::compact(&mut m.funcs[i]);
                changed_funcs[i] = true;
            }
        }
    }
    changed_funcs
}

/// The functions a block calls or tail-calls (with repeats).
fn callees(b: &Block, out: &mut Vec<usize>) {
    b.for_each_call(&mut |g, _, _| out.push(g.index()));
}

/// Removes the functions `main` cannot reach, renumbering the others;
/// says which functions stayed, if any went.
pub(crate) fn prune(m: &mut Module) -> Option<Vec<bool>> {
    let main = m.main?;
    let n = m.funcs.len();
    let calls: Vec<Vec<usize>> = m.funcs.iter().map(|f| callees_of(&f.body)).collect();
    let live = reached(&calls, main.index());
    if live.iter().all(|l| *l) {
        return None;
    }
    let mut new_id = vec![u32::MAX; n];
    let mut k = 0u32;
    for i in 0..n {
        if live[i] {
            new_id[i] = k;
            k += 1;
        }
    }
    let funcs = std::mem::take(&mut m.funcs);
    m.funcs = funcs
        .into_iter()
        .zip(&live)
        .filter(|(_, l)| **l)
        .map(|(mut f, _)| {
            renumber_calls(&mut f.body, &new_id);
            f
        })
        .collect();
    m.main = Some(FuncId::new(new_id[main.index()] as usize));
    Some(live)
}

fn renumber_calls(b: &mut Block, new_id: &[u32]) {
    b.for_each_call_mut(&mut |g| *g = FuncId::new(new_id[g.index()] as usize));
}

/// What a callee inlined at a `CallAt` of position `site` must do to
/// behave as it did under that call: its errors positioned at the running
/// call site name `site`, and its calls run under `site` (a call that
/// already has a position of its own keeps it).
fn at_site(b: &mut Block, site: crate::StrId) {
    for i in &mut b.insts {
        match &mut i.op {
            Op::Call(g, args) => i.op = Op::CallAt(*g, std::mem::take(args), site),
            Op::VecBuild { at: at @ None, .. } => *at = Some(site),
            Op::If { then_, else_, .. } => {
                at_site(then_, site);
                at_site(else_, site);
            }
            _ => {}
        }
    }
    match &mut b.term {
        Term::ErrorWith(parts) => {
            for p in parts {
                if matches!(p, crate::ErrPart::Site) {
                    *p = crate::ErrPart::At(site);
                }
            }
        }
        // Left as a tail call only in an arm of the callee's own (then
        // it is not inlined at a `Call`); as its last term it becomes a
        // call below, which must run under `site` too.
        Term::TailCall(..) | Term::Return(_) | Term::Yield(_) | Term::Error(_) => {}
    }
}

/// The body of a callee that returns from the arms of its last `If`
/// (and of theirs, nested), whose results it returns, rewritten to yield
/// them there: the same function with a single exit, which a `Call` can
/// take in. `if c {return x} else {return y}` (a `max`'s forward rule,
/// called per element of a fold) is the shape. `None` if some `Return`
/// or `TailCall` is elsewhere.
fn tail_yields(b: &Block) -> Option<Block> {
    fn tail(b: &mut Block, leave: fn(Vec<Val>) -> Term) -> bool {
        let Some((last, before)) = b.insts.split_last_mut() else {
            return b.single_exit() && settle(&mut b.term, leave);
        };
        let before_ok = before.iter().all(|i| match &i.op {
            Op::If { then_, else_, .. } => single_exit_arm(then_) && single_exit_arm(else_),
            _ => true,
        });
        if !before_ok {
            return false;
        }
        let returns_if =
            matches!(&b.term, Term::Return(vs) | Term::Yield(vs) if *vs == last.results);
        match &mut last.op {
            Op::If { then_, else_, .. } if returns_if => {
                arm(then_) && arm(else_) && settle(&mut b.term, leave)
            }
            Op::If { then_, else_, .. } => {
                single_exit_arm(then_) && single_exit_arm(else_) && settle(&mut b.term, leave)
            }
            _ => settle(&mut b.term, leave),
        }
    }
    // An arm whose results the enclosing block returns.
    fn arm(b: &mut Block) -> bool {
        match &b.term {
            Term::Return(_) | Term::Yield(_) => tail(b, Term::Yield),
            Term::Error(_) | Term::ErrorWith(_) => b.single_exit(),
            Term::TailCall(..) => false,
        }
    }
    fn settle(t: &mut Term, leave: fn(Vec<Val>) -> Term) -> bool {
        match std::mem::replace(t, Term::Error(crate::StrId::new(0))) {
            Term::Return(vs) | Term::Yield(vs) => {
                *t = leave(vs);
                true
            }
            other => {
                let ok = matches!(other, Term::Error(_) | Term::ErrorWith(_));
                *t = other;
                ok
            }
        }
    }
    fn single_exit_arm(b: &Block) -> bool {
        matches!(b.term, Term::Yield(_) | Term::Error(_) | Term::ErrorWith(_)) && b.single_exit()
    }
    let mut copy = b.clone();
    tail(&mut copy, Term::Return).then_some(copy)
}

/// Which callees an [`Inliner`] splices in.
enum Policy<'a> {
    /// The rounds: small callees and callees with one call site.
    Rounds {
        sizes: &'a [usize],
        sites: &'a [usize],
    },
    /// Bottom up over the call graph: every callee outside the caller's
    /// strongly connected component that is not recursive itself (its
    /// own calls have already been inlined).
    BottomUp {
        sizes: &'a [usize],
        scc: &'a [usize],
        recursive: &'a [bool],
    },
}

/// Where an [`Inliner`] reads callees from.
#[derive(Clone, Copy)]
enum Callees<'a> {
    /// The module as it was at the start of a round, for the callees the
    /// round may inline (`candidate`; `None` for the others): a
    /// function's copy in `saved` if it has one, else its entry in
    /// `funcs`.
    Round {
        candidate: &'a [bool],
        saved: &'a [Option<Func>],
        funcs: &'a [Func],
    },
    Module(&'a [Func]),
}

impl<'a> Callees<'a> {
    fn get(self, g: FuncId) -> Option<&'a Func> {
        match self {
            Callees::Round {
                candidate,
                saved,
                funcs,
            } => {
                if !candidate.get(g.index()).copied().unwrap_or(false) {
                    return None;
                }
                saved
                    .get(g.index())
                    .and_then(Option::as_ref)
                    .or_else(|| funcs.get(g.index()))
            }
            Callees::Module(fs) => fs.get(g.index()),
        }
    }
}

/// What stands in for a function taken out of the module while it is
/// rewritten (never read: a function does not inline itself).
fn placeholder() -> Func {
    Func {
        name: String::new(),
        params: vec![],
        returns: vec![],
        types: vec![],
        body: Block {
            insts: vec![],
            term: Term::Return(vec![]),
        },
    }
}

struct Inliner<'a> {
    me: FuncId,
    /// Which functions may read with a message the running call site
    /// places ([`block_reads_unplaced`]).
    reads_unplaced: &'a [bool],
    funcs: Callees<'a>,
    policy: Policy<'a>,
    size: usize,
    max_size: usize,
    /// What the module may still grow by copies of callees with more
    /// than one call site.
    budget: usize,
    types: Vec<crate::Ty>,
    /// Results of inlined calls to the values their callee returned.
    subst: HashMap<Val, Val>,
    changed: bool,
}

impl Inliner<'_> {
    fn callee_size(&self, g: FuncId) -> usize {
        match self.policy {
            Policy::Rounds { sizes, .. } | Policy::BottomUp { sizes, .. } => sizes[g.index()],
        }
    }

    fn worth(&self, g: FuncId) -> bool {
        let gi = g.index();
        let gs = self.callee_size(g);
        if g == self.me || self.size + gs > self.max_size {
            return false;
        }
        match self.policy {
            Policy::Rounds { sites, .. } if sites[gi] == 1 => true,
            Policy::Rounds { .. } => gs <= SMALL && gs <= self.budget,
            Policy::BottomUp { scc, recursive, .. } => {
                !recursive[gi] && scc[gi] != scc[self.me.index()] && gs <= self.budget
            }
        }
    }

    fn block(&mut self, b: &mut Block) {
        // The calls that print the values an error message shows (in an
        // `Op::Capture` stretch) run once if ever: inlined, they only took
        // the budget from code that runs.
        let mut cold = false;
        let insts = std::mem::take(&mut b.insts);
        let mut out = Vec::with_capacity(insts.len());
        for mut inst in insts {
            let at = matches!(inst.op, Op::CallAt(..));
            if let Op::Capture(start) = inst.op {
                cold = start;
            }
            match &mut inst.op {
                Op::If { then_, else_, .. } => {
                    self.block(then_);
                    self.block(else_);
                    out.push(inst);
                }
                Op::Call(g, args) | Op::CallAt(g, args, _)
                    if !cold && self.worth(*g) && !(at && self.reads_unplaced[g.index()]) =>
                {
                    let g = *g;
                    let Some(callee) = self.funcs.get(g) else {
                        out.push(inst);
                        continue;
                    };
                    // A body of one exit: the callee's, or one yielding
                    // from its last `If`'s arms (copied once, only here).
                    let yielding = if callee.body.single_exit() {
                        None
                    } else {
                        match tail_yields(&callee.body) {
                            Some(b) => Some(b),
                            None => {
                                out.push(inst);
                                continue;
                            }
                        }
                    };
                    let mut body = self.renamed(callee, yielding.as_ref(), args);
                    if let Op::CallAt(_, _, site) = inst.op {
                        at_site(&mut body, site);
                    }
                    self.charge(g);
                    self.changed = true;
                    out.extend(body.insts);
                    match body.term {
                        Term::Return(vals) => {
                            for (r, v) in inst.results.iter().zip(vals) {
                                self.subst.insert(*r, v);
                            }
                        }
                        Term::TailCall(h, a) => out.push(Inst {
                            results: inst.results.clone(),
                            op: match inst.op {
                                Op::CallAt(_, _, site) => Op::CallAt(h, a, site),
                                _ => Op::Call(h, a),
                            },
                        }),
                        t @ (Term::Error(_) | Term::ErrorWith(_)) => {
                            // Nothing after an error runs.
                            b.insts = out;
                            b.term = t;
                            return;
                        }
                        Term::Yield(_) => unreachable!("a function body never yields"),
                    }
                }
                _ => out.push(inst),
            }
        }
        b.insts = out;
        if let Term::TailCall(g, args) = &b.term {
            if let Some(callee) = self.funcs.get(*g).filter(|_| self.worth(*g)) {
                let g = *g;
                let body = self.renamed(callee, None, args);
                self.charge(g);
                self.changed = true;
                b.insts.extend(body.insts);
                b.term = body.term;
            }
        }
    }

    /// Counts the growth of inlining `g` here: a copy of the callee, at
    /// the expense of the module's budget, unless it is the callee's only
    /// call site in the rounds (then the callee moves).
    fn charge(&mut self, g: FuncId) {
        let gs = self.callee_size(g);
        self.size += gs;
        let moves = matches!(self.policy, Policy::Rounds { sites, .. } if sites[g.index()] == 1);
        if !moves {
            self.budget = self.budget.saturating_sub(gs);
        }
    }

    /// The callee's body (or `body`, one of its values) with its
    /// parameters replaced by `args` and its other values renumbered into
    /// this function.
    fn renamed(&mut self, callee: &Func, body: Option<&Block>, args: &[Val]) -> Block {
        renamed_into(&mut self.types, callee, body.unwrap_or(&callee.body), args)
    }
}

/// `body` (the callee's, or one of its values) with the callee's
/// parameters replaced by `args` and its other values renumbered past
/// `types`, the types of the function it goes into, which gets theirs.
pub(crate) fn renamed_into(
    types: &mut Vec<Ty>,
    callee: &Func,
    body: &Block,
    args: &[Val],
) -> Block {
    // Every value of the callee is renamed: a dense map.
    let mut map: Vec<Val> = Vec::with_capacity(callee.types.len());
    map.extend(args.iter().take(callee.params.len()));
    for t in callee.types.iter().skip(callee.params.len()) {
        types.push(*t);
        map.push(Val::new(types.len() - 1));
    }
    let mut r = |v: &mut Val| {
        if let Some(n) = map.get(v.index()) {
            *v = *n;
        }
    };
    copy_renamed(body, &mut r)
}

/// A copy of `b` with every value (results and uses) renamed by `r`, in
/// one walk: copying, then renaming the copy's results and its uses, was
/// three walks of what was copied.
fn copy_renamed(b: &Block, r: &mut impl FnMut(&mut Val)) -> Block {
    let insts = b
        .insts
        .iter()
        .map(|i| {
            let mut op = match &i.op {
                Op::If { cond, then_, else_ } => Op::If {
                    cond: *cond,
                    then_: copy_renamed(then_, r),
                    else_: copy_renamed(else_, r),
                },
                op => op.clone(),
            };
            // An `If`'s arms are not its operands: only its condition is.
            op.for_each_operand_mut(&mut *r);
            let mut results = i.results.clone();
            results.iter_mut().for_each(&mut *r);
            Inst { results, op }
        })
        .collect();
    let mut term = b.term.clone();
    term.for_each_operand_mut(&mut *r);
    Block { insts, term }
}

pub(crate) fn rename_block(b: &mut Block, map: &HashMap<Val, Val>) {
    let mut r = |v: &mut Val| {
        if let Some(n) = map.get(v) {
            *v = *n;
        }
    };
    b.for_each_result_mut(&mut r);
    b.for_each_use_mut(&mut r);
}

/// Replaces uses (not definitions) of substituted values, following chains.
pub(crate) fn substitute_block(b: &mut Block, subst: &HashMap<Val, Val>) {
    let map = resolve_chains(subst);
    b.for_each_use_mut(&mut |v| {
        if let Some(n) = map.get(v) {
            *v = *n;
        }
    });
}

/// Each key of `subst` to the end of its chain of substitutions (a result
/// replaced by a callee's value that is itself a replaced result ...).
/// Each chain is walked once: following every key to its end made this
/// quadratic in the chains' length (a tower of derivatives inlines
/// thousands of wrappers each returning the result of the next: 2.6 of
/// the 3.6 s of its inlining).
fn resolve_chains(subst: &HashMap<Val, Val>) -> HashMap<Val, Val> {
    let mut map: HashMap<Val, Val> = HashMap::default();
    map.reserve(subst.len());
    let mut path = Vec::new();
    for &k in subst.keys() {
        let mut v = k;
        // Stops at a value not replaced, or already resolved; a cycle
        // (never made by inlining, which replaces results by values
        // defined before them) stops once it has gone round.
        let end = loop {
            if let Some(&r) = map.get(&v) {
                break r;
            }
            match subst.get(&v) {
                Some(&x) if path.len() <= subst.len() => {
                    path.push(v);
                    v = x;
                }
                _ => break v,
            }
        };
        for p in path.drain(..) {
            map.insert(p, end);
        }
    }
    map
}

/// `CallAt` only matters when the callee may raise an error positioned at
/// its call site (`ErrPart::Site`), directly or through its callees; other
/// `CallAt`s become `Call`s, which the inliner can work with.
fn drop_unneeded_sites(m: &mut Module) {
    let may = functions_that(m, block_may_site);
    for f in &mut m.funcs {
        plain_calls(&mut f.body, &may);
    }
}

/// What a function's body says of a property that calls pass on
/// ([`functions_that`]): whether the body has it of itself, and the
/// callees through which it would have it (pushed on `through`).
type Facts = fn(&Block, &[String], &mut Vec<usize>) -> bool;

/// May the block raise an error positioned at the running call site?
fn block_may_site(b: &Block, strings: &[String], through: &mut Vec<usize>) -> bool {
    let mut direct = match &b.term {
        Term::ErrorWith(parts) => parts.iter().any(|p| matches!(p, crate::ErrPart::Site)),
        Term::TailCall(g, _) => {
            through.push(g.index());
            false
        }
        _ => false,
    };
    for i in &b.insts {
        match &i.op {
            Op::Call(g, _) | Op::CallAt(g, _, _) | Op::VecBuild { func: g, .. } => {
                through.push(g.index())
            }
            Op::If { then_, else_, .. } => {
                direct |= block_may_site(then_, strings, through);
                direct |= block_may_site(else_, strings, through);
            }
            Op::ReadReal(s) => direct |= unplaced(strings, *s),
            _ => {}
        }
    }
    direct
}

/// Is string `s` a message without a position of its own, which the
/// running call site places (`base::message::UNPLACED`)?
fn unplaced(strings: &[String], s: crate::StrId) -> bool {
    strings
        .get(s.index())
        .is_some_and(|t| t.starts_with(base::message::UNPLACED))
}

/// The functions that have a property, given what each body says of it
/// (`facts`): [`Said::closure`]. Each body is walked once: looking at a
/// caller again whenever one of its callees came to have the property
/// walked large bodies once per such callee, a tenth of the inlining time
/// of generated-3070.
fn functions_that(m: &Module, facts: Facts) -> Vec<bool> {
    Said::of(m, facts).closure()
}

/// What each function's body says of a property ([`Facts`]), kept across
/// the rounds of inlining for the functions a round leaves as they were
/// (walking every body again each round, dead copies included, was a
/// sixth of the inlining time of generated-3070).
struct Said {
    facts: Facts,
    /// Per function: whether its body has the property of itself.
    direct: Vec<bool>,
    /// Per function: the callees through which it would have it.
    through: Vec<Vec<usize>>,
}

impl Said {
    fn of(m: &Module, facts: Facts) -> Said {
        let mut said = Said {
            facts,
            direct: vec![false; m.funcs.len()],
            through: vec![Vec::new(); m.funcs.len()],
        };
        for (f, func) in m.funcs.iter().enumerate() {
            said.update(f, &func.body, &m.strings);
        }
        said
    }

    /// Reads again what function `f`'s body (now `body`) says.
    fn update(&mut self, f: usize, body: &Block, strings: &[String]) {
        let through = &mut self.through[f];
        through.clear();
        self.direct[f] = (self.facts)(body, strings, through);
    }

    /// The functions that have the property: those whose body has it, and
    /// those that call one that has it through a call that passes it on
    /// (the least fixpoint, so recursion does not give a function what
    /// its body does not).
    fn closure(&self) -> Vec<bool> {
        let n = self.direct.len();
        let mut callers: Vec<Vec<usize>> = vec![Vec::new(); n];
        let mut has = vec![false; n];
        let mut work = Vec::new();
        for (f, (direct, through)) in self.direct.iter().zip(&self.through).enumerate() {
            if *direct {
                has[f] = true;
                work.push(f);
            }
            for &g in through {
                callers[g].push(f);
            }
        }
        while let Some(g) = work.pop() {
            for &f in &callers[g] {
                if !has[f] {
                    has[f] = true;
                    work.push(f);
                }
            }
        }
        has
    }
}

/// What the functions' bodies say of reading with a message the running
/// call site places ([`block_reads_unplaced`]), if the module has such a
/// message (else no function may, and no function is looked at).
fn reads_said(m: &Module) -> Option<Said> {
    (0..m.strings.len())
        .any(|s| unplaced(&m.strings, crate::StrId::new(s)))
        .then(|| Said::of(m, block_reads_unplaced))
}

/// The functions that may read with a message the running call site
/// places, as `said` says ([`reads_said`]).
fn reads_unplaced(m: &Module, said: Option<&Said>) -> Vec<bool> {
    said.map_or_else(|| vec![false; m.funcs.len()], Said::closure)
}

/// May a function read (`read-real`) with such a message, directly or
/// through calls that leave the running call site as it is? Inlined at a
/// `CallAt`, the read would lose that site, so such functions are not.
fn block_reads_unplaced(b: &Block, strings: &[String], through: &mut Vec<usize>) -> bool {
    if let Term::TailCall(g, _) = &b.term {
        through.push(g.index());
    }
    let mut direct = false;
    for i in &b.insts {
        match &i.op {
            Op::Call(g, _)
            | Op::VecBuild {
                func: g, at: None, ..
            } => through.push(g.index()),
            Op::If { then_, else_, .. } => {
                direct |= block_reads_unplaced(then_, strings, through);
                direct |= block_reads_unplaced(else_, strings, through);
            }
            Op::ReadReal(s) => direct |= unplaced(strings, *s),
            _ => {}
        }
    }
    direct
}

fn plain_calls(b: &mut Block, may: &[bool]) {
    for i in &mut b.insts {
        match &mut i.op {
            Op::CallAt(g, args, _) if !may[g.index()] => {
                i.op = Op::Call(*g, std::mem::take(args));
            }
            Op::VecBuild { func, at, .. } if !may[func.index()] => *at = None,
            Op::If { then_, else_, .. } => {
                plain_calls(then_, may);
                plain_calls(else_, may);
            }
            _ => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::inst as i;
    use crate::{FBin, Ty};

    /// `g0(x) = x + x` and `gk(x) = g(k-1)(g(k-1)(x))`: every function
    /// small, every one but the last called twice, so each round doubles
    /// every function until the limit per function; `n` of them outgrow
    /// any module budget unless the budget stops the copies.
    fn doubling_chain(n: usize) -> Module {
        let v = Val::new;
        let g = |k: usize| FuncId::new(k + 1);
        let mut funcs = vec![Func {
            name: "main".into(),
            params: vec![],
            returns: vec![],
            types: vec![Ty::F64, Ty::F64],
            body: Block {
                insts: vec![
                    i(&[0], Op::F64Const(1.5)),
                    i(&[1], Op::Call(g(n - 1), vec![v(0)])),
                    i(&[], Op::PrintReal(v(1))),
                ],
                term: Term::Return(vec![]),
            },
        }];
        for k in 0..n {
            let insts = if k == 0 {
                vec![i(&[1], Op::FBin(FBin::Add, v(0), v(0)))]
            } else {
                vec![
                    i(&[1], Op::Call(g(k - 1), vec![v(0)])),
                    i(&[1 + 1], Op::Call(g(k - 1), vec![v(1)])),
                ]
            };
            let result = insts.len() as u32;
            funcs.push(Func {
                name: format!("g{k}"),
                params: vec![Ty::F64],
                returns: vec![Ty::F64],
                types: vec![Ty::F64; insts.len() + 1],
                body: Block {
                    insts,
                    term: Term::Return(vec![Val::from_number(result)]),
                },
            });
        }
        Module {
            funcs,
            main: Some(FuncId::new(0)),
            vectors: Default::default(),
            strings: vec![],
            cells: Default::default(),
        }
    }

    #[test]
    fn the_module_stays_within_its_budget() {
        let mut m = doubling_chain(4000);
        let before: usize = m.funcs.iter().map(|f| f.body.size()).sum();
        let budget = budget(&m);
        inline(&mut m);
        crate::verify::verify(&m).unwrap();
        let after: usize = m.funcs.iter().map(|f| f.body.size()).sum();
        assert!(after > before, "small callees were inlined");
        assert!(after <= budget, "{after} instructions, budget {budget}");
        // Without the budget the rounds alone would have made it (each
        // function doubling six times) several times larger.
        assert!(before * 32 > budget);
    }

    /// `f0` reads with an unplaced message; `fk` calls `f(k-1)`, the
    /// chain's order the reverse of the module's.
    fn reading_chain(n: usize) -> Module {
        let funcs = (0..n)
            .map(|k| {
                let op = if k == 0 {
                    Op::ReadReal(crate::StrId::new(0))
                } else {
                    Op::Call(FuncId::new(n - k), vec![])
                };
                Func {
                    name: format!("f{k}"),
                    params: vec![],
                    returns: vec![],
                    types: vec![Ty::F64],
                    body: Block {
                        insts: vec![i(&[0], op)],
                        term: Term::Return(vec![]),
                    },
                }
            })
            .rev()
            .collect();
        Module {
            funcs,
            main: Some(FuncId::new(0)),
            vectors: Default::default(),
            strings: vec![format!("{}end of input", base::message::UNPLACED)],
            cells: Default::default(),
        }
    }

    thread_local! {
        static LOOKS: std::cell::Cell<usize> = const { std::cell::Cell::new(0) };
    }

    fn counted_reads(b: &Block, strings: &[String], through: &mut Vec<usize>) -> bool {
        LOOKS.with(|c| c.set(c.get() + 1));
        block_reads_unplaced(b, strings, through)
    }

    #[test]
    fn which_functions_read_is_found_in_a_walk_per_function() {
        let n = 2000;
        let m = reading_chain(n);
        LOOKS.with(|c| c.set(0));
        let may = functions_that(&m, counted_reads);
        assert!(may.iter().all(|r| *r), "every function reaches the read");
        // Sweeping the module until nothing changed looked at n * n / 2
        // bodies here.
        let looks = LOOKS.with(|c| c.get());
        assert_eq!(looks, n, "bodies looked at for {n} functions");
    }

    #[test]
    fn a_call_under_a_position_of_its_own_does_not_pass_a_read_on() {
        let n = 6;
        let mut m = reading_chain(n);
        // `f3` calls `f2` under a position: `f3` and its callers do not
        // read at the running call site, `f2` and below do.
        let f3 = &mut m.funcs[n - 1 - 3].body.insts[0].op;
        let Op::Call(g, args) = f3 else {
            panic!("{f3:?}")
        };
        *f3 = Op::CallAt(*g, std::mem::take(args), crate::StrId::new(0));
        let may = reads_unplaced(&m, reads_said(&m).as_ref());
        let reads: Vec<bool> = (0..n).map(|k| may[n - 1 - k]).collect();
        assert_eq!(reads, [true, true, true, false, false, false]);
    }

    #[test]
    fn a_small_module_is_inlined_as_before() {
        let mut m = doubling_chain(6);
        inline(&mut m);
        crate::verify::verify(&m).unwrap();
        let mut out = Vec::new();
        crate::eval::run(&m, &mut "".as_bytes(), &mut out).unwrap();
        // 1.5 doubled 2^5 times.
        assert_eq!(String::from_utf8(out).unwrap(), "6442450944");
        // Everything within reach of main is inlined into it.
        assert_eq!(
            m.funcs.len(),
            1,
            "{:?}",
            m.funcs.iter().map(|f| &f.name).collect::<Vec<_>>()
        );
    }
}
