//! NEFFs written by the Neuron compiler itself (`../shared/real/`, read in place): each loads as
//! a program of one kernel per subgraph, runs on its cores with small-integer inputs, with no
//! race between cores; the LNC2 matmul of neuronx-cc 2.23 (x f16[128,256] @ y f16[256,128] on
//! two cores) gives x @ y bit for bit against an independent oracle on integer inputs, and within
//! fp16 rounding plus fp32 accumulation of the float64 product on random ones.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use half::f16;
use tpbsim_isa::NumFormat;
use tpbsim_neff::{Neff, ReadOptions};
use tpbsim_sim::api::{self, RunConfig};
use tpbsim_sim::machine::{Program, VarSpec};

fn shared_real() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../shared/real")
}

fn neffs(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let Ok(rd) = std::fs::read_dir(dir) else {
        return out;
    };
    for e in rd.flatten() {
        let p = e.path();
        if p.is_dir() {
            out.extend(neffs(&p));
        } else if p.extension().is_some_and(|x| x == "neff") {
            out.push(p);
        }
    }
    out.sort();
    out
}

fn program(p: &Path) -> Program {
    let n =
        Neff::read(p, &ReadOptions::default()).unwrap_or_else(|e| panic!("{}: {e}", p.display()));
    api::load_program(&n).unwrap_or_else(|e| panic!("{}: {e}", p.display()))
}

/// Small integers in the variable's format (every product and partial sum of a matmul over them
/// is exact in fp32), from a fixed generator.
fn small_ints(v: &VarSpec, seed: u64) -> Vec<u8> {
    let n = (v.size / v.format.container_bytes() as u64) as usize;
    let mut s = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    let mut next = || {
        s ^= s << 13;
        s ^= s >> 7;
        s ^= s << 17;
        (s % 5) as i32 - 2
    };
    let mut out = Vec::with_capacity(v.size as usize);
    for _ in 0..n {
        let x = next() as f32;
        match v.format {
            NumFormat::Float16 => out.extend(f16::from_f32(x).to_le_bytes()),
            NumFormat::Bfloat16 => out.extend(half::bf16::from_f32(x).to_le_bytes()),
            NumFormat::Float32 => out.extend(x.to_le_bytes()),
            _ => out.extend(std::iter::repeat_n(0u8, v.format.container_bytes())),
        }
    }
    out
}

#[test]
fn every_real_neff_runs_on_its_cores_without_a_race_between_them() {
    let all = neffs(&shared_real());
    assert!(!all.is_empty(), "no NEFF under {}", shared_real().display());
    for p in all {
        let prog = program(&p);
        assert!(!prog.cores.is_empty());
        let inputs: BTreeMap<String, Vec<u8>> = prog
            .inputs()
            .into_iter()
            .enumerate()
            .map(|(i, v)| (v.name.clone(), small_ints(v, i as u64 + 1)))
            .collect();
        let out = api::run_program(&prog, &inputs, &crate::checked())
            .unwrap_or_else(|e| panic!("{}: {e}", p.display()));
        assert_eq!(out.cores.len(), prog.cores.len());
        assert!(out.cores.iter().all(|c| c.stats.sched.steps > 0));
        assert!(
            out.findings.is_empty(),
            "{}: {:?}",
            p.display(),
            out.findings
        );
        for v in prog.outputs() {
            assert_eq!(out.outputs[&v.name].len() as u64, v.size);
        }
        // The threads do not change the result.
        let one = RunConfig {
            threads: 1,
            ..crate::checked()
        };
        let again = api::run_program(&prog, &inputs, &one).unwrap();
        assert_eq!(again.outputs, out.outputs, "{}", p.display());
        assert_eq!(again.threads, 1);
    }
}

fn f16s(b: &[u8]) -> Vec<f16> {
    b.chunks_exact(2)
        .map(|c| f16::from_le_bytes([c[0], c[1]]))
        .collect()
}

