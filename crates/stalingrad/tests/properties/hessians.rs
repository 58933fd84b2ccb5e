//! Property (3): Hessians by FF, FR, RF and RR agree.

use super::*;

const HESSIAN: &str = "(define ((vg-hessian G1 G2) g x)
  (map-n (lambda (i) ((G1 (lambda (x) (list-ref ((G2 g) x) i))) x))
         (length x)))\n";

/// [`HESSIAN`] for procedures of a vector: a vector of vectors.
const VECTOR_HESSIAN: &str = "(define ((vg-hessian G1 G2) g x)
  (build-vector (vector-length x)
                (lambda (i) ((G1 (lambda (x) (vector-ref ((G2 g) x) i))) x))))\n";

/// Hessians by forward-over-forward, forward-over-reverse,
/// reverse-over-forward and reverse-over-reverse agree. Every mode
/// differentiates the branch actually taken, so no point is skipped; the
/// generated functions here take no derivatives themselves (that would
/// make this third-order nesting, which the gradient property covers at
/// second order).
#[test]
fn hessians_agree_in_every_mode_combination() {
    check_hessians("hessians", 3, 120, false);
}

/// [`hessians_agree_in_every_mode_combination`] for procedures of a vector
/// whose bodies use vectors ([`vladgen::Options::vectors`]): forward over
/// reverse and reverse over reverse through vectors, among the others.
#[test]
fn vector_hessians_agree_in_every_mode_combination() {
    check_hessians("vector hessians", 9, 40, true);
}

/// The property, on `default` cases of property number `prop`.
fn check_hessians(what: &str, prop: u64, default: usize, vectors: bool) {
    let start = Instant::now();
    let mut failures = Failures::default();
    let list = cases(default);
    let modes = [
        ("FF", "gradient-F gradient-F"),
        ("FR", "gradient-F gradient-R"),
        ("RF", "gradient-R gradient-F"),
        ("RR", "gradient-R gradient-R"),
    ];
    for &case in &list {
        let mut rng = case_rng(prop, case);
        let n = 1 + case % 3;
        // Vector bodies cost the interpreter more per node: depth 3 keeps
        // their fourth-order cases (a derivative inside f) within a second.
        let opts = Options {
            depth: if vectors { 3 } else { 3 + rng.below(2) as u32 },
            nested_ad: rng.chance(0.2),
            vectors,
            ..Options::default()
        };
        let f = gen_function(&mut rng, n, &opts);
        let x = gen_point(&mut rng, n);
        let mut body = String::from(if vectors { VECTOR_HESSIAN } else { HESSIAN });
        for (_, gs) in &modes {
            body.push_str(&format!("((vg-hessian {gs}) f {})\n", f.point(&x)));
        }
        let text = f.program(false, &body);
        let ctx = |what: &str| {
            format!(
                "case {case} ({}), x = {x:?}: {what}\n--- program ---\n{text}",
                reproduce(case)
            )
        };
        let out = match eval(&text) {
            Ok(o) => o,
            Err(e) => {
                failures.add(ctx(&format!("the program failed: {e}")));
                continue;
            }
        };
        let hs: Option<Vec<Vec<Vec<f64>>>> = out.lines().map(|l| Out::parse(l).matrix()).collect();
        let Some(hs) = hs.filter(|h| h.len() == 4) else {
            failures.add(ctx(&format!("unexpected output:\n{out}")));
            continue;
        };
        for (k, h) in hs.iter().enumerate().skip(1) {
            let ok = h.len() == n
                && h.iter()
                    .zip(&hs[0])
                    .all(|(r, r0)| all_close(r, r0, 1e-9, 1e-12));
            if !ok {
                failures.add(ctx(&format!(
                    "Hessian {} = {h:?} but FF = {:?}",
                    modes[k].0, hs[0]
                )));
            }
        }
    }
    failures.finish(
        what,
        &format!("{} cases, {:.1?}", list.len(), start.elapsed()),
    );
}
