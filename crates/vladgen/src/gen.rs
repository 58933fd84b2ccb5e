//! The expression generator: well-typed random VLAD expressions over
//! reals, booleans, pairs and procedures, in scopes of typed variables.

use super::*;

/// The static type of a generated expression.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Ty {
    Real,
    /// A list of reals of the given length.
    List(usize),
    /// A pair of reals.
    Pair,
    /// A procedure from reals to reals.
    Fn,
    /// A vector of reals of the given length (`Options::vectors`).
    Vector(usize),
}

/// Variables in scope, with their types.
#[derive(Clone, Debug, Default)]
pub(crate) struct Scope {
    pub(crate) vars: Vec<(String, Ty)>,
}

impl Scope {
    pub(crate) fn with(&self, name: &str, ty: Ty) -> Scope {
        let mut s = self.clone();
        s.vars.push((name.to_string(), ty));
        s
    }

    pub(crate) fn of(&self, ty: Ty) -> Vec<&str> {
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
pub(crate) struct Helper {
    pub(crate) name: String,
    pub(crate) arity: usize,
    pub(crate) curried: bool,
}

pub(crate) struct Gen<'r> {
    pub(crate) rng: &'r mut Rng,
    pub(crate) opts: Options,
    pub(crate) fresh: usize,
    pub(crate) helpers: Vec<Helper>,
    /// Nesting level of derivatives inside the body (kept at most 1 so that
    /// generated functions stay cheap to differentiate twice more).
    pub(crate) ad_level: u32,
}

/// Real kinds of expression, chosen by weight.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Kind {
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
    Staged,
    Stream,
    ChosenProcedure,
    ChosenDerivative,
    Vector,
}

impl<'r> Gen<'r> {
    pub(crate) fn new(rng: &'r mut Rng, opts: Options) -> Gen<'r> {
        Gen {
            rng,
            opts,
            fresh: 0,
            helpers: Vec::new(),
            ad_level: 0,
        }
    }

    pub(crate) fn fresh(&mut self, base: &str) -> String {
        self.fresh += 1;
        format!("{base}{}", self.fresh)
    }

    /// A constant, written in one of VLAD's numeral syntaxes.
    pub(crate) fn constant(&mut self) -> String {
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

    pub(crate) fn leaf(&mut self, sc: &Scope) -> String {
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

    pub(crate) fn kind(&mut self) -> Kind {
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
        if self.opts.runtime_shapes && self.opts.branches {
            table.push((1, Kind::Staged));
            table.push((1, Kind::Stream));
            table.push((1, Kind::ChosenProcedure));
            if self.opts.nested_ad && self.ad_level == 0 {
                table.push((1, Kind::ChosenDerivative));
            }
        }
        if self.opts.vectors {
            table.push((8, Kind::Vector));
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
    pub(crate) fn real(&mut self, d: u32, sc: &Scope) -> String {
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
            Kind::Staged => self.staged(d1, sc),
            Kind::Stream => self.stream(d1, sc),
            Kind::ChosenProcedure => self.chosen_procedure(d1, sc),
            Kind::ChosenDerivative => self.chosen_derivative(d1, sc),
            Kind::Vector => self.vector_real(d1, sc),
        }
    }

    pub(crate) fn unary(&mut self, d: u32, sc: &Scope) -> String {
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

    pub(crate) fn condition(&mut self, d: u32, sc: &Scope) -> String {
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

    pub(crate) fn let_form(&mut self, d: u32, sc: &Scope) -> String {
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
    pub(crate) fn destructure(&mut self, d: u32, sc: &Scope) -> String {
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
    pub(crate) fn func(&mut self, d: u32, sc: &Scope) -> String {
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
    pub(crate) fn bounded_func(&mut self, d: u32, sc: &Scope) -> String {
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
    pub(crate) fn pair(&mut self, d: u32, sc: &Scope) -> String {
        let ps = sc.of(Ty::Pair);
        if !ps.is_empty() && self.rng.chance(0.5) {
            return self.rng.pick(&ps).to_string();
        }
        let a = self.real(d.saturating_sub(1), sc);
        let b = self.real(d.saturating_sub(1), sc);
        format!("(cons {a} {b})")
    }

    /// A list of `k` reals.
    pub(crate) fn list(&mut self, k: usize, d: u32, sc: &Scope) -> String {
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
    pub(crate) fn list_op(&mut self, d: u32, sc: &Scope) -> String {
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
    pub(crate) fn named_loop(&mut self, d: u32, sc: &Scope) -> String {
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
    pub(crate) fn recursion(&mut self, d: u32, sc: &Scope) -> String {
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
    pub(crate) fn nested_ad(&mut self, d: u32, sc: &Scope) -> String {
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

    pub(crate) fn helper(&mut self, index: usize) -> String {
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
