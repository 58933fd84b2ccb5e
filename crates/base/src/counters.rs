//! The layout of the operation counters of `--count-ops`, written once for
//! the interpreter, the FIR evaluator, code generation (which increments
//! slots of the runtime's `rt_counts` in place) and the runtime (which
//! prints them). Core-only: the runtime includes this file with `#[path]`.
//!
//! Slots: the arithmetic primitives, in the order of [`ARITHMETIC`] (the
//! order of `ir::Prim::ALL`), then comparisons.

/// The arithmetic primitives by name, in slot order.
pub const ARITHMETIC: [&str; 10] = [
    "+", "-", "*", "/", "atan", "sqrt", "exp", "log", "sin", "cos",
];

/// The slot that counts comparisons.
pub const COMPARISONS: usize = ARITHMETIC.len();

/// How many slots there are.
pub const SLOTS: usize = COMPARISONS + 1;

/// The slot of the arithmetic primitive called `name`.
pub fn arithmetic_slot(name: &str) -> Option<usize> {
    ARITHMETIC.iter().position(|n| *n == name)
}

/// Writes the counters as one JSON line's text (without the newline), the
/// format the benchmark suite parses: `slots` as laid out above, and the
/// steps of the structural AD operations (zero where not counted).
pub fn write_json(
    slots: &[u64; SLOTS],
    zero: u64,
    plus: u64,
    transform: u64,
    out: &mut dyn core::fmt::Write,
) -> core::fmt::Result {
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
        "}},\"arithmetic_total\":{total},\"comparisons\":{},\"zero\":{zero},\"plus\":{plus},\"transform\":{transform}}}",
        slots[COMPARISONS]
    )
}
