//! The values an error message prints (`Op::Capture` stretches), for the
//! passes that treat such a read apart from the code that goes on: the
//! arm ends in the error, so it cannot see what a later instruction
//! changes, but it shows the value as it was.

use crate::{Block, ErrPart, Op, StrId, Term, Val};

impl Block {
    /// Calls `f` on each value that this block's `Capture` stretches pass
    /// to the functions printing them (not those of the blocks inside).
    pub fn for_each_printed(&self, f: &mut dyn FnMut(Val)) {
        let mut capturing = false;
        for i in &self.insts {
            match &i.op {
                Op::Capture(start) => capturing = *start,
                Op::Call(_, args) if capturing => args.iter().for_each(|a| f(*a)),
                _ => {}
            }
        }
    }

    /// In a block that ends in an error message, drops each `Capture`
    /// stretch that prints a value for which `gone` holds, the message
    /// showing string `placeholder` in its place: for a pass after which
    /// the value no longer holds what the message would have shown.
    pub fn unprint(&mut self, gone: &dyn Fn(Val) -> bool, placeholder: StrId) {
        let Term::ErrorWith(parts) = &mut self.term else {
            return;
        };
        // Per stretch, in order: whether it goes.
        let mut dropped = Vec::new();
        let mut start = None;
        let mut keep = vec![true; self.insts.len()];
        for (k, i) in self.insts.iter().enumerate() {
            match &i.op {
                Op::Capture(true) => start = Some(k),
                Op::Capture(false) => {
                    let Some(s) = start.take() else { continue };
                    let prints = self.insts[s..k].iter().any(|i| match &i.op {
                        Op::Call(_, args) => args.iter().any(|a| gone(*a)),
                        _ => false,
                    });
                    if prints {
                        keep[s..=k].iter_mut().for_each(|x| *x = false);
                    }
                    dropped.push(prints);
                }
                _ => {}
            }
        }
        if !dropped.contains(&true) {
            return;
        }
        let mut next = 0;
        for p in parts.iter_mut() {
            if let ErrPart::Captured(n) = *p {
                *p = if dropped.get(n as usize).copied().unwrap_or(false) {
                    ErrPart::Str(placeholder)
                } else {
                    next += 1;
                    ErrPart::Captured(next - 1)
                };
            }
        }
        let mut k = 0;
        self.insts.retain(|_| {
            k += 1;
            keep[k - 1]
        });
    }
}
