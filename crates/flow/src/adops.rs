//! The abstract AD operations: `zero`, `plus`, `bundle`, `primal`,
//! `tangent`, the tag operations, the tag-aware pair operations and the
//! primitives, on abstract values. They mirror the interpreter's concrete
//! operations (`interp/src/adops.rs` and `prims.rs`) case for case, and
//! call the same transformations of crate `ad`. The analysis applies them
//! to abstract values; lowering applies them to symbolic values (with
//! leaves of its own, [`Av::Leaf`]) to find where each scalar of a result comes from, in a
//! [`Mode`] of its own (`adops/mode.rs`): the two differ only in what a map
//! over a union does and in whether AD may nest without bound. The
//! primitives are in `adops/prims.rs`, beside the interpreter's `prims.rs`;
//! `zero` and `plus` in `adops/sum.rs`.

use crate::domain::{Av, AvId, Domain, LeafKind, Site, UnionId, UnionOp};
use ad::{AdMemo, Untransformed};
use ir::EntityRef;
use ir::{ConstDatum, ConstId, LambdaId, Program, Tag};
use rustc_hash::FxHashMap as HashMap;

mod conform;
mod mode;
mod prims;
mod sum;
mod vector;

pub(crate) use mode::ad_depth;
pub use mode::{Analysing, Mode, UnionMap};
use sum::Sums;
pub use vector::is_count;

/// The program, its AD memo tables and the abstract domain, with the
/// structural operations on abstract values. Lowering keeps using these
/// operations, on abstract values whose unknown leaves are its own
/// ([`Av::Leaf`], `M::Leaf`), to find where each scalar of a result comes from: so the
/// meaning of `bundle`, `car` of a forward pair and the rest is written once
/// for compile time (here) and once for run time (crate `interp`). What
/// the analysis and lowering do differently is `M` ([`Mode`]): the
/// analysis runs them as [`Analysing`], and its result hands them to
/// lowering ([`Ops::into_mode`]).
pub struct Ops<M: Mode = Analysing> {
    pub prog: Program,
    pub memo: AdMemo,
    pub dom: Domain<M::Leaf>,
    /// What `zero` and `plus` remember (`adops/sum.rs`).
    pub(crate) sums: Sums,
    /// The tag operations and `bundle` of closures without unions inside
    /// ([`Ops::closure_memo`]).
    closure_ops: ClosureOps,
    /// The value of each constant of the program.
    pub(crate) consts: HashMap<ConstId, AvId>,
    /// Set when an operation met a union where it needs a fixed shape
    /// (names the operation): the analysis then stops with a limit error.
    pub(crate) union_hit: std::cell::Cell<Option<(&'static str, UnionId)>>,
    /// The maps of unions met by the walk under way ([`Ops::map_members`]).
    pub(crate) map_walk: MapWalk,
    /// How each union made by [`Ops::map_union`] was made, so that an
    /// inverse operation gives back the union it came from.
    pub(crate) map_origins: HashMap<UnionId, (UnionOp, UnionId, Option<UnionId>)>,
    /// The first vector operation the analysis met that lowering does
    /// not compile yet (`list->vector` of a list of run-time length): the
    /// analysis then stops (`stalingrad run` runs the program).
    pub(crate) vector_met: Option<String>,
    /// What the operations do where the analysis and lowering differ,
    /// and that one's own state.
    pub mode: M,
}

/// An operation on abstract values that fails the way the program would at
/// run time.
pub(crate) type Op<T> = Result<T, String>;

/// The results of [`UnionOp`]s on closures without unions inside, by
/// operation and operands. A closure's environment holds the closures of
/// the procedures it calls, so a chain of procedures each calling the one
/// before is a chain of closures as long as the program; transformed code
/// takes every closure of it apart and builds it again at each level,
/// which walked the rest of the chain each time (quadratic in its
/// length) before the results were kept. Without a union inside, the
/// result depends on the operands alone (and on transformations, which
/// are memoised themselves): the same in the analysis and in lowering.
type ClosureOps = HashMap<(UnionOp, AvId, Option<AvId>), AvId>;

/// The maps of unions ([`Ops::map_members`]) made in the outermost map
/// under way, the walk. A union is mapped at most once per walk: a union
/// that holds itself is reached again while its map is under way, and in
/// a structure of unions nested in unions (closures whose environments
/// hold unions of closures) the same union is reached along exponentially
/// many paths, each of which mapped it again (a generated program of 40
/// lines never finished its build). Once per walk suffices: a union that
/// gains a member later in the walk bumps the domain's generation, and
/// the analysis runs again whenever it changed.
#[derive(Default)]
pub(crate) struct MapWalk {
    seen: HashMap<(UnionOp, UnionId, Option<UnionId>), u64>,
    walk: u64,
    nesting: u32,
}

impl Ops {
    /// The operations on `prog`, with nothing computed yet, as the
    /// analysis runs them.
    pub(crate) fn new(prog: Program) -> Ops {
        Ops {
            prog,
            memo: AdMemo::default(),
            dom: Domain::new(),
            sums: Sums::default(),
            closure_ops: ClosureOps::default(),
            consts: HashMap::default(),
            union_hit: std::cell::Cell::new(None),
            map_walk: MapWalk::default(),
            map_origins: HashMap::default(),
            vector_met: None,
            mode: Analysing::default(),
        }
    }

