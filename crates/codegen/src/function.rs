//! Instruction selection: the body of one Cranelift function from the FIR
//! functions of its tail-call group, instruction by instruction.

use super::*;
use base::EntityRef;

/// The blocks of a group member (see [`Codegen::define`]).
pub(crate) struct Member {
    pub(crate) pre: ClBlock,
    pub(crate) lp: ClBlock,
    /// Parameters every self tail call passes back unchanged.
    pub(crate) fixed: Vec<bool>,
    /// Its counters, and the block of its integer version
    /// (`induction`), if it has any.
    pub(crate) counters: Option<(std::rc::Rc<crate::induction::Counters>, ClBlock)>,
}

/// Which parameters of `f` every self tail call of `f` passes back in
/// their own position.
pub(crate) fn invariant_params(fid: FuncId, f: &fir::Func) -> Vec<bool> {
    let mut fixed = vec![true; f.params.len()];
    for args in f.body.tail_calls_to(fid) {
        for (i, a) in args.iter().enumerate() {
            if a.index() != i {
                fixed[i] = false;
            }
        }
    }
    fixed
}

pub(crate) struct FnBuilder<'a, 'b> {
    pub(crate) cg: &'b mut Codegen<'a>,
    pub(crate) b: FunctionBuilder<'b>,
    pub(crate) f: &'a fir::Func,
    pub(crate) fid: FuncId,
    pub(crate) vals: Vec<Option<ClValue>>,
    /// The functions of this group, as blocks.
    pub(crate) members: HashMap<FuncId, Member>,
    pub(crate) ret_area: Option<ClValue>,
    /// Merge blocks of the enclosing `If`s, innermost last.
    pub(crate) yield_to: Vec<ClBlock>,
    pub(crate) func_refs: HashMap<ClFuncId, FuncRef>,
    pub(crate) globals: HashMap<DataId, GlobalValue>,
    /// The one-hots of `f` that only a `VecPlus` reads: never made, the
    /// `VecPlus` adds their entry instead (`FnBuilder::fused_one_hots`).
    pub(crate) hot: HashSet<Val>,
    /// Those met so far: their index (an integer) and their real.
    pub(crate) deferred: HashMap<Val, (ClValue, ClValue)>,
    /// The element functions whose code is being made inline, outermost
    /// first (`FnBuilder::inline_element`): a vector whose elements may be
    /// vectors of its own type is printed by a function whose loop calls
    /// it again, which is not inlined into itself.
    pub(crate) inlining: Vec<FuncId>,
    /// What was computed once of a FIR value where the block being built
    /// can still use it (`Known`).
    pub(crate) known: Known,
    /// Set while the integer version of a loop is built (`induction`).
    pub(crate) int_mode: Option<crate::induction::IntMode>,
}

/// Work on a FIR value done once and reused where it dominates: the
/// elements of a vector that may be a sum (`Fact::Dense`: a cold call of
/// the runtime, whose clobbered registers made a loop spill every value
/// it carries), an index as an integer (`Fact::Int`) and a vector's
/// length (`Fact::Len`, which a loop over a vector compares an index
/// with at every step), and a condition an `If` decided (`Fact::True`,
/// `Fact::False`: in its arms, and after it when one arm stops). An `If` arm
/// starts from what its `If` knew, and what it learns ends with it.
#[derive(Default)]
pub(crate) struct Known {
    facts: HashMap<(Val, Fact), ClValue>,
    /// The keys in the order they were learnt, so an arm's can be undone.
    trail: Vec<(Val, Fact)>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub(crate) enum Fact {
    Dense,
    Int,
    /// A vector's length, as the `F64` the FIR holds.
    Len,
    /// A `Bool` known true, or false, where an `If` on it decided.
    True,
    False,
}

impl Known {
    pub(crate) fn get(&self, v: Val, fact: Fact) -> Option<ClValue> {
        self.facts.get(&(v, fact)).copied()
    }

    pub(crate) fn learn(&mut self, v: Val, fact: Fact, x: ClValue) {
        if self.facts.insert((v, fact), x).is_none() {
            self.trail.push((v, fact));
        }
    }

