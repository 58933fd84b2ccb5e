//! The verifier: executes the invariants documented at the top of the
//! crate, so that a lowering or a pass that breaks one is caught where it
//! happens, with the function and the place named, instead of surfacing
//! as an internal error in code generation or as wrong machine code.
//!
//! Checked: parameters are values `0..params.len()` and every value has a
//! type; every other value is defined once, before its uses, and used only
//! where it is visible (the rest of its block and the blocks nested in
//! it); every operand has the type its operation needs and every result the
//! type its operation gives; calls and tail calls match their callee's
//! parameters and results (a tail call only to a function with the
//! caller's return types); `Yield` ends exactly the arms of an `If`, with
//! the `If`'s result types, and never a function body; `Return` gives the
//! function's return types; string and function ids are in range; `main`
//! takes and returns nothing.
//!
//! Vectors: every layout of [`Module::vectors`] has its pointers first
//! and fewer than `base::cell_layout::VECTOR_MAX_STRIDE` slots; every
//! layout a vector operation names exists; a `VecOf` gives its number of
//! elements times the layout's slots, of their types; a `VecBuild`'s
//! callee takes the arguments and then the index (`F64`) and returns one
//! element's slots; a `VecLoad` names a slot of its layout and gives its
//! type; a `VecZero`'s, `VecOneHot`'s or `VecPlus`'s layout is all
//! `F64` (a `VecPlus`'s may instead be one `Ptr`: rows), and a one-hot
//! gives one value per slot; a `VecZeroOf`'s and `VecOneHotOf`'s layout
//! is one `Ptr`, and their rows' all `F64`; a `StackPush`'s layout is
//! all `F64`, and it pushes one value per slot. That a vector has
//! the layout an operation names is not checked (as a `Load`'s member).
//!
//! Cells: every layout of [`Module::cells`] has its pointers first; every
//! tag an operation names has a layout; an `Alloc` (or `AllocZero`) gives
//! one value per slot of its tag's layout, of the slot's type; a `Load`
//! names a slot of its tag's layout and gives one result, of that slot's
//! type.
//!
//! Which member a cell holds is a run-time fact, and lowering leaves it
//! implicit where a dispatch needs no test (the last member of a union,
//! once the others' tests failed, is loaded untested), so that a `Load`
//! reads the member its cell holds cannot be checked in general: it would
//! take the set of tags each pointer may have, a whole-module analysis as
//! `passes::tags` makes. What is checked is what the function itself says
//! of the cell. The members a cell may hold at a point are those its
//! definition allows (an `Alloc`'s tag; for an `If`'s result, the members
//! its arms that run yield; for any other value every member), narrowed by
//! the tag tests known there: inside the arm of an `If` on a `TagIs` (or on
//! its `Not`), the outcome that arm takes, and after such an `If` whose
//! other arm diverges, the outcome of the arm that yields. A `Load` of a
//! member outside that set is an error. The code at a point never runs,
//! and nothing there is checked, when it is in an arm an `If` on a
//! constant never takes, or when the tests known there leave some cell no
//! member at all: a contradiction, such as the arm of a test for a lazy
//! zero on a cell made as one of the union's other members, which inlining
//! leaves (tests/corpus/horner-all-modes.vlad after `inline-bottom-up`)
//! and `tags` then decides. An arm that never runs yields nothing to its
//! `If`'s results.

use crate::{print, Block, ErrPart, Func, FuncId, Inst, Module, Op, Term, Ty, Val};
use base::EntityRef;
use members::Members;
use std::fmt;

mod members;

/// A broken invariant: the function, where in it, and what.
#[derive(Clone, Debug, PartialEq)]
pub struct VerifyError {
    pub func: String,
    /// The path to the place: instruction indices, `then`/`else` arms.
    pub at: String,
    pub what: String,
}

impl fmt::Display for VerifyError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "function `{}`, {}: {}", self.func, self.at, self.what)
    }
}

impl std::error::Error for VerifyError {}

