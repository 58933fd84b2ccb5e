//! The vector primitives on abstract values: the compile-time twin of
//! `interp/src/vector.rs`. A vector is [`Av::Vector`]: the join of its
//! elements and its length (a real, known or not). What the lengths and
//! indices decide at compile time is decided here, with the interpreter's
//! messages; the rest is checked by the compiled code (crate `lower`).
//! `build-vector` applies a procedure, so the analysis applies it
//! (`analysis.rs`); the element joins of `list->vector` and
//! `vector-one-hot` happen at a site the caller gives.

use super::{Mode, Op, Ops};
use crate::domain::{Av, AvId, LeafKind, Site, UnionId};
use ir::{message, Expects, Prim};
use std::collections::HashSet;

pub use base::number::is_count;

impl<M: Mode> Ops<M> {
    /// The element and length of `v`, when it is a vector and `i` a real
    /// (the operands of `vector-ref` and `vector-one-hot`).
    fn vector_at(&self, v: AvId, i: AvId) -> Option<(AvId, AvId)> {
        let real = matches!(self.dom.get(i), Av::Real(_) | Av::Leaf(_, LeafKind::Real));
        self.vector_parts(v).filter(|_| real)
    }

    /// The element and length of a vector value, `None` for any other.
    pub fn vector_parts(&self, v: AvId) -> Option<(AvId, AvId)> {
        match self.dom.get(v) {
            Av::Vector(e, n) | Av::Leaf(_, LeafKind::Vector(e, n)) => Some((*e, *n)),
            _ => None,
        }
    }

    /// The pair `(a . b)` of `v`.
    fn pair_parts(&self, v: AvId) -> Option<(AvId, AvId)> {
        match self.dom.get(v) {
            Av::Pair(a, b) => Some((*a, *b)),
            _ => None,
        }
    }

    /// The procedure a check's code names, and the rest of its argument.
    fn who(&self, p: Prim, arg: AvId) -> Op<(&'static str, AvId)> {
        if let Some((code, rest)) = self.pair_parts(arg) {
            if let Some(who) = self
                .dom
                .known_real(code)
                .and_then(message::vector_procedure)
            {
                return Ok((who, rest));
            }
        }
        Err(format!("internal error: `{p}` needs a procedure's code"))
    }

    /// An index `i` into a vector of length `n`: an error when both are
    /// known and it is not one.
    fn check_index(&self, who: &str, n: AvId, i: AvId) -> Op<()> {
        if let (Some(n), Some(i)) = (self.dom.known_real(n), self.dom.known_real(i)) {
            if !(is_count(i) && i < n) {
                return Err(message::bad_index(
                    who,
                    &base::number::format_real(n),
                    &base::number::format_real(i),
                ));
            }
        }
        Ok(())
    }

    /// The operands of vector primitive `p` that must be vectors: the
    /// argument of `vector-length`, the vector of `vector-ref`,
    /// `vector-one-hot` and `vector-check-range`, and each vector of a
    /// list of known length given to `vector-check-lengths`.
    fn vector_operands(&self, p: Prim, arg: AvId) -> Vec<AvId> {
        let rest = |x: AvId| self.pair_parts(x).map(|(_, r)| r);
        match p {
            Prim::VectorLength => vec![arg],
            Prim::VectorRef | Prim::VectorOneHot => {
                self.pair_parts(arg).map(|(v, _)| v).into_iter().collect()
            }
            Prim::VectorCheckRange => rest(arg)
                .and_then(|r| self.pair_parts(r))
                .map(|(v, _)| v)
                .into_iter()
                .collect(),
            Prim::VectorCheckLengths => {
                let mut out = Vec::new();
                let mut l = rest(arg);
                while let Some((v, r)) = l.and_then(|l| self.pair_parts(l)) {
                    out.push(v);
                    l = Some(r);
                }
                out
            }
            _ => Vec::new(),
        }
    }

