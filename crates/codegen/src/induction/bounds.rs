//! The exit tests of a loop's integer version (`induction`): a counter
//! that every step takes toward a bound the loop leaves at, `i = n` with
//! `i` going up from at most `n`, say, never leaves the range between
//! where it started and that bound. Its steps need no test against the
//! limit, nor do those of the counters that step alike (they keep their
//! differences), and an index it derives whose check the exit test
//! guards lies, at every step, between two values known on entry: one
//! test of those on entry answers every step's check. matvec-R's loops
//! spent four instructions of 13 per element on these tests.
//!
//! A bound is a fixed parameter or a constant, both whole and within the
//! limit; the counter's condition (`i != n`, `i < n`, ... on the counter
//! plus a whole offset) is decided on the way to every self call that
//! steps it. With `!=`, the counter must start on the right side of the
//! bound, which the entry tests too; with `<` (going up) or `>` (going
//! down), a counter past the bound leaves at its first test.
//!
//! Input: a loop's counters and derived values. Output: its [`Bound`]s
//! and the index checks true at every step ([`InRange`]).

use super::*;

/// How a counter compares with a bound.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Rel {
    Eq,
    Ne,
    Lt,
    Le,
    Gt,
    Ge,
}

impl Rel {
    fn of(c: Cmp, truth: bool) -> Rel {
        let r = match c {
            Cmp::Eq => Rel::Eq,
            Cmp::Lt => Rel::Lt,
            Cmp::Gt => Rel::Gt,
            Cmp::Le => Rel::Le,
            Cmp::Ge => Rel::Ge,
        };
        if truth {
            r
        } else {
            // The operands are whole numbers (no NaN): `not <` is `>=`.
            match r {
                Rel::Eq => Rel::Ne,
                Rel::Ne => Rel::Eq,
                Rel::Lt => Rel::Ge,
                Rel::Ge => Rel::Lt,
                Rel::Gt => Rel::Le,
                Rel::Le => Rel::Gt,
            }
        }
    }

    /// The relation with its operands swapped.
    fn flip(self) -> Rel {
        match self {
            Rel::Lt => Rel::Gt,
            Rel::Gt => Rel::Lt,
            Rel::Le => Rel::Ge,
            Rel::Ge => Rel::Le,
            r => r,
        }
    }

    /// Whether a counter going in direction `dir` stops at this bound.
    fn stops(self, dir: i64) -> bool {
        match self {
            Rel::Ne => dir != 0,
            Rel::Lt | Rel::Le => dir > 0,
            Rel::Gt | Rel::Ge => dir < 0,
            Rel::Eq => false,
        }
    }
}

/// A bound: a fixed parameter (whole, converted on entry) or a constant.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Limit {
    Fixed(usize),
    Const(i64),
}

/// A counter that every step takes toward a bound: on the way to each
/// self call that steps it, `counter rel limit - offset` holds.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Bound {
    pub(crate) counter: usize,
    pub(crate) dir: i64,
    pub(crate) rel: Rel,
    pub(crate) limit: Limit,
    pub(crate) offset: i64,
    /// The condition (a comparison) and the truth that says so.
    fact: (Val, bool),
}

/// One end of a counter's range: its value on entry, or the bound's
/// target (`limit - offset`) plus a constant.
#[derive(Clone, Copy, Debug)]
pub(crate) enum End {
    Entry,
    Target(i64),
}

impl Bound {
    /// The counter's lowest and highest values where its condition holds.
    pub(crate) fn range(&self) -> [End; 2] {
        match (self.dir < 0, self.rel) {
            (true, Rel::Ge) => [End::Target(0), End::Entry],
            (true, _) => [End::Target(1), End::Entry],
            (false, Rel::Le) => [End::Entry, End::Target(0)],
            (false, _) => [End::Entry, End::Target(-1)],
        }
    }
}

/// A check that `index` (`counter + offset`) indexes the fixed vector
/// parameter `vector`, guarded by bound `bound`'s condition.
#[derive(Clone, Copy, Debug)]
pub(crate) struct InRange {
    pub(crate) result: Val,
    pub(crate) vector: usize,
    pub(crate) counter: usize,
    pub(crate) offset: i64,
    pub(crate) bound: usize,
}

/// The conditions decided on the way to a point: (value, truth).
type Facts = Vec<(Val, bool)>;

#[derive(Default)]
struct Walk<'a> {
    calls: Vec<(&'a [Val], Facts)>,
    /// Index checks: (result, vector, index).
    checks: Vec<(Val, Val, Val, Facts)>,
}

