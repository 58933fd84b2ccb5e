//! matvec-R: the gradient of f(x) = |M x|^2 / 2 at n = 1000 by a
//! hand-written adjoint over a matrix stored as rows. Reads N; prints the
//! sum of the gradient's elements N times, as
//! benches/programs/matvec-R.vlad does.
//!
//! The program computes M x twice (it writes `(dotv (matvec m x) (matvec
//! m x))`); so does the forward sweep here. The backward sweep: the
//! sensitivity of each product y_i is y_i / 2 from each factor of the dot
//! product, so x receives M^T y, by rows, twice.

use baselines::{read_input, write_real};
use std::hint::black_box;

const SIZE: usize = 1000;

fn matvec(m: &[Vec<f64>], x: &[f64]) -> Vec<f64> {
    m.iter()
        .map(|row| row.iter().zip(x).fold(0.0, |acc, (a, b)| acc + a * b))
        .collect()
}

fn gradient(m: &[Vec<f64>], x: &[f64]) -> Vec<f64> {
    let y1 = matvec(m, x);
    let y2 = matvec(m, x);
    black_box(y1.iter().zip(&y2).fold(0.0, |acc, (a, b)| acc + a * b) / 2.0);
    let half = 1.0 / 2.0;
    let mut g = vec![0.0; x.len()];
    for (y, other) in [(&y1, &y2), (&y2, &y1)] {
        for (row, (_, o)) in m.iter().zip(y.iter().zip(other.iter())) {
            let s = o * half;
            for (gj, a) in g.iter_mut().zip(row) {
                *gj += a * s;
            }
        }
    }
    g
}

fn main() {
    let input = read_input();
    let n = input.first().copied().unwrap_or(0.0);
    let m: Vec<Vec<f64>> = (0..SIZE)
        .map(|i| (0..SIZE).map(|j| 1.0 / (1.0 + (i + j) as f64)).collect())
        .collect();
    let x = vec![1.0; SIZE];
    let mut rep = 0.0;
    while rep < n {
        let g = gradient(black_box(&m), black_box(&x));
        write_real(g.iter().fold(0.0, |acc, gi| acc + gi));
        rep += 1.0;
    }
}
