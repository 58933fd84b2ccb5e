//! FIR-to-FIR: outlining the code around a function's call to itself.
//!
//! A function that calls itself other than in tail position (the backward
//! sweep of reverse mode over a list, which walks the tape by recursion)
//! takes one stack frame per level, and a frame is as large as the spill
//! slots of its whole body: code generation gives a value live across a
//! call its own slot, and inlining leaves such a function with hundreds
//! of them (the zeros and sums of the sensitivities of each element). The
//! backward sweep of softmax regression over a list of points
//! (`tests/memory/softmax-list.vlad`) had a frame of 5.9 KB, 360 MB of
//! stack at 61,440 points, for a dozen values live across its call to
//! itself; outlined, 448 bytes.
//!
//! So in such a function, the code after the last call to itself in each
//! block on the way to that call, and each arm of a conditional that does
//! not call it, move into functions of their own when they are large: the
//! recursive frame keeps only what is live across the recursive call, and
//! the outlined code's frame is on the stack once, above the deepest
//! level.

use super::compact::compact;
use crate::{Block, Func, FuncId, Inst, Module, Op, Term, Ty, Val};
use base::EntityRef;
use rustc_hash::{FxHashMap as HashMap, FxHashSet as HashSet};

/// A function calling itself is split only if it has at least this many
/// instructions, and a piece outlined only if it has at least
/// [`MIN_PIECE`]: the recursions of the benchmark programs (the sweeps of
/// `sumsq-R`, the list procedures of the others) are smaller, and their
/// frames of a few hundred bytes are not worth a call per level.
const MIN_FUNC: usize = 400;
const MIN_PIECE: usize = 100;

/// Outlines, in every large function that calls itself, the large pieces
/// of code around those calls (see the module documentation).
pub fn outline_recursion(m: &mut Module) {
    let mut names: HashSet<String> = m.funcs.iter().map(|f| f.name.clone()).collect();
    for i in 0..m.funcs.len() {
        let me = FuncId::new(i);
        let f = &m.funcs[i];
        if f.body.size() < MIN_FUNC || !calls(&f.body, me) {
            continue;
        }
        let mut body = std::mem::replace(&mut m.funcs[i].body, empty());
        let mut types = std::mem::take(&mut m.funcs[i].types);
        let mut cx = Split {
            me,
            name: m.funcs[i].name.clone(),
            returns: m.funcs[i].returns.clone(),
            types: &mut types,
            funcs: &mut m.funcs,
            names: &mut names,
        };
        cx.block(&mut body, true);
        let f = &mut m.funcs[i];
        f.body = body;
        f.types = types;
        compact(f);
    }
}

fn empty() -> Block {
    Block {
        insts: Vec::new(),
        term: Term::Return(Vec::new()),
    }
}

/// Whether `b` calls `me` (not as a tail call: a tail call takes no frame).
fn calls(b: &Block, me: FuncId) -> bool {
    b.insts.iter().any(|i| inst_calls(i, me))
}

fn inst_calls(i: &Inst, me: FuncId) -> bool {
    match &i.op {
        Op::Call(g, _) | Op::CallAt(g, _, _) => *g == me,
        Op::VecBuild { func, .. } => *func == me,
        Op::If { then_, else_, .. } => calls(then_, me) || calls(else_, me),
        _ => false,
    }
}

/// Whether a block nested in `b` returns from the function (a `Return`
/// or `TailCall` inside a conditional's arm): code that does cannot move
/// into a function whose results are the block's own.
fn returns_inside(b: &Block) -> bool {
    b.insts.iter().any(|i| match &i.op {
        Op::If { then_, else_, .. } => [then_, else_].into_iter().any(|arm| {
            matches!(arm.term, Term::Return(_) | Term::TailCall(..)) || returns_inside(arm)
        }),
        _ => false,
    })
}

struct Split<'a> {
    me: FuncId,
    name: String,
    returns: Vec<Ty>,
    /// The types of the function being split, which gains the results of
    /// the calls to what it outlines.
    types: &'a mut Vec<Ty>,
    funcs: &'a mut Vec<Func>,
    names: &'a mut HashSet<String>,
}

