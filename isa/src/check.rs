//! The interface between a runner and a bundle checker: the simulator asks a [`BundleCheck`]
//! about each bundle before it first executes, without knowing which checker it is (the L2
//! cascade of `tpbsim-validate` is the one the tools install).

use crate::{Bundle, Engine, Gen};

/// Why a checker refuses a bundle: one message per failed rule, in the checker's order.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{}", .reasons.join("; "))]
pub struct Rejection {
    /// The failed rules, each a message naming the rule (and the field where there is one).
    pub reasons: Vec<String>,
}

/// A check of one bundle of `engine`'s stream on `gen`.
pub trait BundleCheck: Send + Sync + std::fmt::Debug {
    /// `Ok` when the bundle passes (or the checker has no rules for `gen`), else the reasons.
    fn check(&self, gen: Gen, engine: Engine, b: &Bundle) -> Result<(), Rejection>;
}
