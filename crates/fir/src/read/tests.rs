//! The reader takes back what the printer writes, types every value, and
//! rejects anything else with a position instead of a panic.

use super::{module, module_and_cells, Error};
use crate::{ErrPart, Term, Ty};
use base::EntityRef;

/// Every kind of line, operation and terminator the printer writes, with
/// types the reader can only learn from a callee, a cell, an arm or a use.
const ALL: &str = r#"str s0 = "a \"b\"\n\t\\ é \u{7f}"
str s1 = "f.vlad:1:2"

cell #0 = (ptr, f64, bool)
cell #2 = ()
cell #3 = (ptr, f64, f64)

vector #0 = (ptr, f64)
vector #1 = (f64)

func f0 main() -> () {
  v0 = f64 -0.0
  v1 = f64 inf
  v2 = bool true
  v3, v4 = call f1(v0, v2)
  v5 = alloc #0(v3, v0, v2)
  v6 = load v5 #0.2
  v7 = not v6
  print_bool v7
  v8 = tag_is v5 #0
  v9 = is_zero v5
  v10, v11 = memo_get #1(v5)
  memo_put #1(v5, v11)
  count zero
  v12 = read_real s1
  v13 = fadd_plus v12 v1
  v14 = atan2 v13 v0
  v15 = sqrt v14
  v16 = fge v15 v1
  v20 = vec_of #0 1(v5, v0)
  v21 = vec_build #1 v0 f3(v2) at s1
  v22 = vec_len v21
  v23 = vec_index_ok v20 v22
  v24 = is_count v22
  v25 = vec_load v20 v0 #0.0
  v26 = alloc #3(v25, v0, v0)
  v27 = vec_plus #1 v21 v21
  v29 = vec_zero #1 v0
  v30 = vec_one_hot #1 v0 v1(v1)
  v28 = vec_build #1 v0 f3(v23)
  v17 = if v16 {
    print_real v15
    v18, v19 = call f1(v15, v9) at s1
    yield v18
  } else {
    error site s0 < v15 > at s1 bool v9
  }
  if v8 {
    return
  } else {
    tailcall f2()
  }
  print_str s0
  return
}

func f1 pick(v0: f64, v1: bool) -> (ptr, f64) {
  v2 = alloc #2()
  v3 = alloc_zero #0(v2, v0, v1)
  return v3, v0
}

func f2 done() -> () {
  error s0
}

func f3 element(v0: bool, v1: f64) -> (f64) {
  return v1
}

func f4 shown() -> () {
  print_str s0
  return
}

func f5 fails() -> () {
  capture_start
  call f4()
  capture_end
  error s0 < captured 0 >
}

main f0
"#;

fn read(text: &str) -> crate::Module {
    module(text).unwrap_or_else(|e| panic!("{e}"))
}

#[test]
fn reads_back_what_it_prints() {
    let m = read(ALL);
    assert_eq!(crate::print::module(&m), ALL);
    crate::verify::verify(&m).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(m.funcs[2].body.term, Term::Error(crate::StrId::new(0)));
    assert_eq!(m.strings[0], "a \"b\"\n\t\\ é \u{7f}");
    let main = &m.funcs[0];
    // From the callee, the cell's `alloc`, the arm that yields and a use.
    assert_eq!(main.types[3], Ty::Ptr);
    assert_eq!(main.types[6], Ty::Bool);
    assert_eq!(main.types[17], Ty::Ptr);
    let Some(crate::Inst {
        op: crate::Op::If { else_, .. },
        ..
    }) = main
        .body
        .insts
        .iter()
        .find(|i| i.results == [crate::Val::new(17)])
    else {
        panic!("no `if` defines v17");
    };
    let Term::ErrorWith(parts) = &else_.term else {
        panic!("not an error with parts: {:?}", else_.term);
    };
    assert!(matches!(
        parts[..],
        [
            ErrPart::Site,
            ErrPart::Str(_),
            ErrPart::ValueStart,
            ErrPart::Real(_),
            ErrPart::ValueEnd,
            ErrPart::At(_),
            ErrPart::Bool(_)
        ]
    ));
}

#[test]
fn results_of_diverging_arms_take_their_type_from_a_use() {
    let text = "func f0 g(v0: bool) -> (bool) {\n  v1 = if v0 {\n    return v0\n  } else {\n    return v0\n  }\n  return v1\n}\n\nmain none\n";
    assert_eq!(read(text).funcs[0].types[1], Ty::Bool);
}

