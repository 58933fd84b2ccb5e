//! FIR-to-FIR: a function that calls itself once, other than in tail
//! position, becomes two loops over the program's stack of saved values.
//!
//! Why: reverse mode over a loop of run-time length makes both sweeps
//! recursions. The forward sweep's every level returns the tape of the
//! levels after it; the backward sweep's every level adds its
//! sensitivities to what the levels after it return. A level's frame
//! holds its spill slots (16 bytes a real), saved registers and return
//! address, 80 to 600 bytes where the values the code after the call
//! reads are a few reals: at 10^6 elements the machine stack, not the
//! data, was most of the memory, and touching it first most of the time.
//!
//! `f` becomes a tail call of `f_down` at level 0. `f_down` runs `f`'s
//! code; at its call to itself it pushes the values the code after the
//! call reads ([`Op::Save`]) and continues as that call, by a tail
//! call, one level deeper; where `f` would return, it tail-calls `f_up`
//! with the results. `f_up` at level 0 returns them; deeper, it pops the
//! level's values ([`Op::Restore`]) and runs the code after the call
//! with the results as the call's, then goes on as that code would: its
//! returns tail-call `f_up` one level up. Tail calls of `f` by itself on
//! other paths keep the level. The same instructions run in the same
//! order as before, so every result and message is the same.
//!
//! The stack is one for the whole program (the runtime's `saves.rs`):
//! the loops push and pop in the order of the calls they stand for, so
//! every recursion made loops shares it as frames share the machine
//! stack, and a recursion of a few levels costs no allocation. The
//! collector scans the pointers saved as it scans the machine stack
//! (code generation puts them apart from the reals).
//!
//! A function `b` that only `a` calls, once, and that calls `a` is first
//! spliced into `a` ([`fold_cycles`]): the backward sweep of a loop and
//! the backpropagator of its body call each other so, once a level.
//!
//! A function may call itself at several places on paths apart (the arms
//! of an `If`, as specialising a recursion over a list's two shapes
//! makes): each place saves its number too, and `f_up` restores it first
//! and goes on with that place's code after the call.
//!
//! Which functions: not `main`; calls of itself by `Call` (a `CallAt`
//! names where errors are reported while it runs, which a loop cannot
//! restore) none of which runs after another in the same level (a tree
//! recursion stays one); no tail call of another function (it would
//! become a call, and a cycle of tail calls through `f` a growing
//! stack), nor of itself after a call. What the code after the call
//! reads of what precedes it is saved (a boolean as 1 or 0), but for
//! constants (made again) and parameters that every call and tail call
//! of `f` by itself passes unchanged (`f_up` takes them as parameters).

use super::compact::compact;
use super::inline::{rename_block, renamed_into, substitute_block};
use super::outline::free_values;
use crate::{Block, Cmp, FBin, Func, FuncId, Inst, Module, Op, StrId, Term, Ty, Val};
use base::EntityRef;
use rustc_hash::{FxHashMap as HashMap, FxHashSet as HashSet};

/// The most levels `f_down` goes down when it pushes nothing: the 4 GiB
/// stack of a program's thread held at most as many frames of 64 bytes.
/// Past them, the program stops as it stopped when its stack ran out: a
/// runaway recursion would otherwise loop for ever. One that pushes is
/// stopped, with the same message, by the runtime, when the stack of
/// saved values would pass 4 GiB: no test a level.
const MAX_LEVELS: f64 = (1u64 << 26) as f64;