/// Checks every function of `m`; the first broken invariant is the error.
pub fn verify(m: &Module) -> Result<(), VerifyError> {
    if let Some(main) = m.main {
        let Some(f) = m.funcs.get(main.index()) else {
            return Err(VerifyError {
                func: "<module>".into(),
                at: "main".into(),
                what: format!("main is function {} of {}", main.index(), m.funcs.len()),
            });
        };
        if !f.params.is_empty() || !f.returns.is_empty() {
            return Err(VerifyError {
                func: f.name.clone(),
                at: "signature".into(),
                what: "main must take and return nothing".into(),
            });
        }
    }
    for (tag, slots) in &m.cells {
        let pointers = slots.iter().take_while(|t| **t == Ty::Ptr).count();
        if slots[pointers..].contains(&Ty::Ptr) {
            return Err(VerifyError {
                func: "<module>".into(),
                at: format!("cell #{tag}"),
                what: format!(
                    "the layout {} has a pointer after a scalar that is not one (pointers come first)",
                    print::cell(slots)
                ),
            });
        }
    }
    for (layout, slots) in &m.vectors {
        let pointers = slots.iter().take_while(|t| **t == Ty::Ptr).count();
        let bad = if slots[pointers..].contains(&Ty::Ptr) {
            Some("has a pointer after a scalar that is not one (pointers come first)")
        } else if slots.len() >= base::cell_layout::VECTOR_MAX_STRIDE {
            Some("has too many slots")
        } else {
            None
        };
        if let Some(bad) = bad {
            return Err(VerifyError {
                func: "<module>".into(),
                at: format!("vector #{layout}"),
                what: format!("the layout {} {bad}", print::cell(slots)),
            });
        }
    }
    for f in &m.funcs {
        Checker::new(m, f).func()?;
    }
    Ok(())
}

/// What the code says of a `Bool` value: the outcome of a tag test (the
/// cell, the tag, and whether the value is true when the cell has it), or
/// a constant.
#[derive(Clone, Copy)]
enum Cond {
    Test(Val, u32, bool),
    Const(bool),
}

struct Checker<'a> {
    m: &'a Module,
    f: &'a Func,
    defined: Vec<bool>,
    /// Values visible at the current point, innermost scope last.
    visible: Vec<bool>,
    path: Vec<Step>,
    /// The `Bool` values that are tag tests or constants.
    conds: Vec<Option<Cond>>,
    /// The members each cell may hold, by value, as its definition shows
    /// (an `Alloc`, an `If` yielding cells whose members are known).
    made: Vec<Members>,
    /// What the tests known at the current point say of each cell: (tag,
    /// has it), innermost last.
    shown: Vec<Vec<(u32, bool)>>,
    /// The cells with entries in `shown`, in the order they were added,
    /// to drop them when their scope ends, and whether the entry left the
    /// cell no member (made the code dead).
    shown_log: Vec<(Val, bool)>,
    /// How many reasons the current point has never to run: arms an `If`
    /// on a constant never takes, and cells the code shows to hold no
    /// member.
    dead: usize,
    /// What the arm last checked yields: the members of each yielded
    /// value, or `None` when the arm does not yield or never runs.
    yields: Option<Vec<Members>>,
}

/// A step of the path to the place checked (made text only for an error:
/// verifying after every pass formatted one per instruction).
#[derive(Clone, Copy)]
enum Step {
    Body,
    Inst(usize),
    Then,
    Else,
    Term,
}

/// Where a block sits, which decides how it may end.
#[derive(Clone, Copy, PartialEq)]
enum Place<'t> {
    Body,
    Arm(&'t [Ty]),
}

impl<'a> Checker<'a> {
    fn new(m: &'a Module, f: &'a Func) -> Self {
        let n = f.types.len();
        Checker {
            m,
            f,
            defined: vec![false; n],
            visible: vec![false; n],
            path: Vec::new(),
            conds: vec![None; n],
            made: vec![Members::any(); n],
            shown: vec![Vec::new(); n],
            shown_log: Vec::new(),
            dead: 0,
            yields: None,
        }
    }

    fn err<T>(&self, what: String) -> Result<T, VerifyError> {
        Err(VerifyError {
            func: self.f.name.clone(),
            at: if self.path.is_empty() {
                "signature".into()
            } else {
                self.path
                    .iter()
                    .map(|s| match s {
                        Step::Body => "body".to_string(),
                        Step::Inst(k) => format!("inst {k}"),
                        Step::Then => "then".into(),
                        Step::Else => "else".into(),
                        Step::Term => "term".into(),
                    })
                    .collect::<Vec<_>>()
                    .join(" ")
            },
            what,
        })
    }

