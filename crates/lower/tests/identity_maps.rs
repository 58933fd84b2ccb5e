//! A tag has no bits at run time, so the `wrap` and `unwrap` maps of
//! nested modes that only copy cells under other tags are the identity
//! (`lower/src/identity_maps.rs`): the second derivative of a loop by reverse over
//! reverse wraps and unwraps its inner tape at every step, and compiled
//! code must neither walk nor copy it.

mod common;

use common::{compile, root};
use fir::{Block, Op};

fn allocates(b: &Block) -> bool {
    b.insts.iter().any(|i| match &i.op {
        Op::Alloc(..) | Op::AllocZero(..) => true,
        Op::If { then_, else_, .. } => allocates(then_) || allocates(else_),
        _ => false,
    })
}

#[test]
fn reverse_over_reverse_of_a_loop_neither_walks_nor_copies_its_tape() {
    for name in ["grow-horner-rr.vlad", "grow-hvp-rr.vlad"] {
        let path = root().join("tests/complexity").join(name);
        let m = compile(&path);
        // The tape is there: cells of run-time number are made.
        assert!(
            m.funcs.iter().any(|f| allocates(&f.body)),
            "{name}: no cells at all"
        );
        // A map that recurses runs as two loops (`fir::passes::unrecurse`),
        // `NAME_down` and `NAME_up`: one map.
        let mut copying: Vec<&str> = m
            .funcs
            .iter()
            .filter(|f| f.name.starts_with("wrap_") || f.name.starts_with("unwrap_"))
            .filter(|f| allocates(&f.body))
            .map(|f| {
                let name = f.name.as_str();
                name.strip_suffix("_down")
                    .or_else(|| name.strip_suffix("_up"))
                    .unwrap_or(name)
            })
            .collect();
        copying.dedup();
        // grow-hvp-rr's wraps of lists whose cells may be lazy zeros make
        // them first, one per tag; the others are identities. The unwraps
        // of those wraps are not called: each unwraps a cell its function
        // has just wrapped, which lowering knows to be the cell it wrapped
        // (the memo tables' inverse entries would give it back).
        match name {
            "grow-horner-rr.vlad" => assert!(copying.is_empty(), "{name}: {copying:?} copy"),
            _ => {
                assert_eq!(copying.len(), 2, "{name}: {copying:?}");
                for tag in ["reverse", "sensitivity"] {
                    let count = |prefix: &str| {
                        copying
                            .iter()
                            .filter(|f| f.starts_with(&format!("{prefix}_{tag}_")))
                            .count()
                    };
                    assert_eq!(
                        (count("wrap"), count("unwrap")),
                        (1, 0),
                        "{name}: {copying:?}"
                    );
                }
            }
        }
    }
}
