//! Property (2): forward and reverse gradients of random functions agree
//! with each other and with central finite differences.

use super::*;

/// The branch signature of one evaluation of `f`, from the instrumented
/// prelude: the outcome of every comparison made, and the smallest margin.
#[derive(Debug, PartialEq)]
struct Signature {
    outcomes: Vec<bool>,
}

/// Evaluates the instrumented program at each probe point; per point, the
/// signature, the smallest |margin| (infinite when no comparison ran) and
/// the value.
fn signatures(f: &RealFunction, probes: &[Vec<f64>]) -> Result<Vec<(Signature, f64, f64)>, String> {
    let body: String = probes
        .iter()
        .map(|p| format!("(f {})\n", f.point(p)))
        .collect();
    let text = f.program(true, &body);
    let out = eval(&text)?;
    let mut result = Vec::new();
    let mut outcomes = Vec::new();
    let mut min_margin = f64::INFINITY;
    for line in out.lines() {
        match Out::parse(line) {
            Out::Pair(m, r) => {
                let (Some(m), Out::Bool(r)) = (m.real(), *r) else {
                    return Err(format!("unexpected signature line {line:?}"));
                };
                min_margin = min_margin.min(m.abs());
                outcomes.push(r);
            }
            Out::Real(v) => {
                result.push((
                    Signature {
                        outcomes: std::mem::take(&mut outcomes),
                    },
                    min_margin,
                    v,
                ));
                min_margin = f64::INFINITY;
            }
            _ => return Err(format!("unexpected output line {line:?}")),
        }
    }
    if result.len() != probes.len() {
        return Err(format!("expected {} values, got:\n{out}", probes.len()));
    }
    Ok(result)
}

fn axis(x: &[f64], i: usize, d: f64) -> Vec<f64> {
    let mut y = x.to_vec();
    y[i] += d;
    y
}

/// Forward and reverse gradients agree with each other and with central
/// finite differences.
///
/// Skipping points near non-differentiability: every comparison in a
/// generated `f` goes through the `vg-*` wrappers of the vladgen prelude.
/// Running the *instrumented* prelude prints each comparison's margin and
/// outcome, i.e. the branch signature of an evaluation. A point x is
/// skipped when the signature at any of x ± h·e_i (the finite-difference
/// points) or x ± 1e-4·e_i differs from the one at x, or when some
/// comparison at x has |margin| < 1e-6: then f may not be differentiable
/// near x, and finite differences would straddle a kink. (Forward and
/// reverse mode differentiate the branch actually taken, so they are
/// compared at every point, skipped or not.) Points where |f(x)| > 1e8 or f
/// is not finite are skipped too (none are expected: the generator keeps
/// magnitudes moderate), and so are points where central differences at
/// h and at 2h disagree: f bends too much there for them to check it.
#[test]
fn gradients_forward_reverse_and_finite_differences_agree() {
    check_gradients("gradients", 2, 300, false);
}

/// [`gradients_forward_reverse_and_finite_differences_agree`] for
/// procedures of a vector whose bodies use vectors
/// ([`vladgen::Options::vectors`]): the gradients are vectors.
#[test]
fn vector_gradients_forward_reverse_and_finite_differences_agree() {
    check_gradients("vector gradients", 8, 150, true);
}

