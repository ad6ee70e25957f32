//! Edge values of the text forms, asserted as exact text and exact bytes (a round trip
//! `asm ∘ disasm` cannot see a mistake the assembler and the disassembler make alike):
//!
//! * the assembler's numeric bounds for every field of every layout, generated from the
//!   layout table: each bound is written at the bound (and the bytes checked), one past it
//!   (refused) and one before it;
//! * golden disassembly in both syntaxes for register 255, semaphore and event 255, the
//!   largest immediates and counts, and negative steps.

use super::*;
use crate::formats::LAYOUT_META;

fn le(v: u64, width: usize) -> Vec<u8> {
    v.to_le_bytes()[..width].to_vec()
}

/// Write `text` into field `m` of a zero bundle: the field's bytes, or the error.
fn write(m: &FieldMeta, text: &str) -> Result<Vec<u8>, String> {
    let mut b = Bundle::ZERO;
    write_field(m, text, &mut b).map_err(|e| e.to_string())?;
    Ok(b.0[m.range()].to_vec())
}

fn accept(m: &FieldMeta, text: &str, want: &[u8]) {
    match write(m, text) {
        Ok(got) => assert_eq!(got, want, "{} ({:?}) = {text}", m.name, m.ty),
        Err(e) => panic!("{} ({:?}) = {text}: {e}", m.name, m.ty),
    }
}

fn refuse(m: &FieldMeta, text: &str) {
    if let Ok(got) = write(m, text) {
        panic!("{} ({:?}) = {text} accepted as {got:02x?}", m.name, m.ty);
    }
}

fn list(v: &[i64]) -> String {
    v.iter().map(i64::to_string).collect::<Vec<_>>().join(",")
}

/// The bytes of an access pattern: address, then steps (i16), then counts (u16).
fn pattern(addr: u32, step: &[i64], num: &[i64]) -> Vec<u8> {
    let mut out = addr.to_le_bytes().to_vec();
    out.extend(step.iter().flat_map(|&s| (s as i16).to_le_bytes()));
    out.extend(num.iter().flat_map(|&n| (n as u16).to_le_bytes()));
    out
}

/// Bounds of a keyed record (`[key=value ...]`): every key at its maximum, then each key one
/// past it; an unknown or repeated key refused.
fn keyed(m: &FieldMeta, keys: &[(&str, u64)], extra: &[(&str, &str)], want: &[u8]) {
    let text = |over: Option<&str>| {
        let mut parts: Vec<String> = keys
            .iter()
            .map(|(k, max)| {
                let v = if over == Some(*k) { max + 1 } else { *max };
                format!("{k}={v}")
            })
            .collect();
        parts.extend(extra.iter().map(|(k, v)| format!("{k}={v}")));
        format!("[{}]", parts.join(" "))
    };
    accept(m, &text(None), want);
    for (k, max) in keys {
        if *max < u64::MAX {
            refuse(m, &text(Some(k)));
        }
    }
    // A key the record does not have, or one given twice, is refused.
    let all = text(None);
    let body = &all[..all.len() - 1];
    refuse(m, &format!("{body} no_such_key=0]"));
    refuse(m, &format!("{body} {}=0]", keys[0].0));
}

