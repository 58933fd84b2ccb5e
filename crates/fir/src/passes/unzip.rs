//! FIR-to-FIR: a vector built only to be taken apart slot by slot is not
//! built. Each vector made of one slot of its elements is built from the
//! function that made them, cut down to that slot.
//!
//! Forward mode's rule for `build-vector` (and so `vector-map`) makes the
//! vector of the element function's forward values, then the vector of
//! their primals and the vector of their tangents from it: three passes
//! over n elements and a vector of pairs that dies at once (log-sum-exp's
//! directional derivative over 10^6 reals: 16 MB). Here
//! `w = vec_build L n g(args)` read only by builds `vec_build L' n p(w)`,
//! where `p(v, i)` returns slot s of `v`'s element i, becomes a build of
//! `g_s(args)` per projection: `g` returning its slot s alone (then
//! simplified, so what only the other slots needed dies).
//!
//! `g` then runs once per projection instead of once, and later: it must
//! be arithmetic, reads of cells and vectors and allocation, which end
//! and can be neither seen nor told apart; no call, error, print, input,
//! memo table or operation counter.

use crate::{Block, Func, FuncId, Module, Op, Term, Ty, Val};
use base::EntityRef;
use rustc_hash::FxHashMap as HashMap;

/// Unzips the vectors every function builds only to project.
pub fn unzip_builds(m: &mut Module) {
    let projections: HashMap<FuncId, (u32, u32)> = m
        .funcs
        .iter()
        .enumerate()
        .filter_map(|(k, f)| projection(f).map(|p| (FuncId::new(k), p)))
        .collect();
    if projections.is_empty() {
        return;
    }
    let mut clones: HashMap<(FuncId, u32), FuncId> = HashMap::default();
    let mut new_funcs: Vec<Func> = Vec::new();
    let n_funcs = m.funcs.len();
    for fi in 0..n_funcs {
        let plan = plan(&m.funcs[fi], m, &projections);
        if plan.is_empty() {
            continue;
        }
        // The cut-down functions, made once per (function, slot).
        let mut func_for = |g: FuncId, slot: u32, m: &Module| -> FuncId {
            *clones.entry((g, slot)).or_insert_with(|| {
                let mut f = m.funcs[g.index()].clone();
                f.name = format!("{}_slot{slot}", f.name);
                f.returns = vec![f.returns[slot as usize]];
                cut_returns(&mut f.body, slot as usize);
                crate::passes::simplify::simplify_func(&mut f);
                new_funcs.push(f);
                FuncId::new(n_funcs + new_funcs.len() - 1)
            })
        };
        let mut replaced: HashMap<Val, (FuncId, Option<crate::StrId>)> = HashMap::default();
        // In program order, so that the new functions' numbers are too.
        let mut uses: Vec<_> = plan.uses.iter().collect();
        uses.sort_by_key(|(r, _)| r.index());
        for (proj_result, (g, slot, at)) in uses {
            let id = func_for(*g, *slot, m);
            replaced.insert(*proj_result, (id, *at));
        }
        let f = &mut m.funcs[fi];
        rewrite(&mut f.body, &plan, &replaced);
    }
    m.funcs.extend(new_funcs);
}

/// `Some((layout, slot))` when `f(v, i)` returns slot `slot` of element
/// `i` of `v`, a vector of `layout`, and does nothing else.
fn projection(f: &Func) -> Option<(u32, u32)> {
    if f.params != [Ty::Ptr, Ty::F64] || f.body.insts.len() != 1 {
        return None;
    }
    let inst = &f.body.insts[0];
    match (&inst.op, &f.body.term) {
        (Op::VecLoad(v, i, layout, slot), Term::Return(r))
            if v.index() == 0 && i.index() == 1 && r.as_slice() == inst.results.as_slice() =>
        {
            Some((*layout, *slot))
        }
        _ => None,
    }
}

/// What to unzip in one function.
#[derive(Default)]
struct Plan {
    /// The vectors built only to project: removed.
    dropped: Vec<Val>,
    /// Per projecting build's result: the function that built the
    /// vector, the slot and the first build's position.
    uses: HashMap<Val, (FuncId, u32, Option<crate::StrId>)>,
    /// The first build of each dropped vector, by its result: its
    /// function's arguments.
    args: HashMap<Val, Vec<Val>>,
    /// The projecting builds' results, by the vector they read.
    of: HashMap<Val, Val>,
}

impl Plan {
    fn is_empty(&self) -> bool {
        self.dropped.is_empty()
    }
}

