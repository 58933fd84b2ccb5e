//! Primitives: arithmetic on the scalars of symbolic values, and the
//! structural and AD operations, which cost no code: the flow analysis'
//! own operations applied to symbolic values say where each scalar goes.

use super::*;

impl Lowerer<'_> {
    /// A real operand: its FIR value, materialising a constant.
    pub(super) fn real(&mut self, fb: &mut Fb, x: AvId) -> Option<Val> {
        match self.ops.dom.get(x) {
            Av::Sym(v, SymKind::Real) => Some(Val::from_number(*v)),
            Av::Real(Some(c)) => {
                let c = f64::from_bits(*c);
                Some(fb.emit1(Op::F64Const(c), Ty::F64))
            }
            _ => None,
        }
    }

    pub(super) fn sym(&mut self, v: Val, k: SymKind) -> AvId {
        self.ops.dom.intern(Av::Sym(v.number(), k))
    }

    pub(super) fn lower_prim(
        &mut self,
        fb: &mut Fb,
        b: &ir::Binding,
        info: &BindInfo,
        p: Prim,
        arg: AvId,
    ) -> Flow {
        // Whatever the analysis already knows needs no code.
        if self.ops.dom.is_known(info.av)
            && !matches!(p, Prim::Write | Prim::WriteReal | Prim::ReadReal)
        {
            return Flow::Value(info.av);
        }
        let pair = match self.ops.dom.get(arg) {
            Av::Pair(a, b) => Some((*a, *b)),
            _ => None,
        };
        match p.kind() {
            PrimKind::Binary | PrimKind::Compare => {
                let Some((a, c)) = pair else {
                    return Flow::Value(info.av);
                };
                let (Some(x), Some(y)) = (self.real(fb, a), self.real(fb, c)) else {
                    return Flow::Value(info.av);
                };
                let (op, kind) = match p {
                    Prim::Add => (Op::FBin(FBin::Add, x, y), SymKind::Real),
                    Prim::Sub => (Op::FBin(FBin::Sub, x, y), SymKind::Real),
                    Prim::Mul => (Op::FBin(FBin::Mul, x, y), SymKind::Real),
                    Prim::Div => (Op::FBin(FBin::Div, x, y), SymKind::Real),
                    Prim::Atan => (Op::FBin(FBin::Atan2, x, y), SymKind::Real),
                    Prim::Eq => (Op::FCmp(Cmp::Eq, x, y), SymKind::Bool),
                    Prim::Lt => (Op::FCmp(Cmp::Lt, x, y), SymKind::Bool),
                    Prim::Gt => (Op::FCmp(Cmp::Gt, x, y), SymKind::Bool),
                    Prim::Le => (Op::FCmp(Cmp::Le, x, y), SymKind::Bool),
                    _ => (Op::FCmp(Cmp::Ge, x, y), SymKind::Bool),
                };
                let t = if kind == SymKind::Real {
                    Ty::F64
                } else {
                    Ty::Bool
                };
                let r = fb.emit1(op, t);
                Flow::Value(self.sym(r, kind))
            }
            PrimKind::Unary => {
                let Some(x) = self.real(fb, arg) else {
                    return Flow::Value(info.av);
                };
                let op = match p {
                    Prim::Sqrt => FUn::Sqrt,
                    Prim::Exp => FUn::Exp,
                    Prim::Log => FUn::Log,
                    Prim::Sin => FUn::Sin,
                    _ => FUn::Cos,
                };
                let r = fb.emit1(Op::FUn(op, x), Ty::F64);
                Flow::Value(self.sym(r, SymKind::Real))
            }
            PrimKind::Predicate => {
                let Some(x) = self.real(fb, arg) else {
                    return Flow::Value(info.av);
                };
                let zero = fb.emit1(Op::F64Const(0.0), Ty::F64);
                let cmp = match p {
                    Prim::IsZero => Cmp::Eq,
                    Prim::IsPositive => Cmp::Gt,
                    _ => Cmp::Lt,
                };
                let r = fb.emit1(Op::FCmp(cmp, x, zero), Ty::Bool);
                Flow::Value(self.sym(r, SymKind::Bool))
            }
            PrimKind::Control => match p {
                Prim::Real => match self.real(fb, arg) {
                    Some(x) => Flow::Value(self.sym(x, SymKind::Real)),
                    None => Flow::Value(info.av),
                },
                Prim::Write | Prim::WriteReal => {
                    self.print_value(fb, arg);
                    self.print_str(fb, "\n");
                    Flow::Value(arg)
                }
                Prim::ReadReal => {
                    let text = self.error_text(b.span, &ir::message::end_of_input());
                    let msg = self.string(&text);
                    let r = fb.emit1(Op::ReadReal(msg), Ty::F64);
                    Flow::Value(self.sym(r, SymKind::Real))
                }
                _ => Flow::Done(Term::Error(
                    self.string("error: internal error: control primitive"),
                )),
            },
            PrimKind::Ad => {
                let r = match p {
                    Prim::Zero => Ok(self.zero(fb, arg)),
                    Prim::Plus => match pair {
                        Some((a, c)) => Ok(self.plus(fb, a, c)),
                        None => Err(p.expects(ir::Expects::TwoArguments, &self.ops.describe(arg))),
                    },
                    Prim::CustomConform => match pair {
                        Some((x, zero)) => self.ops.custom_conform(x, zero),
                        None => Err(p.expects(ir::Expects::TwoArguments, &self.ops.describe(arg))),
                    },
                    Prim::Perturb => Ok(self.ops.tag_wrap(ir::Tag::Perturb, arg)),
                    Prim::Sensitize => Ok(self.ops.tag_wrap(ir::Tag::Sensitize, arg)),
                    Prim::StarJ => Ok(self.ops.tag_wrap(ir::Tag::Reverse, arg)),
                    Prim::Unperturb => self.ops.tag_unwrap(ir::Tag::Perturb, arg),
                    Prim::Unsensitize => self.ops.tag_unwrap(ir::Tag::Sensitize, arg),
                    Prim::StarJInverse => self.ops.tag_unwrap(ir::Tag::Reverse, arg),
                    Prim::Bundle => match pair {
                        Some((a, c)) => self.ops.bundle(a, c),
                        None => Err(p.expects(ir::Expects::TwoArguments, &self.ops.describe(arg))),
                    },
                    Prim::Primal => self.ops.forward_half(arg, true),
                    _ => self.ops.forward_half(arg, false),
                };
                match self.resolve(fb, r) {
                    Ok(av) => Flow::Value(av),
                    Err(m) => Flow::Done(self.error_term(b.span, &m)),
                }
            }
        }
    }

    /// Emits the calls for the maps of unions that an operation on
    /// symbolic values met ([`flow::Ops::map_union`]), and puts their
    /// results in its value.
    pub(super) fn resolve(&mut self, fb: &mut Fb, r: Result<AvId, String>) -> Result<AvId, String> {
        let pending = self.ops.take_pending();
        if pending.is_empty() {
            return r;
        }
        let mut subst: HashMap<u32, u32> = HashMap::new();
        for p in pending {
            let args: Vec<Val> = p
                .args
                .iter()
                .map(|a| Val::from_number(subst.get(a).copied().unwrap_or(*a)))
                .collect();
            let (f, _) = self.union_fn(UnionFn::Map(p.op, p.unions.0, p.unions.1, p.result_union));
            let v = fb.emit1(Op::Call(f, args), Ty::Ptr);
            subst.insert(p.result, v.number());
        }
        r.map(|av| self.substitute(av, &subst))
    }

    /// `v` with its symbolic scalars renumbered.
    pub(super) fn substitute(&mut self, v: AvId, subst: &HashMap<u32, u32>) -> AvId {
        let dom = &mut self.ops.dom;
        match dom.get(v).clone() {
            Av::Sym(n, k) => match subst.get(&n) {
                Some(m) => dom.intern(Av::Sym(*m, k)),
                None => v,
            },
            Av::Pair(a, b) => {
                let (a, b) = (self.substitute(a, subst), self.substitute(b, subst));
                self.ops.dom.pair(a, b)
            }
            Av::Bundle(a, b) => {
                let (a, b) = (self.substitute(a, subst), self.substitute(b, subst));
                self.ops.dom.bundle(a, b)
            }
            Av::Wrap(t, x) => {
                let x = self.substitute(x, subst);
                self.ops.dom.wrap(t, x)
            }
            Av::Closure(l, env) => {
                let env = env.iter().map(|x| self.substitute(*x, subst)).collect();
                self.ops.dom.closure(l, env)
            }
            _ => v,
        }
    }
}
