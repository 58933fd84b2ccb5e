//! FIR-to-FIR: fewer parameters.
//!
//! Specialisation passes the same value in several parameters (a closure
//! and its own environment, both arms of a pair that were one value) and
//! carries values through loops that nothing reads any more. Both cost
//! copies and registers at every call and every iteration.
//!
//! - Equal parameters: two parameters of a function are equal when every
//!   call passes equal arguments for them, where an argument that is
//!   itself a parameter of the caller is equal to another when their
//!   parameters are equal (a greatest fixpoint, by partition refinement
//!   over the whole module, so loops and mutual tail calls are handled).
//!   Uses of such a parameter are replaced by the first equal one.
//! - Constant parameters: one every call passes the same constant is that
//!   constant (`known::use_known_params`), and then dead.
//! - Dead parameters: a parameter is live when its function reads it for
//!   anything but passing it to a parameter that is not live; dead ones are
//!   removed from the function and from every call.
//!
//! The parameters of a function a `VecBuild` calls stay as they are: the
//! vector's element index is its last.

use crate::{Block, Func, FuncId, Module, Op, Term, Ty, Val};
use base::EntityRef;
use rustc_hash::FxHashMap as HashMap;

/// Expects every function simplified (as the passes before it leave
/// them), and leaves them so.
pub fn shrink(m: &mut Module) {
    for _ in 0..4 {
        let mut changed = vec![false; m.funcs.len()];
        base::timing::time("known-params", || {
            super::known::use_known_params(m, &mut changed)
        });
        base::timing::time("merge-equal", || merge_equal(m, &mut changed));
        base::timing::time("remove-dead", || remove_dead(m, &mut changed));
        if !changed.contains(&true) {
            break;
        }
        base::timing::time("simplify", || {
            crate::passes::simplify::simplify_changed(m, &changed)
        });
    }
}

/// Every call of each function: (caller, the caller's [`Args`] index of
/// each argument). A `VecBuild`'s calls are not (see the module's doc).
fn call_sites(m: &Module, args: &mut [Args]) -> Vec<Vec<(usize, Vec<usize>)>> {
    let mut sites = vec![Vec::new(); m.funcs.len()];
    for (i, f) in m.funcs.iter().enumerate() {
        f.body.for_each_call(&mut |g, a, kind| {
            if kind != crate::CallKind::Build {
                let a = a.iter().map(|v| args[i].node(*v)).collect();
                sites[g.index()].push((i, a));
            }
        });
    }
    sites
}

/// A value number: equal numbers are equal values, provided parameters
/// of one class are equal.
#[derive(Clone, PartialEq, Eq, Hash)]
enum Node {
    /// A parameter, by its class.
    Param(usize),
    F(u64),
    B(bool),
    Bin(u8, usize, usize),
    Un(u8, usize),
    Cmp(u8, usize, usize),
    Not(usize),
    /// Any other value (a call's result, an `If`'s, a real read) of one
    /// function: equal only to itself.
    Opaque(usize, u32),
}

/// How a value a call argument depends on is computed, over other such
/// values (indices into [`Args::nodes`]).
#[derive(Clone, Copy)]
enum Shape {
    Param(usize),
    F(u64),
    B(bool),
    /// Operation, operands; `true` when the operands commute.
    Bin(u8, usize, usize, bool),
    Un(u8, usize),
    Cmp(u8, usize, usize),
    Not(usize),
    Opaque(u32),
}

/// The values of one function that its calls pass as arguments, with
/// those they are computed from, in dependency order: the refinement
/// numbers only these, again when the function's classes split (numbering
/// every value of the module each round was most of the pass's time on
/// large modules).
#[derive(Default)]
struct Args {
    nodes: Vec<Shape>,
    index: HashMap<Val, usize>,
    defs: HashMap<Val, Shape>,
    /// Operands of each defined value, as values.
    operands: HashMap<Val, Vec<Val>>,
    params: usize,
}

impl Args {
    fn new(f: &Func) -> Args {
        let mut a = Args {
            params: f.params.len(),
            ..Args::default()
        };
        a.collect(&f.body);
        a
    }

