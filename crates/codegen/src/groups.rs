//! Tail-call groups: which FIR functions become one Cranelift function.
//! A function entered by a call (or `main`) holds, as blocks, the functions
//! it reaches by tail calls, up to [`MAX_GROUP_SIZE`] instructions, so that
//! the tail calls between them, mutual ones included, are jumps.

use base::EntityRef;
use fir::{CallKind, FuncId};

/// Most FIR instructions compiled into one Cranelift function by merging
/// the functions a function tail-calls into it.
pub(crate) const MAX_GROUP_SIZE: usize = 12_000;

/// A function at least this large (instructions) that handles cells and
/// tail-calls a loop makes the loop a group of its own ([`plan_groups`]).
const LARGE_PRELUDE: usize = 400;

pub(crate) fn tail_callees(b: &fir::Block, out: &mut Vec<FuncId>) {
    b.for_each_call(&mut |g, _, kind| {
        if kind == CallKind::Tail {
            out.push(g)
        }
    });
}

/// The functions `b` calls other than by a tail call (a `VecBuild`'s
/// included).
pub(crate) fn called(b: &fir::Block, out: &mut Vec<FuncId>) {
    b.for_each_call(&mut |g, _, kind| {
        if kind != CallKind::Tail {
            out.push(g)
        }
    });
}

/// Whether `g` tail-calls itself: a loop, which may run for the rest of
/// the program in the frame it is compiled into.
fn is_loop(m: &fir::Module, g: FuncId) -> bool {
    let mut out = Vec::new();
    tail_callees(&m.func(g).body, &mut out);
    out.contains(&g)
}

/// Which Cranelift functions to make: one per function entered from
/// outside by a call (or `main`), holding, as blocks, the functions it
/// reaches by tail calls (the mutual tail calls of a loop specialised into
/// several functions), so that those tail calls are jumps. The first
/// member of a group is the function it defines; a tail call out of a
/// group (over the size limit) makes its callee a group of its own. So
/// does a tail call to a loop from a function that handles cells: the
/// code before the loop (its first iterations, which lowering unrolls)
/// would otherwise leave its spill slots in the loop's frame, and the
/// collector, which scans the stack conservatively, would keep the cells
/// they point to for as long as the loop runs (softmax regression kept
/// the tapes of its first four steps, 75 MB, through the whole descent).
/// Code without cells keeps its loops as jumps (saddle's took 1 to 4%
/// more instructions as calls).
pub(crate) fn plan_groups(m: &fir::Module) -> Vec<Vec<FuncId>> {
    let n = m.funcs.len();
    let sizes: Vec<usize> = m.funcs.iter().map(|f| f.body.size()).collect();
    let mut root = vec![false; n];
    let mut work: Vec<FuncId> = Vec::new();
    let mark = |g: FuncId, root: &mut Vec<bool>, work: &mut Vec<FuncId>| {
        if !root[g.index()] {
            root[g.index()] = true;
            work.push(g);
        }
    };
    if let Some(main) = m.main {
        mark(main, &mut root, &mut work);
    }
    let mut out = Vec::new();
    for f in &m.funcs {
        out.clear();
        called(&f.body, &mut out);
        for &g in &out {
            mark(g, &mut root, &mut work);
        }
    }
    let mut groups = Vec::new();
    let mut i = 0;
    while i < work.len() {
        let r = work[i];
        i += 1;
        let mut members = vec![r];
        let mut total = sizes[r.index()];
        let mut seen = std::collections::HashSet::new();
        seen.insert(r);
        let mut k = 0;
        let mut out = Vec::new();
        while k < members.len() {
            out.clear();
            let caller = m.func(members[k]);
            tail_callees(&caller.body, &mut out);
            let holds_cells =
                caller.types.contains(&fir::Ty::Ptr) && sizes[members[k].index()] >= LARGE_PRELUDE;
            k += 1;
            for &g in &out {
                if !seen.insert(g) {
                    continue;
                }
                let apart = holds_cells && g != members[k - 1] && is_loop(m, g);
                if !apart && total + sizes[g.index()] <= MAX_GROUP_SIZE {
                    total += sizes[g.index()];
                    members.push(g);
                } else if !root[g.index()] {
                    root[g.index()] = true;
                    work.push(g);
                }
            }
        }
        groups.push(members);
    }
    groups
}
