//! Lifter throughput: the engine streams of the bundled kernels (matmul_bf16's PE stream of
//! LDWEIGHTS + MATMUL pairs, softmax's DVE and ACT streams) repeated to 64 Ki bundles each,
//! lifted to BIR and lowered back, next to a baseline measured in the same run: decoding the same
//! bundles with `tpbsim_isa::decode`.

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use std::hint::black_box;
use tpbsim_isa::{decode, Bundle, Engine, Gen};
use tpbsim_neff::{Neff, ReadOptions};
use tpbsim_sim::machine::load::target_gen;
use tpbsim_validate::lift::{lift_stream, lower_function, StreamInput};

const BUNDLES: usize = 1 << 16;

/// One engine stream of a bundled kernel, repeated to (at most) `BUNDLES` bundles, and the
/// generation its NEFF names.
fn stream(kernel: &str, engine: Engine) -> (Gen, Vec<Bundle>) {
    let path = format!(
        "{}/../testdata/kernels/{kernel}.neff",
        env!("CARGO_MANIFEST_DIR")
    );
    let n = Neff::read(&path, &ReadOptions::default()).expect("kernel NEFF");
    let gen = target_gen(&n).expect("neff.json").expect("target_arch");
    let sg = n
        .subgraphs()
        .expect("subgraphs")
        .into_iter()
        .next()
        .expect("a subgraph");
    let one = sg.stream(engine).expect("engine stream").bundles().to_vec();
    // Whole copies only, so every multi-bundle sequence stays complete.
    (
        gen,
        one.iter()
            .copied()
            .cycle()
            .take(BUNDLES - BUNDLES % one.len())
            .collect(),
    )
}

fn lift(c: &mut Criterion) {
    let mut g = c.benchmark_group("lift");
    g.sample_size(10);
    for (name, kernel, engine) in [
        ("pe_matmul", "matmul_bf16", Engine::Pe),
        ("dve_softmax", "softmax", Engine::Dve),
        ("act_softmax", "softmax", Engine::Act),
    ] {
        let (gen, bundles) = stream(kernel, engine);
        let input = StreamInput {
            function: "f".into(),
            file: None,
            engine,
            bundles: &bundles,
        };
        let lifted = lift_stream(&input, gen);
        assert_eq!(lifted.generic_bundles, 0, "{name}: every bundle lifts");
        assert_eq!(
            lower_function(&lifted.function, gen).expect("lower"),
            bundles
        );
        g.throughput(Throughput::Elements(bundles.len() as u64));
        g.bench_function(format!("{name}/baseline_decode"), |b| {
            b.iter(|| {
                black_box(
                    bundles
                        .iter()
                        .filter(|x| decode(black_box(x), gen).is_ok())
                        .count(),
                )
            })
        });
        g.bench_function(format!("{name}/lift"), |b| {
            b.iter(|| black_box(lift_stream(black_box(&input), gen).lifted_bundles))
        });
        g.bench_function(format!("{name}/lower"), |b| {
            b.iter(|| black_box(lower_function(black_box(&lifted.function), gen).map(|v| v.len())))
        });
    }
    g.finish();
}

criterion_group!(benches, lift);
criterion_main!(benches);
