//! The abstract AD operations: `zero`, `plus`, `bundle`, `primal`,
//! `tangent`, the tag operations, the tag-aware pair operations and the
//! primitives, on abstract values. They mirror the interpreter's concrete
//! operations (`interp/src/adops.rs` and `prims.rs`) case for case, and
//! call the same transformations of crate `ad`. The analysis applies them
//! to abstract values; lowering applies them to symbolic values
//! ([`Av::Sym`]) to find where each scalar of a result comes from. The
//! primitives are in `adops/prims.rs`, beside the interpreter's `prims.rs`;
//! `zero` and `plus` in `adops/sum.rs`.

use crate::domain::{Av, AvId, Domain, Site, SymKind, UnionId, UnionOp};
use ad::{AdMemo, Untransformed};
use ir::EntityRef;
use ir::{ConstDatum, ConstId, LambdaId, Program, Tag};
use std::collections::HashMap;

mod conform;
mod prims;
mod sum;

/// The program, its AD memo tables and the abstract domain, with the
/// structural operations on abstract values. Lowering keeps using these
/// operations, on abstract values whose unknown leaves are symbolic
/// ([`Av::Sym`]), to find where each scalar of a result comes from: so the
/// meaning of `bundle`, `car` of a forward pair and the rest is written once
/// for compile time (here) and once for run time (crate `interp`).
pub struct Ops {
    pub prog: Program,
    pub memo: AdMemo,
    pub dom: Domain,
    pub(crate) zero_memo: HashMap<AvId, AvId>,
    /// `zero` of a union, and the domain's generation when it was
    /// computed: valid while no union has changed since, so that a union
    /// reached twice in a value (a shared structure) is walked once.
    pub(crate) zero_union_memo: HashMap<UnionId, (u64, AvId)>,
    /// `plus` of two unions, likewise.
    pub(crate) plus_unions_memo: HashMap<(UnionId, UnionId), (u64, AvId)>,
    /// `zero` and `plus` of values with unions inside, and the domain's
    /// generation they were computed in, kept only when computing them
    /// changed no union: valid while no union changes, so that a node
    /// reached many times in a shared structure (a chain of triples) is
    /// walked once per generation, not once per path to it.
    pub(crate) shared_memo: SharedMemo,
    pub(crate) consts: HashMap<ConstId, AvId>,
    /// Set when an operation met a union where it needs a fixed shape
    /// (names the operation): the analysis then stops with a limit error.
    pub(crate) union_hit: std::cell::Cell<Option<(&'static str, UnionId)>>,
    /// The AD nesting depth of each lambda met so far, by lambda number
    /// (see [`crate::analysis::MAX_AD_DEPTH`]).
    pub(crate) ad_depth: Vec<Option<u32>>,
    /// Set when a transformation would nest AD deeper than
    /// [`crate::analysis::MAX_AD_DEPTH`] (the lambda it was asked of):
    /// the transformation is not made and the analysis stops with a limit
    /// error.
    pub(crate) too_deep: Option<LambdaId>,
    /// `zero` (`None`) and `plus` (`Some`, the other union) of unions
    /// being computed: a union that holds itself is reached again.
    pub(crate) active: std::collections::HashSet<(UnionId, Option<UnionId>)>,
    pub(crate) active_maps: std::collections::HashSet<(UnionOp, UnionId, Option<UnionId>)>,
    /// How each union made by [`Ops::map_union`] was made, so that an
    /// inverse operation gives back the union it came from.
    pub(crate) map_origins: HashMap<UnionId, (UnionOp, UnionId, Option<UnionId>)>,
    /// Lowering only: maps of unions met in symbolic values, which
    /// lowering turns into calls ([`Ops::take_pending`]).
    pub symbolic: bool,
    pub(crate) pending: Vec<PendingMap>,
    pub(crate) next_virtual: u32,
}

/// See [`Ops::shared_memo`]. `plus` of values without unions is kept
/// for good (it depends on nothing that changes).
///
/// A union's `zero` (and two unions' `plus`) is also walked at most once
/// per outermost call (`walk`, its epoch in `seen`): otherwise every union
/// that gains a member bumps the generation, and every other union met
/// again below is walked again, exponentially many times in a structure
/// of unions nested in unions. Walking once per call suffices: the
/// analysis runs again whenever a union changed.
#[derive(Default)]
pub(crate) struct SharedMemo {
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

/// A map of a union that lowering must call at run time: the operation,
/// the operands' scalar numbers, and the number standing for the result.
#[derive(Clone, Debug)]
pub struct PendingMap {
    pub op: UnionOp,
    pub args: Vec<u32>,
    pub unions: (UnionId, Option<UnionId>),
    pub result: u32,
    pub result_union: UnionId,
}

/// An operation on abstract values that fails the way the program would at
/// run time.
pub(crate) type Op<T> = Result<T, String>;

impl Ops {
    // ---- constants -------------------------------------------------------

