//! `sim validate`: run the L2 wire validator over engine streams.
//!
//! Each `.bin` stream is checked for the chosen generation; the engine comes from `--engine`
//! or from the stream's file name (`PE.bin`, `Activation.bin`, `Pool.bin`, `DVE.bin`,
//! `SP.bin`). A `.neff` is checked stream by stream (every engine stream of every subgraph,
//! labelled `file.neff:member`). Diagnostics are printed in stream order (text with the bundle disassembled and the field marked, or JSON
//! Lines with `--json`). Exit 0 when every bundle is valid, 1 when any is invalid, 2 on usage
//! or I/O errors.

use std::io::Write;
use std::path::PathBuf;

use tpbsim_isa::stream::EngineStream;
use tpbsim_isa::Gen;
use tpbsim_neff::Neff;
use tpbsim_validate::diag::Severity;
use tpbsim_validate::l2::{self, StreamSpec};
use tpbsim_validate::lint;

use crate::exit::{CliError, Outcome};

/// Arguments of `sim validate`.
#[derive(clap::Args)]
pub struct Args {
    /// Engine streams (`.bin`) or NEFF files (`.neff`).
    #[arg(required = true)]
    pub files: Vec<PathBuf>,
    /// Generation, engine, NEFF reader options.
    #[command(flatten)]
    pub stream: crate::cmd::stream_args::StreamArgs,
    /// Report format and stop rule.
    #[command(flatten)]
    pub report: crate::cmd::stream_args::ReportArgs,
    /// Worker threads (default: all available cores; at most that many unless
    /// --force-threads).
    #[arg(long)]
    pub threads: Option<usize>,
    /// Allow --threads above the machine's available parallelism (at most 1024).
    #[arg(long)]
    pub force_threads: bool,
    /// Treat lint warnings (docs/asm.md, "Lint") as errors (exit 1).
    #[arg(long)]
    pub deny_warnings: bool,
    /// Shard the files over the processes of an MPI job (`mpirun -np P sim validate --mpi
    /// FILES...`; a `sim` built with the `mpi` feature): process p checks the p-th of P
    /// consecutive blocks of the files and process 0 prints the merged report, in file order
    /// (docs/mpi.md).
    #[arg(long)]
    pub mpi: bool,
}

/// What checking some files found.
#[derive(Clone, Copy, Debug, Default)]
pub struct Validated {
    /// A bundle is invalid.
    pub invalid: bool,
    /// A lint warning was found and `--deny-warnings` makes it an error.
    pub lint_denied: bool,
}

/// Most worker threads `--force-threads` allows.
const MAX_FORCED_THREADS: usize = 1024;

/// Run `sim validate`.
pub fn run(a: Args) -> Result<Outcome, CliError> {
    if a.mpi {
        return run_mpi(&a);
    }
    let stdout = std::io::stdout();
    let mut out = std::io::BufWriter::new(stdout.lock());
    let v = validate(
        &a,
        &a.files,
        &mut out,
        &mut std::io::stderr(),
        &mut std::io::stderr(),
    )?;
    Ok(if v.invalid || v.lint_denied {
        Outcome::Invalid
    } else {
        Outcome::Ok
    })
}

#[cfg(not(feature = "mpi"))]
fn run_mpi(_: &Args) -> Result<Outcome, CliError> {
    Err(CliError::Usage(
        "--mpi: this sim was built without MPI; build it with `cargo build --release --features mpi` (docs/mpi.md)".into(),
    ))
}

#[cfg(feature = "mpi")]
fn run_mpi(a: &Args) -> Result<Outcome, CliError> {
    crate::mpi::validate(a)
}

