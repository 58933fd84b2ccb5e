//! The flow analysis: AD migrated to compile time.
//!
//! Input: a core IR [`ir::Program`]. Output: an [`Analysis`]: the program
//! (with every lambda the AD transformations created during the analysis
//! appended), its specialisations, and for every binding of every
//! specialisation its abstract value and what its code must do ([`Plan`]).
//! Every call in the output has a known target and every AD transformation
//! has already been done; crate `lower` turns this into first-order code.
//!
//! Dependencies: `base`, `ir` and `ad`, not the front end: positions and
//! errors are `base::diag`'s, reals print with `base::number`.

pub mod adops;
pub mod analysis;
pub mod domain;
pub mod lineage;
pub mod print;
pub mod text;

pub use adops::{Ops, PendingMap};
pub use analysis::{analyze, Analysis, BindInfo, Plan, Spec, SpecId};
pub use domain::{Av, AvId, Domain, Kind, Site, SymKind, UnionId, UnionOp};
