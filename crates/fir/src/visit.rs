//! The one walk over what FIR instructions and terminators read and call,
//! for every pass and for code generation: operands (to read or to
//! rename), purity, and calls (the call graph).

use crate::{Block, ErrPart, FuncId, Inst, Op, Term, Val};

impl Op {
    /// Calls `f` on each value the operation reads itself, in operand
    /// order; the blocks of an `If` are not entered (see
    /// [`Block::for_each_use`]).
    pub fn for_each_operand(&self, mut f: impl FnMut(Val)) {
        match self {
            Op::F64Const(_)
            | Op::BoolConst(_)
            | Op::PrintStr(_)
            | Op::Capture(_)
            | Op::ReadReal(_)
            | Op::Count(_) => {}
            Op::FBin(_, a, b) | Op::FCmp(_, a, b) => {
                f(*a);
                f(*b);
            }
            Op::FUn(_, a)
            | Op::Not(a)
            | Op::PrintReal(a)
            | Op::PrintBool(a)
            | Op::TagIs(a, _)
            | Op::IsZero(a)
            | Op::Load(a, _, _)
            | Op::VecLen(a)
            | Op::IsCount(a) => f(*a),
            Op::VecLoad(a, b, _, _) | Op::VecIndexOk(a, b) => {
                f(*a);
                f(*b);
            }
            Op::VecZero(_, a) => f(*a),
            Op::VecOneHot { len, i, vals, .. } => {
                f(*len);
                f(*i);
                vals.iter().for_each(|v| f(*v));
            }
            Op::StackPush {
                buf, k, vals, room, ..
            } => {
                f(*buf);
                f(*k);
                vals.iter().for_each(|v| f(*v));
                room.iter().for_each(|v| f(*v));
            }
            Op::VecPlus(_, a, b) => {
                f(*a);
                f(*b);
            }
            Op::VecZeroOf { of, .. } => f(*of),
            Op::VecOneHotOf { of, i, val, .. } => {
                f(*of);
                f(*i);
                f(*val);
            }
            Op::VecBuild {
                len, args, state, ..
            } => {
                f(*len);
                if let Some(v) = state {
                    f(*v);
                }
                args.iter().copied().for_each(f);
            }
            Op::VecOf(_, _, args)
            | Op::Call(_, args)
            | Op::CallAt(_, args, _)
            | Op::Alloc(_, args)
            | Op::AllocZero(_, args)
            | Op::MemoGet(_, args)
            | Op::MemoPut(_, args)
            | Op::Save(args) => args.iter().copied().for_each(f),
            Op::Restore(_) => {}
            Op::If { cond, .. } => f(*cond),
        }
    }

    /// [`Op::for_each_operand`], to change them.
    pub fn for_each_operand_mut(&mut self, mut f: impl FnMut(&mut Val)) {
        match self {
            Op::F64Const(_)
            | Op::BoolConst(_)
            | Op::PrintStr(_)
            | Op::Capture(_)
            | Op::ReadReal(_)
            | Op::Count(_) => {}
            Op::FBin(_, a, b) | Op::FCmp(_, a, b) => {
                f(a);
                f(b);
            }
            Op::FUn(_, a)
            | Op::Not(a)
            | Op::PrintReal(a)
            | Op::PrintBool(a)
            | Op::TagIs(a, _)
            | Op::IsZero(a)
            | Op::Load(a, _, _)
            | Op::VecLen(a)
            | Op::IsCount(a) => f(a),
            Op::VecLoad(a, b, _, _) | Op::VecIndexOk(a, b) => {
                f(a);
                f(b);
            }
            Op::VecZero(_, a) => f(a),
            Op::VecOneHot { len, i, vals, .. } => {
                f(len);
                f(i);
                vals.iter_mut().for_each(f);
            }
            Op::StackPush {
                buf, k, vals, room, ..
            } => {
                f(buf);
                f(k);
                vals.iter_mut().chain(room.iter_mut()).for_each(f);
            }
            Op::VecPlus(_, a, b) => {
                f(a);
                f(b);
            }
            Op::VecZeroOf { of, .. } => f(of),
            Op::VecOneHotOf { of, i, val, .. } => {
                f(of);
                f(i);
                f(val);
            }
            Op::VecBuild {
                len, args, state, ..
            } => {
                f(len);
                if let Some(v) = state {
                    f(v);
                }
                args.iter_mut().for_each(f);
            }
            Op::VecOf(_, _, args)
            | Op::Call(_, args)
            | Op::CallAt(_, args, _)
            | Op::Alloc(_, args)
            | Op::AllocZero(_, args)
            | Op::MemoGet(_, args)
            | Op::MemoPut(_, args)
            | Op::Save(args) => args.iter_mut().for_each(f),
            Op::Restore(_) => {}
            Op::If { cond, .. } => f(cond),
        }
    }

