//! The maps of unions at the cost of the interpreter's (docs/reference.md): a
//! zero that costs nothing to add, a structure reached twice walked once,
//! a round trip through a transformation that gives back what it started
//! from.
//!
//! - A cell made by a `zero` function is marked (`fir::Op::AllocZero`):
//!   the zero of a zero is itself, and `plus` with a zero operand is the
//!   other operand, each after one test, where the interpreter remembers
//!   its known zeros. The backpropagator of `(car l)` returns
//!   `(cons ds (zero (cdr l)))`; adding that to the sensitivity from the
//!   rest of the list costs O(1), not a walk of the list.
//! - The zero of a value of a union whose cells hold cells is lazy: one
//!   marked cell of a tag of its own per representation class (`lazy_tag`)
//!   holding a pointer to the value, made in O(1) with no memo table. A
//!   dispatch on a cell that may be one (its class is the result class of
//!   such a zero: [`Lowerer::lazy_sources`]) tests the members' tags first,
//!   so other cells pay nothing, then the lazy tags, and makes the cell
//!   the lazy zero stands for (`UnionFn::Force`: the zero of the value's
//!   member, its own unions' zeros lazy in turn, remembered per value so
//!   that a structure a map walks is still made once; where no map walks
//!   it and the cell costs constant work, made again when asked again)
//!   and dispatches on that
//!   ([`Unlazy`]). sumsq-R, where three zeros of a list per element were
//!   each a memo lookup (four lookups and a store per element, 45% of its
//!   instructions): 68.4M -> 35.6M instructions per gradient. `zero`
//!   gives back a zero operand, so the value a lazy zero points to is never
//!   one; where the operand's cells cannot stand for the result's, only
//!   the zero of a tape's links is lazy ([`Lowerer::unlike_lazy_zeros`]).
//! - Over a union whose cells hold cells, a map remembers what it gave
//!   for the cells it walked (`fir::Op::MemoGet`), so that shared
//!   structure is walked once and a zero asked for again is not rebuilt.
//!   `plus` remembers nothing where one walk meets each cell by one path
//!   only ([`Lowerer::one_path`]: lists), as the interpreter's memo of
//!   `plus` lasts one call.
//!   Its table is shared by every map of the same operation whose result
//!   has the same representation ([`Lowerer::class`]): the answer depends
//!   only on the operand cells' values.
//! - A map records its result in the tables of the maps that undo it
//!   (`unwrap` of a `wrap`, `primal` and `tangent` of a `bundle`), so
//!   that a round trip, as nested modes make at every step of a loop over
//!   a list, gives back the very cells it started from, in O(1), and the
//!   memos keyed by them keep hitting. Within a function, a map whose
//!   answer is known that way, or that a call made earlier in a block
//!   still open gave, is not called at all ([`Lowerer::known_map`]).
//!
//! Two unions have the same representation when their members, in tag
//! order, are the same abstract values up to the unions inside them, which
//! have the same representation in turn (a bisimulation: lists of one
//! shape made at different sites are interchangeable).

use crate::lowerer::*;
use base::counters::{PLUS, TRANSFORM, ZERO};
use base::EntityRef;
use fir::{self, Block, FuncId, Inst, Op, Term, Ty, Val};
use flow::{Av, AvId, UnionId, UnionOp};
use std::collections::HashMap;
use std::collections::{BTreeMap, HashSet};

/// What a memo table remembers: the results of one operation, given in
/// one representation class.
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub(super) enum MemoOp {
    Zero,
    Plus,
    Map(UnionOp),
}

/// The state of this module in [`Lowerer`].
#[derive(Default)]
pub(super) struct Sharing {
    /// Pairs of unions known to have (or not) the same representation.
    interchangeable: HashMap<(UnionId, UnionId), bool>,
    /// One union per representation class, and each union's class.
    classes: Vec<UnionId>,
    class_of: HashMap<UnionId, usize>,
    /// The memo tables by (operation, class of result).
    tables: HashMap<(MemoOp, usize), u32>,
    /// The cells' tags by (class, member index; `usize::MAX` for lazy
    /// zeros of the class's values).
    tags: HashMap<(usize, usize), u32>,
    /// The lazy zeros each class's cells may be ([`Lowerer::lazy_table`]).
    lazy: Option<HashMap<usize, Vec<(u32, UnionId)>>>,
    /// What [`Lowerer::one_path`] found, kept while no union is added.
    one_path: Option<OnePath>,
    /// The classes some map walks ([`Lowerer::walked_classes`]).
    walked: Option<HashSet<usize>>,
    /// The map functions made so far that do constant work
    /// ([`Lowerer::constant_work`]).
    constant_fns: HashSet<FuncId>,
}

