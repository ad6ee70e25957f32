//! Field values by type, and the one writer of a value into its field: the text form's values
//! are read into a [`FieldArg`] ([`parse_value`]) and a program building instructions hands
//! them directly ([`encode_fields`]); both are written by [`write_arg`].

use super::*;

/// One field's value, given by type rather than as text.
#[derive(Clone, Debug, PartialEq)]
pub enum FieldArg {
    /// An integer: any integer field, an address, an enumeration or a bitfield by its code;
    /// in a `F32` field the number it is (rounded to fp32); in a `u32` that may hold an fp32
    /// immediate, its raw bits (the text form's integer there).
    Int(i128),
    /// A float for an fp32 field, rounded to nearest even (as `numpy.float32` rounds); a finite
    /// value beyond the fp32 range is refused, infinities and NaN are kept.
    Float(f64),
    /// The raw bits of an fp32 field (the text form's `0x` float).
    F32Bits(u32),
    /// An enumeration value by name (any case) or number; a dtype pair `LO|HI`; a bitfield's
    /// `{name=value ...}`; a string field's characters (ASCII, stored as they are).
    Name(String),
    /// A dtype pair: the low and the high nibble (each a [`FieldArg::Name`] or
    /// [`FieldArg::Int`]).
    DtypePair(Box<FieldArg>, Box<FieldArg>),
    /// An access pattern: the address, then one step and one count per dimension (innermost
    /// first), exactly as many as the field has.
    Pattern {
        /// Start address.
        addr: i128,
        /// Steps in elements.
        step: Vec<i128>,
        /// Counts.
        num: Vec<i128>,
    },
    /// Named parts: a bitfield's sub-fields (`rsv` for its raw other bits), or the members of
    /// a record field (`EventsExt`, the MX patterns).
    Record(Vec<(String, FieldArg)>),
    /// An array field's values.
    List(Vec<i128>),
    /// A string or opaque field's bytes (at most the field's size; the rest is zero), or a
    /// `reserved@N` item's bytes.
    Bytes(Vec<u8>),
}

impl FieldArg {
    /// What kind of value this is (for messages).
    pub(crate) fn kind(&self) -> &'static str {
        match self {
            FieldArg::Int(_) => "an integer",
            FieldArg::Float(_) => "a float",
            FieldArg::F32Bits(_) => "fp32 bits",
            FieldArg::Name(_) => "a name",
            FieldArg::DtypePair(..) => "a dtype pair",
            FieldArg::Pattern { .. } => "an access pattern",
            FieldArg::Record(_) => "named parts",
            FieldArg::List(_) => "a list",
            FieldArg::Bytes(_) => "bytes",
        }
    }
}

fn expected(what: &str, a: &FieldArg) -> String {
    match a {
        FieldArg::Name(s) => format!("expected {what}, got the name `{s}`"),
        FieldArg::Float(f) => format!("expected {what}, got the float {f:?}"),
        _ => format!("expected {what}, got {}", a.kind()),
    }
}

/// `v` within `min..=max`.
fn in_range(v: i128, min: i128, max: i128) -> Result<i128, String> {
    if (min..=max).contains(&v) {
        Ok(v)
    } else if min == 0 && v >= 0 {
        Err(format!("{v} does not fit (max {max})"))
    } else {
        Err(format!("{v} is out of range {min}..={max}"))
    }
}

fn int_arg(a: &FieldArg, min: i128, max: i128) -> Result<i128, String> {
    match a {
        FieldArg::Int(v) => in_range(*v, min, max),
        _ => Err(expected("an integer", a)),
    }
}

fn uint_arg(a: &FieldArg, max: u64) -> Result<u64, String> {
    int_arg(a, 0, max as i128).map(|v| v as u64)
}

/// fp32 bits of a float: rounded to nearest even; a finite value beyond the fp32 range refused.
fn f32_of(v: f64) -> Result<u32, String> {
    let f = v as f32;
    if f.is_infinite() && v.is_finite() {
        return Err(format!(
            "{v:e} is beyond the fp32 range (largest finite {:e}); give an infinity for infinity",
            f32::MAX
        ));
    }
    Ok(f.to_bits())
}

