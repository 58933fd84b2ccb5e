//! Vectors (docs/reference.md): their primitives, and the sums of one-hot
//! vectors that reverse mode accumulates.
//!
//! The sensitivity of `(vector-ref v i)` is the vector that is zero but at
//! `i` (`vector-one-hot`). A gradient that reads a vector of length n k
//! times adds k of them; built densely, that is O(n k). A [`VectorSum`]
//! keeps the additions instead: a base vector and a rope of `(index,
//! value)` leaves in the order they were made, and its elements are made
//! once, when something reads them.
//!
//! Its value is exactly that of adding the vectors densely, element by
//! element (what compiled code does): `plus` of two vectors is, at each
//! index, the element of one plus the element of the other, and every
//! element of a sum starts at 0. So `plus` folds the smaller operand into
//! the larger one: the additions of the smaller are summed per index (its
//! element there) and each becomes one addition to the larger; the element
//! at an index is 0 plus the base's (0 over a zero base, and the base's
//! itself while nothing is added), then each addition in turn. Which
//! operand is the larger never changes a value, nor does making a sum
//! dense: 0 plus a real is that real but for -0, which becomes 0, and
//! a sum that starts at 0 is never -0. (A zero from `zero` is the one
//! exception, as everywhere: adding it gives the other operand itself.)
//! Both operands dense costs O(n), as adding dense vectors does; a sum
//! that would hold more additions than the vector has elements is made
//! dense at once. Reading a sum costs O(n) plus its additions, and a
//! gradient that reads a vector k times costs O(n + k log k) at most (O(n +
//! k) when each read's sensitivity is added to the running sum).

use crate::eval::{err, Interp, Result};
use crate::value::{Items, Value};
use ir::message;
use ir::{Expects, Prim};
use std::cell::OnceCell;
use std::rc::Rc;

/// A vector made of additions to a base vector.
#[derive(Debug)]
pub struct VectorSum {
    /// The vector the additions are made to: its length and the shape of
    /// each element.
    base: Items,
    /// Whether `base` is a zero (then `plus` takes the other operand's).
    base_zero: bool,
    parts: Option<Rc<Rope>>,
    /// The number of leaves of `parts`.
    count: usize,
    /// The elements, once made.
    dense: OnceCell<Items>,
    /// The elements as [`VectorSum::shown`] makes them, for printing.
    approx: OnceCell<Items>,
}

/// Additions, in the order they were made.
#[derive(Debug)]
enum Rope {
    Leaf(usize, Value),
    Cat(Rc<Rope>, Rc<Rope>),
}

impl VectorSum {
    pub fn len(&self) -> usize {
        self.base.len()
    }

    pub fn is_empty(&self) -> bool {
        self.base.is_empty()
    }

    fn leaves(&self) -> Vec<(usize, &Value)> {
        leaves(&self.parts, self.count)
    }

    /// The elements for printing, where no interpreter is at hand: made
    /// already whenever the program printed or read the vector; otherwise
    /// (a sum inside an error message) made with the reals added directly.
    pub(crate) fn shown(&self) -> &Items {
        if let Some(d) = self.dense.get() {
            return d;
        }
        self.approx.get_or_init(|| {
            let mut items = self.started();
            let mut touched = vec![!self.base_zero; items.len()];
            for (i, v) in self.leaves() {
                items[i] = match (&items[i], v) {
                    (Value::Real(a), Value::Real(b)) if touched[i] => Value::Real(a + b),
                    _ => from_zero(v),
                };
                touched[i] = true;
            }
            Rc::new(items)
        })
    }

    /// The base's elements as the additions start from them: 0 plus each
    /// (module documentation) once anything is added.
    fn started(&self) -> Vec<Value> {
        if self.base_zero || self.count == 0 {
            self.base.to_vec()
        } else {
            self.base.iter().map(from_zero).collect()
        }
    }
}

/// A vector as `plus` combines it: a base, whether it is a zero, and the
/// additions to it.
struct Summand {
    base: Items,
    base_zero: bool,
    parts: Option<Rc<Rope>>,
    count: usize,
}

impl Summand {
    /// What adding it densely costs: n for a dense base, plus its
    /// additions.
    fn size(&self, n: usize) -> usize {
        if self.base_zero {
            self.count
        } else {
            n + self.count
        }
    }
}

