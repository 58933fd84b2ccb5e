//! The GradBench modules `stalingrad gradbench` offers: for each, its
//! VLAD source, its functions, and how an eval's JSON input becomes the
//! export's argument reals and the result reals become the JSON output
//! the eval's validator compares with GradBench's `manual` tool.
//!
//! Reals cross the library boundary flattened (`docs/library.md`): a
//! number is one real, a list of fixed length its reals, a vector its
//! length and then its elements, each flattened the same way. The
//! export's argument shapes are written from the same description as
//! the input's reading, so the two cannot disagree.

use super::{ba, ht};
use crate::json::Json;

/// One argument of a module's functions, read from the eval's input.
#[derive(Clone, Copy, Debug)]
pub enum Arg {
    /// A JSON number: `real`.
    Number,
    /// A JSON list of exactly this many numbers: `(real ...)`.
    Reals(usize),
    /// A JSON list of numbers: `(vector real)`.
    Vector,
    /// A JSON list of lists of numbers: `(vector (vector real))`.
    Matrix,
}

/// The JSON shape of a function's output, read from its result reals in
/// order.
#[derive(Clone, Copy, Debug)]
pub enum Out {
    Number,
    /// A list of fixed length.
    Reals(usize),
    Vector,
    /// A vector of vectors, as a list of lists.
    Matrix,
    /// A vector of lists of the shape given, as one list of their
    /// elements (GradBench's flattened arrays).
    Concat(&'static Out),
    /// An object whose fields are read in the order given.
    Object(&'static [(&'static str, Out)]),
    /// Made by a function of the eval's input and all the result reals,
    /// where the eval's output is not the result as it is (ba's).
    Custom(fn(&Json, &[f64]) -> Result<Json, String>),
}

/// Rewrites an eval's input into the fields of a module's arguments.
pub type Expand = fn(&Json) -> Result<Json, String>;

pub struct Function {
    pub name: &'static str,
    pub output: Out,
}

/// A GradBench module implemented in VLAD.
pub struct Module {
    pub name: &'static str,
    /// The module's file in `FILES`.
    pub main: &'static str,
    /// The arguments of every function: the input's field (`""`: the whole
    /// input) and its shape.
    pub args: &'static [(&'static str, Arg)],
    /// Where the eval's input is not those fields as they are: the input
    /// with them (ba's duplicated data expanded, as the eval's C++ does).
    pub expand: Option<Expand>,
    pub functions: &'static [Function],
}

/// The sources the modules need, written to the session's directory so
/// that their includes find each other.
pub const FILES: &[(&str, &str)] = &[
    (
        "hello-module.vlad",
        include_str!("../../../../gradbench/modules/hello-module.vlad"),
    ),
    (
        "particle-module.vlad",
        include_str!("../../../../gradbench/modules/particle-module.vlad"),
    ),
    (
        "saddle-module.vlad",
        include_str!("../../../../gradbench/modules/saddle-module.vlad"),
    ),
    (
        "lse-module.vlad",
        include_str!("../../../../gradbench/modules/lse-module.vlad"),
    ),
    (
        "llsq-module.vlad",
        include_str!("../../../../gradbench/modules/llsq-module.vlad"),
    ),
    (
        "det-module.vlad",
        include_str!("../../../../gradbench/modules/det-module.vlad"),
    ),
    (
        "kmeans-module.vlad",
        include_str!("../../../../gradbench/modules/kmeans-module.vlad"),
    ),
    (
        "ode-module.vlad",
        include_str!("../../../../gradbench/modules/ode-module.vlad"),
    ),
    (
        "gmm-module.vlad",
        include_str!("../../../../gradbench/modules/gmm-module.vlad"),
    ),
    (
        "lstm-module.vlad",
        include_str!("../../../../gradbench/modules/lstm-module.vlad"),
    ),
    (
        "ba-module.vlad",
        include_str!("../../../../gradbench/modules/ba-module.vlad"),
    ),
    (
        "ht-module.vlad",
        include_str!("../../../../gradbench/modules/ht-module.vlad"),
    ),
    (
        "common.vlad",
        include_str!("../../../../benches/programs/common.vlad"),
    ),
    (
        "particle.vlad",
        include_str!("../../../../benches/programs/particle.vlad"),
    ),
    (
        "saddle.vlad",
        include_str!("../../../../benches/programs/saddle.vlad"),
    ),
];

