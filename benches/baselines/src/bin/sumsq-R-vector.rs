//! sumsq, reverse mode over a vector: the gradient of a sum of squares
//! over 10^5 reals by a hand-written adjoint. Reads N; prints the sum of
//! the gradient's elements (100000.99999999997) N times.
//!
//! The baseline of benches/programs/sumsq-vector-R.vlad, and a second
//! reference for benches/programs/sumsq-R.vlad beside its baseline
//! (`sumsq-R`, the same loop over a linked list), which the harness
//! reports under the table. The adjoint follows the reverse rule of `*` in the VLAD prelude (each
//! factor's sensitivity is the other factor times the product's) and sums
//! the gradient in the order of the program's `total` (a right fold), so
//! it prints what sumsq-R.vlad prints.

use baselines::{read_input, write_real};
use std::hint::black_box;

const SIZE: usize = 100_000;

/// `(gradient-R sum-squares) xs`: the forward sweep, then the reverse one.
fn gradient(xs: &[f64]) -> Vec<f64> {
    // The forward sweep: the primal sum, from the end of the list (the
    // program's non-tail recursion adds last element first).
    let mut sum = 0.0;
    for x in xs.iter().rev() {
        sum += x * x;
    }
    black_box(sum);
    // The reverse sweep: every term's sensitivity is 1.
    let s = 1.0;
    xs.iter().map(|x| x * s + x * s).collect()
}

fn main() {
    let input = read_input();
    let n = input.first().copied().unwrap_or(0.0);
    let size = SIZE as f64;
    let xs: Vec<f64> = (0..SIZE).map(|i| (size - i as f64) / size).collect();
    let mut rep = 0.0;
    while rep < n {
        let g = gradient(black_box(&xs));
        let total = g.iter().rev().fold(0.0, |acc, gi| gi + acc);
        write_real(total);
        rep += 1.0;
    }
}
