//! Results a caller already knows: a result that every `Return` of a
//! function gives as the same parameter, or as the same constant (through
//! tail calls too), is at every call the argument passed there, or that
//! constant. And parameters a function already knows: one that every call
//! passes the same constant is that constant.
//!
//! Why: the forward sweep of reverse mode returns, with the tape, values
//! its caller passed in (the loop's state) and constants of the derivative
//! rules (`1`, `-1`); the caller stored them in the tape cell, so `fields`
//! could neither see them equal to a slot stored already nor drop them as
//! constants.

use crate::{Block, Func, Module, Op, Term, Ty, Val};
use base::EntityRef;
use rustc_hash::FxHashMap as HashMap;

/// What one result of a function is known to be.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
enum Known {
    /// Nothing seen yet (the optimistic start of the fixpoint).
    Top,
    Param(usize),
    /// A real by its bits (so `-0` and `0` differ), or a boolean.
    Real(u64),
    Bool(bool),
    Unknown,
}

impl Known {
    fn meet(self, other: Known) -> Known {
        match (self, other) {
            (Known::Top, k) | (k, Known::Top) => k,
            (a, b) if a == b => a,
            _ => Known::Unknown,
        }
    }
}

/// What each value of a function is, as far as a result can be known:
/// parameters, constants, and `If` results both arms give alike.
/// Indexed by value (a table per value: the values are dense).
fn value_known(f: &Func) -> Vec<Known> {
    fn of(out: &[Known], v: Val) -> Known {
        out.get(v.index()).copied().unwrap_or(Known::Unknown)
    }
    fn walk(b: &Block, out: &mut [Known]) {
        for i in &b.insts {
            match &i.op {
                Op::F64Const(x) => set(out, i.results[0], Known::Real(x.to_bits())),
                Op::BoolConst(x) => set(out, i.results[0], Known::Bool(*x)),
                Op::If { then_, else_, .. } => {
                    walk(then_, out);
                    walk(else_, out);
                    for (k, r) in i.results.iter().enumerate() {
                        let mut known = Known::Top;
                        for arm in [then_, else_] {
                            // An arm that does not yield gives nothing here.
                            if let Term::Yield(vs) = &arm.term {
                                known = known.meet(of(out, vs[k]));
                            }
                        }
                        if known != Known::Top {
                            set(out, *r, known);
                        }
                    }
                }
                _ => {}
            }
        }
    }
    fn set(out: &mut [Known], v: Val, k: Known) {
        if let Some(slot) = out.get_mut(v.index()) {
            *slot = k;
        }
    }
    let mut out = vec![Known::Unknown; f.types.len()];
    for (p, slot) in out.iter_mut().enumerate().take(f.params.len()) {
        *slot = Known::Param(p);
    }
    walk(&f.body, &mut out);
    out
}

/// How a function can end.
enum End {
    Return(Vec<Val>),
    Tail(usize, Vec<Val>),
}

fn ends(b: &Block, out: &mut Vec<End>) {
    for i in &b.insts {
        if let Op::If { then_, else_, .. } = &i.op {
            ends(then_, out);
            ends(else_, out);
        }
    }
    match &b.term {
        Term::Return(vs) => out.push(End::Return(vs.clone())),
        Term::TailCall(g, args) => out.push(End::Tail(g.index(), args.clone())),
        _ => {}
    }
}

/// For each function, what each of its results is known to be (a
/// greatest fixpoint: recursion that returns a parameter it passes on
/// unchanged keeps it known).
fn known_results(m: &Module) -> Vec<Vec<Known>> {
    let vals: Vec<Vec<Known>> = m.funcs.iter().map(value_known).collect();
    let ends: Vec<Vec<End>> = m
        .funcs
        .iter()
        .map(|f| {
            let mut out = Vec::new();
            ends(&f.body, &mut out);
            out
        })
        .collect();
    let mut known: Vec<Vec<Known>> = m
        .funcs
        .iter()
        .map(|f| vec![Known::Top; f.returns.len()])
        .collect();
    let of = |vals: &[Known], v: Val| vals.get(v.index()).copied().unwrap_or(Known::Unknown);
    loop {
        let mut changed = false;
        for fi in 0..m.funcs.len() {
            for j in 0..known[fi].len() {
                let mut k = Known::Top;
                for e in &ends[fi] {
                    let here = match e {
                        End::Return(vs) => of(&vals[fi], vs[j]),
                        End::Tail(g, args) => match known[*g][j] {
                            Known::Param(q) => of(&vals[fi], args[q]),
                            other => other,
                        },
                    };
                    k = k.meet(here);
                }
                if k != known[fi][j] {
                    known[fi][j] = k;
                    changed = true;
                }
            }
        }
        if !changed {
            return known;
        }
    }
}

