//! `sim lift`: engine streams → BIR JSON.
//!
//! A `.bin` stream becomes a module with one function (named after the engine); a `.neff`
//! becomes one module with a function per engine stream of every subgraph (`pe`, `act`, ...,
//! prefixed by the subgraph directory when there is one: `sg00.pe`). The module is written as
//! BIR JSON through a temporary file and a rename (stdout without `-o`). Bundles the lifter
//! cannot lift are kept as `Generic` instructions and summarised on stderr. The memory the
//! lift takes per bundle is charged against `--max-memory` before anything is lifted
//! ([`charge_memory`]). Exit 0 when the module was written, 2 on usage or I/O errors and
//! when the input needs more than the memory budget.

use std::path::{Path, PathBuf};

use tpbsim_isa::stream::{EngineStream, StreamError};
use tpbsim_isa::{Engine, Gen};
use tpbsim_neff::{self as neff, Neff, ReadOptions};
use tpbsim_validate::bir;
use tpbsim_validate::lift::{self, Lifted, StreamInput};

use crate::exit::{CliError, Outcome};

/// Arguments of `sim lift`.
#[derive(clap::Args)]
pub struct Args {
    /// An engine stream (`.bin`) or a NEFF (`.neff`).
    pub file: PathBuf,
    /// Generation, engine, NEFF reader options.
    #[command(flatten)]
    pub stream: crate::cmd::stream_args::StreamArgs,
    /// Output BIR JSON file (default: stdout).
    #[arg(short = 'o', long = "output", value_name = "OUT.bir.json")]
    pub output: Option<PathBuf>,
    /// Memory budget (bytes; K, M, G suffixes): the lift is refused before it starts when
    /// its bundles need more ([`LIFT_BYTES_PER_BUNDLE`] a bundle; docs/robustness.md).
    #[arg(long, value_name = "BYTES", default_value = "3G", value_parser = crate::cmd::run::parse_bytes)]
    pub max_memory: u64,
}

/// Bytes of memory charged per bundle lifted by `sim lift`: the bundle read, its BIR
/// instruction (operands, attributes, origin) and its share of the BIR JSON text, which is
/// written one instruction value at a time. Measured peak of `sim lift` over streams of
/// valid ACTIVATE, TensorTensor and MATMUL bundles and of random bytes (2.4 to 3.9 KB a
/// bundle), with room above the largest.
pub const LIFT_BYTES_PER_BUNDLE: u64 = 5 << 10;

/// Refuse a command on `file` whose structures need `bytes` (what `what` says) when that is more than
/// `max_memory`, before any of that memory is taken: a named error (exit 2) that says how much
/// is needed and which flag raises the limit; nothing is written.
pub(crate) fn charge_memory(
    file: &Path,
    what: impl FnOnce() -> String,
    bytes: u64,
    max_memory: u64,
) -> Result<(), CliError> {
    use tpbsim_sim::machine::{Budget, Limits};
    let mut budget = Budget::new(Limits {
        max_memory,
        ..Limits::default()
    });
    budget
        .charge_memory(what, bytes)
        .map_err(|e| CliError::Usage(format!("{}: {e}", file.display())))
}

/// One stream read from an input file.
pub(crate) struct LoadedStream {
    /// Name for diagnostics (`PE.bin`, `model.neff:sg00/pe_instr`).
    pub file: String,
    /// Function name in the lifted module.
    pub function: String,
    /// The bundles.
    pub stream: EngineStream,
}

/// Every stream of an input and the generation to lift for.
pub(crate) struct Loaded {
    /// Target generation.
    pub gen: Gen,
    /// Streams in order (a NEFF: subgraphs in order, engines PE, ACT, POOL, DVE, SP).
    pub streams: Vec<LoadedStream>,
}

fn stream_error(e: StreamError) -> CliError {
    match e {
        StreamError::Io { .. } => CliError::Io(e.to_string()),
        _ => CliError::Usage(format!(
            "{e}; pass --engine pe|act|pool|dve|sp if the name does not tell"
        )),
    }
}