    pub(crate) fn mark(&self) -> usize {
        self.trail.len()
    }

    /// Forgets what was learnt since `mark`.
    pub(crate) fn undo(&mut self, mark: usize) {
        for key in self.trail.drain(mark..) {
            self.facts.remove(&key);
        }
    }

    pub(crate) fn clear(&mut self) {
        self.facts.clear();
        self.trail.clear();
    }
}

impl FnBuilder<'_, '_> {
    pub(crate) fn val(&self, v: Val) -> Result<ClValue, String> {
        self.vals.get(v.index()).copied().flatten().ok_or_else(|| {
            format!(
                "internal error: {v} used before definition in `{}`",
                self.f.name
            )
        })
    }

    pub(crate) fn vals(&self, vs: &[Val]) -> Result<Vec<ClValue>, String> {
        vs.iter().map(|v| self.val(*v)).collect()
    }

    pub(crate) fn set(&mut self, v: Val, x: ClValue) -> Result<(), String> {
        let slot = self
            .vals
            .get_mut(v.index())
            .ok_or_else(|| format!("internal error: {v} has no type"))?;
        *slot = Some(x);
        Ok(())
    }

    pub(crate) fn func_ref(&mut self, id: ClFuncId) -> FuncRef {
        if let Some(r) = self.func_refs.get(&id) {
            return *r;
        }
        let r = self.cg.module.declare_func_in_func(id, self.b.func);
        self.func_refs.insert(id, r);
        r
    }

    /// Addresses of the runtime's current call site (`rt_site_ptr`,
    /// `rt_site_len`).
    pub(crate) fn site_globals(&mut self) -> Result<(ClValue, ClValue), String> {
        let addr = |name: &str, this: &mut Self| -> Result<ClValue, String> {
            let id = this
                .cg
                .module
                .declare_data(name, Linkage::Import, true, false)
                .map_err(|e| e.to_string())?;
            let g = this.global(id);
            Ok(this.b.ins().symbol_value(types::I64, g))
        };
        let p = addr("rt_site_ptr", self)?;
        let l = addr("rt_site_len", self)?;
        Ok((p, l))
    }

    /// Makes `site` the runtime's current call site; gives what to
    /// restore with [`FnBuilder::leave_site`].
    pub(crate) fn enter_site(&mut self, site: StrId) -> Result<[ClValue; 4], String> {
        let [ptr, len] = self.string(site)?;
        let (pa, la) = self.site_globals()?;
        let flags = MemFlagsData::trusted();
        let old_p = self.b.ins().load(types::I64, flags, pa, 0);
        let old_l = self.b.ins().load(types::I64, flags, la, 0);
        self.b.ins().store(flags, ptr, pa, 0);
        self.b.ins().store(flags, len, la, 0);
        Ok([pa, la, old_p, old_l])
    }

    /// Restores the call site [`FnBuilder::enter_site`] replaced.
    pub(crate) fn leave_site(&mut self, [pa, la, old_p, old_l]: [ClValue; 4]) {
        self.b.ins().store(MemFlagsData::trusted(), old_p, pa, 0);
        self.b.ins().store(MemFlagsData::trusted(), old_l, la, 0);
    }

    pub(crate) fn global(&mut self, id: DataId) -> GlobalValue {
        if let Some(g) = self.globals.get(&id) {
            return *g;
        }
        let g = self.cg.module.declare_data_in_func(id, self.b.func);
        self.globals.insert(id, g);
        g
    }

    pub(crate) fn call_import(
        &mut self,
        name: &'static str,
        args: &[ClValue],
    ) -> Result<Option<ClValue>, String> {
        let id = self.cg.import(name)?;
        let r = self.func_ref(id);
        let call = self.b.ins().call(r, args);
        Ok(self.b.inst_results(call).first().copied())
    }

    /// Address and length of a module string.
    pub(crate) fn string(&mut self, s: StrId) -> Result<[ClValue; 2], String> {
        let id = self.cg.string_data(s)?;
        let len = self.cg.m.strings[s.index()].len();
        let g = self.global(id);
        let ptr = self.b.ins().symbol_value(types::I64, g);
        let len = self.b.ins().iconst(types::I64, len as i64);
        Ok([ptr, len])
    }

