//! FIR-to-FIR: lists whose cells hold nothing but the link become counts.
//!
//! Why: reverse mode's forward sweep through a loop records one cell per
//! step, and the backward sweep walks them back. Where `fields` has
//! dropped every slot the backward sweep does not read, what is left of
//! a step's cell is its link alone (sumsq's and matvec's loops over a
//! vector): the list says only how many steps were taken. A cell per
//! step costs an allocation, and the collector marks the whole list at
//! every collection while it lives; a count costs an addition.
//!
//! The analysis joins the values that may be one another (an argument
//! and its parameter, a return and the call's result, a yield and its
//! `If`'s result, a cell and its link) into classes, by union-find over
//! the whole module. A class is a list of counts when every value in it
//! is made by an `Alloc` of a member with no slots (the empty list) or
//! with one `Ptr` slot (a link), read by a `Load` of that link, or tested
//! by a `TagIs` of one of those two tags, and goes nowhere else (another
//! cell, a memo table, a `VecBuild`'s arguments or a function a
//! `VecBuild` calls: their layouts are fixed). Each value of such a class
//! becomes an `F64`, the number of links behind it: the empty list is
//! 0, a cell one more than its link, its link one less, and the tests
//! compare with 0. The counts' additions are `PlusAdd`s, which no
//! operation counter counts.
//!
//! Invariant kept: a class has one tag of each kind, so every `TagIs` of
//! it is answered by comparing the count with 0; signatures change
//! only for functions that calls name directly.

use super::simplify;
use crate::{Block, Cmp, FBin, Inst, Module, Op, Term, Ty, Val};
use base::EntityRef;
use std::collections::BTreeMap;

/// What a cell's layout makes it, for a list of counts.
#[derive(Clone, Copy, PartialEq)]
enum Kind {
    /// No slots: the empty list.
    Nil,
    /// One `Ptr` slot: a link.
    Link,
    Other,
}

fn kind(m: &Module, tag: u32) -> Kind {
    kind_in(&m.cells, tag)
}

fn kind_in(cells: &BTreeMap<u32, Vec<Ty>>, tag: u32) -> Kind {
    match cells.get(&tag).map(Vec::as_slice) {
        Some([]) => Kind::Nil,
        Some([Ty::Ptr]) => Kind::Link,
        _ => Kind::Other,
    }
}

/// The values of every function and the results of every function,
/// numbered together, joined in classes.
struct Classes {
    /// The first node of each function's values.
    vals: Vec<usize>,
    /// The first node of each function's results.
    rets: Vec<usize>,
    parent: Vec<usize>,
}

impl Classes {
    fn new(m: &Module) -> Classes {
        let (mut vals, mut rets) = (Vec::new(), Vec::new());
        let mut n = 0;
        for f in &m.funcs {
            vals.push(n);
            n += f.types.len();
            rets.push(n);
            n += f.returns.len();
        }
        Classes {
            vals,
            rets,
            parent: (0..n).collect(),
        }
    }

    fn val(&self, f: usize, v: Val) -> usize {
        self.vals[f] + v.index()
    }

    fn ret(&self, f: usize, i: usize) -> usize {
        self.rets[f] + i
    }

    fn find(&mut self, mut x: usize) -> usize {
        while self.parent[x] != x {
            self.parent[x] = self.parent[self.parent[x]];
            x = self.parent[x];
        }
        x
    }

    fn union(&mut self, a: usize, b: usize) {
        let (a, b) = (self.find(a), self.find(b));
        if a != b {
            self.parent[a.max(b)] = a.min(b);
        }
    }
}

/// What the values of a class are seen to be.
#[derive(Clone, Copy, Default)]
struct Facts {
    /// Something not a list of counts: the class stays as it is.
    other: bool,
    nil: Option<u32>,
    link: Option<u32>,
}

impl Facts {
    fn tag(&mut self, m: &Module, tag: u32) {
        let slot = match kind(m, tag) {
            Kind::Nil => &mut self.nil,
            Kind::Link => &mut self.link,
            Kind::Other => {
                self.other = true;
                return;
            }
        };
        if slot.is_some_and(|t| t != tag) {
            self.other = true;
        }
        *slot = Some(tag);
    }
}