fn check_field(m: &FieldMeta) {
    let w = m.width() as usize;
    match m.ty {
        FieldType::U8 | FieldType::U16 | FieldType::U32 | FieldType::Addr4 | FieldType::U64 => {
            let max = if w == 8 {
                u64::MAX
            } else {
                (1u64 << (8 * w)) - 1
            };
            accept(m, &max.to_string(), &le(max, w));
            accept(m, &format!("{:#x}", max - 1), &le(max - 1, w));
            accept(m, "0", &le(0, w));
            if w < 8 {
                refuse(m, &(max + 1).to_string());
                refuse(m, &format!("{:#x}", max + 1));
            } else {
                refuse(m, "18446744073709551616");
            }
            refuse(m, "-1");
        }
        FieldType::Addr8 => {
            accept(m, &u64::MAX.to_string(), &le(u64::MAX, 8));
            refuse(m, "0x10000000000000000");
        }
        FieldType::I16 | FieldType::I32 => {
            let bits = 8 * w as u32;
            let (min, max) = (-(1i64 << (bits - 1)), (1i64 << (bits - 1)) - 1);
            accept(m, &max.to_string(), &le(max as u64, w));
            accept(m, &min.to_string(), &le(min as u64, w));
            accept(m, &(min + 1).to_string(), &le((min + 1) as u64, w));
            refuse(m, &(max + 1).to_string());
            refuse(m, &(min - 1).to_string());
        }
        FieldType::F32 => {
            accept(m, "0xffffffff", &le(0xFFFF_FFFF, 4));
            refuse(m, "0x100000000");
        }
        FieldType::Enum(_) => {
            accept(m, "255", &[255]);
            refuse(m, "256");
        }
        FieldType::DtypePair => {
            accept(m, "15|15", &[0xFF]);
            accept(m, "15|0", &[0x0F]);
            accept(m, "0|15", &[0xF0]);
            refuse(m, "16|0");
            refuse(m, "0|16");
        }
        FieldType::Bits(name) => {
            let def = spec::bitfield(name).expect("bitfield");
            for d in def.bits {
                let max = (1u64 << d.width) - 1;
                accept(m, &format!("{{{}={max}}}", d.name), &[(max as u8) << d.lsb]);
                refuse(m, &format!("{{{}={}}}", d.name, max + 1));
            }
            accept(m, "{rsv=255}", &[255]);
            refuse(m, "{rsv=256}");
            accept(m, "255", &[255]);
            refuse(m, "256");
        }
        FieldType::Tensor(n) | FieldType::MemPattern(n) => {
            let n = n as usize;
            let step: Vec<i64> = (0..n).map(|i| [-32768, 32767, -1][i % 3]).collect();
            let num: Vec<i64> = (0..n).map(|i| [65535, 0, 1][i % 3]).collect();
            let want = pattern(u32::MAX, &step, &num);
            let native =
                |s: &[i64], c: &[i64]| format!("[0xffffffff step={} num={}]", list(s), list(c));
            let neuron = |s: &[i64], c: &[i64]| format!("0xffffffff[{}][{}]", list(s), list(c));
            accept(m, &native(&step, &num), &want);
            accept(m, &neuron(&step, &num), &want);
            refuse(
                m,
                &format!("[0x100000000 step={} num={}]", list(&step), list(&num)),
            );
            refuse(m, &format!("0x100000000[{}][{}]", list(&step), list(&num)));
            // Each step and count one past its range, in both forms.
            for (s, c) in [(-32769, 1), (32768, 1), (0, 65536), (0, -1)] {
                let (mut s2, mut c2) = (step.clone(), num.clone());
                s2[n - 1] = s;
                c2[n - 1] = c;
                refuse(m, &native(&s2, &c2));
                refuse(m, &neuron(&s2, &c2));
            }
            // The native form needs exactly n values; the dialect takes up to n (the rest
            // padded with step 0, count 1) and refuses n + 1.
            let mut longer = step.clone();
            longer.push(1);
            refuse(m, &native(&longer, &num));
            refuse(m, &neuron(&longer, &num));
            let mut c_longer = num.clone();
            c_longer.push(1);
            refuse(m, &neuron(&step, &c_longer));
            if n > 1 {
                refuse(m, &native(&step[..n - 1], &num));
                let mut padded_s = step[..n - 1].to_vec();
                padded_s.push(0);
                let mut padded_c = num[..n - 1].to_vec();
                padded_c.push(1);
                accept(
                    m,
                    &neuron(&step[..n - 1], &num[..n - 1]),
                    &pattern(u32::MAX, &padded_s, &padded_c),
                );
            }
        }
        FieldType::MxMemPattern1d => {
            let mut want = le(u32::MAX as u64, 4);
            want.extend(le(u32::MAX as u64, 4));
            want.extend(le(0xFFFF, 2));
            want.extend([255, 255, 0, 0, 0, 0]);
            keyed(
                m,
                &[
                    ("data", u32::MAX as u64),
                    ("scale", u32::MAX as u64),
                    ("k", 0xFFFF),
                    ("step_sign", 0xFF),
                    ("scale_partition", 0xFF),
                ],
                &[],
                &want,
            );
        }
        FieldType::MxIndirect16b => {
            let mut want = le(u32::MAX as u64, 4);
            want.extend(le(u32::MAX as u64, 4));
            want.extend(le(u32::MAX as u64, 4));
            want.extend(le(0xFFFF, 2));
            want.extend([255, 255]);
            keyed(
                m,
                &[
                    ("indices", u32::MAX as u64),
                    ("data", u32::MAX as u64),
                    ("scale", u32::MAX as u64),
                    ("k", 0xFFFF),
                    ("byte_0e", 0xFF),
                    ("scale_partition", 0xFF),
                ],
                &[],
                &want,
            );
        }
        FieldType::EventsExt => {
            let mut want = vec![255, 255, 255, 255];
            want.extend(le(u32::MAX as u64, 4));
            want.extend(le(u32::MAX as u64, 4));
            keyed(
                m,
                &[
                    ("wait_idx", 0xFF),
                    ("update_idx", 0xFF),
                    ("sem_wait_value", u32::MAX as u64),
                    ("sem_update_value", u32::MAX as u64),
                ],
                &[("wait_mode", "255"), ("update_mode", "255")],
                &want,
            );
        }
        FieldType::I32Array(n) | FieldType::U16Array(n) => {
            let n = n as usize;
            let (min, max, width) = match m.ty {
                FieldType::I32Array(_) => (i32::MIN as i64, i32::MAX as i64, 4),
                _ => (0, u16::MAX as i64, 2),
            };
            let vals: Vec<i64> = (0..n).map(|i| if i % 2 == 0 { max } else { min }).collect();
            let want: Vec<u8> = vals.iter().flat_map(|&v| le(v as u64, width)).collect();
            accept(m, &list(&vals), &want);
            let mut over = vals.clone();
            over[n - 1] = max + 1;
            refuse(m, &list(&over));
            over[n - 1] = min - 1;
            refuse(m, &list(&over));
            let mut longer = vals.clone();
            longer.push(0);
            refuse(m, &list(&longer));
            if n > 1 {
                refuse(m, &list(&vals[..n - 1]));
            }
        }
        FieldType::Str(n) => {
            let n = n as usize;
            accept(m, &format!("\"{}\"", "a".repeat(n)), &vec![b'a'; n]);
            let mut want = vec![b'a'; n - 1];
            want.push(0);
            accept(m, &format!("\"{}\"", "a".repeat(n - 1)), &want);
            refuse(m, &format!("\"{}\"", "a".repeat(n + 1)));
            refuse(m, &format!("\"{}\\x00\"", "a".repeat(n)));
        }
        FieldType::Opaque(n) => {
            let n = n as usize;
            accept(m, &"ff".repeat(n), &vec![0xFF; n]);
            refuse(m, &"ff".repeat(n + 1));
            refuse(m, &format!("{}f", "ff".repeat(n - 1)));
        }
    }
}

