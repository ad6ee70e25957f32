//! Lifter and lowering tests: crafted streams built with the isa crate's typed formats, the
//! multi-bundle fusions, unliftable bundles, and the two round-trip properties.

use proptest::prelude::*;
use serde_json::{Map, Value};
use tpbsim_isa::spec::FieldLoc;
use tpbsim_isa::{
    Addr4, AluOp, Bundle, Dtype as W, DtypePair, Engine, Gen, Header, LdWeightsMx, LdWeightsV3,
    MatmulMx, MatmulV3, Opcode, Tensor, TensorReduceV2, TensorScalar, TensorTensor,
};

use super::ap::{PSUM_BUFFER, SBUF_BUFFER};
use super::dtype::{is_canonical, DtypeCtx};
use super::fields::{self, canonical};
use super::lower::{bindings, plan, primary};
use super::*;
use crate::bir::{AccessPattern, Dim, Dtype, EngineType, InstClass, Instruction, MemoryType};
use crate::diag::Severity;

fn sb(p: u32, byte: u32) -> Addr4 {
    Addr4::imm((p << 18) | byte)
}

fn psum(p: u32, byte: u32) -> Addr4 {
    Addr4::imm(0x200_0000 + (p << 15) + byte)
}

fn lift(bundles: &[Bundle], engine: Engine, gen: Gen) -> LiftedStream {
    let s = lift_stream(
        &StreamInput {
            function: "f".into(),
            file: Some("x.bin".into()),
            engine,
            bundles,
        },
        gen,
    );
    // Every lift lowers back to its stream.
    assert_eq!(
        lower_function(&s.function, gen).unwrap(),
        bundles,
        "lower(lift(stream)) != stream"
    );
    s
}

fn insts(s: &LiftedStream) -> &[Instruction] {
    &s.function.blocks[0].instructions
}

fn ap(
    mem: MemoryType,
    dtype: Dtype,
    start: u64,
    parts: u64,
    pattern: &[(i64, u64)],
    offset: i64,
) -> AccessPattern {
    AccessPattern {
        mem,
        buffer: if mem == MemoryType::Psum {
            PSUM_BUFFER.into()
        } else {
            SBUF_BUFFER.into()
        },
        dtype,
        start_partition: start,
        partitions: parts,
        pattern: pattern
            .iter()
            .map(|&(step, num)| Dim { step, num })
            .collect(),
        offset,
        indirect: false,
    }
}

fn tt_bundle(op: u8, alu: AluOp, dt: (W, W), out: W, parts: u8) -> Bundle {
    let tt = TensorTensor {
        header: Header::new(Opcode(op)),
        in_dtypes: DtypePair::new(dt.0, dt.1),
        out_dtype: out,
        op: alu,
        num_active_partitions: parts,
        src0: Tensor::new(sb(0, 0), [1, 128, 1], [128, 4, 1]),
        src1: Tensor::new(sb(0, 0x1000), [1, 128, 1], [128, 4, 1]),
        dst: Tensor::new(sb(64, 0), [1, 1, 1], [512, 1, 1]),
        ..Default::default()
    };
    tt.to_bundle()
}

#[test]
fn bf16_tensor_tensor_lifts_to_its_generic_class() {
    let b = tt_bundle(0x8A, AluOp::ADD, (W::BF16, W::BF16), W::FP32, 64);
    let s = lift(&[b], Engine::Pool, Gen::V2);
    let [i] = insts(&s) else {
        panic!("one instruction")
    };
    assert_eq!(
        (i.class, i.engine),
        (InstClass::TensorTensor, EngineType::Pool)
    );
    assert_eq!(
        i.args[0],
        ap(
            MemoryType::Sb,
            Dtype::Bfloat16,
            0,
            64,
            &[(128, 4), (1, 128)],
            0
        )
    );
    assert_eq!(i.args[1].offset, 0x800);
    assert_eq!(
        i.outs[0],
        ap(MemoryType::Sb, Dtype::Float32, 64, 64, &[(1, 512)], 0)
    );
    assert_eq!(i.attrs["op"], "ADD");
    assert!(
        i.attrs.get(ATTR_OPCODE).is_none(),
        "the fan-in picks 0x8A itself: {:?}",
        i.attrs
    );
    assert_eq!(i.attrs[ATTR_ORIGIN]["index"], 0);
    assert!(s.diagnostics.is_empty());
    // MULT / SUB variants.
    for (op, alu, name) in [
        (0x8B, AluOp::MULT, "MULT"),
        (0x8F, AluOp::SUBTRACT, "SUBTRACT"),
    ] {
        let s = lift(
            &[tt_bundle(op, alu, (W::BF16, W::BF16), W::BF16, 32)],
            Engine::Pool,
            Gen::V2,
        );
        assert_eq!(
            (insts(&s)[0].class, insts(&s)[0].attrs["op"].as_str()),
            (InstClass::TensorTensor, Some(name))
        );
        assert!(insts(&s)[0].attrs.get(ATTR_OPCODE).is_none());
    }
    // The same bytes on the DVE stream keep their engine; the fan-in would pick 0x41 there, so
    // the opcode found is recorded.
    let s = lift(&[b], Engine::Dve, Gen::V2);
    assert_eq!(insts(&s)[0].engine, EngineType::Dve);
    assert_eq!(insts(&s)[0].attrs[ATTR_OPCODE], "TENSOR_TENSOR_ADD_BF16");
    // 0x8A does not exist after v2.
    let s = lift(&[b], Engine::Pool, Gen::V3);
    assert_eq!(insts(&s)[0].class, InstClass::Generic);
    assert_eq!(s.diagnostics.len(), 1);
    assert_eq!(s.diagnostics[0].severity, Severity::NotChecked);
    assert!(
        s.diagnostics[0].message.contains("TENSOR_TENSOR_ADD_BF16"),
        "{}",
        s.diagnostics[0].message
    );
}

#[test]
fn tensor_tensor_and_engines_on_one_stream() {
    let arith = tt_bundle(0x41, AluOp::MULT, (W::FP32, W::BF16), W::FP32, 128);
    let bitvec = tt_bundle(
        0x51,
        AluOp::BITWISE_AND,
        (W::INT32, W::INT32),
        W::INT32,
        128,
    );
    let s = lift(&[arith, bitvec], Engine::Pool, Gen::V3);
    let [a, b] = insts(&s) else { panic!() };
    assert_eq!(
        (a.class, a.engine, a.args[0].dtype, a.args[1].dtype),
        (
            InstClass::TensorTensor,
            EngineType::Pool,
            Dtype::Float32,
            Dtype::Bfloat16
        )
    );
    assert_eq!(
        (b.class, b.attrs["op"].as_str()),
        (InstClass::TensorTensor, Some("BITWISE_AND"))
    );
    assert!(b.attrs.get(ATTR_OPCODE).is_none());
    assert_eq!(b.attrs[ATTR_ORIGIN]["offset"], 64);
}

