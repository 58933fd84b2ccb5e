//! The flow analysis: an abstract interpreter over the core IR that
//! specialises every procedure on the abstract values it meets.
//!
//! A specialisation ([`Spec`]) is a lambda applied to an abstract closure
//! environment and an abstract argument. Applying an abstract closure looks
//! up (or creates) the specialisation of its key and uses its current
//! result; the whole program is re-analysed from the top until no result
//! changes (results only grow, by [`Domain::join_at`]). AD operations act on
//! abstract values exactly as the interpreter's act on values, calling the
//! same transformations of crate `ad`: that is where the transformation of
//! closures moves from run time to compile time.
//!
//! Termination (`analysis/recursion.rs`): a recursive call of a lambda
//! already on the analysis stack [`UNROLL`] times forgets its constants
//! ([`Domain::widen`]), so a loop counter unrolls a few times at most, and
//! a recursion that a conditional of unknown condition continues forgets
//! after [`UNROLL_BRANCHED`] rounds the constants that change from round
//! to round ([`Domain::widen_changed`]); a recursive lambda whose arguments
//! keep changing shape (a list built by a loop, the tape of reverse mode
//! through a loop) gets, after [`GROW`] specialisations, arguments joined
//! into unions of shapes ([`Site::Arg`]), which are bounded. A list longer
//! than [`crate::domain::MAX_LIST_LENGTH`], passed to a procedure or
//! written as a literal, is a list of run-time length to the analysis
//! ([`Domain::widen_long_lists`]), whatever its length. Conditionals
//! whose arms return different shapes return a union. A binding whose
//! operand is a union is analysed once per member ([`Plan::Switch`]): code
//! dispatches on the member's tag at run time. No bound on the depth of
//! abstract values is needed besides these (values are hash-consed, so
//! depth is not size: a chain of procedures each calling the one before
//! is a chain of closures as deep as the program is long); more than
//! [`MAX_SPECS`] specialisations ([`MAX_FIXED_SPECS`] while the analysis
//! is of fixed shape), the memory budget and the stack stop
//! the analysis with an error naming the expression. The AD operations map
//! over unions member by member (`zero`, `plus`, [`Ops::map_union`]): the
//! result is a union of its own, and lowering makes a function per map
//! that loops over a recursive union at run time. An operation that needs
//! a shape and meets a union holding itself splits on it once per level
//! of the fixed-shape value it compares it with (at most `MAX_SPLITS`
//! nested splits).
//!
//! Type errors the analysis finds on a path are not compile-time errors
//! (docs/reference.md): they become [`Plan::Error`], a run-time error in the
//! compiled program with the interpreter's message.

use crate::adops::{Op, Ops};
use crate::domain::{Av, AvId, Domain, Site};
use base::diag::{Diagnostic, Span};
use ir::{LambdaId, Prim, Program, Rhs, Stmt, Var};
// Fx, not std's SipHash: every binding of every specialisation is looked
// up and stored here (with crate `ad`'s tables, a sixth of the build of
// a constant derivative tower).
use rustc_hash::{FxHashMap as HashMap, FxHashSet as HashSet};

mod recursion;
mod split;

/// How many specialisations a recursive lambda may get that differ only in
/// their constants: fixed-size recursions (unit vectors, `map-n` over a
/// known length) unroll fully below this; loops over run-time data widen.
/// The budget is per widened key, so that two uses of `map-n` with
/// different procedures do not share one. 64 rather than 32: in
/// `examples/11-saddle.vlad` a 5-step loop nested in a 10-step one, under
/// reverse mode, needs more than 32 and would otherwise keep a tape of
/// run-time length.
pub const UNROLL: u32 = 64;
/// [`UNROLL`], in rounds nested in one another, for a recursion continued
/// by a conditional whose condition
/// is known only at run time: it will not end at compile time, whatever
/// its constants do, so unrolling it is worth only a few rounds (a loop of
/// known length nested in it still unrolls: its own conditions are known).
pub const UNROLL_BRANCHED: u32 = 4;
/// Most specialisations accepted of a small program; a larger one gets
/// [`SPECS_PER_BINDING`] more per binding of its own code, so that no
/// program is refused for its size alone. A runaway analysis is small
/// code specialised without end, and stops at about the same count
/// whatever the program around it.
pub const MAX_SPECS: usize = 50_000;
/// See [`MAX_SPECS`]: the examples and benchmarks need up to 90 per
/// binding (examples/11-saddle.vlad: 20,000 for 223).
pub const SPECS_PER_BINDING: usize = 200;
/// Most specialisations of an analysis of fixed shape: one that has made
/// no union and summarised no recursion, so that every value is as the
/// program's constants make it and the count is bounded by them (a
/// derivative tower of constant height, whose specialisations grow
/// about ninefold per level of reverse mode and threefold per level of
/// forward mode: an alternating tower of height 8 needs 800,000). A
/// runaway is a recursion that a condition known only at run time
/// continues (a tower of run-time height), or one that keeps growing and
/// is summarised into unions: either stops at [`MAX_SPECS`]. The memory
/// budget bounds what this allows.
pub const MAX_FIXED_SPECS: usize = 1_500_000;
/// Deepest nesting of AD transformations (a transform of a transform
/// ..., counted along `ir::Origin`) of a closure that holds a union.
/// A closure of fixed shape nests AD as deep as the program's constants
/// say (a derivative tower of constant height: forward, height 8 builds
/// in about a second; reverse, each level multiplies the specialisations
/// by five, and height 7 needs 150,000, past [`MAX_SPECS`] but within
/// [`MAX_FIXED_SPECS`]). A union is what
/// summarising a recursion whose arguments kept growing makes (a
/// derivative tower of run-time height): it may hold itself, and AD on
/// it would nest without end. Every program of the examples, tests,
/// corpus and benchmarks nests at most 4 deep; past this depth, AD on a
/// closure holding a union is refused before the transformation is made,
/// not after minutes of it by the memory budget.
pub const MAX_AD_DEPTH: u32 = 6;
/// Most passes over the program before the analysis gives up.
pub const MAX_PASSES: u32 = 1000;
/// How many times a lambda's recursive calls may pass arguments deeper
/// than any it had before, each time making a new specialisation, before
/// their arguments are joined into unions of shapes: a list of known
/// length up to about this is built as a fixed-shape value.
pub const GROW: u32 = 8;
/// How many splits may nest in one binding. Each split makes one
/// occurrence of a union in an operand one of its members, and the
/// operations that need shapes compare the operand with something of
/// fixed shape (a constant pattern, the tangent given to `bundle`, the
/// zero a custom sensitivity must conform to) or look one level into it:
/// so a union that holds itself (a list of run-time length) is split once
/// per level of the fixed side, one member going on at each level
/// (`'(1 2 3)` against a list of run-time length: four splits). A list
/// longer than [`crate::domain::MAX_LIST_LENGTH`] reaches no procedure
/// as a fixed shape; a constant pattern may be larger, and gets twice its size more (a split on a tagged list
/// may take two).
const MAX_SPLITS: u32 = 256;
/// How many cases the splits of one binding may analyse in all: a guard
/// on time should several members go on at each level (every level
/// multiplies the cases), which no operation on a union of distinct
/// kinds of members has been seen to do.
const MAX_SPLIT_CASES: u32 = 20_000;