/// Every field of every layout, at its bounds: the generated boundary tests of the assembler.
#[test]
fn every_field_of_every_layout_holds_at_its_bounds() {
    let mut seen = std::collections::BTreeSet::new();
    let mut fields = 0;
    for l in &LAYOUT_META {
        for m in l.fields {
            check_field(m);
            let kind = format!("{:?}", m.ty);
            seen.insert(kind.split('(').next().unwrap_or_default().to_string());
            fields += 1;
        }
    }
    // Every kind of field was tried (the list above is exhaustive over FieldType).
    // Not vacuous: the layouts use these kinds (I16 and MxIndirect16b are in no layout).
    for kind in [
        "Addr4",
        "Addr8",
        "Bits",
        "DtypePair",
        "Enum",
        "EventsExt",
        "F32",
        "I32",
        "I32Array",
        "MemPattern",
        "MxMemPattern1d",
        "Opaque",
        "Str",
        "Tensor",
        "U16",
        "U16Array",
        "U32",
        "U64",
        "U8",
    ] {
        assert!(
            seen.contains(kind),
            "{kind} in none of {fields} fields: {seen:?}"
        );
    }
}

fn nop(fields: &str) -> Bundle {
    parse_line(&format!("NOP {fields}"), Gen::V3)
        .unwrap()
        .unwrap()
}

