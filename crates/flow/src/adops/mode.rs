//! What the analysis and lowering do differently with the shape
//! operations ([`Ops`]). Both run the same case analysis of `zero`,
//! `plus`, `bundle`, the tag operations and the rest; they differ in
//! what a map over a union is (the analysis adds the results of every
//! member to the result union; lowering, whose union values are cells
//! known only at run time, makes it a call) and in whether AD may nest
//! without bound (the analysis stops a nesting that keeps growing;
//! lowering replays transformations the analysis made). The analysis'
//! mode is [`Analysing`]; lowering's is its own (crate `lower`).

use super::Ops;
use crate::domain::{AvId, Leaf, NoLeaf, UnionId, UnionOp};
use ir::{EntityRef, LambdaId, Tag};

/// A map over a union ([`Ops::map_union`]): where its results go.
#[derive(Clone, Copy, Debug)]
pub struct UnionMap {
    pub op: UnionOp,
    /// The union mapped over, and for `bundle` the union of the tangents.
    pub operands: (UnionId, Option<UnionId>),
    /// The union of the results.
    pub result: UnionId,
    /// When the map undoes the one that made its operand: the value given
    /// back (`result`'s, wrapped in the tag, if any, that the map takes
    /// off each result: the tangent union of a `bundle` given back as a
    /// perturbation).
    pub given_back: Option<(AvId, Option<Tag>)>,
}

/// What the shape operations do where the analysis and lowering differ.
pub trait Mode: Sized {
    /// The leaves this mode's values may have ([`crate::domain::Leaf`]):
    /// the analysis' are [`crate::domain::NoLeaf`].
    type Leaf: Leaf;

    /// Whether `custom-*j-conform` of a sensitivity whose shape a branch
    /// decides records the union to split on (`Ops::hit`): the analysis
    /// splits; lowering follows the analysis' splits and never makes its
    /// own.
    const SPLITS: bool;

    /// The value of `map` over union value `v` (and `w`, for `bundle`).
    fn map_union(ops: &mut Ops<Self>, map: UnionMap, v: AvId, w: Option<AvId>) -> AvId;

    /// `tag` of lambda `l`, the lambda of closure `closure`.
    fn transform(ops: &mut Ops<Self>, tag: Tag, l: LambdaId, closure: AvId) -> LambdaId {
        let _ = closure;
        ad::transform(&mut ops.prog, &mut ops.memo, tag, l)
    }
}

/// The analysis' mode, and what it keeps of AD nesting.
#[derive(Default)]
pub struct Analysing {
    /// The AD nesting depth of each lambda met so far, by lambda number
    /// (see [`crate::analysis::MAX_AD_DEPTH`]).
    ad_depth: Vec<Option<u32>>,
    /// Set when a transformation of a closure holding a union would nest
    /// AD deeper than [`crate::analysis::MAX_AD_DEPTH`] (the lambda it was
    /// asked of):
    /// the transformation is not made and the analysis stops with a limit
    /// error.
    pub(crate) too_deep: Option<LambdaId>,
}

impl Mode for Analysing {
    type Leaf = NoLeaf;
    const SPLITS: bool = true;

    fn map_union(ops: &mut Ops<Self>, map: UnionMap, _v: AvId, _w: Option<AvId>) -> AvId {
        let (u, wu) = map.operands;
        match map.given_back {
            // The union given back must hold the operation's result on
            // every member: `u` may have gained members (or wider ones)
            // by joins that did not come from the union given back, and a
            // narrower member would make lowering take a run-time value
            // for a constant.
            Some((back, tag)) => {
                ops.map_members(map.op, u, wu, map.result, tag.is_some());
                back
            }
            None => {
                ops.map_members(map.op, u, wu, map.result, false);
                ops.dom.union_av(map.result)
            }
        }
    }

    /// [`ad::transform`], unless that would nest AD deeper than
    /// [`crate::analysis::MAX_AD_DEPTH`] in a closure that holds a union:
    /// then `l` itself, and `too_deep` says so. A closure of fixed shape
    /// nests AD as deep as its (finite) chain of closures says, a constant
    /// of the program (a derivative tower of constant height); one that
    /// holds a union may hold itself (the union of a tower of run-time
    /// height, which summarising its recursion made) and nest without
    /// end. Each level of reverse over reverse doubles the code, so such a
    /// nesting must stop here, before the transformation is made, not after.
    fn transform(ops: &mut Ops<Self>, tag: Tag, l: LambdaId, closure: AvId) -> LambdaId {
        if ops.mode.too_deep.is_some() {
            return l;
        }
        if ops.dom.has_union(closure) && ad_depth(ops, l) >= crate::analysis::MAX_AD_DEPTH {
            ops.mode.too_deep = Some(l);
            return l;
        }
        ad::transform(&mut ops.prog, &mut ops.memo, tag, l)
    }
}

/// How many AD transformations `l` is of (a transform of a transform
/// ...), memoised per lambda.
pub(crate) fn ad_depth(ops: &mut Ops<Analysing>, l: LambdaId) -> u32 {
    let i = l.index();
    if let Some(Some(d)) = ops.mode.ad_depth.get(i) {
        return *d;
    }
    let d = match ops.prog.lambdas[l].origin {
        ir::Origin::Transform { of, .. } | ir::Origin::Backprop { of } => 1 + ad_depth(ops, of),
        ir::Origin::PrimTransform { .. } => 1,
        ir::Origin::Source | ir::Origin::Custom { .. } => 0,
    };
    let depths = &mut ops.mode.ad_depth;
    if depths.len() <= i {
        depths.resize(i + 1, None);
    }
    depths[i] = Some(d);
    d
}
