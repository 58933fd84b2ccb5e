//! An evaluator of [`fir::Module`]s: the FIR's meaning, for tests.
//!
//! It checks lowering before any machine code is involved, and is the
//! oracle the code generator's tests compare executables against. Output is
//! byte-identical to the interpreter's (reals through
//! `base::number_core::format_real`); input is read as the interpreter reads
//! it (whitespace-separated words, [`base::number::parse_numeral`]).
//! Tail calls run in constant Rust stack; non-tail calls recurse.

use crate::{Block, FuncId, Module, Op, StrId, Term, Ty, Val};
use base::EntityRef;
use std::collections::{HashMap, VecDeque};
use std::io::{BufRead, Write};

mod vector;

/// A real as VLAD prints it (the runtime's and the interpreter's format).
pub(crate) fn format_real(x: f64) -> String {
    base::number_core::format_real(x).as_str().to_string()
}

/// How many times each counted operation ran, as the interpreter's
/// `--count-ops` counts them, in the slots of `base::counters`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Counts {
    pub slots: [u64; base::counters::SLOTS],
}

impl Default for Counts {
    fn default() -> Self {
        Counts {
            slots: [0; base::counters::SLOTS],
        }
    }
}

impl Counts {
    /// The interpreter's `--count-ops=json` line (without the newline).
    pub fn json(&self) -> String {
        let mut s = String::new();
        let _ = base::counters::write_json(&self.slots, &mut s);
        s
    }
}

/// Runs the module's `main`. `Err` carries a run-time error message (what
/// a compiled program prints on standard error before exiting with 1).
pub fn run(m: &Module, input: &mut dyn BufRead, out: &mut dyn Write) -> Result<(), String> {
    run_counting(m, input, out, &mut Counts::default())
}

/// What `m` prints reading `input`, for the tests of the passes (each
/// runs a module before and after a pass and compares).
#[cfg(test)]
pub(crate) fn printed(m: &Module, input: &str) -> String {
    let mut out = Vec::new();
    run(m, &mut input.as_bytes(), &mut out).expect("the module runs");
    String::from_utf8_lossy(&out).into_owned()
}

/// [`run`], also counting operations into `counts`.
pub fn run_counting(
    m: &Module,
    input: &mut dyn BufRead,
    out: &mut dyn Write,
    counts: &mut Counts,
) -> Result<(), String> {
    let Some(main) = m.main else { return Ok(()) };
    let mut ev = Eval {
        m,
        input,
        out,
        pending: VecDeque::new(),
        counts,
        sites: Vec::new(),
        heap: Vec::new(),
        memo: HashMap::new(),
        saves: Vec::new(),
        capturing: None,
        captured: VecDeque::new(),
    };
    let r = ev.call(main, Vec::new()).map(|_| ());
    let _ = ev.out.flush();
    r
}

#[derive(Clone, Copy, Debug, PartialEq)]
enum V {
    F(f64),
    B(bool),
    /// A union cell: its index in `Eval::heap`.
    P(usize),
}

enum Flow {
    Return(Vec<V>),
    Tail(FuncId, Vec<V>),
    Yield(Vec<V>),
}

struct Eval<'a> {
    m: &'a Module,
    input: &'a mut dyn BufRead,
    out: &'a mut dyn Write,
    pending: VecDeque<String>,
    counts: &'a mut Counts,
    /// Positions of the `CallAt`s running, innermost last.
    sites: Vec<crate::StrId>,
    /// Union cells.
    heap: Vec<Cell>,
    /// The memo tables ([`Op::MemoGet`]): (table, key) to a cell. Nothing
    /// is ever freed here, so nothing need be forgotten.
    memo: HashMap<(u32, Vec<usize>), usize>,
    /// The stack of saved values ([`Op::Save`]).
    saves: Vec<V>,
    /// What printing writes inside an [`Op::Capture`] stretch, and the
    /// stretches printed that the error message has not taken yet.
    capturing: Option<String>,
    captured: VecDeque<String>,
}

/// A union cell, or a vector (tag `base::cell_layout::VECTOR_TAG`, which
/// no member has, so that a tag test on a vector is false).
#[derive(Clone)]
struct Cell {
    tag: u32,
    /// Made by [`Op::AllocZero`].
    zero: bool,
    /// A cell's scalars; a vector's slots, element after element.
    fields: Vec<V>,
    /// A vector's layout and number of elements.
    vector: Option<(u32, usize)>,
}

