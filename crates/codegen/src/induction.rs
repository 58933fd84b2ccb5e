//! Integer counters of loops: a loop's index, and the count it steps down
//! with, are `F64`s in the FIR, as VLAD's numbers are. Stepping one is a
//! floating-point addition (4 cycles of latency, and the next step waits
//! for it), and using it as an index converts it (five instructions) at
//! every step. A loop whose counters allow it is compiled twice: as it
//! is, and with them as 64-bit integers (one-cycle additions, indices as
//! they are, compared with integers).
//!
//! A counter is a parameter of a loop (a function that calls itself) that
//! every self call changes by the same sign, by at most 1 (`i + 1`, `i -
//! 1`, or `i`), and that the analysis knows is whole (`fir::whole`). The
//! values it derives are it plus or minus small whole constants. Anything
//! may read them; the integer version reads them as integers where an
//! index, a comparison with a whole number or the next step does, and
//! turns them into `F64`s (exactly) anywhere else.
//!
//! The integers are the reals exactly while the counters stay far inside
//! the 2^53 where every whole `F64` is exact (and none is -0). The integer
//! loop is entered only when they start as integers within 2^31 of 0 (the
//! integer made a real again has the real's bits), and left for the loop
//! as it is, with the same values as reals, at a self call that would
//! take one out of that: no program sees which of the two ran. Of
//! counters every self call steps alike, one is tested; the others stay
//! within 2^32 of it. None is when one of them stops at a bound
//! (`bounds`): it stays between its start and the bound. The parameters
//! the loop keeps fixed that it compares counters with are checked and
//! converted on entry alike.
//!
//! Input: a FIR function and what `fir::whole` knows of its values.
//! Output: its [`Counters`], and the integer copy's instructions, built
//! by [`FnBuilder::int_inst`] and [`FnBuilder::int_term`] into the same
//! Cranelift function as the loop as it is.

use super::*;
use std::rc::Rc;

mod bounds;
mod tied;
use bounds::{Bound, End, InRange, Limit};
use tied::Tied;

/// The largest counter value the integer loop holds (a 32-bit immediate
/// in an x86-64 comparison).
pub(crate) const COUNTER_LIMIT: i64 = (1 << 31) - 1;

/// The largest offset a derived value has from its counter: far below
/// what would take an integer near the limit out of exact reals.
const MAX_OFFSET: i64 = 16;

/// The largest loop compiled twice, in FIR instructions.
const MAX_BODY: usize = 2_000;

/// What the integer version of one loop holds as integers.
#[derive(Debug, Default)]
pub(crate) struct Counters {
    /// Per value of the function that is a counter or derived from one:
    /// the counter (a parameter's position) and its offset.
    pub(crate) derived: HashMap<Val, (usize, i64)>,
    /// The counters, by position, with their direction (+1 up, -1 down,
    /// 0 never changed by a self call that changes others).
    pub(crate) params: Vec<(usize, i64)>,
    /// The counters a self call tests against the limit: one of each set
    /// that every self call steps alike (an index and the count of steps
    /// left), whose differences stay as they came in.
    pub(crate) checked: Vec<usize>,
    /// The fixed parameters compared with a counter: converted on entry.
    pub(crate) fixed_ints: Vec<usize>,
    /// The fixed parameters a counter is checked as an index of: their
    /// lengths are loaded once, on entry.
    pub(crate) measured: Vec<usize>,
    /// The whole constants a counter may be compared with.
    pub(crate) consts: HashMap<Val, i64>,
    /// The counters a step takes toward the bound the loop leaves at.
    pub(crate) bounds: Vec<Bound>,
    /// The index checks the entry answers for every step.
    pub(crate) in_range: Vec<InRange>,
    /// The steps only self calls read: added where each self call passes
    /// them, so the counter's register is free to take its next value
    /// (made where the FIR makes it, the step kept the counter alive
    /// across the rest of the body and cost a move of register per step).
    pub(crate) late: HashSet<Val>,
    /// The counters kept as another's plus a constant (`tied`).
    pub(crate) tied: Tied,
}

impl Counters {
    /// Whether parameter `j` is a counter.
    pub(crate) fn is_counter(&self, j: usize) -> bool {
        self.params.iter().any(|p| p.0 == j)
    }

