//! particle, forward over forward (benches/programs/particle-FF.vlad).
//! Reads N; prints w* = 0.20719187464861... N times.
#![allow(non_snake_case)]

use baselines::{distance, gradient_f, multivariate_argmin, read_input, write_real, Dual, Num};

/// `naive-euler gradient-F w`: the cost of w.
fn naive_euler<T: Num>(w: T) -> T {
    let c = |x: f64| T::lift(x);
    let charges = [[c(10.0), c(10.0) - w], [c(10.0), c(0.0)]];
    let delta_t = c(0.1);
    // p(x) = reduce + 0 (map (λc. 1 / distance x c) charges), a right fold.
    let p = |x: &[Dual<T>; 2]| {
        let l = Dual::<T>::lift;
        let r = |ch: &[T; 2]| {
            l(1.0) / distance(x, &[Dual::new(ch[0], c(0.0)), Dual::new(ch[1], c(0.0))])
        };
        let (r0, r1) = (r(&charges[0]), r(&charges[1]));
        r0 + (r1 + l(0.0))
    };
    let mut x = [c(0.0), c(8.0)];
    let mut xdot = [c(0.75), c(0.0)];
    loop {
        let g = gradient_f(p, &x);
        let xddot = [c(-1.0) * g[0], c(-1.0) * g[1]];
        let x_new = [x[0] + delta_t * xdot[0], x[1] + delta_t * xdot[1]];
        if x_new[1].value() > 0.0 {
            x = x_new;
            xdot = [xdot[0] + delta_t * xddot[0], xdot[1] + delta_t * xddot[1]];
        } else {
            let delta_t_f = (c(0.0) - x[1]) / xdot[1];
            let x_t_f = x[0] + delta_t_f * xdot[0];
            return x_t_f * x_t_f;
        }
    }
}

fn main() {
    let input = read_input();
    let n = input[0];
    let mut i = 0.0;
    while i < n {
        let w = multivariate_argmin(
            |x: &[f64; 1]| naive_euler(x[0]),
            |x: &[f64; 1]| gradient_f(|x: &[Dual<f64>; 1]| naive_euler(x[0]), x),
            [0.0],
        );
        write_real(w[0]);
        i += 1.0;
    }
}
