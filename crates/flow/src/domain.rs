//! Abstract values, hash-consed: two equal abstract values have the same
//! [`AvId`], so specialisation keys compare in O(1) per component.
//!
//! Unions: a value whose shape is known only at run time (a list of
//! run-time length, the backpropagator of a loop, the result of a
//! conditional whose arms differ in shape) is an [`Av::Union`]: a *nominal*
//! union, one per [`Site`] of the program where shapes meet, whose member
//! list only grows during the analysis. Invariants of a union's members:
//! none is a union or bottom, and there is at most one member per [`Kind`]
//! (members of one kind are joined; parts of theirs that differ in shape
//! meet in a union of their own, [`Site::Part`], or, below
//! [`MAX_PART_DEPTH`] such levels, in the union itself). Recursive types
//! (`L = () | (pair R L)`) arise where a value built from a union is joined
//! back into it: the union absorbs it. Two unions that meet are merged
//! (union-find).
//!
//! The domain mirrors the interpreter's values (crate `interp`), with
//! unknown reals and booleans added: an abstract value is as precise as the
//! concrete one wherever the program allows. Like run-time values, tags are
//! wrappers on non-procedures, and a transformed procedure is a closure of
//! a transformed lambda.

use ir::{LambdaId, Prim, Tag, Var};
use std::collections::HashMap;

mod long_lists;
pub use long_lists::MAX_LIST_LENGTH;

ir::entity!(AvId, "a");

ir::entity!(
    /// A nominal union of shapes (see the module documentation).
    UnionId,
    "U"
);

/// A place in the program where values of different shapes meet; each has
/// at most one union. Sites inside a procedure are per *context*: the
/// specialisation being analysed, with the identity of the unions in its
/// key forgotten (so that a union passed around a loop does not make a
/// new context, and a new union, each time).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Site {
    /// The two arms of the conditional bound to this variable.
    If(Var, u32),
    /// The cases of a binding split on a union operand.
    Switch(Var, u32),
    /// The results of a specialisation across analysis passes.
    Result(u32),
    /// The arguments, or environment slot `n`, of a lambda's recursive
    /// calls whose shapes grow (see `analysis::GROW`), in the `k`-th
    /// environment the lambda was closed over (its last field).
    Arg(LambdaId, u32),
    Env(LambdaId, u32, u32),
    /// The parts of the members of a kind of a union that differ in shape.
    Part(UnionId, Kind),
    /// `zero` of the values of a union.
    Zero(UnionId),
    /// The elements of the vector literals of a constant.
    Literal(u32),
    /// The elements of the vector made by this binding.
    Elements(Var, u32),
    /// A list of known length widened to one of run-time length (see
    /// [`Domain::widen_long_lists`]): the list as it was.
    List(AvId),
    /// `plus` of the values of two unions.
    Plus(UnionId, UnionId),
    /// A structural operation on the values of a union (of two, for
    /// `bundle`).
    Map(UnionOp, UnionId, Option<UnionId>),
    /// Where the parts of two values joined at a site differ in shape:
    /// the site (interned, [`Domain::site_index`]) and a hash of the path
    /// to the part (so that, e.g., the list and the procedure in a pair
    /// do not share a union).
    Within(u32, u64),
}

/// An AD operation on abstract values applied member by member to a union
/// ([`Site::Map`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum UnionOp {
    Wrap(Tag),
    Unwrap(Tag),
    /// `primal` (true) or `tangent` (false).
    Half(bool),
    /// `bundle` of members of two unions; `true` when the tangent union
    /// is wrapped as a perturbation.
    Bundle(bool),
}

/// How many levels of [`Site::Part`] unions may nest.
pub const MAX_PART_DEPTH: u32 = 3;

/// The shape class of a union member: a union has at most one member of
/// each kind.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Kind {
    Real,
    Bool,
    Nil,
    Prim(Prim),
    Pair,
    Closure(LambdaId),
    Wrap(Tag),
    Bundle,
    Vector,
}

/// Where the mismatched parts of a join go: the union of a site and the
/// path from the values joined there (a hash, see [`Site::Within`], and
/// its length), or a union whose members are being joined.
#[derive(Clone, Copy)]
enum Into {
    Site(Site, u64, u32),
    Union(UnionId),
}

/// How long a path below a join site may grow before the parts deeper
/// down go to the union of the path so far: without a bound, values that
/// nest without end (a loop passing itself a forward value one level
/// deeper) made a union per path, thousands of them, and lowering a
/// function per union.
pub const MAX_PATH_DEPTH: u32 = 8;

impl Into {
    fn child(self, i: usize) -> Into {
        match self {
            Into::Site(s, h, d) if d < MAX_PATH_DEPTH => Into::Site(
                s,
                h.wrapping_mul(0x100_0000_01b3).wrapping_add(i as u64 + 1),
                d + 1,
            ),
            u => u,
        }
    }
}

#[derive(Clone, Debug, Default)]
struct UnionData {
    members: Vec<AvId>,
    /// Levels of [`Site::Part`] above it.
    depth: u32,
    /// The site it was made for.
    site: Option<Site>,
    /// Union-find link: the union this one was merged into.
    merged_into: Option<UnionId>,
}

