//! Field access driven by the isa crate's layout metadata: finding a field of an opcode's
//! layout, splitting fields into integer leaves (for the `wire` attribute), and the JSON forms
//! of parameter and event values.

use std::borrow::Cow;

use serde_json::{Map, Value};
use tpbsim_isa::formats::loc;
use tpbsim_isa::spec::{self, FieldLoc, FieldType};
use tpbsim_isa::{decode, Bundle, FieldMeta, Gen, LayoutMeta, INST_WORD_LEN};

use super::error::{FieldError, ValueError};

/// The canonical empty bundle of an opcode: `{opcode, 0x10, 0, 0}`, everything else zero.
pub(crate) fn canonical(opcode: u8) -> Bundle {
    let mut b = Bundle::ZERO;
    b.0[0] = opcode;
    b.0[1] = INST_WORD_LEN;
    b
}

/// The layout an opcode decodes to in `gen` (for the canonical bundle), or why not.
pub(crate) fn layout_of(b: &Bundle, gen: Gen) -> Result<&'static LayoutMeta, FieldError> {
    decode(b, gen).map(|i| i.meta()).map_err(FieldError::Layout)
}

/// A field of a decoded layout, named by its generated locator.
pub(crate) fn field(
    meta: &'static LayoutMeta,
    loc: FieldLoc,
) -> Result<&'static FieldMeta, FieldError> {
    let field = loc.name;
    meta.field(field).ok_or(if meta.format.is_none() {
        FieldError::Unpublished { field }
    } else {
        FieldError::Missing {
            layout: meta.rust_name,
            field,
        }
    })
}

/// The field of a decoded layout among `locs` (the locators of one field in the formats that
/// carry it): the one of the layout's format, when this layout has it.
pub(crate) fn located(meta: &'static LayoutMeta, locs: &[FieldLoc]) -> Option<&'static FieldMeta> {
    let loc = locs.iter().find(|l| l.format == meta.format_name())?;
    meta.field(loc.name)
}

/// Read `width` (1..=8) bytes at `off` as a little-endian unsigned integer.
pub(crate) fn read_uint(b: &Bundle, off: usize, width: usize) -> u64 {
    let mut v = 0u64;
    for i in (0..width).rev() {
        v = v << 8 | b.0[off + i] as u64;
    }
    v
}

/// The unsigned value of the field `loc` names, in `gen`; `None` when `gen` has no such field.
pub(crate) fn read_loc(b: &Bundle, loc: FieldLoc, gen: Gen) -> Option<u64> {
    let (at, width) = (loc.at(gen)? as usize, loc.width(gen)? as usize);
    (width <= 8 && at + width <= b.0.len()).then(|| read_uint(b, at, width))
}

/// Write the low `width` (1..=8) bytes of `v` at `off`, little-endian.
pub(crate) fn write_uint(b: &mut Bundle, off: usize, width: usize, v: u64) {
    for i in 0..width {
        b.0[off + i] = (v >> (8 * i)) as u8;
    }
}

/// How a leaf's value is shown.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum LeafKind {
    /// Unsigned integer.
    Unsigned,
    /// Signed integer (two's complement of the width).
    Signed,
    /// Bytes, as lower-case hex.
    Bytes,
    /// The low 4 bits of a dtype-pair byte.
    NibbleLo,
    /// The high 4 bits of a dtype-pair byte.
    NibbleHi,
}

/// The smallest named piece of a bundle the `wire` attribute addresses.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Leaf {
    /// `field`, `field.sub`, `field.step[1]`, or `@<offset>` for bytes outside every field.
    pub name: Cow<'static, str>,
    /// First byte.
    pub off: usize,
    /// Width in bytes.
    pub width: usize,
    /// How the value is shown.
    pub kind: LeafKind,
}

fn leaf(name: impl Into<Cow<'static, str>>, off: usize, width: usize, kind: LeafKind) -> Leaf {
    Leaf {
        name: name.into(),
        off,
        width,
        kind,
    }
}