impl Split<'_> {
    /// Splits block `b` (the function's body if `top`): the arms of its
    /// last instruction that calls the function are split in turn, and
    /// what follows that instruction is outlined; a block that does not
    /// call the function (an arm) is outlined whole.
    fn block(&mut self, b: &mut Block, top: bool) {
        let from = match b.insts.iter().rposition(|i| inst_calls(i, self.me)) {
            Some(j) => {
                if let Op::If { then_, else_, .. } = &mut b.insts[j].op {
                    self.block(then_, false);
                    self.block(else_, false);
                }
                j + 1
            }
            None if top => return,
            None => 0,
        };
        let size: usize = b.insts[from..]
            .iter()
            .map(|i| match &i.op {
                Op::If { then_, else_, .. } => 1 + then_.size() + else_.size(),
                _ => 1,
            })
            .sum();
        if size >= MIN_PIECE {
            let from = if from > 0 {
                carry_reads(b, from - 1)
            } else {
                0
            };
            self.outline(b, from);
        }
    }

    /// Moves `b`'s instructions from `from` on, and its terminator, into a
    /// new function, called from `b` with the values they read from
    /// before; `b` yields or returns its results as it did its own. Not a
    /// tail call: code generation compiles a function with those it
    /// tail-calls, as one frame.
    fn outline(&mut self, b: &mut Block, from: usize) {
        let yields = matches!(b.term, Term::Yield(_));
        let rest = Block {
            insts: b.insts[from..].to_vec(),
            term: b.term.clone(),
        };
        if yields && returns_inside(&rest) {
            return;
        }
        let free = free_values(&rest);
        let k = free.len();
        let returns = match &b.term {
            Term::Yield(vs) => vs.iter().map(|v| self.types[v.index()]).collect(),
            _ => self.returns.clone(),
        };
        // The new function's values: the free ones are its parameters, and
        // each value defined in `rest` keeps its number, shifted past them.
        let index: HashMap<Val, usize> = free.iter().enumerate().map(|(i, v)| (*v, i)).collect();
        let mut body = rest;
        body.for_each_use_mut(&mut |v| {
            *v = Val::new(index.get(v).copied().unwrap_or(k + v.index()));
        });
        body.for_each_result_mut(&mut |v| *v = Val::new(k + v.index()));
        if let Term::Yield(vs) = &mut body.term {
            body.term = Term::Return(std::mem::take(vs));
        }
        let params: Vec<Ty> = free.iter().map(|v| self.types[v.index()]).collect();
        let mut types = params.clone();
        types.extend_from_slice(self.types);
        let mut g = Func {
            name: self.fresh_name(),
            params,
            returns: returns.clone(),
            types,
            body,
        };
        compact(&mut g);
        let id = FuncId::new(self.funcs.len());
        self.funcs.push(g);
        b.insts.truncate(from);
        let results: Vec<Val> = returns
            .iter()
            .map(|t| {
                self.types.push(*t);
                Val::new(self.types.len() - 1)
            })
            .collect();
        b.insts.push(Inst {
            results: results.clone(),
            op: Op::Call(id, free),
        });
        b.term = if yields {
            Term::Yield(results)
        } else {
            Term::Return(results)
        };
    }

    fn fresh_name(&mut self) -> String {
        let mut n = 0;
        loop {
            let name = format!("{}_rest{n}", self.name);
            if self.names.insert(name.clone()) {
                return name;
            }
            n += 1;
        }
    }
}

/// Moves the loads and arithmetic before `b.insts[call]` whose results
/// only what follows it reads to just after it (a cell never changes once
/// made, so a load reads the same later); returns where they now start.
/// The recursive frame then keeps the cell they read, not the reals read
/// from it (the backward sweep's closure of a point: twelve reals).
fn carry_reads(b: &mut Block, call: usize) -> usize {
    let mut kept_uses = HashSet::default();
    uses(&b.insts[call], &mut kept_uses);
    let mut carried = Vec::new();
    let mut kept = Vec::new();
    for inst in b.insts.drain(..call).rev() {
        let movable = inst.op.is_pure() || matches!(inst.op, Op::Load(..));
        if movable && !inst.results.iter().any(|r| kept_uses.contains(r)) {
            carried.push(inst);
        } else {
            uses(&inst, &mut kept_uses);
            kept.push(inst);
        }
    }
    kept.reverse();
    carried.reverse();
    let from = kept.len() + 1;
    let rest = b.insts.split_off(1);
    kept.append(&mut b.insts);
    kept.append(&mut carried);
    kept.extend(rest);
    b.insts = kept;
    from
}

