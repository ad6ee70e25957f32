//! Testdata kernels whose summation order is fixed (docs/numerics.md §10: PE sums over k in
//! order, from +0.0, every product and add rounded to fp32; one more rounding per PSUM
//! accumulation) compared bit for bit with an independent scalar computation of that order,
//! not within a tolerance.

use std::path::PathBuf;

use tpbsim_isa::neff::{Neff, ReadOptions};
use tpbsim_isa::Gen;
use tpbsim_sim::machine::load::kernel_from_neff;
use tpbsim_sim::machine::{Kernel, Machine, RunOptions};

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
    m.validate_with_l2();
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
