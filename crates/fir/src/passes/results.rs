//! Dead results: a result of a function that no caller reads is no longer
//! returned, and what only it needed is no longer computed.
//!
//! Why: the forward sweep of reverse mode through a loop of run-time
//! length is a recursion whose every level returns the primal value and
//! the backpropagator closure of the rest of the loop, flattened into
//! scalars. Lowering returns every scalar that closure captured, although
//! the tape cell stores only the few the backward sweep reads (`fields`),
//! so each level of particle-RR's forward sweep copied 3,537 results
//! through memory to use 22. A result is read when a caller uses it other
//! than by returning it again: liveness is a least fixpoint over the whole
//! module, so recursion returning a result only to itself keeps it dead.
//!
//! The analysis marks values live from the roots (operands of what has an
//! effect or decides control, and of terminators other than `Return`)
//! through the operands of what computes them; a call's result that is
//! live makes the callee's result live, and a live result of a function
//! makes the values its `Return`s give there live. A function that ends
//! in a tail call returns its callee's results, so the two keep the same
//! results: a result live in one is live in the other. Every value the
//! analysis finds dead is also dead for `simplify`'s dead-code removal,
//! which then drops the instructions that used the results removed.
//! The results of a function a `VecBuild` calls are the elements of the
//! vector: all live.
//!
//! Parameters are values of the same liveness: an argument of a call or
//! tail call is live when the callee's parameter is, and a parameter no
//! live value reads is removed, with its argument at every call. Why:
//! reverse mode's backward sweep through a loop carries the sensitivity
//! of everything the loop's closure reads, the constants of the program
//! too (a matrix the gradient is not taken with respect to, a GradBench
//! eval's data), only for the caller to drop it; the sweep added a
//! one-hot per element read to a sum nothing read. `params` removes a
//! parameter read by nothing; here, one read only to compute what is
//! passed back to it or returned dead. What has an effect or decides
//! control (a check of a sum's length, say) keeps what it reads.

use super::{params, simplify};
use crate::{Block, FuncId, Module, Op, Term, Val};
use base::EntityRef;

/// What becomes live when a value of a function is.
#[derive(Default)]
struct Local {
    /// For each value: the values of the same function it is computed
    /// from (for an `If` result: what both arms yield there).
    deps: Vec<Vec<Val>>,
    /// For each value made by a call: the callee and the result's position.
    call: Vec<Option<(FuncId, usize)>>,
    /// Live whatever is returned: operands of effects, conditions,
    /// tail calls and errors.
    roots: Vec<Val>,
    /// For each result position, the values the `Return`s give there.
    returned: Vec<Vec<Val>>,
    /// The arguments of its calls and tail calls: (callee, parameter,
    /// argument).
    args: Vec<(FuncId, usize, Val)>,
}

#[derive(Clone, Copy)]
enum Item {
    Value(usize, Val),
    Result(usize, usize),
    Param(usize, usize),
}

/// Which results and which parameters of each function are live.
struct Liveness {
    results: Vec<Vec<bool>>,
    params: Vec<Vec<bool>>,
    values: Vec<Vec<bool>>,
}

/// [`drop_dead_results`], as a pipeline pass.
pub fn drop_dead(m: &mut Module) {
    drop_dead_results(m);
}

/// Removes the results no caller reads and the parameters nothing live
/// reads, everywhere. Returns whether any function lost one.
pub fn drop_dead_results(m: &mut Module) -> bool {
    let live = liveness(m);
    let all_params: Vec<bool> = live.params.iter().map(|l| l.iter().all(|x| *x)).collect();
    if live.results.iter().all(|l| l.iter().all(|x| *x)) && !all_params.contains(&false) {
        return false;
    }
    for (fi, f) in m.funcs.iter_mut().enumerate() {
        let mut changed = rewrite_calls(&mut f.body, &live.results);
        changed |= params::drop_args(&mut f.body, &live.params, &all_params);
        if live.results[fi].iter().any(|x| !x) {
            let mut k = live.results[fi].iter();
            f.returns.retain(|_| *k.next().expect("arity"));
            rewrite_returns(&mut f.body, &live.results[fi]);
            changed = true;
        }
        if !all_params[fi] {
            params::renumber(f, &live.params[fi]);
            changed = true;
        }
        if changed {
            simplify::dce(f);
        }
    }
    true
}

/// For each function, which of its values are live: a call's result
/// that is not, no one reads (`split` asks).
pub(crate) fn live_values(m: &Module) -> Vec<Vec<bool>> {
    liveness(m).values
}

/// For each function, which of its results are live.
#[cfg(test)]
fn live_results(m: &Module) -> Vec<Vec<bool>> {
    liveness(m).results
}

