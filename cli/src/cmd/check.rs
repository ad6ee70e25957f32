//! `sim check`: run a kernel with the synchronisation checks on — the happens-before race
//! detector, uninitialised reads, PSUM accumulation onto unzeroed banks, and the wait-for graph
//! of a deadlock. Outputs are written only with `--out-dir`. See `docs/races.md`.

use crate::cmd::kernel_args::{KernelArgs, ScheduleArgs};
use crate::cmd::run::{self, MpiPlacement};
use crate::exit::{CliError, Outcome};

/// Arguments of `sim check` (the race check is always on).
#[derive(clap::Args)]
pub struct Args {
    #[command(flatten)]
    kernel: KernelArgs,
    /// Print the summary, comparisons and findings as one JSON object.
    #[arg(long)]
    json: bool,
    /// Interleavings to run.
    #[command(flatten)]
    sched: ScheduleArgs,
    /// Check the ranks over the processes of an MPI job (`mpirun -np P sim check --mpi ...`;
    /// a `sim` built with the `mpi` feature): each process checks its share of the ranks,
    /// process 0 prints every rank's findings (docs/mpi.md).
    #[arg(long)]
    mpi: bool,
    /// How `--mpi` spreads the ranks over the processes (as `sim run --mpi-placement`).
    #[arg(long, value_enum, default_value_t = MpiPlacement::Blocks, requires = "mpi")]
    mpi_placement: MpiPlacement,
}

/// Run `sim check`. Exit 0 when nothing is found (and outputs match their references), 1 on
/// a finding or mismatch, 3 on a fault (a deadlock, with its wait-for graph).
pub fn run(a: Args) -> Result<Outcome, CliError> {
    let mut r = run::Args::with_common(a.kernel, a.json);
    r.check_races = true;
    r.sched = a.sched;
    r.mpi = a.mpi;
    r.mpi_placement = a.mpi_placement;
    run::execute(r, false)
}