#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum Av<L = NoLeaf> {
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
    /// A vector: the join of its elements and its length (a real, known
    /// or not).
    Vector(AvId, AvId),
    /// A value of any of the shapes of a union (see the module
    /// documentation); read its members with [`Domain::members`].
    Union(UnionId),
    /// A leaf the mode of the shape operations adds ([`Leaf`]): an
    /// unknown real or boolean, or a union value, with an identity `L`
    /// (lowering's: the scalar of the generated code holding it). The
    /// domain treats it as the value it stands for (`Real(None)`,
    /// `Bool(None)`, `Union(u)`). The analysis' leaf type is [`NoLeaf`],
    /// so its values have none: it can neither make nor meet one.
    Leaf(L, LeafKind),
}

/// What a [`Av::Leaf`] stands for.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum LeafKind {
    Real,
    Bool,
    Union(UnionId),
    /// The pointer to a vector of these element and length values
    /// (stands for `Vector(elem, len)`).
    Vector(AvId, AvId),
}

/// The identity of the leaves a mode adds to the domain (lowering's is
/// crate `lower`'s `Sym`). The domain is generic over it, rather than the
/// mode keeping its leaves apart, because the shape operations are written
/// once over this hash-consed arena, and a value with leaves mixes them
/// with the analysis' own nodes (known closures in environments, union
/// members).
pub trait Leaf: Copy + Eq + std::hash::Hash + std::fmt::Debug {
    /// Writes this leaf, standing for an unknown real or boolean, in the
    /// text of an error message ([`crate::text::value_text`]).
    fn write_message(self, kind: LeafKind, text: &mut String);

    /// Writes a mark standing for value `v` under the tags `tags`
    /// (outermost first) in the text of an error message, a part that
    /// only code run then can print (a union's cells, a vector of run-time
    /// length; as the rest of a list after an element when `rest`:
    /// `printer::Sink::opaque_rest`), and says so; or says there is none.
    fn write_printed(v: AvId, tags: &[Tag], rest: bool, text: &mut String) -> bool {
        let _ = (v, tags, rest, text);
        false
    }
}

/// The analysis' leaves: none (an uninhabited type).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum NoLeaf {}

impl Leaf for NoLeaf {
    fn write_message(self, _: LeafKind, _: &mut String) {
        match self {}
    }
}

impl Av {
    /// The same value in a domain whose leaves are `L`: an analysis value
    /// has no leaf, so every node carries over as it is.
    fn with_leaves<L: Leaf>(self) -> Av<L> {
        match self {
            Av::Bottom => Av::Bottom,
            Av::Real(r) => Av::Real(r),
            Av::Bool(b) => Av::Bool(b),
            Av::Nil => Av::Nil,
            Av::Prim(p) => Av::Prim(p),
            Av::Pair(a, b) => Av::Pair(a, b),
            Av::Closure(l, env) => Av::Closure(l, env),
            Av::Wrap(t, x) => Av::Wrap(t, x),
            Av::Bundle(p, t) => Av::Bundle(p, t),
            Av::Vector(e, n) => Av::Vector(e, n),
            Av::Union(u) => Av::Union(u),
            Av::Leaf(l, _) => match l {},
        }
    }
}

/// The arena of abstract values, with leaves `L` ([`Av::Leaf`]).
#[derive(Debug)]
pub struct Domain<L = NoLeaf> {
    nodes: Vec<Av<L>>,
    /// Hash-consing: every node made is looked up here, most of the time
    /// of analysing and lowering large programs, so with rustc's hasher
    /// (probabilistic-prolog-R of STALIN∇: std's SipHash was a quarter of
    /// the build). The table holds ids, found by their node's hash
    /// ([`node_hash`]) and compared with their node in `nodes`: keyed by
    /// copies of the nodes, it held every closure's environment twice,
    /// and moving it to lowering's leaves ([`Domain::with_leaves`])
    /// hashed every node again (a constant tower of height 8: 1.5 GB of
    /// analysis, and a fifth of its lowering time).
    index: hashbrown::HashTable<AvId>,
    /// Nesting depth of each node (Bottom and atoms are 1).
    depths: Vec<u32>,
    /// [`Self::is_known`] of each node, computed once when it is made:
    /// lowering asks it of every value it walks, and the environments of
    /// closures share known closures, so a walk over them costs a tree,
    /// not the DAG (STALIN∇'s probabilistic-prolog-R).
    known: Vec<bool>,
    /// [`Self::has_union`] of each node, computed once when it is made.
    unions_inside: Vec<bool>,
    /// [`Self::erase_unions`] of each node that has a union inside: what
    /// it gives depends on the node alone (every union becomes bottom),
    /// and the keys of specialisations share their environments, which
    /// the walk covered as trees (STALIN∇'s probabilistic-prolog-R: half
    /// of its build).
    erased: HashMap<AvId, AvId, rustc_hash::FxBuildHasher>,
    /// The elements of vectors of a mode's leaves as that mode has read
    /// them, to show in an error message ([`Self::show_items`]).
    shown: HashMap<AvId, Vec<AvId>, rustc_hash::FxBuildHasher>,
    unions: Vec<UnionData>,
    sites: HashMap<Site, UnionId, rustc_hash::FxBuildHasher>,
    site_ids: HashMap<Site, u32, rustc_hash::FxBuildHasher>,
    /// The members being joined into, by union and kind, with the
    /// additions to them that wait for that join (see [`Self::add_member`]).
    joining: HashMap<(UnionId, Kind), Vec<AvId>, rustc_hash::FxBuildHasher>,
    /// Bumped whenever a union gains or changes a member: the analysis
    /// must then run again.
    pub generation: u64,
    /// [`Self::widen`] of each compound node, while no union is merged
    /// (the `generation` it was computed in): a shared structure is
    /// widened once per node, not once per path (widening the keys of
    /// calls was a third of the build of STALIN∇'s probabilistic-prolog-R).
    widened: HashMap<AvId, AvId, rustc_hash::FxBuildHasher>,
    widened_generation: u64,
    /// [`Self::widen_long_lists`] of each value deeper than
    /// [`MAX_LIST_LENGTH`], while no union changes (the `generation` it
    /// was computed in).
    long_lists: HashMap<AvId, AvId, rustc_hash::FxBuildHasher>,
    long_lists_generation: u64,
}

