//! Loops that add into an accumulator: a third version of a loop with
//! integer counters (`induction`), entered when the sum it adds one-hots
//! to is an accumulator, whose adds are `A[i] += x` with `A` loaded once.
//! The integer version enters it on entry, and at a step once the sum has
//! become one (a sum becomes an accumulator after many additions: a loop
//! entered once, with a zero, runs most of its steps as one).
//!
//! Why: the backward sweep of a loop over a vector adds one real per
//! element into the gradient's accumulator (`runtime::gc::vector_sum`),
//! and each add tested the sum's header and loaded its vector again
//! before adding, and passed the sum on through a join of the fast and
//! the slow path: in matvec-R's backward loop, 8 of 21 instructions per
//! element, where a hand-written adjoint's loop is a load, a
//! multiply-add and a store.
//!
//! When that is exact: the loop's parameter `p` is read by nothing but
//! one `plus` of it and a one-hot of one real that the `plus` consumes
//! (`fir::owned`), its length, and the `Return`s; that `plus`'s result is
//! read by nothing but the `Return`s and every self call, which passes
//! it back as `p`. An accumulator that a consuming `plus` adds a one-hot
//! to is added to in place and stays an accumulator (`plus_hot`'s fast
//! path): the `plus` gives `p` itself, so `p` is the same accumulator at
//! every step, and its vector the same vector, which the version takes
//! as a parameter. A step that leaves the integer version goes on in the
//! loop as it is, which tests the header at every add again.
//!
//! Input: a FIR loop, its fixed parameters, its fused one-hots and its
//! consuming `plus`es. Output: the parameter, if any ([`AccPlan`]).

use super::*;
use base::EntityRef;

/// The accumulator parameter of a loop.
#[derive(Clone, Copy, Debug)]
pub(crate) struct AccPlan {
    pub(crate) param: Val,
}

/// The accumulator version being built: the parameter and its vector.
#[derive(Clone, Copy)]
pub(crate) struct AccMode {
    pub(crate) param: Val,
    pub(crate) base: ClValue,
}

/// How a loop's values are read.
#[derive(Default)]
struct Reads {
    all: HashMap<Val, usize>,
    lens: HashMap<Val, usize>,
    returned: HashMap<Val, usize>,
    /// (value, position) passed by a self call.
    passed: HashMap<(Val, usize), usize>,
    /// The `plus`es: (result, operands).
    plus: Vec<(Val, Val, Val)>,
}

fn read(b: &fir::Block, fid: FuncId, r: &mut Reads) {
    for i in &b.insts {
        i.op.for_each_operand(|v| *r.all.entry(v).or_default() += 1);
        match &i.op {
            // `for_each_operand` of an `If` gives its condition only.
            Op::If { then_, else_, .. } => {
                read(then_, fid, r);
                read(else_, fid, r);
            }
            Op::VecLen(v) => *r.lens.entry(*v).or_default() += 1,
            Op::VecPlus(_, a, c) => {
                if let [res] = i.results[..] {
                    r.plus.push((res, *a, *c));
                }
            }
            _ => {}
        }
    }
    b.term
        .for_each_operand(|v| *r.all.entry(v).or_default() += 1);
    match &b.term {
        Term::Return(vs) => {
            for v in vs {
                *r.returned.entry(*v).or_default() += 1;
            }
        }
        Term::TailCall(g, args) if *g == fid => {
            for (k, a) in args.iter().enumerate() {
                *r.passed.entry((*a, k)).or_default() += 1;
            }
        }
        _ => {}
    }
}

/// The accumulator parameter of loop `fid` (see the module doc), if it
/// has one.
pub(crate) fn acc_param(
    fid: FuncId,
    f: &fir::Func,
    fixed: &[bool],
    hot: &HashSet<Val>,
    consumed: &HashSet<(Val, Val)>,
) -> Option<AccPlan> {
    let mut reads = Reads::default();
    read(&f.body, fid, &mut reads);
    let calls = f.body.tail_calls_to(fid);
    if calls.is_empty() {
        return None;
    }
    let count = |m: &HashMap<Val, usize>, v: Val| m.get(&v).copied().unwrap_or(0);
    (0..f.params.len()).find_map(|j| {
        if fixed[j] || f.params[j] != Ty::Ptr {
            return None;
        }
        let p = Val::new(j);
        let mut pluses = reads.plus.iter().filter(|(_, a, b)| *a == p || *b == p);
        let &(r, a, b) = pluses.next()?;
        let other = if a == p { b } else { a };
        if pluses.next().is_some() || other == p || !hot.contains(&other) {
            return None;
        }
        if !consumed.contains(&(r, p)) {
            return None;
        }
        let p_reads = count(&reads.all, p);
        if p_reads != 1 + count(&reads.lens, p) + count(&reads.returned, p) {
            return None;
        }
        let passed = reads.passed.get(&(r, j)).copied().unwrap_or(0);
        let every_call = calls.iter().all(|args| args.get(j) == Some(&r));
        (every_call && count(&reads.all, r) == passed + count(&reads.returned, r))
            .then_some(AccPlan { param: p })
    })
}

impl FnBuilder<'_, '_> {
    /// In the accumulator version, `plus` of its parameter and a one-hot
    /// (`hot`: the index, an `I64`, and the real), in place: `p` itself.
    pub(crate) fn acc_add(&mut self, sum: Val, hot: (ClValue, ClValue)) -> Option<ClValue> {
        let acc = self.int_mode.as_ref()?.acc?;
        if acc.param != sum {
            return None;
        }
        let flags = MemFlagsData::trusted();
        let off = self.scaled(hot.0, 8);
        let at = self.b.ins().iadd(acc.base, off);
        let slot = base::cell_layout::VECTOR_SLOTS_AT as i32;
        let e = self.b.ins().load(types::F64, flags, at, slot);
        let added = self.b.ins().fadd(e, hot.1);
        self.b.ins().store(flags, added, at, slot);
        self.vals.get(sum.index()).copied().flatten()
    }
}
