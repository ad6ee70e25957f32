//! Machine-level runs of the predication, iota, transpose and MX operations: each a tiny stream
//! assembled with the typed isa formats, validated by L2, executed, and its memory checked
//! against an independent computation or the numerics library.

use tpbsim_isa::NumFormat;
use tpbsim_isa::{
    Addr4, AluOp, Bundle, CopyPredScalar, Dtype, DtypePair, Engine, Gen, Header, Iota, LdWeightsMx,
    MatmulMx, MemPattern, MxMemPattern1d, Opcode, PsumAccumulateFlags, QuantizeMx, Tensor,
    TensorReduce, TensorReduceV2, TensorSubdim, TensorTensor, ZeroRegion,
};
use tpbsim_sim::machine::{Geometry, Kernel, Machine, RunOptions, TensorPattern};
use tpbsim_sim::numerics::mx::{self, MxConfig, MxShape};
use tpbsim_sim::numerics::pe::{self, MxOperand};

fn tag(f: NumFormat, gen: Gen) -> Dtype {
    Dtype(f.wire_tag(gen).expect("wire tag"))
}

fn sb(gen: Gen, p: u32, off: u32) -> u32 {
    Geometry::of(gen).sbuf_address(p, off)
}

/// `num` (innermost first) dense elements per partition.
fn tensor<const N: usize>(addr: u32, num: [u16; N]) -> Tensor<N> {
    let mut step = [0i16; N];
    let mut s = 1i32;
    for (st, &n) in step.iter_mut().zip(&num) {
        *st = s as i16;
        s *= n as i32;
    }
    Tensor::new(Addr4::imm(addr), step, num)
}

/// Run `stream` on `engine` (validated by L2) after `init` prepared the machine.
fn run<'k>(
    k: &'k Kernel,
    gen: Gen,
    init: impl FnOnce(&mut Machine<'k>),
) -> Result<Machine<'k>, tpbsim_sim::machine::Fault> {
    run_with(k, gen, true, init)
}

/// [`run`], with the simulator's L2 check of each bundle (as `sim run` does) only when `l2`.
fn run_with<'k>(
    k: &'k Kernel,
    gen: Gen,
    l2: bool,
    init: impl FnOnce(&mut Machine<'k>),
) -> Result<Machine<'k>, tpbsim_sim::machine::Fault> {
    let mut m = Machine::new(k, gen).expect("machine");
    if l2 {
        m.set_validator(std::sync::Arc::new(tpbsim_validate::l2::L2Check));
    }
    init(&mut m);
    m.run(&RunOptions::default(), &mut |_| {})?;
    Ok(m)
}

fn kernel(gen: Gen, engine: Engine, stream: Vec<Bundle>) -> Kernel {
    let mut k = Kernel {
        gen: Some(gen),
        ..Default::default()
    };
    k.streams[engine as usize] = stream;
    k
}

fn put(m: &mut Machine<'_>, addr: u32, partitions: u32, bytes_per_partition: &[Vec<u8>]) {
    assert_eq!(bytes_per_partition.len(), partitions as usize);
    for (i, row) in bytes_per_partition.iter().enumerate() {
        let p = TensorPattern::dense(addr, 1, 1, row.len() as u32);
        let p = TensorPattern {
            addr: p.addr + i as u32 * m.chip.geom.sbuf_partition_stride(),
            ..p
        };
        let r = m.chip.resolve(&p).expect("in bounds");
        m.chip.scatter(&r, row);
    }
}

/// `flat` split into rows of `row` bytes, one per partition from `addr`.
fn put_flat(m: &mut Machine<'_>, addr: u32, flat: &[u8], row: usize) {
    let rows: Vec<Vec<u8>> = flat.chunks_exact(row).map(<[u8]>::to_vec).collect();
    put(m, addr, rows.len() as u32, &rows);
}

fn get(m: &Machine<'_>, addr: u32, partitions: u32, bytes: u32) -> Vec<u8> {
    let r = m
        .chip
        .resolve(&TensorPattern::dense(addr, partitions, 1, bytes))
        .expect("in bounds");
    m.chip.gather(&r)
}

fn f32s(b: &[u8]) -> Vec<f32> {
    b.chunks_exact(4)
        .map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]]))
        .collect()
}

fn i32s(b: &[u8]) -> Vec<i32> {
    b.chunks_exact(4)
        .map(|c| i32::from_le_bytes([c[0], c[1], c[2], c[3]]))
        .collect()
}

fn le<T: Copy, const N: usize>(v: &[T], f: impl Fn(T) -> [u8; N]) -> Vec<u8> {
    v.iter().flat_map(|&x| f(x)).collect()
}

#[test]
fn iota_int32_on_pool_and_fp32_on_dve() {
    const G: Gen = Gen::V3;
    let iota = |out: NumFormat, start: i32, addr: u32| {
        Iota {
            out_dtype: tag(out, G),
            num_active_channels: 3,
            start_value: start as u32,
            dst: tensor(addr, [2, 3, 1, 1]),
            ..Default::default()
        }
        .to_bundle()
    };
    let k = kernel(
        G,
        Engine::Pool,
        vec![iota(NumFormat::Int32, i32::MAX - 8, sb(G, 1, 0))],
    );
    let m = run(&k, G, |_| {}).unwrap();
    let got = i32s(&get(&m, sb(G, 1, 0), 3, 24));
    let want: Vec<i32> = (0..18).map(|i| (i32::MAX - 8).wrapping_add(i)).collect();
    assert_eq!(got, want, "row-major index from the start value, wrapping");

    let k = kernel(
        G,
        Engine::Dve,
        vec![iota(NumFormat::Float32, -4, sb(G, 0, 64))],
    );
    let m = run(&k, G, |_| {}).unwrap();
    let got = f32s(&get(&m, sb(G, 0, 64), 3, 24));
    let want: Vec<f32> = (-4..14).map(|i| i as f32).collect();
    assert_eq!(got, want);

    // The manual source band's layout is not published: a non-zero band is refused.
    let mut b = Iota {
        out_dtype: tag(NumFormat::Int32, G),
        num_active_channels: 1,
        dst: tensor(sb(G, 0, 0), [4, 1, 1, 1]),
        ..Default::default()
    };
    b.src_band[3] = 1;
    let k = kernel(G, Engine::Pool, vec![b.to_bundle()]);
    let f = run(&k, G, |_| {}).err().expect("fault");
    assert_eq!(f.kind(), "not-simulated", "{f}");
}

fn predicated(op: u8, pred: NumFormat, data: NumFormat, out: NumFormat, g: Gen) -> Bundle {
    TensorTensor {
        header: Header::new(Opcode(op)),
        in_dtypes: DtypePair::new(tag(pred, g), tag(data, g)),
        out_dtype: tag(out, g),
        op: AluOp(0),
        num_active_partitions: 2,
        src0: tensor(sb(g, 0, 0), [4, 1, 1]),
        src1: tensor(sb(g, 0, 64), [4, 1, 1]),
        dst: tensor(sb(g, 0, 128), [4, 1, 1]),
        ..Default::default()
    }
    .to_bundle()
}

/// Lane `(p, i)` of a `[2, 4]` tile: `new` where the mask is non-zero, else `old`.
fn merged<T>(
    mask: &[[i8; 4]; 2],
    new: impl Fn(usize, usize) -> T,
    old: impl Fn(usize, usize) -> T,
) -> Vec<T> {
    (0..8)
        .map(|k| {
            let (p, i) = (k / 4, k % 4);
            if mask[p][i] != 0 {
                new(p, i)
            } else {
                old(p, i)
            }
        })
        .collect()
}

