//! Formatting field values and whole bundles in the native syntax.

use super::*;

pub(crate) fn enum_text(raw: u8, def: &EnumDef) -> String {
    match def.value(raw) {
        Some(v) => v.name.to_string(),
        None => format!("{raw:#04x}"),
    }
}

pub(crate) fn dtype_text(raw: u8) -> String {
    enum_text(raw, spec::enum_def("DTYPE").expect("DTYPE"))
}

pub(crate) fn bits_text(raw: u8, def: &BitfieldDef) -> String {
    let mut parts = Vec::new();
    let mut used = 0u8;
    for d in def.bits {
        let mask = (((1u16 << d.width) - 1) as u8) << d.lsb;
        used |= mask;
        let v = (raw & mask) >> d.lsb;
        if v != 0 {
            parts.push(format!("{}={v}", d.name));
        }
    }
    if raw & !used != 0 {
        parts.push(format!("rsv={:#04x}", raw & !used));
    }
    format!("{{{}}}", parts.join(" "))
}

pub(crate) fn f32_text(v: F32Bits) -> String {
    let f = v.to_f32();
    let s = format!("{f:?}");
    match s.parse::<f32>() {
        Ok(p) if p.to_bits() == v.0 && f.is_finite() => s,
        _ => format!("{:#010x}", v.0),
    }
}

pub(crate) fn join_nums<T: std::fmt::Display>(v: &[T]) -> String {
    v.iter()
        .map(|x| x.to_string())
        .collect::<Vec<_>>()
        .join(",")
}

pub(crate) fn str_text(s: &[u8]) -> String {
    let end = s.iter().rposition(|&c| c != 0).map_or(0, |i| i + 1);
    let mut out = String::from("\"");
    for &c in &s[..end] {
        match c {
            b'"' | b'\\' => {
                out.push('\\');
                out.push(c as char);
            }
            0x20..=0x7E => out.push(c as char),
            _ => {
                let _ = write!(out, "\\x{c:02x}");
            }
        }
    }
    out.push('"');
    out
}

pub(crate) fn hex_trimmed(s: &[u8]) -> String {
    let end = s.iter().rposition(|&c| c != 0).map_or(0, |i| i + 1);
    s[..end].iter().map(|b| format!("{b:02x}")).collect()
}

pub(crate) fn hex(s: &[u8]) -> String {
    s.iter().map(|b| format!("{b:02x}")).collect()
}

pub(crate) fn events_ext_text(e: &EventsExt) -> String {
    let wm = spec::enum_def("WAIT_MODE").expect("WAIT_MODE");
    let um = spec::enum_def("UPDATE_MODE").expect("UPDATE_MODE");
    format!(
        "[wait_mode={} wait_idx={} update_mode={} update_idx={} sem_wait_value={:#x} sem_update_value={:#x}]",
        enum_text(e.wait_mode.0, wm),
        e.wait_idx,
        enum_text(e.update_mode.0, um),
        e.update_idx,
        e.sem_wait_value,
        e.sem_update_value
    )
}

/// Text of one field value.
pub fn value_text(m: &FieldMeta, v: &FieldValue<'_>) -> String {
    match *v {
        FieldValue::Unsigned(x) => match m.ty {
            FieldType::U32 | FieldType::U64 => format!("{x:#x}"),
            _ => x.to_string(),
        },
        FieldValue::Signed(x) => x.to_string(),
        FieldValue::F32(x) => f32_text(x),
        FieldValue::Enum { raw, def } => enum_text(raw, def),
        FieldValue::DtypePair(p) => format!("{}|{}", dtype_text(p.lo().0), dtype_text(p.hi().0)),
        FieldValue::Bits { raw, def } => bits_text(raw, def),
        FieldValue::Addr4(a) => format!("{:#010x}", a.0),
        FieldValue::Pattern(p) => {
            let n = p.dims as usize;
            format!("[{:#010x} step={} num={}]", p.addr.0, join_nums(&p.step[..n]), join_nums(&p.num[..n]))
        }
        FieldValue::MxMem(x) => format!(
            "[data={:#010x} scale={:#010x} k={} step_sign={:#04x} scale_partition={}]",
            x.data.0, x.scale.0, x.k, x.step_sign, x.scale_partition
        ),
        FieldValue::MxIndirect(x) => format!(
            "[indices={:#010x} data={:#010x} scale={:#010x} k={} byte_0e={:#04x} scale_partition={}]",
            x.indices.0, x.data.0, x.scale.0, x.k, x.byte_0e, x.scale_partition
        ),
        FieldValue::Addr8(a) => format!("{:#018x}", a.0),
        FieldValue::EventsExt(e) => events_ext_text(&e),
        FieldValue::Array { vals, len } => join_nums(&vals[..len as usize]),
        FieldValue::Str(s) => str_text(s),
        FieldValue::Opaque(s) => hex_trimmed(s),
    }
}

pub(crate) fn shown(m: &FieldMeta, b: &Bundle) -> bool {
    match m.name {
        "opcode" => false,
        "inst_word_len" => b.0[1] != INST_WORD_LEN,
        _ => b.0[m.range()].iter().any(|&x| x != 0),
    }
}

/// The fields part of a line (everything after the mnemonic) for a decoded instruction.
pub fn fields_text(inst: &Inst) -> String {
    fields_text_with(inst, &|m, v| Some(value_text(m, v)))
}

/// [`fields_text`] with the value text of each shown field from `text` (`None` leaves the
/// field out).
pub(crate) fn fields_text_with(
    inst: &Inst,
    text: &dyn Fn(&FieldMeta, &FieldValue<'_>) -> Option<String>,
) -> String {
    let b = inst.encode();
    let meta = inst.meta();
    let mut parts = Vec::new();
    for m in meta.fields {
        if shown(m, &b) {
            if let Some(t) = text(m, &m.read(&b)) {
                parts.push(format!("{}={t}", m.name));
            }
        }
    }
    for r in meta.nonzero_reserved(&b) {
        parts.push(format!("reserved@{}={}", r.start, hex(&b.0[r.clone()])));
    }
    parts.join(" ")
}

/// One disassembly line (without index/offset prefix and without newline), or the `.bundle`
/// form with a comment when the bundle does not decode for `gen`.
pub fn disasm_bundle(b: &Bundle, gen: Gen) -> String {
    match decode(b, gen) {
        Ok(inst) => {
            let f = fields_text(&inst);
            if f.is_empty() {
                inst.mnemonic().to_string()
            } else {
                format!("{} {f}", inst.mnemonic())
            }
        }
        Err(e) => format!(".bundle {} ; {e}", b.to_hex()),
    }
}
