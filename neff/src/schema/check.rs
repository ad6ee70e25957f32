//! Consistency checks over a parsed `def.json` (variable ids, names, sizes against shape ×
//! dtype, `file` members, queues) and over the DMA blocks of `def.json` and the sidecars
//! (queues declared, access patterns inside their variables).

use std::collections::BTreeSet;

use serde_json::Value;

use super::{
    contiguous_steps, DefJson, DmaBlock, DmaEntry, DmaOp, SemOp, Sidecar, VarKind, VarRef,
    Variable, MAX_DMA_DIMS, MAX_DMA_QUEUES,
};
use crate::{archive, NeffError};
use tpbsim_isa::NumFormat;

/// Largest `num_queues` of a queue set (NEFF-doc `num_queues`: "On non-INF1 platforms it
/// must be 16 or less").
pub const MAX_QUEUES_PER_SET: u64 = 16;

/// Semaphores per core (C `arch/execution-sync-model.md`: 256 per core).
pub const SEMAPHORES: u64 = 256;

/// A rule of the `def.json` and engine-JSON keys that place variables, address DGE tables and
/// size queue sets, broken ([`NeffError::Def`] carries it with the member and JSON path).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum DefError {
    /// A semaphore index is 256 or more.
    #[error("semaphore {0} is not below 256")]
    SemaphoreRange(u64),
    /// `num_queues` is 0 or above 16.
    #[error("num_queues {0}: a queue set has 1 to 16 queues (AWS NEFF documentation: \"must be 16 or less\")")]
    NumQueues(u64),
    /// `semaphore_set` and `num_queues` disagree.
    #[error("{set} semaphores for {num_queues} queues: a queue set has one semaphore per queue")]
    SemaphoreSetLength {
        /// Length of `semaphore_set`.
        set: usize,
        /// `num_queues`.
        num_queues: u64,
    },
    /// A `dge-table` entry names no variable.
    #[error("entry {entry} names var_id {var_id}, which no variable of this def.json has")]
    DgeTableEntry {
        /// The entry (index into `list`).
        entry: usize,
        /// The var_id it names.
        var_id: u64,
    },
    /// A `virtual` variable lacks a key it needs.
    #[error("a `virtual` variable needs `{0}` (the AWS NEFF documentation places it in the scratchpad by its size and backing_variable_off)")]
    VirtualWithout(&'static str),
    /// A `virtual` variable's end overflows.
    #[error("backing_variable_off {off} + size {size} overflows")]
    VirtualOverflow {
        /// `backing_variable_off`.
        off: u64,
        /// `size`.
        size: u64,
    },
    /// A key given on a variable type it does not apply to.
    #[error("`{key}` applies to `{applies_to}` variables, not `{kind}` (AWS NEFF documentation restrictions)")]
    KeyOnKind {
        /// The key.
        key: &'static str,
        /// The type it applies to.
        applies_to: &'static str,
        /// The variable's type.
        kind: String,
    },
}

fn invalid(member: &str, path: impl Into<String>, message: impl Into<String>) -> NeffError {
    NeffError::Invalid {
        member: member.to_string(),
        path: path.into(),
        message: message.into(),
    }
}

fn def_error(member: &str, path: impl Into<String>, error: DefError) -> NeffError {
    NeffError::Def {
        member: member.to_string(),
        path: path.into(),
        error,
    }
}

/// A semaphore index below 256.
fn check_semaphore(member: &str, path: impl Into<String>, s: u64) -> Result<(), NeffError> {
    if s >= SEMAPHORES {
        return Err(def_error(member, path, DefError::SemaphoreRange(s)));
    }
    Ok(())
}

impl DefJson {
    /// `check_var_ids` (R `neff/metadata-schema.md` §5): when present and not false, var ids are
    /// dense (largest + 1 == count) and at least one variable is an output.
    fn check_var_ids(&self, member: &str) -> Result<(), NeffError> {
        match self.extra.get("check_var_ids") {
            None | Some(Value::Bool(false)) | Some(Value::Null) => return Ok(()),
            Some(Value::Number(n)) if n.as_u64() == Some(0) => return Ok(()),
            _ => {}
        }
        let max = self.var.iter().map(|v| v.var_id).max();
        if let Some(max) = max {
            if max.checked_add(1) != Some(self.var.len() as u64) {
                return Err(invalid(
                    member,
                    "check_var_ids",
                    format!(
                        "var ids are not dense: largest is {max}, {} variables",
                        self.var.len()
                    ),
                ));
            }
        }
        if !self.var.iter().any(|v| v.kind == VarKind::Output) {
            return Err(invalid(member, "check_var_ids", "no output variable"));
        }
        Ok(())
    }