fn walk<'a>(b: &'a fir::Block, fid: FuncId, facts: &mut Facts, w: &mut Walk<'a>) {
    let mark = facts.len();
    for inst in &b.insts {
        match (&inst.op, &inst.results[..]) {
            (Op::If { cond, then_, else_ }, _) => {
                for (arm, truth) in [(then_, true), (else_, false)] {
                    facts.push((*cond, truth));
                    walk(arm, fid, facts, w);
                    facts.pop();
                }
                // What follows runs after the arm that yields.
                let yields = |a: &fir::Block| matches!(a.term, Term::Yield(_));
                match (yields(then_), yields(else_)) {
                    (true, false) => facts.push((*cond, true)),
                    (false, true) => facts.push((*cond, false)),
                    _ => {}
                }
            }
            (Op::VecIndexOk(v, i), [r]) => w.checks.push((*r, *v, *i, facts.clone())),
            _ => {}
        }
    }
    if let Term::TailCall(g, args) = &b.term {
        if *g == fid {
            w.calls.push((args, facts.clone()));
        }
    }
    facts.truncate(mark);
}

/// What [`bounds`] reads of the loop's counters.
pub(crate) struct Loop<'a> {
    pub(crate) fid: FuncId,
    pub(crate) f: &'a fir::Func,
    pub(crate) derived: &'a HashMap<Val, (usize, i64)>,
    /// The counters with their directions.
    pub(crate) params: &'a [(usize, i64)],
    pub(crate) measured: &'a [usize],
    /// The bound a value is, if it is one.
    pub(crate) limit: &'a dyn Fn(Val) -> Option<Limit>,
}

/// The bounds of a loop's counters, and the index checks they answer.
pub(crate) fn bounds(l: &Loop) -> (Vec<Bound>, Vec<InRange>) {
    let mut cmps: HashMap<Val, (Cmp, Val, Val)> = HashMap::new();
    l.f.body.for_each_inst(&mut |inst| {
        if let (Op::FCmp(c, x, y), [r]) = (&inst.op, &inst.results[..]) {
            cmps.insert(*r, (*c, *x, *y));
        }
    });
    let mut w = Walk::default();
    walk(&l.f.body, l.fid, &mut Vec::new(), &mut w);
    // What fact `(v, truth)` says of counter `k`: `k rel limit - offset`.
    let bound_of = |(v, truth): (Val, bool), k: usize| -> Option<(Rel, Limit, i64)> {
        let &(c, x, y) = cmps.get(&v)?;
        let rel = Rel::of(c, truth);
        match (l.derived.get(&x), l.derived.get(&y)) {
            (Some(&(j, o)), _) if j == k => (l.limit)(y).map(|lim| (rel, lim, o)),
            (_, Some(&(j, o))) if j == k => (l.limit)(x).map(|lim| (rel.flip(), lim, o)),
            _ => None,
        }
    };
    let mut bounds = Vec::new();
    for &(k, dir) in l.params {
        if dir == 0 {
            continue;
        }
        let steps = |args: &[Val]| l.derived.get(&args[k]).is_some_and(|d| d.1 != 0);
        let mut stepping = w.calls.iter().filter(|(args, _)| steps(args));
        let Some((_, first)) = stepping.next() else {
            continue;
        };
        let others: Vec<&Facts> = stepping.map(|c| &c.1).collect();
        let found = first.iter().filter_map(|&fact| {
            let (rel, limit, offset) = bound_of(fact, k)?;
            (rel.stops(dir) && others.iter().all(|fs| fs.contains(&fact))).then_some(Bound {
                counter: k,
                dir,
                rel,
                limit,
                offset,
                fact,
            })
        });
        // A bound that `!=` stops at holds only if the counter starts on
        // its side, which the entry tests; `<` and the others need no test.
        let (ne, other): (Vec<Bound>, Vec<Bound>) = found.partition(|b| b.rel == Rel::Ne);
        bounds.extend(other.into_iter().chain(ne).next());
    }
    // Counters that step alike keep the differences they came in with.
    let alike = |a: usize, b: usize| {
        w.calls.iter().all(|(args, _)| {
            let step = |j: usize| l.derived.get(&args[j]).map(|d| d.1);
            step(a).is_some() && step(a) == step(b)
        })
    };
    let mut in_range = Vec::new();
    for (result, v, i, facts) in &w.checks {
        if !l.measured.contains(&v.index()) || v.index() >= l.f.params.len() {
            continue;
        }
        let Some(&(counter, offset)) = l.derived.get(i) else {
            continue;
        };
        let guard = bounds
            .iter()
            .position(|b| facts.contains(&b.fact) && alike(b.counter, counter));
        if let Some(bound) = guard {
            in_range.push(InRange {
                result: *result,
                vector: v.index(),
                counter,
                offset,
                bound,
            });
        }
    }
    (bounds, in_range)
}