    fn func(&mut self) -> Result<(), VerifyError> {
        let f = self.f;
        if f.types.len() < f.params.len() {
            return self.err(format!(
                "{} parameters but {} value types",
                f.params.len(),
                f.types.len()
            ));
        }
        for (i, t) in f.params.iter().enumerate() {
            if f.types[i] != *t {
                return self.err(format!(
                    "parameter v{i} is {t:?} but its value type is {:?}",
                    f.types[i]
                ));
            }
            self.defined[i] = true;
            self.visible[i] = true;
        }
        self.path.push(Step::Body);
        self.block(&f.body, Place::Body)
    }

    fn ty(&self, v: Val) -> Result<Ty, VerifyError> {
        match self.f.types.get(v.index()) {
            Some(t) => Ok(*t),
            None => self.err(format!("{v} has no type")),
        }
    }

    fn use_val(&self, v: Val, want: Option<Ty>) -> Result<(), VerifyError> {
        let t = self.ty(v)?;
        if !self.visible[v.index()] {
            return self.err(format!("{v} is used where it is not defined"));
        }
        match want {
            Some(w) if w != t => self.err(format!("{v} is {t:?} where {w:?} is needed")),
            _ => Ok(()),
        }
    }

    fn use_vals(&self, vs: &[Val], want: &[Ty], what: &str) -> Result<(), VerifyError> {
        if vs.len() != want.len() {
            return self.err(format!(
                "{what}: {} values where {} are needed",
                vs.len(),
                want.len()
            ));
        }
        for (v, t) in vs.iter().zip(want) {
            self.use_val(*v, Some(*t))?;
        }
        Ok(())
    }