/// Rewrites every list of counts of the module; then simplifies the
/// functions changed.
pub fn count_lists(m: &mut Module) {
    let Some(stack) = find(m) else { return };
    let mut changed = vec![false; m.funcs.len()];
    let cells = m.cells.clone();
    for ((fi, f), changed) in m.funcs.iter_mut().enumerate().zip(&mut changed) {
        // Only pointers are ever joined with a cell's link.
        let counted: Vec<bool> = (0..f.types.len())
            .map(|v| f.types[v] == Ty::Ptr && stack.counted[stack.classes.vals[fi] + v])
            .collect();
        let rets: Vec<usize> = (0..f.returns.len())
            .filter(|&i| stack.counted[stack.classes.rets[fi] + i])
            .collect();
        if !counted.contains(&true) && rets.is_empty() {
            continue;
        }
        *changed = true;
        for (v, _) in counted.iter().enumerate().filter(|(_, c)| **c) {
            f.types[v] = Ty::F64;
            if let Some(p) = f.params.get_mut(v) {
                *p = Ty::F64;
            }
        }
        for i in rets {
            f.returns[i] = Ty::F64;
        }
        rewrite(&mut f.body, &counted, &cells, &mut f.types);
    }
    simplify::simplify_changed(m, &changed);
}

/// The classes found and which nodes are counted.
struct Stack {
    classes: Classes,
    counted: Vec<bool>,
}

/// `None` when no class is a list of counts.
fn find(m: &Module) -> Option<Stack> {
    if !m
        .cells
        .keys()
        .any(|&t| kind(m, t) == Kind::Link && m.allocated_tags().contains(&t))
    {
        return None;
    }
    let mut c = Classes::new(m);
    for (fi, f) in m.funcs.iter().enumerate() {
        join(m, &mut c, fi, &f.body, &[]);
    }
    let n = c.parent.len();
    let mut facts = vec![Facts::default(); n];
    let built = m.built_funcs();
    for (fi, f) in m.funcs.iter().enumerate() {
        let mut mark = |c: &mut Classes, node: usize, k: Mark| {
            let r = c.find(node);
            match k {
                Mark::Other => facts[r].other = true,
                Mark::Tag(t) => facts[r].tag(m, t),
            }
        };
        if built[fi] || m.main.is_some_and(|g| g.index() == fi) {
            for (i, t) in f.params.iter().enumerate() {
                if *t == Ty::Ptr {
                    let node = c.val(fi, Val::new(i));
                    mark(&mut c, node, Mark::Other);
                }
            }
            for (i, t) in f.returns.iter().enumerate() {
                if *t == Ty::Ptr {
                    let node = c.ret(fi, i);
                    mark(&mut c, node, Mark::Other);
                }
            }
        }
        observe(m, f, &mut |v, k| {
            if f.types[v.index()] == Ty::Ptr {
                let node = c.val(fi, v);
                mark(&mut c, node, k);
            }
        });
    }
    let counted: Vec<bool> = (0..n)
        .map(|x| {
            let fx = facts[c.find(x)];
            !fx.other && (fx.nil.is_some() || fx.link.is_some())
        })
        .collect();
    counted.iter().any(|&b| b).then_some(Stack {
        classes: c,
        counted,
    })
}

/// Joins the classes of what flows into what in `b`: `yields` are the
/// results of the `If` whose arm `b` is.
fn join(m: &Module, c: &mut Classes, fi: usize, b: &Block, yields: &[Val]) {
    let f = &m.funcs[fi];
    let ptr = |v: Val| f.types[v.index()] == Ty::Ptr;
    for i in &b.insts {
        match &i.op {
            Op::Alloc(t, fields) if kind(m, *t) == Kind::Link => {
                c.union(c.val(fi, i.results[0]), c.val(fi, fields[0]));
            }
            Op::Load(x, t, 0) if kind(m, *t) == Kind::Link => {
                c.union(c.val(fi, i.results[0]), c.val(fi, *x));
            }
            Op::Call(g, args) | Op::CallAt(g, args, _) => {
                let gi = g.index();
                for (j, a) in args.iter().enumerate() {
                    if ptr(*a) {
                        c.union(c.val(fi, *a), c.val(gi, Val::new(j)));
                    }
                }
                for (j, r) in i.results.iter().enumerate() {
                    if ptr(*r) {
                        c.union(c.val(fi, *r), c.ret(gi, j));
                    }
                }
            }
            Op::If { then_, else_, .. } => {
                join(m, c, fi, then_, &i.results);
                join(m, c, fi, else_, &i.results);
            }
            _ => {}
        }
    }
    match &b.term {
        Term::Return(vs) => {
            for (j, v) in vs.iter().enumerate() {
                if ptr(*v) {
                    c.union(c.val(fi, *v), c.ret(fi, j));
                }
            }
        }
        Term::Yield(vs) => {
            for (v, r) in vs.iter().zip(yields) {
                if ptr(*v) {
                    c.union(c.val(fi, *v), c.val(fi, *r));
                }
            }
        }
        Term::TailCall(g, args) => {
            for (j, a) in args.iter().enumerate() {
                if ptr(*a) {
                    c.union(c.val(fi, *a), c.val(g.index(), Val::new(j)));
                }
            }
        }
        Term::Error(_) | Term::ErrorWith(_) => {}
    }
}

