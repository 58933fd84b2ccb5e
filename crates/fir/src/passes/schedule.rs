//! FIR-to-FIR: the order of the arithmetic.
//!
//! Code generation keeps the order of FIR instructions (Cranelift runs
//! without its optimiser), so this pass decides which chains of arithmetic
//! start first and which values are live together. Within each run of pure
//! instructions between two instructions with effects, instructions are
//! listed by a list scheduler: while few values are live, the ready
//! instruction with the longest latency to the end of the run (square
//! roots and divisions on the way) comes first, so that the long chains of
//! a loop body start early and the processor overlaps the rest with them;
//! when many values are live, the ready instruction that frees the most
//! registers comes first. Only the order changes: the operations and their
//! operands are the same, so results are bit for bit the same.

use crate::{Block, FBin, FUn, Func, Inst, Module, Op, Val};
use rustc_hash::{FxHashMap as HashMap, FxHashSet as HashSet};

pub fn schedule(m: &mut Module) {
    for f in &mut m.funcs {
        schedule_func(f);
    }
}

pub fn schedule_func(f: &mut Func) {
    schedule_block(&mut f.body);
}

fn latency(op: &Op) -> u32 {
    match op {
        Op::F64Const(_) | Op::BoolConst(_) => 0,
        Op::FBin(FBin::Div, ..) => 13,
        Op::FUn(FUn::Sqrt, _) => 20,
        _ => 3,
    }
}

fn operands(op: &Op) -> Vec<Val> {
    let mut out = Vec::new();
    op.for_each_operand(|v| out.push(v));
    out
}

fn schedule_block(b: &mut Block) {
    let insts = std::mem::take(&mut b.insts);
    // Values read by the instructions with effects (nested blocks
    // included) and the terminator.
    let mut used_after = HashSet::default();
    for i in &insts {
        if !Op::is_pure(&i.op) {
            uses_of_inst(i, &mut used_after);
        }
    }
    uses_of_term(&b.term, &mut used_after);
    let mut out = Vec::with_capacity(insts.len());
    let mut run = Vec::new();
    for mut inst in insts {
        if Op::is_pure(&inst.op) {
            run.push(inst);
            continue;
        }
        schedule_run(std::mem::take(&mut run), &used_after, &mut out);
        if let Op::If { then_, else_, .. } = &mut inst.op {
            schedule_block(then_);
            schedule_block(else_);
        }
        out.push(inst);
    }
    schedule_run(run, &used_after, &mut out);
    b.insts = out;
}

fn uses_of_inst(i: &Inst, out: &mut HashSet<Val>) {
    i.op.for_each_operand(|v| {
        out.insert(v);
    });
    if let Op::If { then_, else_, .. } = &i.op {
        then_.for_each_use(&mut |v| {
            out.insert(v);
        });
        else_.for_each_use(&mut |v| {
            out.insert(v);
        });
    }
}

fn uses_of_term(t: &crate::Term, out: &mut HashSet<Val>) {
    t.for_each_operand(|v| {
        out.insert(v);
    });
}

/// Values in registers at once beyond which the order turns to freeing
/// registers rather than starting long chains.
const PRESSURE: usize = 10;

fn schedule_run(run: Vec<Inst>, used_after: &HashSet<Val>, out: &mut Vec<Inst>) {
    let n = run.len();
    if n < 3 {
        out.extend(run);
        return;
    }
    let def: HashMap<Val, usize> = run
        .iter()
        .enumerate()
        .filter_map(|(k, i)| i.results.first().map(|r| (*r, k)))
        .collect();
    let mut preds: Vec<Vec<usize>> = vec![Vec::new(); n];
    let mut succs: Vec<Vec<usize>> = vec![Vec::new(); n];
    for (k, i) in run.iter().enumerate() {
        for a in operands(&i.op) {
            if let Some(&j) = def.get(&a) {
                if !preds[k].contains(&j) {
                    preds[k].push(j);
                    succs[j].push(k);
                }
            }
        }
    }
    let escaping: Vec<bool> = run
        .iter()
        .map(|i| i.results.iter().any(|r| used_after.contains(r)))
        .collect();
    // Users come after their operands: heights in reverse order.
    let mut height = vec![0u32; n];
    for k in (0..n).rev() {
        let below = succs[k].iter().map(|s| height[*s]).max().unwrap_or(0);
        height[k] = latency(&run[k].op) + below;
    }
    // Values used after the run (by later instructions, nested blocks or
    // the terminator) stay live to its end whatever the order.
    let escapes: Vec<bool> = (0..n).map(|k| escaping[k]).collect();
    let mut waiting: Vec<usize> = preds.iter().map(|p| p.len()).collect();
    let mut uses_left: Vec<usize> = succs.iter().map(|s| s.len()).collect();
    let mut ready: Vec<usize> = (0..n).filter(|k| waiting[*k] == 0).collect();
    let mut live = 0usize;
    let mut slots: Vec<Option<Inst>> = run.into_iter().map(Some).collect();
    while !ready.is_empty() {
        // Below the limit, the longest chain first; at it, what frees the
        // most registers (then the longest chain).
        let frees = |k: usize, uses_left: &[usize]| -> i64 {
            let freed = preds[k]
                .iter()
                .filter(|j| uses_left[**j] == 1 && !escapes[**j])
                .count() as i64;
            freed - 1
        };
        let pick = if live < PRESSURE {
            (0..ready.len())
                .max_by_key(|&r| (height[ready[r]], std::cmp::Reverse(ready[r])))
                .expect("ready")
        } else {
            (0..ready.len())
                .max_by_key(|&r| {
                    (
                        frees(ready[r], &uses_left),
                        height[ready[r]],
                        std::cmp::Reverse(ready[r]),
                    )
                })
                .expect("ready")
        };
        let k = ready.swap_remove(pick);
        out.push(slots[k].take().expect("scheduled once"));
        for &j in &preds[k] {
            uses_left[j] -= 1;
            if uses_left[j] == 0 && !escapes[j] {
                live -= 1;
            }
        }
        if uses_left[k] > 0 || escapes[k] {
            live += 1;
        }
        for &s in &succs[k] {
            waiting[s] -= 1;
            if waiting[s] == 0 {
                ready.push(s);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Term, Ty};
    use base::EntityRef;

    use crate::testing::inst as i;

    /// The division chain starts before the independent additions, and
    /// every value is still defined before it is used.
    #[test]
    fn long_chain_first_and_defined_before_use() {
        let mut f = Func {
            name: "f".into(),
            params: vec![Ty::F64; 2],
            returns: vec![Ty::F64; 2],
            types: vec![Ty::F64; 7],
            body: Block {
                insts: vec![
                    i(&[2], Op::FBin(FBin::Add, Val::new(0), Val::new(1))),
                    i(&[3], Op::FBin(FBin::Add, Val::new(2), Val::new(1))),
                    i(&[4], Op::FUn(FUn::Sqrt, Val::new(0))),
                    i(&[5], Op::FBin(FBin::Div, Val::new(4), Val::new(1))),
                    i(&[6], Op::FBin(FBin::Div, Val::new(5), Val::new(3))),
                ],
                term: Term::Return(vec![Val::new(6), Val::new(3)]),
            },
        };
        schedule_func(&mut f);
        let order: Vec<u32> = f.body.insts.iter().map(|i| i.results[0].number()).collect();
        assert_eq!(order[0], 4);
        let pos = |v: u32| order.iter().position(|x| *x == v).unwrap();
        assert!(pos(4) < pos(5) && pos(5) < pos(6));
        assert!(pos(2) < pos(3) && pos(3) < pos(6));
    }
}