#[test]
fn copy_and_cast_predicated_keep_unselected_lanes() {
    const G: Gen = Gen::V3;
    let mask: [[i8; 4]; 2] = [[1, 0, -1, 0], [0, 0, 5, 1]];
    let data: [[f32; 4]; 2] = [[1.5, 2.5, -3.25, 4.0], [1e-3, 6.0, 7.0, -8.5e10]];
    let init = |m: &mut Machine<'_>, old: Vec<Vec<u8>>| {
        put(
            m,
            sb(G, 0, 0),
            2,
            &mask.map(|r| le(&r, |x: i8| x.to_le_bytes())),
        );
        put(m, sb(G, 0, 64), 2, &data.map(|r| le(&r, f32::to_le_bytes)));
        put(m, sb(G, 0, 128), 2, &old);
    };
    // 0x72: bit-exact copy of the selected fp32 lanes.
    let old = [[9.0f32; 4], [-9.0; 4]];
    let k = kernel(
        G,
        Engine::Dve,
        vec![predicated(
            0x72,
            NumFormat::Int8,
            NumFormat::Float32,
            NumFormat::Float32,
            G,
        )],
    );
    let m = run(&k, G, |m| {
        init(m, old.map(|r| le(&r, f32::to_le_bytes)).to_vec())
    })
    .unwrap();
    let got = f32s(&get(&m, sb(G, 0, 128), 2, 16));
    let want = merged(&mask, |p, i| data[p][i], |p, i| old[p][i]);
    assert_eq!(got, want);

    // 0x99: selected lanes converted to bf16 (RNE), the others keep their old bf16 bits.
    let rne = |x: f32| {
        let b = x.to_bits();
        ((b + 0x7FFF + ((b >> 16) & 1)) >> 16) as u16
    };
    let old = [[0x1234u16; 4], [0xBEEF; 4]];
    let k = kernel(
        G,
        Engine::Pool,
        vec![predicated(
            0x99,
            NumFormat::Int8,
            NumFormat::Float32,
            NumFormat::Bfloat16,
            G,
        )],
    );
    let m = run(&k, G, |m| {
        init(m, old.map(|r| le(&r, u16::to_le_bytes)).to_vec())
    })
    .unwrap();
    let got: Vec<u16> = get(&m, sb(G, 0, 128), 2, 8)
        .chunks_exact(2)
        .map(|c| u16::from_le_bytes([c[0], c[1]]))
        .collect();
    let want = merged(&mask, |p, i| rne(data[p][i]), |p, i| old[p][i]);
    assert_eq!(got, want);

    // CopyPredicated needs data and dst in one format.
    let k = kernel(
        G,
        Engine::Dve,
        vec![predicated(
            0x72,
            NumFormat::Int8,
            NumFormat::Float32,
            NumFormat::Bfloat16,
            G,
        )],
    );
    let mut m = Machine::new(&k, G).unwrap();
    let f = m.run(&RunOptions::default(), &mut |_| {}).unwrap_err();
    assert!(f.to_string().contains("CopyPredicated moves bits"), "{f}");
}

#[test]
fn copy_pred_scalar_selects_or_keeps() {
    const G: Gen = Gen::V3;
    let mask: [[u8; 3]; 2] = [[1, 0, 2], [0, 7, 0]];
    let b = |fill: u8, scalar: u8, src: NumFormat, out: NumFormat| {
        CopyPredScalar {
            dst: tensor(sb(G, 0, 64), [3, 1, 1]),
            mask_dtype: tag(NumFormat::Uint8, G),
            use_false_fill: fill,
            num_active_partitions: 2,
            src_dtype: tag(src, G),
            out_dtype: tag(out, G),
            scalar,
            mask: tensor(sb(G, 0, 0), [3, 1, 1]),
            ..Default::default()
        }
        .to_bundle()
    };
    let init = |m: &mut Machine<'_>| {
        put(m, sb(G, 0, 0), 2, &mask.map(|r| r.to_vec()));
        put(
            m,
            sb(G, 0, 64),
            2,
            &[
                le(&[-1i32; 3], i32::to_le_bytes),
                le(&[-2i32; 3], i32::to_le_bytes),
            ],
        );
    };
    // int8 scalar 0xF9 (-7) into int32; unselected lanes keep their value.
    let k = kernel(
        G,
        Engine::Pool,
        vec![b(0, 0xF9, NumFormat::Int8, NumFormat::Int32)],
    );
    let m = run(&k, G, init).unwrap();
    assert_eq!(
        i32s(&get(&m, sb(G, 0, 64), 2, 12)),
        vec![-7, -1, -7, -2, -7, -2]
    );
    // With the false fill, unselected lanes become zero (a select).
    let k = kernel(
        G,
        Engine::Dve,
        vec![b(1, 0xF9, NumFormat::Int8, NumFormat::Int32)],
    );
    let m = run(&k, G, init).unwrap();
    assert_eq!(
        i32s(&get(&m, sb(G, 0, 64), 2, 12)),
        vec![-7, 0, -7, 0, -7, 0]
    );
    // uint8 3 into fp32 through the cast engine.
    let k = kernel(
        G,
        Engine::Dve,
        vec![b(1, 3, NumFormat::Uint8, NumFormat::Float32)],
    );
    let m = run(&k, G, init).unwrap();
    assert_eq!(
        f32s(&get(&m, sb(G, 0, 64), 2, 12)),
        vec![3.0, 0.0, 3.0, 0.0, 3.0, 0.0]
    );
}

fn transpose_bundle(
    g: Gen,
    op: u8,
    op_dim: u8,
    src: Tensor<4>,
    dst: Tensor<4>,
    parts: u8,
) -> Bundle {
    let f = tag(NumFormat::Float32, g);
    TensorReduce::V2(TensorReduceV2 {
        header: Header::new(Opcode(0x83)),
        src,
        in_dtype: f,
        out_dtype: f,
        num_active_channels: parts,
        op: AluOp(op),
        op_dim: TensorSubdim(op_dim),
        dst,
        ..Default::default()
    })
    .to_bundle()
}

/// Run one TransposeTensorReduce on POOL over `rows` (one per partition) and read `out_parts`
/// partitions of `out_elems` fp32 at the destination.
fn run_transpose(
    op: u8,
    op_dim: u8,
    src_num: [u16; 4],
    rows: &[Vec<f32>],
    out_parts: u32,
    out_elems: u16,
) -> Vec<f32> {
    const G: Gen = Gen::V3;
    let dst = sb(G, 0, 1024);
    let b = transpose_bundle(
        G,
        op,
        op_dim,
        tensor(sb(G, 0, 0), src_num),
        tensor(dst, [out_elems, 1, 1, 1]),
        rows.len() as u8,
    );
    let k = kernel(G, Engine::Pool, vec![b]);
    let bytes: Vec<Vec<u8>> = rows.iter().map(|r| le(r, f32::to_le_bytes)).collect();
    let m = run(&k, G, |m| put(m, sb(G, 0, 0), rows.len() as u32, &bytes)).unwrap();
    f32s(&get(&m, dst, out_parts, 4 * out_elems as u32))
}

#[test]
fn transpose_tensor_reduce_on_pool() {
    // [3 partitions × 5] → [5 × 3], bit for bit.
    let x: Vec<Vec<f32>> = (0..3)
        .map(|p| (0..5).map(|i| (p * 10 + i) as f32 - 0.5).collect())
        .collect();
    let want: Vec<f32> = (0..5).flat_map(|c| x.iter().map(move |r| r[c])).collect();
    assert_eq!(run_transpose(0, 0, [5, 1, 1, 1], &x, 5, 3), want);

    // [4 partitions × (3 × 2)] summed over X (3) → [4 × 2] → dst [2 × 4].
    let y: Vec<Vec<f32>> = (0..4)
        .map(|p| (0..6).map(|i| (p * 6 + i) as f32 * 0.25).collect())
        .collect();
    let want: Vec<f32> = (0..2)
        .flat_map(|c| {
            y.iter()
                .map(move |r| r[3 * c..3 * c + 3].iter().sum::<f32>())
        })
        .collect();
    assert_eq!(run_transpose(0x04, 1, [3, 2, 1, 1], &y, 2, 4), want);
}

/// Deterministic test values spanning several binades.
fn values(n: usize, seed: u32) -> Vec<f32> {
    let mut s = seed;
    (0..n)
        .map(|i| {
            s = s.wrapping_mul(1_664_525).wrapping_add(1_013_904_223);
            let m = ((s >> 8) as f32 / (1u32 << 24) as f32) * 2.0 - 1.0;
            m * (1u32 << (i % 7)) as f32
        })
        .collect()
}

fn bf16_bytes(v: &[f32]) -> Vec<u8> {
    le(v, |x: f32| {
        let b = x.to_bits();
        (((b + 0x7FFF + ((b >> 16) & 1)) >> 16) as u16).to_le_bytes()
    })
}

const G4: Gen = Gen::V4;

fn mx_src(data: u32, scale_partition: u32, scale_off: u32, partitions: u16) -> MxMemPattern1d {
    MxMemPattern1d {
        data: Addr4::imm(data),
        scale: Addr4::imm(sb(G4, scale_partition, scale_off)),
        k: 4 * partitions,
        step_sign: 1,
        scale_partition: scale_partition as u8,
        reserved: [0; 4],
    }
}