    pub fn const_value(&mut self, k: ConstId) -> AvId {
        if let Some(a) = self.consts.get(&k) {
            return *a;
        }
        let c = self.prog.consts[k].clone();
        let mut v = self.datum(&c.datum);
        for tag in c.tags.iter().rev() {
            v = match tag {
                Tag::Forward => {
                    let z = self.zero(v);
                    let t = self.tag_wrap(Tag::Perturb, z);
                    self.bundle(v, t).unwrap_or(AvId::new(0))
                }
                _ => self.tag_wrap(*tag, v),
            };
        }
        self.consts.insert(k, v);
        v
    }

    fn datum(&mut self, d: &ConstDatum) -> AvId {
        match d {
            ConstDatum::Real(r) => self.dom.real(*r),
            ConstDatum::Bool(b) => self.dom.boolean(Some(*b)),
            ConstDatum::Nil => self.dom.nil(),
            ConstDatum::Prim(p) => self.dom.intern(Av::Prim(*p)),
            ConstDatum::Pair(a, b) => {
                let (a, b) = (self.datum(a), self.datum(b));
                self.dom.pair(a, b)
            }
        }
    }
}

// The abstract versions of the interpreter's AD operations and primitives
// (crate `interp`, `adops.rs` and `prims.rs`): keep them in step.
impl Ops {
    /// Records that an operation needed a fixed shape and met a union
    /// (`v`), so that the binding is split on it.
    pub(crate) fn hit(&self, op: &'static str, v: AvId) {
        if let Some(u) = self.dom.as_union_id(v) {
            if self.union_hit.get().is_none() {
                self.union_hit.set(Some((op, u)));
            }
        }
    }

    /// `v` with the part at `path` (see [`Plan::Switch`]) replaced by
    /// `part`.
    pub fn replace_at(&mut self, v: AvId, path: &[u32], part: AvId) -> AvId {
        let Some((i, rest)) = path.split_first() else {
            return part;
        };
        let i = *i as usize;
        match self.dom.get(v).clone() {
            Av::Pair(a, b) | Av::Bundle(a, b) => {
                let (mut a, mut b) = (a, b);
                if i == 0 {
                    a = self.replace_at(a, rest, part);
                } else {
                    b = self.replace_at(b, rest, part);
                }
                if matches!(self.dom.get(v), Av::Pair(..)) {
                    self.dom.pair(a, b)
                } else {
                    self.dom.bundle(a, b)
                }
            }
            Av::Wrap(t, x) => {
                let x = self.replace_at(x, rest, part);
                self.dom.wrap(t, x)
            }
            Av::Closure(l, env) if i < env.len() => {
                let mut env = env.to_vec();
                env[i] = self.replace_at(env[i], rest, part);
                self.dom.closure(l, env)
            }
            _ => v,
        }
    }

    /// The part of `v` at `path` (see [`Plan::Switch`]).
    pub fn part_at(&self, v: AvId, path: &[u32]) -> AvId {
        let Some((i, rest)) = path.split_first() else {
            return v;
        };
        let i = *i as usize;
        match self.dom.get(v) {
            Av::Pair(a, b) | Av::Bundle(a, b) => self.part_at(if i == 0 { *a } else { *b }, rest),
            Av::Wrap(_, x) => self.part_at(*x, rest),
            Av::Closure(_, env) if i < env.len() => self.part_at(env[i], rest),
            _ => v,
        }
    }