/// The leaves of one field, in byte order.
pub(crate) fn leaves_of(m: &FieldMeta, out: &mut Vec<Leaf>) {
    use LeafKind::*;
    let o = m.offset as usize;
    let n = m.name;
    match m.ty {
        FieldType::U8
        | FieldType::U16
        | FieldType::U32
        | FieldType::U64
        | FieldType::F32
        | FieldType::Enum(_)
        | FieldType::Bits(_)
        | FieldType::Addr4
        | FieldType::Addr8 => out.push(leaf(n, o, m.width() as usize, Unsigned)),
        FieldType::DtypePair => {
            out.push(leaf(format!("{n}.lo"), o, 1, NibbleLo));
            out.push(leaf(format!("{n}.hi"), o, 1, NibbleHi));
        }
        FieldType::I16 | FieldType::I32 => out.push(leaf(n, o, m.width() as usize, Signed)),
        FieldType::Tensor(d) | FieldType::MemPattern(d) => {
            let d = d as usize;
            out.push(leaf(format!("{n}.addr"), o, 4, Unsigned));
            for i in 0..d {
                out.push(leaf(format!("{n}.step[{i}]"), o + 4 + 2 * i, 2, Signed));
            }
            for i in 0..d {
                out.push(leaf(
                    format!("{n}.num[{i}]"),
                    o + 4 + 2 * d + 2 * i,
                    2,
                    Unsigned,
                ));
            }
        }
        FieldType::MxMemPattern1d => {
            for (sub, off, w) in [
                ("data", 0, 4),
                ("scale", 4, 4),
                ("k", 8, 2),
                ("step_sign", 10, 1),
                ("scale_partition", 11, 1),
                ("reserved", 12, 4),
            ] {
                out.push(leaf(format!("{n}.{sub}"), o + off, w, Unsigned));
            }
        }
        FieldType::MxIndirect16b => {
            for (sub, off, w) in [
                ("indices", 0, 4),
                ("data", 4, 4),
                ("scale", 8, 4),
                ("k", 12, 2),
                ("byte_0e", 14, 1),
                ("scale_partition", 15, 1),
            ] {
                out.push(leaf(format!("{n}.{sub}"), o + off, w, Unsigned));
            }
        }
        FieldType::EventsExt => {
            for (sub, off, w) in [
                ("wait_mode", 0, 1),
                ("wait_idx", 1, 1),
                ("update_mode", 2, 1),
                ("update_idx", 3, 1),
                ("sem_wait_value", 4, 4),
                ("sem_update_value", 8, 4),
            ] {
                out.push(leaf(format!("{n}.{sub}"), o + off, w, Unsigned));
            }
        }
        FieldType::I32Array(k) => {
            for i in 0..k as usize {
                out.push(leaf(format!("{n}[{i}]"), o + 4 * i, 4, Signed));
            }
        }
        FieldType::U16Array(k) => {
            for i in 0..k as usize {
                out.push(leaf(format!("{n}[{i}]"), o + 2 * i, 2, Unsigned));
            }
        }
        FieldType::Str(w) | FieldType::Opaque(w) => out.push(leaf(n, o, w as usize, Bytes)),
    }
}

/// Every leaf of a layout (fields and reserved runs), sorted by offset. Bytes no field covers
/// become `@<offset>` runs.
pub(crate) fn leaves(meta: &LayoutMeta) -> Vec<Leaf> {
    let mut out = Vec::new();
    let mut covered = [false; 64];
    for m in meta.fields {
        leaves_of(m, &mut out);
        for c in covered
            .iter_mut()
            .skip(m.offset as usize)
            .take(m.width() as usize)
        {
            *c = true;
        }
    }
    let mut i = 0;
    while i < 64 {
        if covered[i] {
            i += 1;
            continue;
        }
        let start = i;
        while i < 64 && !covered[i] {
            i += 1;
        }
        out.push(leaf(format!("@{start}"), start, i - start, LeafKind::Bytes));
    }
    out.sort_by_key(|l| l.off);
    out
}

/// Find a leaf by name in a layout (`@<offset>` names resolve to any byte run in range).
pub(crate) fn find_leaf(meta: &LayoutMeta, name: &str) -> Option<Leaf> {
    if let Some(off) = name.strip_prefix('@') {
        let off: usize = off.parse().ok()?;
        return (off < 64).then(|| leaf(name.to_string(), off, 0, LeafKind::Bytes));
    }
    let field_name = name.split(['.', '[']).next().unwrap_or(name);
    let m = meta.field(field_name)?;
    let mut all = Vec::new();
    leaves_of(m, &mut all);
    all.into_iter().find(|l| l.name == name)
}

/// Lower-case hex of bytes.
pub(crate) fn hex(bytes: &[u8]) -> String {
    let mut s = String::with_capacity(bytes.len() * 2);
    for b in bytes {
        s.push_str(&format!("{b:02x}"));
    }
    s
}

