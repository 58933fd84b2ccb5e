//! Instruction selection for the vector operations (`fir::Op::VecOf` and
//! the others): the objects `base::cell_layout` describes, allocated by
//! the runtime (`rt_alloc_vector`), read and tested inline; the sums of
//! vectors (`VecZero`, `VecPlus`) are the runtime's, but for the one-hot
//! a `vector-ref`'s sensitivity is (`VecOneHot`), a sum of one addition
//! made inline as a cell is; a read of an element tests for a sum first.
//! Lengths and indices are `F64`s in the FIR and integers in memory.

use super::*;
use base::cell_layout::{
    vector_header, SUM_ACC, SUM_BASE_AT, SUM_BYTES, SUM_COUNT_AT, SUM_DENSE_AT, SUM_LOG_AT,
    SUM_TAG, VECTOR_SLOTS_AT, VECTOR_TAG,
};

/// 2^52: an `F64` whole number below it, added to it, is in the mantissa.
const TWO_TO_52: f64 = 4_503_599_627_370_496.0;

/// The largest element function of a `VecBuild` compiled into its loop
/// (FIR instructions).
const INLINE_ELEMENT: usize = 64;

/// The first word of an accumulator of reals (`runtime::gc::vector_sum`).
pub(crate) fn accumulator_header() -> i64 {
    let half = vector_header(1, 0) | SUM_ACC;
    ((u64::from(half) << 32) | u64::from(SUM_TAG)) as i64
}

impl FnBuilder<'_, '_> {
    /// The slots of one element of vectors `#layout`, and how many of
    /// them lead as pointers.
    fn element(&self, layout: u32) -> Result<(usize, usize), String> {
        let slots = self
            .cg
            .m
            .vectors
            .get(&layout)
            .ok_or_else(|| format!("internal error: vector #{layout} has no layout"))?;
        let pointers = slots.iter().take_while(|t| **t == Ty::Ptr).count();
        Ok((slots.len(), pointers))
    }

    /// The one-hots of one real (`VecOneHot`) of `f` whose readers are
    /// all `VecPlus`es, which add their entry to the other operand in the
    /// runtime (`rt_vec_plus_hot`): the backward sweep's step through a
    /// `vector-ref` then makes no one-hot, only the sum's next version.
    /// A `plus` fuses one operand: the second where both could be, so a
    /// one-hot read by a `plus` that fuses the other is made. (A one-hot
    /// has several readers in arms of an `If`: `fir::passes::accumulate`
    /// adds the first one-hot of a chain to the caller's sum in each arm
    /// that reads it.)
    pub(crate) fn fused_one_hots(&self, f: &fir::Func) -> HashSet<Val> {
        let mut uses = vec![0u32; f.types.len()];
        f.body.for_each_use(&mut |v| uses[v.index()] += 1);
        let mut one_hots = HashSet::new();
        let mut plus = Vec::new();
        f.body.for_each_inst(&mut |inst| match &inst.op {
            Op::VecOneHot { layout, .. }
                if self.cg.m.vectors.get(layout).is_some_and(|s| s.len() == 1) =>
            {
                one_hots.extend(inst.results.iter().copied());
            }
            Op::VecPlus(_, a, b) => plus.push((*a, *b)),
            _ => {}
        });
        let mut plus_uses = vec![0u32; f.types.len()];
        for (a, b) in &plus {
            plus_uses[a.index()] += 1;
            plus_uses[b.index()] += 1;
        }
        let fusable = |v: &Val| one_hots.contains(v) && uses[v.index()] == plus_uses[v.index()];
        let mut fused = vec![0u32; f.types.len()];
        for (a, b) in &plus {
            if let Some(v) = [b, a].into_iter().find(|v| fusable(v)) {
                fused[v.index()] += 1;
            }
        }
        one_hots
            .into_iter()
            .filter(|v| uses[v.index()] > 0 && fused[v.index()] == uses[v.index()])
            .collect()
    }

