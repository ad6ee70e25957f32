//! Builds the testdata kernels: each is assembled with tpbsim's own encoder (the typed isa
//! formats), packed into a NEFF with its inputs as `.npy` members, and written to
//! `testdata/kernels/<name>.neff`. Reference outputs are computed separately by
//! `testdata/kernels/make_refs.py` (numpy + ml_dtypes).
//!
//! ```sh
//! cargo run -p tpbsim-sim --example build_kernels [-- OUT_DIR]
//! ```
//!
//! Every kernel follows one handshake: SP triggers the input DMA block (each entry increments
//! semaphore 1 on completion), the compute engines wait on semaphores and signal each other with
//! `SEM_INC_COMPLETE`, the last compute bundle increments semaphore 2, and SP's output trigger
//! waits for semaphore 2.

use std::path::PathBuf;

use tpbsim_isa::NumFormat;
use tpbsim_isa::{
    AccumCmd, ActFunc, Activate, Addr4, AluOp, Bundle, Control, DmaTrigger, Dtype, DtypePair,
    Engine, Events, F32Bits, Gen, Header, ImmSrc, ImmSrcN, LdWeights, LdWeightsMx, LdWeightsV3,
    Matmul, MatmulMx, MatmulV3, MemPattern, MxMemPattern1d, Opcode, PsumAccumulateFlags,
    QuantizeMx, ReadAccumulator, Tensor, TensorReduce, TensorReduceV2, TensorScalar, TensorSubdim,
    TensorTensor, TsReverse, UpdateMode, WaitMode, Wire, ZeroRegion,
};
use tpbsim_neff::{DmaEntry, VarKind, VarRef};
use tpbsim_sim::machine::ops::pe::compiler_weights_source;
use tpbsim_sim::machine::pack::{Collective, Package};
use tpbsim_sim::machine::Geometry;

const GEN: Gen = Gen::V3;
const P: u16 = 128;

fn events(wait: Option<(u8, u32)>, inc: Option<u8>) -> Events {
    let mut e = Events::default();
    if let Some((sem, v)) = wait {
        e.wait_mode = WaitMode(5); // SEM_GE_IMM
        e.wait_idx = sem;
        e.semaphore_value = v;
    }
    if let Some(sem) = inc {
        e.update_mode = UpdateMode(0x13); // SEM_INC_COMPLETE
        e.update_idx = sem;
    }
    e
}

fn sbuf(offset: u32) -> Addr4 {
    Addr4::imm(Geometry::of(GEN).sbuf_address(0, offset))
}

/// A dense row of `n` elements per partition.
fn row<const N: usize>(addr: Addr4, n: u16) -> Tensor<N> {
    let mut num = [1u16; N];
    num[0] = n;
    Tensor::new(addr, [1; N], num)
}

fn trigger(queue: &str, block: u32, ev: Events) -> Bundle {
    let mut name = [0u8; 36];
    name[..queue.len()].copy_from_slice(queue.as_bytes());
    DmaTrigger {
        events: ev,
        queue_name: name,
        block_id: block,
        ..Default::default()
    }
    .to_bundle()
}

fn tag(f: NumFormat) -> Dtype {
    Dtype(f.wire_tag(GEN).expect("format has a wire tag"))
}

/// DRAM `[128, n]` (row-major) ⇄ SBUF partition p, `n` elements at `offset`.
fn rows(var: &str, offset: u32, n: u64, f: NumFormat, to_sbuf: bool, sem: Option<u32>) -> DmaEntry {
    let per_partition =
        (Geometry::of(GEN).sbuf_partition_stride() / f.container_bytes() as u32) as u64;
    let sb = VarRef::Name("state_buffer".into());
    let dram = VarRef::Name(var.into());
    let mut e = if to_sbuf {
        DmaEntry::copy(dram, sb, vec![P as u64, n])
    } else {
        DmaEntry::copy(sb, dram, vec![P as u64, n])
    };
    let steps = Some(vec![per_partition as i64, 1]);
    if to_sbuf {
        e.to_offset = offset as u64;
        e.to_steps = steps;
    } else {
        e.from_offset = offset as u64;
        e.from_steps = steps;
    }
    e.sem = sem;
    e
}

fn bytes_f32(v: &[f32]) -> Vec<u8> {
    v.iter().flat_map(|x| x.to_le_bytes()).collect()
}

/// Deterministic pseudo-random numbers (xorshift64*), the same on every platform.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
    /// Roughly normal (sum of four uniforms, centred, unit variance).
    fn normal(&mut self) -> f32 {
        let s: f64 = (0..4)
            .map(|_| (self.next() >> 11) as f64 / (1u64 << 53) as f64)
            .sum();
        ((s - 2.0) * (3.0f64).sqrt()) as f32
    }
    fn normals(&mut self, n: usize, scale: f32) -> Vec<f32> {
        (0..n).map(|_| self.normal() * scale).collect()
    }
}

fn bf16(v: &[f32]) -> Vec<u8> {
    // Round to nearest even, as ml_dtypes does; inputs are finite.
    v.iter()
        .flat_map(|x| {
            let b = x.to_bits();
            (((b + 0x7FFF + ((b >> 16) & 1)) >> 16) as u16).to_le_bytes()
        })
        .collect()
}

fn base(name: &str) -> Package {
    let mut p = Package::new(name, GEN);
    p.onchip();
    p.queue("in", None);
    p.queue("out", None);
    p
}

fn finish_sp(p: &mut Package) {
    p.streams[Engine::Sp as usize] = vec![
        trigger("in", 0, Events::default()),
        trigger("out", 0, events(Some((2, 1)), None)),
    ];
}

/// out = x + y on DVE (fp32).
fn vadd() -> Package {
    const F: u16 = 512;
    let mut r = Rng(1);
    let mut p = base("vadd");
    let (x, y) = (
        r.normals(P as usize * F as usize, 1.0),
        r.normals(P as usize * F as usize, 1.0),
    );
    p.var(
        "x",
        VarKind::Input,
        NumFormat::Float32,
        &[P as u64, F as u64],
        Some(&bytes_f32(&x)),
    )
    .unwrap();
    p.var(
        "y",
        VarKind::Input,
        NumFormat::Float32,
        &[P as u64, F as u64],
        Some(&bytes_f32(&y)),
    )
    .unwrap();
    p.var(
        "out",
        VarKind::Output,
        NumFormat::Float32,
        &[P as u64, F as u64],
        None,
    )
    .unwrap();
    p.block(
        Engine::Sp,
        "in",
        0,
        vec![
            rows("x", 0, F as u64, NumFormat::Float32, true, Some(1)),
            rows("y", 4096, F as u64, NumFormat::Float32, true, Some(1)),
        ],
    );
    p.block(
        Engine::Sp,
        "out",
        0,
        vec![rows("out", 8192, F as u64, NumFormat::Float32, false, None)],
    );
    let f32t = tag(NumFormat::Float32);
    p.streams[Engine::Dve as usize] = vec![TensorTensor {
        events: events(Some((1, 2)), Some(2)),
        in_dtypes: DtypePair::new(f32t, f32t),
        out_dtype: f32t,
        op: AluOp(0x04),
        num_active_partitions: P as u8,
        src0: row(sbuf(0), F),
        src1: row(sbuf(4096), F),
        dst: row(sbuf(8192), F),
        ..Default::default()
    }
    .to_bundle()];
    finish_sp(&mut p);
    p
}

