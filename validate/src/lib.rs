//! Legality checks for NeuronCore programs: the L2 wire validator over encoded bundles, the
//! BIR model with its lifter, and the L1 verifier over BIR. Both layers report through one
//! diagnostics model ([`diag`]).

pub mod bir;
pub mod diag;
pub mod fuzz;
pub mod l1;
pub mod l2;
pub mod lift;
pub mod lint;
pub mod registry;
#[cfg(feature = "proptest")]
pub mod strategies;
pub mod verify;

pub use diag::{Diagnostic, Layer, Location, Mode, Severity};
