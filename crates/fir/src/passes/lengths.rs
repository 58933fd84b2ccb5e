//! FIR-to-FIR: the length of a vector a call returns, in terms of its
//! arguments.
//!
//! Why: reverse mode's backward sweep through a loop over a vector
//! returns the sensitivity of every vector the loop's closure reads,
//! each checked by the caller to be as long as its vector (`plus`'s
//! check of shapes) before it is added or dropped. Within a function
//! `simplify` knows a sum's length (a zero or one-hot is made with it),
//! but a call's result was unknown, so the check stayed and kept alive a
//! sensitivity nothing else read: a constant matrix's, a GradBench
//! eval's data, accumulated element by element for nothing.
//!
//! The analysis finds, for each result of each function that is a
//! vector, whether its length is always that of a vector parameter
//! ([`Len::Of`]) or always a number parameter ([`Len::Is`]): a least
//! fixpoint over the whole module (results start unknown, and a
//! recursion returning its own result keeps what its other returns
//! give). Then each `vec_len` of a value whose length is known to be
//! another vector's reads that vector instead, and `simplify` merges the
//! two and folds the check (lengths are never NaN).
//!
//! Indices too: a `vec_index_ok` is known true where a test passed, or
//! where its index is not the vector's length (a test of equality that
//! failed: a loop's exit) and at most it (0, or one more than an index).
//! Every call tells its callee which of its number parameters are
//! indices of which of its vectors and which are their lengths (a
//! greatest fixpoint over all calls, the loop's own included), so a
//! `vector-fold`'s loop and a `VecBuild`'s element function read their
//! vector without a check. A check of a length and a check of an index
//! hold for the rest of the block they passed in, and a failed test of
//! equality for the arm it leads to.
//!
//! Invariant kept: a `vec_len` is rewritten only to read a value that
//! dominates it (a parameter, an argument of the call that made its
//! operand, or a value both arms of an `If` had before it).

use super::simplify;
use crate::{Block, Module, Op, Term, Val};
use base::EntityRef;

/// What is known of the length of a function's result.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) enum Len {
    /// Nothing yet (the fixpoint's start).
    Unknown,
    /// That of vector parameter `j`.
    Of(usize),
    /// Number parameter `j`.
    Is(usize),
    /// Not one of the above.
    Any,
}

impl Len {
    fn join(self, other: Len) -> Len {
        match (self, other) {
            (Len::Unknown, x) | (x, Len::Unknown) => x,
            (a, b) if a == b => a,
            _ => Len::Any,
        }
    }
}

/// A call as the walk saw it: the callee and each argument's vector
/// (whose length it has).
struct Site {
    callee: crate::FuncId,
    args: Vec<Option<Val>>,
    /// For each argument, the arguments (bits, the first 64) whose
    /// vector it is an index of; for a `VecBuild`, one more for the
    /// element's index, an index of the vector built.
    indices: Vec<u64>,
    /// For each argument, the arguments (bits) whose length it is.
    counts: Vec<u64>,
    /// For each argument, the arguments (bits) whose length it is at
    /// most.
    at_most: Vec<u64>,
}

/// What is known of a value's length within a function.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Local {
    Unknown,
    /// That of the vector value.
    Of(Val),
    /// The number value.
    Is(Val),
    Any,
}

impl Local {
    fn join(self, other: Local) -> Local {
        match (self, other) {
            (Local::Unknown, x) | (x, Local::Unknown) => x,
            (a, b) if a == b => a,
            _ => Local::Any,
        }
    }
}

