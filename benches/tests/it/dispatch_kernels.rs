//! The in-memory kernels of the dispatch benchmark do what they claim: every bundle passes L2,
//! executes, and the adds' accumulator ends at the bundle count.

use tpbsim_benches::dispatch::{adds, nops, GEN};
use tpbsim_isa::Engine;
use tpbsim_sim::machine::{Machine, RunOptions};

fn sbuf_word(m: &Machine, byte: usize) -> f32 {
    let p = m.chip.partition(tpbsim_sim::machine::Space::Sbuf, 0);
    f32::from_le_bytes(p[byte..byte + 4].try_into().unwrap())
}

#[test]
fn nops_issue_one_step_each() {
    let k = nops(10_000);
    let mut m = Machine::new(&k, GEN).unwrap();
    m.set_validator(std::sync::Arc::new(tpbsim_validate::l2::L2Check));
    let st = m.run(&RunOptions::default(), &mut |_| {}).unwrap();
    assert_eq!(st.sched.steps, 10_000);
    assert_eq!(st.sched.per_engine[Engine::Dve as usize], 10_000);
}

#[test]
fn adds_accumulate_the_bundle_count() {
    let n = 20_000;
    // Every position holds the same bytes: decoded and validated once, then planned.
    let k = adds(n);
    let mut m = Machine::new(&k, GEN).unwrap();
    m.set_validator(std::sync::Arc::new(tpbsim_validate::l2::L2Check));
    m.chip.partition_mut(tpbsim_sim::machine::Space::Sbuf, 0)[4..8]
        .copy_from_slice(&1f32.to_le_bytes());
    let st = m.run(&RunOptions::default(), &mut |_| {}).unwrap();
    assert_eq!(st.sched.steps, n as u64);
    assert_eq!(sbuf_word(&m, 0), n as f32);
}

/// One timed pass of each kernel (`--ignored --nocapture`), for a look between benchmark runs.
#[test]
#[ignore]
fn time_once() {
    for (name, k) in [("nop", nops(200_000)), ("add", adds(200_000))] {
        let mut m = Machine::new(&k, GEN).unwrap();
        m.set_validator(std::sync::Arc::new(tpbsim_validate::l2::L2Check));
        let t = std::time::Instant::now();
        let st = m.run(&RunOptions::default(), &mut |_| {}).unwrap();
        let dt = t.elapsed();
        eprintln!(
            "{name}: {} bundles in {dt:?}, {:.2} M bundles/s",
            st.sched.steps,
            st.sched.steps as f64 / dt.as_secs_f64() / 1e6
        );
    }
}