    /// Whether parameter `j` is a parameter of the integer version: a
    /// tied counter is not.
    pub(crate) fn passed(&self, j: usize) -> bool {
        !self.tied.to.contains_key(&j)
    }
}

/// The counters of `f` (function `fid`), if it loops and has any.
pub(crate) fn counters(
    fid: FuncId,
    f: &fir::Func,
    fixed: &[bool],
    whole: &[bool],
) -> Option<Rc<Counters>> {
    if f.body.size() > MAX_BODY {
        return None;
    }
    // A loop that records a step on a stack (a forward sweep's tape)
    // keeps its count as the real the stack stores: its integer copy only
    // turned it back each step, and lse-R's peak grew by 8 MB (72 MB
    // against 64), a buffer the stack had been copied out of kept alive
    // from the larger frame, for no gain in time (0.95 of it).
    let mut pushes = false;
    f.body
        .for_each_inst(&mut |i| pushes |= matches!(i.op, Op::StackPush { .. }));
    if pushes {
        return None;
    }
    let mut consts: HashMap<Val, f64> = HashMap::new();
    f.body.for_each_inst(&mut |inst| {
        if let (Op::F64Const(c), [r]) = (&inst.op, &inst.results[..]) {
            consts.insert(*r, *c);
        }
    });
    let small = |c: f64| c.trunc() == c && c.abs() <= MAX_OFFSET as f64;
    let mut derived: HashMap<Val, (usize, i64)> = (0..f.params.len())
        .filter(|&j| !fixed[j] && f.params[j] == Ty::F64 && whole.get(j).copied().unwrap_or(false))
        .map(|j| (Val::new(j), (j, 0)))
        .collect();
    if derived.is_empty() {
        return None;
    }
    f.body.for_each_inst(&mut |inst| {
        let (Op::FBin(op @ (FBin::Add | FBin::PlusAdd | FBin::Sub), x, y), [r]) =
            (&inst.op, &inst.results[..])
        else {
            return;
        };
        let konst = |v: &Val| consts.get(v).copied().filter(|c| small(*c));
        let step = match (derived.get(x), derived.get(y)) {
            (Some(&(j, o)), None) => konst(y).map(|c| {
                let c = c as i64;
                (j, if *op == FBin::Sub { o - c } else { o + c })
            }),
            (None, Some(&(j, o))) if *op != FBin::Sub => konst(x).map(|c| (j, o + c as i64)),
            _ => None,
        };
        if let Some((j, o)) = step.filter(|s| s.1.abs() <= MAX_OFFSET) {
            derived.insert(*r, (j, o));
        }
    });
    // Each self call passes a counter itself, plus or minus at most 1, in
    // one direction.
    let mut dir: HashMap<usize, i64> = HashMap::new();
    let mut steps: HashMap<usize, Vec<i64>> = HashMap::new();
    let mut bad: HashSet<usize> = HashSet::new();
    let calls = f.body.tail_calls_to(fid);
    for args in &calls {
        for (j, a) in args.iter().enumerate() {
            if !derived.contains_key(&Val::new(j)) || derived.get(&Val::new(j)) != Some(&(j, 0)) {
                continue;
            }
            match derived.get(a) {
                Some(&(k, o)) if k == j && o.abs() <= 1 => {
                    steps.entry(j).or_default().push(o);
                    if o != 0 {
                        let d = dir.entry(j).or_insert(o);
                        if *d != o {
                            bad.insert(j);
                        }
                    }
                }
                _ => {
                    bad.insert(j);
                }
            }
        }
    }
    derived.retain(|_, (j, _)| !bad.contains(j));
    let mut params: Vec<(usize, i64)> = (0..f.params.len())
        .filter(|&j| derived.get(&Val::new(j)) == Some(&(j, 0)))
        .map(|j| (j, dir.get(&j).copied().unwrap_or(0)))
        .collect();
    params.sort_unstable();
    if params.is_empty() {
        return None;
    }
    let mut fixed_ints = Vec::new();
    let mut measured = Vec::new();
    let mut int_consts = HashMap::new();
    let is_fixed_whole =
        |v: &Val| v.index() < f.params.len() && fixed[v.index()] && whole[v.index()];
    f.body.for_each_inst(&mut |inst| match &inst.op {
        Op::FCmp(_, x, y) => {
            for (a, b) in [(x, y), (y, x)] {
                if derived.contains_key(a) {
                    if is_fixed_whole(b) {
                        fixed_ints.push(b.index());
                    } else if let Some(c) = consts.get(b) {
                        if c.trunc() == *c && c.abs() <= COUNTER_LIMIT as f64 {
                            int_consts.insert(*b, *c as i64);
                        }
                    }
                }
            }
        }
        Op::VecIndexOk(v, i)
            if derived.contains_key(i)
                && v.index() < f.params.len()
                && fixed[v.index()]
                && f.params[v.index()] == Ty::Ptr =>
        {
            measured.push(v.index());
        }
        _ => {}
    });
    fixed_ints.sort_unstable();
    fixed_ints.dedup();
    measured.sort_unstable();
    measured.dedup();
    let limit = |v: Val| {
        if fixed_ints.contains(&v.index()) && is_fixed_whole(&v) {
            Some(Limit::Fixed(v.index()))
        } else {
            int_consts.get(&v).map(|c| Limit::Const(*c))
        }
    };
    let (bounds, in_range) = bounds::bounds(&bounds::Loop {
        fid,
        f,
        derived: &derived,
        params: &params,
        measured: &measured,
        limit: &limit,
    });
    // One counter of each set that steps alike is tested at every step,
    // unless one of the set stops at a bound.
    let alike = |a: &usize, b: &usize| steps.get(a) == steps.get(b);
    let tied = tied::tied(fid, f, &derived, &params, &steps, &limit);
    let mut checked: Vec<usize> = Vec::new();
    for &(j, d) in &params {
        if d != 0
            && !checked.iter().any(|k| alike(k, &j))
            && !bounds.iter().any(|b| alike(&b.counter, &j))
        {
            // A tied counter's step is its set's kept counter's.
            checked.push(tied.to.get(&j).copied().unwrap_or(j));
        }
    }
    let mut uses: HashMap<Val, usize> = HashMap::new();
    f.body
        .for_each_use(&mut |v| *uses.entry(v).or_default() += 1);
    let mut passed: HashMap<Val, usize> = HashMap::new();
    for args in &calls {
        for (j, a) in args.iter().enumerate() {
            if params.iter().any(|p| p.0 == j) {
                *passed.entry(*a).or_default() += 1;
            }
        }
    }
    // Across a call the counter lives in a register the call saves, and
    // register allocation then copied it on both sides of a step made
    // late (lse-R's loop calling `exp`: 21 -> 23 instructions a step).
    let mut calls_out = false;
    f.body.for_each_inst(&mut |i| {
        calls_out |= match &i.op {
            Op::FUn(op, _) => *op != FUn::Sqrt,
            Op::FBin(op, ..) => *op == FBin::Atan2,
            op => matches!(
                op,
                Op::Call(..)
                    | Op::CallAt(..)
                    | Op::PrintStr(_)
                    | Op::PrintReal(_)
                    | Op::PrintBool(_)
                    | Op::Capture(_)
                    | Op::ReadReal(_)
                    | Op::MemoGet(..)
                    | Op::MemoPut(..)
                    | Op::VecBuild { .. }
            ),
        }
    });
    let late = (derived.keys())
        .filter(|v| !calls_out && v.index() >= f.params.len() && passed.get(v) == uses.get(v))
        .copied()
        .collect();
    Some(Rc::new(Counters {
        tied,
        late,
        derived,
        params,
        checked,
        fixed_ints,
        measured,
        consts: int_consts,
        bounds,
        in_range,
    }))
}

