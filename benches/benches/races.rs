//! Race-check overhead: each clean `testdata/kernels/*.neff` run plainly and with the
//! happens-before race detector (`sim run --check-races`), in the same process, so the ratio
//! checked / plain is measured against a baseline of the same run. Also the timeline (`--trace`)
//! alone. Reported in `docs/perf.md` "Race check". `race_counter_partial` adds the replay the
//! schedule-independent resolution makes when a wait's guaranteed clock differs from the run's.
//! Runs with the allocator settings `sim` uses ([`tpbsim_sim::process::retain_freed_memory`]),
//! like the kernels benchmark.

use std::hint::black_box;

use criterion::{criterion_group, criterion_main, Criterion};
use tpbsim_benches::{load_kernel, KERNELS};
use tpbsim_sim::machine::{Machine, RunOptions};

#[derive(Clone, Copy)]
enum Mode {
    Plain,
    Races,
    Timeline,
}

fn races(c: &mut Criterion) {
    // The allocator settings of `sim` (see `tpbsim_sim::process`).
    tpbsim_sim::process::retain_freed_memory();
    let mut g = c.benchmark_group("race_check");
    g.sample_size(20);
    // `race_counter_partial` (planted) is the case where the schedule-independent resolution
    // differs from the run and the run is replayed: the replay's cost.
    for name in KERNELS.iter().chain(&["race_counter_partial"]) {
        let (k, gen) = load_kernel(name);
        for (mode, label) in [
            (Mode::Plain, "plain"),
            (Mode::Races, "check_races"),
            (Mode::Timeline, "timeline"),
        ] {
            g.bench_function(format!("{name}/{label}"), |b| {
                b.iter(|| {
                    let mut m = Machine::new(&k, gen).expect("machine");
                    m.set_validator(std::sync::Arc::new(tpbsim_validate::l2::L2Check));
                    match mode {
                        Mode::Plain => {}
                        Mode::Races => m.enable_race_check(),
                        Mode::Timeline => m.enable_timeline(),
                    }
                    let st = m.run(&RunOptions::default(), &mut |_| {}).expect("run");
                    black_box((st.sched.steps, m.race_findings().len()))
                })
            });
        }
    }
    g.finish();
}

criterion_group!(benches, races);
criterion_main!(benches);