type R<T> = Result<T, String>;

fn internal<T>(msg: impl Into<String>) -> R<T> {
    Err(format!("internal error (FIR): {}", msg.into()))
}

impl Eval<'_> {
    fn string(&self, s: StrId) -> R<&str> {
        match self.m.strings.get(s.index()) {
            Some(t) => Ok(t),
            None => internal(format!("no string {}", s)),
        }
    }

    /// Calls `f`, following tail calls in a loop.
    fn call(&mut self, mut f: FuncId, mut args: Vec<V>) -> R<Vec<V>> {
        let mut env: Vec<Option<V>> = Vec::new();
        loop {
            let func = match self.m.funcs.get(f.index()) {
                Some(func) => func,
                None => return internal(format!("no function {}", f)),
            };
            if args.len() != func.params.len() {
                return internal(format!(
                    "`{}` called with {} arguments",
                    func.name,
                    args.len()
                ));
            }
            for (a, t) in args.iter().zip(&func.params) {
                check(*a, *t, &func.name)?;
            }
            env.clear();
            env.extend(args.drain(..).map(Some));
            env.resize(func.types.len().max(env.len()), None);
            match self.block(&func.body, &mut env, &func.types)? {
                Flow::Return(vs) => {
                    if vs.len() != func.returns.len() {
                        return internal(format!("`{}` returned {} values", func.name, vs.len()));
                    }
                    return Ok(vs);
                }
                Flow::Tail(g, vs) => {
                    f = g;
                    args = vs;
                }
                Flow::Yield(_) => return internal(format!("`{}` ends in yield", func.name)),
            }
        }
    }

    fn block(&mut self, b: &Block, env: &mut Vec<Option<V>>, types: &[Ty]) -> R<Flow> {
        for inst in &b.insts {
            let results = match self.op(&inst.op, env, types)? {
                Ok(vs) => vs,
                // An `if` arm left the function.
                Err(exit) => return Ok(exit),
            };
            if results.len() != inst.results.len() {
                return internal(format!(
                    "{} results for {} values",
                    results.len(),
                    inst.results.len()
                ));
            }
            for (r, v) in inst.results.iter().zip(results) {
                let i = r.index();
                if i >= env.len() {
                    env.resize(i + 1, None);
                }
                env[i] = Some(v);
            }
        }
        let get = |vs: &[Val]| vs.iter().map(|v| get(env, *v)).collect::<R<Vec<V>>>();
        Ok(match &b.term {
            Term::Return(vs) => Flow::Return(get(vs)?),
            Term::TailCall(f, vs) => Flow::Tail(*f, get(vs)?),
            Term::Yield(vs) => Flow::Yield(get(vs)?),
            Term::Error(s) => return Err(self.string(*s)?.to_string()),
            Term::ErrorWith(parts) => {
                let mut msg = String::new();
                let mut start = 0;
                // The note of the call site, which ends the message.
                let mut note = String::new();
                let site = |msg: &mut String, note: &mut String, s: &str| {
                    let (at, _) = base::message::site_parts(s.as_bytes());
                    msg.push_str(&s[..at.len()]);
                    msg.push_str(": ");
                    *note = s[at.len()..].to_string();
                };
                for p in parts {
                    match p {
                        crate::ErrPart::ValueStart => start = msg.len(),
                        crate::ErrPart::At(s) => site(&mut msg, &mut note, self.string(*s)?),
                        crate::ErrPart::Site => {
                            if let Some(s) = self.sites.last() {
                                site(&mut msg, &mut note, self.string(*s)?);
                            }
                        }
                        crate::ErrPart::ValueEnd => {
                            if let Some(cut) = base::message::value_cut(&msg.as_bytes()[start..]) {
                                msg.truncate(start + cut);
                                msg.push_str(base::message::ELLIPSIS);
                            }
                        }
                        crate::ErrPart::Str(s) => msg.push_str(self.string(*s)?),
                        crate::ErrPart::Captured(_) => match self.captured.pop_front() {
                            Some(text) => msg.push_str(&text),
                            None => return internal("`captured` with nothing captured"),
                        },
                        crate::ErrPart::Real(v) => match get(std::slice::from_ref(v))?[0] {
                            V::F(x) => msg.push_str(&crate::eval::format_real(x)),
                            _ => {
                                return Err(
                                    "internal error: boolean where a real was expected".into()
                                )
                            }
                        },
                        crate::ErrPart::Bool(v) => match get(std::slice::from_ref(v))?[0] {
                            V::B(b) => msg.push_str(base::boolean::text(b)),
                            _ => {
                                return Err(
                                    "internal error: real where a boolean was expected".into()
                                )
                            }
                        },
                    }
                }
                msg.push_str(&note);
                return Err(msg);
            }
        })
    }

    /// The results of `op`, or (`Err`) how an `if` arm left the function.
    fn op(&mut self, op: &Op, env: &mut Vec<Option<V>>, types: &[Ty]) -> R<Result<Vec<V>, Flow>> {
        let real = |v: Val| match get(env, v)? {
            V::F(x) => Ok(x),
            _ => internal(format!("{v} is not a real")),
        };
        let boolean = |v: Val| match get(env, v)? {
            V::B(b) => Ok(b),
            _ => internal(format!("{v} is not a bool")),
        };
        fn cell<'h>(env: &[Option<V>], v: Val, heap: &'h [Cell]) -> R<&'h Cell> {
            match get(env, v)? {
                V::P(i) => match heap.get(i) {
                    Some(c) => Ok(c),
                    None => internal(format!("{v} points nowhere")),
                },
                _ => internal(format!("{v} is not a pointer")),
            }
        }
        Ok(Ok(match op {
            Op::F64Const(x) => vec![V::F(*x)],
            Op::BoolConst(b) => vec![V::B(*b)],
            Op::FBin(o, x, y) => {
                let (x, y) = (real(*x)?, real(*y)?);
                if let Some(i) = o.counter_slot() {
                    self.counts.slots[i] += 1;
                }
                vec![V::F(o.scalar().apply(x, y))]
            }
            Op::FUn(o, x) => {
                let x = real(*x)?;
                self.counts.slots[crate::un_counter_slot(*o)] += 1;
                vec![V::F(o.apply(x))]
            }
            Op::FCmp(c, x, y) => {
                let (x, y) = (real(*x)?, real(*y)?);
                self.counts.slots[base::counters::COMPARISONS] += 1;
                vec![V::B(c.apply(x, y))]
            }
            Op::Not(b) => vec![V::B(!boolean(*b)?)],
            Op::Alloc(tag, fields) | Op::AllocZero(tag, fields) => {
                let fields = fields.iter().map(|v| get(env, *v)).collect::<R<Vec<V>>>()?;
                self.heap.push(Cell {
                    tag: *tag,
                    zero: matches!(op, Op::AllocZero(..)),
                    fields,
                    vector: None,
                });
                vec![V::P(self.heap.len() - 1)]
            }
            Op::VecOf(..)
            | Op::VecBuild { .. }
            | Op::VecLen(_)
            | Op::VecIndexOk(..)
            | Op::IsCount(_)
            | Op::VecLoad(..)
            | Op::VecZero(..)
            | Op::VecOneHot { .. }
            | Op::VecZeroOf { .. }
            | Op::VecOneHotOf { .. }
            | Op::VecPlus(..)
            | Op::StackPush { .. } => self.vector_op(op, env)?,
            Op::TagIs(p, tag) => vec![V::B(cell(env, *p, &self.heap)?.tag == *tag)],
            Op::IsZero(p) => vec![V::B(cell(env, *p, &self.heap)?.zero)],
            Op::MemoGet(n, key) => {
                let key = key
                    .iter()
                    .map(|v| pointer(get(env, *v)?))
                    .collect::<R<_>>()?;
                match self.memo.get(&(*n, key)) {
                    Some(r) => vec![V::B(true), V::P(*r)],
                    // A found flag of false makes the pointer meaningless;
                    // any cell index will do.
                    None => vec![V::B(false), V::P(0)],
                }
            }
            Op::Save(vals) => {
                for v in vals {
                    self.saves.push(get(env, *v)?);
                }
                vec![]
            }
            Op::Restore(tys) => {
                let Some(at) = self.saves.len().checked_sub(tys.len()) else {
                    return internal("a restore of values never saved");
                };
                let vals: Vec<V> = self.saves.drain(at..).collect();
                let as_saved = vals
                    .iter()
                    .zip(tys)
                    .all(|(v, t)| matches!((v, t), (V::F(_), Ty::F64) | (V::P(_), Ty::Ptr)));
                if !as_saved {
                    return internal("a restore of values of other types than were saved");
                }
                vals
            }
            Op::MemoPut(n, vals) => {
                let mut key = vals
                    .iter()
                    .map(|v| pointer(get(env, *v)?))
                    .collect::<R<Vec<_>>>()?;
                let Some(r) = key.pop() else {
                    return internal("a memo entry without a result");
                };
                self.memo.insert((*n, key), r);
                vec![]
            }
            Op::Count(n) => {
                match self.counts.slots.get_mut(*n as usize) {
                    Some(c) => *c += 1,
                    None => return internal(format!("no counter slot {n}")),
                }
                vec![]
            }
            Op::Load(p, tag, n) => {
                let c = cell(env, *p, &self.heap)?;
                if c.tag != *tag {
                    return internal(format!(
                        "load of a scalar of member #{tag} from a cell of member #{}",
                        c.tag
                    ));
                }
                match c.fields.get(*n as usize) {
                    Some(x) => vec![*x],
                    None => return internal(format!("load of scalar {n} out of range")),
                }
            }
            Op::Call(f, args) => {
                let args = args.iter().map(|v| get(env, *v)).collect::<R<Vec<V>>>()?;
                self.call(*f, args)?
            }
            Op::CallAt(f, args, site) => {
                let args = args.iter().map(|v| get(env, *v)).collect::<R<Vec<V>>>()?;
                self.sites.push(*site);
                let r = self.call(*f, args);
                self.sites.pop();
                r?
            }
            Op::If { cond, then_, else_ } => {
                let arm = if boolean(*cond)? { then_ } else { else_ };
                match self.block(arm, env, types)? {
                    Flow::Yield(vs) => vs,
                    exit => return Ok(Err(exit)),
                }
            }
            Op::Capture(true) => {
                self.capturing = Some(String::new());
                vec![]
            }
            Op::Capture(false) => {
                let text = self.capturing.take().unwrap_or_default();
                self.captured.push_back(text);
                vec![]
            }
            Op::PrintStr(s) => {
                let text = self.string(*s)?.to_string();
                self.emit(&text)?;
                vec![]
            }
            Op::PrintReal(x) => {
                let text = crate::eval::format_real(real(*x)?);
                self.emit(&text)?;
                vec![]
            }
            Op::PrintBool(b) => {
                let text = base::boolean::text(boolean(*b)?);
                self.emit(text)?;
                vec![]
            }
            Op::ReadReal(msg) => {
                let msg = self.string(*msg)?.to_string();
                let text = match self.read_word()? {
                    None => msg.clone(),
                    Some(word) => match base::number_core::parse_numeral(&word) {
                        Some(x) => return Ok(Ok(vec![V::F(x)])),
                        None => {
                            use base::message::{END_OF_INPUT, NOT_A_NUMERAL};
                            let head = msg.strip_suffix(END_OF_INPUT).unwrap_or(&msg);
                            let [before, after] = NOT_A_NUMERAL;
                            format!("{head}{before}{word}{after}")
                        }
                    },
                };
                // A message without a position of its own is placed at
                // the running call site, as the runtime places it.
                let site = self.sites.last().map(|s| self.string(*s)).transpose()?;
                match site.filter(|_| msg.starts_with(base::message::UNPLACED)) {
                    Some(s) => {
                        let (at, note) = base::message::site_parts(s.as_bytes());
                        let at = String::from_utf8_lossy(at);
                        let note = String::from_utf8_lossy(note);
                        return Err(format!("{at}: {text}{note}"));
                    }
                    None => return Err(text),
                }
            }
        }))
    }

    fn emit(&mut self, s: &str) -> R<()> {
        if let Some(c) = &mut self.capturing {
            c.push_str(s);
            return Ok(());
        }
        self.out
            .write_all(s.as_bytes())
            .map_err(|e| format!("error: cannot write output: {e}"))
    }

    fn read_word(&mut self) -> R<Option<String>> {
        loop {
            if let Some(w) = self.pending.pop_front() {
                return Ok(Some(w));
            }
            let mut line = String::new();
            let n = self
                .input
                .read_line(&mut line)
                .map_err(|e| format!("error: read-real: cannot read input: {e}"))?;
            if n == 0 {
                return Ok(None);
            }
            self.pending
                .extend(line.split_whitespace().map(str::to_string));
        }
    }
}

