//! The verifier accepts well-formed functions and names each kind of
//! broken invariant.

use super::verify;
use crate::{Block, Cmp, FBin, Func, FuncId, Module, Op, StrId, Term, Ty, Val};
use base::EntityRef;

use crate::testing::inst as i;

fn func(name: &str, params: Vec<Ty>, returns: Vec<Ty>, types: Vec<Ty>, body: Block) -> Func {
    Func {
        name: name.into(),
        params,
        returns,
        types,
        body,
    }
}

/// `double(x) = x + x`, called by `main`, which prints the result.
fn good() -> Module {
    let double = func(
        "double",
        vec![Ty::F64],
        vec![Ty::F64],
        vec![Ty::F64, Ty::F64],
        Block {
            insts: vec![i(&[1], Op::FBin(FBin::Add, Val::new(0), Val::new(0)))],
            term: Term::Return(vec![Val::new(1)]),
        },
    );
    let main = func(
        "main",
        vec![],
        vec![],
        vec![Ty::F64, Ty::F64, Ty::Bool, Ty::F64],
        Block {
            insts: vec![
                i(&[0], Op::ReadReal(StrId::new(0))),
                i(&[1], Op::Call(FuncId::new(0), vec![Val::new(0)])),
                i(&[2], Op::FCmp(Cmp::Lt, Val::new(0), Val::new(1))),
                i(
                    &[3],
                    Op::If {
                        cond: Val::new(2),
                        then_: Block {
                            insts: vec![],
                            term: Term::Yield(vec![Val::new(1)]),
                        },
                        else_: Block {
                            insts: vec![],
                            term: Term::Error(StrId::new(0)),
                        },
                    },
                ),
                i(&[], Op::PrintReal(Val::new(3))),
            ],
            term: Term::Return(vec![]),
        },
    );
    Module {
        funcs: vec![double, main],
        main: Some(FuncId::new(1)),
        vectors: Default::default(),
        strings: vec!["error: end of input".into()],
        cells: Default::default(),
    }
}

fn rejects(m: &Module, what: &str) {
    match verify(m) {
        Ok(()) => panic!("the verifier accepted a module where {what}"),
        Err(e) => assert!(
            e.to_string().contains(what),
            "expected an error about `{what}`, got: {e}"
        ),
    }
}

#[test]
fn accepts_a_well_formed_module() {
    assert_eq!(verify(&good()), Ok(()));
}

#[test]
fn rejects_a_use_before_definition() {
    let mut m = good();
    m.funcs[1].body.insts.swap(0, 1);
    rejects(&m, "v0 is used where it is not defined");
}

#[test]
fn rejects_a_value_used_after_the_if_that_defined_it() {
    let mut m = good();
    // v4 is defined in the `then` arm and read after the `If`.
    m.funcs[1].types.push(Ty::F64);
    if let Op::If { then_, .. } = &mut m.funcs[1].body.insts[3].op {
        then_.insts.push(i(&[4], Op::F64Const(1.0)));
    }
    m.funcs[1].body.insts[4] = i(&[], Op::PrintReal(Val::new(4)));
    rejects(&m, "v4 is used where it is not defined");
}

#[test]
fn rejects_a_value_defined_twice() {
    let mut m = good();
    m.funcs[0].body.insts.push(i(&[1], Op::F64Const(2.0)));
    rejects(&m, "v1 is defined twice");
}

#[test]
fn rejects_an_operand_of_the_wrong_type() {
    let mut m = good();
    m.funcs[1].body.insts[4] = i(&[], Op::PrintReal(Val::new(2)));
    rejects(&m, "v2 is Bool where F64 is needed");
}

#[test]
fn rejects_a_call_with_the_wrong_arguments() {
    let mut m = good();
    m.funcs[1].body.insts[1] = i(&[1], Op::Call(FuncId::new(0), vec![]));
    rejects(&m, "call of `double`: 0 values where 1 are needed");
}

