//! FIR-to-FIR: lists whose cells hold their link and reals become a
//! count and a stack of reals (a buffer no collector scans); lists whose
//! cells hold nothing but the link become a count alone.
//!
//! Why: reverse mode's forward sweep through a loop records one cell per
//! step, and the backward sweep walks them back. Once `fields` has
//! dropped every slot the backward sweep does not read, a step's cell
//! holds its link and the reals the backward sweep reads (lse's
//! maximum), or the link alone (sumsq's and matvec's loops over a
//! vector: the list says only how many steps were taken). A cell per
//! step costs an allocation, and the collector marks the whole list at
//! every collection while it lives; a push on a buffer of reals costs a
//! few stores, and the collector never looks inside the buffer.
//!
//! The analysis joins the values that may be one another (an argument
//! and its parameter, a return and the call's result, a yield and its
//! `If`'s result, a cell and its link) into classes, by union-find over
//! the whole module. A class is a stack when every value in it is made
//! by an `Alloc` of a member with no slots (the empty list) or with one
//! `Ptr` slot (the link) followed by `F64`s, read by a `Load` of one of
//! that member's slots, or tested by a `TagIs` of one of those two tags,
//! and goes nowhere else (another cell, a memo table, a `VecBuild`'s
//! arguments or a function a `VecBuild` calls: their layouts are fixed).
//!
//! Each value of a stack class becomes two: the buffer (a `Ptr`, a
//! vector of the member's reals: [`Op::StackPush`]) and the count (an
//! `F64`, the number of cells behind it); where the cells hold no reals,
//! the count alone. The empty list is a buffer of no elements and 0; a
//! cell is the push of its reals on its link's buffer and its link's
//! count plus 1; its link is the same buffer and one less; its reals are
//! the buffer's element at the count (element 0 holds the buffer's own
//! count); a tag test compares the count with 0. The counts' additions
//! are `PlusAdd`s, which no operation counter counts.
//!
//! A class may hold cells of several members of each kind: the first
//! steps of a loop whose index the analysis knows are members of their
//! own, and so are the ends of their chains. Its buffer's elements are
//! as wide as its widest member's reals (a narrower one's push pads with
//! zeros), and a load reads the slot at its place in the element.
//!
//! Invariant kept: every `TagIs` of a class is answered by comparing the
//! count with 0, so a class with several members of a kind is a stack
//! only when each test's cell may have no member of that kind but the
//! one it tests for ([`super::tags::tested_tags`]); signatures change
//! only for functions that calls name directly.

use super::flows::Flows;
use super::simplify;
use crate::{Block, Cmp, FBin, Inst, Module, Op, Term, Ty, Val};
use base::EntityRef;
use std::collections::{BTreeMap, BTreeSet};

/// What a cell's layout makes it, for a stack.
#[derive(Clone, Copy, PartialEq)]
enum Kind {
    /// No slots: the empty list.
    Nil,
    /// A `Ptr` slot (the link), then this many `F64`s.
    Cons(usize),
    Other,
}

fn kind(m: &Module, tag: u32) -> Kind {
    kind_in(&m.cells, tag)
}

fn kind_in(cells: &BTreeMap<u32, Vec<Ty>>, tag: u32) -> Kind {
    match cells.get(&tag).map(Vec::as_slice) {
        Some([]) => Kind::Nil,
        Some([Ty::Ptr, reals @ ..]) if reals.iter().all(|t| *t == Ty::F64) => {
            Kind::Cons(reals.len())
        }
        _ => Kind::Other,
    }
}

fn is_cons(k: Kind) -> bool {
    matches!(k, Kind::Cons(_))
}

/// What the values of a class are seen to be.
#[derive(Clone, Default)]
struct Facts {
    /// Something not a stack: the class stays as it is.
    other: bool,
    nil: BTreeSet<u32>,
    cons: BTreeSet<u32>,
}

impl Facts {
    fn tag(&mut self, m: &Module, tag: u32) {
        match kind(m, tag) {
            Kind::Nil => {
                self.nil.insert(tag);
            }
            Kind::Cons(_) => {
                self.cons.insert(tag);
            }
            Kind::Other => self.other = true,
        }
    }

    /// The members of the kind of `tag` in the class.
    fn of_kind(&self, m: &Module, tag: u32) -> &BTreeSet<u32> {
        if is_cons(kind(m, tag)) {
            &self.cons
        } else {
            &self.nil
        }
    }
}