    /// `plus` of `sum` and a one-hot of one real (`hot`: its index, an
    /// `I64`, and its real), the one-hot first if `hot_first` is 1: the
    /// backward sweep's step through a `vector-ref`. Inline when `sum`
    /// is a sum whose log it reads all of and has room for one more
    /// entry (the runtime's `append` in place), which is a sum's next
    /// version but the first of a gradient's reads; else the runtime's
    /// `rt_vec_plus_hot`, which gives the same in that case.
    ///
    /// With `in_place` (the sum is consumed by this `plus`:
    /// `fir::owned`), the fast path counts the entry in the sum's own
    /// header, unless its elements were made (a read before).
    fn plus_hot(
        &mut self,
        sum: ClValue,
        hot: (ClValue, ClValue),
        hot_first: i64,
        in_place: bool,
    ) -> Result<ClValue, String> {
        let flags = MemFlagsData::trusted();
        let i64t = types::I64;
        let slow = self.b.create_block();
        let done = self.b.create_block();
        self.b.append_block_param(done, i64t);
        self.b.set_cold_block(slow);
        if in_place {
            self.add_to_accumulator(sum, hot, done)?;
        }
        let tag = self.b.ins().load(types::I32, flags, sum, 0);
        let sum_tag = self.b.ins().iconst(types::I32, i64::from(SUM_TAG as i32));
        let is_sum = self.b.ins().icmp(IntCC::Equal, tag, sum_tag);
        let has_log = self.b.create_block();
        let check = self.b.create_block();
        let fast = self.b.create_block();
        self.b.ins().brif(is_sum, has_log, &[], slow, &[]);
        self.b.switch_to_block(has_log);
        let log = self.b.ins().load(i64t, flags, sum, SUM_LOG_AT as i32);
        self.b.ins().brif(log, check, &[], slow, &[]);
        self.b.switch_to_block(check);
        let count = self.b.ins().load(i64t, flags, sum, SUM_COUNT_AT as i32);
        let written = self.b.ins().load(i64t, flags, log, VECTOR_SLOTS_AT as i32);
        let log_len = self.b.ins().load(i64t, flags, log, 8);
        let n = self.b.ins().load(i64t, flags, sum, 8);
        let next = self.b.ins().iadd_imm_s(count, 1);
        // It reads all the log has written; the log has room for an entry
        // after its count (its element 0); the sum stays one of fewer
        // additions than elements (else the runtime makes it dense); and,
        // the one-hot first, the sum is the larger (two additions).
        let all = self.b.ins().icmp(IntCC::Equal, written, count);
        let after = self.b.ins().iadd_imm_s(count, 2);
        let room = self
            .b
            .ins()
            .icmp(IntCC::UnsignedLessThanOrEqual, after, log_len);
        let sparse = self.b.ins().icmp(IntCC::UnsignedLessThanOrEqual, next, n);
        let mut ok = self.b.ins().band(all, room);
        ok = self.b.ins().band(ok, sparse);
        if in_place {
            // Elements made before would no longer be the sum's.
            let dense = self.b.ins().load(i64t, flags, sum, SUM_DENSE_AT as i32);
            let none = self.b.ins().icmp_imm_u(IntCC::Equal, dense, 0);
            ok = self.b.ins().band(ok, none);
        }
        if hot_first == 1 {
            let larger = self
                .b
                .ins()
                .icmp_imm_s(IntCC::UnsignedGreaterThanOrEqual, count, 2);
            ok = self.b.ins().band(ok, larger);
        }
        self.b.ins().brif(ok, fast, &[], slow, &[]);
        self.b.switch_to_block(fast);
        // Entry `count` of two words after the log's element 0.
        let off = self.b.ins().imul_imm_s(count, 16);
        let at = self.b.ins().iadd(log, off);
        let entry = (VECTOR_SLOTS_AT + 16) as i32;
        self.b.ins().store(flags, hot.0, at, entry);
        self.b.ins().store(flags, hot.1, at, entry + 8);
        self.b.ins().store(flags, next, log, VECTOR_SLOTS_AT as i32);
        if in_place {
            self.b.ins().store(flags, next, sum, SUM_COUNT_AT as i32);
            self.b.ins().jump(done, &block_args(&[sum]));
            return self.plus_hot_slow(sum, hot, hot_first | 2, slow, done);
        }
        let header = self.b.ins().load(i64t, flags, sum, 0);
        let base = self.b.ins().load(i64t, flags, sum, SUM_BASE_AT as i32);
        let p = self.alloc_cell(SUM_BYTES / 8)?;
        let none = self.b.ins().iconst(i64t, 0);
        for (off, w) in [
            (0, header),
            (8, n),
            (SUM_COUNT_AT, next),
            (SUM_BASE_AT, base),
            (SUM_LOG_AT, log),
            (SUM_DENSE_AT, none),
        ] {
            self.b.ins().store(flags, w, p, off as i32);
        }
        self.b.ins().jump(done, &block_args(&[p]));
        self.plus_hot_slow(sum, hot, hot_first, slow, done)
    }

    /// [`Self::plus_hot`]'s first path when the `plus` consumes `sum`: if
    /// `sum` is an accumulator (`base::cell_layout::SUM_ACC`), its element
    /// is added to in place, and the sum is the result (a jump to `done`).
    /// Else the block it leaves open goes on.
    fn add_to_accumulator(
        &mut self,
        sum: ClValue,
        hot: (ClValue, ClValue),
        done: ClBlock,
    ) -> Result<(), String> {
        let flags = MemFlagsData::trusted();
        let i64t = types::I64;
        let header = self.b.ins().load(i64t, flags, sum, 0);
        let is_acc = self
            .b
            .ins()
            .icmp_imm_s(IntCC::Equal, header, accumulator_header());
        let add = self.b.create_block();
        let other = self.b.create_block();
        self.b.ins().brif(is_acc, add, &[], other, &[]);
        self.b.switch_to_block(add);
        let a = self.b.ins().load(i64t, flags, sum, SUM_BASE_AT as i32);
        let off = self.scaled(hot.0, 8);
        let at = self.b.ins().iadd(a, off);
        let slot = VECTOR_SLOTS_AT as i32;
        let e = self.b.ins().load(types::F64, flags, at, slot);
        let added = self.b.ins().fadd(e, hot.1);
        self.b.ins().store(flags, added, at, slot);
        self.b.ins().jump(done, &block_args(&[sum]));
        self.b.switch_to_block(other);
        Ok(())
    }

