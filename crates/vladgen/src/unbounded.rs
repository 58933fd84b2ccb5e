//! Programs no finite specialisation covers: a recursion on a count read
//! at run time that nests AD one level deeper at each call (a derivative
//! tower of run-time height, in the shapes people write one). `run`
//! answers them; `build` must refuse them, quickly, positioned in the
//! program, naming what grows (`crates/stalingrad/tests/properties/`).

use crate::Rng;

/// The AD operators a step may nest, on procedures of one real.
const OPERATORS: [&str; 2] = ["derivative-F", "derivative-R"];

/// The procedures a tower starts from.
const BASES: [&str; 5] = [
    "sin",
    "exp",
    "(lambda (x) (* x x))",
    "(lambda (x) (* x (sin x)))",
    "(lambda (x) (/ 1 (+ 2 (* x x))))",
];

/// One level of the tower: a procedure of one real built from `f`, with
/// AD nested one level deeper than in `f`.
fn step(rng: &mut Rng) -> String {
    let op = rng.pick(&OPERATORS);
    let k = rng.below(3) + 2;
    match rng.below(6) {
        0 => format!("({op} f)"),
        1 => format!("(lambda (x) (* {k} (({op} f) x)))"),
        2 => format!("(lambda (x) (({op} (lambda (y) (f (+ x y)))) 0))"),
        3 => format!("(lambda (x) (+ (f x) (({op} f) x)))"),
        4 => "(lambda (x) (car ((gradient-R (lambda (l) (f (car l)))) (list x))))".to_string(),
        _ => "(lambda (x) (car ((gradient-F (lambda (l) (f (car l)))) (list x))))".to_string(),
    }
}

/// A program whose AD nesting depth is the count it reads, with the
/// count as its input (any count `run` answers for).
pub fn unbounded_program(rng: &mut Rng) -> String {
    let step = step(rng);
    let base = rng.pick(&BASES);
    let at = rng.pick(&["0.5", "1", "(- 0 0.25)"]);
    let done = rng.pick(&["(zero? n)", "(< n 1)"]);
    match rng.below(3) {
        // The tower is returned, and applied after the recursion.
        0 => format!(
            "(define (tower n f) (if {done} f (tower (- n 1) {step})))\n\
             ((tower (read-real) {base}) {at})\n"
        ),
        // Applied at the bottom of the recursion.
        1 => format!(
            "(define (tower n f) (if {done} (f {at}) (tower (- n 1) {step})))\n\
             (tower (read-real) {base})\n"
        ),
        // A named `let` loop.
        _ => format!(
            "(let loop ((n (read-real)) (f {base}))\n  \
             (if {done} (f {at}) (loop (- n 1) {step})))\n"
        ),
    }
}