/// Open a `.bin` or `.neff` input (a NEFF read with `read`).
pub(crate) fn load(
    path: &Path,
    arch: Option<Gen>,
    engine: Option<Engine>,
    read: &ReadOptions,
) -> Result<Loaded, CliError> {
    let name = path.display().to_string();
    let ext = path
        .extension()
        .and_then(|e| e.to_str())
        .map(str::to_ascii_lowercase);
    match ext.as_deref() {
        Some("bin") => {
            let gen = arch.ok_or_else(|| {
                CliError::Usage(format!("{name}: --arch is required for a .bin stream"))
            })?;
            let stream = EngineStream::open(path, engine).map_err(stream_error)?;
            let function = stream.engine().short().to_string();
            Ok(Loaded {
                gen,
                streams: vec![LoadedStream {
                    file: name,
                    function,
                    stream,
                }],
            })
        }
        Some("neff") => {
            if engine.is_some() {
                return Err(CliError::Usage(
                    "--engine applies to .bin streams; a NEFF names its streams".into(),
                ));
            }
            let n = Neff::read(path, read)
                .map_err(|e| CliError::Io(crate::cmd::neff::error_text(path, &e)))?;
            let gen = crate::cmd::neff::generation(&n, arch, &name)?;
            let sgs = crate::cmd::neff::checked_subgraphs(&n, &name)?;
            let mut streams = Vec::new();
            for sg in sgs {
                for (engine, sm) in sg.streams {
                    let function = if sg.dir.is_empty() {
                        engine.short().to_string()
                    } else {
                        format!("{}.{}", sg.dir, engine.short())
                    };
                    streams.push(LoadedStream {
                        file: format!("{name}:{}", sm.member),
                        function,
                        stream: sm.stream,
                    });
                }
            }
            Ok(Loaded { gen, streams })
        }
        _ => Err(CliError::Usage(format!(
            "{name}: expected a .bin engine stream or a .neff"
        ))),
    }
}

/// The loaded streams as lifter inputs.
pub(crate) fn stream_inputs(l: &Loaded) -> Vec<StreamInput<'_>> {
    l.streams
        .iter()
        .map(|s| StreamInput {
            function: s.function.clone(),
            file: Some(s.file.clone()),
            engine: s.stream.engine(),
            bundles: s.stream.bundles(),
        })
        .collect()
}

/// The module name of an input: its file name.
pub(crate) fn module_name(path: &Path) -> Option<String> {
    path.file_name()
        .and_then(|n| n.to_str())
        .map(str::to_string)
}

/// Lift every loaded stream into one module named after the input file.
pub(crate) fn lift_loaded(path: &Path, l: &Loaded) -> Lifted {
    lift::lift_streams(&stream_inputs(l), l.gen, module_name(path))
}

/// Run `sim lift`.
pub fn run(a: Args) -> Result<Outcome, CliError> {
    let loaded = load(
        &a.file,
        a.stream.gen()?,
        a.stream.engine,
        &a.stream.read.options(),
    )?;
    let bundles: usize = loaded.streams.iter().map(|s| s.stream.len()).sum();
    charge_memory(
        &a.file,
        || format!("lifting {bundles} bundle(s) ({LIFT_BYTES_PER_BUNDLE} bytes a bundle)"),
        (bundles as u64).saturating_mul(LIFT_BYTES_PER_BUNDLE),
        a.max_memory,
    )?;
    let lifted = lift_loaded(&a.file, &loaded);
    for d in &lifted.diagnostics {
        eprintln!("sim: {d}");
    }
    let insts = lifted.module.instruction_count();
    let generic: usize = lifted
        .module
        .functions
        .iter()
        .flat_map(|f| &f.blocks)
        .flat_map(|b| &b.instructions)
        .filter(|i| i.class == bir::InstClass::Generic)
        .count();
    match &a.output {
        Some(out) => {
            let mut text = Vec::new();
            bir::write_json(&lifted.module, &mut text)
                .map_err(|e| CliError::Io(format!("{}: {e}", out.display())))?;
            neff::write_atomic(out, &text)
                .map_err(|e| CliError::Io(format!("{}: {e}", out.display())))?
        }
        None => {
            use std::io::Write;
            let mut w = std::io::BufWriter::new(std::io::stdout().lock());
            bir::write_json(&lifted.module, &mut w)
                .and_then(|()| w.flush())
                .map_err(|e| CliError::Io(format!("standard output: {e}")))?
        }
    }
    eprintln!(
        "sim: {}: {bundles} bundle(s) of {} stream(s) for {} lifted into {insts} instruction(s), {generic} kept as Generic",
        a.file.display(),
        loaded.streams.len(),
        loaded.gen
    );
    Ok(Outcome::Ok)
}
