//! An analysis for code generation: the reals that are *whole*, never a
//! finite number with a fractional part (an integer, an infinity or a
//! NaN).
//!
//! Input: a module that verifies (after the passes). Output: for each
//! function, a flag per value (`Val`), set for the `F64`s known whole.
//!
//! Why: every `vector-ref` checks its index, and the check of an index
//! not known whole tests that it is (a rounding, a subtraction and a
//! comparison per element read). An infinity or a NaN fails the rest of
//! the check, the comparison with the length, so only a fraction matters.
//! The indices a loop over a vector steps through are whole: a constant
//! or a length, plus or minus one each step.
//!
//! Whole are: whole constants, lengths (`VecLen`), sums, differences and
//! products of whole values (a result rounded is whole: every double of
//! magnitude 2^52 or more is an integer), a `VecBuild` function's index,
//! a value after a check that stops the program unless it is whole
//! (`IsCount`'s or `VecIndexOk`'s: only values made after it are marked,
//! as the mark holds wherever they are used), a parameter every call
//! passes a whole value, the result of a call
//! whose callee returns only whole values there, and an `If`'s result
//! every `yield` of which is whole. Parameters and results are greatest
//! fixpoints over the calls; a function with a caller outside the module
//! (`main`, or none: an entry) has no whole parameters.

use crate::{Block, FBin, FuncId, Module, Op, Term, Ty, Val};
use base::EntityRef;
use rustc_hash::FxHashMap as HashMap;

/// Per function, per value: whether it is a whole `F64`.
pub fn whole_values(m: &Module) -> Vec<Vec<bool>> {
    let n = m.funcs.len();
    let mut callers = vec![0usize; n];
    for f in &m.funcs {
        f.body.for_each_call(&mut |g, _, _| callers[g.index()] += 1);
    }
    let mut params: Vec<Vec<bool>> = m
        .funcs
        .iter()
        .enumerate()
        .map(|(fi, f)| {
            let known = callers[fi] > 0 && m.main != Some(FuncId::new(fi));
            f.params.iter().map(|t| known && *t == Ty::F64).collect()
        })
        .collect();
    let mut results: Vec<Vec<bool>> = m
        .funcs
        .iter()
        .map(|f| f.returns.iter().map(|t| *t == Ty::F64).collect())
        .collect();
    loop {
        let mut next = params.clone();
        let mut next_results = results.clone();
        let mut values = Vec::with_capacity(n);
        for (fi, f) in m.funcs.iter().enumerate() {
            let mut walk = Walk {
                whole: vec![false; f.types.len()],
                checked: vec![false; f.types.len()],
                trail: Vec::new(),
                tested: HashMap::default(),
                results: &results,
                params: &mut next,
            };
            for (k, w) in params[fi].iter().enumerate() {
                walk.whole[k] = *w;
            }
            walk.block(&f.body);
            let out = &mut next_results[fi];
            let whole = &walk.whole;
            for_each_exit(&f.body, &mut |t| match t {
                Term::Return(vals) => {
                    for (r, v) in out.iter_mut().zip(vals) {
                        *r &= whole[v.index()];
                    }
                }
                Term::TailCall(g, _) => {
                    for (r, s) in out.iter_mut().zip(&results[g.index()]) {
                        *r &= *s;
                    }
                }
                _ => {}
            });
            values.push(walk.whole);
        }
        if next == params && next_results == results {
            return values;
        }
        params = next;
        results = next_results;
    }
}

/// One function's values, in program order.
struct Walk<'a> {
    /// Whole wherever they are used (by how they are made).
    whole: Vec<bool>,
    /// Whole from here on: passed a check that stops the program
    /// otherwise (`if (is_count x) {yield} else {error}`, or an index's
    /// check), in the arms around here.
    checked: Vec<bool>,
    /// The values marked in `checked`, in order, so that an arm's marks
    /// end with it.
    trail: Vec<Val>,
    /// The value each `IsCount` and `VecIndexOk` result tests.
    tested: HashMap<Val, Val>,
    results: &'a [Vec<bool>],
    /// The parameters every call seen so far passes whole values.
    params: &'a mut [Vec<bool>],
}