/// Parse lower- or upper-case hex (no separators).
pub(crate) fn unhex(s: &str) -> Option<Vec<u8>> {
    if !s.len().is_multiple_of(2) {
        return None;
    }
    (0..s.len())
        .step_by(2)
        .map(|i| s.get(i..i + 2).and_then(|p| u8::from_str_radix(p, 16).ok()))
        .collect()
}

/// The JSON value of a leaf.
pub(crate) fn leaf_value(b: &Bundle, l: &Leaf) -> Value {
    match l.kind {
        LeafKind::Unsigned => read_uint(b, l.off, l.width).into(),
        LeafKind::Signed => {
            let v = read_uint(b, l.off, l.width);
            let shift = 64 - 8 * l.width as u32;
            (((v << shift) as i64) >> shift).into()
        }
        LeafKind::Bytes => hex(&b.0[l.off..l.off + l.width]).into(),
        LeafKind::NibbleLo => (b.0[l.off] & 0x0F).into(),
        LeafKind::NibbleHi => (b.0[l.off] >> 4).into(),
    }
}

/// Integer from JSON that fits `width` bytes (signed or unsigned reading), as raw bits.
fn int_bits(v: &Value, width: usize) -> Result<u64, ValueError> {
    let bits = 8 * width as u32;
    if let Some(u) = v.as_u64() {
        if bits == 64 || u >> bits == 0 {
            return Ok(u);
        }
        return Err(ValueError::IntWidth {
            value: u.into(),
            width,
        });
    }
    if let Some(i) = v.as_i64() {
        let min = if bits == 64 {
            i64::MIN
        } else {
            -(1i64 << (bits - 1))
        };
        if i >= min {
            return Ok(if bits == 64 {
                i as u64
            } else {
                (i as u64) & ((1u64 << bits) - 1)
            });
        }
        return Err(ValueError::IntWidth {
            value: i.into(),
            width,
        });
    }
    Err(ValueError::NotInteger(v.clone()))
}

/// Write a leaf's JSON value into the bundle.
pub(crate) fn put_leaf(b: &mut Bundle, l: &Leaf, v: &Value) -> Result<(), ValueError> {
    match l.kind {
        LeafKind::Bytes => {
            let s = v
                .as_str()
                .ok_or_else(|| ValueError::NotHexString(v.clone()))?;
            let bytes = unhex(s).ok_or_else(|| ValueError::NotHex(s.to_string()))?;
            let width = if l.width == 0 { bytes.len() } else { l.width };
            if bytes.len() != width || l.off + width > 64 {
                return Err(ValueError::HexWidth {
                    len: bytes.len(),
                    width,
                    offset: l.off,
                });
            }
            b.0[l.off..l.off + width].copy_from_slice(&bytes);
            Ok(())
        }
        LeafKind::Unsigned | LeafKind::Signed => {
            write_uint(b, l.off, l.width, int_bits(v, l.width)?);
            Ok(())
        }
        LeafKind::NibbleLo | LeafKind::NibbleHi => {
            let x = int_bits(v, 1)? as u8;
            if x > 0x0F {
                return Err(ValueError::Nibble(x));
            }
            let o = l.off;
            b.0[o] = if l.kind == LeafKind::NibbleLo {
                (b.0[o] & 0xF0) | x
            } else {
                (b.0[o] & 0x0F) | x << 4
            };
            Ok(())
        }
    }
}

/// The friendly JSON value of a whole field used as an instruction parameter: enum values by
/// name, floats as numbers (non-finite ones as `0x`-prefixed bits), strings up to their first
/// NUL, extended events as an object; integers otherwise.
pub(crate) fn param_value(m: &FieldMeta, b: &Bundle) -> Value {
    let o = m.offset as usize;
    match m.ty {
        FieldType::DtypePair => b.0[o].into(),
        FieldType::Enum(e) => enum_value(e, b.0[o]),
        FieldType::F32 => {
            let bits = read_uint(b, o, 4) as u32;
            let f = f32::from_bits(bits);
            if f.is_finite() {
                serde_json::Number::from_f64(f as f64)
                    .map_or_else(|| format!("{bits:#010x}").into(), Value::Number)
            } else {
                format!("{bits:#010x}").into()
            }
        }
        FieldType::Str(w) => {
            let bytes = &b.0[o..o + w as usize];
            let end = bytes.iter().position(|&c| c == 0).unwrap_or(bytes.len());
            String::from_utf8_lossy(&bytes[..end]).into_owned().into()
        }
        FieldType::EventsExt => {
            let mut obj = Map::new();
            obj.insert("wait_mode".into(), enum_value("WAIT_MODE", b.0[o]));
            obj.insert("wait_idx".into(), b.0[o + 1].into());
            obj.insert("update_mode".into(), enum_value("UPDATE_MODE", b.0[o + 2]));
            obj.insert("update_idx".into(), b.0[o + 3].into());
            obj.insert("sem_wait_value".into(), read_uint(b, o + 4, 4).into());
            obj.insert("sem_update_value".into(), read_uint(b, o + 8, 4).into());
            Value::Object(obj)
        }
        _ => {
            let mut l = Vec::new();
            leaves_of(m, &mut l);
            match l.as_slice() {
                [one] => leaf_value(b, one),
                _ => Value::Array(l.iter().map(|x| leaf_value(b, x)).collect()),
            }
        }
    }
}

