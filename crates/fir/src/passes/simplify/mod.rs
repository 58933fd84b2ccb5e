//! FIR-to-FIR clean-up after inlining: constant folding, exact algebraic
//! identities, common-subexpression elimination and dead-code elimination.
//!
//! Everything here keeps IEEE binary64 semantics bit for bit (up to the
//! payload of NaNs, which VLAD prints all alike as `+nan.0`):
//! - folding evaluates `+ - * /`, `sqrt` and comparisons of constants as
//!   the machine would (correctly rounded); the transcendental functions
//!   are never folded (their last bit belongs to libm);
//! - only identities that hold for every operand, infinities, NaNs and
//!   signed zeros included, are used: `x * 1 = 1 * x = x / 1 = x`,
//!   `x - 0 = x`, `x + -0 = -0 + x = x`, and `x + 0 = 0 + x = x` when `x`
//!   is known never to be `-0` (a square, a sum with an operand that is
//!   not `-0`, a nonzero constant, ...). Never `0 * x = 0` (wrong for
//!   infinities, NaNs and negative `x`) and never reassociation;
//! - common subexpressions are merged, with `+` and `*` commutative
//!   (exact in IEEE arithmetic), and so are tag tests, zero tests,
//!   loads of one cell (cells never change) or of one vector element,
//!   and cells made alike (nothing tells two equal cells apart); the
//!   tag test, zero test and loads of a cell allocated in the function
//!   are known (a zero that `plus` meets where it was made costs
//!   nothing, not even the cell);
//! - a conditional on a constant becomes the arm it takes; an `If` result
//!   both arms yield alike becomes that value;
//! - pure instructions whose results are unused are removed, as are unused
//!   `If` results and then `If`s left with nothing to do;
//! - in the pass [`fuse`] (after `tags`): where a boolean `If` result is
//!   the other of the constant one arm yields, that arm's condition is
//!   known, and two `If`s on one condition with nothing but arithmetic
//!   and reads of cells between them become one.
//!
//! Calls, printing, reading and errors are never removed or reordered.

use crate::{Block, Cmp, ErrPart, FBin, FUn, Func, Inst, Module, Op, Term, Val};
use base::EntityRef;
use rustc_hash::{FxHashMap as HashMap, FxHashSet as HashSet};

mod cells;
pub mod fuse;
mod thread;

use cells::{Cell, Facts};

pub fn simplify(m: &mut Module) {
    for f in &mut m.funcs {
        simplify_func(f);
    }
}

/// Simplifies the functions `changed` marks, for the passes that run
/// simplification between their rounds: what they left unchanged since
/// the last simplification is already what it makes of it, and a round
/// changes a few functions of a large module (simplifying all of them
/// again was a third of the FIR passes' time).
pub fn simplify_changed(m: &mut Module, changed: &[bool]) {
    for (f, c) in m.funcs.iter_mut().zip(changed) {
        if *c {
            simplify_func(f);
        }
    }
}

pub fn simplify_func(f: &mut Func) {
    simplify_once(f, false);
}

/// One walk, then dead-code removal. `implications`: whether a boolean
/// `If` result tells its arms' condition (`fuse`, which runs after
/// `tags`: that pass learns a union's tag from the explicit `If` on a
/// tag test only, and an `If` an implication decided is gone).
fn simplify_once(f: &mut Func, implications: bool) {
    let n = f.types.len();
    let mut cx = Fwd {
        subst: vec![None; n],
        konst: vec![None; n],
        not_neg_zero: vec![false; n],
        scopes: vec![HashMap::default()],
        next: n,
        cells: HashMap::default(),
        zero_tested: vec![false; n],
        level: vec![0; n],
        new_types: Vec::new(),
        key_of: vec![None; n],
        facts: vec![Facts::default()],
        implies: HashMap::default(),
        implications,
        lengths: HashMap::default(),
        zero_vectors: HashMap::default(),
        counts: HashSet::default(),
    };
    let body = std::mem::replace(
        &mut f.body,
        Block {
            insts: vec![],
            term: Term::Return(vec![]),
        },
    );
    f.body = cx.block(body);
    f.types.extend(cx.new_types);
    let mut live = vec![false; cx.next];
    dce_block(&mut f.body, &mut live, &mut EverySlot);
    super::compact::compact(f);
}

/// Only the dead-code removal of [`simplify_func`]: for a pass that left
/// uses of values it removed in code nothing needs.
pub(crate) fn dce(f: &mut Func) {
    dce_slots(f, &mut EverySlot);
}