ir::entity!(SpecId, "S");

/// What the code for one binding does, decided by the analysis.
#[derive(Clone, Debug, PartialEq)]
pub enum Plan {
    /// Computed from the operands' abstract values (pairs, closures, tag
    /// operations, constants, copies).
    Plain,
    /// A call of a known specialisation.
    Call(SpecId),
    /// A primitive on the argument's representation.
    Prim(Prim),
    /// `build-vector`: how each element is made (an application of the
    /// procedure to an index known only at run time).
    Build(Box<BindInfo>),
    /// `if-procedure`: the specialisations of the thunks that may run.
    If {
        then_: Option<SpecId>,
        else_: Option<SpecId>,
    },
    /// A constant pattern that must be checked at run time.
    Check,
    /// Always fails at run time with this message.
    Error(Box<str>),
    /// Never reached: an earlier binding never returns.
    Dead,
    /// A split on a union ([`Switch`]), boxed: most bindings are not
    /// split, and every binding of every specialisation has a plan (a
    /// tower of 800,000 specialisations has 12.7 million).
    Switch(Box<Switch>),
}

/// The operand `var` holds, at `path` (the child taken at each step into
/// pairs, tags, bundles and closure environments), a union: the binding is
/// analysed once per member, with the operand narrowed to that member, and
/// the code dispatches on the member's tag. `cases` follow the union's
/// member order; the binding's value is the join of theirs.
#[derive(Clone, Debug, PartialEq)]
pub struct Switch {
    pub var: Var,
    pub path: Vec<u32>,
    pub cases: Vec<(AvId, BindInfo)>,
}

#[derive(Clone, Debug, PartialEq)]
pub struct BindInfo {
    pub av: AvId,
    pub plan: Plan,
}

/// One specialised procedure.
#[derive(Clone, Debug)]
pub struct Spec {
    pub lambda: LambdaId,
    pub env: Vec<AvId>,
    pub arg: AvId,
    pub result: AvId,
    /// One entry per binding of the lambda's body (after the fixpoint).
    pub binds: Vec<BindInfo>,
    visited: u32,
    /// The pass whose analysis of it ended last (`visited` while it is
    /// under way).
    done: u32,
    /// The context of the unions made in its body (see [`Site`]).
    ctx: u32,
}

/// The analysed program, as data that lowering reads.
pub struct Analysis {
    /// The program (with the lambdas AD made), the abstract values and
    /// what the shape operations remember: lowering continues them on
    /// symbolic values in its own mode ([`Ops::into_mode`]).
    pub ops: Ops,
    pub specs: Vec<Spec>,
    /// One entry per `Stmt::Bind` of `prog.main`, in order.
    pub main: Vec<BindInfo>,
    /// How many times the whole program was analysed.
    pub iterations: u32,
}

impl Analysis {
    pub fn spec(&self, s: SpecId) -> &Spec {
        &self.specs[s.0 as usize]
    }

    /// Is the specialisation used by the analysed program? One that only
    /// earlier passes reached (before the values it saw grew) has stale
    /// results and is never called.
    pub fn is_live(&self, s: SpecId) -> bool {
        self.specs[s.0 as usize].visited == self.iterations
    }
}