    /// A vector primitive other than `build-vector` on an untagged
    /// argument. `site` is where elements of different shapes meet; with
    /// `None` (lowering re-deriving a message) no join is made.
    ///
    /// An operand that must be a vector but is a union (a vector or a
    /// real, as a branch decides) is split on, as `car` splits on a union
    /// of pairs: each member is decided on its own, so the vector member
    /// is not refused for the others. A union that holds itself (a list
    /// of run-time length) is no vector and would split without end: the
    /// primitive refuses it as before.
    pub fn vector_prim(&mut self, p: Prim, arg: AvId, site: Option<Site>) -> Op<AvId> {
        let bottom = self.dom.bottom();
        if M::SPLITS {
            for v in self.vector_operands(p, arg) {
                if let Some(u) = self.dom.as_union_id(v) {
                    let members = self.dom.members(u);
                    if !members.iter().any(|m| self.contains_union(*m, u, 16)) {
                        self.hit(p.name(), v);
                        return Ok(bottom);
                    }
                }
            }
        }
        match p {
            Prim::VectorLength => match self.vector_parts(arg) {
                Some((_, n)) => Ok(n),
                None => Err(p.expects(Expects::Vector, &self.describe(arg))),
            },
            Prim::VectorRef => {
                let bad = |s: &Self| Err(p.expects(Expects::VectorAndIndex, &s.describe(arg)));
                let Some((v, i)) = self.pair_parts(arg) else {
                    return bad(self);
                };
                let Some((e, n)) = self.vector_at(v, i) else {
                    return bad(self);
                };
                self.check_index(p.name(), n, i)?;
                Ok(e)
            }
            Prim::VectorOneHot => {
                let bad = |s: &Self| Err(p.expects(Expects::VectorAndIndex, &s.describe(arg)));
                let Some((v, is)) = self.pair_parts(arg) else {
                    return bad(self);
                };
                let Some((i, s)) = self.pair_parts(is) else {
                    return bad(self);
                };
                let Some((e, n)) = self.vector_at(v, i) else {
                    return bad(self);
                };
                self.check_index(p.name(), n, i)?;
                let z = self.zero(e);
                let e = match site {
                    Some(site) => self.dom.join_at(site, z, s),
                    None => bottom,
                };
                Ok(self.dom.vector(e, n))
            }
            Prim::ListToVector => match self.list_elements(arg) {
                None => Err(p.expects(Expects::List, &self.describe(arg))),
                Some((items, n)) => {
                    let mut e = bottom;
                    if let Some(site) = site {
                        for x in items {
                            e = self.dom.join_at(site, e, x);
                        }
                    }
                    let n = match n {
                        Some(n) => self.dom.real(n as f64),
                        None => {
                            if !self.simple_list(arg) {
                                self.vector_met.get_or_insert_with(|| {
                                    "`list->vector` of a list whose rest changes shape".into()
                                });
                            }
                            self.dom.any_real()
                        }
                    };
                    Ok(self.dom.vector(e, n))
                }
            },
            Prim::VectorCheckLength => {
                let (who, n) = self.who(p, arg)?;
                match self.dom.get(n) {
                    Av::Real(Some(x)) if is_count(f64::from_bits(*x)) => Ok(n),
                    Av::Real(None) | Av::Leaf(_, LeafKind::Real) => Ok(n),
                    _ => Err(message::bad_length(who, &self.describe(n))),
                }
            }
            Prim::VectorCheckLengths => {
                let (who, vs) = self.who(p, arg)?;
                let Some((items, count)) = self.list_elements(vs) else {
                    return Err(p.expects(Expects::List, &self.describe(vs)));
                };
                let mut len: Option<AvId> = None;
                let mut known = count.is_some();
                for x in items {
                    let Some((_, n)) = self.vector_parts(x) else {
                        if count.is_some() {
                            return Err(message::not_a_vector(who, &self.describe(x)));
                        }
                        continue;
                    };
                    match (
                        len.and_then(|m| self.dom.known_real(m)),
                        self.dom.known_real(n),
                    ) {
                        (Some(m), Some(k)) if m != k && known => {
                            return Err(message::different_lengths(
                                who,
                                &base::number::format_real(m),
                                &base::number::format_real(k),
                            ))
                        }
                        (_, None) => known = false,
                        _ => {}
                    }
                    if len.is_none() {
                        len = Some(n);
                    }
                }
                Ok(match (known, len) {
                    (true, Some(n)) => n,
                    (true, None) => self.dom.real(0.0),
                    _ => self.dom.any_real(),
                })
            }
            Prim::VectorCheckRange => {
                let (who, rest) = self.who(p, arg)?;
                let parts = self
                    .pair_parts(rest)
                    .and_then(|(v, se)| self.pair_parts(se).map(|(s, e)| (v, s, e)));
                let Some((v, start, end)) = parts else {
                    return Err(p.expects(Expects::VectorAndIndex, &self.describe(arg)));
                };
                let Some((_, n)) = self.vector_parts(v) else {
                    return Err(message::not_a_vector(who, &self.describe(v)));
                };
                let real =
                    |x: AvId| matches!(self.dom.get(x), Av::Real(_) | Av::Leaf(_, LeafKind::Real));
                let known = (
                    self.dom.known_real(n),
                    self.dom.known_real(start),
                    self.dom.known_real(end),
                );
                let fits = match known {
                    (Some(n), Some(s), Some(e)) => {
                        Some(is_count(s) && is_count(e) && s <= e && e <= n)
                    }
                    _ if !(real(start) && real(end)) => Some(false),
                    _ => None,
                };
                if fits == Some(false) {
                    let n = match known.0 {
                        Some(n) => base::number::format_real(n),
                        None => "R".into(),
                    };
                    return Err(message::bad_range(
                        who,
                        &n,
                        &self.describe(start),
                        &self.describe(end),
                    ));
                }
                Ok(self.dom.nil())
            }
            // Applied by the analysis (it calls a procedure); only its
            // own errors are wanted here, and the analysis has them.
            Prim::BuildVector => Ok(bottom),
            _ => Err(format!("internal error: `{p}` is not a vector primitive")),
        }
    }