#[test]
fn tensor_scalar_family() {
    let ts = |op: u8, op0: AluOp, acc: u8| {
        let t = TensorScalar {
            header: Header::new(Opcode(op)),
            accumulator_cmd: tpbsim_isa::AccumCmd(acc),
            src: Tensor::new(sb(0, 0), [1, 1, 1], [16, 1, 1]),
            in_dtype: W::INT32,
            out_dtype: W::INT32,
            num_active_partitions: 8,
            op0,
            imm0: 3,
            dst: Tensor::new(sb(8, 0), [1, 1, 1], [16, 1, 1]),
            ..Default::default()
        };
        t.to_bundle()
    };
    let mut rd = canonical(0x9B);
    rd.0[28] = 1; // dst_element_count
    rd.0[32] = 0x0A; // dtype fp32
    rd.0[34] = 8;
    rd.0[44..48].copy_from_slice(&((20u32 << 18) | 0x40).to_le_bytes());
    rd.0[48..50].copy_from_slice(&1u16.to_le_bytes());
    rd.0[50..52].copy_from_slice(&1u16.to_le_bytes());
    let stream = [
        ts(0x53, AluOp::BITWISE_AND, 0),
        ts(0x9A, AluOp::ADD, 2),
        rd,
        ts(0x9A, AluOp::MAX, 3),
        ts(0xE6, AluOp::ADD, 2),
        ts(0x30, AluOp::BYPASS, 0),
    ];
    let s = lift(&stream, Engine::Dve, Gen::V3);
    let classes: Vec<InstClass> = insts(&s).iter().map(|i| i.class).collect();
    assert_eq!(
        classes,
        [
            InstClass::TensorScalar,
            InstClass::TensorScalar,
            InstClass::TensorScalarCache,
            InstClass::TensorScalarCache,
            InstClass::Exponential
        ]
    );
    let i = insts(&s);
    assert_eq!(i[0].attrs["op0"], "BITWISE_AND");
    assert_eq!(i[0].attrs["imm0"], 3);
    assert_eq!(
        i[1].outs.len(),
        2,
        "0x9A + 0x9B is one TensorScalar with two outputs"
    );
    assert_eq!(
        i[1].outs[1],
        ap(MemoryType::Sb, Dtype::Float32, 20, 8, &[], 0x10)
    );
    assert_eq!(i[1].attrs[ATTR_ORIGIN]["bundles"], 2);
    assert!(i[2].attrs.get(ATTR_TSC_MODE).is_none());
    assert_eq!(i[3].attrs[ATTR_TSC_MODE], "Cumulative");
}

fn ldw_v3(rows: u8, cols: u8, tag: W, mode: u8) -> Bundle {
    let mut l = LdWeightsV3::from_bundle(&canonical(0x01));
    l.src = Tensor::new(sb(0, 0x200), [1, 1, 1], [64, 1, 1]);
    l.in_dtype = tag;
    l.fp32_mode = tpbsim_isa::PeFp32Mode(mode);
    l.num_active_rows = rows;
    l.num_active_cols = cols;
    l.row_grp = 0x0F;
    l.col_grp = super::rules::group_code(0, cols as u64);
    l.to_bundle()
}

fn mm_v3(rows: u8, cols: u8, tag: W, mode: u8) -> Bundle {
    let mut m = MatmulV3::from_bundle(&canonical(0x02));
    m.src = Tensor::new(sb(0, 0x400), [1, 1, 1], [256, 1, 1]);
    m.in_dtype = tag;
    m.fp32_mode = tpbsim_isa::PeFp32Mode(mode);
    m.num_active_rows = rows;
    m.num_active_cols = cols;
    m.out_dtype = W::FP32;
    m.row_grp = 0x0F;
    m.col_grp = super::rules::group_code(0, cols as u64);
    m.psum_accumulate_flags = tpbsim_isa::PsumAccumulateFlags::from_bits(0x03);
    m.dst = Tensor::new(psum(0, 2048), [1, 1, 1], [256, 1, 1]);
    m.to_bundle()
}

#[test]
fn matmul_pairs_fuse() {
    let s = lift(
        &[ldw_v3(128, 64, W::BF16, 0), mm_v3(128, 64, W::BF16, 0)],
        Engine::Pe,
        Gen::V3,
    );
    let [m] = insts(&s) else {
        panic!("{:?}", insts(&s))
    };
    assert_eq!((m.class, m.engine), (InstClass::Matmult, EngineType::Pe));
    assert_eq!(
        m.args[0],
        ap(MemoryType::Sb, Dtype::Bfloat16, 0, 128, &[(1, 256)], 0x200)
    );
    assert_eq!(
        m.args[1],
        ap(MemoryType::Sb, Dtype::Bfloat16, 0, 128, &[(1, 64)], 0x100)
    );
    assert_eq!(
        m.outs[0],
        ap(MemoryType::Psum, Dtype::Float32, 0, 64, &[(1, 256)], 512)
    );
    assert_eq!(m.attrs["psum_accumulate_flags"], 3);
    assert!(m.attrs.get(ATTR_WIRE).is_none(), "{:?}", m.attrs);
    // fp32: LDWEIGHTS + MATMUL twice, Low then High → one float32 Matmult.
    let quad = [
        ldw_v3(128, 64, W::FP32, 1),
        mm_v3(128, 64, W::FP32, 1),
        ldw_v3(128, 64, W::FP32, 2),
        mm_v3(128, 64, W::FP32, 2),
    ];
    let s = lift(&quad, Engine::Pe, Gen::V3);
    let [m] = insts(&s) else {
        panic!("{:?}", insts(&s))
    };
    assert_eq!(
        (m.class, m.args[0].dtype, m.args[1].dtype),
        (InstClass::Matmult, Dtype::Float32, Dtype::Float32)
    );
    assert!(m.attrs.get(ATTR_FP32_PASSES).is_none());
    assert_eq!(m.attrs[ATTR_ORIGIN]["bundles"], 4);
    // The fp32r signature (FP32 tag + fp32_mode High) in one pass.
    let s = lift(
        &[ldw_v3(128, 64, W::FP32, 2), mm_v3(128, 64, W::FP32, 2)],
        Engine::Pe,
        Gen::V3,
    );
    assert_eq!(insts(&s)[0].args[0].dtype, Dtype::Float32r);
    assert_eq!(insts(&s).len(), 1);
    // A lone MATMUL (weights already loaded) and a lone LDWEIGHTS.
    let s = lift(
        &[mm_v3(64, 64, W::BF16, 0), ldw_v3(32, 32, W::BF16, 0)],
        Engine::Pe,
        Gen::V3,
    );
    let classes: Vec<_> = insts(&s).iter().map(|i| (i.class, i.args.len())).collect();
    assert_eq!(
        classes,
        [(InstClass::Matmult, 1), (InstClass::LoadWeights, 1)]
    );
    assert_eq!(insts(&s)[1].attrs["num_active_cols"], 32);
    // The transpose marker makes it a Transpose.
    let mut t = mm_v3(128, 128, W::BF16, 0);
    t.0[34] = 1;
    let s = lift(&[ldw_v3(128, 128, W::BF16, 0), t], Engine::Pe, Gen::V3);
    assert_eq!(insts(&s)[0].class, InstClass::Transpose);
    assert!(insts(&s)[0].attrs.get("transpose_mode").is_none());
}

#[test]
fn mx_pair_fuses_and_lone_halves_are_reported() {
    let mut lw = LdWeightsMx::from_bundle(&canonical(0x09));
    lw.src = tpbsim_isa::MxMemPattern1d {
        data: sb(0, 0),
        scale: sb(96, 0),
        k: 128,
        step_sign: 1,
        scale_partition: 0,
        reserved: [0; 4],
    };
    lw.in_dtype = W::FP8_EXP4;
    lw.num_active_rows = 128;
    lw.num_active_cols = 128;
    lw.row_grp = 0x0F;
    lw.col_grp = 0x0F;
    let mut mm = MatmulMx::from_bundle(&canonical(0x0A));
    mm.src = tpbsim_isa::MxMemPattern1d {
        data: sb(0, 0x800),
        scale: sb(112, 0),
        k: 256,
        step_sign: 1,
        scale_partition: 0,
        reserved: [0; 4],
    };
    mm.in_dtype = W::FP4_EXP2;
    mm.num_active_rows = 128;
    mm.num_active_cols = 128;
    mm.out_dtype = W::BF16;
    mm.row_grp = 0x0F;
    mm.col_grp = 0x0F;
    mm.dst = tpbsim_isa::MemPattern(Tensor::new(psum(0, 0), [1, 1, 1], [64, 1, 1]));
    let (lw, mm) = (lw.to_bundle(), mm.to_bundle());
    let s = lift(&[lw, mm], Engine::Pe, Gen::V4);
    let [m] = insts(&s) else {
        panic!("{:?}", s.diagnostics)
    };
    assert_eq!(m.class, InstClass::MatmultMx);
    let dts: Vec<Dtype> = m.args.iter().map(|a| a.dtype).collect();
    assert_eq!(
        dts,
        [
            Dtype::Float4E2m1fnX4,
            Dtype::Float8E4m3fnX4,
            Dtype::Float8E8m0fnu,
            Dtype::Float8E8m0fnu
        ]
    );
    assert_eq!(m.args[0].pattern, vec![Dim { step: 1, num: 64 }]);
    assert_eq!((m.args[2].start_partition, m.args[2].partitions), (112, 16));
    assert_eq!(m.outs[0].dtype, Dtype::Bfloat16);
    let s = lift(&[mm, lw], Engine::Pe, Gen::V4);
    assert!(insts(&s).iter().all(|i| i.class == InstClass::Generic));
    assert_eq!(s.diagnostics.len(), 2);
    assert_eq!(s.generic_bundles, 2);
}