/// out = x + y on POOL, int32, wrapping.
fn iadd_pool() -> Package {
    const F: u16 = 256;
    let mut r = Rng(2);
    let mut p = base("iadd_pool");
    let n = P as usize * F as usize;
    // Half of the values near the int32 limits so that sums wrap.
    let ints = |r: &mut Rng| -> Vec<u8> {
        (0..n)
            .flat_map(|i| {
                let v = r.next();
                let x = if i % 2 == 0 {
                    (v >> 32) as i32
                } else {
                    (v as i32) >> 12
                };
                x.to_le_bytes()
            })
            .collect()
    };
    let (x, y) = (ints(&mut r), ints(&mut r));
    p.var(
        "x",
        VarKind::Input,
        NumFormat::Int32,
        &[P as u64, F as u64],
        Some(&x),
    )
    .unwrap();
    p.var(
        "y",
        VarKind::Input,
        NumFormat::Int32,
        &[P as u64, F as u64],
        Some(&y),
    )
    .unwrap();
    p.var(
        "out",
        VarKind::Output,
        NumFormat::Int32,
        &[P as u64, F as u64],
        None,
    )
    .unwrap();
    p.block(
        Engine::Sp,
        "in",
        0,
        vec![
            rows("x", 0, F as u64, NumFormat::Int32, true, Some(1)),
            rows("y", 2048, F as u64, NumFormat::Int32, true, Some(1)),
        ],
    );
    p.block(
        Engine::Sp,
        "out",
        0,
        vec![rows("out", 4096, F as u64, NumFormat::Int32, false, None)],
    );
    let i32t = tag(NumFormat::Int32);
    p.streams[Engine::Pool as usize] = vec![TensorTensor {
        events: events(Some((1, 2)), Some(2)),
        in_dtypes: DtypePair::new(i32t, i32t),
        out_dtype: i32t,
        op: AluOp(0x04),
        num_active_partitions: P as u8,
        src0: row(sbuf(0), F),
        src1: row(sbuf(2048), F),
        dst: row(sbuf(4096), F),
        ..Default::default()
    }
    .to_bundle()];
    finish_sp(&mut p);
    p
}

fn activate(
    ev: Events,
    func: u8,
    scale: f32,
    bias: ImmBias,
    acc: u8,
    src: Tensor<3>,
    dst: Tensor<3>,
) -> Bundle {
    let f32t = tag(NumFormat::Float32);
    let (bias_src_n, bias) = match bias {
        ImmBias::Imm(v) => (ImmSrcN(1), v.to_bits()),
        ImmBias::Column(a) => (ImmSrcN(0), a.0),
    };
    Activate {
        events: ev,
        imm_src: ImmSrc(0),
        scale_src: ImmSrc(0),
        accumulator_cmd: AccumCmd(acc),
        bias_src_n,
        src,
        in_bias_dtypes: DtypePair::new(f32t, f32t),
        out_dtype: f32t,
        num_active_partitions: P as u8,
        activation_func: ActFunc(func),
        scale_value: F32Bits::from_f32(scale),
        bias,
        imm: 0,
        dst,
        ..Default::default()
    }
    .to_bundle()
}

enum ImmBias {
    Imm(f32),
    Column(Addr4),
}

fn read_acc(ev: Events, dst: Addr4) -> Bundle {
    ReadAccumulator {
        events: ev,
        dst_element_count: 1,
        dtype: tag(NumFormat::Float32),
        negated: 0,
        num_active_partitions: P as u8,
        dst: row(dst, 1),
        ..Default::default()
    }
    .to_bundle()
}

/// TensorScalar: out = src op0 column(p).
fn ts_column(ev: Events, op0: u8, column: Addr4, src: Tensor<3>, dst: Tensor<3>) -> Bundle {
    let f32t = tag(NumFormat::Float32);
    TensorScalar {
        header: Header::new(Opcode(0x43)),
        events: ev,
        accumulator_cmd: AccumCmd(0),
        src,
        in_dtype: f32t,
        out_dtype: f32t,
        num_active_partitions: P as u8,
        imm0_src: ImmSrc(1),
        op0: AluOp(op0),
        op1: AluOp(0),
        reverse: TsReverse::from_bits(0),
        imm1_src: ImmSrc(0),
        imm0: column.0,
        imm1: 0,
        dst,
        ..Default::default()
    }
    .to_bundle()
}

/// S4D4_TR bundle (reduce / copy / reciprocal) on v3.
fn tr(
    opcode: u8,
    ev: Events,
    op: u8,
    negated: u8,
    op_dim: u8,
    src: Tensor<4>,
    dst: Tensor<4>,
) -> Bundle {
    let f32t = tag(NumFormat::Float32);
    TensorReduceV2 {
        header: Header::new(Opcode(opcode)),
        events: ev,
        src,
        in_dtype: f32t,
        out_dtype: f32t,
        num_active_channels: P as u8,
        negated,
        op: AluOp(op),
        op_dim: TensorSubdim(op_dim),
        ..Default::default()
    }
    .to_bundle_with_dst(dst)
}

trait WithDst {
    fn to_bundle_with_dst(self, dst: Tensor<4>) -> Bundle;
}

impl WithDst for TensorReduceV2 {
    fn to_bundle_with_dst(mut self, dst: Tensor<4>) -> Bundle {
        self.dst = dst;
        TensorReduce::V2(self).to_bundle()
    }
}

