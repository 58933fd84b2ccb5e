//! An analysis for code generation: the `VecPlus`es whose operand no
//! one else holds, which may then be added to in place.
//!
//! Input: a module that verifies (after the passes). Output: for each
//! function, the pairs (a `VecPlus`'s result, one of its operands) where
//! the operand is *consumed*: made for this function alone and read by
//! nothing after the `VecPlus`.
//!
//! Why: reverse mode's backward sweep through a loop over a vector adds
//! one entry per step to the sum it carries, and each `plus` made the
//! sum's next version (48 bytes) while the old one died at once. A sum
//! consumed by its `plus` can count the new entry in its own header.
//!
//! A value is *fresh* when no one else can hold it: a zero or a one-hot
//! just made, a `plus` of two consumed operands (which is new, or one of
//! them), a parameter every call passes a consumed argument (a function
//! nothing calls, or a `VecBuild` calls, has none), the result of a call
//! of a function that returns only values fresh and consumed by its
//! `return` (a backward sweep's loop returns the sum it carried), or an
//! `If`'s result whose every `yield` is such. Parameters and results are
//! greatest fixpoints over the calls. A fresh value is *consumed* by a use when
//! every other use is in another arm of an `If` on the way to it, or
//! reads only its length (`VecLen`, `VecIndexOk`), which no addition
//! changes: a `VecLoad` or a call before the use might have kept or read
//! what the addition changes.

use crate::{Block, CallKind, FuncId, Module, Op, Term, Ty, Val};
use base::EntityRef;
use rustc_hash::FxHashMap as HashMap;
use std::collections::HashSet;

/// Per function, the (result, operand) pairs of its consumed `VecPlus`
/// operands.
pub fn consumed_sums(m: &Module) -> Vec<HashSet<(Val, Val)>> {
    let n = m.funcs.len();
    let mut out = vec![HashSet::new(); n];
    let mut any = false;
    for f in &m.funcs {
        f.body
            .for_each_inst(&mut |i| any |= matches!(i.op, Op::VecPlus(..)));
    }
    if !any {
        return out;
    }
    let uses: Vec<Uses> = m.funcs.iter().map(Uses::new).collect();
    // Parameters start owned where every caller is known; each round
    // disowns those some call does not pass a consumed argument.
    let mut callers = vec![0usize; n];
    let mut fixed = vec![false; n];
    for f in &m.funcs {
        f.body.for_each_call(&mut |g, _, kind| {
            callers[g.index()] += 1;
            fixed[g.index()] |= kind == CallKind::Build;
        });
    }
    let mut owned: Vec<Vec<bool>> = m
        .funcs
        .iter()
        .enumerate()
        .map(|(fi, f)| {
            let known = callers[fi] > 0 && !fixed[fi] && m.main != Some(FuncId::new(fi));
            f.params.iter().map(|t| known && *t == Ty::Ptr).collect()
        })
        .collect();
    let mut results: Vec<Vec<bool>> = m
        .funcs
        .iter()
        .map(|f| f.returns.iter().map(|t| *t == Ty::Ptr).collect())
        .collect();
    loop {
        let mut next = owned.clone();
        let mut next_results = results.clone();
        for (fi, f) in m.funcs.iter().enumerate() {
            let mut fresh = Fresh::new(&uses[fi], &owned[fi], &results);
            for (at, vals) in &uses[fi].returns {
                for (j, v) in vals.iter().enumerate() {
                    let alone = vals.iter().filter(|w| *w == v).count() == 1;
                    if let Some(r) = next_results[fi].get_mut(j) {
                        *r &= alone && fresh.consumed_at(*v, *at);
                    }
                }
            }
            for g in &uses[fi].tails {
                for (j, r) in next_results[fi].iter_mut().enumerate() {
                    *r &= results[g.index()].get(j).copied().unwrap_or(false);
                }
            }
            for (g, args, at) in &uses[fi].calls {
                for (j, a) in args.iter().enumerate() {
                    if f.types[a.index()] != Ty::Ptr {
                        continue;
                    }
                    let passed =
                        args.iter().filter(|b| *b == a).count() == 1 && fresh.consumed_at(*a, *at);
                    if let Some(o) = next[g.index()].get_mut(j) {
                        *o &= passed;
                    }
                }
            }
        }
        if next == owned && next_results == results {
            break;
        }
        owned = next;
        results = next_results;
    }
    for (fi, f) in m.funcs.iter().enumerate() {
        let mut fresh = Fresh::new(&uses[fi], &owned[fi], &results);
        f.body.for_each_inst(&mut |i| {
            if let Op::VecPlus(_, a, b) = i.op {
                for x in [a, b] {
                    if a != b && fresh.consumed(x, i.results[0]) {
                        out[fi].insert((i.results[0], x));
                    }
                }
            }
        });
    }
    out
}

