//! particle, reverse over reverse (benches/programs/particle-RR.vlad).
//! Reads N; prints w* = 0.20719187464861... N times.
//!
//! The outer derivative is the hand-written adjoint of the Euler loop in
//! [`baselines::particle`]; the inner gradient of the potential is itself a
//! hand-written adjoint (one reverse sweep per Euler step), and the outer
//! sweep runs the adjoint of that inner adjoint.

use baselines::distance;
use baselines::particle::{self, charges, diff, Inner};

/// The inner gradient by reverse mode.
struct Reverse;

/// One Euler step as the outer backward sweep needs it: the position and,
/// per charge, the distance D and the inner sweep's sensitivities of D and
/// of `S = D^2` (which took a division each). 8 scalars.
#[derive(Clone, Copy)]
struct Cell {
    x: [f64; 2],
    dist: [f64; 2],
    s_dist: [f64; 2],
    s_sum: [f64; 2],
}

impl Inner for Reverse {
    type Cell = Cell;

    /// `grad p x`, p = sum over the charges of `1 / |x - c|`, by one reverse
    /// sweep from p's sensitivity 1: `1 / D` passes
    /// `sD = 0 - (1 1) / (D D)` to D (the prelude's rule for `/`),
    /// `D = sqrt S` passes `sS = sD / (2 D)` to `S = (0 + d0 d0) + d1 d1`,
    /// and each product `d_j d_j` passes `d_j sS` to both factors, so
    /// charge k contributes `d_j sS + d_j sS` to x_j; the two charges'
    /// contributions are summed.
    fn gradient(x: [f64; 2], c01: f64) -> ([f64; 2], Cell) {
        let c = charges(c01);
        let mut e = [[0.0; 2]; 2];
        let mut cell = Cell {
            x,
            dist: [0.0; 2],
            s_dist: [0.0; 2],
            s_sum: [0.0; 2],
        };
        for k in 0..2 {
            let dist = distance(&x, &c[k]);
            let s_dist = 0.0 - (1.0 * 1.0) / (dist * dist);
            let s_sum = s_dist / (2.0 * dist);
            let d = diff(x, c01, k);
            for j in 0..2 {
                e[k][j] = d[j] * s_sum + d[j] * s_sum;
            }
            cell.dist[k] = dist;
            cell.s_dist[k] = s_dist;
            cell.s_sum[k] = s_sum;
        }
        ([e[0][0] + e[1][0], e[0][1] + e[1][1]], cell)
    }

    /// The adjoint of the inner sweep, charge by charge, with the reverse
    /// rules of the prelude applied to its operations (gbar_j is the
    /// sensitivity of the gradient's x_j, so of both products `d_j sS`):
    ///
    /// - `sS`, used in the four products, gets `(d0 gbar0 + d0 gbar0) +
    ///   (d1 gbar1 + d1 gbar1)` (the `+` of the sum splits it in two);
    /// - `sS = sD / t`, `t = 2 D`, `sD = 0 - o`, `o = 1 / n`, `n = D D`
    ///   pass it back to D: `(2 tbar) + (D nbar + D nbar)`;
    /// - `D = sqrt S` gives `Sbar = Dbar / (2 D)`, and each `d_j d_j`
    ///   gives each factor `sS gbar_j + d_j Sbar` (the inner sweep's product
    ///   and the forward product), so `d_j` gets twice that;
    /// - `d = x - c` passes dbar to x and `0 - dbar` to c; only c01 (charge
    ///   0, second coordinate) depends on w.
    fn adjoint(cell: &Cell, c01: f64, gbar: [f64; 2]) -> ([f64; 2], f64) {
        let mut dbar = [[0.0; 2]; 2];
        for (k, dk_bar) in dbar.iter_mut().enumerate() {
            let d = diff(cell.x, c01, k);
            let (dist, s_d, s_s) = (cell.dist[k], cell.s_dist[k], cell.s_sum[k]);
            let n = dist * dist;
            let t = 2.0 * dist;
            let u = [d[0] * gbar[0], d[1] * gbar[1]];
            let s_s_bar = (u[0] + u[0]) + (u[1] + u[1]);
            let s_d_bar = s_s_bar / t;
            let t_bar = 0.0 - (s_d * s_s_bar) / (t * t);
            let o_bar = 0.0 - s_d_bar;
            let n_bar = 0.0 - (1.0 * o_bar) / (n * n);
            let dist_bar = 2.0 * t_bar + (dist * n_bar + dist * n_bar);
            let sum_bar = dist_bar / (2.0 * dist);
            for j in 0..2 {
                let factor_bar = s_s * gbar[j] + d[j] * sum_bar;
                dk_bar[j] = factor_bar + factor_bar;
            }
        }
        (
            [dbar[0][0] + dbar[1][0], dbar[0][1] + dbar[1][1]],
            0.0 - dbar[0][1],
        )
    }
}

fn main() {
    particle::main::<Reverse>();
}