/// Row-wise softmax over 512 columns: DVE max → ACT exp(x − max) with accumulated sums →
/// DVE reciprocal and scale.
fn softmax() -> Package {
    const F: u16 = 512;
    let mut r = Rng(3);
    let mut p = base("softmax");
    let x = r.normals(P as usize * F as usize, 3.0);
    p.var(
        "x",
        VarKind::Input,
        NumFormat::Float32,
        &[P as u64, F as u64],
        Some(&bytes_f32(&x)),
    )
    .unwrap();
    p.var(
        "out",
        VarKind::Output,
        NumFormat::Float32,
        &[P as u64, F as u64],
        None,
    )
    .unwrap();
    p.block(
        Engine::Sp,
        "in",
        0,
        vec![rows("x", 0, F as u64, NumFormat::Float32, true, Some(1))],
    );
    p.block(
        Engine::Sp,
        "out",
        0,
        vec![rows(
            "out",
            12288,
            F as u64,
            NumFormat::Float32,
            false,
            None,
        )],
    );
    let (negmax, sum, recip) = (sbuf(4096), sbuf(4160), sbuf(4224));
    p.streams[Engine::Dve as usize] = vec![
        tr(
            0x42,
            events(Some((1, 1)), Some(3)),
            0x08,
            1,
            1,
            row(sbuf(0), F),
            row(negmax, 1),
        ),
        tr(
            0x48,
            events(Some((4, 1)), None),
            0,
            0,
            0,
            row(sum, 1),
            row(recip, 1),
        ),
        ts_column(
            events(None, Some(2)),
            0x06,
            recip,
            row(sbuf(8192), F),
            row(sbuf(12288), F),
        ),
    ];
    p.streams[Engine::Act as usize] = vec![
        activate(
            events(Some((3, 1)), None),
            7,
            1.0,
            ImmBias::Column(negmax),
            3,
            row(sbuf(0), F),
            row(sbuf(8192), F),
        ),
        read_acc(events(None, Some(4)), sum),
    ];
    finish_sp(&mut p);
    p
}

/// RMSNorm over 512 columns with a per-column weight: ACT square with accumulated sums, ACT
/// rsqrt(sum / 512 + eps), DVE scale by the row factor and the weight.
fn rmsnorm() -> Package {
    const F: u16 = 512;
    const EPS: f32 = 1e-6;
    let mut r = Rng(4);
    let mut p = base("rmsnorm");
    let x = r.normals(P as usize * F as usize, 2.0);
    let w: Vec<f32> = r.normals(F as usize, 0.5).iter().map(|v| 1.0 + v).collect();
    p.var(
        "x",
        VarKind::Input,
        NumFormat::Float32,
        &[P as u64, F as u64],
        Some(&bytes_f32(&x)),
    )
    .unwrap();
    p.var(
        "w",
        VarKind::Input,
        NumFormat::Float32,
        &[F as u64],
        Some(&bytes_f32(&w)),
    )
    .unwrap();
    p.var(
        "out",
        VarKind::Output,
        NumFormat::Float32,
        &[P as u64, F as u64],
        None,
    )
    .unwrap();
    // w is broadcast to every partition (source step 0 over partitions).
    let mut wb = rows("w", 4096, F as u64, NumFormat::Float32, true, Some(1));
    wb.from_sizes = vec![P as u64, F as u64];
    wb.from_steps = Some(vec![0, 1]);
    p.block(
        Engine::Sp,
        "in",
        0,
        vec![
            rows("x", 0, F as u64, NumFormat::Float32, true, Some(1)),
            wb,
        ],
    );
    p.block(
        Engine::Sp,
        "out",
        0,
        vec![rows(
            "out",
            16384,
            F as u64,
            NumFormat::Float32,
            false,
            None,
        )],
    );
    let (ss, rs) = (sbuf(8192), sbuf(8256));
    p.streams[Engine::Act as usize] = vec![
        activate(
            events(Some((1, 2)), None),
            30,
            1.0,
            ImmBias::Imm(0.0),
            3,
            row(sbuf(0), F),
            row(sbuf(12288), F),
        ),
        read_acc(Events::default(), ss),
        activate(
            events(None, Some(3)),
            29,
            1.0 / F as f32,
            ImmBias::Imm(EPS),
            0,
            row(ss, 1),
            row(rs, 1),
        ),
    ];
    let f32t = tag(NumFormat::Float32);
    p.streams[Engine::Dve as usize] = vec![
        ts_column(
            events(Some((3, 1)), None),
            0x06,
            rs,
            row(sbuf(0), F),
            row(sbuf(12288), F),
        ),
        TensorTensor {
            events: events(None, Some(2)),
            in_dtypes: DtypePair::new(f32t, f32t),
            out_dtype: f32t,
            op: AluOp(0x06),
            num_active_partitions: P as u8,
            src0: row(sbuf(12288), F),
            src1: row(sbuf(4096), F),
            dst: row(sbuf(16384), F),
            ..Default::default()
        }
        .to_bundle(),
    ];
    finish_sp(&mut p);
    p
}

/// out[128, 128] = w[512, 128]ᵀ · x[512, 128], bf16 operands, K in four 128-row chunks
/// accumulated in PSUM; ACT copies PSUM to SBUF.
fn matmul_bf16() -> Package {
    const K: u64 = 512;
    const M: u16 = 128;
    const N: u16 = 128;
    let mut r = Rng(5);
    let mut p = base("matmul_bf16");
    let w = bf16(&r.normals(K as usize * M as usize, 1.0));
    let x = bf16(&r.normals(K as usize * N as usize, 1.0));
    p.var(
        "w",
        VarKind::Input,
        NumFormat::Bfloat16,
        &[K, M as u64],
        Some(&w),
    )
    .unwrap();
    p.var(
        "x",
        VarKind::Input,
        NumFormat::Bfloat16,
        &[K, N as u64],
        Some(&x),
    )
    .unwrap();
    p.var(
        "out",
        VarKind::Output,
        NumFormat::Float32,
        &[M as u64, N as u64],
        None,
    )
    .unwrap();
    // Row k = 128·c + p of w lands in partition p at byte 256·c (chunk c), likewise x at 1024 + 256·c.
    let chunked = |var: &str, offset: u64| {
        let mut e = DmaEntry::copy(
            VarRef::Name(var.into()),
            VarRef::Name("state_buffer".into()),
            vec![4, 128, 128],
        );
        e.to_offset = offset;
        e.to_steps = Some(vec![128, 0x40000 / 2, 1]);
        e.sem = Some(1);
        e
    };
    p.block(
        Engine::Sp,
        "in",
        0,
        vec![chunked("w", 0), chunked("x", 1024)],
    );
    p.block(
        Engine::Sp,
        "out",
        0,
        vec![rows("out", 4096, N as u64, NumFormat::Float32, false, None)],
    );
    let bft = tag(NumFormat::Bfloat16);
    let mut pe = Vec::new();
    for c in 0..4u32 {
        let ev = if c == 0 {
            events(Some((1, 2)), None)
        } else {
            Events::default()
        };
        pe.push(
            LdWeights::V3(LdWeightsV3 {
                header: Header::new(Opcode(0x01)),
                events: ev,
                // Chunk c's row of M weights, read last to first (column m = element m).
                src: compiler_weights_source(sbuf(256 * c).address(), M, 2),
                in_dtype: bft,
                num_active_rows: 128,
                num_active_cols: M as u8,
                row_grp: 0x0F,
                col_grp: 0x0F,
                ..Default::default()
            })
            .to_bundle(),
        );
        let flags = match c {
            0 => 1, // START
            3 => 2, // END
            _ => 0, // MULTI_MID
        };
        pe.push(
            Matmul::V3(MatmulV3 {
                header: Header::new(Opcode(0x02)),
                events: if c == 3 {
                    events(None, Some(3))
                } else {
                    Events::default()
                },
                src: row(sbuf(1024 + 256 * c), N),
                in_dtype: bft,
                out_dtype: tag(NumFormat::Float32),
                num_active_rows: 128,
                num_active_cols: M as u8,
                psum_accumulate_flags: PsumAccumulateFlags::from_bits(flags),
                row_grp: 0x0F,
                col_grp: 0x0F,
                psum_zero_region: ZeroRegion(0),
                dst: row(Addr4::imm(Geometry::of(GEN).psum_address(0, 0)), N),
                ..Default::default()
            })
            .to_bundle(),
        );
    }
    p.streams[Engine::Pe as usize] = pe;
    p.streams[Engine::Act as usize] = vec![activate(
        events(Some((3, 1)), Some(2)),
        1, // identity
        1.0,
        ImmBias::Imm(0.0),
        0,
        row(Addr4::imm(Geometry::of(GEN).psum_address(0, 0)), N),
        row(sbuf(4096), N),
    )];
    finish_sp(&mut p);
    p
}