    /// Arithmetic and constants: no effect, no failure, so the instruction
    /// may be moved, merged or dropped when its result is not needed.
    pub fn is_pure(&self) -> bool {
        matches!(
            self,
            Op::F64Const(_)
                | Op::BoolConst(_)
                | Op::FBin(..)
                | Op::FUn(..)
                | Op::FCmp(..)
                | Op::Not(_)
                | Op::IsCount(_)
        )
    }

    /// The member tag the operation names, if any: the cells it makes,
    /// tests for or reads from have that tag's layout.
    pub fn tag(&self) -> Option<u32> {
        match self {
            Op::Alloc(t, _) | Op::AllocZero(t, _) | Op::TagIs(_, t) | Op::Load(_, t, _) => Some(*t),
            _ => None,
        }
    }

    /// The vector layout the operation names, if any
    /// ([`crate::Module::vectors`]).
    pub fn vector_layout(&self) -> Option<u32> {
        match self {
            Op::VecOf(l, _, _)
            | Op::VecBuild { layout: l, .. }
            | Op::VecLoad(_, _, l, _)
            | Op::VecZero(l, _)
            | Op::VecOneHot { layout: l, .. }
            | Op::VecZeroOf { layout: l, .. }
            | Op::VecOneHotOf { layout: l, .. }
            | Op::VecPlus(l, _, _)
            | Op::StackPush { layout: l, .. } => Some(*l),
            _ => None,
        }
    }

    /// Can the instruction go when nothing uses its results? Pure ones,
    /// and those that only read cells, vectors or the memo tables or
    /// allocate a cell or a vector without calling anything (which nothing
    /// can observe but memory).
    pub fn is_removable(&self) -> bool {
        self.is_pure()
            || matches!(
                self,
                Op::Load(..)
                    | Op::TagIs(..)
                    | Op::IsZero(_)
                    | Op::Alloc(..)
                    | Op::AllocZero(..)
                    | Op::MemoGet(..)
                    | Op::VecOf(..)
                    | Op::VecLen(_)
                    | Op::VecLoad(..)
                    | Op::VecIndexOk(..)
                    | Op::VecZero(..)
                    | Op::VecOneHot { .. }
                    | Op::VecZeroOf { .. }
                    | Op::VecOneHotOf { .. }
                    | Op::VecPlus(..)
                    | Op::StackPush { .. }
            )
    }
}

impl Term {
    /// Calls `f` on each value the terminator reads.
    pub fn for_each_operand(&self, mut f: impl FnMut(Val)) {
        match self {
            Term::Return(vs) | Term::Yield(vs) | Term::TailCall(_, vs) => {
                vs.iter().copied().for_each(f)
            }
            Term::Error(_) => {}
            Term::ErrorWith(parts) => {
                for p in parts {
                    if let ErrPart::Real(v) | ErrPart::Bool(v) = p {
                        f(*v);
                    }
                }
            }
        }
    }

    /// [`Term::for_each_operand`], to change them.
    pub fn for_each_operand_mut(&mut self, mut f: impl FnMut(&mut Val)) {
        match self {
            Term::Return(vs) | Term::Yield(vs) | Term::TailCall(_, vs) => vs.iter_mut().for_each(f),
            Term::Error(_) => {}
            Term::ErrorWith(parts) => {
                for p in parts {
                    if let ErrPart::Real(v) | ErrPart::Bool(v) = p {
                        f(v);
                    }
                }
            }
        }
    }
}

/// Whether a call is a `Call`/`CallAt` instruction, a `TailCall`, or the
/// calls of a `VecBuild`, one per element, which pass the index after the
/// arguments given and store the results in the vector.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CallKind {
    Call,
    Tail,
    Build,
}

impl Block {
    /// The arguments of every tail call of `g` in the block and the blocks
    /// nested in it: of a function's body and `g` itself, its loop's back
    /// edges.
    pub fn tail_calls_to(&self, g: FuncId) -> Vec<&[Val]> {
        let mut out = Vec::new();
        self.collect_tail_calls(g, &mut out);
        out
    }