    /// The two pointers of a memo key (the second 0 for a key of one).
    fn memo_key(&mut self, key: &[Val]) -> Result<[ClValue; 2], String> {
        let a = self.val(key[0])?;
        let b = match key.get(1) {
            Some(v) => self.val(*v)?,
            None => self.b.ins().iconst(types::I64, 0),
        };
        Ok([a, b])
    }

    /// The address of `rt_saves`: for each of the two stacks of saved
    /// values (`base::cell_layout::SAVES_POINTERS`, `SAVES_REALS`), its
    /// top, then its end.
    fn saves_global(&mut self) -> Result<ClValue, String> {
        let id = self
            .cg
            .module
            .declare_data("rt_saves", Linkage::Import, true, false)
            .map_err(|e| e.to_string())?;
        let g = self.global(id);
        Ok(self.b.ins().symbol_value(types::I64, g))
    }

    /// Which stack of saved values a value of type `t` goes to: pointers
    /// to the one the collector scans, the rest to the one it never reads.
    fn saves_stack(t: fir::Ty) -> usize {
        use base::cell_layout::{SAVES_POINTERS, SAVES_REALS};
        match t {
            fir::Ty::Ptr => SAVES_POINTERS,
            fir::Ty::F64 | fir::Ty::Bool => SAVES_REALS,
        }
    }

    /// `fir::Op::Save`: each value stored at the top of its stack, a word
    /// each, inline; the runtime grows a stack (from a cold block,
    /// `rt_saves_grow`) only when it is full, which a program's deepest
    /// recursion reaches once.
    fn save(&mut self, vals: &[(ClValue, fir::Ty)]) -> Result<(), String> {
        for which in [
            base::cell_layout::SAVES_POINTERS,
            base::cell_layout::SAVES_REALS,
        ] {
            let mine: Vec<ClValue> = (vals.iter())
                .filter(|(_, t)| Self::saves_stack(*t) == which)
                .map(|(v, _)| *v)
                .collect();
            if !mine.is_empty() {
                self.save_on(which, &mine)?;
            }
        }
        Ok(())
    }

    fn save_on(&mut self, which: usize, vals: &[ClValue]) -> Result<(), String> {
        let flags = MemFlagsData::trusted();
        let at = self.saves_global()?;
        let (top_at, end_at) = (16 * which as i32, 16 * which as i32 + 8);
        let bytes = 8 * vals.len() as i64;
        let top = self.b.ins().load(types::I64, flags, at, top_at);
        let end = self.b.ins().load(types::I64, flags, at, end_at);
        let after = self.b.ins().iadd_imm_s(top, bytes);
        let fits = self
            .b
            .ins()
            .icmp(IntCC::UnsignedLessThanOrEqual, after, end);
        let top = self.unless_cold(fits, top, |this| {
            let n = this.b.ins().iconst(types::I64, bytes);
            let w = this.b.ins().iconst(types::I64, which as i64);
            this.call_cold("rt_saves_grow", &[n, w])?;
            Ok(this.b.ins().load(types::I64, flags, at, top_at))
        })?;
        for (j, v) in vals.iter().enumerate() {
            self.b.ins().store(flags, *v, top, 8 * j as i32);
        }
        let after = self.b.ins().iadd_imm_s(top, bytes);
        self.b.ins().store(flags, after, at, top_at);
        Ok(())
    }