    /// [`Self::plus_hot`]'s slow path, in block `slow`, and the join.
    fn plus_hot_slow(
        &mut self,
        sum: ClValue,
        hot: (ClValue, ClValue),
        hot_first: i64,
        slow: ClBlock,
        done: ClBlock,
    ) -> Result<ClValue, String> {
        self.b.switch_to_block(slow);
        let first = self.b.ins().iconst(types::I64, hot_first);
        let r = self
            .call_cold("rt_vec_plus_hot", &[sum, hot.0, hot.1, first])?
            .ok_or("internal error: rt_vec_plus_hot result")?;
        self.b.ins().jump(done, &block_args(&[r]));
        self.b.switch_to_block(done);
        Ok(self.b.block_params(done)[0])
    }

    /// A new vector of `len` (an `I64`) elements of `layout`, its length
    /// and header written (and its slots zeroed, if it has pointers).
    fn alloc_vector(&mut self, layout: u32, len: ClValue) -> Result<ClValue, String> {
        let (stride, pointers) = self.element(layout)?;
        let header = self
            .b
            .ins()
            .iconst(types::I64, i64::from(vector_header(stride, pointers)));
        self.call_import("rt_alloc_vector", &[header, len])?
            .ok_or_else(|| "internal error: rt_alloc_vector result".to_string())
    }

    /// `0 <= x`, `x <= max` (if any) and `x` integral: false for a NaN.
    /// Integral: equal to itself truncated (one instruction with SSE4.1);
    /// an infinity passes it, and the callers bound `x` further.
    fn is_whole(&mut self, x: ClValue, max: Option<ClValue>) -> ClValue {
        let zero = self.b.ins().f64const(0.0);
        let low = self.b.ins().fcmp(FloatCC::GreaterThanOrEqual, x, zero);
        let int = self.b.ins().trunc(x);
        let whole = self.b.ins().fcmp(FloatCC::Equal, int, x);
        let ok = self.b.ins().band(low, whole);
        match max {
            Some(m) => {
                let high = self.b.ins().fcmp(FloatCC::LessThanOrEqual, x, m);
                self.b.ins().band(ok, high)
            }
            None => ok,
        }
    }

    /// The integer an index (an `F64` checked whole and below a length,
    /// so below 2^40) stands for, without the branches of a saturating
    /// conversion: added to 2^52, its bits are those of 2^52 with the
    /// index in the mantissa, so they less 2^52's are the index. Run once
    /// per element read.
    fn index_int(&mut self, x: ClValue) -> ClValue {
        let shifted = self.shifted(x);
        self.shifted_int(shifted)
    }

    /// The bits of `shifted` (an index plus 2^52) less those of 2^52.
    fn shifted_int(&mut self, shifted: ClValue) -> ClValue {
        let bits = self
            .b
            .ins()
            .bitcast(types::I64, MemFlagsData::new(), shifted);
        self.b.ins().iadd_imm_s(bits, -(TWO_TO_52.to_bits() as i64))
    }

    /// `x + 2^52`, which [`Self::index_int`] and the check of an index
    /// share.
    fn shifted(&mut self, x: ClValue) -> ClValue {
        let magic = self.b.ins().f64const(TWO_TO_52);
        self.b.ins().fadd(x, magic)
    }

    /// Whether `i` is an index of `v`: `i + 2^52` rounds to nothing else
    /// than itself only if `i` is whole (or an infinity, or -0, which is 0)
    /// and below 2^52, and then the integer [`Self::index_int`] gives is
    /// `i`'s; it is below the length only if it is one (a negative `i`,
    /// an infinity or a NaN gives bits below 2^52's or 2^52 and more above
    /// them, so the comparison alone fails them).
    fn index_ok(&mut self, v: Val, i: Val) -> Result<ClValue, String> {
        let x = self.val(i)?;
        // A whole `i` (`fir::whole`) needs only the comparison: an
        // infinity or a NaN fails it.
        let known_whole = self.whole(i);
        let (k, whole) = match self.known.get(i, Fact::Int) {
            Some(k) if known_whole => (k, None),
            known => {
                let shifted = self.shifted(x);
                let whole = (!known_whole).then(|| {
                    let magic = self.b.ins().f64const(TWO_TO_52);
                    let back = self.b.ins().fsub(shifted, magic);
                    self.b.ins().fcmp(FloatCC::Equal, back, x)
                });
                // Cranelift's optimiser is off: the integer is made of
                // this sum, not of another.
                let k = known.unwrap_or_else(|| {
                    let k = self.shifted_int(shifted);
                    self.known.learn(i, Fact::Int, k);
                    k
                });
                (k, whole)
            }
        };
        let vec = self.val(v)?;
        let n = self.vector_len(vec);
        let below = self.b.ins().icmp(IntCC::UnsignedLessThan, k, n);
        Ok(match whole {
            Some(w) => self.b.ins().band(w, below),
            None => below,
        })
    }

    /// A length or an index (an `I64` below 2^40) as the `F64` the FIR
    /// holds: one signed conversion, where an unsigned one branches.
    fn count_real(&mut self, n: ClValue) -> ClValue {
        self.b.ins().fcvt_from_sint(types::F64, n)
    }

