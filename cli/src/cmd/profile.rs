//! `sim profile`: run a kernel on the timeline cost model (`docs/trace.md`) and print each
//! engine's and DMA queue's busy, wait and idle time and the critical path. Outputs are written
//! only with `--out-dir`; `--trace` also writes the Chrome/Perfetto trace.

use crate::cmd::run;
use crate::exit::{CliError, Outcome};

/// Arguments of `sim profile`: those of `sim run`.
#[derive(clap::Args)]
#[group(skip)]
pub struct Args {
    #[command(flatten)]
    run: run::Args,
}

/// Run `sim profile`.
pub fn run(a: Args) -> Result<Outcome, CliError> {
    let mut r = a.run;
    r.profile = true;
    run::execute(r, false)
}
