//! One instruction of the text form: its results, its operation and
//! what its operands must be.

use super::*;

impl Reader<'_> {
    pub(super) fn inst(&mut self, p: &mut Pending, returns: &[Ty]) -> R<Inst> {
        let mut results = Vec::new();
        let mut result_toks = Vec::new();
        if matches!(&self.peek().tok, Tok::Word(w) if w.starts_with('v')) {
            loop {
                result_toks.push(self.peek().clone());
                results.push(self.val()?);
                if !self.eat_punct(',') {
                    break;
                }
            }
            self.punct('=')?;
        }
        let (w, t) = self.word("an instruction")?;
        use Ty::*;
        // The operation and the types of its results, if it fixes them.
        let (op, tys): (Op, Option<Vec<Ty>>) = match w {
            "f64" => {
                let (x, t) = self.word("a real")?;
                match x.parse::<f64>() {
                    Ok(x) => (Op::F64Const(x), Some(vec![F64])),
                    Err(_) => return self.err_at(&t, "a real"),
                }
            }
            "bool" => {
                let (x, t) = self.word("`true` or `false`")?;
                match x {
                    "true" => (Op::BoolConst(true), Some(vec![Bool])),
                    "false" => (Op::BoolConst(false), Some(vec![Bool])),
                    _ => return self.err_at(&t, "`true` or `false`"),
                }
            }
            "not" => (Op::Not(self.val()?), Some(vec![Bool])),
            "call" => {
                let (g, args) = self.callee_and_args(p)?;
                let op = match self.at_site()? {
                    Some(s) => Op::CallAt(g, args, s),
                    None => Op::Call(g, args),
                };
                for (i, (v, t)) in results.iter().zip(&result_toks).enumerate() {
                    p.define(*v, Src::Ret(g, i), t);
                }
                (op, None)
            }
            "if" => {
                let cond = self.val()?;
                self.punct('{')?;
                self.newline()?;
                let then_ = self.block(p, returns)?;
                self.punct('}')?;
                self.keyword("else")?;
                self.punct('{')?;
                self.newline()?;
                let else_ = self.block(p, returns)?;
                self.punct('}')?;
                p.used(cond, Src::Known(Bool));
                for (i, (v, t)) in results.iter().zip(&result_toks).enumerate() {
                    for b in [&then_, &else_] {
                        if let Term::Yield(vs) = &b.term {
                            if let Some(y) = vs.get(i) {
                                p.used(*v, Src::Same(*y));
                                p.used(*y, Src::Same(*v));
                            }
                        }
                    }
                    // Typed by the yields and uses only.
                    p.define(*v, Src::Same(*v), t);
                }
                (Op::If { cond, then_, else_ }, None)
            }
            "print_str" => (Op::PrintStr(self.str_id()?), Some(vec![])),
            "print_real" => (Op::PrintReal(self.val()?), Some(vec![])),
            "print_bool" => (Op::PrintBool(self.val()?), Some(vec![])),
            "capture_start" => (Op::Capture(true), Some(vec![])),
            "capture_end" => (Op::Capture(false), Some(vec![])),
            "read_real" => (Op::ReadReal(self.str_id()?), Some(vec![F64])),
            "alloc" | "alloc_zero" => {
                let tag = self.tag()?;
                let fields = self.list(Self::val)?;
                for (i, v) in fields.iter().enumerate() {
                    p.used(*v, Src::Slot(tag, i as u32));
                }
                let op = if w == "alloc" {
                    Op::Alloc(tag, fields)
                } else {
                    Op::AllocZero(tag, fields)
                };
                (op, Some(vec![Ptr]))
            }
            "tag_is" => {
                let v = self.val()?;
                (Op::TagIs(v, self.tag()?), Some(vec![Bool]))
            }
            "is_zero" => (Op::IsZero(self.val()?), Some(vec![Bool])),
            "memo_get" => (
                Op::MemoGet(self.tag()?, self.list(Self::val)?),
                Some(vec![Bool, Ptr]),
            ),
            "memo_put" => (
                Op::MemoPut(self.tag()?, self.list(Self::val)?),
                Some(vec![]),
            ),
            "save" => (Op::Save(self.list(Self::val)?), Some(vec![])),
            "restore" => {
                let tys = self.list(Self::ty)?;
                (Op::Restore(tys.clone()), Some(tys))
            }
            "count" => {
                let (name, t) = self.word("a counter's name")?;
                match (0..base::counters::SLOTS).find(|s| base::counters::slot_name(*s) == name) {
                    Some(s) => (Op::Count(s as u32), Some(vec![])),
                    None => return self.err_at(&t, "a counter's name"),
                }
            }
            "load" => {
                let v = self.val()?;
                let (tag, slot, _) = self.numbered_slot("a tag and a slot (`#2.1`)")?;
                let ([r], [rt]) = (&results[..], &result_toks[..]) else {
                    return self.err_at(&t, "`load` with one result");
                };
                p.define(*r, Src::Slot(tag, slot), rt);
                (Op::Load(v, tag, slot), None)
            }
            "vec_of" => {
                let (layout, slots) = self.vector_layout()?;
                let n = self.number("a number of elements")?;
                let fields = self.list(Self::val)?;
                for (i, v) in fields.iter().enumerate() {
                    if let Some(t) = slots.get(i % slots.len().max(1)) {
                        p.used(*v, Src::Known(*t));
                    }
                }
                (Op::VecOf(layout, n, fields), Some(vec![Ptr]))
            }
            "vec_build" => {
                let (layout, _) = self.vector_layout()?;
                let len = self.val()?;
                p.used(len, Src::Known(F64));
                let (func, args) = self.callee_and_args(p)?;
                let state = self.state()?;
                if let Some(v) = state {
                    p.used(v, Src::Known(Ptr));
                }
                let at = self.at_site()?;
                let op = Op::VecBuild {
                    layout,
                    len,
                    func,
                    args,
                    at,
                    state,
                };
                (op, Some(vec![Ptr]))
            }
            "vec_len" => (Op::VecLen(self.val()?), Some(vec![F64])),
            "vec_index_ok" => (Op::VecIndexOk(self.val()?, self.val()?), Some(vec![Bool])),
            "is_count" => (Op::IsCount(self.val()?), Some(vec![Bool])),
            "vec_load" => {
                let (v, i) = (self.val()?, self.val()?);
                let (layout, slot, lt) = self.numbered_slot("a layout and a slot (`#2.1`)")?;
                let ty = self
                    .m
                    .vectors
                    .get(&layout)
                    .and_then(|slots| slots.get(slot as usize).copied());
                let Some(ty) = ty else {
                    return self.err_at(
                        &lt,
                        &format!(
                            "a slot of a vector layout declared above (`vector #{layout} = (...)`)"
                        ),
                    );
                };
                (Op::VecLoad(v, i, layout, slot), Some(vec![ty]))
            }
            "vec_zero" => {
                let (layout, _) = self.vector_layout()?;
                let len = self.val()?;
                (Op::VecZero(layout, len), Some(vec![Ptr]))
            }
            "vec_one_hot" => {
                let (layout, _) = self.vector_layout()?;
                let (len, i) = (self.val()?, self.val()?);
                let vals = self.list(Self::val)?;
                for v in &vals {
                    p.used(*v, Src::Known(F64));
                }
                let op = Op::VecOneHot {
                    layout,
                    len,
                    i,
                    vals,
                };
                (op, Some(vec![Ptr]))
            }
            "stack_push" => {
                let (layout, _) = self.vector_layout()?;
                let (buf, k) = (self.val()?, self.val()?);
                let vals = self.list(Self::val)?;
                for v in &vals {
                    p.used(*v, Src::Known(F64));
                }
                let room = if self.is_word("room") {
                    self.next();
                    Some(self.val()?)
                } else {
                    None
                };
                let op = Op::StackPush {
                    layout,
                    buf,
                    k,
                    vals,
                    room,
                };
                (op, Some(vec![Ptr]))
            }
            "vec_plus" => {
                let (layout, _) = self.vector_layout()?;
                let (a, b) = (self.val()?, self.val()?);
                (Op::VecPlus(layout, a, b), Some(vec![Ptr]))
            }
            "vec_zero_of" => {
                let (layout, _) = self.vector_layout()?;
                let (row, _) = self.vector_layout()?;
                let of = self.val()?;
                (Op::VecZeroOf { layout, row, of }, Some(vec![Ptr]))
            }
            "vec_one_hot_of" => {
                let (layout, _) = self.vector_layout()?;
                let (row, _) = self.vector_layout()?;
                let (of, i, val) = (self.val()?, self.val()?, self.val()?);
                let op = Op::VecOneHotOf {
                    layout,
                    row,
                    of,
                    i,
                    val,
                };
                (op, Some(vec![Ptr]))
            }
            _ => {
                let op = if let Some(op) = [
                    FBin::Add,
                    FBin::PlusAdd,
                    FBin::Sub,
                    FBin::Mul,
                    FBin::Div,
                    FBin::Atan2,
                ]
                .into_iter()
                .find(|o| crate::print::fbin(*o) == w)
                {
                    Op::FBin(op, self.val()?, self.val()?)
                } else if let Some(op) = [FUn::Sqrt, FUn::Exp, FUn::Log, FUn::Sin, FUn::Cos]
                    .into_iter()
                    .find(|o| crate::print::fun(*o) == w)
                {
                    Op::FUn(op, self.val()?)
                } else if let Some(c) = [Cmp::Eq, Cmp::Lt, Cmp::Gt, Cmp::Le, Cmp::Ge]
                    .into_iter()
                    .find(|o| crate::print::cmp(*o) == w)
                {
                    Op::FCmp(c, self.val()?, self.val()?)
                } else {
                    return self.err_at(&t, "an instruction");
                };
                let ty = if matches!(op, Op::FCmp(..)) {
                    Bool
                } else {
                    F64
                };
                (op, Some(vec![ty]))
            }
        };
        if let Some(tys) = tys {
            if tys.len() != results.len() {
                let n = tys.len();
                return self.err_at(
                    &t,
                    &format!(
                        "an instruction giving {} result{} (`{w}` gives {n})",
                        results.len(),
                        if results.len() == 1 { "" } else { "s" }
                    ),
                );
            }
            for ((v, t), ty) in results.iter().zip(&result_toks).zip(tys) {
                p.define(*v, Src::Known(ty), t);
            }
        }
        operand_uses(&op, p);
        Ok(Inst { results, op })
    }
}