    /// `fir::Op::Restore` of values of types `tys`, in the order they
    /// were saved: each from the top of its stack.
    fn restore(&mut self, tys: &[fir::Ty]) -> Result<Vec<ClValue>, String> {
        let mut out: Vec<Option<ClValue>> = vec![None; tys.len()];
        for which in [
            base::cell_layout::SAVES_POINTERS,
            base::cell_layout::SAVES_REALS,
        ] {
            let mine: Vec<usize> = (0..tys.len())
                .filter(|j| Self::saves_stack(tys[*j]) == which)
                .collect();
            if mine.is_empty() {
                continue;
            }
            let flags = MemFlagsData::trusted();
            let at = self.saves_global()?;
            let top_at = 16 * which as i32;
            let top = self.b.ins().load(types::I64, flags, at, top_at);
            let below = self.b.ins().iadd_imm_s(top, -8 * mine.len() as i64);
            self.b.ins().store(flags, below, at, top_at);
            for (k, j) in mine.into_iter().enumerate() {
                let v = self.b.ins().load(cl_ty(tys[j]), flags, below, 8 * k as i32);
                out[j] = Some(v);
            }
        }
        out.into_iter()
            .map(|v| v.ok_or_else(|| "internal error: `restore` lost a value".to_string()))
            .collect()
    }

    /// A new cell of `words` words. A small one is bumped from the
    /// region the runtime keeps for its size (`base::cell_layout`): a
    /// call to `rt_alloc` cost some 50 instructions, a third of all in
    /// reverse-mode benchmarks; the call remains for when the region is
    /// used up (the runtime then gives the next one, or collects).
    pub(crate) fn alloc_cell(&mut self, words: usize) -> Result<ClValue, String> {
        use base::cell_layout::{bump_slot, BUMP_WORDS};
        let bytes = 8 * words as i64;
        if words >= BUMP_WORDS {
            let size = self.b.ins().iconst(types::I64, bytes);
            return self
                .call_import("rt_alloc", &[size])?
                .ok_or_else(|| "internal error: rt_alloc result".to_string());
        }
        let id = self
            .cg
            .module
            .declare_data("rt_bump", Linkage::Import, true, false)
            .map_err(|e| e.to_string())?;
        let g = self.global(id);
        let base = self.b.ins().symbol_value(types::I64, g);
        let at = (8 * bump_slot(words)) as i32;
        let flags = MemFlagsData::trusted();
        let next = self.b.ins().load(types::I64, flags, base, at);
        let end = self.b.ins().load(types::I64, flags, base, at + 8);
        let after = self.b.ins().iadd_imm_s(next, bytes);
        let fits = self
            .b
            .ins()
            .icmp(IntCC::UnsignedLessThanOrEqual, after, end);
        let bump = self.b.create_block();
        let call = self.b.create_block();
        let done = self.b.create_block();
        self.b.append_block_param(done, types::I64);
        self.b.ins().brif(fits, bump, &[], call, &[]);
        self.b.switch_to_block(bump);
        self.b.ins().store(flags, after, base, at);
        self.b.ins().jump(done, &block_args(&[next]));
        self.b.set_cold_block(call);
        self.b.switch_to_block(call);
        let size = self.b.ins().iconst(types::I64, bytes);
        let p = self
            .call_cold("rt_alloc", &[size])?
            .ok_or("internal error: rt_alloc result")?;
        self.b.ins().jump(done, &block_args(&[p]));
        self.b.switch_to_block(done);
        Ok(self.b.block_params(done)[0])
    }

    pub(crate) fn count(&mut self, index: usize) -> Result<(), String> {
        if !self.cg.opts.count_ops {
            return Ok(());
        }
        let id = self.cg.counts_data()?;
        let g = self.global(id);
        let base = self.b.ins().symbol_value(types::I64, g);
        let off = (index * 8) as i32;
        let n = self
            .b
            .ins()
            .load(types::I64, MemFlagsData::trusted(), base, off);
        let n = self.b.ins().iadd_imm_s(n, 1);
        self.b.ins().store(MemFlagsData::trusted(), n, base, off);
        Ok(())
    }

    pub(crate) fn block(&mut self, blk: &fir::Block) -> Result<(), String> {
        for inst in &blk.insts {
            self.int_inst(inst)?;
        }
        self.int_term(&blk.term)
    }

