//! `sim check`: run a kernel with the synchronisation checks on — the happens-before race
//! detector, uninitialised reads, PSUM accumulation onto unzeroed banks, and the wait-for graph
//! of a deadlock. Outputs are written only with `--out-dir`. See `docs/races.md`.

use crate::cmd::run;
use crate::exit::{CliError, Outcome};

/// Arguments of `sim check`: those of `sim run`; the race check is always on.
#[derive(clap::Args)]
#[group(skip)]
pub struct Args {
    #[command(flatten)]
    run: run::Args,
}

/// Run `sim check`. Exit 0 when nothing is found (and outputs match their references), 1 on
/// a finding or mismatch, 3 on a fault (a deadlock, with its wait-for graph).
pub fn run(a: Args) -> Result<Outcome, CliError> {
    let mut r = a.run;
    r.check_races = true;
    run::execute(r, false)
}