#[test]
fn activation_with_accumulator_and_bias() {
    let mut a = canonical(0x21);
    a.0[14] = 3; // accumulator_cmd ZERO_ACCUMULATE
    a.0[16..20].copy_from_slice(&((4u32 << 18) | 0x100).to_le_bytes());
    for (o, v) in [(20, 1u16), (22, 1), (24, 1), (26, 64), (28, 1), (30, 1)] {
        a.0[o..o + 2].copy_from_slice(&v.to_le_bytes());
    }
    a.0[32] = 0x06 | (0x0A << 4); // in bf16, bias fp32
    a.0[33] = 0x06;
    a.0[34] = 32;
    a.0[35] = 7; // EXP
    a.0[40..44].copy_from_slice(&((40u32 << 18) | 0x20).to_le_bytes());
    a.0[48..52].copy_from_slice(&((4u32 << 18) | 0x800).to_le_bytes());
    for (o, v) in [(52, 1u16), (54, 1), (56, 1), (58, 64), (60, 1), (62, 1)] {
        a.0[o..o + 2].copy_from_slice(&v.to_le_bytes());
    }
    a.0[4] = 0x05; // wait SEM_GE_IMM
    a.0[5] = 9;
    let mut r = canonical(0x24);
    r.0[28] = 1;
    r.0[32] = 0x0A;
    r.0[34] = 32;
    r.0[44..48].copy_from_slice(&(5u32 << 18).to_le_bytes());
    r.0[48..52].copy_from_slice(&[1, 0, 1, 0]);
    let s = lift(&[a, r], Engine::Act, Gen::V3);
    let [i] = insts(&s) else {
        panic!("{:?}", s.diagnostics)
    };
    assert_eq!(
        (i.class, i.args.len(), i.outs.len()),
        (InstClass::Activation, 2, 2)
    );
    assert_eq!(
        i.args[1],
        ap(MemoryType::Sb, Dtype::Float32, 40, 32, &[], 8)
    );
    assert_eq!(i.attrs["activation_func"], "EXP");
    assert!(
        i.attrs.get("accumulator_cmd").is_none(),
        "3 is what a two-output activation derives"
    );
    assert_eq!(i.attrs[ATTR_EVENTS][0]["wait_mode"], "SEM_GE_IMM");
    assert!(i.attrs[ATTR_EVENTS][1].is_null());
    // An immediate bias (bias_src_n INSTRUCTION) keeps its dtype nibble in `wire`, apart from
    // the source's nibble, so editing the source dtype still lowers.
    let mut imm = a;
    imm.0[14] = 0;
    imm.0[15] = 1;
    let s = lift(&[imm], Engine::Act, Gen::V3);
    let mut i = insts(&s)[0].clone();
    assert_eq!(i.args.len(), 1);
    assert_eq!(i.attrs[ATTR_WIRE][0]["in_bias_dtypes.hi"], 0x0A);
    i.args[0].dtype = Dtype::Float16;
    assert_eq!(
        lower_instruction(&i, Gen::V3).unwrap()[0].0[32],
        0x07 | (0x0A << 4)
    );
    // Without an accumulate command the read stays its own instruction.
    a.0[14] = 0;
    let s = lift(&[a, r], Engine::Act, Gen::V3);
    let classes: Vec<_> = insts(&s).iter().map(|i| i.class).collect();
    assert_eq!(
        classes,
        [InstClass::Activation, InstClass::ReadActivationAccumulator]
    );
    // ACTIVATE2 lifts to Activation too, its opcode recorded (lowering picks 0x21).
    let mut a2 = canonical(0x25);
    a2.0[12..16].copy_from_slice(&(2u32 << 18).to_le_bytes());
    a2.0[16..24].copy_from_slice(&[1, 0, 1, 0, 8, 0, 1, 0]);
    a2.0[32] = 0x0A;
    a2.0[33] = 0x06;
    a2.0[34] = 16;
    a2.0[35] = 6;
    a2.0[48..52].copy_from_slice(&(3u32 << 18).to_le_bytes());
    a2.0[52..60].copy_from_slice(&[1, 0, 1, 0, 8, 0, 1, 0]);
    let s = lift(&[a2], Engine::Act, Gen::V4);
    assert_eq!(
        (insts(&s)[0].class, &insts(&s)[0].attrs[ATTR_OPCODE]),
        (InstClass::Activation, &Value::from("ACTIVATE2"))
    );
}

#[test]
fn data_movement_sequences_fuse() {
    let tr = |op: u8, src: Addr4, dst: Addr4| {
        let mut t = TensorReduceV2::from_bundle(&canonical(op));
        t.src = Tensor::new(src, [1, 1, 1, 1], [32, 1, 1, 1]);
        t.in_dtype = W::BF16;
        t.out_dtype = W::BF16;
        t.num_active_channels = 16;
        t.dst = Tensor::new(dst, [1, 1, 1, 1], [32, 1, 1, 1]);
        t.to_bundle()
    };
    let mut sel = canonical(0xEA);
    sel.0[12..16].copy_from_slice(&sb(0, 0x40).0.to_le_bytes());
    sel.0[16..24].copy_from_slice(&[1, 0, 1, 0, 32, 0, 1, 0]);
    sel.0[24..28].copy_from_slice(&sb(1, 0).0.to_le_bytes());
    sel.0[28..36].copy_from_slice(&[1, 0, 1, 0, 32, 0, 1, 0]);
    sel.0[40] = 0x02 | (0x06 << 4); // mask int8, src bf16
    sel.0[41] = 0x06;
    sel.0[42] = 16;
    // The select's destination (+48) is the copy's destination.
    sel.0[48..52].copy_from_slice(&sb(2, 0).0.to_le_bytes());
    sel.0[52..60].copy_from_slice(&[1, 0, 1, 0, 32, 0, 1, 0]);
    let stream = [
        canonical(0x69),
        tr(0x6A, sb(0, 0), sb(1, 0)),
        canonical(0x6D),
        canonical(0x6E),
        canonical(0x67),
        canonical(0x68),
        canonical(0x85),
        canonical(0x86),
        canonical(0x86),
        tr(0x46, sb(3, 0), sb(2, 0)),
        sel,
        tr(0x47, sb(3, 0), sb(2, 0)),
    ];
    let mut stream = stream.to_vec();
    stream[0].0[20] = 0xAB; // mask bytes
    stream[11].0[33] = 0x0A; // cast bf16 → fp32
    let s = lift(&stream, Engine::Pool, Gen::V3);
    let got: Vec<(InstClass, u64)> = insts(&s)
        .iter()
        .map(|i| {
            (
                i.class,
                i.attrs[ATTR_ORIGIN]["bundles"].as_u64().unwrap_or(0),
            )
        })
        .collect();
    assert_eq!(
        got,
        [
            (InstClass::StreamShuffle, 2),
            (InstClass::MaxIndex, 2),
            (InstClass::Gather, 2),
            (InstClass::CustomOp, 3),
            (InstClass::Select, 2),
            (InstClass::TensorCopy, 1),
        ]
    );
    let i = insts(&s);
    assert_eq!(
        i[0].attrs[ATTR_WIRE][0]["body"]
            .as_str()
            .map(|h| &h[16..18]),
        Some("ab")
    );
    assert_eq!(i[3].attrs[ATTR_PAYLOADS], 2);
    assert_eq!(
        i[4].args[2].start_partition, 3,
        "on_false is the copy's source"
    );
    assert_eq!(i[4].args[0].dtype, Dtype::Int8);
    assert_eq!(
        (i[5].args[0].dtype, i[5].outs[0].dtype),
        (Dtype::Bfloat16, Dtype::Float32)
    );
    // MaxIndex, Gather and CustomOp carry no decoded operands: reported as not checked.
    assert_eq!(
        s.diagnostics
            .iter()
            .filter(|d| d.message.contains("without operands"))
            .count(),
        3
    );
}

