//! Bundles crafted byte by byte from the digest's layout tables decode to the documented field
//! values, per generation, and encode back to the same bytes.

use tpbsim_isa::*;

fn bundle(op: u8) -> Bundle {
    let mut b = Bundle::ZERO;
    b.0[0] = op;
    b.0[1] = 0x10;
    b
}

fn put(b: &mut Bundle, off: usize, bytes: &[u8]) {
    b.0[off..off + bytes.len()].copy_from_slice(bytes);
}

/// TENSOR3D bytes: addr, 3 strides, 3 counts.
fn t3(addr: u32, step: [i16; 3], num: [u16; 3]) -> Vec<u8> {
    let mut v = addr.to_le_bytes().to_vec();
    step.iter()
        .for_each(|s| v.extend_from_slice(&s.to_le_bytes()));
    num.iter()
        .for_each(|n| v.extend_from_slice(&n.to_le_bytes()));
    v
}

fn roundtrip(b: &Bundle, g: Gen) -> Inst {
    let i = decode(b, g).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(i.encode(), *b, "encode(decode(b)) != b on {g}");
    i
}

#[test]
fn header_and_events() {
    let mut b = bundle(0x21);
    put(&mut b, 2, &[0x03, 0x02]);
    put(&mut b, 4, &[0x85, 7, 0x15, 9]);
    put(&mut b, 8, &0x1234_5678u32.to_le_bytes());
    for g in Gen::ALL {
        let i = roundtrip(&b, g);
        let h = i.header();
        assert_eq!(h.opcode, Opcode::ACTIVATE);
        assert_eq!(
            (h.inst_word_len, h.debug_cmd, h.debug_hint),
            (0x10, DebugCmd::START, 2)
        );
        let e = i.events();
        assert_eq!(e.wait_mode, WaitMode::SEM_GE_REG);
        assert!(e.wait_is_reg());
        assert_eq!(
            (e.wait_idx, e.update_mode, e.update_idx, e.semaphore_value),
            (7, UpdateMode::SEM_ADD_IMM_COMPLETE, 9, 0x1234_5678)
        );
        assert_eq!(e.packed(), 0x1234_5678_0915_0785);
        assert_eq!(i.mnemonic(), "ACTIVATE");
        assert_eq!(i.format_name(), "Activate");
    }
    // Unknown enum values are kept.
    b.0[4] = 0x42;
    let i = roundtrip(&b, Gen::V3);
    assert_eq!(i.events().wait_mode.name(), None);
    assert_eq!(i.events().wait_mode.0, 0x42);
}