/// A comparison of reals as one of integers.
fn int_cc(c: Cmp) -> IntCC {
    match c {
        Cmp::Eq => IntCC::Equal,
        Cmp::Lt => IntCC::SignedLessThan,
        Cmp::Gt => IntCC::SignedGreaterThan,
        Cmp::Le => IntCC::SignedLessThanOrEqual,
        Cmp::Ge => IntCC::SignedGreaterThanOrEqual,
    }
}

/// The state of a loop's integer version being built.
pub(crate) struct IntMode {
    pub(crate) plan: Rc<Counters>,
    /// The integer of each counter, derived value and converted fixed
    /// parameter made so far.
    pub(crate) ints: HashMap<Val, ClValue>,
    /// Lengths (`I64`) of the fixed vectors counters index.
    pub(crate) lens: HashMap<Val, ClValue>,
    /// The steps of `Counters::late` met so far: the counter's integer
    /// and the offset.
    pub(crate) late: HashMap<Val, (ClValue, i64)>,
    /// Per tied counter, its difference from the counter kept (`tied`).
    pub(crate) tied_d: HashMap<usize, ClValue>,
    /// Per comparison of a tied counter, the bound the kept counter is
    /// compared with.
    pub(crate) tied_cmps: HashMap<Val, ClValue>,
    /// The loop's two versions, which self calls jump to.
    pub(crate) lp_int: ClBlock,
    pub(crate) lp: ClBlock,
    /// In the accumulator version (`acc_loop`), its parameter and vector.
    pub(crate) acc: Option<crate::acc_loop::AccMode>,
    /// The accumulator version's plan and block (its parameters this
    /// version's and the vector), entered from this version's entry and
    /// from its steps once the sum is an accumulator.
    pub(crate) acc_entry: Option<(crate::acc_loop::AccPlan, ClBlock)>,
}

