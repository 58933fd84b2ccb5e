//! Pushes of a counting loop say how many more will follow: a loop that
//! pushes on a stack (`Op::StackPush`) once a step, while an index steps
//! by one up to a bound, gives each push the `room` of the steps left.
//!
//! Why: reverse mode's forward sweep of `vector-fold` records each step
//! on a stack whose buffer the runtime doubled as it filled
//! (`runtime/src/gc/stack.rs`): the buffers before the last were as large
//! as the last together, each fresh from the system and copied into. At
//! 10^6 elements the Hessian-vector product of `tests/complexity/vectors`
//! faulted in 5 of its 28 huge pages for them.
//!
//! The shape: a function whose every self tail call passes the push's
//! result for the stack parameter `b` it pushed on, its count `k` plus 1
//! for the count parameter, a parameter `i` plus 1 for `i`, and a
//! parameter `e` unchanged; and an equality test `x = e` in the function,
//! `x` being `i + c` for a whole constant `c` from 0 to 2 (additions and
//! subtractions of constants). The steps left after this one are `e - x`
//! then: each step adds one to `x`, and the step where `x = e` is the
//! last. The room is a hint (`rt_stack_grow` makes room for at least one
//! and a half times the old count whatever it says, and a hint below 0
//! or not whole is none), so a loop that does not push every step, or
//! stops earlier, is only given a larger buffer than it needed.

use crate::{Block, Cmp, FBin, Func, FuncId, Inst, Module, Op, Ty, Val};
use base::EntityRef;
use rustc_hash::FxHashMap as HashMap;

/// The largest constant between an index and the value compared with
/// its bound.
const MAX_OFFSET: f64 = 2.0;

/// Gives the pushes of every counting loop their room (see the module
/// doc).
pub fn expect_room(m: &mut Module) {
    for (fi, f) in m.funcs.iter_mut().enumerate() {
        if f.params.len() > 1 {
            in_loop(FuncId::new(fi), f);
        }
    }
}

fn in_loop(me: FuncId, f: &mut Func) {
    let calls = f.body.tail_calls_to(me);
    if calls.is_empty() {
        return;
    }
    let param = |v: Val| (v.index() < f.params.len()).then_some(v.index());
    // What each value is: a parameter plus a constant, when it is one.
    let mut consts: HashMap<Val, f64> = HashMap::default();
    let mut offset: HashMap<Val, (usize, f64)> = HashMap::default();
    for j in 0..f.params.len() {
        offset.insert(Val::new(j), (j, 0.0));
    }
    let mut pushes: Vec<(Val, Val, Val)> = Vec::new();
    let mut tests: Vec<(Val, Val)> = Vec::new();
    f.body
        .for_each_inst(&mut |i| match (&i.op, &i.results[..]) {
            (Op::F64Const(c), [r]) => {
                consts.insert(*r, *c);
            }
            (Op::FBin(op @ (FBin::Add | FBin::PlusAdd | FBin::Sub), x, y), [r]) => {
                let sign = if *op == FBin::Sub { -1.0 } else { 1.0 };
                let step = match (offset.get(x), consts.get(y), consts.get(x), offset.get(y)) {
                    (Some(&(j, o)), Some(c), _, _) => Some((j, o + sign * c)),
                    (_, _, Some(c), Some(&(j, o))) if sign > 0.0 => Some((j, o + c)),
                    _ => None,
                };
                if let Some(s) = step {
                    offset.insert(*r, s);
                }
            }
            (Op::FCmp(Cmp::Eq, x, y), _) => {
                tests.push((*x, *y));
                tests.push((*y, *x));
            }
            (Op::StackPush { buf, k, .. }, [r]) => pushes.push((*r, *buf, *k)),
            _ => {}
        });
    let passes = |j: usize, want: &dyn Fn(Val) -> bool| calls.iter().all(|a| want(a[j]));
    let plus_one = |v: Val, j: usize| offset.get(&v) == Some(&(j, 1.0));
    // The steps: an index `i` stepped by one, compared with a bound `e`
    // every self call passes unchanged.
    let Some((i, c, e)) = tests.iter().find_map(|&(x, e)| {
        let (i, c) = *offset.get(&x)?;
        let e = param(e)?;
        let whole = c.trunc() == c && (0.0..=MAX_OFFSET).contains(&c);
        (whole && e != i && passes(e, &|a| a == Val::new(e)) && passes(i, &|a| plus_one(a, i)))
            .then_some((i, c, e))
    }) else {
        return;
    };
    let stepped: Vec<Val> = (pushes.iter())
        .filter(|&&(r, buf, k)| {
            let (Some(b), Some(kj)) = (param(buf), param(k)) else {
                return false;
            };
            passes(b, &|a| a == r) && passes(kj, &|a| plus_one(a, kj))
        })
        .map(|&(r, ..)| r)
        .collect();
    if stepped.is_empty() {
        return;
    }
    let mut types = std::mem::take(&mut f.types);
    let mut fresh = |t: Ty| {
        types.push(t);
        Val::new(types.len() - 1)
    };
    give_room(
        &mut f.body,
        &stepped,
        (Val::new(i), c, Val::new(e)),
        &mut fresh,
    );
    f.types = types;
}

/// Before each push of `stepped` without a room, the room `e - i - c`.
fn give_room(
    b: &mut Block,
    stepped: &[Val],
    (i, c, e): (Val, f64, Val),
    fresh: &mut impl FnMut(Ty) -> Val,
) {
    let insts = std::mem::take(&mut b.insts);
    for mut inst in insts {
        if let Op::If { then_, else_, .. } = &mut inst.op {
            give_room(then_, stepped, (i, c, e), fresh);
            give_room(else_, stepped, (i, c, e), fresh);
        }
        if let Op::StackPush {
            room: room @ None, ..
        } = &mut inst.op
        {
            if inst.results.first().is_some_and(|r| stepped.contains(r)) {
                let left = fresh(Ty::F64);
                b.insts.push(Inst {
                    results: vec![left],
                    op: Op::FBin(FBin::Sub, e, i),
                });
                let mut h = left;
                if c != 0.0 {
                    let konst = fresh(Ty::F64);
                    h = fresh(Ty::F64);
                    b.insts.extend([
                        Inst {
                            results: vec![konst],
                            op: Op::F64Const(c),
                        },
                        Inst {
                            results: vec![h],
                            op: Op::FBin(FBin::Sub, left, konst),
                        },
                    ]);
                }
                *room = Some(h);
            }
        }
        b.insts.push(inst);
    }
}