fn neuron(b: &Bundle) -> String {
    disasm_bundle_as(b, Gen::V3, Syntax::Neuron)
}

/// Register 255 is the last the dialect writes as `$R[255]`, for every register wait and
/// every register update; 256 is no register, so the bundle falls back to the mode's fields.
#[test]
fn register_255_in_the_dialect_and_256_in_the_native_fields() {
    for (op, mode) in [
        (">=", "SEM_GE_REG"),
        ("<=", "SEM_LE_REG"),
        ("==", "SEM_EQ_REG"),
        (">", "SEM_GT_REG"),
        ("<", "SEM_LT_REG"),
    ] {
        for (i, r) in [(0u32, 254u32), (255, 255), (7, 0)] {
            let b = nop(&format!(
                "wait_mode={mode} wait_idx={i} semaphore_value={r}"
            ));
            assert_eq!(neuron(&b), format!("NOP $S[{i}]{op}$R[{r}];"));
            assert_eq!(
                parse_line(&format!("NOP $S[{i}]{op}$R[{r}];"), Gen::V3).unwrap(),
                Some(b)
            );
        }
        let b = nop(&format!(
            "wait_mode={mode} wait_idx=255 semaphore_value=256"
        ));
        assert_eq!(
            neuron(&b),
            format!("NOP wait_mode={mode} wait_idx=255 semaphore_value=0x100;")
        );
        let e = parse_line(&format!("NOP $S[1]{op}$R[256]"), Gen::V3).unwrap_err();
        assert!(e.message.contains("256 does not fit (max 255)"), "{e}");
    }
    for (tok, mode) in [
        ("+=", "SEM_ADD_REG"),
        ("-=", "SEM_SUB_REG"),
        ("=", "SEM_WR_REG"),
    ] {
        for when in ["READ", "COMPLETE"] {
            let w = when.to_ascii_lowercase();
            let b = nop(&format!(
                "update_mode={mode}_{when} update_idx=255 semaphore_value=255"
            ));
            assert_eq!(neuron(&b), format!("NOP $S[255]{tok}$R[255]@{w};"));
            let b = nop(&format!(
                "update_mode={mode}_{when} update_idx=0 semaphore_value=256"
            ));
            assert_eq!(
                neuron(&b),
                format!("NOP update_mode={mode}_{when} semaphore_value=0x100;")
            );
        }
    }
}

/// Semaphore and event index 255, the largest immediate, and their parse bounds.
#[test]
fn largest_indices_and_immediates_in_the_dialect() {
    let b = nop("wait_mode=SEM_GE_IMM wait_idx=255 semaphore_value=4294967295");
    assert_eq!(neuron(&b), "NOP $S[255]>=4294967295;");
    let b = nop("wait_mode=SEM_LT wait_idx=255 semaphore_value=1");
    assert_eq!(neuron(&b), "NOP $S[255]<1;");
    let b = nop("update_mode=SEM_ADD_IMM_COMPLETE update_idx=255 semaphore_value=4294967295");
    assert_eq!(neuron(&b), "NOP $S[255]+=4294967295@complete;");
    let b = nop("update_mode=SEM_DEC_READ update_idx=255");
    assert_eq!(neuron(&b), "NOP $S[255]--@read;");
    let b = nop(
        "wait_mode=EVT_SET_THEN_CLEAR wait_idx=255 update_mode=EVT_SET_COMPLETE update_idx=255",
    );
    assert_eq!(neuron(&b), "NOP $E[255]==1->0 $E[255]=1@complete;");
    for bad in [
        "NOP $S[256]>=1",
        "NOP $E[256]==1",
        "NOP $S[256]++@read",
        "NOP $S[1]>=4294967296",
        "NOP $S[1]+=4294967296@read",
    ] {
        let e = parse_line(bad, Gen::V3).unwrap_err();
        assert!(e.message.contains("does not fit"), "{bad}: {e}");
    }
    assert_eq!(
        parse_line("NOP $S[255]>=4294967295;", Gen::V3).unwrap(),
        Some(nop(
            "wait_mode=SEM_GE_IMM wait_idx=255 semaphore_value=4294967295"
        ))
    );
}