impl FnBuilder<'_, '_> {
    /// On entry to a loop with counters (block `pre`, whose parameters
    /// are `pre_params`): the test that every counter and every fixed
    /// parameter compared with one is a whole number within the limit
    /// (it is whole: `fir::whole`), then the jump to the integer version
    /// (`lp_int`) or to the loop as it is (`lp`, with `moving`).
    pub(crate) fn enter_counters(
        &mut self,
        plan: &Rc<Counters>,
        pre_params: &[ClValue],
        fixed: &[bool],
        lp: ClBlock,
        lp_int: ClBlock,
        acc: Option<(crate::acc_loop::AccPlan, ClBlock)>,
    ) -> Result<IntMode, String> {
        let mut ok: Option<ClValue> = None;
        let mut ints = HashMap::new();
        let checked = plan
            .params
            .iter()
            .map(|p| p.0)
            .chain(plan.fixed_ints.iter().copied());
        for j in checked.collect::<Vec<_>>() {
            // The integer, turned back into a real, has the very bits of
            // the real: a whole number, not -0 (which the integer would
            // make 0), nor an infinity or a NaN.
            let x = pre_params[j];
            let q = self.b.ins().fcvt_to_sint_sat(types::I64, x);
            let back = self.b.ins().fcvt_from_sint(types::F64, q);
            let bits = self.b.ins().bitcast(types::I64, MemFlagsData::new(), x);
            let back = self.b.ins().bitcast(types::I64, MemFlagsData::new(), back);
            let same = self.b.ins().icmp(IntCC::Equal, bits, back);
            let shifted = self.b.ins().iadd_imm_s(q, COUNTER_LIMIT);
            let within =
                self.b
                    .ins()
                    .icmp_imm_u(IntCC::UnsignedLessThanOrEqual, shifted, 2 * COUNTER_LIMIT);
            let both = self.b.ins().band(same, within);
            ok = Some(match ok {
                Some(o) => self.b.ins().band(o, both),
                None => both,
            });
            ints.insert(Val::new(j), q);
        }
        let mut ok = ok.ok_or("internal error: a loop's counters are none")?;
        let mut lens = HashMap::new();
        for &j in &plan.measured {
            let n = self.vector_len(pre_params[j]);
            lens.insert(Val::new(j), n);
        }
        for test in self.bound_tests(plan, &ints, &lens)? {
            ok = self.b.ins().band(ok, test);
        }
        let to_int = self.b.create_block();
        let moving: Vec<ClValue> = pre_params
            .iter()
            .zip(fixed)
            .filter(|(_, fx)| !**fx)
            .map(|(v, _)| *v)
            .collect();
        self.b.ins().brif(ok, to_int, &[], lp, &block_args(&moving));
        self.b.switch_to_block(to_int);
        let (tied_d, tied_cmps) = self.tie(plan, &mut ints)?;
        let mut args = Vec::new();
        for (j, x) in pre_params.iter().enumerate() {
            if fixed[j] || !plan.passed(j) {
                continue;
            }
            args.push(if plan.is_counter(j) {
                *ints
                    .get(&Val::new(j))
                    .ok_or("internal error: a counter's integer")?
            } else {
                *x
            });
        }
        let acc_entry = match acc {
            Some((acc, block)) => {
                // An accumulator now is one at every step (`acc_loop`).
                let p = pre_params[acc.param.index()];
                self.enter_acc_if_one(p, block, lp_int, &args);
                Some((acc, block))
            }
            None => {
                self.b.ins().jump(lp_int, &block_args(&args));
                None
            }
        };
        Ok(IntMode {
            plan: plan.clone(),
            ints,
            late: HashMap::new(),
            tied_d,
            tied_cmps,
            lens,
            lp_int,
            lp,
            acc: None,
            acc_entry,
        })
    }