#[test]
fn matmul_per_generation() {
    let src = t3(0x0004_0100, [1, 1, 1], [64, 1, 1]);
    let dst = t3(0x0200_8000, [1, 1, 1], [64, 1, 1]);
    // v2 (SUNDA).
    let mut b = bundle(0x02);
    put(&mut b, 16, &src);
    put(&mut b, 48, &dst);
    put(
        &mut b,
        32,
        &[0x06, 0x02, 0x00, 0x01, 0x34, 0x12, 0x00, 0x80],
    );
    put(&mut b, 43, &[0x03, 0x0F, 0x0F, 0x10, 0x03]);
    match roundtrip(&b, Gen::V2) {
        Inst::Matmul(Matmul::V2(m)) => {
            assert_eq!(m.src.addr, Addr4(0x0004_0100));
            assert_eq!(m.src.num, [64, 1, 1]);
            assert_eq!(
                (m.in_dtype, m.fp32_mode, m.perf_opt, m.quant_offset),
                (Dtype::BF16, PeFp32Mode::HIGH, 1, 0x1234)
            );
            assert_eq!((m.num_active_rows, m.num_active_cols), (0, 0x80));
            assert!(
                m.psum_accumulate_flags.begin()
                    && m.psum_accumulate_flags.end()
                    && !m.psum_accumulate_flags.accumulate()
            );
            assert_eq!(
                (m.row_grp, m.col_grp, m.xbus_sel, m.psum_zero_region),
                (0x0F, 0x0F, 0x10, ZeroRegion::SIZE16384)
            );
            assert!(m.dst.addr.is_psum(Gen::V2));
            assert!(m.reserved.iter().all(|&x| x == 0));
        }
        other => panic!("{other:?}"),
    }
    // v3 (CAYMAN): quant_offset and xbus_sel become reserved; transpose_mode and out_dtype appear.
    let i = roundtrip(&b, Gen::V3);
    assert_eq!(i.nonzero_reserved(), vec![36..38, 46..47]);
    let mut b3 = b;
    put(&mut b3, 36, &[0, 0]);
    b3.0[46] = 0;
    b3.0[34] = 1;
    b3.0[40] = 0x0A;
    match roundtrip(&b3, Gen::V3) {
        Inst::Matmul(Matmul::V3(m)) => {
            assert_eq!(
                (m.transpose_mode, m.out_dtype, m.num_active_cols),
                (1, Dtype::FP32, 0x80)
            );
            assert_eq!(m.psum_zero_region, ZeroRegion::SIZE16384);
        }
        other => panic!("{other:?}"),
    }
    assert!(decode(&b3, Gen::V3).unwrap().nonzero_reserved().is_empty());
    // v4 (MARIANA): flags at +42.
    let mut b4 = b3;
    b4.0[42] = 0b0011_0101;
    match roundtrip(&b4, Gen::V4) {
        Inst::Matmul(Matmul::V4(m)) => {
            assert_eq!((m.flags.scalar_mode(), m.flags.seed_mode()), (1, 1));
            assert!(m.flags.accumulate_flag() && m.flags.xpose());
            assert_eq!(m.flags.into_bits() & MatmulFlags::RESERVED_MASK, 0);
            assert!(!m.src.is_indirect());
            assert_eq!(m.out_dtype, Dtype::FP32);
        }
        other => panic!("{other:?}"),
    }
    // v5 (MAVERICK): the MX reorg.
    let mut b5 = bundle(0x02);
    put(&mut b5, 16, &src);
    put(&mut b5, 48, &dst);
    put(
        &mut b5,
        32,
        &[0x0E, 0x00, 0x06, 0x80, 0x00, 0x08, 0x01, 0x10, 0x04],
    );
    match roundtrip(&b5, Gen::V5) {
        Inst::Matmul(Matmul::V5(m)) => {
            assert_eq!((m.in_dtype, m.out_dtype), (Dtype::FP8_EXP4, Dtype::BF16));
            assert_eq!(
                (
                    m.num_active_rows,
                    m.num_active_cols,
                    m.tile_size,
                    m.tile_sel
                ),
                (0x80, 0, 8, 1)
            );
            assert!(m.flags.accumulate_flag());
            assert_eq!(m.perf_mode, MxPerfMode::OCT_ROW);
        }
        other => panic!("{other:?}"),
    }
    // v5 has no psum_accumulate_flags: byte 43 is reserved there.
    b5.0[43] = 1;
    assert_eq!(
        decode(&b5, Gen::V5).unwrap().nonzero_reserved(),
        vec![43..44]
    );
}