#[derive(Clone, Copy)]
enum Mark {
    /// Made, read or tested as a member with this tag.
    Tag(u32),
    /// Made or used as something other than a list of counts.
    Other,
}

/// Calls `mark` on what each instruction of `f` says of the values it
/// makes and reads (only `Ptr`s matter to the caller). What flows
/// between values `join` has already joined, and says nothing here.
fn observe(m: &Module, f: &crate::Func, mark: &mut impl FnMut(Val, Mark)) {
    f.body.for_each_inst(&mut |i| match &i.op {
        Op::Alloc(t, fields) => match kind(m, *t) {
            Kind::Nil | Kind::Link => mark(i.results[0], Mark::Tag(*t)),
            Kind::Other => {
                mark(i.results[0], Mark::Other);
                fields.iter().for_each(|v| mark(*v, Mark::Other));
            }
        },
        Op::Load(x, t, slot) => {
            if *slot == 0 && kind(m, *t) == Kind::Link {
                mark(*x, Mark::Tag(*t));
            } else {
                mark(*x, Mark::Other);
                i.results.iter().for_each(|v| mark(*v, Mark::Other));
            }
        }
        Op::TagIs(x, t) => mark(*x, Mark::Tag(*t)),
        Op::Call(..) | Op::CallAt(..) | Op::If { .. } => {}
        op => {
            op.for_each_operand(|v| mark(v, Mark::Other));
            i.results.iter().for_each(|v| mark(*v, Mark::Other));
        }
    });
}

/// Rewrites the instructions of `b` that make, read or test a counted
/// value (`counted`, by value).
fn rewrite(b: &mut Block, counted: &[bool], cells: &BTreeMap<u32, Vec<Ty>>, types: &mut Vec<Ty>) {
    let mut out = Vec::with_capacity(b.insts.len());
    for mut i in std::mem::take(&mut b.insts) {
        let mut constant = |x: f64, out: &mut Vec<Inst>| {
            let v = Val::new(types.len());
            types.push(Ty::F64);
            out.push(Inst {
                results: vec![v],
                op: Op::F64Const(x),
            });
            v
        };
        let on = |v: Val| counted[v.index()];
        i.op = match i.op {
            // A counted cell's only slot is its link (`find`).
            Op::Alloc(_, fields) if on(i.results[0]) => match fields.first() {
                None => Op::F64Const(0.0),
                Some(link) => Op::FBin(FBin::PlusAdd, *link, constant(1.0, &mut out)),
            },
            Op::Load(x, _, _) if on(x) => Op::FBin(FBin::PlusAdd, x, constant(-1.0, &mut out)),
            Op::TagIs(x, t) if on(x) => {
                let zero = constant(0.0, &mut out);
                let nil = Op::FCmp(Cmp::Eq, x, zero);
                if kind_in(cells, t) == Kind::Link {
                    let r = Val::new(types.len());
                    types.push(Ty::Bool);
                    out.push(Inst {
                        results: vec![r],
                        op: nil,
                    });
                    Op::Not(r)
                } else {
                    nil
                }
            }
            Op::If {
                cond,
                mut then_,
                mut else_,
            } => {
                rewrite(&mut then_, counted, cells, types);
                rewrite(&mut else_, counted, cells, types);
                Op::If { cond, then_, else_ }
            }
            op => op,
        };
        out.push(i);
    }
    b.insts = out;
}
