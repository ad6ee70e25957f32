//! The toolchain's public text dialect (`docs/asm.md`, "The neuron dialect"): the producer
//! `.asm` members of a NEFF and the `operands` column of `neuron-profile` write waits as
//! `$S[i]>=v`, updates as `$S[i]++@complete`, access patterns as `dtype@address[steps][counts]`
//! and end statements with `;`.
//!
//! Accepted beside the native form by [`super::parse_line`]; written by [`disasm_bundle`] with
//! [`super::Syntax::Neuron`].

use super::{fields_text_with, parse_list, parse_uint, value_text, Item};
use crate::inst::{decode, FieldValue};
use crate::spec::{self, FieldType};
use crate::wire::Wire;
use crate::{Bundle, Events, Gen};

/// Comparison operators of a wait, longest first, with their WAIT_MODE names.
const WAITS: &[(&str, &str)] = &[
    (">=", "SEM_GE_IMM"),
    ("<=", "SEM_LE"),
    ("==", "SEM_EQ_IMM"),
    (">", "SEM_GT"),
    ("<", "SEM_LT"),
];

/// Whether a token is a semaphore wait or update (`$S[3]>=1`, `S[5]`, `$S[2]++@complete`).
pub fn is_sync_token(t: &str) -> bool {
    let t = t.strip_prefix('$').unwrap_or(t);
    t.starts_with("S[")
}

/// The waits and updates of one line.
#[derive(Default)]
pub struct Sync {
    wait: Option<(u8, u8, u32, usize, String)>,
    update: Option<(u8, u8, Option<u32>, usize, String)>,
}

fn wait_code(name: &str) -> u8 {
    spec::enum_def("WAIT_MODE")
        .and_then(|d| d.by_name(name))
        .map_or(0, |v| v.value)
}

fn update_code(name: &str) -> u8 {
    spec::enum_def("UPDATE_MODE")
        .and_then(|d| d.by_name(name))
        .map_or(0, |v| v.value)
}

fn num(s: &str, what: &str) -> Result<u32, String> {
    parse_uint(s, u32::MAX as u64)
        .map(|v| v as u32)
        .map_err(|e| format!("{what}: {e}"))
}

impl Sync {
    /// Add one token.
    pub fn add(&mut self, token: &str, col: usize) -> Result<(), String> {
        let t = token.strip_prefix('$').unwrap_or(token);
        let inner = t.strip_prefix("S[").ok_or("expected S[index]")?;
        let (idx, mut rest) = inner
            .split_once(']')
            .ok_or_else(|| format!("`{token}`: missing `]`"))?;
        let idx = parse_uint(idx, 0xFF).map_err(|e| format!("semaphore index: {e}"))? as u8;
        // The profile's name of the semaphore, `(Tensor)`, is informational.
        if let Some(r) = rest.strip_prefix('(') {
            rest = r.split_once(')').map(|(_, r)| r).ok_or("missing `)`")?;
        }
        for (op, mode) in WAITS {
            if let Some(v) = rest.strip_prefix(op) {
                if self.wait.is_some() {
                    return Err("a bundle has one wait".into());
                }
                self.wait = Some((
                    wait_code(mode),
                    idx,
                    num(v, "wait value")?,
                    col,
                    token.into(),
                ));
                return Ok(());
            }
        }
        let (op, when) = match rest.rsplit_once('@') {
            Some((op, w)) => (op, w.to_ascii_lowercase()),
            None => (rest, "complete".to_string()),
        };
        let suffix = match when.as_str() {
            "complete" => "COMPLETE",
            "read" => "READ",
            w => return Err(format!("`@{w}`: an update happens @read or @complete")),
        };
        let (mode, value) = if op == "++" {
            ("SEM_INC", None)
        } else if op == "--" {
            ("SEM_DEC", None)
        } else if let Some(v) = op.strip_prefix("+=") {
            ("SEM_ADD_IMM", Some(num(v, "update value")?))
        } else if let Some(v) = op.strip_prefix("-=") {
            ("SEM_SUB_IMM", Some(num(v, "update value")?))
        } else if let Some(v) = op.strip_prefix('=') {
            ("SEM_WR_IMM", Some(num(v, "update value")?))
        } else {
            return Err(format!(
                "`{token}`: expected a wait (>=v, >v, ==v, <v, <=v) or an update (++, --, +=v, -=v, =v) after S[{idx}]"
            ));
        };
        if self.update.is_some() {
            return Err("a bundle has one semaphore update".into());
        }
        let code = update_code(&format!("{mode}_{suffix}"));
        self.update = Some((code, idx, value, col, token.into()));
        Ok(())
    }

