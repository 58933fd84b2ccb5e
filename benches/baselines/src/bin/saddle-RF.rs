//! saddle, reverse over forward (benches/programs/saddle-RF.vlad).
//! Reads N; prints x1* y1* x2* y2* (each 8.246324826140356e-06) N times.
//!
//! The outer derivative is the adjoint in [`baselines::saddle`]; the inner
//! gradient takes one forward pass of dual numbers per unit vector.

use baselines::saddle::{self, f};
use baselines::{gradient_f, Dual};

/// `gradient-F` of `0 - f(x1, y1, x2, y2)` over (x2, y2): x1 and y1 are
/// constants of the passes (tangent 0).
fn gradient(x1: f64, y1: f64, x: &[f64; 2]) -> [f64; 2] {
    gradient_f(
        |x: &[Dual<f64>; 2]| {
            let c = |v: f64| Dual::new(v, 0.0);
            c(0.0) - f(c(x1), c(y1), x[0], x[1])
        },
        x,
    )
}

fn main() {
    saddle::main(gradient);
}
