//! `custom-*j-conform` on abstract values: the compile-time twin of
//! `Interp::conforms` (crates/interp/src/adops.rs), which decides whether
//! `plus` of two values is defined from their shapes alone. Shapes are
//! mostly known at compile time, so the check usually costs nothing in
//! compiled code: it is decided here, and a sensitivity that cannot
//! conform becomes the run-time error at the place it is returned.

use super::{Op, Ops};
use crate::domain::{Av, AvId, SymKind};

impl Ops {
    /// `(custom-*j-conform x zero)`: `x` when it has the shape of `zero`.
    /// A shape that only run time decides (a union with members on both
    /// sides of the question, an unknown boolean) is let through; `plus`
    /// still rejects it where the sensitivity is used.
    pub fn custom_conform(&mut self, x: AvId, zero: AvId) -> Op<AvId> {
        match self.conforms(x, zero) {
            Some(false) => Err(ir::prim::nonconforming_sensitivity(
                &self.describe(zero),
                &self.describe(x),
            )),
            _ => Ok(x),
        }
    }

    /// Whether `plus` of `a` and `b` is defined: `None` when that depends
    /// on values known only at run time.
    fn conforms(&self, a: AvId, b: AvId) -> Option<bool> {
        let bottom = self.dom.bottom();
        if a == bottom || b == bottom {
            return Some(true);
        }
        for (u, other, first) in [(a, b, true), (b, a, false)] {
            if let Some(u) = self.dom.as_union_id(u) {
                let answers: Vec<Option<bool>> = self
                    .dom
                    .members(u)
                    .iter()
                    .map(|m| {
                        if first {
                            self.conforms(*m, other)
                        } else {
                            self.conforms(other, *m)
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
        let all = |pairs: &mut dyn Iterator<Item = (AvId, AvId)>| {
            let mut known = true;
            for (x, y) in pairs {
                match self.conforms(x, y) {
                    Some(false) => return Some(false),
                    None => known = false,
                    Some(true) => {}
                }
            }
            known.then_some(true)
        };
        let real = |v: &Av| matches!(v, Av::Real(_) | Av::Sym(_, SymKind::Real));
        match (self.dom.get(a), self.dom.get(b)) {
            (x, y) if real(x) && real(y) => Some(true),
            (Av::Nil, Av::Nil) => Some(true),
            (Av::Bool(Some(x)), Av::Bool(Some(y))) => Some(x == y),
            (Av::Bool(_) | Av::Sym(_, SymKind::Bool), Av::Bool(_) | Av::Sym(_, SymKind::Bool)) => {
                None
            }
            (Av::Prim(p), Av::Prim(q)) if p == q => Some(true),
            (Av::Pair(a1, b1), Av::Pair(a2, b2)) | (Av::Bundle(a1, b1), Av::Bundle(a2, b2)) => {
                all(&mut [(*a1, *a2), (*b1, *b2)].into_iter())
            }
            (Av::Closure(l1, e1), Av::Closure(l2, e2)) if l1 == l2 && e1.len() == e2.len() => {
                all(&mut e1.iter().copied().zip(e2.iter().copied()))
            }
            (Av::Wrap(t1, x), Av::Wrap(t2, y)) if t1 == t2 => self.conforms(*x, *y),
            _ => Some(self.nil_like(a) && self.nil_like(b)),
        }
    }
}