#[test]
fn ldweights_per_generation() {
    let mut b = bundle(0x01);
    put(&mut b, 16, &t3(0x0000_0200, [1, 1, 1], [128, 1, 1]));
    b.0[12] = 2;
    put(&mut b, 32, &[0x0A, 0x02, 0x01, 0x00]);
    put(&mut b, 38, &[0x00, 0x40]);
    put(&mut b, 44, &[0x01, 0x0F]);
    b.0[47] = 0b0010_1011;
    match roundtrip(&b, Gen::V4) {
        Inst::LdWeights(LdWeights::V4(w)) => {
            assert_eq!(w.bg_xpose_mode, 2);
            assert_eq!(
                (w.in_dtype, w.fp32_mode, w.transpose_mode),
                (Dtype::FP32, PeFp32Mode::HIGH, 1)
            );
            assert_eq!(
                (w.num_active_rows, w.num_active_cols, w.row_grp, w.col_grp),
                (0, 0x40, 1, 0x0F)
            );
            assert!(w.flags.xpose());
            assert_eq!((w.flags.scalar(), w.flags.seed()), (1, 1));
            assert!(w.flags.load_order());
        }
        other => panic!("{other:?}"),
    }
    // v3: byte 12 is reserved (conflict P2), flags at +47 too.
    assert_eq!(
        decode(&b, Gen::V3).unwrap().nonzero_reserved(),
        vec![12..13, 47..48]
    );
    // v5 layout.
    let mut b5 = bundle(0x01);
    put(
        &mut b5,
        32,
        &[0x06, 0x03, 0x80, 0x00, 0x07, 0x02, 0x01, 0x03],
    );
    match roundtrip(&b5, Gen::V5) {
        Inst::LdWeights(LdWeights::V5(w)) => {
            assert_eq!(
                (w.in_dtype, w.fp32_mode),
                (Dtype::BF16, PeFp32Mode::LOW_HIGH)
            );
            assert_eq!(
                (
                    w.num_active_rows,
                    w.num_active_cols,
                    w.tile_size,
                    w.tile_sel
                ),
                (0x80, 0, 7, 2)
            );
            assert!(w.flags.xpose());
            assert_eq!(w.perf_mode, MxPerfMode::QUAD_ROW_TILED);
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn activate_fields() {
    let mut b = bundle(0x21);
    put(&mut b, 12, &[0x01, 0x00, 0x03, 0x01]);
    put(&mut b, 16, &t3(0x0000_0040, [1, 1, 1], [32, 2, 1]));
    put(&mut b, 32, &[0xA6, 0x06, 0x20, 0x05]);
    put(&mut b, 36, &1.5f32.to_bits().to_le_bytes());
    put(&mut b, 40, &0x0000_0300u32.to_le_bytes());
    put(&mut b, 44, &7u32.to_le_bytes());
    put(&mut b, 48, &t3(0x0000_0080, [1, 1, 1], [32, 2, 1]));
    for g in Gen::ALL {
        match roundtrip(&b, g) {
            Inst::Activate(a) => {
                assert_eq!(
                    (a.imm_src, a.scale_src, a.accumulator_cmd, a.bias_src_n),
                    (
                        ImmSrc::POINTER,
                        ImmSrc::INSTRUCTION,
                        AccumCmd::ZERO_ACCUMULATE,
                        ImmSrcN::INSTRUCTION
                    )
                );
                assert_eq!(
                    (a.in_bias_dtypes.lo(), a.in_bias_dtypes.hi()),
                    (Dtype::BF16, Dtype::FP32)
                );
                assert_eq!(
                    (a.out_dtype, a.num_active_partitions, a.activation_func),
                    (Dtype::BF16, 32, ActFunc::SIGMOID)
                );
                assert_eq!(a.scale_value.to_f32(), 1.5);
                assert_eq!((a.bias, a.imm), (0x300, 7));
                assert_eq!(a.src.num, [32, 2, 1]);
                assert_eq!(a.dst.addr, Addr4(0x80));
            }
            other => panic!("{other:?}"),
        }
    }
}

#[test]
fn tensor_tensor_header_slot_order() {
    let mut b = bundle(0x41);
    put(&mut b, 12, &[0x6A, 0x06, 0x04, 0x80]);
    put(&mut b, 16, &t3(0x100, [1, 1, 1], [8, 1, 1]));
    put(&mut b, 32, &t3(0x200, [1, 1, 1], [8, 1, 1]));
    put(&mut b, 48, &t3(0x0200_0000, [1, 1, 1], [8, 1, 1]));
    for g in Gen::ALL {
        match roundtrip(&b, g) {
            Inst::TensorTensor(t) => {
                assert_eq!(
                    (t.in_dtypes.lo(), t.in_dtypes.hi(), t.out_dtype),
                    (Dtype::FP32, Dtype::BF16, Dtype::BF16)
                );
                assert_eq!((t.op, t.num_active_partitions), (AluOp::ADD, 128));
                assert_eq!(
                    (t.src0.addr.0, t.src1.addr.0, t.dst.addr.0),
                    (0x100, 0x200, 0x0200_0000)
                );
            }
            other => panic!("{other:?}"),
        }
    }
    // The predicated and v2 BF16 forms share the layout.
    for (op, g) in [(0x72u8, Gen::V3), (0x99, Gen::V4), (0x8A, Gen::V2)] {
        b.0[0] = op;
        assert_eq!(roundtrip(&b, g).format_name(), "TensorTensor");
    }
    b.0[0] = 0x8A;
    assert!(decode(&b, Gen::V3).is_err());
}

#[test]
fn tensor_scalar_fields() {
    let mut b = bundle(0x43);
    b.0[12] = 0;
    put(&mut b, 16, &t3(0x100, [1, 1, 1], [16, 1, 1]));
    put(
        &mut b,
        32,
        &[0x0A, 0x06, 0x40, 0x00, 0x06, 0x04, 0x02, 0x01],
    );
    put(&mut b, 40, &2.0f32.to_bits().to_le_bytes());
    put(&mut b, 44, &0x0000_1000u32.to_le_bytes());
    put(&mut b, 48, &t3(0x200, [1, 1, 1], [16, 1, 1]));
    match roundtrip(&b, Gen::V3) {
        Inst::TensorScalar(t) => {
            assert_eq!(
                (
                    t.accumulator_cmd,
                    t.in_dtype,
                    t.out_dtype,
                    t.num_active_partitions
                ),
                (AccumCmd::IDLE, Dtype::FP32, Dtype::BF16, 64)
            );
            assert_eq!(
                (t.imm0_src, t.op0, t.op1, t.imm1_src),
                (
                    ImmSrc::INSTRUCTION,
                    AluOp::MULT,
                    AluOp::ADD,
                    ImmSrc::POINTER
                )
            );
            assert!(!t.reverse.reverse_op0() && t.reverse.reverse_op1());
            assert_eq!((F32Bits(t.imm0).to_f32(), t.imm1), (2.0, 0x1000));
        }
        other => panic!("{other:?}"),
    }
    // +13..+15 must be zero (reserved).
    b.0[14] = 9;
    assert_eq!(
        decode(&b, Gen::V3).unwrap().nonzero_reserved(),
        vec![14..15]
    );
    // The cache-reduce opcode shares the format.
    b.0[0] = 0x9A;
    assert_eq!(
        roundtrip(&b, Gen::V2).mnemonic(),
        "TENSOR_SCALAR_CACHE_REDUCE"
    );
}

fn mxmem(data: u32, scale: u32, k: u16, sign: u8, part: u8) -> Vec<u8> {
    let mut v = data.to_le_bytes().to_vec();
    v.extend_from_slice(&scale.to_le_bytes());
    v.extend_from_slice(&k.to_le_bytes());
    v.extend_from_slice(&[sign, part, 0, 0, 0, 0]);
    v
}

#[test]
fn mx_pair() {
    let mut lw = bundle(0x09);
    put(
        &mut lw,
        16,
        &mxmem(0x0000_1000, 0x0080_0000, 512, 0x01, 0x04),
    );
    lw.0[32] = 0x09;
    put(&mut lw, 38, &[0x80, 0x80]);
    put(&mut lw, 44, &[0x0F, 0x0F]);
    assert!(decode(&lw, Gen::V3).is_err());
    for g in [Gen::V4, Gen::V5] {
        match roundtrip(&lw, g) {
            Inst::LdWeightsMx(w) => {
                assert_eq!(
                    (
                        w.src.data,
                        w.src.scale,
                        w.src.k,
                        w.src.step_sign,
                        w.src.scale_partition
                    ),
                    (Addr4(0x1000), Addr4(0x0080_0000), 512, 1, 4)
                );
                assert_eq!(
                    (
                        w.in_dtype,
                        w.num_active_rows,
                        w.num_active_cols,
                        w.row_grp,
                        w.col_grp
                    ),
                    (Dtype::UINT32, 0x80, 0x80, 0x0F, 0x0F)
                );
            }
            other => panic!("{other:?}"),
        }
    }
    // The descriptor's own reserved tail (+0xC..+0x10) is reported.
    lw.0[16 + 13] = 1;
    assert_eq!(
        decode(&lw, Gen::V4).unwrap().nonzero_reserved(),
        vec![29..30]
    );

    let mut mm = bundle(0x0A);
    put(
        &mut mm,
        16,
        &mxmem(0x0000_2000, 0x0100_0000, 128, 0xFF, 0x08),
    );
    mm.0[32] = 0x09;
    put(&mut mm, 38, &[0x40, 0x20, 0x06]);
    put(&mut mm, 43, &[0x06, 0x0F, 0x0F, 0x00, 0x01]);
    put(&mut mm, 48, &t3(0x0200_0000, [1, 1, 1], [32, 1, 1]));
    match roundtrip(&mm, Gen::V4) {
        Inst::MatmulMx(m) => {
            assert_eq!(
                (m.src.k, m.src.step_sign, m.src.scale_partition),
                (128, 0xFF, 8)
            );
            assert_eq!(
                (m.num_active_rows, m.num_active_cols, m.out_dtype),
                (0x40, 0x20, Dtype::BF16)
            );
            assert!(m.psum_accumulate_flags.end() && m.psum_accumulate_flags.accumulate());
            assert_eq!(
                (m.row_grp, m.col_grp, m.psum_zero_region),
                (0x0F, 0x0F, ZeroRegion::SIZE4096)
            );
            assert!(m.dst.0.addr.is_psum(Gen::V4));
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn quantize_mx() {
    let mut b = bundle(0xE3);
    b.0[1] = 0x11;
    put(&mut b, 16, &t3(0x0000_0400, [1, 1, 1], [64, 1, 1]));
    put(&mut b, 33, &[128, 0x06, 0x0E]);
    put(&mut b, 48, &mxmem(0x0000_8000, 0x0000_9000, 64, 1, 0));
    match roundtrip(&b, Gen::V4) {
        Inst::QuantizeMx(q) => {
            assert_eq!(q.header.inst_word_len, 0x11);
            assert_eq!(
                (q.num_active_partitions, q.in_dtype, q.out_dtype),
                (128, Dtype::BF16, Dtype::FP8_EXP4)
            );
            assert_eq!(q.src.0.num[0], 64);
            assert_eq!(
                (q.dst.data, q.dst.scale, q.dst.k),
                (Addr4(0x8000), Addr4(0x9000), 64)
            );
        }
        other => panic!("{other:?}"),
    }
    assert!(decode(&b, Gen::V3).is_err());
}

#[test]
fn dma_direct2d() {
    let mut b = bundle(0xD4);
    put(&mut b, 12, &[0x05, 3, 1, 2]);
    put(&mut b, 16, &0x2000_0000_0000_4000u64.to_le_bytes());
    put(&mut b, 24, &[0x10, 0, 0, 0, 0xF0, 0xFF, 0xFF, 0xFF]);
    put(&mut b, 32, &[4, 0, 8, 0, 0, 0, 0xC5, 0x00]);
    put(&mut b, 40, &0x1000_0000_0000_0007u64.to_le_bytes());
    put(&mut b, 48, &[1, 0, 0, 0, 2, 0, 0, 0]);
    put(&mut b, 56, &[16, 0, 1, 0, 0x80, 0, 0x06, 0x0A]);
    for g in Gen::ALL {
        match roundtrip(&b, g) {
            Inst::DmaDirect2d(d) => {
                assert_eq!(
                    (d.dma_configs, d.semaphore, d.sem_increment, d.dge_op),
                    (5, 3, 1, DgeOpcode::TRANSPOSE)
                );
                assert_eq!(d.src.value(), 0x4000);
                assert_eq!(d.src.header_marker(), Addr8Marker::ADDR_TBL_SHAPE_IMM);
                assert_eq!(d.src.pseudo_marker(), Addr8PseudoMarker::DGE_IMM);
                assert_eq!(
                    (d.src_step, d.src_num, d.src_elem_size),
                    ([16, -16], [4, 8], 0)
                );
                assert_eq!(
                    (
                        d.src_bound_reg.bc_reg(),
                        d.src_bound_reg.disable_oob(),
                        d.src_bound_reg.enabled()
                    ),
                    (5, true, true)
                );
                assert_eq!(d.dst_bound_reg.into_bits(), 0);
                assert!(d.dst.is_var_id());
                assert_eq!(
                    (d.dst_step, d.dst_num, d.dst_elem_size),
                    ([1, 2], [16, 1], 0x80)
                );
                assert_eq!((d.in_dtype, d.out_dtype), (Dtype::BF16, Dtype::FP32));
                assert_eq!(d.header.opcode, Opcode::PSEUDO_DMA_DIRECT2D);
            }
            other => panic!("{other:?}"),
        }
    }
    assert_eq!(
        decode(&b, Gen::V2).unwrap().mnemonic(),
        "PSEUDO_DMA_DIRECT2D"
    );
}

#[test]
fn raw_form_keeps_everything() {
    let mut b = bundle(0x61);
    for (i, x) in b.0.iter_mut().enumerate().skip(2) {
        *x = i as u8 ^ 0x5A;
    }
    match roundtrip(&b, Gen::V3) {
        Inst::Raw(r) => {
            assert_eq!(r.header().opcode, Opcode::BATCH_NORM_STATS2);
            assert_eq!(r.events().wait_idx, 5 ^ 0x5A);
            assert_eq!(r.body(), &b.0[12..]);
        }
        other => panic!("{other:?}"),
    }
    // TensorDequantize: enum value on v2 but no struct there.
    let mut d = bundle(0x7B);
    d.0[35] = 2;
    assert!(matches!(roundtrip(&d, Gen::V2), Inst::Raw(_)));
    match roundtrip(&d, Gen::V3) {
        Inst::TensorDequantize(t) => assert_eq!(t.dequant_fmt, DequantFmt::INT4_TO_E5M2),
        other => panic!("{other:?}"),
    }
}

#[test]
fn extended_sub_opcodes() {
    let mut b = bundle(0xF0);
    put(&mut b, 12, &[2, 0x11, 0x66, 0x06, 0x06]);
    match roundtrip(&b, Gen::V3) {
        Inst::ExtendedTta(t) => {
            assert_eq!(
                (t.ext_opcode, t.completion_info, t.op),
                (ExtOpcode::TENSOR_TENSOR_ARITH, 0x11, AluOp::MULT)
            );
            assert_eq!(t.in_dtypes, DtypePair::new(Dtype::BF16, Dtype::BF16));
        }
        other => panic!("{other:?}"),
    }
    b.0[12] = 8;
    assert!(matches!(roundtrip(&b, Gen::V4), Inst::RdmaDescGen(_)));
    b.0[12] = 1;
    match roundtrip(&b, Gen::V4) {
        Inst::Extended(e) => assert_eq!(e.ext_opcode, ExtOpcode::COPY),
        other => panic!("{other:?}"),
    }
}

#[test]
fn field_visitor_and_metadata() {
    let mut b = bundle(0x02);
    b.0[32] = 0x06;
    b.0[47] = 2;
    let i = decode(&b, Gen::V3).unwrap();
    let mut names = Vec::new();
    i.visit_fields(|m, v| {
        names.push(m.name);
        if m.name == "in_dtype" {
            assert_eq!((m.offset, m.width()), (32, 1));
            assert_eq!(m.prov, "G generations/arch-isa-header-diff.md");
            assert!(matches!(v, FieldValue::Enum { raw: 6, def } if def.name == "DTYPE"));
        }
        if m.name == "psum_zero_region" {
            assert!(matches!(v, FieldValue::Enum { raw: 2, .. }));
        }
    });
    assert_eq!(
        &names[..9],
        &[
            "opcode",
            "inst_word_len",
            "debug_cmd",
            "debug_hint",
            "wait_mode",
            "wait_idx",
            "update_mode",
            "update_idx",
            "semaphore_value"
        ]
    );
    assert!(names.contains(&"transpose_mode") && !names.contains(&"quant_offset"));
    assert_eq!(i.meta().rust_name, "MatmulV3");
    assert_eq!(i.meta().reserved, &[(12, 16), (36, 38), (41, 43), (46, 47)]);
}

#[test]
fn build_field_by_field() {
    let mut m = MatmulV3::default();
    assert_eq!(m.header, Header::new(Opcode::MATMUL));
    m.src = Tensor::new(Addr4::imm(0x0004_0000), [1, 1, 1], [128, 1, 1]);
    m.in_dtype = Dtype::BF16;
    m.out_dtype = Dtype::FP32;
    m.num_active_rows = 128;
    m.num_active_cols = 128;
    m.psum_accumulate_flags = PsumAccumulateFlags::new().with_begin(true).with_end(true);
    m.dst = Tensor::new(Addr4::imm(0x0200_0000), [1, 1, 1], [128, 1, 1]);
    let inst = Inst::from(m);
    let b = inst.encode();
    assert_eq!(
        (b.0[0], b.0[1], b.0[32], b.0[40], b.0[43]),
        (0x02, 0x10, 0x06, 0x0A, 0x03)
    );
    assert_eq!(decode(&b, Gen::V3).unwrap(), inst);
    assert!(inst.nonzero_reserved().is_empty());
    // A shared format takes any of its opcodes.
    let mut t = TensorReduceV4::default();
    assert_eq!(t.header.opcode, Opcode::TENSOR_REDUCE_ARITH_OP);
    t.header.opcode = Opcode::CAST;
    t.op = AluOp::BYPASS;
    let i = Inst::from(t);
    assert_eq!(i.mnemonic(), "CAST");
    assert_eq!(decode(&i.encode(), Gen::V5).unwrap(), i);
    // Sub-selected formats default to their selector.
    assert_eq!(
        ExtendedTta::default().ext_opcode,
        ExtOpcode::TENSOR_TENSOR_ARITH
    );
    let n = decode(&Inst::from(Notify::default()).encode(), Gen::V2).unwrap();
    assert_eq!(n.format_name(), "Notify");
}
