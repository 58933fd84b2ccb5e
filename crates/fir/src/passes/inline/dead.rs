//! What the rounds of inlining keep of a function `main` no longer
//! reaches (inlined into all its callers): not its body, but what decides
//! what the live functions inline, rewritten each round as inlining would
//! rewrite the body.
//!
//! Its calls still count as call sites of its callees and its copies
//! spend the module's budget, which is what the rounds were tuned with:
//! not counting them made generated-3070's live code twice as large, and
//! keeping its calls as they were when it died left a tower of forward
//! derivatives calling four times as many functions at run time. Copying
//! whole bodies into dead functions, round after round, made 1.8 of the
//! 2.0 million instructions the rounds built for generated-3070, most of
//! its inlining time and its peak of heap. A dead function is a flat list
//! of items instead: its calls, where its arms open and close and how
//! they end, and the number of its other instructions, which is all the
//! rounds read of it (whether a `Call` may take in a body that returns
//! from its arms, [`super::tail_yields`], is not followed as the body
//! changes: that would need its values).

use super::{tail_yields, MAX_SIZE, SMALL};
use crate::{Block, Func, Op, Term};
use base::EntityRef;
use rustc_hash::FxHashMap as HashMap;

/// How a function calls a callee, as far as inlining it there goes; or
/// where an arm of an `If` opens or closes (an error ends what follows
/// in its own block only).
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Kind {
    Call,
    CallAt,
    Tail,
    Build,
    Open,
    Close,
    /// As many instructions as the item's number that are none of these.
    Plain,
}

/// A block's calls, in the order the inliner meets them, its arms marked.
fn kinds(b: &Block, out: &mut Vec<(usize, Kind)>) {
    let mut plain = 0;
    for i in &b.insts {
        let item = match &i.op {
            Op::Call(g, _) => (g.index(), Kind::Call),
            Op::CallAt(g, _, _) => (g.index(), Kind::CallAt),
            Op::VecBuild { func, .. } => (func.index(), Kind::Build),
            Op::If { then_, else_, .. } => {
                out.push((plain + 1, Kind::Plain));
                plain = 0;
                for arm in [then_, else_] {
                    out.push((0, Kind::Open));
                    kinds(arm, out);
                    out.push((term_code(arm), Kind::Close));
                }
                continue;
            }
            _ => {
                plain += 1;
                continue;
            }
        };
        if plain > 0 {
            out.push((plain, Kind::Plain));
            plain = 0;
        }
        out.push(item);
    }
    if plain > 0 {
        out.push((plain, Kind::Plain));
    }
    if let Term::TailCall(g, _) = &b.term {
        out.push((g.index(), Kind::Tail));
    }
}

/// [`Block::size`] of the function whose items ([`kinds`]) are `items`.
fn size_of(items: &[(usize, Kind)]) -> usize {
    1 + items
        .iter()
        .map(|&(n, k)| match k {
            Kind::Plain => n,
            Kind::Call | Kind::CallAt | Kind::Build | Kind::Open => 1,
            Kind::Tail | Kind::Close => 0,
        })
        .sum::<usize>()
}

/// How a block ends, as the number of a `Close` item: it yields, returns,
/// ends the program or tail-calls.
const YIELD: usize = 0;
const RETURN: usize = 1;
const ERROR: usize = 2;
const TAIL: usize = 3;

fn term_code(b: &Block) -> usize {
    match b.term {
        Term::Yield(_) => YIELD,
        Term::Return(_) => RETURN,
        Term::Error(_) | Term::ErrorWith(_) => ERROR,
        Term::TailCall(..) => TAIL,
    }
}

/// [`Block::single_exit`] of the function whose items `items` are.
fn single_exit_items(items: &[(usize, Kind)]) -> bool {
    items
        .iter()
        .all(|&(n, k)| k != Kind::Close || n == YIELD || n == ERROR)
}

/// May a `Call` take in this body (one exit, or one made by [`tail_yields`])?
fn one_exit(b: &Block) -> bool {
    b.single_exit() || tail_yields(b).is_some()
}

/// What the rounds keep of a dead function: its items ([`kinds`]), and
/// whether a `Call` may take it in.
pub(super) struct Dead {
    calls: Vec<(usize, Kind)>,
    one_exit: bool,
    /// How the function's body ends ([`term_code`]).
    term: usize,
}

impl Dead {
    pub(super) fn of(b: &Block) -> Dead {
        let mut calls = Vec::new();
        kinds(b, &mut calls);
        Dead {
            calls,
            one_exit: one_exit(b),
            term: term_code(b),
        }
    }

    /// Its callees, with repeats.
    pub(super) fn callees(&self) -> Vec<usize> {
        self.calls
            .iter()
            .filter(|(_, k)| !matches!(k, Kind::Open | Kind::Close | Kind::Plain))
            .map(|&(g, _)| g)
            .collect()
    }
}