/// The walk of one function: each value's length, and the count each
/// `vec_len` result is (to turn a length that is a count back into the
/// vector it counts).
struct Walk<'a> {
    summary: &'a [Vec<Len>],
    /// For each parameter, the first of those every call passes vectors
    /// of one length in (itself if none).
    rep: &'a [u32],
    np: usize,
    len: Vec<Local>,
    count_of: Vec<Option<Val>>,
    /// The arm each value is made in (0: the body), and each arm's
    /// enclosing one: what an `If`'s arm made is not seen after it.
    scope: Vec<u32>,
    parent: Vec<u32>,
    current: u32,
    /// The two operands of each `feq`: a check that two lengths are
    /// equal, whose failing arm ends the program, makes them so for the
    /// rest of its block (`vector-map` of two vectors, say).
    equal: Vec<Option<(Val, Val)>>,
    /// The lengths a check made equal, to forget when its block ends.
    undo: Vec<(Val, Local)>,
    /// What the walk decided where each instruction is, with the checks
    /// passed before it: the vector each `vec_len` result may read
    /// instead, and the arguments at each call.
    len_read: Vec<Option<Val>>,
    calls: Vec<Site>,
    /// For each parameter, the parameters (bits, the first 64) whose
    /// vector it is an index of at every call ([`index_params`]).
    idx: &'a [u64],
    /// Constants, and the values that are another plus one.
    konst: Vec<Option<f64>>,
    plus_one: Vec<Option<Val>>,
    /// The `vec_index_ok` tests: (vector, index).
    index_test: Vec<Option<(Val, Val)>>,
    /// Where the walk is: (i, v) for each `i` known an index of `v`
    /// (a test passed, a parameter's class), and (a, v) for each `a`
    /// known not to be `v`'s length (a test of equality failed); both
    /// forgotten at the end of the block they were learnt in.
    indices: Vec<(Val, Val)>,
    not_len: Vec<(Val, Val)>,
    /// (i, v) for each parameter `i` every call passes at most the length
    /// of its vector `v`.
    le: Vec<(Val, Val)>,
    /// Whether each `vec_index_ok` result is known true where it is.
    index_known: Vec<bool>,
    /// The candidate summary of the function's results.
    results: Vec<Len>,
}

