//! Equal results: two results of a function are equal when every `Return`
//! of it gives the same value for both, and every tail call it ends in
//! gives equal results of its callee for both (a greatest fixpoint, by
//! partition refinement over the whole module, so loops and mutual tail
//! calls are handled). At every call, uses of such a result are replaced
//! by the first equal one.
//!
//! Why: specialisation returns one value in several results (the parts of
//! a closure that captured it more than once), and a tape cell filled from
//! them stored each copy; with the copies merged, `fields` stores the value
//! once.

use crate::{Block, Func, FuncId, Module, Op, Term, Ty, Val};
use base::EntityRef;
use rustc_hash::FxHashMap as HashMap;

/// How many rounds [`merge_equal_results`] makes at most: a round sees
/// results equal only once the previous one merged the results of the
/// calls they come from.
const ROUNDS: usize = 4;

/// Merges equal results at every call, and `simplify` drops the copies,
/// until no call has equal results left to merge.
pub fn merge_equal_results(m: &mut Module) {
    for _ in 0..ROUNDS {
        if !merge_round(m) {
            break;
        }
    }
}

/// Expects every function simplified (as `params` leaves them), and
/// leaves them so.
fn merge_round(m: &mut Module) -> bool {
    let mut changed = vec![false; m.funcs.len()];
    base::timing::time("known-results", || {
        super::known::use_known_results(m, &mut changed)
    });
    let classes = base::timing::time("partition", || partition(m));
    for (f, changed) in m.funcs.iter_mut().zip(&mut changed) {
        let mut rename: HashMap<Val, Val> = HashMap::default();
        collect_renames(&f.body, &classes, &mut rename);
        if rename.is_empty() {
            continue;
        }
        *changed = true;
        f.body.for_each_use_mut(&mut |v| {
            if let Some(r) = rename.get(v) {
                *v = *r;
            }
        });
    }
    if !changed.contains(&true) {
        return false;
    }
    base::timing::time("simplify", || {
        super::simplify::simplify_changed(m, &changed)
    });
    true
}

/// The class of each result of each function.
fn partition(m: &Module) -> Vec<Vec<u32>> {
    let ty_class = |t: &Ty| match t {
        Ty::F64 => 0,
        Ty::Bool => 1,
        Ty::Ptr => 2,
    };
    let mut classes: Vec<Vec<u32>> = m
        .funcs
        .iter()
        .map(|f| f.returns.iter().map(ty_class).collect())
        .collect();
    let ends: Vec<Vec<End>> = m.funcs.iter().map(ends_of).collect();
    // A function's classes change only when those of a function it
    // tail-calls did: it is looked at again then, not on every sweep of
    // the module (the partition reached is the same, the coarsest stable
    // one; sweeping the module until nothing changed was most of the
    // pass's time on programs of many wide functions).
    let mut tail_callers: Vec<Vec<usize>> = vec![Vec::new(); m.funcs.len()];
    for (i, es) in ends.iter().enumerate() {
        for e in es {
            if let End::Tail(g) = e {
                tail_callers[g.index()].push(i);
            }
        }
    }
    let mut queued = vec![true; m.funcs.len()];
    let mut work: Vec<usize> = (0..m.funcs.len()).rev().collect();
    while let Some(i) = work.pop() {
        queued[i] = false;
        if let Some(next) = refine(i, &m.funcs[i], &ends[i], &classes) {
            classes[i] = next;
            for &c in &tail_callers[i] {
                if !queued[c] {
                    queued[c] = true;
                    work.push(c);
                }
            }
        }
    }
    classes
}

/// The classes of function `i`'s results split by what each is at each of
/// its `ends`, if that splits any.
fn refine(i: usize, f: &Func, ends: &[End], classes: &[Vec<u32>]) -> Option<Vec<u32>> {
    let n = f.returns.len();
    let before = distinct(&classes[i]);
    // Results all apart stay apart.
    if before == n {
        return None;
    }
    // What each result is at each end: a value, or a class of the
    // tail-called callee's results.
    let mut ids: HashMap<(u32, Vec<(bool, u32)>), u32> = HashMap::default();
    let mut next = Vec::with_capacity(n);
    for pos in 0..n {
        let sig: Vec<(bool, u32)> = ends
            .iter()
            .map(|e| match e {
                End::Return(vs) => (false, vs[pos].index() as u32),
                End::Tail(g) => (true, classes[g.index()][pos]),
            })
            .collect();
        let len = ids.len() as u32;
        next.push(*ids.entry((classes[i][pos], sig)).or_insert(len));
    }
    // Refinement only splits classes: the same number of classes is the
    // same partition.
    (distinct(&next) > before).then_some(next)
}