/// [`dce`], where an `Alloc`'s operand is a use only if `slots` says its
/// slot is stored; tells `slots` the slots the live `Load`s read. The
/// operands left at slots not stored may be values it removed: the caller
/// drops those slots.
pub(crate) fn dce_slots(f: &mut Func, slots: &mut impl Slots) {
    let mut live = vec![false; f.types.len()];
    dce_block(&mut f.body, &mut live, slots);
}

/// What [`dce_slots`] would tell `slots` of `f`, without removing
/// anything: the fields pass asks it of every function again whenever
/// more slots are live, and removing from a copy of each was most of
/// that pass's time (generated-3070).
pub(crate) fn needed_slots(f: &Func, slots: &mut impl Slots) {
    let mut live = vec![false; f.types.len()];
    needed_block(&f.body, None, &mut live, slots);
}

/// [`dce_block`] without the removal: marks what is needed in `b`, given
/// which of its yielded values are (`yielded`, all if `None`), and says
/// whether any instruction of it is.
fn needed_block(
    b: &Block,
    yielded: Option<&[bool]>,
    live: &mut [bool],
    slots: &mut impl Slots,
) -> bool {
    match (&b.term, yielded) {
        (Term::Yield(vs), Some(keep)) => {
            for (v, k) in vs.iter().zip(keep) {
                if *k {
                    mark(live, *v);
                }
            }
        }
        (t, _) => mark_term(t, live),
    }
    let mut any = false;
    for inst in b.insts.iter().rev() {
        let used = inst.results.iter().any(|r| live[r.index()]);
        if Op::is_removable(&inst.op) && !used {
            continue;
        }
        match &inst.op {
            Op::If { cond, then_, else_ } => {
                let keep: Vec<bool> = inst.results.iter().map(|r| live[r.index()]).collect();
                let then_kept = needed_block(then_, Some(&keep), live, slots);
                let else_kept = needed_block(else_, Some(&keep), live, slots);
                let idle = |b: &Block, kept: bool| !kept && matches!(b.term, Term::Yield(_));
                if !used && idle(then_, then_kept) && idle(else_, else_kept) {
                    continue;
                }
                mark(live, *cond);
            }
            op => mark_operands(op, live, slots),
        }
        any = true;
    }
    any
}

/// What dead-code removal asks of cells ([`dce_slots`]).
pub(crate) trait Slots {
    /// Whether slot `slot` of member `tag` is kept, so that what an
    /// `Alloc` puts there is needed.
    fn stored(&self, tag: u32, slot: usize) -> bool;
    /// A `Load` whose result is needed reads slot `slot` of member `tag`.
    fn read(&mut self, tag: u32, slot: u32);
}

/// Every slot is kept.
struct EverySlot;

impl Slots for EverySlot {
    fn stored(&self, _: u32, _: usize) -> bool {
        true
    }
    fn read(&mut self, _: u32, _: u32) {}
}

#[derive(Clone, Copy, Debug, PartialEq)]
enum K {
    F(f64),
    B(bool),
}

#[derive(Clone, Debug, PartialEq, Eq, Hash)]
enum Key {
    F(u64),
    B(bool),
    Bin(FBinKey, Val, Val),
    Un(FUnKey, Val),
    Cmp(CmpKey, Val, Val),
    Not(Val),
    /// Cells never change, so a cell's tag, zero mark and slots read
    /// twice are read once (a tape cell's fields were loaded once per
    /// closure that captured them).
    TagIs(Val, u32),
    IsZero(Val),
    Load(Val, u32, u32),
    /// A vector's length never changes, nor which indices it has.
    VecLen(Val),
    VecIndexOk(Val, Val),
    /// Nor does an element: a vector added to in place is one that
    /// nothing else reads but for its length (`crate::owned`). A loop of
    /// `vector-ref` that read an element twice kept it twice in its tape.
    VecLoad(Val, Val, u32, u32),
    IsCount(Val),
    /// A cell with the tag, zero mark and slots of one made before is that
    /// one: a reverse-mode forward sweep made each `cons` twice, as the
    /// primal value and as the one its record keeps.
    Alloc(u32, bool, Vec<Val>),
}

type FBinKey = u8;
type FUnKey = u8;
type CmpKey = u8;

fn bin_key(op: FBin) -> FBinKey {
    match op {
        FBin::Add => 0,
        FBin::PlusAdd => 5,
        FBin::Sub => 1,
        FBin::Mul => 2,
        FBin::Div => 3,
        FBin::Atan2 => 4,
    }
}