    /// The header's second half of the sums of vectors `#layout`.
    fn sum_header(&mut self, layout: u32) -> Result<ClValue, String> {
        let (stride, _) = self.element(layout)?;
        Ok(self
            .b
            .ins()
            .iconst(types::I64, i64::from(vector_header(stride, 0))))
    }

    /// [`Self::dense`] of FIR value `v`, made once where it dominates.
    fn dense_of(&mut self, v: Val) -> Result<ClValue, String> {
        if let Some(d) = self.known.get(v, Fact::Dense) {
            return Ok(d);
        }
        let d = self.val(v)?;
        let d = self.dense(d)?;
        self.known.learn(v, Fact::Dense, d);
        Ok(d)
    }

    /// The length of FIR vector `v` as an `F64`, made once where it
    /// dominates.
    pub(crate) fn len_of(&mut self, v: Val) -> Result<ClValue, String> {
        if let Some(n) = self.known.get(v, Fact::Len) {
            return Ok(n);
        }
        let x = self.val(v)?;
        let n = self.vector_len(x);
        let n = self.count_real(n);
        self.known.learn(v, Fact::Len, n);
        Ok(n)
    }

    /// The whole number from 0 to `MAX_VECTOR_LEN` that FIR value `v`
    /// is, if it is such a constant: read off the Cranelift constant that
    /// stands for it, so that nothing is made for constants never used
    /// as indices (an integer made for every whole constant cost saddle's
    /// gradients up to 4.7% more instructions).
    pub(crate) fn const_index(&self, v: Val) -> Option<i64> {
        let x = self.vals.get(v.index()).copied().flatten()?;
        let ValueDef::Result(inst, 0) = self.b.func.dfg.value_def(x) else {
            return None;
        };
        let InstructionData::UnaryIeee64 {
            opcode: Opcode::F64const,
            imm,
        } = self.b.func.dfg.insts[inst]
        else {
            return None;
        };
        index_value(f64::from_bits(imm.bits()))
    }

    /// For `x == y` with one side a constant index and the other a whole
    /// real (`fir::whole`) whose integer is known (an index a loop counts
    /// in integers): the whole side and the constant. Their integers
    /// (`index_int`) are then equal exactly when they are: an infinity,
    /// a NaN, a negative number or one of 2^52 or more gives an integer
    /// outside 0 to 2^52 (and -0 gives 0). The loops over short vectors
    /// that inlining unrolls test the index against the length at each
    /// step: a float comparison with a constant made for it, six
    /// instructions, where the integers' is two.
    pub(crate) fn index_eq(&self, x: Val, y: Val) -> Option<(Val, i64)> {
        // A parameter's integer is made at its first comparison, which in
        // a loop unrolled by inlining dominates the others; made for one
        // comparison, it costs what it saves (saddle's gradients: 1.5%
        // more instructions when made for any).
        let param =
            |v: Val| (self.cg.tested[self.fid.index()].get(v.index()).copied()).unwrap_or(false);
        let int = |v: Val| self.whole(v) && (param(v) || self.known.get(v, Fact::Int).is_some());
        match (self.const_index(x), self.const_index(y)) {
            (_, Some(k)) if int(x) => Some((x, k)),
            (Some(k), _) if int(y) => Some((y, k)),
            _ => None,
        }
    }

    /// Whether FIR value `v` is whole (`fir::whole`).
    pub(crate) fn whole(&self, v: Val) -> bool {
        (self.cg.whole[self.fid.index()].get(v.index()).copied()).unwrap_or(false)
    }

    /// The integer of `x + y` or `x - y` ([`Self::index_int`]), when one
    /// operand is a constant index and the other a whole real whose
    /// integer is known (an index the loop counts in integers): the
    /// integer plus or minus the constant. `(vector-ref y (- i 1))` in a
    /// `build-vector` converted `i - 1` back to an integer at each
    /// element, six instructions where this takes one. For a whole
    /// value outside 0 to 2^52 the integer is not its value, but stays
    /// outside 0 to 2^52 - 2^40 after the step, so that every index check
    /// and [`Self::index_eq`] still answers as for the real.
    pub(crate) fn offset_int(&mut self, op: FBin, x: Val, y: Val) -> Option<ClValue> {
        let int = |v: Val| self.known.get(v, Fact::Int).filter(|_| self.whole(v));
        let (a, k) = match op {
            FBin::Add | FBin::PlusAdd => match (int(x), self.const_index(y)) {
                (Some(a), Some(k)) => (a, k),
                _ => (int(y)?, self.const_index(x)?),
            },
            FBin::Sub => (int(x)?, -self.const_index(y)?),
            _ => return None,
        };
        Some(self.b.ins().iadd_imm_s(a, k))
    }

    /// [`Self::index_int`] of FIR value `i`, made once where it dominates.
    pub(crate) fn int_of(&mut self, i: Val) -> Result<ClValue, String> {
        if let Some(x) = self.known.get(i, Fact::Int) {
            return Ok(x);
        }
        // A constant index is an integer constant: converted at run time,
        // each element of a short vector read by constant indices (an
        // unrolled fold) cost four instructions more than its load.
        if let Some(k) = self.const_index(i) {
            let x = self.b.ins().iconst(types::I64, k);
            self.known.learn(i, Fact::Int, x);
            return Ok(x);
        }
        let x = self.val(i)?;
        let x = self.index_int(x);
        self.known.learn(i, Fact::Int, x);
        Ok(x)
    }

