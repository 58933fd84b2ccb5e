//! Tail-call groups: which FIR functions become one Cranelift function.
//! A function entered by a call (or `main`) holds, as blocks, the functions
//! it reaches by tail calls, up to [`MAX_GROUP_SIZE`] instructions, so that
//! the tail calls between them, mutual ones included, are jumps.

use base::EntityRef;
use fir::{CallKind, FuncId};

/// Most FIR instructions compiled into one Cranelift function by merging
/// the functions a function tail-calls into it.
pub(crate) const MAX_GROUP_SIZE: usize = 12_000;

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

/// Which Cranelift functions to make: one per function entered from
/// outside by a call (or `main`), holding, as blocks, the functions it
/// reaches by tail calls (the mutual tail calls of a loop specialised into
/// several functions), so that those tail calls are jumps. The first
/// member of a group is the function it defines; a tail call out of a
/// group (over the size limit) makes its callee a group of its own.
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
            tail_callees(&m.func(members[k]).body, &mut out);
            k += 1;
            for &g in &out {
                if !seen.insert(g) {
                    continue;
                }
                if total + sizes[g.index()] <= MAX_GROUP_SIZE {
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
