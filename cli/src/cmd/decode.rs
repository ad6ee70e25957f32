//! `sim decode`: decoded bundles as JSON Lines (`--json`) or as the text form.

use std::io::{BufWriter, Write};
use tpbsim_isa::text::{bundle_json, disasm_line};

use crate::cmd::disasm::{open_stream, report_undecodable, StreamArgs};
use crate::exit::{CliError, Outcome};

/// Arguments of `sim decode`.
#[derive(clap::Args)]
pub struct Args {
    /// Input stream.
    #[command(flatten)]
    pub input: StreamArgs,
    /// One JSON object per bundle (JSON Lines).
    #[arg(long)]
    pub json: bool,
}

/// Run `sim decode`.
pub fn run(args: Args) -> Result<Outcome, CliError> {
    let a = &args.input;
    let (stream, engine) = open_stream(&a.file, a.engine)?;
    let stdout = std::io::stdout();
    let mut out = BufWriter::new(stdout.lock());
    let io = |e: std::io::Error| CliError::Io(format!("writing the decoded stream: {e}"));
    for (i, b) in stream.bundles().iter().enumerate() {
        if args.json {
            let mut v = bundle_json(i, b, a.arch);
            if let (Some(e), Some(obj)) = (engine, v.as_object_mut()) {
                obj.insert("engine".into(), serde_json::json!(e.short()));
            }
            writeln!(out, "{v}").map_err(io)?;
        } else {
            writeln!(out, "{}", disasm_line(i, b, a.arch, engine)).map_err(io)?;
        }
    }
    out.flush().map_err(io)?;
    Ok(report_undecodable(&a.file, a.arch, &stream))
}