    /// The parameters of `f` whose elements, and those whose lengths, are
    /// best made before its loop: those its self tail calls pass back
    /// unchanged (`fixed`) and it reads elements, or the length, of. None
    /// if `f` does not loop: made on entry, the
    /// elements of a sum read on one path only would be made on every
    /// call. Not one a `plus` adds to: making its elements early would
    /// stop that `plus` from adding in place.
    pub(crate) fn read_vectors(
        &self,
        fid: FuncId,
        f: &fir::Func,
        fixed: &[bool],
    ) -> (Vec<Val>, Vec<Val>) {
        let mut callees = Vec::new();
        tail_callees(&f.body, &mut callees);
        if !callees.contains(&fid) {
            return (Vec::new(), Vec::new());
        }
        vector_params(f, fixed)
    }

    /// The vector of the elements of `v`: `v` itself, unless it is a sum
    /// of vectors (reverse mode's sensitivities), whose elements the
    /// runtime makes the first time they are read.
    pub(crate) fn dense(&mut self, v: ClValue) -> Result<ClValue, String> {
        let tag = self.b.ins().load(types::I32, MemFlagsData::trusted(), v, 0);
        let is_vector = self
            .b
            .ins()
            .icmp_imm_s(IntCC::Equal, tag, i64::from(VECTOR_TAG as i32));
        self.unless_cold(is_vector, v, |this| {
            this.call_cold("rt_vec_dense", &[v])?
                .ok_or_else(|| "internal error: rt_vec_dense result".into())
        })
    }

    /// `fir::Op::StackPush` of `vals` on the stack of `k` elements (an
    /// `F64`) in the buffer `buf`: in place when the buffer's count is
    /// `k` and it has room for one more element, else in the copy
    /// `rt_stack_grow` makes (with room for `hint` more pushes, if given).
    fn stack_push(
        &mut self,
        stride: usize,
        buf: ClValue,
        k: ClValue,
        vals: &[ClValue],
        hint: Option<ClValue>,
    ) -> Result<ClValue, String> {
        let flags = MemFlagsData::trusted();
        let count_at = VECTOR_SLOTS_AT as i32;
        let count = self.b.ins().load(types::F64, flags, buf, count_at);
        let len = self.vector_len(buf);
        let ki = self.index_int(k);
        // Element 0 is the count: the new top is element k + 1.
        let top = self.b.ins().iadd_imm_s(ki, 1);
        let same = self.b.ins().fcmp(FloatCC::Equal, count, k);
        let room = self.b.ins().icmp(IntCC::UnsignedLessThan, top, len);
        let ok = self.b.ins().band(same, room);
        let b = self.unless_cold(ok, buf, |this| {
            let hint = match hint {
                Some(r) => this.b.ins().fcvt_to_uint_sat(types::I64, r),
                None => this.b.ins().iconst(types::I64, 0),
            };
            this.call_cold("rt_stack_grow", &[buf, ki, hint])?
                .ok_or_else(|| "internal error: rt_stack_grow result".into())
        })?;
        let off = self.b.ins().imul_imm_s(top, 8 * stride as i64);
        let at = self.b.ins().iadd(b, off);
        for (j, v) in vals.iter().enumerate() {
            self.b
                .ins()
                .store(flags, *v, at, (VECTOR_SLOTS_AT + 8 * j) as i32);
        }
        let one = self.b.ins().f64const(1.0);
        let next = self.b.ins().fadd(k, one);
        self.b.ins().store(flags, next, b, count_at);
        Ok(b)
    }

    /// `i * bytes`: a shift when `bytes` is a power of two, which the
    /// address of the load or store using it takes in (`[a + i*8]`), where
    /// a multiplication is an instruction of its own.
    pub(crate) fn scaled(&mut self, i: ClValue, bytes: i64) -> ClValue {
        if bytes > 0 && bytes & (bytes - 1) == 0 {
            self.b
                .ins()
                .ishl_imm_u(i, i64::from(bytes.trailing_zeros()))
        } else {
            self.b.ins().imul_imm_s(i, bytes)
        }
    }

    /// The length of vector `v`, an `I64`.
    pub(crate) fn vector_len(&mut self, v: ClValue) -> ClValue {
        self.b.ins().load(types::I64, MemFlagsData::trusted(), v, 8)
    }