    /// The same operations, with everything they computed and remember,
    /// in another mode (lowering continues the analysis' operations),
    /// whose values may have that mode's leaves.
    pub fn into_mode<N: Mode>(self, mode: N) -> Ops<N> {
        Ops {
            prog: self.prog,
            memo: self.memo,
            dom: self.dom.with_leaves(),
            sums: self.sums,
            closure_ops: self.closure_ops,
            consts: self.consts,
            union_hit: self.union_hit,
            map_walk: self.map_walk,
            map_origins: self.map_origins,
            vector_met: self.vector_met,
            mode,
        }
    }
}

impl<M: Mode> Ops<M> {
    // ---- constants -------------------------------------------------------

    pub fn const_value(&mut self, k: ConstId) -> AvId {
        if let Some(a) = self.consts.get(&k) {
            return *a;
        }
        let c = self.prog.consts[k].clone();
        let mut v = self.datum(&c.datum, k);
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

    /// The abstract value of a datum inside constant `k`: its vectors'
    /// elements joined as in the constant's value.
    pub fn datum_value(&mut self, d: &ConstDatum, k: ConstId) -> AvId {
        self.datum(d, k)
    }

    fn datum(&mut self, d: &ConstDatum, k: ConstId) -> AvId {
        match d {
            ConstDatum::Real(r) => self.dom.real(*r),
            ConstDatum::Bool(b) => self.dom.boolean(Some(*b)),
            ConstDatum::Nil => self.dom.nil(),
            ConstDatum::Prim(p) => self.dom.intern(Av::Prim(*p)),
            ConstDatum::Pair(a, b) => {
                let (a, b) = (self.datum(a, k), self.datum(b, k));
                self.dom.pair(a, b)
            }
            ConstDatum::Vector(items) => {
                let mut e = self.dom.bottom();
                for x in items {
                    let x = self.datum(x, k);
                    e = self.dom.join_at(Site::Literal(k.index() as u32), e, x);
                }
                let n = self.dom.real(items.len() as f64);
                self.dom.vector(e, n)
            }
        }
    }
}

// The abstract versions of the interpreter's AD operations and primitives
// (crate `interp`, `adops.rs` and `prims.rs`): keep them in step.
impl<M: Mode> Ops<M> {
    /// Records that an operation needed a fixed shape and met a union
    /// (`v`), so that the binding is split on it.
    pub(crate) fn hit(&self, op: &'static str, v: AvId) {
        if let Some(u) = self.dom.as_union_id(v) {
            if self.union_hit.get().is_none() {
                self.union_hit.set(Some((op, u)));
            }
        }
    }

    /// `v` with the part at `path` (see [`crate::Plan::Switch`]) replaced by
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

    /// The part of `v` at `path` (see [`crate::Plan::Switch`]).
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