fn to_bytes(v: &[f16]) -> Vec<u8> {
    v.iter().flat_map(|x| x.to_le_bytes()).collect()
}

fn matmul_small() -> Program {
    program(&shared_real().join("nkipy/matmul_small.neff"))
}

fn run_matmul(x: &[f16], y: &[f16]) -> Vec<f16> {
    let prog = matmul_small();
    assert_eq!(prog.cores.len(), 2, "LNC2: two subgraphs");
    let inputs = BTreeMap::from([
        ("x".to_string(), to_bytes(x)),
        ("y".to_string(), to_bytes(y)),
    ]);
    let out = api::run_program(&prog, &inputs, &crate::checked()).unwrap();
    assert!(out.findings.is_empty(), "{:?}", out.findings);
    f16s(&out.outputs["output0"])
}

const M: usize = 128;
const K: usize = 256;
const N: usize = 128;

#[test]
fn the_lnc2_matmul_is_x_at_y_bit_for_bit_on_integer_inputs() {
    let mut s = 12345u64;
    let mut next = |lo: i32, hi: i32| {
        s = s
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        lo + ((s >> 33) % (hi - lo + 1) as u64) as i32
    };
    let x: Vec<f16> = (0..M * K)
        .map(|_| f16::from_f32(next(-3, 3) as f32))
        .collect();
    let y: Vec<f16> = (0..K * N)
        .map(|_| f16::from_f32(next(-3, 3) as f32))
        .collect();
    let got = run_matmul(&x, &y);
    // Every partial sum is an integer below 2^24 (exact in fp32 whatever the order); the fp16
    // result is its round-to-nearest-even.
    for m in 0..M {
        for n in 0..N {
            let exact: i64 = (0..K)
                .map(|k| (x[m * K + k].to_f32() as i64) * (y[k * N + n].to_f32() as i64))
                .sum();
            let want = f16::from_f64(exact as f64);
            assert_eq!(
                got[m * N + n].to_bits(),
                want.to_bits(),
                "output0[{m}][{n}]: got {} want {want} (exact {exact})",
                got[m * N + n]
            );
        }
    }
    // Both halves of the columns were computed (by the two cores), not left at zero.
    assert!(got[..N / 2].iter().any(|v| v.to_f32() != 0.0));
    assert!(got[N / 2..N].iter().any(|v| v.to_f32() != 0.0));
}

#[test]
fn the_lnc2_matmul_is_within_fp16_rounding_of_float64_on_random_inputs() {
    let mut s = 0x1234_5678u64;
    let mut uniform = || {
        s = s
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        ((s >> 11) as f64 / (1u64 << 53) as f64) * 2.0 - 1.0
    };
    let x: Vec<f16> = (0..M * K).map(|_| f16::from_f64(uniform())).collect();
    let y: Vec<f16> = (0..K * N).map(|_| f16::from_f64(uniform())).collect();
    let got = run_matmul(&x, &y);
    for m in 0..M {
        for n in 0..N {
            let (mut exact, mut mag) = (0.0f64, 0.0f64);
            for k in 0..K {
                let p = x[m * K + k].to_f64() * y[k * N + n].to_f64();
                exact += p;
                mag += p.abs();
            }
            // fp32 accumulation of K products (each exact in fp32) errs by at most
            // K·2^-24·Σ|p|; the fp16 result then rounds once (half an ulp of fp16).
            let accum = K as f64 * f64::from(f32::EPSILON) / 2.0 * mag;
            let half_ulp = {
                let e = f16::from_f64(exact);
                let next = f16::from_bits(e.to_bits() + 1);
                (next.to_f64() - e.to_f64()).abs() / 2.0
            };
            let g = got[m * N + n].to_f64();
            assert!(
                (g - exact).abs() <= accum + half_ulp * 2.0,
                "output0[{m}][{n}]: got {g}, float64 {exact} (bound {})",
                accum + half_ulp * 2.0
            );
        }
    }
}