/// What the operands of `op` must be (a call's, an `If`'s and an
/// `alloc`'s are recorded where they are read).
fn operand_uses(op: &Op, p: &mut Pending) {
    use Ty::*;
    let mut one = |v: &Val, t| p.used(*v, Src::Known(t));
    match op {
        Op::FBin(_, a, b) | Op::FCmp(_, a, b) => {
            one(a, F64);
            one(b, F64);
        }
        Op::FUn(_, a) | Op::PrintReal(a) => one(a, F64),
        Op::Not(a) | Op::PrintBool(a) => one(a, Bool),
        Op::TagIs(a, _) | Op::IsZero(a) | Op::Load(a, _, _) | Op::VecLen(a) => one(a, Ptr),
        Op::IsCount(a) => one(a, F64),
        Op::VecLoad(v, i, _, _) | Op::VecIndexOk(v, i) => {
            one(v, Ptr);
            one(i, F64);
        }
        Op::VecZero(_, len) => one(len, F64),
        Op::VecOneHot { len, i, .. } => {
            one(len, F64);
            one(i, F64);
        }
        Op::VecPlus(_, a, b) => {
            one(a, Ptr);
            one(b, Ptr);
        }
        Op::StackPush { buf, k, .. } => {
            one(buf, Ptr);
            one(k, F64);
        }
        Op::VecZeroOf { of, .. } => one(of, Ptr),
        Op::VecOneHotOf { of, i, val, .. } => {
            one(of, Ptr);
            one(i, F64);
            one(val, Ptr);
        }
        Op::MemoGet(_, vs) | Op::MemoPut(_, vs) => vs.iter().for_each(|v| one(v, Ptr)),
        _ => {}
    }
}
