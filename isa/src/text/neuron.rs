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

/// Comparison operators of a wait, longest first, with their WAIT_MODE names (the register
/// forms add `_REG` to the base name: `SEM_GE_REG`, ...).
const WAITS: &[(&str, &str)] = &[
    (">=", "SEM_GE_IMM"),
    ("<=", "SEM_LE"),
    ("==", "SEM_EQ_IMM"),
    (">", "SEM_GT"),
    ("<", "SEM_LT"),
];

/// Event waits (project-defined spelling; the toolchain's form is not published):
/// `$E[i]==1` waits until event i is set, `$E[i]==0` until it is clear, and `->v` flips it to
/// `v` once the wait holds.
const EVENT_WAITS: &[(&str, &str)] = &[
    ("==1->0", "EVT_SET_THEN_CLEAR"),
    ("==0->1", "EVT_CLEAR_THEN_SET"),
    ("==1", "EVT_SET"),
    ("==0", "EVT_CLEAR"),
];

/// Whether a token is a semaphore or event wait or update (`$S[3]>=1`, `S[5]`,
/// `$S[2]++@complete`, `$E[4]==1`).
pub fn is_sync_token(t: &str) -> bool {
    let t = t.strip_prefix('$').unwrap_or(t);
    t.starts_with("S[") || t.starts_with("E[")
}

/// One wait or update read from the dialect: (mode, index, value it needs in
/// `semaphore_value`, column, token).
type SyncPart = (u8, u8, Option<u32>, usize, String);

/// The waits and updates of one line.
#[derive(Default)]
pub struct Sync {
    wait: Option<SyncPart>,
    update: Option<SyncPart>,
}

fn mode_code(def: &str, name: &str) -> Result<u8, String> {
    spec::enum_def(def)
        .and_then(|d| d.by_name(name))
        .map(|v| v.value)
        .ok_or_else(|| format!("{def} has no {name}"))
}

fn num(s: &str, what: &str) -> Result<u32, String> {
    parse_uint(s, u32::MAX as u64)
        .map(|v| v as u32)
        .map_err(|e| format!("{what}: {e}"))
}

/// A value operand: an immediate, or `$R[r]` / `R[r]` (the issuing engine's register r, the
/// `_REG` modes; the register index goes to `semaphore_value`).
fn operand(s: &str, what: &str) -> Result<(bool, u32), String> {
    let r = s.strip_prefix('$').unwrap_or(s);
    if let Some(r) = r.strip_prefix("R[") {
        let r = r
            .strip_suffix(']')
            .ok_or_else(|| format!("`{s}`: missing `]`"))?;
        let r = parse_uint(r, 0xFF).map_err(|e| format!("{what} register: {e}"))?;
        return Ok((true, r as u32));
    }
    Ok((false, num(s, what)?))
}

/// A semaphore or event token of the dialect that does not read as a wait or an update.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{reason}")]
pub struct SyncTokenError {
    /// The token as written.
    pub token: String,
    /// What is wrong with it (or that the bundle already has its one wait or update).
    pub reason: String,
}

impl Sync {
    /// Add one token.
    pub fn add(&mut self, token: &str, col: usize) -> Result<(), SyncTokenError> {
        self.add_token(token, col).map_err(|reason| SyncTokenError {
            token: token.to_string(),
            reason,
        })
    }