/// The classes whose cells a walk meets by one path only
/// ([`Lowerer::one_path`]).
struct OnePath {
    /// How many unions there were when `classes` was found.
    unions: usize,
    /// How many values of the arena have been looked at for vectors:
    /// lowering adds values, so only the new ones are.
    scanned: usize,
    /// The classes whose cells some vector holds.
    in_vectors: HashSet<usize>,
    /// `None` when `in_vectors` has grown since it was found.
    classes: Option<HashSet<usize>>,
}

impl Lowerer<'_> {
    /// The body of the map function of a union (`zero`, `plus`, a
    /// transformation) `what`, with result union `result`: what needs no
    /// walk (see the module's documentation), else the walk `walk` makes.
    /// Counts a step of the operation for each cell walked (the
    /// interpreter counts one for each value node it walks).
    pub(super) fn known_results(
        &mut self,
        fb: &mut Fb,
        what: UnionFn,
        result: UnionId,
        walk: &mut dyn FnMut(&mut Self, &mut Fb) -> Vec<Val>,
    ) -> Vec<Val> {
        let (operands, op, slot) = match what {
            UnionFn::Zero(u) | UnionFn::Force(u, _) => (vec![u], MemoOp::Zero, ZERO),
            UnionFn::Plus(u, w) => (vec![u, w], MemoOp::Plus, PLUS),
            UnionFn::Map(op, u, w, _) => (
                [Some(u), w].into_iter().flatten().collect(),
                MemoOp::Map(op),
                TRANSFORM,
            ),
        };
        let key: Vec<Val> = (0..operands.len()).map(Val::new).collect();
        let memo = operands.iter().any(|u| self.holds_cells(*u))
            && !(op == MemoOp::Plus && operands.iter().all(|u| self.one_path(*u)));
        let table = self.memo_table(op, result);
        let inverses = self.inverses(what);
        let lazy = match what {
            UnionFn::Zero(u) => self.lazy_zero_tag(u),
            _ => None,
        };
        let mut body = |this: &mut Self, fb: &mut Fb| {
            if let Some(tag) = lazy {
                fb.emit(Op::Count(slot as u32), &[]);
                return vec![fb.emit1(Op::AllocZero(tag, key.clone()), Ty::Ptr)];
            }
            let mut counted_walk = |this: &mut Self, fb: &mut Fb| {
                fb.emit(Op::Count(slot as u32), &[]);
                walk(this, fb)
            };
            if !memo {
                return counted_walk(this, fb);
            }
            if let UnionFn::Force(_, w) = what {
                // Forcing a lazy zero makes one cell, its unions' zeros
                // lazy in turn: where no map walks such cells, it is
                // made again where it is asked for again, as cheap as a
                // lookup, and no table grows with the structure
                // (hvp-kmeans: 400,000 insertions, a table of 32 MB, for
                // 80,000 points). Each cell is one the program's own walk
                // asks for, so the bounds hold; it is marked a zero,
                // which `plus` and `zero` pass over in one test. Where a
                // map walks them, it remembers what it gave for the cells
                // it met: a zero made again would be walked again
                // (grow-hvp-rr: 265 times the instructions).
                let class = this.class(w);
                if !this.walked_classes().contains(&class) {
                    fb.blocks.push(Vec::new());
                    let r = counted_walk(this, fb);
                    let insts = fb.blocks.pop().unwrap_or_default();
                    if insts.iter().all(|i| this.constant_work(i)) {
                        fb.blocks.last_mut().expect("an open block").extend(insts);
                        return r;
                    }
                    return this.remembered(fb, table, &key, insts, r);
                }
            }
            let found = fb.emit(Op::MemoGet(table, key.clone()), &[Ty::Bool, Ty::Ptr]);
            this.unless(fb, found[0], vec![found[1]], &mut |this, fb| {
                let r = counted_walk(this, fb);
                let mut put = key.clone();
                put.extend(&r);
                fb.emit(Op::MemoPut(table, put), &[]);
                for (inverse, operand) in &inverses {
                    let put = vec![r[0], Val::new(*operand)];
                    fb.emit(Op::MemoPut(*inverse, put), &[]);
                }
                r
            })
        };
        // The zero tests, outermost first: for `zero`, the operand itself
        // is a zero; for `plus`, either operand is, giving the other.
        let mut tests: Vec<(Val, Val)> = Vec::new();
        match what {
            UnionFn::Zero(u) if self.interchangeable(u, result) => {
                tests.push((Val::new(0), Val::new(0)))
            }
            UnionFn::Plus(u, w) => {
                if self.interchangeable(w, result) {
                    tests.push((Val::new(0), Val::new(1)));
                }
                if self.interchangeable(u, result) {
                    tests.push((Val::new(1), Val::new(0)));
                }
            }
            _ => {}
        }
        self.zero_tests(fb, &tests, &mut body)
    }

    /// What map `what` gives for `args` without a call: what a call of a
    /// map of the same table gave for them earlier in a block still open,
    /// or the operand of a map it undoes (`primal` of a `bundle`), as its
    /// memo table would (see the module's documentation). Forward over
    /// reverse mode bundles a loop's backpropagator with its tangent and
    /// takes the bundle apart again at each step: three lookups and a
    /// store per step in memo tables that grow with the list.
    pub(super) fn known_map(&mut self, fb: &Fb, what: UnionFn, args: &[Val]) -> Option<Val> {
        let UnionFn::Map(op, _, _, result) = what else {
            return None;
        };
        let table = self.memo_table(MemoOp::Map(op), result);
        still_made(fb, table, args)
    }

    /// Records that the call just emitted, of map `what` on `args`, gave
    /// `r` ([`Lowerer::known_map`]).
    pub(super) fn record_map(&mut self, fb: &mut Fb, what: UnionFn, args: &[Val], r: Val) {
        let UnionFn::Map(op, u, w, result) = what else {
            return;
        };
        let table = self.memo_table(MemoOp::Map(op), result);
        let Some((block, index)) = made_here(fb, table, args, r) else {
            return;
        };
        // Operands that are known values are not arguments.
        if args.len() == 1 + usize::from(w.is_some()) {
            for (inverse, operand) in self.inverses(UnionFn::Map(op, u, w, result)) {
                let given = args[operand];
                fb.maps.insert((inverse, vec![r]), (given, r, block, index));
            }
        }
    }

    /// What `zero` of union `u`'s value `arg` gave earlier in a block
    /// still open, when the function remembers its results: a call again
    /// would be a memo hit, which gives the same cell and counts nothing.
    /// The backward sweep of a loop over a list asks for the zero of the
    /// rest of the list at each read of it (hvp-rr: three times a step).
    pub(super) fn zero_made(
        &mut self,
        fb: &Fb,
        u: UnionId,
        result: UnionId,
        arg: Val,
    ) -> Option<Val> {
        let table = self.zero_table(u, result)?;
        still_made(fb, table, &[arg])
    }

    /// Records that the call just emitted, of `zero` of union `u` on
    /// `arg`, gave `r` ([`Lowerer::zero_made`]).
    pub(super) fn record_zero(
        &mut self,
        fb: &mut Fb,
        u: UnionId,
        result: UnionId,
        arg: Val,
        r: Val,
    ) {
        if let Some(table) = self.zero_table(u, result) {
            made_here(fb, table, &[arg], r);
        }
    }

    /// The memo table of `zero` of union `u`, if it has one (it is not
    /// lazy, and `u`'s cells hold cells: [`Lowerer::known_results`]).
    fn zero_table(&mut self, u: UnionId, result: UnionId) -> Option<u32> {
        (self.holds_cells(u) && self.lazy_zero_tag(u).is_none())
            .then(|| self.memo_table(MemoOp::Zero, result))
    }

    /// The tag of the lazy zeros of union `u`'s values, if `zero` of them
    /// is one (see the module's documentation).
    fn lazy_zero_tag(&mut self, u: UnionId) -> Option<u32> {
        let u = self.ops.dom.find(u);
        let z = self.ops.dom.union_at(flow::Site::Zero(u))?;
        let class = self.class(z);
        let tag = self.lazy_tag(u);
        self.lazy_table()
            .get(&class)
            .is_some_and(|sources| sources.iter().any(|(t, _)| *t == tag))
            .then_some(tag)
    }

    /// The lazy zeros a cell of union `u` may be: each one's tag and the
    /// union of the values it is the zero of.
    pub(super) fn lazy_sources(&mut self, u: UnionId) -> Vec<(u32, UnionId)> {
        let class = self.class(u);
        self.lazy_table().get(&class).cloned().unwrap_or_default()
    }

    /// The tag of a lazy zero of a value of union `u`: one per
    /// representation class of the values (a cell of one union stands for
    /// a value of any interchangeable one).
    fn lazy_tag(&mut self, u: UnionId) -> u32 {
        self.cell_tag(u, usize::MAX)
    }

    /// The lazy zeros by the representation class of the unions holding
    /// them, made once: a union whose cells hold cells has lazy zeros.
    fn lazy_table(&mut self) -> &HashMap<usize, Vec<(u32, UnionId)>> {
        if self.sharing.lazy.is_none() {
            let mut table: HashMap<usize, Vec<(u32, UnionId)>> = HashMap::new();
            let mut others = Vec::new();
            for (u, z) in self.ops.dom.zero_sites() {
                if self.ops.dom.union_at(flow::Site::Zero(u)) != Some(z) || !self.holds_cells(u) {
                    continue;
                }
                if !self.interchangeable(u, z) {
                    others.push((u, z));
                    continue;
                }
                let tag = self.lazy_tag(u);
                add_source(&mut table, self.class(z), tag, u);
            }
            for (u, class) in self.unlike_lazy_zeros(others, &table) {
                let tag = self.lazy_tag(u);
                add_source(&mut table, class, tag, u);
            }
            self.sharing.lazy = Some(table);
        }
        self.sharing.lazy.get_or_insert_with(HashMap::new)
    }

    /// Of the `zero` sites `sites` whose operand's cells cannot stand for
    /// the result's, those whose zeros are lazy too, each as the operand
    /// union and the result's class, given the lazy zeros `table` of the
    /// others. Where they can, `zero` gives back a zero operand (a lazy
    /// zero included), so the original of a lazy zero is never one; where
    /// they cannot, `zero` always makes a cell, and that holds only if no
    /// operand can be a lazy zero: the operand's class holds none.
    ///
    /// Only zeros that no map walks and that are no tangent (forward mode
    /// walks the tangent of a constant list) are lazy: forcing one then
    /// makes a cell and remembers nothing (`known_results`). The
    /// sensitivity of an inner reverse mode's tape, which reverse over
    /// reverse asks for at every step and only adds or drops (hvp-rr: 8
    /// lookups an element in a table kept across calls, 25% of its
    /// instructions), and that of a list the program only reads, which
    /// reverse mode asks for at every read and `gradient-R` drops
    /// (softmax regression over a list of 61,440 points: a zero of the
    /// whole list made per step, through a table of as many entries, and
    /// 3.3 lookups per point; 42% fewer instructions, and a peak of 64
    /// MB instead of 115 after 10 steps, once lazy). Until forcing
    /// remembered nothing, only the zeros of lists of links alone were
    /// lazy.
    fn unlike_lazy_zeros(
        &mut self,
        sites: Vec<(UnionId, UnionId)>,
        table: &HashMap<usize, Vec<(u32, UnionId)>>,
    ) -> Vec<(UnionId, usize)> {
        let walked = self.walked_classes();
        let kept: Vec<(UnionId, usize, usize)> = sites
            .into_iter()
            .map(|(u, z)| (u, self.class(u), self.class(z)))
            .filter(|(_, _, zc)| !walked.contains(zc))
            .collect();
        // What any class may be, these sites' zeros counted: a site whose
        // operand's class is one of them is not lazy.
        let lazy: HashSet<usize> = (table.keys().copied())
            .chain(kept.iter().map(|k| k.2))
            .collect();
        kept.into_iter()
            .filter(|(_, uc, _)| !lazy.contains(uc))
            .map(|(u, _, zc)| (u, zc))
            .collect()
    }

    /// The classes whose cells a map walks: the operands of maps, and the
    /// unions in the tangents of bundles (forward mode walks the tangent
    /// of a constant list).
    fn walked_classes(&mut self) -> HashSet<usize> {
        if let Some(w) = &self.sharing.walked {
            return w.clone();
        }
        let mut tangents = Vec::new();
        for t in self.ops.dom.bundle_tangents() {
            pointers(&self.ops.dom, t, &mut tangents);
        }
        let walked: HashSet<usize> = (self.ops.dom.map_operands().into_iter())
            .chain(tangents.into_iter().flatten())
            .map(|u| self.class(u))
            .collect();
        self.sharing.walked = Some(walked.clone());
        walked
    }

    /// The sets of tags one dispatch may test: a representation class's
    /// members and its values' lazy zeros, and the lazy zeros its cells
    /// may be ([`Lowerer::switch`]).
    pub(super) fn dispatch_groups(&mut self) -> Vec<Vec<u32>> {
        let mut groups: BTreeMap<usize, Vec<u32>> = BTreeMap::new();
        for ((class, _), tag) in &self.sharing.tags {
            groups.entry(*class).or_default().push(*tag);
        }
        for (class, sources) in self.lazy_table() {
            groups
                .entry(*class)
                .or_default()
                .extend(sources.iter().map(|(t, _)| *t));
        }
        groups.into_values().collect()
    }

    /// The memo table of operation `op` with results in union `result`.
    fn memo_table(&mut self, op: MemoOp, result: UnionId) -> u32 {
        let class = self.class(result);
        let n = self.sharing.tables.len() as u32;
        *self.sharing.tables.entry((op, class)).or_insert(n)
    }

    /// The tables of the maps that undo map `what`, each with the operand
    /// they give back for `what`'s result: `unwrap` of a `wrap` and `wrap`
    /// of an `unwrap` the cell itself, `primal` and `tangent` of a `bundle`
    /// its two operands.
    fn inverses(&mut self, what: UnionFn) -> Vec<(u32, usize)> {
        let UnionFn::Map(op, u, w, _) = what else {
            return Vec::new();
        };
        let undo = |op: UnionOp| MemoOp::Map(op);
        let wanted = match (op, w) {
            (UnionOp::Wrap(t), None) => vec![(undo(UnionOp::Unwrap(t)), u, 0)],
            (UnionOp::Unwrap(t), None) => vec![(undo(UnionOp::Wrap(t)), u, 0)],
            (UnionOp::Bundle(_), Some(w)) => vec![
                (undo(UnionOp::Half(true)), u, 0),
                (undo(UnionOp::Half(false)), w, 1),
            ],
            _ => Vec::new(),
        };
        wanted
            .into_iter()
            .map(|(op, given_back, operand)| (self.memo_table(op, given_back), operand))
            .collect()
    }

    /// `if is_zero(a) { b } else if ... else { rest }`.
    pub(super) fn zero_tests(
        &mut self,
        fb: &mut Fb,
        tests: &[(Val, Val)],
        rest: &mut dyn FnMut(&mut Self, &mut Fb) -> Vec<Val>,
    ) -> Vec<Val> {
        let Some(((zero, other), more)) = tests.split_first() else {
            return rest(self, fb);
        };
        let cond = fb.emit1(Op::IsZero(*zero), Ty::Bool);
        self.unless(fb, cond, vec![*other], &mut |this, fb| {
            this.zero_tests(fb, more, rest)
        })
    }

    /// `if cond { known } else { otherwise }`, of `Ptr`s.
    fn unless(
        &mut self,
        fb: &mut Fb,
        cond: Val,
        known: Vec<Val>,
        otherwise: &mut dyn FnMut(&mut Self, &mut Fb) -> Vec<Val>,
    ) -> Vec<Val> {
        fb.blocks.push(Vec::new());
        let vals = otherwise(self, fb);
        let else_ = Block {
            insts: fb.blocks.pop().unwrap_or_default(),
            term: Term::Yield(vals),
        };
        let tys = vec![Ty::Ptr; known.len()];
        let then_ = Block {
            insts: vec![],
            term: Term::Yield(known),
        };
        fb.emit(Op::If { cond, then_, else_ }, &tys)
    }

    /// `insts`, which compute `r` from the key, run only when memo table
    /// `table` has no result for the key, which they then record.
    fn remembered(
        &mut self,
        fb: &mut Fb,
        table: u32,
        key: &[Val],
        mut insts: Vec<Inst>,
        r: Vec<Val>,
    ) -> Vec<Val> {
        let found = fb.emit(Op::MemoGet(table, key.to_vec()), &[Ty::Bool, Ty::Ptr]);
        let mut put = key.to_vec();
        put.extend(&r);
        insts.push(Inst {
            results: vec![],
            op: Op::MemoPut(table, put),
        });
        let else_ = Block {
            insts,
            term: Term::Yield(r),
        };
        let then_ = Block {
            insts: vec![],
            term: Term::Yield(vec![found[1]]),
        };
        fb.emit(
            Op::If {
                cond: found[0],
                then_,
                else_,
            },
            &[Ty::Ptr],
        )
    }

    /// Does `inst` take the same small work whatever its operands hold: no
    /// call but of a map function that does (a lazy zero's), no vector
    /// (whose length is data), no table?
    pub(super) fn constant_work(&self, inst: &Inst) -> bool {
        match &inst.op {
            Op::If { then_, else_, .. } => [then_, else_]
                .iter()
                .all(|b| b.insts.iter().all(|i| self.constant_work(i))),
            Op::Call(f, _) => self.sharing.constant_fns.contains(f),
            Op::Alloc(..)
            | Op::AllocZero(..)
            | Op::TagIs(..)
            | Op::IsZero(_)
            | Op::Count(_)
            | Op::Load(..) => true,
            op => op.is_pure(),
        }
    }

    /// Records that map function `f`, whose body is `body`, does constant
    /// work, if it does.
    pub(super) fn note_constant(&mut self, f: FuncId, body: &[Inst]) {
        if body.iter().all(|i| self.constant_work(i)) {
            self.sharing.constant_fns.insert(f);
        }
    }

    /// Does a walk meet each cell of union `u` by one path only? Then
    /// `plus`, whose memo lives for one call in the interpreter, needs no
    /// table: a pair of cells is never walked twice in one call, and a
    /// table kept across calls only cost lookups (hvp-rr's sensitivity of
    /// the inner tape, a list: 9 lookups and 2 insertions per element,
    /// each missing the cache once the table outgrew it).
    ///
    /// A cell is met twice only if some cell holds two pointers (two
    /// fields, or a vector's elements) leading to it. So the classes
    /// whose members each hold at most one pointer, whose cells no vector
    /// holds (anywhere: `plus` of two vectors of lists made by
    /// `make-vector` meets one pair of lists at every index), and whose
    /// cells only such classes' cells point to, all the way up: the
    /// greatest such set, by removing classes until none has a parent
    /// outside it. Cells of one class stand for one another, so the
    /// question is asked of classes. Other values that hold two pointers
    /// to one list (a pair of it with itself) are of a size the program
    /// fixes, so they walk it a bounded number of times again.
    fn one_path(&mut self, u: UnionId) -> bool {
        let unions = self.ops.dom.union_ids();
        let mut found = match self.sharing.one_path.take() {
            Some(f) if f.unions == unions.len() => f,
            _ => OnePath {
                unions: unions.len(),
                scanned: 0,
                in_vectors: HashSet::new(),
                classes: None,
            },
        };
        let elems = self.ops.dom.vector_elements(found.scanned);
        found.scanned = self.ops.dom.node_count();
        for elem in elems {
            let mut inside = Vec::new();
            pointers(&self.ops.dom, elem, &mut inside);
            for w in inside.into_iter().flatten() {
                let c = self.class(w);
                if found.in_vectors.insert(c) {
                    found.classes = None;
                }
            }
        }
        let classes = match found.classes.take() {
            Some(classes) => classes,
            None => self.one_path_classes(&unions, &found.in_vectors),
        };
        let class = self.class(u);
        let r = classes.contains(&class);
        found.classes = Some(classes);
        self.sharing.one_path = Some(found);
        r
    }

    fn one_path_classes(
        &mut self,
        unions: &[UnionId],
        in_vectors: &HashSet<usize>,
    ) -> HashSet<usize> {
        let mut candidates = HashSet::new();
        let mut excluded = in_vectors.clone();
        let mut parents: HashMap<usize, HashSet<usize>> = HashMap::new();
        for &u in unions {
            let class = self.class(u);
            candidates.insert(class);
            for m in self.ops.dom.members(u).to_vec() {
                let mut children = Vec::new();
                pointers(&self.ops.dom, m, &mut children);
                if children.len() > 1 {
                    excluded.insert(class);
                }
                for w in children.into_iter().flatten() {
                    let c = self.class(w);
                    parents.entry(c).or_default().insert(class);
                }
            }
        }
        candidates.retain(|c| !excluded.contains(c));
        loop {
            let before = candidates.len();
            let kept = candidates.clone();
            candidates.retain(|c| {
                parents
                    .get(c)
                    .is_none_or(|ps| ps.iter().all(|p| kept.contains(p)))
            });
            if candidates.len() == before {
                return candidates;
            }
        }
    }

    /// Do the cells of union `u` hold cells (of unions inside its
    /// members)? Only then can a walk over them meet a cell twice.
    fn holds_cells(&self, u: UnionId) -> bool {
        self.ops
            .dom
            .members(u)
            .iter()
            .any(|m| layout_of(&self.ops.dom, *m).contains(&Ty::Ptr))
    }

    /// The tag of member `k` of union `u` in its cells: one number per
    /// member of a representation class across the module, since a cell
    /// of one union stands for a value of any interchangeable one (memo
    /// tables and `plus` with a zero hand them across), and distinct
    /// otherwise, so that a `Load` names the member whose slot it reads
    /// (`fir::passes::fields` drops the slots nothing reads).
    /// A new tag's layout goes in the module's table: the member's
    /// scalars in [`cell_slots`] order, or the one pointer of a lazy zero.
    pub(super) fn cell_tag(&mut self, u: UnionId, k: usize) -> u32 {
        let class = self.class(u);
        let n = self.sharing.tags.len() as u32;
        let tag = *self.sharing.tags.entry((class, k)).or_insert(n);
        if tag == n {
            let slots = match self.ops.dom.members(u).get(k) {
                Some(member) => cell_layout(&layout_of(&self.ops.dom, *member)),
                None => vec![Ty::Ptr],
            };
            self.module.cells.insert(tag, slots);
        }
        tag
    }

    /// The representation class of union `u`.
    fn class(&mut self, u: UnionId) -> usize {
        let u = self.ops.dom.find(u);
        if let Some(c) = self.sharing.class_of.get(&u) {
            return *c;
        }
        let reps = self.sharing.classes.clone();
        let c = reps
            .iter()
            .position(|r| self.interchangeable(u, *r))
            .unwrap_or_else(|| {
                self.sharing.classes.push(u);
                reps.len()
            });
        self.sharing.class_of.insert(u, c);
        c
    }

    /// Can a cell of union `u` stand for a value of union `w`: the same
    /// members with the same tags, whose representations mean the same
    /// (unions inside them interchangeable in turn)?
    pub(super) fn interchangeable(&mut self, u: UnionId, w: UnionId) -> bool {
        let (u, w) = (self.ops.dom.find(u), self.ops.dom.find(w));
        if u == w {
            return true;
        }
        if let Some(r) = self.sharing.interchangeable.get(&(u, w)) {
            return *r;
        }
        // Pairs met while comparing are assumed equal (a union holding
        // itself, a list, is interchangeable with another when nothing
        // else tells them apart); they are remembered only if the whole
        // comparison holds, which makes every assumption true.
        let mut assumed = HashSet::new();
        let r = self.bisimilar(u, w, &mut assumed);
        if r {
            for pair in assumed {
                self.sharing.interchangeable.insert(pair, true);
            }
        }
        self.sharing.interchangeable.insert((u, w), r);
        r
    }

    fn bisimilar(&self, u: UnionId, w: UnionId, assumed: &mut HashSet<(UnionId, UnionId)>) -> bool {
        let dom = &self.ops.dom;
        let (u, w) = (dom.find(u), dom.find(w));
        if u == w || !assumed.insert((u, w)) {
            return true;
        }
        if let Some(r) = self.sharing.interchangeable.get(&(u, w)) {
            return *r;
        }
        let (mu, mw) = (dom.members(u), dom.members(w));
        mu.len() == mw.len()
            && mu
                .iter()
                .zip(mw)
                .all(|(a, b)| self.same_representation(*a, *b, assumed))
    }

    /// Do abstract values `a` and `b` have one representation meaning the
    /// same values?
    fn same_representation(
        &self,
        a: AvId,
        b: AvId,
        assumed: &mut HashSet<(UnionId, UnionId)>,
    ) -> bool {
        if a == b {
            return true;
        }
        let dom = &self.ops.dom;
        match (dom.get(a), dom.get(b)) {
            (Av::Union(u), Av::Union(w)) => self.bisimilar(*u, *w, assumed),
            (Av::Pair(a1, b1), Av::Pair(a2, b2)) | (Av::Bundle(a1, b1), Av::Bundle(a2, b2)) => {
                self.same_representation(*a1, *a2, assumed)
                    && self.same_representation(*b1, *b2, assumed)
            }
            (Av::Wrap(t1, x), Av::Wrap(t2, y)) => {
                t1 == t2 && self.same_representation(*x, *y, assumed)
            }
            (Av::Closure(l1, e1), Av::Closure(l2, e2)) => {
                l1 == l2
                    && e1.len() == e2.len()
                    && e1
                        .iter()
                        .zip(e2.iter())
                        .all(|(x, y)| self.same_representation(*x, *y, assumed))
            }
            _ => false,
        }
    }
}