    pub(crate) fn vector_op(&mut self, inst: &fir::Inst) -> Result<(), String> {
        let flags = MemFlagsData::trusted();
        let result = match &inst.op {
            Op::VecOf(layout, n, slots) => {
                let len = self.b.ins().iconst(types::I64, i64::from(*n));
                let p = self.alloc_vector(*layout, len)?;
                let slots = self.vals(slots)?;
                for (k, x) in slots.into_iter().enumerate() {
                    let off = (VECTOR_SLOTS_AT + 8 * k) as i32;
                    self.b.ins().store(flags, x, p, off);
                }
                p
            }
            Op::VecBuild {
                layout,
                len,
                func,
                args,
                at,
                state,
            } => self.vec_build(*layout, *len, *func, args, *at, *state)?,
            Op::VecLen(v) => self.len_of(*v)?,
            Op::VecIndexOk(v, i) => self.index_ok(*v, *i)?,
            Op::IsCount(n) => {
                let n = self.val(*n)?;
                let max = self.b.ins().f64const(fir::MAX_VECTOR_LEN);
                self.is_whole(n, Some(max))
            }
            Op::VecLoad(v, i, layout, slot) => {
                let (stride, _) = self.element(*layout)?;
                let v = self.dense_of(*v)?;
                // The index was checked: an integer below the length.
                let i = self.int_of(*i)?;
                let off = self.scaled(i, 8 * stride as i64);
                let at = self.b.ins().iadd(v, off);
                let r = match inst.results[..] {
                    [r] => r,
                    _ => return Err("internal error: `vec_load` gives one result".into()),
                };
                let ty = cl_ty(self.f.types[r.index()]);
                let off = (VECTOR_SLOTS_AT + 8 * *slot as usize) as i32;
                self.b.ins().load(ty, flags, at, off)
            }
            Op::StackPush {
                layout,
                buf,
                k,
                vals,
                room,
            } => {
                let (stride, _) = self.element(*layout)?;
                let (buf, k) = (self.val(*buf)?, self.val(*k)?);
                let vals = self.vals(vals)?;
                let room = match room {
                    Some(r) => Some(self.val(*r)?),
                    None => None,
                };
                self.stack_push(stride, buf, k, &vals, room)?
            }
            Op::VecZero(layout, len) => {
                let header = self.sum_header(*layout)?;
                let len = self.val(*len)?;
                let n = self.b.ins().fcvt_to_uint_sat(types::I64, len);
                self.call_import("rt_vec_zero", &[header, n])?
                    .ok_or("internal error: rt_vec_zero result")?
            }
            Op::VecOneHot { i, vals, .. }
                if inst.results.len() == 1 && self.hot.contains(&inst.results[0]) =>
            {
                let i = self.int_of(*i)?;
                let x = self.val(vals[0])?;
                self.deferred.insert(inst.results[0], (i, x));
                return Ok(());
            }
            Op::VecOneHot {
                layout,
                len,
                i,
                vals,
            } => {
                // Made inline, as a cell is: a call of the runtime cost
                // 70 instructions per `vector-ref` a gradient reads.
                let (stride, _) = self.element(*layout)?;
                let (len, i) = (self.val(*len)?, self.val(*i)?);
                let vals = self.vals(vals)?;
                let p = self.alloc_cell(SUM_BYTES / 8 + 1 + stride)?;
                let header = (u64::from(vector_header(stride, 0)) << 32) | u64::from(SUM_TAG);
                let header = self.b.ins().iconst(types::I64, header as i64);
                let n = self.index_int(len);
                let i = self.index_int(i);
                let one = self.b.ins().iconst(types::I64, 1);
                let none = self.b.ins().iconst(types::I64, 0);
                for (off, w) in [
                    (0, header),
                    (8, n),
                    (SUM_COUNT_AT, one),
                    (SUM_BASE_AT, none),
                    (SUM_LOG_AT, none),
                    (SUM_DENSE_AT, none),
                    (SUM_BYTES, i),
                ] {
                    self.b.ins().store(flags, w, p, off as i32);
                }
                for (k, x) in vals.into_iter().enumerate() {
                    self.b
                        .ins()
                        .store(flags, x, p, (SUM_BYTES + 8 + 8 * k) as i32);
                }
                p
            }
            // Sums of rows are the runtime's, one-hots included: a row
            // read costs as much as the call.
            Op::VecZeroOf { row, of, .. } => {
                let header = self.sum_header(*row)?;
                let of = self.val(*of)?;
                self.call_import("rt_vec_zero_of", &[header, of])?
                    .ok_or("internal error: rt_vec_zero_of result")?
            }
            Op::VecOneHotOf {
                row, of, i, val, ..
            } => {
                let header = self.sum_header(*row)?;
                let (of, i, val) = (self.val(*of)?, self.val(*i)?, self.val(*val)?);
                let i = self.index_int(i);
                self.call_import("rt_vec_one_hot_of", &[header, of, i, val])?
                    .ok_or("internal error: rt_vec_one_hot_of result")?
            }
            Op::VecPlus(_, a, b)
                if self.deferred.contains_key(b) || self.deferred.contains_key(a) =>
            {
                let (sum, hot, hot_first) = match self.deferred.get(b) {
                    Some(h) => (*a, *h, 0),
                    None => (*b, self.deferred[a], 1),
                };
                let in_place = self.cg.consumed[self.fid.index()].contains(&(inst.results[0], sum));
                match if in_place {
                    self.acc_add(sum, hot)
                } else {
                    None
                } {
                    Some(r) => r,
                    None => {
                        let sum = self.val(sum)?;
                        self.plus_hot(sum, hot, hot_first, in_place)?
                    }
                }
            }
            Op::VecPlus(_, a, b) => {
                let consumed = &self.cg.consumed[self.fid.index()];
                let r = inst.results[0];
                let owned = i64::from(consumed.contains(&(r, *a)))
                    | (i64::from(consumed.contains(&(r, *b))) << 1);
                let (a, b) = (self.val(*a)?, self.val(*b)?);
                if owned == 0 {
                    self.call_import("rt_vec_plus", &[a, b])?
                } else {
                    let owned = self.b.ins().iconst(types::I64, owned);
                    self.call_import("rt_vec_plus_owned", &[a, b, owned])?
                }
                .ok_or("internal error: rt_vec_plus result")?
            }
            _ => return Err("internal error: not a vector operation".into()),
        };
        match inst.results[..] {
            [r] => self.set(r, result),
            _ => Err("internal error: a vector operation gives one result".into()),
        }
    }

