//! The evaluator: core IR run directly, one frame of slots per call.
//!
//! Each lambda is compiled once (lazily, since the AD transformations add
//! lambdas while the program runs) into a [`Code`]: its bindings with every
//! variable resolved to a frame slot or an environment slot. Tail calls,
//! including the one `if-procedure` makes to the chosen thunk, reuse the
//! Rust frame, so VLAD loops run in constant Rust stack.

use crate::count::Counters;
use crate::value::{Closure, Value};
use base::diag::{Diagnostic, Span};
use ir::{ConstDatum, ConstId, EntityRef, LambdaId, PatId, Prim, Program, Rhs, Stmt, Tag, Var};
use std::collections::HashMap;
use std::io::{BufRead, Write};
use std::rc::Rc;

/// A run-time error: a message and, when known, where.
#[derive(Debug, Clone)]
pub struct RunError {
    pub message: String,
    pub span: Option<Span>,
    /// A parameter pattern that did not match: the fault is the call that
    /// passed the argument, one frame out, not the pattern itself.
    pub blame_caller: bool,
    /// Where the pattern that failed to match is, for a note.
    pub pattern_at: Option<Span>,
    /// The lambda whose code holds `span`, for the note on the
    /// derivatives in effect (`ir::message::derivative_note`).
    pub lambda: Option<LambdaId>,
    /// The lambda whose parameter pattern did not match.
    pub pattern_of: Option<LambdaId>,
}

impl RunError {
    pub fn new(message: impl Into<String>) -> RunError {
        RunError {
            message: message.into(),
            span: None,
            blame_caller: false,
            pattern_at: None,
            lambda: None,
            pattern_of: None,
        }
    }
}

pub type Result<T> = std::result::Result<T, RunError>;

/// A clean error where recursion on the Rust stack (nested calls, and
/// the AD operations' walks over values) has used the stack the thread
/// has (`base::stack`: smaller than usual under an address-space cap).
pub(crate) fn check_stack() -> Result<()> {
    if base::stack::exhausted() {
        return err(format!(
            "recursion too deep: the interpreter's stack ({} MiB) is used up",
            base::stack::size_mib()
        ));
    }
    Ok(())
}

pub fn err<T>(message: impl Into<String>) -> Result<T> {
    Err(RunError::new(message))
}

#[derive(Clone, Copy, Debug)]
enum Loc {
    Local(u32),
    Env(u32),
}

#[derive(Debug)]
enum Op {
    Const(ConstId),
    Copy(Loc),
    Closure(LambdaId, Vec<Loc>),
    Sibling(u32),
    App(Loc, Loc),
    Cons(Vec<Tag>, Loc, Loc),
    Car(Vec<Tag>, Loc, Option<PatId>),
    Cdr(Vec<Tag>, Loc, Option<PatId>),
    Check(Vec<Tag>, Loc, ConstId, Option<PatId>),
    EnvRef(Loc, u32),
    EnvUpdate(Loc, u32, Loc),
}

#[derive(Debug)]
struct Code {
    slots: usize,
    /// `ops[i]` writes slot `i + 1`; slot 0 is the parameter.
    ops: Vec<(Op, Option<Span>)>,
    result: Loc,
    /// The last op is an application whose value is the result.
    tail: bool,
    group: Option<ir::GroupId>,
}

fn compile(prog: &Program, l: LambdaId) -> Code {
    let lam = &prog.lambdas[l];
    let mut map: HashMap<Var, Loc> = HashMap::new();
    for (i, v) in lam.free.iter().enumerate() {
        map.insert(*v, Loc::Env(i as u32));
    }
    map.insert(lam.param, Loc::Local(0));
    let mut ops = Vec::with_capacity(lam.body.len());
    for (i, b) in lam.body.iter().enumerate() {
        ops.push((compile_rhs(&b.rhs, &map), b.span));
        map.insert(b.var, Loc::Local(i as u32 + 1));
    }
    let tail = matches!(lam.body.last(), Some(b) if b.var == lam.result && matches!(b.rhs, Rhs::App { .. }));
    Code {
        slots: lam.body.len() + 1,
        ops,
        result: map[&lam.result],
        tail,
        group: lam.group,
    }
}