/// Analyses a whole program.
pub fn analyze(prog: Program) -> Result<Analysis, Diagnostic> {
    // The program's own code (file 0 is the standard library).
    let bindings: usize = prog.main.len()
        + prog
            .lambdas
            .iter()
            .filter(|(_, l)| l.span.is_some_and(|s| s.file.0 != 0))
            .map(|(_, l)| l.body.len())
            .sum::<usize>();
    let mut a = Analyzer {
        max_specs: MAX_SPECS + SPECS_PER_BINDING * bindings,
        ops: Ops::new(prog),
        specs: Vec::new(),
        index: HashMap::default(),
        budget: HashMap::default(),
        grown: HashMap::default(),
        splits: 0,
        split_cases: 0,
        contexts: HashMap::default(),
        ctx: u32::MAX,
        summary: HashMap::default(),
        branched_recursion: false,
        grows_by_grow: HashSet::default(),
        read_unfinished: false,
        newest_at_ad_depth: Vec::new(),
        rounds: HashMap::default(),
        armed: None,
        stack: Vec::new(),
        branching: false,
        iteration: 0,
        changed: false,
        main: Vec::new(),
    };
    loop {
        a.iteration += 1;
        a.changed = false;
        a.read_unfinished = false;
        let generation = a.ops.dom.generation;
        a.main = a.analyze_main()?;
        if let Some(what) = &a.ops.vector_met {
            return Err(Diagnostic::new(
                None,
                format!(
                    "{what}: vectors are not compiled yet (`stalingrad run` runs this program)"
                ),
            ));
        }
        if let Some(l) = a.ops.mode.too_deep {
            let e = a.too_deep_ad(l);
            return Err(Diagnostic::new(e.span, e.message));
        }
        if std::env::var_os("VLAD_FLOW_TRACE").is_some() {
            eprintln!(
                "pass {}: {} specialisations, {} unions, generation {} -> {}",
                a.iteration,
                a.specs.len(),
                a.ops.dom.union_ids().len(),
                generation,
                a.ops.dom.generation
            );
            a.trace_census();
            eprintln!(
                "  settled: {} (a result read before it was final: {})",
                a.settled(),
                a.read_unfinished
            );
        }
        if (!a.changed || a.settled()) && a.ops.dom.generation == generation {
            break;
        }
        if a.iteration >= MAX_PASSES {
            // The lambda whose specialisations were made last is the one
            // that keeps growing, when any does: positioned there if it is
            // the user's (file 0 is the standard library).
            let newest = a.specs.last().map(|s| s.lambda);
            let span = newest
                .and_then(|l| a.ops.prog.lambdas[l].span)
                .filter(|s| s.file.0 != 0);
            let growing = newest.map_or(String::new(), |l| {
                format!(
                    "; the specialisations of `{}` keep growing ({} in all)",
                    a.lambda_name(l),
                    a.specs.len()
                )
            });
            return Err(Diagnostic::new(
                span,
                format!(
                    "the flow analysis did not converge in {MAX_PASSES} passes \
                     (the program's values keep changing shape{growing})"
                ),
            ));
        }
    }
    Ok(Analysis {
        ops: a.ops,
        specs: a.specs,
        main: a.main,
        iterations: a.iteration,
    })
}

type SpecKey = (LambdaId, Box<[AvId]>, AvId);

/// A recursive lambda's summary of its recursive calls in one environment
/// it was closed over: the summary's number (its join sites'), and the
/// joined environment and argument.
type Summary = (u32, Box<[AvId]>, AvId);

struct Analyzer {
    /// [`MAX_SPECS`] for this program.
    max_specs: usize,
    ops: Ops,
    specs: Vec<Spec>,
    index: HashMap<SpecKey, SpecId>,
    /// Specialisations created per widened key (see [`UNROLL`]), and
    /// whether a recursive call asked for the key (whose count decides).
    budget: HashMap<SpecKey, (u32, bool)>,
    /// How often a lambda's recursive calls made a specialisation deeper
    /// than all before, and that depth (see [`GROW`]).
    grown: HashMap<LambdaId, (u32, u32)>,
    /// Splits under way in the binding being analysed.
    splits: u32,
    /// Cases its splits analysed so far (see [`MAX_SPLIT_CASES`]).
    split_cases: u32,
    /// Contexts of union sites, by specialisation key without unions.
    contexts: HashMap<SpecKey, u32>,
    /// The context being analysed (`u32::MAX` for the top level).
    ctx: u32,
    /// The joined environment and argument of a lambda's recursive calls,
    /// once they are joined, per environment the lambda was closed over.
    summary: HashMap<(LambdaId, Box<[AvId]>), Summary>,
    /// Set once a recursion continued by a conditional whose condition is
    /// known only at run time was met (see [`MAX_FIXED_SPECS`]).
    branched_recursion: bool,
    /// Lambdas a recursive call of which is summarised after [`GROW`]
    /// rounds that grow (the others after [`UNROLL`]).
    grows_by_grow: HashSet<LambdaId>,
    /// Set when the pass read the result of a specialisation whose
    /// analysis in this pass had not ended (a recursion).
    read_unfinished: bool,
    /// By AD depth (see [`crate::Analysing`]): how many specialisations
    /// there were once the newest of lambdas that deep was made.
    newest_at_ad_depth: Vec<usize>,
    /// The last round of each recursion continued by a condition known
    /// only at run time (see `Analyzer::nesting_round`).
    rounds: HashMap<LambdaId, recursion::Round>,
    /// The innermost round being analysed that is refused if it nests AD
    /// deeper than the one before it.
    armed: Option<recursion::Armed>,
    /// Lambdas being analysed, innermost last, each with whether it was
    /// called as an arm of a conditional whose condition is known only at
    /// run time.
    stack: Vec<(LambdaId, bool, SpecId)>,
    /// Set while a conditional of unknown condition applies its arms.
    branching: bool,
    iteration: u32,
    changed: bool,
    main: Vec<BindInfo>,
}