    fn add_token(&mut self, token: &str, col: usize) -> Result<(), String> {
        let t = token.strip_prefix('$').unwrap_or(token);
        let event = t.starts_with('E');
        let inner = t
            .strip_prefix("S[")
            .or_else(|| t.strip_prefix("E["))
            .ok_or("expected S[index] or E[index]")?;
        let (idx, mut rest) = inner
            .split_once(']')
            .ok_or_else(|| format!("`{token}`: missing `]`"))?;
        let what = if event { "event" } else { "semaphore" };
        let idx = parse_uint(idx, 0xFF).map_err(|e| format!("{what} index: {e}"))? as u8;
        // The profile's name of the semaphore, `(Tensor)`, is informational.
        if let Some(r) = rest.strip_prefix('(') {
            rest = r.split_once(')').map(|(_, r)| r).ok_or("missing `)`")?;
        }
        let set_wait = |s: &mut Self, part: SyncPart| {
            if s.wait.is_some() {
                return Err("a bundle has one wait".to_string());
            }
            s.wait = Some(part);
            Ok(())
        };
        if event {
            if let Some((_, mode)) = EVENT_WAITS.iter().find(|(op, _)| rest == *op) {
                let part = (mode_code("WAIT_MODE", mode)?, idx, None, col, token.into());
                return set_wait(self, part);
            }
        } else {
            for (op, mode) in WAITS {
                if let Some(v) = rest.strip_prefix(op) {
                    let (reg, v) = operand(v, "wait value")?;
                    let mode = if reg {
                        format!("{}_REG", mode.trim_end_matches("_IMM"))
                    } else {
                        mode.to_string()
                    };
                    let part = (
                        mode_code("WAIT_MODE", &mode)?,
                        idx,
                        Some(v),
                        col,
                        token.into(),
                    );
                    return set_wait(self, part);
                }
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
        let (mode, value) = if event {
            match op {
                "=1" => ("EVT_SET".to_string(), None),
                "=0" => ("EVT_CLR".to_string(), None),
                _ => {
                    return Err(format!(
                        "`{token}`: expected a wait (==1, ==0, ==1->0, ==0->1) or an update (=1, =0) after E[{idx}]"
                    ))
                }
            }
        } else if op == "++" {
            ("SEM_INC".to_string(), None)
        } else if op == "--" {
            ("SEM_DEC".to_string(), None)
        } else {
            let (base, v) = if let Some(v) = op.strip_prefix("+=") {
                ("SEM_ADD", v)
            } else if let Some(v) = op.strip_prefix("-=") {
                ("SEM_SUB", v)
            } else if let Some(v) = op.strip_prefix('=') {
                ("SEM_WR", v)
            } else {
                return Err(format!(
                    "`{token}`: expected a wait (>=v, >v, ==v, <v, <=v) or an update (++, --, +=v, -=v, =v) after S[{idx}]"
                ));
            };
            let (reg, v) = operand(v, "update value")?;
            (
                format!("{base}_{}", if reg { "REG" } else { "IMM" }),
                Some(v),
            )
        };
        if self.update.is_some() {
            return Err("a bundle has one update".into());
        }
        let code = mode_code("UPDATE_MODE", &format!("{mode}_{suffix}"))?;
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
            if let Some(v) = v {
                value = Some((*v, *col, from));
            }
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

/// The profile's names for fields of the spec (`neuron-profile` operands column; the mapping
/// is project-defined, see `docs/asm.md`, "The neuron dialect"): `acc_flags` is
/// `psum_accumulate_flags`.
pub const FIELD_ALIASES: &[(&str, &str)] = &[("acc_flags", "psum_accumulate_flags")];

/// The spec's name of a field the profile may name differently.
pub fn field_alias(key: &str) -> Option<&'static str> {
    FIELD_ALIASES
        .iter()
        .find(|(a, _)| *a == key)
        .map(|(_, f)| *f)
}

/// `row_grp=qN`: the 32-row quadrant N of the PE array, written as its row-group code
/// `1 << N` (the compiler's row-group codes for a group of at most 32 rows are 1, 2, 4, 8 by
/// quadrant, isa-facts "Row/col group code"; the profile's `q` spelling is read that way,
/// project-defined).
pub fn row_group_value(v: &str) -> Option<u8> {
    let q = v.strip_prefix(['q', 'Q'])?;
    match q {
        "0" | "1" | "2" | "3" => Some(1u8 << q.parse::<u8>().ok()?),
        _ => None,
    }
}

/// The profile's trailing size term `N*M` (`3*128`): accepted and not encoded; its meaning is
/// not published, so nothing is checked against it.
pub fn is_size_term(t: &str) -> bool {
    match t.split_once('*') {
        Some((a, b)) => {
            !a.is_empty()
                && !b.is_empty()
                && a.bytes().all(|c| c.is_ascii_digit())
                && b.bytes().all(|c| c.is_ascii_digit())
        }
        None => false,
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
pub(crate) fn parse_operand(s: &str, n: usize) -> Result<(u32, Vec<i64>, Vec<i64>), String> {
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
    let (i, v) = (e.wait_idx, e.semaphore_value);
    if let Some((op, _)) = EVENT_WAITS.iter().find(|(_, m)| *m == name) {
        return Some(format!("$E[{i}]{op}"));
    }
    if let Some(base) = name.strip_suffix("_REG") {
        let op = WAITS
            .iter()
            .find(|(_, m)| m.trim_end_matches("_IMM") == base)?
            .0;
        return (v <= 0xFF).then(|| format!("$S[{i}]{op}$R[{v}]"));
    }
    let op = WAITS.iter().find(|(_, m)| *m == name)?.0;
    Some(format!("$S[{i}]{op}{v}"))
}

/// The update token and whether it uses `semaphore_value`.
fn update_text(b: &Bundle) -> Option<(String, bool)> {
    let e = Events::read(&b.0, 4);
    let name = spec::enum_def("UPDATE_MODE")?.value(e.update_mode.0)?.name;
    let (mode, when) = name.rsplit_once('_')?;
    let (i, v) = (e.update_idx, e.semaphore_value);
    let when = when.to_ascii_lowercase();
    let (reg, mode) = match mode.strip_suffix("_REG") {
        Some(m) => (true, m),
        None => (false, mode.trim_end_matches("_IMM")),
    };
    if reg && v > 0xFF {
        return None;
    }
    let val = if reg {
        format!("$R[{v}]")
    } else {
        v.to_string()
    };
    let (s, uses) = match mode {
        "EVT_SET" => (format!("$E[{i}]=1"), false),
        "EVT_CLR" => (format!("$E[{i}]=0"), false),
        "SEM_INC" => (format!("$S[{i}]++"), false),
        "SEM_DEC" => (format!("$S[{i}]--"), false),
        "SEM_ADD" => (format!("$S[{i}]+={val}"), true),
        "SEM_SUB" => (format!("$S[{i}]-={val}"), true),
        "SEM_WR" => (format!("$S[{i}]={val}"), true),
        _ => return None,
    };
    Some((format!("{s}@{when}"), uses))
}

/// Whether a wait mode uses `semaphore_value` (every semaphore compare; not the event waits).
fn wait_uses_value(b: &Bundle) -> bool {
    let m = Events::read(&b.0, 4).wait_mode.0 & 0x7F;
    (0x01..=0x05).contains(&m)
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
    // The value field is shared: the wait and a value-carrying update both write it.
    let update = update_text(b);
    let mut parts: Vec<String> = Vec::new();
    let mut skip: Vec<&str> = Vec::new();
    let value_written =
        (wait.is_some() && wait_uses_value(b)) || update.as_ref().is_some_and(|(_, uses)| *uses);
    if let Some(w) = &wait {
        parts.push(w.clone());
        skip.extend(["wait_mode", "wait_idx"]);
    }
    if let Some((u, _)) = &update {
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
        // An operand that is not shown (all zero) does not carry the dtype: the dtype field
        // is then written by name.
        if let FieldType::Tensor(_) | FieldType::MemPattern(_) = m.ty {
            if !super::shown(m, &enc) {
                continue;
            }
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
