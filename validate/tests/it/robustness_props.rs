//! Lift and verify never panic: arbitrary byte streams, generated streams and their mutations,
//! for every generation and engine, go through decode, L2, lift, L1 and lowering with results
//! or diagnostics only. The layer differential (`fuzz::run`) runs on every generation and
//! engine as well.
//!
//! Case counts: `TPBSIM_PROPTEST_CASES` (default 256).

use proptest::prelude::*;
use tpbsim_isa::strategies::{arb_bytes, config};
use tpbsim_isa::{Bundle, Engine, Gen};
use tpbsim_validate::diag::Mode;
use tpbsim_validate::fuzz;
use tpbsim_validate::fuzz::generate::{self as fuzzgen, SplitMix64};
use tpbsim_validate::lift::{self, StreamInput};
use tpbsim_validate::registry::{PropertySet, Registry};

fn lift_verify_lower(gen: Gen, engine: Engine, bundles: &[Bundle]) {
    let input = StreamInput {
        function: "f".into(),
        file: None,
        engine,
        bundles,
    };
    let lifted = lift::lift_streams(&[input], gen, None);
    let _ = Registry::l1().verify(PropertySet::default_l1(), &lifted.module, Mode::CollectAll);
    for f in &lifted.module.functions {
        let _ = lift::lower_function(f, gen);
    }
    let _ = tpbsim_validate::l2::validate_stream(
        bundles,
        &tpbsim_validate::l2::StreamSpec {
            file: None,
            gen,
            engine,
        },
        Mode::CollectAll,
    );
}

/// A stream of generated bundles, about half of them mutated.
fn generated_stream(seed: u64, gen: Gen, n: usize) -> Vec<Bundle> {
    let mut rng = SplitMix64(seed);
    (0..n)
        .filter_map(|i| {
            let g = fuzzgen::any_valid_bundle(&mut rng, gen)?;
            Some(if i % 2 == 0 {
                g.bundle
            } else {
                fuzzgen::mutate(&mut rng, gen, g).bundle
            })
        })
        .collect()
}

proptest! {
    #![proptest_config(config())]

    #[test]
    fn lift_and_verify_never_panic_on_arbitrary_streams(
        bundles in prop::collection::vec(arb_bytes(), 0..6),
        g in 0usize..4,
        e in 0usize..5,
    ) {
        lift_verify_lower(Gen::ALL[g], Engine::ALL[e], &bundles);
    }

    #[test]
    fn lift_and_verify_never_panic_on_generated_and_mutated_streams(
        seed in any::<u64>(),
        g in 0usize..4,
        e in 0usize..5,
        n in 1usize..8,
    ) {
        let gen = Gen::ALL[g];
        lift_verify_lower(gen, Engine::ALL[e], &generated_stream(seed, gen, n));
    }
}

#[test]
fn the_differential_runs_on_every_generation_and_engine() {
    for gen in Gen::ALL {
        for engine in Engine::ALL {
            let cfg = fuzz::Config {
                gen,
                engine: Some(engine),
                cases: 40,
                seed: gen.index() as u64,
                format: None,
                keep_per_group: 1,
            };
            let r = fuzz::run(&cfg).unwrap_or_else(|e| panic!("{gen} {engine:?}: {e}"));
            assert_eq!(r.cases, 40, "{gen} {engine:?}");
            for d in &r.disagreements {
                assert_eq!(d.engine, engine);
                assert!(d.l1 != d.l2);
            }
        }
    }
}