/// A failure of the analysis itself (not of the analysed program).
struct Limit {
    message: String,
    /// The innermost binding the analysis was at.
    span: Option<Span>,
}

type R<T> = Result<T, Limit>;

impl Limit {
    /// Positions the failure at the innermost binding of the user's
    /// program it happened under: a position in the standard library
    /// (file 0) tells the user nothing about their program, so the call
    /// into the library that led there takes its place.
    fn locate(&mut self, outer: Option<Span>) {
        let in_library = |s: Option<Span>| s.is_some_and(|s| s.file.0 == 0);
        match self.span {
            None => self.span = outer,
            Some(_) if in_library(self.span) && outer.is_some() && !in_library(outer) => {
                self.message.push_str(" (in the standard library)");
                self.span = outer;
            }
            Some(_) => {}
        }
    }
}

fn limit<T>(message: impl Into<String>) -> R<T> {
    Err(Limit {
        message: message.into(),
        span: None,
    })
}

impl Analyzer {
    fn analyze_main(&mut self) -> Result<Vec<BindInfo>, Diagnostic> {
        let stmts = self.ops.prog.main.clone();
        let mut vals: HashMap<Var, AvId> = HashMap::default();
        let mut out = Vec::new();
        let mut dead = false;
        for st in &stmts {
            if let Stmt::Bind(b) = st {
                if dead {
                    out.push(BindInfo {
                        av: self.ops.dom.bottom(),
                        plan: Plan::Dead,
                    });
                    continue;
                }
                let info = self
                    .eval_rhs(b.var, &b.rhs, &vals, &[], None)
                    .map_err(|mut e| {
                        e.locate(b.span);
                        Diagnostic::new(e.span, e.message)
                    })?;
                if info.av == self.ops.dom.bottom() {
                    dead = true;
                }
                vals.insert(b.var, info.av);
                out.push(info);
            }
        }
        Ok(out)
    }

    /// The specialisation of `lambda` on `env` and `arg`, analysed (again)
    /// if this iteration has not done so yet.
    fn call(&mut self, lambda: LambdaId, env: &[AvId], arg: AvId) -> R<(AvId, SpecId)> {
        // The analysis of a call analyses its callee first: a chain of
        // specialisations that keeps growing would overflow the stack.
        // Stop at nine tenths of the memory budget, positioned, before
        // the allocator stops the process unpositioned.
        let budget = base::memory::budget();
        if budget != usize::MAX && base::memory::in_use() > budget / 10 * 9 {
            return limit(format!(
                "the analysis needs more memory than its budget ({} MiB; `--max-memory` sets it) \
                 with {} specialisations (while specialising `{}`)",
                budget >> 20,
                self.specs.len(),
                self.lambda_name(lambda)
            ));
        }
        if base::stack::exhausted() {
            return limit(format!(
                "the analysis nests specialisations deeper than its stack ({} MiB) holds (while specialising `{}`)",
                base::stack::size_mib(),
                self.lambda_name(lambda)
            ));
        }
        let branch = std::mem::take(&mut self.branching);
        let (env, arg, wkey, recursive, caller) = self.call_key(lambda, env, arg);
        let armed = caller.and_then(|c| self.nesting_round(lambda, c, &env, arg));
        let (grown, deepest) = self.grown.get(&lambda).copied().unwrap_or((0, 0));
        if let Some(l) = self.ops.mode.too_deep {
            return Err(self.too_deep_ad(l));
        }
        let key: SpecKey = (lambda, env.clone(), arg);
        let id = match self.index.get(&key) {
            Some(id) => *id,
            None => {
                if self.specs.len() >= self.spec_limit() {
                    if std::env::var_os("VLAD_FLOW_TRACE").is_some() {
                        self.trace_census();
                    }
                    return Err(self.too_many_specs(lambda));
                }
                let ad = crate::adops::ad_depth(&mut self.ops, lambda);
                if let Some(a) = self.armed.as_ref().filter(|a| ad > a.ad) {
                    return Err(self.nests_deeper(a));
                }
                let id = SpecId(self.specs.len() as u32);
                let skeleton: SpecKey = (
                    lambda,
                    env.iter().map(|x| self.ops.dom.erase_unions(*x)).collect(),
                    self.ops.dom.erase_unions(arg),
                );
                let n = self.contexts.len() as u32;
                let ctx = *self.contexts.entry(skeleton).or_insert(n);
                self.specs.push(Spec {
                    ctx,
                    lambda,
                    env: env.to_vec(),
                    arg,
                    result: self.ops.dom.bottom(),
                    binds: Vec::new(),
                    visited: 0,
                    done: 0,
                });
                self.index.insert(key, id);
                let ad = ad as usize;
                if self.newest_at_ad_depth.len() <= ad {
                    self.newest_at_ad_depth.resize(ad + 1, 0);
                }
                self.newest_at_ad_depth[ad] = self.specs.len();
                self.budget.entry(wkey).or_insert((0, false)).0 += 1;
                let depth = env
                    .iter()
                    .map(|x| self.ops.dom.depth(*x))
                    .chain([self.ops.dom.depth(arg)])
                    .max()
                    .unwrap_or(0);
                if depth > deepest {
                    let g = grown + u32::from(recursive);
                    self.grown.insert(lambda, (g, depth));
                }
                self.changed = true;
                id
            }
        };
        if caller.is_some() {
            if let Some(r) = self.rounds.get_mut(&lambda) {
                r.spec = id;
            }
        }
        let s = &self.specs[id.0 as usize];
        if s.visited == self.iteration {
            // A result still being computed may grow: the pass must be
            // repeated (see `settled`).
            self.read_unfinished |= s.done != self.iteration;
            return Ok((s.result, id));
        }
        self.specs[id.0 as usize].visited = self.iteration;
        self.stack.push((lambda, branch, id));
        let outer = std::mem::replace(&mut self.ctx, self.specs[id.0 as usize].ctx);
        let splits = std::mem::replace(&mut self.splits, 0);
        let cases = std::mem::replace(&mut self.split_cases, 0);
        // A watched round is watched while it is analysed, calls included.
        let armed = armed.map(|a| self.armed.replace(a));
        let r = self.analyze_body(lambda, &env, arg);
        if let Some(outer) = armed {
            self.armed = outer;
        }
        self.ctx = outer;
        self.splits = splits;
        self.split_cases = cases;
        self.stack.pop();
        let (result, binds) = r?;
        let old = self.specs[id.0 as usize].result;
        let ctx = self.specs[id.0 as usize].ctx;
        let new = self.ops.dom.join_at(Site::Result(ctx), old, result);
        if new != old {
            self.changed = true;
        }
        let s = &mut self.specs[id.0 as usize];
        s.result = new;
        s.binds = binds;
        s.done = self.iteration;
        Ok((new, id))
    }