fn enum_arg(a: &FieldArg, def: &EnumDef) -> Result<u8, String> {
    match a {
        FieldArg::Name(s) => parse_enum(s, def),
        FieldArg::Int(_) => uint_arg(a, 0xFF).map(|v| v as u8),
        _ => Err(expected(&format!("a {} value", def.name), a)),
    }
}

/// A bitfield's sub-field values by name (`rsv`: raw bits or-ed in) → its byte.
pub(crate) fn pack_bits(def: &BitfieldDef, parts: &[(&str, u64)]) -> Result<u8, String> {
    let mut raw = 0u8;
    for (i, (k, v)) in parts.iter().enumerate() {
        if parts[..i].iter().any(|(p, _)| p == k) {
            return Err(format!("{}: sub-field `{k}` given twice", def.name));
        }
        if *k == "rsv" {
            raw |= in_range(*v as i128, 0, 0xFF)? as u8;
            continue;
        }
        let d = def.bits.iter().find(|d| d.name == *k).ok_or_else(|| {
            format!(
                "{} has no sub-field `{k}` (sub-fields: {})",
                def.name,
                sub_field_names(def)
            )
        })?;
        let v = in_range(*v as i128, 0, (1i128 << d.width) - 1).map_err(|e| format!("{k}: {e}"))?;
        raw |= (v as u8) << d.lsb;
    }
    Ok(raw)
}

/// A record's members taken by name; `finish` refuses any left over.
struct Rec<'a>(Vec<(&'a str, &'a FieldArg)>);

impl<'a> Rec<'a> {
    fn of(a: &'a FieldArg) -> Result<Self, String> {
        match a {
            FieldArg::Record(v) => Ok(Rec(v.iter().map(|(k, x)| (k.as_str(), x)).collect())),
            _ => Err(expected("named parts", a)),
        }
    }

    fn get(&mut self, key: &str) -> Result<&'a FieldArg, String> {
        let i = self
            .0
            .iter()
            .position(|(k, _)| *k == key)
            .ok_or(format!("missing {key}="))?;
        Ok(self.0.remove(i).1)
    }

    fn uint(&mut self, key: &str, max: u64) -> Result<u64, String> {
        let a = self.get(key)?;
        match a {
            FieldArg::Name(s) => Err(format!("`{s}` is not an integer")),
            _ => uint_arg(a, max).map_err(|e| format!("{key}: {e}")),
        }
    }

    fn enumerated(&mut self, key: &str, def: &str) -> Result<u8, String> {
        enum_arg(self.get(key)?, spec::enum_def(def).ok_or(def.to_string())?)
    }

    fn finish(self) -> Result<(), String> {
        match self.0.first() {
            Some((k, _)) => Err(format!("unknown or repeated key `{k}`")),
            None => Ok(()),
        }
    }
}

fn bytes_arg(a: &FieldArg, n: usize) -> Result<Vec<u8>, String> {
    let mut out = match a {
        FieldArg::Bytes(v) => v.clone(),
        FieldArg::Name(s) => {
            if let Some(c) = s.chars().find(|c| !c.is_ascii()) {
                return Err(format!("non-ASCII character `{c}`"));
            }
            s.as_bytes().to_vec()
        }
        _ => return Err(expected("a string or bytes", a)),
    };
    if out.len() > n {
        return Err(format!("{} bytes do not fit in {n}", out.len()));
    }
    out.resize(n, 0);
    Ok(out)
}

fn list_arg(a: &FieldArg, n: usize, min: i128, max: i128) -> Result<Vec<i128>, String> {
    match a {
        FieldArg::List(v) if v.len() == n => v.iter().map(|&x| in_range(x, min, max)).collect(),
        FieldArg::List(v) => Err(format!("expected {n} values, got {}", v.len())),
        _ => Err(expected(&format!("a list of {n} integers"), a)),
    }
}