/// Replaces, at every call, the uses of a result known to be an argument
/// or a constant by that value; the results themselves are left for
/// `results` to drop. Marks in `changed` the functions it changes.
pub fn use_known_results(m: &mut Module, changed: &mut [bool]) {
    let known = known_results(m);
    for (f, changed) in m.funcs.iter_mut().zip(changed) {
        let mut rename: HashMap<Val, Val> = HashMap::default();
        let mut consts: Vec<(Val, Op)> = Vec::new();
        let mut by_const: HashMap<Known, Val> = HashMap::default();
        let types = &mut f.types;
        collect(&f.body, &known, &mut |r, k, args| {
            let to = match k {
                Known::Param(p) => args[p],
                Known::Real(_) | Known::Bool(_) => *by_const.entry(k).or_insert_with(|| {
                    let (ty, op) = match k {
                        Known::Real(bits) => (Ty::F64, Op::F64Const(f64::from_bits(bits))),
                        Known::Bool(b) => (Ty::Bool, Op::BoolConst(b)),
                        _ => unreachable!("a constant"),
                    };
                    let v = Val::new(types.len());
                    types.push(ty);
                    consts.push((v, op));
                    v
                }),
                Known::Top | Known::Unknown => return,
            };
            rename.insert(r, to);
        });
        if rename.is_empty() {
            continue;
        }
        *changed = true;
        // A renamed result may be an argument that is itself a renamed
        // result (a chain of calls): follow to the end.
        let resolve = |mut v: Val| {
            while let Some(w) = rename.get(&v) {
                v = *w;
            }
            v
        };
        f.body.for_each_use_mut(&mut |v| *v = resolve(*v));
        // Constants at the top of the body are visible everywhere.
        let mut insts: Vec<crate::Inst> = consts
            .into_iter()
            .map(|(v, op)| crate::Inst {
                results: vec![v],
                op,
            })
            .collect();
        insts.append(&mut f.body.insts);
        f.body.insts = insts;
    }
}

/// For each function, what each of its parameters is known to be: the
/// same constant at every call (a greatest fixpoint: a parameter a
/// recursion passes on unchanged keeps what its first call gave).
fn known_params(m: &Module) -> Vec<Vec<Known>> {
    let vals: Vec<Vec<Known>> = m.funcs.iter().map(value_known).collect();
    let mut sites: Vec<Vec<(usize, Vec<Val>)>> = vec![Vec::new(); m.funcs.len()];
    for (fi, f) in m.funcs.iter().enumerate() {
        f.body
            .for_each_call(&mut |g, args, _| sites[g.index()].push((fi, args.to_vec())));
    }
    let mut known: Vec<Vec<Known>> = m
        .funcs
        .iter()
        .map(|f| vec![Known::Top; f.params.len()])
        .collect();
    // `main` is called from outside.
    if let Some(main) = m.main {
        known[main.index()].fill(Known::Unknown);
    }
    loop {
        let mut changed = false;
        for g in 0..m.funcs.len() {
            if Some(g) == m.main.map(|f| f.index()) {
                continue;
            }
            for p in 0..known[g].len() {
                let mut k = Known::Top;
                for (f, args) in &sites[g] {
                    // A `VecBuild` passes the index, unknown, after its
                    // arguments.
                    let arg = args.get(p).and_then(|a| vals[*f].get(a.index()));
                    let here = match arg.copied() {
                        Some(Known::Param(q)) => known[*f][q],
                        Some(c @ (Known::Real(_) | Known::Bool(_))) => c,
                        _ => Known::Unknown,
                    };
                    k = k.meet(here);
                }
                // Only constants are worth knowing: a parameter equal to
                // another is `params`' business.
                if let Known::Param(_) = k {
                    k = Known::Unknown;
                }
                if k != known[g][p] {
                    known[g][p] = k;
                    changed = true;
                }
            }
        }
        if !changed {
            return known;
        }
    }
}