#[test]
fn quantize_mx_on_dve_matches_the_mx_model() {
    // [32 partitions × 16] bf16 → e4m3 ×4: 32 × 4 containers, scales in rows 0..3 (4 bytes each).
    const P: usize = 32;
    const F: usize = 16;
    let x = values(P * F, 7);
    let src = bf16_bytes(&x);
    let q = QuantizeMx {
        src: MemPattern(tensor(sb(G4, 0, 0), [F as u16, 1, 1])),
        num_active_partitions: P as u8,
        in_dtype: tag(NumFormat::Bfloat16, G4),
        out_dtype: tag(NumFormat::Float8E4m3fnX4, G4),
        dst: mx_src(sb(G4, 0, 256), 4, 512, P as u16),
        ..Default::default()
    };
    let k = kernel(G4, Engine::Dve, vec![q.to_bundle()]);
    let m = run(&k, G4, |m| put_flat(m, sb(G4, 0, 0), &src, 2 * F)).unwrap();
    // An independent oracle (OCP MX, not the library the machine calls): per block of 8
    // partitions × 4 elements, the scale is the largest biased exponent minus e4m3's emax 8
    // (at least 1); each element divided by 2^(scale − 127) goes to the nearest e4m3fn code
    // (ties to the even code), saturating at ±448.
    let e4m3 = |c: u8| -> f64 {
        let (e, m) = ((c >> 3) & 0xF, c & 7);
        let v = if e == 0 {
            f64::from(m) / 8.0 * 2f64.powi(-6)
        } else {
            (1.0 + f64::from(m) / 8.0) * 2f64.powi(i32::from(e) - 7)
        };
        if c & 0x80 != 0 {
            -v
        } else {
            v
        }
    };
    let nearest = |v: f64| -> u8 {
        let mut best = 0u8;
        for c in 0..=255u8 {
            if c & 0x7F == 0x7F {
                continue; // NaN
            }
            let (d, db) = ((e4m3(c) - v).abs(), (e4m3(best) - v).abs());
            if d < db || (d == db && c & 1 == 0 && best & 1 == 1) {
                best = c;
            }
        }
        best
    };
    let xs: Vec<f64> = src
        .chunks_exact(2)
        .map(|c| {
            f64::from(f32::from_bits(
                u32::from(u16::from_le_bytes([c[0], c[1]])) << 16,
            ))
        })
        .collect();
    let mut data = vec![0u8; P * F];
    let mut scales = vec![0u8; (P / 8) * (F / 4)];
    for bi in 0..P / 8 {
        for bj in 0..F / 4 {
            let idx = |p: usize, f: usize| (bi * 8 + p) * F + bj * 4 + f;
            let emax = (0..8)
                .flat_map(|p| (0..4).map(move |f| (p, f)))
                .map(|(p, f)| ((xs[idx(p, f)] as f32).to_bits() >> 23 & 0xFF) as i32)
                .max()
                .unwrap();
            let s = if emax > 8 { emax - 8 } else { 1 };
            scales[bi * (F / 4) + bj] = s as u8;
            for p in 0..8 {
                for f in 0..4 {
                    data[idx(p, f)] = nearest(xs[idx(p, f)] * 2f64.powi(127 - s));
                }
            }
        }
    }
    assert_eq!(get(&m, sb(G4, 0, 256), P as u32, F as u32), data);
    assert_eq!(get(&m, sb(G4, 4, 512), 4, (F / 4) as u32), scales);
    assert!(scales.iter().all(|&s| s > 1), "the blocks are not all tiny");
}

#[test]
fn mx_matmul_pair_on_pe_accumulates_in_psum() {
    // Stationary [K = 4·32, N = 8], moving [K, F = 16], both e5m2 ×4 with their own scales.
    const P: usize = 32;
    const N: usize = 8;
    const F: usize = 16;
    let (w, x) = (values(P * 4 * N, 3), values(P * 4 * F, 5));
    let quant = |v: &[f32], lanes: usize| {
        let shape = MxShape {
            partitions: P,
            free: 4 * lanes,
        };
        let mut data = vec![0u8; P * 4 * lanes];
        let mut scales = vec![0u8; shape.scale_buffer_bytes()];
        mx::quantize(
            &le(v, f32::to_le_bytes),
            NumFormat::Float32,
            shape,
            NumFormat::Float8E5m2X4,
            &mut data,
            &mut scales,
            &MxConfig::default(),
        )
        .unwrap();
        (data, scales)
    };
    let ((wd, ws), (xd, xs)) = (quant(&w, N), quant(&x, F));
    let f8 = tag(NumFormat::Float8E5m2X4, G4);
    let flags = |b: u8| PsumAccumulateFlags::from_bits(b);
    let mm = |fl: u8| {
        MatmulMx {
            src: mx_src(sb(G4, 0, 1024), 0, 4096, P as u16),
            in_dtype: f8,
            num_active_rows: P as u8,
            num_active_cols: N as u8,
            out_dtype: tag(NumFormat::Float32, G4),
            psum_accumulate_flags: flags(fl),
            row_grp: 0x0F,
            col_grp: 0x0F,
            psum_zero_region: ZeroRegion(0),
            dst: MemPattern(tensor(
                Geometry::of(G4).psum_address(0, 0),
                [F as u16, 1, 1],
            )),
            ..Default::default()
        }
        .to_bundle()
    };
    let ld = LdWeightsMx {
        src: mx_src(sb(G4, 0, 0), 8, 2048, P as u16),
        in_dtype: f8,
        num_active_rows: P as u8,
        num_active_cols: N as u8,
        row_grp: 0x0F,
        col_grp: 0x0F,
        ..Default::default()
    }
    .to_bundle();
    // START then ACCUMULATE|STOP: the product twice.
    let k = kernel(G4, Engine::Pe, vec![ld, mm(0x01), mm(0x06)]);
    let m = run(&k, G4, |m| {
        put_flat(m, sb(G4, 0, 0), &wd, 4 * N);
        put_flat(m, sb(G4, 8, 2048), &ws, N);
        put_flat(m, sb(G4, 0, 1024), &xd, 4 * F);
        put_flat(m, sb(G4, 0, 4096), &xs, F);
    })
    .unwrap();
    fn op<'a>(data: &'a [u8], scales: &'a [u8], lanes: usize) -> MxOperand<'a> {
        MxOperand {
            format: NumFormat::Float8E5m2X4,
            partitions: P,
            lanes,
            data,
            scales,
        }
    }
    let mut want = vec![0f32; N * F];
    pe::mx_matmul(&op(&wd, &ws, N), &op(&xd, &xs, F), &mut want).unwrap();
    let want: Vec<f32> = want.iter().map(|v| v + v).collect();
    // LdWeightsMx read the containers in ascending order: container j (w's column j, with its
    // scale byte) sits in PE column N − 1 − j, which is PSUM partition N − 1 − j.
    let got_reversed: Vec<f32> = (0..N)
        .rev()
        .flat_map(|c| {
            let r = m
                .chip
                .resolve(&TensorPattern::dense(
                    Geometry::of(G4).psum_address(c as u32, 0),
                    1,
                    4,
                    F as u32,
                ))
                .unwrap();
            f32s(&m.chip.gather(&r))
        })
        .collect();
    assert_eq!(got_reversed, want);
    // Independent check of the dequantized product against an f64 sum (the values are
    // coarsely quantized, so only closeness to the unquantized product is expected).
    let exact: f64 = (0..4 * P)
        .map(|kk| w[kk * N] as f64 * x[kk * F] as f64)
        .sum();
    assert!(
        (want[0] as f64 / 2.0 - exact).abs() <= 0.25 * exact.abs().max(4.0),
        "{} vs {exact}",
        want[0]
    );
}

#[test]
fn mx_k_field_must_match_the_partitions() {
    let mut src = mx_src(sb(G4, 0, 0), 0, 2048, 32);
    src.k = 64;
    let ld = LdWeightsMx {
        src,
        in_dtype: tag(NumFormat::Float8E4m3fnX4, G4),
        num_active_rows: 32,
        num_active_cols: 4,
        row_grp: 0x0F,
        col_grp: 0x0F,
        ..Default::default()
    }
    .to_bundle();
    let k = kernel(G4, Engine::Pe, vec![ld]);
    let mut m = Machine::new(&k, G4).unwrap();
    let f = m.run(&RunOptions::default(), &mut |_| {}).unwrap_err();
    assert!(
        f.to_string().contains("K = 64 elements, but 32 partitions"),
        "{f}"
    );
}

