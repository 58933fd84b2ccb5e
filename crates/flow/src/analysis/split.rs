//! Bindings whose operation needs the shape of a value that only run
//! time knows: the analysis analyses such a binding once per member of
//! the union it met, with the operand narrowed to the member
//! ([`Plan::Switch`]), and finds which union of which operand to narrow
//! when the union met is not itself in an operand.

use super::{limit, shorten, Analyzer, BindInfo, Plan, Switch, MAX_SPLITS, MAX_SPLIT_CASES, R};
use crate::domain::{Av, AvId, Site, UnionId};
use ir::{Rhs, Var};
use rustc_hash::{FxHashMap as HashMap, FxHashSet as HashSet};

impl Analyzer {
    /// The abstract value and plan of binding `var = rhs`. An operation
    /// that needs the shape of a value and finds a union there (it records
    /// the union, `Ops::hit`) is analysed again once per member of that
    /// union, with the operand narrowed to the member ([`Plan::Switch`]).
    pub(super) fn eval_rhs(
        &mut self,
        var: Var,
        rhs: &Rhs,
        vals: &HashMap<Var, AvId>,
        env: &[AvId],
        group: Option<ir::GroupId>,
    ) -> R<BindInfo> {
        self.ops.union_hit.set(None);
        let info = self.eval_rhs_plain(var, rhs, vals, env, group)?;
        let Some((op, u)) = self.ops.union_hit.take() else {
            return Ok(info);
        };
        let Some((x, path, u)) = self.split_point(rhs, vals, u) else {
            if std::env::var_os("VLAD_FLOW_TRACE").is_some() {
                self.trace_lost_union(rhs, vals, u);
            }
            // Operations are functions of their operands: a union one
            // meets is an operand's, or made from an operand's by the
            // operation (see `split_point`).
            return limit(format!(
                "internal error: {op} met a union of shapes that no operand holds or was made from"
            ));
        };
        if self.splits == 0 {
            self.split_cases = 0;
        }
        let members = self.ops.dom.members(u).to_vec();
        self.split_cases = self.split_cases.saturating_add(members.len() as u32);
        let max_splits = match rhs {
            Rhs::Check { expect, .. } => MAX_SPLITS.saturating_add(
                2u32.saturating_mul(datum_size(&self.ops.prog.consts[*expect].datum)),
            ),
            _ => MAX_SPLITS,
        };
        if self.splits >= max_splits || self.split_cases > MAX_SPLIT_CASES {
            let mut shapes = crate::text::union_text(&self.ops.dom, &self.ops.prog, u);
            shorten(&mut shapes, 300);
            return limit(format!(
                "the analysis needs more than {max_splits} nested splits, or {MAX_SPLIT_CASES} \
                 cases, of {op} on values whose shape is known only at run time: {shapes}"
            ));
        }
        let Some(whole) = vals.get(&x).copied() else {
            return limit("internal error: a split operand without a value");
        };
        let mut narrowed = vals.clone();
        let mut av = self.ops.dom.bottom();
        let mut cases = Vec::with_capacity(members.len());
        self.splits += 1;
        for m in members {
            let part = self.ops.replace_at(whole, &path, m);
            narrowed.insert(x, part);
            let info = self.eval_rhs(var, rhs, &narrowed, env, group);
            let info = match info {
                Ok(i) => i,
                Err(e) => {
                    self.splits -= 1;
                    return Err(e);
                }
            };
            let site = Site::Switch(var, self.ctx);
            av = self.ops.dom.join_at(site, av, info.av);
            cases.push((m, info));
        }
        self.splits -= 1;
        Ok(BindInfo {
            av,
            plan: Plan::Switch(Box::new(Switch {
                var: x,
                path,
                cases,
            })),
        })
    }

    /// Where to split binding `rhs` for an operation that met union `u`:
    /// an operand, the path to the union in it, and the union. The union
    /// met may be in no operand but made by the operation itself from
    /// unions that are: mapping a structural operation over a union's
    /// members (`Ops::map_union`: `car` of a sensitivity untags a union
    /// of tagged pairs, then takes apart the union of pairs it made),
    /// `zero` or `plus` of unions, or a union of the parts of a union's
    /// members. Then the nearest union it was made from that an operand
    /// holds is split on: on its members the operation makes no union
    /// (or a smaller one, split on next). Failing that, a union of an
    /// operand whose members hold one of those is split on, which brings
    /// them within reach.
    fn split_point(
        &self,
        rhs: &Rhs,
        vals: &HashMap<Var, AvId>,
        u: UnionId,
    ) -> Option<(Var, Vec<u32>, UnionId)> {
        let dom = &self.ops.dom;
        let mut sources = vec![dom.find(u)];
        let mut i = 0;
        while let Some(&w) = sources.get(i) {
            i += 1;
            let found = rhs.uses().into_iter().find_map(|x| {
                let whole = vals.get(&x).copied()?;
                let (path, w) = self.shallowest_union(whole, |_, y| y == w)?;
                Some((x, path, w))
            });
            if found.is_some() {
                return found;
            }
            for site in dom.sites_of(w) {
                let from = match site {
                    Site::Zero(a) | Site::Part(a, _) => [Some(a), None],
                    Site::Plus(a, b) => [Some(a), Some(b)],
                    Site::Map(_, a, b) => [Some(a), b],
                    _ => [None, None],
                };
                for a in from.into_iter().flatten() {
                    let a = dom.find(a);
                    if !sources.contains(&a) {
                        sources.push(a);
                    }
                }
            }
        }
        rhs.uses().into_iter().find_map(|x| {
            let whole = vals.get(&x).copied()?;
            let (path, w) = self.union_holding(whole, &sources)?;
            Some((x, path, w))
        })
    }