/// Replaces the uses of every parameter that all calls pass the same
/// constant by that constant (`params` then drops the parameter): the
/// backward sweep of reverse mode through a loop passed the `1` and `-1`
/// of derivative rules to itself at every step. Marks in `changed` the
/// functions it changes.
pub fn use_known_params(m: &mut Module, changed: &mut [bool]) {
    let known = known_params(m);
    for ((f, k), changed) in m.funcs.iter_mut().zip(&known).zip(changed) {
        let mut rename: HashMap<Val, Val> = HashMap::default();
        let mut consts = Vec::new();
        for (p, k) in k.iter().enumerate() {
            let op = match *k {
                Known::Real(bits) => Op::F64Const(f64::from_bits(bits)),
                Known::Bool(b) => Op::BoolConst(b),
                _ => continue,
            };
            let v = Val::new(f.types.len());
            f.types.push(f.params[p]);
            rename.insert(Val::new(p), v);
            consts.push(crate::Inst {
                results: vec![v],
                op,
            });
        }
        if consts.is_empty() {
            continue;
        }
        *changed = true;
        f.body.for_each_use_mut(&mut |v| {
            if let Some(w) = rename.get(v) {
                *v = *w;
            }
        });
        consts.append(&mut f.body.insts);
        f.body.insts = consts;
    }
}