/// Turns every function of the module that qualifies into its two loops.
pub fn unrecurse(m: &mut Module) {
    if fold_cycles(m) {
        super::inline::prune(m);
    }
    let mut too_deep = None;
    let mut names: HashSet<String> = m.funcs.iter().map(|f| f.name.clone()).collect();
    let mut fresh = |base: String| {
        let mut name = base.clone();
        let mut n = 2;
        while !names.insert(name.clone()) {
            name = format!("{base}{n}");
            n += 1;
        }
        name
    };
    let n = m.funcs.len();
    let mut changed = vec![false; n];
    for fi in 0..n {
        if m.main.is_some_and(|g| g.index() == fi) {
            continue;
        }
        let Some(plan) = plan(m, fi) else { continue };
        let down = FuncId::new(m.funcs.len());
        let up = FuncId::new(m.funcs.len() + 1);
        let too_deep = *too_deep.get_or_insert_with(|| {
            let text = base::message::RECURSION_TOO_DEEP;
            let found = m.strings.iter().position(|s| s == text);
            StrId::new(found.unwrap_or_else(|| {
                m.strings.push(text.to_string());
                m.strings.len() - 1
            }))
        });
        let f = &m.funcs[fi];
        let me = FuncId::new(fi);
        let mut d = make_down(f, me, down, up, &plan, too_deep);
        let mut u = make_up(f, me, down, up, &plan);
        d.name = fresh(format!("{}_down", f.name));
        u.name = fresh(format!("{}_up", f.name));
        let entry = make_entry(f, down);
        m.funcs[fi].body = entry.body;
        m.funcs[fi].types = entry.types;
        m.funcs.extend([d, u]);
        changed[fi] = true;
        changed.extend([true, true]);
    }
    super::simplify::simplify_changed(m, &changed);
}

/// Splices into `a` each function `b` that only `a` calls, by one `Call`,
/// and that calls `a`: the backward sweep of a loop (`a`) and the
/// backpropagator of its body (`b`) call each other once a level, a
/// recursion through two functions that is then one of `a` alone. Says
/// whether it spliced any (`b` is then called by no one).
fn fold_cycles(m: &mut Module) -> bool {
    let n = m.funcs.len();
    let mut refs = vec![0usize; n];
    for f in &m.funcs {
        f.body.for_each_call(&mut |g, _, _| refs[g.index()] += 1);
    }
    let mut any = false;
    for a in 0..n {
        let me = FuncId::new(a);
        let mut into = None;
        m.funcs[a].body.for_each_inst(&mut |i| {
            if let Op::Call(g, _) = &i.op {
                let b = g.index();
                let calls_back = {
                    let mut back = false;
                    m.funcs[b].body.for_each_inst(&mut |j| {
                        back |= matches!(&j.op, Op::Call(h, _) if *h == me);
                    });
                    back
                };
                let alone = refs[b] == 1 && m.main.is_none_or(|x| x.index() != b);
                if b != a && into.is_none() && alone && calls_back && m.funcs[b].body.single_exit()
                {
                    into = Some(*g);
                }
            }
        });
        let Some(b) = into else { continue };
        let callee = m.funcs[b.index()].clone();
        if !matches!(callee.body.term, Term::Return(_)) {
            continue;
        }
        splice(&mut m.funcs[a], b, &callee);
        refs[b.index()] = 0;
        any = true;
    }
    any
}

/// Replaces `f`'s one `Call` of `b` by `callee`'s body (which ends in a
/// `Return`), its values renumbered into `f`.
fn splice(f: &mut Func, b: FuncId, callee: &Func) {
    fn go(
        block: &mut Block,
        b: FuncId,
        types: &mut Vec<Ty>,
        callee: &Func,
        subst: &mut HashMap<Val, Val>,
    ) -> bool {
        let at = (block.insts.iter()).position(|i| matches!(&i.op, Op::Call(g, _) if *g == b));
        if let Some(at) = at {
            let inst = block.insts.remove(at);
            let Op::Call(_, args) = &inst.op else {
                unreachable!("found a call")
            };
            let body = renamed_into(types, callee, &callee.body, args);
            if let Term::Return(vals) = &body.term {
                subst.extend(inst.results.iter().copied().zip(vals.iter().copied()));
            }
            block.insts.splice(at..at, body.insts);
            return true;
        }
        block.insts.iter_mut().any(|i| match &mut i.op {
            Op::If { then_, else_, .. } => {
                go(then_, b, types, callee, subst) || go(else_, b, types, callee, subst)
            }
            _ => false,
        })
    }
    let mut subst = HashMap::default();
    go(&mut f.body, b, &mut f.types, callee, &mut subst);
    substitute_block(&mut f.body, &subst);
}

/// What turning one function into loops takes.
struct Plan {
    /// The places the function calls itself, in the order of its code.
    sites: Vec<Site>,
    /// The parameters the code after any call reads, passed to `f_up` as
    /// they are.
    kept: Vec<Val>,
}

