//! Instruction-count harness for the L2 silent gate: the valid v3 DVE mix of the `validate`
//! benchmark (fixtures that pass every rule), `N` bundles (first argument, default 100,000),
//! checked with `check_silent` in one thread. Run under
//! `valgrind --tool=callgrind --collect-atstart=no --toggle-collect=l2_silent::run` and divide
//! the instruction count by `N` for the per-bundle cost.

use std::hint::black_box;
use tpbsim_isa::{Bundle, Engine, Gen};
use tpbsim_validate::l2::check_silent;

const GEN: Gen = Gen::V3;
const ENGINE: Engine = Engine::Dve;

fn mix() -> Vec<Bundle> {
    let v = tpbsim_benches::l2_valid_mix(GEN, ENGINE);
    assert!(v.len() >= 4, "mix too small: {}", v.len());
    v
}

#[inline(never)]
fn run(bundles: &[Bundle]) -> usize {
    bundles
        .iter()
        .filter(|b| check_silent(GEN, ENGINE, black_box(b)).failed)
        .count()
}

fn main() {
    let n: usize = std::env::args()
        .nth(1)
        .and_then(|a| a.parse().ok())
        .unwrap_or(100_000);
    let kinds = mix();
    assert!(!kinds.is_empty());
    let bundles: Vec<Bundle> = (0..n)
        .map(|i| kinds[(i * 7 + i / 13) % kinds.len()])
        .collect();
    let failed = run(&bundles);
    assert_eq!(failed, 0);
    println!("{n} bundles, {} kinds", kinds.len());
}
