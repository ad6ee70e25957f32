//! The text form (`sim disasm` / `sim asm`) and the JSON form (`sim decode --json`) of bundles.
//!
//! # Text syntax
//!
//! One bundle per line:
//!
//! ```text
//!      0  0x000000:  MATMUL src=[0x00040100 step=1,1,1 num=64,1,1] in_dtype=BF16 num_active_cols=128
//! ```
//!
//! * An optional `INDEX 0xOFFSET:` prefix (ignored by the parser), then the mnemonic.
//! * `name=value` for every field whose bytes are not all zero (`inst_word_len` is shown only
//!   when it is not 0x10); omitted fields are zero. Values: integers in decimal or `0x` hex;
//!   enums by name or number; dtype pairs `LO|HI`; floats as decimal (or `0x` bits when the
//!   decimal would not round-trip); access patterns `[ADDR4 step=.. num=..]`; bitfields
//!   `{sub=value ...}`; character arrays as quoted strings with `\xNN` escapes; unpublished
//!   bytes as hex.
//! * Non-zero reserved bytes are shown as `reserved@OFFSET=HEX` so nothing is lost.
//! * A bundle that does not decode for the generation is written `.bundle HEX128`.
//! * `;` starts a comment.
//!
//! [`parse_line`] reads this syntax back, and the toolchain's dialect ([`neuron`]) beside it;
//! `parse(disasm(b)) == b` for every bundle in either syntax. `docs/asm.md` is the reference.

use crate::desc::{Addr4, Addr8, MxIndirect16b, MxMemPattern1d};
use crate::formats::Opcode;
use crate::inst::{decode, FieldMeta, FieldValue, LayoutMeta, PatternValue};
use crate::spec::{self, BitfieldDef, EnumDef, FieldType};
use crate::wire::{EventsExt, F32Bits, Wire, INST_WORD_LEN};
use crate::{Bundle, Engine, Gen, Inst};
use serde_json::{json, Map, Value};
use std::fmt::Write as _;

pub mod neuron;

/// A text-form parse error, with the 1-based column where it was found.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("column {column}: {message}")]
pub struct ParseError {
    /// 1-based column (in characters).
    pub column: usize,
    /// What is wrong.
    pub message: String,
}

fn perr(column: usize, message: impl Into<String>) -> ParseError {
    ParseError {
        column,
        message: message.into(),
    }
}

// ------------------------------------------------------------------ formatting values

fn enum_text(raw: u8, def: &EnumDef) -> String {
    match def.value(raw) {
        Some(v) => v.name.to_string(),
        None => format!("{raw:#04x}"),
    }
}

fn dtype_text(raw: u8) -> String {
    enum_text(raw, spec::enum_def("DTYPE").expect("DTYPE"))
}