    /// `tag` of lambda `l` of closure `closure` ([`ad::transform`]), as
    /// the mode allows ([`Mode::transform`]).
    fn transform(&mut self, tag: Tag, l: LambdaId, closure: AvId) -> LambdaId {
        M::transform(self, tag, l, closure)
    }

    pub fn tag_wrap(&mut self, tag: Tag, v: AvId) -> AvId {
        match self.dom.get(v).clone() {
            Av::Bottom => v,
            // Tags on pairs and atoms are wrappers, so a union of those
            // is tagged as a whole; procedures must be transformed one
            // by one.
            Av::Union(u) | Av::Leaf(_, LeafKind::Union(u)) => {
                if !self.dom.data_only(u) {
                    self.map_union(UnionOp::Wrap(tag), v, None)
                } else {
                    self.dom.wrap(tag, v)
                }
            }
            Av::Closure(l, env) => {
                let op = UnionOp::Wrap(tag);
                if let Some(r) = self.closure_memo(op, v, None) {
                    return r;
                }
                let l2 = self.transform(tag, l, v);
                let env = env.iter().map(|x| self.tag_wrap(tag, *x)).collect();
                let r = self.dom.closure(l2, env);
                self.remember(op, v, None, r);
                r
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
            Av::Union(_) | Av::Leaf(_, LeafKind::Union(_)) => {
                Ok(self.map_union(UnionOp::Unwrap(tag), v, None))
            }
            Av::Wrap(t, x) if t == tag => Ok(x),
            Av::Closure(l, env) => match ad::untransform(&self.prog, tag, l) {
                Some(Untransformed::Prim(p)) => Ok(self.dom.intern(Av::Prim(p))),
                Some(Untransformed::Lambda(l0)) => {
                    let op = UnionOp::Unwrap(tag);
                    if let Some(r) = self.closure_memo(op, v, None) {
                        return Ok(r);
                    }
                    let mut e = Vec::with_capacity(env.len());
                    for x in env.iter() {
                        e.push(self.tag_unwrap(tag, *x)?);
                    }
                    let r = self.dom.closure(l0, e);
                    self.remember(op, v, None, r);
                    Ok(r)
                }
                None => Err(self.not_tagged(tag, v)),
            },
            _ => Err(self.not_tagged(tag, v)),
        }
    }

    /// The result of `op` on closure `a` (and `b`) computed before, if the
    /// operands have no union inside ([`ClosureOps`]).
    fn closure_memo(&self, op: UnionOp, a: AvId, b: Option<AvId>) -> Option<AvId> {
        self.closure_ops.get(&(op, a, b)).copied()
    }

    /// Keeps the result of `op` on closure `a` (and `b`), unless a union
    /// is inside an operand: a union's members change, and a map over it
    /// is made per mode.
    fn remember(&mut self, op: UnionOp, a: AvId, b: Option<AvId>, r: AvId) {
        if !self.dom.has_union(a) && !b.is_some_and(|b| self.dom.has_union(b)) {
            self.closure_ops.insert((op, a, b), r);
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
            Av::Union(u) | Av::Leaf(_, LeafKind::Union(u)) => {
                let ms = self.dom.members(self.dom.find(*u));
                !ms.is_empty() && ms.iter().all(|m| self.nil_like(*m))
            }
            _ => false,
        }
    }

    /// Whether `v` is nil-like ([`Self::nil_like`]) for some member of
    /// each union in it. The zeros of a union of primitives and reals
    /// hold both; a value taken from the same value as a primitive (the
    /// tangent half of a bundle whose primal half is that union, the
    /// sensitivity of that union) is, at run time, the member that
    /// conforms to the primitive.
    pub fn maybe_nil_like(&self, v: AvId) -> bool {
        match self.dom.get(v) {
            Av::Wrap(_, x) => self.maybe_nil_like(*x),
            Av::Bundle(p, t) => self.maybe_nil_like(*p) && self.maybe_nil_like(*t),
            Av::Union(u) | Av::Leaf(_, LeafKind::Union(u)) => self
                .dom
                .members(self.dom.find(*u))
                .iter()
                .any(|m| self.maybe_nil_like(*m)),
            _ => self.nil_like(v),
        }
    }

    /// Whether `t` is the perturbation of a primitive (nil-like, as
    /// [`Self::maybe_nil_like`] allows): the transformed primitive holds
    /// nothing of it.
    fn nil_perturbation(&self, t: AvId) -> bool {
        match self.dom.get(t) {
            Av::Wrap(Tag::Perturb, x) => self.maybe_nil_like(*x),
            Av::Closure(l, _) => self.nil_like(t) && self.prog.lambda_tag(*l) == Some(Tag::Perturb),
            _ => false,
        }
    }

    /// A tagged union (`Wrap(tag, union)`) as the union of its tagged
    /// members; any other value as it is.
    fn members_tagged(&mut self, v: AvId) -> AvId {
        match self.dom.get(v).clone() {
            Av::Wrap(tag, y) if self.dom.as_union_id(y).is_some() => {
                self.map_union(UnionOp::Wrap(tag), y, None)
            }
            _ => v,
        }
    }

    fn shallow_conform(&self, p: AvId, t: AvId) -> bool {
        match (self.dom.get(p), self.dom.get(t)) {
            (
                Av::Real(_) | Av::Leaf(_, LeafKind::Real),
                Av::Real(_) | Av::Leaf(_, LeafKind::Real),
            )
            | (Av::Nil, Av::Nil)
            | (Av::Pair(..), Av::Pair(..))
            | (Av::Bool(_) | Av::Leaf(_, LeafKind::Bool), Av::Leaf(_, LeafKind::Bool))
            | (Av::Leaf(_, LeafKind::Bool), Av::Bool(_)) => true,
            (Av::Bool(a), Av::Bool(b)) => a.is_none() || b.is_none() || a == b,
            (Av::Wrap(t1, _), Av::Wrap(t2, _)) => t1 == t2,
            (Av::Bundle(..), Av::Bundle(..)) => true,
            _ => match (self.vector_parts(p), self.vector_parts(t)) {
                (Some((_, n)), Some((_, m))) => {
                    n == m || self.dom.known_real(n).is_none() || self.dom.known_real(m).is_none()
                }
                _ => false,
            },
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
            // A tag on a union of data wraps it whole (`tag_wrap`), where
            // the other half, a union holding procedures, was tagged
            // member by member: the primal and tangent halves of one
            // value's part (`car` under forward over reverse mode). The
            // union is split into its tagged members, and the halves are
            // bundled member by member, as above.
            if self.dom.as_union_id(p).is_some() != self.dom.as_union_id(x).is_some() {
                let (p2, x2) = (self.members_tagged(p), self.members_tagged(x));
                if self.dom.as_union_id(p2).is_some() && self.dom.as_union_id(x2).is_some() {
                    return Ok(self.map_union(UnionOp::Bundle(true), p2, Some(x2)));
                }
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
                let op = UnionOp::Bundle(false);
                if let Some(r) = self.closure_memo(op, p, Some(t)) {
                    return Ok(r);
                }
                let l = self.transform(Tag::Forward, lc, p);
                let mut env = Vec::with_capacity(ec.len());
                for (a, b) in ec.iter().zip(ed.iter()) {
                    env.push(self.bundle(*a, *b)?);
                }
                let r = self.dom.closure(l, env);
                self.remember(op, p, Some(t), r);
                Ok(r)
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
                let l = self.transform(Tag::Forward, lc, p);
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
            Av::Union(_) | Av::Leaf(_, LeafKind::Union(_)) => {
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
                    let op = UnionOp::Half(primal);
                    if let Some(r) = self.closure_memo(op, v, None) {
                        return Ok(r);
                    }
                    let l = if primal {
                        l0
                    } else {
                        self.transform(Tag::Perturb, l0, v)
                    };
                    let mut e = Vec::with_capacity(env.len());
                    for x in env.iter() {
                        e.push(self.forward_half(*x, primal)?);
                    }
                    let r = self.dom.closure(l, e);
                    self.remember(op, v, None, r);
                    Ok(r)
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
    /// results ([`Site::Map`]), as the mode makes it ([`Mode::map_union`]);
    /// members on which it fails are errors at run time.
    pub fn map_union(&mut self, op: UnionOp, v: AvId, w: Option<AvId>) -> AvId {
        let Some(u) = self.dom.as_union_id(v) else {
            return self.dom.bottom();
        };
        let wu = w.and_then(|w| self.dom.as_union_id(w));
        let map = self.union_map(op, u, wu);
        M::map_union(self, map, v, w)
    }

    /// Where the results of `op` on union `u` (and `wu`) go.
    fn union_map(&mut self, op: UnionOp, u: UnionId, wu: Option<UnionId>) -> UnionMap {
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
                if let Some(result) = self.dom.as_union_id(inner) {
                    return UnionMap {
                        op,
                        operands: (u, wu),
                        result,
                        given_back: Some((b, tag)),
                    };
                }
            }
        }
        let r = self.dom.site_union(Site::Map(op, u, wu));
        self.map_origins.entry(r).or_insert((op, u, wu));
        UnionMap {
            op,
            operands: (u, wu),
            result: r,
            given_back: None,
        }
    }

    /// Adds to union `r` the result of `op` on every member of `u` (paired
    /// with every member of `wu`); `unwrap` takes a perturbation tag off
    /// each result first (a map given back as the union it came from,
    /// wrapped).
    pub(crate) fn map_members(
        &mut self,
        op: UnionOp,
        u: UnionId,
        wu: Option<UnionId>,
        r: UnionId,
        unwrap: bool,
    ) {
        let walk = &mut self.map_walk;
        if walk.nesting == 0 {
            walk.walk += 1;
        }
        if walk.seen.insert((op, u, wu), walk.walk) == Some(walk.walk) {
            return;
        }
        walk.nesting += 1;
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
        self.map_walk.nesting -= 1;
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
                Av::Union(_) | Av::Leaf(_, LeafKind::Union(_)) => {
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
            (Av::Union(_) | Av::Leaf(_, LeafKind::Union(_)), _) => {
                self.hit("a constant pattern", v);
                None
            }
            (Av::Real(Some(x)), ConstDatum::Real(y)) => Some(f64::from_bits(*x) == *y),
            (Av::Real(None) | Av::Leaf(_, LeafKind::Real), ConstDatum::Real(_)) => None,
            (Av::Leaf(_, LeafKind::Bool), ConstDatum::Bool(_)) => None,
            (Av::Bool(Some(x)), ConstDatum::Bool(y)) => Some(x == y),
            (Av::Bool(None), ConstDatum::Bool(_)) => None,
            (Av::Nil, ConstDatum::Nil) => Some(true),
            // Vector patterns are compared at run time (crate `lower`).
            (Av::Vector(_, n) | Av::Leaf(_, LeafKind::Vector(_, n)), ConstDatum::Vector(ds)) => {
                match self.dom.known_real(*n) {
                    Some(n) if n != ds.len() as f64 => Some(false),
                    _ => None,
                }
            }
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

    /// The error of `found`, which an operation of the world `world` (its
    /// tag stack) took apart, not matching `pat`.
    pub fn pattern_message(
        &self,
        world: &[ir::Tag],
        pat: Option<ir::PatId>,
        found: AvId,
    ) -> String {
        let found = self.describe_found(world, found);
        match pat {
            Some(p) => {
                let info = &self.prog.patterns[p];
                ir::message::pattern_mismatch(
                    info.owner.as_deref().unwrap_or("lambda"),
                    &info.text,
                    &found,
                )
            }
            None => ir::message::not_a_pair(&found),
        }
    }

    /// An abstract value as the interpreter would print the value in an
    /// error message (unknown reals and booleans as `R` and `B`).
    pub fn describe(&self, v: AvId) -> String {
        self.describe_found(&[], v)
    }

    /// [`Self::describe`] of a value an operation of the world `world`
    /// found (`ir::printer::Found`).
    pub fn describe_found(&self, world: &[ir::Tag], v: AvId) -> String {
        let (s, leaves) = crate::text::value_text(&self.dom, world, v);
        // A value with parts known only at run time is shortened at run
        // time: lowering turns the marks into `ErrPart::ValueStart/End`.
        if leaves {
            return format!("{0}{s}{0}", crate::text::VALUE_MARK);
        }
        ir::printer::shortened(s)
    }
}