#[test]
fn activate2_scalar_pair_then_function_with_reduction() {
    use tpbsim_isa::{ActFunc, Activate2, ImmSrc, ReduceCmd};
    let x: [[f32; 4]; 2] = [[0.0, 0.5, -1.0, 2.0], [1.25, -0.75, 3.0, 0.125]];
    let b = |op1: u8, reduce_op: u8, reverse: u8| {
        Activate2 {
            src: tensor(sb(G4, 0, 0), [4, 1]),
            relu_param_src: ImmSrc(0),
            imm0_src: ImmSrc(0),
            reduce_cmd: ReduceCmd(3),
            imm_dtype: tag(NumFormat::Float32, G4),
            op0: AluOp(0x06),
            op1: AluOp(op1),
            reduce_op: AluOp(reduce_op),
            in_dtype: tag(NumFormat::Float32, G4),
            out_dtype: tag(NumFormat::Float32, G4),
            num_active_partitions: 2,
            activation_func: ActFunc(7),
            imm0: 2.0f32.to_bits(),
            imm1: (-1.0f32).to_bits(),
            dst: tensor(sb(G4, 0, 64), [4, 1]),
            reverse,
            ..Default::default()
        }
        .to_bundle()
    };
    let init = |m: &mut Machine<'_>| put(m, sb(G4, 0, 0), 2, &x.map(|r| le(&r, f32::to_le_bytes)));
    let k = kernel(G4, Engine::Act, vec![b(0x04, 0x04, 0)]);
    let m = run(&k, G4, init).unwrap();
    let want: Vec<f32> = x.iter().flatten().map(|&v| (v * 2.0 - 1.0).exp()).collect();
    assert_eq!(f32s(&get(&m, sb(G4, 0, 64), 2, 16)), want);
    for p in 0..2 {
        let s = want[4 * p..4 * p + 4].iter().fold(0.0f32, |a, &v| v + a);
        assert_eq!(m.engines.act_acc.get(p), Some(s));
    }
    // MAX reduction; op1 SUBTRACT reversed: imm1 − t = −1 − 2x.
    let k = kernel(G4, Engine::Act, vec![b(0x05, 0x08, 2)]);
    let m = run(&k, G4, init).unwrap();
    let want: Vec<f32> = x
        .iter()
        .flatten()
        .map(|&v| (-1.0 - v * 2.0).exp())
        .collect();
    assert_eq!(f32s(&get(&m, sb(G4, 0, 64), 2, 16)), want);
    for p in 0..2 {
        let mx = want[4 * p..4 * p + 4]
            .iter()
            .cloned()
            .fold(f32::NEG_INFINITY, f32::max);
        assert_eq!(m.engines.act_acc.get(p), Some(mx));
    }
}

#[test]
fn copy_pred_scalar_with_a_64_bit_source_is_a_fault_not_a_panic() {
    const G: Gen = Gen::V3;
    let b = CopyPredScalar {
        dst: tensor(sb(G, 0, 64), [3, 1, 1]),
        mask_dtype: tag(NumFormat::Uint8, G),
        use_false_fill: 0,
        num_active_partitions: 1,
        src_dtype: tag(NumFormat::Int64, G),
        out_dtype: tag(NumFormat::Int32, G),
        scalar: 5,
        mask: tensor(sb(G, 0, 0), [3, 1, 1]),
        ..Default::default()
    }
    .to_bundle();
    let k = kernel(G, Engine::Pool, vec![b]);
    let mut m = Machine::new(&k, G).unwrap();
    let f = m.run(&RunOptions::default(), &mut |_| {}).unwrap_err();
    assert_eq!(f.kind(), "execution", "{f}");
    assert!(f.to_string().contains("int64"), "{f}");
}

// ---- TensorDequantize and the select family ----

/// The FP8 code of `f` nearest to `v` (ties to the even code), found by decoding every code:
/// independent of the cast engine's encoder.
fn nearest_fp8(f: NumFormat, v: f32) -> u8 {
    let mut best: Option<(f32, u8)> = None;
    for c in 0..=255u8 {
        let d = tpbsim_sim::numerics::to_f32(f, u64::from(c));
        if d.is_nan()
            || d.is_infinite()
            || (d == 0.0 && d.is_sign_negative() != v.is_sign_negative())
        {
            continue;
        }
        let e = (d - v).abs();
        match best {
            Some((be, bc)) if e > be || (e == be && (bc & 1 == 0 || c & 1 == 1)) => {}
            _ => best = Some((e, c)),
        }
    }
    best.expect("a finite code").1
}

fn dequant(fmt: u8, group: u8, src_words: u16, dst_words: u16, g: Gen) -> Bundle {
    use tpbsim_isa::{DequantFmt, TensorDequantize};
    TensorDequantize {
        src: tensor(sb(g, 0, 0), [src_words, 1, 1]),
        in_dtype: tag(NumFormat::Uint32, g),
        out_dtype: tag(NumFormat::Uint32, g),
        num_active_partitions: 2,
        dequant_fmt: DequantFmt(fmt),
        group_size: group,
        dst: tensor(sb(g, 0, 256), [dst_words, 1, 1]),
        ..Default::default()
    }
    .to_bundle()
}

#[test]
fn tensor_dequantize_int4_and_nf4_on_pool() {
    const G: Gen = Gen::V3;
    let words: [u32; 2] = [0x8765_4321, 0xF0E1_D2C3];
    let init =
        |m: &mut Machine<'_>| put(m, sb(G, 0, 0), 2, &words.map(|w| w.to_le_bytes().to_vec()));
    let nibbles = |w: u32| (0..8).map(move |i| (w >> (4 * i)) & 0xF);
    // INT4 → E5M2: every int4 value is exact in E5M2.
    let k = kernel(G, Engine::Pool, vec![dequant(2, 0, 1, 2, G)]);
    let m = run(&k, G, init).unwrap();
    let got: Vec<f32> = get(&m, sb(G, 0, 256), 2, 8)
        .iter()
        .map(|&b| tpbsim_sim::numerics::to_f32(NumFormat::Float8E5m2, u64::from(b)))
        .collect();
    let want: Vec<f32> = words
        .iter()
        .flat_map(|&w| nibbles(w).map(|n| if n >= 8 { n as f32 - 16.0 } else { n as f32 }))
        .collect();
    assert_eq!(got, want);
    // NF4 → E4M3: the codebook value rounded to the nearest E4M3 code.
    let k = kernel(G, Engine::Pool, vec![dequant(3, 0, 1, 2, G)]);
    let m = run(&k, G, init).unwrap();
    let book = tpbsim_sim::numerics::dequant::NF4_CODEBOOK;
    let want: Vec<u8> = words
        .iter()
        .flat_map(|&w| nibbles(w).map(|n| nearest_fp8(NumFormat::Float8E4m3fn, book[n as usize])))
        .collect();
    assert_eq!(get(&m, sb(G, 0, 256), 2, 8), want);
    assert_eq!(
        m.project_defined_notes().len(),
        1,
        "the run carries the project-defined note"
    );
}

#[test]
fn tensor_dequantize_mx_blocks_and_gates() {
    const G: Gen = Gen::V4;
    // FP4 E2M1 codes 0..7 four times per data word; scales 2^0, 2^2, 2^-1, 2^3 per 8 codes.
    let data = 0x7654_3210u32;
    let scale = u32::from_le_bytes([127, 129, 126, 130]);
    let row: Vec<u8> = [data, data, data, data, scale]
        .iter()
        .flat_map(|w| w.to_le_bytes())
        .collect();
    let init = |m: &mut Machine<'_>| put(m, sb(G, 0, 0), 2, &[row.clone(), row.clone()]);
    let k = kernel(G, Engine::Pool, vec![dequant(1, 8, 5, 8, G)]);
    let m = run(&k, G, init).unwrap();
    let grid = [0.0f32, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0];
    let scales = [1.0f32, 4.0, 0.5, 8.0];
    let one: Vec<f32> = (0..32).map(|i| grid[i % 8] * scales[i / 8]).collect();
    let got: Vec<f32> = get(&m, sb(G, 0, 256), 2, 32)
        .iter()
        .map(|&b| tpbsim_sim::numerics::to_f32(NumFormat::Float8E5m2, u64::from(b)))
        .collect();
    assert_eq!(got, [one.clone(), one].concat());
    // The 6-bit format has no MX form; 4-bit non-MX needs twice the words.
    for (b, msg) in [
        (dequant(4, 8, 5, 8, G), "group_size 8 is not valid"),
        (dequant(1, 0, 5, 8, G), "need 10 destination words"),
    ] {
        let k = kernel(G, Engine::Pool, vec![b]);
        let mut m = Machine::new(&k, G).unwrap();
        let f = m.run(&RunOptions::default(), &mut |_| {}).unwrap_err();
        assert!(f.to_string().contains(msg), "{f}");
    }
}

