//! The arithmetic of VLAD's reals, written once: the interpreter, the flow
//! analysis' constant folding, the FIR evaluator and the FIR simplifier all
//! compute a primitive on known reals through these functions, so that a
//! constant folded at compile time is bit for bit what the interpreter
//! computes at run time. IEEE binary64 exactly as written: no fused
//! multiply-add, no reassociation. (Generated code computes the same
//! operations with machine instructions and libm, as the interpreter's
//! `f64` methods do.)

/// A real-valued operation on two reals.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum BinOp {
    Add,
    Sub,
    Mul,
    Div,
    /// `atan2(y, x)`: the first operand is y (VLAD's two-argument `atan`).
    Atan2,
}

/// A real-valued operation on one real.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum UnOp {
    Sqrt,
    Exp,
    Log,
    Sin,
    Cos,
}

/// A comparison of two reals.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum CmpOp {
    Eq,
    Lt,
    Gt,
    Le,
    Ge,
}

impl BinOp {
    pub fn apply(self, x: f64, y: f64) -> f64 {
        match self {
            BinOp::Add => x + y,
            BinOp::Sub => x - y,
            BinOp::Mul => x * y,
            BinOp::Div => x / y,
            BinOp::Atan2 => x.atan2(y),
        }
    }
}

impl UnOp {
    pub fn apply(self, x: f64) -> f64 {
        match self {
            UnOp::Sqrt => x.sqrt(),
            UnOp::Exp => x.exp(),
            UnOp::Log => x.ln(),
            UnOp::Sin => x.sin(),
            UnOp::Cos => x.cos(),
        }
    }
}

impl CmpOp {
    pub fn apply(self, x: f64, y: f64) -> bool {
        match self {
            CmpOp::Eq => x == y,
            CmpOp::Lt => x < y,
            CmpOp::Gt => x > y,
            CmpOp::Le => x <= y,
            CmpOp::Ge => x >= y,
        }
    }
}