/// For each function, which of its results and parameters are live.
fn liveness(m: &Module) -> Liveness {
    let locals: Vec<Local> = m.funcs.iter().map(local).collect();
    let mut tail_callers: Vec<Vec<usize>> = vec![Vec::new(); m.funcs.len()];
    let mut tail_callees: Vec<Vec<usize>> = vec![Vec::new(); m.funcs.len()];
    for (fi, f) in m.funcs.iter().enumerate() {
        f.body.for_each_call(&mut |g, _, kind| {
            if kind == crate::CallKind::Tail {
                tail_callees[fi].push(g.index());
                tail_callers[g.index()].push(fi);
            }
        });
    }
    // (callee, parameter) -> the (caller, argument)s passed to it.
    let mut feeds: Vec<Vec<Vec<(usize, Val)>>> = m
        .funcs
        .iter()
        .map(|f| vec![Vec::new(); f.params.len()])
        .collect();
    for (fi, l) in locals.iter().enumerate() {
        for &(g, k, a) in &l.args {
            feeds[g.index()][k].push((fi, a));
        }
    }
    let mut value_live: Vec<Vec<bool>> =
        m.funcs.iter().map(|f| vec![false; f.types.len()]).collect();
    let mut result_live: Vec<Vec<bool>> = m
        .funcs
        .iter()
        .map(|f| vec![false; f.returns.len()])
        .collect();
    let mut param_live: Vec<Vec<bool>> = m
        .funcs
        .iter()
        .map(|f| vec![false; f.params.len()])
        .collect();
    let mut work: Vec<Item> = Vec::new();
    for (fi, l) in locals.iter().enumerate() {
        work.extend(l.roots.iter().map(|v| Item::Value(fi, *v)));
    }
    // What a function a `VecBuild` calls returns is an element: read; its
    // parameters are the `VecBuild`'s arguments (roots) and the index.
    for (fi, built) in m.built_funcs().into_iter().enumerate() {
        if built {
            work.extend((0..m.funcs[fi].returns.len()).map(|j| Item::Result(fi, j)));
            param_live[fi].fill(true);
        }
    }
    while let Some(item) = work.pop() {
        match item {
            Item::Value(f, v) => {
                if std::mem::replace(&mut value_live[f][v.index()], true) {
                    continue;
                }
                let l = &locals[f];
                work.extend(l.deps[v.index()].iter().map(|d| Item::Value(f, *d)));
                if let Some((g, k)) = l.call[v.index()] {
                    work.push(Item::Result(g.index(), k));
                }
                if v.index() < m.funcs[f].params.len() {
                    work.push(Item::Param(f, v.index()));
                }
            }
            Item::Result(f, j) => {
                if std::mem::replace(&mut result_live[f][j], true) {
                    continue;
                }
                work.extend(locals[f].returned[j].iter().map(|v| Item::Value(f, *v)));
                for &g in tail_callees[f].iter().chain(&tail_callers[f]) {
                    work.push(Item::Result(g, j));
                }
            }
            Item::Param(f, k) => {
                // A built function's are live from the start: their
                // arguments are the `VecBuild`'s roots.
                if std::mem::replace(&mut param_live[f][k], true) {
                    continue;
                }
                work.extend(feeds[f][k].iter().map(|&(g, a)| Item::Value(g, a)));
            }
        }
    }
    Liveness {
        results: result_live,
        params: param_live,
        values: value_live,
    }
}

fn local(f: &crate::Func) -> Local {
    let n = f.types.len();
    let mut l = Local {
        deps: vec![Vec::new(); n],
        call: vec![None; n],
        roots: Vec::new(),
        returned: vec![Vec::new(); f.returns.len()],
        args: Vec::new(),
    };
    scan(&f.body, &mut l);
    l
}

fn scan(b: &Block, l: &mut Local) {
    for i in &b.insts {
        match &i.op {
            Op::Call(g, args) | Op::CallAt(g, args, _) => {
                l.args
                    .extend(args.iter().enumerate().map(|(k, a)| (*g, k, *a)));
                for (k, r) in i.results.iter().enumerate() {
                    l.call[r.index()] = Some((*g, k));
                }
            }
            Op::If { cond, then_, else_ } => {
                l.roots.push(*cond);
                for arm in [then_, else_] {
                    if let Term::Yield(vs) = &arm.term {
                        for (r, v) in i.results.iter().zip(vs) {
                            l.deps[r.index()].push(*v);
                        }
                    }
                    scan(arm, l);
                }
            }
            op if op.is_removable() => {
                for r in &i.results {
                    op.for_each_operand(|v| l.deps[r.index()].push(v));
                }
            }
            op => op.for_each_operand(|v| l.roots.push(v)),
        }
    }
    match &b.term {
        Term::Return(vs) => {
            for (j, v) in vs.iter().enumerate() {
                l.returned[j].push(*v);
            }
        }
        // Yields are followed from the `If` results they give.
        Term::Yield(_) => {}
        Term::TailCall(g, args) => {
            l.args
                .extend(args.iter().enumerate().map(|(k, a)| (*g, k, *a)));
        }
        t => t.for_each_operand(|v| l.roots.push(v)),
    }
}

/// Drops the dead results of every call in the block; whether any was.
fn rewrite_calls(b: &mut Block, live: &[Vec<bool>]) -> bool {
    let mut changed = false;
    for i in &mut b.insts {
        match &mut i.op {
            Op::Call(g, _) | Op::CallAt(g, _, _) => {
                let l = &live[g.index()];
                if l.iter().any(|x| !x) {
                    let mut k = l.iter();
                    i.results.retain(|_| *k.next().expect("arity"));
                    changed = true;
                }
            }
            Op::If { then_, else_, .. } => {
                changed |= rewrite_calls(then_, live);
                changed |= rewrite_calls(else_, live);
            }
            _ => {}
        }
    }
    changed
}