/// Adds the values `inst` reads, in its arms too, to `out`.
fn uses(inst: &Inst, out: &mut HashSet<Val>) {
    inst.op.for_each_operand(|v| {
        out.insert(v);
    });
    if let Op::If { then_, else_, .. } = &inst.op {
        for arm in [then_, else_] {
            arm.for_each_use(&mut |v| {
                out.insert(v);
            });
        }
    }
}

/// The values `b` reads that it does not define, in the order first read.
pub(super) fn free_values(b: &Block) -> Vec<Val> {
    let mut defined = HashSet::default();
    b.for_each_inst(&mut |i| defined.extend(i.results.iter().copied()));
    let mut seen = HashSet::default();
    let mut free = Vec::new();
    b.for_each_use(&mut |v| {
        if !defined.contains(&v) && seen.insert(v) {
            free.push(v);
        }
    });
    free
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::fmt::Write;

    /// `n` additions in a chain from `from`, each adding `other`, defining
    /// values from `next` on; returns the last value's number.
    fn chain(text: &mut String, from: usize, other: usize, next: &mut usize, n: usize) -> usize {
        let mut last = from;
        for _ in 0..n {
            let _ = writeln!(text, "    v{next} = fadd v{last} v{other}");
            last = *next;
            *next += 1;
        }
        last
    }

    /// A recursion `walk(x)` = 0 at x = 0, else a long chain of additions
    /// of `x * x` (computed before the call) to `walk(x - 1)`, whose base
    /// case is a long chain too; `main` prints `walk` of the input.
    fn recursion(links: usize) -> Module {
        let mut t = String::from(
            "str s0 = \"error: `read-real` reached the end of input\"\n\n\
             func f0 main() -> () {\n  v0 = read_real s0\n  v1 = call f1(v0)\n  \
             print_real v1\n  return\n}\n\n\
             func f1 walk(v0: f64) -> (f64) {\n  v1 = f64 0.0\n  v2 = feq v0 v1\n  \
             v3 = if v2 {\n",
        );
        let mut next = 4;
        let base = chain(&mut t, 1, 0, &mut next, links);
        let _ = writeln!(t, "    yield v{base}\n  }} else {{");
        let (one, less, square, rec) = (next, next + 1, next + 2, next + 3);
        next += 4;
        let _ = writeln!(
            t,
            "    v{one} = f64 1.0\n    v{less} = fsub v0 v{one}\n    \
             v{square} = fmul v0 v0\n    v{rec} = call f1(v{less})"
        );
        let last = chain(&mut t, rec, square, &mut next, links);
        let _ = writeln!(t, "    yield v{last}\n  }}\n  return v3\n}}\n\nmain f0");
        crate::read::module(&t).expect("the test module reads")
    }

    use crate::eval::printed as output;

    #[test]
    fn a_large_recursion_keeps_only_its_call_and_what_crosses_it() {
        let before = recursion(MIN_FUNC / 2 + MIN_PIECE);
        let mut m = before.clone();
        outline_recursion(&mut m);
        crate::verify::verify(&m).expect("the outlined module verifies");
        assert_eq!(output(&m, "6\n"), output(&before, "6\n"));
        // The base case and the code after the call are functions of
        // their own; `x * x` moved after the call, which the recursive
        // frame no longer holds.
        assert_eq!(m.funcs.len(), 4);
        let walk = &m.funcs[1];
        assert!(walk.body.size() < 20, "{}", crate::print::module(&m));
        let mut muls = 0;
        walk.body.for_each_inst(&mut |i| {
            muls += matches!(i.op, Op::FBin(crate::FBin::Mul, ..)) as usize
        });
        assert_eq!(muls, 0, "{}", crate::print::module(&m));
        assert!(m.funcs[2..].iter().all(|f| !calls(&f.body, FuncId::new(1))));
    }

    #[test]
    fn a_small_recursion_is_left_alone() {
        let before = recursion(MIN_PIECE / 2);
        let mut m = before.clone();
        outline_recursion(&mut m);
        assert_eq!(m, before);
    }
}
