//! The AD operations of docs/reference.md on run-time values, and the
//! tag-aware pair operations that transformed code uses.
//!
//! A value "in the world `[T, ...]`" is `T` applied to a value of the world
//! `[...]`. Perturbation, sensitivity and reverse worlds are plain wrappers;
//! the forward world pairs a primal with a perturbation tangent, so its pair
//! operations work on both halves. Procedures are transformed eagerly and
//! through the `ad` crate (see [`crate::value`]).

use crate::eval::{err, Interp, Result};
use crate::memo::Transform;
use crate::value::{Closure, Items, Value};
use ad::Untransformed;
use ir::{ConstDatum, ConstId, PatId, Tag};
use std::collections::{HashMap, HashSet};

use std::rc::Rc;

impl Interp<'_> {
    /// `perturb`, `sensitize` or `*j` of any value.
    ///
    /// Closures are transformed eagerly, environment and all, and
    /// remembered (see [`crate::memo`]): a closure reached twice, in one
    /// call or in two, is transformed once.
    pub fn tag_wrap(&mut self, tag: Tag, v: Value) -> Result<Value> {
        crate::eval::check_stack()?;
        self.counters.transform += 1;
        match v {
            Value::Closure(ref c) => {
                let op = Transform::Wrap(tag);
                let deep = holds_closures(c);
                if let Some(r) = self.values.transformed(op, &v, None).filter(|_| deep) {
                    return Ok(r);
                }
                let l = ad::transform(&mut self.prog, &mut self.memo, tag, c.lambda);
                let mut env = Vec::with_capacity(c.env.len());
                for x in c.env.iter() {
                    env.push(self.tag_wrap(tag, x.clone())?);
                }
                let r = Value::Closure(Rc::new(Closure {
                    lambda: l,
                    env: env.into_boxed_slice(),
                }));
                if deep {
                    self.values.remember(op, &v, None, &r);
                    self.values
                        .remember_inverse(Transform::Unwrap(tag), &r, None, &v);
                }
                Ok(r)
            }
            Value::Prim(p) => Ok(self.prim_closure(tag, p)),
            other => Ok(Value::wrap(tag, other)),
        }
    }

    /// `unperturb`, `unsensitize` or `*j-inverse` of any value.
    pub fn tag_unwrap(&mut self, tag: Tag, v: Value) -> Result<Value> {
        crate::eval::check_stack()?;
        self.counters.transform += 1;
        match (&v, tag) {
            (Value::Perturbation(x), Tag::Perturb)
            | (Value::Sensitivity(x), Tag::Sensitize)
            | (Value::Reverse(x), Tag::Reverse) => Ok((**x).clone()),
            (Value::Closure(c), _) => {
                let op = Transform::Unwrap(tag);
                let deep = holds_closures(c);
                if let Some(r) = self.values.transformed(op, &v, None).filter(|_| deep) {
                    return Ok(r);
                }
                let r = match ad::untransform(&self.prog, tag, c.lambda) {
                    Some(Untransformed::Prim(p)) => Value::Prim(p),
                    Some(Untransformed::Lambda(l)) => {
                        let mut env = Vec::with_capacity(c.env.len());
                        for x in c.env.iter() {
                            env.push(self.tag_unwrap(tag, x.clone())?);
                        }
                        Value::Closure(Rc::new(Closure {
                            lambda: l,
                            env: env.into_boxed_slice(),
                        }))
                    }
                    None => return self.not_tagged(tag, &v),
                };
                if deep {
                    self.values.remember(op, &v, None, &r);
                    self.values
                        .remember_inverse(Transform::Wrap(tag), &r, None, &v);
                }
                Ok(r)
            }
            _ => self.not_tagged(tag, &v),
        }
    }

    fn not_tagged<T>(&self, tag: Tag, v: &Value) -> Result<T> {
        err(ir::message::not_tagged(tag, &v.describe()))
    }

    /// `(bundle p t)`: the forward value with primal `p` and tangent `t`.
    pub fn bundle(&mut self, p: Value, t: Value) -> Result<Value> {
        self.counters.transform += 1;
        match (&p, &t) {
            (Value::Closure(c), Value::Closure(d))
                if ad::untransform(&self.prog, Tag::Perturb, d.lambda)
                    == Some(Untransformed::Lambda(c.lambda))
                    && c.env.len() == d.env.len() =>
            {
                let deep = holds_closures(c) || holds_closures(d);
                if let Some(r) = self
                    .values
                    .transformed(Transform::Bundle, &p, Some(&t))
                    .filter(|_| deep)
                {
                    return Ok(r);
                }
                let l = ad::transform(&mut self.prog, &mut self.memo, Tag::Forward, c.lambda);
                let mut env = Vec::with_capacity(c.env.len());
                for (a, b) in c.env.iter().zip(d.env.iter()) {
                    env.push(self.bundle(a.clone(), b.clone())?);
                }
                let r = Value::Closure(Rc::new(Closure {
                    lambda: l,
                    env: env.into_boxed_slice(),
                }));
                if deep {
                    self.values.remember(Transform::Bundle, &p, Some(&t), &r);
                    self.values
                        .remember_inverse(Transform::Primal, &r, None, &p);
                    self.values
                        .remember_inverse(Transform::Tangent, &r, None, &t);
                }
                Ok(r)
            }
            (Value::Prim(q), _) if self.nil_perturbation(&t) => {
                Ok(self.prim_closure(Tag::Forward, *q))
            }
            (Value::Closure(c), _)
                if c.env.is_empty()
                    && self.prog.prim_chain(c.lambda).is_some()
                    && self.nil_perturbation(&t) =>
            {
                let l = ad::transform(&mut self.prog, &mut self.memo, Tag::Forward, c.lambda);
                Ok(Value::Closure(Rc::new(Closure {
                    lambda: l,
                    env: Box::new([]),
                })))
            }
            (_, Value::Perturbation(x)) if shallow_conform(&p, x) => {
                Ok(Value::Bundle(Rc::new((p, t))))
            }
            _ => err(ir::message::bundle_mismatch(&p.describe(), &t.describe())),
        }
    }

    /// `(primal v)` of a forward value.
    pub fn primal(&mut self, v: Value) -> Result<Value> {
        self.forward_half(v, true)
    }

    /// `(tangent v)` of a forward value.
    pub fn tangent(&mut self, v: Value) -> Result<Value> {
        self.forward_half(v, false)
    }

    fn forward_half(&mut self, v: Value, primal: bool) -> Result<Value> {
        self.counters.transform += 1;
        match &v {
            Value::Bundle(pt) => Ok(if primal { pt.0.clone() } else { pt.1.clone() }),
            Value::Closure(c) => match ad::untransform(&self.prog, Tag::Forward, c.lambda) {
                Some(Untransformed::Prim(p)) => Ok(if primal {
                    Value::Prim(p)
                } else {
                    Value::Perturbation(Rc::new(Value::Nil))
                }),
                // A transformed primitive has no tangent of its own: its
                // tangent is a zero, as `bundle` built it.
                Some(Untransformed::Lambda(l0))
                    if !primal && c.env.is_empty() && self.prog.prim_chain(l0).is_some() =>
                {
                    let p = Value::Closure(Rc::new(Closure {
                        lambda: l0,
                        env: Box::new([]),
                    }));
                    let z = self.zero(&p)?;
                    self.tag_wrap(Tag::Perturb, z)
                }
                Some(Untransformed::Lambda(l0)) => {
                    let op = if primal {
                        Transform::Primal
                    } else {
                        Transform::Tangent
                    };
                    let deep = holds_closures(c);
                    if let Some(r) = self.values.transformed(op, &v, None).filter(|_| deep) {
                        return Ok(r);
                    }
                    let l = if primal {
                        l0
                    } else {
                        ad::transform(&mut self.prog, &mut self.memo, Tag::Perturb, l0)
                    };
                    let mut env = Vec::with_capacity(c.env.len());
                    for x in c.env.iter() {
                        env.push(self.forward_half(x.clone(), primal)?);
                    }
                    let r = Value::Closure(Rc::new(Closure {
                        lambda: l,
                        env: env.into_boxed_slice(),
                    }));
                    if deep {
                        self.values.remember(op, &v, None, &r);
                        self.remember_halves(&v, primal, &r);
                    }
                    Ok(r)
                }
                None => self.not_forward(primal, &v),
            },
            _ => self.not_forward(primal, &v),
        }
    }

    /// Once both halves of the forward closure `v` are known (`r` the one
    /// just made), `bundle` of them gives `v` back: the pair operations of
    /// the forward world split a closure into its halves and bundle them
    /// again (a backpropagator consed with its value and taken out, a
    /// thunk of `if`), and would otherwise rebuild a copy of `v`, and of
    /// every closure it holds, with three entries each.
    fn remember_halves(&mut self, v: &Value, primal: bool, r: &Value) {
        let other = if primal {
            Transform::Tangent
        } else {
            Transform::Primal
        };
        if let Some(o) = self.values.transformed(other, v, None) {
            let (p, t) = if primal { (r, &o) } else { (&o, r) };
            self.values
                .remember_inverse(Transform::Bundle, p, Some(t), v);
        }
    }

    fn not_forward<T>(&self, primal: bool, v: &Value) -> Result<T> {
        err(ir::message::not_forward(primal, &v.describe()))
    }

    /// `(zero v)`: the same shape with every real 0.
    ///
    /// Results are cached by the identity of `v` across calls (the cache
    /// keeps `v` alive, so an address is never reused while cached) and
    /// remembered as known zeros. That makes the reverse phase linear on
    /// lists: the backpropagator of `(car l)` asks for the zero of
    /// `(cdr l)` at every step, which the cache answers in O(1) from the
    /// previous step's answer, and `plus` skips a known zero in O(1)
    /// (paper, section 4: "the AD primitives ... lazy").
    pub fn zero(&mut self, v: &Value) -> Result<Value> {
        if self.values.is_zero(v) {
            return Ok(v.clone());
        }
        let r = self.zero_memo(v)?;
        self.values.mark_zero(&r);
        Ok(r)
    }

    fn zero_memo(&mut self, v: &Value) -> Result<Value> {
        crate::eval::check_stack()?;
        if let Some(r) = self.values.zero_of(v) {
            return Ok(r);
        }
        self.counters.zero += 1;
        if let Some(r) = self.zero_vector(v)? {
            self.values.remember_zero(v, &r);
            return Ok(r);
        }
        let r = match v {
            Value::Real(_) => Value::Real(0.0),
            Value::Bool(_) | Value::Nil => v.clone(),
            // A primitive has no environment: its zero is `()` (paper, §4).
            Value::Prim(_) => Value::Nil,
            Value::Pair(p) => {
                let a = self.zero_memo(&p.0)?;
                let b = self.zero_memo(&p.1)?;
                Value::pair(a, b)
            }
            Value::Bundle(p) => {
                let a = self.zero_memo(&p.0)?;
                let b = self.zero_memo(&p.1)?;
                Value::Bundle(Rc::new((a, b)))
            }
            Value::Closure(c) if c.env.is_empty() && self.prog.prim_chain(c.lambda).is_some() => {
                // A transformed primitive: the zero of `T(p)` is `T(())`,
                // as the tag model gives it, whichever way it was built.
                let tags = self.prog.prim_chain(c.lambda).unwrap_or_default();
                let mut z = Value::Nil;
                for t in tags.iter().rev() {
                    z = match t {
                        Tag::Forward => {
                            Value::Bundle(Rc::new((z.clone(), Value::wrap(Tag::Perturb, z))))
                        }
                        _ => Value::wrap(*t, z),
                    };
                }
                z
            }
            Value::Closure(c) => {
                let mut env = Vec::with_capacity(c.env.len());
                for x in c.env.iter() {
                    env.push(self.zero_memo(x)?);
                }
                Value::Closure(Rc::new(Closure {
                    lambda: c.lambda,
                    env: env.into_boxed_slice(),
                }))
            }
            Value::Perturbation(x) | Value::Sensitivity(x) | Value::Reverse(x) => {
                let z = self.zero_memo(x)?;
                Value::wrap(v.wrapper_tag().unwrap_or(Tag::Perturb), z)
            }
            Value::Vector(_) | Value::VectorSum(_) => {
                return err("internal error: a vector's zero is made by `zero_vector`")
            }
        };
        self.values.remember_zero(v, &r);
        Ok(r)
    }

    /// `(plus a b)` of conforming values. Shared pairs of substructures are
    /// added once.
    pub fn plus(&mut self, a: &Value, b: &Value) -> Result<Value> {
        let mut memo = HashMap::new();
        self.plus_memo(a, b, &mut memo).map_err(|_| {
            crate::eval::RunError::new(ir::message::plus_mismatch(&a.describe(), &b.describe()))
        })
    }

    fn plus_memo(
        &mut self,
        a: &Value,
        b: &Value,
        memo: &mut HashMap<(usize, usize), Value>,
    ) -> Result<Value> {
        crate::eval::check_stack()?;
        let key = match (a.addr(), b.addr()) {
            (Some(x), Some(y)) => Some((x, y)),
            _ => None,
        };
        if let Some(k) = key {
            if let Some(r) = memo.get(&k) {
                return Ok(r.clone());
            }
        }
        self.counters.plus += 1;
        // A known zero is the other side's identity, but only where the two
        // conform: the compiled program checks shapes in full at compile
        // time, so a zero of another shape must be an error here too. The
        // check is bounded so that adding a zero stays O(1).
        if self.values.is_zero(a) || self.values.is_zero(b) {
            let mut budget = ZERO_CONFORMANCE_BUDGET;
            if !self.conforms_within(a, b, &mut HashSet::new(), &mut budget)? {
                return err("non-conforming");
            }
            return Ok(if self.values.is_zero(a) {
                b.clone()
            } else {
                a.clone()
            });
        }
        if let Some(r) = self.plus_vectors(a, b)? {
            if let Some(k) = key {
                memo.insert(k, r.clone());
            }
            return Ok(r);
        }
        let r = match (a, b) {
            (Value::Real(x), Value::Real(y)) => Value::Real(x + y),
            (Value::Bool(x), Value::Bool(y)) if x == y => a.clone(),
            (Value::Nil, Value::Nil) => Value::Nil,
            (Value::Prim(p), Value::Prim(q)) if p == q => a.clone(),
            (Value::Pair(p), Value::Pair(q)) => {
                let x = self.plus_memo(&p.0, &q.0, memo)?;
                let y = self.plus_memo(&p.1, &q.1, memo)?;
                Value::pair(x, y)
            }
            (Value::Bundle(p), Value::Bundle(q)) => {
                let x = self.plus_memo(&p.0, &q.0, memo)?;
                let y = self.plus_memo(&p.1, &q.1, memo)?;
                Value::Bundle(Rc::new((x, y)))
            }
            (Value::Closure(c), Value::Closure(d))
                if c.lambda == d.lambda && c.env.len() == d.env.len() =>
            {
                let mut env = Vec::with_capacity(c.env.len());
                for (x, y) in c.env.iter().zip(d.env.iter()) {
                    env.push(self.plus_memo(x, y, memo)?);
                }
                Value::Closure(Rc::new(Closure {
                    lambda: c.lambda,
                    env: env.into_boxed_slice(),
                }))
            }
            (Value::Perturbation(x), Value::Perturbation(y))
            | (Value::Sensitivity(x), Value::Sensitivity(y))
            | (Value::Reverse(x), Value::Reverse(y)) => {
                let z = self.plus_memo(x, y, memo)?;
                Value::wrap(a.wrapper_tag().unwrap_or(Tag::Perturb), z)
            }
            // Values without reals whose representations differ only in
            // how a transformed primitive was reached are all the same zero.
            _ if self.nil_like(a) && self.nil_like(b) => {
                if matches!(a, Value::Closure(_) | Value::Prim(_)) {
                    b.clone()
                } else {
                    a.clone()
                }
            }
            _ => return err("non-conforming"),
        };
        if let Some(k) = key {
            memo.insert(k, r.clone());
        }
        Ok(r)
    }

    /// Whether `plus` of `a` and `b` is defined, decided from their shapes
    /// alone: [`Interp::plus`] walks only 16 nodes when one side is a
    /// known zero, which is exactly the side `custom-*j-conform` compares
    /// with.
    /// Linear in the shared structure (pairs met twice are walked once).
    pub fn conforms(&self, a: &Value, b: &Value) -> Result<bool> {
        let (mut seen, mut budget) = (HashSet::new(), usize::MAX);
        self.conforms_within(a, b, &mut seen, &mut budget)
    }

    /// [`Interp::conforms`], walking at most `budget` nodes: past that, the
    /// parts not walked are taken to conform.
    fn conforms_within(
        &self,
        a: &Value,
        b: &Value,
        seen: &mut HashSet<(usize, usize)>,
        budget: &mut usize,
    ) -> Result<bool> {
        crate::eval::check_stack()?;
        if *budget == 0 {
            return Ok(true);
        }
        *budget -= 1;
        // A bounded walk (a known zero's) needs no record of the pairs
        // met: it stops anyway, and `plus` of a zero stays free of
        // allocation.
        let bounded = *budget < ZERO_CONFORMANCE_BUDGET;
        if let (false, Some(x), Some(y)) = (bounded, a.addr(), b.addr()) {
            if !seen.insert((x, y)) {
                return Ok(true);
            }
        }
        Ok(match (a, b) {
            (Value::Real(_), Value::Real(_)) | (Value::Nil, Value::Nil) => true,
            (Value::Bool(x), Value::Bool(y)) => x == y,
            (Value::Prim(p), Value::Prim(q)) if p == q => true,
            (Value::Pair(p), Value::Pair(q)) | (Value::Bundle(p), Value::Bundle(q)) => {
                self.conforms_within(&p.0, &q.0, seen, budget)?
                    && self.conforms_within(&p.1, &q.1, seen, budget)?
            }
            (Value::Closure(c), Value::Closure(d))
                if c.lambda == d.lambda && c.env.len() == d.env.len() =>
            {
                for (x, y) in c.env.iter().zip(d.env.iter()) {
                    if !self.conforms_within(x, y, seen, budget)? {
                        return Ok(false);
                    }
                }
                true
            }
            (Value::Perturbation(x), Value::Perturbation(y))
            | (Value::Sensitivity(x), Value::Sensitivity(y))
            | (Value::Reverse(x), Value::Reverse(y)) => self.conforms_within(x, y, seen, budget)?,
            (Value::Vector(_) | Value::VectorSum(_), Value::Vector(_) | Value::VectorSum(_)) => {
                if Interp::vector_len(a) != Interp::vector_len(b) {
                    return Ok(false);
                }
                // A bounded walk never shows a sum's elements: that would
                // undo the sum's O(1) accumulation.
                if bounded && matches!((a, b), (Value::VectorSum(_), _) | (_, Value::VectorSum(_)))
                {
                    return Ok(true);
                }
                let (xs, ys) = (shape_items(a), shape_items(b));
                for (x, y) in xs.iter().zip(ys.iter()) {
                    if !self.conforms_within(x, y, seen, budget)? {
                        return Ok(false);
                    }
                }
                true
            }
            _ => self.nil_like(a) && self.nil_like(b),
        })
    }

    /// A value with no reals that stands for the sensitivity of a
    /// primitive: `()`, tagged `()`s, or a transformed primitive itself.
    fn nil_like(&self, v: &Value) -> bool {
        match v {
            Value::Nil | Value::Prim(_) => true,
            Value::Closure(c) => c.env.is_empty() && self.prog.prim_chain(c.lambda).is_some(),
            Value::Perturbation(x) | Value::Sensitivity(x) | Value::Reverse(x) => self.nil_like(x),
            Value::Bundle(p) => self.nil_like(&p.0) && self.nil_like(&p.1),
            _ => false,
        }
    }

    /// A perturbation with no reals: the tangent of a transformed primitive.
    fn nil_perturbation(&self, t: &Value) -> bool {
        match t {
            Value::Perturbation(x) => self.nil_like(x),
            Value::Closure(c) => {
                self.nil_like(t) && self.prog.lambda_tag(c.lambda) == Some(Tag::Perturb)
            }
            _ => false,
        }
    }

    /// `tags(cons a b)` from `tags(a)` and `tags(b)`.
    pub fn cons_t(&mut self, tags: &[Tag], a: Value, b: Value) -> Result<Value> {
        match tags.split_first() {
            None => Ok(Value::pair(a, b)),
            Some((Tag::Forward, rest)) => {
                let (pa, pb) = (self.primal(a.clone())?, self.primal(b.clone())?);
                let ta = self.tangent(a)?;
                let ta = self.tag_unwrap(Tag::Perturb, ta)?;
                let tb = self.tangent(b)?;
                let tb = self.tag_unwrap(Tag::Perturb, tb)?;
                let p = self.cons_t(rest, pa, pb)?;
                let t = self.cons_t(rest, ta, tb)?;
                Ok(Value::Bundle(Rc::new((p, Value::wrap(Tag::Perturb, t)))))
            }
            Some((t, rest)) => {
                let a = self.tag_unwrap(*t, a)?;
                let b = self.tag_unwrap(*t, b)?;
                let p = self.cons_t(rest, a, b)?;
                Ok(Value::wrap(*t, p))
            }
        }
    }

    /// The car (or cdr) of `tags(pair)`, in the world `tags`.
    pub fn car_t(
        &mut self,
        tags: &[Tag],
        v: Value,
        car: bool,
        pat: Option<PatId>,
    ) -> Result<Value> {
        self.car_inner(tags, &v, car)
            .map_err(|_| self.pattern_error(tags, pat, &v))
    }

    fn car_inner(&mut self, tags: &[Tag], v: &Value, car: bool) -> Result<Value> {
        match tags.split_first() {
            None => match v {
                Value::Pair(p) => Ok(if car { p.0.clone() } else { p.1.clone() }),
                _ => err("not a pair"),
            },
            Some((Tag::Forward, rest)) => {
                let p = self.primal(v.clone())?;
                let t = self.tangent(v.clone())?;
                let t = self.tag_unwrap(Tag::Perturb, t)?;
                let a = self.car_inner(rest, &p, car)?;
                let da = self.car_inner(rest, &t, car)?;
                let da = self.tag_wrap(Tag::Perturb, da)?;
                self.bundle(a, da)
            }
            Some((t, rest)) => {
                let x = self.tag_unwrap(*t, v.clone())?;
                let a = self.car_inner(rest, &x, car)?;
                self.tag_wrap(*t, a)
            }
        }
    }

    /// A constant pattern: `v`, seen through `tags`, must equal `k`.
    pub fn check_t(
        &mut self,
        tags: &[Tag],
        v: Value,
        k: ConstId,
        pat: Option<PatId>,
    ) -> Result<Value> {
        let mut x = v.clone();
        for t in tags {
            x = match t {
                Tag::Forward => self.primal(x),
                _ => self.tag_unwrap(*t, x),
            }
            .map_err(|_| self.pattern_error(tags, pat, &v))?;
        }
        if equal_datum(&x, &self.prog.consts[k].datum) {
            Ok(v)
        } else {
            Err(self.pattern_error(tags, pat, &v))
        }
    }
}

