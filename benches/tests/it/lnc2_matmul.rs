//! The generated LNC2 matmul NEFFs (the shape of neuronx-cc 2.23's `matmul_large`, at sizes a
//! test can afford): written to bytes and read back as the CLI reads a file, every stream passes
//! L2 with no error, both cores run with no race between them, and output0 = x @ y — bit for bit
//! against an integer oracle on small-integer inputs, within fp32 accumulation plus one fp16
//! rounding of the float64 product on random ones.

use std::collections::BTreeMap;

use half::f16;
use tpbsim_benches::lnc2_matmul::Lnc2Matmul;
use tpbsim_isa::{Bundle, Engine, Gen};
use tpbsim_neff::{Neff, ReadOptions};
use tpbsim_sim::api::{self, RunConfig};
use tpbsim_validate::diag::Mode;
use tpbsim_validate::l2::{self, StreamSpec};

const M: usize = 128;

/// The NEFF as a file's bytes, read back with the default reader options.
fn written(g: Lnc2Matmul) -> Neff {
    let bytes = g.neff().expect("generate").to_bytes().expect("write");
    Neff::from_bytes(&bytes, &ReadOptions::default()).expect("read back")
}

fn rng(seed: u64) -> impl FnMut() -> u64 {
    let mut s = seed;
    move || {
        s = s
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        s >> 33
    }
}

fn bytes(v: &[f16]) -> Vec<u8> {
    v.iter().flat_map(|x| x.to_le_bytes()).collect()
}

fn run(n: &Neff, x: &[f16], y: &[f16], threads: usize) -> Vec<f16> {
    let prog = api::load_program(n).expect("load");
    assert_eq!(prog.cores.len(), 2, "one core per subgraph");
    let inputs = BTreeMap::from([("x".to_string(), bytes(x)), ("y".to_string(), bytes(y))]);
    let cfg = RunConfig {
        threads,
        validator: Some(std::sync::Arc::new(l2::L2Check)),
        ..RunConfig::default()
    };
    let out = api::run_program(&prog, &inputs, &cfg).expect("run");
    assert!(out.findings.is_empty(), "{:?}", out.findings);
    assert!(
        out.cores.iter().all(|c| c.stats.sched.steps > 0),
        "both cores ran"
    );
    out.outputs["output0"]
        .chunks_exact(2)
        .map(|c| f16::from_le_bytes([c[0], c[1]]))
        .collect()
}

#[test]
fn every_generated_stream_passes_l2() {
    let g = Lnc2Matmul::new(2304, 8192).expect("shape");
    let n = written(g);
    assert_eq!(n.header.lnc_size, 2);
    let mut seen = 0;
    for (path, data) in &n.members {
        let Some((sg, file)) = path.split_once('/') else {
            continue;
        };
        let Some(engine) = Engine::from_file_name(std::path::Path::new(file)) else {
            continue;
        };
        let bundles: Vec<Bundle> = data
            .chunks_exact(64)
            .map(|c| Bundle(c.try_into().expect("64 bytes")))
            .collect();
        let spec = StreamSpec {
            file: Some(path.clone()),
            gen: Gen::V3,
            engine,
        };
        let report = l2::validate_stream(&bundles, &spec, Mode::CollectAll);
        let errs: Vec<String> = report
            .diagnostics
            .iter()
            .filter(|d| d.is_error())
            .map(|d| d.to_string())
            .collect();
        assert!(errs.is_empty(), "{sg}/{file}: {errs:#?}");
        assert_eq!(report.invalid, 0, "{path}");
        seen += 1;
    }
    assert_eq!(seen, 10, "five streams on each of two cores");
}

