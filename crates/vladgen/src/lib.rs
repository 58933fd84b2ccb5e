//! `vladgen`: a seeded generator of random, well-formed VLAD programs.
//!
//! Used by the property tests of `stalingrad` (see
//! `crates/stalingrad/tests/properties.rs`). Everything is plain `std`: the
//! pseudo-random numbers come from [`Rng`], a SplitMix64 generator, so a
//! seed reproduces a program exactly on every platform.
//!
//! # What is generated
//!
//! [`gen_function`] produces a procedure `f : R^n -> R` (n = 1..3),
//! defined as `(define (f (list x1 ... xn)) body)` (or, sometimes, through a
//! list parameter destructured by a `let`), together with a few top-level
//! helper procedures it calls. The body is a random expression built from:
//!
//! - every arithmetic primitive, on domains where it is smooth: `sqrt` and
//!   `log` only of `(+ c (* t t))` with `c > 0` (or `(+ 2 (sin t))`), `/`
//!   only by `(+ 2 (* t t))`-like denominators, `exp` only of bounded
//!   arguments, `atan` with a positive second argument;
//! - `let`, `let*` and destructuring patterns (`(cons p q)`, `(list p ...)`);
//! - `lambda`s that capture variables, applied directly, bound to names,
//!   composed with a user-defined `vg-compose`/`vg-twice`, or passed to
//!   `map`, `map2`, `map-n` and `reduce`;
//! - pairs and lists (`cons`, `list`, `cons*`, `car`, `list-ref`, `dot`, ...);
//! - `if`/`cond`/`and`/`or`/`not` on comparisons of smooth expressions;
//! - bounded recursion: named-`let` loops, non-tail recursion and mutually
//!   recursive `letrec`s, each with a fixed trip count of at most 3;
//! - optionally, derivatives taken *inside* `f` (`derivative-F`,
//!   `derivative-R`, `gradient-R` of closures over the outer variables), so
//!   that differentiating `f` exercises nested AD.
//!
//! # Branch signatures
//!
//! Every comparison the generator emits on a value that may depend on the
//! input goes through one of the prelude procedures `vg-lt`, `vg-gt`,
//! `vg-le`, `vg-ge`, `vg-pos`, `vg-neg`. The plain prelude
//! ([`prelude`]`(false)`) defines them as the comparisons themselves. The
//! instrumented prelude ([`prelude`]`(true)`) also `write`s a pair
//! `(MARGIN . OUTCOME)` for each comparison evaluated, where MARGIN is
//! `a - b` (or `a`) and OUTCOME the boolean. Running the instrumented
//! program therefore prints the branch signature of an evaluation of `f`
//! before its value: a test can check that nearby points take the same
//! branches (so `f` is differentiable there) by comparing signatures.
//! Loop counters are compared with plain `=`; they never depend on the
//! input.
//!
//! [`gen_program`] produces a whole program (prelude, helpers, `f`, and
//! top-level expressions that print values, including gradients of `f`)
//! for smoke tests: it always parses and runs without error.
//! [`gen_io_program`] does the same over inputs a compiler cannot
//! constant-fold (read with `read-real`, or written as `(real LITERAL)`),
//! for comparing compiled code with the interpreter.

use std::fmt::Write as _;

/// SplitMix64: a small, fast, statistically decent 64-bit generator.
#[derive(Clone, Debug)]
pub struct Rng {
    state: u64,
}

impl Rng {
    /// A generator for `seed`; equal seeds give equal sequences.
    pub fn new(seed: u64) -> Rng {
        Rng { state: seed }
    }

    /// The next 64 random bits.
    pub fn next_u64(&mut self) -> u64 {
        self.state = self.state.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.state;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// A uniform integer in `0..n` (`n > 0`).
    pub fn below(&mut self, n: usize) -> usize {
        assert!(n > 0, "Rng::below(0)");
        (self.next_u64() % n as u64) as usize
    }

    /// A uniform real in `[0, 1)`.
    pub fn unit(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 / (1u64 << 53) as f64
    }

    /// A uniform real in `[lo, hi)`.
    pub fn range(&mut self, lo: f64, hi: f64) -> f64 {
        lo + (hi - lo) * self.unit()
    }

    /// True with probability `p`.
    pub fn chance(&mut self, p: f64) -> bool {
        self.unit() < p
    }

    /// A uniformly chosen element of a non-empty slice.
    pub fn pick<'a, T>(&mut self, xs: &'a [T]) -> &'a T {
        &xs[self.below(xs.len())]
    }

    /// An independent generator derived from this one (for sub-tasks whose
    /// randomness should not shift when another sub-task changes).
    pub fn fork(&mut self) -> Rng {
        Rng::new(self.next_u64())
    }
}

/// Knobs for [`gen_function`].
#[derive(Clone, Debug)]
pub struct Options {
    /// Maximum nesting depth of generated expressions (4 or 5 gives bodies
    /// of a few dozen to a few hundred nodes).
    pub depth: u32,
    /// Emit `if`/`cond`/`and`/`or` on comparisons (through `vg-lt` etc.).
    pub branches: bool,
    /// Emit bounded loops and recursion.
    pub loops: bool,
    /// Emit derivatives taken inside the generated function.
    pub nested_ad: bool,
    /// How many top-level helper procedures to generate at most.
    pub helpers: usize,
}

