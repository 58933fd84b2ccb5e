//! Specialisations whose calls fold to their constant result.
//!
//! A specialisation whose inputs, every binding and result the analysis
//! knows completely (no scalar at run time), whose code does no input or
//! output, has no run-time check or error and calls only such
//! specialisations, none of them recursively, computes at run time what
//! the analysis already knows, and always returns: a call of it is its
//! result, and it is not lowered at all. A constant derivative tower is
//! made of such specialisations (an alternating tower of height 8 of
//! 800,000, whose lowering and inlining took 16 of the 26 s of its
//! build); the optimisation passes would remove their calls anyway,
//! after lowering and inlining them all.

use flow::{Analysis, AvId, Plan, Spec, SpecId};
use ir::{EntityRef, PrimKind};

/// Fewer specialisations than this that fold are lowered all the same.
/// Lowering and inlining cost about 20 µs per specialisation, so below
/// this the passes remove their calls within a second; and the calls
/// steer the inliner, whose limits count what it copies: without them it
/// inlined more elsewhere, which changed the code of half the benchmarks
/// (most of whose programs have a few hundred such specialisations) and
/// made tests/scale/kmeans-newton.vlad build in 4.2 s instead of 3.3 s.
const MIN_FOLDED: usize = 50_000;

/// Which specialisations fold (see the module documentation): none when
/// fewer than [`MIN_FOLDED`] would.
pub(crate) fn folded(analysis: &Analysis) -> Vec<bool> {
    let mut folds = closed(analysis.specs.len(), |s| own_callees(analysis, s));
    if folds.iter().filter(|f| **f).count() < MIN_FOLDED {
        folds.iter_mut().for_each(|f| *f = false);
    }
    folds
}

/// Which of `n` specialisations fold, given which fold by their own code
/// (`own`, with their callees): those whose callees all fold, none of
/// them recursively.
fn closed(n: usize, own: impl Fn(usize) -> Option<Vec<usize>>) -> Vec<bool> {
    let mut state = vec![State::Unseen; n];
    // Depth-first over the calls, with an explicit stack (a tower nests
    // calls hundreds of thousands deep): each entry is a specialisation
    // and the callees it has left to look at.
    let mut stack: Vec<(usize, Vec<usize>)> = Vec::new();
    let enter = |s: usize, state: &mut [State], stack: &mut Vec<(usize, Vec<usize>)>| match own(s) {
        Some(callees) => {
            state[s] = State::OnStack;
            stack.push((s, callees));
            true
        }
        None => {
            state[s] = State::Kept;
            false
        }
    };
    for root in 0..n {
        if state[root] != State::Unseen {
            continue;
        }
        enter(root, &mut state, &mut stack);
        while let Some((s, callees)) = stack.last_mut() {
            let s = *s;
            let Some(c) = callees.pop() else {
                state[s] = State::Folds;
                stack.pop();
                continue;
            };
            let kept = match state[c] {
                State::Folds => false,
                State::Unseen => !enter(c, &mut state, &mut stack),
                State::OnStack | State::Kept => true,
            };
            // A cycle of calls, or a callee that does not fold: no
            // specialisation on the stack folds either (each calls the
            // one above it).
            if kept {
                for (t, _) in stack.drain(..) {
                    state[t] = State::Kept;
                }
            }
        }
    }
    state.into_iter().map(|s| s == State::Folds).collect()
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum State {
    Unseen,
    OnStack,
    Folds,
    Kept,
}

/// The specialisations `s` calls, if its own code allows it to fold.
fn own_callees(analysis: &Analysis, s: usize) -> Option<Vec<usize>> {
    if !analysis.is_live(SpecId::new(s)) {
        return None;
    }
    let spec: &Spec = &analysis.specs[s];
    let dom = &analysis.ops.dom;
    let constant = |av: AvId| av != dom.bottom() && dom.is_known(av);
    if !(spec.env.iter().all(|x| constant(*x)) && constant(spec.arg) && constant(spec.result)) {
        return None;
    }
    let mut callees = Vec::new();
    for b in &spec.binds {
        if !constant(b.av) {
            return None;
        }
        match &b.plan {
            Plan::Plain => {}
            Plan::Call(t) => callees.push(t.index()),
            Plan::If { then_, else_ } => {
                if then_.is_none() && else_.is_none() {
                    return None;
                }
                callees.extend(then_.iter().chain(else_).map(|t| t.index()));
            }
            // Lowering emits no code for a primitive whose result is
            // known, but for input and output (control) and vectors.
            Plan::Prim(p)
                if !matches!(
                    p.kind(),
                    PrimKind::Control | PrimKind::Shape | PrimKind::Vector
                ) => {}
            Plan::Prim(_)
            | Plan::Build(_)
            | Plan::Check
            | Plan::Error(_)
            | Plan::Dead
            | Plan::Switch(_) => return None,
        }
    }
    Some(callees)
}

#[cfg(test)]
mod tests {
    use super::closed;

    /// `calls[s]`: the callees of `s`, or `None` if its own code keeps it.
    fn folds(calls: &[Option<&[usize]>]) -> Vec<bool> {
        closed(calls.len(), |s| calls[s].map(<[usize]>::to_vec))
    }

    #[test]
    fn a_specialisation_folds_when_all_it_calls_folds() {
        // 0 -> 1 -> 2, and 3 -> 1.
        assert_eq!(
            folds(&[Some(&[1]), Some(&[2]), Some(&[]), Some(&[1])]),
            [true; 4]
        );
    }

    #[test]
    fn a_callee_that_does_not_fold_keeps_its_callers() {
        // 0 -> 1 -> 2, 2 kept (say it prints); 3 -> 4 folds, 0 also
        // calls 3. Seen from 0 first, and from 2 first.
        let calls: [Option<&[usize]>; 5] = [Some(&[3, 1]), Some(&[2]), None, Some(&[4]), Some(&[])];
        assert_eq!(folds(&calls), [false, false, false, true, true]);
        let calls: [Option<&[usize]>; 3] = [None, Some(&[0]), Some(&[1])];
        assert_eq!(folds(&calls), [false, false, false]);
    }

    #[test]
    fn recursion_keeps_every_specialisation_on_the_cycle_and_its_callers() {
        // 0 calls itself; 1 -> 2 -> 3 -> 2; 4 -> 5 folds.
        let calls: [Option<&[usize]>; 6] = [
            Some(&[0]),
            Some(&[2]),
            Some(&[3]),
            Some(&[2]),
            Some(&[5]),
            Some(&[]),
        ];
        assert_eq!(folds(&calls), [false, false, false, false, true, true]);
    }
}
