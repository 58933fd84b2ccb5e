//! Symbolic values: the abstract values lowering holds, whose unknown
//! leaves (`Av::Leaf(Sym(n), kind)`, [`Sym`]: flow's analysis has none)
//! name FIR value `n`, and the mode lowering
//! runs flow's shape operations in ([`Symbolic`]). An operation on
//! symbolic values says where each scalar of its result comes from and
//! costs no code, but for a map over a union, which needs a walk over
//! cells at run time: the mode records it as a pending map standing for
//! its result (a number beyond the function's values), and lowering then
//! emits the call and renumbers the result ([`Lowerer::resolve`]).

use crate::lowerer::*;
use base::EntityRef;
use fir::{Op, Ty, Val};
use flow::{Av, AvId, LeafKind, Mode, Ops, UnionId, UnionMap, UnionOp};
use rustc_hash::FxHashMap as HashMap;

/// Lowering's leaf of abstract values ([`flow::Leaf`]): the number of
/// the FIR value holding the unknown real or boolean, or the pointer to
/// the union cell (or of a pending map's result, see [`Symbolic`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub(crate) struct Sym(pub(crate) u32);

/// Brackets a symbolic leaf in the text of an error message:
/// `\u{1}R12\u{1}` is the real held in FIR value 12, `\u{1}P12\u{1}`
/// the value of abstract value 12, printed (`T`: as the rest of a list)
/// ([`Lowerer::error_term`] turns them into the run-time text).
pub(crate) const SYM_MARK: char = '\u{1}';

impl flow::Leaf for Sym {
    fn write_message(self, kind: LeafKind, text: &mut String) {
        let k = if kind == LeafKind::Real { 'R' } else { 'B' };
        text.push_str(&format!("{SYM_MARK}{k}{}{SYM_MARK}", self.0));
    }

    fn write_printed(v: AvId, tags: &[ir::Tag], rest: bool, text: &mut String) -> bool {
        let k = if rest { 'T' } else { 'P' };
        let tags: String = tags
            .iter()
            .map(|t| format!(":{}", tag_number(*t)))
            .collect();
        text.push_str(&format!("{SYM_MARK}{k}{}{tags}{SYM_MARK}", v.index()));
        true
    }
}

/// The number of tag `t` in the marks of [`SYM_MARK`] ([`tag_of_number`]).
fn tag_number(t: ir::Tag) -> u8 {
    match t {
        ir::Tag::Perturb => 0,
        ir::Tag::Forward => 1,
        ir::Tag::Sensitize => 2,
        ir::Tag::Reverse => 3,
    }
}

/// The tag of number `n` ([`tag_number`]).
pub(crate) fn tag_of_number(n: &str) -> Option<ir::Tag> {
    [
        ir::Tag::Perturb,
        ir::Tag::Forward,
        ir::Tag::Sensitize,
        ir::Tag::Reverse,
    ]
    .into_iter()
    .find(|t| n == tag_number(*t).to_string())
}

/// Lowering's mode of the shape operations: the maps of unions met since
/// the last [`Lowerer::resolve`].
pub(crate) struct Symbolic {
    pending: Vec<PendingMap>,
    /// The number standing for the next pending map's result: above any
    /// FIR value of a function.
    next_virtual: u32,
}

impl Default for Symbolic {
    fn default() -> Symbolic {
        Symbolic {
            pending: Vec::new(),
            next_virtual: 1 << 30,
        }
    }
}

/// A map of a union that lowering must call at run time: the operation,
/// the operands' scalar numbers, and the number standing for the result.
pub(crate) struct PendingMap {
    op: UnionOp,
    args: Vec<u32>,
    unions: (UnionId, Option<UnionId>),
    result: u32,
    result_union: UnionId,
}

impl Symbolic {
    /// The maps of unions met since the last call.
    pub(crate) fn take_pending(&mut self) -> Vec<PendingMap> {
        std::mem::take(&mut self.pending)
    }

    /// Puts back maps [`Symbolic::take_pending`] took, after code for
    /// another function was made (which resolved its own).
    pub(crate) fn restore_pending(&mut self, pending: Vec<PendingMap>) {
        debug_assert!(self.pending.is_empty(), "maps of unions left unresolved");
        self.pending = pending;
    }
}

impl Mode for Symbolic {
    type Leaf = Sym;
    const SPLITS: bool = false;

    /// A cell of the result union, made later by a call (a cell given
    /// back as the union it came from is converted too: its tags differ).
    fn map_union(ops: &mut Ops<Self>, map: UnionMap, v: AvId, w: Option<AvId>) -> AvId {
        let mut args = Vec::new();
        for x in [Some(v), w].into_iter().flatten() {
            if let Av::Leaf(Sym(n), _) = ops.dom.get(x) {
                args.push(*n);
            }
        }
        let result = ops.mode.next_virtual;
        ops.mode.next_virtual += 1;
        ops.mode.pending.push(PendingMap {
            op: map.op,
            args,
            unions: map.operands,
            result,
            result_union: map.result,
        });
        let r = ops
            .dom
            .intern(Av::Leaf(Sym(result), LeafKind::Union(map.result)));
        match map.given_back {
            Some((_, Some(tag))) => ops.dom.wrap(tag, r),
            _ => r,
        }
    }
}

