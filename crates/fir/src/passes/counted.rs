//! Loops that only count get a closed form: a function that calls itself
//! with a parameter one larger each time, until it equals a bound, and
//! carries nothing but such counters, returns what its counters will hold
//! when it stops, computed at once.
//!
//! Why: reverse mode's `vector-fold` keeps each step's state on a list for
//! the backward sweep. When the backward sweep reads nothing of the states
//! (the adjoint of a sum of squares), the passes leave of that list only
//! its length, counted by a loop of its own: one floating-point addition
//! per element, whose latency (4 cycles) set the pace, 14% of the gradient
//! of a sum of squares over 10^5 reals.
//!
//! The shape, after simplification: parameters `x_j`; one of them, `p`,
//! is compared for equality with `e`, a parameter every self call passes
//! unchanged (or a constant); the arm where they are equal returns, the
//! other calls the function itself. Every value before the call and the
//! return is a parameter plus a whole constant (`p + a`, from additions
//! and subtractions of constants), each argument of the call is its
//! parameter plus 0 or 1 (`p` plus 1), and each result is a parameter plus
//! a constant of at least 0, or a constant. Nothing else runs: no call,
//! no memory, no counter of `--count-ops`.
//!
//! Step `t` holds `x_j + t s_j`; the loop stops at the first `t` with
//! `p + t + a = e`, `t* = e - a - p`. The function now first tests that
//! `p`, `e` and every counter a result reads are counts (whole, from 0 to
//! 2^40) and that `t* >= 1`; then every value of every step is a whole
//! number below 2^42, exact in an `F64`, and so is each result `x_j + t*
//! s_j + b`, which it returns. The results are at least 1 or a parameter
//! as it came, so even the sign of a zero is the loop's. Otherwise it runs
//! the loop as before (which, with `t*` below 0, never stops).

use crate::{Block, Cmp, FBin, Func, FuncId, Inst, Module, Op, Term, Ty, Val};
use base::EntityRef;
use rustc_hash::FxHashMap as HashMap;

/// The largest offset a value may have from its parameter: enough for
/// the shapes simplification leaves, small enough that sums stay exact.
const MAX_OFFSET: f64 = 4.0;

/// Gives every counting loop its closed form (see the module doc).
pub fn closed_forms(m: &mut Module) {
    for (i, f) in m.funcs.iter_mut().enumerate() {
        if let Some(shape) = counting_loop(f, FuncId::new(i)) {
            rewrite(f, &shape);
        }
    }
}

/// What a value of the loop's body is, per step.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Form {
    /// Parameter `j` plus a whole constant.
    Param(usize, f64),
    Const(f64),
    /// `x == y`.
    Equal(Operand, Operand),
}

#[derive(Clone, Copy, Debug, PartialEq)]
enum Operand {
    Param(usize, f64),
    Const(f64),
}

/// A counting loop found: `p + a == e` stops it, each parameter steps by
/// `steps[j]`, and it returns `results`.
struct Shape {
    p: usize,
    a: f64,
    e: Operand,
    steps: Vec<f64>,
    results: Vec<Operand>,
}

fn small_whole(c: f64) -> bool {
    c.trunc() == c && c.abs() <= MAX_OFFSET
}