    fn collect(&mut self, b: &Block) {
        for inst in &b.insts {
            let shape = match &inst.op {
                Op::F64Const(x) => Some((Shape::F(x.to_bits()), vec![])),
                Op::BoolConst(x) => Some((Shape::B(*x), vec![])),
                Op::FBin(op, x, y) => {
                    let commutes = matches!(op, crate::FBin::Add | crate::FBin::Mul);
                    Some((Shape::Bin(*op as u8, 0, 0, commutes), vec![*x, *y]))
                }
                Op::FUn(op, x) => Some((Shape::Un(*op as u8, 0), vec![*x])),
                Op::FCmp(c, x, y) => Some((Shape::Cmp(*c as u8, 0, 0), vec![*x, *y])),
                Op::Not(x) => Some((Shape::Not(0), vec![*x])),
                Op::If { then_, else_, .. } => {
                    self.collect(then_);
                    self.collect(else_);
                    None
                }
                _ => None,
            };
            if let Some((shape, ops)) = shape {
                let r = inst.results[0];
                self.defs.insert(r, shape);
                self.operands.insert(r, ops);
            }
        }
    }

    /// The index of value `v`, adding it and what it is computed from
    /// (iteratively: chains of arithmetic may be long).
    fn node(&mut self, v: Val) -> usize {
        let mut todo = vec![(v, false)];
        while let Some((x, ready)) = todo.pop() {
            if self.index.contains_key(&x) {
                continue;
            }
            let ops = self.operands.get(&x).cloned().unwrap_or_default();
            if !ready && !ops.is_empty() {
                todo.push((x, true));
                todo.extend(ops.iter().map(|o| (*o, false)));
                continue;
            }
            let at = |o: usize| self.index[&ops[o]];
            let shape = match self.defs.get(&x) {
                _ if x.index() < self.params => Shape::Param(x.index()),
                Some(Shape::Bin(op, _, _, c)) => Shape::Bin(*op, at(0), at(1), *c),
                Some(Shape::Un(op, _)) => Shape::Un(*op, at(0)),
                Some(Shape::Cmp(op, _, _)) => Shape::Cmp(*op, at(0), at(1)),
                Some(Shape::Not(_)) => Shape::Not(at(0)),
                Some(s) => *s,
                None => Shape::Opaque(x.index() as u32),
            };
            self.index.insert(x, self.nodes.len());
            self.nodes.push(shape);
        }
        self.index[&v]
    }

    /// Numbers the nodes of function `fi`, given its parameters' classes.
    fn number(&self, fi: usize, class: &[usize], intern: &mut HashMap<Node, usize>) -> Vec<usize> {
        let mut vn = Vec::with_capacity(self.nodes.len());
        for shape in &self.nodes {
            let node = match *shape {
                Shape::Param(i) => Node::Param(class[i]),
                Shape::F(x) => Node::F(x),
                Shape::B(x) => Node::B(x),
                Shape::Bin(op, a, b, commutes) => {
                    let (mut x, mut y) = (vn[a], vn[b]);
                    if commutes && y < x {
                        std::mem::swap(&mut x, &mut y);
                    }
                    Node::Bin(op, x, y)
                }
                Shape::Un(op, a) => Node::Un(op, vn[a]),
                Shape::Cmp(op, a, b) => Node::Cmp(op, vn[a], vn[b]),
                Shape::Not(a) => Node::Not(vn[a]),
                Shape::Opaque(v) => Node::Opaque(fi, v),
            };
            let len = intern.len();
            vn.push(*intern.entry(node).or_insert(len));
        }
        vn
    }
}

