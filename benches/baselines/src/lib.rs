//! Hand-written Rust baselines for the benchmark programs of the
//! benchmark suite (see `benches/programs/README.md`).
//!
//! Straight Rust over `f64`. The forward-mode levels use [`Dual`], a dual
//! number generic over its component type, nested for forward over forward
//! (`Dual<Dual<f64>>`: the inner perturbation outermost, as VLAD tags it).
//! Every operation follows the rule of the VLAD AD prelude
//! (`crates/ad/src/prelude.vlad`) and the library (`stdlib.vlad`) in the
//! same order, so the printed numbers agree with the VLAD programs.
//! Reverse-mode levels are hand-written adjoints ([`particle`], [`saddle`]
//! and the backprop and sumsq binaries): a forward sweep that keeps only
//! what the backward sweep reads, then the backward sweep, applying the
//! prelude's reverse rules to the same values.

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

/// `multivariate-argmin G f x` of `common.vlad`, with gradient `g` (which
/// may keep a tape between calls, hence `FnMut`).
pub fn multivariate_argmin<T: Num, const N: usize>(
    f: impl Fn(&[T; N]) -> T,
    mut g: impl FnMut(&[T; N]) -> [T; N],
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
    println!("{}", base::number::format_real(x));
}

/// The reals on standard input, read as the programs do: N, the number of
/// repetitions, for particle and saddle.
pub fn read_repetitions() -> f64 {
    read_input().first().copied().unwrap_or(0.0)
}

/// particle (`benches/programs/particle.vlad`) with the outer level in
/// reverse mode: the cost of w by naive Euler, and its derivative by a
/// hand-written adjoint of the Euler loop. The inner gradient operator (the
/// acceleration `-grad p`) and its own adjoint come from a [`particle::Inner`]:
/// dual numbers for RF, a nested hand-written adjoint for RR.
///
/// The adjoint follows the reverse rules of the VLAD prelude, so that it
/// accumulates every sensitivity from the same terms grouped the same way
/// as the transformed program (sums of two terms are exact in either order;
/// where three or more meet, the grouping is the program's: a call's own
/// contributions are summed inside the call before the caller adds them).
/// Zero contributions (the products with a tangent of 0, the sensitivity 0
/// of the unused second coordinate of the landing point) are left out: they
/// change no sum.
pub mod particle {
    /// `delta-t`.
    pub const DT: f64 = 0.1;

    /// The charges at (10, 10 - w) and (10, 0), from `c01 = 10 - w`.
    pub fn charges(c01: f64) -> [[f64; 2]; 2] {
        [[10.0, c01], [10.0, 0.0]]
    }

    /// `x - c` for charge k (the `v-` inside `distance`).
    pub fn diff(x: [f64; 2], c01: f64, k: usize) -> [f64; 2] {
        let c = charges(c01)[k];
        [x[0] - c[0], x[1] - c[1]]
    }

    /// The inner gradient operator G of `naive-euler G w` and its adjoint.
    pub trait Inner {
        /// What the backward sweep keeps of one Euler step that continued:
        /// the position (the loop-carried state the inner gradient reads;
        /// the velocity enters the step linearly, so its adjoint needs only
        /// `DT`) and those values of the inner gradient that take a square
        /// root or a division to compute again.
        type Cell: Copy;
        /// `((G p) x)` with the charges of `c01`, and the step's cell.
        fn gradient(x: [f64; 2], c01: f64) -> ([f64; 2], Self::Cell);
        /// The adjoint of [`Inner::gradient`] at a step: from the
        /// sensitivity `gbar` of the gradient, those of x and of c01.
        fn adjoint(cell: &Self::Cell, c01: f64, gbar: [f64; 2]) -> ([f64; 2], f64);
    }

    /// Where the Euler loop stopped: the last position and velocity (the
    /// step that would cross the floor), the landing time and the cost.
    struct Landing {
        x: [f64; 2],
        xdot: [f64; 2],
        dt_f: f64,
        x_t_f: f64,
        cost: f64,
    }