fn collect(b: &Block, known: &[Vec<Known>], f: &mut impl FnMut(Val, Known, &[Val])) {
    for i in &b.insts {
        match &i.op {
            Op::Call(g, args) | Op::CallAt(g, args, _) => {
                for (r, k) in i.results.iter().zip(&known[g.index()]) {
                    f(*r, *k, args);
                }
            }
            Op::If { then_, else_, .. } => {
                collect(then_, known, f);
                collect(else_, known, f);
            }
            _ => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::inst as i;
    use crate::FuncId;

    /// `f(x, n)` returns `(x, -1, x * n)` at `n = 0` and otherwise what
    /// `f(x, n - 1)` returns; `main` prints all three results of `f(2, 3)`.
    #[test]
    fn a_parameter_or_constant_returned_is_known_at_the_call() {
        let v = Val::new;
        let f = Func {
            name: "f".into(),
            params: vec![Ty::F64, Ty::F64],
            returns: vec![Ty::F64; 3],
            types: [[Ty::F64; 3].as_slice(), &[Ty::Bool], &[Ty::F64; 9]].concat(),
            body: Block {
                insts: vec![
                    i(&[2], Op::F64Const(0.0)),
                    i(&[3], Op::FCmp(crate::Cmp::Eq, v(1), v(2))),
                    i(
                        &[10, 11, 12],
                        Op::If {
                            cond: v(3),
                            then_: Block {
                                insts: vec![
                                    i(&[4], Op::F64Const(-1.0)),
                                    i(&[5], Op::FBin(crate::FBin::Mul, v(0), v(1))),
                                ],
                                term: Term::Yield(vec![v(0), v(4), v(5)]),
                            },
                            else_: Block {
                                insts: vec![
                                    i(&[6], Op::F64Const(1.0)),
                                    i(&[7], Op::FBin(crate::FBin::Sub, v(1), v(6))),
                                ],
                                term: Term::TailCall(FuncId::new(0), vec![v(0), v(7)]),
                            },
                        },
                    ),
                ],
                term: Term::Return(vec![v(10), v(11), v(12)]),
            },
        };
        let main = Func {
            name: "main".into(),
            params: vec![],
            returns: vec![],
            types: vec![Ty::F64; 5],
            body: Block {
                insts: vec![
                    i(&[0], Op::F64Const(2.0)),
                    i(&[1], Op::F64Const(3.0)),
                    i(&[2, 3, 4], Op::Call(FuncId::new(0), vec![v(0), v(1)])),
                    i(&[], Op::PrintReal(v(2))),
                    i(&[], Op::PrintReal(v(3))),
                    i(&[], Op::PrintReal(v(4))),
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
        assert_eq!(
            known_results(&m)[0],
            vec![
                Known::Param(0),
                Known::Real((-1.0f64).to_bits()),
                Known::Unknown
            ]
        );
        let run = |m: &Module| {
            let mut out = Vec::new();
            crate::eval::run(m, &mut &b""[..], &mut out).expect("runs");
            out
        };
        let before = run(&m);
        let mut changed = vec![false; m.funcs.len()];
        use_known_results(&mut m, &mut changed);
        // Only main, the caller, changes.
        assert_eq!(changed, [false, true]);
        assert_eq!(crate::verify::verify(&m), Ok(()));
        assert_eq!(run(&m), before);
        // main prints its own 2 and a constant -1 instead of the results.
        let prints: Vec<Op> = m.funcs[1]
            .body
            .insts
            .iter()
            .filter(|i| matches!(i.op, Op::PrintReal(_)))
            .map(|i| i.op.clone())
            .collect();
        assert_eq!(prints[0], Op::PrintReal(v(0)));
        assert_eq!(prints[1], Op::PrintReal(v(5)));
        assert_eq!(prints[2], Op::PrintReal(v(4)));
    }

    /// `g(x, c)` calls itself with `c` unchanged; `main` calls it with
    /// `c = 2`: `c` is 2 in `g`.
    #[test]
    fn a_parameter_every_call_passes_the_same_constant_is_that_constant() {
        let v = Val::new;
        let g = Func {
            name: "g".into(),
            params: vec![Ty::F64, Ty::F64],
            returns: vec![Ty::F64],
            types: [[Ty::F64; 3].as_slice(), &[Ty::Bool], &[Ty::F64; 3]].concat(),
            body: Block {
                insts: vec![
                    i(&[2], Op::F64Const(0.0)),
                    i(&[3], Op::FCmp(crate::Cmp::Gt, v(0), v(2))),
                    i(
                        &[6],
                        Op::If {
                            cond: v(3),
                            then_: Block {
                                insts: vec![
                                    i(&[4], Op::FBin(crate::FBin::Sub, v(0), v(1))),
                                    i(&[5], Op::Call(FuncId::new(0), vec![v(4), v(1)])),
                                ],
                                term: Term::Yield(vec![v(5)]),
                            },
                            else_: Block {
                                insts: vec![],
                                term: Term::Yield(vec![v(1)]),
                            },
                        },
                    ),
                ],
                term: Term::Return(vec![v(6)]),
            },
        };
        let main = Func {
            name: "main".into(),
            params: vec![],
            returns: vec![],
            types: vec![Ty::F64; 3],
            body: Block {
                insts: vec![
                    i(&[0], Op::F64Const(5.0)),
                    i(&[1], Op::F64Const(2.0)),
                    i(&[2], Op::Call(FuncId::new(0), vec![v(0), v(1)])),
                    i(&[], Op::PrintReal(v(2))),
                ],
                term: Term::Return(vec![]),
            },
        };
        let mut m = Module {
            funcs: vec![g, main],
            main: Some(FuncId::new(1)),
            vectors: Default::default(),
            strings: vec![],
            cells: Default::default(),
        };
        assert_eq!(
            known_params(&m),
            vec![vec![Known::Unknown, Known::Real(2.0f64.to_bits())], vec![]]
        );
        let run = |m: &Module| {
            let mut out = Vec::new();
            crate::eval::run(m, &mut &b""[..], &mut out).expect("runs");
            out
        };
        let before = run(&m);
        let mut changed = vec![false; m.funcs.len()];
        use_known_params(&mut m, &mut changed);
        assert!(changed.contains(&true));
        assert_eq!(crate::verify::verify(&m), Ok(()));
        assert_eq!(run(&m), before);
    }
}