    /// On entry to the integer version: each tied counter's difference
    /// from the counter it is kept as, and the bound each of its
    /// comparisons compares that counter with. Its entry integer leaves
    /// `ints`: inside, it has none.
    #[allow(clippy::type_complexity)]
    fn tie(
        &mut self,
        plan: &Counters,
        ints: &mut HashMap<Val, ClValue>,
    ) -> Result<(HashMap<usize, ClValue>, HashMap<Val, ClValue>), String> {
        let int = |ints: &HashMap<Val, ClValue>, j: usize| {
            ints.get(&Val::new(j))
                .copied()
                .ok_or("internal error: a tied counter's integer")
        };
        let mut d = HashMap::new();
        for (&c, &kept) in &plan.tied.to {
            let diff = self.b.ins().isub(int(ints, c)?, int(ints, kept)?);
            d.insert(c, diff);
        }
        let mut cmps = HashMap::new();
        for cmp in &plan.tied.cmps {
            let limit = match cmp.limit {
                Limit::Fixed(p) => int(ints, p)?,
                Limit::Const(k) => self.b.ins().iconst(types::I64, k),
            };
            // counter + offset = kept + diff + offset.
            let bound = self.b.ins().isub(limit, d[&cmp.counter]);
            let bound = self.b.ins().iadd_imm_s(bound, -cmp.offset);
            cmps.insert(cmp.result, bound);
        }
        for c in plan.tied.to.keys() {
            ints.remove(&Val::new(*c));
        }
        Ok((d, cmps))
    }

    /// The entry's tests that make the plan's bounds hold (`bounds`): a
    /// counter that stops where it is not equal to its bound starts on
    /// its side, and each index check answered on entry is in range at
    /// both ends of its counter's range.
    fn bound_tests(
        &mut self,
        plan: &Counters,
        ints: &HashMap<Val, ClValue>,
        lens: &HashMap<Val, ClValue>,
    ) -> Result<Vec<ClValue>, String> {
        let int = |v: usize| {
            ints.get(&Val::new(v))
                .copied()
                .ok_or("internal error: a bound's integer")
        };
        let mut tests = Vec::new();
        let mut targets = Vec::new();
        for b in &plan.bounds {
            let target = match b.limit {
                Limit::Fixed(p) => {
                    let n = int(p)?;
                    self.b.ins().iadd_imm_s(n, -b.offset)
                }
                Limit::Const(c) => self.b.ins().iconst(types::I64, c - b.offset),
            };
            targets.push(target);
            if b.rel == bounds::Rel::Ne {
                let cc = if b.dir < 0 {
                    IntCC::SignedGreaterThanOrEqual
                } else {
                    IntCC::SignedLessThanOrEqual
                };
                let k0 = int(b.counter)?;
                tests.push(self.b.ins().icmp(cc, k0, target));
            }
        }
        for r in &plan.in_range {
            let b = &plan.bounds[r.bound];
            let (k0, c0) = (int(b.counter)?, int(r.counter)?);
            // The index is the bound's counter plus this, at every step.
            let shift = self.b.ins().isub(c0, k0);
            let shift = self.b.ins().iadd_imm_s(shift, r.offset);
            let [lo, hi] = b.range().map(|end| match end {
                End::Entry => self.b.ins().iadd(k0, shift),
                End::Target(d) => {
                    let t = self.b.ins().iadd(targets[r.bound], shift);
                    self.b.ins().iadd_imm_s(t, d)
                }
            });
            let n = *lens
                .get(&Val::new(r.vector))
                .ok_or("internal error: an index check's length")?;
            let from_zero = self
                .b
                .ins()
                .icmp_imm_s(IntCC::SignedGreaterThanOrEqual, lo, 0);
            let below = self.b.ins().icmp(IntCC::SignedLessThan, hi, n);
            tests.push(from_zero);
            tests.push(below);
        }
        Ok(tests)
    }