/// Ranks of the collective kernels (`testdata/collectives/`).
const RANKS: u32 = 4;

/// A package whose collectives span `RANKS` ranks in one replica group.
fn world(name: &str) -> Package {
    let mut p = Package::new(name, GEN);
    p.def.extra.insert(
        "replica_groups".into(),
        serde_json::json!([(0..RANKS).collect::<Vec<_>>()]),
    );
    p
}

/// PSEUDO_TRIGGER_COLLECTIVE over replica group 0: `n` elements of `from` (var id) into `to`,
/// completing on semaphore `done` (increment on complete, as the runtime requires).
fn collective(
    ctype: u8,
    op: AluOp,
    f: NumFormat,
    from: u64,
    to: u64,
    n: u64,
    ev: Events,
) -> Bundle {
    Collective {
        ctype,
        op,
        format: f,
        group: 0,
        input: from,
        output: to,
        elements: n,
    }
    .to_bundle(GEN, ev)
    .expect("the record's values fit")
}

/// A Pool NOP that waits for semaphore `sem` to reach `v`.
fn pool_wait(sem: u8, v: u32) -> Bundle {
    Control {
        header: Header::new(Opcode::NOP),
        events: events(Some((sem, v)), None),
        ..Default::default()
    }
    .to_bundle()
}

/// Tensor-parallel (row-parallel) matmul: rank r holds rows 128·r.. of `w` [512, 128] and of
/// `x` [512, 128] (bf16), computes its partial product w_rᵀ·x_r in fp32 on the PE, moves it to
/// DRAM and all-reduces it: every rank's `y` is wᵀ·x.
fn tp_matmul_allreduce() -> Package {
    const N: u16 = 128;
    let mut p = world("tp_matmul_allreduce");
    p.onchip();
    p.queue("in", None);
    p.queue("out", None);
    let w = p
        .var("w", VarKind::Input, NumFormat::Bfloat16, &[128, 128], None)
        .unwrap();
    let x = p
        .var("x", VarKind::Input, NumFormat::Bfloat16, &[128, 128], None)
        .unwrap();
    let partial = p
        .var(
            "partial",
            VarKind::TmpBuf,
            NumFormat::Float32,
            &[128, 128],
            None,
        )
        .unwrap();
    let y = p
        .var("y", VarKind::Output, NumFormat::Float32, &[128, 128], None)
        .unwrap();
    let _ = (w, x);
    p.block(
        Engine::Sp,
        "in",
        0,
        vec![
            rows("w", 0, 128, NumFormat::Bfloat16, true, Some(1)),
            rows("x", 1024, 128, NumFormat::Bfloat16, true, Some(1)),
        ],
    );
    p.block(
        Engine::Sp,
        "out",
        0,
        vec![rows(
            "partial",
            4096,
            128,
            NumFormat::Float32,
            false,
            Some(4),
        )],
    );
    let bft = tag(NumFormat::Bfloat16);
    let psum = || row(Addr4::imm(Geometry::of(GEN).psum_address(0, 0)), N);
    p.streams[Engine::Pe as usize] = vec![
        LdWeights::V3(LdWeightsV3 {
            header: Header::new(Opcode(0x01)),
            events: events(Some((1, 2)), None),
            src: compiler_weights_source(sbuf(0).address(), 128, 2),
            in_dtype: bft,
            num_active_rows: 128,
            num_active_cols: 128,
            row_grp: 0x0F,
            col_grp: 0x0F,
            ..Default::default()
        })
        .to_bundle(),
        Matmul::V3(MatmulV3 {
            header: Header::new(Opcode(0x02)),
            events: events(None, Some(3)),
            src: row(sbuf(1024), N),
            in_dtype: bft,
            out_dtype: tag(NumFormat::Float32),
            num_active_rows: 128,
            num_active_cols: 128,
            psum_accumulate_flags: PsumAccumulateFlags::from_bits(3), // START | END
            row_grp: 0x0F,
            col_grp: 0x0F,
            psum_zero_region: ZeroRegion(0),
            dst: psum(),
            ..Default::default()
        })
        .to_bundle(),
    ];
    p.streams[Engine::Act as usize] = vec![activate(
        events(Some((3, 1)), Some(2)),
        1, // identity
        1.0,
        ImmBias::Imm(0.0),
        0,
        psum(),
        row(sbuf(4096), N),
    )];
    p.streams[Engine::Sp as usize] = vec![
        trigger("in", 0, Events::default()),
        trigger("out", 0, events(Some((2, 1)), None)),
    ];
    p.streams[Engine::Pool as usize] = vec![
        collective(
            1,
            AluOp::ADD,
            NumFormat::Float32,
            partial,
            y,
            128 * 128,
            events(Some((4, 1)), Some(5)),
        ),
        pool_wait(5, 1),
    ];
    p
}

/// Reduce-scatter then all-gather (bf16, summed in fp32 and rounded once): rank r's `part` is
/// block r of the sum of every rank's `x`, and every rank's `y` is the whole sum.
fn reduce_scatter_all_gather() -> Package {
    const N: u64 = 1024;
    let mut p = world("reduce_scatter_all_gather");
    let x = p
        .var("x", VarKind::Input, NumFormat::Bfloat16, &[N], None)
        .unwrap();
    let part = p
        .var(
            "part",
            VarKind::Output,
            NumFormat::Bfloat16,
            &[N / RANKS as u64],
            None,
        )
        .unwrap();
    let y = p
        .var("y", VarKind::Output, NumFormat::Bfloat16, &[N], None)
        .unwrap();
    p.streams[Engine::Pool as usize] = vec![
        collective(
            2,
            AluOp::ADD,
            NumFormat::Bfloat16,
            x,
            part,
            N,
            events(None, Some(5)),
        ),
        collective(
            3,
            AluOp::ADD,
            NumFormat::Bfloat16,
            part,
            y,
            N / RANKS as u64,
            events(Some((5, 1)), Some(6)),
        ),
        pool_wait(6, 1),
    ];
    p
}