/// The property, on `default` cases of property number `prop`.
fn check_gradients(what: &str, prop: u64, default: usize, vectors: bool) {
    let start = Instant::now();
    let mut failures = Failures::default();
    let (mut modes_checked, mut fd_checked, mut skipped) = (0usize, 0usize, 0usize);
    let list = cases(default);
    for &case in &list {
        let mut rng = case_rng(prop, case);
        let n = 1 + case % 3;
        let opts = Options {
            depth: 4 + rng.below(2) as u32,
            vectors,
            ..Options::default()
        };
        let f = gen_function(&mut rng, n, &opts);
        let x = gen_point(&mut rng, n);
        let ctx = |what: &str, text: &str| {
            format!(
                "case {case} ({}), x = {x:?}: {what}\n--- program ---\n{text}",
                reproduce(case)
            )
        };
        // The plain program: gradients, then the finite-difference points.
        let hs: Vec<f64> = x.iter().map(|xi| 1e-6 * xi.abs().max(1.0)).collect();
        // Custom derivatives that are correct by construction must give
        // the same gradient (docs/reference.md): one by forward mode, one that
        // is f's own reverse transform.
        let map = if vectors { "vector-map" } else { "map" };
        let mut body = format!(
            "(define vg-custom-f (custom-vjp f (lambda (x dy) \
             ({map} (lambda (g) (* dy g)) ((gradient-F f) x)))))\n\
             (define vg-custom-j (custom-*j f (lambda (xr) ((*j f) xr))))\n\
             (f {p})\n((gradient-F f) {p})\n((gradient-R f) {p})\n\
             ((gradient-R vg-custom-f) {p})\n((gradient-R vg-custom-j) {p})\n",
            p = f.point(&x)
        );
        // x ± h·e_i, then x ± 2h·e_i (see `smooth_at_h`).
        let mut fd_points = Vec::new();
        for scale in [1.0, 2.0] {
            for (i, h) in hs.iter().enumerate() {
                for s in [1.0, -1.0] {
                    let y = axis(&x, i, s * scale * h);
                    body.push_str(&format!("(f {})\n", f.point(&y)));
                    fd_points.push(y);
                }
            }
        }
        let text = f.program(false, &body);
        let out = match eval(&text) {
            Ok(o) => o,
            Err(e) => {
                failures.add(ctx(&format!("the program failed: {e}"), &text));
                continue;
            }
        };
        let lines: Vec<Out> = out.lines().map(Out::parse).collect();
        let parsed = (|| {
            let fx = lines.first()?.real()?;
            let gf = lines.get(1)?.reals()?;
            let gr = lines.get(2)?.reals()?;
            let gcf = lines.get(3)?.reals()?;
            let gcj = lines.get(4)?.reals()?;
            let fd: Vec<f64> = lines[5..].iter().map(Out::real).collect::<Option<_>>()?;
            (fd.len() == 4 * n && gf.len() == n && gr.len() == n).then_some((
                fx,
                gf,
                gr,
                [gcf, gcj],
                fd,
            ))
        })();
        let Some((fx, gf, gr, customs, fvals)) = parsed else {
            failures.add(ctx(&format!("unexpected output:\n{out}"), &text));
            continue;
        };
        if !fx.is_finite() || fx.abs() > 1e8 {
            skipped += 1;
            continue;
        }
        modes_checked += 1;
        if !all_close(&gf, &gr, 1e-9, 1e-12) {
            failures.add(ctx(
                &format!("gradient-F {gf:?} != gradient-R {gr:?}"),
                &text,
            ));
            continue;
        }
        if let Some(gc) = customs.iter().find(|gc| !all_close(gc, &gr, 1e-9, 1e-12)) {
            failures.add(ctx(
                &format!("gradient-R through a custom derivative {gc:?} != gradient-R {gr:?}"),
                &text,
            ));
            continue;
        }
        // Branch stability (see the doc comment).
        let mut probes = vec![x.clone()];
        probes.extend(fd_points.iter().cloned());
        for i in 0..n {
            probes.push(axis(&x, i, 1e-4));
            probes.push(axis(&x, i, -1e-4));
        }
        let sigs = match signatures(&f, &probes) {
            Ok(s) => s,
            Err(e) => {
                failures.add(ctx(&format!("the instrumented program failed: {e}"), &text));
                continue;
            }
        };
        let (sig0, margin0, v0) = &sigs[0];
        if v0.to_bits() != fx.to_bits() && !(v0.is_nan() && fx.is_nan()) {
            failures.add(ctx(
                &format!("instrumented f(x) = {v0} but f(x) = {fx}"),
                &text,
            ));
            continue;
        }
        if *margin0 < 1e-6 || sigs.iter().any(|(s, _, _)| s != sig0) {
            skipped += 1;
            continue;
        }
        let central = |k: usize| -> Vec<f64> {
            (0..n)
                .map(|i| {
                    let (a, b) = (k + 2 * i, k + 2 * i + 1);
                    (fvals[a] - fvals[b]) / (fd_points[a][i] - fd_points[b][i])
                })
                .collect()
        };
        let (fd, fd2) = (central(0), central(2 * n));
        // The error of central differences grows as h^2: where those at h
        // and at 2h disagree by more than the tolerance, f bends too much
        // at this scale for them to check the gradient (a sine of a value
        // in the thousands: seed 0x4a60c2, cases 182 and 1617).
        if !all_close(&fd, &fd2, 1e-5, 1e-7) {
            skipped += 1;
            continue;
        }
        fd_checked += 1;
        if !all_close(&fd, &gr, 1e-5, 1e-7) {
            failures.add(ctx(
                &format!("finite differences {fd:?} != gradient {gr:?} (h = {hs:?}, f(x) = {fx})"),
                &text,
            ));
        }
    }
    failures.finish(
        what,
        &format!(
            "{} cases: forward = reverse checked {modes_checked}, finite differences checked \
             {fd_checked}, {skipped} skipped (branch change nearby, large value or bending at the scale of h), {:.1?}",
            list.len(),
            start.elapsed()
        ),
    );
}
