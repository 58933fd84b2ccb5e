//! Union switches: a binding analysed once per member of a union becomes
//! a chain of tag tests whose arms load the member's scalars.

use crate::lowerer::*;
use base::EntityRef;
use fir::{self, Block, FuncId, Op, Term, Ty, Val};
use flow::{Av, AvId, BindInfo, LeafKind, UnionId};
use ir::Var;
use rustc_hash::FxHashMap as HashMap;

impl Lowerer<'_> {
    /// A binding split on a union operand: dispatches on the tag and lowers
    /// the binding once per member, with the operand narrowed.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn lower_switch(
        &mut self,
        fb: &mut Fb,
        b: &ir::Binding,
        info: &BindInfo,
        (var, path, cases): (Var, &[u32], &[(AvId, BindInfo)]),
        vals: &HashMap<Var, AvId>,
        env: &[AvId],
        group: Option<ir::GroupId>,
        tail: bool,
    ) -> Flow {
        let whole = vals.get(&var).copied().unwrap_or(AvId::new(0));
        let (ptr, u) = match self.ops.dom.get(self.ops.part_at(whole, path)) {
            Av::Leaf(Sym(p), LeafKind::Union(u)) => (Val::from_number(*p), *u),
            _ => {
                return Flow::Done(Term::Error(
                    self.string("error: internal error: switch on a value that is not a union"),
                ))
            }
        };
        let tys = layout_of(&self.ops.dom, info.av);
        let tail = tail && fb.result == Some(info.av);
        let mut narrowed = vals.clone();
        let results = self.switch(
            fb,
            ptr,
            u,
            &tys,
            Unlazy::Again,
            &mut |this, fb, member, sym| {
                let Some((_, case)) = cases.iter().find(|(m, _)| *m == member) else {
                    return Term::Error(
                        this.string("error: internal error: a member without a case"),
                    );
                };
                let operand = this.ops.replace_at(whole, path, sym);
                narrowed.insert(var, operand);
                match this.lower_binding(fb, b, case, &narrowed, env, group, tail) {
                    Flow::Value(r) => {
                        let mut out = Vec::new();
                        this.coerce(fb, r, info.av, &mut out);
                        Term::Yield(out)
                    }
                    Flow::Done(t) => t,
                }
            },
        );
        if info.av == self.ops.dom.bottom() {
            return Flow::Done(Term::Error(
                self.string("error: internal error: a switch that never returns returned"),
            ));
        }
        let mut it = results.into_iter();
        Flow::Value(self.symbolize(fb, info.av, &mut it))
    }

    /// Emits a dispatch on the tag of the cell `ptr` of union `u`: one `If`
    /// per member, whose arm `arm` fills given the member and its symbolic
    /// value read from the cell, then, if the cell may be a lazy zero, what
    /// `unlazy` says. Gives the results (of types `tys`).
    pub(super) fn switch(
        &mut self,
        fb: &mut Fb,
        ptr: Val,
        u: UnionId,
        tys: &[Ty],
        unlazy: Unlazy,
        arm: &mut dyn FnMut(&mut Self, &mut Fb, AvId, AvId) -> Term,
    ) -> Vec<Val> {
        let members = self.ops.dom.members(u).to_vec();
        let lazy = match unlazy {
            Unlazy::Never => Vec::new(),
            _ => self.lazy_sources(u),
        };
        let lazy = Lazy {
            sources: &lazy,
            unlazy,
        };
        self.switch_from(fb, ptr, u, &members, 0, tys, arm, lazy)
    }

    #[allow(clippy::too_many_arguments)]
    fn switch_from(
        &mut self,
        fb: &mut Fb,
        ptr: Val,
        u: UnionId,
        members: &[AvId],
        k: usize,
        tys: &[Ty],
        arm: &mut dyn FnMut(&mut Self, &mut Fb, AvId, AvId) -> Term,
        lazy: Lazy,
    ) -> Vec<Val> {
        if members.is_empty() {
            // A union no value ever reached.
            let cond = fb.emit1(Op::BoolConst(false), Ty::Bool);
            let dead = Term::Error(self.string("error: internal error: a value of an empty union"));
            let block = |term: Term| Block {
                insts: vec![],
                term,
            };
            return fb.emit(
                Op::If {
                    cond,
                    then_: block(dead.clone()),
                    else_: block(dead),
                },
                tys,
            );
        }
        let tag = self.cell_tag(u, k);
        // The last of several members needs no test: a cell of this union
        // that is none of the others is this one (the simplifier then
        // takes the arm), unless it may be a lazy zero. A lone member keeps
        // its test, which guards the only place a cell of the wrong union
        // could be noticed.
        let cond = if k > 0 && k + 1 == members.len() && lazy.sources.is_empty() {
            fb.emit1(Op::BoolConst(true), Ty::Bool)
        } else {
            fb.emit1(Op::TagIs(ptr, tag), Ty::Bool)
        };
        // The arm of member k.
        fb.blocks.push(Vec::new());
        let member = members[k];
        let mut loads = Vec::new();
        let types = layout_of(&self.ops.dom, member);
        for (t, slot) in types.iter().zip(cell_slots(&types)) {
            loads.push(fb.emit1(Op::Load(ptr, tag, slot), *t));
        }
        let sym = self.symbolize(fb, member, &mut loads.into_iter());
        let term = arm(self, fb, member, sym);
        let then_ = Block {
            insts: fb.blocks.pop().unwrap_or_default(),
            term,
        };
        // The other members.
        fb.blocks.push(Vec::new());
        let term = if k + 1 < members.len() {
            Term::Yield(self.switch_from(fb, ptr, u, members, k + 1, tys, arm, lazy))
        } else if !lazy.sources.is_empty() {
            Term::Yield(self.switch_lazy(fb, ptr, u, members, tys, arm, lazy))
        } else {
            Term::Error(self.string("error: internal error: a union cell with an unknown tag"))
        };
        let else_ = Block {
            insts: fb.blocks.pop().unwrap_or_default(),
            term,
        };
        fb.emit(Op::If { cond, then_, else_ }, tys)
    }

    /// The end of a dispatch on a cell that may be a lazy zero
    /// ([`sharing`]): after the members' tags, which a value that is not a
    /// lazy zero meets first at no extra cost, the lazy zeros' tags, each
    /// making the cell it stands for and going on as `lazy.unlazy` says.
    #[allow(clippy::too_many_arguments)]
    fn switch_lazy(
        &mut self,
        fb: &mut Fb,
        ptr: Val,
        u: UnionId,
        members: &[AvId],
        tys: &[Ty],
        arm: &mut dyn FnMut(&mut Self, &mut Fb, AvId, AvId) -> Term,
        lazy: Lazy,
    ) -> Vec<Val> {
        let Some(((tag, src), more)) = lazy.sources.split_first() else {
            return Vec::new();
        };
        let cond = fb.emit1(Op::TagIs(ptr, *tag), Ty::Bool);
        fb.blocks.push(Vec::new());
        let original = fb.emit1(Op::Load(ptr, *tag, 0), Ty::Ptr);
        let (f, _) = self.union_fn(UnionFn::Force(*src, u));
        let forced = fb.emit1(Op::Call(f, vec![original]), Ty::Ptr);
        let vals = match lazy.unlazy {
            Unlazy::Call(g, params, which) => {
                let args = (0..params)
                    .map(|i| if i == which { forced } else { Val::new(i) })
                    .collect();
                fb.emit(Op::Call(g, args), tys)
            }
            _ => {
                let never = Lazy {
                    sources: &[],
                    unlazy: Unlazy::Never,
                };
                self.switch_from(fb, forced, u, members, 0, tys, arm, never)
            }
        };
        let then_ = Block {
            insts: fb.blocks.pop().unwrap_or_default(),
            term: Term::Yield(vals),
        };
        fb.blocks.push(Vec::new());
        let term = if more.is_empty() {
            Term::Error(self.string("error: internal error: a union cell with an unknown tag"))
        } else {
            let rest = Lazy {
                sources: more,
                unlazy: lazy.unlazy,
            };
            Term::Yield(self.switch_lazy(fb, ptr, u, members, tys, arm, rest))
        };
        let else_ = Block {
            insts: fb.blocks.pop().unwrap_or_default(),
            term,
        };
        fb.emit(Op::If { cond, then_, else_ }, tys)
    }
}

/// What a dispatch does with a lazy zero ([`sharing`]), once it has made
/// the cell the lazy zero stands for.
#[derive(Clone, Copy)]
pub(super) enum Unlazy {
    /// Dispatches on that cell with a second copy of the arms (run only
    /// for lazy zeros).
    Again,
    /// Calls function `.0`, the one being made, of `.1` parameters, with
    /// that cell as parameter `.2`, the cell dispatched on: no copy.
    Call(FuncId, usize, usize),
    /// The cell is never a lazy zero: the original of one (see
    /// [`Lowerer::union_fn`]).
    Never,
}

/// The lazy zeros a dispatch may meet and what it does with them.
#[derive(Clone, Copy)]
struct Lazy<'a> {
    sources: &'a [(u32, UnionId)],
    unlazy: Unlazy,
}
