//! `custom-*j-conform` on abstract values: the compile-time twin of
//! `Interp::conforms` (crates/interp/src/adops.rs), which decides whether
//! `plus` of two values is defined from their shapes alone. Shapes are
//! mostly known at compile time, so the check usually costs nothing in
//! compiled code: it is decided here, and a sensitivity that cannot
//! conform becomes the run-time error at the place it is returned.

use super::{Mode, Op, Ops};
use crate::domain::{Av, AvId, LeafKind};

impl<M: Mode> Ops<M> {
    /// `(custom-*j-conform x zero)`: `x` when it has the shape of `zero`.
    /// A shape that only run time decides is split on when it can be (see
    /// below); otherwise (a union that holds itself, an unknown boolean)
    /// it is let through, and `plus` still rejects a mismatch where the
    /// sensitivity is used.
    pub fn custom_conform(&mut self, x: AvId, zero: AvId) -> Op<AvId> {
        match self.conforms(x, zero) {
            Some(false) => Err(ir::message::nonconforming_sensitivity(
                &self.describe(zero),
                &self.describe(x),
            )),
            Some(true) => Ok(x),
            None => {
                // A sensitivity whose shape a branch decides, against a
                // zero of known shape: split the application on its union
                // as the other primitives do, so each member is decided
                // here and compiled code reports what `run` reports.
                // Unions that hold themselves (lists of run-time length)
                // would split without end; those are let through.
                // Lowering follows the analysis's split, so it never
                // splits itself.
                if let Some(u) = self.splittable_union(x, 8).filter(|_| M::SPLITS) {
                    if self.union_free(zero, 64) {
                        self.hit("`custom-*j-conform`", u);
                        return Ok(self.dom.bottom());
                    }
                }
                Ok(x)
            }
        }
    }

    /// The first union in `v`, within `depth` levels, when it does not
    /// hold itself.
    fn splittable_union(&self, v: AvId, depth: usize) -> Option<AvId> {
        if let Some(u) = self.dom.as_union_id(v) {
            let holds_itself = self
                .dom
                .members(u)
                .iter()
                .any(|m| self.contains_union(*m, u, 16));
            return (!holds_itself).then_some(v);
        }
        if depth == 0 {
            return None;
        }
        match self.dom.get(v) {
            Av::Pair(a, b) | Av::Bundle(a, b) => self
                .splittable_union(*a, depth - 1)
                .or_else(|| self.splittable_union(*b, depth - 1)),
            Av::Wrap(_, y) => self.splittable_union(*y, depth - 1),
            Av::Closure(_, env) => env
                .iter()
                .find_map(|y| self.splittable_union(*y, depth - 1)),
            _ => None,
        }
    }

    /// Whether `v` holds union `u` within `depth` levels (or is too deep
    /// to tell, which counts as holding it).
    pub(super) fn contains_union(&self, v: AvId, u: crate::domain::UnionId, depth: usize) -> bool {
        if depth == 0 {
            return true;
        }
        if let Some(w) = self.dom.as_union_id(v) {
            return w == u
                || self
                    .dom
                    .members(w)
                    .iter()
                    .any(|m| self.contains_union(*m, u, depth - 1));
        }
        match self.dom.get(v) {
            Av::Pair(a, b) | Av::Bundle(a, b) => {
                self.contains_union(*a, u, depth - 1) || self.contains_union(*b, u, depth - 1)
            }
            Av::Wrap(_, y) => self.contains_union(*y, u, depth - 1),
            Av::Closure(_, env) => env.iter().any(|y| self.contains_union(*y, u, depth - 1)),
            _ => false,
        }
    }

    /// Whether `v` holds no union within `depth` levels and is no deeper.
    fn union_free(&self, v: AvId, depth: usize) -> bool {
        if depth == 0 || self.dom.as_union_id(v).is_some() {
            return false;
        }
        match self.dom.get(v) {
            Av::Pair(a, b) | Av::Bundle(a, b) => {
                self.union_free(*a, depth - 1) && self.union_free(*b, depth - 1)
            }
            Av::Wrap(_, y) => self.union_free(*y, depth - 1),
            Av::Closure(_, env) => env.iter().all(|y| self.union_free(*y, depth - 1)),
            _ => true,
        }
    }

