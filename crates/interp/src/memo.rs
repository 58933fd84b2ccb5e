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
//! for it). An inverse (the closure that `*j-inverse` of a `*j` result
//! gives back, the primal of a bundle, the forward closure that `bundle`
//! of its two halves gives back) is held weakly: the program holds it as
//! long as it may ask, and held strongly each pair of inverse entries was
//! a ring that kept both closures until a walk found it. Results still
//! make rings through what they reach: a result reaches the argument of
//! another entry whose result reaches back. When the entries pass twice the number that was
//! live at the last sweep, the entries of dead values are swept (again
//! while their results' deaths kill more), and those of values that only
//! the memo's own results reach ([`reach`]), rings and all.
//!
//! The transformations of a closure that holds no closures are not
//! remembered (see `crate::adops`): they are as cheap to redo as to look
//! up, and a nested mode makes them for every element of its tape.

mod reach;

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

/// The most passes of a sweep over the entries of dead values.
const SWEEP_PASSES: usize = 16;

/// The most the entries grow between two walks over the results (a ring
/// left after a walk costs at most this factor of the memo that is live).
const MAX_WALK_GROWTH: usize = 8;

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
    Wrapped(Weak<Value>),
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
                WeakValue::Wrapped(Rc::downgrade(x))
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
            WeakValue::Wrapped(x) => x.strong_count() > 0,
            WeakValue::Vector(v) => v.strong_count() > 0,
            WeakValue::VectorSum(v) => v.strong_count() > 0,
        }
    }
}

/// An entry of a transformation: its arguments, closures, pinned (so that
/// their addresses are not reused while they are keys), and the result.
/// 48 bytes with its key, since a nested mode keeps several per element
/// of its tape.
struct Entry {
    args: (Weak<Closure>, Option<Weak<Closure>>),
    result: Held,
}

/// An entry's result: held strongly, or weakly when it is an inverse (see
/// [`ValueMemo::remember_inverse`]).
enum Held {
    Strong(Value),
    Inverse(Weak<Closure>),
}

impl Entry {
    fn alive(&self) -> bool {
        self.args.0.strong_count() > 0
            && self.args.1.as_ref().is_none_or(|b| b.strong_count() > 0)
            && match &self.result {
                Held::Strong(_) => true,
                Held::Inverse(r) => r.strong_count() > 0,
            }
    }

    fn strong_result(&self) -> Option<&Value> {
        match &self.result {
            Held::Strong(v) => Some(v),
            Held::Inverse(_) => None,
        }
    }
}

/// A transformation's key: the first argument's address, and the second's
/// (`bundle`) or the transformation's number (addresses are far above it).
type Key = (usize, usize);

/// The transformation's part of a key with one argument.
fn code(op: Transform) -> usize {
    let tag = |t: Tag| match t {
        Tag::Perturb => 0,
        Tag::Sensitize => 1,
        Tag::Reverse => 2,
        Tag::Forward => 3,
    };
    match op {
        Transform::Wrap(t) => 1 + tag(t),
        Transform::Unwrap(t) => 5 + tag(t),
        Transform::Bundle => 9,
        Transform::Primal => 10,
        Transform::Tangent => 11,
    }
}

/// The closure of a value, if it is one.
fn closure(v: &Value) -> Option<&Rc<Closure>> {
    match v {
        Value::Closure(c) => Some(c),
        _ => None,
    }
}

/// The interpreter's memory of `zero` and of the transformations, and the
/// values known to be zeros.
pub(crate) struct ValueMemo {
    entries: Map<Key, Entry>,
    /// The zero of each value met, by its address.
    zeros: Map<usize, (WeakValue, Value)>,
    known_zeros: Map<usize, WeakValue>,
    /// Entries (of the three maps) at which to sweep next.
    sweep_at: usize,
    /// Entries left by the last walk over the results.
    walked: usize,
    /// How many times `walked` the entries must be for the next walk.
    walk_growth: usize,
}

impl Default for ValueMemo {
    fn default() -> Self {
        ValueMemo {
            entries: Map::default(),
            zeros: Map::default(),
            known_zeros: Map::default(),
            sweep_at: FIRST_SWEEP,
            walked: 0,
            walk_growth: 2,
        }
    }
}

impl ValueMemo {
    fn key(op: Transform, a: &Rc<Closure>, b: Option<&Rc<Closure>>) -> Key {
        let first = Rc::as_ptr(a) as usize;
        match b {
            Some(b) => (first, Rc::as_ptr(b) as usize),
            None => (first, code(op)),
        }
    }

    fn len(&self) -> usize {
        self.entries.len() + self.zeros.len() + self.known_zeros.len()
    }

