//! Verifying engine streams as `sim verify` does: lift them into one BIR module, run the L1
//! rules on the module and the L2 wire validator on every stream, and merge both layers into
//! one deterministic report.
//!
//! Order of the report: module-scope L1 findings first; then stream by stream in input order,
//! and within a stream by bundle index (an instruction's L1 findings sit at its first bundle),
//! with the L2 findings of a bundle before its L1 findings, each layer in its own rule order.
//! The lifter's own reports (bundles kept as `Generic`, operands not decoded) are L1 "not
//! checked" findings at their first bundle. Streams of a generation without an L2 validator
//! (v5) say so once as a "not checked" finding, and each bundle that does not decode on the
//! generation is an error.

use tpbsim_isa::Gen;

use crate::diag::{Diagnostic, Layer, Location, Mode, Severity};
use crate::l2::{self, StreamSpec};
use crate::lift::{self, Lifted, StreamInput};
use crate::registry::{PropertySet, Registry};

/// The result of [`verify_streams`].
pub struct Verified {
    /// The lifted module and the lifter's reports.
    pub lifted: Lifted,
    /// Every finding of both layers, in report order (cut after the first error with
    /// [`Mode::FailFast`]).
    pub diagnostics: Vec<Diagnostic>,
    /// Bundles the L2 layer found invalid.
    pub l2_invalid: u64,
}

impl Verified {
    /// True when any finding is an error.
    pub fn invalid(&self) -> bool {
        self.diagnostics.iter().any(Diagnostic::is_error)
    }
}

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

