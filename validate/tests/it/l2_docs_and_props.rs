//! docs/l2.md names every L2 rule; the validator never panics on arbitrary bundles and the
//! silent gate agrees with its collecting twin.

use proptest::prelude::*;
use tpbsim_isa::{Bundle, Engine, Gen};
use tpbsim_validate::l2::{self, check_collect, check_silent, Outcome};

#[test]
fn docs_name_every_rule() {
    let root = concat!(env!("CARGO_MANIFEST_DIR"), "/..");
    let docs = std::fs::read_to_string(format!("{root}/docs/l2.md")).expect("docs/l2.md");
    let mut missing = vec![];
    let mut n = 0;
    let mut stack = vec![std::path::PathBuf::from(format!("{root}/validate/src/l2"))];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                stack.push(p);
                continue;
            }
            let src = std::fs::read_to_string(&p).unwrap();
            for part in src.split("rule!(").skip(1) {
                let Some(q) = part.find('"') else { continue };
                let rest = &part[q + 1..];
                let name = &rest[..rest.find('"').unwrap()];
                if name == "t_rule" {
                    continue;
                }
                n += 1;
                if !docs.contains(&format!("`{name}`")) {
                    missing.push(name.to_string());
                }
            }
        }
    }
    assert!(n > 50, "found only {n} rules");
    assert!(missing.is_empty(), "docs/l2.md does not name: {missing:?}");
}

fn cases() -> u32 {
    std::env::var("TPBSIM_PROPTEST_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(256)
}

fn arb_bundle() -> impl Strategy<Value = Bundle> {
    // Half the time keep a plausible header so the format gates are reached.
    (
        prop::array::uniform32(any::<u8>()),
        prop::array::uniform32(any::<u8>()),
        any::<bool>(),
        any::<u8>(),
    )
        .prop_map(|(a, b, plausible, op)| {
            let mut x = Bundle::ZERO;
            x.0[..32].copy_from_slice(&a);
            x.0[32..].copy_from_slice(&b);
            if plausible {
                const OPS: [u8; 24] = [
                    0x01, 0x02, 0x07, 0x09, 0x0A, 0xE3, 0x21, 0x41, 0x51, 0x72, 0x99, 0x43, 0x53,
                    0x93, 0x9A, 0xE6, 0x30, 0x42, 0x46, 0x47, 0x6B, 0xBC, 0xA0, 0x68,
                ];
                x.0[0] = OPS[op as usize % OPS.len()];
                x.0[1] = 0x10;
            }
            x
        })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(cases()))]

    #[test]
    fn never_panics_and_twins_agree(b in arb_bundle(), g in 0usize..3, e in 0usize..5, raw_engine in any::<u8>()) {
        let gen = [Gen::V2, Gen::V3, Gen::V4][g];
        let engine = Engine::ALL[e];
        let s = check_silent(gen, engine, &b);
        let c = check_collect(gen, engine, &b);
        prop_assert_eq!(s.failed, c.iter().any(|f| f.outcome == Outcome::Fail));
        // The entry points with arbitrary arguments never panic either.
        let _ = l2::is_valid_neuron_instruction(&b);
        let _ = l2::is_valid_neuron_isa_instruction(&b, raw_engine as u32);
        let _ = l2::is_valid_neuron_engine_instruction(&b, 4, raw_engine);
        let _ = l2::debug_invalid_neuron_engine_instruction(&b, raw_engine as u32 % 6, raw_engine);
        for f in &c {
            let d = l2::to_diagnostic(gen, &b, f, &l2::BundleLoc::default());
            let r = l2::render(&d, &b, gen);
            // A failure naming a field is marked under the disassembled bundle.
            if d.location.field.is_some() {
                prop_assert!(r.lines().nth(2).is_some_and(|l| l.contains('^')), "{}", r);
            }
            prop_assert!(f.field.start as usize + f.field.len as usize <= 64);
        }
    }

    #[test]
    fn arbitrary_lengths_never_panic(v in prop::collection::vec(any::<u8>(), 0..130), g in 0usize..4, be in any::<u8>()) {
        let gen = Gen::ALL[g];
        let mut c = l2::rule::Collect::default();
        l2::run_single_isa_check(gen, l2::BirInstr { opcode: Some(be as u16), engine: be % 8 }, &v, &mut c);
        if v.len() != 64 && gen != Gen::V5 {
            prop_assert_eq!(c.failures[0].rule.name, "runSingleISACheck.length");
        }
    }
}