impl Default for Options {
    fn default() -> Options {
        Options {
            depth: 4,
            branches: true,
            loops: true,
            nested_ad: true,
            helpers: 2,
        }
    }
}

/// A generated procedure `f : R^n -> R` and the definitions it needs.
#[derive(Clone, Debug)]
pub struct RealFunction {
    /// n, the length of the argument list.
    pub arity: usize,
    /// The name of the procedure (`f`).
    pub name: String,
    /// Helper definitions followed by the definition of `f`; refers to the
    /// names defined by [`prelude`].
    pub definitions: String,
}

impl RealFunction {
    /// A complete program: the prelude (instrumented or not), the
    /// definitions, then `body` (top-level forms written by the caller).
    pub fn program(&self, instrumented: bool, body: &str) -> String {
        format!(
            "{}\n{}\n{}\n",
            prelude(instrumented),
            self.definitions,
            body
        )
    }
}

/// The prelude every generated program starts with: the comparison
/// wrappers (instrumented to print `(MARGIN . OUTCOME)` when
/// `instrumented`; see the crate documentation) and small higher-order
/// helpers.
pub fn prelude(instrumented: bool) -> String {
    let mut s = String::from(";; vladgen prelude\n");
    if instrumented {
        s.push_str(
            "(define (vg-mark m r) (cdr (write (cons m r))))\n\
             (define (vg-lt a b) (vg-mark (- a b) (< a b)))\n\
             (define (vg-gt a b) (vg-mark (- a b) (> a b)))\n\
             (define (vg-le a b) (vg-mark (- a b) (<= a b)))\n\
             (define (vg-ge a b) (vg-mark (- a b) (>= a b)))\n\
             (define (vg-pos a) (vg-mark a (positive? a)))\n\
             (define (vg-neg a) (vg-mark a (negative? a)))\n",
        );
    } else {
        s.push_str(
            "(define (vg-lt a b) (< a b))\n\
             (define (vg-gt a b) (> a b))\n\
             (define (vg-le a b) (<= a b))\n\
             (define (vg-ge a b) (>= a b))\n\
             (define (vg-pos a) (positive? a))\n\
             (define (vg-neg a) (negative? a))\n",
        );
    }
    s.push_str(
        "(define ((vg-compose f g) x) (f (g x)))\n\
         (define (vg-twice f) (vg-compose f f))\n\
         (define ((vg-scale k) x) (* k x))\n\
         (define (vg-squash t) (/ t (sqrt (+ 1 (* t t)))))\n\
         (define (vg-sum l) (reduce + 0 l))\n",
    );
    s
}

/// The static type of a generated expression.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Ty {
    Real,
    /// A list of reals of the given length.
    List(usize),
    /// A pair of reals.
    Pair,
    /// A procedure from reals to reals.
    Fn,
}

/// Variables in scope, with their types.
#[derive(Clone, Debug, Default)]
struct Scope {
    vars: Vec<(String, Ty)>,
}

impl Scope {
    fn with(&self, name: &str, ty: Ty) -> Scope {
        let mut s = self.clone();
        s.vars.push((name.to_string(), ty));
        s
    }

    fn of(&self, ty: Ty) -> Vec<&str> {
        self.vars
            .iter()
            .filter(|(_, t)| *t == ty)
            .map(|(n, _)| n.as_str())
            .collect()
    }
}

/// A top-level helper: a procedure of `arity` reals returning a real, or a
/// curried `((name a) b)`.
#[derive(Clone, Debug)]
struct Helper {
    name: String,
    arity: usize,
    curried: bool,
}

struct Gen<'r> {
    rng: &'r mut Rng,
    opts: Options,
    fresh: usize,
    helpers: Vec<Helper>,
    /// Nesting level of derivatives inside the body (kept at most 1 so that
    /// generated functions stay cheap to differentiate twice more).
    ad_level: u32,
}

/// Real kinds of expression, chosen by weight.
#[derive(Clone, Copy, Debug)]
enum Kind {
    Arith,
    Unary,
    Div,
    Atan,
    Let,
    LetStar,
    Destructure,
    ApplyFn,
    If,
    Cond,
    ListOp,
    PairOp,
    Loop,
    Recursion,
    HelperCall,
    NestedAd,
}