    /// The shallowest union in `v` whose members hold one of `targets`,
    /// and the path to it.
    fn union_holding(&self, v: AvId, targets: &[UnionId]) -> Option<(Vec<u32>, UnionId)> {
        self.shallowest_union(v, |s, w| {
            let mut seen = HashSet::default();
            s.ops
                .dom
                .members(w)
                .iter()
                .any(|m| s.reaches(*m, targets, &mut seen))
        })
    }

    /// Whether `v` holds one of `targets`, looking into the members of
    /// the unions it holds (`seen`: the values already looked at).
    fn reaches(&self, v: AvId, targets: &[UnionId], seen: &mut HashSet<AvId>) -> bool {
        if !seen.insert(v) {
            return false;
        }
        let dom = &self.ops.dom;
        if let Some(w) = dom.as_union_id(v) {
            return targets.contains(&w)
                || dom
                    .members(w)
                    .to_vec()
                    .into_iter()
                    .any(|m| self.reaches(m, targets, seen));
        }
        match dom.get(v).clone() {
            Av::Pair(a, b) | Av::Bundle(a, b) => {
                self.reaches(a, targets, seen) || self.reaches(b, targets, seen)
            }
            Av::Wrap(_, y) => self.reaches(y, targets, seen),
            Av::Closure(_, env) => env.iter().any(|y| self.reaches(*y, targets, seen)),
            _ => false,
        }
    }

    /// For `VLAD_FLOW_TRACE`: a binding whose operation met a union found
    /// in none of its operands.
    fn trace_lost_union(&self, rhs: &Rhs, vals: &HashMap<Var, AvId>, u: UnionId) {
        let (dom, prog) = (&self.ops.dom, &self.ops.prog);
        eprintln!("  union met nowhere in `{}`", ir::print::rhs(prog, rhs));
        eprintln!("    union {u:?} sites {:?}", dom.sites_of(u));
        let mut w = Some(u);
        while let Some((op, a, b)) = w.and_then(|w| self.ops.map_origin(w)) {
            eprintln!("    mapped by {op:?} from {a:?} {b:?}");
            w = Some(a);
        }
        let mut shapes = crate::text::union_text(dom, prog, u);
        shorten(&mut shapes, 600);
        eprintln!("    members {shapes}");
        for x in rhs.uses() {
            if let Some(v) = vals.get(&x) {
                let mut t = crate::text::av_text(dom, prog, *v);
                shorten(&mut t, 600);
                eprintln!("    {} = {t}", ir::print::var(prog, x));
            }
        }
    }

    /// The shallowest union in `v` that `wanted` accepts, looking through
    /// constructors (pairs, tags, bundles, closure environments) but not
    /// into unions, and the path to it (the child taken at each step).
    /// The shallowest occurrence is taken (breadth first): a union split
    /// before left copies of itself one level below where it was (the
    /// tail of a list member), and the operation that needs a shape met
    /// the union at a position not split yet. Each value is looked at
    /// once, at its shallowest path: values are shared, and a list
    /// split once per element is as deep as the constant compared with
    /// it.
    fn shallowest_union(
        &self,
        v: AvId,
        wanted: impl Fn(&Self, UnionId) -> bool,
    ) -> Option<(Vec<u32>, UnionId)> {
        let mut seen = HashSet::default();
        let mut level: Vec<(AvId, Vec<u32>)> = vec![(v, Vec::new())];
        while !level.is_empty() {
            let mut next = Vec::new();
            for (x, p) in level {
                if !seen.insert(x) {
                    continue;
                }
                if let Some(w) = self.ops.dom.as_union_id(x) {
                    if wanted(self, w) {
                        return Some((p, w));
                    }
                    continue;
                }
                let children: Vec<AvId> = match self.ops.dom.get(x) {
                    Av::Pair(a, b) | Av::Bundle(a, b) => vec![*a, *b],
                    Av::Wrap(_, y) => vec![*y],
                    Av::Closure(_, env) => env.to_vec(),
                    _ => continue,
                };
                for (i, c) in children.into_iter().enumerate() {
                    let mut q = p.clone();
                    q.push(i as u32);
                    next.push((c, q));
                }
            }
            level = next;
        }
        None
    }
}

/// The number of pairs and atoms of a constant.
fn datum_size(d: &ir::ConstDatum) -> u32 {
    match d {
        ir::ConstDatum::Pair(a, b) => 1 + datum_size(a).saturating_add(datum_size(b)),
        _ => 1,
    }
}
