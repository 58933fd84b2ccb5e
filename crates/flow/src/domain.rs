//! Abstract values, hash-consed: two equal abstract values have the same
//! [`AvId`], so specialisation keys compare in O(1) per component.
//!
//! The domain mirrors the interpreter's values (crate `interp`), with
//! unknown reals and booleans added: an abstract value is as precise as the
//! concrete one wherever the program allows. Like run-time values, tags are
//! wrappers on non-procedures, and a transformed procedure is a closure of
//! a transformed lambda.

use ir::{LambdaId, Prim, Tag};
use std::collections::HashMap;

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct AvId(pub u32);

#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum Av {
    /// No value: not computed yet, or the computation never returns.
    Bottom,
    /// A known real (its bits) or, with `None`, any real.
    Real(Option<u64>),
    Bool(Option<bool>),
    Nil,
    Prim(Prim),
    Pair(AvId, AvId),
    Closure(LambdaId, Box<[AvId]>),
    /// A perturbation, sensitivity or reverse value of a non-procedure.
    Wrap(Tag, AvId),
    /// A forward value: primal and tangent.
    Bundle(AvId, AvId),
    /// Lowering only: the unknown real or boolean held in scalar number
    /// `n` of the code being generated. Stands for `Real(None)` or
    /// `Bool(None)` with an identity, so that structural operations show
    /// where each scalar goes.
    Sym(u32, SymKind),
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum SymKind {
    Real,
    Bool,
}

/// The arena of abstract values.
#[derive(Default, Debug)]
pub struct Domain {
    nodes: Vec<Av>,
    index: HashMap<Av, AvId>,
    /// Nesting depth of each node (Bottom and atoms are 1).
    depths: Vec<u32>,
}

impl Domain {
    pub fn new() -> Domain {
        let mut d = Domain::default();
        d.intern(Av::Bottom);
        d
    }

    pub fn intern(&mut self, av: Av) -> AvId {
        if let Some(id) = self.index.get(&av) {
            return *id;
        }
        let depth = 1 + match &av {
            Av::Pair(a, b) | Av::Bundle(a, b) => self.depth(*a).max(self.depth(*b)),
            Av::Closure(_, env) => env.iter().map(|x| self.depth(*x)).max().unwrap_or(0),
            Av::Wrap(_, x) => self.depth(*x),
            _ => 0,
        };
        let id = AvId(self.nodes.len() as u32);
        self.nodes.push(av.clone());
        self.depths.push(depth);
        self.index.insert(av, id);
        id
    }

    pub fn get(&self, id: AvId) -> &Av {
        &self.nodes[id.0 as usize]
    }

    pub fn depth(&self, id: AvId) -> u32 {
        self.depths[id.0 as usize]
    }

    pub fn bottom(&self) -> AvId {
        AvId(0)
    }
    pub fn real(&mut self, x: f64) -> AvId {
        self.intern(Av::Real(Some(x.to_bits())))
    }
    pub fn any_real(&mut self) -> AvId {
        self.intern(Av::Real(None))
    }
    pub fn boolean(&mut self, b: Option<bool>) -> AvId {
        self.intern(Av::Bool(b))
    }
    pub fn nil(&mut self) -> AvId {
        self.intern(Av::Nil)
    }
    pub fn pair(&mut self, a: AvId, b: AvId) -> AvId {
        self.intern(Av::Pair(a, b))
    }
    pub fn wrap(&mut self, t: Tag, x: AvId) -> AvId {
        self.intern(Av::Wrap(t, x))
    }
    pub fn bundle(&mut self, p: AvId, t: AvId) -> AvId {
        self.intern(Av::Bundle(p, t))
    }
    pub fn closure(&mut self, l: LambdaId, env: Vec<AvId>) -> AvId {
        self.intern(Av::Closure(l, env.into_boxed_slice()))
    }

    /// Does the value carry no run-time information at all?
    pub fn is_known(&self, id: AvId) -> bool {
        match self.get(id) {
            Av::Real(r) => r.is_some(),
            Av::Bool(b) => b.is_some(),
            Av::Sym(..) => false,
            Av::Bottom | Av::Nil | Av::Prim(_) => true,
            Av::Pair(a, b) | Av::Bundle(a, b) => self.is_known(*a) && self.is_known(*b),
            Av::Closure(_, env) => env.iter().all(|x| self.is_known(*x)),
            Av::Wrap(_, x) => self.is_known(*x),
        }
    }

    /// Forgets every constant real and boolean inside `id`: the widening
    /// that keeps recursion from unrolling forever on a counter.
    pub fn widen(&mut self, id: AvId) -> AvId {
        match self.get(id).clone() {
            Av::Real(Some(_)) | Av::Sym(_, SymKind::Real) => self.any_real(),
            Av::Bool(Some(_)) | Av::Sym(_, SymKind::Bool) => self.boolean(None),
            Av::Pair(a, b) => {
                let (a, b) = (self.widen(a), self.widen(b));
                self.pair(a, b)
            }
            Av::Bundle(a, b) => {
                let (a, b) = (self.widen(a), self.widen(b));
                self.bundle(a, b)
            }
            Av::Wrap(t, x) => {
                let x = self.widen(x);
                self.wrap(t, x)
            }
            Av::Closure(l, env) => {
                let env = env.iter().map(|x| self.widen(*x)).collect();
                self.closure(l, env)
            }
            _ => id,
        }
    }

    /// The least upper bound of two abstract values, if it is union-free.
    pub fn join(&mut self, a: AvId, b: AvId) -> Option<AvId> {
        if a == b {
            return Some(a);
        }
        match (self.get(a).clone(), self.get(b).clone()) {
            (Av::Bottom, _) => Some(b),
            (_, Av::Bottom) => Some(a),
            (Av::Real(_), Av::Real(_)) => Some(self.any_real()),
            (Av::Bool(_), Av::Bool(_)) => Some(self.boolean(None)),
            (Av::Pair(a1, b1), Av::Pair(a2, b2)) => {
                let (x, y) = (self.join(a1, a2)?, self.join(b1, b2)?);
                Some(self.pair(x, y))
            }
            (Av::Bundle(a1, b1), Av::Bundle(a2, b2)) => {
                let (x, y) = (self.join(a1, a2)?, self.join(b1, b2)?);
                Some(self.bundle(x, y))
            }
            (Av::Wrap(t1, x1), Av::Wrap(t2, x2)) if t1 == t2 => {
                let x = self.join(x1, x2)?;
                Some(self.wrap(t1, x))
            }
            (Av::Closure(l1, e1), Av::Closure(l2, e2)) if l1 == l2 && e1.len() == e2.len() => {
                let mut env = Vec::with_capacity(e1.len());
                for (x, y) in e1.iter().zip(e2.iter()) {
                    env.push(self.join(*x, *y)?);
                }
                Some(self.closure(l1, env))
            }
            _ => None,
        }
    }
}
