//! The text form of a [`fir::Module`] (`stalingrad build --emit=fir`).
//!
//! Stable and line-oriented, for people and snapshot tests:
//!
//! ```text
//! str s0 = "\n"
//!
//! cell #0 = (ptr, f64, bool)
//!
//! vector #0 = (f64, f64)
//!
//! func f1 dot(v0: f64, v1: f64) -> (f64) {
//!   v2 = fmul v0 v1
//!   v3 = flt v2 v0
//!   v4 = if v3 {
//!     yield v1
//!   } else {
//!     v5, v6 = call f7(v0, v2)
//!     yield v6
//!   }
//!   return v4
//! }
//!
//! main f0
//! ```

use crate::{Block, Cmp, FBin, FUn, Func, FuncId, Inst, Module, Op, Term, Ty, Val};
use base::EntityRef;
use std::fmt::Write;

/// The whole module: strings, the layout of each member tag's cells and
/// of each vector layout's elements, functions in id order, then the
/// entry.
pub fn module(m: &Module) -> String {
    let mut out = String::new();
    for (i, s) in m.strings.iter().enumerate() {
        let _ = writeln!(out, "str s{i} = {s:?}");
    }
    if !m.strings.is_empty() {
        out.push('\n');
    }
    // What each cell holds: for a tape, the scalars kept per iteration.
    for (tag, slots) in &m.cells {
        let _ = writeln!(out, "cell #{tag} = {}", cell(slots));
    }
    if !m.cells.is_empty() {
        out.push('\n');
    }
    // What one element of a vector of each layout holds.
    for (layout, slots) in &m.vectors {
        let _ = writeln!(out, "vector #{layout} = {}", cell(slots));
    }
    if !m.vectors.is_empty() {
        out.push('\n');
    }
    for (i, f) in m.funcs.iter().enumerate() {
        func_into(&mut out, FuncId::new(i), f);
        out.push('\n');
    }
    match m.main {
        Some(f) => {
            let _ = writeln!(out, "main {}", f);
        }
        None => out.push_str("main none\n"),
    }
    out
}

/// A cell layout: its slots' types, `(ptr, f64, bool)`, `()` for none.
pub fn cell(slots: &[Ty]) -> String {
    let tys: Vec<&str> = slots.iter().map(|t| ty(*t)).collect();
    format!("({})", tys.join(", "))
}

/// One function.
pub fn func(id: FuncId, f: &Func) -> String {
    let mut out = String::new();
    func_into(&mut out, id, f);
    out
}

pub fn ty(t: Ty) -> &'static str {
    match t {
        Ty::F64 => "f64",
        Ty::Bool => "bool",
        Ty::Ptr => "ptr",
    }
}

pub fn fbin(op: FBin) -> &'static str {
    match op {
        FBin::Add => "fadd",
        FBin::PlusAdd => "fadd_plus",
        FBin::Sub => "fsub",
        FBin::Mul => "fmul",
        FBin::Div => "fdiv",
        FBin::Atan2 => "atan2",
    }
}

pub fn fun(op: FUn) -> &'static str {
    match op {
        FUn::Sqrt => "sqrt",
        FUn::Exp => "exp",
        FUn::Log => "log",
        FUn::Sin => "sin",
        FUn::Cos => "cos",
    }
}

pub fn cmp(c: Cmp) -> &'static str {
    match c {
        Cmp::Eq => "feq",
        Cmp::Lt => "flt",
        Cmp::Gt => "fgt",
        Cmp::Le => "fle",
        Cmp::Ge => "fge",
    }
}

fn func_into(out: &mut String, id: FuncId, f: &Func) {
    let _ = write!(out, "func {} {}(", id, f.name);
    for (i, t) in f.params.iter().enumerate() {
        if i > 0 {
            out.push_str(", ");
        }
        let _ = write!(out, "v{i}: {}", ty(*t));
    }
    out.push_str(") -> (");
    out.push_str(
        &f.returns
            .iter()
            .map(|t| ty(*t))
            .collect::<Vec<_>>()
            .join(", "),
    );
    out.push_str(") {\n");
    block(out, f, &f.body, 1);
    out.push_str("}\n");
}

fn indent(out: &mut String, depth: usize) {
    for _ in 0..depth {
        out.push_str("  ");
    }
}

fn vals(vs: &[Val]) -> String {
    vs.iter()
        .map(|v| v.to_string())
        .collect::<Vec<_>>()
        .join(", ")
}