/// The hash of a node in [`Domain`]'s index. It does not depend on the
/// leaf type `L`: the variants and fields hashed are the same for every
/// `L`, and only [`Av::Leaf`] holds one.
fn node_hash<L: Leaf>(av: &Av<L>) -> u64 {
    use std::hash::BuildHasher;
    rustc_hash::FxBuildHasher.hash_one(av)
}

impl Default for Domain {
    fn default() -> Domain {
        Domain::new()
    }
}

impl Domain {
    /// An arena holding bottom only (as [`AvId`] 0).
    pub fn new() -> Domain {
        let mut d = Domain {
            nodes: Vec::new(),
            index: hashbrown::HashTable::new(),
            depths: Vec::new(),
            known: Vec::new(),
            unions_inside: Vec::new(),
            erased: HashMap::default(),
            shown: HashMap::default(),
            unions: Vec::new(),
            sites: HashMap::default(),
            site_ids: HashMap::default(),
            joining: HashMap::default(),
            generation: 0,
            widened: HashMap::default(),
            widened_generation: 0,
            long_lists: HashMap::default(),
            long_lists_generation: 0,
        };
        d.intern(Av::Bottom);
        d
    }

    /// The same arena, every id kept, in which values may have leaves `L`
    /// (lowering continues the analysis' domain with its symbolic leaves).
    pub fn with_leaves<L: Leaf>(self) -> Domain<L> {
        // The nodes move over (cloning every node into a new index, and
        // freeing the old one, was most of the lowering time of a tower of
        // 800,000 specialisations), and the index as it is: a node hashes
        // the same with either leaves, none of the analysis' having one.
        let nodes: Vec<Av<L>> = self.nodes.into_iter().map(Av::with_leaves).collect();
        Domain {
            nodes,
            index: self.index,
            depths: self.depths,
            known: self.known,
            unions_inside: self.unions_inside,
            erased: self.erased,
            shown: HashMap::default(),
            unions: self.unions,
            sites: self.sites,
            site_ids: self.site_ids,
            joining: self.joining,
            generation: self.generation,
            widened: self.widened,
            widened_generation: self.widened_generation,
            long_lists: self.long_lists,
            long_lists_generation: self.long_lists_generation,
        }
    }
}

impl<L: Leaf> Domain<L> {
    pub fn intern(&mut self, av: Av<L>) -> AvId {
        let hash = node_hash(&av);
        let nodes = &self.nodes;
        if let Some(id) = self.index.find(hash, |id| nodes[id.0 as usize] == av) {
            return *id;
        }
        let depth = 1 + match &av {
            Av::Pair(a, b) | Av::Bundle(a, b) | Av::Vector(a, b) => {
                self.depth(*a).max(self.depth(*b))
            }
            Av::Leaf(_, LeafKind::Vector(a, b)) => self.depth(*a).max(self.depth(*b)),
            Av::Closure(_, env) => env.iter().map(|x| self.depth(*x)).max().unwrap_or(0),
            Av::Wrap(_, x) => self.depth(*x),
            _ => 0,
        };
        let known = match &av {
            Av::Real(r) => r.is_some(),
            Av::Bool(b) => b.is_some(),
            Av::Leaf(..) | Av::Union(_) => false,
            Av::Bottom | Av::Nil | Av::Prim(_) => true,
            Av::Pair(a, b) | Av::Bundle(a, b) | Av::Vector(a, b) => {
                self.is_known(*a) && self.is_known(*b)
            }
            Av::Closure(_, env) => env.iter().all(|x| self.is_known(*x)),
            Av::Wrap(_, x) => self.is_known(*x),
        };
        let unions_inside = match &av {
            Av::Union(_) | Av::Leaf(_, LeafKind::Union(_)) => true,
            Av::Pair(a, b) | Av::Bundle(a, b) => self.has_union(*a) || self.has_union(*b),
            Av::Vector(e, _) | Av::Leaf(_, LeafKind::Vector(e, _)) => self.has_union(*e),
            Av::Wrap(_, x) => self.has_union(*x),
            Av::Closure(_, env) => env.iter().any(|x| self.has_union(*x)),
            _ => false,
        };
        let id = AvId(self.nodes.len() as u32);
        self.nodes.push(av);
        self.depths.push(depth);
        self.known.push(known);
        self.unions_inside.push(unions_inside);
        let nodes = &self.nodes;
        self.index
            .insert_unique(hash, id, |id| node_hash(&nodes[id.0 as usize]));
        id
    }

