//! `sim verify` on engine streams: load them (a NEFF: subgraphs in order, engines PE, ACT,
//! POOL, DVE, SP), verify them with [`tpbsim_validate::verify::verify_streams`] (lift, L1 on
//! the module, L2 on every stream, one merged report in its documented order) and print the
//! report.

use std::path::Path;

use tpbsim_isa::{Engine, Gen};
use tpbsim_neff::ReadOptions;
use tpbsim_validate::bir::InstClass;
use tpbsim_validate::diag::{Layer, Mode};
use tpbsim_validate::l2;
use tpbsim_validate::registry::{PropertySet, Registry, Summary};
use tpbsim_validate::verify::{count_l2_invalid, verify_streams};

use crate::cmd::lift as lift_cmd;
use crate::exit::{CliError, Outcome};

/// A `.bin` or `.neff` input and how to read it.
pub(super) struct Input<'a> {
    /// The file.
    pub path: &'a Path,
    /// The generation `--arch` names.
    pub gen: Option<Gen>,
    /// `--engine` (a `.bin`).
    pub engine: Option<Engine>,
    /// NEFF reader options.
    pub read: ReadOptions,
    /// `--max-memory`.
    pub max_memory: u64,
}

/// Bytes of memory charged per bundle verified: the bundle read, its lifted instruction and
/// the L1 walk over it. Measured peak of `sim verify` over streams of valid ACTIVATE and
/// TensorTensor bundles (3.3 to 4.0 KB a bundle), with room above the largest.
pub const VERIFY_BYTES_PER_BUNDLE: u64 = 5 << 10;

/// Bytes of memory charged, on top of [`VERIFY_BYTES_PER_BUNDLE`], per bundle the L2 layer
/// rejects (its findings, each with its message and location). Measured peak over streams of
/// random bytes and of random bodies under the MATMUL, ACTIVATE, TensorTensor,
/// TensorScalar and DMA opcodes (every bundle invalid: up to 20.6 KB a bundle in all).
pub const VERIFY_BYTES_PER_INVALID_BUNDLE: u64 = 20 << 10;

/// Verify a `.bin` or `.neff` input.
pub(super) fn verify(
    input: &Input<'_>,
    json: bool,
    mode: Mode,
    registry: &Registry,
    props: PropertySet,
) -> Result<Outcome, CliError> {
    let Input {
        path,
        gen,
        engine,
        read,
        max_memory,
    } = *input;
    let loaded = lift_cmd::load(path, gen, engine, &read)?;
    let gen: Gen = loaded.gen;
    let inputs = lift_cmd::stream_inputs(&loaded);
    // The report's memory, sized before anything is lifted: every bundle, and each bundle
    // the silent L2 gate rejects (counted without building a finding).
    let bundles: u64 = loaded.streams.iter().map(|s| s.stream.len() as u64).sum();
    let invalid = count_l2_invalid(&inputs, gen);
    lift_cmd::charge_memory(
        path,
        || {
            format!(
                "verifying {bundles} bundle(s) ({VERIFY_BYTES_PER_BUNDLE} bytes a bundle, {VERIFY_BYTES_PER_INVALID_BUNDLE} more for each of the {invalid} the L2 validator rejects)"
            )
        },
        bundles
            .saturating_mul(VERIFY_BYTES_PER_BUNDLE)
            .saturating_add(invalid.saturating_mul(VERIFY_BYTES_PER_INVALID_BUNDLE)),
        max_memory,
    )?;
    let verified = verify_streams(
        &inputs,
        gen,
        lift_cmd::module_name(path),
        &path.display().to_string(),
        mode,
        registry,
        props,
    );
    let module = &verified.lifted.module;
    let diags = &verified.diagnostics;
    let l2_invalid = verified.l2_invalid;
    let invalid = verified.invalid();

    if json {
        for d in diags {
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
        for d in diags {
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
        println!("{}", Summary::of(diags));
    }
    Ok(if invalid {
        Outcome::Invalid
    } else {
        Outcome::Ok
    })
}
