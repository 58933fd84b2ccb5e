//! particle, reverse over forward (benches/programs/particle-RF.vlad).
//! Reads N; prints w* = 0.20719187464861... N times.
//!
//! The outer derivative is the hand-written adjoint of the Euler loop in
//! [`baselines::particle`]; the inner gradient of the potential takes one
//! forward pass of dual numbers per unit vector (`gradient-F`), and the
//! outer sweep runs the adjoint of those dual-number operations.

use baselines::particle::{self, charges, diff, Inner};
use baselines::{distance, Dual};

/// The inner gradient by forward mode.
struct Forward;

/// One Euler step as the outer backward sweep needs it: the position and,
/// per charge, the distance D and, per pass, its tangent dD (which took a
/// division). 8 scalars.
#[derive(Clone, Copy)]
struct Cell {
    x: [f64; 2],
    dist: [f64; 2],
    d_dist: [[f64; 2]; 2],
}

impl Inner for Forward {
    type Cell = Cell;

    /// `grad p x` as `gradient-F` computes it: for each unit vector e_i, p
    /// on dual numbers (x with tangent e_i, the charges with tangent 0),
    /// `1 / distance` per charge and the right fold `r0 + (r1 + 0)`. The
    /// distances are the primal parts of either pass.
    fn gradient(x: [f64; 2], c01: f64) -> ([f64; 2], Cell) {
        let c = charges(c01);
        let lift = |v: f64| Dual::new(v, 0.0);
        let mut g = [0.0; 2];
        let mut cell = Cell {
            x,
            dist: [0.0; 2],
            d_dist: [[0.0; 2]; 2],
        };
        for (i, gi) in g.iter_mut().enumerate() {
            let e = |j: usize| if j == i { 1.0 } else { 0.0 };
            let xs = [Dual::new(x[0], e(0)), Dual::new(x[1], e(1))];
            let d = c.map(|ck| distance(&xs, &[lift(ck[0]), lift(ck[1])]));
            for (k, dk) in d.iter().enumerate() {
                cell.dist[k] = dk.v;
                cell.d_dist[k][i] = dk.d;
            }
            *gi = (lift(1.0) / d[0] + (lift(1.0) / d[1] + lift(0.0))).d;
        }
        (g, cell)
    }

    /// The adjoint of the forward passes, pass by pass and charge by charge,
    /// with the reverse rules of the prelude applied to the dual-number
    /// operations. Along unit vector i, with `dd_j` the tangent of `d_j`
    /// (1 for j = i, else 0), the pass computes `dS = (0 + dq0) + dq1`,
    /// `dq_j = d_j dd_j + dd_j d_j`, `dD = dS / t`, `t = 2 D`, and the
    /// tangent of `1 / D`, `dr = num / den`, `num = 0 D - 1 dD`,
    /// `den = D D`. Its sensitivity gbar_i (from the fold, for either
    /// charge) goes back:
    ///
    /// - `num` gets `gbar_i / den`, den `0 - (num gbar_i) / (den den)`,
    ///   so `dD` gets `0 - numbar` and D `D denbar + D denbar`;
    /// - `dD = dS / t` gives dS `dDbar / t` and t
    ///   `0 - (dS dDbar) / (t t)`, so D gets `2 tbar` as well;
    /// - `D = sqrt S` gives `Sbar = Dbar / (2 D)`, which reaches each
    ///   `d_j d_j`, as dSbar reaches each `dq_j`: each factor gets
    ///   `dd_j dSbar + d_j Sbar` (0 dSbar is left out), so d_j twice that.
    ///
    /// x_j sums the charges' dbar within a pass, then the two passes;
    /// c01 gets `0 - dbar` of charge 0's second coordinate from each pass.
    fn adjoint(cell: &Cell, c01: f64, gbar: [f64; 2]) -> ([f64; 2], f64) {
        let d = [diff(cell.x, c01, 0), diff(cell.x, c01, 1)];
        let mut xbar = [[0.0; 2]; 2];
        let mut c01bar = [0.0; 2];
        for i in 0..2 {
            let mut dbar = [[0.0; 2]; 2];
            for (k, dk_bar) in dbar.iter_mut().enumerate() {
                let dk = d[k];
                let dist = cell.dist[k];
                // The pass along e_i (the tangent of d_i is 1 - 0 = 1).
                let dq_i = dk[i] * 1.0 + 1.0 * dk[i];
                let ds = if i == 0 {
                    (0.0 + dq_i) + 0.0
                } else {
                    (0.0 + 0.0) + dq_i
                };
                let t = 2.0 * dist;
                let d_dist = cell.d_dist[k][i];
                let num = 0.0 * dist - 1.0 * d_dist;
                let den = dist * dist;
                // Its adjoint.
                let num_bar = gbar[i] / den;
                let den_bar = 0.0 - (num * gbar[i]) / (den * den);
                let d_dist_bar = 1.0 * (0.0 - num_bar);
                let ds_bar = d_dist_bar / t;
                let t_bar = 0.0 - (ds * d_dist_bar) / (t * t);
                let dist_bar = (dist * den_bar + dist * den_bar) + 2.0 * t_bar;
                let sum_bar = dist_bar / (2.0 * dist);
                for j in 0..2 {
                    let factor_bar = if j == i {
                        1.0 * ds_bar + dk[j] * sum_bar
                    } else {
                        dk[j] * sum_bar
                    };
                    dk_bar[j] = factor_bar + factor_bar;
                }
            }
            xbar[i] = [dbar[0][0] + dbar[1][0], dbar[0][1] + dbar[1][1]];
            c01bar[i] = 0.0 - dbar[0][1];
        }
        (
            [xbar[0][0] + xbar[1][0], xbar[0][1] + xbar[1][1]],
            c01bar[0] + c01bar[1],
        )
    }
}

fn main() {
    particle::main::<Forward>();
}