fn un_key(op: FUn) -> FUnKey {
    match op {
        FUn::Sqrt => 0,
        FUn::Exp => 1,
        FUn::Log => 2,
        FUn::Sin => 3,
        FUn::Cos => 4,
    }
}

fn cmp_key(c: Cmp) -> CmpKey {
    match c {
        Cmp::Eq => 0,
        Cmp::Lt => 1,
        Cmp::Gt => 2,
        Cmp::Le => 3,
        Cmp::Ge => 4,
    }
}

/// The forward pass: folding, identities and CSE, in one walk in program
/// order. Values are defined once and before their uses, so a value's
/// replacement is final by the time it is used.
struct Fwd {
    /// Values replaced by others (already resolved).
    subst: Vec<Option<Val>>,
    konst: Vec<Option<K>>,
    /// Known never to be `-0.0` (a NaN counts as not `-0`).
    not_neg_zero: Vec<bool>,
    /// Available expressions, innermost scope last.
    scopes: Vec<HashMap<Key, Val>>,
    /// Number of values, new ones included.
    next: usize,
    /// What is known of the cells pointers point to.
    cells: HashMap<Val, Cell>,
    /// The cells whose zero mark is tested.
    zero_tested: Vec<bool>,
    /// The types of the values made here.
    new_types: Vec<crate::Ty>,
    /// How many scopes were open where each value was defined: it is
    /// visible wherever at least that many of them still are.
    level: Vec<usize>,
    /// The tag test or zero test each such instruction's result is.
    key_of: Vec<Option<Key>>,
    /// What each open scope learnt of tests, innermost last (beside
    /// `scopes`).
    facts: Vec<Facts>,
    /// What a boolean `If` result tells of its condition: (result, the
    /// condition, its value) when one arm yields a constant, so the other
    /// value comes only from the other arm (`null?` of a union with a
    /// lazy zero: `if (tag 0) true (if (tag 1) false ..)`; where that is
    /// false, the tag is not 0).
    implies: HashMap<Val, Vec<(bool, Val, bool)>>,
    implications: bool,
    /// The length of a vector made here, where it is a value made before
    /// it (`vec_zero`, `vec_one_hot`, `vec_build`), or the vector whose
    /// length it has (`vec_plus`'s first operand: compiled code checks
    /// that both operands have one length before it adds them).
    lengths: HashMap<Val, Length>,
    /// The vectors `VecZero` made, by layout.
    zero_vectors: HashMap<Val, u32>,
    /// Lengths and counts: whole numbers, never NaN, so each equals
    /// itself (the length checks of `plus` on sensitivities made of one
    /// vector compare a length with itself).
    counts: HashSet<Val>,
}

/// What is known of a vector's length.
#[derive(Clone, Copy)]
enum Length {
    Is(Val),
    Of(Val),
}

/// What processing the instructions of a block ended with.
enum Flow {
    Continue,
    /// A constant condition took an arm that ends the block.
    Ends(Term),
}

impl Fwd {
    fn r(&self, v: Val) -> Val {
        self.subst[v.index()].unwrap_or(v)
    }

    fn f(&self, v: Val) -> Option<f64> {
        match self.konst[v.index()] {
            Some(K::F(x)) => Some(x),
            _ => None,
        }
    }

    fn b(&self, v: Val) -> Option<bool> {
        match self.konst[v.index()] {
            Some(K::B(x)) => Some(x),
            _ => None,
        }
    }

    fn nnz(&self, v: Val) -> bool {
        self.not_neg_zero[v.index()]
    }

    /// A new `F64` value.
    fn fresh(&mut self) -> Val {
        self.fresh_of(crate::Ty::F64)
    }

    fn fresh_of(&mut self, ty: crate::Ty) -> Val {
        let v = Val::new(self.next);
        self.next += 1;
        self.new_types.push(ty);
        self.subst.push(None);
        self.konst.push(None);
        self.not_neg_zero.push(false);
        self.level.push(self.scopes.len());
        self.key_of.push(None);
        self.zero_tested.push(false);
        v
    }

    fn replace(&mut self, v: Val, by: Val) {
        self.subst[v.index()] = Some(by);
    }

    fn lookup(&self, k: &Key) -> Option<Val> {
        self.scopes.iter().rev().find_map(|s| s.get(k).copied())
    }

    /// Records an available expression, or replaces `v` by an earlier
    /// equal one (returning false: drop the instruction).
    fn available(&mut self, k: Key, v: Val) -> bool {
        if let Some(w) = self.lookup(&k) {
            self.replace(v, w);
            return false;
        }
        self.scopes.last_mut().expect("scope").insert(k, v);
        true
    }