    /// `tag` of lambda `l` ([`ad::transform`]), unless that would nest AD
    /// deeper than [`crate::analysis::MAX_AD_DEPTH`]: then `l` itself, and
    /// [`Ops::too_deep`] says so. Each level of reverse over reverse
    /// doubles the code, so a nesting that keeps growing must stop here,
    /// before the transformation is made, not after. Only the analysis
    /// refuses (and then stops): lowering (`symbolic`) replays the
    /// transformations of an analysis that succeeded, and must get them.
    fn transform(&mut self, tag: Tag, l: LambdaId) -> LambdaId {
        if self.symbolic {
            return ad::transform(&mut self.prog, &mut self.memo, tag, l);
        }
        if self.too_deep.is_some() {
            return l;
        }
        if self.ad_depth(l) >= crate::analysis::MAX_AD_DEPTH {
            self.too_deep = Some(l);
            return l;
        }
        ad::transform(&mut self.prog, &mut self.memo, tag, l)
    }

    /// How many AD transformations `l` is of (a transform of a transform
    /// ...), memoised per lambda.
    pub(crate) fn ad_depth(&mut self, l: LambdaId) -> u32 {
        let i = l.index();
        if let Some(Some(d)) = self.ad_depth.get(i) {
            return *d;
        }
        let d = match self.prog.lambdas[l].origin {
            ir::Origin::Transform { of, .. } | ir::Origin::Backprop { of } => 1 + self.ad_depth(of),
            ir::Origin::PrimTransform { .. } => 1,
            ir::Origin::Source | ir::Origin::Custom { .. } => 0,
        };
        if self.ad_depth.len() <= i {
            self.ad_depth.resize(i + 1, None);
        }
        self.ad_depth[i] = Some(d);
        d
    }

    pub fn tag_wrap(&mut self, tag: Tag, v: AvId) -> AvId {
        match self.dom.get(v).clone() {
            Av::Bottom => v,
            // Tags on pairs and atoms are wrappers, so a union of those
            // is tagged as a whole; procedures must be transformed one
            // by one.
            Av::Union(u) | Av::Sym(_, SymKind::Union(u)) => {
                if !self.dom.data_only(u) {
                    self.map_union(UnionOp::Wrap(tag), v, None)
                } else {
                    self.dom.wrap(tag, v)
                }
            }
            Av::Closure(l, env) => {
                let l2 = self.transform(tag, l);
                let env = env.iter().map(|x| self.tag_wrap(tag, *x)).collect();
                self.dom.closure(l2, env)
            }
            Av::Prim(p) => {
                let l = ad::prim_transform(&mut self.prog, &mut self.memo, tag, p);
                self.dom.closure(l, vec![])
            }
            _ => self.dom.wrap(tag, v),
        }
    }

    pub fn tag_unwrap(&mut self, tag: Tag, v: AvId) -> Op<AvId> {
        match self.dom.get(v).clone() {
            Av::Bottom => Ok(v),
            Av::Union(_) | Av::Sym(_, SymKind::Union(_)) => {
                Ok(self.map_union(UnionOp::Unwrap(tag), v, None))
            }
            Av::Wrap(t, x) if t == tag => Ok(x),
            Av::Closure(l, env) => match ad::untransform(&self.prog, tag, l) {
                Some(Untransformed::Prim(p)) => Ok(self.dom.intern(Av::Prim(p))),
                Some(Untransformed::Lambda(l0)) => {
                    let mut e = Vec::with_capacity(env.len());
                    for x in env.iter() {
                        e.push(self.tag_unwrap(tag, *x)?);
                    }
                    Ok(self.dom.closure(l0, e))
                }
                None => Err(self.not_tagged(tag, v)),
            },
            _ => Err(self.not_tagged(tag, v)),
        }
    }

    fn not_tagged(&self, tag: Tag, v: AvId) -> String {
        ir::message::not_tagged(tag, &self.describe(v))
    }

    pub fn nil_like(&self, v: AvId) -> bool {
        match self.dom.get(v) {
            Av::Nil | Av::Prim(_) => true,
            Av::Closure(l, env) => env.is_empty() && self.prog.prim_chain(*l).is_some(),
            Av::Wrap(_, x) => self.nil_like(*x),
            Av::Bundle(p, t) => self.nil_like(*p) && self.nil_like(*t),
            // The zeros of a union of primitives are a union of nils.
            Av::Union(u) | Av::Sym(_, SymKind::Union(u)) => {
                let ms = self.dom.members(self.dom.find(*u));
                !ms.is_empty() && ms.iter().all(|m| self.nil_like(*m))
            }
            _ => false,
        }
    }

