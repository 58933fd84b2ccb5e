//! `zero` and `plus` on abstract values: the compile-time twins of the
//! interpreter's (crates/interp/src/adops.rs). Both preserve sharing as
//! the interpreter's do (a union or value met twice in one walk is summed
//! or zeroed once: [`SharedMemo`]), and both make unions of their
//! own ([`Site::Zero`], [`Site::Plus`]) when an operand holds one.

use super::{Mode, Op, Ops};
use crate::domain::{Av, AvId, LeafKind, Site, UnionId};
use crate::lineage;
use ir::Tag;
use rustc_hash::{FxHashMap as HashMap, FxHashSet as HashSet};

/// What `zero` and `plus` remember across calls.
#[derive(Default)]
pub(crate) struct Sums {
    zero: HashMap<AvId, AvId>,
    /// `zero` of a union, and the domain's generation when it was
    /// computed: valid while no union has changed since, so that a union
    /// reached twice in a value (a shared structure) is walked once.
    zero_union: HashMap<UnionId, (u64, AvId)>,
    /// `plus` of two unions, likewise.
    plus_unions: HashMap<(UnionId, UnionId), (u64, AvId)>,
    /// `zero` and `plus` of values with unions inside, and the domain's
    /// generation they were computed in, kept only when computing them
    /// changed no union: valid while no union changes, so that a node
    /// reached many times in a shared structure (a chain of triples) is
    /// walked once per generation, not once per path to it.
    shared: SharedMemo,
    /// `zero` (`None`) and `plus` (`Some`, the other union) of unions
    /// being computed: a union that holds itself is reached again.
    active: HashSet<(UnionId, Option<UnionId>)>,
}

/// See [`Sums::shared`]. `plus` of values without unions is kept
/// for good (it depends on nothing that changes).
///
/// A union's `zero` (and two unions' `plus`) is also walked at most once
/// per outermost call (`walk`, its epoch in `seen`): otherwise every union
/// that gains a member bumps the generation, and every other union met
/// again below is walked again, exponentially many times in a structure
/// of unions nested in unions. Walking once per call suffices: the
/// analysis runs again whenever a union changed.
#[derive(Default)]
struct SharedMemo {
    zero: HashMap<AvId, (u64, AvId)>,
    plus: HashMap<(AvId, AvId), (Option<u64>, AvId)>,
    seen: HashMap<(UnionId, Option<UnionId>), u64>,
    walk: u64,
    nesting: u32,
}

impl SharedMemo {
    fn enter(&mut self) {
        if self.nesting == 0 {
            self.walk += 1;
        }
        self.nesting += 1;
    }

    fn leave(&mut self) {
        self.nesting -= 1;
    }

    /// Is this the first time the walk under way meets `key`?
    fn first_visit(&mut self, key: (UnionId, Option<UnionId>)) -> bool {
        self.seen.insert(key, self.walk) != Some(self.walk)
    }
}

impl<M: Mode> Ops<M> {
    pub fn zero(&mut self, v: AvId) -> AvId {
        self.sums.shared.enter();
        let z = self.zero_node(v);
        self.sums.shared.leave();
        z
    }

    fn zero_node(&mut self, v: AvId) -> AvId {
        if let Some(u) = self.dom.as_union_id(v) {
            return self.zero_union(u);
        }
        // A union inside may still gain members: recompute.
        let cacheable = !self.dom.has_union(v);
        if let Some(z) = self.sums.zero.get(&v).filter(|_| cacheable) {
            return *z;
        }
        let generation = self.dom.generation;
        if let Some((g, z)) = self.sums.shared.zero.get(&v) {
            if *g == generation {
                return *z;
            }
        }
        let z = match self.dom.get(v).clone() {
            Av::Bottom | Av::Bool(_) | Av::Nil | Av::Leaf(_, LeafKind::Bool) => v,
            Av::Union(_) | Av::Leaf(_, LeafKind::Union(_)) => self.dom.bottom(),
            Av::Real(_) | Av::Leaf(_, LeafKind::Real) => self.dom.real(0.0),
            Av::Prim(_) => self.dom.nil(),
            Av::Pair(a, b) => {
                let (a, b) = (self.zero(a), self.zero(b));
                self.dom.pair(a, b)
            }
            Av::Bundle(a, b) => {
                let (a, b) = (self.zero(a), self.zero(b));
                self.dom.bundle(a, b)
            }
            Av::Wrap(t, x) => {
                let x = self.zero(x);
                self.dom.wrap(t, x)
            }
            Av::Vector(e, n) | Av::Leaf(_, LeafKind::Vector(e, n)) => {
                let e = self.zero(e);
                self.dom.vector(e, n)
            }
            Av::Closure(l, env) => match self.prog.prim_chain(l) {
                Some(tags) if env.is_empty() => {
                    let mut z = self.dom.nil();
                    for t in tags.iter().rev() {
                        z = match t {
                            Tag::Forward => {
                                let pz = self.dom.wrap(Tag::Perturb, z);
                                self.dom.bundle(z, pz)
                            }
                            _ => self.dom.wrap(*t, z),
                        };
                    }
                    z
                }
                _ => {
                    let env = env.iter().map(|x| self.zero(*x)).collect();
                    self.dom.closure(l, env)
                }
            },
        };
        if cacheable {
            self.sums.zero.insert(v, z);
        } else if self.dom.generation == generation {
            self.sums.shared.zero.insert(v, (generation, z));
        }
        z
    }