/// Write a typed value into field `m` of `b`: every value of every instruction, from the
/// text form or given by type, is encoded here.
pub fn write_arg(m: &FieldMeta, a: &FieldArg, b: &mut Bundle) -> Result<(), String> {
    let o = m.offset as usize;
    let w = &mut b.0;
    match m.ty {
        FieldType::U8 => w[o] = uint_arg(a, 0xFF)? as u8,
        FieldType::U16 => (uint_arg(a, 0xFFFF)? as u16).write(w, o),
        FieldType::U32 if m.float => match a {
            FieldArg::Float(f) => f32_of(*f)?.write(w, o),
            FieldArg::F32Bits(x) => x.write(w, o),
            FieldArg::Int(_) => (uint_arg(a, u32::MAX as u64)? as u32).write(w, o),
            _ => return Err(expected("a number", a)),
        },
        FieldType::U32 | FieldType::Addr4 => (uint_arg(a, u32::MAX as u64)? as u32).write(w, o),
        FieldType::U64 => uint_arg(a, u64::MAX)?.write(w, o),
        FieldType::Addr8 => Addr8(uint_arg(a, u64::MAX)?).write(w, o),
        FieldType::I16 => (int_arg(a, i16::MIN as i128, i16::MAX as i128)? as i16).write(w, o),
        FieldType::I32 => (int_arg(a, i32::MIN as i128, i32::MAX as i128)? as i32).write(w, o),
        FieldType::F32 => match a {
            FieldArg::Float(f) => f32_of(*f)?.write(w, o),
            FieldArg::F32Bits(x) => x.write(w, o),
            // A number given as an integer is that number (exact integers round as decimals do).
            FieldArg::Int(v) => (*v as f32).to_bits().write(w, o),
            _ => return Err(expected("a number", a)),
        },
        FieldType::Enum(e) => w[o] = enum_arg(a, spec::enum_def(e).ok_or("unknown enum")?)?,
        FieldType::DtypePair => {
            let dt = spec::enum_def("DTYPE").ok_or("DTYPE")?;
            let (lo, hi) = match a {
                FieldArg::DtypePair(lo, hi) => (enum_arg(lo, dt)?, enum_arg(hi, dt)?),
                FieldArg::Name(s) => {
                    let (lo, hi) = s
                        .split_once('|')
                        .ok_or_else(|| format!("expected LO|HI, got `{s}`"))?;
                    (parse_enum(lo, dt)?, parse_enum(hi, dt)?)
                }
                _ => return Err(expected("a dtype pair", a)),
            };
            if lo > 0xF || hi > 0xF {
                return Err("dtype pair codes must be <= 0x0F".into());
            }
            w[o] = lo | hi << 4;
        }
        FieldType::Bits(bf) => {
            let def = spec::bitfield(bf).ok_or("unknown bitfield")?;
            w[o] = match a {
                FieldArg::Name(s) => parse_bits(s, def)?,
                FieldArg::Record(parts) => {
                    let mut vals = Vec::new();
                    for (k, v) in parts {
                        vals.push((
                            k.as_str(),
                            uint_arg(v, u64::MAX).map_err(|e| format!("{k}: {e}"))?,
                        ));
                    }
                    pack_bits(def, &vals)?
                }
                _ => uint_arg(a, 0xFF)? as u8,
            }
        }
        FieldType::Tensor(n) | FieldType::MemPattern(n) => {
            let n = n as usize;
            let FieldArg::Pattern { addr, step, num } = a else {
                return Err(expected("an access pattern", a));
            };
            if step.len() != n || num.len() != n {
                return Err(format!(
                    "{} steps and {} counts for a {n}-dimensional pattern",
                    step.len(),
                    num.len()
                ));
            }
            let addr = in_range(*addr, 0, u32::MAX as i128)? as u32;
            let step: Vec<i64> = step
                .iter()
                .map(|&s| in_range(s, i16::MIN as i128, i16::MAX as i128).map(|v| v as i64))
                .collect::<Result<_, _>>()?;
            let num: Vec<i64> = num
                .iter()
                .map(|&c| in_range(c, 0, u16::MAX as i128).map(|v| v as i64))
                .collect::<Result<_, _>>()?;
            write_pattern(w, o, addr, &step, &num);
        }
        FieldType::MxMemPattern1d => {
            let mut g = Rec::of(a)?;
            let x = MxMemPattern1d {
                data: Addr4(g.uint("data", u32::MAX as u64)? as u32),
                scale: Addr4(g.uint("scale", u32::MAX as u64)? as u32),
                k: g.uint("k", 0xFFFF)? as u16,
                step_sign: g.uint("step_sign", 0xFF)? as u8,
                scale_partition: g.uint("scale_partition", 0xFF)? as u8,
                reserved: [0; 4],
            };
            g.finish()?;
            x.write(w, o);
        }
        FieldType::MxIndirect16b => {
            let mut g = Rec::of(a)?;
            let x = MxIndirect16b {
                indices: Addr4(g.uint("indices", u32::MAX as u64)? as u32),
                data: Addr4(g.uint("data", u32::MAX as u64)? as u32),
                scale: Addr4(g.uint("scale", u32::MAX as u64)? as u32),
                k: g.uint("k", 0xFFFF)? as u16,
                byte_0e: g.uint("byte_0e", 0xFF)? as u8,
                scale_partition: g.uint("scale_partition", 0xFF)? as u8,
            };
            g.finish()?;
            x.write(w, o);
        }
        FieldType::EventsExt => {
            let mut g = Rec::of(a)?;
            let e = EventsExt {
                wait_mode: crate::formats::WaitMode(g.enumerated("wait_mode", "WAIT_MODE")?),
                wait_idx: g.uint("wait_idx", 0xFF)? as u8,
                update_mode: crate::formats::UpdateMode(
                    g.enumerated("update_mode", "UPDATE_MODE")?,
                ),
                update_idx: g.uint("update_idx", 0xFF)? as u8,
                sem_wait_value: g.uint("sem_wait_value", u32::MAX as u64)? as u32,
                sem_update_value: g.uint("sem_update_value", u32::MAX as u64)? as u32,
            };
            g.finish()?;
            e.write(w, o);
        }
        FieldType::I32Array(n) => {
            for (i, v) in list_arg(a, n as usize, i32::MIN as i128, i32::MAX as i128)?
                .into_iter()
                .enumerate()
            {
                (v as i32).write(w, o + 4 * i);
            }
        }
        FieldType::U16Array(n) => {
            for (i, v) in list_arg(a, n as usize, 0, u16::MAX as i128)?
                .into_iter()
                .enumerate()
            {
                (v as u16).write(w, o + 2 * i);
            }
        }
        FieldType::Str(n) | FieldType::Opaque(n) => {
            w[o..o + n as usize].copy_from_slice(&bytes_arg(a, n as usize)?)
        }
    }
    Ok(())
}