/// Where a use is: the `If` arms around it, outermost first (the `If`
/// by its instruction's number in program order, and `true` for its
/// `then` arm), and its own number.
#[derive(Clone)]
struct Site {
    arms: Vec<(usize, bool)>,
    at: usize,
    /// Reads only the length.
    length: bool,
}

impl Site {
    /// Can the two never both run?
    fn apart(&self, other: &Site) -> bool {
        self.arms
            .iter()
            .zip(&other.arms)
            .find(|(a, b)| a != b)
            .is_some_and(|(a, b)| a.0 == b.0)
    }
}

/// Every use of every value of a function, what made each value, and
/// where each `VecPlus` and call is.
struct Uses {
    of: Vec<Vec<Site>>,
    /// The instruction number of each `VecPlus` result and call result.
    at: HashMap<Val, usize>,
    /// What made each value: a zero or one-hot (fresh), a `VecPlus` of
    /// two values, or something else.
    made: Vec<Made>,
    /// The calls and tail calls: callee, arguments, number.
    calls: Vec<(FuncId, Vec<Val>, usize)>,
    /// The callees of its tail calls, whose results are its own.
    tails: Vec<FuncId>,
    /// Its `return`s: number and values.
    returns: Vec<(usize, Vec<Val>)>,
    /// Per `If` (by number), its arms' `yield`s: number and values.
    yields: HashMap<usize, Vec<(usize, Vec<Val>)>>,
    /// The `VecPlus` results, in program order.
    plus: Vec<Val>,
}

#[derive(Clone, Copy, PartialEq)]
enum Made {
    Param,
    New,
    Plus(Val, Val),
    /// Result `j` of a call of a function.
    Result(FuncId, usize),
    /// Result `j` of the `If` numbered so.
    Joined(usize, usize),
    Other,
}

impl Uses {
    fn new(f: &crate::Func) -> Uses {
        let mut u = Uses {
            of: vec![Vec::new(); f.types.len()],
            at: HashMap::default(),
            made: vec![Made::Other; f.types.len()],
            calls: Vec::new(),
            tails: Vec::new(),
            returns: Vec::new(),
            yields: HashMap::default(),
            plus: Vec::new(),
        };
        for m in u.made.iter_mut().take(f.params.len()) {
            *m = Made::Param;
        }
        let mut count = 0;
        u.block(&f.body, &mut Vec::new(), &mut count);
        u
    }

    fn block(&mut self, b: &Block, arms: &mut Vec<(usize, bool)>, count: &mut usize) {
        // The `If` whose arm this block is, before any pushed below.
        let own = arms.last().copied();
        let depth = arms.len();
        for i in &b.insts {
            *count += 1;
            let at = *count;
            let length = matches!(i.op, Op::VecLen(_) | Op::VecIndexOk(..));
            i.op.for_each_operand(|v| {
                self.of[v.index()].push(Site {
                    arms: arms.clone(),
                    at,
                    length,
                })
            });
            let made = match &i.op {
                Op::VecZero(..)
                | Op::VecOneHot { .. }
                | Op::VecZeroOf { .. }
                | Op::VecOneHotOf { .. } => Made::New,
                Op::VecPlus(_, a, b) => Made::Plus(*a, *b),
                _ => Made::Other,
            };
            for (j, r) in i.results.iter().enumerate() {
                self.made[r.index()] = match &i.op {
                    Op::Call(g, _) | Op::CallAt(g, _, _) => Made::Result(*g, j),
                    Op::If { .. } => Made::Joined(at, j),
                    _ => made,
                };
                self.at.insert(*r, at);
                if let Made::Plus(..) = made {
                    self.plus.push(*r);
                }
            }
            match &i.op {
                Op::Call(g, args) | Op::CallAt(g, args, _) => {
                    self.calls.push((*g, args.clone(), at));
                }
                Op::If { then_, else_, .. } => {
                    arms.push((at, true));
                    self.block(then_, arms, count);
                    arms.pop();
                    arms.push((at, false));
                    self.block(else_, arms, count);
                    arms.pop();
                    // What follows an `If` one of whose arms leaves the
                    // function runs only after the other: it is in that
                    // arm, apart from the one that left (the up loop of a
                    // recursion made loops returns its sums at level 0,
                    // then adds them deeper).
                    let leaves = |t: &Term| !matches!(t, Term::Yield(_));
                    match (leaves(&then_.term), leaves(&else_.term)) {
                        (true, false) => arms.push((at, false)),
                        (false, true) => arms.push((at, true)),
                        _ => {}
                    }
                }
                _ => {}
            }
        }
        *count += 1;
        let at = *count;
        b.term.for_each_operand(|v| {
            self.of[v.index()].push(Site {
                arms: arms.clone(),
                at,
                length: false,
            })
        });
        match &b.term {
            Term::TailCall(g, args) => {
                self.calls.push((*g, args.clone(), at));
                self.tails.push(*g);
            }
            Term::Return(vals) => self.returns.push((at, vals.clone())),
            Term::Yield(vals) => {
                if let Some((i, _)) = own {
                    self.yields.entry(i).or_default().push((at, vals.clone()));
                }
            }
            _ => {}
        }
        arms.truncate(depth);
    }
}

