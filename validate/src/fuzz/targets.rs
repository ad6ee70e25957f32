//! The bodies of the cargo-fuzz targets (`fuzz/`), as plain functions so that a stable test
//! (`validate/tests/it/fuzz_corpus.rs`) replays the seed corpus and every regression input.
//!
//! Each body must return normally on any input: errors are values, never panics.

use tpbsim_isa::{decode, Bundle, Engine, Gen, BUNDLE_SIZE};
use tpbsim_neff::{Neff, ReadOptions};

use crate::diag::Mode;
use crate::l2::{self, StreamSpec};
use crate::lift::{lift_streams, lower_function, StreamInput};
use crate::registry::{PropertySet, Registry};

/// The generation and engine a target input selects with its first byte (bits 0..1 the
/// generation, bits 2..4 the engine modulo 5), and the rest of the input.
pub fn select(data: &[u8]) -> (Gen, Engine, &[u8]) {
    match data.split_first() {
        Some((&b, rest)) => (
            Gen::ALL[(b & 3) as usize],
            Engine::ALL[((b >> 2) % 5) as usize],
            rest,
        ),
        None => (Gen::V2, Engine::Pe, data),
    }
}

/// The bundles of `bytes` (a trailing partial bundle is dropped).
fn bundles(bytes: &[u8]) -> Vec<Bundle> {
    bytes
        .chunks_exact(BUNDLE_SIZE)
        .filter_map(Bundle::from_slice)
        .collect()
}

/// `decode_validate`: decode every bundle and run the L2 stream validator, the three entry
/// points and the length gate on the raw (possibly odd-length) bytes.
pub fn decode_validate(data: &[u8]) {
    let (gen, engine, rest) = select(data);
    let bs = bundles(rest);
    for b in &bs {
        if let Ok(i) = decode(b, gen) {
            let _ = i.encode();
            let _ = tpbsim_isa::text::disasm_bundle(b, gen);
        }
        let _ = l2::is_valid_neuron_instruction(b);
        let _ = l2::is_valid_neuron_isa_instruction(b, 3);
        let _ = l2::is_valid_neuron_engine_instruction(b, 4, engine.wire_id());
    }
    if l2::GENS.contains(&gen) {
        let spec = StreamSpec {
            file: None,
            gen,
            engine,
        };
        let _ = l2::validate_stream(&bs, &spec, Mode::CollectAll);
        let mut sink = l2::rule::Collect::default();
        l2::run_single_isa_check(
            gen,
            l2::BirInstr::from_stream(engine),
            &rest[..rest.len().min(130)],
            &mut sink,
        );
    }
}

/// `lift_verify`: lift the stream, verify the module with L1 and lower it back.
pub fn lift_verify(data: &[u8]) {
    let (gen, engine, rest) = select(data);
    let bs = bundles(rest);
    let input = StreamInput {
        function: "fuzz".into(),
        file: None,
        engine,
        bundles: &bs,
    };
    let lifted = lift_streams(&[input], gen, None);
    let _ = Registry::l1().verify(PropertySet::default_l1(), &lifted.module, Mode::CollectAll);
    for f in &lifted.module.functions {
        let _ = lower_function(f, gen);
    }
}

/// `neff_read`: read the bytes as a NEFF (hash checked and not), then every subgraph, stream,
/// sidecar and the `neff.json` description.
pub fn neff_read(data: &[u8]) {
    for verify_hash in [true, false] {
        let opts = ReadOptions {
            verify_hash,
            ..ReadOptions::default()
        };
        let Ok(n) = Neff::from_bytes(data, &opts) else {
            continue;
        };
        let _ = n.neff_json();
        for d in n.subgraph_dirs() {
            let Ok(sg) = n.subgraph(&d) else { continue };
            for e in Engine::ALL {
                if let Some(s) = sg.stream(e) {
                    for b in s.bundles() {
                        let _ = decode(b, Gen::V3);
                    }
                }
                let _ = sg.sidecar(e);
            }
        }
    }
}

/// `bir_json`: parse the bytes as a BIR JSON module, verify it with L1 and write it back.
pub fn bir_json(data: &[u8]) {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    if let Ok(m) = crate::bir::from_json_str(text) {
        let _ = Registry::l1().verify(PropertySet::default_l1(), &m, Mode::CollectAll);
        let _ = crate::bir::to_json_string(&m);
    }
}

/// A fuzz target: its name and the function that takes one input.
pub type Target = (&'static str, fn(&[u8]));

/// Every target by name.
pub const TARGETS: &[Target] = &[
    ("decode_validate", decode_validate),
    ("lift_verify", lift_verify),
    ("neff_read", neff_read),
    ("bir_json", bir_json),
];