#[test]
fn unliftable_bundles_stay_generic_and_are_reported() {
    let mut misaligned = tt_bundle(0x41, AluOp::ADD, (W::FP32, W::FP32), W::FP32, 8);
    misaligned.0[16] = 2; // src0 byte offset 2: not a float32 boundary
    let invalid_dtype = tt_bundle(0x41, AluOp::ADD, (W::INVALID, W::FP32), W::FP32, 8);
    let mut zero = Bundle::ZERO;
    zero.0[1] = 0x10;
    let stream = [misaligned, invalid_dtype, zero, misaligned, canonical(0x07)];
    let s = lift(&stream, Engine::Dve, Gen::V3);
    assert!(insts(&s).iter().all(|i| i.class == InstClass::Generic));
    assert_eq!(insts(&s)[0].attrs[ATTR_BUNDLE], misaligned.to_hex());
    assert!(insts(&s)[0].attrs[ATTR_UNLIFTED]
        .as_str()
        .is_some_and(|r| r.contains("not aligned")));
    assert_eq!(s.generic_bundles, 5);
    // One report per opcode and reason, with the first location and a count.
    let tt: Vec<_> = s
        .diagnostics
        .iter()
        .filter(|d| d.message.contains("TENSOR_TENSOR_ARITH_OP"))
        .collect();
    assert_eq!(tt.len(), 1);
    assert!(
        tt[0].message.starts_with("3 bundle(s)"),
        "{}",
        tt[0].message
    );
    assert_eq!(
        (tt[0].location.index, tt[0].location.offset),
        (Some(0), Some(0))
    );
    assert!(s
        .diagnostics
        .iter()
        .any(|d| d.location.index == Some(2) && d.message.contains("0x00")));
    assert!(s
        .diagnostics
        .iter()
        .any(|d| d.message.contains("MATMUL_SPARSE") && d.message.contains("no lifting rule")));
    assert!(s
        .diagnostics
        .iter()
        .all(|d| d.severity == Severity::NotChecked && d.rule == LIFT_RULE));
}

#[test]
fn l1_diagnostics_on_lifted_streams_carry_the_stream_location() {
    // A TensorTensor on the ACT stream breaks the engine gate.
    let b = tt_bundle(0x41, AluOp::ADD, (W::BF16, W::BF16), W::BF16, 64);
    let bundles = [canonical(0xA4), b];
    let l = lift_streams(
        &[StreamInput {
            function: "act".into(),
            file: Some("Activation.bin".into()),
            engine: Engine::Act,
            bundles: &bundles,
        }],
        Gen::V3,
        None,
    );
    let mut diags = crate::registry::Registry::l1().verify(
        crate::registry::PropertySet::default_l1(),
        &l.module,
        crate::diag::Mode::CollectAll,
    );
    for d in &mut diags {
        locate(&l.module, d);
    }
    let e = diags
        .iter()
        .find(|d| d.is_error() && d.rule == "checkValidEngines")
        .expect("engine error");
    assert_eq!(e.location.index, Some(1));
    assert_eq!(e.location.offset, Some(64));
    assert_eq!(e.location.file.as_deref(), Some("Activation.bin"));
    assert_eq!(e.location.function.as_deref(), Some("act"));
    assert_eq!(l.origins[0][1].index, 1);
}

#[test]
fn lowering_rejects_what_does_not_encode() {
    let gen = Gen::V3;
    let mut i = Instruction::new(InstClass::TensorTensor, EngineType::Dve)
        .with_args(vec![
            ap(MemoryType::Sb, Dtype::Float32, 0, 8, &[(1, 4)], 0),
            ap(MemoryType::Sb, Dtype::Float32, 0, 16, &[(1, 4)], 0),
        ])
        .with_outs(vec![ap(MemoryType::Sb, Dtype::Float32, 0, 8, &[(1, 4)], 0)]);
    assert!(lower_instruction(&i, gen)
        .unwrap_err()
        .reason()
        .contains("disagree"));
    i.args[1].partitions = 8;
    assert!(lower_instruction(&i, gen).is_ok());
    i.args[1].mem = MemoryType::Dram;
    assert!(lower_instruction(&i, gen).is_err());
    i.args[1].mem = MemoryType::Sb;
    i.attrs.insert("op".into(), "NOT_AN_OP".into());
    assert!(lower_instruction(&i, gen)
        .unwrap_err()
        .reason()
        .contains("attrs.op"));
    let mx = Instruction::new(InstClass::MatmultMx, EngineType::Pe);
    assert!(lower_instruction(&mx, gen).is_err());
    let t = Instruction::new(InstClass::Transpose, EngineType::Pe)
        .with_args(vec![ap(
            MemoryType::Sb,
            Dtype::Bfloat16,
            0,
            8,
            &[(1, 4)],
            0,
        )])
        .with_outs(vec![ap(
            MemoryType::Psum,
            Dtype::Float32,
            0,
            8,
            &[(1, 4)],
            0,
        )]);
    assert!(lower_instruction(&t, Gen::V2)
        .unwrap_err()
        .reason()
        .contains("transpose"));
    assert!(lower_instruction(&t, Gen::V3).is_ok());
}

#[test]
fn lower_errors_say_which_step_failed() {
    let gen = Gen::V3;
    let tt = |parts: u64| {
        Instruction::new(InstClass::TensorTensor, EngineType::Dve)
            .with_args(vec![
                ap(MemoryType::Sb, Dtype::Float32, 0, 8, &[(1, 4)], 0),
                ap(MemoryType::Sb, Dtype::Float32, 0, parts, &[(1, 4)], 0),
            ])
            .with_outs(vec![ap(MemoryType::Sb, Dtype::Float32, 0, 8, &[(1, 4)], 0)])
    };
    let e = lower_instruction(&tt(16), gen).unwrap_err();
    assert!(
        matches!(
            e,
            LowerError::Operands {
                class: InstClass::TensorTensor,
                ..
            }
        ),
        "{e:?}"
    );
    assert_eq!(
        e.to_string(),
        format!("TensorTensor on {gen}: {}", e.reason())
    );
    let mut i = tt(8);
    i.attrs.insert("op".into(), "NOT_AN_OP".into());
    let e = lower_instruction(&i, gen).unwrap_err();
    assert!(
        matches!(e, LowerError::Opcode { .. } | LowerError::Attribute { .. }),
        "{e:?}"
    );
    let mut i = tt(8);
    i.attrs.insert(ATTR_WIRE.into(), Value::from("x"));
    let e = lower_instruction(&i, gen).unwrap_err();
    assert!(matches!(e, LowerError::Attribute { .. }), "{e:?}");
    let g = Instruction::new(InstClass::Generic, EngineType::Dve);
    let e = lower_instruction(&g, gen).unwrap_err();
    assert!(
        matches!(
            e,
            LowerError::GenericBundle {
                class: InstClass::Generic,
                ..
            }
        ),
        "{e:?}"
    );
    let mut f = crate::bir::Function::default();
    f.blocks.push(crate::bir::Block {
        name: "b".into(),
        dynamic_cfg: false,
        instructions: vec![Instruction::new(InstClass::Loop, EngineType::All)],
    });
    let e = lower_function(&f, gen).unwrap_err();
    assert_eq!(
        e,
        LowerError::Region {
            class: InstClass::Loop,
            gen
        }
    );
    assert_eq!(
        e.to_string(),
        format!("Loop on {gen}: structured regions do not lower to a flat stream")
    );
}

#[test]
fn lift_errors_are_typed_and_keep_their_messages() {
    assert_eq!(LiftError::NoRule { opcode: 0x02 }.kind(), "no lifting rule");
    assert_eq!(
        LiftError::NoRule { opcode: 0x02 }.to_string(),
        format!("no lifting rule for {}", super::lower::mnemonic(0x02))
    );
    let e = LiftError::NotLiftable {
        opcodes: vec![0x01, 0x02],
        class: InstClass::Matmult,
        reason: "why".into(),
    };
    assert_eq!(
        e.to_string(),
        format!("{} as Matmult: why", super::lower::mnemonics(&[0x01, 0x02]))
    );
    assert_eq!(e.kind(), "not liftable");
}