    /// The slots of an `Alloc` (`AllocZero` if `zero`) of `v`, or `None`
    /// when an equal cell is available and `v` is now that one.
    fn alloc_once(
        &mut self,
        v: Option<Val>,
        tag: u32,
        fields: Vec<Val>,
        zero: bool,
        out: &mut Vec<Inst>,
    ) -> Option<Vec<Val>> {
        let fields = self.alloc(v, tag, fields, zero, out);
        let v = v.expect("alloc result");
        self.available(Key::Alloc(tag, zero, fields.clone()), v)
            .then_some(fields)
    }

    fn block(&mut self, b: Block) -> Block {
        let mut out = Vec::with_capacity(b.insts.len());
        match self.insts(b.insts, &mut out) {
            Flow::Continue => Block {
                insts: out,
                term: self.term(b.term),
            },
            Flow::Ends(t) => Block {
                insts: out,
                term: t,
            },
        }
    }

    fn insts(&mut self, insts: Vec<Inst>, out: &mut Vec<Inst>) -> Flow {
        for inst in insts {
            if let Flow::Ends(t) = self.inst(inst, out) {
                return Flow::Ends(t);
            }
        }
        Flow::Continue
    }

    fn term(&self, t: Term) -> Term {
        let rs = |vs: Vec<Val>| vs.into_iter().map(|v| self.r(v)).collect();
        match t {
            Term::Return(vs) => Term::Return(rs(vs)),
            Term::Yield(vs) => Term::Yield(rs(vs)),
            Term::TailCall(g, vs) => Term::TailCall(g, rs(vs)),
            Term::Error(s) => Term::Error(s),
            Term::ErrorWith(parts) => Term::ErrorWith(
                parts
                    .into_iter()
                    .map(|p| match p {
                        ErrPart::Real(v) => ErrPart::Real(self.r(v)),
                        ErrPart::Bool(v) => ErrPart::Bool(self.r(v)),
                        p => p,
                    })
                    .collect(),
            ),
        }
    }

    fn set_f(&mut self, v: Val, x: f64) {
        self.konst[v.index()] = Some(K::F(x));
        self.not_neg_zero[v.index()] = !(x == 0.0 && x.is_sign_negative());
    }

