//! The compiler-shaped LNC2 matmul (`tpbsim_benches::lnc2_matmul`: neuronx-cc 2.23's
//! `matmul_large` layout, two cores, fp16 x[128, K] @ y[K, N] with fp32 accumulation) run as
//! `sim run` runs it (program loaded once; each iteration allocates both cores, runs them on
//! their threads with L2 validation and collects output0), in FLOP/s.
//!
//! Baselines in the same run: `matrixmultiply`'s fp32 sgemm of the same shape (on as many
//! threads as the simulator's cores) and numpy's float32 `x @ y`, timed in a `python3`
//! subprocess (`TPBSIM_PYTHON` names another interpreter). The ratios are printed as
//! `ratio sim/numpy` and `ratio sim/sgemm`; without numpy the first is reported as not measured.
//!
//! `TPBSIM_LNC2_BENCH=K,N` changes the shape (default 4096,16384: 17 GFLOP, y 128 MiB).

use std::collections::BTreeMap;
use std::hint::black_box;

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use half::f16;
use tpbsim_benches::best_of;
use tpbsim_benches::lnc2_matmul::Lnc2Matmul;
use tpbsim_sim::api::{self, RunConfig};

fn shape() -> (usize, usize) {
    std::env::var("TPBSIM_LNC2_BENCH")
        .ok()
        .and_then(|s| {
            let (k, n) = s.split_once(',')?;
            Some((k.trim().parse().ok()?, n.trim().parse().ok()?))
        })
        .unwrap_or((4096, 16384))
}

fn values(n: usize, seed: u64) -> Vec<f32> {
    let mut s = seed | 1;
    (0..n)
        .map(|_| {
            s ^= s << 13;
            s ^= s >> 7;
            s ^= s << 17;
            f16::from_f64((s >> 11) as f64 / (1u64 << 53) as f64 * 2.0 - 1.0).to_f32()
        })
        .collect()
}

/// fp32 `x[m, k] @ y[k, n]` with matrixmultiply, the columns split over `threads` threads
/// (each thread writes its own `m × w` block).
fn sgemm(x: &[f32], y: &[f32], m: usize, k: usize, n: usize, threads: usize) {
    let cols = n.div_ceil(threads.max(1));
    std::thread::scope(|s| {
        for c0 in (0..n).step_by(cols) {
            let w = cols.min(n - c0);
            s.spawn(move || {
                let mut part = vec![0f32; m * w];
                // SAFETY: the pointers and strides describe x (m × k, row-major), the w columns
                // of y from c0 (k × w inside k × n, row stride n) and `part` (m × w), all in
                // bounds.
                unsafe {
                    matrixmultiply::sgemm(
                        m,
                        k,
                        w,
                        1.0,
                        x.as_ptr(),
                        k as isize,
                        1,
                        y.as_ptr().add(c0),
                        n as isize,
                        1,
                        0.0,
                        part.as_mut_ptr(),
                        w as isize,
                        1,
                    )
                };
                black_box(part);
            });
        }
    });
}

/// numpy's float32 `x @ y` at the shape, best of `runs`, in seconds (None without numpy).
fn numpy_seconds(m: usize, k: usize, n: usize, runs: usize) -> Option<f64> {
    let python = std::env::var("TPBSIM_PYTHON").unwrap_or_else(|_| "python3".into());
    let script = format!(
        "import time, numpy as np\n\
         r = np.random.default_rng(1)\n\
         x = r.random(({m}, {k}), dtype=np.float32); y = r.random(({k}, {n}), dtype=np.float32)\n\
         x @ y\n\
         best = 1e30\n\
         for _ in range({runs}):\n    t = time.perf_counter(); x @ y; best = min(best, time.perf_counter() - t)\n\
         print(best)\n"
    );
    let out = std::process::Command::new(python)
        .args(["-c", &script])
        .output()
        .ok()?;
    if !out.status.success() {
        return None;
    }
    String::from_utf8(out.stdout).ok()?.trim().parse().ok()
}

fn lnc2_matmul(c: &mut Criterion) {
    tpbsim_sim::process::retain_freed_memory();
    let (k, n) = shape();
    let g = Lnc2Matmul::new(k, n).expect("shape");
    let neff = g.neff().expect("generate");
    let prog = api::load_program(&neff).expect("load");
    let m = 128;
    let (xf, yf) = (values(m * k, 3), values(k * n, 5));
    let to16 = |v: &[f32]| -> Vec<u8> {
        v.iter()
            .flat_map(|&x| f16::from_f32(x).to_le_bytes())
            .collect()
    };
    let inputs = api::share_inputs(&BTreeMap::from([
        ("x".to_string(), to16(&xf)),
        ("y".to_string(), to16(&yf)),
    ]));
    let cfg = RunConfig {
        validator: Some(std::sync::Arc::new(tpbsim_validate::l2::L2Check)),
        ..RunConfig::default()
    };
    let gen = api::generation(&prog, None).expect("generation");
    let sim = || {
        let out = api::run_schedule(&prog, gen, &inputs, &cfg, 0, &|_, _| {}).expect("run");
        black_box(out.outputs["output0"][0])
    };
    let threads = prog.cores.len();

    let mut grp = c.benchmark_group(format!("lnc2_matmul_{k}x{n}"));
    grp.sample_size(10);
    grp.throughput(Throughput::Elements(g.flops() as u64));
    grp.bench_function("sim", |b| b.iter(sim));
    grp.bench_function(format!("sgemm_fp32_{threads}threads"), |b| {
        b.iter(|| sgemm(&xf, &yf, m, k, n, threads))
    });
    grp.finish();

    // The ratios, each pair timed back to back in this run.
    let t_sim = best_of(3, || {
        sim();
    })
    .as_secs_f64();
    let t_sgemm = best_of(3, || sgemm(&xf, &yf, m, k, n, threads)).as_secs_f64();
    let gf = |t: f64| g.flops() / t / 1e9;
    println!(
        "lnc2_matmul {k}x{n}: sim {:.1} GFLOP/s, sgemm fp32 ({threads} threads) {:.1} GFLOP/s, ratio sim/sgemm {:.2}",
        gf(t_sim),
        gf(t_sgemm),
        t_sgemm / t_sim
    );
    match numpy_seconds(m, k, n, 5) {
        Some(t_np) => println!(
            "lnc2_matmul {k}x{n}: numpy float32 x @ y {:.1} GFLOP/s, ratio sim/numpy {:.2}",
            gf(t_np),
            t_np / t_sim
        ),
        None => println!("lnc2_matmul {k}x{n}: numpy not available: ratio sim/numpy not measured"),
    }
}

criterion_group!(benches, lnc2_matmul);
criterion_main!(benches);