/// Whether transforming `c` recurses into closures: only then can it
/// re-walk what an earlier call transformed, so only then is the result
/// worth remembering (transforming a closure over data is O(its free
/// variables), since tags on data are lazy).
fn holds_closures(c: &Closure) -> bool {
    c.env.iter().any(|x| matches!(x, Value::Closure(_)))
}

/// Is `t` (the inside of a perturbation) plausibly a tangent for `p`? Only
/// the outermost layer is checked, so that `bundle` stays O(1).
fn shallow_conform(p: &Value, t: &Value) -> bool {
    match (p, t) {
        (Value::Real(_), Value::Real(_)) => true,
        (Value::Bool(a), Value::Bool(b)) => a == b,
        (Value::Nil, Value::Nil) => true,
        (Value::Pair(_), Value::Pair(_)) => true,
        (Value::Vector(_) | Value::VectorSum(_), Value::Vector(_) | Value::VectorSum(_)) => {
            Interp::vector_len(p) == Interp::vector_len(t)
        }
        (Value::Closure(_), _) | (Value::Prim(_), _) => false,
        _ => p.wrapper_tag().is_some() && p.wrapper_tag() == t.wrapper_tag(),
    }
}

/// The elements of a vector as far as its shape goes: a sum's are those
/// of the zero it is a sum over.
fn shape_items(v: &Value) -> Items {
    match v {
        Value::Vector(items) => items.clone(),
        Value::VectorSum(sum) => sum.shown().clone(),
        _ => Rc::new(Vec::new()),
    }
}

/// How many nodes of a known zero and the value added to it `plus` walks
/// to check that they conform.
const ZERO_CONFORMANCE_BUDGET: usize = 16;

fn equal_datum(v: &Value, d: &ConstDatum) -> bool {
    match (v, d) {
        (Value::Real(x), ConstDatum::Real(y)) => x == y,
        (Value::Bool(x), ConstDatum::Bool(y)) => x == y,
        (Value::Nil, ConstDatum::Nil) => true,
        (Value::Pair(p), ConstDatum::Pair(a, b)) => equal_datum(&p.0, a) && equal_datum(&p.1, b),
        (Value::Vector(_) | Value::VectorSum(_), ConstDatum::Vector(ds)) => {
            let items = shape_items(v);
            items.len() == ds.len() && items.iter().zip(ds).all(|(x, d)| equal_datum(x, d))
        }
        _ => false,
    }
}
