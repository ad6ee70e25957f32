//! `sim disasm`: the text form of an engine stream, one line per bundle.

use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};

use tpbsim_isa::stream::{EngineStream, StreamError};
use tpbsim_isa::text::{disasm_line_as, Syntax};
use tpbsim_isa::{decode, Engine, Gen};

use crate::exit::{CliError, Outcome};

/// The stream arguments shared by `sim disasm` and `sim decode`.
#[derive(clap::Args)]
pub struct StreamArgs {
    /// The engine stream (`PE.bin`, `Activation.bin`, `Pool.bin`, `DVE.bin`, `SP.bin`, or any
    /// file whose length is a multiple of 64).
    pub file: PathBuf,
    /// Generation to decode for (`v2`..`v5`, `sunda`, `cayman`, `mariana`, `maverick`).
    #[arg(long)]
    pub arch: Gen,
    /// Engine that executes the stream (default: from the file name). Bundles whose opcode
    /// the catalog does not place on this engine get a comment.
    #[arg(long)]
    pub engine: Option<Engine>,
}

/// Arguments of `sim disasm`.
#[derive(clap::Args)]
pub struct Args {
    /// Input stream.
    #[command(flatten)]
    pub input: StreamArgs,
    /// Text dialect: `tpbsim` (name=value fields) or `neuron` (the toolchain's `.asm` /
    /// profile form: `$S[i]>=v`, `$S[i]++@complete`, `dtype@addr[steps][counts]`, `;`).
    /// `sim asm` reads both (docs/asm.md).
    #[arg(long, default_value = "tpbsim", value_name = "tpbsim|neuron")]
    pub syntax: Syntax,
}

/// Open a stream; the engine is `engine`, else the file name's, else unknown (`None`).
pub(crate) fn open_stream(
    path: &Path,
    engine: Option<Engine>,
) -> Result<(EngineStream, Option<Engine>), CliError> {
    match EngineStream::open(path, engine) {
        Ok(s) => {
            let e = s.engine();
            Ok((s, Some(e)))
        }
        Err(StreamError::UnknownEngine { .. }) => {
            // The engine only annotates the output: read the bundles without one.
            let s = EngineStream::open(path, Some(Engine::Sp))
                .map_err(|e| CliError::Io(e.to_string()))?;
            Ok((s, None))
        }
        Err(e) => Err(CliError::Io(e.to_string())),
    }
}

/// Count of bundles that do not decode, reported on stderr.
pub(crate) fn report_undecodable(path: &Path, gen: Gen, stream: &EngineStream) -> Outcome {
    let bad: Vec<usize> = stream
        .bundles()
        .iter()
        .enumerate()
        .filter(|(_, b)| decode(b, gen).is_err())
        .map(|(i, _)| i)
        .collect();
    match bad.first() {
        None => Outcome::Ok,
        Some(&first) => {
            eprintln!(
                "sim: {}: {} of {} bundles do not decode on {gen} (first: bundle {first}, offset {:#x})",
                path.display(),
                bad.len(),
                stream.len(),
                first * 64
            );
            Outcome::Invalid
        }
    }
}

/// Run `sim disasm`.
pub fn run(args: Args) -> Result<Outcome, CliError> {
    let syntax = args.syntax;
    let a = args.input;
    let (stream, engine) = open_stream(&a.file, a.engine)?;
    let stdout = std::io::stdout();
    let mut out = BufWriter::new(stdout.lock());
    let io = |e: std::io::Error| CliError::Io(format!("writing the disassembly: {e}"));
    writeln!(
        out,
        "; {} -- {} bundles, arch {} ({}), engine {}",
        a.file.display(),
        stream.len(),
        a.arch,
        a.arch.codename(),
        engine.map_or("unknown", |e| e.short())
    )
    .map_err(io)?;
    for (i, b) in stream.bundles().iter().enumerate() {
        writeln!(out, "{}", disasm_line_as(i, b, a.arch, engine, syntax)).map_err(io)?;
    }
    out.flush().map_err(io)?;
    Ok(report_undecodable(&a.file, a.arch, &stream))
}