    fn nil_perturbation(&self, t: AvId) -> bool {
        match self.dom.get(t) {
            Av::Wrap(Tag::Perturb, x) => self.nil_like(*x),
            Av::Closure(l, _) => self.nil_like(t) && self.prog.lambda_tag(*l) == Some(Tag::Perturb),
            _ => false,
        }
    }

    fn shallow_conform(&self, p: AvId, t: AvId) -> bool {
        match (self.dom.get(p), self.dom.get(t)) {
            (Av::Real(_) | Av::Sym(_, SymKind::Real), Av::Real(_) | Av::Sym(_, SymKind::Real))
            | (Av::Nil, Av::Nil)
            | (Av::Pair(..), Av::Pair(..))
            | (Av::Bool(_) | Av::Sym(_, SymKind::Bool), Av::Sym(_, SymKind::Bool))
            | (Av::Sym(_, SymKind::Bool), Av::Bool(_)) => true,
            (Av::Bool(a), Av::Bool(b)) => a.is_none() || b.is_none() || a == b,
            (Av::Wrap(t1, _), Av::Wrap(t2, _)) => t1 == t2,
            (Av::Bundle(..), Av::Bundle(..)) => true,
            _ => false,
        }
    }

    pub fn bundle(&mut self, p: AvId, t: AvId) -> Op<AvId> {
        let bottom = self.dom.bottom();
        if p == bottom || t == bottom {
            return Ok(bottom);
        }
        if let Av::Wrap(Tag::Perturb, x) = self.dom.get(t).clone() {
            // Bundles of pairs and atoms are wrappers, checked one layer
            // deep; so are bundles of two unions of those (the layer is
            // checked where the halves are taken apart).
            if let (Some(u), Some(w)) = (self.dom.as_union_id(p), self.dom.as_union_id(x)) {
                if self.dom.data_only(u) && self.dom.data_only(w) {
                    return Ok(self.dom.bundle(p, t));
                }
                return Ok(self.map_union(UnionOp::Bundle(true), p, Some(x)));
            }
            self.hit("`bundle`", x);
        }
        if self.dom.as_union_id(p).is_some() && self.dom.as_union_id(t).is_some() {
            return Ok(self.map_union(UnionOp::Bundle(false), p, Some(t)));
        }
        self.hit("`bundle`", p);
        self.hit("`bundle`", t);
        if self.union_hit.get().is_some() {
            return Ok(bottom);
        }
        match (self.dom.get(p).clone(), self.dom.get(t).clone()) {
            (Av::Closure(lc, ec), Av::Closure(ld, ed))
                if ad::untransform(&self.prog, Tag::Perturb, ld)
                    == Some(Untransformed::Lambda(lc))
                    && ec.len() == ed.len() =>
            {
                let l = self.transform(Tag::Forward, lc);
                let mut env = Vec::with_capacity(ec.len());
                for (a, b) in ec.iter().zip(ed.iter()) {
                    env.push(self.bundle(*a, *b)?);
                }
                Ok(self.dom.closure(l, env))
            }
            (Av::Prim(q), _) if self.nil_perturbation(t) => {
                let l = ad::prim_transform(&mut self.prog, &mut self.memo, Tag::Forward, q);
                Ok(self.dom.closure(l, vec![]))
            }
            (Av::Closure(lc, ec), _)
                if ec.is_empty()
                    && self.prog.prim_chain(lc).is_some()
                    && self.nil_perturbation(t) =>
            {
                let l = self.transform(Tag::Forward, lc);
                Ok(self.dom.closure(l, vec![]))
            }
            (_, Av::Wrap(Tag::Perturb, x)) if self.shallow_conform(p, x) => {
                Ok(self.dom.bundle(p, t))
            }
            _ => Err(ir::message::bundle_mismatch(
                &self.describe(p),
                &self.describe(t),
            )),
        }
    }

