//! Per-bundle cost of the simulator: kernels built in memory (`tpbsim_benches::dispatch`) of
//! 10^4, 10^5 and 10^6 bundles on one DVE stream — NOPs, and one-partition one-element fp32
//! adds — run as `sim run` runs them (machine set-up, L2 validation, scheduler, waits and
//! updates, operand checks, execution), throughput in bundles/s. The baseline, in the same
//! group and run, decodes the same stream (`tpbsim_isa::decode` on every bundle).

use std::hint::black_box;

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use tpbsim_benches::dispatch::{adds, nops, GEN};
use tpbsim_sim::machine::{Machine, RunOptions};

const SIZES: [usize; 3] = [10_000, 100_000, 1_000_000];

fn run(k: &tpbsim_sim::machine::Kernel) -> u64 {
    let mut m = Machine::new(k, GEN).expect("machine");
    m.set_validator(std::sync::Arc::new(tpbsim_validate::l2::L2Check));
    let one = m.chip.geom.sbuf_address(0, 4);
    m.chip
        .write_flat(one, 4)
        .expect("inside SBUF")
        .copy_from_slice(&1f32.to_le_bytes());
    let st = m.run(&RunOptions::default(), &mut |_| {}).expect("run");
    st.sched.steps
}

fn dispatch(c: &mut Criterion) {
    tpbsim_sim::process::retain_freed_memory();
    for (name, build) in [
        ("nop", nops as fn(usize) -> _),
        ("add_1x1_f32", adds as fn(usize) -> _),
    ] {
        let mut g = c.benchmark_group(format!("dispatch_{name}"));
        g.sample_size(10);
        for n in SIZES {
            let k = build(n);
            g.throughput(Throughput::Elements(n as u64));
            g.bench_function(format!("sim/{n}"), |b| b.iter(|| black_box(run(&k))));
            let stream = &k.streams[tpbsim_isa::Engine::Dve as usize];
            g.bench_function(format!("baseline_decode/{n}"), |b| {
                b.iter(|| {
                    for x in stream {
                        let _ = black_box(tpbsim_isa::decode(x, GEN));
                    }
                })
            });
        }
        g.finish();
    }
}

criterion_group!(benches, dispatch);
criterion_main!(benches);