    /// Check the keys tpbsim uses: unique var ids and names, sizes consistent with shape ×
    /// dtype, sizes present where the runtime requires them, `file` variables naming a
    /// member, unique queue names within the queue limit, and the DMA blocks carried here.
    pub fn validate(&self, member: &str) -> Result<(), NeffError> {
        let mut ids = BTreeSet::new();
        let mut names = BTreeSet::new();
        for (i, v) in self.var.iter().enumerate() {
            let at = |k: &str| format!("{}.{k}", self.var_path(i));
            if u32::try_from(v.var_id).is_err() {
                return Err(invalid(
                    member,
                    at("var_id"),
                    format!("{} does not fit the runtime's 32-bit var_id", v.var_id),
                ));
            }
            if !ids.insert(v.var_id) {
                return Err(invalid(
                    member,
                    at("var_id"),
                    format!("duplicate var_id {}", v.var_id),
                ));
            }
            if v.name.is_empty() {
                return Err(invalid(member, at("name"), "empty name"));
            }
            if !names.insert(v.name.as_str()) {
                return Err(invalid(
                    member,
                    at("name"),
                    format!("duplicate variable name `{}`", v.name),
                ));
            }
            self.check_placement(member, i, v)?;
            if v.kind.requires_size() && v.size.is_none() {
                return Err(invalid(
                    member,
                    at("size"),
                    format!("a `{}` variable needs a size", v.kind),
                ));
            }
            if let Some(shape) = &v.shape {
                let Some(elements) = v.elements() else {
                    return Err(invalid(
                        member,
                        at("shape"),
                        format!("shape {shape:?} overflows"),
                    ));
                };
                if let (Some(size), Some(dt)) = (v.size, v.dtype) {
                    let want = elements.checked_mul(dt.container_bytes() as u64);
                    if want != Some(size) {
                        return Err(invalid(
                            member,
                            at("size"),
                            format!(
                                "size {size} != shape {shape:?} × {} bytes ({dt})",
                                dt.container_bytes()
                            ),
                        ));
                    }
                }
            }
            if v.kind == VarKind::File {
                match &v.file_name {
                    None => {
                        return Err(invalid(
                            member,
                            at("file_name"),
                            "a `file` variable needs a file_name",
                        ))
                    }
                    Some(f) if archive::normalize_member_path(f.as_bytes()).is_err() => {
                        return Err(invalid(
                            member,
                            at("file_name"),
                            format!("`{f}` is not a safe relative path"),
                        ))
                    }
                    Some(_) => {}
                }
            }
        }
        if self.dma_queue.len() > MAX_DMA_QUEUES {
            return Err(invalid(
                member,
                "dma_queue",
                format!(
                    "{} queues; at most {MAX_DMA_QUEUES} (11 × 16) are allowed",
                    self.dma_queue.len()
                ),
            ));
        }
        let mut qnames = BTreeSet::new();
        for (i, q) in self.dma_queue.iter().enumerate() {
            let qpath = self.queue_path(i);
            if !qnames.insert(q.name.as_str()) {
                return Err(invalid(
                    member,
                    format!("{qpath}.name"),
                    format!("duplicate queue `{}`", q.name),
                ));
            }
            let sems = q.semaphore.iter().map(|s| ("semaphore".to_string(), *s));
            let set = q.semaphore_set.iter().flatten().enumerate();
            for (key, s) in sems.chain(set.map(|(j, s)| (format!("semaphore_set[{j}]"), *s))) {
                check_semaphore(member, format!("{qpath}.{key}"), u64::from(s))?;
            }
            if let Some(n) = q.num_queues {
                if n == 0 || n > MAX_QUEUES_PER_SET {
                    return Err(def_error(
                        member,
                        format!("{qpath}.num_queues"),
                        DefError::NumQueues(n),
                    ));
                }
                if let Some(set) = &q.semaphore_set {
                    if set.len() as u64 != n {
                        return Err(def_error(
                            member,
                            format!("{qpath}.semaphore_set"),
                            DefError::SemaphoreSetLength {
                                set: set.len(),
                                num_queues: n,
                            },
                        ));
                    }
                }
            }
        }
        self.check_var_ids(member)?;
        for (e, files) in &self.definition {
            if let Some(f) = &files.instr {
                if archive::normalize_member_path(f.as_bytes()).is_err() {
                    return Err(invalid(
                        member,
                        format!("definition.{e}._instr"),
                        format!("`{f}` is not a safe relative path"),
                    ));
                }
            }
        }
        validate_blocks(member, "dma", &self.dma, self)
    }

