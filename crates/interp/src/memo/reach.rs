//! Which of the memo's arguments the program can still reach.
//!
//! A memo entry holds its arguments weakly and its result strongly. When a
//! result reaches an argument of another entry whose result reaches back
//! (nested forward mode makes such rings of primals, tangents and their
//! bundles), the arguments never die though the program has let go of them:
//! reference counting sees a cycle through the memo, and the memo grew
//! without bound on particle-FF. This finds them as an ephemeron collector
//! would, by trial deletion over what the results reach:
//!
//! 1. Count, for every heap node the strong results reach, the references
//!    to it from those results and from the nodes they reach.
//! 2. A node with more strong references than that is held from outside
//!    the memo (a frame, a constant, the program's data): it is live, and
//!    so is what it reaches.
//! 3. An entry whose arguments are live, or not reached by any result at
//!    all (then only the program can hold them), keeps its result live.
//!
//! Repeated to a fixpoint, the nodes left unmarked are held by the memo
//! alone, and the entries keyed on them can never be looked up again. A
//! reference the walk does not follow (inside a [`VectorSum`]) only makes
//! a node look held from outside, so a miss errs on the side of keeping.
//!
//! [`VectorSum`]: crate::vector::VectorSum

use super::Map;
use crate::value::Value;
use std::rc::Rc;

/// A memo entry as the walk sees it.
pub(super) struct Seen<'a> {
    /// The arguments' addresses (the second 0 when there is none).
    pub args: [usize; 2],
    /// The result, when held strongly.
    pub result: Option<&'a Value>,
    /// Whether the arguments are alive at all: the result of an entry
    /// whose argument has died is still held until the entry goes, but
    /// keeps nothing live.
    pub alive: bool,
}

/// No entry waits on a node.
const NONE: u32 = u32::MAX;
/// `Node::inner`'s flags: marked live; met by the search for roots.
const LIVE: u32 = 1 << 31;
const MET: u32 = 1 << 30;
const COUNT: u32 = MET - 1;

/// A heap node met by the walk: 16 bytes with its address, since the walk
/// meets about as many nodes as the memo has entries.
#[derive(Clone, Copy)]
struct Node {
    /// References to it from results and from nodes met, and the flags.
    inner: u32,
    /// The first entry waiting for it to be marked (an index into `waits`).
    wait: u32,
}

/// An entry waiting for one of its arguments to be marked.
struct Wait<'a> {
    result: &'a Value,
    entry: u32,
    next: u32,
}

/// The nodes reached from the memo's strong results, and which are live.
pub(super) struct Reach {
    nodes: Map<usize, Node>,
}

impl Reach {
    /// Marks what the program reaches; `entries` are met twice, in the
    /// same order.
    pub fn new<'a, I>(entries: impl Fn() -> I) -> Reach
    where
        I: Iterator<Item = Seen<'a>>,
    {
        let mut nodes: Map<usize, Node> = Map::default();
        // One result at a time: the stack holds a path, not every result.
        let mut stack: Vec<&'a Value> = Vec::new();
        for result in entries().filter_map(|e| e.result) {
            stack.push(result);
            while let Some(v) = stack.pop() {
                let Some(a) = v.addr() else { continue };
                match nodes.get_mut(&a) {
                    Some(n) => n.inner = (n.inner & !COUNT) | ((n.inner & COUNT) + 1).min(COUNT),
                    None => {
                        nodes.insert(
                            a,
                            Node {
                                inner: 1,
                                wait: NONE,
                            },
                        );
                        children(v, |c| stack.push(c));
                    }
                }
            }
        }
        // Entries wait for their arguments that a result reaches.
        let mut waits: Vec<Wait<'a>> = Vec::new();
        let mut unmarked: Vec<u8> = Vec::new();
        let mut live: Vec<&'a Value> = Vec::new();
        for (i, e) in entries().enumerate() {
            unmarked.push(0);
            let (Some(result), true) = (e.result, e.alive) else {
                continue;
            };
            for k in e.args.iter().filter(|k| **k != 0) {
                if let Some(n) = nodes.get_mut(k) {
                    unmarked[i] += 1;
                    waits.push(Wait {
                        result,
                        entry: i as u32,
                        next: n.wait,
                    });
                    n.wait = (waits.len() - 1) as u32;
                }
            }
            if unmarked[i] == 0 {
                live.push(result);
            }
        }
        // The roots: nodes held from outside.
        for result in entries().filter_map(|e| e.result) {
            stack.push(result);
            while let Some(v) = stack.pop() {
                let Some(n) = v.addr().and_then(|a| nodes.get_mut(&a)) else {
                    continue;
                };
                if n.inner & MET != 0 {
                    continue;
                }
                n.inner |= MET;
                if strong_count(v) > (n.inner & COUNT) as usize {
                    live.push(v);
                }
                children(v, |c| stack.push(c));
            }
        }
        while let Some(v) = live.pop() {
            let Some(a) = v.addr() else { continue };
            let Some(n) = nodes.get_mut(&a) else { continue };
            if n.inner & LIVE != 0 {
                continue;
            }
            n.inner |= LIVE;
            let mut w = n.wait;
            children(v, |c| live.push(c));
            while w != NONE {
                let wait = &waits[w as usize];
                let i = wait.entry as usize;
                unmarked[i] -= 1;
                if unmarked[i] == 0 {
                    live.push(wait.result);
                }
                w = wait.next;
            }
        }
        Reach { nodes }
    }

    /// Whether the program may still hold the node at `addr` (0: none).
    pub fn reached(&self, addr: usize) -> bool {
        self.nodes.get(&addr).is_none_or(|n| n.inner & LIVE != 0)
    }
}

/// The strong references a value's node holds.
fn strong_count(v: &Value) -> usize {
    match v {
        Value::Pair(p) | Value::Bundle(p) => Rc::strong_count(p),
        Value::Closure(c) => Rc::strong_count(c),
        Value::Perturbation(x) | Value::Sensitivity(x) | Value::Reverse(x) => Rc::strong_count(x),
        Value::Vector(v) => Rc::strong_count(v),
        Value::VectorSum(v) => Rc::strong_count(v),
        Value::Real(_) | Value::Bool(_) | Value::Nil | Value::Prim(_) => 0,
    }
}

/// The values a node holds (a sum's are not followed: see the top).
fn children<'a>(v: &'a Value, mut f: impl FnMut(&'a Value)) {
    match v {
        Value::Pair(p) | Value::Bundle(p) => {
            f(&p.0);
            f(&p.1);
        }
        Value::Closure(c) => c.env.iter().for_each(f),
        Value::Perturbation(x) | Value::Sensitivity(x) | Value::Reverse(x) => f(x),
        Value::Vector(items) => items.iter().for_each(f),
        Value::VectorSum(_) | Value::Real(_) | Value::Bool(_) | Value::Nil | Value::Prim(_) => {}
    }
}