impl Walk<'_> {
    /// `l` with a count that is a `vec_len` turned into that vector's
    /// length, and a vector's length into the one it is known to equal.
    fn canon(&self, l: Local) -> Local {
        let mut l = l;
        for _ in 0..8 {
            let next = match l {
                Local::Is(n) => match self.count_of[n.index()] {
                    Some(w) => Local::Of(w),
                    None => l,
                },
                Local::Of(w) => match self.len[w.index()] {
                    Local::Of(x) if x != w => Local::Of(x),
                    Local::Is(n) => Local::Is(n),
                    Local::Unknown => Local::Unknown,
                    _ => l,
                },
                _ => l,
            };
            if next == l {
                break;
            }
            l = next;
        }
        l
    }

    /// Whether `v` was made where the current arm sees it.
    fn visible(&self, v: Val) -> bool {
        let mut s = self.current;
        loop {
            if s == self.scope[v.index()] {
                return true;
            }
            if s == 0 {
                return false;
            }
            s = self.parent[s as usize];
        }
    }

    fn of(&self, v: Val) -> Local {
        self.canon(Local::Of(v))
    }

    /// `l` as a summary: in terms of a parameter, or not known.
    fn to_param(&self, l: Local) -> Len {
        match self.canon(l) {
            Local::Unknown => Len::Unknown,
            Local::Of(w) if w.index() < self.np => Len::Of(w.index()),
            Local::Is(n) if n.index() < self.np => Len::Is(n.index()),
            _ => Len::Any,
        }
    }

    /// A callee's summary of result `k`, at a call with `args`.
    fn at_call(&self, s: Len, args: &[Val]) -> Local {
        match s {
            Len::Unknown => Local::Unknown,
            Len::Of(j) => args.get(j).map_or(Local::Any, |a| self.of(*a)),
            Len::Is(j) => args
                .get(j)
                .map_or(Local::Any, |a| self.canon(Local::Is(*a))),
            Len::Any => Local::Any,
        }
    }

    /// The vector whose length `v`'s is, if known.
    fn vector_of(&self, v: Val) -> Option<Val> {
        match self.of(v) {
            Local::Of(x) => Some(x),
            _ => None,
        }
    }

    fn site(&self, g: crate::FuncId, args: &[Val], built: Option<Val>, index: bool) -> Site {
        let vectors: Vec<Option<Val>> = args.iter().map(|a| self.vector_of(*a)).collect();
        let counts: Vec<u64> = args
            .iter()
            .map(|a| {
                let of = self.count_of[a.index()].and_then(|w| self.vector_of(w));
                let mut bits = 0u64;
                for (q, w) in vectors.iter().enumerate().take(64) {
                    if of.is_some() && *w == of {
                        bits |= 1 << q;
                    }
                }
                bits
            })
            .collect();
        let built = built.map(|n| match self.canon(Local::Is(n)) {
            Local::Of(x) => Some(x),
            _ => None,
        });
        let mut indices: Vec<u64> = args
            .iter()
            .map(|a| {
                let mut bits = 0u64;
                for (q, w) in vectors.iter().enumerate().take(64) {
                    if w.is_some_and(|w| self.is_index(*a, w, 4)) {
                        bits |= 1 << q;
                    }
                }
                bits
            })
            .collect();
        let at_most: Vec<u64> = args
            .iter()
            .map(|a| {
                let mut bits = 0u64;
                for (q, w) in vectors.iter().enumerate().take(64) {
                    if w.is_some_and(|w| self.is_index(*a, w, 4) || self.at_most(*a, w, 4)) {
                        bits |= 1 << q;
                    }
                }
                bits
            })
            .collect();
        if let (Some(b), true) = (built, index) {
            let mut bits = 0u64;
            for (q, w) in vectors.iter().enumerate().take(64) {
                if b.is_some() && *w == b {
                    bits |= 1 << q;
                }
            }
            indices.push(bits);
        }
        Site {
            callee: g,
            args: vectors,
            indices,
            counts,
            at_most,
        }
    }

    /// Whether `i` is known here to be an index of the vector `w` (whose
    /// length `vector_of` gives): a test passed; or `i` is not its length
    /// and is at most it ([`Walk::at_most`]).
    fn is_index(&self, i: Val, w: Val, depth: u32) -> bool {
        let same = |x: Val| self.vector_of(x) == Some(w);
        if self.indices.iter().any(|(j, x)| *j == i && same(*x)) {
            return true;
        }
        self.not_len.iter().any(|(a, x)| *a == i && same(*x)) && self.at_most(i, w, depth)
    }

    /// Whether `i` is known here to be at most the length of the vector
    /// `w`: 0, one more than an index, a constant k where k - 1 is an
    /// index, or a parameter every call passes such a number.
    fn at_most(&self, i: Val, w: Val, depth: u32) -> bool {
        let same = |x: Val| self.vector_of(x) == Some(w);
        if depth == 0 {
            return false;
        }
        if self.konst[i.index()] == Some(0.0) || self.le.iter().any(|(j, x)| *j == i && same(*x)) {
            return true;
        }
        if let Some(b) = self.plus_one[i.index()] {
            return self.is_index(b, w, depth - 1);
        }
        match self.konst[i.index()] {
            Some(k) if k >= 1.0 && k.fract() == 0.0 => {
                self.indices.iter().chain(&self.not_len).any(|(j, _)| {
                    self.konst[j.index()] == Some(k - 1.0) && self.is_index(*j, w, depth - 1)
                })
            }
            _ => false,
        }
    }

    /// What taking an arm of an `If` on `cond` tells (`then`: the then
    /// arm): pushed on the facts, to forget when the arm ends.
    fn learn(&mut self, cond: Val, then: bool) {
        if let (true, Some((v, i))) = (then, self.index_test[cond.index()]) {
            self.indices.push((i, v));
        }
        if let (false, Some((a, b))) = (then, self.equal[cond.index()]) {
            for (x, n) in [(a, b), (b, a)] {
                if let Some(w) = self.count_of[n.index()] {
                    self.not_len.push((x, w));
                }
            }
        }
    }

    /// After an `If` without results on `a == b` whose else arm ends the
    /// program: if both are lengths, their vectors are as long, for the
    /// rest of the block.
    fn passed_check(&mut self, cond: Val, then_: &Block, else_: &Block) {
        let ends = !matches!(
            else_.term,
            Term::Yield(_) | Term::Return(_) | Term::TailCall(..)
        );
        if !ends || !matches!(&then_.term, Term::Yield(vs) if vs.is_empty()) {
            return;
        }
        if let Some((v, i)) = self.index_test[cond.index()] {
            self.indices.push((i, v));
        }
        let Some((a, b)) = self.equal[cond.index()] else {
            return;
        };
        let (Some(va), Some(vb)) = (self.count_of[a.index()], self.count_of[b.index()]) else {
            return;
        };
        if let (Some(x), Some(y)) = (self.vector_of(va), self.vector_of(vb)) {
            if x != y {
                self.undo.push((y, self.len[y.index()]));
                self.len[y.index()] = Local::Of(x);
            }
        }
    }

    fn block(&mut self, b: &Block) {
        let mark = self.undo.len();
        let facts = (self.indices.len(), self.not_len.len());
        for inst in &b.insts {
            for r in &inst.results {
                self.scope[r.index()] = self.current;
            }
            let one = inst.results.first().copied();
            let l = match &inst.op {
                Op::VecLen(w) => {
                    if let Some(r) = one {
                        let x = self.vector_of(*w);
                        self.len_read[r.index()] = x;
                        self.count_of[r.index()] = Some(x.unwrap_or(*w));
                    }
                    None
                }
                Op::VecIndexOk(v, i) => {
                    if let Some(r) = one {
                        self.index_test[r.index()] = Some((*v, *i));
                        self.index_known[r.index()] =
                            self.vector_of(*v).is_some_and(|w| self.is_index(*i, w, 4));
                    }
                    None
                }
                Op::F64Const(x) => {
                    if let Some(r) = one {
                        self.konst[r.index()] = Some(*x);
                    }
                    None
                }
                Op::FBin(crate::FBin::Add | crate::FBin::PlusAdd, a, b) => {
                    if let Some(r) = one {
                        self.plus_one[r.index()] =
                            match (self.konst[a.index()], self.konst[b.index()]) {
                                (_, Some(1.0)) => Some(*a),
                                (Some(1.0), _) => Some(*b),
                                _ => None,
                            };
                    }
                    None
                }
                Op::FCmp(crate::Cmp::Eq, a, b) => {
                    if let Some(r) = one {
                        self.equal[r.index()] = Some((*a, *b));
                    }
                    None
                }
                Op::VecBuild {
                    len,
                    func,
                    args,
                    state,
                    ..
                } => {
                    let site = self.site(*func, args, Some(*len), state.is_none());
                    self.calls.push(site);
                    Some(self.canon(Local::Is(*len)))
                }
                Op::VecZero(_, n) | Op::VecOneHot { len: n, .. } => Some(self.canon(Local::Is(*n))),
                Op::VecPlus(_, a, b) => Some(match self.of(*a) {
                    Local::Of(x) if x == *a => self.of(*b),
                    l => l,
                }),
                Op::VecZeroOf { of, .. } | Op::VecOneHotOf { of, .. } => Some(self.of(*of)),
                Op::Call(g, args) | Op::CallAt(g, args, _) => {
                    let site = self.site(*g, args, None, false);
                    self.calls.push(site);
                    for (k, r) in inst.results.iter().enumerate() {
                        let s = self.summary[g.index()].get(k).copied().unwrap_or(Len::Any);
                        self.len[r.index()] = self.at_call(s, args);
                    }
                    None
                }
                Op::If { cond, then_, else_ } => {
                    let mut l = vec![Local::Unknown; inst.results.len()];
                    for (arm, then) in [(then_, true), (else_, false)] {
                        let outer = self.current;
                        self.current = self.parent.len() as u32;
                        self.parent.push(outer);
                        let facts = (self.indices.len(), self.not_len.len());
                        self.learn(*cond, then);
                        self.block(arm);
                        self.indices.truncate(facts.0);
                        self.not_len.truncate(facts.1);
                        if let Term::Yield(vs) = &arm.term {
                            for (lk, v) in l.iter_mut().zip(vs) {
                                *lk = lk.join(self.of(*v));
                            }
                        }
                        self.current = outer;
                    }
                    for (r, lk) in inst.results.iter().zip(l) {
                        // What only an arm made is no length after it.
                        let seen = match lk {
                            Local::Of(x) | Local::Is(x) => self.visible(x),
                            _ => true,
                        };
                        self.len[r.index()] = if seen { lk } else { Local::Any };
                    }
                    if inst.results.is_empty() {
                        self.passed_check(*cond, then_, else_);
                    }
                    None
                }
                _ => None,
            };
            if let (Some(l), Some(r)) = (l, one) {
                self.len[r.index()] = l;
            }
        }
        match &b.term {
            Term::Return(vs) => {
                for (k, v) in vs.iter().enumerate() {
                    let l = self.to_param(Local::Of(*v));
                    self.results[k] = self.results[k].join(l);
                }
            }
            Term::TailCall(g, args) => {
                let site = self.site(*g, args, None, false);
                self.calls.push(site);
                for k in 0..self.results.len() {
                    let s = self.summary[g.index()].get(k).copied().unwrap_or(Len::Any);
                    let l = self.to_param(self.at_call(s, args));
                    self.results[k] = self.results[k].join(l);
                }
            }
            _ => {}
        }
        while self.undo.len() > mark {
            if let Some((v, l)) = self.undo.pop() {
                self.len[v.index()] = l;
            }
        }
        self.indices.truncate(facts.0);
        self.not_len.truncate(facts.1);
    }
}

