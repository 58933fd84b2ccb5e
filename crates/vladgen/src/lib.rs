//! `vladgen`: a seeded generator of random, well-formed VLAD programs.
//!
//! Used by the property tests of `stalingrad` (see
//! `crates/stalingrad/tests/properties/`). Everything is plain `std` (but
//! for the table of messages in `ir`, which the programs that must fail
//! print): the pseudo-random numbers come from [`Rng`], a SplitMix64
//! generator, so a seed reproduces a program exactly on every platform.
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
//!   that differentiating `f` exercises nested AD;
//! - values of run-time shape: closures returned by recursion on a count
//!   chosen by a run-time comparison (a closure compiler), streams of
//!   thunks indexed by such a count, primitives and closures chosen at run
//!   time (from a conditional or a list), and derivative operators chosen
//!   at run time and applied to closures.
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
//! [`unbounded_program`] produces a program whose AD nesting depth is read
//! at run time, which `build` must refuse.
//! [`long_literal_program`] and [`chain_program`] produce programs long in
//! one dimension only: a list literal of n elements used as data, and n
//! procedures each calling the one before, differentiated at the end.
//!
//! # Vectors
//!
//! With [`Options::vectors`] (off by default, so that the programs of
//! every seed without it stay as they were), expressions also use vectors
//! (`vectors.rs`): `#(...)` literals, `vector`, `make-vector`,
//! `build-vector`, `vector-length`, `vector-ref`, `vector-map` of 1 to 3
//! vectors, `vector-fold` of 1 or 2, `vector-append`, `vector-copy` with 1
//! to 3 arguments, `vector->list`, `list->vector`, `vector?` and `equal?`,
//! vectors of vectors, closures capturing vectors, and, with
//! `nested_ad`, gradients of procedures of vectors and derivatives of
//! procedures building vectors; and [`gen_function`] makes `f` a
//! procedure of a vector of n reals ([`RealFunction::vector`]).
//! [`vector_error_program`] writes programs that must fail with a given
//! message (bad indices, lengths and ranges).

use std::fmt::Write as _;

mod errors;
mod gen;
mod long;
mod shapes;
mod unbounded;
mod vectors;

pub use errors::{vector_error_program, ErrorProgram};
pub use long::{chain_program, long_literal_program};
pub use unbounded::unbounded_program;

use gen::*;

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
    /// Emit values of run-time shape (`shapes.rs`): closures returned by
    /// recursion on a run-time count, streams of thunks, primitives and
    /// closures chosen at run time, derivative operators as values.
    pub runtime_shapes: bool,
    /// Emit vectors (`vectors.rs`), and make `f` a procedure of a vector.
    pub vectors: bool,
}

impl Default for Options {
    fn default() -> Options {
        Options {
            depth: 4,
            branches: true,
            loops: true,
            nested_ad: true,
            helpers: 2,
            runtime_shapes: true,
            vectors: false,
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
    /// Whether `f` takes a vector of n reals rather than a list.
    pub vector: bool,
    /// Helper definitions followed by the definition of `f`; refers to the
    /// names defined by [`prelude`].
    pub definitions: String,
}

impl RealFunction {
    /// A point `f` takes, as VLAD source: `(list x1 ... xn)`, or
    /// `#(x1 ... xn)` for a procedure of a vector.
    pub fn point(&self, x: &[f64]) -> String {
        if self.vector {
            let items: Vec<String> = x.iter().map(|v| real_literal(*v)).collect();
            format!("#({})", items.join(" "))
        } else {
            point_literal(x)
        }
    }

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
    if opts.vectors {
        // A vector parameter, read element by element and also used whole.
        let sc = sc.with("v", Ty::Vector(arity));
        let body = g.real(depth, &sc);
        let binds: Vec<String> = xs
            .iter()
            .enumerate()
            .map(|(i, x)| format!("({x} (vector-ref v {i}))"))
            .collect();
        let _ = write!(
            defs,
            "(define (f v)\n  (let ({})\n    {body}))",
            binds.join(" ")
        );
    } else if g.rng.chance(0.25) {
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
        vector: opts.vectors,
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
    let (pt, pt_ty) = if opts.vectors {
        ("vector", Ty::Vector(arity))
    } else {
        ("list", Ty::List(arity))
    };
    let _ = writeln!(body, "(define pt ({pt} {}))", names.join(" "));
    let sc = sc.with("pt", pt_ty);
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
    let _ = writeln!(body, "(f ({pt} {}))", q.join(" "));
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
    if opts.vectors {
        g.vector_outputs(&sc, &mut body);
    }
    IoProgram {
        text: f.program(false, &body),
        stdin,
        arity,
    }
}

#[cfg(test)]
mod tests;
