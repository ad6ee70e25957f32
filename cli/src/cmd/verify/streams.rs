//! `sim verify` on engine streams: lift (`sim lift`), run the L1 rules on the module and the
//! L2 wire validator on every stream, and report both layers together.
//!
//! Order of the report (deterministic): module-scope L1 findings first; then stream by stream
//! in input order (a NEFF: subgraphs in order, engines PE, ACT, POOL, DVE, SP), and within a
//! stream by bundle index — an instruction's L1 findings sit at its first bundle — with the L2
//! findings of a bundle before its L1 findings, each layer in its own rule order. The lifter's
//! own reports (bundles kept as `Generic`, operands not decoded) are L1 "not checked" findings
//! at their first bundle. v5 streams have no L2 validator (the compiler validates v2..v4); each
//! says so once as a "not checked" finding.

use std::path::Path;

use tpbsim_isa::{Engine, Gen};
use tpbsim_validate::bir::{ArchLevel, InstClass};
use tpbsim_validate::diag::{Diagnostic, Layer, Location, Mode, Severity};
use tpbsim_validate::l2::{self, StreamSpec};
use tpbsim_validate::lift;
use tpbsim_validate::registry::{PropertySet, Registry, Summary};

use crate::cmd::lift as lift_cmd;
use crate::exit::{CliError, Outcome};

/// Merge key: stream position, bundle index (findings without one last), layer (L2 first),
/// arrival order.
fn key(d: &Diagnostic, stream: usize, seq: usize) -> (usize, u64, u8, usize) {
    let layer = match d.layer {
        Layer::L2 => 0,
        Layer::L1 => 1,
        Layer::Lint => 2,
    };
    (stream, d.location.index.unwrap_or(u64::MAX), layer, seq)
}

/// Verify a `.bin` or `.neff` input.
pub(super) fn verify(
    path: &Path,
    arch: Option<ArchLevel>,
    engine: Option<Engine>,
    json: bool,
    mode: Mode,
    registry: &Registry,
    props: PropertySet,
) -> Result<Outcome, CliError> {
    let gen = match arch {
        Some(level) => Some(level.gen().ok_or_else(|| {
            CliError::Usage(format!("{level}: tpbsim decodes streams of v2..v5 only"))
        })?),
        None => None,
    };
    let loaded = lift_cmd::load(path, gen, engine)?;
    let gen: Gen = loaded.gen;
    let lifted = lift_cmd::lift_loaded(path, &loaded);
    let module = &lifted.module;

    // L1 over the lifted module, located at the bundles.
    let mut l1 = registry.verify(props, module, mode);
    for d in &mut l1 {
        lift::locate(module, d);
        if d.location.file.is_none() {
            d.location.file = Some(path.display().to_string());
        }
    }
    let stream_of = |function: &str| loaded.streams.iter().position(|s| s.function == function);

    // Each finding gets its merge key: (stream position, bundle index, layer, arrival order),
    // stream position 0 being the module scope.
    let mut tagged: Vec<((usize, u64, u8, usize), Diagnostic)> = Vec::new();
    let mut push = |stream: usize, d: Diagnostic| {
        let k = key(&d, stream, tagged.len());
        tagged.push((k, d));
    };
    for d in lifted.diagnostics.iter().cloned().chain(l1) {
        let s = match d.location.function.as_deref() {
            None => 0,
            Some(f) => stream_of(f).map_or(usize::MAX, |k| k + 1),
        };
        push(s, d);
    }
    // L2 over every stream.
    let mut l2_invalid = 0u64;
    for (k, s) in loaded.streams.iter().enumerate() {
        if !l2::GENS.contains(&gen) {
            let d = Diagnostic::error(
                Layer::L2,
                "runSingleISACheck",
                None,
                format!("no L2 wire validator exists for {gen} (the compiler validates v2, v3 and v4); wire checks not run"),
            )
            .with_severity(Severity::NotChecked)
            .at(Location { file: Some(s.file.clone()), engine: Some(s.stream.engine()), index: Some(0), offset: Some(0), ..Location::default() });
            push(k + 1, d);
            // Without a wire validator the opcode set of the generation is still known from
            // the spec: a bundle that does not decode on it is an error, not a pass.
            for (i, b) in s.stream.bundles().iter().enumerate() {
                if let Err(e) = tpbsim_isa::decode(b, gen) {
                    l2_invalid += 1;
                    let d =
                        Diagnostic::error(Layer::L2, "decode", None, e.to_string()).at(Location {
                            file: Some(s.file.clone()),
                            engine: Some(s.stream.engine()),
                            index: Some(i as u64),
                            offset: Some(64 * i as u64),
                            ..Location::default()
                        });
                    push(k + 1, d);
                }
            }
            continue;
        }
        let spec = StreamSpec {
            file: Some(s.file.clone()),
            gen,
            engine: s.stream.engine(),
        };
        let report = l2::validate_stream(s.stream.bundles(), &spec, mode);
        l2_invalid += report.invalid;
        for d in report.diagnostics {
            push(k + 1, d);
        }
    }
    tagged.sort_by_key(|t| t.0);
    let mut diags: Vec<Diagnostic> = tagged.into_iter().map(|(_, d)| d).collect();
    if mode == Mode::FailFast {
        if let Some(first) = diags.iter().position(Diagnostic::is_error) {
            diags.truncate(first + 1);
        }
    }
    let invalid = diags.iter().any(Diagnostic::is_error);

    if json {
        for d in &diags {
            println!("{}", d.to_json());
        }
    } else {
        let insts = module.instruction_count();
        let generic = module
            .functions
            .iter()
            .flat_map(|f| &f.blocks)
            .flat_map(|b| &b.instructions)
            .filter(|i| i.class == InstClass::Generic)
            .count();
        let bundles: usize = loaded.streams.iter().map(|s| s.stream.len()).sum();
        let l1_errors = diags
            .iter()
            .filter(|d| d.is_error() && d.layer == Layer::L1)
            .count();
        let l2_errors = diags
            .iter()
            .filter(|d| d.is_error() && d.layer == Layer::L2)
            .count();
        println!(
            "{}: {} for {gen}: {bundles} bundle(s) in {} stream(s), lifted into {insts} instruction(s) ({generic} Generic); L2: {l2_errors} error(s) in {l2_invalid} bundle(s), L1: {l1_errors} error(s)",
            path.display(),
            if invalid { "INVALID" } else { "valid" },
            loaded.streams.len()
        );
        for d in &diags {
            let bundle = match (
                d.layer,
                &d.location.file,
                d.location.index,
                &d.location.field,
            ) {
                (Layer::L2, Some(f), Some(i), Some(_)) => loaded
                    .streams
                    .iter()
                    .find(|s| &s.file == f)
                    .and_then(|s| s.stream.get(i as usize)),
                _ => None,
            };
            match bundle {
                Some(b) => print!("{}", l2::render(d, b, gen)),
                None => println!("{d}"),
            }
        }
        println!("{}", Summary::of(&diags));
    }
    Ok(if invalid {
        Outcome::Invalid
    } else {
        Outcome::Ok
    })
}
