//! Where every value has a fixed shape, compiled code is plain numeric
//! code. FIR has no closures, no indirect calls and no AD operations at
//! all (its `Op` enum cannot express them); what remains to check is that
//! no value of run-time shape is left either: no union cell is allocated
//! and no tag is tested, so there is no dispatch over procedures and no
//! allocation. That holds for the nested-AD examples and for the benchmark
//! programs whose loops have fixed data shapes (forward mode outside, any
//! mode inside). Reverse mode through a loop of run-time trip count
//! (particle and saddle RF and RR) needs a tape of run-time length: a
//! union, checked here to be allocated only there.

mod common;

use common::{compile, root};
use fir::{Block, Module, Op};
use std::path::PathBuf;

/// (allocations, tag tests) in a block and the blocks nested in it.
fn union_ops(b: &Block) -> (usize, usize) {
    let mut n = (0, 0);
    for i in &b.insts {
        match &i.op {
            // A tape is cells, or a stack of reals (FIR `stacks`).
            Op::Alloc(..) | Op::StackPush { .. } => n.0 += 1,
            Op::TagIs(..) => n.1 += 1,
            Op::If { then_, else_, .. } => {
                for arm in [then_, else_] {
                    let (a, t) = union_ops(arm);
                    n.0 += a;
                    n.1 += t;
                }
            }
            _ => {}
        }
    }
    n
}

fn module_union_ops(m: &Module) -> (usize, usize) {
    m.funcs.iter().fold((0, 0), |(a, t), f| {
        let (x, y) = union_ops(&f.body);
        (a + x, t + y)
    })
}

fn check(files: &[PathBuf], fixed: bool) {
    for f in files {
        let m = compile(f);
        let (allocs, tags) = module_union_ops(&m);
        println!(
            "{}: {} functions, {allocs} allocations, {tags} tag tests",
            f.display(),
            m.funcs.len()
        );
        if fixed {
            assert_eq!(
                (allocs, tags),
                (0, 0),
                "{}: values of run-time shape in a program of fixed shapes",
                f.display()
            );
        } else {
            assert!(
                allocs > 0,
                "{}: expected a tape of run-time length",
                f.display()
            );
        }
    }
}

/// The analysis recurses as deep as the programs do: on the driver's
/// thread, as in a build.
fn run(f: fn()) {
    if let Err(e) = driver::stack::on_deep_stack(f) {
        panic!("{e}");
    }
}

#[test]
fn fixed_shapes_compile_to_plain_numeric_code() {
    run(|| {
        let r = root();
        let mut files: Vec<PathBuf> = [
            "examples/08-gradients-hessians.vlad",
            "examples/09-perturbation-confusion.vlad",
            "examples/10-ad-of-ad.vlad",
            "examples/11-saddle.vlad",
        ]
        .iter()
        .map(|p| r.join(p))
        .collect();
        for p in [
            "particle-FF",
            "particle-FR",
            "saddle-FF",
            "saddle-FR",
            "backprop-Fs",
            "backprop-R",
        ] {
            files.push(r.join(format!("benches/programs/{p}.vlad")));
        }
        check(&files, true);
    });
}

#[test]
fn reverse_mode_through_loops_of_run_time_length_has_a_tape() {
    run(|| {
        let r = root();
        let files: Vec<PathBuf> = ["particle-RF", "particle-RR", "saddle-RF", "saddle-RR"]
            .iter()
            .map(|p| r.join(format!("benches/programs/{p}.vlad")))
            .collect();
        check(&files, false);
    });
}

/// A fixed-point iteration of run-time length with a custom derivative
/// (implicit differentiation) needs no tape: the custom backpropagator
/// runs another iteration instead of replaying the primal's. The same
/// iteration differentiated through every step needs one, so the check
/// can fail.
#[test]
fn a_custom_derivative_of_a_fixed_point_needs_no_tape() {
    run(|| {
        let r = root().join("tests/custom");
        check(&[r.join("fixed-point-gradient.vlad")], true);
        check(&[r.join("fixed-point.vlad")], false);
    });
}
