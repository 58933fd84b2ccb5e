//! The flow analysis: AD migrated to compile time.
//!
//! Input: a core IR [`ir::Program`]. Output: an [`Analysis`], data: the
//! program (with every lambda the AD transformations created during the
//! analysis appended), its specialisations, and for every binding of every
//! specialisation its abstract value and what its code must do ([`Plan`]);
//! with them the shape operations on abstract values ([`Ops`]: the domain
//! and what the operations remember), which crate `lower` continues on
//! symbolic values in a [`Mode`] of its own. Every call in the output has
//! a known target and every AD transformation has already been done.
//!
//! A vector's abstract value is [`Av::Vector`]: the join of its elements
//! and its length (a real, known or not); `build-vector` applies its
//! procedure to an index known only at run time ([`Plan::Build`]).
//! `list->vector` of a list of run-time length is compiled when the list's
//! cells all have one representation ([`Ops::simple_list`]); otherwise the
//! analysis stops with an error saying so (`stalingrad run` runs it).
//!
//! Invariants of the output: every binding of every live specialisation
//! ([`Analysis::is_live`]) has an abstract value and a plan; a union's
//! member list is final and a member's index is its run-time tag; the
//! cases of a [`Plan::Switch`] follow the members of the union it splits.
//! The analysis' values have no leaves ([`Av::Leaf`]): its domain's leaf
//! type is [`NoLeaf`], uninhabited, so it can neither make nor meet one;
//! the domain is generic over a leaf type so that lowering's mode can add
//! its symbolic leaves ([`Ops::into_mode`] re-types the arena, every id kept).
//!
//! Dependencies: `base`, `ir` and `ad`, not the front end: positions and
//! errors are `base::diag`'s, reals print with `base::number`.

pub mod adops;
pub mod analysis;
pub mod domain;
pub mod lineage;
pub mod print;
pub mod text;

pub use adops::{Analysing, Mode, Ops, UnionMap};
pub use analysis::{analyze, Analysis, BindInfo, Plan, Spec, SpecId, Switch};
pub use domain::{Av, AvId, Domain, Kind, Leaf, LeafKind, NoLeaf, Site, UnionId, UnionOp};