const fn f(name: &'static str, output: Out) -> Function {
    Function { name, output }
}

pub const MODULES: &[Module] = &[
    Module {
        name: "hello",
        main: "hello-module.vlad",
        args: &[("", Arg::Number)],
        expand: None,
        functions: &[f("square", Out::Number), f("double", Out::Number)],
    },
    Module {
        name: "particle",
        main: "particle-module.vlad",
        args: &[("w", Arg::Number)],
        expand: None,
        functions: &[
            f("ff", Out::Number),
            f("fr", Out::Number),
            f("rf", Out::Number),
            f("rr", Out::Number),
        ],
    },
    Module {
        name: "saddle",
        main: "saddle-module.vlad",
        args: &[("start", Arg::Reals(2))],
        expand: None,
        functions: &[
            f("ff", Out::Reals(4)),
            f("fr", Out::Reals(4)),
            f("rf", Out::Reals(4)),
            f("rr", Out::Reals(4)),
        ],
    },
    Module {
        name: "lse",
        main: "lse-module.vlad",
        args: &[("x", Arg::Vector)],
        expand: None,
        functions: &[f("primal", Out::Number), f("gradient", Out::Vector)],
    },
    Module {
        name: "llsq",
        main: "llsq-module.vlad",
        args: &[("x", Arg::Vector), ("n", Arg::Number)],
        expand: None,
        functions: &[f("primal", Out::Number), f("gradient", Out::Vector)],
    },
    Module {
        name: "det",
        main: "det-module.vlad",
        args: &[("A", Arg::Vector), ("ell", Arg::Number)],
        expand: None,
        functions: &[f("primal", Out::Number), f("gradient", Out::Vector)],
    },
    Module {
        name: "kmeans",
        main: "kmeans-module.vlad",
        args: &[("points", Arg::Matrix), ("centroids", Arg::Matrix)],
        expand: None,
        functions: &[f("cost", Out::Number), f("dir", Out::Matrix)],
    },
    Module {
        name: "ode",
        main: "ode-module.vlad",
        args: &[("x", Arg::Vector), ("s", Arg::Number)],
        expand: None,
        functions: &[f("primal", Out::Vector), f("gradient", Out::Vector)],
    },
    Module {
        name: "gmm",
        main: "gmm-module.vlad",
        args: &[
            ("alpha", Arg::Vector),
            ("mu", Arg::Matrix),
            ("q", Arg::Matrix),
            ("l", Arg::Matrix),
            ("x", Arg::Matrix),
            ("m", Arg::Number),
            ("gamma", Arg::Number),
        ],
        expand: None,
        functions: &[
            f("objective", Out::Number),
            // The gradient as the list (alpha mu q l).
            f(
                "jacobian",
                Out::Object(&[
                    ("alpha", Out::Vector),
                    ("mu", Out::Matrix),
                    ("q", Out::Matrix),
                    ("l", Out::Matrix),
                ]),
            ),
        ],
    },
    Module {
        name: "lstm",
        main: "lstm-module.vlad",
        args: &[
            ("main_params", Arg::Matrix),
            ("extra_params", Arg::Matrix),
            ("state", Arg::Matrix),
            ("sequence", Arg::Matrix),
        ],
        expand: None,
        functions: &[f("objective", Out::Number), f("jacobian", Out::Vector)],
    },
    Module {
        name: "ba",
        main: "ba-module.vlad",
        args: &[
            ("cams", Arg::Matrix),
            ("xs", Arg::Matrix),
            ("ws", Arg::Vector),
            ("obs", Arg::Matrix),
            ("feats", Arg::Matrix),
        ],
        expand: Some(ba::expand),
        functions: &[
            f("objective", Out::Custom(ba::objective_output)),
            f("jacobian", Out::Custom(ba::jacobian_output)),
        ],
    },
    Module {
        name: "ht",
        main: "ht-module.vlad",
        args: &[
            ("theta", Arg::Vector),
            ("us", Arg::Matrix),
            ("correspondences", Arg::Vector),
            ("points", Arg::Matrix),
            ("parents", Arg::Vector),
            ("is_mirrored", Arg::Number),
            ("base_positions", Arg::Matrix),
            ("weights", Arg::Matrix),
            ("triangles", Arg::Matrix),
            ("base_relatives", Arg::Matrix),
            ("inverse_base_absolutes", Arg::Matrix),
        ],
        expand: Some(ht::expand),
        functions: &[
            // Each point's 3 errors, and its 3 rows of the Jacobian.
            f("objective", Out::Concat(&Out::Vector)),
            f("jacobian", Out::Concat(&Out::Matrix)),
        ],
    },
];