#[test]
fn range_select_on_dve_selects_and_reduces_max() {
    use tpbsim_isa::{F32Bits, ImmSrc, RangeSelect, ReduceCmd};
    const G: Gen = Gen::V3;
    let x: [[f32; 4]; 2] = [[0.5, 2.0, -1.0, 3.0], [5.0, 1.0, 1.5, -4.0]];
    // 0.5 <= x < 3 (IS_GE 0x14, IS_LT 0x16), then MAX into the DVE accumulators.
    let b = RangeSelect {
        num_active_partitions: 2,
        in_out_dtypes: DtypePair::new(tag(NumFormat::Float32, G), tag(NumFormat::Float32, G)),
        reduce_cmd: ReduceCmd(3),
        reduce_op: AluOp(0x08),
        base: F32Bits(0),
        fill_val: F32Bits(0xFF7F_FFFF),
        src: tensor(sb(G, 0, 0), [4, 1]),
        comp_op0: AluOp(0x14),
        comp_op1: AluOp(0x16),
        bound0_src: ImmSrc(0),
        bound1_src: ImmSrc(0),
        bound0: 0.5f32.to_bits(),
        bound1: 3.0f32.to_bits(),
        dst: tensor(sb(G, 0, 64), [4, 1]),
        ..Default::default()
    }
    .to_bundle();
    let init = |m: &mut Machine<'_>| put(m, sb(G, 0, 0), 2, &x.map(|r| le(&r, f32::to_le_bytes)));
    let k = kernel(G, Engine::Dve, vec![b]);
    let m = run(&k, G, init).unwrap();
    let want: Vec<f32> = x
        .iter()
        .flatten()
        .map(|&v| {
            if (0.5..3.0).contains(&v) {
                v
            } else {
                -f32::MAX
            }
        })
        .collect();
    assert_eq!(f32s(&get(&m, sb(G, 0, 64), 2, 16)), want);
    assert_eq!(m.engines.dve_acc.get(0), Some(2.0));
    assert_eq!(m.engines.dve_acc.get(1), Some(1.5));
    // A fill other than -FLT_MAX is a fault.
    let mut bad = b;
    bad.0[20..24].copy_from_slice(&0u32.to_le_bytes());
    let k = kernel(G, Engine::Dve, vec![bad]);
    let mut m = Machine::new(&k, G).unwrap();
    let f = m.run(&RunOptions::default(), &mut |_| {}).unwrap_err();
    assert!(f.to_string().contains("not -FLT_MAX"), "{f}");
}

#[test]
fn select_reduce_copies_true_lanes_and_folds_their_max() {
    use tpbsim_isa::{AccumCmd, SelectReduce};
    const G: Gen = Gen::V3;
    let mask: [[i8; 4]; 2] = [[1, 0, 3, 0], [0, 0, 0, 0]];
    let data: [[f32; 4]; 2] = [[1.5, 9.0, -2.0, 4.0], [7.0, 8.0, 9.0, 10.0]];
    let b = |cmd: u8| {
        SelectReduce {
            mask: tensor(sb(G, 0, 0), [4, 1]),
            src: tensor(sb(G, 0, 64), [4, 1]),
            bypass_op: AluOp(0x00),
            reduce_op: AluOp(0x08),
            mask_src_dtypes: DtypePair::new(tag(NumFormat::Int8, G), tag(NumFormat::Bfloat16, G)),
            out_dtype: tag(NumFormat::Float32, G),
            num_active_partitions: 2,
            imm0_dtype: tag(NumFormat::Float32, G),
            accumulator_cmd: AccumCmd(cmd),
            dst: tensor(sb(G, 0, 128), [4, 1]),
            ..Default::default()
        }
        .to_bundle()
    };
    let init = |m: &mut Machine<'_>| {
        put(m, sb(G, 0, 0), 2, &mask.map(|r| le(&r, i8::to_le_bytes)));
        put(m, sb(G, 0, 64), 2, &data.map(|r| bf16_bytes(&r)));
        put(
            m,
            sb(G, 0, 128),
            2,
            &[
                le(&[-1.0f32; 4], f32::to_le_bytes),
                le(&[-1.0f32; 4], f32::to_le_bytes),
            ],
        );
    };
    let k = kernel(G, Engine::Dve, vec![b(3)]);
    let m = run(&k, G, init).unwrap();
    let want = merged(&mask, |p, i| data[p][i], |_, _| -1.0f32);
    assert_eq!(f32s(&get(&m, sb(G, 0, 128), 2, 16)), want);
    assert_eq!(
        m.engines.dve_acc.get(0),
        Some(1.5),
        "max over the true lanes only"
    );
    assert_eq!(
        m.engines.dve_acc.get(1),
        Some(f32::NEG_INFINITY),
        "no true lane: the MAX identity"
    );
    // Accumulation is modelled on the DVE only.
    let k = kernel(G, Engine::Pool, vec![b(2)]);
    let mut m = Machine::new(&k, G).unwrap();
    let f = m.run(&RunOptions::default(), &mut |_| {}).unwrap_err();
    assert_eq!(f.kind(), "not-simulated", "{f}");
}

#[test]
fn tensor_scalar_select_blends_tensor_and_scalar() {
    use tpbsim_isa::{ImmSrc, TensorScalarSelect};
    const G: Gen = Gen::V3;
    let x: [[i16; 3]; 2] = [[1, 2, 3], [4, 5, 6]];
    // Per-partition predicate (pointer): partition 0 true, partition 1 false.
    let b = |reversed: u8| {
        TensorScalarSelect {
            src: tensor(sb(G, 0, 0), [3, 1, 1]),
            reversed_pred: reversed,
            num_active_partitions: 2,
            dtype: tag(NumFormat::Int16, G),
            pred_dtype: tag(NumFormat::Uint16, G),
            imm_src: ImmSrc(0),
            pred_src: ImmSrc(1),
            imm: 0xABCD_FFF9, // int16 −7 in the low half
            pred: sb(G, 0, 32),
            dst: tensor(sb(G, 0, 64), [3, 1, 1]),
            ..Default::default()
        }
        .to_bundle()
    };
    let init = |m: &mut Machine<'_>| {
        put(m, sb(G, 0, 0), 2, &x.map(|r| le(&r, i16::to_le_bytes)));
        put(m, sb(G, 0, 32), 2, &[vec![5, 0], vec![0, 0]]);
    };
    let i16s = |b: &[u8]| -> Vec<i16> {
        b.chunks_exact(2)
            .map(|c| i16::from_le_bytes([c[0], c[1]]))
            .collect()
    };
    for rev in [0u8, 1] {
        let k = kernel(G, Engine::Pool, vec![b(rev)]);
        let m = run(&k, G, init).unwrap();
        let want: Vec<i16> = (0..6)
            .map(|k| {
                let (p, i) = (k / 3, k % 3);
                if (p == 0) != (rev == 1) {
                    x[p][i]
                } else {
                    -7
                }
            })
            .collect();
        assert_eq!(i16s(&get(&m, sb(G, 0, 64), 2, 6)), want, "reversed {rev}");
    }
}

#[test]
fn affine_select_builds_a_triangular_mask() {
    use tpbsim_isa::{AffineSelect, AffineSelectCmp};
    const G: Gen = Gen::V3;
    // mask[p][c] = c − p (step 1, channel multiplier −1); keep where mask >= 0 (upper triangle),
    // else the fill from register 3 (−1e4).
    let b = AffineSelect {
        num_active_partitions: 3,
        in_out_dtypes: DtypePair::new(tag(NumFormat::Float32, G), tag(NumFormat::Bfloat16, G)),
        fill_mode: AffineSelectCmp(1),
        fill_reg: 3,
        mask_base: 0,
        mask_step: [1, 0, 0, 0],
        mask_num: [4, 1, 1, 1],
        src: tensor(sb(G, 0, 0), [4, 1]),
        dst: tensor(sb(G, 0, 64), [4, 1]),
        channel_multiplier: -1,
        ..Default::default()
    }
    .to_bundle();
    let x: Vec<f32> = (0..12).map(|i| i as f32 + 0.5).collect();
    let init = |m: &mut Machine<'_>| {
        put_flat(m, sb(G, 0, 0), &le(&x, f32::to_le_bytes), 16);
        m.regs[Engine::Pool as usize][3] = (-1.0e4f32).to_bits();
    };
    let k = kernel(G, Engine::Pool, vec![b]);
    let m = run(&k, G, init).unwrap();
    let want: Vec<f32> = (0..12)
        .map(|k| if k % 4 >= k / 4 { x[k] } else { -1.0e4 })
        .collect();
    assert_eq!(get(&m, sb(G, 0, 64), 3, 8), bf16_bytes(&want));
}

#[test]
fn tensor_dequantize_fp6_stream_and_transport_gate() {
    const G: Gen = Gen::V3;
    // 16 FP6 E2M3 codes per partition, code i = (i * 5) mod 64, packed LSB first in 3 words.
    let codes = |p: u32| -> Vec<u32> { (0..16).map(|i| (i * 5 + 7 * p) % 64).collect() };
    let pack = |c: &[u32]| -> Vec<u8> {
        let mut bits: u128 = 0;
        for (i, &v) in c.iter().enumerate() {
            bits |= u128::from(v) << (6 * i);
        }
        bits.to_le_bytes()[..12].to_vec()
    };
    let init = |m: &mut Machine<'_>| put(m, sb(G, 0, 0), 2, &[pack(&codes(0)), pack(&codes(1))]);
    let k = kernel(G, Engine::Pool, vec![dequant(4, 0, 3, 4, G)]);
    let m = run(&k, G, init).unwrap();
    // E2M3, bias 1: sign bit 5, exponent bits 3..5, 3 mantissa bits; every value exact in E4M3.
    let value = |c: u32| {
        let (s, e, f) = (c >> 5, (c >> 3) & 3, c & 7);
        let mag = if e == 0 {
            f as f32 / 8.0
        } else {
            (1.0 + f as f32 / 8.0) * (1 << (e - 1)) as f32
        };
        if s == 1 {
            -mag
        } else {
            mag
        }
    };
    let want: Vec<u8> = (0..2)
        .flat_map(|p| {
            codes(p)
                .into_iter()
                .map(|c| nearest_fp8(NumFormat::Float8E4m3fn, value(c)))
        })
        .collect();
    assert_eq!(get(&m, sb(G, 0, 256), 2, 16), want);
    // The dtype fields are UINT32 transport words; anything else is a fault.
    let mut b = dequant(4, 0, 3, 4, G);
    b.0[32] = tag(NumFormat::Float32, G).0;
    let k = kernel(G, Engine::Pool, vec![b]);
    let mut m = Machine::new(&k, G).unwrap();
    let f = m.run(&RunOptions::default(), &mut |_| {}).unwrap_err();
    assert!(f.to_string().contains("transport words"), "{f}");
}