/// Makes the cells an instruction allocates (in nested blocks too) zero
/// cells.
pub(super) fn mark_zero(inst: &mut Inst) {
    match &mut inst.op {
        Op::Alloc(tag, fields) => {
            inst.op = Op::AllocZero(*tag, std::mem::take(fields));
        }
        Op::If { then_, else_, .. } => {
            for b in [then_, else_] {
                for i in &mut b.insts {
                    mark_zero(i);
                }
            }
        }
        _ => {}
    }
}

/// Adds the lazy zeros of tag `tag`, of values of union `u`, to those
/// the cells of representation class `class` may be.
fn add_source(table: &mut HashMap<usize, Vec<(u32, UnionId)>>, class: usize, tag: u32, u: UnionId) {
    let sources = table.entry(class).or_default();
    if !sources.iter().any(|(t, _)| *t == tag) {
        sources.push((tag, u));
    }
}

/// What the call of a map of memo table `table` on `args` gave, if that
/// call is still where it was made, in a block still open.
fn still_made(fb: &Fb, table: u32, args: &[Val]) -> Option<Val> {
    let (given, made, block, index) = *fb.maps.get(&(table, args.to_vec()))?;
    let open = fb.blocks.get(block).and_then(|b| b.get(index));
    open.is_some_and(|i| i.results.first() == Some(&made))
        .then_some(given)
}

