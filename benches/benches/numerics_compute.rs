//! Compute numerics: the elementwise TensorTensor fp32 add over a 128 × 64K tile against a plain
//! add loop, and the PE matmul (128 × 128 × 512, fixed summation order) against
//! `matrixmultiply::sgemm` on the same shape, both in the same run; and the ACT functions with a
//! fast slice evaluation (exp, tanh, sigmoid over 64 Ki values in `[-8, 8)`) against the closed
//! form evaluated element by element, which gives the same bits; and the same on a
//! `[128 × 2048]` tile on each of the fast evaluation's vector loops the host has, in wall time
//! and in thread CPU time.

use criterion::measurement::{Measurement, ValueFormatter, WallTime};
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

/// The CPU time of the calling thread (`CLOCK_THREAD_CPUTIME_ID`): on a machine shared with
/// other work it counts only the time the benchmark ran, not the time it waited for a core.
struct ThreadCpu;

impl ThreadCpu {
    fn now() -> Duration {
        let mut ts = libc::timespec {
            tv_sec: 0,
            tv_nsec: 0,
        };
        // SAFETY: `ts` is a valid timespec to write; the clock exists on every Linux.
        let rc = unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
        assert_eq!(rc, 0, "clock_gettime(CLOCK_THREAD_CPUTIME_ID)");
        Duration::new(ts.tv_sec as u64, ts.tv_nsec as u32)
    }
}

impl Measurement for ThreadCpu {
    type Intermediate = Duration;
    type Value = Duration;
    fn start(&self) -> Duration {
        Self::now()
    }
    fn end(&self, start: Duration) -> Duration {
        Self::now().saturating_sub(start)
    }
    fn add(&self, a: &Duration, b: &Duration) -> Duration {
        *a + *b
    }
    fn zero(&self) -> Duration {
        Duration::ZERO
    }
    fn to_f64(&self, value: &Duration) -> f64 {
        value.as_nanos() as f64
    }
    fn formatter(&self) -> &dyn ValueFormatter {
        static WALL: WallTime = WallTime;
        WALL.formatter()
    }
}

/// The fast ACT evaluation of exp, tanh and sigmoid on a `[128 × 2048]` fp32 tile (inputs in
/// `[-8, 8)`) on each vector loop the host has, forced with `ClosedForm::values_up_to` (the
/// AVX2 loop also on an AVX-512 host), against the closed form element by element in the
/// same run; the results are the same bits on every loop. Measured in wall time
/// (`act_loops_128x2048`) and in the thread's CPU time (`act_loops_128x2048_thread_cpu`).
fn act_loops_in<M: Measurement>(c: &mut Criterion<M>, group: &str) {
    use tpbsim_sim::numerics::act::{ActFunction, ClosedForm, Loop};
    let xs: Vec<f32> = values(128 * 2048, 7).iter().map(|v| 16.0 * v).collect();
    let mut out = xs.clone();
    let mut g = c.benchmark_group(group);
    g.throughput(Throughput::Elements(xs.len() as u64));
    g.sample_size(20).measurement_time(Duration::from_secs(3));
    for func in [ActFunction::Exp, ActFunction::Tanh, ActFunction::Sigmoid] {
        g.bench_function(format!("{func}/baseline_per_element"), |bch| {
            bch.iter(|| {
                for (o, &x) in out.iter_mut().zip(black_box(&xs)) {
                    *o = ClosedForm::value(func, x, 0.0);
                }
                black_box(&out);
            })
        });
        for lp in Loop::available().into_iter().rev() {
            g.bench_function(format!("{func}/{lp:?}"), |bch| {
                bch.iter(|| {
                    out.copy_from_slice(black_box(&xs));
                    ClosedForm::values_up_to(lp, func, &mut out, 0.0);
                    black_box(&out);
                })
            });
        }
    }
    g.finish();
}

fn act_loops(c: &mut Criterion) {
    act_loops_in(c, "act_loops_128x2048");
}

fn act_loops_thread_cpu(c: &mut Criterion<ThreadCpu>) {
    act_loops_in(c, "act_loops_128x2048_thread_cpu");
}

criterion_group!(benches, elementwise, pe_matmul, act_functions, act_loops);
criterion_group! {
    name = thread_cpu;
    config = Criterion::default().with_measurement(ThreadCpu);
    targets = act_loops_thread_cpu
}
criterion_main!(benches, thread_cpu);