#[test]
fn selects_with_pointer_scalars_and_integer_formats() {
    use tpbsim_isa::{AffineSelect, AffineSelectCmp, ImmSrc, TensorScalarSelect};
    const G: Gen = Gen::V3;
    // TensorScalarSelect: instruction predicate 1, scalar from a per-partition int32 column.
    let x: [[i32; 2]; 2] = [[10, 11], [12, 13]];
    let ts = |pred: u32| {
        TensorScalarSelect {
            src: tensor(sb(G, 0, 0), [2, 1, 1]),
            num_active_partitions: 2,
            dtype: tag(NumFormat::Int32, G),
            pred_dtype: tag(NumFormat::Uint32, G),
            imm_src: ImmSrc(1),
            pred_src: ImmSrc(0),
            imm: sb(G, 0, 32),
            pred,
            dst: tensor(sb(G, 0, 64), [2, 1, 1]),
            ..Default::default()
        }
        .to_bundle()
    };
    let init = |m: &mut Machine<'_>| {
        put(m, sb(G, 0, 0), 2, &x.map(|r| le(&r, i32::to_le_bytes)));
        put(
            m,
            sb(G, 0, 32),
            2,
            &[
                le(&[-100i32], i32::to_le_bytes),
                le(&[-200i32], i32::to_le_bytes),
            ],
        );
    };
    let k = kernel(G, Engine::Pool, vec![ts(0)]);
    let m = run(&k, G, init).unwrap();
    assert_eq!(
        i32s(&get(&m, sb(G, 0, 64), 2, 8)),
        vec![-100, -100, -200, -200]
    );
    let k = kernel(G, Engine::Pool, vec![ts(1)]);
    let m = run(&k, G, init).unwrap();
    assert_eq!(i32s(&get(&m, sb(G, 0, 64), 2, 8)), vec![10, 11, 12, 13]);
    let k = kernel(G, Engine::Pool, vec![ts(2)]);
    let mut m = Machine::new(&k, G).unwrap();
    let f = m.run(&RunOptions::default(), &mut |_| {}).unwrap_err();
    assert!(f.to_string().contains("predicate 2 (0 or 1)"), "{f}");

    // AffineSelect int32 → int32 on a 2-D ramp (steps 1 and 10 over 3 × 2 elements): EQ keeps
    // the lanes whose ramp is zero; the fill 7.9 converts to int32 by truncation (device policy).
    let b = AffineSelect {
        num_active_partitions: 2,
        in_out_dtypes: DtypePair::new(tag(NumFormat::Int32, G), tag(NumFormat::Int32, G)),
        fill_mode: AffineSelectCmp(2),
        fill_reg: 0,
        mask_base: -11,
        mask_step: [1, 10, 0, 0],
        mask_num: [3, 2, 1, 1],
        src: tensor(sb(G, 0, 0), [6, 1]),
        dst: tensor(sb(G, 0, 64), [6, 1]),
        channel_multiplier: 1,
        ..Default::default()
    }
    .to_bundle();
    let vals: Vec<i32> = (0..12).map(|i| 1_000_000_007 + i).collect();
    let init = |m: &mut Machine<'_>| {
        put_flat(m, sb(G, 0, 0), &le(&vals, i32::to_le_bytes), 24);
        m.regs[Engine::Pool as usize][0] = 7.9f32.to_bits();
    };
    let k = kernel(G, Engine::Pool, vec![b]);
    let m = run(&k, G, init).unwrap();
    let want: Vec<i32> = (0..12)
        .map(|k| {
            let (p, e) = (k / 6, k % 6);
            let ramp = -11 + (e % 3) as i32 + 10 * (e / 3) as i32 + p as i32;
            if ramp == 0 {
                vals[k]
            } else {
                7
            }
        })
        .collect();
    assert_eq!(
        i32s(&get(&m, sb(G, 0, 64), 2, 24)),
        want,
        "equal formats move bits exactly"
    );
}

/// An S2S2D2_STT bundle (0x9D / 0x9E / 0xE5) over 2 partitions of `num` elements per operand,
/// src0 at byte 0, src1 at 64, dst at 128, a pointer scalar column at 192.
#[allow(clippy::too_many_arguments)]
fn stt(
    opcode: u8,
    ops: [u8; 2],
    reverse: u8,
    formats: [NumFormat; 4],
    imm: Option<u32>,
    accumulate: u8,
    num: [u16; 2],
    g: Gen,
) -> Bundle {
    use tpbsim_isa::{AccumCmd, ImmSrc, ScalarTensorTensor};
    let [in0, in1, out, sc] = formats;
    ScalarTensorTensor {
        header: Header::new(Opcode(opcode)),
        src0: tensor(sb(g, 0, 0), num),
        src1: tensor(sb(g, 0, 64), num),
        op0: AluOp(ops[0]),
        op1: AluOp(ops[1]),
        reverse,
        imm0_src: ImmSrc(u8::from(imm.is_none())),
        in_dtypes: DtypePair::new(tag(in0, g), tag(in1, g)),
        out_dtype: tag(out, g),
        num_active_partitions: 2,
        imm0_dtype: tag(sc, g),
        accumulator_cmd: AccumCmd(accumulate),
        dst: tensor(sb(g, 0, 128), num),
        imm0: imm.unwrap_or(sb(g, 0, 192)),
        ..Default::default()
    }
    .to_bundle()
}

/// Run one bundle on `engine` (validated by L2) with src0 / src1 / scalar column rows in place.
fn run_stt<'k>(
    k: &'k Kernel,
    g: Gen,
    rows: [&[Vec<u8>]; 3],
) -> Result<Machine<'k>, tpbsim_sim::machine::Fault> {
    run(k, g, |m| {
        put(m, sb(g, 0, 0), 2, rows[0]);
        put(m, sb(g, 0, 64), 2, rows[1]);
        put(m, sb(g, 0, 192), 2, rows[2]);
    })
}

const ADD: u8 = 0x04;
const SUB: u8 = 0x05;
const MULT: u8 = 0x06;

#[test]
fn scalar_tensor_tensor_arith_fp32_on_dve() {
    const G: Gen = Gen::V3;
    let f = NumFormat::Float32;
    let a: [[f32; 6]; 2] = [
        [1.0, 2.5, -3.0, 4.0, 0.5, 6.0],
        [7.0, -8.0, 9.0, 1e-3, 11.0, 12.0],
    ];
    let b: [[f32; 6]; 2] = [
        [2.0, -1.0, 0.5, 3.0, 8.0, -2.0],
        [1.5, 2.0, -4.0, 1e3, 0.25, 3.0],
    ];
    let col = [0.75f32, -2.0];
    let rows = [
        a.map(|r| le(&r, f32::to_le_bytes)).to_vec(),
        b.map(|r| le(&r, f32::to_le_bytes)).to_vec(),
        col.map(|v| le(&[v], f32::to_le_bytes)).to_vec(),
    ];
    let rows = [&rows[0][..], &rows[1][..], &rows[2][..]];
    // 2-D pattern [3, 2]: (src0 − 1.25) × src1, and src1 − (s × src0) with reverse SECOND.
    for (ops, reverse, imm) in [
        ([SUB, MULT], 0u8, Some(1.25f32)),
        ([MULT, SUB], 2, None),
        ([SUB, SUB], 3, Some(-0.5)),
    ] {
        let bundle = stt(
            0x9D,
            ops,
            reverse,
            [f, f, f, f],
            imm.map(f32::to_bits),
            0,
            [3, 2],
            G,
        );
        let k = kernel(G, Engine::Dve, vec![bundle]);
        let m = run_stt(&k, G, rows).unwrap();
        let want: Vec<f32> = (0..12)
            .map(|i| {
                let (p, e) = (i / 6, i % 6);
                let (x, y, s) = (a[p][e], b[p][e], imm.unwrap_or(col[p]));
                match (ops, reverse) {
                    ([SUB, MULT], 0) => (x - s) * y,
                    ([MULT, SUB], 2) => y - x * s,
                    _ => y - (s - x),
                }
            })
            .collect();
        assert_eq!(
            f32s(&get(&m, sb(G, 0, 128), 2, 24)),
            want,
            "{ops:?} {reverse}"
        );
        assert!(m.project_defined_notes().is_empty(), "all public");
    }
}

