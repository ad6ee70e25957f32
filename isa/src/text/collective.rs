//! The `key=value` fields of PSEUDO_TRIGGER_COLLECTIVE (0xC8), as the producer's `.asm`
//! member writes them (G `neff/concrete-carve.md` §5.1):
//!
//! ```text
//! PSEUDO_TRIGGER_COLLECTIVE $S[10]>0 $S[22]++@complete ctype=ALL_REDUCE input_tensor_id=3 output_tensor_id=4 num_elements=32 dtype=fp32 op=ADD group_id=0;
//! ```
//!
//! The opcode has no typed format (its body is the raw form's `body` bytes from +0x0C); the
//! record's fields are the spec's `COLLECTIVE_RECORD_FIELDS`, read and written here by their
//! generated locators (`loc::trigger_collective`), as the simulator reads them: op u8 +0x0C,
//! dtype u8 +0x0D, group_id u8 +0x0E, input_tensor_id u32 +0x10, output_tensor_id u32 +0x14,
//! num_elements u64 +0x18, ctype u32 +0x20. The names the page gives are the only ones
//! accepted (`op=ADD` is 0x04, `ctype=ALL_REDUCE` is 0x01); any other
//! code is written as a number. `dtype` takes the DTYPE names (the page's fp32 is 0x0A).

use super::*;
use crate::spec::FieldLoc;

/// The collective opcode.
pub(crate) const OPCODE: u8 = Opcode::PSEUDO_TRIGGER_COLLECTIVE.0;

/// Offset of the raw form's `body` field.
const BODY: usize = 12;

/// The generation the record's locators are read at: the record sits at the same offsets on
/// every generation (checked by `isa/build.rs`).
const GEN: Gen = Gen::V5;

/// The record's fields, in the order the producer writes them, with the value names the page
/// gives (a DTYPE field reads by the DTYPE names instead).
const FIELDS: &[(FieldLoc, &[(u64, &str)])] = {
    use crate::formats::loc::trigger_collective as c;
    &[
        (c::CTYPE, &[(0x01, "ALL_REDUCE")]),
        (c::INPUT_TENSOR_ID, &[]),
        (c::OUTPUT_TENSOR_ID, &[]),
        (c::NUM_ELEMENTS, &[]),
        (c::DTYPE, &[]),
        (c::OP, &[(0x04, "ADD")]),
        (c::GROUP_ID, &[]),
    ]
};

/// Bytes of the record: every other body byte must be zero for the `key=value` form.
fn record_bytes(at: usize) -> bool {
    FIELDS.iter().any(|(l, _)| match l.bits(GEN) {
        Some((lo, hi)) => (lo as usize / 8..hi as usize / 8).contains(&at),
        None => false,
    })
}

/// Whether a field reads by the DTYPE names.
fn is_dtype(l: &FieldLoc) -> bool {
    matches!(l.ty(GEN), Some(FieldType::Enum("DTYPE")))
}

/// Whether `key` is one of the record's fields.
pub(crate) fn is_key(key: &str) -> bool {
    FIELDS.iter().any(|(l, _)| l.name == key)
}

fn named(s: &str, names: &[(u64, &str)], max: u64) -> Result<u64, String> {
    if let Some((v, _)) = names.iter().find(|(_, n)| n.eq_ignore_ascii_case(s)) {
        return Ok(*v);
    }
    parse_uint(s, max).map_err(|e| {
        if names.is_empty() {
            e
        } else {
            let list: Vec<&str> = names.iter().map(|(_, n)| *n).collect();
            format!(
                "`{s}` is not a published name ({}) or a number",
                list.join(", ")
            )
        }
    })
}

/// Replace the record's `key=value` items by one `body=HEX` item.
pub(crate) fn fold_items(items: &mut Vec<Item>) -> Result<(), (usize, String)> {
    if !items.iter().any(|i| is_key(&i.key)) {
        return Ok(());
    }
    let mut body = [0u8; 64];
    let mut col = 0;
    let mut seen: Vec<&str> = Vec::new();
    let mut kept = Vec::new();
    for it in items.drain(..) {
        let Some(&(l, names)) = FIELDS.iter().find(|(l, _)| l.name == it.key) else {
            kept.push(it);
            continue;
        };
        let key = l.name;
        if seen.contains(&key) {
            return Err((it.col, format!("field `{key}` given twice")));
        }
        seen.push(key);
        col = if col == 0 { it.col } else { col };
        let vcol = it.col + key.len() + 1;
        let v = it.value.as_str();
        let err = |e: String| (vcol, format!("{key}: {e}"));
        let value = if is_dtype(&l) {
            let dt = spec::enum_def("DTYPE").ok_or((vcol, "DTYPE".to_string()))?;
            parse_enum(v, dt).map_err(err)? as u64
        } else {
            let width = l.width(GEN).unwrap_or(8) as u32;
            let max = if width >= 8 {
                u64::MAX
            } else {
                (1u64 << (8 * width)) - 1
            };
            named(v, names, max).map_err(err)?
        };
        l.write_uint(&mut body, GEN, value);
    }
    if let Some(b) = kept.iter().find(|i| i.key == "body") {
        return Err((
            b.col,
            "`body=` and the collective's named fields both set the body; write one of them".into(),
        ));
    }
    kept.push(Item {
        key: "body".into(),
        value: hex(&body[BODY..]),
        col,
        from: Some("the collective's named fields".into()),
    });
    *items = kept;
    Ok(())
}

/// The record as `key=value` text, or `None` when a body byte outside it is set (the bundle
/// is then written with `body=HEX`).
pub(crate) fn text(b: &Bundle) -> Option<String> {
    if b.0[0] != OPCODE || (BODY..64).any(|i| b.0[i] != 0 && !record_bytes(i)) {
        return None;
    }
    let name = |v: u64, names: &[(u64, &str)]| {
        names
            .iter()
            .find(|(c, _)| *c == v)
            .map_or(v.to_string(), |(_, n)| n.to_string())
    };
    let parts: Vec<String> = FIELDS
        .iter()
        .map(|&(l, names)| {
            let raw = l.read_uint(&b.0, GEN).unwrap_or(0);
            let v = if is_dtype(&l) {
                spec::enum_def("DTYPE")
                    .and_then(|d| d.value(raw as u8))
                    .map_or(raw.to_string(), |v| v.name.to_ascii_lowercase())
            } else {
                name(raw, names)
            };
            format!("{}={v}", l.name)
        })
        .collect();
    Some(parts.join(" "))
}
