//! Simulation faults: every way a run can stop before its streams finish.

use std::fmt;

use tpbsim_isa::Engine;

use super::budget::Exceeded;
use super::pattern::AccessError;
use super::waitfor::{CycleEdge, Producer, SyncRef};

/// Where in the program something happened: engine, bundle index, opcode.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
pub struct Site {
    /// Engine whose stream holds the bundle.
    pub engine: Engine,
    /// Bundle index in that stream.
    pub index: usize,
    /// Opcode byte of the bundle.
    pub opcode: u8,
}

impl fmt::Display for Site {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} bundle #{} (opcode 0x{:02x}, byte offset 0x{:x})",
            self.engine,
            self.index,
            self.opcode,
            self.index * 64
        )
    }
}

/// One engine's state in a deadlock report.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct BlockedEngine {
    /// Where the engine is stopped.
    pub site: Site,
    /// What it waits for, with the current value.
    pub waiting_for: String,
    /// The semaphore or event it waits on.
    pub on: Option<SyncRef>,
    /// The unfinished engines' bundles that could update it (empty: a missing producer).
    pub producers: Vec<Producer>,
}

/// Every unfinished engine is blocked.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct DeadlockReport {
    /// The blocked engines in wire order.
    pub blocked: Vec<BlockedEngine>,
    /// Bundles executed before the deadlock.
    pub steps: u64,
    /// A circular wait among the blocked engines, when there is one: each engine waits on a
    /// semaphore or event that only the next engine (the first again after the last) updates.
    pub cycle: Option<Vec<CycleEdge>>,
}

impl fmt::Display for DeadlockReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "deadlock after {} bundles: every unfinished engine is blocked",
            self.steps
        )?;
        for b in &self.blocked {
            write!(f, "\n  {} waits for {}", b.site, b.waiting_for)?;
            if b.on.is_some() {
                if b.producers.is_empty() {
                    write!(f, "; no producer left")?;
                } else {
                    let p: Vec<String> = b.producers.iter().map(|p| p.to_string()).collect();
                    write!(f, "; could be updated by {}", p.join(", "))?;
                }
            }
        }
        if let Some(c) = &self.cycle {
            write!(f, "\nwait-for cycle: ")?;
            for e in c {
                write!(f, "{} → {} → ", e.engine, e.on)?;
            }
            if let Some(first) = c.first() {
                write!(f, "{}", first.engine)?;
            }
        }
        for b in &self.blocked {
            if let (Some(on), true) = (b.on, b.producers.is_empty()) {
                write!(
                    f,
                    "\nmissing producer: {} bundle #{} waits on {on}, which no unfinished engine or DMA queue updates",
                    b.site.engine, b.site.index
                )?;
            }
        }
        Ok(())
    }
}

/// Why a run stopped early.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
pub enum Fault {
    /// Every unfinished engine waits on a condition no other engine can satisfy.
    #[error("{0}")]
    Deadlock(DeadlockReport),
    /// An operand's access pattern leaves its memory.
    #[error("{site}: operand `{operand}` out of bounds: {err}")]
    OutOfBounds {
        /// Where.
        site: Site,
        /// Operand name (`src`, `dst`, `dma.from`, ...).
        operand: String,
        /// The bounds failure.
        err: AccessError,
    },
    /// The bundle fails decoding or the L2 validator.
    #[error("{site}: invalid bundle: {reason}")]
    InvalidBundle {
        /// Where.
        site: Site,
        /// Decoder or validator message(s).
        reason: String,
    },
    /// No value model exists for this opcode on this engine.
    #[error("{site}: {name} is not simulated on the {engine} engine")]
    NotSimulated {
        /// Where.
        site: Site,
        /// Opcode name.
        name: String,
        /// Engine.
        engine: Engine,
    },
    /// The step budget ran out (a runaway loop): one step per bundle issued and per
    /// [`super::budget::DMA_BYTES_PER_STEP`] bytes moved by DMA or spanned by an engine operand.
    #[error("step budget of {budget} steps exhausted (runaway loop?) after {bundles} bundles and {dma_steps} steps of work (one per 64 bytes a DMA moves or an engine operand spans); engines at: {positions}")]
    StepBudget {
        /// The budget.
        budget: u64,
        /// Bundles issued.
        bundles: u64,
        /// Steps charged for DMA bytes.
        dma_steps: u64,
        /// Where each unfinished engine was.
        positions: String,
    },
    /// The caller asked the run to stop ([`super::Machine::set_stop`]): it stopped between
    /// two bundles, and what it computed so far is not a result.
    #[error("the run was interrupted after {bundles} bundles")]
    Interrupted {
        /// Bundles issued.
        bundles: u64,
    },
    /// A memory or DMA budget would be exceeded: the charge was refused before anything was
    /// allocated or moved.
    #[error("{at}: {exceeded}")]
    Budget {
        /// Where (a bundle, or the set-up of a variable).
        at: String,
        /// The refused charge.
        exceeded: Exceeded,
    },
    /// Any other execution error at a bundle (bad branch target, illegal engine for an
    /// operand, malformed descriptor, ...).
    #[error("{site}: {message}")]
    Exec {
        /// Where.
        site: Site,
        /// What went wrong.
        message: String,
    },
}

impl Fault {
    /// A short kind name for reports and JSON (`deadlock`, `out-of-bounds`, ...).
    pub fn kind(&self) -> &'static str {
        match self {
            Fault::Deadlock(_) => "deadlock",
            Fault::OutOfBounds { .. } => "out-of-bounds",
            Fault::InvalidBundle { .. } => "invalid-bundle",
            Fault::NotSimulated { .. } => "not-simulated",
            Fault::StepBudget { .. } => "step-budget",
            Fault::Interrupted { .. } => "interrupted",
            Fault::Budget { .. } => "budget",
            Fault::Exec { .. } => "execution",
        }
    }

    /// An execution error at `site`.
    pub fn exec(site: Site, message: impl Into<String>) -> Fault {
        Fault::Exec {
            site,
            message: message.into(),
        }
    }

    /// A refused budget charge at `site`.
    pub fn budget(site: Site, exceeded: Exceeded) -> Fault {
        Fault::Budget {
            at: site.to_string(),
            exceeded,
        }
    }

    /// An out-of-bounds fault for `operand` at `site`.
    pub fn oob(site: Site, operand: impl Into<String>, err: AccessError) -> Fault {
        Fault::OutOfBounds {
            site,
            operand: operand.into(),
            err,
        }
    }
}