#[test]
fn scalar_tensor_tensor_int_on_pool_and_bitvec_on_dve() {
    const G: Gen = Gen::V3;
    let i = NumFormat::Int32;
    let a: [[i32; 4]; 2] = [[1, -2, i32::MAX, 40], [5, 6, -7, 8]];
    let b: [[i32; 4]; 2] = [[3, 3, 2, -1], [0, -1, 4, 100]];
    let rows = [
        a.map(|r| le(&r, i32::to_le_bytes)).to_vec(),
        b.map(|r| le(&r, i32::to_le_bytes)).to_vec(),
        vec![vec![0; 4]; 2],
    ];
    let rows = [&rows[0][..], &rows[1][..], &rows[2][..]];
    // POOL integer datapath: (src0 + s) × src1, wrapping, with the FP32 immediate −7.9 → −7.
    let bundle = stt(
        0x9D,
        [ADD, MULT],
        0,
        [i, i, i, NumFormat::Float32],
        Some((-7.9f32).to_bits()),
        0,
        [4, 1],
        G,
    );
    let k = kernel(G, Engine::Pool, vec![bundle]);
    let m = run_stt(&k, G, rows).unwrap();
    let want: Vec<i32> = (0..8)
        .map(|k| {
            a[k / 4][k % 4]
                .wrapping_add(-7)
                .wrapping_mul(b[k / 4][k % 4])
        })
        .collect();
    assert_eq!(i32s(&get(&m, sb(G, 0, 128), 2, 16)), want);
    assert_eq!(m.project_defined_notes().len(), 1, "the immediate reading");

    // Bit-vector form on DVE, uint16 (the immediate's low half 0x00ff): (src0 ^ s) & src1, and
    // with op0 reversed (s logical-shift-left src0) | src1.
    let u = NumFormat::Uint16;
    let x: [[u16; 4]; 2] = [[0x1234 & 0xf, 15, 0, 3], [1, 2, 4, 8]];
    let y: [[u16; 4]; 2] = [[0x0ff0, 0xf00f, 0xffff, 0x1], [0x8000, 0, 0x00ff, 0xff00]];
    let rows = [
        x.map(|r| le(&r, u16::to_le_bytes)).to_vec(),
        y.map(|r| le(&r, u16::to_le_bytes)).to_vec(),
        vec![vec![0; 2]; 2],
    ];
    let rows = [&rows[0][..], &rows[1][..], &rows[2][..]];
    let u16s = |b: &[u8]| -> Vec<u16> {
        b.chunks_exact(2)
            .map(|c| u16::from_le_bytes([c[0], c[1]]))
            .collect()
    };
    for (ops, reverse) in [([0x0Cu8, 0x0Au8], 0u8), ([0x10, 0x0B], 1)] {
        let bundle = stt(
            0x9E,
            ops,
            reverse,
            [u, u, u, u],
            Some(0xABCD_00FF),
            0,
            [4, 1],
            G,
        );
        let k = kernel(G, Engine::Dve, vec![bundle]);
        let m = run_stt(&k, G, rows).unwrap();
        let want: Vec<u16> = (0..8)
            .map(|k| {
                let (s, e, p) = (0x00ffu32, x[k / 4][k % 4] as u32, y[k / 4][k % 4] as u32);
                (if reverse == 0 {
                    (e ^ s) & p
                } else {
                    (s << e) | p
                }) as u16
            })
            .collect();
        assert_eq!(u16s(&get(&m, sb(G, 0, 128), 2, 8)), want, "{ops:?}");
    }
}

#[test]
fn tensor_tensor_scan_runs_the_recurrence_along_the_free_elements() {
    const G: Gen = Gen::V3;
    let f = NumFormat::Float32;
    let a: [[f32; 4]; 2] = [[0.5, 2.0, -1.0, 0.25], [1.0, 1.0, 3.0, -0.5]];
    let b: [[f32; 4]; 2] = [[1.0, -3.0, 0.5, 2.0], [4.0, 0.0, -1.5, 7.0]];
    let col = [10.0f32, -1.0];
    let rows = [
        a.map(|r| le(&r, f32::to_le_bytes)).to_vec(),
        b.map(|r| le(&r, f32::to_le_bytes)).to_vec(),
        col.map(|v| le(&[v], f32::to_le_bytes)).to_vec(),
    ];
    let rows = [&rows[0][..], &rows[1][..], &rows[2][..]];
    // r = src0 × r + src1 from a per-partition initial value, over a [2, 2] pattern (the
    // carry crosses the row boundary); then r = src1 − (r − src0) from the immediate 3.0.
    for (ops, reverse, imm) in [([MULT, ADD], 0u8, None), ([SUB, SUB], 3, Some(3.0f32))] {
        let bundle = stt(
            0xE5,
            ops,
            reverse,
            [f, f, f, f],
            imm.map(f32::to_bits),
            0,
            [2, 2],
            G,
        );
        let k = kernel(G, Engine::Dve, vec![bundle]);
        let m = run_stt(&k, G, rows).unwrap();
        let mut want = Vec::new();
        for p in 0..2 {
            let mut r = imm.unwrap_or(col[p]);
            for e in 0..4 {
                r = if reverse == 0 {
                    a[p][e] * r + b[p][e]
                } else {
                    b[p][e] - (r - a[p][e])
                };
                want.push(r);
            }
        }
        assert_eq!(f32s(&get(&m, sb(G, 0, 128), 2, 16)), want, "{ops:?}");
        assert_eq!(m.project_defined_notes().len(), 1, "the scan's order note");
    }
    // POOL int32: wrapping prefix sums of src0 + src1 (op0 ADD with the carry, op1 ADD).
    let i = NumFormat::Int32;
    let x: [[i32; 3]; 2] = [[i32::MAX, 1, 2], [-5, 10, -20]];
    let y: [[i32; 3]; 2] = [[0, 0, 1], [1, 1, 1]];
    let rows = [
        x.map(|r| le(&r, i32::to_le_bytes)).to_vec(),
        y.map(|r| le(&r, i32::to_le_bytes)).to_vec(),
        [[100i32], [-100]]
            .map(|r| le(&r, i32::to_le_bytes))
            .to_vec(),
    ];
    let rows = [&rows[0][..], &rows[1][..], &rows[2][..]];
    let bundle = stt(0xE5, [ADD, ADD], 0, [i, i, i, i], None, 0, [3, 1], G);
    let k = kernel(G, Engine::Pool, vec![bundle]);
    let m = run_stt(&k, G, rows).unwrap();
    let mut want = Vec::new();
    for (p, init) in [100i32, -100].into_iter().enumerate() {
        let mut r = init;
        for e in 0..3 {
            r = x[p][e].wrapping_add(r).wrapping_add(y[p][e]);
            want.push(r);
        }
    }
    assert_eq!(i32s(&get(&m, sb(G, 0, 128), 2, 12)), want);
}

#[test]
fn scalar_tensor_tensor_faults() {
    const G: Gen = Gen::V3;
    let (f, i) = (NumFormat::Float32, NumFormat::Int32);
    let one = Some(1.0f32.to_bits());
    let fault = |b: Bundle, e: Engine| {
        let k = kernel(G, e, vec![b]);
        let mut m = Machine::new(&k, G).unwrap();
        m.run(&RunOptions::default(), &mut |_| {}).unwrap_err()
    };
    let mut cases: Vec<(Bundle, &str, &str)> = vec![
        (
            stt(0x9D, [0x07, ADD], 0, [f; 4], one, 0, [4, 1], G),
            "execution",
            "is not a general arithmetic op",
        ),
        (
            stt(0x9E, [ADD, 0x0A], 0, [i; 4], Some(1), 0, [4, 1], G),
            "execution",
            "is not a general bit-vector op",
        ),
        (
            stt(0x9E, [0x0A, 0x0A], 0, [f, i, i, i], Some(1), 0, [4, 1], G),
            "execution",
            "is not an integer format",
        ),
        (
            stt(0xE5, [ADD, ADD], 0, [f; 4], one, 3, [4, 1], G),
            "execution",
            "requires IDLE",
        ),
        (
            stt(0x9D, [ADD, ADD], 0, [f; 4], one, 2, [4, 1], G),
            "not-simulated",
            "accumulator_cmd 2",
        ),
        (
            stt(0x9D, [ADD, ADD], 0, [f, f, f, i], Some(1), 0, [4, 1], G),
            "execution",
            "an instruction immediate is FP32",
        ),
    ];
    // ABS_MAX (0x20) joins the general arithmetic set only from v4.
    cases.push((
        stt(0x9D, [0x20, ADD], 0, [f; 4], one, 0, [4, 1], G),
        "execution",
        "is not a general arithmetic op",
    ));
    for (b, kind, text) in cases {
        let e = fault(b, Engine::Dve);
        assert_eq!(e.kind(), kind, "{e}");
        assert!(e.to_string().contains(text), "{e}");
    }
    // A register-pointer scalar is not simulated.
    let mut b = stt(0x9D, [ADD, ADD], 0, [f; 4], one, 0, [4, 1], G);
    b.0[39] = 2;
    assert_eq!(fault(b, Engine::Dve).kind(), "not-simulated");
    // src1 with a different element count.
    let mut b = stt(0x9D, [ADD, ADD], 0, [f; 4], one, 0, [4, 1], G);
    b.0[24 + 8] = 3;
    let e = fault(b, Engine::Dve);
    assert!(e.to_string().contains("but `src1` has 2 × 3"), "{e}");
}