    /// A loop calling `func(args..., i)` for each element `i`, storing
    /// what it returns in the element. While it runs, a collection may
    /// happen and the elements filled so far may point to cells younger
    /// than the vector: the runtime is told of a vector with pointers
    /// (`rt_vec_build_begin`, `rt_vec_build_end`), which it then traces
    /// as if it were new.
    /// The slots of element `i` (an `I64`; `argv` ends with it as a real)
    /// made by `func`'s body in place of a call of it, if `func` is small
    /// and leaves only by its last `Return`: a call per element cost more
    /// than the element (forward mode's vectors of primals and tangents:
    /// a load, a multiplication and an addition each). Its values are
    /// numbered apart from the caller's, so what is known of them and of
    /// the caller's is kept apart too.
    fn inline_element(
        &mut self,
        func: FuncId,
        argv: &[ClValue],
        i: ClValue,
        before: &[(Val, Fact, ClValue)],
    ) -> Result<Option<Vec<ClValue>>, String> {
        let g = self.cg.m.func(func);
        let Term::Return(rets) = &g.body.term else {
            return Ok(None);
        };
        if !self.inlines_element(func, argv.len()) {
            return Ok(None);
        }
        self.inlining.push(func);
        let mut vals: Vec<Option<ClValue>> = argv.iter().map(|x| Some(*x)).collect();
        vals.resize(g.types.len(), None);
        let saved_vals = std::mem::replace(&mut self.vals, vals);
        let saved_f = std::mem::replace(&mut self.f, g);
        let saved_fid = std::mem::replace(&mut self.fid, func);
        let saved_known = std::mem::take(&mut self.known);
        let saved_mode = self.int_mode.take();
        let hot = self.fused_one_hots(g);
        let saved_hot = std::mem::replace(&mut self.hot, hot);
        let saved_deferred = std::mem::take(&mut self.deferred);
        // The index, as the integer it is.
        self.known.learn(Val::new(argv.len() - 1), Fact::Int, i);
        for (v, fact, x) in before {
            self.known.learn(*v, *fact, *x);
        }
        let mut made = Ok(());
        for inst in &g.body.insts {
            made = self.inst(inst);
            if made.is_err() {
                break;
            }
        }
        let slots = made.and_then(|()| self.vals(rets));
        self.inlining.pop();
        self.vals = saved_vals;
        self.f = saved_f;
        self.fid = saved_fid;
        self.known = saved_known;
        self.int_mode = saved_mode;
        self.hot = saved_hot;
        self.deferred = saved_deferred;
        slots.map(Some)
    }

    /// Whether `vec_build` makes the elements by `func`'s code inline,
    /// called with `args` arguments: not within its own code.
    fn inlines_element(&self, func: FuncId, args: usize) -> bool {
        let g = self.cg.m.func(func);
        !self.inlining.contains(&func)
            && matches!(g.body.term, Term::Return(_))
            && g.body.size() <= INLINE_ELEMENT
            && g.body.single_exit()
            && args == g.params.len()
    }

    /// What the inlined code of `func` would make at every element of
    /// vectors among its first `fixed` parameters (the arguments `args`,
    /// the same at every element), made once before the loop: the dense
    /// vector of each one it reads elements of, the length of each one it
    /// measures. Per element, each read tested the vector's tag again
    /// (ode's Runge-Kutta steps: a load, a compare and a branch per
    /// element read).
    fn element_facts(
        &mut self,
        func: FuncId,
        args: &[ClValue],
    ) -> Result<Vec<(Val, Fact, ClValue)>, String> {
        let g = self.cg.m.func(func);
        let fixed: Vec<bool> = (0..g.params.len()).map(|p| p < args.len()).collect();
        let (dense, measured) = vector_params(g, &fixed);
        let mut facts = Vec::new();
        for p in dense {
            let d = self.dense(args[p.index()])?;
            facts.push((p, Fact::Dense, d));
        }
        for p in measured {
            let n = self.vector_len(args[p.index()]);
            facts.push((p, Fact::Len, self.count_real(n)));
        }
        Ok(facts)
    }