/// The additions of a rope, oldest first (a walk with a stack of its own:
/// the rope of a long accumulation is deep).
fn leaves(parts: &Option<Rc<Rope>>, count: usize) -> Vec<(usize, &Value)> {
    let mut out = Vec::with_capacity(count);
    let mut stack: Vec<&Rope> = parts.iter().map(|r| &**r).collect();
    while let Some(r) = stack.pop() {
        match r {
            Rope::Leaf(i, v) => out.push((*i, v)),
            Rope::Cat(a, b) => {
                stack.push(b);
                stack.push(a);
            }
        }
    }
    out
}

use base::number::is_count;

/// 0 plus `v`: its reals (in pairs, tagged values and closures too; not a
/// vector's, which stays as it is, as a row of a sum of rows does) with 0
/// added, so -0 becomes 0. Not counted as an addition: it is where a sum's
/// element starts, not a `plus` the program made.
fn from_zero(v: &Value) -> Value {
    match v {
        Value::Real(x) => Value::Real(0.0 + x),
        Value::Pair(p) => Value::pair(from_zero(&p.0), from_zero(&p.1)),
        Value::Bundle(p) => Value::Bundle(Rc::new((from_zero(&p.0), from_zero(&p.1)))),
        Value::Perturbation(x) | Value::Sensitivity(x) | Value::Reverse(x) => match v.wrapper_tag()
        {
            Some(tag) => Value::wrap(tag, from_zero(x)),
            None => v.clone(),
        },
        Value::Closure(c) => Value::Closure(Rc::new(crate::value::Closure {
            lambda: c.lambda,
            env: c.env.iter().map(from_zero).collect(),
        })),
        _ => v.clone(),
    }
}