    /// Jumps to the accumulator version `block` with `args` and the
    /// vector of `p` if `p` is an accumulator, else to `lp_int` with
    /// `args`.
    fn enter_acc_if_one(&mut self, p: ClValue, block: ClBlock, lp_int: ClBlock, args: &[ClValue]) {
        let flags = MemFlagsData::trusted();
        let header = self.b.ins().load(types::I64, flags, p, 0);
        let is_acc =
            self.b
                .ins()
                .icmp_imm_s(IntCC::Equal, header, crate::vector::accumulator_header());
        let yes = self.b.create_block();
        self.b
            .ins()
            .brif(is_acc, yes, &[], lp_int, &block_args(args));
        self.b.switch_to_block(yes);
        let at = base::cell_layout::SUM_BASE_AT as i32;
        let base = self.b.ins().load(types::I64, flags, p, at);
        let with_base = [args, &[base]].concat();
        self.b.ins().jump(block, &block_args(&with_base));
    }

    /// An instruction of the integer version: a counter's step, a
    /// comparison and an index check on integers; anything else as in
    /// the loop as it is, the counters it reads made `F64`s for it.
    pub(crate) fn int_inst(&mut self, inst: &fir::Inst) -> Result<(), String> {
        let Some(mode) = &self.int_mode else {
            return self.inst(inst);
        };
        let plan = mode.plan.clone();
        match (&inst.op, &inst.results[..]) {
            (Op::FBin(op, ..), [r]) if plan.derived.get(r).is_some_and(|d| !plan.passed(d.0)) => {
                // A tied counter's step: the kept counter's is made.
                if let Some(i) = op.counter_slot() {
                    self.count(i)?;
                }
                return Ok(());
            }
            (Op::FCmp(c, ..), [r]) if plan.tied.cmps.iter().any(|t| t.result == *r) => {
                let t = plan.tied.cmps.iter().find(|t| t.result == *r);
                let t = t.ok_or("internal error: a tied comparison")?;
                let kept = plan.tied.to[&t.counter];
                let q = self
                    .int(Val::new(kept))
                    .ok_or("internal error: a kept counter's integer")?;
                let bound = self.int_mode.as_ref().and_then(|m| m.tied_cmps.get(r));
                let bound = *bound.ok_or("internal error: a tied comparison's bound")?;
                self.count(base::counters::COMPARISONS)?;
                let (a, b) = if t.swapped { (bound, q) } else { (q, bound) };
                let v = self.b.ins().icmp(int_cc(*c), a, b);
                self.set(*r, v)?;
                return Ok(());
            }
            (Op::FBin(op, x, y), [r]) if plan.derived.contains_key(r) => {
                let (base, off) = match (self.int(*x), self.int(*y)) {
                    (Some(q), None) => (q, plan.derived[r].1 - plan.derived[x].1),
                    (None, Some(q)) => (q, plan.derived[r].1 - plan.derived[y].1),
                    _ => return Err("internal error: a counter's step".into()),
                };
                if let Some(i) = op.counter_slot() {
                    self.count(i)?;
                }
                if let (true, Some(m)) = (plan.late.contains(r), &mut self.int_mode) {
                    m.late.insert(*r, (base, off));
                    return Ok(());
                }
                let q = self.b.ins().iadd_imm_s(base, off);
                self.def_int(*r, q);
                return Ok(());
            }
            (Op::FCmp(c, x, y), [r]) => {
                let int_or_const = |this: &Self, v: &Val| {
                    this.int(*v)
                        .map(Ok)
                        .or_else(|| plan.consts.get(v).map(|c| Err(*c)))
                };
                if let (Some(a), Some(b)) = (int_or_const(self, x), int_or_const(self, y)) {
                    if a.is_ok() || b.is_ok() {
                        self.count(base::counters::COMPARISONS)?;
                        let a = self.int_value(a);
                        let b = self.int_value(b);
                        let v = self.b.ins().icmp(int_cc(*c), a, b);
                        self.set(*r, v)?;
                        return Ok(());
                    }
                }
            }
            (Op::VecIndexOk(..), [r]) if plan.in_range.iter().any(|x| x.result == *r) => {
                let yes = self.b.ins().iconst(types::I8, 1);
                self.set(*r, yes)?;
                self.known.learn(*r, Fact::True, yes);
                return Ok(());
            }
            (Op::VecIndexOk(v, i), [r]) if self.int(*i).is_some() => {
                let q = self.int(*i).ok_or("internal error: a counter's integer")?;
                let n = match self.int_mode.as_ref().and_then(|m| m.lens.get(v)) {
                    Some(n) => *n,
                    None => {
                        let x = self.val(*v)?;
                        self.vector_len(x)
                    }
                };
                let ok = self.b.ins().icmp(IntCC::UnsignedLessThan, q, n);
                self.set(*r, ok)?;
                return Ok(());
            }
            _ => {}
        }
        // Read through `Fact::Int`: no `F64` needed.
        let by_int = |v: Val| match &inst.op {
            Op::VecLoad(_, i, ..) => *i == v,
            Op::VecOneHot { i, .. } => {
                *i == v && inst.results.len() == 1 && self.hot.contains(&inst.results[0])
            }
            _ => false,
        };
        let mut reads = Vec::new();
        inst.op.for_each_operand(|v| reads.push(v));
        let reads: Vec<Val> = reads.into_iter().filter(|v| !by_int(*v)).collect();
        let made = self.as_reals(&reads);
        let r = self.inst(inst);
        self.forget_reals(made);
        r
    }

