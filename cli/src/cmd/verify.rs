//! `sim verify`: the L1 verifier over a BIR module, and over lifted engine streams.
//!
//! Inputs are dispatched on the file name: `*.bir.json` / `*.json` is BIR JSON; a `*.bin`
//! stream or every stream of a `*.neff` is lifted to BIR (`sim lift`), verified with the L1
//! rules, and checked bundle by bundle with the L2 wire validator, both verdicts in one report
//! (see [`streams`]). The memory of a stream's verification is charged against
//! `--max-memory` before it starts. Exit 0 when no error was found, 1 when anything is
//! invalid, 2 for usage and I/O errors and when the input needs more than the memory budget.

use std::path::{Path, PathBuf};

use tpbsim_validate::bir::{self, Module};
use tpbsim_validate::diag::Diagnostic;
use tpbsim_validate::l1::drift;
use tpbsim_validate::registry::{report_jsonl, report_text, PropertySet, Registry};

use crate::exit::{CliError, Outcome};

mod streams;

/// Arguments of `sim verify`.
#[derive(clap::Args)]
pub struct Args {
    /// The module to verify (`.bir.json`), or an engine stream (`.bin`) or NEFF (`.neff`) to
    /// lift and verify with both L1 and L2.
    #[arg(required_unless_present_any = ["l0_drift", "list_rules"])]
    pub file: Option<PathBuf>,
    /// Generation, engine, NEFF reader options.
    #[command(flatten)]
    pub stream: crate::cmd::stream_args::StreamArgs,
    /// Report format and stop rule.
    #[command(flatten)]
    pub report: crate::cmd::stream_args::ReportArgs,
    /// Run only these properties / rules (comma-separated; names from `--list-rules`, or the
    /// groups `all`, `default`, `shared`, `module`).
    #[arg(long, value_name = "LIST")]
    pub rules: Option<String>,
    /// Do not run these properties / rules (comma-separated).
    #[arg(long, value_name = "LIST")]
    pub skip_rules: Option<String>,
    /// Print, per instruction class, where the dormant L0 engine map and the L1 engine sets
    /// disagree (for `--arch`, or every level).
    #[arg(long)]
    pub l0_drift: bool,
    /// List the rules: property, rule name, codes, what it checks.
    #[arg(long)]
    pub list_rules: bool,
    /// Memory budget for a `.bin` or `.neff` input (bytes; K, M, G suffixes): verifying is
    /// refused before it starts when the bundles need more (5 KiB a bundle, 20 KiB more a
    /// bundle the L2 validator rejects; docs/robustness.md).
    #[arg(long, value_name = "BYTES", default_value = "3G", value_parser = crate::cmd::run::parse_bytes)]
    pub max_memory: u64,
}

/// The kind of input, from the file name.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum InputKind {
    BirJson,
    EngineStream,
    Neff,
}

fn input_kind(path: &Path) -> Result<InputKind, CliError> {
    let name = path
        .file_name()
        .and_then(|n| n.to_str())
        .unwrap_or_default()
        .to_ascii_lowercase();
    if name.ends_with(".json") {
        Ok(InputKind::BirJson)
    } else if name.ends_with(".bin") {
        Ok(InputKind::EngineStream)
    } else if name.ends_with(".neff") {
        Ok(InputKind::Neff)
    } else {
        Err(CliError::Usage(format!(
            "{}: unknown input type (expected a .bir.json module, a .bin engine stream or a .neff)",
            path.display()
        )))
    }
}

/// Largest BIR JSON file read (parsing takes up to about 20 times the text in memory).
const MAX_BIR_BYTES: u64 = 128 << 20;

fn load(path: &Path) -> Result<Module, CliError> {
    let text = crate::cmd::read_text(path, MAX_BIR_BYTES)?;
    bir::from_json_str(&text).map_err(|e| CliError::Usage(format!("{}: {e}", path.display())))
}

fn selection(a: &Args, registry: &Registry) -> Result<PropertySet, CliError> {
    let mut props = match &a.rules {
        Some(list) => {
            PropertySet::parse_list(list, registry).map_err(|e| CliError::Usage(e.to_string()))?
        }
        None => PropertySet::default_l1(),
    };
    if let Some(list) = &a.skip_rules {
        props = props.difference(
            PropertySet::parse_list(list, registry).map_err(|e| CliError::Usage(e.to_string()))?,
        );
    }
    Ok(props)
}

fn list_rules(registry: &Registry) {
    for r in registry.rules() {
        let codes = if r.codes().is_empty() {
            "-".to_string()
        } else {
            r.codes()
                .iter()
                .map(u32::to_string)
                .collect::<Vec<_>>()
                .join(",")
        };
        println!(
            "{:<28} {:<32} {:<22} {}",
            r.property().name(),
            r.name(),
            codes,
            r.summary()
        );
        if !r.project_defined().is_empty() {
            println!(
                "{:<28} {:<32} {:<22} project-defined: {}",
                "",
                "",
                "",
                r.project_defined()
            );
        }
    }
}

/// Run `sim verify`.
pub fn run(a: Args) -> Result<Outcome, CliError> {
    let registry = Registry::l1();
    let arch = a.stream.arch;
    if a.list_rules {
        list_rules(&registry);
    }
    if a.l0_drift {
        print!("{}", drift::render(&drift::compute(arch)));
    }
    let Some(path) = a.file.as_deref() else {
        return Ok(Outcome::Ok);
    };
    let props = selection(&a, &registry)?;
    let mode = a.report.mode();
    if input_kind(path)? != InputKind::BirJson {
        let input = streams::Input {
            path,
            gen: a.stream.gen()?,
            engine: a.stream.engine,
            read: a.stream.read.options(),
            max_memory: a.max_memory,
        };
        return streams::verify(&input, a.report.json, mode, &registry, props);
    }
    if a.stream.engine.is_some() {
        return Err(CliError::Usage("--engine applies to .bin streams".into()));
    }
    let mut module = load(path)?;
    if let Some(arch) = arch {
        if arch != module.arch && !a.report.json {
            eprintln!(
                "sim: note: verifying for {arch}; the module says {}",
                module.arch
            );
        }
        module.arch = arch;
    }
    let mut diags: Vec<Diagnostic> = registry.verify(props, &module, mode);
    let file = path.display().to_string();
    for d in &mut diags {
        // A lifted module (`sim lift`) locates its findings at the stream bundles.
        tpbsim_validate::lift::locate(&module, d);
        d.location.file.get_or_insert_with(|| file.clone());
    }
    if a.report.json {
        print!("{}", report_jsonl(&diags));
    } else {
        println!(
            "{file}: {} for {}, {} instruction(s)",
            if diags.iter().any(Diagnostic::is_error) {
                "INVALID"
            } else {
                "valid"
            },
            module.arch,
            module.instruction_count()
        );
        print!("{}", report_text(&diags));
    }
    Ok(if diags.iter().any(Diagnostic::is_error) {
        Outcome::Invalid
    } else {
        Outcome::Ok
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn input_kinds() {
        assert_eq!(
            input_kind(Path::new("k.bir.json")).ok(),
            Some(InputKind::BirJson)
        );
        assert_eq!(
            input_kind(Path::new("PE.bin")).ok(),
            Some(InputKind::EngineStream)
        );
        assert_eq!(
            input_kind(Path::new("a/model.NEFF")).ok(),
            Some(InputKind::Neff)
        );
        assert!(input_kind(Path::new("x.txt")).is_err());
    }
}
