//! The machine: per-generation state of one NeuronCore (DRAM variables, SBUF, PSUM, registers,
//! semaphores and events), bounds-checked access patterns, the five engine queues and their
//! deterministic scheduler, and the comparison of outputs with references.
//!
//! The execution model is documented in `docs/machine.md`.

pub mod budget;
pub mod cluster;
pub mod collective;
pub mod compare;
pub mod control;
pub mod core;
pub mod dispatch;
pub mod dma;
pub mod fault;
pub mod geometry;
pub mod kernel;
pub mod load;
pub mod memory;
pub mod ops;
pub mod pack;
pub mod pattern;
pub(crate) mod plan;
pub mod program;
pub mod pseudo;
pub mod race;
pub mod remote;
pub mod sched;
pub mod skeleton;
pub mod sync;
pub mod timeline;
pub mod waitfor;

pub use self::core::{Machine, RunOptions, RunStats, DEFAULT_MAX_STEPS};
pub use budget::{Budget, Exceeded, Limits, DEFAULT_MAX_DMA_BYTES, DEFAULT_MAX_MEMORY};
pub use cluster::{Cluster, ClusterStats, CoreFault, SharedBytes};
pub use fault::{Fault, Site};
pub use geometry::{Geometry, Space};
pub use kernel::{DmaBlockSpec, DmaEntrySpec, DmaQueue, Kernel, VarSpec};
pub use memory::{Dram, DramVar, OnChip, VarKind};
pub use pattern::{AccessError, Dim, Resolved, TensorPattern};
pub use program::Program;
pub use sched::{Flow, SchedStats, Streams};
pub use sync::{Events, SyncState};

#[cfg(test)]
mod timeline_tests;