/// Negative and extreme steps, the largest counts and address, in both syntaxes.
#[test]
fn extreme_access_patterns_as_text() {
    let native = "ACTIVATE src=[0xffffffff step=-32768,32767,-1 num=65535,0,1] out_dtype=BF16";
    let b = parse_line(native, Gen::V3).unwrap().unwrap();
    assert_eq!(
        disasm_bundle(&b, Gen::V3),
        "ACTIVATE src=[0xffffffff step=-32768,32767,-1 num=65535,0,1] out_dtype=BF16"
    );
    assert_eq!(
        neuron(&b),
        "ACTIVATE src=0xffffffff[-32768,32767,-1][65535,0,1] out_dtype=BF16;"
    );
    // The dtype of an operand that is not shown (dst all zero) is written by name, not lost.
    assert_eq!(
        parse_line(&neuron(&b), Gen::V3).unwrap(),
        Some(b),
        "{}",
        neuron(&b)
    );
    let one = parse_line("ACTIVATE src=0x0[-1][1]", Gen::V3)
        .unwrap()
        .unwrap();
    assert_eq!(
        disasm_bundle(&one, Gen::V3),
        "ACTIVATE src=[0x00000000 step=-1,0,0 num=1,1,1]"
    );
    assert_eq!(neuron(&one), "ACTIVATE src=0x0[-1,0,0][1,1,1];");
}

/// One golden row: the neuron dialect's text, the native text of the same bundle, and bytes
/// the bundle must hold (offset, little-endian bytes), so neither the text nor the encoding is
/// taken from the code under test.
struct Golden {
    neuron: &'static str,
    native: &'static str,
    bytes: &'static [(usize, &'static [u8])],
}

/// Both dialects parse to the same bundle holding `bytes`, and print exactly their text.
fn check_golden(g: &Golden) {
    let from_neuron = parse_line(g.neuron, Gen::V3)
        .unwrap_or_else(|e| panic!("{}: {e}", g.neuron))
        .expect("a bundle");
    let from_native = parse_line(g.native, Gen::V3)
        .unwrap_or_else(|e| panic!("{}: {e}", g.native))
        .expect("a bundle");
    assert_eq!(from_neuron, from_native, "{} / {}", g.neuron, g.native);
    for &(at, want) in g.bytes {
        assert_eq!(
            &from_native.0[at..at + want.len()],
            want,
            "{}: bytes at {at}",
            g.native
        );
    }
    assert_eq!(neuron(&from_native), g.neuron);
    assert_eq!(disasm_bundle(&from_native, Gen::V3), g.native);
}

/// The header's sync bytes: wait index at 5, update index at 7, semaphore value at 8..12.
const WAIT_IDX: usize = 5;
const UPDATE_IDX: usize = 7;
const SEM_VALUE: usize = 8;

/// Register 255, semaphore and event 255 and the largest semaphore immediate in the native
/// syntax beside the dialect: the native form writes the value in hex, the dialect the
/// register or the decimal immediate.
#[test]
fn golden_sync_edges_in_both_syntaxes() {
    let rows = [
        Golden {
            neuron: "NOP $S[255]>=$R[255];",
            native: "NOP wait_mode=SEM_GE_REG wait_idx=255 semaphore_value=0xff",
            bytes: &[(WAIT_IDX, &[255]), (SEM_VALUE, &[255, 0, 0, 0])],
        },
        Golden {
            neuron: "NOP $S[0]<$R[254];",
            native: "NOP wait_mode=SEM_LT_REG semaphore_value=0xfe",
            bytes: &[(WAIT_IDX, &[0]), (SEM_VALUE, &[254, 0, 0, 0])],
        },
        Golden {
            neuron: "NOP $S[255]>=4294967295;",
            native: "NOP wait_mode=SEM_GE_IMM wait_idx=255 semaphore_value=0xffffffff",
            bytes: &[(WAIT_IDX, &[255]), (SEM_VALUE, &[255, 255, 255, 255])],
        },
        Golden {
            neuron: "NOP $S[255]+=$R[255]@complete;",
            native: "NOP update_mode=SEM_ADD_REG_COMPLETE update_idx=255 semaphore_value=0xff",
            bytes: &[(UPDATE_IDX, &[255]), (SEM_VALUE, &[255, 0, 0, 0])],
        },
        Golden {
            neuron: "NOP $S[255]-=$R[255]@read;",
            native: "NOP update_mode=SEM_SUB_REG_READ update_idx=255 semaphore_value=0xff",
            bytes: &[(UPDATE_IDX, &[255]), (SEM_VALUE, &[255, 0, 0, 0])],
        },
        Golden {
            neuron: "NOP $S[255]+=4294967295@complete;",
            native: "NOP update_mode=SEM_ADD_IMM_COMPLETE update_idx=255 semaphore_value=0xffffffff",
            bytes: &[(UPDATE_IDX, &[255]), (SEM_VALUE, &[255, 255, 255, 255])],
        },
        Golden {
            neuron: "NOP $E[255]==1->0 $E[255]=1@complete;",
            native: "NOP wait_mode=EVT_SET_THEN_CLEAR wait_idx=255 update_mode=EVT_SET_COMPLETE update_idx=255",
            bytes: &[(WAIT_IDX, &[255]), (UPDATE_IDX, &[255])],
        },
    ];
    for g in &rows {
        check_golden(g);
    }
}