impl Module {
    /// Its exports are over vectors (`docs/library.md`): arguments of
    /// run-time length, and results written with their lengths.
    pub fn vectors(&self) -> bool {
        self.args
            .iter()
            .any(|(_, a)| matches!(a, Arg::Vector | Arg::Matrix))
    }

    /// The `--export` of each function: its name and argument shapes.
    pub fn exports(&self) -> Vec<String> {
        let shapes: String = self
            .args
            .iter()
            .map(|(_, a)| match a {
                Arg::Number => " real".to_string(),
                Arg::Reals(n) => format!(" ({})", vec!["real"; *n].join(" ")),
                Arg::Vector => " (vector real)".to_string(),
                Arg::Matrix => " (vector (vector real))".to_string(),
            })
            .collect();
        self.functions
            .iter()
            .map(|f| format!("{}{shapes}", f.name))
            .collect()
    }

    /// The eval's input as the export's argument reals.
    pub fn input(&self, input: &Json) -> Result<Vec<f64>, String> {
        let expanded;
        let input = match self.expand {
            Some(expand) => {
                expanded = expand(input)?;
                &expanded
            }
            None => input,
        };
        let mut out = Vec::new();
        for (field, arg) in self.args {
            let value = if field.is_empty() {
                Some(input)
            } else {
                input.get(field)
            };
            let what = if field.is_empty() {
                "the input".to_string()
            } else {
                format!("`{field}`")
            };
            let value =
                value.ok_or_else(|| format!("the input must have {what}, {}", arg.describe()))?;
            arg.flatten(value, &mut out)
                .map_err(|()| format!("{what} must be {}", arg.describe()))?;
        }
        Ok(out)
    }
}

impl Arg {
    fn describe(self) -> String {
        match self {
            Arg::Number => "a number".into(),
            Arg::Reals(n) => format!("a list of {n} numbers"),
            Arg::Vector => "a list of numbers".into(),
            Arg::Matrix => "a list of lists of numbers".into(),
        }
    }

    fn flatten(self, v: &Json, out: &mut Vec<f64>) -> Result<(), ()> {
        let numbers = |items: &[Json], out: &mut Vec<f64>| {
            for x in items {
                out.push(x.as_f64().ok_or(())?);
            }
            Ok(())
        };
        match (self, v) {
            (Arg::Number, Json::Num(x)) => {
                out.push(*x);
                Ok(())
            }
            (Arg::Reals(n), Json::Arr(items)) if items.len() == n => numbers(items, out),
            (Arg::Vector, Json::Arr(items)) => {
                out.push(items.len() as f64);
                numbers(items, out)
            }
            (Arg::Matrix, Json::Arr(rows)) => {
                out.push(rows.len() as f64);
                for row in rows {
                    Arg::Vector.flatten(row, out)?;
                }
                Ok(())
            }
            _ => Err(()),
        }
    }
}

impl Out {
    /// The output of the eval's `input` read from all of `reals`.
    pub fn read(self, input: &Json, reals: &[f64]) -> Result<Json, String> {
        if let Out::Custom(f) = self {
            return f(input, reals);
        }
        let mut rest = reals;
        let v = self.take(&mut rest);
        match v {
            Some(v) if rest.is_empty() => Ok(v),
            _ => Err(format!(
                "internal error: {} result reals do not make the output {self:?}",
                reals.len()
            )),
        }
    }