#[test]
fn scalar_tensor_tensor_on_later_generations() {
    // v4: ABS_MAX (0x20) is a general arithmetic op; max(|src0|, |s|) + src1 on DVE.
    let f = NumFormat::Float32;
    let a: [[f32; 2]; 2] = [[-3.0, 1.0], [0.5, -0.25]];
    let b: [[f32; 2]; 2] = [[1.0, 2.0], [3.0, 4.0]];
    let rows = [
        a.map(|r| le(&r, f32::to_le_bytes)).to_vec(),
        b.map(|r| le(&r, f32::to_le_bytes)).to_vec(),
        vec![vec![0; 4]; 2],
    ];
    let rows = [&rows[0][..], &rows[1][..], &rows[2][..]];
    let g = Gen::V4;
    let bundle = stt(
        0x9D,
        [0x20, ADD],
        0,
        [f; 4],
        Some((-2.0f32).to_bits()),
        0,
        [2, 1],
        g,
    );
    let k = kernel(g, Engine::Dve, vec![bundle]);
    let m = run_stt(&k, g, rows).unwrap();
    let want: Vec<f32> = (0..4)
        .map(|k| a[k / 2][k % 2].abs().max(2.0) + b[k / 2][k % 2])
        .collect();
    assert_eq!(f32s(&get(&m, sb(g, 0, 128), 2, 8)), want);

    // v5 DVE with int32 operands runs the arith form in fp32 (exact for these values).
    let i = NumFormat::Int32;
    let x: [[i32; 2]; 2] = [[7, -9], [100, 3]];
    let y: [[i32; 2]; 2] = [[2, 5], [-1, 0]];
    let rows = [
        x.map(|r| le(&r, i32::to_le_bytes)).to_vec(),
        y.map(|r| le(&r, i32::to_le_bytes)).to_vec(),
        [[4i32], [-6]].map(|r| le(&r, i32::to_le_bytes)).to_vec(),
    ];
    let rows = [&rows[0][..], &rows[1][..], &rows[2][..]];
    let g = Gen::V5;
    let bundle = stt(0x9D, [SUB, MULT], 0, [i; 4], None, 0, [2, 1], g);
    let k = kernel(g, Engine::Dve, vec![bundle]);
    let m = run_stt(&k, g, rows).unwrap();
    let col = [4, -6];
    let want: Vec<i32> = (0..4)
        .map(|k| (x[k / 2][k % 2] - col[k / 2]) * y[k / 2][k % 2])
        .collect();
    assert_eq!(i32s(&get(&m, sb(g, 0, 128), 2, 8)), want);
}

/// 0x47 Cast fp32 → int32 of one partition of 8 values on `engine`.
fn cast_to_int32(engine: Engine, opcode: u8, x: &[f32; 8]) -> Vec<i32> {
    const G: Gen = Gen::V3;
    let b = TensorReduce::V2(TensorReduceV2 {
        header: Header::new(Opcode(opcode)),
        src: tensor(sb(G, 0, 0), [8, 1, 1, 1]),
        in_dtype: tag(NumFormat::Float32, G),
        out_dtype: tag(NumFormat::Int32, G),
        num_active_channels: 1,
        dst: tensor(sb(G, 0, 64), [8, 1, 1, 1]),
        ..Default::default()
    })
    .to_bundle();
    let k = kernel(G, engine, vec![b]);
    let m = run(&k, G, |m| {
        put(m, sb(G, 0, 0), 1, &[le(x, f32::to_le_bytes)])
    })
    .unwrap();
    get(&m, sb(G, 0, 64), 1, 32)
        .chunks_exact(4)
        .map(|c| i32::from_le_bytes([c[0], c[1], c[2], c[3]]))
        .collect()
}

#[test]
fn copy_and_cast_round_to_nearest_even_on_dve_and_truncate_on_pool() {
    // Halfway cases and fractions on both sides: RNE and truncation differ on each of them
    // but 2.0.
    let x = [2.5f32, 3.5, -2.5, 2.7, -2.7, 0.5, 1.5, 2.0];
    let rne = vec![2, 4, -2, 3, -3, 0, 2, 2];
    let trunc = vec![2, 3, -2, 2, -2, 0, 1, 2];
    for op in [0x46, 0x47] {
        assert_eq!(cast_to_int32(Engine::Dve, op, &x), rne, "dve 0x{op:02x}");
        // The POOL cast kernel converts float to int toward zero (docs/numerics.md §3).
        assert_eq!(
            cast_to_int32(Engine::Pool, op, &x),
            trunc,
            "pool 0x{op:02x}"
        );
    }
}

/// A 4 × 4 bf16 matmul whose PSUM output is `out` (a dtype name of the text form) on `gen`:
/// every stationary column is `k + 1` down its 4 rows and the moving row `k` is `1 ..= 4`, so
/// each PSUM partition `c` holds `10 · (f + 1)` at element `f`, whatever the column order.
/// `l2` as in [`run_with`].
fn small_matmul(gen: Gen, out: &str, l2: bool) -> Result<Vec<u8>, tpbsim_sim::machine::Fault> {
    let psum = Geometry::of(gen).psum_address(0, 0);
    let text = format!(
        "LDWEIGHTS src=[{w:#x} step=1,0,0 num=4,1,1] in_dtype=BF16 num_active_rows=4 num_active_cols=4 row_grp=15 col_grp=15\n\
         MATMUL src=[{x:#x} step=1,0,0 num=4,1,1] in_dtype=BF16 out_dtype={out} num_active_rows=4 num_active_cols=4 psum_accumulate_flags={{begin=1 end=1}} row_grp=15 col_grp=15 dst=[{psum:#x} step=1,0,0 num=4,1,1]\n",
        w = sb(gen, 0, 0),
        x = sb(gen, 0, 64),
    );
    let stream = tpbsim_isa::text::parse_text(&text, gen)
        .unwrap_or_else(|(line, e)| panic!("line {line}: {}", e.message));
    let k = kernel(gen, Engine::Pe, stream);
    let m = run_with(&k, gen, l2, |m| {
        let w: Vec<Vec<u8>> = (0..4).map(|r| bf16_bytes(&[r as f32 + 1.0; 4])).collect();
        put(m, sb(gen, 0, 0), 4, &w);
        put(
            m,
            sb(gen, 0, 64),
            4,
            &vec![bf16_bytes(&[1.0, 2.0, 3.0, 4.0]); 4],
        );
    })?;
    let width = if out == "BF16" { 2 } else { 4 };
    Ok(get(&m, psum, 4, 4 * width))
}

#[test]
fn a_bf16_psum_output_is_written_from_v4_on_and_refused_by_name_before() {
    let want = [10.0f32, 20.0, 30.0, 40.0];
    for gen in [Gen::V3, Gen::V4] {
        let fp32 = small_matmul(gen, "FP32", true).unwrap();
        assert_eq!(f32s(&fp32), want.repeat(4), "{gen}");
    }
    let bf16 = small_matmul(Gen::V4, "BF16", true).unwrap();
    let got: Vec<f32> = bf16
        .chunks_exact(2)
        .map(|c| half::bf16::from_le_bytes([c[0], c[1]]).to_f32())
        .collect();
    assert_eq!(got, want.repeat(4));
    // Before v4, L2 refuses the dtype; unchecked, the machine refuses to write it.
    let f = small_matmul(Gen::V3, "BF16", true).unwrap_err();
    assert!(f.to_string().contains("has_valid_mm_out_dtype"), "{f}");
    let f = small_matmul(Gen::V3, "BF16", false).unwrap_err();
    assert!(
        f.to_string()
            .contains("PSUM writes in bfloat16 are not simulated on v3"),
        "{f}"
    );
}
