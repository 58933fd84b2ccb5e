//! How a call's specialisation key is chosen when the callee is already
//! being analysed (a recursion), so that the analysis terminates: a
//! recursion unrolls on its constants for [`UNROLL`] rounds, or
//! [`UNROLL_BRANCHED`] rounds when a conditional of unknown condition
//! continues it (it cannot end at compile time), and forgets them after;
//! one whose arguments keep growing in shape is summarised after [`GROW`]
//! rounds into unions of shapes ([`UNROLL`] rounds when conditions known
//! at compile time continue it).

use super::{Analyzer, SpecKey, GROW, UNROLL, UNROLL_BRANCHED};
use crate::domain::{AvId, Site};
use ir::{LambdaId, Prim};

impl Analyzer {
    /// The environment and argument a call of `lambda` is specialised on,
    /// its key with every constant forgotten, and whether the call is
    /// recursive (the callee is being analysed).
    pub(super) fn call_key(
        &mut self,
        lambda: LambdaId,
        env: &[AvId],
        arg: AvId,
    ) -> (Box<[AvId]>, AvId, SpecKey, bool) {
        // A recursion that a conditional of unknown condition continues
        // does not end at compile time, whatever its constants do (a
        // Newton step converging to a constant of its own would unroll
        // into a copy per step, each with the AD code of its step): after
        // `UNROLL_BRANCHED` rounds it forgets the constants that changed
        // since the round that called it ([`crate::Domain::widen_changed`]),
        // as after `UNROLL` rounds it forgets all.
        let glue = self.applies_arms(lambda) || self.is_arm(lambda);
        let (recursive, uncontrolled, known) =
            match self.stack.iter().rposition(|(l, ..)| *l == lambda) {
                // Conditionals and their arms nest in every round of a loop;
                // the loop's own lambda is what rounds are counted on.
                Some(_) if glue => (true, None, false),
                Some(i) => {
                    // The call is the next round only if every frame since the
                    // last is an arm of a conditional (or its transform, which
                    // the arms of a transformed `if-procedure` apply) or a
                    // transformed `if-procedure`; otherwise it is a use of the
                    // lambda nested in another (`map-n` inside `map-n`).
                    let between = &self.stack[i + 1..];
                    let arms_only = between
                        .iter()
                        .all(|(l, b, _)| *b || self.applies_arms(*l) || self.is_arm(*l));
                    let branching = between.iter().any(|(_, b, _)| *b);
                    (
                        true,
                        (arms_only && branching).then_some(self.stack[i].2),
                        arms_only && !branching,
                    )
                }
                None => (false, None, false),
            };
        self.branched_recursion |= uncontrolled.is_some();
        if recursive && !known {
            self.grows_by_grow.insert(lambda);
        }
        // A long list is analysed as one of run-time length, before any
        // specialisation sees it as a chain of pairs.
        let env: Box<[AvId]> = env
            .iter()
            .map(|x| self.ops.dom.widen_long_lists(*x))
            .collect();
        let arg = self.ops.dom.widen_long_lists(arg);
        let wenv: Box<[AvId]> = env.iter().map(|x| self.ops.dom.widen(*x)).collect();
        let warg = self.ops.dom.widen(arg);
        let wkey: SpecKey = (lambda, wenv.clone(), warg);
        let grown = self.grown.get(&lambda).map_or(0, |g| g.0);
        // Specialisations made under the widened key, which a recursive
        // call marks as counted (see `Analyzer::settled`).
        let spent = if !recursive {
            0
        } else if let Some(b) = self.budget.get_mut(&wkey) {
            b.1 = true;
            b.0
        } else {
            self.budget.insert(wkey.clone(), (0, true));
            0
        };
        // Rounds under analysis: each round analyses the next inside it.
        let rounds = || self.stack.iter().filter(|(l, ..)| *l == lambda).count();
        // A recursion continued by conditions known at compile time ends
        // at compile time, as its constants say (a derivative tower of
        // constant height passes itself a closure one level deeper each
        // round): it is summarised only past `UNROLL` rounds that grow.
        let grow = if known { UNROLL } else { GROW };
        let (env, arg): (Box<[AvId]>, AvId) = if recursive && grown >= grow {
            self.summarise(lambda, wenv, warg)
        } else if recursive && spent >= UNROLL {
            (wenv, warg)
        } else if let Some(outer) = uncontrolled.filter(|_| rounds() >= UNROLL_BRANCHED as usize) {
            let s = &self.specs[outer.0 as usize];
            let (oenv, oarg) = (s.env.clone(), s.arg);
            let dom = &mut self.ops.dom;
            let env = if oenv.len() == env.len() {
                oenv.iter()
                    .zip(env.iter())
                    .map(|(o, n)| dom.widen_changed(*o, *n))
                    .collect()
            } else {
                env.iter().map(|n| dom.widen(*n)).collect()
            };
            (env, dom.widen_changed(oarg, arg))
        } else {
            (env, arg)
        };
        (env, arg, wkey, recursive)
    }

    /// Joins a recursive call's (widened) environment and argument into the
    /// lambda's summary of its recursive calls, and returns the summary.
    fn summarise(&mut self, l: LambdaId, env: Box<[AvId]>, arg: AvId) -> (Box<[AvId]>, AvId) {
        // One summary per environment the lambda was closed over: a loop
        // of the library (a fold's) run for two procedures keeps each
        // one's shapes, instead of joining one's state with the other's.
        let key = (l, env.clone());
        let next = self.summary.len() as u32;
        let joined = match self.summary.get(&key).cloned() {
            None => (next, env, arg),
            Some((k, pe, pa)) if pe.len() == env.len() => {
                let e = pe
                    .iter()
                    .zip(env.iter())
                    .enumerate()
                    .map(|(i, (x, y))| self.ops.dom.join_at(Site::Env(l, i as u32, k), *x, *y))
                    .collect();
                (k, e, self.ops.dom.join_at(Site::Arg(l, k), pa, arg))
            }
            Some((k, ..)) => (k, env, arg),
        };
        self.summary.insert(key, joined.clone());
        (joined.1, joined.2)
    }

    /// Is `l` (a transform of) the thunk of an arm of an `if`, as `ir::anf`
    /// makes and names them?
    fn is_arm(&self, mut l: LambdaId) -> bool {
        while let ir::Origin::Transform { of, .. } = self.ops.prog.lambdas[l].origin {
            l = of;
        }
        let lam = &self.ops.prog.lambdas[l];
        matches!(lam.origin, ir::Origin::Source)
            && matches!(lam.name.as_deref(), Some("then" | "else"))
    }

    /// Is `l` a transform of `if-procedure` (whose code applies the arms of
    /// a conditional under AD)?
    fn applies_arms(&self, mut l: LambdaId) -> bool {
        loop {
            match self.ops.prog.lambdas[l].origin {
                ir::Origin::Transform { of, .. } => l = of,
                ir::Origin::PrimTransform { prim, .. } => return prim == Prim::IfProcedure,
                _ => return false,
            }
        }
    }
}