/// Records that the instruction just emitted, a call of a map of memo
/// table `table` on `args`, gave `r`; returns where it is.
fn made_here(fb: &mut Fb, table: u32, args: &[Val], r: Val) -> Option<(usize, usize)> {
    let block = fb.blocks.len().checked_sub(1)?;
    let index = fb.blocks[block].len().checked_sub(1)?;
    fb.maps.insert((table, args.to_vec()), (r, r, block, index));
    Some((block, index))
}

/// The pointers of a value of abstract value `av` in its cell, in
/// [`layout_of`] order: each union's cells (`Some`), or a vector (`None`:
/// the cells its elements hold are found from the vector values of the
/// arena, [`Lowerer::one_path`]).
fn pointers<L: flow::Leaf>(dom: &flow::Domain<L>, av: AvId, out: &mut Vec<Option<UnionId>>) {
    if dom.is_known(av) {
        return;
    }
    match dom.get(av) {
        Av::Union(u) | Av::Leaf(_, flow::LeafKind::Union(u)) => out.push(Some(dom.find(*u))),
        Av::Vector(..) | Av::Leaf(_, flow::LeafKind::Vector(..)) => out.push(None),
        Av::Pair(a, b) | Av::Bundle(a, b) => {
            pointers(dom, *a, out);
            pointers(dom, *b, out);
        }
        Av::Closure(_, env) => {
            for x in env.iter() {
                pointers(dom, *x, out);
            }
        }
        Av::Wrap(_, x) => pointers(dom, *x, out),
        Av::Real(_) | Av::Bool(_) | Av::Leaf(..) | Av::Bottom | Av::Nil | Av::Prim(_) => {}
    }
}