    /// The Euler loop of `naive-euler`; `record` sees every step that
    /// continues, in order.
    fn euler<I: Inner>(c01: f64, mut record: impl FnMut(I::Cell)) -> Landing {
        let mut x = [0.0, 8.0];
        let mut xdot = [0.75, 0.0];
        loop {
            let (g, cell) = I::gradient(x, c01);
            // `(k*v (real -1) g)`: a product by -1 is exact, a negation.
            let xddot = [-g[0], -g[1]];
            let x_new = [x[0] + DT * xdot[0], x[1] + DT * xdot[1]];
            if x_new[1] > 0.0 {
                record(cell);
                xdot = [xdot[0] + DT * xddot[0], xdot[1] + DT * xddot[1]];
                x = x_new;
            } else {
                let dt_f = (0.0 - x[1]) / xdot[1];
                let x_t_f = x[0] + dt_f * xdot[0];
                return Landing {
                    x,
                    xdot,
                    dt_f,
                    x_t_f,
                    cost: x_t_f * x_t_f,
                };
            }
        }
    }

    /// `naive-euler G w`: the cost of w.
    pub fn cost<I: Inner>(w: f64) -> f64 {
        euler::<I>(10.0 - w, |_| {}).cost
    }

    /// `(gradient-R (lambda ((list w)) (naive-euler G w)))` at w: one
    /// forward sweep that pushes a cell per continuing Euler step onto
    /// `tape` (cleared first; its capacity is kept from call to call, so
    /// after the first call nothing is allocated), then one backward sweep.
    ///
    /// Backward, the sensitivities (xbar, xdotbar) of the state after a step
    /// give those before it: `x_new = x + dt xdot` passes xbar to x and
    /// `dt xbar` to xdot; `xdot_new = xdot + dt (-1 g)` passes xdotbar to
    /// xdot and `gbar = -1 (dt xdotbar)` to the inner gradient, whose
    /// adjoint adds its own total (summed over the charges, and the passes
    /// in forward mode) to xbar and gives the step's share of c01's
    /// sensitivity. The shares are summed last step first (each recursive call of the
    /// loop returns the sum over the steps after it), and `c01 = 10 - w`
    /// gives `wbar = 0 - c01bar`.
    pub fn derivative<I: Inner>(w: f64, tape: &mut Vec<I::Cell>) -> f64 {
        tape.clear();
        let c01 = 10.0 - w;
        let end = euler::<I>(c01, |s| tape.push(s));
        // The landing: cost = x_t_f^2, x_t_f = x0 + dt_f xdot0,
        // dt_f = (0 - x1) / xdot1; the second coordinate of the landing
        // point is not used (its sensitivity is 0).
        let (x, xdot) = (end.x, end.xdot);
        let x_t_f_bar = end.x_t_f * 1.0 + end.x_t_f * 1.0;
        let dt_f_bar = xdot[0] * x_t_f_bar;
        let num = 0.0 - x[1];
        let num_bar = dt_f_bar / xdot[1];
        let mut xbar = [x_t_f_bar, 0.0 - num_bar];
        let mut xdotbar = [
            end.dt_f * x_t_f_bar,
            0.0 - (num * dt_f_bar) / (xdot[1] * xdot[1]),
        ];
        let mut c01bar = 0.0;
        for cell in tape.iter().rev() {
            // The rule for `(* -1 g_j)`: g_j gets `-1 ybar`, a negation.
            let gbar = [-(DT * xdotbar[0]), -(DT * xdotbar[1])];
            let (sx, sc) = I::adjoint(cell, c01, gbar);
            xdotbar = [xdotbar[0] + DT * xbar[0], xdotbar[1] + DT * xbar[1]];
            xbar = [xbar[0] + sx[0], xbar[1] + sx[1]];
            c01bar += sc;
        }
        0.0 - c01bar
    }

