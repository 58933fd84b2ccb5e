//! saddle, forward over forward (benches/programs/saddle-FF.vlad).
//! Reads N; prints x1* y1* x2* y2* (each 8.246324826140356e-06) N times.
#![allow(non_snake_case)]

use baselines::{gradient_f, multivariate_argmin, read_input, write_real, Dual, Num};

/// `f(x1, y1, x2, y2) = (x1^2 + y1^2) - (x2^2 + y2^2)`.
fn f<T: Num>(x1: T, y1: T, x2: T, y2: T) -> T {
    (x1 * x1 + y1 * y1) - (x2 * x2 + y2 * y2)
}

/// `multivariate-argmax-F` of `(λ (x2 y2) f(x1, y1, x2, y2))` from start:
/// `multivariate-argmin` of `0 - f`.
fn inner_argmax<T: Num>(x1: T, y1: T) -> [T; 2] {
    let start = [T::lift(1.0), T::lift(1.0)];
    multivariate_argmin(
        |x: &[T; 2]| T::lift(0.0) - f(x1, y1, x[0], x[1]),
        |x: &[T; 2]| {
            gradient_f(
                |x: &[Dual<T>; 2]| {
                    let l = Dual::<T>::lift;
                    let c = |v: T| Dual::new(v, T::lift(0.0));
                    l(0.0) - f(c(x1), c(y1), x[0], x[1])
                },
                x,
            )
        },
        start,
    )
}

/// `multivariate-max-F`: f at the inner argmax.
fn outer_objective<T: Num>(x1: T, y1: T) -> T {
    let m = inner_argmax(x1, y1);
    f(x1, y1, m[0], m[1])
}

fn main() {
    let input = read_input();
    let n = input[0];
    let mut i = 0.0;
    while i < n {
        let start = [1.0, 1.0];
        let s = multivariate_argmin(
            |x: &[f64; 2]| outer_objective(x[0], x[1]),
            |x: &[f64; 2]| gradient_f(|x: &[Dual<f64>; 2]| outer_objective(x[0], x[1]), x),
            start,
        );
        let m = inner_argmax(s[0], s[1]);
        for v in [s[0], s[1], m[0], m[1]] {
            write_real(v);
        }
        i += 1.0;
    }
}