fn rewrite_returns(b: &mut Block, live: &[bool]) {
    for i in &mut b.insts {
        if let Op::If { then_, else_, .. } = &mut i.op {
            rewrite_returns(then_, live);
            rewrite_returns(else_, live);
        }
    }
    if let Term::Return(vs) = &mut b.term {
        let mut k = live.iter();
        vs.retain(|_| *k.next().expect("arity"));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::inst as i;
    use crate::{Func, Ty};

    /// `f(x, n)` returns `(x * 2, x + 1)` at `n = 0` and otherwise the
    /// results of `f(x, n - 1)` (a recursion that only passes them up);
    /// `main` prints the first result of `f(1, 3)`.
    fn module() -> Module {
        let v = Val::new;
        let f = Func {
            name: "f".into(),
            params: vec![Ty::F64, Ty::F64],
            returns: vec![Ty::F64, Ty::F64],
            types: [[Ty::F64; 3].as_slice(), &[Ty::Bool], &[Ty::F64; 10]].concat(),
            body: Block {
                insts: vec![
                    i(&[2], Op::F64Const(0.0)),
                    i(&[3], Op::FCmp(crate::Cmp::Eq, v(1), v(2))),
                    i(
                        &[12, 13],
                        Op::If {
                            cond: v(3),
                            then_: Block {
                                insts: vec![
                                    i(&[4], Op::F64Const(2.0)),
                                    i(&[5], Op::FBin(crate::FBin::Mul, v(0), v(4))),
                                    i(&[6], Op::F64Const(1.0)),
                                    i(&[7], Op::FBin(crate::FBin::Add, v(0), v(6))),
                                ],
                                term: Term::Yield(vec![v(5), v(7)]),
                            },
                            else_: Block {
                                insts: vec![
                                    i(&[8], Op::F64Const(1.0)),
                                    i(&[9], Op::FBin(crate::FBin::Sub, v(1), v(8))),
                                    i(&[10, 11], Op::Call(FuncId::new(0), vec![v(0), v(9)])),
                                ],
                                term: Term::Yield(vec![v(10), v(11)]),
                            },
                        },
                    ),
                ],
                term: Term::Return(vec![v(12), v(13)]),
            },
        };
        let main = Func {
            name: "main".into(),
            params: vec![],
            returns: vec![],
            types: vec![Ty::F64; 4],
            body: Block {
                insts: vec![
                    i(&[0], Op::F64Const(1.0)),
                    i(&[1], Op::F64Const(3.0)),
                    i(&[2, 3], Op::Call(FuncId::new(0), vec![v(0), v(1)])),
                    i(&[], Op::PrintReal(v(2))),
                ],
                term: Term::Return(vec![]),
            },
        };
        Module {
            funcs: vec![f, main],
            main: Some(FuncId::new(1)),
            vectors: Default::default(),
            strings: vec![],
            cells: Default::default(),
        }
    }

    #[test]
    fn a_result_only_returned_again_by_its_recursion_is_dead() {
        let mut m = module();
        assert_eq!(live_results(&m), vec![vec![true, false], vec![]]);
        let run = |m: &Module| {
            let mut out = Vec::new();
            crate::eval::run(m, &mut &b""[..], &mut out).expect("runs");
            out
        };
        let before = run(&m);
        assert!(drop_dead_results(&mut m));
        assert_eq!(crate::verify::verify(&m), Ok(()));
        assert_eq!(m.funcs[0].returns, vec![Ty::F64]);
        // The addition only the dropped result needed is gone.
        let adds = format!("{:?}", m.funcs[0].body).matches("Add").count();
        assert_eq!(adds, 0);
        assert_eq!(run(&m), before);
        assert!(!drop_dead_results(&mut m));
    }

    #[test]
    fn a_tail_call_keeps_caller_and_callee_results_alike() {
        let v = Val::new;
        let mut m = module();
        // g(x) tail-calls f(x, 0); main also reads g's second result.
        m.funcs.push(Func {
            name: "g".into(),
            params: vec![Ty::F64],
            returns: vec![Ty::F64, Ty::F64],
            types: vec![Ty::F64; 2],
            body: Block {
                insts: vec![i(&[1], Op::F64Const(0.0))],
                term: Term::TailCall(FuncId::new(0), vec![v(0), v(1)]),
            },
        });
        m.funcs[1].types.extend([Ty::F64; 2]);
        let body = &mut m.funcs[1].body;
        body.insts
            .push(i(&[4, 5], Op::Call(FuncId::new(2), vec![v(0)])));
        body.insts.push(i(&[], Op::PrintReal(v(5))));
        assert_eq!(
            live_results(&m),
            vec![vec![true, true], vec![], vec![true, true]]
        );
        assert!(!drop_dead_results(&mut m));
        assert_eq!(crate::verify::verify(&m), Ok(()));
    }
}