fn walk<'a>(
    m: &Module,
    f: usize,
    summary: &'a [Vec<Len>],
    reps: &'a [Vec<u32>],
    facts: &'a Facts,
) -> Walk<'a> {
    let func = &m.funcs[f];
    let n = func.types.len();
    let mut w = Walk {
        summary,
        rep: &reps[f],
        idx: &facts.idx[f],
        konst: vec![None; n],
        plus_one: vec![None; n],
        index_test: vec![None; n],
        indices: Vec::new(),
        not_len: Vec::new(),
        le: Vec::new(),
        index_known: vec![false; n],
        np: func.params.len(),
        len: vec![Local::Any; n],
        count_of: vec![None; n],
        results: vec![Len::Unknown; func.returns.len()],
        scope: vec![0; n],
        parent: vec![0],
        current: 0,
        equal: vec![None; n],
        undo: Vec::new(),
        len_read: vec![None; n],
        calls: Vec::new(),
    };
    for p in 0..func.params.len() {
        w.len[p] = Local::Of(Val::new(w.rep[p] as usize));
    }
    for (p, bits) in w.idx.iter().enumerate() {
        for q in 0..64.min(func.params.len()) {
            if bits & (1 << q) != 0 {
                w.indices.push((Val::new(p), Val::new(q)));
            }
        }
    }
    for (p, bits) in facts.le[f].iter().enumerate() {
        for q in 0..64.min(func.params.len()) {
            if bits & (1 << q) != 0 {
                w.le.push((Val::new(p), Val::new(q)));
            }
        }
    }
    for (p, bits) in facts.cnt[f].iter().enumerate() {
        if let Some(q) = (0..64.min(func.params.len())).find(|q| bits & (1 << q) != 0) {
            w.count_of[p] = Some(Val::new(q));
        }
    }
    w.block(&func.body);
    w
}