// ---------------------------------------------------------------------------------------------
// Property tests

fn cases() -> u32 {
    std::env::var("TPBSIM_PROPTEST_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(256)
}

/// A small deterministic generator (proptest supplies the seed).
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n.max(1)
    }
    fn range(&mut self, lo: i64, hi: i64) -> i64 {
        lo + self.below((hi - lo + 1) as u64) as i64
    }
    fn pick<T: Copy>(&mut self, xs: &[T]) -> T {
        xs[self.below(xs.len() as u64) as usize]
    }
    fn chance(&mut self, percent: u64) -> bool {
        self.below(100) < percent
    }
}

fn dtypes(gen: Gen, ctx: DtypeCtx, nibble: bool) -> Vec<Dtype> {
    Dtype::ALL
        .into_iter()
        .filter(|&d| {
            is_canonical(d, gen, ctx) && (!nibble || super::dtype::wire_tag(d, gen) <= 0x0F)
        })
        .collect()
}

/// A canonical pattern: at most `dims` free dimensions, the outermost not a filler (1, 1).
fn gen_ap(
    r: &mut Rng,
    mem: MemoryType,
    dts: &[Dtype],
    parts: u64,
    dims: usize,
    gen: Gen,
) -> AccessPattern {
    let mem = if mem == ONCHIP { onchip(r) } else { mem };
    let dtype = r.pick(dts);
    let parts = if parts == 0 {
        r.range(1, 128) as u64
    } else {
        parts
    };
    let n = r.below(dims as u64 + 1) as usize;
    let mut pattern: Vec<Dim> = (0..n)
        .map(|_| Dim {
            step: r.range(-40, 200),
            num: r.range(1, 300) as u64,
        })
        .collect();
    if let Some(d) = pattern.first_mut() {
        if d.step == 1 && d.num == 1 {
            d.num = 2;
        }
    }
    let size = dtype.bytes() as i64;
    let g = tpbsim_isa::geometry::Geometry::of(gen);
    let window = if mem == MemoryType::Psum {
        g.psum_partition_stride
    } else {
        0x10000
    } as i64;
    let mut start = r.below(129 - parts.min(128));
    // v5: SBUF partitions 32..=35 share their addresses with the PSUM window (1 MiB partition
    // stride, PSUM at 0x2000000); such SBUF operands do not encode.
    if gen == Gen::V5 && mem == MemoryType::Sb && (32..=35).contains(&start) {
        start = 36.min(128 - parts.min(92));
    }
    AccessPattern {
        mem,
        buffer: if mem == MemoryType::Psum {
            PSUM_BUFFER.into()
        } else {
            SBUF_BUFFER.into()
        },
        dtype,
        start_partition: start,
        partitions: parts,
        pattern,
        offset: r.range(0, window / size - 1),
        indirect: false,
    }
}

/// `gen_ap` memory argument: SB or (a quarter of the time) PSUM.
const ONCHIP: MemoryType = MemoryType::Unallocated;

/// Change a generated pattern's dtype, keeping its offset inside the window.
fn retype(a: &mut AccessPattern, dtype: Dtype) {
    a.dtype = dtype;
    a.offset %= 0x8000 / dtype.bytes() as i64;
}

fn onchip(r: &mut Rng) -> MemoryType {
    if r.chance(25) {
        MemoryType::Psum
    } else {
        MemoryType::Sb
    }
}

/// Random raw values for the parameter fields of the instruction's parameter bundle, as the
/// attributes lifting would record (only those differing from what lowering derives).
fn gen_params(r: &mut Rng, inst: &mut Instruction, gen: Gen, skip: &[&str]) {
    let Ok(ops) = plan(inst, gen) else { return };
    let Ok(pieces) = bindings(inst.class, &ops, inst.args.len(), gen) else {
        return;
    };
    let k = primary(&pieces);
    let Ok(built) = super::lower::build(inst, &pieces, gen) else {
        return;
    };
    let (canon, meta) = built[k];
    let mut b = canon;
    for p in pieces[k].form.params {
        if skip.contains(&p.name) || !r.chance(50) {
            continue;
        }
        let Some(m) = meta.field(p.name) else {
            continue;
        };
        let range = m.range();
        for x in &mut b.0[range.clone()] {
            *x = r.next() as u8;
        }
        if let tpbsim_isa::spec::FieldType::Str(_) = m.ty {
            for (j, x) in b.0[range.clone()].iter_mut().enumerate() {
                *x = if j < 6 { b'a' + (*x % 26) } else { 0 };
            }
        }
        if b.0[range.clone()] == canon.0[range.clone()] {
            continue;
        }
        inst.attrs
            .insert(p.name.to_string(), fields::param_value(m, &b));
    }
}

fn gen_events(r: &mut Rng, inst: &mut Instruction, gen: Gen) {
    let Ok(n) = lower_instruction(inst, gen).map(|b| b.len()) else {
        return;
    };
    if !r.chance(40) {
        return;
    }
    let ev: Vec<Value> = (0..n)
        .map(|_| {
            let mut b = Bundle::ZERO;
            if r.chance(60) {
                for x in &mut b.0[4..12] {
                    *x = if r.chance(50) { r.next() as u8 } else { 0 };
                }
            }
            fields::events_value(&b).unwrap_or(Value::Null)
        })
        .collect();
    if ev.iter().any(|e| !e.is_null()) {
        inst.attrs.insert(ATTR_EVENTS.into(), Value::Array(ev));
    }
}

const CLASSES: &[InstClass] = &[
    InstClass::Matmult,
    InstClass::Transpose,
    InstClass::MatmultMx,
    InstClass::Activation,
    InstClass::TensorTensor,
    InstClass::TensorScalar,
    InstClass::TensorReduce,
    InstClass::TensorCopy,
    InstClass::Memset,
    InstClass::Iota,
    InstClass::CopyPredicated,
    InstClass::Select,
    InstClass::QuantizeMx,
    InstClass::TensorDequantize,
    InstClass::EventSemaphore,
    InstClass::Halt,
    InstClass::NoOp,
    InstClass::CompareAndBranch,
    InstClass::UnconditionalBranch,
    InstClass::DmaTrigger,
];