/// Read the text of one field value (`docs/asm.md`) into its typed value, refusing what the
/// field's type cannot hold as the text form does.
pub fn parse_value(m: &FieldMeta, s: &str) -> Result<FieldArg, String> {
    let int = |v: u64| FieldArg::Int(v as i128);
    Ok(match m.ty {
        FieldType::U8 => int(parse_uint(s, 0xFF)?),
        FieldType::U16 => int(parse_uint(s, 0xFFFF)?),
        FieldType::U32 if m.float && looks_float(s) => FieldArg::F32Bits(parse_f32(s)?),
        FieldType::U32 | FieldType::Addr4 => int(parse_uint(s, u32::MAX as u64)?),
        FieldType::U64 | FieldType::Addr8 => int(parse_uint(s, u64::MAX)?),
        FieldType::I16 => FieldArg::Int(parse_int(s, i16::MIN as i64, i16::MAX as i64)? as i128),
        FieldType::I32 => FieldArg::Int(parse_int(s, i32::MIN as i64, i32::MAX as i64)? as i128),
        FieldType::F32 => FieldArg::F32Bits(parse_f32(s)?),
        FieldType::Enum(_) => FieldArg::Name(s.to_string()),
        FieldType::DtypePair => {
            let (lo, hi) = s
                .split_once('|')
                .ok_or_else(|| format!("expected LO|HI, got `{s}`"))?;
            FieldArg::DtypePair(
                Box::new(FieldArg::Name(lo.into())),
                Box::new(FieldArg::Name(hi.into())),
            )
        }
        FieldType::Bits(bf) => {
            int(parse_bits(s, spec::bitfield(bf).ok_or("unknown bitfield")?)? as u64)
        }
        FieldType::Tensor(n) | FieldType::MemPattern(n) => {
            let (addr, step, num) = if s.starts_with('[') {
                let n = n as usize;
                let (head, mut pairs) = parse_group(s, '[', ']')?;
                let addr = parse_uint(head.ok_or("missing address")?, u32::MAX as u64)? as u32;
                let step = parse_list(
                    take(&mut pairs, "step").ok_or("missing step=")?,
                    n,
                    i16::MIN as i64,
                    i16::MAX as i64,
                )?;
                let num = parse_list(
                    take(&mut pairs, "num").ok_or("missing num=")?,
                    n,
                    0,
                    u16::MAX as i64,
                )?;
                no_rest(&pairs)?;
                (addr, step, num)
            } else {
                neuron::parse_operand(s, n as usize)?
            };
            FieldArg::Pattern {
                addr: addr as i128,
                step: step.into_iter().map(i128::from).collect(),
                num: num.into_iter().map(i128::from).collect(),
            }
        }
        FieldType::MxMemPattern1d | FieldType::MxIndirect16b | FieldType::EventsExt => {
            let parts = Keyed::parse(s)?.pairs().into_iter().map(|(k, v)| {
                let x = parse_u64(v).map_or_else(|| FieldArg::Name(v.into()), int);
                (k.to_string(), x)
            });
            FieldArg::Record(parts.collect())
        }
        FieldType::I32Array(n) => FieldArg::List(
            parse_list(s, n as usize, i32::MIN as i64, i32::MAX as i64)?
                .into_iter()
                .map(i128::from)
                .collect(),
        ),
        FieldType::U16Array(n) => FieldArg::List(
            parse_list(s, n as usize, 0, u16::MAX as i64)?
                .into_iter()
                .map(i128::from)
                .collect(),
        ),
        FieldType::Str(n) => FieldArg::Bytes(parse_str(s, n as usize)?),
        FieldType::Opaque(n) => FieldArg::Bytes(parse_hex(s, n as usize)?),
    })
}