fn bits_text(raw: u8, def: &BitfieldDef) -> String {
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

fn f32_text(v: F32Bits) -> String {
    let f = v.to_f32();
    let s = format!("{f:?}");
    match s.parse::<f32>() {
        Ok(p) if p.to_bits() == v.0 && f.is_finite() => s,
        _ => format!("{:#010x}", v.0),
    }
}

fn join_nums<T: std::fmt::Display>(v: &[T]) -> String {
    v.iter()
        .map(|x| x.to_string())
        .collect::<Vec<_>>()
        .join(",")
}

fn str_text(s: &[u8]) -> String {
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

fn hex_trimmed(s: &[u8]) -> String {
    let end = s.iter().rposition(|&c| c != 0).map_or(0, |i| i + 1);
    s[..end].iter().map(|b| format!("{b:02x}")).collect()
}

fn hex(s: &[u8]) -> String {
    s.iter().map(|b| format!("{b:02x}")).collect()
}

fn events_ext_text(e: &EventsExt) -> String {
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

fn shown(m: &FieldMeta, b: &Bundle) -> bool {
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

/// The text dialect of a disassembly (`sim disasm --syntax`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Syntax {
    /// tpbsim's own form: `name=value` for every non-zero field.
    #[default]
    Tpbsim,
    /// The toolchain's public dialect: `$S[i]>=v`, `$S[i]++@complete`,
    /// `dtype@address[steps][counts]`, statements ending in `;`.
    Neuron,
}

impl std::str::FromStr for Syntax {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s.to_ascii_lowercase().as_str() {
            "tpbsim" => Ok(Syntax::Tpbsim),
            "neuron" => Ok(Syntax::Neuron),
            _ => Err(format!("`{s}`: the syntaxes are tpbsim and neuron")),
        }
    }
}

/// One disassembly line in `syntax` (without index/offset prefix).
pub fn disasm_bundle_as(b: &Bundle, gen: Gen, syntax: Syntax) -> String {
    match syntax {
        Syntax::Tpbsim => disasm_bundle(b, gen),
        Syntax::Neuron => neuron::disasm_bundle(b, gen),
    }
}

/// A full disassembly line: `INDEX 0xOFFSET:  TEXT`, plus an engine-legality comment when
/// `engine` is given and the catalog's engine classes do not include it.
pub fn disasm_line(index: usize, b: &Bundle, gen: Gen, engine: Option<Engine>) -> String {
    disasm_line_as(index, b, gen, engine, Syntax::Tpbsim)
}

/// [`disasm_line`] in `syntax`.
pub fn disasm_line_as(
    index: usize,
    b: &Bundle,
    gen: Gen,
    engine: Option<Engine>,
    syntax: Syntax,
) -> String {
    let mut s = format!(
        "{index:>6}  {:#08x}:  {}",
        index * 64,
        disasm_bundle_as(b, gen, syntax)
    );
    if let (Some(e), Some(row)) = (engine, spec::opcode(b.0[0])) {
        if row.is_present(gen) && !row.runs_on(e) {
            let _ = write!(
                s,
                " ; engine classes {} do not include {e}",
                row.engines.label()
            );
        }
    }
    s
}

/// A parse error as a compiler writes it: `FILE:LINE:COL: MESSAGE`, then the line and a
/// caret under the column.
pub fn render_error(file: &str, text: &str, line: usize, e: &ParseError) -> String {
    let src = text.lines().nth(line.saturating_sub(1)).unwrap_or("");
    let pad: String = src
        .chars()
        .take(e.column.saturating_sub(1))
        .map(|c| if c == '\t' { '\t' } else { ' ' })
        .collect();
    let gutter = line.to_string().len();
    format!(
        "{file}:{line}:{}: {}\n {line} | {src}\n {:gutter$} | {pad}^",
        e.column, e.message, ""
    )
}

// ------------------------------------------------------------------ parsing

/// A top-level token with its 1-based column.
#[derive(Debug)]
struct Tok<'a> {
    text: &'a str,
    col: usize,
}

/// Split a line into top-level tokens (whitespace outside brackets and quotes), dropping a
/// trailing `;` comment.
fn tokenize(line: &str) -> Result<Vec<Tok<'_>>, ParseError> {
    let mut toks = Vec::new();
    let mut depth = 0i32;
    let mut in_str = false;
    let mut esc = false;
    let mut start: Option<usize> = None;
    let chars: Vec<(usize, char)> = line.char_indices().collect();
    let col_of = |byte: usize| line[..byte].chars().count() + 1;
    let mut end_all = line.len();
    for &(i, c) in &chars {
        if in_str {
            if esc {
                esc = false;
            } else if c == '\\' {
                esc = true;
            } else if c == '"' {
                in_str = false;
            }
            continue;
        }
        match c {
            ';' if depth == 0 => {
                end_all = i;
                break;
            }
            '"' => {
                in_str = true;
                start.get_or_insert(i);
            }
            '[' | '{' => {
                depth += 1;
                start.get_or_insert(i);
            }
            ']' | '}' => {
                depth -= 1;
                if depth < 0 {
                    return Err(perr(col_of(i), format!("unbalanced `{c}`")));
                }
            }
            c if c.is_whitespace() && depth == 0 => {
                if let Some(s) = start.take() {
                    toks.push(Tok {
                        text: &line[s..i],
                        col: col_of(s),
                    });
                }
            }
            _ => {
                start.get_or_insert(i);
            }
        }
    }
    if in_str {
        return Err(perr(line.len() + 1, "unterminated string"));
    }
    if depth != 0 {
        return Err(perr(line.len() + 1, "unbalanced brackets"));
    }
    if let Some(s) = start {
        let t = line[s..end_all].trim_end();
        if !t.is_empty() {
            toks.push(Tok {
                text: t,
                col: col_of(s),
            });
        }
    }
    Ok(toks)
}