/// A canonical instruction of `class` for `gen`, or `None` when the class has no lowering there.
fn gen_inst(r: &mut Rng, class: InstClass, gen: Gen) -> Option<Instruction> {
    use InstClass as C;
    use MemoryType::*;
    let plain = dtypes(gen, DtypeCtx::Plain, false);
    let nib = dtypes(gen, DtypeCtx::Plain, true);
    let parts = r.range(1, 128) as u64;
    let engine = |r: &mut Rng| r.pick(&[EngineType::Pool, EngineType::Dve]);
    let mut skip: Vec<&str> = Vec::new();
    let mut inst = match class {
        C::Matmult | C::Transpose => {
            if class == C::Transpose && gen == Gen::V2 {
                return None;
            }
            let pe: Vec<Dtype> = plain
                .iter()
                .copied()
                .filter(|d| !matches!(d, Dtype::Float32r | Dtype::Float32) || r.chance(30))
                .collect();
            let mut i = Instruction::new(class, EngineType::Pe);
            let rows = r.range(1, 128) as u64;
            i.args.push(gen_ap(r, Sb, &pe, rows, 3, gen));
            if r.chance(80) {
                i.args.push(gen_ap(r, Sb, &pe, 0, 3, gen));
            }
            // float32r cannot share a two-pass (float32) sequence.
            if i.args.iter().any(|a| a.dtype == Dtype::Float32) && i.args.len() == 2 {
                for a in &mut i.args {
                    if a.dtype == Dtype::Float32r {
                        retype(a, Dtype::Float32);
                    }
                }
                if r.chance(30) {
                    i.attrs.insert(ATTR_FP32_PASSES.into(), 1.into());
                }
            }
            let out_dt = if gen == Gen::V2 {
                Dtype::Float32
            } else {
                r.pick(&plain)
            };
            let cols = r.range(1, 128) as u64;
            i.outs.push(gen_ap(r, Psum, &[out_dt], cols, 3, gen));
            skip.extend([
                "fp32_mode",
                "transpose_mode",
                "flags",
                "perf_mode",
                "tile_size",
                "tile_sel",
            ]);
            i
        }
        C::MatmultMx => {
            if !matches!(gen, Gen::V4 | Gen::V5) {
                return None;
            }
            let mx = dtypes(gen, DtypeCtx::MxData, false);
            let mut i = Instruction::new(class, EngineType::Pe);
            let (ri, rw) = (r.range(1, 128) as u64, r.range(1, 128) as u64);
            let data = |r: &mut Rng, parts: u64| {
                let mut a = gen_ap(r, Sb, &mx, parts, 1, gen);
                a.pattern = vec![Dim {
                    step: r.pick(&[1, -1]),
                    num: r.range(1, 4000) as u64,
                }];
                a
            };
            let (di, dw) = (data(r, ri), data(r, rw));
            let scale = |r: &mut Rng, d: &AccessPattern| {
                let mut s = gen_ap(
                    r,
                    Sb,
                    &[Dtype::Float8E8m0fnu],
                    d.partitions.div_ceil(8),
                    1,
                    gen,
                );
                s.pattern = vec![Dim {
                    step: 1,
                    num: d.pattern[0].num,
                }];
                s
            };
            let (si, sw) = (scale(r, &di), scale(r, &dw));
            i.args = vec![di, dw, si, sw];
            i.outs.push(gen_ap(r, Psum, &plain, 0, 3, gen));
            i
        }
        C::QuantizeMx => {
            if !matches!(gen, Gen::V4 | Gen::V5) {
                return None;
            }
            let mut i = Instruction::new(class, EngineType::Dve);
            i.args.push(gen_ap(r, Sb, &plain, parts, 3, gen));
            let mut d = gen_ap(r, Sb, &dtypes(gen, DtypeCtx::MxData, false), parts, 1, gen);
            d.pattern = vec![Dim {
                step: r.pick(&[1, -1]),
                num: r.range(1, 4000) as u64,
            }];
            let mut s = gen_ap(r, Sb, &[Dtype::Float8E8m0fnu], parts.div_ceil(8), 1, gen);
            s.pattern = vec![Dim {
                step: 1,
                num: d.pattern[0].num,
            }];
            i.outs = vec![d, s];
            i
        }
        C::Activation => {
            let mut i = Instruction::new(class, EngineType::Act);
            i.args.push(gen_ap(r, ONCHIP, &nib, parts, 3, gen));
            i.outs.push(gen_ap(r, ONCHIP, &plain, parts, 3, gen));
            if r.chance(40) {
                i.args.push(gen_ap(r, ONCHIP, &nib, parts, 0, gen));
                skip.push("bias_src_n");
                skip.push("bias");
            }
            if r.chance(40) {
                i.outs.push(gen_ap(r, ONCHIP, &plain, 0, 1, gen));
                skip.push("accumulator_cmd");
                if r.chance(50) {
                    i.attrs.insert(
                        "accumulator_cmd".into(),
                        r.pick(&["ZERO", "ACCUMULATE", "LOAD_ACCUMULATE"]).into(),
                    );
                }
            }
            i
        }
        C::TensorTensor => {
            let mut i = Instruction::new(class, engine(r));
            let wide = gen == Gen::V5 && r.chance(20);
            for _ in 0..2 {
                let dims = if wide { 2 } else { 3 };
                i.args.push(gen_ap(r, ONCHIP, &nib, parts, dims, gen));
            }
            if gen == Gen::V2 && r.chance(30) {
                for a in &mut i.args {
                    retype(a, Dtype::Bfloat16);
                    a.pattern.push(Dim {
                        step: 1,
                        num: 2 * r.range(1, 50) as u64,
                    });
                    a.pattern.truncate(3);
                    if a.pattern.len() == 3 {
                        a.pattern.remove(0);
                    }
                }
                i.attrs
                    .insert("op".into(), r.pick(&["ADD", "MULT", "SUBTRACT"]).into());
                skip.push("op");
            }
            if wide {
                i.attrs.insert(ATTR_WIDE.into(), true.into());
                i.outs.push(gen_ap(r, Sb, &nib, parts, 2, gen));
                i.outs.push(gen_ap(r, Sb, &nib, parts, 2, gen));
            } else {
                i.outs.push(gen_ap(r, ONCHIP, &plain, parts, 3, gen));
            }
            i
        }
        C::TensorScalar => {
            let mut i = Instruction::new(class, engine(r));
            i.args.push(gen_ap(r, ONCHIP, &plain, parts, 3, gen));
            i.outs.push(gen_ap(r, ONCHIP, &plain, parts, 3, gen));
            if r.chance(30) {
                i.outs.push(gen_ap(r, ONCHIP, &plain, 0, 1, gen));
            } else {
                // One output with an accumulate command lowers to 0x9A, which lifts as
                // TensorScalarCache (a documented collision).
                skip.push("accumulator_cmd");
                if r.chance(25) {
                    // A bit-vector op0 (op1 unset): the 0x53 fan-in.
                    let op = r.pick(&[0x01, 0x02, 0x03, 0x10, 0x11, 0x0A, 0x0B, 0x0C]);
                    i.attrs
                        .insert("op0".into(), fields::enum_value("ALU_OP", op));
                    skip.extend(["op0", "op1"]);
                }
            }
            i
        }
        C::TensorReduce | C::TensorCopy => {
            let mut i = Instruction::new(class, engine(r));
            i.args.push(gen_ap(r, ONCHIP, &plain, parts, 4, gen));
            i.outs.push(gen_ap(r, ONCHIP, &plain, parts, 4, gen));
            if gen == Gen::V2 && r.chance(30) {
                retype(&mut i.args[0], Dtype::Bfloat16);
                i.engine = EngineType::Pool;
                if class == C::TensorReduce {
                    i.attrs.insert("op".into(), r.pick(&["ADD", "MAX"]).into());
                    skip.push("op");
                }
            }
            i
        }
        C::Memset | C::Iota => {
            let mut i = Instruction::new(class, engine(r));
            i.outs.push(gen_ap(r, ONCHIP, &plain, parts, 4, gen));
            i
        }
        C::CopyPredicated => {
            let mut i = Instruction::new(class, engine(r));
            i.args.push(gen_ap(r, ONCHIP, &nib, parts, 3, gen));
            i.args.push(gen_ap(r, ONCHIP, &nib, parts, 3, gen));
            i.outs.push(gen_ap(r, ONCHIP, &plain, parts, 3, gen));
            i
        }
        C::Select => {
            let mut i = Instruction::new(class, engine(r));
            i.args.push(gen_ap(r, ONCHIP, &nib, parts, 2, gen));
            i.args.push(gen_ap(r, ONCHIP, &nib, parts, 2, gen));
            i.args.push(gen_ap(r, ONCHIP, &plain, parts, 4, gen));
            i.outs.push(gen_ap(r, ONCHIP, &plain, parts, 2, gen));
            i
        }
        C::TensorDequantize => {
            if gen == Gen::V2 {
                return None;
            }
            let mut i = Instruction::new(class, EngineType::Pool);
            i.args.push(gen_ap(r, Sb, &plain, parts, 3, gen));
            i.outs.push(gen_ap(r, Sb, &plain, parts, 3, gen));
            i
        }
        C::CompareAndBranch => {
            let mut i = Instruction::new(
                class,
                r.pick(&[
                    EngineType::Pe,
                    EngineType::Act,
                    EngineType::Pool,
                    EngineType::Dve,
                    EngineType::Sp,
                ]),
            );
            i.attrs.insert(
                "cmp_op".into(),
                r.pick(&["LT_IMM", "EQ_IMM", "GE_REG", "NE_REG"]).into(),
            );
            skip.push("cmp_op");
            i
        }
        C::UnconditionalBranch => {
            skip.push("cmp_op");
            Instruction::new(class, r.pick(&[EngineType::Pe, EngineType::Sp]))
        }
        C::EventSemaphore | C::Halt | C::NoOp | C::DmaTrigger => Instruction::new(
            class,
            r.pick(&[
                EngineType::Pe,
                EngineType::Act,
                EngineType::Pool,
                EngineType::Dve,
                EngineType::Sp,
            ]),
        ),
        _ => return None,
    };
    gen_params(r, &mut inst, gen, &skip);
    gen_events(r, &mut inst, gen);
    Some(inst)
}