fn plan(f: &Func, m: &Module, projections: &HashMap<FuncId, (u32, u32)>) -> Plan {
    // Every use of every value, and the builds.
    let mut uses = vec![0usize; f.types.len()];
    let mut builds: Vec<crate::Inst> = Vec::new();
    f.body.for_each_inst(&mut |i| {
        i.op.for_each_operand(|v| uses[v.index()] += 1);
        if matches!(i.op, Op::VecBuild { state: None, .. }) {
            builds.push(i.clone());
        }
    });
    let mut terms = Vec::new();
    collect_terms(&f.body, &mut terms);
    for t in &terms {
        for_each_term_operand(t, &mut |v| uses[v.index()] += 1);
    }
    let by_result: HashMap<Val, &crate::Inst> = builds.iter().map(|b| (b.results[0], b)).collect();
    let mut plan = Plan::default();
    // The projecting builds of each built vector.
    let mut projecting: HashMap<Val, Vec<(Val, u32)>> = HashMap::default();
    for b in &builds {
        let Op::VecBuild {
            len, func, args, ..
        } = &b.op
        else {
            continue;
        };
        let (&[w], Some(&(layout, slot))) = (args.as_slice(), projections.get(func)) else {
            continue;
        };
        let Some(made) = by_result.get(&w) else {
            continue;
        };
        let Op::VecBuild {
            layout: l0,
            len: n0,
            ..
        } = &made.op
        else {
            continue;
        };
        if *l0 == layout && n0 == len {
            projecting.entry(w).or_default().push((b.results[0], slot));
        }
    }
    for (w, projs) in projecting {
        if uses[w.index()] != projs.len() {
            continue;
        }
        let Some(Op::VecBuild { func, args, at, .. }) = by_result.get(&w).map(|b| &b.op) else {
            continue;
        };
        let g = &m.funcs[func.index()];
        if !g.returns.iter().all(|t| *t == Ty::F64) || !duplicable(&g.body) {
            continue;
        }
        plan.dropped.push(w);
        plan.args.insert(w, args.clone());
        for (r, slot) in projs {
            plan.uses.insert(r, (*func, slot, *at));
            plan.of.insert(r, w);
        }
    }
    plan
}

/// Can the block run twice for once (see the module's documentation)?
fn duplicable(b: &Block) -> bool {
    let ops = b.insts.iter().all(|i| match &i.op {
        Op::If { then_, else_, .. } => duplicable(then_) && duplicable(else_),
        // What could go unseen, but not what reads a memo table (it may
        // have changed between the two runs) or adds to a sum or a stack
        // in place.
        op => {
            op.is_removable()
                && !matches!(op, Op::MemoGet(..) | Op::VecPlus(..) | Op::StackPush { .. })
        }
    });
    ops && matches!(b.term, Term::Return(_) | Term::Yield(_))
}

/// Makes every `return` of the block give only its value number `slot`.
fn cut_returns(b: &mut Block, slot: usize) {
    for i in &mut b.insts {
        if let Op::If { then_, else_, .. } = &mut i.op {
            cut_returns(then_, slot);
            cut_returns(else_, slot);
        }
    }
    if let Term::Return(vals) = &mut b.term {
        *vals = vec![vals[slot]];
    }
}

fn collect_terms<'a>(b: &'a Block, out: &mut Vec<&'a Term>) {
    for i in &b.insts {
        if let Op::If { then_, else_, .. } = &i.op {
            collect_terms(then_, out);
            collect_terms(else_, out);
        }
    }
    out.push(&b.term);
}

fn for_each_term_operand(t: &Term, f: &mut impl FnMut(Val)) {
    match t {
        Term::Return(vs) | Term::TailCall(_, vs) | Term::Yield(vs) => vs.iter().for_each(|v| f(*v)),
        Term::Error(_) => {}
        Term::ErrorWith(parts) => {
            for p in parts {
                match p {
                    crate::ErrPart::Real(v) | crate::ErrPart::Bool(v) => f(*v),
                    _ => {}
                }
            }
        }
    }
}

/// Drops the unzipped builds and makes each projection a build of the
/// cut-down function.
fn rewrite(b: &mut Block, plan: &Plan, replaced: &HashMap<Val, (FuncId, Option<crate::StrId>)>) {
    b.insts
        .retain(|i| !matches!(i.op, Op::VecBuild { .. }) || !plan.dropped.contains(&i.results[0]));
    for i in &mut b.insts {
        if let Op::If { then_, else_, .. } = &mut i.op {
            rewrite(then_, plan, replaced);
            rewrite(else_, plan, replaced);
            continue;
        }
        let r = match i.results.first() {
            Some(r) => *r,
            None => continue,
        };
        let (Some((g, at)), Some(w)) = (replaced.get(&r), plan.of.get(&r)) else {
            continue;
        };
        if let Op::VecBuild {
            func, args, at: a, ..
        } = &mut i.op
        {
            *func = *g;
            *args = plan.args[w].clone();
            *a = *at;
        }
    }
}
