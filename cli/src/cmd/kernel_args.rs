//! The options `sim run`, `sim check` and `sim profile` share: kernel, data, references and
//! run limits (each command flattens them into its own arguments).

use std::path::PathBuf;

use tpbsim_isa::Gen;
use tpbsim_sim::machine::DEFAULT_MAX_STEPS;

use crate::cmd::run;

/// Kernel, data, references and run limits.
#[derive(clap::Args)]
pub struct KernelArgs {
    /// The kernel NEFF.
    pub kernel: PathBuf,
    /// Input data for a def.json input variable (repeatable).
    #[arg(long = "input", value_name = "NAME=FILE.npy")]
    pub inputs: Vec<String>,
    /// Also write the output `.npy` files into DIR.
    #[arg(long, value_name = "DIR")]
    pub out_dir: Option<PathBuf>,
    /// Reference for one output (repeatable).
    #[arg(long = "ref", value_name = "NAME=FILE.npy", conflicts_with = "ref_dir")]
    pub refs: Vec<String>,
    /// Directory of references `NAME.npy` (and optionally `tolerance.json`)
    /// [default: KERNEL.ref next to the NEFF, when it exists].
    #[arg(long, value_name = "DIR")]
    pub ref_dir: Option<PathBuf>,
    /// Absolute tolerance (overrides tolerance.json).
    #[arg(long)]
    pub atol: Option<f64>,
    /// Relative tolerance (overrides tolerance.json).
    #[arg(long)]
    pub rtol: Option<f64>,
    /// Ulp tolerance (overrides tolerance.json).
    #[arg(long)]
    pub ulp: Option<u64>,
    /// Generation to run on [default: the NEFF's target].
    #[arg(long, value_name = "v2|v3|v4|v5")]
    pub arch: Option<Gen>,
    /// Step budget: bundles issued, plus one step per 64 bytes moved by DMA, before the run
    /// is stopped as a runaway loop.
    #[arg(long, default_value_t = DEFAULT_MAX_STEPS)]
    pub max_steps: u64,
    /// Memory budget of the run (bytes; K, M, G suffixes): variables, on-chip memories,
    /// operands' working memory, the race check and the timeline (docs/robustness.md); the
    /// `--input` arrays, read once and shared by every core, are not charged.
    #[arg(long, value_name = "BYTES", default_value = "3G", value_parser = run::parse_bytes)]
    pub max_memory: u64,
    /// Bytes all DMA transfers of a run may move together (K, M, G suffixes).
    #[arg(long, value_name = "BYTES", default_value = "16G", value_parser = run::parse_bytes)]
    pub max_dma_bytes: u64,
    /// Skip the L2 validation of each bundle before it executes.
    #[arg(long)]
    pub no_validate: bool,
    /// Worker threads for the NeuronCores of a NEFF of several subgraphs (0 = one per
    /// available hardware thread); the result does not depend on it.
    #[arg(long, value_name = "N", default_value_t = 0)]
    pub threads: usize,
    /// NEFF reader options (digest check, archive size limits).
    #[command(flatten)]
    pub read: super::neff::ReadArgs,
}