#[test]
fn rejects_a_tail_call_to_a_function_with_other_returns() {
    let mut m = good();
    m.funcs[1].body.term = Term::TailCall(FuncId::new(0), vec![Val::new(0)]);
    rejects(&m, "which returns [F64], from a function returning []");
}

#[test]
fn rejects_a_body_that_yields() {
    let mut m = good();
    m.funcs[0].body.term = Term::Yield(vec![Val::new(1)]);
    rejects(&m, "a function body ends in `Yield`");
}

#[test]
fn rejects_arms_that_yield_different_types() {
    let mut m = good();
    if let Op::If { else_, .. } = &mut m.funcs[1].body.insts[3].op {
        else_.term = Term::Yield(vec![Val::new(2)]);
    }
    rejects(&m, "v2 is Bool where F64 is needed");
}

#[test]
fn rejects_a_result_of_the_wrong_type() {
    let mut m = good();
    m.funcs[0].types[1] = Ty::Bool;
    rejects(&m, "are typed [Bool] but the operation gives [F64]");
}

#[test]
fn rejects_ids_out_of_range() {
    let mut m = good();
    m.funcs[1].body.insts[0] = i(&[0], Op::ReadReal(StrId::new(7)));
    rejects(&m, "string s7 of 1");
    let mut m = good();
    m.funcs[1].body.insts[1] = i(&[1], Op::Call(FuncId::new(9), vec![Val::new(0)]));
    rejects(&m, "call of function 9 of 2");
}

#[test]
fn rejects_a_main_with_parameters() {
    let mut m = good();
    m.main = Some(FuncId::new(0));
    rejects(&m, "main must take and return nothing");
}

/// `get(p)` gives the real of a `#1` cell, testing its tag first; `main`
/// makes a `#0` cell and a `#1` cell holding it and a real read, and
/// prints `get` of it.
fn cells() -> Module {
    let v = Val::new;
    let get = func(
        "get",
        vec![Ty::Ptr],
        vec![Ty::F64],
        vec![Ty::Ptr, Ty::Bool, Ty::F64, Ty::F64],
        Block {
            insts: vec![
                i(&[1], Op::TagIs(v(0), 1)),
                i(
                    &[2],
                    Op::If {
                        cond: v(1),
                        then_: Block {
                            insts: vec![i(&[3], Op::Load(v(0), 1, 1))],
                            term: Term::Yield(vec![v(3)]),
                        },
                        else_: Block {
                            insts: vec![],
                            term: Term::Error(StrId::new(0)),
                        },
                    },
                ),
            ],
            term: Term::Return(vec![v(2)]),
        },
    );
    let main = func(
        "main",
        vec![],
        vec![],
        vec![Ty::F64, Ty::Ptr, Ty::Ptr, Ty::F64],
        Block {
            insts: vec![
                i(&[0], Op::ReadReal(StrId::new(0))),
                i(&[1], Op::Alloc(0, vec![])),
                i(&[2], Op::Alloc(1, vec![v(1), v(0)])),
                i(&[3], Op::Call(FuncId::new(0), vec![v(2)])),
                i(&[], Op::PrintReal(v(3))),
            ],
            term: Term::Return(vec![]),
        },
    );
    Module {
        funcs: vec![get, main],
        main: Some(FuncId::new(1)),
        vectors: Default::default(),
        strings: vec!["error: not a #1 cell".into()],
        cells: [(0, vec![]), (1, vec![Ty::Ptr, Ty::F64])].into(),
    }
}

/// `get`'s `If` and the instructions of its arm that loads.
fn get_arm(m: &mut Module) -> &mut Vec<crate::Inst> {
    match &mut m.funcs[0].body.insts[1].op {
        Op::If { then_, .. } => &mut then_.insts,
        _ => unreachable!("`get` tests, then loads in an `If`"),
    }
}

#[test]
fn accepts_cells_of_their_layouts() {
    assert_eq!(verify(&cells()), Ok(()));
}

