//! Transformed code of small procedures: what `*j`, `bundle` and friends
//! turn a lambda into. Review changes to these files with care.

use ir::{EntityRef, LambdaId, Program, Tag};
use std::path::{Path, PathBuf};

/// Lowers `src` and returns the program and the lambda bound to `name`.
fn load(src: &str, name: &str) -> (Program, LambdaId) {
    let mut map = base::diag::SourceMap::new();
    let opts = syntax::expand::Options::default();
    let ast = syntax::expand::load_source(&mut map, Path::new("t.vlad"), src.to_string(), &opts)
        .unwrap_or_else(|e| panic!("{}", e.render(&map)));
    let prog = syntax::anf::lower_program(&ast).unwrap_or_else(|e| panic!("{}", e.render(&map)));
    let l = prog
        .lambdas
        .iter()
        .find(|(_, l)| l.name.as_deref() == Some(name))
        .map(|(id, _)| id)
        .expect("lambda");
    (prog, l)
}

/// The lambda and every lambda created after `first` (the transform's
/// output, with its nested and backpropagator lambdas).
fn dump_from(prog: &Program, first: usize) -> String {
    let mut s = String::new();
    for i in first..prog.lambdas.len() {
        s.push_str(&ir::print::lambda(prog, LambdaId::new(i)));
        s.push('\n');
    }
    s
}

fn snap(file: &str, src: &str, name: &str, tags: &[Tag]) {
    let (mut prog, l) = load(src, name);
    let mut memo = ad::AdMemo::default();
    let first = prog.lambdas.len();
    let mut cur = l;
    for t in tags {
        cur = ad::transform(&mut prog, &mut memo, *t, cur);
    }
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/snapshots")
        .join(file);
    let mut text = ir::print::lambda(&prog, l);
    text.push('\n');
    text.push_str(&dump_from(&prog, first));
    snapshot::check(&path, &text);
}

#[test]
fn reverse_of_square() {
    snap(
        "reverse-square.anf",
        "(define (sq x) (* x x))",
        "sq",
        &[Tag::Reverse],
    );
}

#[test]
fn forward_of_square() {
    snap(
        "forward-square.anf",
        "(define (sq x) (* x x))",
        "sq",
        &[Tag::Forward],
    );
}

#[test]
fn reverse_of_paper_closure_example() {
    snap(
        "reverse-closure.anf",
        "(define (f a) (((lambda (b) (lambda (c) b)) a) 1))",
        "f",
        &[Tag::Reverse],
    );
}

#[test]
fn reverse_of_pattern_destructuring() {
    snap(
        "reverse-pattern.anf",
        "(define (f (cons x y)) (cons y x))",
        "f",
        &[Tag::Reverse],
    );
}

#[test]
fn transforms_are_memoised() {
    let (mut prog, l) = load("(define (sq x) (* x x))", "sq");
    let mut memo = ad::AdMemo::default();
    let a = ad::transform(&mut prog, &mut memo, Tag::Reverse, l);
    let n = prog.lambdas.len();
    let b = ad::transform(&mut prog, &mut memo, Tag::Reverse, l);
    assert_eq!(a, b);
    assert_eq!(n, prog.lambdas.len(), "a second transform adds no lambdas");
    assert_eq!(
        ad::untransform(&prog, Tag::Reverse, a),
        Some(ad::Untransformed::Lambda(l))
    );
    assert_eq!(ad::untransform(&prog, Tag::Forward, a), None);
}

#[test]
fn transformed_free_variables_follow_the_original_layout() {
    let (mut prog, _) = load("(define (f a) (lambda (c) (+ a c)))", "f");
    let mut memo = ad::AdMemo::default();
    let inner = prog
        .lambdas
        .iter()
        .find(|(_, l)| l.name.is_none() && l.free.len() == 1)
        .map(|(id, _)| id)
        .expect("inner lambda");
    for t in [Tag::Reverse, Tag::Forward, Tag::Perturb, Tag::Sensitize] {
        let tl = ad::transform(&mut prog, &mut memo, t, inner);
        assert_eq!(prog.lambdas[tl].free.len(), prog.lambdas[inner].free.len());
    }
}