    /// A terminator of the integer version: a self call jumps back into it
    /// with the counters' integers (or, one past the limit, to the loop as
    /// it is, with their reals); anything else reads their reals.
    pub(crate) fn int_term(&mut self, t: &Term) -> Result<(), String> {
        let Some(mode) = &self.int_mode else {
            return self.term(t);
        };
        let (plan, lp_int, lp) = (mode.plan.clone(), mode.lp_int, mode.lp);
        let (mode_acc, acc_entry) = (mode.acc, mode.acc_entry);
        let mode_tied_d = mode.tied_d.clone();
        let mode_lp_int = lp_int;
        if let Term::TailCall(callee, args) = t {
            if *callee == self.fid {
                let fixed = self.members[callee].fixed.clone();
                let mut ints = Vec::new();
                let mut within: Vec<ClValue> = Vec::new();
                let made = self.as_reals(
                    &args
                        .iter()
                        .enumerate()
                        .filter(|(j, _)| !fixed[*j] && !plan.is_counter(*j))
                        .map(|(_, a)| *a)
                        .collect::<Vec<_>>(),
                );
                // The integer passed at each passed position.
                let mut at: HashMap<usize, ClValue> = HashMap::new();
                for (j, a) in args.iter().enumerate() {
                    if fixed[j] || !plan.passed(j) {
                        continue;
                    }
                    match plan.params.iter().find(|p| p.0 == j) {
                        Some(&(_, dir)) => {
                            let late = self.int_mode.as_ref().and_then(|m| m.late.get(a));
                            let q = match late.copied() {
                                Some((base, off)) => self.b.ins().iadd_imm_s(base, off),
                                None => {
                                    self.int(*a).ok_or("internal error: a counter's integer")?
                                }
                            };
                            ints.push(q);
                            at.insert(j, q);
                            let cc = if dir >= 0 {
                                IntCC::SignedLessThanOrEqual
                            } else {
                                IntCC::SignedGreaterThanOrEqual
                            };
                            let bound = if dir >= 0 {
                                COUNTER_LIMIT
                            } else {
                                -COUNTER_LIMIT
                            };
                            if plan.checked.contains(&j) {
                                within.push(self.b.ins().icmp_imm_s(cc, q, bound));
                            }
                        }
                        None => {
                            let x = self.val(*a)?;
                            ints.push(x);
                        }
                    }
                }
                self.forget_reals(made);
                // The accumulator version passes its vector on; the
                // integer version goes there once its sum is one.
                let mut then_test = None;
                let (lp_int, to_int) = match (&mode_acc, &acc_entry) {
                    (Some(acc), _) => (lp_int, [&ints[..], &[acc.base]].concat()),
                    (None, Some((plan, block))) => {
                        let p = self.val(args[plan.param.index()])?;
                        let test = self.b.create_block();
                        then_test = Some((test, p, *block, ints.clone()));
                        (test, Vec::new())
                    }
                    (None, None) => (lp_int, ints.clone()),
                };
                match within.split_last() {
                    None => {
                        self.b.ins().jump(lp_int, &block_args(&to_int));
                    }
                    Some((last, first)) => {
                        // One compare and branch each: a `band` of the
                        // tests took three instructions more per step.
                        let out = self.b.create_block();
                        for w in first {
                            let next = self.b.create_block();
                            self.b.ins().brif(*w, next, &[], out, &[]);
                            self.b.switch_to_block(next);
                        }
                        self.b
                            .ins()
                            .brif(*last, lp_int, &block_args(&to_int), out, &[]);
                        self.b.set_cold_block(out);
                        self.b.switch_to_block(out);
                        // The same arguments, the counters' as reals.
                        let moving = (0..fixed.len()).filter(|j| !fixed[*j]);
                        let mut args = Vec::new();
                        let mut passed = ints.into_iter();
                        for j in moving {
                            let x = match plan.tied.to.get(&j) {
                                Some(kept) => {
                                    let q = at.get(kept);
                                    let q = *q.ok_or("internal error: a kept counter's step")?;
                                    let d = mode_tied_d.get(&j);
                                    let d = *d.ok_or("internal error: a tied difference")?;
                                    self.b.ins().iadd(q, d)
                                }
                                None => passed.next().ok_or("internal error: an argument")?,
                            };
                            args.push(if plan.is_counter(j) {
                                self.b.ins().fcvt_from_sint(types::F64, x)
                            } else {
                                x
                            });
                        }
                        self.b.ins().jump(lp, &block_args(&args));
                    }
                }
                if let Some((test, p, block, ints)) = then_test {
                    self.b.switch_to_block(test);
                    self.enter_acc_if_one(p, block, mode_lp_int, &ints);
                }
                return Ok(());
            }
        }
        let mut reads = Vec::new();
        t.for_each_operand(|v| reads.push(v));
        let made = self.as_reals(&reads);
        let r = self.term(t);
        self.forget_reals(made);
        r
    }

