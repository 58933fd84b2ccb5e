//! lse-F: the directional derivative of log-sum-exp over 10^6 reals along
//! d_i = cos(i), by dual numbers over a vector. Reads N; prints the
//! derivative N times, as benches/programs/lse-F.vlad does.
//!
//! The program's forward pass, with each value's tangent beside it: the
//! shifted point x + t d at t = 0, the maximum by a left fold (its tangent
//! that of the element chosen), the sum of exp(x_i - c) and c + log s, by
//! the forward rules of the VLAD prelude.

use baselines::{read_input, write_real};
use std::hint::black_box;

const SIZE: usize = 1_000_000;

fn derivative(xs: &[f64], ds: &[f64]) -> f64 {
    // x + t d at t = 0: primal x + 0 d, tangent 0 d + 1 d.
    let ys: Vec<(f64, f64)> = xs
        .iter()
        .zip(ds)
        .map(|(&x, &d)| (x + 0.0 * d, 0.0 + (0.0 * 0.0 + 1.0 * d)))
        .collect();
    let mut c = ys[0];
    for &y in &ys {
        let keeps = c.0 > y.0;
        if !keeps {
            c = y;
        }
    }
    let mut s = (0.0, 0.0);
    for &(a, da) in &ys {
        let (u, du) = (a - c.0, da - c.1);
        let r = u.exp();
        s = (s.0 + r, s.1 + r * du);
    }
    c.1 + s.1 / s.0
}

fn main() {
    let input = read_input();
    let n = input.first().copied().unwrap_or(0.0);
    let xs: Vec<f64> = (0..SIZE).map(|i| (i as f64).sin()).collect();
    let ds: Vec<f64> = (0..SIZE).map(|i| (i as f64).cos()).collect();
    let mut rep = 0.0;
    while rep < n {
        write_real(derivative(black_box(&xs), black_box(&ds)));
        rep += 1.0;
    }
}