/// One call of the function by itself.
struct Site {
    /// The way from the body to the call: at each level, the index of
    /// the instruction (an `If`, then at the last level the call) and the
    /// arm taken (`true`: `then_`).
    path: Vec<(usize, bool)>,
    /// The call's arguments and results.
    args: Vec<Val>,
    results: Vec<Val>,
    /// The code after the call, up to the first terminator that leaves
    /// the level: the rest of each block on the way, the results of each
    /// `If` replaced by what its arm yields.
    rest: Block,
    /// The values `rest` reads of what precedes the call, saved.
    pushed: Vec<Val>,
    /// The constants `rest` reads of what precedes the call, made again.
    consts: Vec<Inst>,
}

/// The plan for function `fi`, if it qualifies.
fn plan(m: &Module, fi: usize) -> Option<Plan> {
    let f = &m.funcs[fi];
    let me = FuncId::new(fi);
    let mut calls = 0;
    let mut other = false;
    f.body.for_each_inst(&mut |i| match &i.op {
        Op::Call(g, _) if *g == me => calls += 1,
        Op::CallAt(g, _, _) if *g == me => other = true,
        Op::VecBuild { func, .. } if *func == me => other = true,
        _ => {}
    });
    if calls == 0 || other || tail_calls_other(&f.body, me) {
        return None;
    }
    let mut paths = Vec::new();
    find_calls(&f.body, me, &mut Vec::new(), &mut paths);
    let np = f.params.len();
    let unchanged = unchanged_params(&f.body, me, np);
    let mut constants: HashMap<Val, Inst> = HashMap::default();
    f.body.for_each_inst(&mut |i| {
        if matches!(i.op, Op::F64Const(_) | Op::BoolConst(_)) {
            constants.insert(i.results[0], i.clone());
        }
    });
    let mut kept = Vec::new();
    let mut sites = Vec::new();
    for path in paths {
        let site = site(f, me, path, &unchanged, &constants, &mut kept)?;
        sites.push(site);
    }
    // A call in the code after another runs after it in the same level
    // (a tree recursion): that code would call `f` again from `f_up`.
    let mut later = 0;
    for site in &sites {
        site.rest.for_each_inst(&mut |i| {
            later += usize::from(matches!(&i.op, Op::Call(g, _) if *g == me));
        });
    }
    if later > 0 {
        return None;
    }
    Some(Plan { sites, kept })
}

/// The call of `f` (`me`) at `path`, with what its code after the call
/// reads; the parameters it reads unchanged are added to `kept`.
fn site(
    f: &Func,
    me: FuncId,
    path: Vec<(usize, bool)>,
    unchanged: &[bool],
    constants: &HashMap<Val, Inst>,
    kept: &mut Vec<Val>,
) -> Option<Site> {
    // The levels on the way, innermost last.
    let mut blocks: Vec<&Block> = vec![&f.body];
    for (j, then) in &path[..path.len() - 1] {
        let Op::If { then_, else_, .. } = &blocks[blocks.len() - 1].insts[*j].op else {
            return None;
        };
        blocks.push(if *then { then_ } else { else_ });
    }
    let (last, _) = path[path.len() - 1];
    let call = &blocks[blocks.len() - 1].insts[last];
    let Op::Call(_, args) = &call.op else {
        return None;
    };
    let mut insts = Vec::new();
    let mut subst: HashMap<Val, Val> = HashMap::default();
    let mut term = None;
    for level in (0..blocks.len()).rev() {
        let b = blocks[level];
        insts.extend(b.insts[path[level].0 + 1..].iter().cloned());
        match &b.term {
            Term::Yield(vs) if level > 0 => {
                let parent = &blocks[level - 1].insts[path[level - 1].0];
                for (r, v) in parent.results.iter().zip(vs) {
                    subst.insert(*r, *v);
                }
            }
            t => {
                term = Some(t.clone());
                break;
            }
        }
    }
    let mut rest = Block { insts, term: term? };
    substitute_block(&mut rest, &subst);
    // `f_up` would go on as `f_down` at the level above, whose values it
    // has popped: the levels below would push over them.
    let mut again = false;
    rest.for_each_call(&mut |g, _, kind| {
        again |= g == me && matches!(kind, crate::visit::CallKind::Tail);
    });
    if again {
        return None;
    }
    let results: HashSet<Val> = call.results.iter().copied().collect();
    let (mut pushed, mut consts) = (Vec::new(), Vec::new());
    for v in free_values(&rest) {
        if results.contains(&v) {
            continue;
        }
        if let Some(i) = constants.get(&v) {
            consts.push(i.clone());
        } else if v.index() < f.params.len() && unchanged[v.index()] {
            if !kept.contains(&v) {
                kept.push(v);
            }
        } else {
            pushed.push(v);
        }
    }
    Some(Site {
        path,
        args: args.clone(),
        results: call.results.clone(),
        rest,
        pushed,
        consts,
    })
}