#[test]
fn rejects_a_layout_with_a_pointer_after_a_real() {
    let mut m = cells();
    m.cells.insert(2, vec![Ty::F64, Ty::Ptr]);
    rejects(
        &m,
        "cell #2: the layout (f64, ptr) has a pointer after a scalar",
    );
}

#[test]
fn rejects_a_tag_without_a_layout() {
    let mut m = cells();
    m.funcs[1].body.insts[1] = i(&[1], Op::Alloc(5, vec![]));
    rejects(&m, "cell #5 has no layout");
    let mut m = cells();
    m.funcs[0].body.insts[0] = i(&[1], Op::TagIs(Val::new(0), 5));
    rejects(&m, "cell #5 has no layout");
    let mut m = cells();
    get_arm(&mut m)[0] = i(&[3], Op::Load(Val::new(0), 5, 1));
    rejects(&m, "cell #5 has no layout");
}

#[test]
fn rejects_an_alloc_that_does_not_fill_its_layout() {
    let mut m = cells();
    m.funcs[1].body.insts[2] = i(&[2], Op::Alloc(1, vec![Val::new(1)]));
    rejects(&m, "a cell #1 (ptr, f64): 1 values where 2 are needed");
    let mut m = cells();
    m.funcs[1].body.insts[2] = i(&[2], Op::AllocZero(1, vec![Val::new(0), Val::new(1)]));
    rejects(&m, "v0 is F64 where Ptr is needed");
}

#[test]
fn rejects_a_load_outside_its_layout() {
    let mut m = cells();
    get_arm(&mut m)[0] = i(&[3], Op::Load(Val::new(0), 1, 2));
    rejects(&m, "a load of slot 2 of a cell #1 (ptr, f64)");
}

#[test]
fn rejects_a_load_of_another_type_than_its_slot() {
    let mut m = cells();
    get_arm(&mut m)[0] = i(&[3], Op::Load(Val::new(0), 1, 0));
    rejects(&m, "are typed [F64] but the operation gives [Ptr]");
}

#[test]
fn rejects_a_load_of_a_member_the_cell_was_made_without() {
    // main: v4 = load v2 #0.0 where v2 = alloc #1(..), with #0 = (f64).
    let mut m = cells();
    m.cells.insert(0, vec![Ty::F64]);
    m.funcs[1].body.insts[1] = i(&[1], Op::Alloc(0, vec![Val::new(0)]));
    m.funcs[1].types.push(Ty::F64);
    m.funcs[1]
        .body
        .insts
        .push(i(&[4], Op::Load(Val::new(2), 1, 1)));
    assert_eq!(verify(&m), Ok(()));
    m.funcs[1].body.insts[5] = i(&[4], Op::Load(Val::new(2), 0, 0));
    rejects(
        &m,
        "a load of member #0 from v2, whose cell holds member #1",
    );
}

#[test]
fn rejects_a_load_of_another_member_than_the_test_showed() {
    // get: the arm of `tag_is v0 #1` loads member #2 = (ptr, f64).
    let mut m = cells();
    m.cells.insert(2, vec![Ty::Ptr, Ty::F64]);
    get_arm(&mut m)[0] = i(&[3], Op::Load(Val::new(0), 2, 1));
    rejects(
        &m,
        "a load of member #2 from v0, whose cell holds member #1",
    );
    // The same load in the arm of `not (tag_is v0 #2)`'s failure.
    m.funcs[0].types.push(Ty::Bool);
    m.funcs[0].body.insts[0] = i(&[1], Op::TagIs(Val::new(0), 2));
    m.funcs[0]
        .body
        .insts
        .insert(1, i(&[4], Op::Not(Val::new(1))));
    if let Op::If { cond, then_, else_ } = &mut m.funcs[0].body.insts[2].op {
        *cond = Val::new(4);
        std::mem::swap(then_, else_);
    }
    assert_eq!(verify(&m), Ok(()));
}

