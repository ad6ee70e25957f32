use super::*;

fn sample() -> Bundle {
    let mut b = Bundle::ZERO;
    b.0[0] = 0x02;
    b.0[1] = 0x10;
    b.0[16..20].copy_from_slice(&0x0004_0100u32.to_le_bytes());
    b.0[20] = 1;
    b.0[26] = 64;
    b.0[32] = 0x06;
    b.0[39] = 128;
    b.0[43] = 0x05;
    b.0[46] = 0x10;
    b
}

#[test]
fn disasm_shows_fields_and_reserved() {
    let b = sample();
    let t = disasm_bundle(&b, Gen::V3);
    assert_eq!(
        t,
        "MATMUL src=[0x00040100 step=1,0,0 num=64,0,0] in_dtype=BF16 num_active_cols=128 psum_accumulate_flags={begin=1 accumulate=1} reserved@46=10"
    );
    assert_eq!(parse_line(&t, Gen::V3).unwrap(), Some(b));
    let line = disasm_line(3, &b, Gen::V2, Some(Engine::Act));
    assert!(line.starts_with("     3  0x0000c0:  MATMUL "), "{line}");
    assert!(
        line.ends_with("; engine classes PE do not include act"),
        "{line}"
    );
    assert_eq!(parse_line(&line, Gen::V2).unwrap(), Some(b));
}

#[test]
fn engine_annotation_reads_the_per_generation_legality() {
    for code in [0x46u8, 0x47] {
        let mut b = Bundle::ZERO;
        b.0[0] = code;
        b.0[1] = 0x10;
        // v2: COPY / CAST are not legal on ACT.
        let v2 = disasm_line(0, &b, Gen::V2, Some(Engine::Act));
        assert!(
            v2.ends_with("; engine classes POOL/DVE do not include act"),
            "{v2}"
        );
        // v3 and v4: legal on ACT, no annotation.
        for g in [Gen::V3, Gen::V4] {
            let l = disasm_line(0, &b, g, Some(Engine::Act));
            assert!(!l.contains("engine classes"), "{g}: {l}");
            let dve = disasm_line(0, &b, g, Some(Engine::Dve));
            assert!(!dve.contains("engine classes"), "{g}: {dve}");
            // Still not legal on PE.
            let pe = disasm_line(0, &b, g, Some(Engine::Pe));
            assert!(
                pe.ends_with("; engine classes ACT/POOL/DVE do not include pe"),
                "{g}: {pe}"
            );
        }
    }
}

#[test]
fn parse_errors_name_the_column() {
    let e = parse_line("MATMUL in_dtype=NOPE", Gen::V3).unwrap_err();
    assert_eq!(e.column, 17);
    assert!(e.message.contains("in_dtype"), "{e}");
    let e = parse_line("  FROB x=1", Gen::V3).unwrap_err();
    assert_eq!(e.column, 3);
    let e = parse_line("MATMUL quant_offset=1", Gen::V3).unwrap_err();
    assert!(e.message.contains("no field `quant_offset`"), "{e}");
    assert!(parse_line("ACTIVATE2", Gen::V2).is_err());
    assert_eq!(parse_line("   ; only a comment", Gen::V2).unwrap(), None);
    let e = parse_line("MATMUL reserved@32=01", Gen::V3).unwrap_err();
    assert!(e.message.contains("not reserved"), "{e}");
}

