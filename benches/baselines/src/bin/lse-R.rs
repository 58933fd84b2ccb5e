//! lse-R: the gradient of log-sum-exp over 10^6 reals by a hand-written
//! adjoint, over a vector. Reads N; prints N times the sum of the
//! gradient's elements and its first element, as
//! benches/programs/lse-R.vlad does.
//!
//! The forward sweep is the program's: the maximum c by a left fold, then
//! s = sum exp(x_i - c) from the left and c + log s. The backward sweep
//! applies the VLAD prelude's reverse rules: `log` gives 1/s to the sum,
//! every term `exp(x_i - c)` passes `r_i * (1/s)` to x_i and its negation
//! to c, and c's sensitivity (1 from the outer `+`, then those terms)
//! reaches the element the maximum chose.

use baselines::{read_input, write_real};
use std::hint::black_box;

const SIZE: usize = 1_000_000;

fn gradient(xs: &[f64]) -> Vec<f64> {
    let mut c = xs[0];
    let mut arg = 0;
    for (i, &x) in xs.iter().enumerate() {
        // `(max acc x)` keeps acc when acc > x (and takes x at a NaN).
        let keeps = c > x;
        if !keeps {
            c = x;
            arg = i;
        }
    }
    let rs: Vec<f64> = xs.iter().map(|&x| (x - c).exp()).collect();
    let s = rs.iter().fold(0.0, |acc, r| acc + r);
    black_box(c + s.ln());
    let ds = 1.0 / s;
    let mut g: Vec<f64> = rs.iter().map(|r| r * ds).collect();
    let dc = g.iter().rev().fold(1.0, |acc, gi| acc + (0.0 - gi));
    g[arg] += dc;
    g
}

fn main() {
    let input = read_input();
    let n = input.first().copied().unwrap_or(0.0);
    let xs: Vec<f64> = (0..SIZE).map(|i| (i as f64).sin()).collect();
    let mut rep = 0.0;
    while rep < n {
        let g = gradient(black_box(&xs));
        write_real(g.iter().fold(0.0, |acc, gi| acc + gi));
        write_real(g[0]);
        rep += 1.0;
    }
}