/// Rewrites every stack of the module; then simplifies the functions
/// changed.
pub fn stack_lists(m: &mut Module) {
    let Some(stack) = find(m) else { return };
    // A vector layout of `n` reals for each stack of cells of `n` reals.
    let mut layouts: BTreeMap<usize, u32> = BTreeMap::new();
    for r in &stack.repr {
        if let Repr::Stack(n) = r {
            let found = m
                .vectors
                .iter()
                .find(|(_, slots)| slots.len() == *n && slots.iter().all(|t| *t == Ty::F64))
                .map(|(l, _)| *l);
            let layout = found.unwrap_or_else(|| {
                let l = m.vectors.keys().next_back().map_or(0, |l| l + 1);
                m.vectors.insert(l, vec![Ty::F64; *n]);
                l
            });
            layouts.insert(*n, layout);
        }
    }
    let mut changed = vec![false; m.funcs.len()];
    let cells = m.cells.clone();
    for ((fi, f), changed) in m.funcs.iter_mut().enumerate().zip(&mut changed) {
        // Only pointers are ever joined with a cell's link.
        let repr: Vec<Repr> = (0..f.types.len())
            .map(|v| match f.types[v] {
                Ty::Ptr => stack.repr[stack.classes.val(fi, Val::new(v))],
                _ => Repr::Kept,
            })
            .collect();
        let rets: Vec<Repr> = (0..f.returns.len())
            .map(|i| stack.repr[stack.classes.ret(fi, i)])
            .collect();
        if repr.iter().chain(&rets).all(|r| *r == Repr::Kept) {
            continue;
        }
        *changed = true;
        let mut w = Rewrite {
            repr: &repr,
            cells: &cells,
            layouts: &layouts,
            new: vec![None; f.types.len()],
            count: vec![None; f.types.len()],
            old: f.types.clone(),
            types: Vec::new(),
        };
        let mut params = Vec::new();
        for v in 0..f.params.len() {
            params.extend(w.define(Val::new(v)));
        }
        let body = w.block(std::mem::replace(
            &mut f.body,
            Block {
                insts: vec![],
                term: Term::Return(vec![]),
            },
        ));
        f.params = params.iter().map(|v| w.types[v.index()]).collect();
        f.returns = f
            .returns
            .iter()
            .zip(&rets)
            .flat_map(|(t, r)| match r {
                Repr::Kept => vec![*t],
                Repr::Count => vec![Ty::F64],
                Repr::Stack(_) => vec![Ty::Ptr, Ty::F64],
            })
            .collect();
        f.types = w.types;
        f.body = body;
    }
    simplify::simplify_changed(m, &changed);
}

/// What a value of the module becomes.
#[derive(Clone, Copy, PartialEq)]
enum Repr {
    Kept,
    /// A count.
    Count,
    /// A buffer of elements of this many reals and a count.
    Stack(usize),
}

/// The classes found and what each node becomes.
struct Stack {
    classes: Flows,
    repr: Vec<Repr>,
}