impl<'r> Gen<'r> {
    fn new(rng: &'r mut Rng, opts: Options) -> Gen<'r> {
        Gen {
            rng,
            opts,
            fresh: 0,
            helpers: Vec::new(),
            ad_level: 0,
        }
    }

    fn fresh(&mut self, base: &str) -> String {
        self.fresh += 1;
        format!("{base}{}", self.fresh)
    }

    /// A constant, written in one of VLAD's numeral syntaxes.
    fn constant(&mut self) -> String {
        const NUMERALS: &[&str] = &[
            "1", "2", "3", "-1", "0.5", ".5", "-.25", "1.5", "3.", "2.5e-1", "1e-1", "#b10", "#x3",
            "#o7", "#d2", "0.75", "-2", "0",
        ];
        let n = self.rng.pick(NUMERALS).to_string();
        if self.rng.chance(0.1) {
            format!("(real {n})")
        } else {
            n
        }
    }

    fn leaf(&mut self, sc: &Scope) -> String {
        let reals = sc.of(Ty::Real);
        if !reals.is_empty() && self.rng.chance(0.8) {
            return self.rng.pick(&reals).to_string();
        }
        if self.rng.chance(0.05) {
            let k = self.rng.below(3);
            return format!("(list-ref '(0.5 -1 2) {k})");
        }
        self.constant()
    }

    fn kind(&mut self) -> Kind {
        let mut table: Vec<(u32, Kind)> = vec![
            (7, Kind::Arith),
            (4, Kind::Unary),
            (2, Kind::Div),
            (1, Kind::Atan),
            (2, Kind::Let),
            (1, Kind::LetStar),
            (1, Kind::Destructure),
            (2, Kind::ApplyFn),
            (2, Kind::ListOp),
            (1, Kind::PairOp),
        ];
        if self.opts.branches {
            table.push((2, Kind::If));
            table.push((1, Kind::Cond));
        }
        if self.opts.loops {
            table.push((1, Kind::Loop));
            table.push((1, Kind::Recursion));
        }
        if !self.helpers.is_empty() {
            table.push((2, Kind::HelperCall));
        }
        if self.opts.nested_ad && self.ad_level == 0 {
            table.push((1, Kind::NestedAd));
        }
        let total: u32 = table.iter().map(|(w, _)| w).sum();
        let mut r = self.rng.below(total as usize) as u32;
        for (w, k) in table {
            if r < w {
                return k;
            }
            r -= w;
        }
        unreachable!()
    }

    /// A real-valued expression of depth at most `d` over `sc`.
    fn real(&mut self, d: u32, sc: &Scope) -> String {
        if d == 0 || self.rng.chance(0.12) {
            return self.leaf(sc);
        }
        let d1 = d - 1;
        match self.kind() {
            Kind::Arith => {
                let op = *self.rng.pick(&["+", "-", "*", "+", "*"]);
                let a = self.real(d1, sc);
                let b = self.real(d1, sc);
                format!("({op} {a} {b})")
            }
            Kind::Unary => self.unary(d1, sc),
            Kind::Div => {
                let a = self.real(d1, sc);
                let t = self.real(d1, sc);
                match self.rng.below(3) {
                    0 => format!("(/ {a} (+ 2 (* {t} {t})))"),
                    1 => {
                        let v = self.fresh("t");
                        format!("(let (({v} {t})) (/ {a} (+ 1 (* {v} {v}))))")
                    }
                    _ => format!("(/ {a} (+ 1.5 (cos {t})))"),
                }
            }
            Kind::Atan => {
                let y = self.real(d1, sc);
                let t = self.real(d1, sc);
                if self.rng.chance(0.5) {
                    format!("(atan {y} (+ 1 (* {t} {t})))")
                } else {
                    format!("(atan {y} (+ 2 (sin {t})))")
                }
            }
            Kind::Let => self.let_form(d1, sc),
            Kind::LetStar => {
                let n = 1 + self.rng.below(3);
                let mut inner = sc.clone();
                let mut binds = String::new();
                for _ in 0..n {
                    let v = self.fresh("y");
                    let e = self.real(d1.min(2), &inner);
                    let _ = write!(binds, "({v} {e}) ");
                    inner = inner.with(&v, Ty::Real);
                }
                let body = self.real(d1, &inner);
                format!("(let* ({}) {body})", binds.trim_end())
            }
            Kind::Destructure => self.destructure(d1, sc),
            Kind::ApplyFn => {
                let f = self.func(d1, sc);
                let a = self.real(d1, sc);
                if self.rng.chance(0.3) {
                    let g = self.fresh("g");
                    let b = self.real(d1.min(1), sc);
                    format!("(let (({g} {f})) (+ ({g} {a}) ({g} {b})))")
                } else {
                    format!("({f} {a})")
                }
            }
            Kind::If => {
                let c = self.condition(d1, sc);
                let a = self.real(d1, sc);
                let b = self.real(d1, sc);
                format!("(if {c} {a} {b})")
            }
            Kind::Cond => {
                let n = 1 + self.rng.below(2);
                let mut s = String::from("(cond");
                for _ in 0..n {
                    let c = self.condition(d1, sc);
                    let e = self.real(d1, sc);
                    let _ = write!(s, " ({c} {e})");
                }
                let e = self.real(d1, sc);
                let _ = write!(s, " (else {e}))");
                s
            }
            Kind::ListOp => self.list_op(d1, sc),
            Kind::PairOp => {
                let p = self.pair(d1, sc);
                match self.rng.below(3) {
                    0 => format!("(car {p})"),
                    1 => format!("(cdr {p})"),
                    _ => format!("(+ {p})"),
                }
            }
            Kind::Loop => self.named_loop(d1, sc),
            Kind::Recursion => self.recursion(d1, sc),
            Kind::HelperCall => {
                let h = self.rng.pick(&self.helpers).clone();
                let args: Vec<String> = (0..h.arity).map(|_| self.real(d1, sc)).collect();
                if h.curried {
                    format!("(({} {}) {})", h.name, args[0], args[1..].join(" "))
                } else {
                    format!("({} {})", h.name, args.join(" "))
                }
            }
            Kind::NestedAd => self.nested_ad(d1, sc),
        }
    }

    fn unary(&mut self, d: u32, sc: &Scope) -> String {
        let a = self.real(d, sc);
        match self.rng.below(10) {
            0 => format!("(sin {a})"),
            1 => format!("(cos {a})"),
            2 => {
                let c = *self.rng.pick(&["1", "0.5", "2"]);
                let t = self.fresh("t");
                format!("(let (({t} {a})) (sqrt (+ {c} (* {t} {t}))))")
            }
            3 => format!("(log (+ 1 (sqr {a})))"),
            4 => format!("(log (+ 2 (sin {a})))"),
            5 => format!("(exp (sin {a}))"),
            6 => format!("(exp (vg-squash {a}))"),
            7 => {
                let t = self.fresh("t");
                format!("(let (({t} {a})) (exp (- 0 (* {t} {t}))))")
            }
            8 => format!("(sqr {a})"),
            _ => format!("(vg-squash {a})"),
        }
    }

    fn condition(&mut self, d: u32, sc: &Scope) -> String {
        let d = d.min(2);
        match self.rng.below(9) {
            0..=3 => {
                let op = *self.rng.pick(&["vg-lt", "vg-gt", "vg-le", "vg-ge"]);
                let a = self.real(d, sc);
                let b = self.real(d, sc);
                format!("({op} {a} {b})")
            }
            4 | 5 => {
                let op = *self.rng.pick(&["vg-pos", "vg-neg"]);
                let a = self.real(d, sc);
                format!("({op} {a})")
            }
            6 => {
                let a = self.condition(0, sc);
                let b = self.condition(0, sc);
                format!("(and {a} {b})")
            }
            7 => {
                let a = self.condition(0, sc);
                let b = self.condition(0, sc);
                format!("(or {a} {b})")
            }
            _ => {
                let a = self.condition(0, sc);
                format!("(not {a})")
            }
        }
    }

    fn let_form(&mut self, d: u32, sc: &Scope) -> String {
        let n = 1 + self.rng.below(2);
        let mut inner = sc.clone();
        let mut binds = Vec::new();
        for _ in 0..n {
            let (v, e, ty) = match self.rng.below(5) {
                0 => {
                    let v = self.fresh("g");
                    (v, self.func(d, sc), Ty::Fn)
                }
                1 => {
                    let k = 2 + self.rng.below(2);
                    let v = self.fresh("l");
                    (v, self.list(k, d, sc), Ty::List(k))
                }
                2 => {
                    let v = self.fresh("p");
                    (v, self.pair(d, sc), Ty::Pair)
                }
                _ => {
                    let v = self.fresh("y");
                    (v, self.real(d, sc), Ty::Real)
                }
            };
            inner = inner.with(&v, ty);
            binds.push(format!("({v} {e})"));
        }
        let body = self.real(d, &inner);
        format!("(let ({}) {body})", binds.join(" "))
    }

    /// A destructuring binding: a `cons`/`list`/`cons*` pattern, in a
    /// `let` or as a lambda parameter.
    fn destructure(&mut self, d: u32, sc: &Scope) -> String {
        let a = self.fresh("a");
        let b = self.fresh("b");
        let (pat, val, vars) = match self.rng.below(3) {
            0 => {
                let p = self.pair(d, sc);
                (format!("(cons {a} {b})"), p, vec![a, b])
            }
            1 => {
                let c = self.fresh("c");
                let l = self.list(3, d, sc);
                (format!("(list {a} {b} {c})"), l, vec![a, b, c])
            }
            _ => {
                let l = self.list(3, d, sc);
                let rest = self.fresh("r");
                let inner = sc
                    .with(&a, Ty::Real)
                    .with(&b, Ty::Real)
                    .with(&rest, Ty::List(1));
                let body = self.real(d, &inner);
                return format!("(let (((cons* {a} {b} {rest}) {l})) {body})");
            }
        };
        let mut inner = sc.clone();
        for v in &vars {
            inner = inner.with(v, Ty::Real);
        }
        let body = self.real(d, &inner);
        if self.rng.chance(0.5) {
            format!("(let (({pat} {val})) {body})")
        } else {
            format!("((lambda ({pat}) {body}) {val})")
        }
    }

    /// A procedure from reals to reals.
    fn func(&mut self, d: u32, sc: &Scope) -> String {
        let fns = sc.of(Ty::Fn);
        if !fns.is_empty() && self.rng.chance(0.3) {
            return self.rng.pick(&fns).to_string();
        }
        if d == 0 {
            return self
                .rng
                .pick(&["sin", "cos", "vg-squash", "sqr"])
                .to_string();
        }
        match self.rng.below(7) {
            0 => {
                let f = self.func(d - 1, sc);
                let g = self.bounded_func(d - 1, sc);
                format!("(vg-compose {f} {g})")
            }
            1 => {
                let f = self.bounded_func(d - 1, sc);
                format!("(vg-twice {f})")
            }
            2 => {
                let k = self.real(d - 1, sc);
                format!("(vg-scale {k})")
            }
            3 => self
                .rng
                .pick(&["sin", "cos", "vg-squash", "sqr"])
                .to_string(),
            _ => {
                let y = self.fresh("y");
                let body = self.real(d - 1, &sc.with(&y, Ty::Real));
                format!("(lambda ({y}) {body})")
            }
        }
    }

    /// A procedure whose results are bounded (|result| <= 3 or so), so
    /// that composing it with itself cannot overflow: `(vg-twice
    /// (vg-twice sqr))` would compute x^16.
    fn bounded_func(&mut self, d: u32, sc: &Scope) -> String {
        if d == 0 || self.rng.chance(0.5) {
            return self.rng.pick(&["sin", "cos", "vg-squash"]).to_string();
        }
        match self.rng.below(3) {
            0 => {
                let f = self.bounded_func(d - 1, sc);
                let g = self.func(d - 1, sc);
                format!("(vg-compose {f} {g})")
            }
            1 => {
                let f = self.bounded_func(d - 1, sc);
                format!("(vg-twice {f})")
            }
            _ => {
                let y = self.fresh("y");
                let body = self.real(d - 1, &sc.with(&y, Ty::Real));
                let wrap = *self.rng.pick(&["sin", "cos", "vg-squash"]);
                format!("(lambda ({y}) ({wrap} {body}))")
            }
        }
    }

    /// A pair of reals.
    fn pair(&mut self, d: u32, sc: &Scope) -> String {
        let ps = sc.of(Ty::Pair);
        if !ps.is_empty() && self.rng.chance(0.5) {
            return self.rng.pick(&ps).to_string();
        }
        let a = self.real(d.saturating_sub(1), sc);
        let b = self.real(d.saturating_sub(1), sc);
        format!("(cons {a} {b})")
    }

    /// A list of `k` reals.
    fn list(&mut self, k: usize, d: u32, sc: &Scope) -> String {
        let ls = sc.of(Ty::List(k));
        if !ls.is_empty() && self.rng.chance(0.4) {
            return self.rng.pick(&ls).to_string();
        }
        let d1 = d.saturating_sub(1);
        if d == 0 {
            let items: Vec<String> = (0..k).map(|_| self.leaf(sc)).collect();
            return format!("(list {})", items.join(" "));
        }
        match self.rng.below(9) {
            0 => {
                let f = self.func(d1, sc);
                let l = self.list(k, d1, sc);
                format!("(map {f} {l})")
            }
            1 => {
                let op = *self.rng.pick(&["+", "*", "-"]);
                let a = self.list(k, d1, sc);
                let b = self.list(k, d1, sc);
                format!("(map2 {op} {a} {b})")
            }
            2 => {
                let op = *self.rng.pick(&["v+", "v-"]);
                let a = self.list(k, d1, sc);
                let b = self.list(k, d1, sc);
                format!("({op} {a} {b})")
            }
            3 => {
                let c = self.real(d1, sc);
                let l = self.list(k, d1, sc);
                format!("(k*v {c} {l})")
            }
            4 => {
                let j = self.fresh("j");
                let body = self.real(d1, &sc.with(&j, Ty::Real));
                format!("(map-n (lambda ({j}) {body}) {k})")
            }
            5 if k >= 1 => {
                let a = self.real(d1, sc);
                let l = self.list(k - 1, d1, sc);
                format!("(cons {a} {l})")
            }
            6 if k >= 2 => {
                let a = self.real(d1, sc);
                let b = self.real(d1, sc);
                let l = self.list(k - 2, d1, sc);
                format!("(cons* {a} {b} {l})")
            }
            _ if k == 0 => "'()".to_string(),
            _ => {
                let items: Vec<String> = (0..k).map(|_| self.real(d1, sc)).collect();
                format!("(list {})", items.join(" "))
            }
        }
    }

    /// A real computed from a list.
    fn list_op(&mut self, d: u32, sc: &Scope) -> String {
        let k = 1 + self.rng.below(3);
        let l = self.list(k, d, sc);
        match self.rng.below(8) {
            0 => format!("(vg-sum {l})"),
            1 => {
                let m = self.list(k, d, sc);
                format!("(dot {l} {m})")
            }
            2 => format!("(list-ref {l} {})", self.rng.below(k)),
            3 => format!("(first {l})"),
            4 => format!("(sqrt (+ 1 (magnitude-squared {l})))"),
            5 => {
                let u = self.fresh("u");
                let acc = self.fresh("acc");
                let inner = sc.with(&u, Ty::Real).with(&acc, Ty::Real);
                let step = self.real(d.min(2), &inner);
                let init = self.real(d.min(1), sc);
                format!("(reduce (lambda ({u} {acc}) {step}) {init} {l})")
            }
            6 => format!("(* (length {l}) {})", self.leaf(sc)),
            _ => format!("(reduce * 1 {l})"),
        }
    }

    /// A named-`let` loop with a fixed trip count.
    fn named_loop(&mut self, d: u32, sc: &Scope) -> String {
        let name = self.fresh("loop");
        let i = self.fresh("i");
        let acc = self.fresh("acc");
        let k = 1 + self.rng.below(3);
        let init = self.real(d.min(2), sc);
        let inner = sc.with(&i, Ty::Real).with(&acc, Ty::Real);
        let step = self.real(d.min(2), &inner);
        let step = if self.rng.chance(0.5) {
            format!("(* 0.5 {step})")
        } else {
            step
        };
        format!("(let {name} (({i} 0) ({acc} {init})) (if (= {i} {k}) {acc} ({name} (+ {i} 1) {step})))")
    }

    /// Non-tail recursion or mutual recursion, with a fixed depth.
    fn recursion(&mut self, d: u32, sc: &Scope) -> String {
        let k = 1 + self.rng.below(3);
        if self.rng.chance(0.5) {
            let name = self.fresh("rec");
            let n = self.fresh("n");
            let base = self.real(d.min(2), sc);
            let inner = sc.with(&n, Ty::Real);
            let step = self.real(d.min(2), &inner);
            format!(
                "(let {name} (({n} {k})) (if (zero? {n}) {base} (+ {step} (* 0.5 ({name} (- {n} 1))))))"
            )
        } else {
            let ev = self.fresh("ev");
            let od = self.fresh("od");
            let n = self.fresh("n");
            let v = self.fresh("v");
            let inner = sc.with(&v, Ty::Real);
            let a = self.real(d.min(2), &inner);
            let b = self.real(d.min(2), &inner);
            let start = self.real(d.min(2), sc);
            format!(
                "(letrec (({ev} (lambda ({n} {v}) (if (= {n} 0) {v} ({od} (- {n} 1) {a})))) \
                 ({od} (lambda ({n} {v}) (if (= {n} 0) (- 0 {v}) ({ev} (- {n} 1) {b}))))) \
                 ({ev} {k} {start}))"
            )
        }
    }

    /// A derivative taken inside the function, of a closure over the
    /// variables in scope.
    fn nested_ad(&mut self, d: u32, sc: &Scope) -> String {
        self.ad_level += 1;
        let d = d.min(2);
        let out = match self.rng.below(3) {
            0 | 1 => {
                let op = if self.rng.chance(0.5) {
                    "derivative-F"
                } else {
                    "derivative-R"
                };
                let y = self.fresh("y");
                let body = self.real(d, &sc.with(&y, Ty::Real));
                let at = self.real(d.min(1), sc);
                format!("(({op} (lambda ({y}) {body})) {at})")
            }
            _ => {
                let op = if self.rng.chance(0.5) {
                    "gradient-F"
                } else {
                    "gradient-R"
                };
                let (u, v) = (self.fresh("u"), self.fresh("v"));
                let inner = sc.with(&u, Ty::Real).with(&v, Ty::Real);
                let body = self.real(d, &inner);
                let a = self.real(d.min(1), sc);
                let b = self.real(d.min(1), sc);
                let pick = if self.rng.chance(0.5) {
                    "first"
                } else {
                    "second"
                };
                format!("({pick} (({op} (lambda ((list {u} {v})) {body})) (list {a} {b})))")
            }
        };
        self.ad_level -= 1;
        out
    }

    fn helper(&mut self, index: usize) -> String {
        let name = format!("vg-h{index}");
        let arity = 1 + self.rng.below(3);
        let curried = arity >= 2 && self.rng.chance(0.3);
        let params: Vec<String> = (0..arity).map(|i| format!("h{index}a{i}")).collect();
        let mut sc = Scope::default();
        for p in &params {
            sc = sc.with(p, Ty::Real);
        }
        let body = self.real(self.opts.depth.saturating_sub(1).min(3), &sc);
        self.helpers.push(Helper {
            name: name.clone(),
            arity,
            curried,
        });
        if curried {
            format!(
                "(define (({name} {}) {}) {body})",
                params[0],
                params[1..].join(" ")
            )
        } else {
            format!("(define ({name} {}) {body})", params.join(" "))
        }
    }
}

/// Generates a procedure `f : R^n -> R`, `n = arity` (1 to 3), with the
/// given options. The result is deterministic in the state of `rng`.
pub fn gen_function(rng: &mut Rng, arity: usize, opts: &Options) -> RealFunction {
    assert!((1..=3).contains(&arity), "arity must be 1..3");
    let mut g = Gen::new(rng, opts.clone());
    let mut defs = String::new();
    let nh = if opts.helpers == 0 {
        0
    } else {
        g.rng.below(opts.helpers + 1)
    };
    for i in 0..nh {
        let h = g.helper(i);
        defs.push_str(&h);
        defs.push('\n');
    }
    let xs: Vec<String> = (1..=arity).map(|i| format!("x{i}")).collect();
    let mut sc = Scope::default();
    for x in &xs {
        sc = sc.with(x, Ty::Real);
    }
    let depth = opts.depth;
    if g.rng.chance(0.25) {
        // A list parameter, destructured in the body and also used whole.
        let sc = sc.with("xs", Ty::List(arity));
        let body = g.real(depth, &sc);
        let _ = write!(
            defs,
            "(define (f xs)\n  (let (((list {}) xs))\n    {body}))",
            xs.join(" ")
        );
    } else {
        let body = g.real(depth, &sc);
        let _ = write!(defs, "(define (f (list {}))\n  {body})", xs.join(" "));
    }
    RealFunction {
        arity,
        name: "f".to_string(),
        definitions: defs,
    }
}

/// Writes a real so that VLAD reads back exactly the same `f64`
/// (Rust's shortest round-trip formatting, which VLAD's reader accepts).
pub fn real_literal(x: f64) -> String {
    assert!(x.is_finite(), "real_literal of a non-finite value");
    format!("{x:?}")
}

/// `(list x1 ... xn)` for a point, as VLAD source.
pub fn point_literal(x: &[f64]) -> String {
    let items: Vec<String> = x.iter().map(|v| real_literal(*v)).collect();
    format!("(list {})", items.join(" "))
}

/// A random point with coordinates in `[-2, 2]`.
pub fn gen_point(rng: &mut Rng, n: usize) -> Vec<f64> {
    (0..n).map(|_| rng.range(-2.0, 2.0)).collect()
}

/// A whole program: the (plain) prelude, a generated `f`, and top-level
/// expressions printing `f` at a few points, its gradients in both modes,
/// and a few other generated values (lists, pairs, procedures applied).
/// It parses, and runs to completion without error.
pub fn gen_program(rng: &mut Rng) -> String {
    let arity = 1 + rng.below(3);
    let opts = Options {
        depth: 3 + rng.below(2) as u32,
        ..Options::default()
    };
    let f = gen_function(rng, arity, &opts);
    let mut body = String::new();
    for _ in 0..2 {
        let p = point_literal(&gen_point(rng, arity));
        let _ = writeln!(body, "(f {p})");
    }
    let p = point_literal(&gen_point(rng, arity));
    let _ = writeln!(body, "((gradient-F f) {p})");
    let _ = writeln!(body, "((gradient-R f) {p})");
    // A few closed expressions of other types, over fresh top-level values.
    let mut g = Gen::new(rng, opts);
    let mut sc = Scope::default();
    for i in 0..2 {
        let v = format!("top{i}");
        let e = g.real(2, &sc);
        let _ = writeln!(body, "(define {v} {e})");
        sc = sc.with(&v, Ty::Real);
    }
    let k = 1 + g.rng.below(3);
    let l = g.list(k, 3, &sc);
    let _ = writeln!(body, "{l}");
    let p = g.pair(2, &sc);
    let _ = writeln!(body, "{p}");
    let fun = g.func(2, &sc);
    let _ = writeln!(body, "(procedure? {fun})");
    let e = g.real(3, &sc);
    let _ = writeln!(body, "(write-real {e})");
    f.program(false, &body)
}

/// Where a program from [`gen_io_program`] gets its inputs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Inputs {
    /// `(read-real)`, one per input; the numerals are in
    /// [`IoProgram::stdin`].
    Stdin,
    /// Literals wrapped in `(real ...)`, which a compiler's constant
    /// folding must treat as unknown.
    RealLiterals,
}

