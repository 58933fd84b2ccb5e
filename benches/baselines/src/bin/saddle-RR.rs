//! saddle, reverse over reverse (benches/programs/saddle-RR.vlad).
//! Reads N; prints x1* y1* x2* y2* (each 8.246324826140356e-06) N times.
//!
//! The outer derivative is the adjoint in [`baselines::saddle`]; the inner
//! gradient is a hand-written adjoint of `0 - f`.

use baselines::saddle;

/// The gradient of `0 - f(x1, y1, x2, y2)` over (x2, y2) by one reverse
/// sweep: `0 - f` passes `0 - 1` to f, `f = A - B` passes `0 - (0 - 1)`
/// to `B = x2 x2 + y2 y2`, whose products give x2 `x2 Bbar + x2 Bbar`
/// (y2 likewise). x1 and y1 receive sensitivities too, but the gradient
/// over (x2, y2) does not return them.
fn gradient(_x1: f64, _y1: f64, x: &[f64; 2]) -> [f64; 2] {
    let f_bar = 0.0 - 1.0;
    let b_bar = 0.0 - f_bar;
    [x[0] * b_bar + x[0] * b_bar, x[1] * b_bar + x[1] * b_bar]
}

fn main() {
    saddle::main(gradient);
}