    /// The placement keys of variable `i`: a `dge-table`'s `list` names existing variables, a
    /// `virtual` variable has a size and a `backing_variable_off` whose end does not
    /// overflow, and `list` / the backing keys appear only on the types they apply to.
    fn check_placement(&self, member: &str, i: usize, v: &Variable) -> Result<(), NeffError> {
        let at = |k: &str| format!("{}.{k}", self.var_path(i));
        let on_kind = |key: &'static str, applies_to: &'static str| {
            def_error(
                member,
                at(key),
                DefError::KeyOnKind {
                    key,
                    applies_to,
                    kind: v.kind.to_string(),
                },
            )
        };
        if let Some(list) = &v.list {
            if !matches!(v.kind, VarKind::DgeTable | VarKind::List) {
                return Err(on_kind("list", "dge-table"));
            }
            for (entry, &var_id) in list.iter().enumerate() {
                if self.variable_by_id(var_id).is_none() {
                    return Err(def_error(
                        member,
                        format!("{}[{entry}]", at("list")),
                        DefError::DgeTableEntry { entry, var_id },
                    ));
                }
            }
        }
        if v.kind == VarKind::Virtual {
            let size = v
                .size
                .ok_or_else(|| def_error(member, at("size"), DefError::VirtualWithout("size")))?;
            let off = v.backing_variable_off.ok_or_else(|| {
                def_error(
                    member,
                    at("backing_variable_off"),
                    DefError::VirtualWithout("backing_variable_off"),
                )
            })?;
            if off.checked_add(size).is_none() {
                return Err(def_error(
                    member,
                    at("backing_variable_off"),
                    DefError::VirtualOverflow { off, size },
                ));
            }
        } else if v.backing_variable_off.is_some() {
            return Err(on_kind("backing_variable_off", "virtual"));
        } else if v.backing_buf.is_some() {
            return Err(on_kind("backing_buf", "virtual"));
        }
        Ok(())
    }
}

/// Check an engine JSON or sidecar against its subgraph's `def.json`: its DMA blocks
/// ([`validate_blocks`]) and its `act_semaphore`. (The members it names are checked by the
/// reader, which sees the archive.)
pub fn validate_sidecar(member: &str, sidecar: &Sidecar, def: &DefJson) -> Result<(), NeffError> {
    validate_blocks(member, "dma", &sidecar.dma, def)?;
    if let Some(s) = sidecar.act_semaphore {
        check_semaphore(member, "act_semaphore", u64::from(s))?;
    }
    Ok(())
}

/// Check DMA blocks against the subgraph's `def.json`.
pub fn validate_blocks(
    member: &str,
    root: &str,
    blocks: &[DmaBlock],
    def: &DefJson,
) -> Result<(), NeffError> {
    for (bi, block) in blocks.iter().enumerate() {
        let bpath = format!("{root}[{bi}]");
        if let Some(q) = &block.queue {
            if !def.dma_queue.is_empty() && def.queue(q).is_none() {
                return Err(invalid(
                    member,
                    format!("{bpath}.queue"),
                    format!("queue `{q}` is not declared in def.json dma_queue"),
                ));
            }
        }
        for (ei, entry) in block.desc.iter().enumerate() {
            validate_entry(member, &format!("{bpath}.desc[{ei}]"), entry, def)?;
        }
    }
    Ok(())
}

/// Byte range `[lo, hi)` touched by an access pattern (signed steps), from the variable start.
pub(super) fn pattern_span(
    offset: u64,
    sizes: &[u64],
    steps: &[i64],
    elem: u64,
) -> Option<(i128, i128)> {
    let (mut lo, mut hi) = (0i128, 0i128);
    for (&n, &s) in sizes.iter().zip(steps) {
        let reach = i128::from(n.checked_sub(1)?).checked_mul(i128::from(s))?;
        if reach < 0 {
            lo = lo.checked_add(reach)?;
        } else {
            hi = hi.checked_add(reach)?;
        }
    }
    let e = i128::from(elem);
    let off = i128::from(offset);
    Some((
        off.checked_add(lo.checked_mul(e)?)?,
        off.checked_add(hi.checked_add(1)?.checked_mul(e)?)?,
    ))
}

/// One side of a DMA entry: `from` or `to`.
struct Side<'a> {
    name: &'static str,
    offset: u64,
    sizes: &'a [u64],
    steps: Option<&'a Vec<i64>>,
    dtype: Option<NumFormat>,
}

