//! The parsers of each field type, and writing a parsed value into a bundle.

use super::*;

pub(crate) fn parse_u64(s: &str) -> Option<u64> {
    let s = s.trim();
    if let Some(h) = s.strip_prefix("0x").or_else(|| s.strip_prefix("0X")) {
        u64::from_str_radix(h, 16).ok()
    } else {
        s.parse().ok()
    }
}

pub(crate) fn parse_i64(s: &str) -> Option<i64> {
    let s = s.trim();
    match s.strip_prefix('-') {
        Some(r) => parse_u64(r).and_then(|v| i64::try_from(v).ok()).map(|v| -v),
        None => parse_u64(s).and_then(|v| i64::try_from(v).ok()),
    }
}

pub(crate) fn parse_uint(s: &str, max: u64) -> Result<u64, String> {
    match parse_u64(s) {
        Some(v) if v <= max => Ok(v),
        Some(v) => Err(format!("{v} does not fit (max {max})")),
        None => Err(format!("`{s}` is not an integer")),
    }
}

pub(crate) fn parse_int(s: &str, min: i64, max: i64) -> Result<i64, String> {
    match parse_i64(s) {
        Some(v) if (min..=max).contains(&v) => Ok(v),
        Some(v) => Err(format!("{v} is out of range {min}..={max}")),
        None => Err(format!("`{s}` is not an integer")),
    }
}

pub(crate) fn parse_enum(s: &str, def: &EnumDef) -> Result<u8, String> {
    if let Some(v) = def.by_name(s) {
        return Ok(v.value);
    }
    parse_uint(s, 0xFF).map(|v| v as u8).map_err(|_| {
        let names: Vec<&str> = def.values.iter().map(|v| v.name).collect();
        format!(
            "`{s}` is not a {} value (names, any case: {}; or a number)",
            def.name,
            names.join(", ")
        )
    })
}

/// Whether `s` is written as a decimal float (a `.`, an exponent, or inf/nan), not an integer.
pub(crate) fn looks_float(s: &str) -> bool {
    let t = s.trim_start_matches(['-', '+']);
    if t.starts_with("0x") || t.starts_with("0X") {
        return false;
    }
    let l = t.to_ascii_lowercase();
    l.contains('.') || l.contains('e') || l == "inf" || l == "infinity" || l == "nan"
}

pub(crate) fn parse_f32(s: &str) -> Result<u32, String> {
    if s.starts_with("0x") || s.starts_with("0X") {
        return parse_uint(s, u32::MAX as u64).map(|v| v as u32);
    }
    let v = s
        .parse::<f32>()
        .map_err(|_| format!("`{s}` is not a float"))?;
    // A decimal beyond the fp32 range would round to ±inf without a word: infinity only
    // where it is written.
    let spelled_inf = matches!(
        s.trim_start_matches(['-', '+'])
            .to_ascii_lowercase()
            .as_str(),
        "inf" | "infinity"
    );
    if v.is_infinite() && !spelled_inf {
        return Err(format!(
            "`{s}` is beyond the fp32 range (largest finite {:e}); write `inf` for infinity",
            f32::MAX
        ));
    }
    Ok(v.to_bits())
}

pub(crate) fn parse_list(s: &str, n: usize, min: i64, max: i64) -> Result<Vec<i64>, String> {
    let v: Vec<&str> = s.split(',').collect();
    if v.len() != n {
        return Err(format!("expected {n} comma-separated values, got `{s}`"));
    }
    v.iter().map(|x| parse_int(x, min, max)).collect()
}

/// A bracketed value split into its optional head and `key=value` pairs.
pub(crate) type Group<'a> = (Option<&'a str>, Vec<(&'a str, &'a str)>);

/// `[head key=value ...]` or `{key=value ...}` → (head, pairs).
pub(crate) fn parse_group(s: &str, open: char, close: char) -> Result<Group<'_>, String> {
    let inner = s
        .strip_prefix(open)
        .and_then(|r| r.strip_suffix(close))
        .ok_or_else(|| format!("expected `{open}...{close}`, got `{s}`"))?;
    let mut head = None;
    let mut pairs = Vec::new();
    for (i, part) in inner.split_whitespace().enumerate() {
        match part.split_once('=') {
            Some((k, v)) => pairs.push((k, v)),
            None if i == 0 => head = Some(part),
            None => return Err(format!("expected key=value, got `{part}`")),
        }
    }
    Ok((head, pairs))
}

pub(crate) fn take<'a>(pairs: &mut Vec<(&str, &'a str)>, key: &str) -> Option<&'a str> {
    let i = pairs.iter().position(|(k, _)| *k == key)?;
    Some(pairs.remove(i).1)
}

pub(crate) fn no_rest(pairs: &[(&str, &str)]) -> Result<(), String> {
    match pairs.first() {
        Some((k, _)) => Err(format!("unknown or repeated key `{k}`")),
        None => Ok(()),
    }
}

/// A `[key=value ...]` record with no head.
pub(crate) struct Keyed<'a>(Vec<(&'a str, &'a str)>);

impl<'a> Keyed<'a> {
    pub(crate) fn parse(s: &'a str) -> Result<Self, String> {
        match parse_group(s, '[', ']')? {
            (Some(h), _) => Err(format!("unexpected `{h}`")),
            (None, pairs) => Ok(Keyed(pairs)),
        }
    }