    pub(crate) fn inst(&mut self, inst: &fir::Inst) -> Result<(), String> {
        let one = |results: &[Val]| -> Result<Val, String> {
            match results {
                [r] => Ok(*r),
                _ => Err("internal error: instruction needs exactly one result".to_string()),
            }
        };
        match &inst.op {
            Op::F64Const(x) => {
                let v = self.b.ins().f64const(*x);
                self.set(one(&inst.results)?, v)?;
            }
            Op::BoolConst(x) => {
                let v = self.b.ins().iconst(types::I8, *x as i64);
                self.set(one(&inst.results)?, v)?;
            }
            Op::FBin(op, fx, fy) => {
                let (x, y) = (self.val(*fx)?, self.val(*fy)?);
                if let Some(i) = op.counter_slot() {
                    self.count(i)?;
                }
                if let Some(k) = self.offset_int(*op, *fx, *fy) {
                    self.known.learn(one(&inst.results)?, Fact::Int, k);
                }
                let v = match op {
                    FBin::Add | FBin::PlusAdd => self.b.ins().fadd(x, y),
                    FBin::Sub => self.b.ins().fsub(x, y),
                    FBin::Mul => self.b.ins().fmul(x, y),
                    FBin::Div => self.b.ins().fdiv(x, y),
                    FBin::Atan2 => self
                        .call_import("atan2", &[x, y])?
                        .ok_or("internal error: atan2 result")?,
                };
                self.set(one(&inst.results)?, v)?;
            }
            Op::FUn(op, x) => {
                let x = self.val(*x)?;
                self.count(fir::un_counter_slot(*op))?;
                let name = match op {
                    FUn::Sqrt => None,
                    FUn::Exp => Some("exp"),
                    FUn::Log => Some("log"),
                    FUn::Sin => Some("sin"),
                    FUn::Cos => Some("cos"),
                };
                let v = match name {
                    None => self.b.ins().sqrt(x),
                    Some(name) => self
                        .call_import(name, &[x])?
                        .ok_or("internal error: libm result")?,
                };
                self.set(one(&inst.results)?, v)?;
            }
            Op::FCmp(c, x, y) => {
                if let (Cmp::Eq, Some((x, k))) = (c, self.index_eq(*x, *y)) {
                    self.count(base::counters::COMPARISONS)?;
                    let x = self.int_of(x)?;
                    let v = self.b.ins().icmp_imm_s(IntCC::Equal, x, k);
                    self.set(one(&inst.results)?, v)?;
                    return Ok(());
                }
                let (x, y) = (self.val(*x)?, self.val(*y)?);
                self.count(base::counters::COMPARISONS)?;
                let cc = match c {
                    Cmp::Eq => FloatCC::Equal,
                    Cmp::Lt => FloatCC::LessThan,
                    Cmp::Gt => FloatCC::GreaterThan,
                    Cmp::Le => FloatCC::LessThanOrEqual,
                    Cmp::Ge => FloatCC::GreaterThanOrEqual,
                };
                let v = self.b.ins().fcmp(cc, x, y);
                self.set(one(&inst.results)?, v)?;
            }
            Op::Not(x) => {
                let x = self.val(*x)?;
                let v = self.b.ins().bxor_imm_u(x, 1);
                self.set(one(&inst.results)?, v)?;
            }
            Op::Call(callee, args) | Op::CallAt(callee, args, _) => {
                // The runtime's current call site, set for the call's
                // duration (see `ErrPart::Site`).
                let saved = match &inst.op {
                    Op::CallAt(_, _, site) => Some(self.enter_site(*site)?),
                    _ => None,
                };
                let results = self.call(*callee, args)?;
                if let Some(saved) = saved {
                    self.leave_site(saved);
                }
                if results.len() != inst.results.len() {
                    return Err(format!(
                        "internal error: call of `{}` with {} results",
                        self.cg.m.func(*callee).name,
                        inst.results.len()
                    ));
                }
                for (r, v) in inst.results.iter().zip(results) {
                    self.set(*r, v)?;
                }
            }
            Op::If { cond, then_, else_ } => {
                let c = self.val(*cond)?;
                // An `If` on a condition an earlier one decided (the same
                // index checked for `vector-ref` and for its one-hot
                // sensitivity) runs its one arm.
                let decided = if self.known.get(*cond, Fact::True).is_some() {
                    Some(true)
                } else if self.known.get(*cond, Fact::False).is_some() {
                    Some(false)
                } else {
                    None
                };
                let arms: Vec<(ClBlock, &fir::Block, Fact)> = match decided {
                    Some(t) => {
                        let arm = if t { then_ } else { else_ };
                        vec![(self.b.create_block(), arm, Fact::True)]
                    }
                    None => vec![
                        (self.b.create_block(), then_, Fact::True),
                        (self.b.create_block(), else_, Fact::False),
                    ],
                };
                let merge = self.b.create_block();
                for r in &inst.results {
                    let t = self.f.types[r.index()];
                    self.b.append_block_param(merge, cl_ty(t));
                }
                match arms.as_slice() {
                    [(only, ..)] => {
                        self.b.ins().jump(*only, &[]);
                    }
                    [(then_blk, ..), (else_blk, ..)] => {
                        self.b.ins().brif(c, *then_blk, &[], *else_blk, &[]);
                    }
                    _ => unreachable!("an `If` has one arm to run or two"),
                }
                self.yield_to.push(merge);
                let mark = self.known.mark();
                for (blk, arm, fact) in arms {
                    self.b.switch_to_block(blk);
                    if decided.is_none() {
                        self.known.learn(*cond, fact, c);
                    }
                    self.block(arm)?;
                    self.known.undo(mark);
                }
                self.yield_to.pop();
                self.b.switch_to_block(merge);
                let params = self.b.block_params(merge).to_vec();
                for (r, v) in inst.results.iter().zip(params) {
                    self.set(*r, v)?;
                }
                // What follows runs only after an arm that yields.
                if decided.is_none() {
                    match (
                        matches!(then_.term, Term::Yield(_)),
                        matches!(else_.term, Term::Yield(_)),
                    ) {
                        (true, false) => self.known.learn(*cond, Fact::True, c),
                        (false, true) => self.known.learn(*cond, Fact::False, c),
                        _ => {}
                    }
                }
            }
            Op::PrintStr(s) => {
                let args = self.string(*s)?;
                self.call_import("rt_print_str", &args)?;
            }
            Op::PrintReal(x) => {
                let x = self.val(*x)?;
                self.call_import("rt_print_real", &[x])?;
            }
            Op::PrintBool(x) => {
                let x = self.val(*x)?;
                let x = self.b.ins().uextend(types::I32, x);
                self.call_import("rt_print_bool", &[x])?;
            }
            Op::Capture(start) => {
                let name = if *start {
                    "rt_capture_start"
                } else {
                    "rt_capture_end"
                };
                self.call_cold(name, &[])?;
            }
            Op::ReadReal(s) => {
                let args = self.string(*s)?;
                let v = self
                    .call_import("rt_read_real", &args)?
                    .ok_or("internal error: read-real result")?;
                self.set(one(&inst.results)?, v)?;
            }
            Op::Alloc(tag, fields) | Op::AllocZero(tag, fields) => {
                // A cell: the header word (the member's tag in its first
                // four bytes; in the next four, the number of pointer
                // slots, which lead, shifted left by one, and the zero
                // mark in bit 0), then one 8-byte slot per scalar.
                let pointers = self
                    .cg
                    .m
                    .cells
                    .get(tag)
                    .ok_or_else(|| format!("internal error: cell #{tag} has no layout"))?
                    .iter()
                    .take_while(|t| **t == fir::Ty::Ptr)
                    .count() as i64;
                let fields = self.vals(fields)?;
                let p = self.alloc_cell(1 + fields.len())?;
                let t = self.b.ins().iconst(types::I32, i64::from(*tag));
                self.b.ins().store(MemFlagsData::trusted(), t, p, 0);
                let zero = i64::from(matches!(inst.op, Op::AllocZero(..)));
                let z = self.b.ins().iconst(types::I32, pointers << 1 | zero);
                self.b.ins().store(MemFlagsData::trusted(), z, p, 4);
                for (i, x) in fields.into_iter().enumerate() {
                    let off = 8 * (1 + i as i32);
                    self.b.ins().store(MemFlagsData::trusted(), x, p, off);
                }
                self.set(one(&inst.results)?, p)?;
            }
            Op::TagIs(p, tag) => {
                let p = self.val(*p)?;
                let t = self.b.ins().load(types::I32, MemFlagsData::trusted(), p, 0);
                let v = self.b.ins().icmp_imm_s(IntCC::Equal, t, i64::from(*tag));
                self.set(one(&inst.results)?, v)?;
            }
            Op::IsZero(p) => {
                let p = self.val(*p)?;
                let z = self.b.ins().load(types::I32, MemFlagsData::trusted(), p, 4);
                let z = self.b.ins().band_imm_u(z, 1);
                let v = self.b.ins().icmp_imm_u(IntCC::NotEqual, z, 0);
                self.set(one(&inst.results)?, v)?;
            }
            Op::MemoGet(table, key) => {
                // The runtime answers 0 (no cell is there) when the key
                // is not in the table.
                let mut args = vec![self.b.ins().iconst(types::I64, i64::from(*table))];
                args.extend(self.memo_key(key)?);
                let r = self
                    .call_import("rt_memo_get", &args)?
                    .ok_or("internal error: rt_memo_get result")?;
                let found = self.b.ins().icmp_imm_u(IntCC::NotEqual, r, 0);
                let [f, p] = inst.results[..] else {
                    return Err("internal error: `memo_get` gives two results".into());
                };
                self.set(f, found)?;
                self.set(p, r)?;
            }
            Op::MemoPut(table, vals) => {
                let Some((result, key)) = vals.split_last() else {
                    return Err("internal error: `memo_put` without a result".into());
                };
                let mut args = vec![self.b.ins().iconst(types::I64, i64::from(*table))];
                args.extend(self.memo_key(key)?);
                args.push(self.val(*result)?);
                self.call_import("rt_memo_put", &args)?;
            }
            Op::Count(slot) => self.count(*slot as usize)?,
            Op::Save(vals) => {
                let tys: Vec<fir::Ty> = vals.iter().map(|v| self.f.types[v.index()]).collect();
                let vals = self.vals(vals)?;
                let vals: Vec<_> = vals.into_iter().zip(tys).collect();
                self.save(&vals)?;
            }
            Op::Restore(tys) => {
                let vals = self.restore(tys)?;
                if vals.len() != inst.results.len() {
                    return Err("internal error: `restore` gives a result per value".into());
                }
                for (r, v) in inst.results.iter().zip(vals) {
                    self.set(*r, v)?;
                }
            }
            Op::VecOf(..)
            | Op::VecBuild { .. }
            | Op::VecLen(_)
            | Op::VecLoad(..)
            | Op::VecIndexOk(..)
            | Op::IsCount(_)
            | Op::VecZero(..)
            | Op::VecOneHot { .. }
            | Op::VecZeroOf { .. }
            | Op::VecOneHotOf { .. }
            | Op::VecPlus(..)
            | Op::StackPush { .. } => self.vector_op(inst)?,
            Op::Load(p, _, n) => {
                let p = self.val(*p)?;
                let r = one(&inst.results)?;
                let ty = cl_ty(self.f.types[r.index()]);
                let off = 8 * (1 + *n as i32);
                let v = self.b.ins().load(ty, MemFlagsData::trusted(), p, off);
                self.set(r, v)?;
            }
        }
        Ok(())
    }