/// Float immediates at the edges of fp32: the largest finite value and -FLT_MAX in decimal,
/// the smallest subnormal, -0.0; infinities, NaNs and a value the decimal form cannot give
/// back exactly are written as their bit pattern (in both syntaxes); a decimal past the fp32
/// range and a pattern past 32 bits are refused.
#[test]
fn golden_float_immediates_in_both_syntaxes() {
    const MAX: &[u8] = &[0xff, 0xff, 0x7f, 0x7f];
    const NEG_MAX: &[u8] = &[0xff, 0xff, 0x7f, 0xff];
    let rows = [
        // ACTIVATE: scale_value (fp32) at 36, bias and imm (u32 that take floats) at 40 / 44.
        Golden {
            neuron: "ACTIVATE scale_value=3.4028235e38 bias=0xff7fffff imm=0x1;",
            native: "ACTIVATE scale_value=3.4028235e38 bias=0xff7fffff imm=0x1",
            bytes: &[(36, MAX), (40, NEG_MAX), (44, &[1, 0, 0, 0])],
        },
        Golden {
            neuron: "ACTIVATE scale_value=-0.0 bias=0x7fc00001 imm=0x80000001;",
            native: "ACTIVATE scale_value=-0.0 bias=0x7fc00001 imm=0x80000001",
            bytes: &[
                (36, &[0, 0, 0, 0x80]),
                (40, &[1, 0, 0xc0, 0x7f]),
                (44, &[1, 0, 0, 0x80]),
            ],
        },
        Golden {
            neuron: "ACTIVATE scale_value=0x7f800000 bias=0xff800000 imm=0x7fc00000;",
            native: "ACTIVATE scale_value=0x7f800000 bias=0xff800000 imm=0x7fc00000",
            bytes: &[
                (36, &[0, 0, 0x80, 0x7f]),
                (40, &[0, 0, 0x80, 0xff]),
                (44, &[0, 0, 0xc0, 0x7f]),
            ],
        },
        // RANGE_SELECT: base (fp32) at 16, fill_val (fp32) at 20.
        Golden {
            neuron: "RANGE_SELECT base=16777216.0 fill_val=-3.4028235e38;",
            native: "RANGE_SELECT base=16777216.0 fill_val=-3.4028235e38",
            bytes: &[(16, &[0, 0, 0x80, 0x4b]), (20, NEG_MAX)],
        },
        Golden {
            neuron: "RANGE_SELECT base=1e-45 fill_val=-1e-45;",
            native: "RANGE_SELECT base=1e-45 fill_val=-1e-45",
            bytes: &[(16, &[1, 0, 0, 0]), (20, &[1, 0, 0, 0x80])],
        },
    ];
    for g in &rows {
        check_golden(g);
    }
    // The decimal spellings of the same values are read to the same bits.
    let b = bundle_of("ACTIVATE scale_value=inf bias=-3.4028235e38 imm=1e-45");
    assert_eq!(
        &b.0[36..48],
        &[0, 0, 0x80, 0x7f, 0xff, 0xff, 0x7f, 0xff, 1, 0, 0, 0]
    );
    let b = bundle_of("ACTIVATE scale_value=-inf bias=-1e-45 imm=nan");
    assert_eq!(
        &b.0[36..48],
        &[0, 0, 0x80, 0xff, 1, 0, 0, 0x80, 0, 0, 0xc0, 0x7f]
    );
    // One past: the first decimal that rounds past f32::MAX, and 2^32 as a pattern.
    for bad in [
        "ACTIVATE scale_value=3.4028236e38",
        "ACTIVATE scale_value=-3.4028236e38",
        "ACTIVATE bias=3.4028236e38",
        "RANGE_SELECT fill_val=1e39",
    ] {
        let e = parse_line(bad, Gen::V3).unwrap_err();
        assert!(e.message.contains("beyond the fp32 range"), "{bad}: {e}");
    }
    for bad in [
        "ACTIVATE scale_value=0x100000000",
        "ACTIVATE imm=0x100000000",
    ] {
        let e = parse_line(bad, Gen::V3).unwrap_err();
        assert!(
            e.message.contains("does not fit (max 4294967295)"),
            "{bad}: {e}"
        );
    }
}