/// Which values of one function are fresh, given which of its
/// parameters are owned.
struct Fresh<'a> {
    uses: &'a Uses,
    owned: &'a [bool],
    /// Per function, which of its results are fresh.
    results: &'a [Vec<bool>],
    memo: HashMap<Val, bool>,
}

impl<'a> Fresh<'a> {
    fn new(uses: &'a Uses, owned: &'a [bool], results: &'a [Vec<bool>]) -> Fresh<'a> {
        let mut f = Fresh {
            uses,
            owned,
            results,
            memo: HashMap::default(),
        };
        // In program order, each `plus` finds its operands decided: a
        // chain of thousands of them (a long unrolled sweep) recurses
        // one level, not thousands.
        for v in &uses.plus {
            f.fresh(*v);
        }
        f
    }

    fn fresh(&mut self, v: Val) -> bool {
        if let Some(&b) = self.memo.get(&v) {
            return b;
        }
        let b = match self.uses.made[v.index()] {
            Made::Param => self.owned.get(v.index()).copied().unwrap_or(false),
            Made::New => true,
            Made::Plus(a, b) => {
                let at = self.uses.at[&v];
                a != b && self.consumed_at(a, at) && self.consumed_at(b, at)
            }
            Made::Result(g, j) => self
                .results
                .get(g.index())
                .and_then(|r| r.get(j))
                .copied()
                .unwrap_or(false),
            Made::Joined(at, j) => {
                // An `If` whose arms all leave the function (return, tail
                // call, error) yields nothing: its results are never made.
                let yields = self.uses.yields.get(&at).cloned().unwrap_or_default();
                yields.iter().all(|(y, vals)| {
                    vals.get(j).is_some_and(|w| {
                        vals.iter().filter(|x| *x == w).count() == 1 && self.consumed_at(*w, *y)
                    })
                })
            }
            Made::Other => false,
        };
        self.memo.insert(v, b);
        b
    }

    /// Is `v` fresh and consumed by the `VecPlus` that makes `result`?
    fn consumed(&mut self, v: Val, result: Val) -> bool {
        let at = self.uses.at[&result];
        self.consumed_at(v, at)
    }

    fn consumed_at(&mut self, v: Val, at: usize) -> bool {
        let sites = &self.uses.of[v.index()];
        let Some(here) = sites.iter().find(|s| s.at == at).cloned() else {
            return false;
        };
        let alone = sites
            .iter()
            .filter(|s| s.at != at)
            .all(|s| s.length || s.apart(&here));
        alone && self.fresh(v)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The consumed (result, operand) pairs of function `f`, by number.
    fn consumed(text: &str, f: usize) -> Vec<(u32, u32)> {
        let m = crate::read::module(text).expect("the module reads");
        crate::verify::verify(&m).expect("the module verifies");
        let mut out: Vec<(u32, u32)> = consumed_sums(&m)[f]
            .iter()
            .map(|(r, x)| (r.number(), x.number()))
            .collect();
        out.sort_unstable();
        out
    }

    /// A backward sweep's loop: `main` makes a zero and passes it to the
    /// loop, which adds a one-hot to it per step and passes the sum on.
    const LOOP: &str = "
vector #0 = (f64)

func f0 main() -> () {
  v0 = f64 3.0
  v1 = vec_zero #0 v0
  v2 = f64 0.0
  v3 = call f1(v0, v2, v1)
  v4 = vec_load v3 v2 #0.0
  print_real v4
  return
}

func f1 sweep(v0: f64, v1: f64, v2: ptr) -> (ptr) {
  v3 = feq v1 v0
  v8 = if v3 {
    yield v2
  } else {
    v4 = vec_len v2
    v5 = vec_one_hot #0 v4 v1(v1)
    v6 = vec_plus #0 v2 v5
    v7 = f64 1.0
    v9 = fadd v1 v7
    tailcall f1(v0, v9, v6)
  }
  return v8
}

main f0
";

    #[test]
    fn a_loop_adds_to_the_sum_it_carries_in_place() {
        // Both operands: the one-hot is made for this `plus` too.
        assert_eq!(consumed(LOOP, 1), vec![(6, 2), (6, 5)]);
    }

    #[test]
    fn a_sum_returned_by_an_arm_that_leaves_is_consumed_after_it() {
        // The loop's test as an `If` whose arm returns, the step after it
        // (the up loop of a recursion made loops, `passes::unrecurse`).
        let early = LOOP.replace(
            "  v8 = if v3 {\n    yield v2\n  } else {",
            "  if v3 {\n    return v2\n  } else {\n    yield\n  }\n  {",
        );
        let early = early
            .replace("  {\n    v4 = vec_len v2", "  v4 = vec_len v2")
            .replace(
                "    tailcall f1(v0, v9, v6)\n  }\n  return v8\n",
                "  tailcall f1(v0, v9, v6)\n",
            );
        assert!(
            early.contains("return v2\n  } else {\n    yield"),
            "{early}"
        );
        assert_eq!(consumed(&early, 1), vec![(6, 2), (6, 5)]);
        // Read again where it returns, before the `If`: not consumed.
        let read_before = early.replace(
            "  if v3 {",
            "  v10 = vec_load v2 v1 #0.0\n  print_real v10\n  if v3 {",
        );
        assert_eq!(consumed(&read_before, 1), vec![(6, 5)]);
    }

    #[test]
    fn a_sum_read_after_its_plus_or_kept_by_a_caller_is_not_consumed() {
        // The loop's sum read again after the `plus`.
        let read_after = LOOP.replace(
            "    tailcall f1(v0, v9, v6)",
            "    v10 = vec_load v2 v1 #0.0\n    print_real v10\n    tailcall f1(v0, v9, v6)",
        );
        assert_eq!(consumed(&read_after, 1), vec![(6, 5)]);
        // `main` reads its zero after the call: no call passes the loop
        // a sum of its own, so the loop adds to none in place.
        let kept = LOOP.replace("  v4 = vec_load v3 v2 #0.0", "  v4 = vec_load v1 v2 #0.0");
        assert_eq!(consumed(&kept, 1), vec![(6, 5)]);
    }

    /// `main` adds a one-hot to the sum the loop returns (through its
    /// `If`'s result), as lse-R adds the sums its two sweeps return.
    const AFTER: &str = "
  v4 = vec_len v3
  v5 = vec_one_hot #0 v4 v2(v0)
  v6 = vec_plus #0 v3 v5
  v7 = vec_load v6 v2 #0.0
  print_real v7";

    #[test]
    fn the_sum_a_call_returns_is_consumed_by_its_callers_plus() {
        let after = LOOP.replace(
            "
  v4 = vec_load v3 v2 #0.0
  print_real v4",
            AFTER,
        );
        assert_eq!(consumed(&after, 0), vec![(6, 3), (6, 5)]);
        // A callee that also keeps the sum in a cell it returns beside it
        // does not give it away.
        let kept = after
            .replace("-> (ptr) {", "-> (ptr, ptr) {")
            .replace(
                "  v3 = call f1(v0, v2, v1)",
                "  v3, v8 = call f1(v0, v2, v1)",
            )
            .replace(
                "  v8 = if v3 {\n    yield v2",
                "  v8, v11 = if v3 {\n    v10 = alloc #0(v2)\n    yield v2, v10",
            )
            .replace("  return v8\n", "  return v8, v11\n");
        let kept = kept.replace("vector #0 = (f64)", "cell #0 = (ptr)\nvector #0 = (f64)");
        assert_eq!(consumed(&kept, 0), vec![(6, 5)]);
        // Returned beside a value of its own, it is given away.
        let beside = kept.replace("    v10 = alloc #0(v2)", "    v10 = vec_zero #0 v0");
        assert_eq!(consumed(&beside, 0), vec![(6, 3), (6, 5)]);
    }
}
