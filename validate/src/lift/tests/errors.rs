//! What is not lifted or not lowered: the `Generic` fallback and its report, the located L1
//! diagnostics, and the typed lift and lower errors with their messages.

use super::*;

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

/// A bfloat16 PE transpose of 8 partitions into PSUM.
fn transpose() -> Instruction {
    Instruction::new(InstClass::Transpose, EngineType::Pe)
        .with_args(vec![ap(
            MemoryType::Sb,
            NumFormat::Bfloat16,
            0,
            8,
            &[(1, 4)],
            0,
        )])
        .with_outs(vec![ap(
            MemoryType::Psum,
            NumFormat::Float32,
            0,
            8,
            &[(1, 4)],
            0,
        )])
}

#[test]
fn lowering_rejects_what_does_not_encode() {
    let gen = Gen::V3;
    let mut i = Instruction::new(InstClass::TensorTensor, EngineType::Dve)
        .with_args(vec![
            ap(MemoryType::Sb, NumFormat::Float32, 0, 8, &[(1, 4)], 0),
            ap(MemoryType::Sb, NumFormat::Float32, 0, 16, &[(1, 4)], 0),
        ])
        .with_outs(vec![ap(
            MemoryType::Sb,
            NumFormat::Float32,
            0,
            8,
            &[(1, 4)],
            0,
        )]);
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
    let t = transpose();
    assert!(lower_instruction(&t, Gen::V2)
        .unwrap_err()
        .reason()
        .contains("transpose"));
    assert!(lower_instruction(&t, Gen::V3).is_ok());
}

/// A float32 TensorTensor over 8 partitions whose second input has `parts` partitions.
fn tt(parts: u64) -> Instruction {
    Instruction::new(InstClass::TensorTensor, EngineType::Dve)
        .with_args(vec![
            ap(MemoryType::Sb, NumFormat::Float32, 0, 8, &[(1, 4)], 0),
            ap(MemoryType::Sb, NumFormat::Float32, 0, parts, &[(1, 4)], 0),
        ])
        .with_outs(vec![ap(
            MemoryType::Sb,
            NumFormat::Float32,
            0,
            8,
            &[(1, 4)],
            0,
        )])
}

#[test]
fn lower_errors_say_which_step_failed() {
    let gen = Gen::V3;
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
        format!("no lifting rule for {}", crate::lift::lower::mnemonic(0x02))
    );
    let e = LiftError::NotLiftable {
        opcodes: vec![0x01, 0x02],
        class: InstClass::Matmult,
        reason: Box::new(LiftFault::Unbound),
    };
    assert_eq!(
        e.to_string(),
        format!(
            "{} as Matmult: an operand slot is not bound by any bundle",
            crate::lift::lower::mnemonics(&[0x01, 0x02])
        )
    );
    assert_eq!(e.kind(), "not liftable");
}

#[test]
fn lower_faults_carry_their_data_and_read_as_before() {
    let gen = Gen::V3;
    let field = tpbsim_isa::formats::loc::tensor_tensor::NUM_ACTIVE_PARTITIONS.name;
    let e = lower_instruction(&tt(16), gen).unwrap_err();
    assert_eq!(
        e,
        LowerError::Operands {
            class: InstClass::TensorTensor,
            gen,
            reason: OperandError::Slot {
                slot: Slot::Arg(1),
                fault: SlotFault::PartsDisagree {
                    field,
                    first: 8,
                    second: 16
                }
            }
        }
    );
    assert_eq!(
        e.to_string(),
        format!(
            "TensorTensor on {gen}: Arg(1): operands disagree on `{field}`: 8 vs 16 partitions"
        )
    );
    let e = lower_instruction(&tt(300), gen).unwrap_err();
    assert_eq!(
        e.reason(),
        format!("Arg(1): operands disagree on `{field}`: 8 vs 300 partitions")
    );

    let mut i = tt(8);
    i.attrs.insert("op".into(), "NOT_AN_OP".into());
    let e = lower_instruction(&i, gen).unwrap_err();
    assert_eq!(
        e,
        LowerError::Opcode {
            class: InstClass::TensorTensor,
            gen,
            reason: PlanError::Attribute(AttrError::Value {
                key: "op",
                error: ValueError::NotEnumValue {
                    name: "NOT_AN_OP".into(),
                    enumeration: "ALU_OP"
                }
            })
        }
    );
    assert_eq!(
        e.to_string(),
        format!("TensorTensor on {gen}: attrs.op: `NOT_AN_OP` is not a ALU_OP value")
    );
    i.attrs.insert("op".into(), 300.into());
    assert_eq!(
        lower_instruction(&i, gen).unwrap_err().reason(),
        "attrs.op: 300 does not fit 1 byte(s)"
    );

    let mut i = tt(8);
    i.attrs.insert(ATTR_WIRE.into(), Value::from("x"));
    let e = lower_instruction(&i, gen).unwrap_err();
    assert_eq!(
        e,
        LowerError::Attribute {
            class: InstClass::TensorTensor,
            gen,
            reason: AttrError::NotPerBundle {
                key: ATTR_WIRE,
                found: Value::from("x")
            }
        }
    );
    assert_eq!(
        e.to_string(),
        format!("TensorTensor on {gen}: attrs.wire: expected an array (one entry per bundle), found \"x\"")
    );
    let mut i = tt(8);
    i.attrs.insert(
        ATTR_WIRE.into(),
        serde_json::json!([{ "no_such_field": 1 }]),
    );
    assert_eq!(
        lower_instruction(&i, gen).unwrap_err().reason(),
        format!(
            "attrs.wire[0]: the {} layout has no field `no_such_field`",
            fields::layout_of(&canonical(0x41), gen).unwrap().rust_name
        )
    );

    let g = Instruction::new(InstClass::Generic, EngineType::Dve);
    let e = lower_instruction(&g, gen).unwrap_err();
    assert_eq!(
        e,
        LowerError::GenericBundle {
            class: InstClass::Generic,
            gen,
            reason: GenericError::Missing
        }
    );
    assert_eq!(
        e.to_string(),
        format!("Generic on {gen}: a Generic instruction keeps its bundle in attrs.bundle")
    );
    let mut g = g;
    g.attrs.insert(ATTR_BUNDLE.into(), Value::from("00"));
    assert_eq!(
        lower_instruction(&g, gen).unwrap_err().reason(),
        "attrs.bundle: expected 128 hex digits, found \"00\""
    );

    let t = transpose();
    let e = lower_instruction(&t, Gen::V2).unwrap_err();
    assert_eq!(
        e,
        LowerError::Operands {
            class: InstClass::Transpose,
            gen: Gen::V2,
            reason: OperandError::TransposeV2
        }
    );
    assert_eq!(
        e.to_string(),
        format!(
            "Transpose on {}: no transpose marker is known for the v2 matmul layout",
            Gen::V2
        )
    );
    let mut t2 = t.clone();
    t2.args.push(t.args[0].clone());
    t2.args.push(t.args[0].clone());
    assert_eq!(
        lower_instruction(&t2, gen).unwrap_err().reason(),
        "Transpose takes 1 (weights already loaded) or 2 inputs, found 3"
    );
}