/// One collective of type `ctype` from input `x` into output `y` (both `shape`, format `f`),
/// and Pool's wait for it.
fn x_to_y(name: &str, ctype: u8, f: NumFormat, shape: &[u64]) -> Package {
    let mut p = world(name);
    let x = p.var("x", VarKind::Input, f, shape, None).unwrap();
    let y = p.var("y", VarKind::Output, f, shape, None).unwrap();
    let n = shape.iter().product();
    p.streams[Engine::Pool as usize] = vec![
        collective(ctype, AluOp::ADD, f, x, y, n, events(None, Some(5))),
        pool_wait(5, 1),
    ];
    p
}

/// A permute round the ring (`src_target_pairs` r → r + 1): rank r's `y` is rank r − 1's `x`.
fn permute_ring() -> Package {
    let mut p = x_to_y("permute_ring", 5, NumFormat::Float32, &[512]);
    p.def.extra.insert(
        "src_target_pairs".into(),
        serde_json::json!((0..RANKS).map(|r| [r, (r + 1) % RANKS]).collect::<Vec<_>>()),
    );
    p
}

/// All-to-all (fp16): block q of rank p's `x` lands in block p of rank q's `y`.
fn all_to_all() -> Package {
    x_to_y("all_to_all", 4, NumFormat::Float16, &[RANKS as u64, 64])
}

const GEN4: Gen = Gen::V4;

fn sbuf4(partition: u32, offset: u32) -> u32 {
    Geometry::of(GEN4).sbuf_address(partition, offset)
}

fn tag4(f: NumFormat) -> Dtype {
    Dtype(f.wire_tag(GEN4).expect("format has a wire tag"))
}

/// An MXMEM_PATTERN1D over 128 partitions (K = 512) with its scale buffer from partition 0.
fn mx128(data: u32, scale: u32) -> MxMemPattern1d {
    MxMemPattern1d {
        data: Addr4::imm(data),
        scale: Addr4::imm(scale),
        k: 512,
        step_sign: 1,
        scale_partition: 0,
        reserved: [0; 4],
    }
}

/// A DMA entry from a DRAM variable into SBUF at byte offset `sbuf_offset` (partition-folded),
/// sizes and steps in elements, outermost first; it increments semaphore 1 on completion.
fn dma4(
    var: &str,
    sizes: Vec<u64>,
    dram_steps: Vec<i64>,
    sbuf_offset: u64,
    sbuf_steps: Vec<i64>,
) -> DmaEntry {
    let mut e = DmaEntry::copy(
        VarRef::Name(var.into()),
        VarRef::Name("state_buffer".into()),
        sizes,
    );
    e.from_steps = Some(dram_steps);
    e.to_offset = sbuf_offset;
    e.to_steps = Some(sbuf_steps);
    e.sem = Some(1);
    e
}

