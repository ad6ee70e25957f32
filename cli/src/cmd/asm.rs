//! `sim asm`: assemble the text form back into an engine stream.
//!
//! What it holds: the text (at most 256 MiB) and the assembled bundles, 64 bytes each, which
//! are the output, written from where they were assembled; the lint keeps nothing per bundle,
//! and the L2 validator is run chunk by chunk, so that its findings are held for one chunk at
//! a time. The text and the bundles are charged against `--max-memory` as the bundles grow:
//! a text that would need more is refused with a named error and nothing is written.

use std::path::PathBuf;

use tpbsim_isa::text::{parse_line, render_error};
use tpbsim_isa::{Bundle, Gen, BUNDLE_SIZE};

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
    /// Memory budget (bytes; K, M, G suffixes) for the text and the assembled bundles (64
    /// bytes each): a text that assembles to more is refused, nothing written.
    #[arg(long, value_name = "BYTES", default_value = "3G", value_parser = crate::cmd::run::parse_bytes)]
    pub max_memory: u64,
}

/// Assemble `text` line by line into storage allocated once: a line holds at most one
/// bundle, so the storage is the text's line count of bundles, or what the budget has room for
/// beside the text when that is less (a text with more bundles than that is refused at the
/// first bundle past it). The text and the storage are charged against `max_memory`; the
/// storage never grows, so no allocation exceeds the budget and none is repeated.
fn assemble(a: &Args, text: &str) -> Result<Vec<Bundle>, CliError> {
    use tpbsim_sim::machine::{Budget, Limits};
    let file = a.file.display().to_string();
    let refuse = |e: tpbsim_sim::machine::Exceeded| CliError::Usage(format!("{file}: {e}"));
    let mut budget = Budget::new(Limits {
        max_memory: a.max_memory,
        ..Limits::default()
    });
    budget
        .charge_memory(|| "assembling: the text".into(), text.len() as u64)
        .map_err(refuse)?;
    let lines = text.lines().count() as u64;
    let room = a.max_memory.saturating_sub(budget.memory()) / BUNDLE_SIZE as u64;
    let cap = lines.min(room);
    budget
        .charge_memory(
            || "assembling: the bundles".into(),
            cap * BUNDLE_SIZE as u64,
        )
        .map_err(refuse)?;
    let mut out: Vec<Bundle> = Vec::new();
    out.try_reserve_exact(cap as usize).map_err(|e| {
        CliError::Io(format!(
            "{file}: assembling: storage for {cap} bundles: {e}"
        ))
    })?;
    for (i, line) in text.lines().enumerate() {
        let b = match parse_line(line, a.arch) {
            Ok(Some(b)) => b,
            Ok(None) => continue,
            Err(e) => return Err(CliError::Usage(render_error(&file, text, i + 1, &e))),
        };
        if out.len() as u64 == cap {
            // The storage is full: it holds all the budget has room for (a line holds at
            // most one bundle), so one bundle more does not fit.
            budget
                .check_memory(
                    || {
                        format!(
                            "assembling: bundle {} (line {}, {BUNDLE_SIZE} bytes a bundle)",
                            cap + 1,
                            i + 1
                        )
                    },
                    BUNDLE_SIZE as u64,
                )
                .map_err(refuse)?;
        }
        out.push(b);
    }
    Ok(out)
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
    let bundles = assemble(&a, &text)?;
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
    let bytes: &[u8] = bytemuck::cast_slice(&bundles);
    tpbsim_neff::write_atomic(&a.output, bytes)
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
/// no engine accepts is rejected). The engines are compared by the silent gate (no finding
/// built); the chosen engine's findings are built, printed and dropped one chunk of
/// [`l2::CHUNK`] bundles at a time. Nothing for a generation L2 does not cover.
fn report_l2(
    bundles: &[tpbsim_isa::Bundle],
    gen: Gen,
    engine: Option<tpbsim_isa::Engine>,
    file: &str,
) -> u64 {
    use tpbsim_validate::diag::{Mode, Severity};
    use tpbsim_validate::l2::StreamSpec;
    use tpbsim_validate::l2::{self, cascade::check_silent, engine_gate::opcode_on_engine};
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
    let rejected = |e: tpbsim_isa::Engine| {
        bundles
            .iter()
            .filter(|b| check_silent(gen, e, b).failed)
            .count() as u64
    };
    let Some(engine) = (match candidates.as_slice() {
        [one] => Some(*one),
        _ => candidates.into_iter().min_by_key(|&e| rejected(e)),
    }) else {
        return 0;
    };
    let spec = StreamSpec {
        file: Some(file.to_string()),
        gen,
        engine,
    };
    let mut invalid = 0;
    for (k, chunk) in bundles.chunks(l2::CHUNK).enumerate() {
        let base = (k * l2::CHUNK) as u64;
        let report = l2::validate_stream(chunk, &spec, Mode::CollectAll);
        invalid += report.invalid;
        for mut d in report
            .diagnostics
            .into_iter()
            .filter(|d| d.severity == Severity::Error)
        {
            let idx = d.location.index.unwrap_or(0);
            d.location.index = Some(base + idx);
            d.location.offset = Some((base + idx) * BUNDLE_SIZE as u64);
            match chunk.get(idx as usize) {
                Some(b) => eprint!("{}", l2::render(&d, b, gen)),
                None => eprintln!("{d}"),
            }
        }
    }
    invalid
}