    /// The program for one inner mode: reads N, prints w* N times.
    pub fn main<I: Inner>() {
        let n = super::read_repetitions();
        let mut tape = Vec::new();
        let mut i = 0.0;
        while i < n {
            let w = super::multivariate_argmin(
                |x: &[f64; 1]| cost::<I>(x[0]),
                |x: &[f64; 1]| [derivative::<I>(x[0], &mut tape)],
                [0.0],
            );
            super::write_real(w[0]);
            i += 1.0;
        }
    }
}

/// saddle (`benches/programs/saddle.vlad`) with the outer level in reverse
/// mode; the inner gradient operator (of the inner maximisation) is a
/// parameter: dual numbers for RF, a hand-written adjoint for RR.
pub mod saddle {
    use super::{multivariate_argmin, read_repetitions, write_real, Num};
    use std::hint::black_box;

    /// An inner gradient operator: the gradient of `0 - f(x1, y1, x2, y2)`
    /// over (x2, y2) at `x`, with x1 and y1 fixed.
    pub type InnerGradient = fn(f64, f64, &[f64; 2]) -> [f64; 2];

    /// `f(x1, y1, x2, y2) = (x1^2 + y1^2) - (x2^2 + y2^2)`.
    pub fn f<T: Num>(x1: T, y1: T, x2: T, y2: T) -> T {
        (x1 * x1 + y1 * y1) - (x2 * x2 + y2 * y2)
    }

    /// `multivariate-argmax` of `(λ (x2 y2) f(x1, y1, x2, y2))` from
    /// (1, 1): `multivariate-argmin` of `0 - f`.
    pub fn inner_argmax(x1: f64, y1: f64, grad: InnerGradient) -> [f64; 2] {
        multivariate_argmin(
            |x: &[f64; 2]| 0.0 - f(x1, y1, x[0], x[1]),
            |x: &[f64; 2]| grad(x1, y1, x),
            [1.0, 1.0],
        )
    }

    /// The outer objective, `multivariate-max`: f at the inner argmax.
    pub fn objective(x1: f64, y1: f64, grad: InnerGradient) -> f64 {
        let m = inner_argmax(x1, y1, grad);
        f(x1, y1, m[0], m[1])
    }

    /// `(gradient-R (outer-objective max start))` at (x1, y1).
    ///
    /// The forward sweep is the objective itself, the inner argmax included;
    /// its value is discarded, as `gradient-R` discards it. The backward
    /// sweep starts from the objective's sensitivity 1: `f = A - B` passes
    /// 1 to `A = x1 x1 + y1 y1`, whose products give x1 `x1 1 + x1 1` (and
    /// y1 likewise). The sweep through the inner argmax adds nothing to x1
    /// and y1: its steps `x' = x - eta grad(0 - f)(x)` read x1 and y1 only
    /// in the comparisons that accept or reject a step (the gradient over
    /// (x2, y2) does not involve them), so the sensitivities it carries
    /// end at the start point and the step sizes, which are constants. The
    /// backward sweep therefore needs no tape.
    pub fn derivative(x: &[f64; 2], grad: InnerGradient) -> [f64; 2] {
        let (x1, y1) = (x[0], x[1]);
        black_box(objective(x1, y1, grad));
        let a_bar = 1.0;
        [x1 * a_bar + x1 * a_bar, y1 * a_bar + y1 * a_bar]
    }

    /// The program for one inner mode: reads N, prints x1* y1* x2* y2* N
    /// times.
    pub fn main(grad: InnerGradient) {
        let n = read_repetitions();
        let mut i = 0.0;
        while i < n {
            let s = multivariate_argmin(
                |x: &[f64; 2]| objective(x[0], x[1], grad),
                |x: &[f64; 2]| derivative(x, grad),
                [1.0, 1.0],
            );
            let m = inner_argmax(s[0], s[1], grad);
            for v in [s[0], s[1], m[0], m[1]] {
                write_real(v);
            }
            i += 1.0;
        }
    }
}