    fn collect_tail_calls<'a>(&'a self, g: FuncId, out: &mut Vec<&'a [Val]>) {
        for i in &self.insts {
            if let Op::If { then_, else_, .. } = &i.op {
                then_.collect_tail_calls(g, out);
                else_.collect_tail_calls(g, out);
            }
        }
        if let Term::TailCall(h, args) = &self.term {
            if *h == g {
                out.push(args);
            }
        }
    }

    /// Whether the block leaves only through its own terminator: the arms
    /// of its `If`s (nested ones too) yield or stop the program, none
    /// returns or tail-calls. Such a body can stand in for a call of it.
    pub fn single_exit(&self) -> bool {
        self.insts.iter().all(|i| match &i.op {
            Op::If { then_, else_, .. } => [then_, else_].into_iter().all(|a| {
                matches!(a.term, Term::Yield(_) | Term::Error(_) | Term::ErrorWith(_))
                    && a.single_exit()
            }),
            _ => true,
        })
    }

    /// Calls `f` on every instruction of the block and the blocks nested
    /// in it, in order (an `If` before its arms).
    pub fn for_each_inst(&self, f: &mut impl FnMut(&Inst)) {
        for i in &self.insts {
            f(i);
            if let Op::If { then_, else_, .. } = &i.op {
                then_.for_each_inst(f);
                else_.for_each_inst(f);
            }
        }
    }

    /// [`Block::for_each_inst`], to change them.
    pub fn for_each_inst_mut(&mut self, f: &mut impl FnMut(&mut Inst)) {
        for i in &mut self.insts {
            f(i);
            if let Op::If { then_, else_, .. } = &mut i.op {
                then_.for_each_inst_mut(f);
                else_.for_each_inst_mut(f);
            }
        }
    }

    /// Calls `f` on each value read in the block and the blocks nested in
    /// it, in order.
    pub fn for_each_use(&self, f: &mut impl FnMut(Val)) {
        for i in &self.insts {
            i.op.for_each_operand(&mut *f);
            if let Op::If { then_, else_, .. } = &i.op {
                then_.for_each_use(f);
                else_.for_each_use(f);
            }
        }
        self.term.for_each_operand(&mut *f);
    }

    /// [`Block::for_each_use`], to change them; results are not visited.
    pub fn for_each_use_mut(&mut self, f: &mut impl FnMut(&mut Val)) {
        for i in &mut self.insts {
            i.op.for_each_operand_mut(&mut *f);
            if let Op::If { then_, else_, .. } = &mut i.op {
                then_.for_each_use_mut(f);
                else_.for_each_use_mut(f);
            }
        }
        self.term.for_each_operand_mut(&mut *f);
    }

    /// Calls `f` on the results of every instruction of the block and the
    /// blocks nested in it, to rename them.
    pub fn for_each_result_mut(&mut self, f: &mut impl FnMut(&mut Val)) {
        for i in &mut self.insts {
            i.results.iter_mut().for_each(&mut *f);
            if let Op::If { then_, else_, .. } = &mut i.op {
                then_.for_each_result_mut(f);
                else_.for_each_result_mut(f);
            }
        }
    }

    /// Calls `f` on the callee and arguments of every call and tail call
    /// in the block and the blocks nested in it, in order (a `VecBuild`'s
    /// arguments without the index: see [`CallKind::Build`]).
    pub fn for_each_call(&self, f: &mut impl FnMut(FuncId, &[Val], CallKind)) {
        for i in &self.insts {
            match &i.op {
                Op::Call(g, args) | Op::CallAt(g, args, _) => f(*g, args, CallKind::Call),
                Op::VecBuild { func, args, .. } => f(*func, args, CallKind::Build),
                Op::If { then_, else_, .. } => {
                    then_.for_each_call(f);
                    else_.for_each_call(f);
                }
                _ => {}
            }
        }
        if let Term::TailCall(g, args) = &self.term {
            f(*g, args, CallKind::Tail);
        }
    }

    /// [`Block::for_each_call`], to change the callees.
    pub fn for_each_call_mut(&mut self, f: &mut impl FnMut(&mut FuncId)) {
        for i in &mut self.insts {
            match &mut i.op {
                Op::Call(g, _) | Op::CallAt(g, _, _) | Op::VecBuild { func: g, .. } => f(g),
                Op::If { then_, else_, .. } => {
                    then_.for_each_call_mut(f);
                    else_.for_each_call_mut(f);
                }
                _ => {}
            }
        }
        if let Term::TailCall(g, _) = &mut self.term {
            f(g);
        }
    }
}
