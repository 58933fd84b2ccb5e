//! Dead cell slots: a scalar of a union member that no `Load` of the
//! module reads is not stored.
//!
//! Why: a backpropagator closure captures whole values (a closure's
//! environment, the state of a loop), and lowering flattens all of it into
//! the tape cell that holds the closure, although the backward sweep reads
//! only some of its reals. The slots a `Load` names are the live ones
//! (`Load` carries its member's tag for this); every `Alloc` of the member
//! drops the others, and the loads are renumbered. The values no longer
//! stored are then dead code for `simplify`. Pointers still lead a cell,
//! since dropping keeps the order.

use crate::{Block, Module, Op};
use std::collections::{HashMap, HashSet};

/// Drops the unread slots of every member.
pub fn drop_dead_slots(m: &mut Module) {
    let mut live: HashSet<(u32, u32)> = HashSet::new();
    for f in &m.funcs {
        loads(&f.body, &mut live);
    }
    // The new number of each live slot: its rank among its member's live
    // slots.
    let mut by_tag: HashMap<u32, Vec<u32>> = HashMap::new();
    for &(tag, slot) in &live {
        by_tag.entry(tag).or_default().push(slot);
    }
    let mut renumber: HashMap<(u32, u32), u32> = HashMap::new();
    for (tag, mut slots) in by_tag {
        slots.sort_unstable();
        for (rank, slot) in slots.into_iter().enumerate() {
            renumber.insert((tag, slot), rank as u32);
        }
    }
    for f in &mut m.funcs {
        rewrite(&mut f.body, &renumber);
    }
}

fn loads(b: &Block, live: &mut HashSet<(u32, u32)>) {
    for i in &b.insts {
        match &i.op {
            Op::Load(_, tag, slot) => {
                live.insert((*tag, *slot));
            }
            Op::If { then_, else_, .. } => {
                loads(then_, live);
                loads(else_, live);
            }
            _ => {}
        }
    }
}

fn rewrite(b: &mut Block, renumber: &HashMap<(u32, u32), u32>) {
    for i in &mut b.insts {
        match &mut i.op {
            Op::Load(_, tag, slot) => {
                // Every load's slot is live, so it has a new number.
                if let Some(n) = renumber.get(&(*tag, *slot)) {
                    *slot = *n;
                }
            }
            Op::Alloc(tag, fields) | Op::AllocZero(tag, fields) => {
                let tag = *tag;
                let mut slot = 0;
                fields.retain(|_| {
                    slot += 1;
                    renumber.contains_key(&(tag, slot - 1))
                });
            }
            Op::If { then_, else_, .. } => {
                rewrite(then_, renumber);
                rewrite(else_, renumber);
            }
            _ => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::inst as i;
    use crate::{Func, FuncId, Term, Ty, Val};
    use base::EntityRef;

    /// `main`: a cell of member #0 with a pointer and three reals, of which
    /// only the pointer and the last real are read, and a cell of member
    /// #1 nothing reads at all.
    fn module() -> Module {
        let v = Val::new;
        let body = Block {
            insts: vec![
                i(&[0], Op::F64Const(1.0)),
                i(&[1], Op::F64Const(2.0)),
                i(&[2], Op::Alloc(1, vec![v(0), v(1)])),
                i(&[3], Op::Alloc(0, vec![v(2), v(0), v(1), v(0)])),
                i(&[4], Op::Load(v(3), 0, 3)),
                i(&[5], Op::Load(v(3), 0, 0)),
                i(&[], Op::PrintReal(v(4))),
            ],
            term: Term::Return(vec![]),
        };
        Module {
            funcs: vec![Func {
                name: "main".into(),
                params: vec![],
                returns: vec![],
                types: vec![Ty::F64, Ty::F64, Ty::Ptr, Ty::Ptr, Ty::F64, Ty::Ptr],
                body,
            }],
            main: Some(FuncId::new(0)),
            strings: vec![],
        }
    }

    #[test]
    fn drops_the_slots_nothing_reads_and_renumbers_the_loads() {
        let mut m = module();
        drop_dead_slots(&mut m);
        let v = Val::new;
        let ops: Vec<&Op> = m.funcs[0].body.insts.iter().map(|i| &i.op).collect();
        assert_eq!(ops[2], &Op::Alloc(1, vec![]));
        assert_eq!(ops[3], &Op::Alloc(0, vec![v(2), v(0)]));
        assert_eq!(ops[4], &Op::Load(v(3), 0, 1));
        assert_eq!(ops[5], &Op::Load(v(3), 0, 0));
        assert_eq!(crate::verify::verify(&m), Ok(()));
    }

    fn output(m: &Module) -> Result<String, String> {
        let mut out = Vec::new();
        crate::eval::run(m, &mut &b""[..], &mut out)?;
        Ok(String::from_utf8_lossy(&out).into_owned())
    }

    #[test]
    fn the_evaluator_gives_the_same_output_after_it() {
        let before = output(&module());
        assert_eq!(before, Ok("1".to_string()));
        let mut m = module();
        drop_dead_slots(&mut m);
        assert_eq!(output(&m), before);
    }
}
