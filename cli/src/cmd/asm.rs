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
    let file = a.file.display().to_string();
    let rejected = report_l2(&bundles, a.arch, engine, &file);
    if rejected > 0 {
        eprintln!(
            "{file}: warning: the L2 validator rejects {rejected} bundle(s): `sim validate` and `sim run` refuse them"
        );
    }
    let denied = crate::cmd::validate::report_lint(&findings, a.deny_warnings);
    if a.deny_warnings && (denied || rejected > 0) {
        return Err(CliError::Usage(format!(
            "{file}: warnings denied (--deny-warnings); nothing written"
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

/// Run the L2 validator over the assembled bundles and print its errors to stderr; the number
/// of bundles it rejects. The engine is `engine` when known; otherwise each engine that runs
/// every opcode of the stream is tried and the one rejecting fewest bundles is reported (what
/// no engine accepts is rejected). Nothing for a generation L2 does not cover.
fn report_l2(
    bundles: &[tpbsim_isa::Bundle],
    gen: Gen,
    engine: Option<tpbsim_isa::Engine>,
    file: &str,
) -> u64 {
    use tpbsim_validate::diag::{Mode, Severity};
    use tpbsim_validate::l2::{self, engine_gate::opcode_on_engine, StreamSpec};
    if !l2::GENS.contains(&gen) {
        return 0;
    }
    let candidates: Vec<tpbsim_isa::Engine> = match engine {
        Some(e) => vec![e],
        None => tpbsim_isa::Engine::ALL
            .into_iter()
            .filter(|&e| bundles.iter().all(|b| opcode_on_engine(gen, e, b.0[0])))
            .collect(),
    };
    let Some(report) = candidates
        .into_iter()
        .map(|engine| {
            let spec = StreamSpec {
                file: Some(file.to_string()),
                gen,
                engine,
            };
            l2::validate_stream(bundles, &spec, Mode::CollectAll)
        })
        .min_by_key(|r| r.invalid)
    else {
        return 0;
    };
    for d in report
        .diagnostics
        .iter()
        .filter(|d| d.severity == Severity::Error)
    {
        let idx = d.location.index.unwrap_or(0) as usize;
        match bundles.get(idx) {
            Some(b) => eprint!("{}", l2::render(d, b, gen)),
            None => eprintln!("{d}"),
        }
    }
    report.invalid
}