#[test]
fn rejects_a_load_after_a_test_whose_other_arm_fails() {
    // get: `if tag_is v0 #1 { yield } else { error }`, then the load.
    let mut m = cells();
    let load = get_arm(&mut m).remove(0);
    if let Op::If { then_, .. } = &mut m.funcs[0].body.insts[1].op {
        then_.term = Term::Yield(vec![]);
    }
    m.funcs[0].body.insts[1].results.clear();
    m.funcs[0].body.insts.push(load);
    m.funcs[0].body.term = Term::Return(vec![Val::new(3)]);
    assert_eq!(verify(&m), Ok(()));
    m.cells.insert(2, vec![Ty::Ptr, Ty::F64]);
    m.funcs[0].body.insts[2] = i(&[3], Op::Load(Val::new(0), 2, 1));
    rejects(
        &m,
        "a load of member #2 from v0, whose cell holds member #1",
    );
}

#[test]
fn accepts_a_load_where_the_code_never_runs() {
    let mut m = cells();
    m.cells.insert(2, vec![Ty::Ptr, Ty::F64]);
    // In the arm of `tag_is v0 #2` inside that of `tag_is v0 #1`.
    m.funcs[0].types.extend([Ty::Bool, Ty::F64]);
    let inner = Op::If {
        cond: Val::new(4),
        then_: Block {
            insts: vec![i(&[3], Op::Load(Val::new(0), 2, 1))],
            term: Term::Yield(vec![Val::new(3)]),
        },
        else_: Block {
            insts: vec![],
            term: Term::Error(StrId::new(0)),
        },
    };
    *get_arm(&mut m) = vec![i(&[4], Op::TagIs(Val::new(0), 2)), i(&[5], inner)];
    if let Op::If { then_, .. } = &mut m.funcs[0].body.insts[1].op {
        then_.term = Term::Yield(vec![Val::new(5)]);
    }
    assert_eq!(verify(&m), Ok(()));
    // In the arm an `If` on `false` never takes.
    let arm = get_arm(&mut m);
    arm[0] = i(&[4], Op::BoolConst(false));
    assert_eq!(verify(&m), Ok(()));
    // But not in the arm it takes.
    if let Op::If { then_, else_, .. } = &mut get_arm(&mut m)[1].op {
        std::mem::swap(then_, else_);
    }
    rejects(
        &m,
        "a load of member #2 from v0, whose cell holds member #1",
    );
}

#[test]
fn accepts_a_load_that_only_failed_tests_precede() {
    // get: after `tag_is v0 #2` failed, the load of #1 untested (the last
    // member of a dispatch): the FIR does not say which tags the cell may
    // have.
    let mut m = cells();
    m.cells.insert(2, vec![Ty::F64]);
    m.funcs[0].body.insts[0] = i(&[1], Op::TagIs(Val::new(0), 2));
    if let Op::If { then_, else_, .. } = &mut m.funcs[0].body.insts[1].op {
        std::mem::swap(then_, else_);
    }
    assert_eq!(verify(&m), Ok(()));
}

/// `main` of the text `body` (its lines after the first, which reads a
/// real `v0`), with cells #0 = (), #1 = (ptr, f64), #2 = (ptr) and
/// `v2 = if v0 < 0 { alloc #0 } else { alloc #1(v1, v0) }` where `v1` is
/// an `alloc #0`: a cell that holds #0 or #1.
fn either(body: &str) -> Module {
    let text = format!(
        "str s0 = \"error\"\n\
         cell #0 = ()\ncell #1 = (ptr, f64)\ncell #2 = (ptr)\n\
         func f0 main() -> () {{\n\
         v0 = read_real s0\n  v1 = alloc #0()\n  v9 = f64 0.0\n  v8 = flt v0 v9\n\
         v2 = if v8 {{\n    v3 = alloc #0()\n    yield v3\n  }} else {{\n\
         v4 = alloc #1(v1, v0)\n    yield v4\n  }}\n{body}\n  return\n}}\nmain f0\n"
    );
    match crate::read::module(&text) {
        Ok(m) => m,
        Err(e) => panic!("{e}\n{text}"),
    }
}

