//! `list->vector` of a list of run-time length: a union `u` whose pair
//! members' rests are `()` or unions of the same members, so of the same
//! tags (the analysis refuses other lists, `flow::Ops::simple_list`),
//! after a prefix of pairs the analysis knows.
//! A function counts the cells, then a `VecBuild` threading the rest of
//! the list as its state makes one element per cell. Both dispatch on the
//! cell as every union walk does, lazy zeros included (the zero of a
//! list, whose elements are the zeros of the original's).

use crate::lowerer::*;
use crate::switch::Unlazy;
use base::EntityRef;
use fir::{self, Cmp, FBin, FuncId, Op, Term, Ty, Val};
use flow::{Av, AvId, LeafKind, UnionId};

/// A member's rest: the next cell of the list, or its end.
enum Rest {
    Cell(Val),
    End,
}

impl Lowerer<'_> {
    /// The vector of the elements `items` (known pairs) and then of the
    /// cells of union `u` from `p`, of element `e` and length `n`.
    pub(crate) fn list_to_vector(
        &mut self,
        fb: &mut Fb,
        items: &[AvId],
        p: Val,
        u: UnionId,
        e: AvId,
        n: AvId,
    ) -> AvId {
        let count = self.list_count_fn(u);
        let zero = fb.emit1(Op::F64Const(0.0), Ty::F64);
        let k = fb.emit1(Op::Call(count, vec![p, zero]), Ty::F64);
        let each = self.list_elem_fn(u, e);
        let (layout, _) = self.vec_layout(e);
        let tail = fb.emit1(
            Op::VecBuild {
                layout,
                len: k,
                func: each,
                args: vec![],
                at: None,
                state: Some(p),
            },
            Ty::Ptr,
        );
        if items.is_empty() {
            return self.vector_sym(tail, e, n);
        }
        // The known prefix, then the cells.
        let head = self.vector_of(fb, items, e);
        // Counting is not the program's arithmetic (`--count-ops`): the
        // additions are `PlusAdd`s, which no counter counts.
        let known = items.len() as f64;
        let m = fb.emit1(Op::F64Const(known), Ty::F64);
        let len = fb.emit1(Op::FBin(FBin::PlusAdd, k, m), Ty::F64);
        let key = ("list_append", vec![e, self.ops.dom.real(known)]);
        let f = self.shared_elem_fn(key, vec![Ty::Ptr, Ty::Ptr], e, &mut |this, fb, ps, i| {
            let m = fb.emit1(Op::F64Const(known), Ty::F64);
            let first = fb.emit1(Op::FCmp(Cmp::Lt, i, m), Ty::Bool);
            Ok(this.elem_if(
                fb,
                first,
                e,
                &mut |this, fb| this.load_elem(fb, ps[0], i, e),
                &mut |this, fb| {
                    let minus = fb.emit1(Op::F64Const(-known), Ty::F64);
                    let j = fb.emit1(Op::FBin(FBin::PlusAdd, i, minus), Ty::F64);
                    this.load_elem(fb, ps[1], j, e)
                },
            ))
        });
        self.build(fb, e, n, len, f, vec![head, tail])
    }

    /// The rest of member value `m` (a pair) of a list of union `u`.
    fn rest(&self, m: AvId, u: UnionId) -> Option<(AvId, Rest)> {
        let dom = &self.ops.dom;
        let Av::Pair(car, cdr) = dom.get(m) else {
            return None;
        };
        match dom.get(*cdr) {
            Av::Nil => Some((*car, Rest::End)),
            // A union of the same members (`flow::Ops::simple_list`):
            // its cells have the same tags as `u`'s.
            Av::Leaf(Sym(q), LeafKind::Union(w))
                if dom.members(*w).len() == dom.members(u).len() =>
            {
                Some((*car, Rest::Cell(Val::from_number(*q))))
            }
            _ => None,
        }
    }

    /// `count(l, acc)`: acc plus the number of cells of list `l`.
    fn list_count_fn(&mut self, u: UnionId) -> FuncId {
        let key = ("list_count", vec![self.ops.dom.union_av(u)]);
        if let Some(f) = self.vector_fns.get(&key) {
            return *f;
        }
        let params = vec![Ty::Ptr, Ty::F64];
        let id = self.new_func(&format!("list_count_u{}", u.index()), &params, &[Ty::F64]);
        self.vector_fns.insert(key, id);
        let mut fb = self.func_builder(&params);
        let (l, acc) = (Val::new(0), Val::new(1));
        let r = self.switch(
            &mut fb,
            l,
            u,
            &[Ty::F64],
            Unlazy::Call(id, 2, 0),
            &mut |this, fb, _, m| {
                if matches!(this.ops.dom.get(m), Av::Nil) {
                    return Term::Yield(vec![acc]);
                }
                let one = fb.emit1(Op::F64Const(1.0), Ty::F64);
                let more = fb.emit1(Op::FBin(FBin::PlusAdd, acc, one), Ty::F64);
                match this.rest(m, u) {
                    Some((_, Rest::Cell(q))) => Term::TailCall(id, vec![q, more]),
                    Some((_, Rest::End)) => Term::Yield(vec![more]),
                    None => {
                        Term::Error(this.string("error: internal error: `list->vector` of a list"))
                    }
                }
            },
        );
        self.finish_func(id, fb, Term::Return(r));
        id
    }

    /// `each(l, i)`: the element the first cell of list `l` holds, as an
    /// element `e`, and the rest of the list.
    fn list_elem_fn(&mut self, u: UnionId, e: AvId) -> FuncId {
        let key = ("list_element", vec![self.ops.dom.union_av(u), e]);
        if let Some(f) = self.vector_fns.get(&key) {
            return *f;
        }
        let params = vec![Ty::Ptr, Ty::F64];
        let (_, types) = self.vec_layout(e);
        let mut tys = cell_layout(&types);
        tys.push(Ty::Ptr);
        let id = self.new_func(&format!("list_element_u{}", u.index()), &params, &tys);
        self.vector_fns.insert(key, id);
        let mut fb = self.func_builder(&params);
        let l = Val::new(0);
        let r = self.switch(
            &mut fb,
            l,
            u,
            &tys,
            Unlazy::Call(id, 2, 0),
            &mut |this, fb, _, m| match this.rest(m, u) {
                Some((car, rest)) => {
                    let mut out = this.elem_slots(fb, car, e);
                    out.push(match rest {
                        Rest::Cell(q) => q,
                        Rest::End => l,
                    });
                    Term::Yield(out)
                }
                None => {
                    Term::Error(this.string("error: internal error: `list->vector` past the end"))
                }
            },
        );
        self.finish_func(id, fb, Term::Return(r));
        id
    }
}