    /// Drops the entries of dead values once the memo has grown by half
    /// since the last sweep, so that the time spent sweeping is linear in
    /// the entries ever made and the memory in the entries alive. A dead
    /// entry holds its result until it is swept: waiting for the memo to
    /// double put up to 40% on the peak of a Hessian-vector product (140
    /// to 197 MB at 2000 points, as the sweeps fell).
    ///
    /// Dropping an entry's result can be the death of another entry's
    /// argument (the halves of a closure whose entry went, the closures
    /// they hold): such chains are swept again while a pass drops a 64th
    /// of what is left, at most [`SWEEP_PASSES`] passes. One pass left
    /// them to the walk, which found 98% of the memo dead at every sweep
    /// on particle-FF; stopping at an eighth left a varying part of them
    /// until the next sweep (the order of a pass follows the addresses),
    /// 134 to 185 MiB at the peak of the same run.
    ///
    /// Then the entries of values only the memo reaches go, when what is
    /// left has doubled since the last walk over the results (a walk
    /// costs about as much as the entries: a memo that stays the same
    /// size is not walked again), or grown up to eightfold after walks
    /// that found little: a walk's own memory was a third of the peak of
    /// a Hessian-vector product, whose tape is all alive.
    fn sweep(&mut self) {
        if self.len() < self.sweep_at {
            return;
        }
        for _ in 0..SWEEP_PASSES {
            let before = self.len();
            self.entries.retain(|_, e| e.alive());
            self.zeros.retain(|_, (w, _)| w.alive());
            self.known_zeros.retain(|_, w| w.alive());
            if 64 * (before - self.len()) < before {
                break;
            }
        }
        if self.len() >= self.walk_growth * self.walked {
            let met = self.len();
            self.sweep_unreached();
            self.walked = self.len();
            // A walk that found little waits for more growth next time.
            self.walk_growth = if 4 * (met - self.walked) < met {
                (2 * self.walk_growth).min(MAX_WALK_GROWTH)
            } else {
                2
            };
        }
        self.sweep_at = self.len() + FIRST_SWEEP.max(self.len() / 2);
    }

    /// Drops the entries of values that only the memo's results reach.
    fn sweep_unreached(&mut self) {
        let (entries, zeros) = (&self.entries, &self.zeros);
        let reach = reach::Reach::new(|| {
            let transforms = entries.iter().map(|((a, b), e)| reach::Seen {
                args: [*a, if e.args.1.is_some() { *b } else { 0 }],
                result: e.strong_result(),
                alive: e.alive(),
            });
            let zeros = zeros.iter().map(|(a, (w, z))| reach::Seen {
                args: [*a, 0],
                result: Some(z),
                alive: w.alive(),
            });
            transforms.chain(zeros)
        });
        self.entries.retain(|(a, b), e| {
            e.alive() && reach.reached(*a) && (e.args.1.is_none() || reach.reached(*b))
        });
        self.zeros
            .retain(|a, (w, _)| w.alive() && reach.reached(*a));
        drop(reach);
        self.known_zeros.retain(|_, w| w.alive());
    }

    /// The remembered zero of `v`.
    pub fn zero_of(&self, v: &Value) -> Option<Value> {
        Some(self.zeros.get(&v.addr()?)?.1.clone())
    }

