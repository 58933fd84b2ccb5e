//! What the simplifier knows of cells and of the tests made on them: a
//! cell allocated in the function (its tag, zero mark and scalars, since
//! cells never change), and the outcomes of tag and zero tests known in
//! a scope (inside an arm of the test, or after a dispatch whose other
//! arms fail).

use super::{yields, Flow, Fwd, Key, K};
use crate::{Block, Inst, Op, Val};
use base::EntityRef;
use rustc_hash::FxHashMap as HashMap;

/// The outcomes of tests known in a scope beyond its arm's condition:
/// those every path through an earlier conditional of the scope that goes
/// on established (all others ended in an error or a return). A dispatch
/// on a cell's tag is a chain of tests whose other arms fail, so after
/// one dispatch the next on the same cell knows its tag.
#[derive(Default)]
pub(super) struct Facts {
    pub(super) known: Vec<(Key, bool)>,
    /// The tags known of cells.
    pub(super) tags: HashMap<Val, u32>,
    /// The constants to restore when the scope closes.
    pub(super) undo: Vec<(Val, Option<K>)>,
}

/// What is known of a cell: its tag, its zero mark and, for a cell
/// allocated in the function, its scalars (cells never change).
#[derive(Clone, Default, PartialEq)]
pub(super) struct Cell {
    pub(super) tag: Option<u32>,
    pub(super) zero: Option<bool>,
    pub(super) fields: Option<Vec<Val>>,
}

impl Cell {
    /// What is known of a value that is `a` or `b` (`None`: an arm that
    /// does not yield).
    pub(super) fn join(a: Option<Cell>, b: Option<Cell>) -> Option<Cell> {
        match (a, b) {
            (Some(a), Some(b)) => Some(Cell {
                tag: a.tag.filter(|t| b.tag == Some(*t)),
                zero: a.zero.filter(|z| b.zero == Some(*z)),
                fields: None,
            }),
            (a, None) => a,
            (None, b) => b,
        }
    }
}

impl Fwd {
    /// What is known here of the cell `p` points to: what made it, and
    /// the tests made on it that are known here (inside an arm of a test).
    /// (Not the scalars it was made of.)
    pub(super) fn cell(&self, p: Val) -> Cell {
        let (tag, mut zero) = self.cells.get(&p).map_or((None, None), |c| (c.tag, c.zero));
        if zero.is_none() && self.zero_tested[p.index()] {
            zero = self.lookup(&Key::IsZero(p)).and_then(|t| self.b(t));
        }
        Cell {
            tag,
            zero,
            fields: None,
        }
    }

    /// The tag known here of the cell `p` points to.
    pub(super) fn known_tag(&self, p: Val) -> Option<u32> {
        self.cells.get(&p).and_then(|c| c.tag).or_else(|| {
            self.facts
                .iter()
                .rev()
                .find_map(|f| f.tags.get(&p).copied())
        })
    }

    pub(super) fn open_scope(&mut self) {
        self.scopes.push(HashMap::default());
        self.facts.push(Facts::default());
    }

    /// Closes the innermost scope, giving back what it learnt.
    pub(super) fn close_scope(&mut self) -> Vec<(Key, bool)> {
        self.scopes.pop();
        let f = self.facts.pop().unwrap_or_default();
        for (v, k) in f.undo.into_iter().rev() {
            self.konst[v.index()] = k;
        }
        f.known
    }

    /// Takes the outcome `b` of test `key` as known from here to the end
    /// of the scope.
    pub(super) fn assume(&mut self, key: Key, b: bool, out: &mut Vec<Inst>) {
        if let (Key::TagIs(p, t), true) = (&key, b) {
            if let Some(f) = self.facts.last_mut() {
                f.tags.insert(*p, *t);
            }
        }
        match self.lookup(&key) {
            Some(v) => {
                if self.konst[v.index()].is_some() {
                    return;
                }
                self.konst[v.index()] = Some(K::B(b));
                if let Some(f) = self.facts.last_mut() {
                    f.undo.push((v, None));
                }
            }
            None => {
                let c = self.fresh_bool(b, out);
                self.scopes
                    .last_mut()
                    .expect("scope")
                    .insert(key.clone(), c);
            }
        }
        if let Some(f) = self.facts.last_mut() {
            f.known.push((key, b));
        }
    }

    /// The value of a boolean constant, made here if need be.
    pub(super) fn fresh_bool(&mut self, b: bool, out: &mut Vec<Inst>) -> Val {
        if let Some(c) = self.lookup(&Key::B(b)) {
            return c;
        }
        let k = self.fresh_of(crate::Ty::Bool);
        let flow = self.inst(
            Inst {
                results: vec![k],
                op: Op::BoolConst(b),
            },
            out,
        );
        debug_assert!(matches!(flow, Flow::Continue));
        self.r(k)
    }

    /// Whether the values test `key` reads are visible at scope depth
    /// `depth`.
    pub(super) fn visible(&self, key: &Key, depth: usize) -> bool {
        match key {
            Key::TagIs(p, _) | Key::IsZero(p) => self.level[p.index()] <= depth,
            _ => false,
        }
    }

    /// Records the cell `cell` made of `fields` (returned renamed). A
    /// field that is a condition known here (inside an arm it decides) is
    /// stored as that constant, which `fields` then drops from every cell
    /// of the member if all store it: a tape cell stored the `null?` of
    /// the list its arm had just found not to be empty.
    pub(super) fn alloc(
        &mut self,
        cell: Option<Val>,
        tag: u32,
        fields: Vec<Val>,
        zero: bool,
        out: &mut Vec<Inst>,
    ) -> Vec<Val> {
        let fields: Vec<Val> = fields
            .into_iter()
            .map(|v| {
                let v = self.r(v);
                match self.konst[v.index()] {
                    Some(K::B(b)) => self.fresh_bool(b, out),
                    _ => v,
                }
            })
            .collect();
        let known = Cell {
            tag: Some(tag),
            zero: Some(zero),
            fields: Some(fields.clone()),
        };
        self.cells.insert(cell.expect("alloc result"), known);
        fields
    }

    /// What is known, at the end of an arm, of the `n` values it yields:
    /// the cells they point to and their constants (`None` each if it does
    /// not yield).
    pub(super) fn yielded(&self, arm: &Block, n: usize) -> Vec<Option<(Cell, Option<K>)>> {
        match yields(arm) {
            Some(vs) => vs
                .iter()
                .map(|v| Some((self.cell(*v), self.konst[v.index()])))
                .collect(),
            None => vec![None; n],
        }
    }
}