fn block(out: &mut String, f: &Func, b: &Block, depth: usize) {
    for i in &b.insts {
        inst(out, f, i, depth);
    }
    indent(out, depth);
    match &b.term {
        Term::Return(vs) if vs.is_empty() => out.push_str("return"),
        Term::Return(vs) => {
            let _ = write!(out, "return {}", vals(vs));
        }
        Term::TailCall(g, args) => {
            let _ = write!(out, "tailcall {}({})", g, vals(args));
        }
        Term::Yield(vs) if vs.is_empty() => out.push_str("yield"),
        Term::Yield(vs) => {
            let _ = write!(out, "yield {}", vals(vs));
        }
        Term::Error(s) => {
            let _ = write!(out, "error {}", s);
        }
        Term::ErrorWith(parts) => {
            out.push_str("error");
            for p in parts {
                let _ = match p {
                    crate::ErrPart::Str(s) => write!(out, " {}", s),
                    crate::ErrPart::Real(v) => write!(out, " {v}"),
                    // Marked, so that the text says each value's type.
                    crate::ErrPart::Bool(v) => write!(out, " bool {v}"),
                    crate::ErrPart::ValueStart => write!(out, " <"),
                    crate::ErrPart::Site => write!(out, " site"),
                    crate::ErrPart::At(s) => write!(out, " at {}", s),
                    crate::ErrPart::ValueEnd => write!(out, " >"),
                    crate::ErrPart::Captured(n) => write!(out, " captured {n}"),
                };
            }
        }
    }
    out.push('\n');
}

fn inst(out: &mut String, f: &Func, i: &Inst, depth: usize) {
    indent(out, depth);
    if !i.results.is_empty() {
        let _ = write!(out, "{} = ", vals(&i.results));
    }
    match &i.op {
        Op::F64Const(x) => {
            // `{:?}` round-trips and keeps `-0.0`, `inf`, `NaN` readable.
            let _ = write!(out, "f64 {x:?}");
        }
        Op::BoolConst(b) => {
            let _ = write!(out, "bool {b}");
        }
        Op::FBin(op, x, y) => {
            let _ = write!(out, "{} {x} {y}", fbin(*op));
        }
        Op::FUn(op, x) => {
            let _ = write!(out, "{} {x}", fun(*op));
        }
        Op::FCmp(c, x, y) => {
            let _ = write!(out, "{} {x} {y}", cmp(*c));
        }
        Op::Not(x) => {
            let _ = write!(out, "not {x}");
        }
        Op::Call(g, args) => {
            let _ = write!(out, "call {}({})", g, vals(args));
        }
        Op::CallAt(g, args, site) => {
            let _ = write!(out, "call {}({}) at {}", g, vals(args), site);
        }
        Op::If { cond, then_, else_ } => {
            let _ = writeln!(out, "if {cond} {{");
            block(out, f, then_, depth + 1);
            indent(out, depth);
            out.push_str("} else {\n");
            block(out, f, else_, depth + 1);
            indent(out, depth);
            out.push('}');
        }
        Op::PrintStr(s) => {
            let _ = write!(out, "print_str {}", s);
        }
        Op::PrintReal(x) => {
            let _ = write!(out, "print_real {x}");
        }
        Op::PrintBool(x) => {
            let _ = write!(out, "print_bool {x}");
        }
        Op::Capture(start) => {
            out.push_str(if *start {
                "capture_start"
            } else {
                "capture_end"
            });
        }
        Op::ReadReal(s) => {
            let _ = write!(out, "read_real {}", s);
        }
        Op::Alloc(tag, fields) => {
            let _ = write!(out, "alloc #{tag}({})", vals(fields));
        }
        Op::AllocZero(tag, fields) => {
            let _ = write!(out, "alloc_zero #{tag}({})", vals(fields));
        }
        Op::TagIs(p, tag) => {
            let _ = write!(out, "tag_is {p} #{tag}");
        }
        Op::IsZero(p) => {
            let _ = write!(out, "is_zero {p}");
        }
        Op::MemoGet(n, key) => {
            let _ = write!(out, "memo_get #{n}({})", vals(key));
        }
        Op::MemoPut(n, vals_) => {
            let _ = write!(out, "memo_put #{n}({})", vals(vals_));
        }
        Op::Save(vals_) => {
            let _ = write!(out, "save({})", vals(vals_));
        }
        Op::Restore(tys) => {
            let tys: Vec<&str> = tys.iter().map(|t| ty(*t)).collect();
            let _ = write!(out, "restore({})", tys.join(", "));
        }
        Op::Count(n) => {
            let _ = write!(out, "count {}", base::counters::slot_name(*n as usize));
        }
        Op::Load(p, tag, n) => {
            let _ = write!(out, "load {p} #{tag}.{n}");
        }
        Op::VecOf(layout, n, slots) => {
            let _ = write!(out, "vec_of #{layout} {n}({})", vals(slots));
        }
        Op::VecBuild {
            layout,
            len,
            func,
            args,
            at,
            state,
        } => {
            let _ = write!(out, "vec_build #{layout} {len} {func}({})", vals(args));
            if let Some(v) = state {
                let _ = write!(out, " state {v}");
            }
            if let Some(s) = at {
                let _ = write!(out, " at {s}");
            }
        }
        Op::VecLen(v) => {
            let _ = write!(out, "vec_len {v}");
        }
        Op::VecLoad(v, i, layout, slot) => {
            let _ = write!(out, "vec_load {v} {i} #{layout}.{slot}");
        }
        Op::VecIndexOk(v, i) => {
            let _ = write!(out, "vec_index_ok {v} {i}");
        }
        Op::IsCount(n) => {
            let _ = write!(out, "is_count {n}");
        }
        Op::VecZero(layout, len) => {
            let _ = write!(out, "vec_zero #{layout} {len}");
        }
        Op::VecOneHot {
            layout,
            len,
            i,
            vals: vs,
        } => {
            let _ = write!(out, "vec_one_hot #{layout} {len} {i}({})", vals(vs));
        }
        Op::VecPlus(layout, a, b) => {
            let _ = write!(out, "vec_plus #{layout} {a} {b}");
        }
        Op::StackPush {
            layout,
            buf,
            k,
            vals: vs,
            room,
        } => {
            let _ = write!(out, "stack_push #{layout} {buf} {k}({})", vals(vs));
            if let Some(r) = room {
                let _ = write!(out, " room {r}");
            }
        }
        Op::VecZeroOf { layout, row, of } => {
            let _ = write!(out, "vec_zero_of #{layout} #{row} {of}");
        }
        Op::VecOneHotOf {
            layout,
            row,
            of,
            i,
            val,
        } => {
            let _ = write!(out, "vec_one_hot_of #{layout} #{row} {of} {i} {val}");
        }
    }
    out.push('\n');
}

