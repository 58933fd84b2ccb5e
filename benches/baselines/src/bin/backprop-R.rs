//! backprop, reverse mode (benches/programs/backprop-R.vlad): a 2-2-1
//! sigmoid network learning XOR by vanilla gradient descent, the gradient
//! of the error by a hand-written adjoint. Reads N and S; prints E(w) after
//! S steps (0.250010564024323756 for S = 10^6), N times.
//!
//! The adjoint uses the reverse rules of the VLAD prelude in the same order
//! (sensitivities of the data items accumulated last item first), so it
//! prints what backprop-R.vlad prints.
#![allow(non_snake_case)]

use baselines::{read_input, write_real};

/// Hidden units `h[j] = (bias, w1, w2)`, output unit `o = (bias, w1, w2)`.
#[derive(Clone, Copy)]
struct Weights {
    h: [[f64; 3]; 2],
    o: [f64; 3],
}

const DATA: [([f64; 2], f64); 4] = [
    ([0.0, 0.0], 0.0),
    ([0.0, 1.0], 1.0),
    ([1.0, 0.0], 1.0),
    ([1.0, 1.0], 0.0),
];

/// `sigmoid x = 1 / (exp (0 - x) + 1)`; also returns `exp (0 - x) + 1`.
fn sigmoid(x: f64) -> (f64, f64, f64) {
    let e = (0.0 - x).exp();
    let d = e + 1.0;
    (1.0 / d, e, d)
}

/// The sensitivity of x from that of `sigmoid x` (rules for /, +, exp, -).
fn sigmoid_back(y: f64, e: f64, d: f64) -> f64 {
    let sd = 0.0 - (1.0 * y) / (d * d);
    let su = e * sd;
    0.0 - su
}

/// `unit-output`: `bias + ((0 + w1 a1) + w2 a2)`.
fn unit(u: &[f64; 3], a: [f64; 2]) -> f64 {
    u[0] + ((0.0 + u[1] * a[0]) + u[2] * a[1])
}

/// `E(w)`: sum over the data, left to right, of `0.5 |net(w, in) - t|^2`.
fn error(w: &Weights) -> f64 {
    let mut sum = 0.0;
    for (input, t) in DATA {
        let a = [
            sigmoid(unit(&w.h[0], input)).0,
            sigmoid(unit(&w.h[1], input)).0,
        ];
        let out = sigmoid(unit(&w.o, a)).0;
        let v = out - t;
        sum += 0.5 * (0.0 + v * v);
    }
    sum
}

/// `grad E(w)` by one reverse pass.
fn gradient(w: &Weights) -> Weights {
    let mut g = Weights {
        h: [[0.0; 3]; 2],
        o: [0.0; 3],
    };
    // The sensitivities of the data items are accumulated last item first.
    for (input, t) in DATA.iter().rev() {
        // Forward.
        let (a0, e0, d0) = sigmoid(unit(&w.h[0], *input));
        let (a1, e1, d1) = sigmoid(unit(&w.h[1], *input));
        let a = [a0, a1];
        let (out, eo, dout) = sigmoid(unit(&w.o, a));
        let v = out - t;
        // Reverse: sum + 0.5 * ms gives ms the sensitivity 0.5 * 1; ms = 0 + v v.
        let sms = 0.5 * 1.0;
        let sv = v * sms + v * sms;
        let sout = sv;
        let so = sigmoid_back(sout, eo, dout);
        g.o[0] += so;
        g.o[1] += a[0] * so;
        g.o[2] += a[1] * so;
        for (j, (e, d)) in [(e0, d0), (e1, d1)].into_iter().enumerate() {
            let sa = w.o[1 + j] * so;
            let sh = sigmoid_back(sa, e, d);
            g.h[j][0] += sh;
            g.h[j][1] += input[0] * sh;
            g.h[j][2] += input[1] * sh;
        }
    }
    g
}

fn main() {
    let input = read_input();
    let (n, steps) = (input[0], input[1]);
    let eta = 0.3;
    let mut rep = 0.0;
    while rep < n {
        let mut w = Weights {
            h: [[0.0, -0.284227, 1.16054], [0.0, 0.617194, 1.30467]],
            o: [0.0, -0.084395, 0.648461],
        };
        let mut k = steps;
        while k != 0.0 {
            let g = gradient(&w);
            for j in 0..2 {
                for i in 0..3 {
                    w.h[j][i] -= eta * g.h[j][i];
                }
            }
            for i in 0..3 {
                w.o[i] -= eta * g.o[i];
            }
            k -= 1.0;
        }
        write_real(error(&w));
        rep += 1.0;
    }
}
