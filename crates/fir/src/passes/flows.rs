//! Which values of a module may be one another: an argument and its
//! parameter, a return and the call's result, a yield and its `If`'s
//! result, joined in classes by union-find over the whole module (only
//! pointers are joined). The passes that use it add joins of their own:
//! `stacks` a cons cell and its link, `invariant` nothing.

use crate::{Block, Inst, Module, Op, Term, Ty, Val};
use base::EntityRef;

/// The values of every function and the results of every function,
/// numbered together, joined in classes.
pub struct Flows {
    /// The first node of each function's values.
    vals: Vec<usize>,
    /// The first node of each function's results.
    rets: Vec<usize>,
    parent: Vec<usize>,
}

impl Flows {
    /// The classes of `m`'s values: `also` is given each instruction (of
    /// function number `fi`) for the joins of the caller's own.
    pub fn new(m: &Module, also: &mut dyn FnMut(&mut Flows, usize, &Inst)) -> Flows {
        let (mut vals, mut rets) = (Vec::new(), Vec::new());
        let mut n = 0;
        for f in &m.funcs {
            vals.push(n);
            n += f.types.len();
            rets.push(n);
            n += f.returns.len();
        }
        let mut c = Flows {
            vals,
            rets,
            parent: (0..n).collect(),
        };
        for (fi, f) in m.funcs.iter().enumerate() {
            c.join(m, fi, &f.body, &[], also);
        }
        c
    }

    pub fn val(&self, f: usize, v: Val) -> usize {
        self.vals[f] + v.index()
    }

    pub fn ret(&self, f: usize, i: usize) -> usize {
        self.rets[f] + i
    }

    /// How many values and results the classes number.
    pub fn nodes(&self) -> usize {
        self.parent.len()
    }

    pub fn find(&mut self, mut x: usize) -> usize {
        while self.parent[x] != x {
            self.parent[x] = self.parent[self.parent[x]];
            x = self.parent[x];
        }
        x
    }

    pub fn union(&mut self, a: usize, b: usize) {
        let (a, b) = (self.find(a), self.find(b));
        if a != b {
            self.parent[a.max(b)] = a.min(b);
        }
    }

    /// Joins the classes of what flows into what in `b`: `yields` are the
    /// results of the `If` whose arm `b` is.
    fn join(
        &mut self,
        m: &Module,
        fi: usize,
        b: &Block,
        yields: &[Val],
        also: &mut dyn FnMut(&mut Flows, usize, &Inst),
    ) {
        let c = self;
        let f = &m.funcs[fi];
        let ptr = |v: Val| f.types[v.index()] == Ty::Ptr;
        for i in &b.insts {
            also(c, fi, i);
            match &i.op {
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
                    c.join(m, fi, then_, &i.results, also);
                    c.join(m, fi, else_, &i.results, also);
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
}