#[cfg(test)]
mod tests {
    use super::*;

    use crate::testing::inst as i;

    #[test]
    fn prints_a_module() {
        let f = Func {
            name: "dot".into(),
            params: vec![Ty::F64, Ty::F64],
            returns: vec![Ty::F64],
            types: vec![Ty::F64, Ty::F64, Ty::F64, Ty::Bool, Ty::F64],
            body: Block {
                insts: vec![
                    i(&[2], Op::FBin(FBin::Mul, Val::new(0), Val::new(1))),
                    i(&[3], Op::FCmp(Cmp::Lt, Val::new(2), Val::new(0))),
                    i(
                        &[4],
                        Op::If {
                            cond: Val::new(3),
                            then_: Block {
                                insts: vec![],
                                term: Term::Yield(vec![Val::new(1)]),
                            },
                            else_: Block {
                                insts: vec![i(&[], Op::PrintStr(crate::StrId::new(0)))],
                                term: Term::Error(crate::StrId::new(0)),
                            },
                        },
                    ),
                ],
                term: Term::Return(vec![Val::new(4)]),
            },
        };
        let m = Module {
            funcs: vec![f],
            main: None,
            vectors: Default::default(),
            strings: vec!["x\n".into()],
            cells: [(0, vec![]), (3, vec![Ty::Ptr, Ty::F64, Ty::Bool])].into(),
        };
        assert_eq!(
            module(&m),
            "str s0 = \"x\\n\"\n\
             \n\
             cell #0 = ()\n\
             cell #3 = (ptr, f64, bool)\n\
             \n\
             func f0 dot(v0: f64, v1: f64) -> (f64) {\n\
             \x20 v2 = fmul v0 v1\n\
             \x20 v3 = flt v2 v0\n\
             \x20 v4 = if v3 {\n\
             \x20   yield v1\n\
             \x20 } else {\n\
             \x20   print_str s0\n\
             \x20   error s0\n\
             \x20 }\n\
             \x20 return v4\n\
             }\n\
             \n\
             main none\n"
        );
    }
}
