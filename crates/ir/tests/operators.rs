//! Which derivative operator, applied where, the note on an error inside
//! a derivative names (`ir::operators`), on small programs: the call
//! whose procedure it was, each of nested ones, and none where the
//! program's text cannot tell.

use base::diag::SourceMap;
use ir::operators::OperatorSites;
use ir::{LambdaId, Program, Tag};
use std::path::Path;

/// The program `text` (file `t.vlad`) and its operator sites.
fn sites(text: &str) -> (Program, SourceMap, OperatorSites) {
    let mut session = driver::Session::new(Vec::new());
    let prog = session
        .load_text(Path::new("t.vlad"), text.to_string())
        .unwrap_or_else(|e| panic!("{}", session.render(&e)));
    let sites = OperatorSites::new(&prog, &prog.main);
    (prog, session.map, sites)
}

/// The source lambda written at `line:col` of the user's file.
fn lambda_at(prog: &Program, map: &SourceMap, at: &str) -> LambdaId {
    prog.lambdas
        .iter()
        .find(|(_, l)| {
            l.span
                .is_some_and(|s| s.file.0 != 0 && map.locate(s).ends_with(at))
        })
        .map(|(l, _)| l)
        .expect("a lambda there")
}

fn named(
    prog: &Program,
    map: &SourceMap,
    s: &OperatorSites,
    tags: &[Tag],
    at: &str,
) -> Vec<String> {
    let root = lambda_at(prog, map, at);
    s.chain(tags, root)
        .iter()
        .map(|a| match a {
            Some(a) => format!("{} {}", a.name, map.locate(a.span)),
            None => "?".into(),
        })
        .collect()
}

#[test]
fn the_call_that_took_the_derivative_of_the_procedure_is_named() {
    let (p, m, s) = sites("(define (f x) (* x x))\n(define (g x) (car x))\n((derivative-R f) 3)\n((gradient-R g) 4)\n");
    assert_eq!(
        named(&p, &m, &s, &[Tag::Reverse], ":2:9"),
        ["gradient-R t.vlad:4:2"]
    );
    assert_eq!(
        named(&p, &m, &s, &[Tag::Reverse], ":1:9"),
        ["derivative-R t.vlad:3:2"]
    );
    assert_eq!(named(&p, &m, &s, &[Tag::Forward], ":1:9"), ["?"]);
}

#[test]
fn nested_derivatives_are_told_apart_by_where_each_is_applied() {
    let (p, m, s) =
        sites("((derivative-R (lambda (a)\n ((derivative-R (lambda (b) (cdr b))) a)))\n 1)\n");
    assert_eq!(
        named(&p, &m, &s, &[Tag::Reverse, Tag::Reverse], ":2:17"),
        ["derivative-R t.vlad:1:2", "derivative-R t.vlad:2:3"]
    );
}

#[test]
fn a_procedure_differentiated_at_two_calls_names_neither() {
    let (p, m, s) = sites("(define (f x) (car x))\n((derivative-R f) 3)\n((derivative-R f) 4)\n");
    assert_eq!(named(&p, &m, &s, &[Tag::Reverse], ":1:9"), ["?"]);
}

#[test]
fn an_operator_passed_as_a_value_names_nothing() {
    let (p, m, s) = sites(
        "(define (app op f) (op f))\n(define (g x) (car x))\n((app derivative-R g) 3)\n((derivative-R g) 4)\n",
    );
    assert_eq!(named(&p, &m, &s, &[Tag::Reverse], ":2:9"), ["?"]);
}
