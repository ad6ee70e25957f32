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
    /// Treat lint warnings (docs/asm.md, "Lint") as errors: nothing is written.
    #[arg(long)]
    pub deny_warnings: bool,
    /// Engine of the stream, for the lint locations (default: from the output file name).
    #[arg(long)]
    pub engine: Option<tpbsim_isa::Engine>,
}

/// Run `sim asm`.
pub fn run(a: Args) -> Result<Outcome, CliError> {
    let text = crate::cmd::read_text(&a.file, 256 << 20)?;
    if let Some(i) = text.find('\0') {
        let line = text[..i].matches('\n').count() + 1;
        return Err(CliError::Usage(format!(
            "{}:{line}: a NUL byte (byte offset {i}); assembly text holds none",
            a.file.display()
        )));
    }
    let bundles = parse_text(&text, a.arch).map_err(|(line, e)| {
        CliError::Usage(render_error(&a.file.display().to_string(), &text, line, &e))
    })?;
    let engine = a
        .engine
        .or_else(|| tpbsim_isa::Engine::from_file_name(&a.output));
    let findings = tpbsim_validate::lint::lint(
        &[tpbsim_validate::lint::LintStream {
            file: a.file.display().to_string(),
            engine,
            bundles: &bundles,
        }],
        a.arch,
        None,
    );
    if crate::cmd::validate::report_lint(&findings, a.deny_warnings) {
        return Err(CliError::Usage(format!(
            "{}: lint warnings denied (--deny-warnings); nothing written",
            a.file.display()
        )));
    }
    let mut bytes = Vec::with_capacity(bundles.len() * 64);
    for b in &bundles {
        bytes.extend_from_slice(&b.0);
    }
    tpbsim_neff::write_atomic(&a.output, &bytes)
        .map_err(|e| CliError::Io(format!("{}: {e}", a.output.display())))?;
    eprintln!(
        "sim: wrote {} bundles ({} bytes) to {}",
        bundles.len(),
        bytes.len(),
        a.output.display()
    );
    Ok(Outcome::Ok)
}