/// out[N, F] = relu(wᵀ · x + b) with MX FP8 operands on v4: w[K, N] ships pre-quantized
/// (float8_e4m3fn data and one E8M0 scale per 32 consecutive k of a column), x[K, F] ships as
/// bf16 and is quantized on DVE (QuantizeMx); PE runs LdWeightsMx + MatmulMx over two 512-row
/// K chunks accumulating in PSUM; ACT adds the bias column while copying PSUM to SBUF; POOL
/// applies the ReLU; SP moves everything with semaphore handshakes between all five queues.
///
/// On-chip layout of chunk `c` (K rows `512c + 4p + j`, partition `p`, lane `j`): x at byte
/// `1024c` (bf16, element `4f + j`), its quantized containers at `4096 + 512c` and scales at
/// `8192 + 256c`; w's containers at `12288 + 256c` and scales at `16384 + 128c`, column `n` in
/// container `N − 1 − n` (LdWeightsMx reads ascending and puts the `j`-th container in PE
/// column `N − 1 − j`, the LdWeights column rule; the DMA writes the columns in reverse);
/// scale row `b` (partitions `8b..8b+8`) sits in partition `(b & 3) + 32·(b >> 2)`.
fn mx_matmul() -> Package {
    use tpbsim_sim::numerics::mx::{self, MxConfig, MxShape};
    const K: usize = 1024;
    const N: usize = 64;
    const F: usize = 128;
    const CHUNKS: usize = K / 512;
    let mut r = Rng(6);
    let mut p = Package::new("mx_matmul", GEN4);
    p.onchip();
    p.queue("in", None);
    p.queue("out", None);

    // Pre-quantize w chunk by chunk in its on-chip layout, then store it in natural order.
    let w = r.normals(K * N, 1.0);
    let (mut wq, mut ws) = (vec![0u8; K * N], vec![0u8; K / 32 * N]);
    for c in 0..CHUNKS {
        let mut tile = Vec::with_capacity(128 * 4 * N * 4);
        for pp in 0..128 {
            for n in 0..N {
                for j in 0..4 {
                    tile.extend_from_slice(&w[(512 * c + 4 * pp + j) * N + n].to_le_bytes());
                }
            }
        }
        let shape = MxShape {
            partitions: 128,
            free: 4 * N,
        };
        let mut data = vec![0u8; 128 * 4 * N];
        let mut scales = vec![0u8; shape.scale_buffer_bytes()];
        mx::quantize(
            &tile,
            NumFormat::Float32,
            shape,
            NumFormat::Float8E4m3fnX4,
            &mut data,
            &mut scales,
            &MxConfig::default(),
        )
        .expect("quantize w");
        for pp in 0..128 {
            for n in 0..N {
                for j in 0..4 {
                    wq[(512 * c + 4 * pp + j) * N + n] = data[pp * 4 * N + 4 * n + j];
                }
            }
        }
        for b in 0..16 {
            let slot = mx::scale_slot(b);
            ws[(16 * c + b) * N..][..N].copy_from_slice(&scales[slot * N..][..N]);
        }
    }
    let x = bf16(&r.normals(K * F, 1.0));
    let bias = r.normals(N, 0.5);
    p.var(
        "x",
        VarKind::Input,
        NumFormat::Bfloat16,
        &[K as u64, F as u64],
        Some(&x),
    )
    .unwrap();
    p.var(
        "w_q",
        VarKind::Input,
        NumFormat::Float8E4m3fn,
        &[K as u64, N as u64],
        Some(&wq),
    )
    .unwrap();
    p.var(
        "w_scale",
        VarKind::Input,
        NumFormat::Float8E8m0fnu,
        &[(K / 32) as u64, N as u64],
        Some(&ws),
    )
    .unwrap();
    p.var(
        "b",
        VarKind::Input,
        NumFormat::Float32,
        &[N as u64],
        Some(&bytes_f32(&bias)),
    )
    .unwrap();
    p.var(
        "out",
        VarKind::Output,
        NumFormat::Float32,
        &[N as u64, F as u64],
        None,
    )
    .unwrap();

    let stride = |eb: i64| Geometry::of(GEN4).sbuf_partition_stride() as i64 / eb;
    let (k, n, f, ch) = (K as u64, N as u64, F as u64, CHUNKS as u64);
    let (ns, fs) = (N as i64, F as i64);
    // x[512c + 4p + j, f] → partition p, bf16 element 512c + 4f + j.
    let x_in = dma4(
        "x",
        vec![ch, 128, f, 4],
        vec![512 * fs, 4 * fs, 1, fs],
        0,
        vec![512, stride(2), 4, 1],
    );
    // w_q[512c + 4p + j, n] → partition p, byte 12288 + 256c + 4(N − 1 − n) + j.
    let w_in = dma4(
        "w_q",
        vec![ch, 128, n, 4],
        vec![512 * ns, 4 * ns, 1, ns],
        12288 + 4 * (n - 1),
        vec![256, stride(1), -4, 1],
    );
    // w_scale[16c + 4h + l, n] → partition l + 32h, byte 16384 + 128c + N − 1 − n.
    let s_in = dma4(
        "w_scale",
        vec![ch, 4, 4, n],
        vec![16 * ns, 4 * ns, ns, 1],
        16384 + (n - 1),
        vec![128, 32 * stride(1), stride(1), -1],
    );
    // b[n] → partition n, one fp32 at 20480.
    let b_in = dma4("b", vec![n, 1], vec![1, 1], 20480, vec![stride(4), 1]);
    assert_eq!(k, 512 * ch);
    p.block(Engine::Sp, "in", 0, vec![x_in, w_in, s_in, b_in]);
    let mut out = DmaEntry::copy(
        VarRef::Name("state_buffer".into()),
        VarRef::Name("out".into()),
        vec![n, f],
    );
    out.from_offset = 28672;
    out.from_steps = Some(vec![stride(4), 1]);
    p.block(Engine::Sp, "out", 0, vec![out]);

    // DVE: quantize both x chunks once every input has landed (sem 1 = 4), then signal PE.
    p.streams[Engine::Dve as usize] = (0..CHUNKS as u32)
        .map(|c| {
            QuantizeMx {
                header: Header::new(Opcode(0xE3)),
                events: if c == 0 {
                    events(Some((1, 4)), None)
                } else {
                    events(None, Some(3))
                },
                src: MemPattern(Tensor::new(
                    Addr4::imm(sbuf4(0, 1024 * c)),
                    [1, 1, 1],
                    [4 * F as u16, 1, 1],
                )),
                num_active_partitions: 128,
                in_dtype: tag4(NumFormat::Bfloat16),
                out_dtype: tag4(NumFormat::Float8E4m3fn),
                dst: mx128(sbuf4(0, 4096 + 512 * c), sbuf4(0, 8192 + 256 * c)),
                ..Default::default()
            }
            .to_bundle()
        })
        .collect();
    // PE: per chunk LdWeightsMx + MatmulMx (START, then ACCUMULATE|STOP) into PSUM [N, F].
    let psum = Geometry::of(GEN4).psum_address(0, 0);
    let mut pe = Vec::new();
    for c in 0..CHUNKS as u32 {
        pe.push(
            LdWeightsMx {
                events: if c == 0 {
                    events(Some((1, 4)), None)
                } else {
                    Events::default()
                },
                src: mx128(sbuf4(0, 12288 + 256 * c), sbuf4(0, 16384 + 128 * c)),
                in_dtype: tag4(NumFormat::Float8E4m3fn),
                num_active_rows: 128,
                num_active_cols: N as u8,
                row_grp: 0x0F,
                col_grp: 0x0F,
                ..Default::default()
            }
            .to_bundle(),
        );
        let last = c as usize == CHUNKS - 1;
        pe.push(
            MatmulMx {
                events: match (c, last) {
                    (0, _) => events(Some((3, 1)), None),
                    (_, true) => events(None, Some(4)),
                    _ => Events::default(),
                },
                src: mx128(sbuf4(0, 4096 + 512 * c), sbuf4(0, 8192 + 256 * c)),
                in_dtype: tag4(NumFormat::Float8E4m3fn),
                num_active_rows: 128,
                num_active_cols: N as u8,
                out_dtype: tag4(NumFormat::Float32),
                psum_accumulate_flags: PsumAccumulateFlags::from_bits(if c == 0 {
                    0x01
                } else if last {
                    0x06
                } else {
                    0x04
                }),
                row_grp: 0x0F,
                col_grp: 0x0F,
                psum_zero_region: ZeroRegion(0),
                dst: MemPattern(row(Addr4::imm(psum), F as u16)),
                ..Default::default()
            }
            .to_bundle(),
        );
    }
    p.streams[Engine::Pe as usize] = pe;
    // ACT: PSUM + bias column → SBUF fp32.
    let f32t = tag4(NumFormat::Float32);
    p.streams[Engine::Act as usize] = vec![Activate {
        events: events(Some((4, 1)), Some(5)),
        imm_src: ImmSrc(0),
        scale_src: ImmSrc(0),
        accumulator_cmd: AccumCmd(0),
        bias_src_n: ImmSrcN(0),
        src: row(Addr4::imm(psum), F as u16),
        in_bias_dtypes: DtypePair::new(f32t, f32t),
        out_dtype: f32t,
        num_active_partitions: N as u8,
        activation_func: ActFunc(1), // identity
        scale_value: F32Bits::from_f32(1.0),
        bias: Addr4::imm(sbuf4(0, 20480)).0,
        imm: 0,
        dst: row(Addr4::imm(sbuf4(0, 24576)), F as u16),
        ..Default::default()
    }
    .to_bundle()];
    // POOL: ReLU = max(y, 0).
    p.streams[Engine::Pool as usize] = vec![TensorScalar {
        header: Header::new(Opcode(0x43)),
        events: events(Some((5, 1)), Some(2)),
        accumulator_cmd: AccumCmd(0),
        src: row(Addr4::imm(sbuf4(0, 24576)), F as u16),
        in_dtype: f32t,
        out_dtype: f32t,
        num_active_partitions: N as u8,
        imm0_src: ImmSrc(0),
        op0: AluOp(0x08),
        op1: AluOp(0),
        reverse: TsReverse::from_bits(0),
        imm1_src: ImmSrc(0),
        imm0: 0f32.to_bits(),
        imm1: 0,
        dst: row(Addr4::imm(sbuf4(0, 28672)), F as u16),
        ..Default::default()
    }
    .to_bundle()];
    finish_sp(&mut p);
    p
}