/// Whether `b` tail-calls a function other than `me`.
fn tail_calls_other(b: &Block, me: FuncId) -> bool {
    let mut found = false;
    b.for_each_call(&mut |g, _, kind| {
        found |= g != me && matches!(kind, crate::visit::CallKind::Tail);
    });
    found
}

/// The ways to the calls of `me` in `b` (see [`Site::path`]), in the
/// order of the code; `path` is the way to `b`.
fn find_calls(
    b: &Block,
    me: FuncId,
    path: &mut Vec<(usize, bool)>,
    out: &mut Vec<Vec<(usize, bool)>>,
) {
    for (j, i) in b.insts.iter().enumerate() {
        match &i.op {
            Op::Call(g, _) if *g == me => {
                path.push((j, false));
                out.push(path.clone());
                path.pop();
            }
            Op::If { then_, else_, .. } => {
                for (arm, then) in [(then_, true), (else_, false)] {
                    path.push((j, then));
                    find_calls(arm, me, path, out);
                    path.pop();
                }
            }
            _ => {}
        }
    }
}

/// Per parameter of a function of `np` parameters whose body is `b`:
/// whether every call and tail call of `me` in it passes it unchanged.
fn unchanged_params(b: &Block, me: FuncId, np: usize) -> Vec<bool> {
    let mut same = vec![true; np];
    b.for_each_call(&mut |g, args, _| {
        if g == me {
            for (p, s) in same.iter_mut().enumerate() {
                *s &= args.get(p) == Some(&Val::new(p));
            }
        }
    });
    same
}

/// Builds a function's code in the numbering of the function it comes
/// from, with values added past that function's.
struct Code {
    types: Vec<Ty>,
}

impl Code {
    fn fresh(&mut self, ty: Ty) -> Val {
        self.types.push(ty);
        Val::new(self.types.len() - 1)
    }

    fn emit(&mut self, out: &mut Vec<Inst>, ty: Ty, op: Op) -> Val {
        let r = self.fresh(ty);
        out.push(Inst {
            results: vec![r],
            op,
        });
        r
    }

    /// The function with parameters `params` (values of this numbering)
    /// and body `body`: the parameters become its first values, the
    /// others follow in their order, and `compact` drops the unused.
    fn finish(self, name: String, params: &[Val], returns: Vec<Ty>, mut body: Block) -> Func {
        let p = params.len();
        let index: HashMap<Val, usize> = params.iter().enumerate().map(|(i, v)| (*v, i)).collect();
        let mut rename = |v: &mut Val| {
            *v = Val::new(index.get(v).copied().unwrap_or(p + v.index()));
        };
        body.for_each_use_mut(&mut rename);
        body.for_each_result_mut(&mut rename);
        let param_types: Vec<Ty> = params.iter().map(|v| self.types[v.index()]).collect();
        let mut types = param_types.clone();
        types.extend_from_slice(&self.types);
        let mut f = Func {
            name,
            params: param_types,
            returns,
            types,
            body,
        };
        compact(&mut f);
        f
    }
}

/// An `If` on `cond` that runs `then_` (which leaves the function) or
/// goes on.
fn if_then(cond: Val, then_: Block) -> Inst {
    let else_ = Block {
        insts: vec![],
        term: Term::Yield(vec![]),
    };
    Inst {
        results: vec![],
        op: Op::If { cond, then_, else_ },
    }
}

/// An `If` on `cond` that ends the function with `term` or goes on.
fn leave_if(cond: Val, term: Term) -> Inst {
    let then_ = Block {
        insts: vec![],
        term,
    };
    if_then(cond, then_)
}

/// `f`'s new body: `f_down` at level 0.
fn make_entry(f: &Func, down: FuncId) -> Func {
    let mut c = Code {
        types: f.types.clone(),
    };
    let mut out = Vec::new();
    let zero = c.emit(&mut out, Ty::F64, Op::F64Const(0.0));
    let mut args: Vec<Val> = (0..f.params.len()).map(Val::new).collect();
    args.push(zero);
    let body = Block {
        insts: out,
        term: Term::TailCall(down, args),
    };
    let params: Vec<Val> = (0..f.params.len()).map(Val::new).collect();
    c.finish(f.name.clone(), &params, f.returns.clone(), body)
}

