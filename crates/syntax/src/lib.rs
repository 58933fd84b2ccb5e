//! Front end of `stalingrad`: source text to core AST.
//!
//! Input: a `.vlad` file (and the files it `include`s) plus the embedded
//! standard library. Output: [`expand`] makes an [`ast::Program`], a flat, ordered list of
//! top-level items in which every top-level name is unique and every
//! definition appears after everything it needs (VLAD's top level is
//! `letrec*`; [`expand`] turns it into an evaluation order or rejects the
//! program). Derived forms (`let*`, named `let`, `cond`, `and`, `or`, `list`,
//! `cons*`, curried `define`, n-ary application) are gone; what remains is the
//! small core language of [`ast`], which crate `ir` converts to core IR.
//!
//! Stages: [`reader`] (text to [`sexp::Sexp`] with positions), [`expand`]
//! (S-expressions to core AST). Numerals are read with `base::number`,
//! which also prints reals for every later stage; positions and errors are
//! `base::diag`'s, the types every later stage reports with. Only `ir`,
//! whose input the AST is, and the driver depend on this crate.

pub mod ast;
pub mod expand;
pub mod reader;
pub mod sexp;
