//! Testdata kernels whose summation order is fixed (docs/numerics.md §10: PE sums over k in
//! order, from +0.0, every product and add rounded to fp32; one more rounding per PSUM
//! accumulation) compared bit for bit with an independent scalar computation of that order,
//! not within a tolerance. MX operands are decoded here from their E4M3 bytes and E8M0 block
//! scales, independently of the simulator's MX module.

use std::path::PathBuf;

use tpbsim_isa::Gen;
use tpbsim_neff::{Neff, ReadOptions};
use tpbsim_sim::machine::load::kernel_from_neff;
use tpbsim_sim::machine::{Kernel, Machine, RunOptions, Space};

fn kernel(name: &str) -> Kernel {
    let p =
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join(format!("../testdata/kernels/{name}.neff"));
    kernel_from_neff(&Neff::read(&p, &ReadOptions::default()).unwrap()).unwrap()
}

fn f32s(b: &[u8]) -> Vec<f32> {
    b.chunks_exact(4)
        .map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]]))
        .collect()
}

fn bf16s(b: &[u8]) -> Vec<f32> {
    b.chunks_exact(2)
        .map(|c| f32::from_bits(u32::from(u16::from_le_bytes([c[0], c[1]])) << 16))
        .collect()
}

/// Run `k` (validated by L2) and return the machine.
fn run(k: &Kernel) -> Machine<'_> {
    let mut m = Machine::new(k, k.gen.unwrap_or(Gen::V3)).unwrap();
    m.set_validator(std::sync::Arc::new(tpbsim_validate::l2::L2Check));
    m.run(&RunOptions::default(), &mut |_| {}).unwrap();
    m
}

fn assert_bits(got: &[f32], want: &[f32]) {
    assert_eq!(got.len(), want.len());
    let bad: Vec<usize> = (0..got.len())
        .filter(|&i| got[i].to_bits() != want[i].to_bits())
        .collect();
    assert!(
        bad.is_empty(),
        "{} of {} elements differ; first at {}: {} vs {}",
        bad.len(),
        got.len(),
        bad[0],
        got[bad[0]],
        want[bad[0]]
    );
}

#[test]
fn matmul_bf16_is_bit_exact_in_the_fixed_order() {
    // out[m][n] = Σ_c (Σ_{p<128} w[128c+p][m] · x[128c+p][n]): four matmuls of 128 rows into
    // one PSUM group (START, MID, MID, END), then ACT's identity copy to SBUF.
    let k = kernel("matmul_bf16");
    let m = run(&k);
    let (w, x) = (bf16s(m.var("w").unwrap()), bf16s(m.var("x").unwrap()));
    let (kk, mm, nn) = (512, 128, 128);
    let mut want = vec![0f32; mm * nn];
    for r in 0..mm {
        for c in 0..nn {
            let mut psum = 0f32;
            for chunk in 0..4 {
                let mut acc = 0f32;
                for p in 0..128 {
                    let kx = 128 * chunk + p;
                    let prod = w[kx * mm + r] * x[kx * nn + c];
                    acc += prod;
                }
                psum = if chunk == 0 { acc } else { psum + acc };
            }
            want[r * nn + c] = psum * 1.0 + 0.0;
        }
    }
    assert_eq!(kk, 4 * 128);
    assert_bits(&f32s(m.var("out").unwrap()), &want);
}

#[test]
fn vadd_is_bit_exact() {
    let k = kernel("vadd");
    let m = run(&k);
    let (x, y) = (f32s(m.var("x").unwrap()), f32s(m.var("y").unwrap()));
    let want: Vec<f32> = x.iter().zip(&y).map(|(a, b)| a + b).collect();
    assert_bits(&f32s(m.var("out").unwrap()), &want);
}