    /// A non-tail call; returns the callee's results.
    pub(crate) fn call(&mut self, callee: FuncId, args: &[Val]) -> Result<Vec<ClValue>, String> {
        let argv = self.vals(args)?;
        self.call_with(callee, argv)
    }

    /// A non-tail call of `callee` with the arguments `argv`.
    pub(crate) fn call_with(
        &mut self,
        callee: FuncId,
        mut argv: Vec<ClValue>,
    ) -> Result<Vec<ClValue>, String> {
        let g = self.cg.m.func(callee);
        let area = if uses_ret_area(&g.returns) {
            let slot = self.b.create_sized_stack_slot(StackSlotData::new(
                StackSlotKind::ExplicitSlot,
                (g.returns.len() * 8) as u32,
                3,
            ));
            let addr = self.b.ins().stack_addr(types::I64, slot, 0);
            argv.insert(0, addr);
            Some(addr)
        } else {
            None
        };
        let id = self.cg.func_id(callee)?;
        let r = self.func_ref(id);
        let call = self.b.ins().call(r, &argv);
        match area {
            None => Ok(self.b.inst_results(call).to_vec()),
            Some(addr) => Ok(g
                .returns
                .iter()
                .enumerate()
                .map(|(i, t)| {
                    self.b
                        .ins()
                        .load(cl_ty(*t), MemFlagsData::trusted(), addr, (i * 8) as i32)
                })
                .collect()),
        }
    }

