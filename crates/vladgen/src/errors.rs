//! Programs that must fail on a vector: an index out of range or not an
//! integer, a bad length, vectors of different lengths, a bad range of
//! `vector-copy`, a vector operation on a list; at top level or inside a
//! derivative. Each knows the message it must fail with.

use super::*;
use ir::message::{bad_index, bad_length, bad_range, different_lengths};

/// A program that prints a few values, then fails.
#[derive(Clone, Debug)]
pub struct ErrorProgram {
    /// The program text.
    pub text: String,
    /// The error message (after `error: `) the failure must print.
    pub message: String,
}

/// `x` as VLAD prints it in messages.
fn shown(x: f64) -> String {
    base::number::format_real(x)
}

/// The value written in source: plain, or hidden from constant folding as
/// `(real x)`.
fn hidden(g: &mut Gen, x: f64) -> String {
    if g.rng.chance(0.5) {
        format!("(real {})", shown(x))
    } else {
        shown(x)
    }
}

/// A whole program (the plain prelude, a vector `v1` of known length built
/// by generated code over inputs written as `(real LITERAL)`, values
/// printed from it) whose last top-level form fails with
/// [`ErrorProgram::message`]; `stalingrad run` must end with that error
/// after printing the values.
pub fn vector_error_program(rng: &mut Rng) -> ErrorProgram {
    let opts = Options {
        depth: 2,
        vectors: true,
        ..Options::default()
    };
    let mut g = Gen::new(rng, opts);
    let mut body = String::new();
    let mut sc = Scope::default();
    for i in 1..=2 {
        let x = g.rng.range(-2.0, 2.0);
        let _ = writeln!(body, "(define in{i} (real {}))", real_literal(x));
        sc = sc.with(&format!("in{i}"), Ty::Real);
    }
    let k = 1 + g.rng.below(3);
    let v = g.vector(k, 2, &sc);
    let _ = writeln!(body, "(define v1 {v})");
    let sc = sc.with("v1", Ty::Vector(k));
    let e = g.real(2, &sc);
    let _ = writeln!(body, "(write-real {e})");
    let len = shown(k as f64);
    let (form, message) = match g.rng.below(9) {
        0 | 1 => {
            let i = *g.rng.pick(&[k as f64, k as f64 + 1.0, -1.0, 0.5]);
            let idx = hidden(&mut g, i);
            (
                format!("(vector-ref v1 {idx})"),
                bad_index("vector-ref", &len, &shown(i)),
            )
        }
        2 => {
            let n = *g.rng.pick(&[-1.0, 1.5, -2.0]);
            let x = g.real(1, &sc);
            let arg = hidden(&mut g, n);
            (
                format!("(make-vector {arg} {x})"),
                bad_length("make-vector", &shown(n)),
            )
        }
        3 => {
            let n = *g.rng.pick(&[-1.0, 2.5]);
            let arg = hidden(&mut g, n);
            (
                format!("(build-vector {arg} (lambda (i) (* i in1)))"),
                bad_length("build-vector", &shown(n)),
            )
        }
        4 => {
            let m = k + 1 + g.rng.below(2);
            let w = g.vector(m, 1, &sc);
            (
                format!("(vector-map + v1 {w})"),
                different_lengths("vector-map", &len, &m.to_string()),
            )
        }
        5 => {
            let m = k + 1;
            let w = g.vector(m, 1, &sc);
            (
                format!("(vector-fold (lambda (acc a b) (+ acc (* a b))) 0 v1 {w})"),
                different_lengths("vector-fold", &len, &m.to_string()),
            )
        }
        6 => {
            let (start, end) = if g.rng.chance(0.5) {
                (g.rng.below(k + 1), k + 1)
            } else {
                (k, k - 1)
            };
            (
                format!("(vector-copy v1 {start} {end})"),
                bad_range("vector-copy", &len, &start.to_string(), &end.to_string()),
            )
        }
        7 => {
            let op = *g.rng.pick(&["derivative-F", "derivative-R"]);
            (
                format!("(({op} (lambda (x) (vector-ref (vector-map (lambda (a) (* a x)) v1) {k}))) in1)"),
                bad_index("vector-ref", &len, &k.to_string()),
            )
        }
        _ => {
            let op = *g.rng.pick(&["gradient-F", "gradient-R"]);
            let i = hidden(&mut g, k as f64);
            (
                format!("(({op} (lambda (u) (* in2 (vector-ref u {i})))) v1)"),
                bad_index("vector-ref", &len, &k.to_string()),
            )
        }
    };
    let _ = writeln!(body, "(write-real (+ 1 (car (list {form}))))");
    let _ = writeln!(body, "(write-real 0)");
    ErrorProgram {
        text: format!("{}\n{body}", prelude(false)),
        message,
    }
}