/// `None` when no class is a stack.
fn find(m: &Module) -> Option<Stack> {
    let allocated = m.allocated_tags();
    if !m
        .cells
        .keys()
        .any(|&t| is_cons(kind(m, t)) && allocated.contains(&t))
    {
        return None;
    }
    // A cons cell is one value with its link.
    let mut c = Flows::new(m, &mut |c, fi, i| match &i.op {
        Op::Alloc(t, fields) if is_cons(kind(m, *t)) => {
            c.union(c.val(fi, i.results[0]), c.val(fi, fields[0]));
        }
        Op::Load(x, t, 0) if is_cons(kind(m, *t)) => {
            c.union(c.val(fi, i.results[0]), c.val(fi, *x));
        }
        _ => {}
    });
    let n = c.nodes();
    let mut facts = vec![Facts::default(); n];
    let built = m.built_funcs();
    for (fi, f) in m.funcs.iter().enumerate() {
        let mut mark = |c: &mut Flows, node: usize, k: Mark| {
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
    // A test the count cannot answer: its cell may be another member of
    // the kind it tests for.
    if facts.iter().any(|fx| fx.nil.len() > 1 || fx.cons.len() > 1) {
        let tested = super::tags::tested_tags(m);
        for (fi, f) in m.funcs.iter().enumerate() {
            f.body.for_each_inst(&mut |i| {
                let Op::TagIs(x, tag) = i.op else { return };
                let r = c.find(c.val(fi, x));
                let same_kind = facts[r].of_kind(m, tag);
                if same_kind.len() < 2 {
                    return;
                }
                let may_be = tested
                    .as_ref()
                    .and_then(|t| t[fi].get(&i.results[0]))
                    .cloned()
                    .flatten();
                let answered = may_be
                    .is_some_and(|tags| tags.iter().all(|t| *t == tag || !same_kind.contains(t)));
                if !answered {
                    facts[r].other = true;
                }
            });
        }
    }
    let repr: Vec<Repr> = (0..n)
        .map(|x| {
            let fx = &facts[c.find(x)];
            let reals = fx.cons.iter().map(|t| match kind(m, *t) {
                Kind::Cons(reals) => reals,
                _ => 0,
            });
            match (
                fx.other,
                fx.nil.is_empty() && fx.cons.is_empty(),
                reals.max(),
            ) {
                (true, ..) | (false, true, _) => Repr::Kept,
                (false, false, Some(reals)) if reals > 0 => Repr::Stack(reals),
                _ => Repr::Count,
            }
        })
        .collect();
    repr.iter()
        .any(|r| *r != Repr::Kept)
        .then_some(Stack { classes: c, repr })
}

#[derive(Clone, Copy)]
enum Mark {
    /// Made, read or tested as a member with this tag.
    Tag(u32),
    /// Made or used as something other than a stack.
    Other,
}

/// Calls `mark` on what each instruction of `f` says of the values it
/// makes and reads (only `Ptr`s matter to the caller). What flows
/// between values `join` has already joined, and says nothing here.
fn observe(m: &Module, f: &crate::Func, mark: &mut impl FnMut(Val, Mark)) {
    f.body.for_each_inst(&mut |i| match &i.op {
        Op::Alloc(t, fields) => match kind(m, *t) {
            Kind::Nil | Kind::Cons(_) => mark(i.results[0], Mark::Tag(*t)),
            Kind::Other => {
                mark(i.results[0], Mark::Other);
                fields.iter().for_each(|v| mark(*v, Mark::Other));
            }
        },
        Op::Load(x, t, _) => {
            if is_cons(kind(m, *t)) {
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

/// One function rewritten: its values numbered anew, parameters first
/// (a stack's buffer, then its count), each instruction after its
/// operands.
struct Rewrite<'a> {
    repr: &'a [Repr],
    cells: &'a BTreeMap<u32, Vec<Ty>>,
    layouts: &'a BTreeMap<usize, u32>,
    /// The new value of each old one: a stack's buffer, a count, or the
    /// value kept.
    new: Vec<Option<Val>>,
    /// The count of each old stack value.
    count: Vec<Option<Val>>,
    /// The old values' types, and the new ones'.
    old: Vec<Ty>,
    types: Vec<Ty>,
}

impl Rewrite<'_> {
    fn fresh(&mut self, ty: Ty) -> Val {
        self.types.push(ty);
        Val::new(self.types.len() - 1)
    }

    /// New values for the old value `v`: what it is passed, returned
    /// or yielded as.
    fn define(&mut self, v: Val) -> Vec<Val> {
        match self.repr[v.index()] {
            Repr::Kept => {
                let n = self.fresh(self.old[v.index()]);
                self.new[v.index()] = Some(n);
                vec![n]
            }
            Repr::Count => {
                let n = self.fresh(Ty::F64);
                self.new[v.index()] = Some(n);
                self.count[v.index()] = Some(n);
                vec![n]
            }
            Repr::Stack(_) => {
                let (b, k) = (self.fresh(Ty::Ptr), self.fresh(Ty::F64));
                self.new[v.index()] = Some(b);
                self.count[v.index()] = Some(k);
                vec![b, k]
            }
        }
    }

    /// What the old value `v` is passed, returned or yielded as.
    fn expand(&self, v: Val) -> Vec<Val> {
        let n = self.val(v);
        match self.repr[v.index()] {
            Repr::Stack(_) => vec![n, self.counted(v)],
            _ => vec![n],
        }
    }

    fn expand_all(&self, vs: &[Val]) -> Vec<Val> {
        vs.iter().flat_map(|v| self.expand(*v)).collect()
    }

    fn val(&self, v: Val) -> Val {
        self.new[v.index()].expect("a value is defined before it is used")
    }

    fn counted(&self, v: Val) -> Val {
        self.count[v.index()].expect("a stack value has a count")
    }

    fn is_stack(&self, v: Val) -> bool {
        self.repr[v.index()] != Repr::Kept
    }

    /// The result of a new instruction of `op`, pushed on `out`.
    fn emit(&mut self, out: &mut Vec<Inst>, ty: Ty, op: Op) -> Val {
        let r = self.fresh(ty);
        out.push(Inst {
            results: vec![r],
            op,
        });
        r
    }

    fn constant(&mut self, out: &mut Vec<Inst>, x: f64) -> Val {
        self.emit(out, Ty::F64, Op::F64Const(x))
    }

    /// Gives old value `r` the new value `n` (its count `k`).
    fn set(&mut self, r: Val, n: Val, k: Val) {
        self.new[r.index()] = Some(n);
        self.count[r.index()] = Some(k);
    }

    fn block(&mut self, b: Block) -> Block {
        let mut out = Vec::with_capacity(b.insts.len());
        for i in b.insts {
            self.inst(i, &mut out);
        }
        let term = match b.term {
            Term::Return(vs) => Term::Return(self.expand_all(&vs)),
            Term::Yield(vs) => Term::Yield(self.expand_all(&vs)),
            Term::TailCall(g, vs) => Term::TailCall(g, self.expand_all(&vs)),
            mut t => {
                t.for_each_operand_mut(|v| *v = self.val(*v));
                t
            }
        };
        Block { insts: out, term }
    }

    fn inst(&mut self, i: Inst, out: &mut Vec<Inst>) {
        let first = i.results.first().copied();
        match i.op {
            Op::Alloc(_, fields) if first.is_some_and(|r| self.is_stack(r)) => {
                let r = first.expect("an alloc's result");
                let stack = self.repr[r.index()];
                match fields.split_first() {
                    // The empty list.
                    None => {
                        let k = self.constant(out, 0.0);
                        match stack {
                            Repr::Stack(n) => {
                                let zeros = vec![k; n];
                                let layout = self.layouts[&n];
                                let b = self.emit(out, Ty::Ptr, Op::VecOf(layout, 1, zeros));
                                self.set(r, b, k);
                            }
                            _ => self.set(r, k, k),
                        }
                    }
                    Some((link, reals)) => {
                        let one = self.constant(out, 1.0);
                        let k = self.counted(*link);
                        let next = self.emit(out, Ty::F64, Op::FBin(FBin::PlusAdd, k, one));
                        match stack {
                            Repr::Stack(n) => {
                                let mut vals: Vec<Val> =
                                    reals.iter().map(|v| self.val(*v)).collect();
                                if vals.len() < n {
                                    let zero = self.constant(out, 0.0);
                                    vals.resize(n, zero);
                                }
                                let push = Op::StackPush {
                                    layout: self.layouts[&n],
                                    buf: self.val(*link),
                                    k,
                                    vals,
                                    room: None,
                                };
                                let b = self.emit(out, Ty::Ptr, push);
                                self.set(r, b, next);
                            }
                            _ => self.set(r, next, next),
                        }
                    }
                }
            }
            Op::Load(x, _, slot) if self.is_stack(x) => {
                let r = first.expect("a load's result");
                let k = self.counted(x);
                if slot == 0 {
                    // The link: the same buffer, one element fewer.
                    let minus = self.constant(out, -1.0);
                    let less = self.emit(out, Ty::F64, Op::FBin(FBin::PlusAdd, k, minus));
                    let b = match self.repr[x.index()] {
                        Repr::Stack(_) => self.val(x),
                        _ => less,
                    };
                    self.set(r, b, less);
                } else {
                    let Repr::Stack(n) = self.repr[x.index()] else {
                        unreachable!("a cell of reals is a stack of reals")
                    };
                    let load = Op::VecLoad(self.val(x), k, self.layouts[&n], slot - 1);
                    let v = self.emit(out, Ty::F64, load);
                    self.new[r.index()] = Some(v);
                }
            }
            Op::TagIs(x, tag) if self.is_stack(x) => {
                let r = first.expect("a test's result");
                let zero = self.constant(out, 0.0);
                let empty = self.emit(out, Ty::Bool, Op::FCmp(Cmp::Eq, self.counted(x), zero));
                let v = if is_cons(kind_in(self.cells, tag)) {
                    self.emit(out, Ty::Bool, Op::Not(empty))
                } else {
                    empty
                };
                self.new[r.index()] = Some(v);
            }
            Op::Call(g, args) => {
                self.with_results(out, i.results, Op::Call(g, self.expand_all(&args)))
            }
            Op::CallAt(g, args, at) => {
                let op = Op::CallAt(g, self.expand_all(&args), at);
                self.with_results(out, i.results, op)
            }
            Op::If { cond, then_, else_ } => {
                let cond = self.val(cond);
                let (then_, else_) = (self.block(then_), self.block(else_));
                self.with_results(out, i.results, Op::If { cond, then_, else_ })
            }
            mut op => {
                op.for_each_operand_mut(|v| *v = self.val(*v));
                let results = i.results.iter().map(|r| self.define(*r)[0]).collect();
                out.push(Inst { results, op });
            }
        }
    }

    /// An instruction whose results may be stacks (a call or an `If`).
    fn with_results(&mut self, out: &mut Vec<Inst>, results: Vec<Val>, op: Op) {
        let results = results.iter().flat_map(|r| self.define(*r)).collect();
        out.push(Inst { results, op });
    }
}