/// Each function's results' lengths, given the parameters' classes: a
/// worklist over the callers of what changed (each result rises at most
/// three times).
fn summaries(m: &Module, reps: &[Vec<u32>], callers: &[Vec<usize>], none: &Facts) -> Vec<Vec<Len>> {
    let n = m.funcs.len();
    let mut summary: Vec<Vec<Len>> = m
        .funcs
        .iter()
        .map(|f| vec![Len::Unknown; f.returns.len()])
        .collect();
    let mut work: Vec<usize> = (0..n).rev().collect();
    let mut queued = vec![true; n];
    while let Some(f) = work.pop() {
        queued[f] = false;
        let w = walk(m, f, &summary, reps, none);
        let joined: Vec<Len> = summary[f]
            .iter()
            .zip(&w.results)
            .map(|(a, b)| a.join(*b))
            .collect();
        if joined != summary[f] {
            summary[f] = joined;
            for &c in &callers[f] {
                if !std::mem::replace(&mut queued[c], true) {
                    work.push(c);
                }
            }
        }
    }
    summary
}

/// What every call tells of each parameter (bits over the first 64
/// parameters): `idx`, the vectors it is an index of; `cnt`, those it is
/// the length of (a loop's bound).
struct Facts {
    idx: Vec<Vec<u64>>,
    cnt: Vec<Vec<u64>>,
    /// The vectors it is at most the length of (a loop's counter before
    /// its exit test).
    le: Vec<Vec<u64>>,
}