/// Masked row maximum on DVE: RangeSelect keeps `x` where `lo[p] <= x < 1.5` (a per-partition
/// lower bound read through a pointer, an immediate upper bound) and writes −FLT_MAX elsewhere,
/// folding each row's maximum into the DVE accumulators (ZERO_ACCUMULATE); DveReadAccumulator
/// (0x9B) writes the row maxima.
fn range_select() -> Package {
    use tpbsim_isa::{RangeSelect, ReduceCmd};
    const F: u16 = 512;
    let mut r = Rng(7);
    let mut p = base("range_select");
    let x = r.normals(P as usize * F as usize, 1.0);
    let lo: Vec<f32> = (0..P).map(|i| -1.0 + f32::from(i) / 64.0).collect();
    let f32t = tag(NumFormat::Float32);
    let shape = [P as u64, F as u64];
    p.var(
        "x",
        VarKind::Input,
        NumFormat::Float32,
        &shape,
        Some(&bytes_f32(&x)),
    )
    .unwrap();
    p.var(
        "lo",
        VarKind::Input,
        NumFormat::Float32,
        &[P as u64, 1],
        Some(&bytes_f32(&lo)),
    )
    .unwrap();
    p.var("out", VarKind::Output, NumFormat::Float32, &shape, None)
        .unwrap();
    p.var(
        "rowmax",
        VarKind::Output,
        NumFormat::Float32,
        &[P as u64, 1],
        None,
    )
    .unwrap();
    p.block(
        Engine::Sp,
        "in",
        0,
        vec![
            rows("x", 0, F as u64, NumFormat::Float32, true, Some(1)),
            rows("lo", 4096, 1, NumFormat::Float32, true, Some(1)),
        ],
    );
    p.block(
        Engine::Sp,
        "out",
        0,
        vec![
            rows("out", 8192, F as u64, NumFormat::Float32, false, None),
            rows("rowmax", 12288, 1, NumFormat::Float32, false, None),
        ],
    );
    p.streams[Engine::Dve as usize] = vec![
        RangeSelect {
            events: events(Some((1, 2)), None),
            num_active_partitions: P as u8,
            in_out_dtypes: DtypePair::new(f32t, f32t),
            reduce_cmd: ReduceCmd(3),
            reduce_op: AluOp(0x08),
            base: F32Bits(0),
            fill_val: F32Bits(0xFF7F_FFFF),
            src: row(sbuf(0), F),
            comp_op0: AluOp(0x14), // IS_GE
            comp_op1: AluOp(0x16), // IS_LT
            bound0_src: ImmSrc(1),
            bound1_src: ImmSrc(0),
            bound0: sbuf(4096).address(),
            bound1: 1.5f32.to_bits(),
            dst: row(sbuf(8192), F),
            ..Default::default()
        }
        .to_bundle(),
        ReadAccumulator {
            header: Header::new(Opcode(0x9B)),
            events: events(None, Some(2)),
            dst_element_count: 1,
            dtype: f32t,
            negated: 0,
            num_active_partitions: P as u8,
            dst: row(sbuf(12288), 1),
            ..Default::default()
        }
        .to_bundle(),
    ];
    finish_sp(&mut p);
    p
}

// ---- Kernels with planted synchronisation bugs (`sim check` finds each; no references). ----

/// DVE fp32 add of 512-element rows at SBUF offsets: dst = src0 + src1.
fn dve_add(ev: Events, src0: u32, src1: u32, dst: u32) -> Bundle {
    let f32t = tag(NumFormat::Float32);
    TensorTensor {
        events: ev,
        in_dtypes: DtypePair::new(f32t, f32t),
        out_dtype: f32t,
        op: AluOp(0x04),
        num_active_partitions: P as u8,
        src0: row(sbuf(src0), 512),
        src1: row(sbuf(src1), 512),
        dst: row(sbuf(dst), 512),
        ..Default::default()
    }
    .to_bundle()
}

/// vadd whose DVE bundle waits for the first input transfer only (semaphore 1 >= 1 instead of
/// >= 2): the second transfer (y → SBUF 4096) races with DVE's read of `src1`.
fn race_dma_wait() -> Package {
    let mut p = vadd();
    p.name = "race_dma_wait".into();
    p.streams[Engine::Dve as usize] = vec![dve_add(events(Some((1, 1)), Some(2)), 0, 4096, 8192)];
    p
}

/// x (input, `[128, 512]` fp32, seeded by `seed`) loaded to SBUF 0 by queue `in` (semaphore
/// 1), `out` stored from SBUF 12288 by queue `out`, and ACT copying x to SBUF 8192 once it is in
/// (semaphore 3 at completion). DVE and SP are left to the caller.
fn act_copy_kernel(name: &str, seed: u64) -> Package {
    const F: u16 = 512;
    let mut r = Rng(seed);
    let mut p = base(name);
    let x = r.normals(P as usize * F as usize, 1.0);
    p.var(
        "x",
        VarKind::Input,
        NumFormat::Float32,
        &[P as u64, F as u64],
        Some(&bytes_f32(&x)),
    )
    .unwrap();
    p.var(
        "out",
        VarKind::Output,
        NumFormat::Float32,
        &[P as u64, F as u64],
        None,
    )
    .unwrap();
    p.block(
        Engine::Sp,
        "in",
        0,
        vec![rows("x", 0, F as u64, NumFormat::Float32, true, Some(1))],
    );
    p.block(
        Engine::Sp,
        "out",
        0,
        vec![rows(
            "out",
            12288,
            F as u64,
            NumFormat::Float32,
            false,
            None,
        )],
    );
    p.streams[Engine::Act as usize] = vec![activate(
        events(Some((1, 1)), Some(3)),
        1, // identity
        1.0,
        ImmBias::Imm(0.0),
        0,
        row(sbuf(0), F),
        row(sbuf(8192), F),
    )];
    p
}

/// ACT copies x to SBUF 8192 and signals semaphore 3, but DVE reads that copy after waiting for
/// the input DMA only: ACT's write of `dst` races with DVE's read of `src0`.
fn race_engines() -> Package {
    let mut p = act_copy_kernel("race_engines", 6);
    p.streams[Engine::Dve as usize] = vec![dve_add(events(Some((1, 1)), Some(2)), 8192, 0, 12288)];
    finish_sp(&mut p);
    p
}

/// Two producers that nothing orders with each other increment semaphore 3: ACT, after copying
/// x to SBUF 8192, and the DMA queue `in2`, after copying x to SBUF 16384 (SP triggers it once
/// the input block is in). DVE then reads ACT's copy (and x) after waiting for `need`
/// increments of semaphore 3. With `need` 1 the increment DVE sees first may be `in2`'s, so its
/// read of `src0` races with ACT's write in some interleavings; with `need` 2 it waits for both.
fn counter_kernel(name: &str, need: u32) -> Package {
    let mut p = act_copy_kernel(name, 7);
    p.queue("in2", None);
    p.block(
        Engine::Sp,
        "in2",
        0,
        vec![rows("x", 16384, 512, NumFormat::Float32, true, Some(3))],
    );
    p.streams[Engine::Dve as usize] =
        vec![dve_add(events(Some((3, need)), Some(2)), 8192, 0, 12288)];
    p.streams[Engine::Sp as usize] = vec![
        trigger("in", 0, Events::default()),
        trigger("in2", 0, events(Some((1, 1)), None)),
        trigger("out", 0, events(Some((2, 1)), None)),
    ];
    p
}

