//! Whole-kernel simulation time for each `testdata/kernels/*.neff` (machine set-up, inputs,
//! every bundle with L2 validation, outputs in DRAM) — the small kernels and the looped,
//! double-buffered ones of 10^4+ executed bundles — and the `sim run` load path (read the
//! NEFF, build the kernel, allocate the machine) on the smallest kernel. The numpy reference
//! time of the same computation (`make_refs.py --time`) is recorded beside it in
//! `docs/perf.md` "Kernels". Both groups run with the allocator settings `sim` uses
//! ([`tpbsim_sim::process::retain_freed_memory`]).

use std::hint::black_box;

use criterion::{criterion_group, criterion_main, Criterion};
use tpbsim_benches::{kernel_path, load_kernel, KERNELS};
use tpbsim_neff::{Neff, ReadOptions};
use tpbsim_sim::machine::load::kernel_from_neff;
use tpbsim_sim::machine::{Machine, RunOptions};

/// The looped, double-buffered kernels (`sim/examples/build_big_kernels.rs`), each executing
/// 10^4 bundles or more.
const LOOPED: [&str; 3] = ["matmul_k64", "layernorm_1024", "attention_512"];

fn kernels(c: &mut Criterion) {
    // The allocator settings of `sim` (see `tpbsim_sim::process`).
    tpbsim_sim::process::retain_freed_memory();
    let mut g = c.benchmark_group("kernel");
    g.sample_size(20);
    for name in KERNELS.into_iter().chain(LOOPED) {
        let (k, gen) = load_kernel(name);
        g.bench_function(name, |b| {
            b.iter(|| {
                let mut m = Machine::new(&k, gen).expect("machine");
                m.set_validator(std::sync::Arc::new(tpbsim_validate::l2::L2Check));
                let st = m.run(&RunOptions::default(), &mut |_| {}).expect("run");
                black_box((st.sched.steps, m.var("out").map(|o| o[0])))
            })
        });
    }
    g.finish();
}

fn startup(c: &mut Criterion) {
    let mut g = c.benchmark_group("startup");
    g.sample_size(20);
    g.bench_function("load_vadd", |b| {
        b.iter(|| {
            let n = Neff::read(kernel_path("vadd"), &ReadOptions::default()).expect("read");
            let k = kernel_from_neff(&n).expect("load");
            let m = Machine::new(&k, k.gen.expect("gen")).expect("machine");
            black_box(m.var("x").map(|x| x.len()))
        })
    });
    g.finish();
}

criterion_group!(benches, kernels, startup);
criterion_main!(benches);