    /// Whether another pass would repeat this one, which changed no union
    /// (a pass that made specialisations or changed results is otherwise
    /// repeated until one changes nothing): every result it read was
    /// final (it read none whose analysis was under way), it summarised
    /// no recursion, and no count that decides when a recursion is
    /// widened or summarised reached its bound, so the next pass, which
    /// starts from the counts this one ended with, decides every call as
    /// this one did. A program of fixed shape (a derivative tower of
    /// constant height) is then analysed once, not twice.
    fn settled(&self) -> bool {
        !self.read_unfinished
            && self.summary.is_empty()
            && self.budget.values().all(|(n, rec)| !rec || *n < UNROLL)
            && self.grown.iter().all(|(l, (n, _))| {
                *n < if self.grows_by_grow.contains(l) {
                    GROW
                } else {
                    UNROLL
                }
            })
    }

    /// Whether the analysis is of fixed shape so far (see
    /// [`MAX_FIXED_SPECS`]): it met no recursion that a condition known
    /// only at run time continues, made no union and summarised no
    /// recursion.
    fn fixed_shape(&self) -> bool {
        !self.branched_recursion && self.summary.is_empty() && self.ops.dom.union_ids().is_empty()
    }

    /// How many specialisations the analysis may make: `max_specs`, or
    /// [`MAX_FIXED_SPECS`] while it is of fixed shape. Read only once
    /// `max_specs` is reached (finding the unions walks them all).
    fn spec_limit(&self) -> usize {
        if self.specs.len() < self.max_specs || !self.fixed_shape() {
            self.max_specs
        } else {
            MAX_FIXED_SPECS.max(self.max_specs)
        }
    }

    /// The error of an analysis that needs more than its
    /// [`Self::spec_limit`] specialisations. When a recursive procedure of the program kept
    /// passing itself deeper values (a derivative tower of run-time height,
    /// a structure nested one level more per call), that is what grows:
    /// the error names it, at its definition, and says what would make the
    /// program compile.
    fn too_many_specs(&self, lambda: LambdaId) -> Limit {
        let limit = self.spec_limit();
        if self.fixed_shape() {
            // Nothing grew without bound: the program's constants ask for
            // this much (a derivative tower too high for its mode).
            return Limit {
                message: format!(
                    "the analysis needs more than {limit} specialisations (while specialising \
                     `{}`) for what the program's constants ask: AD nested this deep makes more \
                     code than the compiler specialises (`stalingrad run` runs the program as it \
                     is)",
                    self.lambda_name(lambda)
                ),
                span: None,
            };
        }
        // A recursion summarised after `GROW` rounds is the likeliest
        // cause; one that grew twice, before the specialisations of what
        // it nests (reverse mode in reverse mode, say) ran out, the next.
        match self.grower(GROW).or_else(|| self.grower(2)) {
            Some((l, (n, d))) => Limit {
                message: format!(
                    "`{}` calls itself with values that grow at each call ({d} levels deep after \
                     {n} calls), and the analysis needs more than {} specialisations for \
                     what is computed on them: a nesting of AD, or of data, whose depth is known \
                     only at run time cannot be compiled; make that depth a constant \
                     (`stalingrad run` runs the program as it is)",
                    self.lambda_name(*l),
                    limit
                ),
                span: self.ops.prog.lambdas[*l].span,
            },
            None => Limit {
                message: format!(
                    "the analysis needs more than {limit} specialisations (while specialising `{}`)",
                    self.lambda_name(lambda)
                ),
                span: None,
            },
        }
    }

