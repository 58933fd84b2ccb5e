//! Hand-written Rust baselines for the benchmark programs of the
//! benchmark suite (see `benches/programs/README.md`).
//!
//! Straight Rust over `f64`. The forward-mode levels use [`Dual`], a dual
//! number generic over its component type, nested for forward over forward
//! (`Dual<Dual<f64>>`: the inner perturbation outermost, as VLAD tags it).
//! Every operation follows the rule of the VLAD AD prelude
//! (`crates/ad/src/prelude.vlad`) and the library (`stdlib.vlad`) in the
//! same order, so the printed numbers agree with the VLAD programs.

use std::io::Read;
use std::ops::{Add, Div, Mul, Sub};

/// A number the generic code runs on: `f64`, or a dual number over one.
pub trait Num:
    Copy + Add<Output = Self> + Sub<Output = Self> + Mul<Output = Self> + Div<Output = Self>
{
    /// A constant (zero tangent at every level).
    fn lift(x: f64) -> Self;
    /// The primal value, for comparisons.
    fn value(self) -> f64;
    fn sqrt(self) -> Self;
}

impl Num for f64 {
    fn lift(x: f64) -> Self {
        x
    }
    fn value(self) -> f64 {
        self
    }
    fn sqrt(self) -> Self {
        f64::sqrt(self)
    }
}

/// `v + d ε`, with the forward rules of the VLAD prelude.
#[derive(Clone, Copy, Debug)]
pub struct Dual<T> {
    pub v: T,
    pub d: T,
}

impl<T: Num> Dual<T> {
    pub fn new(v: T, d: T) -> Self {
        Dual { v, d }
    }
}

impl<T: Num> Add for Dual<T> {
    type Output = Self;
    fn add(self, b: Self) -> Self {
        Dual::new(self.v + b.v, self.d + b.d)
    }
}

impl<T: Num> Sub for Dual<T> {
    type Output = Self;
    fn sub(self, b: Self) -> Self {
        Dual::new(self.v - b.v, self.d - b.d)
    }
}

impl<T: Num> Mul for Dual<T> {
    type Output = Self;
    // (* a b): tangent (+ (* a db) (* da b))
    fn mul(self, b: Self) -> Self {
        Dual::new(self.v * b.v, self.v * b.d + self.d * b.v)
    }
}

impl<T: Num> Div for Dual<T> {
    type Output = Self;
    // (/ a b): tangent (/ (- (* da b) (* a db)) (* b b))
    fn div(self, b: Self) -> Self {
        Dual::new(self.v / b.v, (self.d * b.v - self.v * b.d) / (b.v * b.v))
    }
}

impl<T: Num> Num for Dual<T> {
    fn lift(x: f64) -> Self {
        Dual::new(T::lift(x), T::lift(0.0))
    }
    fn value(self) -> f64 {
        self.v.value()
    }
    // (sqrt x): tangent (/ dx (* 2 r))
    fn sqrt(self) -> Self {
        let r = self.v.sqrt();
        Dual::new(r, self.d / (T::lift(2.0) * r))
    }
}

/// The library's `dot`: `((0 + u1 v1) + u2 v2) + ...`, left to right.
pub fn dot<T: Num>(u: &[T], v: &[T]) -> T {
    let mut s = T::lift(0.0);
    for (a, b) in u.iter().zip(v) {
        s = s + *a * *b;
    }
    s
}

/// The library's `magnitude`: `sqrt (dot v v)`.
pub fn magnitude<T: Num>(v: &[T]) -> T {
    dot(v, v).sqrt()
}

/// The library's `distance`: `magnitude (v- u v)`. The differences are
/// formed as they are needed rather than stored: the same operations on
/// the same operands, without a heap-allocated vector.
pub fn distance<T: Num>(u: &[T], v: &[T]) -> T {
    let mut s = T::lift(0.0);
    for (a, b) in u.iter().zip(v) {
        let d = *a - *b;
        s = s + d * d;
    }
    s.sqrt()
}

/// `gradient-F f x`: for each i, the tangent of `f` along the i-th unit
/// vector (a 1 at i, 0 elsewhere), one forward pass each.
pub fn gradient_f<T: Num, const N: usize>(
    f: impl Fn(&[Dual<T>; N]) -> Dual<T>,
    x: &[T; N],
) -> [T; N] {
    let mut g = [T::lift(0.0); N];
    for (i, gi) in g.iter_mut().enumerate() {
        let mut xs = [Dual::new(T::lift(0.0), T::lift(0.0)); N];
        for (j, xj) in xs.iter_mut().enumerate() {
            *xj = Dual::new(x[j], T::lift(if j == i { 1.0 } else { 0.0 }));
        }
        *gi = f(&xs).d;
    }
    g
}

/// `multivariate-argmin G f x` of `common.vlad`, with gradient `g`.
pub fn multivariate_argmin<T: Num, const N: usize>(
    f: impl Fn(&[T; N]) -> T,
    g: impl Fn(&[T; N]) -> [T; N],
    x: [T; N],
) -> [T; N] {
    let mut x = x;
    let mut fx = f(&x);
    let mut gx = g(&x);
    let mut eta = 1e-5;
    let mut i = 0.0;
    loop {
        if magnitude(&gx).value() <= 1e-5 {
            return x;
        }
        if i == 10.0 {
            eta *= 2.0;
            i = 0.0;
            continue;
        }
        let mut x_prime = x;
        for (xk, gk) in x_prime.iter_mut().zip(&gx) {
            *xk = *xk - T::lift(eta) * *gk;
        }
        if distance(&x, &x_prime).value() <= 1e-5 {
            return x;
        }
        let fx_prime = f(&x_prime);
        if fx_prime.value() < fx.value() {
            gx = g(&x_prime);
            x = x_prime;
            fx = fx_prime;
            i += 1.0;
        } else {
            eta /= 2.0;
            i = 0.0;
        }
    }
}

/// The reals on standard input, whitespace separated.
pub fn read_input() -> Vec<f64> {
    let mut s = String::new();
    std::io::stdin()
        .read_to_string(&mut s)
        .expect("reading standard input");
    s.split_whitespace()
        .map(|w| w.parse().unwrap_or_else(|_| panic!("not a real: {w}")))
        .collect()
}

/// `write-real`: shortest round-trip digits, JavaScript style, one a line.
pub fn write_real(x: f64) {
    println!("{}", syntax::number::format_real(x));
}