    pub fn forward_half(&mut self, v: AvId, primal: bool) -> Op<AvId> {
        match self.dom.get(v).clone() {
            Av::Bottom => Ok(v),
            Av::Union(_) | Av::Sym(_, SymKind::Union(_)) => {
                Ok(self.map_union(UnionOp::Half(primal), v, None))
            }
            Av::Bundle(p, t) => Ok(if primal { p } else { t }),
            Av::Closure(l, env) => match ad::untransform(&self.prog, Tag::Forward, l) {
                Some(Untransformed::Prim(p)) => Ok(if primal {
                    self.dom.intern(Av::Prim(p))
                } else {
                    let n = self.dom.nil();
                    self.dom.wrap(Tag::Perturb, n)
                }),
                // A transformed primitive has no tangent of its own: its
                // tangent is a zero, as `bundle` built it.
                Some(Untransformed::Lambda(l0))
                    if !primal && env.is_empty() && self.prog.prim_chain(l0).is_some() =>
                {
                    let p = self.dom.closure(l0, vec![]);
                    let z = self.zero(p);
                    Ok(self.tag_wrap(Tag::Perturb, z))
                }
                Some(Untransformed::Lambda(l0)) => {
                    let l = if primal {
                        l0
                    } else {
                        self.transform(Tag::Perturb, l0)
                    };
                    let mut e = Vec::with_capacity(env.len());
                    for x in env.iter() {
                        e.push(self.forward_half(*x, primal)?);
                    }
                    Ok(self.dom.closure(l, e))
                }
                None => Err(self.not_forward(primal, v)),
            },
            _ => Err(self.not_forward(primal, v)),
        }
    }

    fn not_forward(&self, primal: bool, v: AvId) -> String {
        ir::message::not_forward(primal, &self.describe(v))
    }

    /// A structural operation on every member of union value `v` (and,
    /// for `bundle`, paired with every member of `w`): the union of the
    /// results ([`Site::Map`]); members on which it fails are errors at
    /// run time. In lowering, on symbolic values, it stands for a call
    /// made later ([`Ops::take_pending`]).
    pub fn map_union(&mut self, op: UnionOp, v: AvId, w: Option<AvId>) -> AvId {
        let Some(u) = self.dom.as_union_id(v) else {
            return self.dom.bottom();
        };
        let wu = w.and_then(|w| self.dom.as_union_id(w));
        // An operation undoing the one that made the union gives back the
        // union it came from (so that tagging and untagging in a loop does
        // not make a new union each time round).
        if let Some((op0, u0, w0)) = self.map_origins.get(&u).copied() {
            let back = match (op0, op) {
                (UnionOp::Wrap(t0), UnionOp::Unwrap(t))
                | (UnionOp::Unwrap(t0), UnionOp::Wrap(t))
                    if t0 == t =>
                {
                    Some(self.dom.union_av(u0))
                }
                (UnionOp::Bundle(_), UnionOp::Half(true)) => Some(self.dom.union_av(u0)),
                (UnionOp::Bundle(wrapped), UnionOp::Half(false)) => w0.map(|w0| {
                    let t = self.dom.union_av(w0);
                    if wrapped {
                        self.dom.wrap(Tag::Perturb, t)
                    } else {
                        t
                    }
                }),
                _ => None,
            };
            if let Some(b) = back {
                let (inner, tag) = match self.dom.get(b).clone() {
                    Av::Wrap(t, x) => (x, Some(t)),
                    _ => (b, None),
                };
                if !self.symbolic {
                    // The union given back must hold the operation's result
                    // on every member: `u` may have gained members (or
                    // wider ones) by joins that did not come from the union
                    // given back, and a narrower member would make lowering
                    // take a run-time value for a constant.
                    if let Some(ub) = self.dom.as_union_id(inner) {
                        self.map_members(op, u, wu, ub, tag.is_some());
                    }
                    return b;
                }
                // In lowering, a call converts the cell to one of the
                // union given back (its tags differ).
                if let Some(ub) = self.dom.as_union_id(inner) {
                    let r = self.pending_map(op, v, w, (u, wu), ub);
                    return match tag {
                        Some(t) => self.dom.wrap(t, r),
                        None => r,
                    };
                }
            }
        }
        let r = self.dom.site_union(Site::Map(op, u, wu));
        self.map_origins.entry(r).or_insert((op, u, wu));
        if self.symbolic {
            return self.pending_map(op, v, w, (u, wu), r);
        }
        self.map_members(op, u, wu, r, false);
        self.dom.union_av(r)
    }

