//! The machine never panics on L2-valid streams: every run of generated, L2-valid bundles on
//! every engine ends in a result or a reported fault (deadlock, out-of-bounds access,
//! unsupported operation, step budget), within a bounded number of steps.
//!
//! Streams come from `tpbsim_validate::fuzz::generate` (valid strategies, filtered through L2 so only
//! bundles the wire validator accepts are run). Case count: `TPBSIM_PROPTEST_CASES` / 4
//! (default 64).

use proptest::prelude::*;
use tpbsim_isa::NumFormat;
use tpbsim_isa::{Bundle, Gen};
use tpbsim_sim::machine::{Kernel, Machine, RunOptions, VarKind, VarSpec};
use tpbsim_validate::fuzz::generate::{self as fuzzgen, Entropy, SplitMix64};
use tpbsim_validate::l2;

fn cases() -> u32 {
    std::env::var("TPBSIM_PROPTEST_CASES")
        .ok()
        .and_then(|v| v.parse::<u32>().ok())
        .map_or(64, |c| (c / 4).max(1))
}

/// Up to `n` L2-valid bundles per engine stream of `gen`.
fn streams(seed: u64, gen: Gen, n: usize) -> [Vec<Bundle>; 5] {
    let mut rng = SplitMix64(seed);
    let mut s: [Vec<Bundle>; 5] = Default::default();
    for _ in 0..n * 8 {
        let Some(g) = fuzzgen::any_valid_bundle(&mut rng, gen) else {
            continue;
        };
        let e = g.engine as usize;
        if s[e].len() >= n || l2::check_silent(gen, g.engine, &g.bundle).failed {
            continue;
        }
        s[e].push(g.bundle);
    }
    // Sometimes end each stream with a halt-free tail: a stream may also just run out.
    if rng.chance(1, 2) {
        for (e, st) in s.iter_mut().enumerate() {
            st.truncate(1 + e % 3);
        }
    }
    s
}

fn kernel(gen: Gen, streams: [Vec<Bundle>; 5]) -> Kernel {
    let var = |id, name: &str, kind| VarSpec {
        id,
        name: name.into(),
        kind,
        format: NumFormat::Float32,
        shape: vec![4, 8],
        size: 128,
        init: None,
    };
    Kernel {
        gen: Some(gen),
        streams,
        vars: vec![var(1, "x", VarKind::Input), var(2, "y", VarKind::Output)],
        world: 1,
        ..Kernel::default()
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: cases(), failure_persistence: None, ..ProptestConfig::default() })]

    #[test]
    fn machine_never_panics_on_l2_valid_streams(seed in any::<u64>(), g in 0usize..3, n in 1usize..6) {
        let gen = [Gen::V2, Gen::V3, Gen::V4][g];
        let k = kernel(gen, streams(seed, gen, n));
        // The kernel's two variables are well formed: setting it up cannot fail.
        let mut m = Machine::new(&k, gen)
            .map_err(|e| TestCaseError::fail(format!("setup: {e}")))?;
        m.set_var("x", &[0x3Fu8; 128])
            .map_err(|e| TestCaseError::fail(format!("set_var: {e}")))?;
        // Ok or a fault, never a panic; the step budget bounds runaway loops.
        match m.run(&RunOptions { max_steps: 20_000, ..Default::default() }, &mut |_| {}) {
            Ok(st) => {
                prop_assert!(st.sched.steps <= 20_000);
                prop_assert_eq!(st.sched.per_engine.iter().sum::<u64>(), st.sched.steps);
            }
            Err(f) => {
                // A fault names its kind and where it happened.
                let text = f.to_string();
                prop_assert!(
                    ["deadlock", "out-of-bounds", "invalid-bundle", "not-simulated", "step-budget", "execution"]
                        .contains(&f.kind()),
                    "{}", f.kind()
                );
                prop_assert!(text.contains("bundle #") || text.contains(" #"), "{}", text);
            }
        }
    }
}