/// Marks in `changed` the functions it changes.
fn merge_equal(m: &mut Module, changed: &mut [bool]) {
    let mut args: Vec<Args> = m.funcs.iter().map(Args::new).collect();
    let sites = call_sites(m, &mut args);
    let built = m.built_funcs();
    let n = m.funcs.len();
    // Initial classes: one per (function, type); a function nobody calls
    // (main), or a `VecBuild` calls, keeps its parameters apart.
    let mut class: Vec<Vec<usize>> = Vec::with_capacity(n);
    let mut count = 0usize;
    {
        let mut ids: HashMap<(usize, Ty, usize), usize> = HashMap::default();
        for (fi, f) in m.funcs.iter().enumerate() {
            let c = f
                .params
                .iter()
                .enumerate()
                .map(|(i, t)| {
                    let apart = sites[fi].is_empty() || built[fi];
                    let k = (fi, *t, if apart { i } else { 0 });
                    let len = ids.len();
                    *ids.entry(k).or_insert(len)
                })
                .collect();
            class.push(c);
        }
        count = count.max(ids.len());
    }
    // Refinement by a worklist: a function's value numbers depend only
    // on its own parameters' classes, and a class keeps its number while
    // it does not split, so only the callees of a function whose classes
    // split are looked at again (refining the whole module round after
    // round, ten rounds a call on large programs, was most of the pass's
    // time). The partition reached is the same, the coarsest stable one.
    let mut intern = HashMap::default();
    let mut vns: Vec<Vec<usize>> = args
        .iter()
        .enumerate()
        .map(|(fi, a)| a.number(fi, &class[fi], &mut intern))
        .collect();
    let mut callees: Vec<Vec<usize>> = vec![Vec::new(); n];
    for (g, calls) in sites.iter().enumerate() {
        for (h, _) in calls {
            if callees[*h].last() != Some(&g) {
                callees[*h].push(g);
            }
        }
    }
    let mut queued = vec![true; n];
    let mut work: Vec<usize> = (0..n).rev().collect();
    while let Some(g) = work.pop() {
        queued[g] = false;
        if split(&mut class[g], &sites[g], &vns, &mut count) {
            vns[g] = args[g].number(g, &class[g], &mut intern);
            for &c in &callees[g] {
                if !queued[c] {
                    queued[c] = true;
                    work.push(c);
                }
            }
        }
    }
    for (fi, f) in m.funcs.iter_mut().enumerate() {
        let mut first: HashMap<usize, u32> = HashMap::default();
        let mut map: HashMap<Val, Val> = HashMap::default();
        for (i, c) in class[fi].iter().enumerate() {
            let r = *first.entry(*c).or_insert(i as u32);
            if r != i as u32 {
                map.insert(Val::new(i), Val::from_number(r));
            }
        }
        if !map.is_empty() {
            changed[fi] = true;
            rename_uses(&mut f.body, &map);
        }
    }
}

/// Splits the classes of a function's parameters by the arguments its
/// `calls` pass them (their value numbers in `vns`); says whether any
/// split. Within a class, the parameters of the first arguments seen keep
/// its number and the others take new ones from `count`.
fn split(
    class: &mut [usize],
    calls: &[(usize, Vec<usize>)],
    vns: &[Vec<usize>],
    count: &mut usize,
) -> bool {
    let mut members: HashMap<usize, u32> = HashMap::default();
    for c in class.iter() {
        *members.entry(*c).or_default() += 1;
    }
    // A class of one parameter stays one: its calls need not be looked at.
    if members.values().all(|k| *k == 1) {
        return false;
    }
    let mut ids: HashMap<(usize, Vec<usize>), usize> = HashMap::default();
    let mut kept: rustc_hash::FxHashSet<usize> = Default::default();
    let mut split = false;
    for i in 0..class.len() {
        let c = class[i];
        if members[&c] == 1 {
            continue;
        }
        let key: Vec<usize> = calls.iter().map(|(h, a)| vns[*h][a[i]]).collect();
        class[i] = *ids.entry((c, key)).or_insert_with(|| {
            if kept.insert(c) {
                c
            } else {
                split = true;
                *count += 1;
                *count - 1
            }
        });
    }
    split
}

fn rename_uses(b: &mut Block, map: &HashMap<Val, Val>) {
    crate::passes::inline::rename_block(b, map);
}

