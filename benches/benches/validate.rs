//! L2 validation throughput on a 64 MiB valid mixed DVE stream (TensorTensor, TensorScalar,
//! Copy, RangeSelect, EventSemaphore from testdata/l2/fixtures.txt), with 1 and 2 threads,
//! next to a raw checksum scan of the same bytes measured in the same run.

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use std::hint::black_box;
use tpbsim_isa::{Bundle, Engine, Gen};
use tpbsim_validate::diag::Mode;
use tpbsim_validate::l2::{validate_stream, StreamSpec};

const GEN: Gen = Gen::V3;
const ENGINE: Engine = Engine::Dve;

fn mix() -> Vec<Bundle> {
    let v = tpbsim_benches::l2_valid_mix(GEN, ENGINE);
    assert!(v.len() >= 4, "mix too small: {}", v.len());
    v
}

fn validate(c: &mut Criterion) {
    let len = 64usize << 20;
    let kinds = mix();
    let bundles: Vec<Bundle> = (0..len / 64)
        .map(|i| kinds[(i * 7 + i / 13) % kinds.len()])
        .collect();
    let spec = StreamSpec {
        file: None,
        gen: GEN,
        engine: ENGINE,
    };
    let mut g = c.benchmark_group("validate");
    g.throughput(Throughput::Bytes(len as u64));
    g.sample_size(10);
    g.bench_function("raw_scan_checksum", |b| {
        b.iter(|| {
            let words: &[u64] = bytemuck_words(&bundles);
            let mut acc = 0u64;
            for w in words {
                acc = acc.wrapping_add(*w);
            }
            black_box(acc)
        })
    });
    for threads in [1usize, 2] {
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(threads)
            .build()
            .expect("pool");
        // Sanity: the stream is valid and fully checked.
        let r = pool.install(|| validate_stream(&bundles, &spec, Mode::CollectAll));
        assert!(
            r.diagnostics.is_empty() && r.invalid == 0,
            "{:?}",
            r.diagnostics.first()
        );
        g.bench_function(format!("l2_stream_{threads}t"), |b| {
            b.iter(|| {
                black_box(
                    pool.install(|| validate_stream(black_box(&bundles), &spec, Mode::CollectAll)),
                )
            })
        });
    }
    g.finish();
}

fn bytemuck_words(b: &[Bundle]) -> &[u64] {
    bytemuck::cast_slice(b)
}

criterion_group!(benches, validate);
criterion_main!(benches);