    /// Whether `plus` of `a` and `b` is defined: `None` when that depends
    /// on values known only at run time.
    fn conforms(&self, a: AvId, b: AvId) -> Option<bool> {
        self.conforms_within(a, b, &mut Vec::new())
    }

    /// [`Self::conforms`], with the pairs of values being compared around
    /// it: a union that holds itself (a list of run-time length) leads
    /// back to one of them, and `plus` is defined on the two values when
    /// it is at every depth, so a pair met again is taken to conform (the
    /// greatest fixpoint) and the rest of the comparison decides.
    fn conforms_within(&self, a: AvId, b: AvId, around: &mut Vec<(AvId, AvId)>) -> Option<bool> {
        let bottom = self.dom.bottom();
        if a == bottom || b == bottom || around.contains(&(a, b)) {
            return Some(true);
        }
        around.push((a, b));
        let r = self.conforms_once(a, b, around);
        around.pop();
        r
    }

    fn conforms_once(&self, a: AvId, b: AvId, around: &mut Vec<(AvId, AvId)>) -> Option<bool> {
        for (u, other, first) in [(a, b, true), (b, a, false)] {
            if let Some(u) = self.dom.as_union_id(u) {
                let answers: Vec<Option<bool>> = self
                    .dom
                    .members(u)
                    .iter()
                    .map(|m| {
                        if first {
                            self.conforms_within(*m, other, around)
                        } else {
                            self.conforms_within(other, *m, around)
                        }
                    })
                    .collect();
                return if answers.iter().all(|r| *r == Some(true)) {
                    Some(true)
                } else if answers.iter().all(|r| *r == Some(false)) {
                    Some(false)
                } else {
                    None
                };
            }
        }
        let mut all = |pairs: &mut dyn Iterator<Item = (AvId, AvId)>| {
            let mut known = true;
            for (x, y) in pairs {
                match self.conforms_within(x, y, around) {
                    Some(false) => return Some(false),
                    None => known = false,
                    Some(true) => {}
                }
            }
            known.then_some(true)
        };
        let real = |v: &Av<M::Leaf>| matches!(v, Av::Real(_) | Av::Leaf(_, LeafKind::Real));
        match (self.dom.get(a), self.dom.get(b)) {
            (x, y) if real(x) && real(y) => Some(true),
            (Av::Nil, Av::Nil) => Some(true),
            (Av::Bool(Some(x)), Av::Bool(Some(y))) => Some(x == y),
            (
                Av::Bool(_) | Av::Leaf(_, LeafKind::Bool),
                Av::Bool(_) | Av::Leaf(_, LeafKind::Bool),
            ) => None,
            (Av::Prim(p), Av::Prim(q)) if p == q => Some(true),
            (Av::Pair(a1, b1), Av::Pair(a2, b2)) | (Av::Bundle(a1, b1), Av::Bundle(a2, b2)) => {
                all(&mut [(*a1, *a2), (*b1, *b2)].into_iter())
            }
            (Av::Closure(l1, e1), Av::Closure(l2, e2)) if l1 == l2 && e1.len() == e2.len() => {
                all(&mut e1.iter().copied().zip(e2.iter().copied()))
            }
            (Av::Wrap(t1, x), Av::Wrap(t2, y)) if t1 == t2 => all(&mut [(*x, *y)].into_iter()),
            (
                Av::Vector(e1, n1) | Av::Leaf(_, LeafKind::Vector(e1, n1)),
                Av::Vector(e2, n2) | Av::Leaf(_, LeafKind::Vector(e2, n2)),
            ) => match (self.dom.known_real(*n1), self.dom.known_real(*n2)) {
                (Some(x), Some(y)) if x != y => Some(false),
                // An empty vector has no elements to compare.
                (Some(0.0), Some(_)) => Some(true),
                (Some(_), Some(_)) => all(&mut [(*e1, *e2)].into_iter()),
                // Lengths known only at run time: `plus` checks them.
                _ => None,
            },
            _ => Some(self.nil_like(a) && self.nil_like(b)),
        }
    }
}