    fn inst(&mut self, mut inst: Inst, out: &mut Vec<Inst>) -> Flow {
        let one = inst.results.first().copied();
        for r in &inst.results {
            self.level[r.index()] = self.scopes.len();
        }
        match inst.op {
            Op::F64Const(x) => {
                let v = one.expect("const result");
                self.set_f(v, x);
                if self.available(Key::F(x.to_bits()), v) {
                    out.push(inst);
                }
            }
            Op::BoolConst(x) => {
                let v = one.expect("const result");
                self.konst[v.index()] = Some(K::B(x));
                if self.available(Key::B(x), v) {
                    out.push(inst);
                }
            }
            Op::FBin(op, a, b) => {
                let v = one.expect("fbin result");
                let (a, b) = (self.r(a), self.r(b));
                if let (Some(x), Some(y), false) = (self.f(a), self.f(b), op == FBin::Atan2) {
                    inst.op = Op::F64Const(op.scalar().apply(x, y));
                    return self.inst(inst, out);
                }
                let is = |w: Val, c: f64| self.f(w).is_some_and(|x| x.to_bits() == c.to_bits());
                let identity = match op {
                    FBin::Mul if is(b, 1.0) => Some(a),
                    FBin::Mul if is(a, 1.0) => Some(b),
                    FBin::Div if is(b, 1.0) => Some(a),
                    FBin::Sub if is(b, 0.0) => Some(a),
                    FBin::Add if is(b, -0.0) => Some(a),
                    FBin::Add if is(a, -0.0) => Some(b),
                    FBin::Add if is(b, 0.0) && self.nnz(a) => Some(a),
                    FBin::Add if is(a, 0.0) && self.nnz(b) => Some(b),
                    _ => None,
                };
                if let Some(w) = identity {
                    self.replace(v, w);
                    return Flow::Continue;
                }
                // x / 2^k = x * 2^-k exactly (both are x 2^-k rounded once)
                // when 2^-k is a normal number; a multiplication is much
                // faster than a division.
                if let (FBin::Div, Some(c)) = (op, self.f(b)) {
                    let r = 1.0 / c;
                    let pow2 = |x: f64| x.is_normal() && x.to_bits() & ((1u64 << 52) - 1) == 0;
                    if pow2(c) && pow2(r) {
                        let k = self.fresh();
                        let flow = self.inst(
                            Inst {
                                results: vec![k],
                                op: Op::F64Const(r),
                            },
                            out,
                        );
                        debug_assert!(matches!(flow, Flow::Continue));
                        inst.op = Op::FBin(FBin::Mul, a, self.r(k));
                        return self.inst(inst, out);
                    }
                }
                // -0 only from -0 + -0; from -0 - +0; sqrt(-0) = -0.
                self.not_neg_zero[v.index()] = match op {
                    FBin::Add => self.nnz(a) || self.nnz(b),
                    FBin::Sub => self.nnz(a),
                    FBin::Mul => a == b,
                    _ => false,
                };
                let (ka, kb) = match op {
                    FBin::Add | FBin::Mul if b < a => (b, a),
                    _ => (a, b),
                };
                inst.op = Op::FBin(op, a, b);
                if self.available(Key::Bin(bin_key(op), ka, kb), v) {
                    out.push(inst);
                }
            }
            Op::FUn(op, a) => {
                let v = one.expect("fun result");
                let a = self.r(a);
                if let (Some(x), FUn::Sqrt) = (self.f(a), op) {
                    inst.op = Op::F64Const(FUn::Sqrt.apply(x));
                    return self.inst(inst, out);
                }
                self.not_neg_zero[v.index()] = match op {
                    FUn::Sqrt => self.nnz(a),
                    FUn::Exp => true,
                    _ => false,
                };
                inst.op = Op::FUn(op, a);
                if self.available(Key::Un(un_key(op), a), v) {
                    out.push(inst);
                }
            }
            Op::FCmp(c, a, b) => {
                let v = one.expect("fcmp result");
                let (a, b) = (self.r(a), self.r(b));
                if let (Some(x), Some(y)) = (self.f(a), self.f(b)) {
                    let z = match c {
                        Cmp::Eq => x == y,
                        Cmp::Lt => x < y,
                        Cmp::Gt => x > y,
                        Cmp::Le => x <= y,
                        Cmp::Ge => x >= y,
                    };
                    inst.op = Op::BoolConst(z);
                    return self.inst(inst, out);
                }
                if a == b && self.counts.contains(&a) {
                    inst.op = Op::BoolConst(matches!(c, Cmp::Eq | Cmp::Le | Cmp::Ge));
                    return self.inst(inst, out);
                }
                inst.op = Op::FCmp(c, a, b);
                if self.available(Key::Cmp(cmp_key(c), a, b), v) {
                    out.push(inst);
                }
            }
            Op::Not(a) => {
                let v = one.expect("not result");
                let a = self.r(a);
                if let Some(x) = self.b(a) {
                    inst.op = Op::BoolConst(!x);
                    return self.inst(inst, out);
                }
                inst.op = Op::Not(a);
                if self.available(Key::Not(a), v) {
                    out.push(inst);
                }
            }
            // Union cells never change and nothing tells two equal ones
            // apart (memo tables map equal cells alike), so an equal one
            // made before is this one.
            Op::Alloc(tag, fields) => {
                if let Some(fields) = self.alloc_once(one, tag, fields, false, out) {
                    inst.op = Op::Alloc(tag, fields);
                    out.push(inst);
                }
            }
            Op::AllocZero(tag, fields) => {
                if let Some(fields) = self.alloc_once(one, tag, fields, true, out) {
                    inst.op = Op::AllocZero(tag, fields);
                    out.push(inst);
                }
            }
            Op::TagIs(p, tag) => {
                let v = one.expect("tag_is result");
                let p = self.r(p);
                if let Some(t) = self.known_tag(p) {
                    inst.op = Op::BoolConst(t == tag);
                    return self.inst(inst, out);
                }
                inst.op = Op::TagIs(p, tag);
                if self.available(Key::TagIs(p, tag), v) {
                    self.key_of[v.index()] = Some(Key::TagIs(p, tag));
                    out.push(inst);
                }
            }
            Op::IsZero(p) => {
                let v = one.expect("is_zero result");
                let p = self.r(p);
                if let Some(z) = self.cells.get(&p).and_then(|c| c.zero) {
                    inst.op = Op::BoolConst(z);
                    return self.inst(inst, out);
                }
                inst.op = Op::IsZero(p);
                if self.available(Key::IsZero(p), v) {
                    self.key_of[v.index()] = Some(Key::IsZero(p));
                    self.zero_tested[p.index()] = true;
                    out.push(inst);
                }
            }
            Op::VecLen(a) => {
                let v = one.expect("vec_len result");
                let a = self.r(a);
                match self.lengths.get(&a) {
                    Some(Length::Is(n)) => {
                        self.replace(v, *n);
                        return Flow::Continue;
                    }
                    Some(Length::Of(b)) => {
                        inst.op = Op::VecLen(*b);
                        return self.inst(inst, out);
                    }
                    None => {}
                }
                inst.op = Op::VecLen(a);
                self.counts.insert(v);
                if self.available(Key::VecLen(a), v) {
                    out.push(inst);
                }
            }
            Op::VecIndexOk(a, i) => {
                let v = one.expect("vec_index_ok result");
                let (a, i) = (self.r(a), self.r(i));
                inst.op = Op::VecIndexOk(a, i);
                if self.available(Key::VecIndexOk(a, i), v) {
                    out.push(inst);
                }
            }
            Op::IsCount(a) => {
                let v = one.expect("is_count result");
                let a = self.r(a);
                inst.op = Op::IsCount(a);
                if self.available(Key::IsCount(a), v) {
                    out.push(inst);
                }
            }
            Op::VecLoad(a, i, layout, slot) => {
                let v = one.expect("vec_load result");
                let (a, i) = (self.r(a), self.r(i));
                inst.op = Op::VecLoad(a, i, layout, slot);
                if self.available(Key::VecLoad(a, i, layout, slot), v) {
                    out.push(inst);
                }
            }
            // Adding a zero gives the other operand itself, as the runtime
            // does (`runtime::gc::vector_sum`: no element is added to, so
            // a -0 stays -0); the lengths were checked before.
            Op::VecPlus(layout, a, b)
                if [a, b]
                    .iter()
                    .any(|x| self.zero_vectors.get(&self.r(*x)) == Some(&layout)) =>
            {
                let v = one.expect("vec_plus result");
                let (a, b) = (self.r(a), self.r(b));
                let other = if self.zero_vectors.get(&b) == Some(&layout) {
                    a
                } else {
                    b
                };
                self.replace(v, other);
                return Flow::Continue;
            }
            // Other vector operations: kept as they are (a vector's
            // identity is not worth a key), their lengths noted.
            Op::MemoGet(..)
            | Op::MemoPut(..)
            | Op::Save(_)
            | Op::Restore(_)
            | Op::Count(_)
            | Op::VecOf(..)
            | Op::VecBuild { .. }
            | Op::VecZero(..)
            | Op::VecOneHot { .. }
            | Op::VecZeroOf { .. }
            | Op::VecOneHotOf { .. }
            | Op::VecPlus(..)
            | Op::StackPush { .. } => {
                inst.op.for_each_operand_mut(|v| *v = self.r(*v));
                let length = match &inst.op {
                    Op::VecBuild { len, .. } | Op::VecZero(_, len) | Op::VecOneHot { len, .. } => {
                        Some(Length::Is(*len))
                    }
                    Op::VecPlus(_, a, _) => {
                        Some(self.lengths.get(a).copied().unwrap_or(Length::Of(*a)))
                    }
                    Op::VecZeroOf { of, .. } | Op::VecOneHotOf { of, .. } => {
                        Some(self.lengths.get(of).copied().unwrap_or(Length::Of(*of)))
                    }
                    _ => None,
                };
                if let (Some(l), Some(v)) = (length, one) {
                    self.lengths.insert(v, l);
                }
                if let (Op::VecZero(layout, _), Some(v)) = (&inst.op, one) {
                    self.zero_vectors.insert(v, *layout);
                }
                out.push(inst);
            }
            Op::Load(p, tag, n) => {
                let v = one.expect("load result");
                let p = self.r(p);
                let cell = self.cells.get(&p);
                let made = cell.and_then(|c| c.fields.as_ref().filter(|_| c.tag == Some(tag)));
                if let Some(&w) = made.and_then(|f| f.get(n as usize)) {
                    self.replace(v, w);
                    return Flow::Continue;
                }
                inst.op = Op::Load(p, tag, n);
                if self.available(Key::Load(p, tag, n), v) {
                    out.push(inst);
                }
            }
            Op::Call(g, args) => {
                inst.op = Op::Call(g, args.into_iter().map(|v| self.r(v)).collect());
                out.push(inst);
            }
            Op::CallAt(g, args, s) => {
                inst.op = Op::CallAt(g, args.into_iter().map(|v| self.r(v)).collect(), s);
                out.push(inst);
            }
            Op::PrintReal(a) => {
                inst.op = Op::PrintReal(self.r(a));
                out.push(inst);
            }
            Op::PrintBool(a) => {
                inst.op = Op::PrintBool(self.r(a));
                out.push(inst);
            }
            Op::PrintStr(_) | Op::Capture(_) | Op::ReadReal(_) => out.push(inst),
            Op::If { cond, then_, else_ } => {
                let cond = self.r(cond);
                if let Some(c) = self.b(cond) {
                    // Only the arm taken runs: its instructions join this
                    // block (its values stay visible to what follows).
                    let arm = if c { then_ } else { else_ };
                    if let Flow::Ends(t) = self.insts(arm.insts, out) {
                        return Flow::Ends(t);
                    }
                    return match self.term(arm.term) {
                        Term::Yield(vs) => {
                            for (r, v) in inst.results.iter().zip(vs) {
                                self.replace(*r, v);
                                self.not_neg_zero[r.index()] = self.nnz(v);
                                self.konst[r.index()] = self.konst[v.index()];
                            }
                            Flow::Continue
                        }
                        t => Flow::Ends(t),
                    };
                }
                // Inside an arm, the condition is known.
                let known = self.konst[cond.index()];
                let test = self.key_of[cond.index()].clone();
                let mut learnt = Vec::new();
                let mut arm_yields = Vec::new();
                let mut arms = Vec::new();
                let implied: Vec<(bool, Val, bool)> =
                    self.implies.get(&cond).cloned().unwrap_or_default();
                for (arm, b) in [(then_, true), (else_, false)] {
                    self.open_scope();
                    self.konst[cond.index()] = Some(K::B(b));
                    let mut saved = Vec::new();
                    for &(rb, c, cb) in &implied {
                        if rb == b && self.konst[c.index()].is_none() {
                            saved.push(c);
                            self.konst[c.index()] = Some(K::B(cb));
                        }
                    }
                    if let (Some(Key::TagIs(p, t)), true, Some(f)) =
                        (&test, b, self.facts.last_mut())
                    {
                        f.tags.insert(*p, *t);
                    }
                    let arm = self.block(arm);
                    for c in saved {
                        self.konst[c.index()] = None;
                    }
                    arm_yields.push(self.yielded(&arm, inst.results.len()));
                    let mut facts = self.close_scope();
                    facts.extend(test.clone().map(|k| (k, b)));
                    learnt.push(yields(&arm).is_some().then_some(facts));
                    arms.push(arm);
                }
                self.konst[cond.index()] = known;
                let else_ = arms.pop().expect("else arm");
                let then_ = arms.pop().expect("then arm");
                let else_cells = arm_yields.pop().expect("else arm");
                let then_cells = arm_yields.pop().expect("then arm");
                let mut same_as_cond = Vec::new();
                for (i, r) in inst.results.iter().enumerate() {
                    let (a, b) = (then_cells[i].clone(), else_cells[i].clone());
                    let (ka, kb) = (a.as_ref().map(|x| x.1), b.as_ref().map(|x| x.1));
                    let zeros = (a.as_ref().map(|x| x.0.zero), b.as_ref().map(|x| x.0.zero));
                    let cell = Cell::join(a.map(|x| x.0), b.map(|x| x.0));
                    if let Some(c) = cell.filter(|c| *c != Cell::default()) {
                        self.cells.insert(*r, c);
                    }
                    // A zero from the arm the condition takes and a
                    // non-zero from the other (`plus` taking its other
                    // operand when one is a zero): the result's zero test
                    // is the condition, and the next `plus` on it tests
                    // nothing new.
                    if zeros == (Some(Some(true)), Some(Some(false))) {
                        self.scopes
                            .last_mut()
                            .expect("scope")
                            .insert(Key::IsZero(*r), cond);
                        self.zero_tested[r.index()] = true;
                    }
                    // A result known alike on every path that goes on is
                    // that constant; one that is the condition is it.
                    match (ka, kb) {
                        (Some(Some(x)), None) | (None, Some(Some(x))) => {
                            self.konst[r.index()] = Some(x)
                        }
                        (Some(Some(x)), Some(Some(y))) if x == y => self.konst[r.index()] = Some(x),
                        (Some(Some(K::B(true))), Some(Some(K::B(false)))) => same_as_cond.push(*r),
                        (Some(Some(K::B(t))), Some(_)) if self.implications => {
                            self.implies.entry(*r).or_default().push((!t, cond, false))
                        }
                        (Some(_), Some(Some(K::B(e)))) if self.implications => {
                            self.implies.entry(*r).or_default().push((!e, cond, true))
                        }
                        _ => {}
                    }
                }
                let (ty, ey) = (yields(&then_), yields(&else_));
                for (i, r) in inst.results.iter().enumerate() {
                    let (tv, ev) = (ty.map(|y| y[i]), ey.map(|y| y[i]));
                    match (tv, ev) {
                        (Some(t), Some(e)) if t == e => {
                            // Defined before the `If`: visible after it.
                            self.replace(*r, t);
                            self.konst[r.index()] = self.konst[t.index()];
                            self.not_neg_zero[r.index()] = self.nnz(t);
                        }
                        _ => {
                            self.not_neg_zero[r.index()] =
                                tv.is_none_or(|t| self.nnz(t)) && ev.is_none_or(|e| self.nnz(e));
                        }
                    }
                }
                for r in same_as_cond {
                    self.replace(r, cond);
                }
                inst.op = Op::If { cond, then_, else_ };
                out.push(inst);
                // What every path that goes on learnt is known from here.
                let depth = self.scopes.len();
                let mut learnt: Vec<Option<Vec<(Key, bool)>>> = learnt
                    .into_iter()
                    .map(|l| {
                        l.map(|mut l| {
                            l.retain(|(k, _)| self.visible(k, depth));
                            l
                        })
                    })
                    .collect();
                let common: Vec<(Key, bool)> = match learnt.as_mut_slice() {
                    [Some(a), Some(b)] => {
                        let b: HashSet<&(Key, bool)> = b.iter().collect();
                        a.iter().filter(|f| b.contains(f)).cloned().collect()
                    }
                    [Some(a), None] | [None, Some(a)] => std::mem::take(a),
                    _ => Vec::new(),
                };
                for (key, b) in common {
                    self.assume(key, b, out);
                }
            }
        }
        Flow::Continue
    }
}

