//! The layout of the operation counters of `--count-ops`, written once for
//! the interpreter, the FIR evaluator, code generation (which increments
//! slots of the runtime's `rt_counts` in place) and the runtime (which
//! prints them). Core-only: the runtime includes this file with `#[path]`.
//!
//! Slots: the arithmetic primitives, in the order of [`ARITHMETIC`] (the
//! order of `ir::Prim::ALL`), then comparisons, then the steps of the
//! structural AD operations (`zero`, `plus`, the transformations of
//! values). A step is one node of a value walked: the interpreter counts
//! every pair, closure and real it zeroes or adds; compiled code, which
//! zeroes and adds values of a known shape without any run-time work,
//! counts the union cells it walks. The two counts differ by the size of
//! a member, so they are compared by growth, not by value.

/// The arithmetic primitives by name, in slot order.
pub const ARITHMETIC: [&str; 10] = [
    "+", "-", "*", "/", "atan", "sqrt", "exp", "log", "sin", "cos",
];

/// The slot that counts comparisons.
pub const COMPARISONS: usize = ARITHMETIC.len();

/// The slot that counts steps of `zero`.
pub const ZERO: usize = COMPARISONS + 1;
/// The slot that counts steps of `plus`.
pub const PLUS: usize = ZERO + 1;
/// The slot that counts steps of the AD transformations of values.
pub const TRANSFORM: usize = PLUS + 1;

/// How many slots there are.
pub const SLOTS: usize = TRANSFORM + 1;

/// The slot of the arithmetic primitive called `name`.
pub fn arithmetic_slot(name: &str) -> Option<usize> {
    ARITHMETIC.iter().position(|n| *n == name)
}

/// The name of a slot, as the JSON line calls it (`?` for no slot).
pub fn slot_name(slot: usize) -> &'static str {
    match slot {
        s if s < ARITHMETIC.len() => ARITHMETIC[s],
        COMPARISONS => "comparisons",
        ZERO => "zero",
        PLUS => "plus",
        TRANSFORM => "transform",
        _ => "?",
    }
}

/// Writes the counters as one JSON line's text (without the newline), the
/// format the benchmark suite parses: `slots` as laid out above.
pub fn write_json(slots: &[u64; SLOTS], out: &mut dyn core::fmt::Write) -> core::fmt::Result {
    out.write_str("{\"arithmetic\":{")?;
    let mut total = 0u64;
    for (i, name) in ARITHMETIC.iter().enumerate() {
        if i > 0 {
            out.write_str(",")?;
        }
        write!(out, "\"{name}\":{}", slots[i])?;
        total += slots[i];
    }
    write!(
        out,
        "}},\"arithmetic_total\":{total},\"comparisons\":{},\"zero\":{},\"plus\":{},\"transform\":{}}}",
        slots[COMPARISONS], slots[ZERO], slots[PLUS], slots[TRANSFORM]
    )
}