    /// The recursive procedure of the user's program whose calls passed
    /// itself deeper values most often (at least `times`), with that count
    /// and depth.
    fn grower(&self, times: u32) -> Option<(&LambdaId, &(u32, u32))> {
        self.grown
            .iter()
            .filter(|(l, (n, _))| {
                *n >= times
                    && matches!(self.ops.prog.lambdas[**l].origin, ir::Origin::Source)
                    && self.ops.prog.lambdas[**l].name.is_some()
                    && self.ops.prog.lambdas[**l]
                        .span
                        .is_some_and(|s| s.file.0 != 0)
            })
            .max_by_key(|(l, (n, d))| (*n, *d, std::cmp::Reverse(**l)))
    }

    /// The error of an analysis asked for AD nested more than
    /// [`MAX_AD_DEPTH`] deep on a closure holding a union: positioned at the recursion that grows, when
    /// one of the user's procedures kept passing itself deeper values.
    fn too_deep_ad(&self, lambda: LambdaId) -> Limit {
        let what = "on procedures known only at run time: a nesting of AD whose depth is \
                    known only at run time cannot be compiled; make that depth a constant \
                    (`stalingrad run` runs the program as it is)";
        match self.grower(1) {
            Some((l, (n, d))) => Limit {
                message: format!(
                    "`{}` calls itself with values that grow at each call ({d} levels deep after \
                     {n} calls), and what is computed on them nests AD more than {MAX_AD_DEPTH} \
                     deep, {what}",
                    self.lambda_name(*l)
                ),
                span: self.ops.prog.lambdas[*l].span,
            },
            None => Limit {
                message: format!(
                    "AD is nested more than {MAX_AD_DEPTH} deep (while specialising `{}`), {what}",
                    self.lambda_name(lambda)
                ),
                span: None,
            },
        }
    }

    /// For `VLAD_FLOW_TRACE`: the unions per kind of site, the longest
    /// chain of unions made from unions, and the lambdas with the most
    /// specialisations (where a runaway analysis shows what grows).
    fn trace_census(&self) {
        eprintln!("  {}", self.ops.dom.site_census());
        let mut per: HashMap<LambdaId, usize> = HashMap::default();
        for s in &self.specs {
            *per.entry(s.lambda).or_default() += 1;
        }
        let mut most: Vec<_> = per.into_iter().collect();
        most.sort_by_key(|(l, n)| (std::cmp::Reverse(*n), *l));
        for (l, n) in most.iter().take(6) {
            eprintln!("    {n} specialisations of {}", self.lambda_name(*l));
        }
    }

    fn lambda_name(&self, l: LambdaId) -> String {
        self.ops.prog.lambdas[l]
            .name
            .clone()
            .unwrap_or_else(|| format!("lambda {l}"))
    }

    fn analyze_body(&mut self, l: LambdaId, env: &[AvId], arg: AvId) -> R<(AvId, Vec<BindInfo>)> {
        let lam = self.ops.prog.lambdas[l].clone();
        let mut vals: HashMap<Var, AvId> =
            HashMap::with_capacity_and_hasher(lam.body.len() + env.len() + 1, Default::default());
        for (v, a) in lam.free.iter().zip(env) {
            vals.insert(*v, *a);
        }
        vals.insert(lam.param, arg);
        let mut binds = Vec::with_capacity(lam.body.len());
        let mut dead = false;
        for b in lam.body.iter() {
            if dead {
                binds.push(BindInfo {
                    av: self.ops.dom.bottom(),
                    plan: Plan::Dead,
                });
                continue;
            }
            let info = self
                .eval_rhs(b.var, &b.rhs, &vals, env, lam.group)
                .map_err(|mut e| {
                    e.locate(b.span);
                    e
                })?;
            if info.av == self.ops.dom.bottom() {
                dead = true;
            }
            vals.insert(b.var, info.av);
            binds.push(info);
        }
        let result = if dead {
            self.ops.dom.bottom()
        } else {
            vals.get(&lam.result)
                .copied()
                .unwrap_or(self.ops.dom.bottom())
        };
        Ok((result, binds))
    }

