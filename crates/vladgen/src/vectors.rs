//! Vectors (`Options::vectors`): every vector primitive and library
//! procedure, vectors of vectors, vectors captured by closures, and
//! vectors under AD (gradients of procedures of vectors, derivatives of
//! procedures that build vectors), as expressions of the generator's
//! types. A vector of `k` reals has the type `Ty::Vector(k)`; vectors of
//! vectors appear only inside the expressions built here, which know their
//! shapes, so every index and length is in range and every generated
//! program runs without error. [`crate::errors`] writes the programs that
//! must fail.

use super::*;

impl Gen<'_> {
    /// Top-level forms of [`gen_io_program`] printing vector values: a
    /// vector, a vector of vectors, a vector as a list, booleans about
    /// vectors, and a gradient with respect to a vector.
    pub(crate) fn vector_outputs(&mut self, sc: &Scope, body: &mut String) {
        let k = self.rng.below(4);
        let v = self.vector(k, 2, sc);
        let _ = writeln!(body, "{v}");
        let (r, c) = (1 + self.rng.below(2), self.rng.below(3));
        let m = self.matrix(r, c, 1, sc);
        let _ = writeln!(body, "{m}");
        let k = 1 + self.rng.below(3);
        let v = self.vector(k, 1, sc);
        let _ = writeln!(body, "(vector->list {v})");
        let a = self.vector_condition(1, sc);
        let b = self.vector_condition(1, sc);
        let _ = writeln!(body, "(list {a} {b} (vector? pt) (equal? pt pt))");
        let u = self.fresh("u");
        let f = self.real(2, &sc.with(&u, Ty::Vector(k)));
        let at = self.vector(k, 1, sc);
        let op = *self.rng.pick(&["gradient-F", "gradient-R"]);
        let _ = writeln!(body, "(({op} (lambda ({u}) {f})) {at})");
        // Gradients with respect to a vector of vectors, and to a pair of a
        // real and a vector: reverse mode takes any structure.
        let (r, c) = (1 + self.rng.below(2), 1 + self.rng.below(3));
        let (mm, row) = (self.fresh("m"), self.fresh("row"));
        let (i, j) = (self.rng.below(r), self.rng.below(c));
        let f = self.real(2, &sc.with(&row, Ty::Vector(c)));
        let at = self.matrix(r, c, 1, sc);
        let _ = writeln!(
            body,
            "((gradient-R (lambda ({mm}) (let (({row} (vector-ref {mm} {i}))) \
             (* (vector-ref {row} {j}) {f})))) {at})"
        );
        let (a, w) = (self.fresh("a"), self.fresh("w"));
        let inner = sc.with(&a, Ty::Real).with(&w, Ty::Vector(k));
        let f = self.real(2, &inner);
        let x = self.real(1, sc);
        let at = self.vector(k, 1, sc);
        let _ = writeln!(
            body,
            "((gradient-R (lambda ((cons {a} {w})) {f})) (cons {x} {at}))"
        );
    }

    /// A numeral that may stand inside a `#(...)` literal (no `(real ...)`).
    fn literal_numeral(&mut self) -> String {
        const NUMERALS: &[&str] = &[
            "1", "2", "-1", "0.5", ".5", "-.25", "1.5", "3.", "#b10", "0",
        ];
        self.rng.pick(NUMERALS).to_string()
    }

    /// A real computed from vectors.
    pub(crate) fn vector_real(&mut self, d: u32, sc: &Scope) -> String {
        let k = 1 + self.rng.below(3);
        let d1 = d.saturating_sub(1);
        match self.rng.below(16) {
            0 | 1 => {
                let v = self.vector(k, d, sc);
                let j = self.rng.below(k);
                // An index computed at run time, sometimes.
                if self.rng.chance(0.3) {
                    format!("(vector-ref {v} (- (real {}) 1))", j + 1)
                } else {
                    format!("(vector-ref {v} {j})")
                }
            }
            2 => {
                let v = self.vector(k, d, sc);
                let (acc, u) = (self.fresh("acc"), self.fresh("u"));
                let inner = sc.with(&acc, Ty::Real).with(&u, Ty::Real);
                let step = self.real(d1.min(2), &inner);
                let init = self.real(d1.min(1), sc);
                format!("(vector-fold (lambda ({acc} {u}) (* 0.5 {step})) {init} {v})")
            }
            3 => {
                let v = self.vector(k, d, sc);
                let w = self.vector(k, d, sc);
                let (acc, a, b) = (self.fresh("acc"), self.fresh("a"), self.fresh("b"));
                let inner = sc
                    .with(&acc, Ty::Real)
                    .with(&a, Ty::Real)
                    .with(&b, Ty::Real);
                let step = self.real(d1.min(2), &inner);
                let init = self.real(d1.min(1), sc);
                format!("(vector-fold (lambda ({acc} {a} {b}) (* 0.5 {step})) {init} {v} {w})")
            }
            4 => {
                let k = self.rng.below(4);
                let v = self.vector(k, d, sc);
                if self.rng.chance(0.5) {
                    format!("(vector-fold + 0 {v})")
                } else {
                    format!("(* (vector-length {v}) {})", self.leaf(sc))
                }
            }
            5 => {
                let v = self.vector(k, d, sc);
                format!("(vg-sum (vector->list {v}))")
            }
            6 => {
                // A loop of vector-ref up to the vector's length.
                let v = self.vector(k, d, sc);
                let (w, lp, i, acc) = (
                    self.fresh("w"),
                    self.fresh("loop"),
                    self.fresh("i"),
                    self.fresh("acc"),
                );
                let c = self.real(d1.min(1), sc);
                format!(
                    "(let (({w} {v})) (let {lp} (({i} 0) ({acc} 0)) (if (= {i} (vector-length {w})) {acc} \
                     ({lp} (+ {i} 1) (+ {acc} (* {c} (vector-ref {w} {i})))))))"
                )
            }
            7 | 8 => {
                // A vector bound to a name: the body and its closures see it.
                let w = self.fresh("w");
                let v = self.vector(k, d, sc);
                let body = self.real(d1, &sc.with(&w, Ty::Vector(k)));
                format!("(let (({w} {v})) {body})")
            }
            9 => {
                // A closure capturing a vector, called twice.
                let v = self.vector(k, d, sc);
                let (g, y, acc, a) = (
                    self.fresh("g"),
                    self.fresh("y"),
                    self.fresh("acc"),
                    self.fresh("a"),
                );
                let x = self.real(d1.min(1), sc);
                let z = self.real(d1.min(1), sc);
                format!(
                    "(let (({g} (lambda ({y}) (vector-fold (lambda ({acc} {a}) (+ {acc} (* {a} (vg-squash {y})))) 0 {v})))) \
                     (+ ({g} {x}) ({g} {z})))"
                )
            }
            10 => {
                let c = self.vector_condition(d1, sc);
                let a = self.real(d1, sc);
                let b = self.real(d1, sc);
                format!("(if {c} {a} {b})")
            }
            11 => {
                let (r, c) = (1 + self.rng.below(3), 1 + self.rng.below(3));
                let m = self.matrix(r, c, d, sc);
                let (i, j) = (self.rng.below(r), self.rng.below(c));
                format!("(vector-ref (vector-ref {m} {i}) {j})")
            }
            12 if self.opts.nested_ad && self.ad_level == 0 => self.vector_ad_real(d1, sc),
            13 => {
                // An index chosen at run time, by a comparison.
                let v = self.vector(k.max(2), d, sc);
                let c = self.condition(d1.min(1), sc);
                let (a, b) = (self.rng.below(k.max(2)), self.rng.below(k.max(2)));
                format!("(vector-ref {v} (if {c} {a} {b}))")
            }
            14 => {
                // A vector of procedures (closures and primitives), one
                // chosen by index and applied.
                let fs: Vec<String> = (0..k).map(|_| self.func(d1.min(2), sc)).collect();
                let j = self.rng.below(k);
                let x = self.real(d1, sc);
                format!("((vector-ref (vector {}) {j}) {x})", fs.join(" "))
            }
            _ => {
                let v = self.vector(k, d, sc);
                let f = self.func(d1, sc);
                let j = self.rng.below(k);
                format!("(vector-ref (vector-map {f} {v}) {j})")
            }
        }
    }

    /// A boolean about vectors: `vector?` of a vector or of another value,
    /// `equal?` of vectors (of equal or different lengths) or of a vector
    /// and a list.
    pub(crate) fn vector_condition(&mut self, d: u32, sc: &Scope) -> String {
        let d = d.min(1);
        match self.rng.below(4) {
            0 => {
                let x = match self.rng.below(4) {
                    0 => {
                        let n = self.rng.below(3);
                        self.vector(n, d, sc)
                    }
                    1 => {
                        let n = 1 + self.rng.below(2);
                        self.list(n, d, sc)
                    }
                    2 => self.pair(d, sc),
                    _ => self.real(d, sc),
                };
                format!("(vector? {x})")
            }
            1 => {
                // The same vector twice: equal.
                let w = self.fresh("w");
                let n = 1 + self.rng.below(3);
                let v = self.vector(n, d, sc);
                format!("(let (({w} {v})) (equal? {w} (vector-copy {w})))")
            }
            2 => {
                let k = self.rng.below(3);
                let a = self.vector(k, d, sc);
                let n = self.rng.below(3);
                let b = self.vector(n, d, sc);
                format!("(equal? {a} {b})")
            }
            _ => {
                let k = 1 + self.rng.below(2);
                let v = self.vector(k, d, sc);
                let l = self.list(k, d, sc);
                format!("(equal? {v} {l})")
            }
        }
    }

    /// A derivative inside the function, through vectors: the gradient of
    /// a procedure of a vector, or a derivative of a procedure that builds
    /// vectors.
    fn vector_ad_real(&mut self, d: u32, sc: &Scope) -> String {
        let k = 1 + self.rng.below(3);
        let j = self.rng.below(k);
        let d = d.min(2);
        if self.rng.chance(0.5) {
            let g = self.vector(k, d, sc);
            format!("(vector-ref {g} {j})")
        } else {
            self.ad_level += 1;
            let op = *self.rng.pick(&["derivative-F", "derivative-R"]);
            let y = self.fresh("y");
            let v = self.vector(k, d, &sc.with(&y, Ty::Real));
            let at = self.real(d.min(1), sc);
            self.ad_level -= 1;
            format!("(({op} (lambda ({y}) (vector-ref {v} {j}))) {at})")
        }
    }

    /// A vector of `k` reals.
    pub(crate) fn vector(&mut self, k: usize, d: u32, sc: &Scope) -> String {
        let vs = sc.of(Ty::Vector(k));
        if !vs.is_empty() && self.rng.chance(0.4) {
            return self.rng.pick(&vs).to_string();
        }
        if d == 0 {
            return if self.rng.chance(0.5) {
                let items: Vec<String> = (0..k).map(|_| self.literal_numeral()).collect();
                format!("#({})", items.join(" "))
            } else {
                let items: Vec<String> = (0..k).map(|_| self.leaf(sc)).collect();
                format!("(vector {})", items.join(" "))
            };
        }
        let d1 = d - 1;
        match self.rng.below(15) {
            0 => {
                let items: Vec<String> = (0..k).map(|_| self.real(d1, sc)).collect();
                format!("(vector {})", items.join(" "))
            }
            1 => {
                let x = self.real(d1, sc);
                format!("(make-vector {k} {x})")
            }
            2 => {
                let i = self.fresh("i");
                let body = self.real(d1, &sc.with(&i, Ty::Real));
                format!("(build-vector {k} (lambda ({i}) {body}))")
            }
            3 => {
                let l = self.list(k, d1, sc);
                format!("(list->vector {l})")
            }
            4 => {
                let f = self.func(d1, sc);
                let v = self.vector(k, d1, sc);
                format!("(vector-map {f} {v})")
            }
            5 => {
                let op = *self.rng.pick(&["+", "*", "-"]);
                let a = self.vector(k, d1, sc);
                let b = self.vector(k, d1, sc);
                format!("(vector-map {op} {a} {b})")
            }
            6 => {
                let (a, b, c) = (self.fresh("a"), self.fresh("b"), self.fresh("c"));
                let inner = sc.with(&a, Ty::Real).with(&b, Ty::Real).with(&c, Ty::Real);
                let body = self.real(d1.min(2), &inner);
                let vs: Vec<String> = (0..3).map(|_| self.vector(k, d1, sc)).collect();
                format!(
                    "(vector-map (lambda ({a} {b} {c}) {body}) {})",
                    vs.join(" ")
                )
            }
            7 => {
                let split = self.rng.below(k + 1);
                let a = self.vector(split, d1, sc);
                let b = self.vector(k - split, d1, sc);
                if self.rng.chance(0.2) {
                    let e = self.vector(0, 0, sc);
                    format!("(vector-append {a} {e} {b})")
                } else {
                    format!("(vector-append {a} {b})")
                }
            }
            8 => {
                let extra = self.rng.below(3);
                let v = self.vector(k + extra, d1, sc);
                match self.rng.below(3) {
                    0 if extra == 0 => format!("(vector-copy {v})"),
                    1 => format!("(vector-copy {v} {extra})"),
                    _ => {
                        let start = self.rng.below(extra + 1);
                        format!("(vector-copy {v} {start} {})", start + k)
                    }
                }
            }
            9 => {
                let r = 1 + self.rng.below(3);
                let m = self.matrix(r, k, d1, sc);
                let i = self.rng.below(r);
                format!("(vector-ref {m} {i})")
            }
            10 => {
                // The closure captures a vector and maps over another.
                let n = self.rng.below(3);
                let w = self.vector(n, d1, sc);
                let v = self.vector(k, d1, sc);
                let a = self.fresh("a");
                format!("(vector-map (lambda ({a}) (* {a} (vg-squash (vector-fold + 1 {w})))) {v})")
            }
            11 if self.opts.nested_ad && self.ad_level == 0 => self.vector_ad_vector(k, d1, sc),
            12 => {
                let c = self.condition(d1.min(1), sc);
                let a = self.vector(k, d1, sc);
                let b = self.vector(k, d1, sc);
                format!("(if {c} {a} {b})")
            }
            _ => {
                let items: Vec<String> = (0..k).map(|_| self.real(d1, sc)).collect();
                format!("(vector {})", items.join(" "))
            }
        }
    }

    /// A vector of `k` reals made by AD inside the function: the gradient
    /// of a procedure of a vector of `k` reals (by either mode), or the
    /// forward derivative of a procedure from a real to such a vector.
    fn vector_ad_vector(&mut self, k: usize, d: u32, sc: &Scope) -> String {
        self.ad_level += 1;
        let d = d.min(2);
        let out = if self.rng.chance(0.6) {
            let op = *self.rng.pick(&["gradient-F", "gradient-R"]);
            let u = self.fresh("u");
            let body = self.real(d, &sc.with(&u, Ty::Vector(k)));
            let at = self.vector(k, d.min(1), sc);
            format!("(({op} (lambda ({u}) {body})) {at})")
        } else {
            let y = self.fresh("y");
            let v = self.vector(k, d, &sc.with(&y, Ty::Real));
            let at = self.real(d.min(1), sc);
            format!("((derivative-F (lambda ({y}) {v})) {at})")
        };
        self.ad_level -= 1;
        out
    }

    /// A vector of `r` vectors of `c` reals.
    pub(crate) fn matrix(&mut self, r: usize, c: usize, d: u32, sc: &Scope) -> String {
        let d = d.min(2);
        match self.rng.below(6) {
            0 => {
                let rows: Vec<String> = (0..r)
                    .map(|_| {
                        let items: Vec<String> = (0..c).map(|_| self.literal_numeral()).collect();
                        format!("#({})", items.join(" "))
                    })
                    .collect();
                format!("#({})", rows.join(" "))
            }
            1 => {
                let i = self.fresh("i");
                let row = self.vector(c, d, &sc.with(&i, Ty::Real));
                format!("(build-vector {r} (lambda ({i}) {row}))")
            }
            2 => {
                let row = self.vector(c, d, sc);
                format!("(make-vector {r} {row})")
            }
            3 if d > 0 => {
                let row = self.fresh("row");
                let f = self.func(d - 1, sc);
                let m = self.matrix(r, c, d - 1, sc);
                format!("(vector-map (lambda ({row}) (vector-map {f} {row})) {m})")
            }
            _ => {
                let rows: Vec<String> = (0..r).map(|_| self.vector(c, d, sc)).collect();
                format!("(vector {})", rows.join(" "))
            }
        }
    }
}