/// `f_down`: `f`'s code, its calls of itself a save and a tail call one
/// level deeper, its returns tail calls of `f_up`, its tail calls of
/// itself tail calls of `f_down` at the same level.
fn make_down(f: &Func, me: FuncId, down: FuncId, up: FuncId, p: &Plan, too_deep: StrId) -> Func {
    let mut c = Code {
        types: f.types.clone(),
    };
    let level = c.fresh(Ty::F64);
    let mut body = f.body.clone();
    retarget(&mut body, me, down, up, &p.kept, level);
    // Each call's block: everything from the call on becomes the save and
    // the tail call (after `retarget`, which must not see it). No call's
    // block is on the way to another's (`plan`).
    let several = p.sites.len() > 1;
    for (k, site) in p.sites.iter().enumerate() {
        let mut b = &mut body;
        for (j, then) in &site.path[..site.path.len() - 1] {
            let Op::If { then_, else_, .. } = &mut b.insts[*j].op else {
                unreachable!("the path goes through `If`s")
            };
            b = if *then { then_ } else { else_ };
        }
        b.insts.truncate(site.path[site.path.len() - 1].0);
        let mut out = std::mem::take(&mut b.insts);
        let one = c.emit(&mut out, Ty::F64, Op::F64Const(1.0));
        let deeper = c.emit(&mut out, Ty::F64, Op::FBin(FBin::PlusAdd, level, one));
        let mut vals: Vec<Val> = (site.pushed.iter())
            .map(|v| as_real(&mut c, &mut out, *v))
            .collect();
        if several {
            vals.push(c.emit(&mut out, Ty::F64, Op::F64Const(k as f64)));
        }
        if vals.is_empty() {
            let most = c.emit(&mut out, Ty::F64, Op::F64Const(MAX_LEVELS));
            let past = c.emit(&mut out, Ty::Bool, Op::FCmp(Cmp::Gt, deeper, most));
            out.push(leave_if(past, Term::Error(too_deep)));
        } else {
            out.push(Inst {
                results: vec![],
                op: Op::Save(vals),
            });
        }
        let mut next = site.args.clone();
        next.push(deeper);
        b.insts = out;
        b.term = Term::TailCall(down, next);
    }
    let params: Vec<Val> = (0..f.params.len()).map(Val::new).chain([level]).collect();
    c.finish(String::new(), &params, f.returns.clone(), body)
}

/// `v` as a value to save: a boolean is 1 or 0.
fn as_real(c: &mut Code, out: &mut Vec<Inst>, v: Val) -> Val {
    if c.types[v.index()] != Ty::Bool {
        return v;
    }
    let arm = |c: &mut Code, x: f64| {
        let mut insts = Vec::new();
        let k = c.emit(&mut insts, Ty::F64, Op::F64Const(x));
        Block {
            insts,
            term: Term::Yield(vec![k]),
        }
    };
    let (then_, else_) = (arm(c, 1.0), arm(c, 0.0));
    c.emit(
        out,
        Ty::F64,
        Op::If {
            cond: v,
            then_,
            else_,
        },
    )
}

/// In `b`: returns become tail calls of `up` (the results, the kept
/// parameters, the level), tail calls of `me` tail calls of `down` at the
/// same level.
fn retarget(b: &mut Block, me: FuncId, down: FuncId, up: FuncId, kept: &[Val], level: Val) {
    for i in &mut b.insts {
        if let Op::If { then_, else_, .. } = &mut i.op {
            retarget(then_, me, down, up, kept, level);
            retarget(else_, me, down, up, kept, level);
        }
    }
    match &mut b.term {
        Term::Return(vs) => {
            let mut args = std::mem::take(vs);
            args.extend_from_slice(kept);
            args.push(level);
            b.term = Term::TailCall(up, args);
        }
        Term::TailCall(g, args) if *g == me => {
            let mut args = std::mem::take(args);
            args.push(level);
            b.term = Term::TailCall(down, args);
        }
        _ => {}
    }
}