fn pointer(v: V) -> R<usize> {
    match v {
        V::P(i) => Ok(i),
        _ => internal("a memo key that is not a pointer"),
    }
}

fn get(env: &[Option<V>], v: Val) -> R<V> {
    match env.get(v.index()).copied().flatten() {
        Some(x) => Ok(x),
        None => internal(format!("{v} used before it is defined")),
    }
}

fn check(v: V, t: Ty, name: &str) -> R<()> {
    match (v, t) {
        (V::F(_), Ty::F64) | (V::B(_), Ty::Bool) | (V::P(_), Ty::Ptr) => Ok(()),
        _ => internal(format!("`{name}`: argument of the wrong type")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Cmp, FBin, FUn, Func, Inst};

    use crate::testing::inst as i;

    fn blk(insts: Vec<Inst>, term: Term) -> Block {
        Block { insts, term }
    }

    fn func(name: &str, params: &[Ty], returns: &[Ty], types: &[Ty], body: Block) -> Func {
        Func {
            name: name.into(),
            params: params.to_vec(),
            returns: returns.to_vec(),
            types: types.to_vec(),
            body,
        }
    }

    fn eval(m: &Module, input: &str) -> (String, Result<(), String>) {
        let mut out = Vec::new();
        let r = run(m, &mut input.as_bytes(), &mut out);
        (String::from_utf8(out).unwrap(), r)
    }

    use Ty::{Bool as B, F64 as F};

    #[test]
    fn prints_reals_booleans_strings() {
        let main = func(
            "main",
            &[],
            &[],
            &[F, F, F, B],
            blk(
                vec![
                    i(&[0], Op::F64Const(1.0)),
                    i(&[1], Op::F64Const(3.0)),
                    i(&[2], Op::FBin(FBin::Div, Val::new(0), Val::new(1))),
                    i(&[], Op::PrintReal(Val::new(2))),
                    i(&[], Op::PrintStr(StrId::new(0))),
                    i(&[3], Op::FCmp(Cmp::Lt, Val::new(0), Val::new(1))),
                    i(&[], Op::PrintBool(Val::new(3))),
                    i(&[], Op::PrintStr(StrId::new(0))),
                ],
                Term::Return(vec![]),
            ),
        );
        let m = Module {
            funcs: vec![main],
            main: Some(FuncId::new(0)),
            vectors: Default::default(),
            strings: vec!["\n".into()],
            cells: Default::default(),
        };
        assert_eq!(eval(&m, "").0, "0.3333333333333333\n#t\n");
    }

    /// `sum(i, acc) = if i <= 0 { acc } else { tail sum(i - 1, acc + i) }`
    /// and a `main` printing `sum(n, 0)`.
    pub(crate) fn sum_loop(n: f64) -> Module {
        let sum = func(
            "sum",
            &[F, F],
            &[F],
            &[F, F, F, B, F, F, F, F],
            blk(
                vec![
                    i(&[2], Op::F64Const(0.0)),
                    i(&[3], Op::FCmp(Cmp::Le, Val::new(0), Val::new(2))),
                    i(
                        &[4],
                        Op::If {
                            cond: Val::new(3),
                            then_: blk(vec![], Term::Yield(vec![Val::new(1)])),
                            else_: blk(
                                vec![
                                    i(&[5], Op::F64Const(1.0)),
                                    i(&[6], Op::FBin(FBin::Sub, Val::new(0), Val::new(5))),
                                    i(&[7], Op::FBin(FBin::Add, Val::new(1), Val::new(0))),
                                ],
                                Term::TailCall(FuncId::new(1), vec![Val::new(6), Val::new(7)]),
                            ),
                        },
                    ),
                ],
                Term::Return(vec![Val::new(4)]),
            ),
        );
        let main = func(
            "main",
            &[],
            &[],
            &[F, F, F],
            blk(
                vec![
                    i(&[0], Op::F64Const(n)),
                    i(&[1], Op::F64Const(0.0)),
                    i(
                        &[2],
                        Op::Call(FuncId::new(1), vec![Val::new(0), Val::new(1)]),
                    ),
                    i(&[], Op::PrintReal(Val::new(2))),
                ],
                Term::Return(vec![]),
            ),
        );
        Module {
            funcs: vec![main, sum],
            main: Some(FuncId::new(0)),
            vectors: Default::default(),
            strings: vec![],
            cells: Default::default(),
        }
    }

    #[test]
    fn tail_loop_runs_in_constant_stack() {
        // 10^6 tail calls on a 256 KiB stack (10^7 in release builds).
        let n = if cfg!(debug_assertions) { 1e6 } else { 1e7 };
        let (out, r) = std::thread::Builder::new()
            .stack_size(256 << 10)
            .spawn(move || eval(&sum_loop(n), ""))
            .unwrap()
            .join()
            .unwrap();
        assert_eq!(r, Ok(()));
        let want = n * (n + 1.0) / 2.0;
        assert_eq!(out, crate::eval::format_real(want));
    }

    #[test]
    fn reads_until_end_of_input_and_counts() {
        // main: x = read; print x; y = read; print (sqrt (x*y)); read again.
        let main = func(
            "main",
            &[],
            &[],
            &[F, F, F, F, F],
            blk(
                vec![
                    i(&[0], Op::ReadReal(StrId::new(0))),
                    i(&[], Op::PrintReal(Val::new(0))),
                    i(&[], Op::PrintStr(StrId::new(1))),
                    i(&[1], Op::ReadReal(StrId::new(0))),
                    i(&[2], Op::FBin(FBin::Mul, Val::new(0), Val::new(1))),
                    i(&[3], Op::FUn(FUn::Sqrt, Val::new(2))),
                    i(&[], Op::PrintReal(Val::new(3))),
                    i(&[], Op::PrintStr(StrId::new(1))),
                    i(&[4], Op::ReadReal(StrId::new(0))),
                ],
                Term::Return(vec![]),
            ),
        );
        let m = Module {
            funcs: vec![main],
            main: Some(FuncId::new(0)),
            vectors: Default::default(),
            strings: vec![
                "a.vlad:1:2: error: `read-real` reached the end of input".into(),
                "\n".into(),
            ],
            cells: Default::default(),
        };
        let mut out = Vec::new();
        let mut counts = Counts::default();
        let r = run_counting(&m, &mut "2\n  #x8 \n".as_bytes(), &mut out, &mut counts);
        assert_eq!(String::from_utf8(out).unwrap(), "2\n4\n");
        assert_eq!(
            r,
            Err("a.vlad:1:2: error: `read-real` reached the end of input".into())
        );
        assert_eq!(counts.slots[2], 1);
        assert_eq!(counts.slots[5], 1);
        assert!(counts
            .json()
            .starts_with("{\"arithmetic\":{\"+\":0,\"-\":0,\"*\":1,"));
        let (_, r) = eval(&m, "1 x");
        assert_eq!(
            r,
            Err("a.vlad:1:2: error: `read-real` expects a real, found `x`".into())
        );
    }

    #[test]
    fn a_read_without_a_position_is_placed_at_the_running_call_site() {
        // f1 reads with a message of library code; main calls it at a site.
        let read = func(
            "read",
            &[],
            &[F],
            &[F],
            blk(
                vec![i(&[0], Op::ReadReal(StrId::new(0)))],
                Term::Return(vec![Val::new(0)]),
            ),
        );
        let main = func(
            "main",
            &[],
            &[],
            &[F],
            blk(
                vec![i(&[0], Op::CallAt(FuncId::new(0), vec![], StrId::new(1)))],
                Term::Return(vec![]),
            ),
        );
        let m = Module {
            funcs: vec![read, main],
            main: Some(FuncId::new(1)),
            vectors: Default::default(),
            strings: vec![
                "error: `read-real` reached the end of input".into(),
                "a.vlad:1:2\n  note: n".into(),
            ],
            cells: Default::default(),
        };
        let (_, r) = eval(&m, "");
        assert_eq!(
            r,
            Err("a.vlad:1:2: error: `read-real` reached the end of input\n  note: n".into())
        );
        let (_, r) = eval(&m, "y");
        assert_eq!(
            r,
            Err("a.vlad:1:2: error: `read-real` expects a real, found `y`\n  note: n".into())
        );
    }

    #[test]
    fn error_term_is_the_message() {
        let main = func(
            "main",
            &[],
            &[],
            &[B],
            blk(
                vec![
                    i(&[0], Op::BoolConst(false)),
                    i(
                        &[],
                        Op::If {
                            cond: Val::new(0),
                            then_: blk(vec![], Term::Yield(vec![])),
                            else_: blk(vec![], Term::Error(StrId::new(0))),
                        },
                    ),
                    i(&[], Op::PrintStr(StrId::new(0))),
                ],
                Term::Return(vec![]),
            ),
        );
        let m = Module {
            funcs: vec![main],
            main: Some(FuncId::new(0)),
            vectors: Default::default(),
            strings: vec!["error: boom".into()],
            cells: Default::default(),
        };
        assert_eq!(eval(&m, ""), (String::new(), Err("error: boom".into())));
    }
}