fn yields(b: &Block) -> Option<&[Val]> {
    match &b.term {
        Term::Yield(vs) => Some(vs),
        _ => None,
    }
}

/// Marks the operands of `op` (not an `If`) that are used: an
/// allocation's only at the slots something reads, which `slots` says,
/// and a load's cell, telling `slots` of the read.
fn mark_operands(op: &Op, live: &mut [bool], slots: &mut impl Slots) {
    match op {
        Op::Alloc(tag, args) | Op::AllocZero(tag, args) => {
            for (s, v) in args.iter().enumerate() {
                if slots.stored(*tag, s) {
                    mark(live, *v);
                }
            }
        }
        Op::Load(cell, tag, slot) => {
            slots.read(*tag, *slot);
            mark(live, *cell);
        }
        op => op.for_each_operand(|v| mark(live, v)),
    }
}

fn mark(live: &mut [bool], v: Val) {
    live[v.index()] = true;
}

fn mark_term(t: &Term, live: &mut [bool]) {
    t.for_each_operand(|v| mark(live, v));
}

/// Backward pass. Values are defined once and before their uses, so one
/// walk in reverse program order sees every use of a value before its
/// definition.
fn dce_block(b: &mut Block, live: &mut [bool], slots: &mut impl Slots) {
    mark_term(&b.term, live);
    let insts = std::mem::take(&mut b.insts);
    let mut kept = Vec::with_capacity(insts.len());
    for mut inst in insts.into_iter().rev() {
        let used = inst.results.iter().any(|r| live[r.index()]);
        if Op::is_removable(&inst.op) && !used {
            continue;
        }
        match &mut inst.op {
            Op::If { cond, then_, else_ } => {
                // Drop the results nobody uses, and what only they needed.
                let keep: Vec<bool> = inst.results.iter().map(|r| live[r.index()]).collect();
                if keep.iter().any(|k| !k) {
                    let mut k = keep.iter();
                    inst.results.retain(|_| *k.next().expect("keep"));
                    for arm in [&mut *then_, &mut *else_] {
                        if let Term::Yield(vs) = &mut arm.term {
                            let mut k = keep.iter();
                            vs.retain(|_| *k.next().expect("keep"));
                        }
                    }
                }
                dce_block(then_, live, slots);
                dce_block(else_, live, slots);
                let idle = |b: &Block| b.insts.is_empty() && matches!(b.term, Term::Yield(_));
                if inst.results.is_empty() && idle(then_) && idle(else_) {
                    continue;
                }
                mark(live, *cond);
            }
            op => mark_operands(op, live, slots),
        }
        kept.push(inst);
    }
    kept.reverse();
    b.insts = kept;
}

#[cfg(test)]
mod tests;
