//! The `key=value` fields of PSEUDO_TRIGGER_COLLECTIVE (0xC8), as the producer's `.asm`
//! member writes them (G `neff/concrete-carve.md` §5.1):
//!
//! ```text
//! PSEUDO_TRIGGER_COLLECTIVE $S[10]>0 $S[22]++@complete ctype=ALL_REDUCE input_tensor_id=3 output_tensor_id=4 num_elements=32 dtype=fp32 op=ADD group_id=0;
//! ```
//!
//! The opcode has no typed format in the spec (its body is the raw form's `body` bytes from
//! +0x0C); the page decodes the record byte for byte and the runtime reads it at these offsets:
//! op u8 +0x0C, dtype u8 +0x0D, group_id u8 +0x0E, input_tensor_id u32 +0x10,
//! output_tensor_id u32 +0x14, num_elements u64 +0x18, ctype u32 +0x20. The names the page
//! gives are the only ones accepted (`op=ADD` is 0x04, `ctype=ALL_REDUCE` is 0x01); any other
//! code is written as a number. `dtype` takes the DTYPE names (the page's fp32 is 0x0A).

use super::*;

/// The collective opcode.
pub(crate) const OPCODE: u8 = 0xC8;

/// Offset of the raw form's `body` field.
const BODY: usize = 12;

#[derive(Clone, Copy)]
enum Kind {
    /// One byte; names from the table.
    Byte(&'static [(u64, &'static str)]),
    /// DTYPE byte.
    Dtype,
    U32(&'static [(u64, &'static str)]),
    U64,
}

/// (key, offset in the bundle, kind), in the order the producer writes them.
const FIELDS: &[(&str, usize, Kind)] = &[
    ("ctype", 0x20, Kind::U32(&[(0x01, "ALL_REDUCE")])),
    ("input_tensor_id", 0x10, Kind::U32(&[])),
    ("output_tensor_id", 0x14, Kind::U32(&[])),
    ("num_elements", 0x18, Kind::U64),
    ("dtype", 0x0D, Kind::Dtype),
    ("op", 0x0C, Kind::Byte(&[(0x04, "ADD")])),
    ("group_id", 0x0E, Kind::Byte(&[])),
];

/// Bytes of the record: every other body byte must be zero for the `key=value` form.
fn record_bytes(at: usize) -> bool {
    FIELDS.iter().any(|&(_, o, k)| {
        let n = match k {
            Kind::Byte(_) | Kind::Dtype => 1,
            Kind::U32(_) => 4,
            Kind::U64 => 8,
        };
        (o..o + n).contains(&at)
    })
}

/// Whether `key` is one of the record's fields.
pub(crate) fn is_key(key: &str) -> bool {
    FIELDS.iter().any(|(k, _, _)| *k == key)
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
        let Some(&(key, at, kind)) = FIELDS.iter().find(|(k, _, _)| *k == it.key) else {
            kept.push(it);
            continue;
        };
        if seen.contains(&key) {
            return Err((it.col, format!("field `{key}` given twice")));
        }
        seen.push(key);
        col = if col == 0 { it.col } else { col };
        let vcol = it.col + key.len() + 1;
        let v = it.value.as_str();
        let err = |e: String| (vcol, format!("{key}: {e}"));
        match kind {
            Kind::Byte(names) => body[at] = named(v, names, 0xFF).map_err(err)? as u8,
            Kind::Dtype => {
                let dt = spec::enum_def("DTYPE").ok_or((vcol, "DTYPE".to_string()))?;
                body[at] = parse_enum(v, dt).map_err(err)?;
            }
            Kind::U32(names) => {
                (named(v, names, u32::MAX as u64).map_err(err)? as u32).write(&mut body, at)
            }
            Kind::U64 => parse_uint(v, u64::MAX).map_err(err)?.write(&mut body, at),
        }
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
        .map(|&(key, at, kind)| {
            let v = match kind {
                Kind::Byte(names) => name(b.0[at] as u64, names),
                Kind::Dtype => spec::enum_def("DTYPE")
                    .and_then(|d| d.value(b.0[at]))
                    .map_or(b.0[at].to_string(), |v| v.name.to_ascii_lowercase()),
                Kind::U32(names) => name(u32::read(&b.0, at) as u64, names),
                Kind::U64 => u64::read(&b.0, at).to_string(),
            };
            format!("{key}={v}")
        })
        .collect();
    Some(parts.join(" "))
}