/// An instruction given by type that does not encode: the field it names (`None` for the
/// mnemonic, or for a field whose layout the other fields select), and why.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{message}")]
pub struct EncodeError {
    /// The field the error is about.
    pub field: Option<String>,
    /// What is wrong (field errors start with the field's name).
    pub message: String,
}

/// Encode an instruction given as its mnemonic (as the text form spells it) and its fields'
/// typed values, through the same stage that encodes a parsed line: the layout is the one the
/// fields select, each name must be a field of it (or `reserved@N` with bytes), none may be
/// given twice, fields not given are zero.
pub fn encode_fields(
    mnemonic: &str,
    fields: &[(String, FieldArg)],
    gen: Gen,
) -> Result<Bundle, EncodeError> {
    let bad = |message: String| EncodeError {
        field: None,
        message,
    };
    let row =
        mnemonic_row(mnemonic).ok_or_else(|| bad(format!("unknown mnemonic `{mnemonic}`")))?;
    if !row.is_present(gen) {
        return Err(bad(format!(
            "{} ({:#04x}) is absent on {gen}",
            row.mnemonic(),
            row.code
        )));
    }
    let items: Vec<EncItem<'_>> = fields
        .iter()
        .map(|(k, a)| EncItem {
            key: k,
            val: Val::Arg(a),
            from: None,
        })
        .collect();
    let err = |e: ItemErr| EncodeError {
        field: Some(items[e.item].key.to_string()),
        message: e.message,
    };
    let meta = select_layout(row, &items, gen).map_err(err)?;
    encode_items(row, meta, &items, gen).map_err(err)
}
