//! `sim info`: the generations and engines tpbsim knows.

use crate::exit::{CliError, Outcome};
use tpbsim_isa::{Engine, Gen};

/// Arguments of `sim info`.
#[derive(clap::Args)]
pub struct Args {}

/// Run `sim info`.
pub fn run(_a: Args) -> Result<Outcome, CliError> {
    println!("generations:");
    for g in Gen::ALL {
        println!(
            "  {:<3} {:<9} arch level {}",
            g.short(),
            g.codename(),
            g.arch_level()
        );
    }
    println!("engines:");
    for e in Engine::ALL {
        println!(
            "  {:<4} wire id {} stream {}",
            e.short(),
            e.wire_id(),
            e.stream_file_name()
        );
    }
    Ok(Outcome::Ok)
}
