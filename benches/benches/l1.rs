//! L1 throughput: BIR JSON import and the full L1 registry over a module of ~100k
//! instructions (the clean core_v4 fixture's instructions repeated), each next to a baseline
//! measured in the same run: parsing the same text into a `serde_json::Value`, and a bare walk
//! over the module's instructions.

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use std::hint::black_box;
use tpbsim_validate::bir::{from_json_value, to_json_string, Module};
use tpbsim_validate::diag::Mode;
use tpbsim_validate::registry::{PropertySet, Registry};

const COPIES: usize = 6000;

fn module() -> Module {
    let text = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../testdata/bir/clean_core_v4.bir.json"
    ))
    .expect("fixture");
    let mut v: serde_json::Value = serde_json::from_str(&text).expect("json");
    let insts = v["functions"][0]["blocks"][0]["instructions"]
        .as_array()
        .expect("instructions")
        .clone();
    let mut big = Vec::with_capacity(insts.len() * COPIES);
    for _ in 0..COPIES {
        big.extend(insts.iter().cloned());
    }
    v["functions"][0]["blocks"][0]["instructions"] = serde_json::Value::Array(big);
    from_json_value(&v).expect("module")
}

fn l1(c: &mut Criterion) {
    let m = module();
    let n = m.instruction_count() as u64;
    let text = to_json_string(&m);
    let registry = Registry::l1();
    // The fixture is clean: the run measures the no-error path.
    assert!(!registry
        .verify(PropertySet::all(), &m, Mode::CollectAll)
        .iter()
        .any(|d| d.is_error()));

    let mut g = c.benchmark_group("l1");
    g.throughput(Throughput::Elements(n));
    g.sample_size(10);
    g.bench_function("baseline_walk", |b| {
        b.iter(|| {
            let mut k = 0usize;
            m.walk(&mut |r| k += r.inst.args.len() + r.inst.outs.len());
            black_box(k)
        })
    });
    g.bench_function("verify_all_rules", |b| {
        b.iter(|| {
            black_box(
                registry
                    .verify(PropertySet::all(), black_box(&m), Mode::CollectAll)
                    .len(),
            )
        })
    });
    g.bench_function("baseline_json_value_parse", |b| {
        b.iter(|| {
            black_box(
                serde_json::from_str::<serde_json::Value>(black_box(&text)).map(|v| v.is_object()),
            )
        })
    });
    g.bench_function("bir_json_import", |b| {
        b.iter(|| {
            black_box(
                tpbsim_validate::bir::from_json_str(black_box(&text)).map(|m| m.functions.len()),
            )
        })
    });
    g.finish();
}

criterion_group!(benches, l1);
criterion_main!(benches);
