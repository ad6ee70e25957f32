//! `sim asm`: assemble the text form back into an engine stream.

use std::path::PathBuf;

use tpbsim_isa::text::{parse_text, render_error};
use tpbsim_isa::Gen;

use crate::exit::{CliError, Outcome};

/// Arguments of `sim asm`.
#[derive(clap::Args)]
pub struct Args {
    /// The text form (`docs/asm.md`; either syntax `sim disasm` writes).
    pub file: PathBuf,
    /// Output stream file (written through a temporary file and a rename).
    #[arg(short = 'o', long = "output")]
    pub output: PathBuf,
    /// Generation to assemble for.
    #[arg(long)]
    pub arch: Gen,
}

/// Run `sim asm`.
pub fn run(a: Args) -> Result<Outcome, CliError> {
    let text = std::fs::read_to_string(&a.file)
        .map_err(|e| CliError::Io(format!("{}: {e}", a.file.display())))?;
    let bundles = parse_text(&text, a.arch).map_err(|(line, e)| {
        CliError::Usage(render_error(&a.file.display().to_string(), &text, line, &e))
    })?;
    let mut bytes = Vec::with_capacity(bundles.len() * 64);
    for b in &bundles {
        bytes.extend_from_slice(&b.0);
    }
    tpbsim_isa::neff::write_atomic(&a.output, &bytes)
        .map_err(|e| CliError::Io(format!("{}: {e}", a.output.display())))?;
    eprintln!(
        "sim: wrote {} bundles ({} bytes) to {}",
        bundles.len(),
        bytes.len(),
        a.output.display()
    );
    Ok(Outcome::Ok)
}