    fn eval_rhs_plain(
        &mut self,
        var: Var,
        rhs: &Rhs,
        vals: &HashMap<Var, AvId>,
        env: &[AvId],
        group: Option<ir::GroupId>,
    ) -> R<BindInfo> {
        // ANF conversion (`ir::anf`) binds every variable before its uses;
        // a variable without a value here is a bug of the analysis, said
        // so, not read as bottom.
        if let Some(x) = rhs.each_use().find(|x| !vals.contains_key(x)) {
            return limit(format!(
                "internal error: the analysis has no value for `{}`",
                ir::print::var(&self.ops.prog, x)
            ));
        }
        let bottom = self.ops.dom.bottom();
        let v = |x: &Var| vals.get(x).copied().unwrap_or(bottom);
        let plain = |r: Op<AvId>, dom: &Domain| match r {
            Ok(av) => BindInfo {
                av,
                plan: Plan::Plain,
            },
            Err(m) => BindInfo {
                av: dom.bottom(),
                plan: Plan::Error(m.into()),
            },
        };
        Ok(match rhs {
            Rhs::Const(k) => {
                // A long list literal is a list of run-time length to
                // whatever uses it (lowering makes it in that layout).
                let av = self.ops.const_value(*k);
                let av = self.ops.dom.widen_long_lists(av);
                BindInfo {
                    av,
                    plan: Plan::Plain,
                }
            }
            Rhs::Copy(x) => BindInfo {
                av: v(x),
                plan: Plan::Plain,
            },
            Rhs::Closure { lambda, env } => {
                let e = env.iter().map(v).collect();
                BindInfo {
                    av: self.ops.dom.closure(*lambda, e),
                    plan: Plan::Plain,
                }
            }
            Rhs::Sibling(i) => {
                let Some(g) = group else {
                    return limit("internal error: sibling reference outside a group");
                };
                let l = self.ops.prog.groups[g].lambdas[*i as usize];
                BindInfo {
                    av: self.ops.dom.closure(l, env.to_vec()),
                    plan: Plan::Plain,
                }
            }
            Rhs::App { f, arg } => return self.apply(var, v(f), v(arg)),
            Rhs::Cons { tags, car, cdr } => {
                let r = self.ops.cons_t(tags, v(car), v(cdr));
                plain(r, &self.ops.dom)
            }
            Rhs::Car { tags, pair, pat } | Rhs::Cdr { tags, pair, pat } => {
                let is_car = matches!(rhs, Rhs::Car { .. });
                let p = v(pair);
                let r = self
                    .ops
                    .car_t(tags, p, is_car)
                    .map_err(|_| self.ops.pattern_message(tags, *pat, p));
                plain(r, &self.ops.dom)
            }
            Rhs::Check {
                tags,
                var,
                expect,
                pat,
            } => {
                let x = v(var);
                match self.ops.check_t(tags, x, *expect) {
                    Ok(Some(true)) => BindInfo {
                        av: x,
                        plan: Plan::Plain,
                    },
                    Ok(None) => BindInfo {
                        av: x,
                        plan: Plan::Check,
                    },
                    Ok(Some(false)) | Err(_) => BindInfo {
                        av: self.ops.dom.bottom(),
                        plan: Plan::Error(self.ops.pattern_message(tags, *pat, x).into()),
                    },
                }
            }
            Rhs::EnvRef { closure, index } => {
                self.ops.hit("a procedure's environment", v(closure));
                let r = match self.ops.dom.get(v(closure)).clone() {
                    Av::Closure(_, e) => e
                        .get(*index as usize)
                        .copied()
                        .ok_or_else(|| "internal error: environment slot out of range".to_string()),
                    Av::Bottom => Ok(self.ops.dom.bottom()),
                    _ => Err(format!(
                        "expected the sensitivity of a procedure, found {}",
                        self.ops.describe(v(closure))
                    )),
                };
                plain(r, &self.ops.dom)
            }
            Rhs::EnvUpdate {
                closure,
                index,
                value,
            } => {
                self.ops.hit("a procedure's environment", v(closure));
                let r = match self.ops.dom.get(v(closure)).clone() {
                    Av::Closure(l, e) if (*index as usize) < e.len() => {
                        let mut e = e.to_vec();
                        e[*index as usize] = v(value);
                        Ok(self.ops.dom.closure(l, e))
                    }
                    Av::Bottom => Ok(self.ops.dom.bottom()),
                    _ => Err(format!(
                        "expected the sensitivity of a procedure, found {}",
                        self.ops.describe(v(closure))
                    )),
                };
                plain(r, &self.ops.dom)
            }
        })
    }

    fn apply(&mut self, site: Var, f: AvId, arg: AvId) -> R<BindInfo> {
        let bottom = self.ops.dom.bottom();
        if arg == bottom {
            return Ok(BindInfo {
                av: bottom,
                plan: Plan::Dead,
            });
        }
        match self.ops.dom.get(f).clone() {
            Av::Bottom => Ok(BindInfo {
                av: bottom,
                plan: Plan::Dead,
            }),
            Av::Closure(l, env) => {
                let (av, s) = self.call(l, &env, arg)?;
                Ok(BindInfo {
                    av,
                    plan: Plan::Call(s),
                })
            }
            Av::Prim(Prim::IfProcedure) => self.if_procedure(site, arg),
            Av::Prim(Prim::BuildVector) => self.build_vector(site, arg),
            Av::Union(_) => {
                self.ops.hit("application", f);
                Ok(BindInfo {
                    av: bottom,
                    plan: Plan::Dead,
                })
            }
            Av::Prim(p) => Ok(
                match self
                    .ops
                    .prim_at(p, arg, Some(Site::Elements(site, self.ctx)))
                {
                    Ok(av) => BindInfo {
                        av,
                        plan: Plan::Prim(p),
                    },
                    Err(m) => BindInfo {
                        av: bottom,
                        plan: Plan::Error(m.into()),
                    },
                },
            ),
            _ => Ok(BindInfo {
                av: bottom,
                plan: Plan::Error(ir::message::not_a_procedure(&self.ops.describe(f)).into()),
            }),
        }
    }