    fn callee(&self, g: FuncId) -> Result<&'a Func, VerifyError> {
        match self.m.funcs.get(g.index()) {
            Some(c) => Ok(c),
            None => self.err(format!(
                "call of function {} of {}",
                g.index(),
                self.m.funcs.len()
            )),
        }
    }

    fn string(&self, s: crate::StrId) -> Result<(), VerifyError> {
        if (s.index()) < self.m.strings.len() {
            Ok(())
        } else {
            self.err(format!("string {} of {}", s, self.m.strings.len()))
        }
    }

    fn block(&mut self, b: &Block, place: Place<'_>) -> Result<(), VerifyError> {
        // Values defined here stop being visible when the block ends, and
        // so does what its tests showed.
        let mut scope: Vec<Val> = Vec::new();
        let shown = self.shown_log.len();
        for (k, inst) in b.insts.iter().enumerate() {
            self.path.push(Step::Inst(k));
            if let Some(want) = self.op(&inst.op, &inst.results)? {
                let got: Vec<Ty> = inst
                    .results
                    .iter()
                    .map(|v| self.ty(*v))
                    .collect::<Result<_, _>>()?;
                if got != want {
                    return self.err(format!(
                        "results {:?} are typed {got:?} but the operation gives {want:?}",
                        inst.results
                    ));
                }
            }
            for v in &inst.results {
                let i = v.index();
                if self.defined[i] {
                    return self.err(format!("{v} is defined twice"));
                }
                self.defined[i] = true;
                self.visible[i] = true;
                scope.push(*v);
            }
            self.learn(inst);
            self.path.pop();
        }
        self.path.push(Step::Term);
        self.term(&b.term, place)?;
        self.captures(b)?;
        self.path.pop();
        self.yields = match &b.term {
            Term::Yield(vs) if self.dead == 0 => {
                Some(vs.iter().map(|v| self.members(*v)).collect())
            }
            _ => None,
        };
        for v in scope {
            self.visible[v.index()] = false;
        }
        self.forget(shown);
        Ok(())
    }

    /// Records what an instruction's results say of cells.
    fn learn(&mut self, inst: &Inst) {
        let Some(r) = inst.results.first().map(|v| v.index()) else {
            return;
        };
        match &inst.op {
            Op::Alloc(tag, _) | Op::AllocZero(tag, _) => self.made[r] = Members::one(*tag),
            Op::TagIs(p, tag) => self.conds[r] = Some(Cond::Test(*p, *tag, true)),
            Op::BoolConst(b) => self.conds[r] = Some(Cond::Const(*b)),
            Op::Not(a) => {
                self.conds[r] = self.conds[a.index()].map(|c| match c {
                    Cond::Test(p, tag, has) => Cond::Test(p, tag, !has),
                    Cond::Const(b) => Cond::Const(!b),
                })
            }
            _ => {}
        }
    }

    /// Takes condition `cond` to be `outcome` until the enclosing scope
    /// ends.
    fn show(&mut self, cond: Val, outcome: bool) {
        if let Some(Cond::Test(p, tag, has)) = self.conds[cond.index()] {
            let before = self.members(p);
            self.shown[p.index()].push((tag, has == outcome));
            let dead = !before.is_empty() && before.narrow(tag, has == outcome).is_empty();
            self.dead += usize::from(dead);
            self.shown_log.push((p, dead));
        }
    }

    /// Drops what was shown since the log had `len` entries.
    fn forget(&mut self, len: usize) {
        while self.shown_log.len() > len {
            if let Some((p, dead)) = self.shown_log.pop() {
                self.shown[p.index()].pop();
                self.dead -= usize::from(dead);
            }
        }
    }

    /// The members the code around the current point shows cell `p` may
    /// hold.
    fn members(&self, p: Val) -> Members {
        let made = self.made[p.index()].clone();
        self.shown[p.index()]
            .iter()
            .fold(made, |m, &(tag, has)| m.narrow(tag, has))
    }

    /// The layout of the cells of `tag`.
    fn layout(&self, tag: u32) -> Result<&'a [Ty], VerifyError> {
        match self.m.cells.get(&tag) {
            Some(slots) => Ok(slots),
            None => self.err(format!("cell #{tag} has no layout")),
        }
    }

    /// The layout of the elements of vectors `#layout`.
    fn vector_layout(&self, layout: u32) -> Result<&'a [Ty], VerifyError> {
        match self.m.vectors.get(&layout) {
            Some(slots) => Ok(slots),
            None => self.err(format!("vector #{layout} has no layout")),
        }
    }

    /// The slots of layout `layout`, which a sum of vectors
    /// (`VecZero`, `VecOneHot`, `VecPlus`) and a stack need all `F64`.
    fn sum_layout(&self, layout: u32) -> Result<&'a [Ty], VerifyError> {
        let slots = self.vector_layout(layout)?;
        if slots.iter().any(|t| *t != Ty::F64) {
            return self.err(format!(
                "a sum of vectors #{layout} {}, whose slots are not all reals",
                print::cell(slots)
            ));
        }
        Ok(slots)
    }

    /// Layout `layout` of a sum of rows, one `Ptr`, whose rows are of
    /// layout `row`, a sum's.
    fn rows_layout(&self, layout: u32, row: u32) -> Result<(), VerifyError> {
        self.sum_layout(row)?;
        if self.vector_layout(layout)? != [Ty::Ptr] {
            return self.err(format!(
                "a sum of rows as vector #{layout}, whose elements are not one pointer"
            ));
        }
        Ok(())
    }

    /// Checks the operands of a vector operation and gives its result
    /// types.
    fn vector_op(&mut self, op: &Op) -> Result<Vec<Ty>, VerifyError> {
        use Ty::*;
        Ok(match op {
            Op::VecOf(layout, n, vals) => {
                let slots = self.vector_layout(*layout)?;
                let want: Vec<Ty> = (0..*n).flat_map(|_| slots.iter().copied()).collect();
                self.use_vals(
                    vals,
                    &want,
                    &format!("a vector #{layout} {} of {n} elements", print::cell(slots)),
                )?;
                vec![Ptr]
            }
            Op::VecBuild {
                layout,
                len,
                func,
                args,
                at,
                state,
            } => {
                let slots = self.vector_layout(*layout)?;
                self.use_val(*len, Some(F64))?;
                if let Some(s) = at {
                    self.string(*s)?;
                }
                let c = self.callee(*func)?;
                let Some((index, params)) = c.params.split_last() else {
                    return self.err(format!("`{}` takes no index to build a vector", c.name));
                };
                if *index != F64 {
                    return self.err(format!(
                        "`{}` takes a {index:?}, not the index of a vector element, last",
                        c.name
                    ));
                }
                // With a state: the state after the arguments, and the
                // next state after the element's slots.
                let (params, returns) = match state {
                    Some(v) => {
                        self.use_val(*v, Some(Ptr))?;
                        match (params.split_last(), c.returns.split_last()) {
                            (Some((Ptr, ps)), Some((Ptr, rs))) => (ps, rs),
                            _ => {
                                return self.err(format!(
                                    "`{}` takes and returns no state to build a vector",
                                    c.name
                                ))
                            }
                        }
                    }
                    None => (params, &c.returns[..]),
                };
                self.use_vals(args, params, &format!("a vector built by `{}`", c.name))?;
                if returns != slots {
                    return self.err(format!(
                        "`{}` returns {:?}, not an element of vector #{layout} {}",
                        c.name,
                        c.returns,
                        print::cell(slots)
                    ));
                }
                vec![Ptr]
            }
            Op::VecLen(v) => {
                self.use_val(*v, Some(Ptr))?;
                vec![F64]
            }
            Op::VecIndexOk(v, i) => {
                self.use_val(*v, Some(Ptr))?;
                self.use_val(*i, Some(F64))?;
                vec![Bool]
            }
            Op::IsCount(n) => {
                self.use_val(*n, Some(F64))?;
                vec![Bool]
            }
            Op::VecLoad(v, i, layout, slot) => {
                let slots = self.vector_layout(*layout)?;
                self.use_val(*v, Some(Ptr))?;
                self.use_val(*i, Some(F64))?;
                match slots.get(*slot as usize) {
                    Some(t) => vec![*t],
                    None => {
                        return self.err(format!(
                            "a load of slot {slot} of an element of vector #{layout} {}",
                            print::cell(slots)
                        ))
                    }
                }
            }
            Op::VecZero(layout, len) => {
                self.sum_layout(*layout)?;
                self.use_val(*len, Some(F64))?;
                vec![Ptr]
            }
            Op::VecOneHot {
                layout,
                len,
                i,
                vals,
            } => {
                let slots = self.sum_layout(*layout)?;
                self.use_val(*len, Some(F64))?;
                self.use_val(*i, Some(F64))?;
                self.use_vals(vals, slots, &format!("a one-hot vector #{layout}"))?;
                vec![Ptr]
            }
            Op::StackPush {
                layout,
                buf,
                k,
                vals,
                room,
            } => {
                let slots = self.sum_layout(*layout)?;
                self.use_val(*buf, Some(Ptr))?;
                self.use_val(*k, Some(F64))?;
                if let Some(r) = room {
                    self.use_val(*r, Some(F64))?;
                }
                self.use_vals(vals, slots, &format!("a stack of vectors #{layout}"))?;
                vec![Ptr]
            }
            Op::VecZeroOf { layout, row, of } => {
                self.rows_layout(*layout, *row)?;
                self.use_val(*of, Some(Ptr))?;
                vec![Ptr]
            }
            Op::VecOneHotOf {
                layout,
                row,
                of,
                i,
                val,
            } => {
                self.rows_layout(*layout, *row)?;
                self.use_val(*of, Some(Ptr))?;
                self.use_val(*i, Some(F64))?;
                self.use_val(*val, Some(Ptr))?;
                vec![Ptr]
            }
            Op::VecPlus(layout, a, b) => {
                // Reals, or rows.
                if self.vector_layout(*layout)? != [Ty::Ptr] {
                    self.sum_layout(*layout)?;
                }
                self.use_val(*a, Some(Ptr))?;
                self.use_val(*b, Some(Ptr))?;
                vec![Ptr]
            }
            _ => return self.err("internal error: not a vector operation".into()),
        })
    }

    /// Checks the operands of `op` and gives its result types, or `None`
    /// when any types will do (an `If` neither of whose arms yields).
    fn op(&mut self, op: &Op, results: &[Val]) -> Result<Option<Vec<Ty>>, VerifyError> {
        use Ty::*;
        Ok(Some(match op {
            Op::F64Const(_) => vec![F64],
            Op::BoolConst(_) => vec![Bool],
            Op::FBin(_, a, b) | Op::FCmp(_, a, b) => {
                self.use_val(*a, Some(F64))?;
                self.use_val(*b, Some(F64))?;
                vec![if matches!(op, Op::FCmp(..)) {
                    Bool
                } else {
                    F64
                }]
            }
            Op::FUn(_, a) => {
                self.use_val(*a, Some(F64))?;
                vec![F64]
            }
            Op::Not(a) => {
                self.use_val(*a, Some(Bool))?;
                vec![Bool]
            }
            Op::Call(g, args) | Op::CallAt(g, args, _) => {
                if let Op::CallAt(_, _, s) = op {
                    self.string(*s)?;
                }
                let c = self.callee(*g)?;
                self.use_vals(args, &c.params, &format!("call of `{}`", c.name))?;
                c.returns.clone()
            }
            Op::If { cond, then_, else_ } => {
                self.use_val(*cond, Some(Bool))?;
                return self.arms(*cond, then_, else_, results);
            }
            Op::PrintStr(s) => {
                self.string(*s)?;
                vec![]
            }
            Op::PrintReal(a) => {
                self.use_val(*a, Some(F64))?;
                vec![]
            }
            Op::PrintBool(a) => {
                self.use_val(*a, Some(Bool))?;
                vec![]
            }
            // Where they may be is checked with the block's terminator.
            Op::Capture(_) => vec![],
            Op::Alloc(tag, vals) | Op::AllocZero(tag, vals) => {
                let slots = self.layout(*tag)?;
                self.use_vals(
                    vals,
                    slots,
                    &format!("a cell #{tag} {}", print::cell(slots)),
                )?;
                vec![Ptr]
            }
            Op::TagIs(p, tag) => {
                self.layout(*tag)?;
                self.use_val(*p, Some(Ptr))?;
                vec![Bool]
            }
            Op::IsZero(p) => {
                self.use_val(*p, Some(Ptr))?;
                vec![Bool]
            }
            Op::MemoGet(_, key) => {
                self.memo_key(key)?;
                vec![Bool, Ptr]
            }
            Op::MemoPut(_, vals) => {
                let Some((result, key)) = vals.split_last() else {
                    return self.err("a `MemoPut` records a result for a key".into());
                };
                self.memo_key(key)?;
                self.use_val(*result, Some(Ptr))?;
                vec![]
            }
            Op::Save(vals) => {
                for v in vals {
                    self.use_val(*v, None)?;
                    if self.ty(*v)? == Bool {
                        return self.err(format!(
                            "`save` takes reals and pointers, and {v} is a `bool`"
                        ));
                    }
                }
                vec![]
            }
            Op::Restore(tys) => {
                if tys.contains(&Bool) {
                    return self.err("`restore` gives reals and pointers, not a `bool`".into());
                }
                tys.clone()
            }
            Op::Count(n) => {
                if *n as usize >= base::counters::SLOTS {
                    return self.err(format!("no counter slot {n}"));
                }
                vec![]
            }
            Op::Load(p, tag, slot) => {
                let slots = self.layout(*tag)?;
                self.use_val(*p, Some(Ptr))?;
                let Some(&t) = slots.get(*slot as usize) else {
                    return self.err(format!(
                        "a load of slot {slot} of a cell #{tag} {}",
                        print::cell(slots)
                    ));
                };
                let members = self.members(*p);
                if self.dead == 0 && !members.admits(*tag) {
                    return self.err(format!(
                        "a load of member #{tag} from {p}, whose cell holds {members}"
                    ));
                }
                if results.len() != 1 {
                    return self.err("a `Load` gives exactly one result".into());
                }
                vec![t]
            }
            Op::ReadReal(s) => {
                self.string(*s)?;
                vec![F64]
            }
            Op::VecOf(..)
            | Op::VecBuild { .. }
            | Op::VecLen(_)
            | Op::VecIndexOk(..)
            | Op::IsCount(_)
            | Op::VecLoad(..)
            | Op::VecZero(..)
            | Op::VecOneHot { .. }
            | Op::VecZeroOf { .. }
            | Op::VecOneHotOf { .. }
            | Op::VecPlus(..)
            | Op::StackPush { .. } => self.vector_op(op)?,
        }))
    }

    /// A memo table's key: one or two cell pointers.
    fn memo_key(&mut self, key: &[Val]) -> Result<(), VerifyError> {
        if !(1..=2).contains(&key.len()) {
            return self.err(format!("a memo key of {} values", key.len()));
        }
        for v in key {
            self.use_val(*v, Some(Ty::Ptr))?;
        }
        Ok(())
    }

    /// Checks both arms of an `If` on `cond` and gives its result types:
    /// what the arms yield (`None` when both diverge). What `cond` shows
    /// holds in each arm, and after the `If` when the other arm diverges;
    /// a result `results` names holds a member one of the arms that run
    /// yields.
    fn arms(
        &mut self,
        cond: Val,
        then_: &Block,
        else_: &Block,
        results: &[Val],
    ) -> Result<Option<Vec<Ty>>, VerifyError> {
        let yielded = |b: &Block| match &b.term {
            Term::Yield(vs) => Some(vs.clone()),
            _ => None,
        };
        // The yielded values' types are in the function's type table.
        let types: Option<Vec<Ty>> = match yielded(then_).or_else(|| yielded(else_)) {
            Some(vs) => Some(vs.iter().map(|v| self.ty(*v)).collect::<Result<_, _>>()?),
            None => None,
        };
        let want = types.as_deref().unwrap_or(&[]);
        let mut yields: Option<Vec<Members>> = None;
        for (arm, outcome, name) in [(then_, true, Step::Then), (else_, false, Step::Else)] {
            let never = matches!(self.conds[cond.index()], Some(Cond::Const(b)) if b != outcome);
            let shown = self.shown_log.len();
            self.show(cond, outcome);
            self.dead += usize::from(never);
            self.path.push(name);
            self.block(arm, Place::Arm(want))?;
            self.path.pop();
            self.dead -= usize::from(never);
            self.forget(shown);
            yields = match (yields, self.yields.take()) {
                (Some(a), Some(b)) => Some(a.iter().zip(&b).map(|(x, y)| x.join(y)).collect()),
                (a, b) => a.or(b),
            };
        }
        for (r, members) in results.iter().zip(yields.into_iter().flatten()) {
            self.made[r.index()] = members;
        }
        match (yielded(then_).is_some(), yielded(else_).is_some()) {
            (true, false) => self.show(cond, true),
            (false, true) => self.show(cond, false),
            _ => {}
        }
        Ok(types)
    }

    /// The block's `Capture` stretches: in pairs, not nested, and only
    /// before an `ErrorWith` that takes each one (`ErrPart::Captured`).
    fn captures(&self, b: &Block) -> Result<(), VerifyError> {
        let mut open = false;
        let mut stretches = 0;
        for i in &b.insts {
            if let Op::Capture(start) = i.op {
                if start == open {
                    return self.err(format!(
                        "`{}` {}",
                        if start {
                            "capture_start"
                        } else {
                            "capture_end"
                        },
                        if start {
                            "inside a capture"
                        } else {
                            "with no capture open"
                        }
                    ));
                }
                open = start;
                stretches += usize::from(!start);
            }
        }
        let taken: Vec<u32> = match &b.term {
            Term::ErrorWith(parts) => parts
                .iter()
                .filter_map(|p| match p {
                    ErrPart::Captured(n) => Some(*n),
                    _ => None,
                })
                .collect(),
            _ => Vec::new(),
        };
        if taken.iter().enumerate().any(|(i, n)| *n as usize != i) {
            return self.err(format!(
                "captured stretches taken as {taken:?}, not in order"
            ));
        }
        let taken = taken.len();
        if open || taken != stretches {
            return self.err(format!(
                "{stretches} captured stretches{} before an error message that takes {taken}",
                if open { " (one left open)" } else { "" }
            ));
        }
        Ok(())
    }

    fn term(&mut self, t: &Term, place: Place<'_>) -> Result<(), VerifyError> {
        match t {
            Term::Return(vs) => self.use_vals(vs, &self.f.returns, "return"),
            Term::TailCall(g, args) => {
                let c = self.callee(*g)?;
                self.use_vals(args, &c.params, &format!("tail call of `{}`", c.name))?;
                if c.returns != self.f.returns {
                    return self.err(format!(
                        "tail call of `{}`, which returns {:?}, from a function returning {:?}",
                        c.name, c.returns, self.f.returns
                    ));
                }
                Ok(())
            }
            Term::Yield(vs) => match place {
                Place::Body => self.err("a function body ends in `Yield`".into()),
                Place::Arm(types) => self.use_vals(vs, types, "yield"),
            },
            Term::Error(s) => self.string(*s),
            Term::ErrorWith(parts) => {
                for p in parts {
                    match p {
                        ErrPart::Str(s) | ErrPart::At(s) => self.string(*s)?,
                        ErrPart::Real(v) => self.use_val(*v, Some(Ty::F64))?,
                        ErrPart::Bool(v) => self.use_val(*v, Some(Ty::Bool))?,
                        ErrPart::ValueStart
                        | ErrPart::ValueEnd
                        | ErrPart::Site
                        | ErrPart::Captured(_) => {}
                    }
                }
                Ok(())
            }
        }
    }
}

#[cfg(test)]
mod tests;