    /// `zero` of a union: the union of its members' zeros ([`Site::Zero`]).
    pub fn zero_union(&mut self, u: UnionId) -> AvId {
        self.sums.shared.enter();
        let z = self.zero_union_walk(u);
        self.sums.shared.leave();
        z
    }

    fn zero_union_walk(&mut self, u: UnionId) -> AvId {
        let u = self.dom.find(u);
        if let Some((g, r)) = self.sums.zero_union.get(&u) {
            if *g == self.dom.generation {
                return *r;
            }
        }
        let z = self.dom.site_union(Site::Zero(u));
        if self.sums.shared.first_visit((u, None)) && self.sums.active.insert((u, None)) {
            for m in self.dom.members(u).to_vec() {
                let zm = self.zero(m);
                self.dom.add_member(z, zm);
            }
            self.sums.active.remove(&(u, None));
            let r = self.dom.union_av(z);
            self.sums.zero_union.insert(u, (self.dom.generation, r));
            return r;
        }
        self.dom.union_av(z)
    }

    /// `plus` of two unions: the union of the sums of their members of one
    /// kind ([`Site::Plus`]); members of different kinds do not conform,
    /// an error at run time.
    pub fn plus_unions(&mut self, u: UnionId, w: UnionId) -> AvId {
        self.sums.shared.enter();
        let p = self.plus_unions_walk(u, w);
        self.sums.shared.leave();
        p
    }

    fn plus_unions_walk(&mut self, u: UnionId, w: UnionId) -> AvId {
        let (u, w) = (self.dom.find(u), self.dom.find(w));
        if let Some((g, r)) = self.sums.plus_unions.get(&(u, w)) {
            if *g == self.dom.generation {
                return *r;
            }
        }
        let p = match self.dom.union_at(Site::Plus(u, w)) {
            Some(p) => p,
            None => match self.accumulator(u, w) {
                Some(acc) => {
                    self.dom.alias_site(Site::Plus(u, w), acc);
                    acc
                }
                None => self.dom.site_union(Site::Plus(u, w)),
            },
        };
        if self.sums.shared.first_visit((u, Some(w))) && self.sums.active.insert((u, Some(w))) {
            for mu in self.dom.members(u).to_vec() {
                for mw in self.dom.members(w).to_vec() {
                    // Members without reals of different kinds sum too,
                    // also when `w` has a member of `mu`'s kind (`()` and
                    // a primitive, of a primitive chosen at run time).
                    let r = if self.dom.kind(mu) == self.dom.kind(mw) {
                        self.plus_inner(mu, mw).ok()
                    } else {
                        self.nil_sum(mu, mw)
                    };
                    if let Some(r) = r {
                        self.dom.add_member(p, r);
                    }
                }
            }
            self.sums.active.remove(&(u, Some(w)));
            let r = self.dom.union_av(p);
            self.sums
                .plus_unions
                .insert((u, w), (self.dom.generation, r));
            return r;
        }
        self.dom.union_av(p)
    }

    /// The operand of `plus` of unions `u` and `w` that is itself a sum
    /// with the other (see [`crate::lineage`]): a sensitivity accumulated
    /// in a loop (`acc := plus(x, acc)`) would otherwise make a new union
    /// per step. `plus` keeps shapes, so the accumulator's union can hold
    /// the new sums too.
    fn accumulator(&self, u: UnionId, w: UnionId) -> Option<UnionId> {
        if lineage::same_shape_ancestors(&self.dom, w).contains(&u) {
            Some(w)
        } else if lineage::same_shape_ancestors(&self.dom, u).contains(&w) {
            Some(u)
        } else {
            None
        }
    }

    pub fn plus(&mut self, a: AvId, b: AvId) -> Op<AvId> {
        self.sums.shared.enter();
        let r = self.plus_inner(a, b);
        self.sums.shared.leave();
        r.map_err(|_| ir::message::plus_mismatch(&self.describe(a), &self.describe(b)))
    }

    fn plus_inner(&mut self, a: AvId, b: AvId) -> Op<AvId> {
        let bottom = self.dom.bottom();
        if a == bottom || b == bottom {
            return Ok(bottom);
        }
        let generation = self.dom.generation;
        if let Some((g, r)) = self.sums.shared.plus.get(&(a, b)) {
            if g.is_none() || *g == Some(generation) {
                return Ok(*r);
            }
        }
        let r = self.plus_walk(a, b)?;
        let forever = !self.dom.has_union(a) && !self.dom.has_union(b);
        if forever || self.dom.generation == generation {
            let g = (!forever).then_some(generation);
            self.sums.shared.plus.insert((a, b), (g, r));
        }
        Ok(r)
    }

