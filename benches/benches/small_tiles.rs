//! Small and big tiles (`tpbsim_benches::small_tiles`), run as `sim run` runs a kernel
//! (machine set-up, L2 validation, the scheduler, operand checks, execution):
//!
//! * `small_tiles_mixed_128x8`: DVE add, ACT exp and POOL multiply on `[128 × 8]` fp32 tiles,
//!   three engines at once, in bundles/s. `benches/numpy_baseline.py` interprets the same
//!   bundles with one numpy call each.
//! * `big_tiles_add_128x2048`: DVE adds on `[128 × 2048]` fp32 tiles in bytes moved per second
//!   (two 1 MiB tiles read, one written per add), beside `memcpy` of a 1 MiB tile (read and
//!   written) in the same group and run.

use std::hint::black_box;

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use tpbsim_benches::small_tiles::{
    big_adds, mixed, run, BIG, BIG_INPUT_WORDS, MIXED_INPUT_WORDS, PARTITIONS,
};

const MIXED_BUNDLES: usize = 30_000;
const BIG_ADDS: usize = 400;

fn small_tiles(c: &mut Criterion) {
    tpbsim_sim::process::retain_freed_memory();
    let mut g = c.benchmark_group("small_tiles_mixed_128x8");
    g.sample_size(10);
    let k = mixed(MIXED_BUNDLES);
    let bundles: usize = k.streams.iter().map(Vec::len).sum();
    g.throughput(Throughput::Elements(bundles as u64));
    g.bench_function(format!("sim/{bundles}"), |b| {
        b.iter(|| black_box(run(&k, MIXED_INPUT_WORDS).chip.geom))
    });
    g.finish();

    let mut g = c.benchmark_group("big_tiles_add_128x2048");
    g.sample_size(10);
    let tile = (PARTITIONS * BIG * 4) as usize;
    let k = big_adds(BIG_ADDS);
    g.throughput(Throughput::Bytes((3 * tile * BIG_ADDS) as u64));
    g.bench_function(format!("sim/{BIG_ADDS}"), |b| {
        b.iter(|| black_box(run(&k, BIG_INPUT_WORDS).chip.geom))
    });
    let src = tpbsim_benches::pseudo_random_bytes(tile, 5);
    let mut dst = vec![0u8; tile];
    g.throughput(Throughput::Bytes((2 * tile * BIG_ADDS) as u64));
    g.bench_function(format!("baseline_memcpy/{BIG_ADDS}"), |b| {
        b.iter(|| {
            for _ in 0..BIG_ADDS {
                dst.copy_from_slice(black_box(&src));
                black_box(&mut dst);
            }
        })
    });
    g.finish();
}

criterion_group!(benches, small_tiles);
criterion_main!(benches);