fn strip_origin(mut i: Instruction) -> Instruction {
    i.attrs.remove(ATTR_ORIGIN);
    i
}

fn bir_engine_to_wire(e: EngineType) -> Engine {
    e.wire().unwrap_or(Engine::Sp)
}

fn dump(i: &Instruction) -> String {
    let mut m = Map::new();
    m.insert("class".into(), i.class.name().into());
    m.insert("attrs".into(), Value::Object(i.attrs.clone()));
    format!("{m:?}\nargs {:?}\nouts {:?}", i.args, i.outs)
}

proptest! {
    #![proptest_config(ProptestConfig { cases: cases(), ..ProptestConfig::default() })]

    /// lift(lower(x)) == x for generated instructions of the classes the simulator executes.
    #[test]
    fn lift_inverts_lower(seed in 1u64.., g in 0usize..4, c in 0usize..CLASSES.len()) {
        let gen = Gen::ALL[g];
        let mut r = Rng(seed | 1);
        // A class with no lowering in `gen` (gen_inst gives None) passes the draw on to the
        // next class, so every case checks an instruction.
        let x = (0..CLASSES.len())
            .find_map(|k| gen_inst(&mut r, CLASSES[(c + k) % CLASSES.len()], gen))
            .ok_or_else(|| TestCaseError::fail(format!("no class lowers on {gen}")))?;
        let bundles = match lower_instruction(&x, gen) {
            Ok(b) => b,
            Err(e) => return Err(TestCaseError::fail(format!("{e}\n{}", dump(&x)))),
        };
        let s = lift_stream(&StreamInput { function: "f".into(), file: None, engine: bir_engine_to_wire(x.engine), bundles: &bundles }, gen);
        let got: Vec<Instruction> = s.function.blocks[0].instructions.iter().cloned().map(strip_origin).collect();
        prop_assert_eq!(got.len(), 1, "{:?}\n{}", s.diagnostics, dump(&x));
        prop_assert!(got[0] == x, "lifted:\n{}\nexpected:\n{}", dump(&got[0]), dump(&x));
    }

    /// lower(lift(stream)) == stream for arbitrary bundles (known opcodes, random bodies, with
    /// the multi-bundle sequences over-represented).
    #[test]
    fn lower_inverts_lift(seed in 1u64.., g in 0usize..4, e in 0usize..5, n in 1usize..12) {
        let gen = Gen::ALL[g];
        let mut r = Rng(seed | 1);
        let present: Vec<u8> = tpbsim_isa::spec::opcodes().iter().filter(|o| o.is_present(gen)).map(|o| o.code).collect();
        let seqs: &[&[u8]] = &[&[0x01, 0x02], &[0x01, 0x02, 0x01, 0x02], &[0x09, 0x0A], &[0x21, 0x24], &[0x9A, 0x9B], &[0x69, 0x6A], &[0x85, 0x86, 0x86], &[0x46, 0xEA]];
        let mut bundles = Vec::new();
        while bundles.len() < n {
            let ops: Vec<u8> = if r.chance(30) { r.pick(seqs).to_vec() } else { vec![r.pick(&present)] };
            for op in ops {
                let mut b = canonical(op);
                // Mostly-zero bodies with a few random bytes lift more often than noise.
                for _ in 0..r.below(20) {
                    let k = r.range(2, 63) as usize;
                    b.0[k] = r.next() as u8;
                }
                bundles.push(b);
            }
        }
        let engine = Engine::ALL[e];
        let s = lift_stream(&StreamInput { function: "f".into(), file: None, engine, bundles: &bundles }, gen);
        prop_assert_eq!(lower_function(&s.function, gen).map_err(|e| TestCaseError::fail(e.to_string()))?, bundles.clone());
        prop_assert_eq!(s.lifted_bundles + s.generic_bundles, bundles.len() as u64);
    }
}

/// docs/lift.md lists every single-bundle binding in its opcode → class table.
#[test]
fn docs_table_covers_every_single_binding() {
    let path = std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../docs/lift.md");
    let doc = std::fs::read_to_string(path).expect("docs/lift.md");
    let start = doc.find("| Opcode | Class | Form |").expect("opcode table");
    let table = &doc[start..];
    let table = &table[..table.find("\n\n").unwrap_or(table.len())];
    for &(op, class, _) in super::rules::SINGLES {
        let hex = format!("0x{op:02X}");
        let row = table.lines().find(|l| l.contains(&hex));
        assert!(
            row.is_some_and(|r| r.contains(class.name())),
            "{hex} → {class} missing from the docs table"
        );
    }
}

// ---------------------------------------------------------------------------------------------
// Every single-bundle binding, and the fan-in coverage of the class generator

/// A canonical instruction lowering to exactly `op` through the single-bundle binding
/// `(op, class, form)`: operands per the form's roles (dimensions, dtypes and shared partition
/// counts as the layout allows), random parameters and events, and the `opcode` attribute when
/// the fan-in would choose another opcode of the class. `None` when the binding does not apply
/// in `gen` (opcode absent or untyped, MX or undecoded operands, branch forms chosen by field).
fn binding_inst(
    r: &mut Rng,
    op: u8,
    class: InstClass,
    form: &super::rules::Form,
    gen: Gen,
) -> Option<Instruction> {
    use super::rules::Dt;
    if matches!(
        class,
        InstClass::CompareAndBranch | InstClass::UnconditionalBranch | InstClass::Exit
    ) || std::ptr::eq(form, &super::rules::OPAQUE)
        || form
            .args
            .iter()
            .chain(form.outs)
            .any(|role| role.ctx != DtypeCtx::Plain)
    {
        return None;
    }
    let meta = fields::layout_of(&canonical(op), gen).ok()?;
    meta.format?;
    let engine = r.pick(&[
        EngineType::Pe,
        EngineType::Act,
        EngineType::Pool,
        EngineType::Dve,
        EngineType::Sp,
    ]);
    let mut inst = Instruction::new(class, engine);
    let mut parts: Vec<(FieldLoc, u64)> = Vec::new();
    let (n_args, roles) = (
        form.args.len(),
        form.args.iter().chain(form.outs).collect::<Vec<_>>(),
    );
    for (k, role) in roles.into_iter().enumerate() {
        let m = fields::field(meta, role.field).ok()?;
        let dims = super::lower::dims_of(m).ok()?;
        let dts = match role.dt {
            Dt::Fixed(d) => vec![d],
            Dt::Lo(_) | Dt::Hi(_) => dtypes(gen, DtypeCtx::Plain, true),
            Dt::Field(_) | Dt::PsumOut(_) => dtypes(gen, DtypeCtx::Plain, false),
        };
        let p = match parts.iter().find(|(f, _)| *f == role.part) {
            Some(&(_, p)) => p,
            None => {
                let p = r.range(1, 128) as u64;
                parts.push((role.part, p));
                p
            }
        };
        let a = gen_ap(r, ONCHIP, &dts, p, dims, gen);
        if k < n_args {
            inst.args.push(a);
        } else {
            inst.outs.push(a);
        }
    }
    // Class attributes that choose the opcode, as lifting writes them.
    if op == 0xE6 {
        inst.attrs.insert(ATTR_TSC_MODE.into(), "Cumulative".into());
    }
    if matches!(op, 0xF3 | 0xF4) {
        inst.attrs.insert(ATTR_WIDE.into(), true.into());
    }
    let name = Value::from(super::lower::mnemonic(op));
    let pin = |inst: &mut Instruction| {
        inst.attrs.remove(ATTR_OPCODE);
        if plan(inst, gen).ok().as_deref() != Some(&[op][..]) {
            inst.attrs.insert(ATTR_OPCODE.into(), name.clone());
        }
    };
    pin(&mut inst);
    // float32r inputs fix fp32_mode (High).
    let skip: &[&str] = if inst
        .args
        .iter()
        .any(|a| matches!(a.dtype, Dtype::Float32r | Dtype::Float32))
    {
        &["fp32_mode"]
    } else {
        &[]
    };
    gen_params(r, &mut inst, gen, skip);
    // A parameter (an ALU op, an accumulate command) may move the fan-in.
    pin(&mut inst);
    if plan(&inst, gen).ok().as_deref() != Some(&[op][..]) {
        return None;
    }
    gen_events(r, &mut inst, gen);
    Some(inst)
}