/// Marks the parameters a block reads (`real`) and records, for every
/// parameter passed to a call, the callee parameter it flows to.
fn param_uses(b: &Block, np: usize, real: &mut [bool], edges: &mut Vec<(usize, FuncId, usize)>) {
    for i in &b.insts {
        match &i.op {
            Op::Call(g, args) | Op::CallAt(g, args, _) => arg_edges(*g, args, np, edges),
            op => op.for_each_operand(|v| read_param(v, np, real)),
        }
        if let Op::If { then_, else_, .. } = &i.op {
            param_uses(then_, np, real, edges);
            param_uses(else_, np, real, edges);
        }
    }
    match &b.term {
        Term::TailCall(g, args) => arg_edges(*g, args, np, edges),
        t => t.for_each_operand(|v| read_param(v, np, real)),
    }
}

/// A parameter read other than as a call's argument is really needed.
fn read_param(v: Val, np: usize, real: &mut [bool]) {
    if (v.index()) < np {
        real[v.index()] = true;
    }
}

/// A parameter passed as argument `j` of a call of `g` is needed if that
/// parameter of `g` is.
fn arg_edges(g: FuncId, args: &[Val], np: usize, edges: &mut Vec<(usize, FuncId, usize)>) {
    for (j, a) in args.iter().enumerate() {
        if (a.index()) < np {
            edges.push((a.index(), g, j));
        }
    }
}

/// Marks in `changed` the functions it changes.
fn remove_dead(m: &mut Module, changed: &mut [bool]) {
    let mut live: Vec<Vec<bool>> = m
        .funcs
        .iter()
        .map(|f| vec![false; f.params.len()])
        .collect();
    // (callee, param) -> the (caller, param)s passed to it.
    let mut feeds: HashMap<(usize, usize), Vec<(usize, usize)>> = HashMap::default();
    let mut work = Vec::new();
    let built = m.built_funcs();
    for (fi, f) in m.funcs.iter().enumerate() {
        let mut edges = Vec::new();
        if built[fi] {
            live[fi].fill(true);
        }
        param_uses(&f.body, f.params.len(), &mut live[fi], &mut edges);
        for (p, g, j) in edges {
            feeds.entry((g.index(), j)).or_default().push((fi, p));
        }
        for (p, l) in live[fi].iter().enumerate() {
            if *l {
                work.push((fi, p));
            }
        }
    }
    while let Some((g, j)) = work.pop() {
        if let Some(srcs) = feeds.get(&(g, j)) {
            for &(f, p) in srcs {
                if !live[f][p] {
                    live[f][p] = true;
                    work.push((f, p));
                }
            }
        }
    }
    let all_live: Vec<bool> = live.iter().map(|l| l.iter().all(|x| *x)).collect();
    if !all_live.contains(&false) {
        return;
    }
    for (fi, f) in m.funcs.iter_mut().enumerate() {
        changed[fi] |= drop_args(&mut f.body, &live, &all_live);
    }
    for (fi, f) in m.funcs.iter_mut().enumerate() {
        if all_live[fi] {
            continue;
        }
        renumber(f, &live[fi]);
        changed[fi] = true;
    }
}

/// Drops the arguments of dead parameters from the calls in `b`; whether
/// there were any.
pub(super) fn drop_args(b: &mut Block, live: &[Vec<bool>], all_live: &[bool]) -> bool {
    let keep = |g: FuncId, args: &mut Vec<Val>| {
        if all_live[g.index()] {
            return false;
        }
        let l = &live[g.index()];
        let mut k = l.iter();
        args.retain(|_| *k.next().expect("arity"));
        true
    };
    let mut dropped = false;
    for i in &mut b.insts {
        match &mut i.op {
            Op::Call(g, args) | Op::CallAt(g, args, _) => dropped |= keep(*g, args),
            Op::If { then_, else_, .. } => {
                dropped |= drop_args(then_, live, all_live);
                dropped |= drop_args(else_, live, all_live);
            }
            _ => {}
        }
    }
    if let Term::TailCall(g, args) = &mut b.term {
        dropped |= keep(*g, args);
    }
    dropped
}