/// Each stack the code after the call pushes on (the record of a
/// forward sweep, made on the way back up) likely takes a push a level:
/// as many more as there are levels above (`above`), which the runtime
/// then makes room for at once (`Op::StackPush`'s `room`).
fn expect_room(b: &mut Block, above: Val) {
    for i in &mut b.insts {
        match &mut i.op {
            Op::StackPush { room, .. } => *room = Some(above),
            Op::If { then_, else_, .. } => {
                expect_room(then_, above);
                expect_room(else_, above);
            }
            _ => {}
        }
    }
}

/// `f_up`: at level 0 the results; deeper, the level's values popped
/// and the code after the call run with the results, one level up. With
/// several calls, the number of the call is popped first, and each call's
/// code after it is an arm of its own, its values renamed apart.
fn make_up(f: &Func, me: FuncId, down: FuncId, up: FuncId, p: &Plan) -> Func {
    let mut c = Code {
        types: f.types.clone(),
    };
    let results: Vec<Val> = f.returns.iter().map(|t| c.fresh(*t)).collect();
    let level = c.fresh(Ty::F64);
    let mut out = Vec::new();
    let zero = c.emit(&mut out, Ty::F64, Op::F64Const(0.0));
    let done = c.emit(&mut out, Ty::Bool, Op::FCmp(Cmp::Eq, level, zero));
    out.push(leave_if(done, Term::Return(results.clone())));
    let minus = c.emit(&mut out, Ty::F64, Op::F64Const(-1.0));
    let above = c.emit(&mut out, Ty::F64, Op::FBin(FBin::PlusAdd, level, minus));
    let n = p.sites.len();
    let which = (n > 1).then(|| {
        let k = c.fresh(Ty::F64);
        out.push(Inst {
            results: vec![k],
            op: Op::Restore(vec![Ty::F64]),
        });
        k
    });
    for (k, site) in p.sites.iter().enumerate() {
        let mut arm = Vec::new();
        arm.extend(site.consts.iter().cloned());
        restore(f, &mut c, &mut arm, &site.pushed, zero);
        let mut rest = site.rest.clone();
        retarget(&mut rest, me, down, up, &p.kept, above);
        expect_room(&mut rest, above);
        arm.extend(rest.insts);
        let mut arm = Block {
            insts: arm,
            term: rest.term,
        };
        // The call's results are `f_up`'s parameters; what the arm
        // defines is renamed apart from the other arms'.
        let mut names: HashMap<Val, Val> = site
            .results
            .iter()
            .copied()
            .zip(results.iter().copied())
            .collect();
        let mut defined = Vec::new();
        arm.for_each_inst(&mut |i| defined.extend(i.results.iter().copied()));
        for v in defined {
            let ty = c.types[v.index()];
            names.insert(v, c.fresh(ty));
        }
        rename_block(&mut arm, &names);
        match which {
            Some(which) if k + 1 < n => {
                let number = c.emit(&mut out, Ty::F64, Op::F64Const(k as f64));
                let here = c.emit(&mut out, Ty::Bool, Op::FCmp(Cmp::Eq, which, number));
                out.push(if_then(here, arm));
            }
            _ => {
                out.extend(arm.insts);
                let body = Block {
                    insts: out,
                    term: arm.term,
                };
                let params: Vec<Val> = results
                    .iter()
                    .chain(&p.kept)
                    .copied()
                    .chain([level])
                    .collect();
                return c.finish(String::new(), &params, f.returns.clone(), body);
            }
        }
    }
    unreachable!("a plan has a call")
}