/// The bindings `binding_inst` covers.
fn decoded_bindings() -> Vec<(u8, InstClass, &'static super::rules::Form)> {
    super::rules::SINGLES
        .iter()
        .copied()
        .filter(|&(op, class, form)| {
            let mut r = Rng(0x9E37_79B9_7F4A_7C15);
            Gen::ALL
                .iter()
                .any(|&g| binding_inst(&mut r, op, class, form, g).is_some())
        })
        .collect()
}

proptest! {
    #![proptest_config(ProptestConfig { cases: cases(), ..ProptestConfig::default() })]

    /// lift(lower(x)) == x for every single-bundle binding with decoded operands (each opcode
    /// of each class, the fan-in variants pinned by the `opcode` attribute where the fan-in
    /// would pick another), on every generation that types the opcode.
    #[test]
    fn lift_inverts_lower_for_every_binding(seed in 1u64.., g in 0usize..4, k in 0usize..1000) {
        let all = decoded_bindings();
        let (op, class, form) = all[k % all.len()];
        let gen = Gen::ALL[g];
        let mut r = Rng(seed | 1);
        let Some(x) = binding_inst(&mut r, op, class, form, gen) else { return Ok(()) };
        let bundles = lower_instruction(&x, gen)
            .map_err(|e| TestCaseError::fail(format!("0x{op:02X}: {e}\n{}", dump(&x))))?;
        prop_assert_eq!(bundles.len(), 1);
        prop_assert_eq!(bundles[0].0[0], op);
        let s = lift_stream(&StreamInput { function: "f".into(), file: None, engine: bir_engine_to_wire(x.engine), bundles: &bundles }, gen);
        let got: Vec<Instruction> = s.function.blocks[0].instructions.iter().cloned().map(strip_origin).collect();
        prop_assert_eq!(got.len(), 1, "{:?}\n{}", s.diagnostics, dump(&x));
        prop_assert!(got[0] == x, "0x{:02X} on {}: lifted:\n{}\nexpected:\n{}", op, gen, dump(&got[0]), dump(&x));
    }
}

/// Every binding with decoded operands is generated (and lowers to its opcode) on some
/// generation, so the property above covers all of them.
#[test]
fn every_decoded_binding_is_generated() {
    let all = decoded_bindings();
    let covered: std::collections::BTreeSet<u8> = all.iter().map(|b| b.0).collect();
    for op in [
        0x41, 0x51, 0x8A, 0x8B, 0x8F, 0xF3, 0x72, 0x99, 0x43, 0x53, 0x9A, 0xE6, 0x44, 0x54, 0x42,
        0x52, 0x8C, 0x8D, 0x46, 0x47, 0x49, 0x7E, 0x7B, 0x9D, 0x9E, 0xBC, 0x21, 0x25, 0x22, 0x24,
        0x01, 0xA0, 0xA1, 0xA2,
    ] {
        assert!(covered.contains(&op), "0x{op:02X} not generated");
    }
}

/// The class generator of `lift_inverts_lower` reaches every fan-in variant: the v2 BF16
/// opcodes, 0x41 on POOL and on DVE, the bit-vector opcodes, the multi-bundle sequences
/// (LdWeights + Matmul, the two-pass float32 form, LdWeightsMx + MatmulMx, the accumulator
/// pairs, Select), and lifting gives each instruction back.
#[test]
fn class_generator_reaches_every_fan_in_variant() {
    use std::collections::BTreeSet;
    let mut seen: BTreeSet<(Gen, Vec<u8>, Engine)> = BTreeSet::new();
    let mut r = Rng(0x2545_F491_4F6C_DD1D);
    for &gen in &Gen::ALL {
        for &class in CLASSES {
            for _ in 0..400 {
                let Some(x) = gen_inst(&mut r, class, gen) else {
                    break;
                };
                let b = lower_instruction(&x, gen).unwrap_or_else(|e| panic!("{e}\n{}", dump(&x)));
                let engine = bir_engine_to_wire(x.engine);
                let s = lift_stream(
                    &StreamInput {
                        function: "f".into(),
                        file: None,
                        engine,
                        bundles: &b,
                    },
                    gen,
                );
                let got: Vec<Instruction> = s.function.blocks[0]
                    .instructions
                    .iter()
                    .cloned()
                    .map(strip_origin)
                    .collect();
                assert_eq!(got, vec![x.clone()], "{}", dump(&x));
                seen.insert((gen, b.iter().map(|b| b.0[0]).collect(), engine));
            }
        }
    }
    let has = |gen: Gen, ops: &[u8], engine: Option<Engine>| {
        seen.iter()
            .any(|(g, o, e)| *g == gen && o == ops && engine.is_none_or(|x| x == *e))
    };
    for op in [0x8A, 0x8B, 0x8F, 0x8C, 0x8D] {
        assert!(has(Gen::V2, &[op], Some(Engine::Pool)), "v2 0x{op:02X}");
    }
    for &gen in &Gen::ALL {
        for engine in [Engine::Pool, Engine::Dve] {
            assert!(has(gen, &[0x41], Some(engine)), "{gen} 0x41 on {engine}");
        }
        for ops in [
            &[0x01, 0x02][..],
            &[0x01, 0x02, 0x01, 0x02],
            &[0x02],
            &[0x51],
            &[0x53],
            &[0x9A, 0x9B],
            &[0x21, 0x24],
            &[0x46, 0xEA],
            &[0x47, 0xEA],
            &[0x46],
            &[0x47],
            &[0x72],
            &[0x99],
        ] {
            assert!(has(gen, ops, None), "{gen} {ops:02X?}");
        }
    }
    for gen in [Gen::V4, Gen::V5] {
        assert!(has(gen, &[0x09, 0x0A], None), "{gen} MatmultMx");
        assert!(has(gen, &[0xE3], None), "{gen} QuantizeMx");
    }
    assert!(has(Gen::V5, &[0xF3], None), "v5 0xF3");
}

/// A BIR Select with no parameters lowers to a SELECT_REDUCE whose ops the L2 gate accepts
/// (op1 MAX), and lifts back without them; one whose reduce op is set to something else lowers
/// to a bundle L2 rejects and lifts back with that op. The round trip and the L2 verdict agree.
#[test]
fn select_lowers_to_the_reduce_op_l2_accepts() {
    let mut r = Rng(0x5E1E_C7);
    // The generations with an L2 validator.
    for gen in [Gen::V2, Gen::V3, Gen::V4] {
        let mut x = gen_inst(&mut r, InstClass::Select, gen).expect("Select lowers everywhere");
        x.attrs.clear();
        for (op, ok) in [(None, true), (Some("ADD"), false)] {
            let mut x = x.clone();
            if let Some(op) = op {
                x.attrs.insert("reduce_op".into(), op.into());
            }
            let b = lower_instruction(&x, gen).unwrap_or_else(|e| panic!("{e}\n{}", dump(&x)));
            let sr = b
                .iter()
                .find(|b| b.opcode() == 0xEA)
                .expect("a SELECT_REDUCE");
            let engine = bir_engine_to_wire(x.engine);
            let fails = crate::l2::cascade::check_collect(gen, engine, sr);
            let ops_rejected = fails
                .iter()
                .any(|f| f.rule.name == "is_valid_select_reduce.ops");
            assert_eq!(!ops_rejected, ok, "{gen} {op:?}: {fails:?}");
            let s = lift_stream(
                &StreamInput {
                    function: "f".into(),
                    file: None,
                    engine,
                    bundles: &b,
                },
                gen,
            );
            let got: Vec<Instruction> = s.function.blocks[0]
                .instructions
                .iter()
                .cloned()
                .map(strip_origin)
                .collect();
            assert_eq!(got, vec![x.clone()], "{gen}: {}", dump(&x));
        }
    }
}