fn parse_u64(s: &str) -> Option<u64> {
    let s = s.trim();
    if let Some(h) = s.strip_prefix("0x").or_else(|| s.strip_prefix("0X")) {
        u64::from_str_radix(h, 16).ok()
    } else {
        s.parse().ok()
    }
}

fn parse_i64(s: &str) -> Option<i64> {
    let s = s.trim();
    match s.strip_prefix('-') {
        Some(r) => parse_u64(r).and_then(|v| i64::try_from(v).ok()).map(|v| -v),
        None => parse_u64(s).and_then(|v| i64::try_from(v).ok()),
    }
}

fn parse_uint(s: &str, max: u64) -> Result<u64, String> {
    match parse_u64(s) {
        Some(v) if v <= max => Ok(v),
        Some(v) => Err(format!("{v} does not fit (max {max})")),
        None => Err(format!("`{s}` is not an integer")),
    }
}

fn parse_int(s: &str, min: i64, max: i64) -> Result<i64, String> {
    match parse_i64(s) {
        Some(v) if (min..=max).contains(&v) => Ok(v),
        Some(v) => Err(format!("{v} is out of range {min}..={max}")),
        None => Err(format!("`{s}` is not an integer")),
    }
}

fn parse_enum(s: &str, def: &EnumDef) -> Result<u8, String> {
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
fn looks_float(s: &str) -> bool {
    let t = s.trim_start_matches(['-', '+']);
    if t.starts_with("0x") || t.starts_with("0X") {
        return false;
    }
    let l = t.to_ascii_lowercase();
    l.contains('.') || l.contains('e') || l == "inf" || l == "infinity" || l == "nan"
}

fn parse_f32(s: &str) -> Result<u32, String> {
    if s.starts_with("0x") || s.starts_with("0X") {
        return parse_uint(s, u32::MAX as u64).map(|v| v as u32);
    }
    s.parse::<f32>()
        .map(f32::to_bits)
        .map_err(|_| format!("`{s}` is not a float"))
}

fn parse_list(s: &str, n: usize, min: i64, max: i64) -> Result<Vec<i64>, String> {
    let v: Vec<&str> = s.split(',').collect();
    if v.len() != n {
        return Err(format!("expected {n} comma-separated values, got `{s}`"));
    }
    v.iter().map(|x| parse_int(x, min, max)).collect()
}

/// A bracketed value split into its optional head and `key=value` pairs.
type Group<'a> = (Option<&'a str>, Vec<(&'a str, &'a str)>);

/// `[head key=value ...]` or `{key=value ...}` → (head, pairs).
fn parse_group(s: &str, open: char, close: char) -> Result<Group<'_>, String> {
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

fn take<'a>(pairs: &mut Vec<(&str, &'a str)>, key: &str) -> Option<&'a str> {
    let i = pairs.iter().position(|(k, _)| *k == key)?;
    Some(pairs.remove(i).1)
}

fn no_rest(pairs: &[(&str, &str)]) -> Result<(), String> {
    match pairs.first() {
        Some((k, _)) => Err(format!("unknown or repeated key `{k}`")),
        None => Ok(()),
    }
}