    /// `(build-vector n f)`: `f` applied to an index known only at run
    /// time; the vector's element is its result ([`Plan::Build`]).
    fn build_vector(&mut self, site: Var, arg: AvId) -> R<BindInfo> {
        let bottom = self.ops.dom.bottom();
        let error = |m: String| BindInfo {
            av: bottom,
            plan: Plan::Error(m.into()),
        };
        self.ops.hit("a primitive", arg);
        if self.ops.union_hit.get().is_some() {
            return Ok(BindInfo {
                av: bottom,
                plan: Plan::Dead,
            });
        }
        let p = Prim::BuildVector;
        let Av::Pair(n, f) = self.ops.dom.get(arg).clone() else {
            return Ok(error(p.expects(
                ir::Expects::LengthAndProcedure,
                &self.ops.describe(arg),
            )));
        };
        self.ops.hit("a primitive", n);
        if self.ops.union_hit.get().is_some() {
            return Ok(BindInfo {
                av: bottom,
                plan: Plan::Dead,
            });
        }
        let known = match self.ops.dom.get(n) {
            Av::Real(Some(x)) if crate::adops::is_count(f64::from_bits(*x)) => {
                Some(f64::from_bits(*x))
            }
            Av::Real(None) => None,
            Av::Bottom => {
                return Ok(BindInfo {
                    av: bottom,
                    plan: Plan::Dead,
                })
            }
            _ => {
                return Ok(error(ir::message::bad_length(
                    p.name(),
                    &self.ops.describe(n),
                )))
            }
        };
        if known == Some(0.0) {
            return Ok(BindInfo {
                av: self.ops.dom.vector(bottom, n),
                plan: Plan::Build(Box::new(BindInfo {
                    av: bottom,
                    plan: Plan::Dead,
                })),
            });
        }
        let i = self.ops.dom.any_real();
        let elem = self.apply(site, f, i)?;
        if let (Plan::Error(m), Some(_)) = (&elem.plan, known) {
            return Ok(error(m.to_string()));
        }
        Ok(BindInfo {
            av: self.ops.dom.vector(elem.av, n),
            plan: Plan::Build(Box::new(elem)),
        })
    }

    fn if_procedure(&mut self, site: Var, arg: AvId) -> R<BindInfo> {
        let bottom = self.ops.dom.bottom();
        let bad = |s: &Self| BindInfo {
            av: bottom,
            plan: Plan::Error(
                Prim::IfProcedure
                    .expects(ir::Expects::ConditionAndThunks, &s.ops.describe(arg))
                    .into(),
            ),
        };
        let Av::Pair(c, te) = self.ops.dom.get(arg).clone() else {
            return Ok(bad(self));
        };
        let Av::Pair(t, e) = self.ops.dom.get(te).clone() else {
            return Ok(bad(self));
        };
        self.ops.hit("a conditional", c);
        if self.ops.union_hit.get().is_some() {
            return Ok(BindInfo {
                av: bottom,
                plan: Plan::Dead,
            });
        }
        let (take_then, take_else) = match self.ops.dom.get(c) {
            Av::Bool(Some(false)) => (false, true),
            Av::Bool(None) => (true, true),
            Av::Bottom => (false, false),
            _ => (true, false),
        };
        let nil = self.ops.dom.nil();
        let mut result = bottom;
        let mut specs = [None, None];
        for (i, (take, thunk)) in [(take_then, t), (take_else, e)].into_iter().enumerate() {
            if !take {
                continue;
            }
            self.branching = take_then && take_else;
            let info = self.apply(site, thunk, nil);
            self.branching = false;
            let info = info?;
            match info.plan {
                Plan::Call(s) => specs[i] = Some(s),
                Plan::Dead => {}
                // The interpreter calls the chosen "thunk" whatever it is:
                // when only it can be chosen, its application's error is
                // the error.
                Plan::Error(m) if !(take_then && take_else) => {
                    return Ok(BindInfo {
                        av: bottom,
                        plan: Plan::Error(m),
                    });
                }
                _ => {
                    // A thunk that is a primitive or not a procedure: only
                    // reachable through misuse of `if-procedure`.
                    return Ok(BindInfo {
                        av: bottom,
                        plan: Plan::Error(
                            Prim::IfProcedure
                                .expects(ir::Expects::ConditionAndThunks, &self.ops.describe(arg))
                                .into(),
                        ),
                    });
                }
            }
            let at = Site::If(site, self.ctx);
            result = self.ops.dom.join_at(at, result, info.av);
        }
        Ok(BindInfo {
            av: result,
            plan: Plan::If {
                then_: specs[0],
                else_: specs[1],
            },
        })
    }
}

/// Cuts `s` to at most `max` bytes, ending in `...` when cut, (a list of shapes in an analysis error).
pub(crate) fn shorten(s: &mut String, max: usize) {
    if s.len() > max {
        let mut cut = max - 3;
        while !s.is_char_boundary(cut) {
            cut -= 1;
        }
        s.truncate(cut);
        s.push_str("...");
    }
}
