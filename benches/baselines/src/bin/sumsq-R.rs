//! sumsq, reverse mode (benches/programs/sumsq-R.vlad): the gradient of
//! a sum of squares over a list of 10^5 reals by a hand-written adjoint of
//! the same loop. Reads N; prints the sum of the gradient's elements
//! (100000.99999999997) N times.
//!
//! The data is what the VLAD program walks: a singly linked list, and
//! every sweep is the program's non-tail recursion over it. The cells live
//! in an arena (a `Vec` reused by every repetition, linked by index), so
//! the baseline pays neither `malloc` nor a collector for the gradient
//! list it builds; a `Box` per cell, the plain way to write a list in
//! Rust, takes about twice as long here. `sumsq-R-vector` is the same
//! adjoint over a vector, which VLAD, having no arrays, cannot express.
//! The adjoint follows the reverse rule of `*` in the VLAD prelude (each
//! factor's sensitivity is the other factor times the product's) and sums
//! the gradient in the order of the program's `total` (a right fold), so
//! it prints what sumsq-R.vlad prints.

use baselines::{read_input, write_real};
use std::hint::black_box;

const SIZE: usize = 100_000;

/// The end of a list.
const NIL: u32 = u32::MAX;

/// A pair of the list: a real and the index of the rest.
#[derive(Clone, Copy)]
struct Cell {
    car: f64,
    cdr: u32,
}

/// Conses `car` onto `cdr` in `arena`.
fn cons(arena: &mut Vec<Cell>, car: f64, cdr: u32) -> u32 {
    arena.push(Cell { car, cdr });
    (arena.len() - 1) as u32
}

/// `(make k)`: k/size, (k-1)/size, ..., 1/size.
fn make(arena: &mut Vec<Cell>, k: f64, size: f64) -> u32 {
    if k == 0.0 {
        return NIL;
    }
    let rest = make(arena, k - 1.0, size);
    cons(arena, k / size, rest)
}

/// The forward sweep: the primal sum of squares (the program's non-tail
/// recursion adds the last element first).
fn forward(xs: &[Cell], l: u32) -> f64 {
    if l == NIL {
        return 0.0;
    }
    let c = xs[l as usize];
    c.car * c.car + forward(xs, c.cdr)
}

/// The reverse sweep: the sensitivity of every element, as a list in the
/// order of `l`, built into `out`; `s` is the sensitivity of each term.
fn reverse(xs: &[Cell], out: &mut Vec<Cell>, l: u32, s: f64) -> u32 {
    if l == NIL {
        return NIL;
    }
    let c = xs[l as usize];
    let rest = reverse(xs, out, c.cdr, s);
    cons(out, c.car * s + c.car * s, rest)
}

/// `(total l)`: a right fold.
fn total(cells: &[Cell], l: u32) -> f64 {
    if l == NIL {
        return 0.0;
    }
    let c = cells[l as usize];
    c.car + total(cells, c.cdr)
}

fn run() {
    let input = read_input();
    let n = input.first().copied().unwrap_or(0.0);
    let mut cells = Vec::with_capacity(SIZE);
    let xs = make(&mut cells, SIZE as f64, SIZE as f64);
    let mut gradient = Vec::with_capacity(SIZE);
    let mut rep = 0.0;
    while rep < n {
        gradient.clear();
        black_box(forward(black_box(&cells), xs));
        let g = reverse(&cells, &mut gradient, xs, 1.0);
        write_real(total(&gradient, g));
        rep += 1.0;
    }
}

fn main() {
    // Three recursions 10^5 deep: more stack than a main thread may have.
    let worker = std::thread::Builder::new()
        .stack_size(256 << 20)
        .spawn(run)
        .expect("a thread for the recursion");
    if worker.join().is_err() {
        std::process::exit(1);
    }
}
