//! Functions split by the results their callers read: a function whose
//! call sites read different results gets a copy for the sites that read
//! fewer, so that `results` drops from the copy what those sites never
//! read, and `simplify` what only that computed.
//!
//! Why: reverse mode's backward sweep through `vector-map` runs each
//! element's forward sweep again to rebuild its tape (the call is stored,
//! not the closure). When that tape is only a count, as the inner
//! `vector-fold` of a dot product keeps nothing per step, the loop that
//! counts is the one the forward sweep runs, which also computes the dot
//! product, since the forward sweep reads it: the gradient of a
//! matrix-vector product ran its n^2 products three times, not twice. The
//! copy that returns only the count is a loop that only counts, which
//! `counted` gives a closed form.
//!
//! A call reads the results that `results`' liveness finds live. The
//! copy is of the function and of every function it reaches by tail calls
//! (they return its results): its tail calls go to the copies. A group is
//! copied only when nothing outside it tail-calls into it (the results of
//! such a caller are the group's), no `VecBuild` calls a member (all of
//! its results are an element), it returns two results or more, and it
//! is small: copies of large functions cost more build time and code
//! than a dead result is likely to save. The sites that read every result
//! any site reads keep the original (the first sites, if none does).

use super::results;
use super::tail_groups::{copy_group, TailGroups};
use crate::{Block, FuncId, Module, Op};
use base::EntityRef;
use rustc_hash::{FxHashMap as HashMap, FxHashSet as HashSet};

/// The largest group copied (FIR instructions of its functions).
const MAX_GROUP: usize = 400;

/// The most copies made of one function.
const MAX_COPIES: usize = 3;

/// Copies each function for the call sites that read fewer of its results
/// than others do (see the module doc).
pub fn split_by_results(m: &mut Module) {
    if m.funcs.iter().all(|f| f.returns.len() < 2) {
        return;
    }
    let n = m.funcs.len();
    let groups = TailGroups::new(m);
    let live = results::live_values(m);
    // Per callee, the distinct sets of results its calls read, in order.
    let mut reads: Vec<Vec<Vec<bool>>> = vec![Vec::new(); n];
    for (fi, f) in m.funcs.iter().enumerate() {
        for_each_read(&f.body, &live[fi], &mut |g, set| {
            let sets = &mut reads[g.index()];
            if !sets.contains(&set) {
                sets.push(set);
            }
        });
    }
    let mut names: HashSet<String> = m.funcs.iter().map(|f| f.name.clone()).collect();
    // (callee, the results read) -> the copy those calls call.
    let mut copy_for: HashMap<(usize, Vec<bool>), FuncId> = HashMap::default();
    // Each copy's original, to read its liveness by.
    let mut original: Vec<usize> = (0..n).collect();
    for f in 0..n {
        let sets = &reads[f];
        if sets.len() < 2 || m.funcs[f].returns.len() < 2 || m.main == Some(FuncId::new(f)) {
            continue;
        }
        let Some(group) = groups.of(f) else {
            continue;
        };
        let size: usize = group.iter().map(|g| m.funcs[*g].body.size()).sum();
        if size > MAX_GROUP {
            continue;
        }
        // The sites reading every result some site reads keep the
        // original; if there are none, the first sites do.
        let union: Vec<bool> = (0..m.funcs[f].returns.len())
            .map(|j| sets.iter().any(|s| s[j]))
            .collect();
        let kept = sets.iter().position(|s| *s == union).unwrap_or(0);
        let fewer: Vec<Vec<bool>> = sets
            .iter()
            .enumerate()
            .filter(|(k, _)| *k != kept)
            .map(|(_, s)| s.clone())
            .take(MAX_COPIES)
            .collect();
        for set in fewer {
            let ids = copy_group(m, &group, &mut names, "part");
            original.extend(&group);
            copy_for.insert((f, set), ids[&f]);
        }
    }
    if copy_for.is_empty() {
        return;
    }
    for (fi, f) in m.funcs.iter_mut().enumerate() {
        retarget_calls(&mut f.body, &live[original[fi]], &copy_for);
    }
}

/// Calls `f` with the callee of every call in `b` and the results it
/// reads.
fn for_each_read(b: &Block, live: &[bool], f: &mut impl FnMut(FuncId, Vec<bool>)) {
    b.for_each_inst(&mut |i| {
        if let Op::Call(g, _) | Op::CallAt(g, _, _) = &i.op {
            f(*g, i.results.iter().map(|r| live[r.index()]).collect());
        }
    });
}

fn retarget_calls(b: &mut Block, live: &[bool], copy_for: &HashMap<(usize, Vec<bool>), FuncId>) {
    for i in &mut b.insts {
        match &mut i.op {
            Op::Call(g, _) | Op::CallAt(g, _, _) => {
                let set: Vec<bool> = i.results.iter().map(|r| live[r.index()]).collect();
                if let Some(id) = copy_for.get(&(g.index(), set)) {
                    *g = *id;
                }
            }
            Op::If { then_, else_, .. } => {
                retarget_calls(then_, live, copy_for);
                retarget_calls(else_, live, copy_for);
            }
            _ => {}
        }
    }
}