impl Facts {
    fn none(m: &Module) -> Facts {
        let zeros: Vec<Vec<u64>> = m.funcs.iter().map(|f| vec![0; f.params.len()]).collect();
        Facts {
            idx: zeros.clone(),
            cnt: zeros.clone(),
            le: zeros,
        }
    }
}

/// [`Facts`], by refinement from "every number parameter an index of and
/// the length of every vector parameter" (a greatest fixpoint: a loop's
/// counter is an index of its vector because its first call passes one
/// and each call of its own passes one more, below the length it tests
/// it against). Functions no call reaches know nothing of theirs.
fn param_facts(m: &Module, summary: &[Vec<Len>], reps: &[Vec<u32>], called: &[bool]) -> Facts {
    let start: Vec<Vec<u64>> = m
        .funcs
        .iter()
        .zip(called)
        .map(|(f, c)| {
            let ptrs = f
                .params
                .iter()
                .take(64)
                .enumerate()
                .filter(|(_, t)| **t == crate::Ty::Ptr)
                .fold(0u64, |b, (q, _)| b | 1 << q);
            f.params
                .iter()
                .map(|t| if *c && *t == crate::Ty::F64 { ptrs } else { 0 })
                .collect()
        })
        .collect();
    let mut facts = Facts {
        idx: start.clone(),
        cnt: start.clone(),
        le: start,
    };
    for _ in 0..16 {
        let mut next = Facts {
            idx: facts.idx.clone(),
            cnt: facts.cnt.clone(),
            le: facts.le.clone(),
        };
        for f in 0..m.funcs.len() {
            for site in walk(m, f, summary, reps, &facts).calls {
                let g = site.callee.index();
                for (p, bits) in next.idx[g].iter_mut().enumerate() {
                    *bits &= site.indices.get(p).copied().unwrap_or(0);
                }
                for (p, bits) in next.cnt[g].iter_mut().enumerate() {
                    *bits &= site.counts.get(p).copied().unwrap_or(0);
                }
                for (p, bits) in next.le[g].iter_mut().enumerate() {
                    *bits &= site.at_most.get(p).copied().unwrap_or(0);
                }
            }
        }
        if next.idx == facts.idx && next.cnt == facts.cnt && next.le == facts.le {
            return facts;
        }
        facts = next;
    }
    Facts::none(m)
}

