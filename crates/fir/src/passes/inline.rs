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

use crate::{Block, Func, FuncId, Inst, Module, Op, Term, Val};
use base::EntityRef;
use std::collections::HashMap;

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
    drop_unneeded_sites(m);
    rounds(m);
    prune(m);
    // Calls inlined from a `CallAt` run under its position: only those
    // whose callee may report at it need to.
    drop_unneeded_sites(m);
}

/// The second inlining: every non-recursive callee within the size limit,
/// bottom up over the call graph's strongly connected components.
pub fn inline_bottom_up(m: &mut Module) {
    bottom_up(m);
    prune(m);
    drop_unneeded_sites(m);
}

/// Inlining in rounds: small callees and callees with one call site,
/// tail-called thunks above all.
fn rounds(m: &mut Module) {
    for _ in 0..ROUNDS {
        let sizes: Vec<usize> = m.funcs.iter().map(|f| f.body.size()).collect();
        let mut sites = vec![0usize; m.funcs.len()];
        for f in &m.funcs {
            count_sites(&f.body, &mut sites);
        }
        if let Some(main) = m.main {
            sites[main.index()] += 1;
        }
        // The callees as they were at the start of the round: only those
        // the round may inline (a deep copy of the whole module per round
        // was most of the build time of large programs).
        let snapshot: Vec<Option<Func>> = m
            .funcs
            .iter()
            .enumerate()
            .map(|(g, f)| (sizes[g] <= SMALL || sites[g] == 1).then(|| f.clone()))
            .collect();
        let mut changed = false;
        for (i, f) in m.funcs.iter_mut().enumerate() {
            let mut cx = Inliner {
                me: FuncId::new(i),
                funcs: Callees::Snapshot(&snapshot),
                policy: Policy::Rounds {
                    sizes: &sizes,
                    sites: &sites,
                },
                size: sizes[i],
                max_size: MAX_SIZE,
                types: std::mem::take(&mut f.types),
                subst: HashMap::new(),
                changed: false,
            };
            let mut body = std::mem::replace(
                &mut f.body,
                Block {
                    insts: vec![],
                    term: Term::Return(vec![]),
                },
            );
            cx.block(&mut body);
            if !cx.subst.is_empty() {
                substitute_block(&mut body, &cx.subst);
            }
            f.body = body;
            f.types = cx.types;
            changed |= cx.changed;
        }
        if !changed {
            break;
        }
    }
}

/// Largest function the bottom-up pass makes by inlining.
const MAX_SIZE_BOTTOM_UP: usize = 6000;

/// Inlines, bottom up over the call graph, every call of a function that
/// is not recursive (in no cycle of the call graph) into its callers, as
/// long as the caller stays below [`MAX_SIZE_BOTTOM_UP`]. Callees come
/// first, so what is spliced in has had its own calls inlined already.
fn bottom_up(m: &mut Module) {
    let n = m.funcs.len();
    let graph: Vec<Vec<usize>> = m
        .funcs
        .iter()
        .map(|f| {
            let mut out = Vec::new();
            callees(&f.body, &mut out);
            out.sort_unstable();
            out.dedup();
            out
        })
        .collect();
    let comps = base::scc::sccs(&graph);
    let mut scc = vec![0usize; n];
    for (c, members) in comps.iter().enumerate() {
        for &f in members {
            scc[f] = c;
        }
    }
    let recursive: Vec<bool> = (0..n)
        .map(|f| comps[scc[f]].len() > 1 || graph[f].contains(&f))
        .collect();
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
                funcs: Callees::Module(&m.funcs),
                policy: Policy::BottomUp {
                    sizes: &sizes,
                    scc: &scc,
                    recursive: &recursive,
                },
                size: sizes[i],
                max_size: MAX_SIZE_BOTTOM_UP.max(sizes[i]),
                types,
                subst: HashMap::new(),
                changed: false,
            };
            cx.block(&mut body);
            if !cx.subst.is_empty() {
                substitute_block(&mut body, &cx.subst);
            }
            let types = cx.types;
            sizes[i] = body.size();
            m.funcs[i].body = body;
            m.funcs[i].types = types;
        }
    }
}