/// Write a parameter's JSON value (the form [`param_value`] produces) into its field.
pub(crate) fn put_param(m: &FieldMeta, b: &mut Bundle, v: &Value) -> Result<(), ValueError> {
    let o = m.offset as usize;
    match m.ty {
        FieldType::DtypePair => {
            b.0[o] = int_bits(v, 1)? as u8;
            Ok(())
        }
        FieldType::Enum(e) => {
            b.0[o] = parse_enum(e, v)?;
            Ok(())
        }
        FieldType::F32 => {
            let bits = match v {
                Value::String(s) => s
                    .strip_prefix("0x")
                    .and_then(|h| u32::from_str_radix(h, 16).ok())
                    .ok_or_else(|| ValueError::FloatBits(s.clone()))?,
                Value::Number(n) => {
                    let f = n.as_f64().ok_or_else(|| ValueError::NotF64(n.clone()))?;
                    let g = f as f32;
                    if g as f64 != f {
                        return Err(ValueError::NotBinary32(f.to_bits()));
                    }
                    g.to_bits()
                }
                other => return Err(ValueError::NotNumber(other.clone())),
            };
            write_uint(b, o, 4, bits as u64);
            Ok(())
        }
        FieldType::Str(w) => {
            let s = v.as_str().ok_or_else(|| ValueError::NotString(v.clone()))?;
            let w = w as usize;
            if s.len() > w || s.as_bytes().contains(&0) {
                return Err(ValueError::StrWidth {
                    text: s.to_string(),
                    width: w,
                });
            }
            b.0[o..o + w].fill(0);
            b.0[o..o + s.len()].copy_from_slice(s.as_bytes());
            Ok(())
        }
        FieldType::EventsExt => {
            let obj = v
                .as_object()
                .ok_or_else(|| ValueError::NotObject(v.clone()))?;
            for k in obj.keys() {
                if ![
                    "wait_mode",
                    "wait_idx",
                    "update_mode",
                    "update_idx",
                    "sem_wait_value",
                    "sem_update_value",
                ]
                .contains(&k.as_str())
                {
                    return Err(ValueError::UnknownKey(k.clone()));
                }
            }
            let get = |k: &str| obj.get(k).unwrap_or(&Value::Null);
            let zero = Value::from(0u8);
            let or0 = |x: &Value| if x.is_null() { zero.clone() } else { x.clone() };
            b.0[o] = parse_enum("WAIT_MODE", &or0(get("wait_mode")))?;
            b.0[o + 1] = int_bits(&or0(get("wait_idx")), 1)? as u8;
            b.0[o + 2] = parse_enum("UPDATE_MODE", &or0(get("update_mode")))?;
            b.0[o + 3] = int_bits(&or0(get("update_idx")), 1)? as u8;
            write_uint(b, o + 4, 4, int_bits(&or0(get("sem_wait_value")), 4)?);
            write_uint(b, o + 8, 4, int_bits(&or0(get("sem_update_value")), 4)?);
            Ok(())
        }
        _ => {
            let mut l = Vec::new();
            leaves_of(m, &mut l);
            match (l.as_slice(), v) {
                ([one], _) => put_leaf(b, one, v),
                (many, Value::Array(vs)) if vs.len() == many.len() => {
                    for (x, y) in many.iter().zip(vs) {
                        put_leaf(b, x, y)?;
                    }
                    Ok(())
                }
                _ => Err(ValueError::Count {
                    count: l.len(),
                    found: v.clone(),
                }),
            }
        }
    }
}