    /// The elements of a proper list (every car of a list of run-time
    /// length, its unions walked), and its length when it is known; `None`
    /// when no value of `v` is a proper list.
    /// Is `v` pairs the analysis knows and then a list of run-time
    /// length whose cells all have one representation: a union whose
    /// pairs' rests are `()` or unions of the same members (up to the
    /// unions in the rests)? Lowering makes a vector of such a list
    /// (`lower/src/list_to_vector.rs`), dispatching on every cell as on
    /// the first.
    pub fn simple_list(&self, v: AvId) -> bool {
        let mut l = v;
        while let Av::Pair(_, b) = self.dom.get(l) {
            l = *b;
        }
        let first = match self.dom.get(l) {
            Av::Union(u) | Av::Leaf(_, LeafKind::Union(u)) => self.dom.find(*u),
            _ => return false,
        };
        let union_of = |x: AvId| match self.dom.get(x) {
            Av::Union(w) | Av::Leaf(_, LeafKind::Union(w)) => Some(self.dom.find(*w)),
            _ => None,
        };
        // A member with the unions of its rest erased.
        let shape = |m: AvId| match self.dom.get(m) {
            Av::Nil => Some((None, false)),
            Av::Pair(a, c) => match self.dom.get(*c) {
                Av::Nil => Some((Some(*a), false)),
                _ => union_of(*c).map(|_| (Some(*a), true)),
            },
            _ => None,
        };
        let Some(want) = self
            .dom
            .members(first)
            .iter()
            .map(|m| shape(*m))
            .collect::<Option<Vec<_>>>()
        else {
            return false;
        };
        let mut seen = HashSet::new();
        let mut work = vec![first];
        while let Some(u) = work.pop() {
            if !seen.insert(u) {
                continue;
            }
            let members = self.dom.members(u);
            if members.len() != want.len() {
                return false;
            }
            for (m, w) in members.iter().zip(&want) {
                if shape(*m) != Some(*w) {
                    return false;
                }
                if let Av::Pair(_, c) = self.dom.get(*m) {
                    work.extend(union_of(*c));
                }
            }
        }
        true
    }

    pub fn list_elements(&self, v: AvId) -> Option<(Vec<AvId>, Option<usize>)> {
        let mut items = Vec::new();
        let mut seen: HashSet<UnionId> = HashSet::new();
        let mut work = vec![v];
        let mut fixed = true;
        let mut proper = false;
        while let Some(x) = work.pop() {
            match self.dom.get(x) {
                Av::Nil => proper = true,
                Av::Bottom => {}
                Av::Pair(a, b) => {
                    items.push(*a);
                    work.push(*b);
                }
                Av::Union(u) | Av::Leaf(_, LeafKind::Union(u)) => {
                    fixed = false;
                    if seen.insert(self.dom.find(*u)) {
                        work.extend(self.dom.members(*u).iter().copied());
                    }
                }
                _ if fixed => return None,
                _ => {}
            }
        }
        if !proper && v != self.dom.bottom() {
            return None;
        }
        let n = fixed.then_some(items.len());
        Some((items, n))
    }
}