    /// The pairs in the order written.
    pub(crate) fn pairs(self) -> Vec<(&'a str, &'a str)> {
        self.0
    }
}

pub(crate) fn parse_str(s: &str, n: usize) -> Result<Vec<u8>, String> {
    let inner = s
        .strip_prefix('"')
        .and_then(|r| r.strip_suffix('"'))
        .ok_or_else(|| format!("expected a quoted string, got `{s}`"))?;
    let mut out = Vec::new();
    let mut it = inner.chars();
    while let Some(c) = it.next() {
        if c == '\\' {
            match it.next() {
                Some('x') => {
                    let h: String = it.by_ref().take(2).collect();
                    out.push(u8::from_str_radix(&h, 16).map_err(|_| format!("bad escape \\x{h}"))?);
                }
                Some(c @ ('"' | '\\')) => out.push(c as u8),
                other => {
                    return Err(format!(
                        "bad escape \\{}",
                        other.map(String::from).unwrap_or_default()
                    ))
                }
            }
        } else if c.is_ascii() {
            out.push(c as u8);
        } else {
            return Err(format!("non-ASCII character `{c}` (use \\xNN)"));
        }
    }
    if out.len() > n {
        return Err(format!("string of {} bytes does not fit in {n}", out.len()));
    }
    out.resize(n, 0);
    Ok(out)
}

pub(crate) fn parse_hex(s: &str, n: usize) -> Result<Vec<u8>, String> {
    if !s.len().is_multiple_of(2) || !s.bytes().all(|c| c.is_ascii_hexdigit()) {
        return Err(format!("`{s}` is not an even number of hex digits"));
    }
    let mut out: Vec<u8> = (0..s.len() / 2)
        .map(|i| u8::from_str_radix(&s[2 * i..2 * i + 2], 16).unwrap_or(0))
        .collect();
    if out.len() > n {
        return Err(format!("{} bytes do not fit in {n}", out.len()));
    }
    out.resize(n, 0);
    Ok(out)
}

/// A bitfield's sub-field names, comma-separated (for messages).
pub(crate) fn sub_field_names(def: &BitfieldDef) -> String {
    def.bits
        .iter()
        .map(|d| d.name)
        .collect::<Vec<_>>()
        .join(", ")
}

pub(crate) fn parse_bits(s: &str, def: &BitfieldDef) -> Result<u8, String> {
    if !s.starts_with('{') {
        return parse_uint(s, 0xFF).map(|v| v as u8).map_err(|_| {
            format!(
                "`{s}` is not a {} value: write an integer or {{name=value ...}} with names {}",
                def.name,
                sub_field_names(def)
            )
        });
    }
    // Sub-fields may be separated by spaces or commas.
    let spaced = s.replace(',', " ");
    let (head, pairs) = parse_group(&spaced, '{', '}')?;
    if let Some(h) = head {
        return Err(format!("unexpected `{h}` in bitfield"));
    }
    let mut parts = Vec::new();
    for (k, v) in pairs {
        let v = parse_u64(v).ok_or_else(|| format!("{k}: `{v}` is not an integer"))?;
        parts.push((k, v));
    }
    pack_bits(def, &parts)
}

/// Write an access pattern (address, then `n` steps, then `n` counts) at `o`.
pub(crate) fn write_pattern(w: &mut [u8; 64], o: usize, addr: u32, step: &[i64], num: &[i64]) {
    let n = step.len();
    addr.write(w, o);
    for i in 0..n {
        (step[i] as i16).write(w, o + 4 + 2 * i);
        (num[i] as u16).write(w, o + 4 + 2 * n + 2 * i);
    }
}

/// The text of a field value that does not encode into its field.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{reason}")]
pub struct FieldTextError {
    /// The field (its layout name).
    pub field: &'static str,
    /// The value's text as written.
    pub text: String,
    /// Why it does not encode (a range, a name the enumeration lacks, a malformed group).
    pub reason: String,
}

/// Parse the text of one field value and write it into `b`.
pub fn write_field(m: &FieldMeta, s: &str, b: &mut Bundle) -> Result<(), FieldTextError> {
    parse_value(m, s)
        .and_then(|a| write_arg(m, &a, b))
        .map_err(|reason| FieldTextError {
            field: m.name,
            text: s.to_string(),
            reason,
        })
}

#[cfg(test)]
mod tests {
    use super::parse_f32;

    #[test]
    fn f32_literals_beyond_range_are_refused() {
        for s in ["1e39", "-1e39", "1e99999", "3.5e38"] {
            let e = parse_f32(s).unwrap_err();
            assert!(e.contains("beyond the fp32 range"), "{s}: {e}");
        }
        assert_eq!(parse_f32("inf"), Ok(f32::INFINITY.to_bits()));
        assert_eq!(parse_f32("-Infinity"), Ok(f32::NEG_INFINITY.to_bits()));
        assert_eq!(parse_f32("3.4028235e38"), Ok(f32::MAX.to_bits()));
        assert_eq!(parse_f32("2.5"), Ok(2.5f32.to_bits()));
    }
}
