//! Lowering: the specialised program of the flow analysis to the
//! first-order IR of crate `fir`.
//!
//! Input: a [`flow::Analysis`] after its fixpoint, read as data: the
//! program, its specialisations, and the abstract value and [`flow::Plan`]
//! of every binding. Output: a [`fir::Module`] that satisfies
//! `fir::verify` (the driver checks it after lowering in every build,
//! then runs the FIR passes): one function per specialisation (a dead one is
//! an error term; none for one whose calls fold to its result, `folded`),
//! `vlad_main`, and the functions made per union.
//!
//! Invariants: every value has the representation its abstract value calls
//! for ([`layout`]): constants no scalars, an unknown real one `F64`, an
//! unknown boolean one `Bool`, a union one `Ptr` to a cell, a vector
//! (unless the analysis knows it all) one `Ptr` to a vector object whose
//! elements have the scalar layout of its element value, pointers first
//! (declared in `fir::Module::vectors`), pairs and closures their parts'
//! scalars. A member's cell tag is one number per
//! member of a representation class across the module (`sharing.rs`).
//! Lowering decides nothing the analysis decided: it follows its plans and
//! splits, and runs flow's shape operations on *symbolic* values
//! (`symbolic.rs`) in a mode of its own, which also owns everything about
//! symbolic values: their leaf type (`Sym`, flow's domain being generic
//! over it; the analysis' values have none), how an error message marks
//! them, and the maps of unions they meet, which become calls.
//!
//! Modules, one concept each: `lowerer` (the state, the layout of values
//! and the bindings), `symbolic` (symbolic values: making them, lowering's
//! mode of the shape operations and the calls of maps), `calls`
//! (applications and run-time checks),
//! `prims` (primitives on symbolic values), `errors` (error terms),
//! `folded` (the specialisations whose calls are their known result),
//! `switch` (union switches), `union_fns` (the functions of the maps of
//! unions), `sharing` (what keeps those maps from walking what they need
//! not), `identity_maps` (tag maps that only copy cells become the
//! identity), `vectors` (vectors: literals and the functions over their
//! elements: zero, plus, conversion, printing), `vector_prims` (the
//! vector primitives and `build-vector`) and `print` (printing).
//!
//! Dependencies: `base`, `ir`, `flow` and `fir`, not the front end:
//! positions and errors are `base::diag`'s, reals print with `base::number`.

mod calls;
mod errors;
mod folded;
mod identity_maps;
mod list_to_vector;
mod lowerer;
mod prims;
mod print;
mod sharing;
mod sites;
mod switch;
mod symbolic;
mod union_fns;
mod vector_prims;
mod vectors;

pub use lowerer::layout;

use base::diag::SourceMap;
use fir::{Block, FuncId, Term};
use flow::{Analysis, SpecId};
use ir::EntityRef;
use lowerer::{layout_of, Lowerer};
use rustc_hash::FxHashMap as HashMap;
use symbolic::Symbolic;

/// Lowers an analysed program: one function per specialisation (a
/// dead one, never called, is an error term; none for one whose calls
/// fold, `folded.rs`), then `vlad_main`, then the
/// maps that only copy cells become the identity (`identity_maps.rs`).
pub fn to_fir(analysis: Analysis, map: &SourceMap) -> fir::Module {
    let live: Vec<bool> = (0..analysis.specs.len())
        .map(|i| analysis.is_live(SpecId::new(i)))
        .collect();
    // One function per specialisation but those whose calls fold.
    let mut count = 0;
    let func_of = folded::folded(&analysis)
        .into_iter()
        .map(|folds| {
            count += usize::from(!folds);
            (!folds).then(|| FuncId::new(count - 1))
        })
        .collect();
    let Analysis {
        ops, specs, main, ..
    } = analysis;
    let ops = ops.into_mode(Symbolic::default());
    let operator_sites = ir::operators::OperatorSites::new(&ops.prog, &ops.prog.main);
    let mut lw = Lowerer {
        ops,
        specs,
        func_of,
        module: fir::Module::default(),
        strings: HashMap::default(),
        printers: HashMap::default(),
        union_fns: HashMap::default(),
        vector_fns: HashMap::default(),
        sharing: sharing::Sharing::default(),
        map,
        lowering: None,
        code_of: None,
        tail_sites: Vec::new(),
        pattern_sites: Default::default(),
        operator_sites,
        captures: Vec::new(),
        error_printers: HashMap::default(),
    };
    for (i, s) in lw.specs.iter().enumerate() {
        if lw.func_of[i].is_none() {
            continue;
        }
        let name = format!(
            "{}_{}",
            lw.ops.prog.lambdas[s.lambda]
                .name
                .as_deref()
                .unwrap_or("lambda")
                .replace(|c: char| !c.is_ascii_alphanumeric(), "_"),
            i
        );
        let mut params = Vec::new();
        for e in &s.env {
            layout(&lw.ops.dom, *e, &mut params);
        }
        layout(&lw.ops.dom, s.arg, &mut params);
        let returns = layout_of(&lw.ops.dom, s.result);
        lw.module.funcs.push(fir::Func {
            name,
            params,
            returns,
            types: Vec::new(),
            body: Block {
                insts: vec![],
                term: Term::Return(vec![]),
            },
        });
    }
    for (i, live) in live.into_iter().enumerate() {
        let Some(f) = lw.func_of[i] else { continue };
        if live {
            let body = lw.lower_spec(SpecId::new(i), f);
            lw.module.funcs[f.index()] = body;
        } else {
            // Never called: its analysis is stale.
            let msg = lw.string("error: internal error: a dead specialisation was called");
            let f = &mut lw.module.funcs[f.index()];
            f.types = f.params.clone();
            f.body.term = Term::Error(msg);
        }
    }
    let m = lw.lower_main(&main);
    lw.module.main = Some(FuncId::new(lw.module.funcs.len()));
    lw.module.funcs.push(m);
    lw.place_tail_calls();
    lw.identity_maps();
    lw.expand_captures();
    lw.module
}
