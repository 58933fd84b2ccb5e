//! How a call's specialisation key is chosen when the callee is already
//! being analysed (a recursion), so that the analysis terminates: a
//! recursion unrolls on its constants for [`UNROLL`] rounds, or
//! [`UNROLL_BRANCHED`] rounds when a conditional of unknown condition
//! continues it (it cannot end at compile time), and forgets them after;
//! one whose arguments keep growing in shape is summarised after [`GROW`]
//! rounds into unions of shapes ([`UNROLL`] rounds when conditions known
//! at compile time continue it). A recursion continued by a condition
//! known only at run time whose rounds nest AD deeper than the one before
//! even once their counters are forgotten is a derivative tower of
//! run-time height, refused there ([`Analyzer::nesting_round`]), before
//! [`GROW`] levels of it are specialised.

use super::{Analyzer, Limit, SpecId, SpecKey, GROW, UNROLL, UNROLL_BRANCHED};
use crate::domain::{AvId, Site};
use ir::{LambdaId, Prim};

/// The last round of a recursion continued by a condition known only at
/// run time, as [`Analyzer::nesting_round`] measures it.
#[derive(Clone, Copy)]
pub(super) struct Round {
    /// Its specialisation (the caller of the next round, if the
    /// recursion goes on).
    pub(super) spec: SpecId,
    /// How many specialisations there were when it was called: those
    /// made since are made by it, until it calls the next round.
    specs_before: usize,
    /// How deep the round before it nested AD, and how deep its own
    /// arguments are.
    ad: u32,
    depth: u32,
    /// How many rounds in a row nested AD deeper than the one before,
    /// each called with deeper arguments.
    streak: u32,
}

/// A round under analysis that is refused if it specialises code nesting
/// AD deeper than `ad`, the depth of the round before it (see
/// [`Analyzer::nesting_round`]).
pub(super) struct Armed {
    lambda: LambdaId,
    pub(super) ad: u32,
    /// How deep its arguments are, and how many rounds called the next.
    depth: u32,
    calls: u32,
}

impl Analyzer {
    /// The environment and argument a call of `lambda` is specialised on,
    /// its key with every constant forgotten, whether the call is
    /// recursive (the callee is being analysed), and, when the call is
    /// the next round of a recursion that a condition known only at run
    /// time continues, the round that calls it.
    pub(super) fn call_key(
        &mut self,
        lambda: LambdaId,
        env: &[AvId],
        arg: AvId,
    ) -> (Box<[AvId]>, AvId, SpecKey, bool, Option<SpecId>) {
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
        (env, arg, wkey, recursive, uncontrolled)
    }

    /// Measures the next round (`env`, `arg`) of `lambda`'s recursion
    /// that a condition known only at run time continues, called by round
    /// `caller`, before it is analysed, and says whether to watch it
    /// ([`Armed`]): when [`UNROLL_BRANCHED`] rounds in a row each nested
    /// AD deeper than the one before, each passing the next deeper
    /// arguments, the last of them analysed with its changing constants
    /// forgotten. A round that then nests AD deeper than that last one,
    /// its own changing constants forgotten too, is deeper for the shape
    /// of its arguments, not for a counter: a derivative tower of run-time
    /// height. (The first rounds of a loop may nest AD as its counter
    /// says, `(cond ((= k 0) f) ((= k 1) (derivative-R f)) ...)`; the
    /// round that forgets the counter takes every arm, and the next one
    /// nests no deeper.) Left alone, arguments that grow are summarised
    /// after [`GROW`] rounds into a union holding itself, and AD on that
    /// is refused at `MAX_AD_DEPTH`, but only after the tower was
    /// specialised [`GROW`] levels deep: each level of reverse mode
    /// multiplies the specialisations by five (58,000 and 870 MiB by the
    /// seventh).
    pub(super) fn nesting_round(
        &mut self,
        lambda: LambdaId,
        caller: SpecId,
        env: &[AvId],
        arg: AvId,
    ) -> Option<Armed> {
        let dom = &self.ops.dom;
        let depth = env
            .iter()
            .chain([&arg])
            .map(|x| dom.depth(*x))
            .max()
            .unwrap_or(0);
        let (ad, streak) = match self.rounds.get(&lambda) {
            // Only the round that called this one continues its count: a
            // use of the lambda elsewhere starts its own.
            Some(last) if last.spec == caller => {
                let ad = self.ad_depth_since(last.specs_before);
                let deeper = ad > last.ad && depth > last.depth;
                (ad, if deeper { last.streak + 1 } else { 0 })
            }
            _ => (0, 0),
        };
        self.rounds.insert(
            lambda,
            Round {
                spec: caller,
                specs_before: self.specs.len(),
                ad,
                depth,
                streak,
            },
        );
        // The caller forgot its changing constants if `UNROLL_BRANCHED`
        // rounds were under way when it was called; so does this round.
        let calls = self.stack.iter().filter(|(l, ..)| *l == lambda).count() as u32;
        (streak >= UNROLL_BRANCHED && calls > UNROLL_BRANCHED).then_some(Armed {
            lambda,
            ad,
            depth,
            calls,
        })
    }

    /// The error of a round watched by `armed` that specialised code
    /// nesting AD deeper than the round before it.
    pub(super) fn nests_deeper(&self, armed: &Armed) -> Limit {
        let l = &self.ops.prog.lambdas[armed.lambda];
        // Elsewhere (a transform, the standard library) the error takes
        // the position of the user's binding the analysis was under.
        let span = l
            .span
            .filter(|s| s.file.0 != 0 && matches!(l.origin, ir::Origin::Source));
        let Armed {
            depth, calls, ad, ..
        } = armed;
        Limit {
            message: format!(
                "`{}` calls itself with values that grow at each call ({depth} levels deep \
                 after {calls} calls), and what is computed on them nests AD deeper at each \
                 call (more than {ad} levels after {calls} calls): a nesting of AD whose \
                 depth is known only at run time cannot be compiled; make that depth a \
                 constant (`stalingrad run` runs the program as it is)",
                self.lambda_name(armed.lambda)
            ),
            span,
        }
    }

    /// The deepest AD (transformations of transformations ...) of the
    /// code specialised since there were `specs` specialisations.
    fn ad_depth_since(&self, specs: usize) -> u32 {
        self.newest_at_ad_depth
            .iter()
            .rposition(|n| *n > specs)
            .map_or(0, |d| d as u32)
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