impl Lowerer<'_> {
    /// The symbolic value of FIR value `v`.
    pub(crate) fn sym(&mut self, v: Val, k: LeafKind) -> AvId {
        self.ops.dom.intern(Av::Leaf(Sym(v.number()), k))
    }

    /// Replaces the unknown leaves of `av` with fresh parameters.
    pub(crate) fn symbolize(
        &mut self,
        fb: &mut Fb,
        av: AvId,
        vals: &mut dyn Iterator<Item = Val>,
    ) -> AvId {
        let dom = &mut self.ops.dom;
        // A known value has no leaves to replace; skipping it keeps the
        // walk to the DAG's unknown part (environments share closures).
        if dom.is_known(av) {
            return av;
        }
        match dom.get(av).clone() {
            Av::Real(None) => {
                let v = vals.next().unwrap_or_else(|| fb.new_val(Ty::F64));
                dom.intern(Av::Leaf(Sym(v.number()), LeafKind::Real))
            }
            Av::Bool(None) => {
                let v = vals.next().unwrap_or_else(|| fb.new_val(Ty::Bool));
                dom.intern(Av::Leaf(Sym(v.number()), LeafKind::Bool))
            }
            Av::Union(u) => {
                let u = dom.find(u);
                let v = vals.next().unwrap_or_else(|| fb.new_val(Ty::Ptr));
                dom.intern(Av::Leaf(Sym(v.number()), LeafKind::Union(u)))
            }
            Av::Vector(e, n) => {
                let v = vals.next().unwrap_or_else(|| fb.new_val(Ty::Ptr));
                dom.intern(Av::Leaf(Sym(v.number()), LeafKind::Vector(e, n)))
            }
            Av::Pair(a, b) => {
                let a = self.symbolize(fb, a, vals);
                let b = self.symbolize(fb, b, vals);
                self.ops.dom.pair(a, b)
            }
            Av::Bundle(a, b) => {
                let a = self.symbolize(fb, a, vals);
                let b = self.symbolize(fb, b, vals);
                self.ops.dom.bundle(a, b)
            }
            Av::Wrap(t, x) => {
                let x = self.symbolize(fb, x, vals);
                self.ops.dom.wrap(t, x)
            }
            Av::Closure(l, env) => {
                let env = env.iter().map(|x| self.symbolize(fb, *x, vals)).collect();
                self.ops.dom.closure(l, env)
            }
            _ => av,
        }
    }

    /// Emits the calls for the maps of unions that an operation on
    /// symbolic values met ([`flow::Ops::map_union`]), and puts their
    /// results in its value.
    pub(crate) fn resolve(&mut self, fb: &mut Fb, r: Result<AvId, String>) -> Result<AvId, String> {
        let pending = self.ops.mode.take_pending();
        if pending.is_empty() {
            return r;
        }
        let mut subst: HashMap<u32, u32> = HashMap::default();
        for p in pending {
            let args: Vec<Val> = p
                .args
                .iter()
                .map(|a| Val::from_number(subst.get(a).copied().unwrap_or(*a)))
                .collect();
            let what = UnionFn::Map(p.op, p.unions.0, p.unions.1, p.result_union);
            let v = match self.known_map(fb, what, &args) {
                Some(v) => v,
                None => {
                    let (f, _) = self.union_fn(what);
                    let v = fb.emit1(Op::Call(f, args.clone()), Ty::Ptr);
                    self.record_map(fb, what, &args, v);
                    v
                }
            };
            subst.insert(p.result, v.number());
        }
        r.map(|av| self.substitute(av, &subst, &mut HashMap::default()))
    }

    /// `v` with its symbolic scalars renumbered. `v` is a DAG (closures
    /// share environments): each node is rebuilt once (`memo`), and only
    /// where a leaf below it changed.
    fn substitute(
        &mut self,
        v: AvId,
        subst: &HashMap<u32, u32>,
        memo: &mut HashMap<AvId, AvId>,
    ) -> AvId {
        if self.ops.dom.is_known(v) {
            return v;
        }
        if let Some(r) = memo.get(&v) {
            return *r;
        }
        let r = match self.ops.dom.get(v).clone() {
            Av::Leaf(Sym(n), k) => match subst.get(&n) {
                Some(m) => self.ops.dom.intern(Av::Leaf(Sym(*m), k)),
                None => v,
            },
            node @ (Av::Pair(a, b) | Av::Bundle(a, b)) => {
                let x = self.substitute(a, subst, memo);
                let y = self.substitute(b, subst, memo);
                match node {
                    _ if (x, y) == (a, b) => v,
                    Av::Pair(..) => self.ops.dom.pair(x, y),
                    _ => self.ops.dom.bundle(x, y),
                }
            }
            Av::Wrap(t, x) => {
                let y = self.substitute(x, subst, memo);
                if y == x {
                    v
                } else {
                    self.ops.dom.wrap(t, y)
                }
            }
            Av::Closure(l, env) => {
                let new: Vec<AvId> = env
                    .iter()
                    .map(|x| self.substitute(*x, subst, memo))
                    .collect();
                if new[..] == env[..] {
                    v
                } else {
                    self.ops.dom.closure(l, new)
                }
            }
            _ => v,
        };
        memo.insert(v, r);
        r
    }
}