/// An enumeration value by name, or its number when the spec does not name it.
pub(crate) fn enum_value(e: &str, raw: u8) -> Value {
    match spec::enum_def(e).and_then(|d| d.value(raw)) {
        Some(v) => v.name.into(),
        None => raw.into(),
    }
}

/// Parse an enumeration value given by name (case-insensitive) or number.
pub(crate) fn parse_enum(e: &'static str, v: &Value) -> Result<u8, ValueError> {
    match v {
        Value::String(s) => spec::enum_def(e)
            .and_then(|d| d.by_name(s))
            .map(|x| x.value)
            .ok_or_else(|| ValueError::NotEnumValue {
                name: s.clone(),
                enumeration: e,
            }),
        _ => Ok(int_bits(v, 1)? as u8),
    }
}

/// The events block's fields in wire order: the generated locators of `spec::EVENTS_FIELDS`.
const EVENTS: [FieldLoc; 5] = [
    loc::events::WAIT_MODE,
    loc::events::WAIT_IDX,
    loc::events::UPDATE_MODE,
    loc::events::UPDATE_IDX,
    loc::events::SEMAPHORE_VALUE,
];

/// The generation whose offsets the events block is read at: the block is common to every
/// generation (checked by `events_block_is_common`).
const EV_GEN: Gen = Gen::V5;

/// The bundle bytes of the events block: from its first field to the end of its last.
pub(crate) fn events_range() -> std::ops::Range<usize> {
    let span = |l: &FieldLoc| match (l.at(EV_GEN), l.width(EV_GEN)) {
        (Some(at), Some(w)) => (at as usize, at as usize + w as usize),
        _ => (0, 0),
    };
    let lo = EVENTS.iter().map(|l| span(l).0).min().unwrap_or(0);
    let hi = EVENTS.iter().map(|l| span(l).1).max().unwrap_or(0);
    lo..hi
}

/// The event fields of a bundle as an object of the non-zero members (modes by name), or
/// `None` when all are zero.
pub(crate) fn events_value(b: &Bundle) -> Option<Value> {
    if b.0[events_range()].iter().all(|&x| x == 0) {
        return None;
    }
    let mut obj = Map::new();
    for l in EVENTS {
        let v = read_loc(b, l, EV_GEN).unwrap_or(0);
        if v != 0 {
            let v = match l.ty(EV_GEN) {
                Some(FieldType::Enum(e)) => enum_value(e, v as u8),
                _ => v.into(),
            };
            obj.insert(l.name.into(), v);
        }
    }
    Some(Value::Object(obj))
}