fn parse_str(s: &str, n: usize) -> Result<Vec<u8>, String> {
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

fn parse_hex(s: &str, n: usize) -> Result<Vec<u8>, String> {
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

fn parse_bits(s: &str, def: &BitfieldDef) -> Result<u8, String> {
    if !s.starts_with('{') {
        return parse_uint(s, 0xFF).map(|v| v as u8).map_err(|_| {
            format!(
                "`{s}` is not a {} value: write an integer or {{name=value ...}} with names {}",
                def.name,
                def.bits
                    .iter()
                    .map(|d| d.name)
                    .collect::<Vec<_>>()
                    .join(", ")
            )
        });
    }
    // Sub-fields may be separated by spaces or commas.
    let spaced = s.replace(',', " ");
    let (head, mut pairs) = parse_group(&spaced, '{', '}')?;
    if let Some(h) = head {
        return Err(format!("unexpected `{h}` in bitfield"));
    }
    let mut raw = 0u8;
    for d in def.bits {
        if let Some(v) = take(&mut pairs, d.name) {
            let v = parse_uint(v, (1u64 << d.width) - 1).map_err(|e| format!("{}: {e}", d.name))?;
            raw |= (v as u8) << d.lsb;
        }
    }
    if let Some(v) = take(&mut pairs, "rsv") {
        raw |= parse_uint(v, 0xFF)? as u8;
    }
    if let Some((k, _)) = pairs.first() {
        return Err(format!(
            "{} has no sub-field `{k}` (sub-fields: {})",
            def.name,
            def.bits
                .iter()
                .map(|d| d.name)
                .collect::<Vec<_>>()
                .join(", ")
        ));
    }
    Ok(raw)
}

/// Write an access pattern (address, then `n` steps, then `n` counts) at `o`.
fn write_pattern(w: &mut [u8; 64], o: usize, addr: u32, step: &[i64], num: &[i64]) {
    let n = step.len();
    addr.write(w, o);
    for i in 0..n {
        (step[i] as i16).write(w, o + 4 + 2 * i);
        (num[i] as u16).write(w, o + 4 + 2 * n + 2 * i);
    }
}

/// Parse the text of one field value and write it into `b`.
pub fn write_field(m: &FieldMeta, s: &str, b: &mut Bundle) -> Result<(), String> {
    let o = m.offset as usize;
    let w = &mut b.0;
    match m.ty {
        FieldType::U8 => w[o] = parse_uint(s, 0xFF)? as u8,
        FieldType::U16 => (parse_uint(s, 0xFFFF)? as u16).write(w, o),
        FieldType::U32 if m.float && looks_float(s) => parse_f32(s)?.write(w, o),
        FieldType::U32 => (parse_uint(s, u32::MAX as u64)? as u32).write(w, o),
        FieldType::U64 => parse_uint(s, u64::MAX)?.write(w, o),
        FieldType::I16 => (parse_int(s, i16::MIN as i64, i16::MAX as i64)? as i16).write(w, o),
        FieldType::I32 => (parse_int(s, i32::MIN as i64, i32::MAX as i64)? as i32).write(w, o),
        FieldType::F32 => parse_f32(s)?.write(w, o),
        FieldType::Enum(e) => w[o] = parse_enum(s, spec::enum_def(e).ok_or("unknown enum")?)?,
        FieldType::DtypePair => {
            let (lo, hi) = s
                .split_once('|')
                .ok_or_else(|| format!("expected LO|HI, got `{s}`"))?;
            let dt = spec::enum_def("DTYPE").ok_or("DTYPE")?;
            let (lo, hi) = (parse_enum(lo, dt)?, parse_enum(hi, dt)?);
            if lo > 0xF || hi > 0xF {
                return Err("dtype pair codes must be <= 0x0F".into());
            }
            w[o] = lo | hi << 4;
        }
        FieldType::Bits(bf) => w[o] = parse_bits(s, spec::bitfield(bf).ok_or("unknown bitfield")?)?,
        FieldType::Addr4 => (parse_uint(s, u32::MAX as u64)? as u32).write(w, o),
        FieldType::Tensor(n) | FieldType::MemPattern(n) if !s.starts_with('[') => {
            let (addr, step, num) = neuron::parse_operand(s, n as usize)?;
            write_pattern(w, o, addr, &step, &num);
        }
        FieldType::Tensor(n) | FieldType::MemPattern(n) => {
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
            write_pattern(w, o, addr, &step, &num);
        }
        FieldType::MxMemPattern1d => {
            let (head, mut pairs) = parse_group(s, '[', ']')?;
            if let Some(h) = head {
                return Err(format!("unexpected `{h}`"));
            }
            let mut g = |k: &str, max: u64| -> Result<u64, String> {
                parse_uint(take(&mut pairs, k).ok_or(format!("missing {k}="))?, max)
            };
            let x = MxMemPattern1d {
                data: Addr4(g("data", u32::MAX as u64)? as u32),
                scale: Addr4(g("scale", u32::MAX as u64)? as u32),
                k: g("k", 0xFFFF)? as u16,
                step_sign: g("step_sign", 0xFF)? as u8,
                scale_partition: g("scale_partition", 0xFF)? as u8,
                reserved: [0; 4],
            };
            no_rest(&pairs)?;
            x.write(w, o);
        }
        FieldType::MxIndirect16b => {
            let (head, mut pairs) = parse_group(s, '[', ']')?;
            if let Some(h) = head {
                return Err(format!("unexpected `{h}`"));
            }
            let mut g = |k: &str, max: u64| -> Result<u64, String> {
                parse_uint(take(&mut pairs, k).ok_or(format!("missing {k}="))?, max)
            };
            let x = MxIndirect16b {
                indices: Addr4(g("indices", u32::MAX as u64)? as u32),
                data: Addr4(g("data", u32::MAX as u64)? as u32),
                scale: Addr4(g("scale", u32::MAX as u64)? as u32),
                k: g("k", 0xFFFF)? as u16,
                byte_0e: g("byte_0e", 0xFF)? as u8,
                scale_partition: g("scale_partition", 0xFF)? as u8,
            };
            no_rest(&pairs)?;
            x.write(w, o);
        }
        FieldType::Addr8 => Addr8(parse_uint(s, u64::MAX)?).write(w, o),
        FieldType::EventsExt => {
            let (head, mut pairs) = parse_group(s, '[', ']')?;
            if let Some(h) = head {
                return Err(format!("unexpected `{h}`"));
            }
            let wm = spec::enum_def("WAIT_MODE").ok_or("WAIT_MODE")?;
            let um = spec::enum_def("UPDATE_MODE").ok_or("UPDATE_MODE")?;
            let mut get = |k: &str| take(&mut pairs, k).ok_or(format!("missing {k}="));
            let e = EventsExt {
                wait_mode: crate::formats::WaitMode(parse_enum(get("wait_mode")?, wm)?),
                wait_idx: parse_uint(get("wait_idx")?, 0xFF)? as u8,
                update_mode: crate::formats::UpdateMode(parse_enum(get("update_mode")?, um)?),
                update_idx: parse_uint(get("update_idx")?, 0xFF)? as u8,
                sem_wait_value: parse_uint(get("sem_wait_value")?, u32::MAX as u64)? as u32,
                sem_update_value: parse_uint(get("sem_update_value")?, u32::MAX as u64)? as u32,
            };
            no_rest(&pairs)?;
            e.write(w, o);
        }
        FieldType::I32Array(n) => {
            for (i, v) in parse_list(s, n as usize, i32::MIN as i64, i32::MAX as i64)?
                .into_iter()
                .enumerate()
            {
                (v as i32).write(w, o + 4 * i);
            }
        }
        FieldType::U16Array(n) => {
            for (i, v) in parse_list(s, n as usize, 0, u16::MAX as i64)?
                .into_iter()
                .enumerate()
            {
                (v as u16).write(w, o + 2 * i);
            }
        }
        FieldType::Str(n) => w[o..o + n as usize].copy_from_slice(&parse_str(s, n as usize)?),
        FieldType::Opaque(n) => w[o..o + n as usize].copy_from_slice(&parse_hex(s, n as usize)?),
    }
    Ok(())
}

/// One `name=value` item of a line, with the column of its first character. Items that the
/// dialect forms expand to (`$S[3]>=1` → `wait_mode`, `wait_idx`, `semaphore_value`) carry
/// the column of the token they came from.
struct Item {
    key: String,
    value: String,
    col: usize,
    /// Where the item came from when it was not written as `name=value` (for messages).
    from: Option<String>,
}

/// The opcode row a mnemonic names: exactly (any case), else uniquely when underscores are
/// ignored (`PSEUDO_DMA_TRIGGER` for `PSEUDO_DMATRIGGER`).
fn mnemonic_row(m: &str) -> Option<&'static spec::OpcodeRow> {
    if let Some(r) = spec::opcode_by_mnemonic(m) {
        return Some(r);
    }
    let squash = |s: &str| s.replace('_', "").to_ascii_uppercase();
    let want = squash(m);
    let mut found = spec::opcodes()
        .iter()
        .filter(|r| squash(r.mnemonic()) == want);
    match (found.next(), found.next()) {
        (Some(r), None) => Some(r),
        _ => None,
    }
}

/// Parse one line of the text form (either syntax; `docs/asm.md`). `Ok(None)` for a blank or
/// comment-only line.
pub fn parse_line(line: &str, gen: Gen) -> Result<Option<Bundle>, ParseError> {
    let toks = tokenize(line)?;
    let mut it = toks.iter().peekable();
    // Optional `INDEX 0xOFFSET:` prefix.
    if toks.len() >= 2
        && toks[0].text.bytes().all(|c| c.is_ascii_digit())
        && toks[1].text.ends_with(':')
    {
        it.next();
        it.next();
    }
    let Some(first) = it.next() else {
        return Ok(None);
    };
    if first.text == ".bundle" {
        let h = it
            .next()
            .ok_or_else(|| perr(first.col, ".bundle needs 128 hex digits"))?;
        if let Some(extra) = it.next() {
            return Err(perr(extra.col, "unexpected text after .bundle"));
        }
        return Bundle::from_hex(h.text)
            .map(Some)
            .ok_or_else(|| perr(h.col, "expected 128 hex digits"));
    }
    let row = mnemonic_row(first.text)
        .ok_or_else(|| perr(first.col, format!("unknown mnemonic `{}`", first.text)))?;
    if !row.is_present(gen) {
        return Err(perr(
            first.col,
            format!("{} ({:#04x}) is absent on {gen}", row.mnemonic(), row.code),
        ));
    }
    let rest: Vec<&Tok<'_>> = it.collect();
    let mut items: Vec<Item> = Vec::new();
    let mut positional: Vec<&Tok<'_>> = Vec::new();
    let mut sync = neuron::Sync::default();
    let mut i = 0;
    while i < rest.len() {
        let t = rest[i];
        if neuron::is_sync_token(t.text) {
            // The profile form names the semaphore after a space: `S[5] (Tensor)++@complete`.
            let mut text = t.text.to_string();
            if text.ends_with(']') {
                if let Some(n) = rest.get(i + 1).filter(|n| n.text.starts_with('(')) {
                    text.push_str(n.text);
                    i += 1;
                }
            }
            sync.add(&text, t.col).map_err(|m| perr(t.col, m))?;
        } else if let Some((k, v)) = t.text.split_once('=') {
            if k.is_empty() {
                return Err(perr(
                    t.col,
                    format!("expected name=value, got `{}`", t.text),
                ));
            }
            neuron::split_operand_dtype(k, v, t.col, &mut items).map_err(|m| perr(t.col, m))?;
        } else {
            positional.push(t);
        }
        i += 1;
    }
    sync.items(&mut items).map_err(|(col, m)| perr(col, m))?;
    let mut base = Bundle::ZERO;
    base.0[0] = row.code;
    base.0[1] = INST_WORD_LEN;
    // Pass 1 with the layout the bare opcode selects, pass 2 with the layout the written
    // fields select (sub-opcode formats).
    let layout_of = |b: &Bundle| -> &'static LayoutMeta {
        decode(b, gen)
            .map(|i| i.meta())
            .unwrap_or(&crate::formats::RAW_META)
    };
    let mut b = base;
    let meta1 = layout_of(&b);
    for it in &items {
        if let Some(m) = meta1.field(&it.key) {
            if m.name != "opcode" {
                write_field(m, &it.value, &mut b)
                    .map_err(|e| perr(it.col + it.key.len() + 1, format!("{}: {e}", it.key)))?;
            }
        }
    }
    let meta = layout_of(&b);
    // A bare word is the value of the format's one string field (`PSEUDO_DMA_TRIGGER q_in`).
    for t in positional {
        let m = meta
            .fields
            .iter()
            .find(|m| matches!(m.ty, FieldType::Str(_)))
            .filter(|_| !t.text.starts_with('"') || t.text.len() >= 2)
            .ok_or_else(|| {
                perr(
                    t.col,
                    format!(
                        "`{}` is not name=value (and {} has no string field a bare word could fill)",
                        t.text, meta.rust_name
                    ),
                )
            })?;
        let value = if t.text.starts_with('"') {
            t.text.to_string()
        } else {
            format!("\"{}\"", t.text)
        };
        items.push(Item {
            key: m.name.to_string(),
            value,
            col: t.col,
            from: Some(t.text.to_string()),
        });
    }
    let mut b = base;
    let mut reserved: Vec<(usize, Vec<u8>, usize)> = Vec::new();
    let mut seen: Vec<&str> = Vec::new();
    for it in &items {
        let (k, v, col) = (it.key.as_str(), it.value.as_str(), it.col);
        if let Some(off) = k.strip_prefix("reserved@") {
            let off: usize = off
                .parse()
                .map_err(|_| perr(col, format!("bad reserved offset `{off}`")))?;
            let bytes = parse_hex(v, v.len() / 2).map_err(|e| perr(col + k.len() + 1, e))?;
            reserved.push((off, bytes, col));
            continue;
        }
        if seen.contains(&k) {
            let how = it
                .from
                .as_ref()
                .map(|f| format!(" (also set by `{f}`)"))
                .unwrap_or_default();
            return Err(perr(col, format!("field `{k}` given twice{how}")));
        }
        seen.push(k);
        let m = meta
            .field(k)
            .filter(|m| m.name != "opcode")
            .ok_or_else(|| {
                let how = it
                    .from
                    .as_ref()
                    .map(|f| format!(" (`{f}` writes `{k}`; write the fields by name instead)"))
                    .unwrap_or_default();
                perr(
                    col,
                    format!("{} has no field `{k}` on {gen}{how}", meta.rust_name),
                )
            })?;
        let vcol = if it.from.is_some() {
            col
        } else {
            col + k.len() + 1
        };
        write_field(m, v, &mut b).map_err(|e| perr(vcol, format!("{k}: {e}")))?;
    }
    for (off, bytes, col) in reserved {
        for (i, &x) in bytes.iter().enumerate() {
            let at = off + i;
            if !meta
                .reserved
                .iter()
                .any(|&(s, e)| (s as usize..e as usize).contains(&at))
            {
                return Err(perr(
                    col,
                    format!("byte {at} is not reserved in {}", meta.rust_name),
                ));
            }
            b.0[at] = x;
        }
    }
    Ok(Some(b))
}

