//! Values whose shape is known only at run time, in the styles that
//! numeric programmers write: closures returned by recursion over a count
//! the compiler cannot fold (a stager, a stream of thunks), primitives and
//! closures chosen at run time (from a conditional or a list), and
//! derivative operators passed as values. Each count or choice depends on
//! a comparison through the prelude's `vg-*` procedures, so it enters the
//! branch signature like any other branch.

use super::*;

impl Gen<'_> {
    /// A count of 0 to 2 chosen at run time.
    fn runtime_count(&mut self, sc: &Scope) -> String {
        let c = self.condition(1, sc);
        let (a, b) = *self.rng.pick(&[(1, 2), (0, 1), (2, 0)]);
        format!("(if {c} {a} {b})")
    }

    /// A procedure from a closure compiler: recursion on a run-time count
    /// builds nested closures, applied to a real.
    pub(crate) fn staged(&mut self, d: u32, sc: &Scope) -> String {
        let d = d.min(1);
        let k = self.runtime_count(sc);
        let (stage, n, g, y) = (
            self.fresh("stage"),
            self.fresh("n"),
            self.fresh("g"),
            self.fresh("y"),
        );
        let at_y = sc.with(&y, Ty::Real);
        let base = self.real(d, &at_y);
        let step = self.real(d, &at_y);
        let combine = match self.rng.below(3) {
            0 => format!("(+ {step} ({g} {y}))"),
            1 => format!("(* 0.5 (* {step} ({g} {y})))"),
            _ => format!("({g} (* 0.5 (+ {y} {step})))"),
        };
        let arg = self.real(d, sc);
        format!(
            "((let {stage} (({n} {k})) (if (zero? {n}) (lambda ({y}) {base}) \
             (let (({g} ({stage} (- {n} 1)))) (lambda ({y}) {combine})))) {arg})"
        )
    }

    /// An element of a stream of thunks, at a run-time index.
    pub(crate) fn stream(&mut self, d: u32, sc: &Scope) -> String {
        let d = d.min(1);
        let k = self.runtime_count(sc);
        let (mk, nth, v, s, i) = (
            self.fresh("mk"),
            self.fresh("nth"),
            self.fresh("v"),
            self.fresh("s"),
            self.fresh("i"),
        );
        let start = self.real(d, sc);
        let step = self.real(d, &sc.with(&v, Ty::Real));
        format!(
            "(let {nth} (({s} (let {mk} (({v} {start})) (cons {v} (lambda () ({mk} (* 0.5 {step})))))) \
             ({i} {k})) (if (zero? {i}) (car {s}) ({nth} ((cdr {s})) (- {i} 1))))"
        )
    }

    /// A primitive or a closure chosen at run time, applied.
    pub(crate) fn chosen_procedure(&mut self, d: u32, sc: &Scope) -> String {
        let d = d.min(1);
        let y = self.fresh("y");
        let body = self.real(d, &sc.with(&y, Ty::Real));
        let lam = format!("(lambda ({y}) {body})");
        let prim = *self.rng.pick(&["sin", "cos"]);
        let arg = self.real(d, sc);
        if self.rng.chance(0.5) {
            let c = self.condition(1, sc);
            let (a, b) = if self.rng.chance(0.5) {
                (prim.to_string(), lam)
            } else {
                (lam, prim.to_string())
            };
            format!("((if {c} {a} {b}) {arg})")
        } else {
            let k = self.runtime_count(sc);
            let other = *self.rng.pick(&["sin", "cos"]);
            format!("((list-ref (list {prim} {lam} {other}) {k}) {arg})")
        }
    }

    /// A derivative operator chosen at run time, applied to a closure over
    /// the variables in scope.
    pub(crate) fn chosen_derivative(&mut self, d: u32, sc: &Scope) -> String {
        self.ad_level += 1;
        let d = d.min(2);
        let c = self.condition(1, sc);
        let (a, b) = *self.rng.pick(&[
            ("derivative-F", "derivative-R"),
            ("derivative-R", "derivative-F"),
        ]);
        let y = self.fresh("y");
        let body = self.real(d, &sc.with(&y, Ty::Real));
        let at = self.real(d.min(1), sc);
        self.ad_level -= 1;
        format!("((let ((d (if {c} {a} {b}))) (d (lambda ({y}) {body}))) {at})")
    }
}