#[test]
fn undecodable_and_strings_round_trip() {
    let mut b = Bundle::ZERO;
    b.0[0] = 0x25;
    let t = disasm_bundle(&b, Gen::V2);
    assert!(t.starts_with(".bundle 25"), "{t}");
    assert_eq!(parse_line(&t, Gen::V2).unwrap(), Some(b));
    let mut c = Bundle::ZERO;
    c.0[0] = 0xC1;
    c.0[1] = 0x10;
    c.0[12..20].copy_from_slice(b"q\"0\\ \x01\x00z");
    let t = disasm_bundle(&c, Gen::V4);
    assert_eq!(t, r#"PSEUDO_DMATRIGGER queue_name="q\"0\\ \x01\x00z""#);
    assert_eq!(parse_line(&t, Gen::V4).unwrap(), Some(c));
}

#[test]
fn json_shape() {
    let v = bundle_json(2, &sample(), Gen::V3);
    assert_eq!(v["index"], 2);
    assert_eq!(v["offset"], 128);
    assert_eq!(v["opcode"], 2);
    assert_eq!(v["mnemonic"], "MATMUL");
    assert_eq!(v["format"], "Matmul");
    assert_eq!(v["fields"]["in_dtype"], 6);
    assert_eq!(v["fields"]["in_dtype_name"], "BF16");
    assert_eq!(v["fields"]["src"]["addr"]["partition"], 1);
    assert_eq!(v["fields"]["src"]["addr"]["offset"], 0x100);
    assert_eq!(v["fields"]["psum_accumulate_flags"]["accumulate"], 1);
    assert_eq!(v["reserved_nonzero"][0]["offset"], 46);
    assert_eq!(v["reserved_nonzero"][0]["hex"], "10");
}

#[test]
fn floats_bitfields_and_enum_names() {
    // A decimal float in a float-valued u32 field is stored as its bits; an integer as is.
    let b = parse_line(
        "TENSOR_SCALAR_ARITH_OP imm0=2.5 imm1=3 op0=mult op1=ADD",
        Gen::V3,
    )
    .unwrap()
    .unwrap();
    assert_eq!(&b.0[40..44], &2.5f32.to_bits().to_le_bytes());
    assert_eq!(&b.0[44..48], &3u32.to_le_bytes());
    let e = parse_line("TENSOR_SCALAR_ARITH_OP op0=2.5", Gen::V3).unwrap_err();
    assert!(e.message.contains("MULT"), "{e}");
    // Bitfields: spaces, commas or a plain integer.
    let want = parse_line(
        "MATMUL psum_accumulate_flags={begin=1 accumulate=1}",
        Gen::V3,
    )
    .unwrap()
    .unwrap();
    for alt in [
        "MATMUL psum_accumulate_flags={begin=1,accumulate=1}",
        "MATMUL psum_accumulate_flags={begin=1, accumulate=1}",
    ] {
        assert_eq!(parse_line(alt, Gen::V3).unwrap(), Some(want), "{alt}");
    }
    let raw = want.0[43];
    let plain = format!("MATMUL psum_accumulate_flags={raw}");
    assert_eq!(parse_line(&plain, Gen::V3).unwrap(), Some(want));
    let e = parse_line("MATMUL psum_accumulate_flags={bgn=1}", Gen::V3).unwrap_err();
    assert!(e.message.contains("sub-fields: "), "{e}");
    // Wait mode names in any case; a wrong one lists the names.
    let e = parse_line("MATMUL wait_mode=SEM_GE", Gen::V3).unwrap_err();
    assert!(e.message.contains("SEM_GE_IMM"), "{e}");
    assert!(parse_line("MATMUL wait_mode=sem_ge_imm", Gen::V3).is_ok());
}

#[test]
fn errors_render_with_a_caret() {
    let text = "NOP\nMATMUL in_dtype=NOPE\n";
    let (line, e) = parse_text(text, Gen::V3).unwrap_err();
    let r = render_error("k.s", text, line, &e);
    let lines: Vec<&str> = r.lines().collect();
    assert!(lines[0].starts_with("k.s:2:17: in_dtype: `NOPE`"), "{r}");
    assert_eq!(lines[1], " 2 | MATMUL in_dtype=NOPE");
    assert_eq!(lines[2], "   |                 ^");
}

#[test]
fn neuron_dialect_parses() {
    let native = parse_line(
        "ACTIVATE wait_mode=SEM_GE_IMM wait_idx=3 update_mode=SEM_INC_COMPLETE update_idx=4 semaphore_value=1 src=[0x100 step=1,0,0 num=64,1,1] out_dtype=BF16",
        Gen::V3,
    )
    .unwrap()
    .unwrap();
    for alt in [
        "ACTIVATE $S[3]>=1 $S[4]++@complete src=0x100[1][64] out_dtype=BF16;",
        "ACTIVATE S[3]>=1 S[4] (Tensor)++@complete src=0x100[1,0,0][64,1,1] dst=bf16@0x0[0][0]; trailing",
    ] {
        let mut b = parse_line(alt, Gen::V3).unwrap().unwrap();
        b.0[48..64].copy_from_slice(&native.0[48..64]);
        assert_eq!(b, native, "{alt}");
    }
    // A wait and a value-carrying update of different values cannot share a bundle.
    let e = parse_line("NOP $S[3]>=1 $S[3]=0@complete", Gen::V3).unwrap_err();
    assert!(e.message.contains("one semaphore_value"), "{e}");
    // The producer's mnemonic spelling and a bare queue name.
    let b = parse_line(
        "PSEUDO_DMA_TRIGGER $S[22]>0 q_gradient_out block_id=0;",
        Gen::V3,
    )
    .unwrap()
    .unwrap();
    assert_eq!(b.0[0], 0xC1);
    assert_eq!(b.0[4], 0x04);
    assert_eq!(b.0[5], 22);
    assert_eq!(&b.0[12..26], b"q_gradient_out");
    let e = parse_line("MATMUL 3x128", Gen::V3).unwrap_err();
    assert!(e.message.contains("not name=value"), "{e}");
    let e = parse_line("MATMUL src=fp16@0x0[1][1] in_dtype=bf16", Gen::V3).unwrap_err();
    assert!(e.message.contains("given twice"), "{e}");
}

#[test]
fn neuron_dialect_round_trips() {
    let mut samples = vec![sample()];
    for line in [
        "ACTIVATE wait_mode=SEM_GE_IMM wait_idx=3 semaphore_value=0x1 accumulator_cmd=ZERO_ACCUMULATE src=[0x00000000 step=1,1,1 num=512,1,1] in_bias_dtypes=FP32|FP32 out_dtype=FP32 num_active_partitions=128 activation_func=EXP scale_value=1.0 bias=0x1000 dst=[0x00002000 step=1,1,1 num=512,1,1]",
        "TENSOR_SCALAR_ARITH_OP update_mode=SEM_INC_COMPLETE update_idx=2 semaphore_value=7 src=[0x00002000 step=1,1,1 num=512,1,1] in_dtype=FP32 out_dtype=FP32 num_active_partitions=128 imm0_src=POINTER op0=MULT imm0=0x1080 dst=[0x00003000 step=1,1,1 num=512,1,1]",
        "NOP wait_mode=SEM_GT wait_idx=9 update_mode=SEM_ADD_IMM_READ update_idx=1 semaphore_value=5",
        "NOP wait_mode=SEM_GE_REG wait_idx=9 update_mode=SEM_WR_IMM_COMPLETE update_idx=1 semaphore_value=5",
        "NOP wait_mode=EVT_SET wait_idx=9 semaphore_value=5",
        "PSEUDO_DMATRIGGER wait_mode=SEM_GE_IMM wait_idx=2 semaphore_value=0x1 queue_name=\"out\"",
    ] {
        samples.push(parse_line(line, Gen::V3).unwrap().unwrap());
    }
    for b in samples {
        let t = disasm_bundle_as(&b, Gen::V3, Syntax::Neuron);
        assert!(t.ends_with(';'), "{t}");
        assert_eq!(parse_line(&t, Gen::V3).unwrap(), Some(b), "{t}");
    }
    let t = disasm_bundle_as(&sample(), Gen::V3, Syntax::Neuron);
    assert!(t.contains("src=bf16@0x40100[1,0,0][64,0,0]"), "{t}");
}

/// The issue's `neuron-profile view --output-format json` operands line, as pasted.
const PROFILE_LINE: &str = "MATMUL S[5] (Tensor)++@complete acc_flags=3 row_grp=q0 src=fp16@0x5600[1,0,0][3,1,1] dst=0x2000000[1,0,0][3,1,1] 3*128";

#[test]
fn profile_operands_line_assembles_as_pasted() {
    let b = parse_line(PROFILE_LINE, Gen::V3).unwrap().unwrap();
    let native = parse_line(
        "MATMUL update_mode=SEM_INC_COMPLETE update_idx=5 psum_accumulate_flags={begin=1 end=1} row_grp=1 src=[0x5600 step=1,0,0 num=3,1,1] in_dtype=FP16 dst=[0x2000000 step=1,0,0 num=3,1,1]",
        Gen::V3,
    )
    .unwrap()
    .unwrap();
    assert_eq!(b, native);
    assert_eq!(b.0[6], 0x13);
    assert_eq!(b.0[7], 5);
    assert_eq!(b.0[43], 3);
    assert_eq!(b.0[44], 1);
    // The quadrants and the size term; a row group that is not a quadrant is refused.
    for (q, code) in [("q1", 2u8), ("q2", 4), ("q3", 8)] {
        let b = parse_line(&format!("MATMUL row_grp={q} 1*1"), Gen::V3)
            .unwrap()
            .unwrap();
        assert_eq!(b.0[44], code, "{q}");
    }
    assert!(parse_line("MATMUL row_grp=q4", Gen::V3).is_err());
    let e = parse_line("MATMUL 3*", Gen::V3).unwrap_err();
    assert!(e.message.contains("not name=value"), "{e}");
    // `acc_flags` names psum_accumulate_flags; a format without that field says which.
    let e = parse_line("ACTIVATE acc_flags=3", Gen::V3).unwrap_err();
    assert!(e.message.contains("psum_accumulate_flags"), "{e}");
    assert!(e.message.contains("acc_flags=3"), "{e}");
}

#[test]
fn register_and_event_waits_in_the_dialect() {
    for (dialect, native) in [
        (
            "NOP $S[9]>=$R[3] $S[1]++@read;",
            "NOP wait_mode=SEM_GE_REG wait_idx=9 semaphore_value=3 update_mode=SEM_INC_READ update_idx=1",
        ),
        (
            "NOP S[9]<R[2];",
            "NOP wait_mode=SEM_LT_REG wait_idx=9 semaphore_value=2",
        ),
        (
            "NOP $S[9]==$R[4] $S[2]=$R[4]@complete;",
            "NOP wait_mode=SEM_EQ_REG wait_idx=9 semaphore_value=4 update_mode=SEM_WR_REG_COMPLETE update_idx=2",
        ),
        (
            "NOP $E[7]==1 $E[8]=1@complete;",
            "NOP wait_mode=EVT_SET wait_idx=7 update_mode=EVT_SET_COMPLETE update_idx=8",
        ),
        (
            "NOP $E[7]==0 $E[8]=0@read;",
            "NOP wait_mode=EVT_CLEAR wait_idx=7 update_mode=EVT_CLR_READ update_idx=8",
        ),
        (
            "NOP $E[7]==1->0 $S[3]+=5@complete;",
            "NOP wait_mode=EVT_SET_THEN_CLEAR wait_idx=7 update_mode=SEM_ADD_IMM_COMPLETE update_idx=3 semaphore_value=5",
        ),
        (
            "NOP $E[7]==0->1 $S[3]-=$R[6]@read;",
            "NOP wait_mode=EVT_CLEAR_THEN_SET wait_idx=7 update_mode=SEM_SUB_REG_READ update_idx=3 semaphore_value=6",
        ),
    ] {
        let want = parse_line(native, Gen::V3).unwrap().unwrap();
        assert_eq!(parse_line(dialect, Gen::V3).unwrap(), Some(want), "{dialect}");
        // The disassembly writes the same dialect back.
        let t = disasm_bundle_as(&want, Gen::V3, Syntax::Neuron);
        assert_eq!(t, dialect.replace("S[9]<R[2]", "$S[9]<$R[2]"), "{native}");
    }
    // A register wait and an immediate update must agree on the shared value.
    let e = parse_line("NOP $S[9]>=$R[3] $S[1]=4@read", Gen::V3).unwrap_err();
    assert!(e.message.contains("one semaphore_value"), "{e}");
    let e = parse_line("NOP $E[7]>=1", Gen::V3).unwrap_err();
    assert!(e.message.contains("E[7]"), "{e}");
    assert!(parse_line("NOP $S[1]>=$R[256]", Gen::V3).is_err());
}

/// `pe.bin` of the concrete-carve NEFF (G `neff/concrete-carve.md` §5.1).
fn carve_pe() -> Bundle {
    let mut b = Bundle::ZERO;
    let head = "c8100000040a131600000000040a0000030000000400000020000000000000000100";
    for i in 0..head.len() / 2 {
        b.0[i] = u8::from_str_radix(&head[2 * i..2 * i + 2], 16).unwrap();
    }
    b
}

const CARVE_PE_ASM: &str = "PSEUDO_TRIGGER_COLLECTIVE $S[10]>0 $S[22]++@complete ctype=ALL_REDUCE input_tensor_id=3 output_tensor_id=4 num_elements=32 dtype=fp32 op=ADD group_id=0;";

#[test]
fn collective_fields_as_the_producer_writes_them() {
    for gen in [Gen::V2, Gen::V3] {
        let b = parse_line(CARVE_PE_ASM, gen).unwrap().unwrap();
        assert_eq!(b, carve_pe(), "{gen}");
        // The typed format prints its non-zero fields by their spec names and parses back.
        for syntax in [Syntax::Tpbsim, Syntax::Neuron] {
            let t = disasm_bundle_as(&b, gen, syntax);
            for field in [
                "ctype=ALL_REDUCE",
                "op=ADD",
                "dtype=FP32",
                "input_tensor_id=0x3",
            ] {
                assert!(t.contains(field), "{syntax:?}: {field} in {t}");
            }
            assert!(!t.contains("body="), "{t}");
            assert_eq!(parse_line(&t, gen).unwrap(), Some(b), "{t}");
        }
    }
    let e = parse_line("PSEUDO_TRIGGER_COLLECTIVE op=FROB", Gen::V2).unwrap_err();
    assert!(e.message.contains("ALU_OP"), "{e}");
    let e = parse_line("PSEUDO_TRIGGER_COLLECTIVE ctype=GATHER_ALL", Gen::V2).unwrap_err();
    assert!(e.message.contains("PERMUTE_REDUCE_IMPLICIT"), "{e}");
    let e = parse_line("PSEUDO_TRIGGER_COLLECTIVE op=4 op=4", Gen::V2).unwrap_err();
    assert!(e.message.contains("twice"), "{e}");
    let e = parse_line("PSEUDO_TRIGGER_COLLECTIVE group_id=65536", Gen::V2).unwrap_err();
    assert!(e.message.contains("65536"), "{e}");
    // Each named code is its byte at +32; a code without a name prints as a number.
    let mut c = carve_pe();
    c.0[0x20] = 2;
    let t = disasm_bundle_as(&c, Gen::V2, Syntax::Neuron);
    assert!(t.contains("ctype=REDUCE_SCATTER"), "{t}");
    c.0[0x20] = 0x11;
    let t = disasm_bundle_as(&c, Gen::V2, Syntax::Neuron);
    assert!(t.contains("ctype=0x11"), "{t}");
    assert_eq!(parse_line(&t, Gen::V2).unwrap(), Some(c));
    // A reserved byte of the record is kept and shown as such.
    c.0[0x21] = 1;
    let t = disasm_bundle_as(&c, Gen::V2, Syntax::Neuron);
    assert!(t.contains("reserved@33=01"), "{t}");
    assert_eq!(parse_line(&t, Gen::V2).unwrap(), Some(c));
    // Other opcodes have no such fields.
    assert!(parse_line("NOP ctype=ALL_REDUCE", Gen::V2).is_err());
}

#[test]
fn producer_pool_lines_verbatim() {
    let text = "PSEUDO_DMA_TRIGGER q_gradient_in block_id=0;\nPSEUDO_DMA_TRIGGER $S[22]>0 q_gradient_out block_id=0;\nEVENT_SEMAPHORE $S[11]>0;\n";
    let b = parse_text(text, Gen::V2).unwrap();
    assert_eq!(b.len(), 3);
    assert_eq!(&b[1].0[..8], &[0xC1, 0x10, 0, 0, 0x04, 0x16, 0, 0]);
    assert_eq!(&b[1].0[12..26], b"q_gradient_out");
    assert_eq!(&b[2].0[..8], &[0xA0, 0x10, 0, 0, 0x04, 0x0B, 0, 0]);
    assert!(b[2].0[8..].iter().all(|&x| x == 0));
}

#[test]
fn cross_check_names_the_first_difference() {
    let stream = [carve_pe()];
    assert_eq!(
        cross_check(&stream, CARVE_PE_ASM, Gen::V2),
        AsmCheck::Match(1)
    );
    let wrong = CARVE_PE_ASM.replace("num_elements=32", "num_elements=33");
    match cross_check(&stream, &wrong, Gen::V2) {
        AsmCheck::Differ {
            index, byte, field, ..
        } => {
            assert_eq!((index, byte), (0, 0x18));
            assert_eq!(field, "num_elements");
        }
        other => panic!("{other:?}"),
    }
    let wait = CARVE_PE_ASM.replace("$S[10]>0", "$S[10]>=0");
    let r = cross_check(&stream, &wait, Gen::V2);
    assert!(r.to_string().contains("byte 4 (field `wait_mode`)"), "{r}");
    let two = format!("{CARVE_PE_ASM}\n{CARVE_PE_ASM}");
    assert_eq!(cross_check(&stream, &two, Gen::V2), AsmCheck::Longer(1));
    // A text of any length is assembled no further than one bundle past the stream: the
    // lines after it (here not even assembly) are never read.
    let long = format!(
        "{CARVE_PE_ASM}\n{CARVE_PE_ASM}\n{}",
        "FROB\n".repeat(100_000)
    );
    assert_eq!(cross_check(&stream, &long, Gen::V2), AsmCheck::Longer(1));
    let pair = [stream[0], stream[0]];
    assert_eq!(
        cross_check(&pair, CARVE_PE_ASM, Gen::V2),
        AsmCheck::Count(2, 1)
    );
    assert!(matches!(
        cross_check(&stream, "FROB", Gen::V2),
        AsmCheck::Unparsed(1, _)
    ));
}

#[test]
fn field_and_sync_errors_are_typed() {
    let inst = decode(&carve_pe(), Gen::V2).unwrap();
    let m = inst.meta().field("group_id").unwrap();
    let mut b = carve_pe();
    let e = write_field(m, "65536", &mut b).unwrap_err();
    assert_eq!((e.field, e.text.as_str()), ("group_id", "65536"));
    assert!(e.reason.contains("65536"), "{e}");
    assert_eq!(b, carve_pe(), "a refused value writes nothing");
    let mut s = neuron::Sync::default();
    s.add("$S[1]>=1", 1).unwrap();
    let e = s.add("$S[2]>=1", 9).unwrap_err();
    assert_eq!(e.token, "$S[2]>=1");
    assert!(e.reason.contains("one wait"), "{e}");
}

/// An error found at the end of a line points one character past its last character, counted
/// in characters (as every other column is), not bytes.
#[test]
fn an_error_at_the_end_of_the_line_points_past_its_last_character() {
    for line in [
        "NOP x=\"abc",
        "NOP x=[1 2",
        "NOP x={a",
        "NOP é=\"abc",
        "NOP x=[é",
        "NOP x=[1 [2]",
    ] {
        let e = parse_line(line, Gen::V3).unwrap_err();
        assert_eq!(e.column, line.chars().count() + 1, "{line}: {e}");
        assert!(
            e.message.contains("unterminated string") || e.message.contains("unbalanced brackets"),
            "{line}: {e}"
        );
    }
}

/// A `;` ends the statement only outside brackets and strings: inside them it is part of the
/// value (here an invalid one, refused for what it is, at the value's column).
#[test]
fn a_semicolon_inside_brackets_is_part_of_the_value() {
    let line = "ACTIVATE src=[0x0 step=1;2,0,0 num=1,1,1]";
    let e = parse_line(line, Gen::V3).unwrap_err();
    assert_eq!(e.column, 14, "{e}");
    assert!(!e.message.contains("unbalanced"), "{e}");
    let line = "ACTIVATE src=0x0[1;2][1]";
    let e = parse_line(line, Gen::V3).unwrap_err();
    assert_eq!(e.column, 14, "{e}");
    assert!(!e.message.contains("unbalanced"), "{e}");
    // Outside brackets it starts a comment.
    assert_eq!(
        parse_line("ACTIVATE src=0x0[1][1] ; [unbalanced", Gen::V3).unwrap(),
        parse_line("ACTIVATE src=0x0[1][1]", Gen::V3).unwrap()
    );
}

/// The value of a `name=value` pair is reported at its own column, whether the field is in
/// the layout the bare opcode selects or only in the one its sub-opcode selects
/// (`EXTENDED_INST ext_opcode=2`); a value written under another name (the profile's
/// `acc_flags`, a `dtype@` prefix) is reported at the token that wrote it.
#[test]
fn a_bad_value_is_reported_at_the_value() {
    for (line, col) in [
        ("ACTIVATE num_active_partitions=256", 32),
        ("ACTIVATE  scale_value=x", 23),
        ("NOP wait_idx=999", 14),
        ("ACTIVATE out_dtype=NOPE", 20),
        ("EXTENDED_INST ext_opcode=2 op=999", 31),
        ("EXTENDED_INST ext_opcode=2  completion_info=256", 45),
        ("MATMUL acc_flags=999", 8),
        ("MATMUL  acc_flags={begin=2}", 9),
        // A reserved item: a bad hex value at its value, a bad offset at its name.
        ("MATMUL reserved@46=zz", 20),
        ("MATMUL   reserved@46=0g", 22),
        ("MATMUL  reserved@x=01", 9),
    ] {
        let e = parse_line(line, Gen::V3).unwrap_err();
        assert_eq!(e.column, col, "{line}: {e}");
    }
}

/// The syntax names, in any case; anything else refused.
#[test]
fn syntax_names_parse_in_any_case() {
    for (s, want) in [
        ("tpbsim", Syntax::Tpbsim),
        ("TPBSIM", Syntax::Tpbsim),
        ("neuron", Syntax::Neuron),
        ("Neuron", Syntax::Neuron),
    ] {
        assert_eq!(s.parse::<Syntax>(), Ok(want), "{s}");
    }
    for s in ["", "native", "neuron ", "tpbsim2"] {
        let e = s.parse::<Syntax>().unwrap_err();
        assert!(
            e.contains("the syntaxes are tpbsim and neuron"),
            "{s:?}: {e}"
        );
    }
}

/// A quoted positional word fills the format's string field as a bare word does; a lone
/// quote is no string.
#[test]
fn a_quoted_positional_string_fills_the_string_field() {
    let bare = parse_line("PSEUDO_DMA_TRIGGER q_in", Gen::V3).unwrap();
    assert!(bare.is_some());
    assert_eq!(
        parse_line("PSEUDO_DMA_TRIGGER \"q_in\"", Gen::V3).unwrap(),
        bare
    );
}