impl<'a> Side<'a> {
    fn from(e: &'a DmaEntry) -> Side<'a> {
        Side {
            name: "from",
            offset: e.from_offset,
            sizes: &e.from_sizes,
            steps: e.from_steps.as_ref(),
            dtype: e.from_dtype,
        }
    }
    fn to(e: &'a DmaEntry) -> Side<'a> {
        Side {
            name: "to",
            offset: e.to_offset,
            sizes: &e.to_sizes,
            steps: e.to_steps.as_ref(),
            dtype: e.to_dtype,
        }
    }
}

/// Check one side against its variable; returns the element count it moves.
fn validate_side(
    member: &str,
    path: &str,
    side: &Side<'_>,
    var: &Variable,
) -> Result<u64, NeffError> {
    let Side {
        name: side,
        offset,
        sizes,
        steps,
        dtype,
    } = *side;
    if sizes.is_empty() {
        return Err(invalid(
            member,
            format!("{path}.{side}_sizes"),
            "missing or empty",
        ));
    }
    if sizes.len() > MAX_DMA_DIMS {
        return Err(invalid(
            member,
            format!("{path}.{side}_sizes"),
            format!("{} dimensions; at most {MAX_DMA_DIMS}", sizes.len()),
        ));
    }
    if let Some(i) = sizes.iter().position(|&n| n == 0) {
        return Err(invalid(
            member,
            format!("{path}.{side}_sizes[{i}]"),
            "size 0",
        ));
    }
    let default_steps;
    let steps = match steps {
        Some(s) => {
            if s.len() != sizes.len() {
                return Err(invalid(
                    member,
                    format!("{path}.{side}_steps"),
                    format!("{} steps for {} sizes", s.len(), sizes.len()),
                ));
            }
            s
        }
        None => {
            default_steps = contiguous_steps(sizes);
            &default_steps
        }
    };
    let elem = dtype
        .or(var.dtype)
        .map_or(1, |d| d.container_bytes() as u64);
    let elements = sizes.iter().try_fold(1u64, |a, &n| a.checked_mul(n));
    let span = pattern_span(offset, sizes, steps, elem);
    let (Some(elements), Some((start, end))) = (elements, span) else {
        return Err(invalid(
            member,
            format!("{path}.{side}_sizes"),
            "access pattern overflows",
        ));
    };
    if start < 0 {
        return Err(invalid(
            member,
            format!("{path}.{side}"),
            format!("access starts {} bytes before `{}`", -start, var.name),
        ));
    }
    if let Some(size) = var.byte_size() {
        if end > i128::from(size) {
            return Err(invalid(
                member,
                format!("{path}.{side}"),
                format!(
                    "access reaches byte {end} of `{}`, which has {size} bytes",
                    var.name
                ),
            ));
        }
    }
    Ok(elements)
}

fn validate_entry(member: &str, path: &str, e: &DmaEntry, def: &DefJson) -> Result<(), NeffError> {
    let sources = e.sources();
    if sources.is_empty() {
        return Err(invalid(
            member,
            format!("{path}.from"),
            "no source (`from` or `from_arr`)",
        ));
    }
    let lookup = |r: &VarRef, key: &str| {
        def.resolve(r).ok_or_else(|| {
            invalid(
                member,
                format!("{path}.{key}"),
                format!("{r} is not a def.json variable"),
            )
        })
    };
    let to = lookup(&e.to, "to")?;
    let dst = validate_side(member, path, &Side::to(e), to)?;
    for (i, r) in sources.iter().enumerate() {
        let key = if e.from.is_some() && i == 0 {
            "from".to_string()
        } else {
            format!("from_arr[{}]", i - usize::from(e.from.is_some()))
        };
        let var = lookup(r, &key)?;
        let src = validate_side(member, path, &Side::from(e), var)?;
        if src != dst {
            return Err(invalid(
                member,
                path,
                format!("source moves {src} elements, destination {dst}"),
            ));
        }
    }
    if let Some(s) = e.sem {
        check_semaphore(member, format!("{path}.sem"), u64::from(s))?;
    }
    if let Some(v) = e.sem_value.filter(|&v| u32::try_from(v).is_err()) {
        return Err(invalid(
            member,
            format!("{path}.sem_value"),
            format!("{v} does not fit a 32-bit semaphore"),
        ));
    }
    if let Some(ev) = e.event.filter(|&v| v > 255) {
        return Err(invalid(
            member,
            format!("{path}.event"),
            format!("event {ev} is not below 256"),
        ));
    }
    if let DmaOp::Other(op) = e.op() {
        return Err(invalid(
            member,
            format!("{path}.op"),
            format!("unknown operation `{op}`"),
        ));
    }
    match (&e.sem, &e.sem_op, &e.sem_value) {
        (None, Some(_), _) | (None, _, Some(_)) => {
            return Err(invalid(
                member,
                format!("{path}.sem"),
                "sem_op/sem_value without sem",
            ));
        }
        (Some(_), Some(SemOp::Other(op)), _) => {
            return Err(invalid(
                member,
                format!("{path}.sem_op"),
                format!("unknown semaphore update `{op}`"),
            ));
        }
        (Some(_), Some(SemOp::Add | SemOp::Write), None) => {
            return Err(invalid(
                member,
                format!("{path}.sem_value"),
                "`add` and `write` need a sem_value",
            ));
        }
        (Some(_), None | Some(SemOp::Inc), Some(_)) => {
            return Err(invalid(
                member,
                format!("{path}.sem_value"),
                "`inc` takes no sem_value",
            ));
        }
        _ => {}
    }
    Ok(())
}