fn compile_rhs(rhs: &Rhs, map: &HashMap<Var, Loc>) -> Op {
    let l = |v: &Var| map[v];
    match rhs {
        Rhs::Const(k) => Op::Const(*k),
        Rhs::Copy(v) => Op::Copy(l(v)),
        Rhs::Closure { lambda, env } => Op::Closure(*lambda, env.iter().map(l).collect()),
        Rhs::Sibling(i) => Op::Sibling(*i),
        Rhs::App { f, arg } => Op::App(l(f), l(arg)),
        Rhs::Cons { tags, car, cdr } => Op::Cons(tags.clone(), l(car), l(cdr)),
        Rhs::Car { tags, pair, pat } => Op::Car(tags.clone(), l(pair), *pat),
        Rhs::Cdr { tags, pair, pat } => Op::Cdr(tags.clone(), l(pair), *pat),
        Rhs::Check {
            tags,
            var,
            expect,
            pat,
        } => Op::Check(tags.clone(), l(var), *expect, *pat),
        Rhs::EnvRef { closure, index } => Op::EnvRef(l(closure), *index),
        Rhs::EnvUpdate {
            closure,
            index,
            value,
        } => Op::EnvUpdate(l(closure), *index, l(value)),
    }
}

/// Most nested non-tail calls. The CLI runs the interpreter on a thread
/// whose stack holds this many frames with room to spare (about 1 KiB
/// each in a debug build).
pub const MAX_DEPTH: usize = 1_000_000;

/// What `stalingrad` asked for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mode {
    /// Print every top-level value.
    Run,
    /// Check every `===>` expectation and report.
    Test,
}

/// The result of a test run.
#[derive(Clone, Debug, Default)]
pub struct TestReport {
    pub passed: usize,
    pub failed: usize,
}

pub struct Interp<'io> {
    pub prog: Program,
    pub memo: ad::AdMemo,
    pub counters: Counters,
    code: Vec<Option<Rc<Code>>>,
    consts: Vec<Option<Value>>,
    prim_closures: HashMap<(Tag, Prim), Value>,
    input: &'io mut dyn BufRead,
    pub(crate) out: &'io mut dyn Write,
    /// What `zero` and the transformations have met (docs/reference.md).
    pub(crate) values: crate::memo::ValueMemo,
    /// Non-tail calls in progress.
    depth: usize,
    /// Words read from input but not yet consumed.
    pending: std::collections::VecDeque<String>,
    /// The first this many top-level statements print nothing: a REPL
    /// runs its session's definitions again with each input, and their
    /// `write-real`s were seen the first time.
    pub quiet_stmts: usize,
    quiet: bool,
}

impl<'io> Interp<'io> {
    pub fn new(prog: Program, input: &'io mut dyn BufRead, out: &'io mut dyn Write) -> Self {
        Interp {
            prog,
            memo: ad::AdMemo::default(),
            counters: Counters::new(),
            code: Vec::new(),
            consts: Vec::new(),
            prim_closures: HashMap::new(),
            input,
            out,
            pending: Default::default(),
            depth: 0,
            values: Default::default(),
            quiet_stmts: 0,
            quiet: false,
        }
    }

    fn code(&mut self, l: LambdaId) -> Rc<Code> {
        let i = l.index();
        if i >= self.code.len() {
            self.code.resize(self.prog.lambdas.len().max(i + 1), None);
        }
        if let Some(c) = &self.code[i] {
            return c.clone();
        }
        let c = Rc::new(compile(&self.prog, l));
        self.code[i] = Some(c.clone());
        c
    }

