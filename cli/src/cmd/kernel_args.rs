//! The options `sim run`, `sim check` and `sim profile` share: kernel, data, references and
//! run limits ([`KernelArgs`]), and the interleavings of `sim run` and `sim check`
//! ([`ScheduleArgs`]). Each command flattens them into its own arguments.

use std::path::PathBuf;

use tpbsim_isa::Gen;
use tpbsim_sim::machine::DEFAULT_MAX_STEPS;

use crate::cmd::run;

/// Kernel, data, references and run limits.
#[derive(clap::Args, Clone)]
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
    /// Step budget: bundles issued, plus one step per 64 bytes moved by DMA or spanned by an
    /// engine operand, before the run is stopped as a runaway loop.
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
    /// Ranks to run (a world; docs/collectives.md) [default: the world the NEFF's collectives
    /// span, 1 without collectives]. Each rank is a copy of the program with its own DRAM and
    /// cores; `--input` / `--ref` files may name `{rank}` or hold one array per rank along a
    /// leading axis; outputs go to `OUT/rank{r}/`, references come from `REFDIR/rank{r}/`.
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..=4096))]
    pub ranks: Option<u32>,
    /// The order the reductions of collectives fold in: `replica` (fp32, ranks 0..N-1: the
    /// compiler's BIR simulator) or `ring` (fp32, ring reduce-scatter order).
    #[arg(long, value_enum, default_value_t = CollectiveOrder::Replica)]
    pub collective_order: CollectiveOrder,
    /// NEFF reader options (digest check, archive size limits).
    #[command(flatten)]
    pub read: super::neff::ReadArgs,
    /// Pass over an `--input` or `--ref` that names a variable the kernel does not have, and
    /// run without references when the `--ref-dir` does not exist (set for each kernel of a
    /// `sim run` of several, whose options serve them all: docs/mpi.md, "Corpus runs").
    #[arg(skip)]
    pub pass_over_absent: bool,
}

/// The fold order of collective reductions (`--collective-order`).
#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum CollectiveOrder {
    /// fp32, replica order 0..N-1 (the compiler's BIR simulator).
    Replica,
    /// fp32, ring reduce-scatter order.
    Ring,
}

impl From<CollectiveOrder> for tpbsim_sim::machine::collective::Order {
    fn from(o: CollectiveOrder) -> Self {
        match o {
            CollectiveOrder::Replica => Self::Replica,
            CollectiveOrder::Ring => Self::Ring,
        }
    }
}

/// The interleavings a run explores (`sim run`, `sim check`).
#[derive(clap::Args, Clone, Copy, Debug, PartialEq, Eq)]
pub struct ScheduleArgs {
    /// Run under N legal interleavings (the first round-robin, the others seeded) and report
    /// every output (and, with the race check, every finding) that differs between them.
    #[arg(long, value_name = "N", default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..=10000))]
    pub schedules: u32,
    /// Seed of the first seeded interleaving (schedule i uses SEED + i - 1).
    #[arg(long, value_name = "S", default_value_t = 1)]
    pub seed: u64,
}

impl Default for ScheduleArgs {
    /// One round-robin schedule, seed 1 (the options' defaults).
    fn default() -> ScheduleArgs {
        ScheduleArgs {
            schedules: 1,
            seed: 1,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    #[derive(Parser)]
    struct Cli {
        #[command(flatten)]
        s: ScheduleArgs,
    }

    fn parse(args: &[&str]) -> Result<ScheduleArgs, clap::Error> {
        Cli::try_parse_from(std::iter::once("t").chain(args.iter().copied())).map(|c| c.s)
    }

    #[test]
    fn schedule_defaults_match_the_default_value_and_the_range_is_enforced() {
        assert_eq!(parse(&[]).unwrap(), ScheduleArgs::default());
        assert_eq!(
            parse(&["--schedules", "16", "--seed", "7"]).unwrap(),
            ScheduleArgs {
                schedules: 16,
                seed: 7
            }
        );
        assert!(parse(&["--schedules", "0"]).is_err());
        assert!(parse(&["--schedules", "10001"]).is_err());
    }
}