/// Write an events object (the form [`events_value`] produces; absent members are zero).
pub(crate) fn put_events(b: &mut Bundle, v: &Value) -> Result<(), ValueError> {
    if v.is_null() {
        return Ok(());
    }
    let obj = v
        .as_object()
        .ok_or_else(|| ValueError::NotEventsObject(v.clone()))?;
    b.0[events_range()].fill(0);
    for (k, x) in obj {
        let Some(l) = EVENTS.iter().find(|l| l.name == k) else {
            return Err(ValueError::UnknownEventsKey(k.to_string()));
        };
        let (Some(at), Some(width)) = (l.at(EV_GEN), l.width(EV_GEN)) else {
            return Err(ValueError::UnknownEventsKey(k.to_string()));
        };
        let (at, width) = (at as usize, width as usize);
        let raw = match l.ty(EV_GEN) {
            Some(FieldType::Enum(e)) => parse_enum(e, x)? as u64,
            _ => int_bits(x, width)?,
        };
        write_uint(b, at, width, raw);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn leaves_cover_every_byte_once() {
        for op in [0x02u8, 0x41, 0x43, 0x0A, 0xA0, 0xC1, 0x69] {
            for gen in Gen::ALL {
                let Ok(meta) = layout_of(&canonical(op), gen) else {
                    continue;
                };
                let mut seen = [0u8; 64];
                for l in leaves(meta) {
                    if l.kind == LeafKind::NibbleHi {
                        continue; // shares its byte with the low nibble
                    }
                    for s in seen.iter_mut().skip(l.off).take(l.width) {
                        *s += 1;
                    }
                    assert_eq!(
                        find_leaf(meta, &l.name).map(|x| x.off),
                        Some(l.off),
                        "{op:#x} {gen} {}",
                        l.name
                    );
                }
                assert!(seen.iter().all(|&c| c == 1), "{op:#x} {gen}: {seen:?}");
            }
        }
    }

    #[test]
    fn leaf_values_round_trip() {
        let meta = layout_of(&canonical(0x41), Gen::V3).unwrap();
        let mut b = canonical(0x41);
        for (i, x) in b.0.iter_mut().enumerate().skip(4) {
            *x = (i * 37 + 11) as u8;
        }
        let mut c = canonical(0x41);
        for l in leaves(meta) {
            put_leaf(&mut c, &l, &leaf_value(&b, &l)).unwrap();
        }
        assert_eq!(b, c);
    }

    #[test]
    fn events_block_is_common() {
        assert_eq!(events_range(), 4..12);
        for l in EVENTS {
            for gen in Gen::ALL {
                assert_eq!(l.at(gen), l.at(EV_GEN), "{} in {gen}", l.name);
                assert_eq!(l.ty(gen), l.ty(EV_GEN), "{} in {gen}", l.name);
            }
        }
        let names: Vec<&str> = spec::EVENTS_FIELDS.iter().map(|r| r.name).collect();
        assert_eq!(names, EVENTS.map(|l| l.name));
    }

    #[test]
    fn params_and_events_round_trip() {
        let meta = layout_of(&canonical(0xA0), Gen::V4).unwrap();
        let m = meta.field("events_ext").unwrap();
        let mut b = canonical(0xA0);
        b.0[32] = 0x05;
        b.0[34] = 0x13;
        b.0[36] = 7;
        let v = param_value(m, &b);
        assert_eq!(v["wait_mode"], "SEM_GE_IMM");
        let mut c = canonical(0xA0);
        put_param(m, &mut c, &v).unwrap();
        assert_eq!(b, c);
        b.0[4] = 0x85;
        b.0[8] = 3;
        let e = events_value(&b).unwrap();
        let mut d = c;
        put_events(&mut d, &e).unwrap();
        assert_eq!(d.0[4..12], b.0[4..12]);
        assert!(events_value(&canonical(0xA0)).is_none());
        let f = layout_of(&canonical(0x21), Gen::V2)
            .unwrap()
            .field("scale_value")
            .unwrap();
        let mut g = canonical(0x21);
        put_param(f, &mut g, &Value::from(0.5)).unwrap();
        assert_eq!(param_value(f, &g), Value::from(0.5));
        put_param(f, &mut g, &Value::from("0x7fc00001")).unwrap();
        assert_eq!(param_value(f, &g), Value::from("0x7fc00001"));
        assert_eq!(
            put_param(f, &mut g, &Value::from(0.1)),
            Err(ValueError::NotBinary32(0.1f64.to_bits()))
        );
        assert_eq!(
            ValueError::NotBinary32(0.1f64.to_bits()).to_string(),
            "0.1 is not exactly a binary32 value"
        );
    }

    #[test]
    fn value_faults_name_what_does_not_fit() {
        let l = leaf("x", 4, 2, LeafKind::Unsigned);
        let mut b = canonical(0x41);
        let err = |v: Value| put_leaf(&mut b.clone(), &l, &v).unwrap_err().to_string();
        assert_eq!(err(Value::from(70000)), "70000 does not fit 2 byte(s)");
        assert_eq!(err(Value::from(-40000)), "-40000 does not fit 2 byte(s)");
        assert_eq!(err(Value::from("a")), "expected an integer, found \"a\"");
        let h = leaf("@12", 12, 2, LeafKind::Bytes);
        assert_eq!(
            put_leaf(&mut b, &h, &Value::from("zz")),
            Err(ValueError::NotHex("zz".into()))
        );
        assert_eq!(
            put_leaf(&mut b, &h, &Value::from("0011aa"))
                .unwrap_err()
                .to_string(),
            "3 byte(s) of hex do not fit 2 byte(s) at offset 12"
        );
        let n = leaf("d.hi", 13, 1, LeafKind::NibbleHi);
        assert_eq!(
            put_leaf(&mut b, &n, &Value::from(16)),
            Err(ValueError::Nibble(16))
        );
        assert_eq!(
            put_events(&mut b, &serde_json::json!({"wait": 1}))
                .unwrap_err()
                .to_string(),
            "unknown events key `wait`"
        );
        assert_eq!(
            parse_enum("ALU_OP", &Value::from("NOPE"))
                .unwrap_err()
                .to_string(),
            "`NOPE` is not a ALU_OP value"
        );
    }
}
