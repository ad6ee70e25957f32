//! Instructions given by type: the same bundles as their text, values kept to their field,
//! floats rounded once.

use super::*;

use FieldArg::{DtypePair, Float, Int, Name, Pattern, Record};

fn text(line: &str) -> Bundle {
    match parse_line(line, Gen::V3) {
        Ok(Some(b)) => b,
        other => panic!("{line}: {other:?}"),
    }
}

fn typed(mnemonic: &str, fields: &[(&str, FieldArg)]) -> Result<Bundle, EncodeError> {
    let fields: Vec<(String, FieldArg)> = fields
        .iter()
        .map(|(k, a)| (k.to_string(), a.clone()))
        .collect();
    encode_fields(mnemonic, &fields, Gen::V3)
}

fn pat(addr: i128, step: [i128; 3], num: [i128; 3]) -> FieldArg {
    Pattern {
        addr,
        step: step.to_vec(),
        num: num.to_vec(),
    }
}

fn name(s: &str) -> FieldArg {
    Name(s.to_string())
}

/// The typed fields of TENSOR_SCALAR_ARITH_OP with immediates `imm0`, `imm1`, and its text.
fn tensor_scalar(
    imm0: (FieldArg, &str),
    imm1: (FieldArg, &str),
) -> (Vec<(&'static str, FieldArg)>, String) {
    let fields = vec![
        ("wait_mode", name("SEM_GE_IMM")),
        ("wait_idx", Int(3)),
        ("semaphore_value", Int(2)),
        ("update_mode", name("SEM_INC_COMPLETE")),
        ("update_idx", Int(4)),
        ("src", pat(0x40, [1, 1, 1], [512, 1, 1])),
        ("dst", pat(0x1000, [-1, 0, 2], [16, 2, 3])),
        ("in_dtype", name("FP32")),
        ("out_dtype", name("bf16")),
        ("num_active_partitions", Int(128)),
        ("op0", name("MULT")),
        ("imm0", imm0.0),
        ("op1", Int(0)),
        ("imm1", imm1.0),
    ];
    let line = format!(
        "TENSOR_SCALAR_ARITH_OP wait_mode=SEM_GE_IMM wait_idx=3 semaphore_value=2 \
         update_mode=SEM_INC_COMPLETE update_idx=4 src=[0x40 step=1,1,1 num=512,1,1] \
         dst=[0x1000 step=-1,0,2 num=16,2,3] in_dtype=FP32 out_dtype=bf16 \
         num_active_partitions=128 op0=MULT imm0={} op1=0 imm1={}",
        imm0.1, imm1.1
    );
    (fields, line)
}

#[test]
fn typed_fields_encode_as_their_text() {
    let floats: Vec<(FieldArg, &str)> = vec![
        (Float(3.0), "3.0"),
        (Float(1e-3), "1e-3"),
        (Float(-0.5), "-0.5"),
        (Float(-0.0), "-0.0"),
        (Float(f64::INFINITY), "inf"),
        (Float(f64::NEG_INFINITY), "-inf"),
        (Float(3.4028234663852886e38), "3.4028235e38"),
        (Float(1e-45), "1e-45"),
        (Int(7), "7"),
        (FieldArg::F32Bits(0x7FC0_0001), "0x7fc00001"),
    ];
    for pair in floats.windows(2) {
        let (fields, line) = tensor_scalar(pair[0].clone(), pair[1].clone());
        let want = text(&line);
        assert_eq!(typed("TENSOR_SCALAR_ARITH_OP", &fields), Ok(want), "{line}");
    }
    // Dtype pairs (typed, or by name), an F32 field from a float and from an integer, the
    // float u32 `bias`, enumerations by name in any case.
    let act = |pair: FieldArg, scale: FieldArg, bias: FieldArg| {
        typed(
            "ACTIVATE",
            &[
                ("accumulator_cmd", name("ZERO_ACCUMULATE")),
                ("bias_src_n", name("instruction")),
                ("src", pat(0, [1, 1, 1], [512, 1, 1])),
                ("dst", pat(0x1000, [1, 1, 1], [512, 1, 1])),
                ("in_bias_dtypes", pair),
                ("out_dtype", name("FP32")),
                ("num_active_partitions", Int(128)),
                ("activation_func", name("EXP")),
                ("scale_value", scale),
                ("bias", bias),
            ],
        )
    };
    let want = text(
        "ACTIVATE accumulator_cmd=ZERO_ACCUMULATE bias_src_n=instruction \
         src=[0x0 step=1,1,1 num=512,1,1] dst=[0x1000 step=1,1,1 num=512,1,1] \
         in_bias_dtypes=FP32|BF16 out_dtype=FP32 num_active_partitions=128 \
         activation_func=EXP scale_value=2 bias=-1.0",
    );
    let pair = DtypePair(Box::new(name("FP32")), Box::new(name("BF16")));
    assert_eq!(act(pair.clone(), Float(2.0), Float(-1.0)), Ok(want));
    assert_eq!(act(name("FP32|BF16"), Int(2), Float(-1.0)), Ok(want));
    // Bitfields by sub-field, by their text, by code; a string field.
    let mm = |flags: FieldArg| {
        typed(
            "MATMUL",
            &[
                ("src", pat(0x400, [1, 1, 1], [128, 1, 1])),
                ("dst", pat(0x200000, [1, 1, 1], [128, 1, 1])),
                ("in_dtype", name("BF16")),
                ("out_dtype", name("FP32")),
                ("num_active_rows", Int(128)),
                ("row_grp", Int(15)),
                ("psum_accumulate_flags", flags),
            ],
        )
    };
    let want = text(
        "MATMUL src=[0x400 step=1,1,1 num=128,1,1] dst=[0x200000 step=1,1,1 num=128,1,1] \
         in_dtype=BF16 out_dtype=FP32 num_active_rows=128 row_grp=15 \
         psum_accumulate_flags={begin=1,end=1}",
    );
    let parts = Record(vec![("begin".into(), Int(1)), ("end".into(), Int(1))]);
    assert_eq!(mm(parts), Ok(want));
    assert_eq!(mm(name("{begin=1 end=1}")), Ok(want));
    assert_eq!(mm(Int(i128::from(want.0[43]))), Ok(want));
    let want = text(r#"PSEUDO_DMA_TRIGGER queue_name="q_in" block_id=3"#);
    let got = typed(
        "pseudo_dma_trigger",
        &[("queue_name", name("q_in")), ("block_id", Int(3))],
    );
    assert_eq!(got, Ok(want));
}

#[test]
fn typed_values_stay_in_their_field() {
    let (fields, _) = tensor_scalar((Float(3.0), ""), (Float(1.0), ""));
    let with = |k: &'static str, a: FieldArg| -> Vec<(&'static str, FieldArg)> {
        let mut f: Vec<(&'static str, FieldArg)> =
            fields.iter().filter(|(n, _)| *n != k).cloned().collect();
        f.push((k, a));
        f
    };
    for bad in [
        "MULT;",
        "MULT imm1=9.0",
        "MULT\n",
        "MULT # x",
        "op0=MULT",
        "",
        "\"MULT\"",
    ] {
        let e = typed("TENSOR_SCALAR_ARITH_OP", &with("op0", name(bad))).unwrap_err();
        assert_eq!(e.field.as_deref(), Some("op0"), "{bad:?}: {e}");
        assert!(e.message.starts_with("op0: "), "{bad:?}: {e}");
    }
    for bad in ["3.0 op1", "3.0", "0x40400000"] {
        let e = typed("TENSOR_SCALAR_ARITH_OP", &with("imm0", name(bad))).unwrap_err();
        assert!(e.message.contains("expected a number"), "{bad:?}: {e}");
    }
    for bad in ["FP32 op1=ADD", "FP32|FP32"] {
        let e = typed("TENSOR_SCALAR_ARITH_OP", &with("in_dtype", name(bad))).unwrap_err();
        assert!(e.message.contains("is not a DTYPE value"), "{bad:?}: {e}");
    }
    let e = typed("TENSOR_SCALAR_ARITH_OP", &with("imm0=3.0 op1", Int(1))).unwrap_err();
    assert!(e.message.contains("has no field `imm0=3.0 op1`"), "{e}");
    let e = typed(
        "TENSOR_SCALAR_ARITH_OP",
        &with("op0", Int(1))
            .into_iter()
            .chain([("op0", Int(2))])
            .collect::<Vec<_>>(),
    )
    .unwrap_err();
    assert!(e.message.contains("field `op0` given twice"), "{e}");
    // A string field holds any ASCII as it is: separators, quotes and newlines change no other
    // byte.
    let plain = typed(
        "PSEUDO_DMA_TRIGGER",
        &[("queue_name", name("q")), ("block_id", Int(3))],
    )
    .unwrap();
    let odd = "q\"; block_id=9\n#=";
    let b = typed(
        "PSEUDO_DMA_TRIGGER",
        &[("queue_name", name(odd)), ("block_id", Int(3))],
    )
    .unwrap();
    let m = decode(&b, Gen::V3)
        .unwrap()
        .meta()
        .field("queue_name")
        .unwrap();
    let (o, n) = (m.offset as usize, odd.len());
    assert_eq!(&b.0[o..o + n], odd.as_bytes());
    assert_eq!(b.0[..o], plain.0[..o]);
    assert_eq!(b.0[o + n..], plain.0[o + n..]);
    // ... and the disassembly of it reads back to the same bundle.
    assert_eq!(text(&disasm_bundle(&b, Gen::V3)), b);
    let e = typed("PSEUDO_DMA_TRIGGER", &[("queue_name", name("q\u{e9}"))]).unwrap_err();
    assert!(e.message.contains("non-ASCII"), "{e}");
    let e = typed(
        "PSEUDO_DMA_TRIGGER",
        &[("queue_name", name(&"q".repeat(37)))],
    )
    .unwrap_err();
    assert!(e.message.contains("do not fit in 36"), "{e}");
    assert!(typed("NO_SUCH_OP", &[]).unwrap_err().field.is_none());
}

#[test]
fn typed_floats_round_once_to_fp32() {
    let imm0 = |a: FieldArg| {
        let (fields, _) = tensor_scalar((a, ""), (Float(0.0), ""));
        let b = typed("TENSOR_SCALAR_ARITH_OP", &fields).map_err(|e| e.message)?;
        let m = decode(&b, Gen::V3).unwrap().meta().field("imm0").unwrap();
        let o = m.offset as usize;
        Ok::<u32, String>(u32::from_le_bytes(b.0[o..o + 4].try_into().unwrap()))
    };
    // Halfway between 1.0 and the next fp32: the f64 rounds to even (1.0). Its shortest decimal
    // (1.0000000596046448) lies above the halfway point, so a decimal round trip would give
    // the next fp32 instead.
    let half = 1.0 + f64::powi(2.0, -24);
    assert_eq!(imm0(Float(half)), Ok(1.0f32.to_bits()));
    assert_eq!(parse_f32(&format!("{half:?}")), Ok(1.0f32.to_bits() + 1));
    for v in [
        0.1,
        -2.0 / 3.0,
        1e-40,
        -0.0,
        6.02214076e23,
        f64::MIN_POSITIVE,
    ] {
        assert_eq!(imm0(Float(v)), Ok((v as f32).to_bits()), "{v:e}");
    }
    assert_eq!(
        imm0(Float(f64::NAN)).map(|b| f32::from_bits(b).is_nan()),
        Ok(true)
    );
    for v in [1e39, -1e39, f64::MAX] {
        let e = imm0(Float(v)).unwrap_err();
        assert!(e.contains("beyond the fp32 range"), "{v:e}: {e}");
    }
    // Just above fp32's largest finite but nearer to it than to the next power: fp32's max.
    assert_eq!(imm0(Float(3.4028235e38)), Ok(f32::MAX.to_bits()));
}
