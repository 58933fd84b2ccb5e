//! The core IR of small programs, as `--emit=anf` prints it.

use std::path::{Path, PathBuf};

fn lower(name: &str, src: &str) -> String {
    let mut session = driver::Session::new(Vec::new());
    let prog = session
        .load_text(Path::new(name), src.to_string())
        .unwrap_or_else(|e| panic!("{}", session.render(&e)));
    ir::print::program(&prog)
}

fn snap(name: &str, src: &str) {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/snapshots")
        .join(format!("{name}.anf"));
    snapshot::check(&path, &lower(&format!("{name}.vlad"), src));
}

#[test]
fn square() {
    snap("square", "(define (sq x) (* x x))\n(sq 3)\n");
}

#[test]
fn patterns_and_if() {
    snap(
        "patterns",
        "(define (f (list a b) 0) (if (< a b) (cons a b) '(1 . 2)))\n(f '(1 2) 0)\n",
    );
}

#[test]
fn letrec_group() {
    snap(
        "letrec",
        "(define (even? n) (if (= n 0) #t (odd? (- n 1))))\n\
         (define (odd? n) (if (= n 0) #f (even? (- n 1))))\n(even? 10)\n",
    );
}

#[test]
fn paper_closure_example() {
    // f = λa. ((λb. λc. b) a) 1, section 3 of the paper.
    snap(
        "closure",
        "(define (f a) (((lambda (b) (lambda (c) b)) a) 1))\n(f 4)\n",
    );
}
