//! Union switches: a binding analysed once per member of a union becomes
//! a chain of tag tests whose arms load the member's scalars.

use super::*;
use base::EntityRef;

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
            Av::Sym(p, SymKind::Union(u)) => (Val::from_number(*p), *u),
            _ => {
                return Flow::Done(Term::Error(
                    self.string("error: internal error: switch on a value that is not a union"),
                ))
            }
        };
        let tys = layout_of(&self.ops.dom, info.av);
        let tail = tail && fb.result == Some(info.av);
        let mut narrowed = vals.clone();
        let results = self.switch(fb, ptr, u, &tys, &mut |this, fb, member, sym| {
            let Some((_, case)) = cases.iter().find(|(m, _)| *m == member) else {
                return Term::Error(this.string("error: internal error: a member without a case"));
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
        });
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
    /// value read from the cell. Gives the results (of types `tys`).
    pub(super) fn switch(
        &mut self,
        fb: &mut Fb,
        ptr: Val,
        u: UnionId,
        tys: &[Ty],
        arm: &mut dyn FnMut(&mut Self, &mut Fb, AvId, AvId) -> Term,
    ) -> Vec<Val> {
        let members = self.ops.dom.members(u).to_vec();
        self.switch_from(fb, ptr, u, &members, 0, tys, arm)
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
        // takes the arm). A lone member keeps its test, which guards the
        // only place a cell of the wrong union could be noticed.
        let cond = if k > 0 && k + 1 == members.len() {
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
            Term::Yield(self.switch_from(fb, ptr, u, members, k + 1, tys, arm))
        } else {
            Term::Error(self.string("error: internal error: a union cell with an unknown tag"))
        };
        let else_ = Block {
            insts: fb.blocks.pop().unwrap_or_default(),
            term,
        };
        fb.emit(Op::If { cond, then_, else_ }, tys)
    }
}
