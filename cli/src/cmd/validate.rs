//! `sim validate`: run the L2 wire validator over engine streams.
//!
//! Each `.bin` stream is checked for the chosen generation; the engine comes from `--engine`
//! or from the stream's file name (`PE.bin`, `Activation.bin`, `Pool.bin`, `DVE.bin`,
//! `SP.bin`). Diagnostics are printed in stream order (text with a marked hex dump, or JSON
//! Lines with `--json`). Exit 0 when every bundle is valid, 1 when any is invalid, 2 on usage
//! or I/O errors.

use std::io::Write;
use std::path::{Path, PathBuf};

use tpbsim_isa::{Bundle, Engine, Gen, BUNDLE_SIZE};
use tpbsim_validate::diag::{Mode, Severity};
use tpbsim_validate::l2::{self, StreamSpec};

use crate::exit::{CliError, Outcome};

/// Arguments of `sim validate`.
#[derive(clap::Args)]
pub struct Args {
    /// Engine streams (`.bin`) or NEFF files (`.neff`).
    #[arg(required = true)]
    pub files: Vec<PathBuf>,
    /// Target generation: v2, v3 or v4.
    #[arg(long)]
    pub arch: Gen,
    /// Engine of the streams (pe, act, pool, dve, sp); taken from each file name when omitted.
    #[arg(long)]
    pub engine: Option<Engine>,
    /// Print diagnostics as JSON Lines.
    #[arg(long)]
    pub json: bool,
    /// Stop at the first error.
    #[arg(long)]
    pub fail_fast: bool,
    /// Worker threads (default: all available cores).
    #[arg(long)]
    pub threads: Option<usize>,
}

/// Read a stream file into bundles; its size must be a multiple of 64 bytes.
fn read_stream(path: &Path) -> Result<Vec<Bundle>, CliError> {
    let bytes =
        std::fs::read(path).map_err(|e| CliError::Io(format!("{}: {e}", path.display())))?;
    if bytes.len() % BUNDLE_SIZE != 0 {
        return Err(CliError::Usage(format!(
            "{}: size {} is not a multiple of {BUNDLE_SIZE} bytes (trailing {} bytes at offset {:#x})",
            path.display(),
            bytes.len(),
            bytes.len() % BUNDLE_SIZE,
            bytes.len() - bytes.len() % BUNDLE_SIZE
        )));
    }
    Ok(bytes
        .chunks_exact(BUNDLE_SIZE)
        .filter_map(Bundle::from_slice)
        .collect())
}

/// Run `sim validate`.
pub fn run(a: Args) -> Result<Outcome, CliError> {
    if !l2::GENS.contains(&a.arch) {
        return Err(CliError::Usage(format!(
            "--arch {}: the L2 validator exists for v2, v3 and v4",
            a.arch
        )));
    }
    let mut builder = rayon::ThreadPoolBuilder::new();
    if let Some(n) = a.threads {
        if n == 0 {
            return Err(CliError::Usage("--threads must be at least 1".into()));
        }
        builder = builder.num_threads(n);
    }
    let pool = builder
        .build()
        .map_err(|e| CliError::Usage(format!("thread pool: {e}")))?;
    let mode = if a.fail_fast {
        Mode::FailFast
    } else {
        Mode::CollectAll
    };
    // Resolve every input before validating any, so usage errors come first.
    let mut inputs = Vec::new();
    for f in &a.files {
        let ext = f
            .extension()
            .and_then(|e| e.to_str())
            .map(str::to_ascii_lowercase);
        if ext.as_deref() == Some("neff") {
            return Err(CliError::Usage(format!(
                "{}: NEFF input is not supported yet; extract the engine streams and pass the .bin files",
                f.display()
            )));
        }
        let engine = match a.engine.or_else(|| Engine::from_file_name(f)) {
            Some(e) => e,
            None => return Err(CliError::Usage(format!(
                "{}: cannot tell the engine from the file name; pass --engine pe|act|pool|dve|sp",
                f.display()
            ))),
        };
        inputs.push((f, engine));
    }
    let stdout = std::io::stdout();
    let mut out = std::io::BufWriter::new(stdout.lock());
    let mut any_invalid = false;
    for (f, engine) in inputs {
        let bundles = read_stream(f)?;
        let spec = StreamSpec {
            file: Some(f.display().to_string()),
            gen: a.arch,
            engine,
        };
        let report = pool.install(|| l2::validate_stream(&bundles, &spec, mode));
        for d in &report.diagnostics {
            let r = if a.json {
                writeln!(out, "{}", d.to_json())
            } else {
                let idx = d.location.index.unwrap_or(0) as usize;
                match bundles.get(idx) {
                    Some(b) => write!(out, "{}", l2::render(d, b)),
                    None => writeln!(out, "{d}"),
                }
            };
            r.map_err(|e| CliError::Io(format!("stdout: {e}")))?;
        }
        if !a.json {
            let nc = report
                .diagnostics
                .iter()
                .filter(|d| d.severity == Severity::NotChecked)
                .count();
            eprintln!(
                "{}: {} {} bundle(s): {} invalid, {} with rules not checked ({} summar{})",
                spec.file.as_deref().unwrap_or("-"),
                engine,
                report.bundles,
                report.invalid,
                report.unchecked,
                nc,
                if nc == 1 { "y" } else { "ies" }
            );
        }
        any_invalid |= report.has_errors();
        if any_invalid && a.fail_fast {
            break;
        }
    }
    out.flush()
        .map_err(|e| CliError::Io(format!("stdout: {e}")))?;
    Ok(if any_invalid {
        Outcome::Invalid
    } else {
        Outcome::Ok
    })
}