/// DVE waits for one of two unordered increments of semaphore 3 and reads ACT's output: a race
/// under every interleaving, whichever increment happens to come first.
fn race_counter_partial() -> Package {
    counter_kernel("race_counter_partial", 1)
}

/// The same with DVE waiting for both increments: clean.
fn counter_join() -> Package {
    counter_kernel("counter_join", 2)
}

/// A credit hand-off on semaphore 3 (the tile at SBUF 16384 is the credit): ACT copies x into
/// the tile and increments semaphore 3; DVE waits for it, reads the tile (out = tile + y) and
/// decrements semaphore 3; an ENGINE_NOP of DVE then increments semaphore 4, which ACT waits
/// for before it overwrites the tile with y and increments semaphore 3 again; DVE waits for
/// semaphore 3 >= 1 once more and reads the tile (out += tile). After DVE's own decrement only
/// ACT's second increment can satisfy that wait: race-free in every interleaving.
fn credit_handoff() -> Package {
    let mut p = vadd();
    p.name = "credit_handoff".into();
    let dec = |mut e: Events| {
        e.update_mode = UpdateMode(0x14); // SEM_DEC_COMPLETE
        e.update_idx = 3;
        e
    };
    let mut nop = Bundle::ZERO;
    nop.0[0] = 0x9F; // ENGINE_NOP
    nop.0[1] = tpbsim_isa::INST_WORD_LEN;
    events(None, Some(4)).write(&mut nop.0, 4);
    let copy = |ev: Events, src: u32| {
        activate(
            ev,
            1, // identity
            1.0,
            ImmBias::Imm(0.0),
            0,
            row(sbuf(src), 512),
            row(sbuf(16384), 512),
        )
    };
    p.streams[Engine::Act as usize] = vec![
        copy(events(Some((1, 2)), Some(3)), 0),
        copy(events(Some((4, 1)), Some(3)), 4096),
    ];
    p.streams[Engine::Dve as usize] = vec![
        dve_add(dec(events(Some((3, 1)), None)), 16384, 4096, 8192),
        nop,
        dve_add(events(Some((3, 1)), Some(2)), 16384, 8192, 8192),
    ];
    p
}

/// ACT waits for semaphore 5, which only DVE increments, after waiting for semaphore 6, which
/// only ACT increments: a wait-for cycle. SP's output trigger waits behind it.
fn deadlock_cycle() -> Package {
    let mut p = vadd();
    p.name = "deadlock_cycle".into();
    p.streams[Engine::Act as usize] = vec![activate(
        events(Some((5, 1)), Some(6)),
        1,
        1.0,
        ImmBias::Imm(0.0),
        0,
        row(sbuf(0), 512),
        row(sbuf(16384), 512),
    )];
    p.streams[Engine::Dve as usize] = vec![
        dve_add(events(Some((6, 1)), Some(5)), 0, 4096, 8192),
        dve_add(events(None, Some(2)), 8192, 16384, 8192),
    ];
    p
}

/// vadd whose DVE bundle waits for three input transfers (semaphore 1 >= 3) where the input
/// block has two: nothing left in the program can raise semaphore 1 (a missing producer).
fn deadlock_missing() -> Package {
    let mut p = vadd();
    p.name = "deadlock_missing".into();
    p.streams[Engine::Dve as usize] = vec![dve_add(events(Some((1, 3)), Some(2)), 0, 4096, 8192)];
    p
}

/// vadd whose input block loads x only: DVE's `src1` (SBUF 4096, y's slot) was never written.
fn uninit_read() -> Package {
    let mut p = vadd();
    p.name = "uninit_read".into();
    p.sidecars[Engine::Sp as usize]
        .dma
        .retain(|b| b.queue.as_deref() != Some("in"));
    p.block(
        Engine::Sp,
        "in",
        0,
        vec![rows("x", 0, 512, NumFormat::Float32, true, Some(1))],
    );
    p.streams[Engine::Dve as usize] = vec![dve_add(events(Some((1, 1)), Some(2)), 0, 4096, 8192)];
    p
}

/// matmul_bf16 whose first matmul continues an accumulation group (flags MULTI_MID) instead of
/// starting one: it adds into PSUM bytes nothing zeroed.
fn uninit_psum_accumulate() -> Package {
    let mut p = matmul_bf16();
    p.name = "uninit_psum_accumulate".into();
    let pe = &mut p.streams[Engine::Pe as usize];
    // Bundle 1 is the first Matmul; PSUM_ACCUMULATE_FLAGS START (1) → MULTI_MID (0).
    let b = &mut pe[1];
    if let Ok(tpbsim_isa::Inst::Matmul(Matmul::V3(mut m))) = tpbsim_isa::decode(b, GEN) {
        m.psum_accumulate_flags = PsumAccumulateFlags::from_bits(0);
        *b = Matmul::V3(m).to_bundle();
    } else {
        panic!("uninit_psum_accumulate: bundle 1 of PE is not a v3 Matmul");
    }
    p
}

/// Kernels written in tpbsim's earlier dialect (`definition.<tok>._instr`, TitleCase members).
const OLD_DIALECT: [&str; 1] = ["vadd"];

fn main() {
    let mut args = std::env::args().skip(1).map(PathBuf::from);
    let out = args
        .next()
        .unwrap_or_else(|| PathBuf::from("testdata/kernels"));
    let world_out = args
        .next()
        .unwrap_or_else(|| PathBuf::from("testdata/collectives"));
    for (dir, kernels) in [
        (
            &out,
            vec![
                vadd(),
                iadd_pool(),
                softmax(),
                rmsnorm(),
                matmul_bf16(),
                mx_matmul(),
                range_select(),
                race_dma_wait(),
                race_engines(),
                race_counter_partial(),
                counter_join(),
                credit_handoff(),
                deadlock_cycle(),
                deadlock_missing(),
                uninit_read(),
                uninit_psum_accumulate(),
            ],
        ),
        (
            &world_out,
            vec![
                tp_matmul_allreduce(),
                reduce_scatter_all_gather(),
                permute_ring(),
                all_to_all(),
            ],
        ),
    ] {
        std::fs::create_dir_all(dir).expect("create the output directory");
        for p in kernels {
            let path = dir.join(format!("{}.neff", p.name));
            // Every kernel is written in the runtime's layout except one, kept in tpbsim's
            // earlier dialect so that reader stays tested.
            let neff = if OLD_DIALECT.contains(&p.name.as_str()) {
                p.to_neff_dialect()
            } else {
                p.to_neff()
            };
            neff.and_then(|n| n.write_to(&path).map_err(Into::into))
                .unwrap_or_else(|e| panic!("{}: {e}", path.display()));
            println!("wrote {}", path.display());
        }
    }
}