/// The classes of parameters of one length, by refinement from "all the
/// vector parameters of a function alike" (a greatest fixpoint, so that a
/// loop's running sum is as long as the vector it sums into: every call,
/// the loop's own included, passes them so). Each round splits a class
/// where some call passes arguments whose lengths the caller does not
/// know to be one; the summaries are made again for the classes left.
/// Functions no call reaches keep each parameter apart.
fn classes(m: &Module, callers: &[Vec<usize>]) -> (Vec<Vec<u32>>, Vec<Vec<Len>>) {
    let none = Facts::none(m);
    let apart: Vec<Vec<u32>> = m
        .funcs
        .iter()
        .map(|f| (0..f.params.len() as u32).collect())
        .collect();
    let mut reps: Vec<Vec<u32>> = m
        .funcs
        .iter()
        .map(|f| {
            let first = f.params.iter().position(|t| *t == crate::Ty::Ptr);
            f.params
                .iter()
                .enumerate()
                .map(|(p, t)| match (t, first) {
                    (crate::Ty::Ptr, Some(q)) => q as u32,
                    _ => p as u32,
                })
                .collect()
        })
        .collect();
    for _ in 0..16 {
        let summary = summaries(m, &reps, callers, &none);
        // For each callee, each call's arguments' lengths, as the caller
        // knows them.
        let mut sites: Vec<Vec<Vec<Option<Val>>>> = vec![Vec::new(); m.funcs.len()];
        for f in 0..m.funcs.len() {
            // Compared within one call only: values of one caller.
            for site in walk(m, f, &summary, &reps, &none).calls {
                sites[site.callee.index()].push(site.args);
            }
        }
        let mut next = reps.clone();
        for (g, calls) in sites.iter().enumerate() {
            if calls.is_empty() {
                next[g] = apart[g].clone();
                continue;
            }
            for p in 0..next[g].len() {
                let q = reps[g][p] as usize;
                if q == p {
                    continue;
                }
                let same = calls.iter().all(|keys| {
                    matches!((keys.get(p), keys.get(q)), (Some(Some(a)), Some(Some(b))) if a == b)
                });
                if !same {
                    // Apart from its representative: with the first of its
                    // old class that is still alike, or alone.
                    let with = (0..p).find(|&r| {
                        reps[g][r] as usize == q
                            && next[g][r] as usize == r
                            && r != q
                            && calls.iter().all(|keys| {
                                matches!((keys.get(p), keys.get(r)), (Some(Some(a)), Some(Some(b))) if a == b)
                            })
                    });
                    next[g][p] = with.unwrap_or(p) as u32;
                }
            }
        }
        if next == reps {
            return (reps, summary);
        }
        reps = next;
    }
    let summary = summaries(m, &apart, callers, &none);
    (apart, summary)
}

/// Per function, what is known of the length of each of its results (a
/// vector's), in terms of its parameters.
pub(crate) fn result_lengths(m: &Module) -> Vec<Vec<Len>> {
    let mut callers: Vec<Vec<usize>> = vec![Vec::new(); m.funcs.len()];
    for (fi, f) in m.funcs.iter().enumerate() {
        f.body
            .for_each_call(&mut |g, _, _| callers[g.index()].push(fi));
    }
    classes(m, &callers).1
}

/// The pass: rewrites `vec_len`s to read the vector whose length theirs
/// is known to be, then simplifies the functions it changed.
pub fn known_lengths(m: &mut Module) {
    // Nothing to rewrite without a `vec_len`: most programs without
    // vectors, whose build this would only slow.
    let mut reads_lengths = false;
    for f in &m.funcs {
        f.body
            .for_each_inst(&mut |i| reads_lengths |= matches!(i.op, Op::VecLen(_)));
    }
    if !reads_lengths {
        return;
    }
    let n = m.funcs.len();
    let mut callers: Vec<Vec<usize>> = vec![Vec::new(); n];
    for (fi, f) in m.funcs.iter().enumerate() {
        f.body
            .for_each_call(&mut |g, _, _| callers[g.index()].push(fi));
    }
    let (reps, summary) = classes(m, &callers);
    let called: Vec<bool> = callers.iter().map(|c| !c.is_empty()).collect();
    let facts = param_facts(m, &summary, &reps, &called);
    let changed: Vec<bool> = (0..n)
        .map(|f| {
            let w = walk(m, f, &summary, &reps, &facts);
            rewrite(&mut m.funcs[f].body, &w)
        })
        .collect();
    simplify::simplify_changed(m, &changed);
}

fn rewrite(b: &mut Block, w: &Walk) -> bool {
    let mut changed = false;
    for inst in &mut b.insts {
        match &mut inst.op {
            Op::VecIndexOk(..)
                if inst
                    .results
                    .first()
                    .is_some_and(|r| w.index_known[r.index()]) =>
            {
                inst.op = Op::BoolConst(true);
                changed = true;
            }
            Op::VecLen(v) => {
                if let Some(x) = inst.results.first().and_then(|r| w.len_read[r.index()]) {
                    if x != *v {
                        *v = x;
                        changed = true;
                    }
                }
            }
            Op::If { then_, else_, .. } => {
                changed |= rewrite(then_, w);
                changed |= rewrite(else_, w);
            }
            _ => {}
        }
    }
    changed
}
