//! Crafted streams per family: what each lifts to, the multi-bundle fusions and the
//! attributes they keep.

use super::*;

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
            NumFormat::Bfloat16,
            0,
            64,
            &[(128, 4), (1, 128)],
            0
        )
    );
    assert_eq!(i.args[1].offset, 0x800);
    assert_eq!(
        i.outs[0],
        ap(MemoryType::Sb, NumFormat::Float32, 64, 64, &[(1, 512)], 0)
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
            NumFormat::Float32,
            NumFormat::Bfloat16
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
        ap(MemoryType::Sb, NumFormat::Float32, 20, 8, &[], 0x10)
    );
    assert_eq!(i[1].attrs[ATTR_ORIGIN]["bundles"], 2);
    assert!(i[2].attrs.get(ATTR_TSC_MODE).is_none());
    assert_eq!(i[3].attrs[ATTR_TSC_MODE], "Cumulative");
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
        ap(
            MemoryType::Sb,
            NumFormat::Bfloat16,
            0,
            128,
            &[(1, 256)],
            0x200
        )
    );
    assert_eq!(
        m.args[1],
        ap(
            MemoryType::Sb,
            NumFormat::Bfloat16,
            0,
            128,
            &[(1, 64)],
            0x100
        )
    );
    assert_eq!(
        m.outs[0],
        ap(
            MemoryType::Psum,
            NumFormat::Float32,
            0,
            64,
            &[(1, 256)],
            512
        )
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
        (InstClass::Matmult, NumFormat::Float32, NumFormat::Float32)
    );
    assert!(m.attrs.get(ATTR_FP32_PASSES).is_none());
    assert_eq!(m.attrs[ATTR_ORIGIN]["bundles"], 4);
    // The fp32r signature (FP32 tag + fp32_mode High) in one pass.
    let s = lift(
        &[ldw_v3(128, 64, W::FP32, 2), mm_v3(128, 64, W::FP32, 2)],
        Engine::Pe,
        Gen::V3,
    );
    assert_eq!(insts(&s)[0].args[0].dtype, NumFormat::Float32r);
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
    let dts: Vec<NumFormat> = m.args.iter().map(|a| a.dtype).collect();
    assert_eq!(
        dts,
        [
            NumFormat::Float4E2m1fnX4,
            NumFormat::Float8E4m3fnX4,
            NumFormat::Float8E8m0fnu,
            NumFormat::Float8E8m0fnu
        ]
    );
    assert_eq!(m.args[0].pattern, vec![Dim { step: 1, num: 64 }]);
    assert_eq!((m.args[2].start_partition, m.args[2].partitions), (112, 16));
    assert_eq!(m.outs[0].dtype, NumFormat::Bfloat16);
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
        ap(MemoryType::Sb, NumFormat::Float32, 40, 32, &[], 8)
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
    i.args[0].dtype = NumFormat::Float16;
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
    assert_eq!(i[4].args[0].dtype, NumFormat::Int8);
    assert_eq!(
        (i[5].args[0].dtype, i[5].outs[0].dtype),
        (NumFormat::Bfloat16, NumFormat::Float32)
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