/// Parse a whole text file; errors carry the 1-based line number.
pub fn parse_text(text: &str, gen: Gen) -> Result<Vec<Bundle>, (usize, ParseError)> {
    let mut out = Vec::new();
    for (i, line) in text.lines().enumerate() {
        if let Some(b) = parse_line(line, gen).map_err(|e| (i + 1, e))? {
            out.push(b);
        }
    }
    Ok(out)
}

// ------------------------------------------------------------------ JSON

fn enum_json(map: &mut Map<String, Value>, key: &str, raw: u8, def: &EnumDef) {
    map.insert(key.to_string(), json!(raw));
    map.insert(
        format!("{key}_name"),
        def.value(raw).map_or(Value::Null, |v| json!(v.name)),
    );
}

fn addr4_json(a: Addr4, gen: Gen) -> Value {
    let mut m = Map::new();
    m.insert("raw".into(), json!(a.0));
    m.insert("address".into(), json!(a.address()));
    enum_json(
        &mut m,
        "marker",
        a.marker().0,
        spec::enum_def("ADDR4_MARKER").expect("ADDR4_MARKER"),
    );
    if let Some(r) = a.register_id() {
        m.insert("register".into(), json!(r));
    } else {
        let psum = a.is_psum(gen);
        let (p, off) = a.split(gen);
        m.insert("region".into(), json!(if psum { "psum" } else { "sbuf" }));
        m.insert("partition".into(), json!(p));
        m.insert("offset".into(), json!(off));
    }
    Value::Object(m)
}