/// Removes the dead parameters of `f`, renumbering its values.
pub(super) fn renumber(f: &mut Func, live: &[bool]) {
    let np = f.params.len();
    let removed = live.iter().filter(|l| !**l).count() as u32;
    let mut map: HashMap<Val, Val> = HashMap::default();
    let mut k = 0u32;
    for (i, l) in live.iter().enumerate() {
        if *l {
            map.insert(Val::new(i), Val::from_number(k));
            k += 1;
        }
    }
    for v in np..f.types.len() {
        map.insert(Val::new(v), Val::new(v - removed as usize));
    }
    let mut params = Vec::new();
    let mut types = Vec::new();
    for (i, t) in f.types.iter().enumerate() {
        if i < np {
            if live[i] {
                params.push(*t);
                types.push(*t);
            }
        } else {
            types.push(*t);
        }
    }
    crate::passes::inline::rename_block(&mut f.body, &map);
    f.params = params;
    f.types = types;
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Cmp, FBin};

    use crate::testing::inst as i;

    /// main calls loop(x, x, 0) with x read; loop(a, b, c) = if a < 10
    /// then loop(a + 1, b + 1, c) else a + b: a and b are always equal, c
    /// is never read.
    #[test]
    fn equal_and_dead_parameters() {
        let main = Func {
            name: "main".into(),
            params: vec![],
            returns: vec![],
            types: vec![Ty::F64, Ty::F64, Ty::F64],
            body: Block {
                insts: vec![
                    i(&[0], Op::ReadReal(crate::StrId::new(0))),
                    i(&[1], Op::F64Const(0.0)),
                    i(
                        &[2],
                        Op::Call(FuncId::new(1), vec![Val::new(0), Val::new(0), Val::new(1)]),
                    ),
                    i(&[], Op::PrintReal(Val::new(2))),
                ],
                term: Term::Return(vec![]),
            },
        };
        let lp = Func {
            name: "loop".into(),
            params: vec![Ty::F64; 3],
            returns: vec![Ty::F64],
            types: vec![
                Ty::F64,
                Ty::F64,
                Ty::F64,
                Ty::F64,
                Ty::Bool,
                Ty::F64,
                Ty::F64,
                Ty::F64,
                Ty::F64,
                Ty::F64,
            ],
            body: Block {
                insts: vec![
                    i(&[3], Op::F64Const(10.0)),
                    i(&[4], Op::FCmp(Cmp::Lt, Val::new(0), Val::new(3))),
                    i(
                        &[5],
                        Op::If {
                            cond: Val::new(4),
                            then_: Block {
                                insts: vec![
                                    i(&[6], Op::F64Const(1.0)),
                                    i(&[7], Op::FBin(FBin::Add, Val::new(0), Val::new(6))),
                                    i(&[8], Op::FBin(FBin::Add, Val::new(1), Val::new(6))),
                                ],
                                term: Term::TailCall(
                                    FuncId::new(1),
                                    vec![Val::new(7), Val::new(8), Val::new(2)],
                                ),
                            },
                            else_: Block {
                                insts: vec![i(&[9], Op::FBin(FBin::Add, Val::new(0), Val::new(1)))],
                                term: Term::Yield(vec![Val::new(9)]),
                            },
                        },
                    ),
                ],
                term: Term::Return(vec![Val::new(5)]),
            },
        };
        let mut m = Module {
            funcs: vec![main, lp],
            main: Some(FuncId::new(0)),
            vectors: Default::default(),
            strings: vec!["eof".into()],
            cells: Default::default(),
        };
        let run = |m: &Module| {
            let mut out = Vec::new();
            crate::eval::run(m, &mut "2.5".as_bytes(), &mut out).unwrap();
            String::from_utf8(out).unwrap()
        };
        let before = run(&m);
        shrink(&mut m);
        assert_eq!(m.funcs[1].params, vec![Ty::F64]);
        assert_eq!(run(&m), before);
        assert_eq!(before, "21");
    }
}