    /// The integer of a counter, derived value or converted fixed
    /// parameter `v`, if it has one here.
    fn int(&self, v: Val) -> Option<ClValue> {
        self.int_mode.as_ref()?.ints.get(&v).copied()
    }

    fn int_value(&mut self, v: Result<ClValue, i64>) -> ClValue {
        match v {
            Ok(q) => q,
            Err(c) => self.b.ins().iconst(types::I64, c),
        }
    }

    /// Records `q` as the integer of `v` (and, for the vector operations,
    /// its `Fact::Int`).
    pub(crate) fn def_int(&mut self, v: Val, q: ClValue) {
        if let Some(m) = &mut self.int_mode {
            m.ints.insert(v, q);
        }
        self.known.learn(v, Fact::Int, q);
    }

    /// Gives each counter or derived value among `reads` that has no
    /// `F64` here its real, for one instruction; returns those given.
    fn as_reals(&mut self, reads: &[Val]) -> Vec<Val> {
        let mut made = Vec::new();
        for &v in reads {
            let Some(q) = self.int(v) else { continue };
            if self.vals.get(v.index()).copied().flatten().is_some() || made.contains(&v) {
                continue;
            }
            let x = self.b.ins().fcvt_from_sint(types::F64, q);
            self.vals[v.index()] = Some(x);
            made.push(v);
        }
        made
    }

    fn forget_reals(&mut self, made: Vec<Val>) {
        for v in made {
            self.vals[v.index()] = None;
        }
    }
}