/// OCP float8_e4m3fn: sign, 4 exponent bits (bias 7), 3 mantissa bits; no infinity,
/// `S.1111.111` is NaN; exponent 0 is subnormal (`m/8 · 2⁻⁶`).
fn e4m3fn(b: u8) -> f64 {
    let sign = if b & 0x80 != 0 { -1.0 } else { 1.0 };
    let (e, m) = (i32::from((b >> 3) & 0x0F), f64::from(b & 0x07));
    if e == 0x0F && m == 7.0 {
        return f64::NAN;
    }
    let mag = if e == 0 {
        m / 8.0 * 2f64.powi(-6)
    } else {
        (1.0 + m / 8.0) * 2f64.powi(e - 7)
    };
    sign * mag
}

/// An E8M0 block scale applied to an element: `x · 2^(s − 127)` rounded once to fp32 (exact in
/// f64 first); scale 0xFF is NaN and poisons the value.
fn mx_value(x: u8, s: u8) -> f32 {
    if s == 0xFF {
        return f32::NAN;
    }
    (e4m3fn(x) * 2f64.powi(i32::from(s) - 127)) as f32
}

#[test]
fn mx_matmul_is_bit_exact_in_the_fixed_order() {
    // PE: per 512-row chunk c, out[n][f] = Σ_{k<512} W[512c+k][n] · X[512c+k][f] with
    // k = 4p + j (partition p, lane j), each operand an E4M3 element times its E8M0 block scale
    // (one per 8 partitions × 1 container = 32 consecutive k); chunk 0 starts the PSUM group,
    // chunk 1 adds to it. ACT then adds the bias (scale 1.0) and POOL takes max(y, +0).
    const K: usize = 1024;
    const N: usize = 64;
    const F: usize = 128;
    let k = kernel("mx_matmul");
    let m = run(&k);
    let wq = m.var("w_q").unwrap();
    let ws = m.var("w_scale").unwrap();
    let bias = f32s(m.var("b").unwrap());
    // W from the DRAM variables (natural [K, N] order, scales [K/32, N]).
    let w: Vec<f32> = (0..K * N)
        .map(|i| mx_value(wq[i], ws[(i / N / 32) * N + i % N]))
        .collect();
    // X as DVE quantized it into SBUF: chunk c's containers at partition p, byte
    // 4096 + 512c + 4f + j; its scale for partitions 8b..8b+8 at partition (b & 3) + 32·(b >> 2),
    // byte 8192 + 256c + f.
    let sb = |p: usize| m.chip.partition(Space::Sbuf, p as u32);
    let mut x = vec![0f32; K * F];
    for c in 0..K / 512 {
        for p in 0..128 {
            let b = p / 8;
            let slot = (b & 3) + 32 * (b >> 2);
            for f in 0..F {
                let s = sb(slot)[8192 + 256 * c + f];
                for j in 0..4 {
                    x[(512 * c + 4 * p + j) * F + f] =
                        mx_value(sb(p)[4096 + 512 * c + 4 * f + j], s);
                }
            }
        }
    }
    let mut want_psum = vec![0f32; N * F];
    let mut want_out = vec![0f32; N * F];
    for n in 0..N {
        for f in 0..F {
            let mut psum = 0f32;
            for c in 0..K / 512 {
                let mut acc = 0f32;
                for kk in 512 * c..512 * (c + 1) {
                    acc += w[kk * N + n] * x[kk * F + f];
                }
                psum = if c == 0 { acc } else { psum + acc };
            }
            want_psum[n * F + f] = psum;
            let y = psum * 1.0 + bias[n];
            want_out[n * F + f] = if y > 0.0 { y } else { 0.0 };
        }
    }
    assert!(want_psum.iter().all(|v| v.is_finite()));
    assert!(want_psum.iter().any(|&v| v != 0.0));
    // PSUM bank 0, partition n, F fp32 values from byte 0.
    let psum: Vec<f32> = (0..N)
        .flat_map(|n| f32s(&m.chip.partition(Space::Psum, n as u32)[..4 * F]))
        .collect();
    assert_bits(&psum, &want_psum);
    assert_bits(&f32s(m.var("out").unwrap()), &want_out);
}
