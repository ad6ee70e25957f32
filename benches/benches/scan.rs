//! Baseline: a raw checksum pass over a memory-mapped stream (the reference the decode and
//! validate benchmarks are compared against in the same run).

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use std::hint::black_box;
use std::io::Write;

fn raw_scan(c: &mut Criterion) {
    let len = 64 << 20;
    let data = tpbsim_benches::pseudo_random_bytes(len, 7);
    let mut f = tempfile::NamedTempFile::new().expect("temp file");
    f.write_all(&data).expect("write");
    f.flush().expect("flush");
    let map = unsafe { memmap2::Mmap::map(f.as_file()).expect("mmap") };
    let mut g = c.benchmark_group("raw_scan");
    g.throughput(Throughput::Bytes(len as u64));
    g.sample_size(10);
    g.bench_function("checksum_u64", |b| {
        b.iter(|| {
            let words: &[u64] = bytemuck_cast(&map);
            let mut acc = 0u64;
            for w in words {
                acc = acc.wrapping_add(*w);
            }
            black_box(acc)
        })
    });
    g.finish();
}

fn bytemuck_cast(b: &[u8]) -> &[u64] {
    // A mapping is page-aligned; the length is a multiple of 8 by construction.
    let (pre, mid, _) = unsafe { b.align_to::<u64>() };
    assert!(pre.is_empty());
    mid
}

criterion_group!(benches, raw_scan);
criterion_main!(benches);