fn distinct(classes: &[u32]) -> usize {
    let mut c = classes.to_vec();
    c.sort_unstable();
    c.dedup();
    c.len()
}

/// How a function can end: returning values, or tail-calling a function
/// (whose results it returns).
enum End {
    Return(Vec<Val>),
    Tail(FuncId),
}

/// Lowering may leave code after an `If` both of whose arms end the
/// function (return, tail-call or fail): its `Return` is never reached
/// and gives no values, so it says nothing of which results are equal.
/// Counting it kept apart the copies of a vector that a loop's tape
/// stored 13 times over (matvec-R under the `custom-*j` `vector-fold`).
fn ends_of(f: &Func) -> Vec<End> {
    /// Walks `b`'s ends; whether `b` can reach its own terminator.
    fn walk(b: &Block, out: &mut Vec<End>) -> bool {
        for i in &b.insts {
            if let Op::If { then_, else_, .. } = &i.op {
                let then_on = walk(then_, out) && matches!(then_.term, Term::Yield(_));
                let else_on = walk(else_, out) && matches!(else_.term, Term::Yield(_));
                if !then_on && !else_on {
                    return false;
                }
            }
        }
        match &b.term {
            Term::Return(vs) => out.push(End::Return(vs.clone())),
            Term::TailCall(g, _) => out.push(End::Tail(*g)),
            _ => {}
        }
        true
    }
    let mut out = Vec::new();
    walk(&f.body, &mut out);
    out
}

fn collect_renames(b: &Block, classes: &[Vec<u32>], rename: &mut HashMap<Val, Val>) {
    for i in &b.insts {
        match &i.op {
            Op::Call(g, _) | Op::CallAt(g, _, _) => {
                let mut first: HashMap<u32, Val> = HashMap::default();
                for (pos, r) in i.results.iter().enumerate() {
                    let Some(class) = classes[g.index()].get(pos) else {
                        continue;
                    };
                    match first.get(class) {
                        Some(f) => {
                            rename.insert(*r, *f);
                        }
                        None => {
                            first.insert(*class, *r);
                        }
                    }
                }
            }
            Op::If { then_, else_, .. } => {
                collect_renames(then_, classes, rename);
                collect_renames(else_, classes, rename);
            }
            _ => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::inst as i;

    /// `f(x) = (x * 3, x * 2, x * 3)`; `main` prints the third result of
    /// `f(1)`.
    #[test]
    fn a_result_always_equal_to_an_earlier_one_is_that_one() {
        let v = Val::new;
        let f = Func {
            name: "f".into(),
            params: vec![Ty::F64],
            returns: vec![Ty::F64, Ty::F64, Ty::F64],
            types: vec![Ty::F64; 5],
            body: Block {
                insts: vec![
                    i(&[1], Op::F64Const(2.0)),
                    i(&[2], Op::FBin(crate::FBin::Mul, v(0), v(1))),
                    i(&[3], Op::F64Const(3.0)),
                    i(&[4], Op::FBin(crate::FBin::Mul, v(0), v(3))),
                ],
                term: Term::Return(vec![v(4), v(2), v(4)]),
            },
        };
        let main = Func {
            name: "main".into(),
            params: vec![],
            returns: vec![],
            types: vec![Ty::F64, Ty::F64, Ty::F64, Ty::F64],
            body: Block {
                insts: vec![
                    i(&[0], Op::F64Const(1.0)),
                    i(&[1, 2, 3], Op::Call(FuncId::new(0), vec![v(0)])),
                    i(&[], Op::PrintReal(v(3))),
                ],
                term: Term::Return(vec![]),
            },
        };
        let mut m = Module {
            funcs: vec![f, main],
            main: Some(FuncId::new(1)),
            vectors: Default::default(),
            strings: vec![],
            cells: Default::default(),
        };
        assert_eq!(partition(&m), vec![vec![0, 1, 0], vec![]]);
        merge_equal_results(&mut m);
        let print = m.funcs[1]
            .body
            .insts
            .iter()
            .find(|i| matches!(i.op, Op::PrintReal(_)))
            .map(|i| i.op.clone());
        assert_eq!(print, Some(Op::PrintReal(v(1))));
        assert_eq!(crate::verify::verify(&m), Ok(()));
    }
}
