//! The primitives of docs/reference.md, by name.

use std::fmt;

macro_rules! prims {
    ($($(#[$doc:meta])* $v:ident = $s:expr, $kind:ident;)*) => {
        /// A primitive procedure. Every primitive takes one argument (a pair
        /// for binary ones, `()` for `read-real`).
        #[derive(Clone, Copy, PartialEq, Eq, Hash, Debug, PartialOrd, Ord)]
        pub enum Prim { $($(#[$doc])* $v),* }

        impl Prim {
            pub const ALL: &'static [Prim] = &[$(Prim::$v),*];
            pub fn name(self) -> &'static str {
                match self { $(Prim::$v => $s),* }
            }
            pub fn kind(self) -> PrimKind {
                match self { $(Prim::$v => PrimKind::$kind),* }
            }
        }
    };
}

/// How a primitive treats its argument; decides its AD rules.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum PrimKind {
    /// Real-valued arithmetic on two reals.
    Binary,
    /// Real-valued arithmetic on one real.
    Unary,
    /// Comparison of two reals: boolean result, zero derivative.
    Compare,
    /// Predicate on one value: boolean result, zero derivative.
    Predicate,
    /// Control, input and output.
    Control,
    /// An AD operation of section 6.
    Ad,
    /// A real computed from the shape of its argument (a vector's length,
    /// or a length it checks): no derivative.
    Shape,
    /// An operation on vectors whose AD rules are written by hand in the
    /// AD prelude.
    Vector,
}

prims! {
    Add = "+", Binary;
    Sub = "-", Binary;
    Mul = "*", Binary;
    Div = "/", Binary;
    Atan = "atan", Binary;
    Sqrt = "sqrt", Unary;
    Exp = "exp", Unary;
    Log = "log", Unary;
    Sin = "sin", Unary;
    Cos = "cos", Unary;
    Eq = "=", Compare;
    Lt = "<", Compare;
    Gt = ">", Compare;
    Le = "<=", Compare;
    Ge = ">=", Compare;
    IsZero = "zero?", Predicate;
    IsPositive = "positive?", Predicate;
    IsNegative = "negative?", Predicate;
    IsNull = "null?", Predicate;
    IsBoolean = "boolean?", Predicate;
    IsReal = "real?", Predicate;
    IsPair = "pair?", Predicate;
    IsProcedure = "procedure?", Predicate;
    IsPerturbation = "perturbation?", Predicate;
    IsForward = "forward?", Predicate;
    IsSensitivity = "sensitivity?", Predicate;
    IsReverse = "reverse?", Predicate;
    IfProcedure = "if-procedure", Control;
    Real = "real", Control;
    WriteReal = "write-real", Control;
    Write = "write", Control;
    ReadReal = "read-real", Control;
    Zero = "zero", Ad;
    Plus = "plus", Ad;
    Perturb = "perturb", Ad;
    Unperturb = "unperturb", Ad;
    Bundle = "bundle", Ad;
    Primal = "primal", Ad;
    Tangent = "tangent", Ad;
    Sensitize = "sensitize", Ad;
    Unsensitize = "unsensitize", Ad;
    StarJ = "*j", Ad;
    StarJInverse = "*j-inverse", Ad;
    CustomConform = "custom-*j-conform", Ad;
    IsVector = "vector?", Predicate;
    VectorLength = "vector-length", Shape;
    VectorRef = "vector-ref", Vector;
    BuildVector = "build-vector", Vector;
    ListToVector = "list->vector", Vector;
    /// `(cons* v i s)`: the vector shaped like `v` that holds `s` at `i`
    /// and the zero of `v`'s element elsewhere. The reverse rule of
    /// `vector-ref` makes it; it is never built densely where a `plus`
    /// adds it to an accumulated sensitivity.
    VectorOneHot = "vector-one-hot", Vector;
    /// `(cons who n)`: n, checked to be a length, for the library
    /// procedure `who` names ([`crate::message::vector_procedure`]).
    VectorCheckLength = "vector-check-length", Shape;
    /// `(cons who vs)`: the common length of the proper list of vectors
    /// `vs`, checked equal.
    VectorCheckLengths = "vector-check-lengths", Shape;
    /// `(cons* who v start end)`: `()`, once `start` and `end` are checked
    /// to delimit a part of `v`.
    VectorCheckRange = "vector-check-range", Shape;
}

impl Prim {
    pub fn from_name(s: &str) -> Option<Prim> {
        Prim::ALL.iter().copied().find(|p| p.name() == s)
    }

    /// Arithmetic whose applications `--count-ops` reports.
    pub fn is_arithmetic(self) -> bool {
        matches!(self.kind(), PrimKind::Binary | PrimKind::Unary)
    }
}

impl fmt::Display for Prim {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// A primitive's computation on known reals, when it has one.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Scalar {
    Bin(base::scalar::BinOp),
    Un(base::scalar::UnOp),
    Cmp(base::scalar::CmpOp),
}

impl Prim {
    /// The arithmetic of an arithmetic primitive or comparison.
    pub fn scalar(self) -> Option<Scalar> {
        use base::scalar::{BinOp, CmpOp, UnOp};
        Some(match self {
            Prim::Add => Scalar::Bin(BinOp::Add),
            Prim::Sub => Scalar::Bin(BinOp::Sub),
            Prim::Mul => Scalar::Bin(BinOp::Mul),
            Prim::Div => Scalar::Bin(BinOp::Div),
            Prim::Atan => Scalar::Bin(BinOp::Atan2),
            Prim::Sqrt => Scalar::Un(UnOp::Sqrt),
            Prim::Exp => Scalar::Un(UnOp::Exp),
            Prim::Log => Scalar::Un(UnOp::Log),
            Prim::Sin => Scalar::Un(UnOp::Sin),
            Prim::Cos => Scalar::Un(UnOp::Cos),
            Prim::Eq => Scalar::Cmp(CmpOp::Eq),
            Prim::Lt => Scalar::Cmp(CmpOp::Lt),
            Prim::Gt => Scalar::Cmp(CmpOp::Gt),
            Prim::Le => Scalar::Cmp(CmpOp::Le),
            Prim::Ge => Scalar::Cmp(CmpOp::Ge),
            _ => return None,
        })
    }
}