    pub fn get(&self, id: AvId) -> &Av<L> {
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
    pub fn vector(&mut self, elem: AvId, len: AvId) -> AvId {
        self.intern(Av::Vector(elem, len))
    }
    pub fn closure(&mut self, l: LambdaId, env: Vec<AvId>) -> AvId {
        self.intern(Av::Closure(l, env.into_boxed_slice()))
    }

    /// Records the elements of vector leaf `v`, read by the mode, so that
    /// an error message shows them ([`crate::text::value_text`]).
    pub fn show_items(&mut self, v: AvId, items: Vec<AvId>) {
        self.shown.insert(v, items);
    }

    /// The elements recorded for vector leaf `v`.
    pub fn shown_items(&self, v: AvId) -> Option<&[AvId]> {
        self.shown.get(&v).map(|x| x.as_slice())
    }

    /// Forgets the elements recorded for messages: they are values of the
    /// function and block that read them, and a leaf is the same node in
    /// every function (its number is a value of each), so a message made
    /// later elsewhere, or the printing of a value, must not use them.
    pub fn forget_shown(&mut self) {
        self.shown.clear();
    }

    /// The value of a known real.
    pub fn known_real(&self, id: AvId) -> Option<f64> {
        match self.get(id) {
            Av::Real(Some(x)) => Some(f64::from_bits(*x)),
            _ => None,
        }
    }

    /// Does the value carry no run-time information at all?
    pub fn is_known(&self, id: AvId) -> bool {
        self.known[id.0 as usize]
    }

    /// Forgets every constant real and boolean inside `id`: the widening
    /// that keeps recursion from unrolling forever on a counter.
    pub fn widen(&mut self, id: AvId) -> AvId {
        if self.widened_generation != self.generation {
            self.widened.clear();
            self.widened_generation = self.generation;
        }
        if let Some(w) = self.widened.get(&id) {
            return *w;
        }
        let w = self.widen_node(id);
        // Widening only interns: no union changed meanwhile. A value
        // widening leaves as it is is kept too: a chain of closures
        // without constants would otherwise be walked again at each call.
        self.widened.insert(id, w);
        w
    }

    fn widen_node(&mut self, id: AvId) -> AvId {
        match self.get(id).clone() {
            Av::Real(Some(_)) | Av::Leaf(_, LeafKind::Real) => self.any_real(),
            Av::Bool(Some(_)) | Av::Leaf(_, LeafKind::Bool) => self.boolean(None),
            Av::Leaf(_, LeafKind::Union(u)) => self.union_av(u),
            Av::Union(u) => self.union_av(u),
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
            Av::Vector(e, n) | Av::Leaf(_, LeafKind::Vector(e, n)) => {
                let (e, n) = (self.widen(e), self.widen(n));
                self.vector(e, n)
            }
            Av::Closure(l, env) => {
                let env = env.iter().map(|x| self.widen(*x)).collect();
                self.closure(l, env)
            }
            _ => id,
        }
    }

    /// `new` with the constants that differ from `old` forgotten (the
    /// widening of a recursion that does not end at compile time, where
    /// `old` is the value of the previous round): a constant that each
    /// round changes (a converging iterate) would otherwise make a new
    /// specialisation per round, while one that stays (a known zero
    /// sensitivity, a fixed parameter) stays known. Where the shapes
    /// differ, every constant of `new` is forgotten.
    pub fn widen_changed(&mut self, old: AvId, new: AvId) -> AvId {
        if old == new {
            return new;
        }
        match (self.get(old).clone(), self.get(new).clone()) {
            (Av::Real(_), Av::Real(_)) => self.any_real(),
            (Av::Bool(_), Av::Bool(_)) => self.boolean(None),
            (Av::Pair(a1, b1), Av::Pair(a2, b2)) => {
                let (a, b) = (self.widen_changed(a1, a2), self.widen_changed(b1, b2));
                self.pair(a, b)
            }
            (Av::Bundle(a1, b1), Av::Bundle(a2, b2)) => {
                let (a, b) = (self.widen_changed(a1, a2), self.widen_changed(b1, b2));
                self.bundle(a, b)
            }
            (Av::Vector(a1, b1), Av::Vector(a2, b2)) => {
                let (a, b) = (self.widen_changed(a1, a2), self.widen_changed(b1, b2));
                self.vector(a, b)
            }
            (Av::Wrap(t1, x1), Av::Wrap(t2, x2)) if t1 == t2 => {
                let x = self.widen_changed(x1, x2);
                self.wrap(t2, x)
            }
            (Av::Closure(l1, e1), Av::Closure(l2, e2)) if l1 == l2 && e1.len() == e2.len() => {
                let env = e1
                    .iter()
                    .zip(e2.iter())
                    .map(|(x, y)| self.widen_changed(*x, *y))
                    .collect();
                self.closure(l2, env)
            }
            _ => self.widen(new),
        }
    }

    // ---- unions ------------------------------------------------------------

    /// The representative of `u` after merges.
    pub fn find(&self, mut u: UnionId) -> UnionId {
        while let Some(w) = self.unions[u.0 as usize].merged_into {
            u = w;
        }
        u
    }

    /// `Av::Union` of the representative of `u`.
    pub fn union_av(&mut self, u: UnionId) -> AvId {
        let u = self.find(u);
        self.intern(Av::Union(u))
    }

    /// The members of union `u`, in tag order (a member's index is its tag
    /// at run time).
    pub fn members(&self, u: UnionId) -> &[AvId] {
        &self.unions[self.find(u).0 as usize].members
    }

    /// How many values the arena holds (ids below it are taken).
    pub fn node_count(&self) -> usize {
        self.nodes.len()
    }

    /// The element value of every vector value in the arena from id
    /// `from` on.
    pub fn vector_elements(&self, from: usize) -> Vec<AvId> {
        self.nodes
            .iter()
            .skip(from)
            .filter_map(|n| match n {
                Av::Vector(elem, _) | Av::Leaf(_, LeafKind::Vector(elem, _)) => Some(*elem),
                _ => None,
            })
            .collect()
    }

    /// The tangent of every bundle value in the arena.
    pub fn bundle_tangents(&self) -> Vec<AvId> {
        self.nodes
            .iter()
            .filter_map(|n| match n {
                Av::Bundle(_, t) => Some(*t),
                _ => None,
            })
            .collect()
    }

    /// Every union (representatives only), for printing.
    pub fn union_ids(&self) -> Vec<UnionId> {
        (0..self.unions.len() as u32)
            .map(UnionId)
            .filter(|u| self.unions[u.0 as usize].merged_into.is_none())
            .collect()
    }

    /// The sites whose union `u` is (after merges), for dumps.
    pub fn sites_of(&self, u: UnionId) -> Vec<Site> {
        let u = self.find(u);
        let mut v: Vec<Site> = self
            .sites
            .iter()
            .filter(|(_, w)| self.find(**w) == u)
            .map(|(s, _)| *s)
            .collect();
        v.sort_by_key(|s| format!("{s:?}"));
        v
    }

    /// Has union `u` no procedure among its members?
    pub fn data_only(&self, u: UnionId) -> bool {
        !self
            .members(u)
            .iter()
            .any(|m| matches!(self.get(*m), Av::Closure(..) | Av::Prim(_)))
    }

    /// The index of the member of `u` that a value of shape `v` belongs to.
    pub fn member_index(&self, u: UnionId, v: AvId) -> Option<usize> {
        let k = self.kind(v)?;
        self.members(u)
            .iter()
            .position(|m| self.kind(*m) == Some(k))
    }

    /// The kind of a non-union value (`None` for bottom and unions).
    pub fn kind(&self, v: AvId) -> Option<Kind> {
        Some(match self.get(v) {
            Av::Real(_) | Av::Leaf(_, LeafKind::Real) => Kind::Real,
            Av::Bool(_) | Av::Leaf(_, LeafKind::Bool) => Kind::Bool,
            Av::Nil => Kind::Nil,
            Av::Prim(p) => Kind::Prim(*p),
            Av::Pair(..) => Kind::Pair,
            Av::Closure(l, _) => Kind::Closure(*l),
            Av::Wrap(t, _) => Kind::Wrap(*t),
            Av::Bundle(..) => Kind::Bundle,
            Av::Vector(..) | Av::Leaf(_, LeafKind::Vector(..)) => Kind::Vector,
            Av::Bottom | Av::Union(_) | Av::Leaf(_, LeafKind::Union(_)) => return None,
        })
    }

    /// A number for a site, for [`Site::Within`].
    pub fn site_index(&mut self, site: Site) -> u32 {
        let n = self.site_ids.len() as u32;
        *self.site_ids.entry(site).or_insert(n)
    }

    /// The operand and result unions of every `zero` of a union made
    /// (representatives), in a fixed order.
    pub fn zero_sites(&self) -> Vec<(UnionId, UnionId)> {
        let mut v: Vec<(UnionId, UnionId)> = self
            .sites
            .iter()
            .filter_map(|(s, z)| match s {
                Site::Zero(u) => Some((self.find(*u), self.find(*z))),
                _ => None,
            })
            .collect();
        v.sort_by_key(|(u, z)| (u.0, z.0));
        v.dedup();
        v
    }

    /// The unions whose values a structural operation ([`Site::Map`])
    /// maps.
    pub fn map_operands(&self) -> Vec<UnionId> {
        let mut v: Vec<UnionId> = self
            .sites
            .keys()
            .flat_map(|s| match s {
                Site::Map(_, u, w) => [Some(*u), *w],
                _ => [None, None],
            })
            .flatten()
            .map(|u| self.find(u))
            .collect();
        v.sort_by_key(|u| u.0);
        v.dedup();
        v
    }

    /// The union of a site, if it was made.
    pub fn union_at(&self, site: Site) -> Option<UnionId> {
        self.sites.get(&site).map(|u| self.find(*u))
    }

    /// Levels of [`Site::Part`] unions a site's union is below.
    fn site_depth(&self, site: Site) -> u32 {
        match site {
            Site::Part(p, _) => self.unions[self.find(p).0 as usize].depth + 1,
            Site::Within(base, _) => self
                .site_ids
                .iter()
                .find(|(_, i)| **i == base)
                .map_or(0, |(s, _)| self.site_depth(*s)),
            _ => 0,
        }
    }

    /// The union of a site, made empty the first time.
    pub fn site_union(&mut self, site: Site) -> UnionId {
        if let Some(u) = self.sites.get(&site) {
            return self.find(*u);
        }
        let u = UnionId(self.unions.len() as u32);
        let depth = self.site_depth(site);
        self.unions.push(UnionData {
            depth,
            site: Some(site),
            ..UnionData::default()
        });
        self.sites.insert(site, u);
        u
    }

    /// The site union `u` was made for (before any merge into it).
    pub fn origin(&self, u: UnionId) -> Option<Site> {
        self.unions[u.0 as usize].site
    }

    /// Makes `site` use union `u`, if it has none yet.
    pub fn alias_site(&mut self, site: Site, u: UnionId) {
        let u = self.find(u);
        self.sites.entry(site).or_insert(u);
    }

    /// The union `v` is (or whose pointer it holds), if any.
    pub fn as_union_id(&self, v: AvId) -> Option<UnionId> {
        self.as_union(v)
    }

    fn as_union(&self, v: AvId) -> Option<UnionId> {
        match self.get(v) {
            Av::Union(u) | Av::Leaf(_, LeafKind::Union(u)) => Some(self.find(*u)),
            _ => None,
        }
    }

    /// Merges union `w` into `u`.
    fn merge(&mut self, u: UnionId, w: UnionId) -> UnionId {
        let (u, w) = (self.find(u), self.find(w));
        if u == w {
            return u;
        }
        let moved = std::mem::take(&mut self.unions[w.0 as usize].members);
        self.unions[w.0 as usize].merged_into = Some(u);
        self.generation += 1;
        for m in moved {
            self.add_member(u, m);
        }
        self.find(u)
    }

    /// Adds the shapes of `v` to union `u`: joins it into the member of its
    /// kind, or appends it as a new member.
    ///
    /// Joining into a member of a union deep in [`MAX_PART_DEPTH`] sends
    /// the mismatched parts back to the same union, and a part of the
    /// member's own kind would join into that member again, before its
    /// first join has returned: recursion without end (a second derivative
    /// of a loop unrolled on constants overflowed the compiler's stack
    /// this way). Such an addition waits in `joining` until the join under
    /// way has updated the member, and is then joined into the new member.
    pub fn add_member(&mut self, u: UnionId, v: AvId) {
        if v == self.bottom() {
            return;
        }
        if let Some(w) = self.as_union(v) {
            self.merge(u, w);
            return;
        }
        let Some(k) = self.kind(v) else { return };
        let u = self.find(u);
        if let Some(waiting) = self.joining.get_mut(&(u, k)) {
            waiting.push(v);
            return;
        }
        let mut work = vec![v];
        // The additions already joined into the member as it then was:
        // joining one again into the same member changes nothing.
        let mut done: std::collections::HashSet<(AvId, AvId)> = Default::default();
        while let Some(v) = work.pop() {
            let u = self.find(u);
            let ms = &self.unions[u.0 as usize].members;
            let Some(i) = ms.iter().position(|m| self.kind(*m) == Some(k)) else {
                self.unions[u.0 as usize].members.push(v);
                self.generation += 1;
                continue;
            };
            let old = ms[i];
            if old == v || !done.insert((old, v)) {
                continue;
            }
            let into = if self.unions[u.0 as usize].depth < MAX_PART_DEPTH {
                Into::Site(Site::Part(u, k), 0, 0)
            } else {
                Into::Union(u)
            };
            self.joining.insert((u, k), Vec::new());
            let j = self.join_in(into, old, v);
            work.extend(self.joining.remove(&(u, k)).unwrap_or_default());
            let u2 = self.find(u);
            let ms = &mut self.unions[u2.0 as usize].members;
            // A nested addition may have changed this member meanwhile:
            // join again with the newer one.
            if u2 == u && ms.get(i) == Some(&old) {
                if j != old {
                    ms[i] = j;
                    self.generation += 1;
                }
            } else {
                work.push(v);
            }
        }
    }

    /// The least upper bound of two abstract values. Values of different
    /// kinds meet in the union of `site` (or in a union one of them
    /// already is); parts of values of one kind are joined at the same
    /// site.
    pub fn join_at(&mut self, site: Site, a: AvId, b: AvId) -> AvId {
        self.join_in(Into::Site(site, 0, 0), a, b)
    }

    /// [`Self::join_at`], with mismatched parts going to the union of a
    /// site or, when two members of a union are joined, to that union.
    fn join_in(&mut self, into: Into, a: AvId, b: AvId) -> AvId {
        if a == b {
            return a;
        }
        match (self.as_union(a), self.as_union(b)) {
            (Some(u), Some(w)) => {
                let u = self.merge(u, w);
                return self.union_av(u);
            }
            (Some(u), None) => {
                self.add_member(u, b);
                return self.union_av(u);
            }
            (None, Some(w)) => {
                self.add_member(w, a);
                return self.union_av(w);
            }
            (None, None) => {}
        }
        let j = |d: &mut Domain<L>, i: usize, x: AvId, y: AvId| d.join_in(into.child(i), x, y);
        match (self.get(a).clone(), self.get(b).clone()) {
            (Av::Bottom, _) => b,
            (_, Av::Bottom) => a,
            (Av::Real(_), Av::Real(_)) => self.any_real(),
            (Av::Bool(_), Av::Bool(_)) => self.boolean(None),
            (Av::Pair(a1, b1), Av::Pair(a2, b2)) => {
                let (x, y) = (j(self, 0, a1, a2), j(self, 1, b1, b2));
                self.pair(x, y)
            }
            (Av::Bundle(a1, b1), Av::Bundle(a2, b2)) => {
                let (x, y) = (j(self, 0, a1, a2), j(self, 1, b1, b2));
                self.bundle(x, y)
            }
            (Av::Vector(a1, b1), Av::Vector(a2, b2)) => {
                let (x, y) = (j(self, 0, a1, a2), j(self, 1, b1, b2));
                self.vector(x, y)
            }
            (Av::Wrap(t1, x1), Av::Wrap(t2, x2)) if t1 == t2 => {
                let x = j(self, 0, x1, x2);
                self.wrap(t1, x)
            }
            (Av::Closure(l1, e1), Av::Closure(l2, e2)) if l1 == l2 && e1.len() == e2.len() => {
                let env = e1
                    .iter()
                    .zip(e2.iter())
                    .enumerate()
                    .map(|(i, (x, y))| j(self, i, *x, *y))
                    .collect();
                self.closure(l1, env)
            }
            _ => {
                let u = match into {
                    Into::Union(u) => u,
                    Into::Site(site, 0, _) => self.site_union(site),
                    Into::Site(site, path, _) => {
                        let base = self.site_index(site);
                        self.site_union(Site::Within(base, path))
                    }
                };
                self.add_member(u, a);
                self.add_member(u, b);
                self.union_av(u)
            }
        }
    }

    /// Is every value of `a` a value of `b`?
    pub fn leq(&self, a: AvId, b: AvId) -> bool {
        if a == b || a == self.bottom() {
            return true;
        }
        match (self.as_union(a), self.as_union(b)) {
            (Some(u), Some(w)) => return u == w,
            (Some(_), None) => return false,
            (None, Some(w)) => {
                return match self.member_index(w, a) {
                    Some(i) => self.leq(a, self.members(w)[i]),
                    None => false,
                }
            }
            (None, None) => {}
        }
        match (self.get(a), self.get(b)) {
            (Av::Real(_) | Av::Leaf(_, LeafKind::Real), Av::Real(None)) => true,
            (Av::Bool(_) | Av::Leaf(_, LeafKind::Bool), Av::Bool(None)) => true,
            (Av::Pair(a1, b1), Av::Pair(a2, b2))
            | (Av::Bundle(a1, b1), Av::Bundle(a2, b2))
            | (Av::Vector(a1, b1) | Av::Leaf(_, LeafKind::Vector(a1, b1)), Av::Vector(a2, b2)) => {
                self.leq(*a1, *a2) && self.leq(*b1, *b2)
            }
            (Av::Wrap(t1, x1), Av::Wrap(t2, x2)) => t1 == t2 && self.leq(*x1, *x2),
            (Av::Closure(l1, e1), Av::Closure(l2, e2)) => {
                l1 == l2 && e1.iter().zip(e2.iter()).all(|(x, y)| self.leq(*x, *y))
            }
            _ => false,
        }
    }

    /// `v` with every union replaced by bottom: the shape of a
    /// specialisation key that names a context ([`Site`]).
    pub fn erase_unions(&mut self, v: AvId) -> AvId {
        if !self.has_union(v) {
            return v;
        }
        if let Some(e) = self.erased.get(&v) {
            return *e;
        }
        let e = self.erase_unions_of(v);
        self.erased.insert(v, e);
        e
    }

    fn erase_unions_of(&mut self, v: AvId) -> AvId {
        match self.get(v) {
            Av::Union(_) | Av::Leaf(_, LeafKind::Union(_)) => self.bottom(),
            _ => self.map_parts(v, Self::erase_unions),
        }
    }

    /// `v` with `f` applied to each of its parts (the halves of a pair or
    /// bundle, what a tag wraps, a vector's elements, a closure's
    /// environment); `v` itself if it has none.
    fn map_parts(&mut self, v: AvId, f: fn(&mut Self, AvId) -> AvId) -> AvId {
        match self.get(v).clone() {
            Av::Pair(a, b) => {
                let (a, b) = (f(self, a), f(self, b));
                self.pair(a, b)
            }
            Av::Bundle(a, b) => {
                let (a, b) = (f(self, a), f(self, b));
                self.bundle(a, b)
            }
            Av::Wrap(t, x) => {
                let x = f(self, x);
                self.wrap(t, x)
            }
            Av::Vector(e, n) => {
                let e = f(self, e);
                self.vector(e, n)
            }
            Av::Closure(l, env) => {
                let env = env.iter().map(|x| f(self, *x)).collect();
                self.closure(l, env)
            }
            _ => v,
        }
    }

    /// How many sites of each kind have a union, and the longest chain of
    /// unions made from unions (`zero`, `plus`, maps, parts): for
    /// `VLAD_FLOW_TRACE`, where a union made per step of a loop shows.
    pub fn site_census(&self) -> String {
        let mut kinds: std::collections::BTreeMap<String, usize> = Default::default();
        let mut origin: HashMap<UnionId, Site> = HashMap::new();
        for (s, u) in &self.sites {
            let k = match s {
                Site::Map(op, ..) => format!("Map {op:?}"),
                _ => format!("{s:?}").split('(').next().unwrap_or("").to_string(),
            };
            *kinds.entry(k).or_default() += 1;
            origin.insert(*u, *s);
        }
        let parents = |s: &Site| -> Vec<UnionId> {
            match *s {
                Site::Map(_, a, b) => [Some(a), b].into_iter().flatten().collect(),
                Site::Plus(a, b) => vec![a, b],
                Site::Zero(a) | Site::Part(a, _) => vec![a],
                _ => Vec::new(),
            }
        };
        // Unions are made after their parents: one pass in id order.
        let mut ids: Vec<UnionId> = origin.keys().copied().collect();
        ids.sort_by_key(|u| u.0);
        let mut depth: HashMap<UnionId, (u32, Option<UnionId>)> = HashMap::new();
        for u in &ids {
            let best = parents(&origin[u])
                .into_iter()
                .filter_map(|p| depth.get(&p).map(|d| (d.0 + 1, Some(p))))
                .max_by_key(|d| d.0)
                .unwrap_or((0, None));
            depth.insert(*u, best);
        }
        let mut chain = String::new();
        let mut cur = ids.iter().copied().max_by_key(|u| depth[u].0);
        for _ in 0..12 {
            let Some(u) = cur else { break };
            chain.push_str(&format!("\n    U{} <- {:?}", u.0, origin[&u]));
            cur = depth[&u].1;
        }
        format!("{kinds:?}{chain}")
    }

    /// Does a union occur anywhere in `v`?
    pub fn has_union(&self, v: AvId) -> bool {
        self.unions_inside[v.0 as usize]
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ir::EntityRef;

    #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
    struct TestLeaf(u32);

    impl Leaf for TestLeaf {
        fn write_message(self, _: LeafKind, text: &mut String) {
            text.push_str(&self.0.to_string());
        }
    }

    /// The analysis' nodes keep their ids in a domain with leaves: making
    /// one again finds it, as does a new node over them.
    #[test]
    fn nodes_are_found_again_after_the_leaves_change() {
        let mut d = Domain::new();
        let x = d.intern(Av::Real(Some(2.5f64.to_bits())));
        let nil = d.nil();
        let p = d.pair(x, nil);
        let c = d.closure(LambdaId::new(3), vec![p, x]);
        let w = d.wrap(Tag::Perturb, c);
        let n = d.nodes.len();
        let mut d: Domain<TestLeaf> = d.with_leaves();
        assert_eq!(d.intern(Av::Real(Some(2.5f64.to_bits()))), x);
        assert_eq!(d.nil(), nil);
        assert_eq!(d.pair(x, nil), p);
        assert_eq!(d.closure(LambdaId::new(3), vec![p, x]), c);
        assert_eq!(d.wrap(Tag::Perturb, c), w);
        assert_eq!(d.nodes.len(), n, "no node was made twice");
        let leaf = d.intern(Av::Leaf(TestLeaf(7), LeafKind::Real));
        let q = d.pair(leaf, p);
        assert_eq!(d.pair(leaf, p), q);
        assert_eq!(d.nodes.len(), n + 2);
    }

    /// A union deep enough that joins of its members send mismatched
    /// parts back to it, and a member with a part of its own kind: the
    /// join once recursed without end (stack overflow).
    #[test]
    fn a_part_of_a_members_kind_joins_back_into_the_member() {
        let mut d = Domain::new();
        let mut u = d.site_union(Site::Result(0));
        for _ in 0..MAX_PART_DEPTH {
            u = d.site_union(Site::Part(u, Kind::Pair));
        }
        let (one, nil) = (d.real(1.0), d.nil());
        let inner = d.pair(one, nil);
        let outer = d.pair(inner, nil);
        d.add_member(u, outer);
        let two = d.real(2.0);
        let other = d.pair(two, nil);
        d.add_member(u, outer);
        d.add_member(u, other);
        let members = d.members(u).to_vec();
        let uv = d.union_av(u);
        let want_pair = d.pair(uv, nil);
        let any = d.any_real();
        assert_eq!(
            members.len(),
            2,
            "{:?}",
            members.iter().map(|m| d.get(*m)).collect::<Vec<_>>()
        );
        assert!(members.contains(&want_pair));
        assert!(members.contains(&any) || members.contains(&one));
        for v in [outer, inner, other] {
            assert!(d.leq(v, uv), "{:?} is in the union", d.get(v));
        }
    }
}
