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
//! Cells: every layout of [`Module::cells`] has its pointers first; every
//! tag an operation names has a layout; an `Alloc` (or `AllocZero`) gives
//! one value per slot of its tag's layout, of the slot's type; a `Load`
//! names a slot of its tag's layout and gives one result, of that slot's
//! type.
//!
//! That a `Load` reads the member its cell holds is not checked. Which
//! member a cell holds is a run-time fact that the FIR leaves implicit
//! where a dispatch needs no test (lowering loads the last member of a
//! union untested once the other tests failed); deciding it would take
//! the tags each pointer may have, a whole-module analysis as
//! `passes::tags` makes. Even the local approximation (no `Load` of one
//! member where an `Alloc`, or a `TagIs` the code passed, shows another)
//! does not hold of every module the passes make:
//! tests/corpus/horner-all-modes.vlad, after `inline-bottom-up`, loads
//! member #1 from a cell in the arm of its test for the lazy zero #2 (in
//! the branch of a memo lookup that found nothing), code the run never
//! reaches or a latent lowering bug, not yet told apart.

use crate::{print, Block, ErrPart, Func, FuncId, Module, Op, Term, Ty, Val};
use base::EntityRef;
use std::fmt;

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
    for f in &m.funcs {
        Checker::new(m, f).func()?;
    }
    Ok(())
}

struct Checker<'a> {
    m: &'a Module,
    f: &'a Func,
    defined: Vec<bool>,
    /// Values visible at the current point, innermost scope last.
    visible: Vec<bool>,
    path: Vec<Step>,
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
        // Values defined here stop being visible when the block ends.
        let mut scope: Vec<Val> = Vec::new();
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
            self.path.pop();
        }
        self.path.push(Step::Term);
        self.term(&b.term, place)?;
        self.path.pop();
        for v in scope {
            self.visible[v.index()] = false;
        }
        Ok(())
    }

    /// The layout of the cells of `tag`.
    fn layout(&self, tag: u32) -> Result<&'a [Ty], VerifyError> {
        match self.m.cells.get(&tag) {
            Some(slots) => Ok(slots),
            None => self.err(format!("cell #{tag} has no layout")),
        }
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
                return self.arms(then_, else_);
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
                if results.len() != 1 {
                    return self.err("a `Load` gives exactly one result".into());
                }
                vec![t]
            }
            Op::ReadReal(s) => {
                self.string(*s)?;
                vec![F64]
            }
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

    /// Checks both arms of an `If` and gives its result types: what the
    /// arms yield (`None` when both diverge).
    fn arms(&mut self, then_: &Block, else_: &Block) -> Result<Option<Vec<Ty>>, VerifyError> {
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
        self.path.push(Step::Then);
        self.block(then_, Place::Arm(want))?;
        self.path.pop();
        self.path.push(Step::Else);
        self.block(else_, Place::Arm(want))?;
        self.path.pop();
        Ok(types)
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
                        ErrPart::ValueStart | ErrPart::ValueEnd | ErrPart::Site => {}
                    }
                }
                Ok(())
            }
        }
    }
}

#[cfg(test)]
mod tests;