    /// Runs the top-level statements. In [`Mode::Run`] each shown value is
    /// printed; in [`Mode::Test`] each expectation is checked and reported,
    /// with `file` naming the file in the report lines.
    pub fn run_main(
        &mut self,
        mode: Mode,
        map: &base::diag::SourceMap,
    ) -> std::result::Result<TestReport, Diagnostic> {
        let mut slots: HashMap<Var, Value> = HashMap::new();
        let main = std::mem::take(&mut self.prog.main);
        let mut report = TestReport::default();
        let result = (|| -> std::result::Result<(), Diagnostic> {
            for (i, st) in main.iter().enumerate() {
                self.quiet = i < self.quiet_stmts;
                match st {
                    Stmt::Bind(b) => {
                        let v = self
                            .eval_top(&b.rhs, &slots)
                            .map_err(|e| self.diagnostic(map, &main, e, b.span))?;
                        slots.insert(b.var, v);
                    }
                    Stmt::Show { var, expect, span } => {
                        let v = slots.get(var).cloned().unwrap_or(Value::Nil);
                        self.settle(&v)
                            .map_err(|e| self.diagnostic(map, &main, e, Some(*span)))?;
                        match mode {
                            Mode::Run => {
                                let mut s = v.to_text();
                                s.push('\n');
                                self.emit(&s)
                                    .map_err(|e| self.diagnostic(map, &main, e, Some(*span)))?;
                            }
                            Mode::Test => {
                                if let Some(exp) = expect {
                                    let got = v.to_expect();
                                    let line = if crate::value::expect_matches(&got, &exp.datum) {
                                        report.passed += 1;
                                        format!("PASS {}\n", map.locate(*span))
                                    } else {
                                        report.failed += 1;
                                        format!(
                                            "FAIL {}: expected {}, got {}\n",
                                            map.locate(*span),
                                            crate::value::expect_text(&exp.datum),
                                            v.describe()
                                        )
                                    };
                                    self.emit(&line)
                                        .map_err(|e| self.diagnostic(map, &main, e, Some(*span)))?;
                                }
                            }
                        }
                    }
                }
            }
            Ok(())
        })();
        self.prog.main = main;
        self.quiet = false;
        let _ = self.out.flush();
        result.map(|_| report)
    }

    pub(crate) fn emit(&mut self, s: &str) -> Result<()> {
        if self.quiet {
            return Ok(());
        }
        self.out.write_all(s.as_bytes()).or_else(|e| {
            if e.kind() == std::io::ErrorKind::BrokenPipe {
                Ok(())
            } else {
                err(format!("cannot write output: {e}"))
            }
        })
    }

    /// The diagnostic of `e`; `main` is the program's top level, which
    /// `run_main` holds while it runs.
    fn diagnostic(
        &self,
        map: &base::diag::SourceMap,
        main: &[Stmt],
        e: RunError,
        at: Option<Span>,
    ) -> Diagnostic {
        let e = blame(e, at, None);
        let mut d = Diagnostic::new(e.span, e.message);
        if let Some(p) = e.pattern_at {
            d = d.with_note(format!("the pattern is at {}", map.locate(p)));
        }
        let note = e.lambda.and_then(|l| {
            let sites = ir::operators::OperatorSites::new(&self.prog, main);
            ir::message::derivative_note(&self.prog, &sites, l, map)
        });
        if let Some(note) = note {
            d = d.with_note(note);
        }
        d
    }

    fn eval_top(&mut self, rhs: &Rhs, slots: &HashMap<Var, Value>) -> Result<Value> {
        let get = |v: &Var| -> Result<Value> {
            slots.get(v).cloned().ok_or_else(|| {
                RunError::new("internal error: top-level variable read before it was bound")
            })
        };
        match rhs {
            Rhs::Const(k) => self.const_value(*k),
            Rhs::Copy(v) => get(v),
            Rhs::Closure { lambda, env } => {
                let env = env.iter().map(get).collect::<Result<Vec<_>>>()?;
                Ok(Value::Closure(Rc::new(Closure {
                    lambda: *lambda,
                    env: env.into_boxed_slice(),
                })))
            }
            Rhs::Sibling(_) => err("internal error: sibling reference at top level"),
            Rhs::App { f, arg } => {
                let (f, a) = (get(f)?, get(arg)?);
                self.apply(f, a)
            }
            Rhs::Cons { tags, car, cdr } => self.cons_t(tags, get(car)?, get(cdr)?),
            Rhs::Car { tags, pair, pat } => self.car_t(tags, get(pair)?, true, *pat),
            Rhs::Cdr { tags, pair, pat } => self.car_t(tags, get(pair)?, false, *pat),
            Rhs::Check {
                tags,
                var,
                expect,
                pat,
            } => self.check_t(tags, get(var)?, *expect, *pat),
            Rhs::EnvRef { closure, index } => self.env_ref(get(closure)?, *index),
            Rhs::EnvUpdate {
                closure,
                index,
                value,
            } => self.env_update(get(closure)?, *index, get(value)?),
        }
    }