    /// Remembers that `r` is the zero of `v`.
    pub fn remember_zero(&mut self, v: &Value, r: &Value) {
        self.mark_zero(r);
        if let (Some(a), Some(w)) = (v.addr(), WeakValue::new(v)) {
            self.sweep();
            self.zeros.insert(a, (w, r.clone()));
        }
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

    /// The remembered result of `op` on the closure `a` (and `b`).
    pub fn transformed(&self, op: Transform, a: &Value, b: Option<&Value>) -> Option<Value> {
        let b = match b {
            Some(b) => Some(closure(b)?),
            None => None,
        };
        let e = self.entries.get(&Self::key(op, closure(a)?, b))?;
        match &e.result {
            Held::Strong(v) => Some(v.clone()),
            Held::Inverse(r) => r.upgrade().map(Value::Closure),
        }
    }

    /// Remembers that `op` of the closure `a` (and `b`) is `r`.
    pub fn remember(&mut self, op: Transform, a: &Value, b: Option<&Value>, r: &Value) {
        self.insert(op, a, b, Held::Strong(r.clone()));
    }

    /// Remembers that `op` of the closure `a` (and `b`) is `r`, an
    /// argument of the transformation `a` is the result of, while the
    /// program holds `r`: `*j-inverse` of a `*j` result gives the closure
    /// back, `bundle` of the halves of a forward closure gives it back.
    /// Held strongly, the two entries would hold each other's argument
    /// alive, a ring only a walk over the results finds.
    pub fn remember_inverse(&mut self, op: Transform, a: &Value, b: Option<&Value>, r: &Value) {
        match r {
            Value::Closure(c) => self.insert(op, a, b, Held::Inverse(Rc::downgrade(c))),
            _ => self.remember(op, a, b, r),
        }
    }

    fn insert(&mut self, op: Transform, a: &Value, b: Option<&Value>, result: Held) {
        let Some(a) = closure(a) else { return };
        let b = match b {
            Some(b) => match closure(b) {
                Some(b) => Some(b),
                None => return,
            },
            None => None,
        };
        self.sweep();
        self.entries.insert(
            Self::key(op, a, b),
            Entry {
                args: (Rc::downgrade(a), b.map(Rc::downgrade)),
                result,
            },
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pair(a: f64, b: f64) -> Value {
        Value::pair(Value::Real(a), Value::Real(b))
    }

    fn closure(env: Vec<Value>) -> Value {
        Value::Closure(Rc::new(Closure {
            lambda: <ir::LambdaId as ir::EntityRef>::new(0),
            env: env.into_boxed_slice(),
        }))
    }

    const OP: Transform = Transform::Wrap(Tag::Reverse);

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

    /// Adds entries of dead values until a sweep has run.
    fn churn(memo: &mut ValueMemo) {
        for i in 0..3 * FIRST_SWEEP {
            memo.remember(OP, &closure(vec![Value::Real(i as f64)]), None, &Value::Nil);
        }
    }

    #[test]
    fn sweeps_dead_arguments_and_keeps_live_ones() {
        let mut memo = ValueMemo::default();
        let kept = closure(vec![]);
        memo.remember(OP, &kept, None, &Value::Nil);
        churn(&mut memo);
        assert!(
            memo.entries.len() < 2 * FIRST_SWEEP,
            "{}",
            memo.entries.len()
        );
        assert!(memo.transformed(OP, &kept, None).is_some());
    }

    #[test]
    fn sweeps_an_argument_that_only_results_reach() {
        let mut memo = ValueMemo::default();
        let (a, b) = (closure(vec![]), closure(vec![]));
        let Value::Closure(pin) = &a else {
            unreachable!()
        };
        let pin = Rc::downgrade(pin);
        // A ring: each result holds the other entry's argument, as the
        // bundle of a primal and a tangent holds them and the primal of
        // the bundle is remembered.
        memo.remember(Transform::Primal, &a, None, &closure(vec![b.clone()]));
        memo.remember(Transform::Tangent, &b, None, &closure(vec![a.clone()]));
        memo.remember_zero(&a, &closure(vec![b.clone()]));
        drop((a, b));
        churn(&mut memo);
        assert_eq!(pin.strong_count(), 0);
    }

    #[test]
    fn keeps_an_argument_the_program_reaches_through_a_result() {
        let mut memo = ValueMemo::default();
        let a = closure(vec![]);
        let r = closure(vec![a.clone()]);
        memo.remember(Transform::Primal, &a, None, &r);
        drop(a);
        churn(&mut memo);
        let Value::Closure(held) = &r else {
            unreachable!()
        };
        assert!(memo
            .transformed(Transform::Primal, &held.env[0], None)
            .is_some());
    }

    /// As a forward closure's entry holds its primal, whose entry holds
    /// the primal's own transformation.
    #[test]
    fn one_sweep_drops_chains_of_entries_each_keyed_on_the_last_result() {
        let mut memo = ValueMemo::default();
        let mut pins = Vec::new();
        for _ in 0..1000 {
            let mut key = closure(vec![]);
            for _ in 0..3 {
                let Value::Closure(c) = &key else {
                    unreachable!()
                };
                pins.push(Rc::downgrade(c));
                let next = closure(vec![]);
                memo.remember(OP, &key, None, &closure(vec![next.clone()]));
                key = next;
            }
        }
        // No walk: the dead entries alone must go.
        memo.walked = usize::MAX / 2;
        memo.sweep_at = 0;
        memo.sweep();
        assert!(pins.iter().all(|p| p.strong_count() == 0));
        assert_eq!(memo.entries.len(), 0);
    }

    #[test]
    fn an_inverse_lives_as_long_as_the_program_holds_it() {
        let mut memo = ValueMemo::default();
        let (a, r) = (closure(vec![]), closure(vec![]));
        memo.remember(OP, &a, None, &r);
        memo.remember_inverse(Transform::Unwrap(Tag::Reverse), &r, None, &a);
        let inverse = || memo.transformed(Transform::Unwrap(Tag::Reverse), &r, None);
        assert_eq!(inverse().and_then(|v| v.addr()), a.addr());
        let Value::Closure(pin) = &a else {
            unreachable!()
        };
        let pin = Rc::downgrade(pin);
        drop(a);
        assert_eq!(pin.strong_count(), 0);
        assert!(memo
            .transformed(Transform::Unwrap(Tag::Reverse), &r, None)
            .is_none());
    }

    /// A nested mode keeps several entries per element of its tape.
    #[test]
    fn an_entry_is_48_bytes_with_its_key() {
        assert_eq!(std::mem::size_of::<(Key, Entry)>(), 48);
    }

    #[test]
    fn keys_of_one_and_two_arguments_differ() {
        let mut memo = ValueMemo::default();
        let (a, b) = (closure(vec![]), closure(vec![]));
        memo.remember(Transform::Bundle, &a, Some(&b), &Value::Real(1.0));
        memo.remember(Transform::Primal, &a, None, &Value::Real(2.0));
        let got = |op, b: Option<&Value>| match memo.transformed(op, &a, b) {
            Some(Value::Real(x)) => Some(x),
            _ => None,
        };
        assert_eq!(got(Transform::Bundle, Some(&b)), Some(1.0));
        assert_eq!(got(Transform::Primal, None), Some(2.0));
        assert_eq!(got(Transform::Tangent, None), None);
    }
}
