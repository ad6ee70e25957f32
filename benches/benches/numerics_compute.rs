//! Compute numerics: the elementwise TensorTensor fp32 add over a 128 × 64K tile against a plain
//! add loop, and the PE matmul (128 × 128 × 512, fixed summation order) against
//! `matrixmultiply::sgemm` on the same shape, both in the same run; and the ACT functions with a
//! fast slice evaluation (exp, tanh, sigmoid over 64 Ki values in `[-8, 8)`) against the closed
//! form evaluated element by element, which gives the same bits.

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use std::hint::black_box;
use std::time::Duration;
use tpbsim_isa::{Engine, Gen};
use tpbsim_sim::numerics::alu::{tensor_tensor, AluContext, AluOp};
use tpbsim_sim::numerics::pe::{matmul, PeMode};

fn values(n: usize, seed: u64) -> Vec<f32> {
    tpbsim_benches::pseudo_random_bytes(4 * n, seed)
        .chunks_exact(4)
        .map(|c| {
            (u32::from_le_bytes([c[0], c[1], c[2], c[3]]) >> 8) as f32 / (1 << 24) as f32 - 0.5
        })
        .collect()
}

fn elementwise(c: &mut Criterion) {
    let n = 128 * 65536;
    let a = values(n, 1);
    let b = values(n, 2);
    let mut out = vec![0.0f32; n];
    let add = AluContext::new(Gen::V3, Engine::Dve)
        .fp_op(AluOp::ADD)
        .expect("ADD on the DVE");
    let mut g = c.benchmark_group("elementwise_fp32_add_128x64k");
    g.throughput(Throughput::Elements(n as u64));
    g.sample_size(20).measurement_time(Duration::from_secs(4));
    g.bench_function("tensor_tensor", |bch| {
        bch.iter(|| {
            tensor_tensor(add, black_box(&a), black_box(&b), &mut out).expect("shapes agree");
            black_box(&out);
        })
    });
    g.bench_function("baseline_zip_loop", |bch| {
        bch.iter(|| {
            for ((o, x), y) in out.iter_mut().zip(black_box(&a)).zip(black_box(&b)) {
                *o = x + y;
            }
            black_box(&out);
        })
    });
    g.finish();
}

fn pe_matmul(c: &mut Criterion) {
    let (k, n, f) = (128usize, 128usize, 512usize);
    let s = values(k * n, 3);
    let m = values(k * f, 4);
    let mut out = vec![0.0f32; n * f];
    let mut g = c.benchmark_group("matmul_128x128x512");
    g.throughput(Throughput::Elements((2 * k * n * f) as u64));
    g.sample_size(50).measurement_time(Duration::from_secs(4));
    g.bench_function("pe_matmul_fixed_order", |bch| {
        bch.iter(|| {
            matmul(
                PeMode::Plain,
                black_box(&s),
                black_box(&m),
                k,
                n,
                f,
                &mut out,
            )
            .expect("shapes agree");
            black_box(&out);
        })
    });
    g.bench_function("baseline_matrixmultiply_sgemm", |bch| {
        bch.iter(|| {
            // C[n, f] = A[n, k] · B[k, f] with A(n, k) = stationary[k * N + n].
            // SAFETY: the pointers cover k·n, k·f and n·f elements with the given strides.
            unsafe {
                matrixmultiply::sgemm(
                    n,
                    k,
                    f,
                    1.0,
                    black_box(s.as_ptr()),
                    1,
                    n as isize,
                    black_box(m.as_ptr()),
                    f as isize,
                    1,
                    0.0,
                    out.as_mut_ptr(),
                    f as isize,
                    1,
                );
            }
            black_box(&out);
        })
    });
    g.bench_function("pe_matmul_fp32_low_high", |bch| {
        bch.iter(|| {
            matmul(
                PeMode::Fp32(tpbsim_sim::numerics::pe::Fp32Mode::LowHigh),
                black_box(&s),
                black_box(&m),
                k,
                n,
                f,
                &mut out,
            )
            .expect("shapes agree");
            black_box(&out);
        })
    });
    g.finish();
}

fn act_functions(c: &mut Criterion) {
    use tpbsim_sim::numerics::act::{ActFunction, ClosedForm};
    let xs: Vec<f32> = values(65536, 6).iter().map(|v| 16.0 * v).collect();
    let mut out = xs.clone();
    let mut g = c.benchmark_group("act_functions_64k");
    g.throughput(Throughput::Elements(xs.len() as u64));
    g.sample_size(20);
    for func in [ActFunction::Exp, ActFunction::Tanh, ActFunction::Sigmoid] {
        g.bench_function(format!("{func}/slice"), |bch| {
            bch.iter(|| {
                out.copy_from_slice(black_box(&xs));
                ClosedForm::values(func, &mut out, 0.0);
                black_box(&out);
            })
        });
        g.bench_function(format!("{func}/baseline_per_element"), |bch| {
            bch.iter(|| {
                for (o, &x) in out.iter_mut().zip(black_box(&xs)) {
                    *o = ClosedForm::value(func, x, 0.0);
                }
                black_box(&out);
            })
        });
    }
    g.finish();
}

criterion_group!(benches, elementwise, pe_matmul, act_functions);
criterion_main!(benches);