#[test]
fn what_an_error_shows_has_the_type_it_is_shown_as() {
    // No `alloc` makes cell #1 (the test before excludes it), so only the
    // message tells the load's type.
    let text = "func f0 g(v0: ptr) -> () {\n  v1 = tag_is v0 #0\n  if v1 {\n    yield\n  } else {\n    v2 = load v0 #1.1\n    v3 = load v0 #1.2\n    error < v2 bool v3 >\n  }\n  return\n}\n\nmain none\n";
    let m = read(text);
    assert_eq!(crate::print::module(&m), text);
    assert_eq!(m.funcs[0].types[2..], [Ty::F64, Ty::Bool]);
}

#[test]
fn takes_both_forms_of_cell_lines() {
    let body = "func f0 g(v0: f64, v1: bool) -> () {\n  v2 = alloc #4(v0, v1)\n  v3 = load v2 #4.1\n  return\n}\n\nmain none\n";
    let (m, cells) = module_and_cells(&format!("cell #4 = (f64, bool)\n\n{body}"))
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(cells[&4], vec![Ty::F64, Ty::Bool]);
    assert_eq!(m.funcs[0].types[3], Ty::Bool);
    read(&format!("cell #4 = 2 slots (0 pointers)\n\n{body}"));
    let wrong = module(&format!("cell #4 = 2 slots (1 pointer)\n\n{body}"));
    assert_eq!(
        wrong.map_err(|e| (e.line, e.col)),
        Err((1, 1)),
        "sizes that are not the allocs' are an error at the cell line"
    );
}

fn err(text: &str) -> Error {
    match module(text) {
        Ok(m) => panic!("read {text:?} as {m:?}"),
        Err(e) => e,
    }
}

#[test]
fn errors_say_where_what_was_expected_and_what_was_found() {
    let e = err("func f0 g() -> () {\n  v0 = fmul v1\n  return\n}\nmain none\n");
    assert_eq!(
        e.to_string(),
        "2:15: expected a value (`v0`, `v1`, ...), found the end of the line"
    );
    let e = err("func f1 g() -> () {\n  return\n}\nmain none\n");
    assert_eq!(
        e.to_string(),
        "1:6: expected `f0` (functions are numbered in order), found `f1`"
    );
    let e = err("func f0 g() -> () {\n  v0 = frob v1\n  return\n}\nmain none\n");
    assert_eq!(e.to_string(), "2:8: expected an instruction, found `frob`");
    let e = err("func f0 g(v4294967295: f64) -> () {\n  return\n}\nmain none\n");
    assert_eq!((e.line, e.col), (1, 11));
    let e = err("str s0 = \"\\q\"\nmain none\n");
    assert_eq!((e.line, e.col), (1, 11));
    let e = err("func f0 g() -> () {\n  return\n}\n");
    assert_eq!(
        e.to_string(),
        "4:1: expected `main`, found the end of the input"
    );
    let e = err("func f0 g(v0: ptr) -> () {\n  v1 = vec_len v0\n  v2 = vec_load v0 v1 #4.0\n  return\n}\nmain none\n");
    assert_eq!(
        e.to_string(),
        "3:24: expected a slot of a vector layout declared above (`vector #4 = (...)`), found `4.0`"
    );
    let e = err("func f0 g() -> () {\n  v0 = call f0()\n  return\n}\nmain none\n");
    assert_eq!(
        e.to_string(),
        "2:3: expected a value whose type its definition or a use tells, found `v0`, of unknown type"
    );
}

/// Cut short or with one character changed, the text gives a module or
/// an error, never a panic.
#[test]
fn damaged_text_never_panics() {
    for end in 0..ALL.len() {
        if ALL.is_char_boundary(end) {
            let _ = module(&ALL[..end]);
        }
    }
    for (i, _) in ALL.char_indices() {
        for c in ['x', '0', '"', '\\', '\n', '#', '(', '}', ';', 'é'] {
            let mut s = ALL.to_string();
            let len = s[i..].chars().next().map_or(0, char::len_utf8);
            s.replace_range(i..i + len, c.encode_utf8(&mut [0; 4]));
            let _ = module(&s);
        }
    }
}
