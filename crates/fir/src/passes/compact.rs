//! Renumbering a function's values densely: its parameters, then the
//! results of its instructions in the order they are defined (an `If`'s
//! arms before its results). No pass ever shrinks `types`: inlining
//! appends every value of the callee, and simplification leaves the types
//! of the values it removes. Without this, a callee inlined in round after
//! round brought along every dead value of its own earlier inlining, and
//! the code generator and the passes that keep a table per value paid for
//! all of them (particle-RR: 11 million values for 16 thousand
//! instructions).

use crate::{Block, Func, Op, Val};
use base::EntityRef;

const UNSET: u32 = u32::MAX;

/// Renumbers `f`'s values densely, dropping the types of values its body
/// no longer defines. The code is otherwise unchanged.
pub fn compact(f: &mut Func) {
    let n = f.types.len();
    let mut map = vec![UNSET; n];
    // Grown as values are found: sizing it from the body's size was a
    // walk of the body as long as numbering it.
    let mut types = Vec::with_capacity(f.params.len());
    for (i, t) in f.params.iter().enumerate() {
        map[i] = i as u32;
        types.push(*t);
    }
    number(&f.body, &f.types, &mut map, &mut types);
    if types.len() == n && map.iter().enumerate().all(|(i, m)| *m as usize == i) {
        return;
    }
    rename(&mut f.body, &map);
    f.types = types;
}

fn number(b: &Block, old: &[crate::Ty], map: &mut [u32], types: &mut Vec<crate::Ty>) {
    for inst in &b.insts {
        if let Op::If { then_, else_, .. } = &inst.op {
            number(then_, old, map, types);
            number(else_, old, map, types);
        }
        for r in &inst.results {
            if let Some(slot) = map.get_mut(r.index()) {
                if *slot == UNSET {
                    *slot = types.len() as u32;
                    types.push(old[r.index()]);
                }
            }
        }
    }
}

fn rename(b: &mut Block, map: &[u32]) {
    let mut r = |v: &mut Val| {
        if let Some(&n) = map.get(v.index()) {
            if n != UNSET {
                *v = Val::from_number(n);
            }
        }
    };
    b.for_each_result_mut(&mut r);
    b.for_each_use_mut(&mut r);
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::inst as i;
    use crate::{FBin, Term, Ty};

    #[test]
    fn dead_values_are_dropped_and_the_rest_renumbered_in_order() {
        // f(v0) = v5 = v0 + v0; v2 = v5 * v0; return v2, with v1, v3, v4
        // the types of values nothing defines any more.
        let v = Val::new;
        let mut f = Func {
            name: "f".into(),
            params: vec![Ty::F64],
            returns: vec![Ty::F64],
            types: vec![Ty::F64, Ty::Bool, Ty::F64, Ty::Ptr, Ty::Bool, Ty::F64],
            body: Block {
                insts: vec![
                    i(&[5], Op::FBin(FBin::Add, v(0), v(0))),
                    i(&[2], Op::FBin(FBin::Mul, v(5), v(0))),
                ],
                term: Term::Return(vec![v(2)]),
            },
        };
        compact(&mut f);
        assert_eq!(f.types, vec![Ty::F64; 3]);
        assert_eq!(
            f.body.insts,
            vec![
                i(&[1], Op::FBin(FBin::Add, v(0), v(0))),
                i(&[2], Op::FBin(FBin::Mul, v(1), v(0))),
            ]
        );
        assert_eq!(f.body.term, Term::Return(vec![v(2)]));
        let before = f.clone();
        compact(&mut f);
        assert_eq!(f, before, "a dense function is left as it is");
    }
}