/// Lift `inputs` for `gen` into one module named `name`, and verify it: L1 with the rules of
/// `props` from `registry`, L2 over every stream. `file` locates the module-scope findings.
pub fn verify_streams(
    inputs: &[StreamInput<'_>],
    gen: Gen,
    name: Option<String>,
    file: &str,
    mode: Mode,
    registry: &Registry,
    props: PropertySet,
) -> Verified {
    let lifted = lift::lift_streams(inputs, gen, name);
    let module = &lifted.module;

    // L1 over the lifted module, located at the bundles.
    let mut l1 = registry.verify(props, module, mode);
    for d in &mut l1 {
        lift::locate(module, d);
        if d.location.file.is_none() {
            d.location.file = Some(file.to_string());
        }
    }
    let stream_of = |function: &str| inputs.iter().position(|s| s.function == function);

    // Stream position 0 is the module scope.
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
    let mut l2_invalid = 0u64;
    for (k, s) in inputs.iter().enumerate() {
        let at = |index: usize| Location {
            file: s.file.clone(),
            engine: Some(s.engine),
            index: Some(index as u64),
            offset: Some(64 * index as u64),
            ..Location::default()
        };
        if !l2::GENS.contains(&gen) {
            let d = Diagnostic::error(
                Layer::L2,
                "runSingleISACheck",
                None,
                format!("no L2 wire validator exists for {gen} (the compiler validates v2, v3 and v4); wire checks not run"),
            )
            .with_severity(Severity::NotChecked)
            .at(at(0));
            push(k + 1, d);
            // Without a wire validator the opcode set of the generation is still known from
            // the spec: a bundle that does not decode on it is an error, not a pass.
            for (i, b) in s.bundles.iter().enumerate() {
                if let Err(e) = tpbsim_isa::decode(b, gen) {
                    l2_invalid += 1;
                    push(
                        k + 1,
                        Diagnostic::error(Layer::L2, "decode", None, e.to_string()).at(at(i)),
                    );
                }
            }
            continue;
        }
        let spec = StreamSpec {
            file: s.file.clone(),
            gen,
            engine: s.engine,
        };
        let report = l2::validate_stream(s.bundles, &spec, mode);
        l2_invalid += report.invalid;
        for d in report.diagnostics {
            push(k + 1, d);
        }
    }
    tagged.sort_by_key(|t| t.0);
    let mut diagnostics: Vec<Diagnostic> = tagged.into_iter().map(|(_, d)| d).collect();
    if mode == Mode::FailFast {
        if let Some(first) = diagnostics.iter().position(Diagnostic::is_error) {
            diagnostics.truncate(first + 1);
        }
    }
    Verified {
        lifted,
        diagnostics,
        l2_invalid,
    }
}

/// The number of bundles of `inputs` the L2 layer of [`verify_streams`] finds invalid for
/// `gen`, counted without building any finding: the silent gate of each bundle (no
/// allocation), or on a generation without a wire validator, the bundles that do not decode.
/// A caller sizes the memory of the report from it before verifying.
pub fn count_l2_invalid(inputs: &[StreamInput<'_>], gen: Gen) -> u64 {
    let checked = l2::GENS.contains(&gen);
    inputs
        .iter()
        .map(|s| {
            s.bundles
                .iter()
                .filter(|b| {
                    if checked {
                        l2::cascade::check_silent(gen, s.engine, b).failed
                    } else {
                        tpbsim_isa::decode(b, gen).is_err()
                    }
                })
                .count() as u64
        })
        .sum()
}

#[cfg(test)]
mod tests {
    use super::*;
    use tpbsim_isa::text::parse_text;
    use tpbsim_isa::{Bundle, Engine};

    fn run(bundles: &[Bundle], gen: Gen, mode: Mode) -> Verified {
        let inputs = [StreamInput {
            function: "act".into(),
            file: Some("t.bin".into()),
            engine: Engine::Act,
            bundles,
        }];
        verify_streams(
            &inputs,
            gen,
            Some("t".into()),
            "t.bin",
            mode,
            &Registry::l1(),
            PropertySet::all(),
        )
    }

    #[test]
    fn both_layers_in_bundle_order_and_fail_fast_cuts_after_the_first_error() {
        let text = "NOP\nACTIVATE num_active_partitions=200\nACTIVATE num_active_partitions=200\n";
        let b = parse_text(text, Gen::V3).unwrap();
        let v = run(&b, Gen::V3, Mode::CollectAll);
        assert!(v.invalid());
        assert_eq!(v.l2_invalid, 2);
        let idx: Vec<u64> = v
            .diagnostics
            .iter()
            .filter(|d| d.is_error())
            .filter_map(|d| d.location.index)
            .collect();
        assert!(idx.windows(2).all(|w| w[0] <= w[1]), "{idx:?}");
        assert_eq!(idx.first(), Some(&1));
        let f = run(&b, Gen::V3, Mode::FailFast);
        assert!(f.diagnostics.last().unwrap().is_error());
        assert_eq!(f.diagnostics.iter().filter(|d| d.is_error()).count(), 1);
        let ok = run(&b[..1], Gen::V3, Mode::CollectAll);
        assert!(!ok.invalid(), "{:?}", ok.diagnostics);
    }

    #[test]
    fn the_silent_count_is_the_reports_count() {
        let text =
            "NOP\nACTIVATE num_active_partitions=200\nNOP\nACTIVATE num_active_partitions=200\n";
        let b = parse_text(text, Gen::V3).unwrap();
        let mut bad = Bundle::ZERO;
        bad.0[0] = 0x10;
        for (bundles, gen) in [(&b[..], Gen::V3), (&b[..1], Gen::V3), (&[bad][..], Gen::V5)] {
            let inputs = [StreamInput {
                function: "act".into(),
                file: None,
                engine: Engine::Act,
                bundles,
            }];
            let full = run(bundles, gen, Mode::CollectAll);
            assert_eq!(count_l2_invalid(&inputs, gen), full.l2_invalid);
        }
        assert_eq!(run(&b, Gen::V3, Mode::CollectAll).l2_invalid, 2);
    }

    #[test]
    fn a_generation_without_l2_says_so_and_still_decodes() {
        let mut bad = Bundle::ZERO;
        bad.0[0] = 0x10;
        let v = run(&[bad], Gen::V5, Mode::CollectAll);
        assert!(v
            .diagnostics
            .iter()
            .any(|d| d.severity == Severity::NotChecked && d.rule == "runSingleISACheck"));
        assert_eq!(v.l2_invalid, 1);
        assert!(v.invalid());
    }
}