#[test]
fn rejects_a_load_of_a_member_no_arm_yields() {
    assert_eq!(
        verify(&either("  v5 = tag_is v2 #1\n  if v5 {\n    v6 = load v2 #1.1\n    print_real v6\n    yield\n  } else {\n    yield\n  }")),
        Ok(())
    );
    rejects(
        &either("  v5 = load v2 #2.0"),
        "a load of member #2 from v2, whose cell holds one of the members #0, #1",
    );
    // An arm that diverges yields no member.
    let m =
        either("  v5 = if v8 {\n    error s0\n  } else {\n    yield v1\n  }\n  v6 = load v5 #1.1");
    rejects(
        &m,
        "a load of member #1 from v5, whose cell holds member #0",
    );
}

#[test]
fn rejects_a_load_of_a_member_whose_test_failed() {
    rejects(
        &either("  v5 = tag_is v1 #1\n  if v5 {\n    yield\n  } else {\n    v6 = load v1 #1.1\n    print_real v6\n    yield\n  }"),
        "a load of member #1 from v1, whose cell holds member #0",
    );
    // A parameter's cell may hold any member but those its tests ruled out.
    let mut m = cells();
    if let Op::If { then_, else_, .. } = &mut m.funcs[0].body.insts[1].op {
        std::mem::swap(then_, else_);
    }
    rejects(
        &m,
        "a load of member #1 from v0, whose cell holds a member other than #1",
    );
}

#[test]
fn accepts_a_load_where_the_members_a_cell_may_hold_rule_the_arm_out() {
    // The shape inlining makes of a lazy zero's dispatch
    // (tests/corpus/horner-all-modes.vlad): the arm where `v2`, made #0 or
    // #1, is #2 never runs, so nothing it loads is checked, from `v2` or
    // from another cell.
    let arm = "  v5 = tag_is v2 #2\n  if v5 {\n    v6 = load v2 #1.1\n    v7 = load v1 #1.1\n    print_real v6\n    print_real v7\n    yield\n  } else {\n    yield\n  }";
    assert_eq!(verify(&either(arm)), Ok(()));
    // Once the arm is over, the code runs again.
    let after = format!("{arm}\n  v10 = load v1 #1.1");
    rejects(
        &either(&after),
        "a load of member #1 from v1, whose cell holds member #0",
    );
}

/// `main` of [`good`] ending in an error whose message takes `taken`
/// captured stretches, after the instructions `captures`.
fn with_captures(captures: Vec<Op>, taken: u32) -> Module {
    let mut m = good();
    let body = &mut m.funcs[1].body;
    body.insts.extend(captures.into_iter().map(|op| i(&[], op)));
    body.term = Term::ErrorWith(
        (0..taken)
            .map(crate::ErrPart::Captured)
            .chain([crate::ErrPart::Str(StrId::new(0))])
            .collect(),
    );
    m
}

#[test]
fn accepts_captured_stretches_the_error_takes_in_order() {
    let print = || Op::PrintStr(StrId::new(0));
    let stretch = || vec![Op::Capture(true), print(), Op::Capture(false)];
    let m = with_captures([stretch(), stretch()].concat(), 2);
    assert_eq!(verify(&m), Ok(()));
}

#[test]
fn rejects_captured_stretches_the_error_does_not_take() {
    let stretch = vec![Op::Capture(true), Op::Capture(false)];
    rejects(&with_captures(stretch.clone(), 0), "1 captured stretches");
    rejects(
        &with_captures(vec![Op::Capture(true)], 1),
        "(one left open)",
    );
    rejects(
        &with_captures(vec![Op::Capture(false)], 0),
        "with no capture open",
    );
    let mut m = with_captures(stretch, 1);
    m.funcs[1].body.term = Term::ErrorWith(vec![crate::ErrPart::Captured(1)]);
    rejects(&m, "not in order");
}
