//! Programs long in one dimension only (issue 34): data pasted into the
//! source as a list literal of thousands of elements (quoted, or `list` of
//! as many arguments) and used as such data is used, and a chain of
//! top-level procedures each calling the one before, differentiated at
//! the end. Their values are those of short programs: only their length
//! grows, and `build` must take time that grows with it, not refuse them.

use crate::{real_literal, Rng};

/// A real of three decimals in `[-2, 2]`, as VLAD source (short, so that
/// thousands of them stay a small file).
fn datum(rng: &mut Rng) -> String {
    real_literal((rng.range(-2.0, 2.0) * 1000.0).round() / 1000.0)
}

/// A program binding `data` to a list literal of `n` elements (reals,
/// pairs of reals or triples of reals) and printing what is computed on
/// it: its length, an element, a sum over it by a loop or by `map` and
/// `reduce`, and the gradient by reverse mode, or the derivative by
/// forward mode, of a loss summed over it.
pub fn long_literal_program(rng: &mut Rng, n: usize) -> String {
    let width = rng.below(3);
    let items: Vec<String> = (0..n)
        .map(|_| {
            let xs: Vec<String> = (0..=width).map(|_| datum(rng)).collect();
            if width == 0 {
                xs[0].clone()
            } else {
                format!("({})", xs.join(" "))
            }
        })
        .collect();
    // A quoted literal, or `list` (of `list`s) of as many arguments.
    let literal = if rng.chance(0.5) {
        format!("'({})", items.join(" "))
    } else {
        let args = items
            .iter()
            .map(|i| match i.strip_prefix('(') {
                Some(rest) => format!("(list {rest}"),
                None => i.clone(),
            })
            .collect::<Vec<_>>();
        format!("(list {})", args.join(" "))
    };
    // A real from an element, whatever its width.
    let feature = match width {
        0 => "e",
        1 => "(* (car e) (car (cdr e)))",
        _ => "(+ (car e) (* (car (cdr e)) (car (cdr (cdr e)))))",
    };
    let sum = if rng.chance(0.5) {
        "(define (total g)\n  (let loop ((d data) (s 0)) (if (null? d) s (loop (cdr d) (+ s (g (car d)))))))"
    } else {
        "(define (total g) (reduce + 0 (map g data)))"
    };
    let w = real_literal(rng.range(-1.0, 1.0));
    let at = if rng.chance(0.5) {
        w.clone()
    } else {
        format!("(real {w})")
    };
    let ad = match rng.below(3) {
        0 => format!("((gradient-R (lambda (p) (loss (car p)))) (list {at}))"),
        1 => format!("((derivative-R loss) {at})"),
        _ => format!("((derivative-F loss) {at})"),
    };
    format!(
        "(define data {literal})\n\
         (define (feature e) {feature})\n\
         {sum}\n\
         (define (loss w) (total (lambda (e) (let ((r (- (* w (feature e)) 1))) (* r r)))))\n\
         (length data)\n\
         (feature (list-ref data {}))\n\
         (total feature)\n\
         {ad}\n",
        rng.below(n.max(1))
    )
}

/// A program of `n` top-level procedures `h1` ... `hn`, each calling the
/// one before (`(define (h_i x) (+ (f_i x) (h_i-1 x)))` and the like),
/// and derivatives of the last (`derivative-F` of `derivative-R`, and
/// others) at a constant or at a real the compiler does not fold.
pub fn chain_program(rng: &mut Rng, n: usize) -> String {
    let mut text = format!(
        "(define (h0 x) {})\n",
        rng.pick(&["(sin x)", "(* x x)", "(exp (* 0.5 x))"])
    );
    for i in 1..=n {
        let c = real_literal(f64::from(rng.below(9) as u32 + 1) / 4.0);
        let f = match rng.below(3) {
            0 => format!("(* {c} x)"),
            1 => format!("(* {c} (sin x))"),
            _ => format!("(* {c} (* x x))"),
        };
        let h = match rng.below(3) {
            0 | 1 => format!("(+ (f{i} x) (h{} x))", i - 1),
            _ => format!("(* 0.5 (+ (f{i} x) (h{} x)))", i - 1),
        };
        text.push_str(&format!("(define (f{i} x) {f})\n(define (h{i} x) {h})\n"));
    }
    let x = real_literal(rng.range(-1.0, 1.0));
    let at = if rng.chance(0.5) {
        x
    } else {
        format!("(real {x})")
    };
    let derivative = match rng.below(4) {
        0 | 1 => format!("(derivative-F (derivative-R h{n}))"),
        2 => format!("(derivative-R (derivative-F h{n}))"),
        _ => format!("(derivative-R h{n})"),
    };
    text.push_str(&format!("(h{n} {at})\n({derivative} {at})\n"));
    text
}