    /// Applies a procedure to an argument.
    pub fn apply(&mut self, f: Value, arg: Value) -> Result<Value> {
        self.apply_from(None, f, arg)
    }

    /// Applies a procedure to an argument, for the code of lambda `caller`
    /// (`None`: the top level, a primitive or an AD operation).
    fn apply_from(&mut self, caller: Option<LambdaId>, f: Value, arg: Value) -> Result<Value> {
        let mut tails = TailSites::default();
        self.apply_loop(caller, f, arg, &mut tails)
            .map_err(|e| tails.blame(e))
    }

    fn apply_loop(
        &mut self,
        mut caller: Option<LambdaId>,
        mut f: Value,
        mut arg: Value,
        tails: &mut TailSites,
    ) -> Result<Value> {
        loop {
            match f {
                Value::Closure(c) => {
                    let code = self.code(c.lambda);
                    let mut slots: Vec<Value> = Vec::with_capacity(code.slots);
                    slots.push(arg);
                    let n = code.ops.len() - usize::from(code.tail);
                    for (op, span) in &code.ops[..n] {
                        let v = self
                            .op(op, &slots, &c, &code)
                            .map_err(|e| blame(e, *span, Some(c.lambda)))?;
                        slots.push(v);
                    }
                    if code.tail {
                        match &code.ops[n] {
                            (Op::App(g, a), span) => {
                                let g2 = load(*g, &slots, &c);
                                arg = load(*a, &slots, &c);
                                tails.enter(&self.prog, *span, c.lambda, &g2);
                                caller = Some(c.lambda);
                                f = g2;
                                continue;
                            }
                            _ => unreachable!("tail op is an application"),
                        }
                    }
                    return Ok(load(code.result, &slots, &c));
                }
                Value::Prim(p) => match self.prim(p, arg)? {
                    crate::prims::Outcome::Value(v) => return Ok(v),
                    crate::prims::Outcome::TailCall(g, a) => {
                        // A chosen thunk that is no procedure is the fault
                        // of the primitive's call.
                        if matches!(g, Value::Closure(_) | Value::Prim(_)) {
                            tails.leave_prim();
                        }
                        caller = None;
                        f = g;
                        arg = a;
                    }
                },
                other => {
                    let world = caller.map(|l| self.prog.world(l)).unwrap_or_default();
                    return err(ir::message::not_a_procedure(&other.describe_found(&world)));
                }
            }
        }
    }

    fn op(&mut self, op: &Op, slots: &[Value], c: &Rc<Closure>, code: &Code) -> Result<Value> {
        let ld = |l: &Loc| load(*l, slots, c);
        match op {
            Op::Const(k) => self.const_value(*k),
            Op::Copy(l) => Ok(ld(l)),
            Op::Closure(lambda, env) => Ok(Value::Closure(Rc::new(Closure {
                lambda: *lambda,
                env: env.iter().map(ld).collect(),
            }))),
            Op::Sibling(i) => {
                let g = code
                    .group
                    .ok_or_else(|| RunError::new("internal error: sibling outside a group"))?;
                let lambda = self.prog.groups[g].lambdas[*i as usize];
                Ok(Value::Closure(Rc::new(Closure {
                    lambda,
                    env: c.env.clone(),
                })))
            }
            Op::App(f, a) => {
                // Non-tail calls nest on the Rust stack: bound them, so
                // runaway recursion is an error, not a crash.
                if self.depth >= MAX_DEPTH {
                    return err(format!(
                        "recursion too deep: more than {MAX_DEPTH} nested calls that are not tail calls"
                    ));
                }
                check_stack()?;
                self.depth += 1;
                let r = self.apply_from(Some(c.lambda), ld(f), ld(a));
                self.depth -= 1;
                r
            }
            Op::Cons(tags, a, b) => self.cons_t(tags, ld(a), ld(b)),
            Op::Car(tags, p, pat) => self.car_t(tags, ld(p), true, *pat),
            Op::Cdr(tags, p, pat) => self.car_t(tags, ld(p), false, *pat),
            Op::Check(tags, v, k, pat) => self.check_t(tags, ld(v), *k, *pat),
            Op::EnvRef(cl, i) => self.env_ref(ld(cl), *i),
            Op::EnvUpdate(cl, i, v) => self.env_update(ld(cl), *i, ld(v)),
        }
    }