/// Check `files` with the options of `a`: the diagnostics to `out`, each stream's summary to
/// `err`, the lint findings to `lint` (after every stream is checked).
pub fn validate(
    a: &Args,
    files: &[PathBuf],
    out: &mut dyn Write,
    err: &mut dyn Write,
    lint: &mut dyn Write,
) -> Result<Validated, CliError> {
    let arch = a.stream.gen()?;
    if let Some(g) = arch.filter(|g| !l2::GENS.contains(g)) {
        return Err(CliError::Usage(format!(
            "--arch {g}: the L2 validator exists for v2, v3 and v4"
        )));
    }
    let mut builder = rayon::ThreadPoolBuilder::new();
    if let Some(n) = a.threads {
        if n == 0 {
            return Err(CliError::Usage("--threads must be at least 1".into()));
        }
        let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
        let max = if a.force_threads {
            MAX_FORCED_THREADS
        } else {
            cores
        };
        if n > max {
            return Err(CliError::Usage(format!(
                "--threads {n}: more than {max} ({}); pass --force-threads to use up to {MAX_FORCED_THREADS}",
                if a.force_threads {
                    "the forced maximum".to_string()
                } else {
                    format!("the {cores} available cores")
                }
            )));
        }
        builder = builder.num_threads(n);
    }
    let pool = builder
        .build()
        .map_err(|e| CliError::Usage(format!("thread pool: {e}")))?;
    let mode = a.report.mode();
    // Open every input before validating any, so usage and I/O errors come first.
    let mut streams: Vec<(String, EngineStream, Gen)> = Vec::new();
    let mut lint_findings = Vec::new();
    for f in files {
        let ext = f
            .extension()
            .and_then(|e| e.to_str())
            .map(str::to_ascii_lowercase);
        if ext.as_deref() == Some("neff") {
            let neff = Neff::read(f, &a.stream.read.options())
                .map_err(|e| CliError::Io(crate::cmd::neff::error_text(f, &e)))?;
            let shown = f.display().to_string();
            let gen = crate::cmd::neff::generation(&neff, arch, &shown)?;
            if !l2::GENS.contains(&gen) {
                return Err(CliError::Usage(format!(
                    "{shown}: targets {gen}; the L2 validator exists for v2, v3 and v4"
                )));
            }
            let sgs = crate::cmd::neff::checked_subgraphs(&neff, &shown)?;
            for sg in sgs {
                let ls: Vec<lint::LintStream<'_>> = sg
                    .streams
                    .iter()
                    .map(|(e, sm)| lint::LintStream {
                        file: format!("{}:{}", f.display(), sm.member),
                        engine: Some(*e),
                        bundles: sm.stream.bundles(),
                    })
                    .collect();
                lint_findings.extend(lint::lint(&ls, gen, Some(&sg)));
                for (_, sm) in sg.streams {
                    streams.push((format!("{shown}:{}", sm.member), sm.stream, gen));
                }
            }
        } else {
            let s = EngineStream::open(f, a.stream.engine).map_err(|e| match e {
                tpbsim_isa::stream::StreamError::Io { .. } => CliError::Io(e.to_string()),
                _ => CliError::Usage(format!(
                    "{e}; pass --engine pe|act|pool|dve|sp if the name does not tell"
                )),
            })?;
            let gen = arch.ok_or_else(|| {
                CliError::Usage(format!(
                    "{}: --arch is required for a .bin stream",
                    f.display()
                ))
            })?;
            lint_findings.extend(lint::lint(
                &[lint::LintStream {
                    file: f.display().to_string(),
                    engine: Some(s.engine()),
                    bundles: s.bundles(),
                }],
                gen,
                None,
            ));
            streams.push((f.display().to_string(), s, gen));
        }
    }
    let mut any_invalid = false;
    for (name, stream, gen) in &streams {
        let gen = *gen;
        let engine = stream.engine();
        let bundles = stream.bundles();
        let spec = StreamSpec {
            file: Some(name.clone()),
            gen,
            engine,
        };
        let report = pool.install(|| l2::validate_stream(bundles, &spec, mode));
        for d in &report.diagnostics {
            let r = if a.report.json {
                writeln!(out, "{}", d.to_json())
            } else {
                let idx = d.location.index.unwrap_or(0) as usize;
                match bundles.get(idx) {
                    Some(b) => write!(out, "{}", l2::render(d, b, gen)),
                    None => writeln!(out, "{d}"),
                }
            };
            r.map_err(|e| CliError::Io(format!("stdout: {e}")))?;
        }
        if !a.report.json {
            let nc = report
                .diagnostics
                .iter()
                .filter(|d| d.severity == Severity::NotChecked)
                .count();
            let _ = writeln!(
                err,
                "{name}: {engine} {} bundle(s): {} invalid, {} with rules not checked ({nc} summar{})",
                report.bundles,
                report.invalid,
                report.unchecked,
                if nc == 1 { "y" } else { "ies" }
            );
        }
        any_invalid |= report.has_errors();
        if any_invalid && a.report.fail_fast {
            break;
        }
    }
    out.flush()
        .map_err(|e| CliError::Io(format!("stdout: {e}")))?;
    Ok(Validated {
        invalid: any_invalid,
        lint_denied: write_lint(lint, &lint_findings, a.deny_warnings),
    })
}

/// Print lint findings to stderr; true when `deny` and a warning was found.
pub(crate) fn report_lint(findings: &[tpbsim_validate::Diagnostic], deny: bool) -> bool {
    write_lint(&mut std::io::stderr(), findings, deny)
}

/// Write lint findings to `w`; true when `deny` and a warning was found.
fn write_lint(w: &mut dyn Write, findings: &[tpbsim_validate::Diagnostic], deny: bool) -> bool {
    for d in findings {
        let _ = writeln!(w, "{d}");
    }
    deny && findings.iter().any(|d| d.severity == Severity::Warning)
}
