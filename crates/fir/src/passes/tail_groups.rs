//! Groups of functions joined by tail calls, and their copies: a function
//! that ends in a tail call returns its callee's results, so a pass that
//! changes what a function returns (`split`, `accumulate`) changes, and
//! copies, the function with everything it reaches by tail calls.

use crate::{Block, CallKind, FuncId, Module, Op, Term};
use base::EntityRef;
use rustc_hash::{FxHashMap as HashMap, FxHashSet as HashSet};

/// Who tail-calls whom, and which functions a `VecBuild` calls.
pub(super) struct TailGroups {
    tail_callees: Vec<Vec<usize>>,
    tail_callers: Vec<HashSet<usize>>,
    built: Vec<bool>,
}

impl TailGroups {
    pub(super) fn new(m: &Module) -> TailGroups {
        let n = m.funcs.len();
        let mut tail_callees = vec![Vec::new(); n];
        let mut tail_callers = vec![HashSet::default(); n];
        for (fi, f) in m.funcs.iter().enumerate() {
            f.body.for_each_call(&mut |g, _, kind| {
                if kind == CallKind::Tail {
                    tail_callees[fi].push(g.index());
                    tail_callers[g.index()].insert(fi);
                }
            });
        }
        TailGroups {
            tail_callees,
            tail_callers,
            built: m.built_funcs(),
        }
    }

    /// `f` and the functions it reaches by tail calls, `f` first, if
    /// nothing else tail-calls into them (the results of such a caller
    /// are the group's) and no `VecBuild` calls one (all of its results
    /// are an element).
    pub(super) fn of(&self, f: usize) -> Option<Vec<usize>> {
        let mut group = vec![f];
        let mut k = 0;
        while k < group.len() {
            for g in &self.tail_callees[group[k]] {
                if !group.contains(g) {
                    group.push(*g);
                }
            }
            k += 1;
        }
        let closed = group
            .iter()
            .all(|g| !self.built[*g] && self.tail_callers[*g].iter().all(|c| group.contains(c)));
        closed.then_some(group)
    }

    /// Whether any function tail-calls `f`.
    pub(super) fn is_tail_called(&self, f: usize) -> bool {
        !self.tail_callers[f].is_empty()
    }
}

/// Copies `group` to the end of the module, named `NAME_TAG` (or
/// `NAME_TAG2`, ... where taken: `names` holds the names taken), the
/// copies' tail calls to the group going to the copies. Gives each
/// member's copy.
pub(super) fn copy_group(
    m: &mut Module,
    group: &[usize],
    names: &mut HashSet<String>,
    tag: &str,
) -> HashMap<usize, FuncId> {
    let ids: HashMap<usize, FuncId> = group
        .iter()
        .enumerate()
        .map(|(k, g)| (*g, FuncId::new(m.funcs.len() + k)))
        .collect();
    for g in group {
        let mut copy = m.funcs[*g].clone();
        copy.name = fresh_name(names, &copy.name, tag);
        retarget_tail_calls(&mut copy.body, &ids);
        m.funcs.push(copy);
    }
    ids
}

fn fresh_name(names: &mut HashSet<String>, name: &str, tag: &str) -> String {
    let mut k = 1;
    loop {
        let candidate = match k {
            1 => format!("{name}_{tag}"),
            _ => format!("{name}_{tag}{k}"),
        };
        if names.insert(candidate.clone()) {
            return candidate;
        }
        k += 1;
    }
}

fn retarget_tail_calls(b: &mut Block, ids: &HashMap<usize, FuncId>) {
    for i in &mut b.insts {
        if let Op::If { then_, else_, .. } = &mut i.op {
            retarget_tail_calls(then_, ids);
            retarget_tail_calls(else_, ids);
        }
    }
    if let Term::TailCall(g, _) = &mut b.term {
        if let Some(id) = ids.get(&g.index()) {
            *g = *id;
        }
    }
}