    /// The value of a constant of (possibly transformed) code, built once.
    pub fn const_value(&mut self, k: ConstId) -> Result<Value> {
        let i = k.index();
        if let Some(Some(v)) = self.consts.get(i) {
            return Ok(v.clone());
        }
        let c = self.prog.consts[k].clone();
        let mut v = datum_value(&c.datum);
        for tag in c.tags.iter().rev() {
            v = self.tag_const(*tag, v)?;
        }
        if i >= self.consts.len() {
            self.consts.resize(self.prog.consts.len().max(i + 1), None);
        }
        self.consts[i] = Some(v.clone());
        Ok(v)
    }

    /// `tag` applied to a constant: forward constants get a zero tangent.
    fn tag_const(&mut self, tag: Tag, v: Value) -> Result<Value> {
        match tag {
            Tag::Forward => {
                let z = self.zero(&v)?;
                let t = self.tag_wrap(Tag::Perturb, z)?;
                self.bundle(v, t)
            }
            _ => self.tag_wrap(tag, v),
        }
    }

    /// The closure of the AD prelude entry `tag(p)`.
    pub(crate) fn prim_closure(&mut self, tag: Tag, p: Prim) -> Value {
        if let Some(v) = self.prim_closures.get(&(tag, p)) {
            return v.clone();
        }
        let l = ad::prim_transform(&mut self.prog, &mut self.memo, tag, p);
        let v = Value::Closure(Rc::new(Closure {
            lambda: l,
            env: Box::new([]),
        }));
        self.prim_closures.insert((tag, p), v.clone());
        v
    }

    fn env_ref(&mut self, c: Value, i: u32) -> Result<Value> {
        match c {
            Value::Closure(c) => c
                .env
                .get(i as usize)
                .cloned()
                .ok_or_else(|| RunError::new("internal error: environment slot out of range")),
            other => err(format!(
                "expected the sensitivity of a procedure, found {}",
                other.describe()
            )),
        }
    }

    fn env_update(&mut self, c: Value, i: u32, v: Value) -> Result<Value> {
        match c {
            Value::Closure(c) if (i as usize) < c.env.len() => {
                let mut env = c.env.clone();
                env[i as usize] = v;
                Ok(Value::Closure(Rc::new(Closure {
                    lambda: c.lambda,
                    env,
                })))
            }
            other => err(format!(
                "expected the sensitivity of a procedure, found {}",
                other.describe()
            )),
        }
    }

    /// Reads the next whitespace-separated word of input.
    pub(crate) fn read_word(&mut self) -> Result<Option<String>> {
        loop {
            if let Some(w) = self.pending.pop_front() {
                return Ok(Some(w));
            }
            // A program waiting for input shows what it printed first.
            let _ = self.out.flush();
            let mut line = String::new();
            let n = self
                .input
                .read_line(&mut line)
                .or_else(|e| err(format!("read-real: cannot read input: {e}")))?;
            if n == 0 {
                return Ok(None);
            }
            self.pending
                .extend(line.split_whitespace().map(str::to_string));
        }
    }

