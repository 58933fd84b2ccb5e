//! Builders for the unit tests of this crate, written once.

use crate::{Inst, Op, Val};

/// An instruction defining the values numbered `results`.
pub(crate) fn inst(results: &[u32], op: Op) -> Inst {
    Inst {
        results: results.iter().map(|r| Val::from_number(*r)).collect(),
        op,
    }
}