    /// The header fields the tokens set. A wait and an update that both carry a value must
    /// agree: a bundle has one `semaphore_value`.
    pub(super) fn items(&self, out: &mut Vec<Item>) -> Result<(), (usize, String)> {
        let item = |k: &str, v: String, col: usize, from: &str| Item {
            key: k.into(),
            value: v,
            col,
            from: Some(from.into()),
        };
        let mut value: Option<(u32, usize, &str)> = None;
        if let Some((mode, idx, v, col, from)) = &self.wait {
            out.push(item("wait_mode", mode.to_string(), *col, from));
            out.push(item("wait_idx", idx.to_string(), *col, from));
            value = Some((*v, *col, from));
        }
        if let Some((mode, idx, v, col, from)) = &self.update {
            out.push(item("update_mode", mode.to_string(), *col, from));
            out.push(item("update_idx", idx.to_string(), *col, from));
            if let Some(v) = v {
                match value {
                    Some((w, _, wf)) if w != *v => {
                        return Err((
                            *col,
                            format!(
                                "`{wf}` and `{from}` need different semaphore values ({w} and {v}), but a bundle has one semaphore_value; split them into two bundles"
                            ),
                        ))
                    }
                    Some(_) => {}
                    None => value = Some((*v, *col, from)),
                }
            }
        }
        if let Some((v, col, from)) = value {
            if v != 0 {
                out.push(item("semaphore_value", v.to_string(), col, from));
            }
        }
        Ok(())
    }
}

/// The dtype field an operand's `dtype@` prefix goes to (project-defined: `src*` →
/// `in_dtype`, `dst*` → `out_dtype`).
pub fn operand_dtype_field(operand: &str) -> Option<&'static str> {
    if operand.starts_with("src") {
        Some("in_dtype")
    } else if operand.starts_with("dst") {
        Some("out_dtype")
    } else {
        None
    }
}

/// Split `key=dtype@addr[..][..]` into the operand and its dtype field; any other item is
/// pushed unchanged.
pub(super) fn split_operand_dtype(
    k: &str,
    v: &str,
    col: usize,
    out: &mut Vec<Item>,
) -> Result<(), String> {
    let plain = |out: &mut Vec<Item>, v: &str| {
        out.push(Item {
            key: k.into(),
            value: v.into(),
            col,
            from: None,
        })
    };
    match v.split_once('@') {
        Some((dt, rest))
            if !v.starts_with(['[', '"', '{']) && rest.contains('[') && !dt.is_empty() =>
        {
            let field = operand_dtype_field(k).ok_or_else(|| {
                format!("`{k}={v}`: only src* and dst* operands carry a dtype; write the dtype field by name")
            })?;
            plain(out, rest);
            out.push(Item {
                key: field.into(),
                value: dt.into(),
                col,
                from: Some(format!("{k}={v}")),
            });
            Ok(())
        }
        _ => {
            plain(out, v);
            Ok(())
        }
    }
}

/// `ADDR[s0,s1,..][n0,n1,..]` → (address, steps, counts), padded to `n` dimensions with step 0
/// and count 1.
pub fn parse_operand(s: &str, n: usize) -> Result<(u32, Vec<i64>, Vec<i64>), String> {
    let bad = || format!("expected `[ADDR step=.. num=..]` or `ADDR[steps][counts]`, got `{s}`");
    let (addr, rest) = s.split_once('[').ok_or_else(bad)?;
    let addr = parse_uint(addr, u32::MAX as u64)? as u32;
    let (steps, rest) = rest.split_once(']').ok_or_else(bad)?;
    let counts = rest
        .strip_prefix('[')
        .and_then(|r| r.strip_suffix(']'))
        .ok_or_else(bad)?;
    let dims = |t: &str, what: &str, min: i64, max: i64, pad: i64| -> Result<Vec<i64>, String> {
        let k = t.split(',').count();
        if k > n {
            return Err(format!("{k} {what} for a {n}-dimensional pattern"));
        }
        let mut v = parse_list(t, k, min, max)?;
        v.resize(n, pad);
        Ok(v)
    };
    let step = dims(steps, "steps", i16::MIN as i64, i16::MAX as i64, 0)?;
    let num = dims(counts, "counts", 0, u16::MAX as i64, 1)?;
    Ok((addr, step, num))
}

fn wait_text(b: &Bundle) -> Option<String> {
    let e = Events::read(&b.0, 4);
    let name = spec::enum_def("WAIT_MODE")?.value(e.wait_mode.0)?.name;
    let op = WAITS.iter().find(|(_, m)| *m == name)?.0;
    Some(format!("$S[{}]{op}{}", e.wait_idx, e.semaphore_value))
}