fn counting_loop(f: &Func, id: FuncId) -> Option<Shape> {
    let n = f.params.len();
    if f.params.iter().any(|t| *t != Ty::F64) || n == 0 {
        return None;
    }
    let mut forms: HashMap<Val, Form> = HashMap::default();
    for j in 0..n {
        forms.insert(Val::new(j), Form::Param(j, 0.0));
    }
    // The body: straight arithmetic, then one `If` whose arms leave.
    let (last, before) = f.body.insts.split_last()?;
    for inst in before {
        step(inst, &mut forms)?;
    }
    let Op::If { cond, then_, else_ } = &last.op else {
        return None;
    };
    let Some(Form::Equal(x, y)) = forms.get(cond).copied() else {
        return None;
    };
    let mut then_forms = forms.clone();
    for inst in &then_.insts {
        step(inst, &mut then_forms)?;
    }
    let Term::Return(rets) = &then_.term else {
        return None;
    };
    for inst in &else_.insts {
        step(inst, &mut forms)?;
    }
    let Term::TailCall(callee, args) = &else_.term else {
        return None;
    };
    if *callee != id || args.len() != n {
        return None;
    }
    let mut steps = Vec::with_capacity(n);
    for (j, a) in args.iter().enumerate() {
        match forms.get(a)? {
            Form::Param(k, s) if *k == j && (*s == 0.0 || *s == 1.0) => steps.push(*s),
            _ => return None,
        }
    }
    // Which side steps: `p + a`, against an `e` that does not.
    let (p, a, e) = match (x, y) {
        (Operand::Param(p, a), e) | (e, Operand::Param(p, a)) if steps[p] == 1.0 => (p, a, e),
        _ => return None,
    };
    match e {
        Operand::Param(k, 0.0) if steps[k] == 0.0 => {}
        Operand::Const(c) if base::number::is_count(c) => {}
        _ => return None,
    }
    if a < 0.0 {
        return None;
    }
    let results = rets
        .iter()
        .map(|r| match then_forms.get(r)? {
            Form::Param(j, b) if *b >= 0.0 => Some(Operand::Param(*j, *b)),
            Form::Const(c) => Some(Operand::Const(*c)),
            _ => None,
        })
        .collect::<Option<Vec<_>>>()?;
    Some(Shape {
        p,
        a,
        e,
        steps,
        results,
    })
}

/// The form of what `inst` makes, recorded; `None` for anything but
/// constants, sums and differences of a parameter and a small whole
/// constant, and equalities.
fn step(inst: &Inst, forms: &mut HashMap<Val, Form>) -> Option<()> {
    let [r] = inst.results[..] else {
        return None;
    };
    let operand = |v: &Val| match forms.get(v)? {
        Form::Param(j, c) => Some(Operand::Param(*j, *c)),
        Form::Const(c) => Some(Operand::Const(*c)),
        Form::Equal(..) => None,
    };
    let form = match &inst.op {
        Op::F64Const(c) => Form::Const(*c),
        Op::FBin(op @ (FBin::Add | FBin::PlusAdd | FBin::Sub), x, y) => {
            let sign = if *op == FBin::Sub { -1.0 } else { 1.0 };
            match (operand(x)?, operand(y)?) {
                (Operand::Param(j, c), Operand::Const(k)) if small_whole(k) => {
                    Form::Param(j, c + sign * k)
                }
                (Operand::Const(k), Operand::Param(j, c)) if sign > 0.0 && small_whole(k) => {
                    Form::Param(j, c + k)
                }
                _ => return None,
            }
        }
        Op::FCmp(Cmp::Eq, x, y) => Form::Equal(operand(x)?, operand(y)?),
        _ => return None,
    };
    if let Form::Param(_, c) = form {
        if !small_whole(c) {
            return None;
        }
    }
    forms.insert(r, form);
    Some(())
}

/// Puts before `f`'s body the tests of the module doc and, when they
/// hold, the return of the closed form.
fn rewrite(f: &mut Func, s: &Shape) {
    let mut b = Builder {
        types: &mut f.types,
        insts: Vec::new(),
    };
    // Every parameter whose count the closed form relies on.
    let mut counts = vec![s.p];
    if let Operand::Param(k, _) = s.e {
        counts.push(k);
    }
    for r in &s.results {
        if let Operand::Param(j, c) = *r {
            if s.steps[j] != 0.0 || c != 0.0 {
                counts.push(j);
            }
        }
    }
    counts.sort_unstable();
    counts.dedup();
    let mut tests: Vec<(Vec<Inst>, Val)> = Vec::new();
    for j in counts {
        let t = b.push(Op::IsCount(Val::new(j)), Ty::Bool);
        tests.push((std::mem::take(&mut b.insts), t));
    }
    // t* = e - a - p, at least 1.
    let e = match s.e {
        Operand::Param(k, _) => Val::new(k),
        Operand::Const(c) => b.push(Op::F64Const(c), Ty::F64),
    };
    let e_less_a = if s.a == 0.0 {
        e
    } else {
        let a = b.push(Op::F64Const(s.a), Ty::F64);
        b.push(Op::FBin(FBin::Sub, e, a), Ty::F64)
    };
    let steps = b.push(Op::FBin(FBin::Sub, e_less_a, Val::new(s.p)), Ty::F64);
    let one = b.push(Op::F64Const(1.0), Ty::F64);
    let enough = b.push(Op::FCmp(Cmp::Ge, steps, one), Ty::Bool);
    tests.push((std::mem::take(&mut b.insts), enough));
    let mut rets = Vec::with_capacity(s.results.len());
    for r in &s.results {
        rets.push(match *r {
            Operand::Const(c) => b.push(Op::F64Const(c), Ty::F64),
            Operand::Param(j, c) => {
                let x = Val::new(j);
                let moved = if s.steps[j] != 0.0 {
                    b.push(Op::FBin(FBin::Add, x, steps), Ty::F64)
                } else {
                    x
                };
                if c != 0.0 {
                    let k = b.push(Op::F64Const(c), Ty::F64);
                    b.push(Op::FBin(FBin::Add, moved, k), Ty::F64)
                } else {
                    moved
                }
            }
        });
    }
    // The tests nest, innermost last: each `If` returns the closed form
    // or yields nothing, and the loop runs after them.
    let mut inner = Block {
        insts: std::mem::take(&mut b.insts),
        term: Term::Return(rets),
    };
    while let Some((mut insts, cond)) = tests.pop() {
        insts.push(Inst {
            results: Vec::new(),
            op: Op::If {
                cond,
                then_: inner,
                else_: Block {
                    insts: Vec::new(),
                    term: Term::Yield(Vec::new()),
                },
            },
        });
        inner = Block {
            insts,
            term: Term::Yield(Vec::new()),
        };
    }
    let mut insts = inner.insts;
    insts.append(&mut f.body.insts);
    f.body.insts = insts;
}