/// What a round reads to rewrite a dead function, as [`super::Inliner`]
/// reads it for a live one.
pub(super) struct DeadModel<'a, 'b> {
    pub(super) sizes: &'a [usize],
    pub(super) sites: &'a [usize],
    pub(super) candidate: &'a [bool],
    pub(super) reads_unplaced: &'a [bool],
    /// The dead functions at the start of the round.
    pub(super) dead: &'a [Option<Dead>],
    /// Where the live callees are read from, as [`super::Callees::Round`].
    pub(super) saved: &'a [Option<Func>],
    pub(super) funcs: &'a [Func],
    /// The live callees as [`Dead`] would keep them, read once a round.
    pub(super) live_calls: &'b mut HashMap<usize, Dead>,
}

impl DeadModel<'_, '_> {
    /// Dead function `f` (`d`) after the round and its size, if the round
    /// inlines into it, as [`super::Inliner::worth`] and
    /// [`super::Inliner::block`] decide for a live one; `left` is the
    /// module's budget.
    pub(super) fn inline(&mut self, f: usize, d: &Dead, left: &mut usize) -> Option<(Dead, usize)> {
        let mut size = self.sizes[f];
        let mut inlined = false;
        let mut term = d.term;
        // How the block whose term a tail call inlined ends now.
        let mut pending = None;
        let mut out = Vec::with_capacity(d.calls.len());
        let mut depth = 0usize;
        let mut items = d.calls.iter();
        while let Some(&(g, kind)) = items.next() {
            match kind {
                Kind::Open => depth += 1,
                Kind::Close => depth = depth.saturating_sub(1),
                _ => {}
            }
            if !matches!(kind, Kind::Call | Kind::CallAt | Kind::Tail) {
                let g = match kind {
                    Kind::Close => pending.take().unwrap_or(g),
                    _ => g,
                };
                out.push((g, kind));
                continue;
            }
            let gs = self.sizes[g];
            let moves = self.sites[g] == 1;
            let worth = g != f
                && self.candidate[g]
                && size + gs <= MAX_SIZE
                && (moves || (gs <= SMALL && gs <= *left))
                && !(kind == Kind::CallAt && self.reads_unplaced[g]);
            let callee = if worth {
                callee(self.dead, self.saved, self.funcs, self.live_calls, g)
            } else {
                None
            };
            let Some(callee) = callee.filter(|c| kind == Kind::Tail || c.one_exit) else {
                out.push((g, kind));
                continue;
            };
            inlined = true;
            let at_call = kind != Kind::Tail;
            out.extend(callee.calls.iter().map(|&(h, k)| {
                // A `Call` takes in a body that returns from its arms as
                // one yielding there ([`tail_yields`]).
                let h = if at_call && k == Kind::Close && h == RETURN {
                    YIELD
                } else {
                    h
                };
                let k = match (kind, k) {
                    (_, Kind::Build | Kind::Open | Kind::Close | Kind::Plain) | (Kind::Tail, _) => {
                        k
                    }
                    (Kind::CallAt, _) => Kind::CallAt,
                    (_, Kind::Tail) => Kind::Call,
                    (_, k) => k,
                };
                (h, k)
            }));
            size += gs;
            if !moves {
                *left = left.saturating_sub(gs);
            }
            if kind == Kind::Tail {
                if depth == 0 {
                    term = callee.term;
                } else {
                    pending = Some(callee.term);
                }
            } else if callee.term == ERROR {
                // Nothing after an error runs: the rest of this block goes.
                let mut level = 0usize;
                let mut rest = items.clone();
                while let Some(&(_, k)) = rest.clone().next() {
                    match k {
                        Kind::Open => level += 1,
                        Kind::Close if level == 0 => break,
                        Kind::Close => level -= 1,
                        _ => {}
                    }
                    rest.next();
                }
                items = rest;
                if depth == 0 {
                    term = ERROR;
                } else {
                    pending = Some(ERROR);
                }
            }
        }
        if !inlined {
            return None;
        }
        let real = size_of(&out);
        // Whether `tail_yields` could take it in is not followed as it
        // changes, only whether it came to have a single exit.
        let one_exit = d.one_exit || single_exit_items(&out);
        Some((
            Dead {
                calls: out,
                one_exit,
                term,
            },
            real,
        ))
    }
}

/// Callee `g` as the round reads it: as it was at the round's start.
fn callee<'a>(
    dead: &'a [Option<Dead>],
    saved: &'a [Option<Func>],
    funcs: &'a [Func],
    live_calls: &'a mut HashMap<usize, Dead>,
    g: usize,
) -> Option<&'a Dead> {
    if let Some(d) = dead.get(g).and_then(Option::as_ref) {
        return Some(d);
    }
    let body = &saved
        .get(g)
        .and_then(Option::as_ref)
        .or_else(|| funcs.get(g))?
        .body;
    Some(live_calls.entry(g).or_insert_with(|| Dead::of(body)))
}
