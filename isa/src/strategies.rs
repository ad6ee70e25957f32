//! proptest strategies for bundles and typed formats (cargo feature `proptest`), reusable by
//! other crates, and the round-trip properties of decode, encode and the text form.
//!
//! Case counts default to 256; set `TPBSIM_PROPTEST_CASES` to raise them.

use crate::formats::LAYOUT_META;
use crate::inst::LayoutMeta;
use crate::spec;
use crate::{decode, Bundle, Gen, Inst};
use proptest::prelude::*;
use proptest::test_runner::Config;

/// proptest configuration: `TPBSIM_PROPTEST_CASES` cases (default 256).
pub fn config() -> Config {
    let cases = std::env::var("TPBSIM_PROPTEST_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(256);
    Config {
        cases,
        failure_persistence: None,
        ..Config::default()
    }
}

/// Any 64 bytes.
pub fn arb_bytes() -> impl Strategy<Value = Bundle> {
    (
        prop::array::uniform32(any::<u8>()),
        prop::array::uniform32(any::<u8>()),
    )
        .prop_map(|(a, b)| {
            let mut out = [0u8; 64];
            out[..32].copy_from_slice(&a);
            out[32..].copy_from_slice(&b);
            Bundle(out)
        })
}

/// Opcode bytes present in `gen`.
pub fn present_opcodes(gen: Gen) -> Vec<u8> {
    spec::opcodes()
        .iter()
        .filter(|r| r.is_present(gen))
        .map(|r| r.code)
        .collect()
}

/// Any 64 bytes whose opcode is present in `gen` (so decode succeeds).
pub fn arb_bundle(gen: Gen) -> impl Strategy<Value = Bundle> {
    (prop::sample::select(present_opcodes(gen)), arb_bytes()).prop_map(|(op, mut b)| {
        b.0[0] = op;
        b
    })
}

/// A canonical bundle of `gen`: present opcode, `inst_word_len` 0x10, reserved bytes zero.
pub fn arb_canonical_bundle(gen: Gen) -> impl Strategy<Value = Bundle> {
    arb_bundle(gen).prop_map(move |mut b| {
        b.0[1] = crate::INST_WORD_LEN;
        let i = decode(&b, gen).expect("the opcode is present in gen, so decode succeeds");
        for &(s, e) in i.meta().reserved {
            b.0[s as usize..e as usize].fill(0);
        }
        b
    })
}

/// Layouts (with the generations they apply to) of every typed format.
pub fn layouts() -> impl Iterator<Item = (&'static LayoutMeta, Gen)> {
    LAYOUT_META.iter().flat_map(|l| {
        Gen::ALL
            .into_iter()
            .filter(move |g| l.gens[g.index()])
            .map(move |g| (l, g))
    })
}

/// Valid instructions of one typed layout in `gen`: every field arbitrary; reserved bytes zero
/// in about half of the cases and arbitrary otherwise (non-canonical bundles). `None` when no
/// opcode present in `gen` binds the layout.
pub fn arb_layout_inst(layout: &'static LayoutMeta, gen: Gen) -> Option<BoxedStrategy<Inst>> {
    let ops = layout.opcodes(gen);
    if ops.is_empty() {
        return None;
    }
    let s = (prop::sample::select(ops), arb_bytes(), any::<bool>())
        .prop_filter_map(
            "selector leads elsewhere",
            move |((op, sub), mut b, canonical)| {
                b.0[0] = op;
                if let Some((off, v)) = sub {
                    b.0[off as usize] = v;
                }
                if canonical {
                    b.0[1] = crate::INST_WORD_LEN;
                    for &(s, e) in layout.reserved {
                        b.0[s as usize..e as usize].fill(0);
                    }
                }
                let i = decode(&b, gen).ok()?;
                (i.meta().rust_name == layout.rust_name).then_some(i)
            },
        )
        .boxed();
    Some(s)
}

/// Any decodable instruction of `gen`.
pub fn arb_inst(gen: Gen) -> impl Strategy<Value = Inst> {
    arb_bundle(gen).prop_filter_map("decodes", move |b| decode(&b, gen).ok())
}

/// Any generation.
pub fn arb_gen() -> impl Strategy<Value = Gen> {
    prop::sample::select(Gen::ALL.to_vec())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::text::{disasm_bundle, disasm_bundle_as, parse_line, Syntax};
    use proptest::test_runner::TestRunner;

    #[test]
    fn decode_encode_identity_for_every_layout_and_generation() {
        let per = (config().cases / 8).max(32);
        let mut n = 0;
        for (layout, gen) in layouts() {
            let Some(strategy) = arb_layout_inst(layout, gen) else {
                continue;
            };
            n += 1;
            let mut runner = TestRunner::new(Config {
                cases: per,
                ..config()
            });
            runner
                .run(&strategy, |inst| {
                    let b = inst.encode();
                    let back = decode(&b, gen).map_err(|e| TestCaseError::fail(e.to_string()))?;
                    prop_assert_eq!(back, inst);
                    prop_assert_eq!(back.meta().rust_name, layout.rust_name);
                    Ok(())
                })
                .unwrap_or_else(|e| panic!("{} on {gen}: {e}", layout.rust_name));
        }
        assert!(n > 60, "only {n} layout/generation pairs");
    }

    #[test]
    fn text_round_trip_for_every_layout_and_generation() {
        let per = (config().cases / 16).max(16);
        for (layout, gen) in layouts() {
            let Some(strategy) = arb_layout_inst(layout, gen) else {
                continue;
            };
            let mut runner = TestRunner::new(Config {
                cases: per,
                ..config()
            });
            runner
                .run(&strategy, |inst| {
                    let b = inst.encode();
                    for syntax in [Syntax::Tpbsim, Syntax::Neuron] {
                        let t = disasm_bundle_as(&b, gen, syntax);
                        let back = parse_line(&t, gen)
                            .map_err(|e| TestCaseError::fail(format!("{t}: {e}")))?;
                        prop_assert_eq!(back, Some(b), "{}", t);
                    }
                    Ok(())
                })
                .unwrap_or_else(|e| panic!("{} on {gen}: {e}", layout.rust_name));
        }
    }

    proptest! {
        #![proptest_config(config())]

        #[test]
        fn encode_decode_identity_on_arbitrary_bytes(b in arb_bytes(), gen in arb_gen()) {
            // Decode never panics; it accepts exactly the opcodes present in the generation,
            // and whatever it accepts encodes back to the same bytes.
            let present = present_opcodes(gen).contains(&b.0[0]);
            match decode(&b, gen) {
                Ok(i) => {
                    prop_assert!(present, "decoded an absent opcode 0x{:02x}", b.0[0]);
                    prop_assert_eq!(i.encode(), b);
                    let _ = i.nonzero_reserved();
                    let _ = crate::text::bundle_json(0, &b, gen);
                }
                Err(e) => {
                    prop_assert!(!present, "0x{:02x} is present in {}: {}", b.0[0], gen, e);
                    prop_assert_eq!(
                        e,
                        crate::inst::DecodeError::UnknownOpcode { opcode: b.0[0], gen }
                    );
                }
            }
        }

        #[test]
        fn encode_decode_identity_on_present_opcodes(
            (gen, b) in arb_gen().prop_flat_map(|g| (Just(g), arb_bundle(g)))
        ) {
            let i = decode(&b, gen)
                .map_err(|e| TestCaseError::fail(format!("a present opcode: {e}")))?;
            prop_assert_eq!(i.encode(), b);
        }

        #[test]
        fn asm_of_disasm_is_identity(b in arb_bytes(), gen in arb_gen()) {
            let t = disasm_bundle(&b, gen);
            prop_assert_eq!(parse_line(&t, gen).map_err(|e| TestCaseError::fail(format!("{t}: {e}")))?, Some(b), "{}", t);
            let t = disasm_bundle_as(&b, gen, Syntax::Neuron);
            prop_assert_eq!(parse_line(&t, gen).map_err(|e| TestCaseError::fail(format!("{t}: {e}")))?, Some(b), "{}", t);
        }

        #[test]
        fn asm_of_disasm_is_identity_on_canonical(gen in arb_gen(), seed in arb_canonical_bundle(Gen::V4)) {
            let t = disasm_bundle(&seed, gen);
            prop_assert_eq!(parse_line(&t, gen).map_err(|e| TestCaseError::fail(format!("{t}: {e}")))?, Some(seed));
        }
    }
}