/// The functions a block calls or tail-calls (with repeats).
fn callees(b: &Block, out: &mut Vec<usize>) {
    b.for_each_call(&mut |g, _, _| out.push(g.index()));
}

/// Removes the functions `main` cannot reach, renumbering the others.
fn prune(m: &mut Module) {
    let Some(main) = m.main else {
        return;
    };
    let n = m.funcs.len();
    let mut live = vec![false; n];
    let mut work = vec![main.index()];
    live[main.index()] = true;
    let mut out = Vec::new();
    while let Some(f) = work.pop() {
        out.clear();
        callees(&m.funcs[f].body, &mut out);
        for &g in &out {
            if !live[g] {
                live[g] = true;
                work.push(g);
            }
        }
    }
    if live.iter().all(|l| *l) {
        return;
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
}

fn renumber_calls(b: &mut Block, new_id: &[u32]) {
    b.for_each_call_mut(&mut |g| *g = FuncId::new(new_id[g.index()] as usize));
}

fn count_sites(b: &Block, sites: &mut [usize]) {
    b.for_each_call(&mut |g, _, _| sites[g.index()] += 1);
}

/// What a callee inlined at a `CallAt` of position `site` must do to
/// behave as it did under that call: its errors positioned at the running
/// call site name `site`, and its calls run under `site` (a call that
/// already has a position of its own keeps it).
fn at_site(b: &mut Block, site: crate::StrId) {
    for i in &mut b.insts {
        match &mut i.op {
            Op::Call(g, args) => i.op = Op::CallAt(*g, std::mem::take(args), site),
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

/// Does the callee leave only through its last term (no `Return` or
/// `TailCall` inside an `If` arm)?
fn single_exit(b: &Block) -> bool {
    fn arms_ok(b: &Block) -> bool {
        b.insts.iter().all(|i| match &i.op {
            Op::If { then_, else_, .. } => arm_ok(then_) && arm_ok(else_),
            _ => true,
        })
    }
    fn arm_ok(b: &Block) -> bool {
        matches!(b.term, Term::Yield(_) | Term::Error(_) | Term::ErrorWith(_)) && arms_ok(b)
    }
    arms_ok(b)
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
    /// The module as it was at the start of a round: the callees the
    /// round may inline, `None` for the others.
    Snapshot(&'a [Option<Func>]),
    Module(&'a [Func]),
}

impl<'a> Callees<'a> {
    fn get(self, g: FuncId) -> Option<&'a Func> {
        match self {
            Callees::Snapshot(fs) => fs.get(g.index()).and_then(Option::as_ref),
            Callees::Module(fs) => fs.get(g.index()),
        }
    }
}

struct Inliner<'a> {
    me: FuncId,
    funcs: Callees<'a>,
    policy: Policy<'a>,
    size: usize,
    max_size: usize,
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
            Policy::Rounds { sites, .. } => gs <= SMALL || sites[gi] == 1,
            Policy::BottomUp { scc, recursive, .. } => {
                !recursive[gi] && scc[gi] != scc[self.me.index()]
            }
        }
    }

    fn block(&mut self, b: &mut Block) {
        let insts = std::mem::take(&mut b.insts);
        let mut out = Vec::with_capacity(insts.len());
        for mut inst in insts {
            match &mut inst.op {
                Op::If { then_, else_, .. } => {
                    self.block(then_);
                    self.block(else_);
                    out.push(inst);
                }
                Op::Call(g, args) | Op::CallAt(g, args, _)
                    if self.worth(*g)
                        && self.funcs.get(*g).is_some_and(|c| single_exit(&c.body)) =>
                {
                    let g = *g;
                    let Some(callee) = self.funcs.get(g) else {
                        out.push(inst);
                        continue;
                    };
                    let mut body = self.renamed(callee, args);
                    if let Op::CallAt(_, _, site) = inst.op {
                        at_site(&mut body, site);
                    }
                    self.size += self.callee_size(g);
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
                let body = self.renamed(callee, args);
                self.size += self.callee_size(g);
                self.changed = true;
                b.insts.extend(body.insts);
                b.term = body.term;
            }
        }
    }

    /// The callee's body with its parameters replaced by `args` and its
    /// other values renumbered into this function.
    fn renamed(&mut self, callee: &Func, args: &[Val]) -> Block {
        // Every value of the callee is renamed: a dense map.
        let mut map: Vec<Val> = Vec::with_capacity(callee.types.len());
        map.extend(args.iter().take(callee.params.len()));
        for t in callee.types.iter().skip(callee.params.len()) {
            self.types.push(*t);
            map.push(Val::new(self.types.len() - 1));
        }
        let mut b = callee.body.clone();
        let mut r = |v: &mut Val| {
            if let Some(n) = map.get(v.index()) {
                *v = *n;
            }
        };
        rename_results(&mut b, &mut r);
        b.for_each_use_mut(&mut r);
        b
    }
}

pub(crate) fn rename_block(b: &mut Block, map: &HashMap<Val, Val>) {
    let mut r = |v: &mut Val| {
        if let Some(n) = map.get(v) {
            *v = *n;
        }
    };
    rename_results(b, &mut r);
    b.for_each_use_mut(&mut r);
}

/// Renames the results of every instruction of `b` and its nested blocks.
fn rename_results(b: &mut Block, r: &mut impl FnMut(&mut Val)) {
    for i in &mut b.insts {
        i.results.iter_mut().for_each(&mut *r);
        if let Op::If { then_, else_, .. } = &mut i.op {
            rename_results(then_, r);
            rename_results(else_, r);
        }
    }
}

/// Replaces uses (not definitions) of substituted values, following chains.
fn substitute_block(b: &mut Block, subst: &HashMap<Val, Val>) {
    let resolve = |mut v: Val| {
        let mut n = 0;
        while let Some(x) = subst.get(&v) {
            v = *x;
            n += 1;
            if n > subst.len() {
                break;
            }
        }
        v
    };
    let map: HashMap<Val, Val> = subst.keys().map(|k| (*k, resolve(*k))).collect();
    b.for_each_use_mut(&mut |v| {
        if let Some(n) = map.get(v) {
            *v = *n;
        }
    });
}

/// `CallAt` only matters when the callee may raise an error positioned at
/// its call site (`ErrPart::Site`), directly or through its callees; other
/// `CallAt`s become `Call`s, which the inliner can work with.
fn drop_unneeded_sites(m: &mut Module) {
    let n = m.funcs.len();
    let mut may = vec![false; n];
    loop {
        let mut changed = false;
        for i in 0..n {
            if !may[i] && block_may_site(&m.funcs[i].body, &may) {
                may[i] = true;
                changed = true;
            }
        }
        if !changed {
            break;
        }
    }
    for f in &mut m.funcs {
        plain_calls(&mut f.body, &may);
    }
}

fn block_may_site(b: &Block, may: &[bool]) -> bool {
    let term = match &b.term {
        Term::ErrorWith(parts) => parts.iter().any(|p| matches!(p, crate::ErrPart::Site)),
        Term::TailCall(g, _) => may[g.index()],
        _ => false,
    };
    term || b.insts.iter().any(|i| match &i.op {
        Op::Call(g, _) | Op::CallAt(g, _, _) => may[g.index()],
        Op::If { then_, else_, .. } => block_may_site(then_, may) || block_may_site(else_, may),
        _ => false,
    })
}

fn plain_calls(b: &mut Block, may: &[bool]) {
    for i in &mut b.insts {
        match &mut i.op {
            Op::CallAt(g, args, _) if !may[g.index()] => {
                i.op = Op::Call(*g, std::mem::take(args));
            }
            Op::If { then_, else_, .. } => {
                plain_calls(then_, may);
                plain_calls(else_, may);
            }
            _ => {}
        }
    }
}