    /// The error of `found`, which an operation of the world `world` took
    /// apart, not matching `pat`.
    pub(crate) fn pattern_error(
        &self,
        world: &[Tag],
        pat: Option<PatId>,
        found: &Value,
    ) -> RunError {
        let found = found.describe_found(world);
        match pat {
            Some(p) => {
                let info = &self.prog.patterns[p];
                let owner = info.owner.as_deref().unwrap_or("lambda");
                let mut e = RunError::new(ir::message::pattern_mismatch(owner, &info.text, &found));
                e.blame_caller = owner != "let";
                e.pattern_at = Some(info.span);
                e
            }
            None => RunError::new(ir::message::not_a_pair(&found)),
        }
    }
}

/// Attributes an error to the form at `span`, in the code of `lambda`,
/// unless it already points into user code: as an error travels out
/// through the calls, the innermost position in the user's files wins,
/// since library code (file 0) is not where the user can fix anything.
fn blame(mut e: RunError, span: Option<Span>, lambda: Option<LambdaId>) -> RunError {
    if e.blame_caller {
        e.blame_caller = false;
        e.pattern_of = lambda;
        return e;
    }
    if !in_user(e.span) && (in_user(span) || e.span.is_none()) {
        e.span = span.or(e.span);
        e.lambda = lambda;
    }
    e
}

fn in_user(s: Option<Span>) -> bool {
    s.is_some_and(|s| s.file.0 != 0)
}

/// The last tail call an application made from the user's code into code
/// that is not the user's: the call is at fault for an error there that
/// has no position in the user's files, as if it were not a tail call
/// (compiled code makes such a call one that sets the call site: `lower`,
/// `sites.rs`), when the callee is a primitive as the user sees it (a
/// primitive, a transformed one from the AD prelude, or not a procedure)
/// or a procedure of the standard library whose parameter did not match.
#[derive(Default)]
struct TailSites {
    user: Option<TailSite>,
    /// `user` before the tail call of a primitive: `if-procedure` goes on
    /// to its thunk, code of the user, which compiled code does not call.
    before_prim: Option<TailSite>,
}

#[derive(Clone, Copy)]
struct TailSite {
    span: Span,
    /// The lambda whose code holds the call.
    lambda: LambdaId,
    /// The library procedure called, `None` for a primitive.
    callee: Option<LambdaId>,
}

impl TailSites {
    /// Records the tail call at `span` in the code of `lambda` of `f`.
    fn enter(&mut self, prog: &Program, span: Option<Span>, lambda: LambdaId, f: &Value) {
        let callee = match f {
            Value::Prim(_) => {
                self.before_prim = self.user;
                None
            }
            Value::Closure(c) if in_user(prog.lambdas[c.lambda].span) => return,
            Value::Closure(c) if prog.prim_chain(c.lambda).is_none() => Some(c.lambda),
            _ => None,
        };
        if let Some(span) = span.filter(|s| in_user(Some(*s))) {
            self.user = Some(TailSite {
                span,
                lambda,
                callee,
            });
        }
    }

    /// A primitive went on to call a procedure of the user's code.
    fn leave_prim(&mut self) {
        self.user = self.before_prim;
    }

    fn blame(&self, e: RunError) -> RunError {
        match self.user {
            Some(t) if t.callee.is_none() || t.callee == e.pattern_of => {
                blame(e, Some(t.span), Some(t.lambda))
            }
            _ => e,
        }
    }
}

fn load(l: Loc, slots: &[Value], c: &Closure) -> Value {
    match l {
        Loc::Local(i) => slots[i as usize].clone(),
        Loc::Env(i) => c.env[i as usize].clone(),
    }
}

pub(crate) fn datum_value(d: &ConstDatum) -> Value {
    match d {
        ConstDatum::Real(r) => Value::Real(*r),
        ConstDatum::Bool(b) => Value::Bool(*b),
        ConstDatum::Nil => Value::Nil,
        ConstDatum::Prim(p) => Value::Prim(*p),
        ConstDatum::Pair(a, b) => Value::pair(datum_value(a), datum_value(b)),
        ConstDatum::Vector(items) => {
            Value::Vector(Rc::new(items.iter().map(datum_value).collect()))
        }
    }
}