fn update_text(b: &Bundle) -> Option<String> {
    let e = Events::read(&b.0, 4);
    let name = spec::enum_def("UPDATE_MODE")?.value(e.update_mode.0)?.name;
    let (mode, when) = name.rsplit_once('_')?;
    let v = e.semaphore_value;
    let op = match mode {
        "SEM_INC" => "++".to_string(),
        "SEM_DEC" => "--".to_string(),
        "SEM_ADD_IMM" => format!("+={v}"),
        "SEM_SUB_IMM" => format!("-={v}"),
        "SEM_WR_IMM" => format!("={v}"),
        _ => return None,
    };
    Some(format!(
        "$S[{}]{op}@{}",
        e.update_idx,
        when.to_ascii_lowercase()
    ))
}

/// One line in the neuron dialect, ending in `;`, or the native `.bundle` form when the bundle
/// does not decode.
pub fn disasm_bundle(b: &Bundle, gen: Gen) -> String {
    let inst = match decode(b, gen) {
        Ok(i) => i,
        Err(_) => return super::disasm_bundle(b, gen),
    };
    let e = Events::read(&b.0, 4);
    let wait = wait_text(b);
    // The value field is shared: a value-carrying update is written in the dialect only when
    // the wait does not use the value or uses the same one.
    let update = update_text(b);
    let mut parts: Vec<String> = Vec::new();
    let mut skip: Vec<&str> = Vec::new();
    let value_written = wait.is_some() || update.as_ref().is_some_and(|u| u.contains('='));
    if let Some(w) = &wait {
        parts.push(w.clone());
        skip.extend(["wait_mode", "wait_idx"]);
    }
    if let Some(u) = &update {
        parts.push(u.clone());
        skip.extend(["update_mode", "update_idx"]);
    }
    if value_written && e.semaphore_value != 0 {
        skip.push("semaphore_value");
    }
    // Operands with a dtype field of their own: `src=fp32@0x..[..][..]`.
    let meta = inst.meta();
    let enc = inst.encode();
    let dtype_of = |field: &str| -> Option<(String, &'static str)> {
        let m = meta.field(field)?;
        match m.read(&enc) {
            FieldValue::Enum { raw, def } if def.name == "DTYPE" && raw != 0 => def
                .value(raw)
                .map(|v| (v.name.to_ascii_lowercase(), m.name)),
            _ => None,
        }
    };
    let mut typed: Vec<(&str, String)> = Vec::new();
    let mut used_dtype: Vec<&'static str> = Vec::new();
    for m in meta.fields {
        if let FieldType::Tensor(_) | FieldType::MemPattern(_) = m.ty {
            if let FieldValue::Pattern(p) = m.read(&enc) {
                let n = p.dims as usize;
                let nums = |v: &[i64]| {
                    v.iter()
                        .map(|x| x.to_string())
                        .collect::<Vec<_>>()
                        .join(",")
                };
                let steps: Vec<i64> = p.step[..n].iter().map(|&x| x as i64).collect();
                let counts: Vec<i64> = p.num[..n].iter().map(|&x| x as i64).collect();
                let body = format!("{:#x}[{}][{}]", p.addr.0, nums(&steps), nums(&counts));
                // A dtype prefix is written only when this is the one operand of its kind
                // (one src*, one dst*), so the dtype field maps back unambiguously.
                let kind = operand_dtype_field(m.name);
                let sole = kind.is_some_and(|k| {
                    meta.fields
                        .iter()
                        .filter(|o| {
                            matches!(o.ty, FieldType::Tensor(_) | FieldType::MemPattern(_))
                                && operand_dtype_field(o.name) == Some(k)
                        })
                        .count()
                        == 1
                });
                let text = match kind.filter(|_| sole).and_then(dtype_of) {
                    Some((dt, field)) => {
                        used_dtype.push(field);
                        format!("{dt}@{body}")
                    }
                    None => body,
                };
                typed.push((m.name, text));
            }
        }
    }
    skip.extend(used_dtype);
    let rest = fields_text_with(&inst, &|m, v| {
        if skip.contains(&m.name) {
            return None;
        }
        if let Some((_, t)) = typed.iter().find(|(n, _)| *n == m.name) {
            return Some(t.clone());
        }
        Some(value_text(m, v))
    });
    if !rest.is_empty() {
        parts.push(rest);
    }
    let mut s = inst.mnemonic().to_string();
    for p in parts {
        s.push(' ');
        s.push_str(&p);
    }
    s.push(';');
    s
}

/// The `operands` text of a profile row: the line without its mnemonic and `;`.
pub fn operands_text(b: &Bundle, gen: Gen) -> String {
    let line = disasm_bundle(b, gen);
    let line = line.strip_suffix(';').unwrap_or(&line);
    match line.split_once(' ') {
        Some((_, rest)) => rest.to_string(),
        None => String::new(),
    }
}
