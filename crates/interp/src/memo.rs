//! What the interpreter remembers about the values the AD operations have
//! met, so that they preserve sharing across calls (docs/reference.md).
//!
//! Values are immutable, so an operation's result depends only on the
//! identity of its arguments. Without this memory, reverse mode through a
//! loop transforms the chain of backpropagators built so far at every step
//! (each captures the previous one), and nested modes are quadratic in the
//! trip count.
//!
//! Entries are keyed by the addresses of the arguments and hold them by
//! weak references: a weak reference keeps the allocation, so an address is
//! never reused while it is a key, but not the value, so remembering costs
//! no memory the program has let go of beyond the entry itself. A result
//! is held strongly (the zero of a list must outlive the step that asked
//! for it), except the results recorded as inverses (the closure that
//! `*j-inverse` of a `*j` result gives back), which would otherwise keep
//! each other alive. When the entries pass twice the number that was live
//! at the last sweep, the entries of dead values are swept.

use crate::value::{Closure, Value};
use ir::Tag;
use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};
use std::rc::{Rc, Weak};

/// The hash of the memo's keys, which are addresses and small tags:
/// multiply and rotate (as rustc's FxHash), since the default SipHash took
/// a fifth of the interpreter's instructions in reverse mode over a list.
#[derive(Default)]
struct AddrHasher(u64);

impl Hasher for AddrHasher {
    fn finish(&self) -> u64 {
        self.0
    }

    fn write(&mut self, bytes: &[u8]) {
        for b in bytes {
            self.write_u64(u64::from(*b));
        }
    }

    fn write_u64(&mut self, x: u64) {
        self.0 = (self.0.rotate_left(5) ^ x).wrapping_mul(0x51_7c_c1_b7_27_22_0a_95);
    }

    fn write_usize(&mut self, x: usize) {
        self.write_u64(x as u64);
    }

    fn write_u32(&mut self, x: u32) {
        self.write_u64(u64::from(x));
    }

    fn write_u8(&mut self, x: u8) {
        self.write_u64(u64::from(x));
    }

    fn write_isize(&mut self, x: isize) {
        self.write_u64(x as u64);
    }
}

type Map<K, V> = HashMap<K, V, BuildHasherDefault<AddrHasher>>;

/// Entries below which no sweep happens.
const FIRST_SWEEP: usize = 1 << 16;

/// A transformation of values whose results are remembered.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub(crate) enum Transform {
    /// `perturb`, `sensitize` or `*j`.
    Wrap(Tag),
    /// `unperturb`, `unsensitize` or `*j-inverse`.
    Unwrap(Tag),
    Bundle,
    Primal,
    Tangent,
}

/// A value held without keeping it alive (values without an address need
/// no holding).
enum WeakValue {
    Pair(Weak<(Value, Value)>),
    Bundle(Weak<(Value, Value)>),
    Closure(Weak<Closure>),
    Wrapped(Tag, Weak<Value>),
    Vector(Weak<Vec<Value>>),
    VectorSum(Weak<crate::vector::VectorSum>),
}

impl WeakValue {
    fn new(v: &Value) -> Option<WeakValue> {
        Some(match v {
            Value::Pair(p) => WeakValue::Pair(Rc::downgrade(p)),
            Value::Bundle(p) => WeakValue::Bundle(Rc::downgrade(p)),
            Value::Closure(c) => WeakValue::Closure(Rc::downgrade(c)),
            Value::Perturbation(x) | Value::Sensitivity(x) | Value::Reverse(x) => {
                WeakValue::Wrapped(v.wrapper_tag()?, Rc::downgrade(x))
            }
            Value::Vector(items) => WeakValue::Vector(Rc::downgrade(items)),
            Value::VectorSum(sum) => WeakValue::VectorSum(Rc::downgrade(sum)),
            _ => return None,
        })
    }

    fn alive(&self) -> bool {
        match self {
            WeakValue::Pair(p) | WeakValue::Bundle(p) => p.strong_count() > 0,
            WeakValue::Closure(c) => c.strong_count() > 0,
            WeakValue::Wrapped(_, x) => x.strong_count() > 0,
            WeakValue::Vector(v) => v.strong_count() > 0,
            WeakValue::VectorSum(v) => v.strong_count() > 0,
        }
    }

    fn upgrade(&self) -> Option<Value> {
        Some(match self {
            WeakValue::Pair(p) => Value::Pair(p.upgrade()?),
            WeakValue::Bundle(p) => Value::Bundle(p.upgrade()?),
            WeakValue::Closure(c) => Value::Closure(c.upgrade()?),
            WeakValue::Wrapped(tag, x) => {
                let x = x.upgrade()?;
                match tag {
                    Tag::Perturb => Value::Perturbation(x),
                    Tag::Sensitize => Value::Sensitivity(x),
                    Tag::Reverse => Value::Reverse(x),
                    Tag::Forward => return None,
                }
            }
            WeakValue::Vector(v) => Value::Vector(v.upgrade()?),
            WeakValue::VectorSum(v) => Value::VectorSum(v.upgrade()?),
        })
    }
}

/// A remembered result.
enum Held {
    Strong(Value),
    Weak(WeakValue),
}

impl Held {
    fn get(&self) -> Option<Value> {
        match self {
            Held::Strong(v) => Some(v.clone()),
            Held::Weak(w) => w.upgrade(),
        }
    }

    fn alive(&self) -> bool {
        match self {
            Held::Strong(_) => true,
            Held::Weak(w) => w.alive(),
        }
    }
}

/// An entry: the arguments, pinned, and the result.
struct Entry {
    args: (WeakValue, Option<WeakValue>),
    result: Held,
}