    /// [`Self::plus_inner`] without its memo.
    fn plus_walk(&mut self, a: AvId, b: AvId) -> Op<AvId> {
        // With a union on one side, the sum has the shape of the sum of
        // the other side and the union's member of its kind; with unions
        // on both, it is a union.
        match (self.dom.as_union_id(a), self.dom.as_union_id(b)) {
            (Some(u), Some(w)) => return Ok(self.plus_unions(u, w)),
            (Some(u), None) => {
                let Some(i) = self.dom.member_index(u, b) else {
                    return self.nil_sum_with_union(a, b, true).ok_or_else(String::new);
                };
                let m = self.dom.members(u)[i];
                return self.plus_inner(m, b);
            }
            (None, Some(w)) => {
                let Some(i) = self.dom.member_index(w, a) else {
                    return self.nil_sum_with_union(b, a, false).ok_or_else(String::new);
                };
                let m = self.dom.members(w)[i];
                return self.plus_inner(a, m);
            }
            (None, None) => {}
        }
        match (self.dom.get(a).clone(), self.dom.get(b).clone()) {
            (Av::Real(x), Av::Real(y)) => Ok(match (x, y) {
                (Some(x), Some(y)) => self.dom.real(f64::from_bits(x) + f64::from_bits(y)),
                _ => self.dom.any_real(),
            }),
            (Av::Bool(x), Av::Bool(y)) if x.is_none() || y.is_none() || x == y => Ok(a),
            (Av::Nil, Av::Nil) => Ok(a),
            (Av::Prim(p), Av::Prim(q)) if p == q => Ok(a),
            (Av::Pair(a1, b1), Av::Pair(a2, b2)) => {
                let (x, y) = (self.plus_inner(a1, a2)?, self.plus_inner(b1, b2)?);
                Ok(self.dom.pair(x, y))
            }
            (Av::Bundle(a1, b1), Av::Bundle(a2, b2)) => {
                let (x, y) = (self.plus_inner(a1, a2)?, self.plus_inner(b1, b2)?);
                Ok(self.dom.bundle(x, y))
            }
            (Av::Closure(l1, e1), Av::Closure(l2, e2)) if l1 == l2 && e1.len() == e2.len() => {
                let mut env = Vec::with_capacity(e1.len());
                for (x, y) in e1.iter().zip(e2.iter()) {
                    env.push(self.plus_inner(*x, *y)?);
                }
                Ok(self.dom.closure(l1, env))
            }
            (Av::Wrap(t1, x), Av::Wrap(t2, y)) if t1 == t2 => {
                let z = self.plus_inner(x, y)?;
                Ok(self.dom.wrap(t1, z))
            }
            // Elementwise; lengths known to differ do not conform (else
            // the check is at run time).
            (
                Av::Vector(e1, n1) | Av::Leaf(_, LeafKind::Vector(e1, n1)),
                Av::Vector(e2, n2) | Av::Leaf(_, LeafKind::Vector(e2, n2)),
            ) => {
                if self.dom.known_real(n1).is_some()
                    && self.dom.known_real(n2).is_some()
                    && n1 != n2
                {
                    return Err(String::new());
                }
                let e = self.plus_inner(e1, e2)?;
                let n = if n1 == n2 { n1 } else { self.dom.any_real() };
                Ok(self.dom.vector(e, n))
            }
            _ => self.nil_sum(a, b).ok_or_else(String::new),
        }
    }

    /// `plus` of two values without reals whose representations differ
    /// only in how a transformed primitive was reached (as in the
    /// interpreter): the one that is not a procedure.
    /// A sum of a transformed primitive and a value holding unions is
    /// that value when it is nil-like on some of their members
    /// ([`Ops::maybe_nil_like`]: at run time, the member that conforms).
    pub fn nil_sum(&self, a: AvId, b: AvId) -> Option<AvId> {
        let procedure = |v: AvId| matches!(self.dom.get(v), Av::Closure(..) | Av::Prim(_));
        if procedure(a) && self.nil_like(a) && self.maybe_nil_like(b) {
            return Some(b);
        }
        if procedure(b) && self.nil_like(b) && self.maybe_nil_like(a) {
            return Some(a);
        }
        if !(self.nil_like(a) && self.nil_like(b)) {
            return None;
        }
        Some(if procedure(a) { b } else { a })
    }

    /// [`Ops::nil_sum`] of union value `uv` (the first operand when
    /// `union_first`) and a value `x` of a kind none of its members has:
    /// the sum for the members it is defined on (the others are errors at
    /// run time), when that is one value.
    pub fn nil_sum_with_union(&self, uv: AvId, x: AvId, union_first: bool) -> Option<AvId> {
        let u = self.dom.as_union_id(uv)?;
        let mut sums = self.dom.members(u).iter().filter_map(|m| {
            if union_first {
                self.nil_sum(*m, x)
            } else {
                self.nil_sum(x, *m)
            }
        });
        let first = sums.next()?;
        if sums.all(|s| s == first) {
            Some(first)
        } else if !union_first && matches!(self.dom.get(x), Av::Closure(..) | Av::Prim(_)) {
            // Each member sums to itself: the union is the sum.
            Some(uv)
        } else {
            None
        }
    }
}
