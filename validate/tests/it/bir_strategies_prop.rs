//! Properties of the BIR module strategies (`tpbsim_validate::strategies`): every generated
//! valid module verifies clean at its level; every broken module produces exactly its one
//! error (rule and code); BIR JSON export then import is the identity on generated modules.
//!
//! Case counts: `TPBSIM_PROPTEST_CASES` (default 256) split over the levels.
#![cfg(feature = "proptest")]

use proptest::prelude::*;
use tpbsim_validate::bir::{from_json_str, to_json_string, ArchLevel, Module};
use tpbsim_validate::diag::Mode;
use tpbsim_validate::registry::{PropertySet, Registry};
use tpbsim_validate::strategies::{arb_broken_module, arb_valid_module, BrokenModule};

fn cases() -> u32 {
    let total: u32 = std::env::var("TPBSIM_PROPTEST_CASES")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(256);
    (total / 4).max(1)
}

fn errors(m: &Module) -> Vec<(String, Option<u32>)> {
    Registry::l1()
        .verify(PropertySet::all(), m, Mode::CollectAll)
        .iter()
        .filter(|d| d.is_error())
        .map(|d| (d.to_string(), d.code))
        .collect()
}

fn error_keys(m: &Module) -> Vec<(String, Option<u32>)> {
    Registry::l1()
        .verify(PropertySet::all(), m, Mode::CollectAll)
        .iter()
        .filter(|d| d.is_error())
        .map(|d| (d.rule.to_string(), d.code))
        .collect()
}

fn any_level_valid() -> impl Strategy<Value = Module> {
    prop::sample::select(ArchLevel::ALL.to_vec()).prop_flat_map(arb_valid_module)
}

/// Levels where breakages are known (the strategy rejects every case elsewhere).
fn any_level_broken() -> impl Strategy<Value = BrokenModule> {
    prop::sample::select(vec![
        ArchLevel::Sunda,
        ArchLevel::Gen3,
        ArchLevel::CoreV4,
        ArchLevel::CoreV5,
    ])
    .prop_flat_map(arb_broken_module)
}

proptest! {
    #![proptest_config(ProptestConfig { cases: cases(), ..ProptestConfig::default() })]

    #[test]
    fn valid_modules_verify_clean(m in any_level_valid()) {
        let errs = errors(&m);
        prop_assert!(errs.is_empty(), "{:?}", errs);
    }

    #[test]
    fn broken_modules_report_exactly_their_rule(b in any_level_broken()) {
        let got = error_keys(&b.module);
        prop_assert_eq!(got, vec![(b.rule.to_string(), Some(b.code))], "{:?}", errors(&b.module));
    }

    #[test]
    fn json_round_trip_is_identity(m in any_level_valid()) {
        let text = to_json_string(&m);
        let back = from_json_str(&text);
        prop_assert!(back.is_ok(), "{:?}", back.err());
        prop_assert_eq!(back.ok(), Some(m));
    }

    #[test]
    fn broken_json_round_trip_is_identity(b in any_level_broken()) {
        let back = from_json_str(&to_json_string(&b.module));
        prop_assert_eq!(back.ok(), Some(b.module));
    }
}

/// Every level that lists breakages actually yields broken modules, and the valid strategy
/// yields non-empty modules wherever a unit is legal.
#[test]
fn strategies_produce_values_at_their_levels() {
    use proptest::strategy::ValueTree;
    use proptest::test_runner::TestRunner;
    let mut runner = TestRunner::deterministic();
    for arch in [
        ArchLevel::Sunda,
        ArchLevel::Gen3,
        ArchLevel::CoreV4,
        ArchLevel::CoreV5,
    ] {
        let tree = arb_broken_module(arch).new_tree(&mut runner);
        assert!(tree.is_ok(), "{arch:?}: no broken module");
        let mut nonempty = false;
        for _ in 0..32 {
            let m = arb_valid_module(arch)
                .new_tree(&mut runner)
                .expect("valid module")
                .current();
            nonempty |= m.functions[0].blocks[0].instructions.len() > 1;
        }
        assert!(nonempty, "{arch:?}: only empty modules");
    }
}