impl Entry {
    fn alive(&self) -> bool {
        self.args.0.alive()
            && self.args.1.as_ref().is_none_or(WeakValue::alive)
            && self.result.alive()
    }
}

type Key = (Option<Transform>, usize, usize);

/// The interpreter's memory of `zero` (the key's transform is `None`) and
/// of the transformations, and the values known to be zeros.
pub(crate) struct ValueMemo {
    entries: Map<Key, Entry>,
    known_zeros: Map<usize, WeakValue>,
    /// Entries (of both maps) at which to sweep next.
    sweep_at: usize,
}

impl Default for ValueMemo {
    fn default() -> Self {
        ValueMemo {
            entries: Map::default(),
            known_zeros: Map::default(),
            sweep_at: FIRST_SWEEP,
        }
    }
}

impl ValueMemo {
    fn key(op: Option<Transform>, a: &Value, b: Option<&Value>) -> Option<Key> {
        let second = match b {
            Some(b) => b.addr()?,
            None => 0,
        };
        Some((op, a.addr()?, second))
    }

    fn get(&self, op: Option<Transform>, a: &Value, b: Option<&Value>) -> Option<Value> {
        self.entries.get(&Self::key(op, a, b)?)?.result.get()
    }

    fn insert(&mut self, op: Option<Transform>, a: &Value, b: Option<&Value>, r: Held) {
        let Some(key) = Self::key(op, a, b) else {
            return;
        };
        let (Some(wa), wb) = (WeakValue::new(a), b.and_then(WeakValue::new)) else {
            return;
        };
        self.sweep();
        self.entries.insert(
            key,
            Entry {
                args: (wa, wb),
                result: r,
            },
        );
    }

    /// Drops the entries of dead values once the memo has doubled since
    /// the last sweep, so that the time spent sweeping is linear in the
    /// entries ever made and the memory in the entries alive.
    fn sweep(&mut self) {
        if self.entries.len() + self.known_zeros.len() < self.sweep_at {
            return;
        }
        self.entries.retain(|_, e| e.alive());
        self.known_zeros.retain(|_, w| w.alive());
        self.sweep_at = FIRST_SWEEP.max(2 * (self.entries.len() + self.known_zeros.len()));
    }

    /// The remembered zero of `v`.
    pub fn zero_of(&self, v: &Value) -> Option<Value> {
        self.get(None, v, None)
    }

    /// Remembers that `r` is the zero of `v`.
    pub fn remember_zero(&mut self, v: &Value, r: &Value) {
        self.mark_zero(r);
        self.insert(None, v, None, Held::Strong(r.clone()));
    }

    /// Remembers that `r` is a zero.
    pub fn mark_zero(&mut self, r: &Value) {
        if let (Some(a), Some(w)) = (r.addr(), WeakValue::new(r)) {
            self.sweep();
            self.known_zeros.insert(a, w);
        }
    }

    pub fn is_zero(&self, v: &Value) -> bool {
        v.addr().is_some_and(|a| self.known_zeros.contains_key(&a))
    }

    /// The remembered result of `op` on `a` (and `b`).
    pub fn transformed(&self, op: Transform, a: &Value, b: Option<&Value>) -> Option<Value> {
        self.get(Some(op), a, b)
    }

    /// Remembers that `op` of `a` (and `b`) is `r`.
    pub fn remember(&mut self, op: Transform, a: &Value, b: Option<&Value>, r: &Value) {
        self.insert(Some(op), a, b, Held::Strong(r.clone()));
    }

    /// Remembers that `op` of `a` is `r`, where `r` is an argument `a`
    /// was computed from: held weakly, since `a`'s own entry holds `a`.
    pub fn remember_inverse(&mut self, op: Transform, a: &Value, r: &Value) {
        let held = match WeakValue::new(r) {
            Some(w) => Held::Weak(w),
            None => Held::Strong(r.clone()),
        };
        self.insert(Some(op), a, None, held);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pair(a: f64, b: f64) -> Value {
        Value::pair(Value::Real(a), Value::Real(b))
    }

    #[test]
    fn remembers_while_the_argument_lives() {
        let mut memo = ValueMemo::default();
        let v = pair(1.0, 2.0);
        let z = pair(0.0, 0.0);
        memo.remember_zero(&v, &z);
        assert!(memo.is_zero(&z));
        assert_eq!(memo.zero_of(&v).and_then(|r| r.addr()), z.addr());
        assert!(memo.zero_of(&z).is_none());
    }

    #[test]
    fn sweeps_dead_arguments_and_keeps_live_ones() {
        let mut memo = ValueMemo::default();
        let kept = pair(1.0, 2.0);
        memo.remember(Transform::Wrap(Tag::Reverse), &kept, None, &Value::Nil);
        for i in 0..3 * FIRST_SWEEP {
            let v = pair(i as f64, 0.0);
            memo.remember(Transform::Wrap(Tag::Reverse), &v, None, &Value::Nil);
        }
        assert!(
            memo.entries.len() < 2 * FIRST_SWEEP,
            "{}",
            memo.entries.len()
        );
        assert!(memo
            .transformed(Transform::Wrap(Tag::Reverse), &kept, None)
            .is_some());
    }

    #[test]
    fn an_inverse_does_not_keep_its_result_alive() {
        let mut memo = ValueMemo::default();
        let a = pair(1.0, 2.0);
        let r = pair(3.0, 4.0);
        memo.remember_inverse(Transform::Unwrap(Tag::Reverse), &a, &r);
        let addr = r.addr();
        assert_eq!(
            memo.transformed(Transform::Unwrap(Tag::Reverse), &a, None)
                .and_then(|v| v.addr()),
            addr
        );
        drop(r);
        assert!(memo
            .transformed(Transform::Unwrap(Tag::Reverse), &a, None)
            .is_none());
    }
}