fn pattern_json(p: &PatternValue, gen: Gen) -> Value {
    let n = p.dims as usize;
    json!({ "addr": addr4_json(p.addr, gen), "step": &p.step[..n], "num": &p.num[..n] })
}

/// JSON value of one field (enums are written by the caller as value + `_name`).
fn value_json(v: &FieldValue<'_>, gen: Gen) -> Value {
    match *v {
        FieldValue::Unsigned(x) => json!(x),
        FieldValue::Signed(x) => json!(x),
        FieldValue::F32(x) => {
            let f = x.to_f32();
            if f.is_finite() {
                json!(f)
            } else {
                Value::Null
            }
        }
        FieldValue::Enum { raw, .. } => json!(raw),
        FieldValue::DtypePair(p) => {
            let dt = spec::enum_def("DTYPE").expect("DTYPE");
            let mut m = Map::new();
            m.insert("raw".into(), json!(p.0));
            enum_json(&mut m, "lo", p.lo().0, dt);
            enum_json(&mut m, "hi", p.hi().0, dt);
            Value::Object(m)
        }
        FieldValue::Bits { raw, def } => {
            let mut m = Map::new();
            m.insert("raw".into(), json!(raw));
            for d in def.bits {
                let mask = (((1u16 << d.width) - 1) as u8) << d.lsb;
                m.insert(d.name.into(), json!((raw & mask) >> d.lsb));
            }
            Value::Object(m)
        }
        FieldValue::Addr4(a) => addr4_json(a, gen),
        FieldValue::Pattern(p) => pattern_json(&p, gen),
        FieldValue::MxMem(x) => json!({
            "data": addr4_json(x.data, gen), "scale": addr4_json(x.scale, gen), "k": x.k,
            "step_sign": x.step_sign, "scale_partition": x.scale_partition,
        }),
        FieldValue::MxIndirect(x) => json!({
            "indices": addr4_json(x.indices, gen), "data": addr4_json(x.data, gen), "scale": addr4_json(x.scale, gen),
            "k": x.k, "byte_0e": x.byte_0e, "scale_partition": x.scale_partition,
        }),
        FieldValue::Addr8(a) => {
            let mut m = Map::new();
            m.insert("raw".into(), json!(a.0));
            m.insert("value".into(), json!(a.value()));
            m.insert("marker_byte".into(), json!(a.marker_byte()));
            enum_json(
                &mut m,
                "header_marker",
                a.header_marker().0,
                spec::enum_def("ADDR8_MARKER").expect("ADDR8_MARKER"),
            );
            enum_json(
                &mut m,
                "pseudo_marker",
                a.pseudo_marker().0,
                spec::enum_def("ADDR8_PSEUDO_MARKER").expect("ADDR8_PSEUDO_MARKER"),
            );
            Value::Object(m)
        }
        FieldValue::EventsExt(e) => {
            let mut m = Map::new();
            enum_json(
                &mut m,
                "wait_mode",
                e.wait_mode.0,
                spec::enum_def("WAIT_MODE").expect("WAIT_MODE"),
            );
            m.insert("wait_idx".into(), json!(e.wait_idx));
            enum_json(
                &mut m,
                "update_mode",
                e.update_mode.0,
                spec::enum_def("UPDATE_MODE").expect("UPDATE_MODE"),
            );
            m.insert("update_idx".into(), json!(e.update_idx));
            m.insert("sem_wait_value".into(), json!(e.sem_wait_value));
            m.insert("sem_update_value".into(), json!(e.sem_update_value));
            Value::Object(m)
        }
        FieldValue::Array { vals, len } => json!(&vals[..len as usize]),
        FieldValue::Str(s) => {
            let end = s.iter().position(|&c| c == 0).unwrap_or(s.len());
            json!(String::from_utf8_lossy(&s[..end]))
        }
        FieldValue::Opaque(s) => json!(hex(s)),
    }
}