fn bundle_of(line: &str) -> Bundle {
    parse_line(line, Gen::V3)
        .unwrap_or_else(|e| panic!("{line}: {e}"))
        .expect("a bundle")
}

/// The largest one-byte count, in both syntaxes; one more refused.
#[test]
fn golden_largest_counts_in_both_syntaxes() {
    check_golden(&Golden {
        neuron: "ACTIVATE num_active_partitions=255;",
        native: "ACTIVATE num_active_partitions=255",
        bytes: &[(34, &[255])],
    });
    let e = parse_line("ACTIVATE num_active_partitions=256", Gen::V3).unwrap_err();
    assert!(e.message.contains("256 does not fit (max 255)"), "{e}");
}

/// A bitfield's sub-fields in the JSON form and both text syntaxes: each sub-field alone
/// reads as 1 with its neighbours 0, all bits set read as each sub-field at its maximum with
/// the reserved bits apart.
#[test]
fn golden_bitfield_sub_fields_in_json_and_text() {
    let flags = |raw: u8| {
        let b = bundle_of(&format!("MATMUL psum_accumulate_flags={raw}"));
        assert_eq!(b.0[43], raw);
        let j = json::bundle_json(0, &b, Gen::V3);
        let f = &j["fields"]["psum_accumulate_flags"];
        (
            [&f["begin"], &f["end"], &f["accumulate"], &f["raw"]].map(|v| v.as_u64().unwrap()),
            disasm_bundle(&b, Gen::V3),
            neuron(&b),
        )
    };
    for (raw, sub, text) in [
        (1u8, [1, 0, 0], "{begin=1}"),
        (2, [0, 1, 0], "{end=1}"),
        (4, [0, 0, 1], "{accumulate=1}"),
        (255, [1, 1, 1], "{begin=1 end=1 accumulate=1 rsv=0xf8}"),
    ] {
        let (json, native, dialect) = flags(raw);
        assert_eq!(json, [sub[0], sub[1], sub[2], u64::from(raw)], "raw {raw}");
        assert_eq!(native, format!("MATMUL psum_accumulate_flags={text}"));
        assert_eq!(dialect, format!("MATMUL psum_accumulate_flags={text};"));
    }
}

/// An operand's `dtype@` prefix is written only for a dtype that is set: dtype 0 leaves the
/// operand bare.
#[test]
fn golden_operand_dtype_prefix_only_for_a_set_dtype() {
    check_golden(&Golden {
        neuron: "MATMUL src=0x10[1,0,0][1,1,1];",
        native: "MATMUL src=[0x00000010 step=1,0,0 num=1,1,1]",
        bytes: &[(16, &[0x10, 0, 0, 0]), (32, &[0])],
    });
    let b = bundle_of("MATMUL src=[0x10 step=1,0,0 num=1,1,1] in_dtype=BF16");
    assert_eq!(neuron(&b), "MATMUL src=bf16@0x10[1,0,0][1,1,1];");
}
