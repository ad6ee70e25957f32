//! Cast-engine throughput on the common tile paths, each next to a plain copy of the same source
//! bytes measured in the same run (the baseline of the ratios in docs/perf.md, "Cast").

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use std::hint::black_box;
use tpbsim_isa::NumFormat;
use tpbsim_sim::numerics::{cast_slice, CastPolicy};

/// Elements per pass: 64 Ki elements (256 KiB of fp32), a tile that stays in the core's caches,
/// so the figures measure conversion work rather than DRAM bandwidth.
const N: usize = 1 << 16;

/// `N` source elements of `format`: finite values over a wide range (fp32 and bf16) or every
/// code in turn (FP8).
fn source(format: NumFormat) -> Vec<u8> {
    let raw = tpbsim_benches::pseudo_random_bytes(N * 4, 11);
    let floats = raw.chunks_exact(4).map(|c| {
        let bits = u32::from_le_bytes([c[0], c[1], c[2], c[3]]);
        // Exponents 2^-20 .. 2^20 with a random sign and mantissa.
        (bits & 0x807F_FFFF) | ((107 + (bits >> 23) % 41) << 23)
    });
    match format {
        NumFormat::Float32 => floats.flat_map(u32::to_le_bytes).collect(),
        NumFormat::Bfloat16 => floats
            .flat_map(|b| ((b >> 16) as u16).to_le_bytes())
            .collect(),
        NumFormat::Float8E4m3fn => (0..N).map(|i| i as u8).collect(),
        _ => unreachable!("not benchmarked"),
    }
}

fn bench_pair(c: &mut Criterion, from: NumFormat, to: NumFormat) {
    let src = source(from);
    let mut dst = vec![0u8; N * to.container_bytes()];
    let mut copy = vec![0u8; src.len()];
    let policy = CastPolicy::DEVICE;
    let mut g = c.benchmark_group(format!("cast/{from}->{to}"));
    g.throughput(Throughput::Elements(N as u64));
    g.sample_size(50);
    g.bench_function("cast_slice", |b| {
        b.iter(|| {
            cast_slice(black_box(&src), from, black_box(&mut dst), to, &policy)
                .expect("whole elements")
        })
    });
    g.bench_function("memcpy_source", |b| {
        b.iter(|| black_box(&mut copy).copy_from_slice(black_box(&src)))
    });
    g.finish();
}

fn casts(c: &mut Criterion) {
    bench_pair(c, NumFormat::Float32, NumFormat::Bfloat16);
    bench_pair(c, NumFormat::Bfloat16, NumFormat::Float32);
    bench_pair(c, NumFormat::Float32, NumFormat::Float8E4m3fn);
    bench_pair(c, NumFormat::Float8E4m3fn, NumFormat::Float32);
}

criterion_group!(benches, casts);
criterion_main!(benches);