    /// Adds to union `r` the result of `op` on every member of `u` (paired
    /// with every member of `wu`); `unwrap` takes a perturbation tag off
    /// each result first (a map given back as the union it came from,
    /// wrapped).
    fn map_members(
        &mut self,
        op: UnionOp,
        u: UnionId,
        wu: Option<UnionId>,
        r: UnionId,
        unwrap: bool,
    ) {
        if !self.active_maps.insert((op, u, wu)) {
            return;
        }
        for mu in self.dom.members(u).to_vec() {
            let others = match wu {
                None => vec![None],
                Some(wu) => self.dom.members(wu).iter().map(|m| Some(*m)).collect(),
            };
            for mw in others {
                let Ok(mut x) = self.union_op(op, mu, mw) else {
                    continue;
                };
                if unwrap {
                    if let Av::Wrap(_, inner) = self.dom.get(x).clone() {
                        x = inner;
                    }
                }
                self.dom.add_member(r, x);
            }
        }
        self.active_maps.remove(&(op, u, wu));
    }

    /// A map that lowering will call, giving a cell of union `r`.
    fn pending_map(
        &mut self,
        op: UnionOp,
        v: AvId,
        w: Option<AvId>,
        unions: (UnionId, Option<UnionId>),
        r: UnionId,
    ) -> AvId {
        let mut args = Vec::new();
        for x in [Some(v), w].into_iter().flatten() {
            if let Av::Sym(n, _) = self.dom.get(x) {
                args.push(*n);
            }
        }
        let result = self.next_virtual;
        self.next_virtual += 1;
        self.pending.push(PendingMap {
            op,
            args,
            unions,
            result,
            result_union: r,
        });
        self.dom.intern(Av::Sym(result, SymKind::Union(r)))
    }

    /// The operation of a [`UnionOp`] on members.
    pub fn union_op(&mut self, op: UnionOp, a: AvId, b: Option<AvId>) -> Op<AvId> {
        match (op, b) {
            (UnionOp::Wrap(t), _) => Ok(self.tag_wrap(t, a)),
            (UnionOp::Unwrap(t), _) => self.tag_unwrap(t, a),
            (UnionOp::Half(primal), _) => self.forward_half(a, primal),
            (UnionOp::Bundle(wrapped), Some(b)) => {
                let t = if wrapped {
                    self.dom.wrap(Tag::Perturb, b)
                } else {
                    b
                };
                self.bundle(a, t)
            }
            (UnionOp::Bundle(_), None) => Err("internal error: bundle of one value".into()),
        }
    }

    /// The map that made union `r` ([`Ops::map_union`]): its operation
    /// and operand unions.
    pub fn map_origin(&self, r: UnionId) -> Option<(UnionOp, UnionId, Option<UnionId>)> {
        self.map_origins.get(&r).copied()
    }

    /// The maps of unions met since the last call (lowering only).
    pub fn take_pending(&mut self) -> Vec<PendingMap> {
        std::mem::take(&mut self.pending)
    }

    pub fn cons_t(&mut self, tags: &[Tag], a: AvId, b: AvId) -> Op<AvId> {
        let bottom = self.dom.bottom();
        if a == bottom || b == bottom {
            return Ok(bottom);
        }
        match tags.split_first() {
            None => Ok(self.dom.pair(a, b)),
            Some((Tag::Forward, rest)) => {
                let (pa, pb) = (self.forward_half(a, true)?, self.forward_half(b, true)?);
                let ta = self.forward_half(a, false)?;
                let ta = self.tag_unwrap(Tag::Perturb, ta)?;
                let tb = self.forward_half(b, false)?;
                let tb = self.tag_unwrap(Tag::Perturb, tb)?;
                let p = self.cons_t(rest, pa, pb)?;
                let t = self.cons_t(rest, ta, tb)?;
                let wt = self.dom.wrap(Tag::Perturb, t);
                Ok(self.dom.bundle(p, wt))
            }
            Some((t, rest)) => {
                let a = self.tag_unwrap(*t, a)?;
                let b = self.tag_unwrap(*t, b)?;
                let p = self.cons_t(rest, a, b)?;
                Ok(self.dom.wrap(*t, p))
            }
        }
    }