/// New values of one function, appended to its types.
struct Builder<'a> {
    types: &'a mut Vec<Ty>,
    insts: Vec<Inst>,
}

impl Builder<'_> {
    fn push(&mut self, op: Op, ty: Ty) -> Val {
        let v = Val::new(self.types.len());
        self.types.push(ty);
        self.insts.push(Inst {
            results: vec![v],
            op,
        });
        v
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Reads a start, a bound and a count; prints what a loop counting
    /// from the start to the bound, testing before its step, returns, and
    /// its reciprocal (the sign of a zero); then what one testing after
    /// its step returns, from one less than the start.
    const MODULE: &str = "str s0 = \"error: `read-real` reached the end of input\"

func f0 main() -> () {
  v0 = read_real s0
  v1 = read_real s0
  v2 = read_real s0
  v3 = call f1(v1, v0, v2)
  print_real v3
  v4 = f64 1.0
  v5 = fdiv v4 v3
  print_real v5
  v6 = fsub v0 v4
  v7 = call f2(v1, v6, v2)
  print_real v7
  return
}

func f1 count(v0: f64, v1: f64, v2: f64) -> (f64) {
  v3 = feq v1 v0
  v4 = if v3 {
    return v2
  } else {
    v5 = f64 1.0
    v6 = fadd v1 v5
    v7 = fadd_plus v2 v5
    tailcall f1(v0, v6, v7)
  }
  return v4
}

func f2 count_after(v0: f64, v1: f64, v2: f64) -> (f64) {
  v3 = f64 1.0
  v4 = fadd v1 v3
  v5 = fadd_plus v2 v3
  v6 = feq v4 v0
  v7 = if v6 {
    return v5
  } else {
    tailcall f2(v0, v4, v5)
  }
  return v7
}

main f0
";

    use crate::eval::printed as output;

    #[test]
    fn the_closed_form_returns_what_the_loop_does() {
        let before = crate::read::module(MODULE).expect("the test module reads");
        let mut m = before.clone();
        closed_forms(&mut m);
        crate::verify::verify(&m).expect("the rewritten module verifies");
        assert_ne!(m, before, "both loops have a closed form");
        // Start, bound, count: counts; no step left (the loop itself);
        // a count of -0; a start or count not a count (the loop itself),
        // and a bound a count of steps away that is one past 2^40.
        for input in [
            "0 5 0",
            "3 3 7",
            "2 3 0",
            "0 1 -0",
            "4 9 -0",
            "1.5 4.5 2",
            "0 6 2.5",
            "1099511627775 1099511627778 0",
        ] {
            let input = input.replace(' ', "\n") + "\n";
            assert_eq!(
                output(&m, &input),
                output(&before, &input),
                "input {input:?}"
            );
        }
    }
}