/// A whole program that computes on inputs a compiler cannot see.
#[derive(Clone, Debug)]
pub struct IoProgram {
    /// The program text.
    pub text: String,
    /// Its standard input (empty for [`Inputs::RealLiterals`]).
    pub stdin: String,
    /// The arity of its `f`.
    pub arity: usize,
}

/// A whole program for comparing a compiler with the interpreter: the
/// (plain) prelude and a generated `f : R^n -> R` (with `opts`), then
/// top-level forms that bind the inputs `in1 ... inn` (read with
/// `read-real`, or written as `(real LITERAL)`: see [`Inputs`]) and
/// `pt = (list in1 ... inn)`, and print, from them:
///
/// - `f` at `pt` and at a second point computed from the inputs;
/// - the gradient of `f` at `pt` by `gradient-F` and by `gradient-R`;
/// - with `derivatives`, `derivative-F`/`derivative-R` of a generated
///   procedure at `in1`;
/// - non-AD values over the inputs: a list, a pair, a nested pair of a
///   pair and a list, a list of booleans (comparisons, `null?`, `pair?`,
///   `procedure?`), and a `write-real`.
///
/// It parses, and runs to completion without error when given
/// [`IoProgram::stdin`].
pub fn gen_io_program(
    rng: &mut Rng,
    inputs: Inputs,
    opts: &Options,
    derivatives: bool,
) -> IoProgram {
    let arity = 1 + rng.below(3);
    let f = gen_function(rng, arity, opts);
    let x = gen_point(rng, arity);
    let mut body = String::new();
    let mut stdin = String::new();
    let mut sc = Scope::default();
    let mut names = Vec::new();
    for (i, xi) in x.iter().enumerate() {
        let v = format!("in{}", i + 1);
        match inputs {
            Inputs::Stdin => {
                let _ = writeln!(body, "(define {v} (read-real))");
                let sep = if rng.chance(0.3) { "\n" } else { " " };
                let _ = write!(stdin, "{}{sep}", real_literal(*xi));
            }
            Inputs::RealLiterals => {
                let _ = writeln!(body, "(define {v} (real {}))", real_literal(*xi));
            }
        }
        sc = sc.with(&v, Ty::Real);
        names.push(v);
    }
    let _ = writeln!(body, "(define pt (list {}))", names.join(" "));
    let sc = sc.with("pt", Ty::List(arity));
    let _ = writeln!(body, "(f pt)");
    let _ = writeln!(body, "((gradient-F f) pt)");
    let _ = writeln!(body, "((gradient-R f) pt)");
    let mut g = Gen::new(
        rng,
        Options {
            nested_ad: false,
            ..opts.clone()
        },
    );
    // A second point, computed from the inputs.
    let q: Vec<String> = (0..arity).map(|_| g.real(1, &sc)).collect();
    let _ = writeln!(body, "(f (list {}))", q.join(" "));
    let mut sc = sc;
    for i in 0..2 {
        let v = format!("top{i}");
        let e = g.real(2, &sc);
        let _ = writeln!(body, "(define {v} {e})");
        sc = sc.with(&v, Ty::Real);
    }
    if derivatives {
        let op = *g.rng.pick(&["derivative-F", "derivative-R"]);
        let fun = g.func(2, &sc);
        let _ = writeln!(body, "(({op} {fun}) in1)");
    }
    let k = 1 + g.rng.below(3);
    let l = g.list(k, 2, &sc);
    let _ = writeln!(body, "{l}");
    let p = g.pair(2, &sc);
    let _ = writeln!(body, "{p}");
    let p = g.pair(1, &sc);
    let k = 1 + g.rng.below(2);
    let l = g.list(k, 1, &sc);
    let _ = writeln!(body, "(cons {p} (cons (list) {l}))");
    let c = g.condition(1, &sc);
    let fun = g.func(1, &sc);
    let e = g.real(1, &sc);
    let _ = writeln!(
        body,
        "(list {c} (null? pt) (pair? pt) (procedure? {fun}) (real? {e}))"
    );
    let e = g.real(2, &sc);
    let _ = writeln!(body, "(write-real {e})");
    IoProgram {
        text: f.program(false, &body),
        stdin,
        arity,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::Path;

    /// Parses, expands and runs `text` with the reference interpreter,
    /// returning standard output or the rendered error.
    fn run(text: &str) -> Result<String, String> {
        run_with_input(text, "")
    }

    /// [`run`] with `stdin` as standard input.
    fn run_with_input(text: &str, stdin: &str) -> Result<String, String> {
        let text = text.to_string();
        let stdin = stdin.to_string();
        std::thread::Builder::new()
            .stack_size(256 << 20)
            .spawn(move || {
                let mut map = syntax::SourceMap::new();
                let opts = syntax::expand::Options::default();
                let ast = syntax::expand::load_source(&mut map, Path::new("gen.vlad"), text, &opts)
                    .map_err(|d| d.render(&map))?;
                let prog = ir::anf::lower_program(&ast).map_err(|d| d.render(&map))?;
                let mut input: &[u8] = stdin.as_bytes();
                let mut out = Vec::new();
                let mut it = interp::Interp::new(prog, &mut input, &mut out);
                let r = it.run_main(interp::Mode::Run, &map);
                drop(it);
                r.map_err(|d| d.render(&map))?;
                Ok(String::from_utf8_lossy(&out).into_owned())
            })
            .unwrap()
            .join()
            .unwrap()
    }

    #[test]
    fn rng_is_deterministic() {
        let mut a = Rng::new(7);
        let mut b = Rng::new(7);
        for _ in 0..100 {
            assert_eq!(a.next_u64(), b.next_u64());
        }
        let u = Rng::new(1).unit();
        assert!((0.0..1.0).contains(&u));
    }

    #[test]
    fn generation_is_deterministic() {
        assert_eq!(
            gen_program(&mut Rng::new(42)),
            gen_program(&mut Rng::new(42))
        );
        let o = Options::default();
        let a = gen_function(&mut Rng::new(3), 2, &o).definitions;
        let b = gen_function(&mut Rng::new(3), 2, &o).definitions;
        assert_eq!(a, b);
    }

    #[test]
    fn real_literals_round_trip() {
        for x in [0.1, -2.5e-9, 1e21, 3.0, -0.0, 1.0 / 3.0] {
            let out = run(&format!("{}\n", real_literal(x))).unwrap();
            assert_eq!(out.trim().parse::<f64>().unwrap(), x, "{x}");
        }
    }

    #[test]
    fn generated_programs_parse_and_run() {
        for seed in 0..60 {
            let text = gen_program(&mut Rng::new(seed));
            if let Err(e) = run(&text) {
                panic!("seed {seed}: generated program failed:\n{e}\n--- program ---\n{text}");
            }
        }
    }

    #[test]
    fn io_programs_run_and_hide_their_inputs() {
        for seed in 0..40 {
            let inputs = if seed % 2 == 0 {
                Inputs::Stdin
            } else {
                Inputs::RealLiterals
            };
            let p = gen_io_program(&mut Rng::new(seed), inputs, &Options::default(), true);
            assert_eq!(p.stdin.is_empty(), inputs == Inputs::RealLiterals);
            let out = run_with_input(&p.text, &p.stdin).unwrap_or_else(|e| {
                panic!(
                    "seed {seed}: {e}\n--- program ---\n{}\n--- stdin ---\n{}",
                    p.text, p.stdin
                )
            });
            assert!(out.lines().count() >= 10, "seed {seed}: {out}");
        }
    }

    #[test]
    fn generated_functions_return_finite_reals() {
        let mut rng = Rng::new(99);
        for case in 0..60 {
            let n = 1 + case % 3;
            let f = gen_function(&mut rng, n, &Options::default());
            let p = point_literal(&gen_point(&mut rng, n));
            let text = f.program(false, &format!("(f {p})\n"));
            let out = run(&text).unwrap_or_else(|e| panic!("case {case}: {e}\n{text}"));
            let v: f64 = out.trim().parse().unwrap_or(f64::NAN);
            assert!(v.is_finite(), "case {case}: f = {out}\n{text}");
        }
    }

    #[test]
    fn instrumented_prelude_prints_signatures() {
        let f = RealFunction {
            arity: 1,
            name: "f".into(),
            definitions: "(define (f (list x1)) (if (vg-lt x1 1) x1 (* 2 x1)))".into(),
        };
        let out = run(&f.program(true, "(f (list 0.5))\n")).unwrap();
        assert_eq!(out, "(-0.5 . #t)\n0.5\n");
    }
}