/// The values of `pushed` (of `f`) restored into `out` under their own
/// names: a real or a pointer as itself, a boolean as 1 or 0, made a
/// boolean again.
fn restore(f: &Func, c: &mut Code, out: &mut Vec<Inst>, pushed: &[Val], zero: Val) {
    if pushed.is_empty() {
        return;
    }
    let bools: Vec<(Val, Val)> = (pushed.iter())
        .filter(|v| f.types[v.index()] == Ty::Bool)
        .map(|v| (*v, c.fresh(Ty::F64)))
        .collect();
    let as_restored = |v: &Val| bools.iter().find(|(b, _)| b == v).map_or(*v, |(_, x)| *x);
    out.push(Inst {
        results: pushed.iter().map(as_restored).collect(),
        op: Op::Restore(
            pushed
                .iter()
                .map(|v| match f.types[v.index()] {
                    Ty::Bool => Ty::F64,
                    t => t,
                })
                .collect(),
        ),
    });
    for (v, x) in &bools {
        let z = c.emit(out, Ty::Bool, Op::FCmp(Cmp::Eq, *x, zero));
        out.push(Inst {
            results: vec![*v],
            op: Op::Not(z),
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What `m` prints for `input`, on a thread whose stack holds the
    /// evaluator's recursion thousands of levels deep.
    fn run(m: &Module, input: &str) -> String {
        let (m, input) = (m.clone(), input.to_string());
        let eval = move || {
            let mut out = Vec::new();
            crate::eval::run(&m, &mut input.as_bytes(), &mut out).expect("it runs");
            String::from_utf8_lossy(&out).into_owned()
        };
        std::thread::Builder::new()
            .stack_size(1 << 30)
            .spawn(eval)
            .expect("a thread")
            .join()
            .expect("the evaluation ends")
    }

    /// The module of a filetest, before and after the pass, which adds
    /// `added` functions.
    fn before_after(text: &str, added: usize) -> (Module, Module) {
        let input = text.split("; expect:").next().unwrap_or_default();
        let before = crate::read::module(input).expect("the module reads");
        let mut after = before.clone();
        unrecurse(&mut after);
        assert_eq!(crate::verify::verify(&after), Ok(()));
        assert_eq!(after.funcs.len(), before.funcs.len() + added);
        (before, after)
    }

    /// The filetest `unrecurse/walk` prints what it printed before, at
    /// depths 0, 1, past the test in its code after the call, and deep.
    #[test]
    fn the_loops_print_what_the_recursion_printed() {
        let text = include_str!("../../tests/filetests/unrecurse/walk.fir");
        let (before, after) = before_after(text, 2);
        let inputs = ["0\n2.5\n", "1\n2.5\n", "3\n-1\n", "7\n0.5\n", "3000\n1\n"];
        for input in inputs {
            assert_eq!(run(&after, input), run(&before, input), "input {input:?}");
        }
    }

    /// The filetest `unrecurse/two-calls` (a call in each arm of an `If`)
    /// prints what it printed before, through either call and both.
    #[test]
    fn each_call_goes_on_with_its_own_code() {
        let text = include_str!("../../tests/filetests/unrecurse/two-calls.fir");
        let (before, after) = before_after(text, 2);
        for input in ["0\n", "1\n", "2.5\n", "3.5\n", "6\n", "40\n", "3000\n"] {
            assert_eq!(run(&after, input), run(&before, input), "input {input:?}");
        }
    }

    /// The filetest `unrecurse/through-another` (a recursion through a
    /// function only it calls) prints what it printed before; the other
    /// function goes, two loops come.
    #[test]
    fn a_recursion_through_another_function_becomes_loops_too() {
        let text = include_str!("../../tests/filetests/unrecurse/through-another.fir");
        let (before, after) = before_after(text, 1);
        for input in ["0\n", "1\n", "2.5\n", "9\n", "3000\n"] {
            assert_eq!(run(&after, input), run(&before, input), "input {input:?}");
        }
    }

    /// A function whose code after its call reads a cell made before it
    /// saves the pointer, and prints what it printed.
    #[test]
    fn a_pointer_read_after_the_call_is_saved() {
        let text = "str s0 = \"error: `read-real` reached the end of input\"
cell #0 = (f64)
func f0 main() -> () {
  v0 = read_real s0
  v1 = call f1(v0)
  print_real v1
  return
}
func f1 walk(v0: f64) -> (f64) {
  v1 = f64 0.0
  v2 = feq v0 v1
  v3 = alloc #0(v0)
  v9 = if v2 {
    yield v1
  } else {
    v4 = f64 1.0
    v5 = fsub v0 v4
    v6 = call f1(v5)
    v7 = load v3 #0.0
    v8 = fadd v6 v7
    yield v8
  }
  return v9
}
main f0
";
        let before = crate::read::module(text).expect("the module reads");
        let mut after = before.clone();
        unrecurse(&mut after);
        assert_eq!(crate::verify::verify(&after), Ok(()));
        assert_eq!(after.funcs.len(), before.funcs.len() + 2);
        for input in ["0\n", "4\n", "2000\n"] {
            assert_eq!(run(&after, input), run(&before, input), "input {input:?}");
        }
        assert_eq!(run(&after, "4\n"), "10");
    }
}