    /// The next value of this shape in `rest`, which it advances.
    pub fn take(self, rest: &mut &[f64]) -> Option<Json> {
        let reals = |n: usize, rest: &mut &[f64]| {
            if rest.len() < n {
                return None;
            }
            let (head, tail) = rest.split_at(n);
            *rest = tail;
            Some(Json::Arr(head.iter().map(|x| Json::Num(*x)).collect()))
        };
        let length = |rest: &mut &[f64]| {
            let (n, tail) = rest.split_first()?;
            *rest = tail;
            (n.fract() == 0.0 && *n >= 0.0).then_some(*n as usize)
        };
        match self {
            Out::Number => {
                let (x, tail) = rest.split_first()?;
                *rest = tail;
                Some(Json::Num(*x))
            }
            Out::Reals(n) => reals(n, rest),
            Out::Vector => {
                let n = length(rest)?;
                reals(n, rest)
            }
            Out::Matrix => {
                let n = length(rest)?;
                (0..n)
                    .map(|_| Out::Vector.take(rest))
                    .collect::<Option<Vec<_>>>()
                    .map(Json::Arr)
            }
            Out::Concat(inner) => {
                let n = length(rest)?;
                let mut out = Vec::new();
                for _ in 0..n {
                    match inner.take(rest)? {
                        Json::Arr(items) => out.extend(items),
                        _ => return None,
                    }
                }
                Some(Json::Arr(out))
            }
            Out::Object(fields) => fields
                .iter()
                .map(|(k, o)| Some((k.to_string(), o.take(rest)?)))
                .collect::<Option<Vec<_>>>()
                .map(Json::Obj),
            // Not nested in another shape.
            Out::Custom(_) => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::json::parse;

    fn module(name: &str) -> &'static Module {
        MODULES.iter().find(|m| m.name == name).unwrap()
    }

    #[test]
    fn every_module_file_is_embedded() {
        for m in MODULES {
            assert!(FILES.iter().any(|(n, _)| *n == m.main));
        }
    }

    #[test]
    fn exports() {
        assert_eq!(module("saddle").exports()[0], "ff (real real)");
        assert!(!module("saddle").vectors());
        assert_eq!(
            module("kmeans").exports()[1],
            "dir (vector (vector real)) (vector (vector real))"
        );
        assert!(module("kmeans").vectors());
    }

    #[test]
    fn inputs() {
        let j = parse(r#"{"start":[1,2],"min_runs":3}"#).unwrap();
        assert_eq!(module("saddle").input(&j).unwrap(), vec![1.0, 2.0]);
        assert!(module("particle").input(&j).is_err());
        let j = parse(r#"{"w":0.5}"#).unwrap();
        assert_eq!(module("particle").input(&j).unwrap(), vec![0.5]);
        assert!(module("hello").input(&j).is_err());
        let j = parse(r#"{"x":[1,2.5],"n":7}"#).unwrap();
        assert_eq!(module("lse").input(&j).unwrap(), vec![2.0, 1.0, 2.5]);
        assert_eq!(module("llsq").input(&j).unwrap(), vec![2.0, 1.0, 2.5, 7.0]);
        assert!(module("lse")
            .input(&parse(r#"{"x":[true]}"#).unwrap())
            .is_err());
        let j = parse(r#"{"points":[[1,2],[3,4]],"centroids":[[5]]}"#).unwrap();
        assert_eq!(
            module("kmeans").input(&j).unwrap(),
            vec![2.0, 2.0, 1.0, 2.0, 2.0, 3.0, 4.0, 1.0, 1.0, 5.0]
        );
        let e = module("kmeans")
            .input(&parse(r#"{"points":[1,2],"centroids":[[5]]}"#).unwrap())
            .unwrap_err();
        assert!(e.contains("`points`"), "{e}");
    }

    #[test]
    fn outputs() {
        let line = |o: Out, r: &[f64]| o.read(&Json::Null, r).unwrap().to_line();
        assert_eq!(line(Out::Vector, &[2.0, 0.25, 0.75]), "[0.25,0.75]");
        assert_eq!(line(Out::Number, &[1.5]), "1.5");
        assert_eq!(
            line(Out::Matrix, &[2.0, 1.0, 0.5, 2.0, 1.0, 2.0]),
            "[[0.5],[1,2]]"
        );
        assert_eq!(
            line(
                Out::Object(&[("a", Out::Number), ("b", Out::Reals(2))]),
                &[1.0, 2.0, 3.0]
            ),
            r#"{"a":1,"b":[2,3]}"#
        );
        assert_eq!(
            line(
                Out::Concat(&Out::Matrix),
                &[2.0, 1.0, 1.0, 5.0, 2.0, 1.0, 6.0, 1.0, 7.0]
            ),
            "[[5],[6],[7]]"
        );
        assert!(Out::Vector.read(&Json::Null, &[3.0, 1.0]).is_err());
        assert!(Out::Vector.read(&Json::Null, &[1.0, 1.0, 2.0]).is_err());
        assert!(Out::Matrix.read(&Json::Null, &[0.5]).is_err());
    }
}