impl Walk<'_> {
    fn is_whole(&self, v: Val) -> bool {
        self.whole[v.index()] || self.checked[v.index()]
    }

    /// A `VecBuild` passes its function's last parameters itself: the
    /// state (a pointer) and the index (whole).
    fn call(&mut self, g: FuncId, args: &[Val]) {
        let passed: Vec<bool> = args.iter().map(|a| self.is_whole(*a)).collect();
        for (p, w) in self.params[g.index()].iter_mut().zip(passed) {
            *p &= w;
        }
    }

    fn block(&mut self, b: &Block) {
        let mark = self.trail.len();
        for i in &b.insts {
            let r = match &i.op {
                Op::F64Const(c) => vec![!c.is_finite() || c.fract() == 0.0],
                Op::FBin(FBin::Add | FBin::PlusAdd | FBin::Sub | FBin::Mul, a, b) => {
                    vec![self.is_whole(*a) && self.is_whole(*b)]
                }
                Op::VecLen(_) => vec![true],
                Op::IsCount(x) | Op::VecIndexOk(_, x) => {
                    self.tested.insert(i.results[0], *x);
                    Vec::new()
                }
                Op::Call(g, args) | Op::CallAt(g, args, _) => {
                    self.call(*g, args);
                    self.results[g.index()].clone()
                }
                Op::VecBuild { func, args, .. } => {
                    self.call(*func, args);
                    Vec::new()
                }
                Op::If { cond, then_, else_ } => {
                    self.block(then_);
                    self.block(else_);
                    let mut r = vec![true; i.results.len()];
                    for arm in [then_, else_] {
                        if let Term::Yield(vals) = &arm.term {
                            for (x, v) in r.iter_mut().zip(vals) {
                                *x &= self.is_whole(*v);
                            }
                        }
                    }
                    // After a check whose failing arm stops, what it
                    // tested is whole.
                    let yields = |b: &Block| matches!(b.term, Term::Yield(_));
                    if let Some(x) = self.tested.get(cond) {
                        if yields(then_) && !yields(else_) && !self.checked[x.index()] {
                            self.checked[x.index()] = true;
                            self.trail.push(*x);
                        }
                    }
                    r
                }
                _ => Vec::new(),
            };
            for (k, v) in i.results.iter().enumerate() {
                self.whole[v.index()] = r.get(k).copied().unwrap_or(false);
            }
        }
        if let Term::TailCall(g, args) = &b.term {
            self.call(*g, args);
        }
        for v in self.trail.drain(mark..) {
            self.checked[v.index()] = false;
        }
    }
}

/// Calls `f` on the terminator of every block that leaves the function
/// (a `return`, a tail call or an error), nested ones included.
fn for_each_exit(b: &Block, f: &mut impl FnMut(&Term)) {
    for i in &b.insts {
        if let Op::If { then_, else_, .. } = &i.op {
            for_each_exit(then_, f);
            for_each_exit(else_, f);
        }
    }
    f(&b.term);
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The whole values of function `f`, by number.
    fn whole(text: &str, f: usize) -> Vec<u32> {
        let m = crate::read::module(text).expect("the module reads");
        crate::verify::verify(&m).expect("the module verifies");
        whole_values(&m)[f]
            .iter()
            .enumerate()
            .filter(|(_, w)| **w)
            .map(|(v, _)| v as u32)
            .collect()
    }

    /// `main` reads a length, checks it, and passes it less one to a loop
    /// down the indices of a vector; the loop also halves a real.
    const LOOP: &str = "
str s0 = \"error: `read-real` reached the end of input\"
str s1 = \"error: bad length\"
vector #0 = (f64)

func f0 main() -> () {
  v0 = read_real s0
  v1 = f64 1.0
  v2 = fsub v0 v1
  v3 = is_count v0
  if v3 {
    yield
  } else {
    error s1
  }
  v4 = fsub v0 v1
  v5 = f64 0.5
  v6 = call f1(v4, v5)
  print_real v6
  return
}

func f1 down(v0: f64, v1: f64) -> (f64) {
  v2 = f64 0.0
  v3 = flt v0 v2
  v9 = if v3 {
    return v1
  } else {
    v4 = f64 1.0
    v5 = fsub v0 v4
    v6 = f64 2.0
    v7 = fdiv v1 v6
    tailcall f1(v5, v7)
  }
  return v9
}

main f0
";

    #[test]
    fn a_length_checked_less_one_each_step_is_whole() {
        // v2 is made before the check: not whole; v4, after it, is.
        assert_eq!(whole(LOOP, 0), vec![1, 4]);
        // The index is; the halved real is not; the `If`, which yields
        // nothing, has no result to say otherwise.
        assert_eq!(whole(LOOP, 1), vec![0, 2, 4, 5, 6, 9]);
    }

    #[test]
    fn a_parameter_one_call_passes_a_fraction_is_not_whole() {
        let text = LOOP.replace(
            "v4 = f64 1.0\n    v5 = fsub v0 v4",
            "v4 = f64 1.5\n    v5 = fsub v0 v4",
        );
        assert_eq!(whole(&text, 1), vec![2, 6, 9]);
    }
}