impl Interp<'_> {
    /// The elements of a vector, made if it is a sum; `None` for any
    /// other value.
    pub(crate) fn vector_items(&mut self, v: &Value) -> Result<Option<Items>> {
        match v {
            Value::Vector(items) => Ok(Some(items.clone())),
            Value::VectorSum(sum) => self.dense(sum).map(Some),
            _ => Ok(None),
        }
    }

    fn dense(&mut self, sum: &VectorSum) -> Result<Items> {
        if let Some(d) = sum.dense.get() {
            return Ok(d.clone());
        }
        let mut items = sum.started();
        // Over a zero base, an element is 0 plus its first addition, then
        // the others: as adding one-hot vectors densely gives it.
        let mut touched = vec![!sum.base_zero; items.len()];
        for (i, v) in sum.leaves() {
            items[i] = if touched[i] {
                self.plus(&items[i], v)?
            } else {
                touched[i] = true;
                from_zero(v)
            };
        }
        let d: Items = Rc::new(items);
        let _ = sum.dense.set(d.clone());
        Ok(d)
    }

    /// Makes every sum inside `v` dense, so that printing it shows its
    /// elements as the program made them. Linear in `v` (shared parts are
    /// walked once).
    pub(crate) fn settle(&mut self, v: &Value) -> Result<()> {
        let mut seen = std::collections::HashSet::new();
        let mut stack = vec![v.clone()];
        while let Some(v) = stack.pop() {
            if let Some(a) = v.addr() {
                if !seen.insert(a) {
                    continue;
                }
            }
            match &v {
                Value::Pair(p) | Value::Bundle(p) => {
                    stack.push(p.0.clone());
                    stack.push(p.1.clone());
                }
                Value::Perturbation(x) | Value::Sensitivity(x) | Value::Reverse(x) => {
                    stack.push((**x).clone())
                }
                Value::Vector(items) => stack.extend(items.iter().cloned()),
                Value::VectorSum(sum) => {
                    let d = self.dense(sum)?;
                    stack.extend(d.iter().cloned());
                }
                _ => {}
            }
        }
        Ok(())
    }

    /// The length of a vector, without making a sum's elements.
    pub(crate) fn vector_len(v: &Value) -> Option<usize> {
        match v {
            Value::Vector(items) => Some(items.len()),
            Value::VectorSum(sum) => Some(sum.len()),
            _ => None,
        }
    }

    /// `zero` of a vector: the vector of its elements' zeros (a sum's zero
    /// is the zero it is a sum over).
    pub(crate) fn zero_vector(&mut self, v: &Value) -> Result<Option<Value>> {
        Ok(match v {
            Value::Vector(items) => {
                let mut out = Vec::with_capacity(items.len());
                for x in items.iter() {
                    out.push(self.zero(x)?);
                }
                Some(Value::Vector(Rc::new(out)))
            }
            Value::VectorSum(sum) if sum.base_zero => Some(Value::Vector(sum.base.clone())),
            Value::VectorSum(sum) => Some(self.zero(&Value::Vector(sum.base.clone()))?),
            _ => None,
        })
    }

    /// `plus` of two vectors, `None` when either is not one: the smaller
    /// folded into the larger (see the module documentation).
    pub(crate) fn plus_vectors(&mut self, a: &Value, b: &Value) -> Result<Option<Value>> {
        let (Some(x), Some(y)) = (self.summand(a), self.summand(b)) else {
            return Ok(None);
        };
        let n = x.base.len();
        if y.base.len() != n {
            return err("non-conforming");
        }
        let (big, small) = if x.size(n) >= y.size(n) {
            (x, y)
        } else {
            (y, x)
        };
        if !small.base_zero {
            // Both dense: elementwise.
            let (p, q) = (self.materialise(&big)?, self.materialise(&small)?);
            let mut out = Vec::with_capacity(n);
            for (u, v) in p.iter().zip(q.iter()) {
                out.push(self.plus(u, v)?);
            }
            return Ok(Some(Value::Vector(Rc::new(out))));
        }
        // The smaller's element at each index it touches, in the order the
        // indices were first touched.
        let mut at: std::collections::HashMap<usize, usize> = std::collections::HashMap::new();
        let mut grouped: Vec<(usize, Value)> = Vec::new();
        for (i, v) in leaves(&small.parts, small.count) {
            match at.get(&i) {
                Some(&k) => grouped[k].1 = self.plus(&grouped[k].1, v)?,
                None => {
                    at.insert(i, grouped.len());
                    grouped.push((i, v.clone()));
                }
            }
        }
        let mut parts = big.parts;
        let count = big.count + grouped.len();
        for (i, v) in grouped {
            let leaf = Rc::new(Rope::Leaf(i, v));
            parts = Some(match parts {
                Some(p) => Rc::new(Rope::Cat(p, leaf)),
                None => leaf,
            });
        }
        let sum = VectorSum {
            base: big.base,
            base_zero: big.base_zero,
            parts,
            count,
            dense: OnceCell::new(),
            approx: OnceCell::new(),
        };
        if sum.count > n {
            return Ok(Some(Value::Vector(self.dense(&sum)?)));
        }
        Ok(Some(Value::VectorSum(Rc::new(sum))))
    }

    /// The elements of a summand.
    fn materialise(&mut self, s: &Summand) -> Result<Items> {
        if s.parts.is_none() {
            return Ok(s.base.clone());
        }
        let sum = VectorSum {
            base: s.base.clone(),
            base_zero: s.base_zero,
            parts: s.parts.clone(),
            count: s.count,
            dense: OnceCell::new(),
            approx: OnceCell::new(),
        };
        self.dense(&sum)
    }

    fn summand(&self, v: &Value) -> Option<Summand> {
        match v {
            Value::Vector(items) => Some(Summand {
                base: items.clone(),
                base_zero: self.values.is_zero(v),
                parts: None,
                count: 0,
            }),
            Value::VectorSum(sum) => Some(Summand {
                base: sum.base.clone(),
                base_zero: sum.base_zero,
                parts: sum.parts.clone(),
                count: sum.count,
            }),
            _ => None,
        }
    }

    /// The vector primitives on untagged values.
    pub(crate) fn vector_prim(&mut self, p: Prim, arg: Value) -> Result<Value> {
        match p {
            Prim::IsVector => Ok(Value::Bool(Self::vector_len(&arg).is_some())),
            Prim::VectorLength => match Self::vector_len(&arg) {
                Some(n) => Ok(Value::Real(n as f64)),
                None => err(p.expects(Expects::Vector, &arg.describe())),
            },
            Prim::VectorRef => {
                let bad = |arg: &Value| err(p.expects(Expects::VectorAndIndex, &arg.describe()));
                let Value::Pair(vi) = &arg else {
                    return bad(&arg);
                };
                let (Some(items), Value::Real(i)) = (self.vector_items(&vi.0)?, &vi.1) else {
                    return bad(&arg);
                };
                let i = self.index(p.name(), items.len(), *i)?;
                Ok(items[i].clone())
            }
            Prim::BuildVector => {
                let Value::Pair(nf) = &arg else {
                    return err(p.expects(Expects::LengthAndProcedure, &arg.describe()));
                };
                let n = self.length(p.name(), &nf.0)?;
                let mut out = Vec::new();
                if out.try_reserve_exact(n).is_err() {
                    return err(message::out_of_memory());
                }
                for i in 0..n {
                    out.push(self.apply(nf.1.clone(), Value::Real(i as f64))?);
                }
                Ok(Value::Vector(Rc::new(out)))
            }
            Prim::ListToVector => {
                let mut out = Vec::new();
                let mut l = &arg;
                loop {
                    match l {
                        Value::Nil => break,
                        Value::Pair(p) => {
                            out.push(p.0.clone());
                            l = &p.1;
                        }
                        _ => return err(p.expects(Expects::List, &arg.describe())),
                    }
                }
                Ok(Value::Vector(Rc::new(out)))
            }
            Prim::VectorOneHot => {
                let bad = |arg: &Value| err(p.expects(Expects::VectorAndIndex, &arg.describe()));
                let Value::Pair(a) = &arg else {
                    return bad(&arg);
                };
                let Value::Pair(b) = &a.1 else {
                    return bad(&arg);
                };
                let (Some(n), Value::Real(i)) = (Self::vector_len(&a.0), &b.0) else {
                    return bad(&arg);
                };
                let i = self.index(p.name(), n, *i)?;
                let Value::Vector(zero) = self.zero(&a.0)? else {
                    return bad(&arg);
                };
                Ok(Value::VectorSum(Rc::new(VectorSum {
                    base: zero,
                    base_zero: true,
                    parts: Some(Rc::new(Rope::Leaf(i, b.1.clone()))),
                    count: 1,
                    dense: OnceCell::new(),
                    approx: OnceCell::new(),
                })))
            }
            Prim::VectorCheckLength => {
                let (who, n) = self.who(p, &arg)?;
                self.length(who, &n)?;
                Ok(n)
            }
            Prim::VectorCheckLengths => {
                let (who, vs) = self.who(p, &arg)?;
                let mut len: Option<usize> = None;
                let mut l = &vs;
                loop {
                    match l {
                        Value::Nil => break,
                        Value::Pair(q) => {
                            let Some(n) = Self::vector_len(&q.0) else {
                                return err(message::not_a_vector(who, &q.0.describe()));
                            };
                            match len {
                                Some(m) if m != n => {
                                    return err(message::different_lengths(
                                        who,
                                        &m.to_string(),
                                        &n.to_string(),
                                    ))
                                }
                                _ => len = Some(n),
                            }
                            l = &q.1;
                        }
                        _ => return err(p.expects(Expects::List, &vs.describe())),
                    }
                }
                Ok(Value::Real(len.unwrap_or(0) as f64))
            }
            Prim::VectorCheckRange => {
                let (who, rest) = self.who(p, &arg)?;
                let parts = match &rest {
                    Value::Pair(a) => match &a.1 {
                        Value::Pair(b) => Some((a.0.clone(), b.0.clone(), b.1.clone())),
                        _ => None,
                    },
                    _ => None,
                };
                let Some((v, start, end)) = parts else {
                    return err(p.expects(Expects::VectorAndIndex, &arg.describe()));
                };
                let Some(n) = Self::vector_len(&v) else {
                    return err(message::not_a_vector(who, &v.describe()));
                };
                let fits = match (&start, &end) {
                    (Value::Real(s), Value::Real(e)) => {
                        is_count(*s) && is_count(*e) && s <= e && *e <= n as f64
                    }
                    _ => false,
                };
                if !fits {
                    return err(message::bad_range(
                        who,
                        &n.to_string(),
                        &start.describe(),
                        &end.describe(),
                    ));
                }
                Ok(Value::Nil)
            }
            _ => err(format!("internal error: `{p}` is not a vector primitive")),
        }
    }

    /// `(cons who x)`: the procedure `who` names, and x.
    fn who(&self, p: Prim, arg: &Value) -> Result<(&'static str, Value)> {
        if let Value::Pair(a) = arg {
            if let Value::Real(code) = a.0 {
                if let Some(who) = message::vector_procedure(code) {
                    return Ok((who, a.1.clone()));
                }
            }
        }
        err(format!("internal error: `{p}` needs a procedure's code"))
    }

    fn length(&self, who: &str, n: &Value) -> Result<usize> {
        match n {
            Value::Real(x) if is_count(*x) => Ok(*x as usize),
            _ => err(message::bad_length(who, &n.describe())),
        }
    }

    fn index(&self, who: &str, len: usize, i: f64) -> Result<usize> {
        if is_count(i) && i < len as f64 {
            Ok(i as usize)
        } else {
            err(message::bad_index(
                who,
                &len.to_string(),
                &base::number::format_real(i),
            ))
        }
    }
}