/// The shapes cover one block per core, several blocks (both evacuation paths: DVE cast and the
/// ACT copy with a casting DMA), and a last spill group shorter than the others.
#[test]
fn output0_is_x_at_y_bit_for_bit_on_integer_inputs() {
    for (k, n) in [(256, 1024), (512, 8192), (2304, 2048)] {
        let g = Lnc2Matmul::new(k, n).expect("shape");
        let neff = written(g);
        let mut r = rng(k as u64 * 31 + n as u64);
        let mut small = || f16::from_f32((r() % 7) as f32 - 3.0);
        let x: Vec<f16> = (0..M * k).map(|_| small()).collect();
        let y: Vec<f16> = (0..k * n).map(|_| small()).collect();
        let got = run(&neff, &x, &y, 0);
        let xi: Vec<i32> = x.iter().map(|v| v.to_f32() as i32).collect();
        let yi: Vec<i32> = y.iter().map(|v| v.to_f32() as i32).collect();
        let mut row = vec![0i64; n];
        for m in 0..M {
            row.iter_mut().for_each(|v| *v = 0);
            for kk in 0..k {
                let a = i64::from(xi[m * k + kk]);
                for (acc, &b) in row.iter_mut().zip(&yi[kk * n..(kk + 1) * n]) {
                    *acc += a * i64::from(b);
                }
            }
            for (c, &exact) in row.iter().enumerate() {
                let want = f16::from_f64(exact as f64);
                assert_eq!(
                    got[m * n + c].to_bits(),
                    want.to_bits(),
                    "{k}x{n}: output0[{m}][{c}] = {} want {want}",
                    got[m * n + c]
                );
            }
        }
    }
}

#[test]
fn output0_is_within_fp16_rounding_on_random_inputs_whatever_the_threads() {
    let (k, n) = (2304, 2048);
    let neff = written(Lnc2Matmul::new(k, n).expect("shape"));
    let mut r = rng(7);
    let mut uniform = || f16::from_f64((r() as f64 / (1u64 << 31) as f64) - 1.0);
    let x: Vec<f16> = (0..M * k).map(|_| uniform()).collect();
    let y: Vec<f16> = (0..k * n).map(|_| uniform()).collect();
    let got = run(&neff, &x, &y, 0);
    assert_eq!(run(&neff, &x, &y, 1), got, "one thread gives the same bits");
    let xf: Vec<f64> = x.iter().map(|v| v.to_f64()).collect();
    let yf: Vec<f64> = y.iter().map(|v| v.to_f64()).collect();
    let (mut exact, mut mag) = (vec![0.0f64; n], vec![0.0f64; n]);
    let mut worst = 0.0f64;
    for m in 0..M {
        exact
            .iter_mut()
            .chain(mag.iter_mut())
            .for_each(|v| *v = 0.0);
        for kk in 0..k {
            let a = xf[m * k + kk];
            for c in 0..n {
                let p = a * yf[kk * n + c];
                exact[c] += p;
                mag[c] += p.abs();
            }
        }
        for c in 0..n {
            let e = f16::from_f64(exact[c]);
            let half_ulp = (f16::from_bits(e.to_bits() + 1).to_f64() - e.to_f64()).abs() / 2.0;
            let bound = half_ulp + k as f64 * f64::from(f32::EPSILON) / 2.0 * mag[c];
            let err = (got[m * n + c].to_f64() - exact[c]).abs();
            worst = worst.max(err / bound);
            assert!(err <= bound, "output0[{m}][{c}]: error {err} > {bound}");
        }
    }
    assert!(worst > 0.0, "random inputs round somewhere");
}

#[test]
fn shapes_the_generator_cannot_lay_out_are_refused_by_name() {
    for (k, n, why) in [
        (0, 1024, "multiple of 256"),
        (300, 1024, "multiple of 256"),
        (256, 1000, "multiple of 1024"),
        (262144, 1024, "SBUF bytes"),
        (32768, 131072, "4 GiB"),
    ] {
        let e = Lnc2Matmul::new(k, n).expect_err("refused").to_string();
        assert!(e.contains(why), "{k}x{n}: {e}");
    }
    // The compiler's large kernel: 21k PE and 4k Pool bundles per core, 16 spill variables.
    let big = Lnc2Matmul::large().counts();
    assert!((20_000..22_000).contains(&big.pe), "{big:?}");
    assert!((4_000..4_400).contains(&big.pool), "{big:?}");
}