    pub fn car_t(&mut self, tags: &[Tag], v: AvId, car: bool) -> Op<AvId> {
        if v == self.dom.bottom() {
            return Ok(v);
        }
        match tags.split_first() {
            None => match self.dom.get(v) {
                Av::Pair(a, b) => Ok(if car { *a } else { *b }),
                Av::Union(_) | Av::Sym(_, SymKind::Union(_)) => {
                    self.hit("taking apart a pair", v);
                    Ok(self.dom.bottom())
                }
                _ => Err(String::new()),
            },
            Some((Tag::Forward, rest)) => {
                let p = self.forward_half(v, true)?;
                let t = self.forward_half(v, false)?;
                let t = self.tag_unwrap(Tag::Perturb, t)?;
                let a = self.car_t(rest, p, car)?;
                let da = self.car_t(rest, t, car)?;
                let da = self.tag_wrap(Tag::Perturb, da);
                self.bundle(a, da)
            }
            Some((t, rest)) => {
                let x = self.tag_unwrap(*t, v)?;
                let a = self.car_t(rest, x, car)?;
                Ok(self.tag_wrap(*t, a))
            }
        }
    }

    /// `Some(matches)` when decided now, `None` when it needs a run-time
    /// comparison.
    pub fn check_t(&mut self, tags: &[Tag], v: AvId, k: ConstId) -> Op<Option<bool>> {
        let mut x = v;
        for t in tags {
            x = match t {
                Tag::Forward => self.forward_half(x, true)?,
                _ => self.tag_unwrap(*t, x)?,
            };
        }
        let d = self.prog.consts[k].datum.clone();
        Ok(self.match_datum(x, &d))
    }

    fn match_datum(&self, v: AvId, d: &ConstDatum) -> Option<bool> {
        match (self.dom.get(v), d) {
            (Av::Union(_) | Av::Sym(_, SymKind::Union(_)), _) => {
                self.hit("a constant pattern", v);
                None
            }
            (Av::Real(Some(x)), ConstDatum::Real(y)) => Some(f64::from_bits(*x) == *y),
            (Av::Real(None) | Av::Sym(_, SymKind::Real), ConstDatum::Real(_)) => None,
            (Av::Sym(_, SymKind::Bool), ConstDatum::Bool(_)) => None,
            (Av::Bool(Some(x)), ConstDatum::Bool(y)) => Some(x == y),
            (Av::Bool(None), ConstDatum::Bool(_)) => None,
            (Av::Nil, ConstDatum::Nil) => Some(true),
            // A `car` that cannot match decides: the `cdr` is not looked
            // at, so that no union in it is split on (a split per member
            // of every union the constant reaches would multiply).
            (Av::Pair(a, b), ConstDatum::Pair(x, y)) => match self.match_datum(*a, x) {
                Some(false) => Some(false),
                first => match (first, self.match_datum(*b, y)) {
                    (_, Some(false)) => Some(false),
                    (Some(true), Some(true)) => Some(true),
                    _ => None,
                },
            },
            _ => Some(false),
        }
    }

    pub fn pattern_message(&self, pat: Option<ir::PatId>, found: AvId) -> String {
        match pat {
            Some(p) => {
                let info = &self.prog.patterns[p];
                ir::message::pattern_mismatch(
                    info.owner.as_deref().unwrap_or("lambda"),
                    &info.text,
                    &self.describe(found),
                )
            }
            None => ir::message::not_a_pair(&self.describe(found)),
        }
    }

    /// An abstract value as the interpreter would print the value in an
    /// error message (unknown reals and booleans as `R` and `B`).
    pub fn describe(&self, v: AvId) -> String {
        let s = crate::text::value_text(&self.dom, v);
        // A value with parts known only at run time is shortened at run
        // time: lowering turns the marks into `ErrPart::ValueStart/End`.
        if s.contains(crate::text::SYM_MARK) {
            return format!("{0}{s}{0}", crate::text::VALUE_MARK);
        }
        ir::printer::shortened(s)
    }
}