    fn vec_build(
        &mut self,
        layout: u32,
        len: Val,
        func: FuncId,
        args: &[Val],
        at: Option<StrId>,
        state: Option<Val>,
    ) -> Result<ClValue, String> {
        let (stride, pointers) = self.element(layout)?;
        let flags = MemFlagsData::trusted();
        let len = self.val(len)?;
        let args = self.vals(args)?;
        let state = match state {
            Some(v) => Some(self.val(v)?),
            None => None,
        };
        // Made before the vector, which nothing may see unfilled.
        let calls = args.len() + usize::from(state.is_some()) + 1;
        let before = if self.inlines_element(func, calls) {
            self.element_facts(func, &args)?
        } else {
            Vec::new()
        };
        // The length was checked: a whole number within bounds.
        let n = self.b.ins().fcvt_to_uint_sat(types::I64, len);
        let v = self.alloc_vector(layout, n)?;
        if pointers > 0 {
            self.call_import("rt_vec_build_begin", &[v])?;
        }
        let saved = match at {
            Some(s) => Some(self.enter_site(s)?),
            None => None,
        };
        let head = self.b.create_block();
        let body = self.b.create_block();
        let done = self.b.create_block();
        self.b.append_block_param(head, types::I64);
        self.b.append_block_param(head, types::I64);
        // The state of the next call, if the calls thread one.
        if state.is_some() {
            self.b.append_block_param(head, types::I64);
        }
        let zero = self.b.ins().iconst(types::I64, 0);
        let first = self.b.ins().iadd_imm_s(v, VECTOR_SLOTS_AT as i64);
        let mut start = vec![zero, first];
        start.extend(state);
        self.b.ins().jump(head, &block_args(&start));
        self.b.switch_to_block(head);
        let (i, addr, now) = match self.b.block_params(head)[..] {
            [i, addr] => (i, addr, zero),
            [i, addr, now] => (i, addr, now),
            _ => return Err("internal error: the loop of `vec_build`".into()),
        };
        let more = self.b.ins().icmp(IntCC::UnsignedLessThan, i, n);
        self.b.ins().brif(more, body, &[], done, &[]);
        self.b.switch_to_block(body);
        let index = self.count_real(i);
        let mut argv = args;
        if state.is_some() {
            argv.push(now);
        }
        argv.push(index);
        let mut slots = match self.inline_element(func, &argv, i, &before)? {
            Some(slots) => slots,
            None => self.call_with(func, argv)?,
        };
        let next = match state {
            Some(_) => slots.pop().unwrap_or(now),
            None => now,
        };
        if slots.len() != stride {
            return Err(format!(
                "internal error: `{}` returns no element of vector #{layout}",
                self.cg.m.func(func).name
            ));
        }
        for (k, x) in slots.into_iter().enumerate() {
            self.b.ins().store(flags, x, addr, (8 * k) as i32);
        }
        let next_i = self.b.ins().iadd_imm_s(i, 1);
        let next_addr = self.b.ins().iadd_imm_s(addr, 8 * stride as i64);
        let mut again = vec![next_i, next_addr];
        if state.is_some() {
            again.push(next);
        }
        self.b.ins().jump(head, &block_args(&again));
        self.b.switch_to_block(done);
        if let Some(saved) = saved {
            self.leave_site(saved);
        }
        if pointers > 0 {
            self.call_import("rt_vec_build_end", &[v])?;
        }
        Ok(v)
    }
}

/// The parameters of `f` among `fixed` whose elements it reads (and adds
/// nothing to), and those whose lengths it reads: what is best made once
/// before a loop that runs `f`'s code with those parameters unchanged.
/// Not one a `plus` adds to: making its elements early would stop that
/// `plus` from adding in place.
fn vector_params(f: &fir::Func, fixed: &[bool]) -> (Vec<Val>, Vec<Val>) {
    let mut read = HashSet::new();
    let mut measured = HashSet::new();
    let mut summed = HashSet::new();
    f.body.for_each_inst(&mut |inst| match &inst.op {
        Op::VecLoad(v, ..) => {
            read.insert(*v);
        }
        Op::VecLen(v) | Op::VecIndexOk(v, _) => {
            measured.insert(*v);
        }
        Op::VecPlus(_, a, b) => {
            summed.extend([*a, *b]);
        }
        _ => {}
    });
    let fixed = |set: &HashSet<Val>| {
        (0..f.params.len())
            .map(Val::new)
            .filter(|p| fixed[p.index()] && set.contains(p))
            .collect::<Vec<_>>()
    };
    let dense = fixed(&read)
        .into_iter()
        .filter(|p| !summed.contains(p))
        .collect();
    (dense, fixed(&measured))
}

/// The index that constant `c` is: a whole number from 0 to
/// `MAX_VECTOR_LEN`.
fn index_value(c: f64) -> Option<i64> {
    ((0.0..=fir::MAX_VECTOR_LEN).contains(&c) && c.fract() == 0.0).then_some(c as i64)
}

/// Per parameter of `f`: whether `f` tests it for equality with whole
/// constants more than once ([`FnBuilder::index_eq`]).
pub(crate) fn tested_params(f: &fir::Func) -> Vec<bool> {
    let mut consts = HashSet::new();
    f.body.for_each_inst(&mut |i| {
        if let Op::F64Const(c) = i.op {
            if index_value(c).is_some() {
                consts.insert(i.results[0]);
            }
        }
    });
    let mut tests = vec![0usize; f.params.len()];
    f.body.for_each_inst(&mut |i| {
        if let Op::FCmp(Cmp::Eq, x, y) = i.op {
            for (p, c) in [(x, y), (y, x)] {
                if p.index() < tests.len() && consts.contains(&c) {
                    tests[p.index()] += 1;
                }
            }
        }
    });
    tests.into_iter().map(|n| n > 1).collect()
}