    pub(crate) fn term(&mut self, t: &Term) -> Result<(), String> {
        match t {
            Term::Return(vs) => {
                let vs = self.vals(vs)?;
                match self.ret_area {
                    None => {
                        self.b.ins().return_(&vs);
                    }
                    Some(addr) => {
                        for (i, v) in vs.iter().enumerate() {
                            self.b
                                .ins()
                                .store(MemFlagsData::trusted(), *v, addr, (i * 8) as i32);
                        }
                        self.b.ins().return_(&[]);
                    }
                }
            }
            Term::TailCall(callee, args) => {
                let mut argv = self.vals(args)?;
                if let Some(mem) = self.members.get(callee) {
                    if *callee == self.fid {
                        let moving: Vec<ClValue> = argv
                            .iter()
                            .zip(&mem.fixed)
                            .filter(|(_, fx)| !**fx)
                            .map(|(v, _)| *v)
                            .collect();
                        self.b.ins().jump(mem.lp, &block_args(&moving));
                    } else {
                        self.b.ins().jump(mem.pre, &block_args(&argv));
                    }
                } else {
                    if let Some(addr) = self.ret_area {
                        argv.insert(0, addr);
                    }
                    let id = self.cg.func_id(*callee)?;
                    let r = self.func_ref(id);
                    self.b.ins().return_call(r, &argv);
                }
            }
            Term::Yield(vs) => {
                let vs = self.vals(vs)?;
                let merge = *self
                    .yield_to
                    .last()
                    .ok_or("internal error: `yield` outside an `if`")?;
                self.b.ins().jump(merge, &block_args(&vs));
            }
            // Errors end the program: their blocks are cold, and their
            // calls clobber nothing (`cold`), so the values an error
            // reports stay in registers on the paths that go on.
            Term::Error(s) => {
                self.cold_here();
                let args = self.string(*s)?;
                self.call_cold("rt_error", &args)?;
                self.b.ins().trap(TrapCode::unwrap_user(1));
            }
            Term::ErrorWith(parts) => {
                self.cold_here();
                for p in parts {
                    match p {
                        fir::ErrPart::Str(s) => {
                            let args = self.string(*s)?;
                            self.call_cold("rt_err_str", &args)?;
                        }
                        fir::ErrPart::Real(v) => {
                            let x = self.val(*v)?;
                            self.call_cold("rt_err_real", &[x])?;
                        }
                        fir::ErrPart::Bool(v) => {
                            let x = self.val(*v)?;
                            let x = self.b.ins().uextend(types::I32, x);
                            self.call_cold("rt_err_bool", &[x])?;
                        }
                        fir::ErrPart::Site => {
                            self.call_cold("rt_err_site", &[])?;
                        }
                        fir::ErrPart::At(s) => {
                            let args = self.string(*s)?;
                            self.call_cold("rt_err_at", &args)?;
                        }
                        fir::ErrPart::ValueStart => {
                            self.call_cold("rt_err_value_start", &[])?;
                        }
                        fir::ErrPart::ValueEnd => {
                            self.call_cold("rt_err_value_end", &[])?;
                        }
                        fir::ErrPart::Captured(_) => {
                            self.call_cold("rt_err_captured", &[])?;
                        }
                    }
                }
                self.call_cold("rt_err_end", &[])?;
                self.b.ins().trap(TrapCode::unwrap_user(1));
            }
        }
        Ok(())
    }
}