/// The JSON object of one bundle: `{"index","offset","opcode","mnemonic","format","fields",
/// "reserved_nonzero"}`; an undecodable bundle gives `{"index","offset","opcode","error","hex"}`.
pub fn bundle_json(index: usize, b: &Bundle, gen: Gen) -> Value {
    let mut top = Map::new();
    top.insert("index".into(), json!(index));
    top.insert("offset".into(), json!(index * 64));
    top.insert("opcode".into(), json!(b.0[0]));
    let inst = match decode(b, gen) {
        Ok(i) => i,
        Err(e) => {
            top.insert(
                "mnemonic".into(),
                Opcode(b.0[0]).mnemonic().map_or(Value::Null, |m| json!(m)),
            );
            top.insert("error".into(), json!(e.to_string()));
            top.insert("hex".into(), json!(b.to_hex()));
            return Value::Object(top);
        }
    };
    top.insert("mnemonic".into(), json!(inst.mnemonic()));
    top.insert("format".into(), json!(inst.format_name()));
    let mut fields = Map::new();
    inst.visit_fields(|m, v| {
        if let FieldValue::Enum { raw, def } = v {
            enum_json(&mut fields, m.name, raw, def);
        } else {
            if let FieldValue::F32(x) = v {
                fields.insert(format!("{}_bits", m.name), json!(x.0));
            }
            fields.insert(m.name.into(), value_json(&v, gen));
        }
    });
    top.insert("fields".into(), Value::Object(fields));
    let res: Vec<Value> = inst
        .nonzero_reserved()
        .into_iter()
        .map(|r| json!({ "offset": r.start, "len": r.len(), "hex": hex(&b.0[r]) }))
        .collect();
    top.insert("reserved_nonzero".into(), Value::Array(res));
    Value::Object(top)
}

#[cfg(test)]
mod tests {
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
        let e = parse_line("MATMUL 3*128", Gen::V3).unwrap_err();
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
}
