//! Lint: legal bundles that almost certainly do not do what their author meant (`docs/asm.md`,
//! "Lint"). Every finding is a warning naming the fix; `sim asm` and `sim validate` turn them
//! into errors with `--deny-warnings`.
//!
//! Two scopes. A *stream* (`sim asm`, `sim validate FILE.bin`) shows one engine's bundles only:
//! the rules that need the other engines and the DMAs (who writes an address, who waits for a
//! semaphore) run over what the stream shows and report a note naming that scope (another
//! engine or a DMA may supply what the stream lacks, so it is not a warning). A *kernel*
//! (`sim validate KERNEL.neff`) shows every engine's stream and every DMA of a subgraph: all
//! rules run and warn.

use tpbsim_isa::inst::{decode, FieldValue};
use tpbsim_isa::ranges::Ranges;
use tpbsim_isa::spec::FieldType;
use tpbsim_isa::{Addr4, Bundle, Engine, Events, Gen, Geometry, Inst, UpdateMode, WaitMode, Wire};
use tpbsim_neff::schema::{contiguous_steps, VarKind};
use tpbsim_neff::Subgraph;

use crate::diag::{Diagnostic, Layer, Location, Severity};

/// One lint rule of the registry (`crate::registry::lint_rules`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LintRule {
    /// Kebab-case name.
    pub name: &'static str,
    /// Code (project-defined numbering, 9001..).
    pub code: u32,
    /// Whether the rule needs the whole kernel (every stream and DMA).
    pub kernel: bool,
    /// What it finds.
    pub summary: &'static str,
    /// The fix it names.
    pub fix: &'static str,
}

/// ACTIVATE with an instruction scale of zero.
pub const ACT_SCALE_ZERO: LintRule = LintRule {
    name: "act-scale-zero",
    code: 9001,
    kernel: false,
    summary: "ACTIVATE takes its scale from the instruction (scale_src=INSTRUCTION) and scale_value is 0: it computes f(0*x + bias)",
    fix: "write scale_value=1.0 (or the scale you mean)",
};

/// A pointer-mode bias or scale at an address nothing writes.
pub const POINTER_UNWRITTEN: LintRule = LintRule {
    name: "pointer-unwritten",
    code: 9002,
    kernel: true,
    summary: "ACTIVATE reads its bias (bias_src_n=POINTER, the default) or scale (scale_src=POINTER) from an SBUF/PSUM address that no instruction or DMA of the kernel writes",
    fix: "write bias_src_n=INSTRUCTION bias=VALUE for an immediate bias, or write the column first",
};

/// A wait that the shared semaphore value makes always true or never satisfiable.
pub const WAIT_DEGENERATE: LintRule = LintRule {
    name: "wait-degenerate",
    code: 9003,
    kernel: false,
    summary: "a semaphore wait that is always true or never satisfiable for its semaphore_value (one value per bundle, shared with the update)",
    fix: "split the wait and the value-carrying update into two bundles, or give the wait the value it needs",
};

/// An update of a semaphore no bundle waits for.
pub const UPDATE_UNWAITED: LintRule = LintRule {
    name: "update-unwaited",
    code: 9004,
    kernel: true,
    summary: "a bundle updates a semaphore that no bundle of the kernel waits for",
    fix: "wait for it where the result is consumed (wait_idx), or drop the update",
};

/// Every lint rule, by code.
pub const RULES: &[LintRule] = &[
    ACT_SCALE_ZERO,
    POINTER_UNWRITTEN,
    WAIT_DEGENERATE,
    UPDATE_UNWAITED,
];

/// One engine stream to lint.
pub struct LintStream<'a> {
    /// File or member name for locations.
    pub file: String,
    /// Engine.
    pub engine: Option<Engine>,
    /// Bundles.
    pub bundles: &'a [Bundle],
}

fn diag(rule: &LintRule, s: &LintStream<'_>, index: usize, msg: String) -> Diagnostic {
    let mut d = bare(rule, s, index, String::new());
    d.message = format!("{msg}; fix: {}", rule.fix);
    d
}

fn bare(rule: &LintRule, s: &LintStream<'_>, index: usize, msg: String) -> Diagnostic {
    Diagnostic::error(Layer::Lint, rule.name, Some(rule.code), msg)
        .with_severity(Severity::Warning)
        .at(Location {
            file: Some(s.file.clone()),
            engine: s.engine,
            index: Some(index as u64),
            offset: Some(index as u64 * 64),
            ..Location::default()
        })
}

/// A kernel-scope rule run on the streams given without the rest of the kernel: what those
/// streams show is reported as a note naming the scope (another engine's stream or a DMA may
/// supply what they lack), never as a warning.
fn stream_scope(rule: &LintRule, s: &LintStream<'_>, index: usize, msg: String) -> Diagnostic {
    bare(
        rule,
        s,
        index,
        format!(
            "{msg} (stream scope: only the streams given are seen, not the other engines' streams or the DMAs; `sim validate KERNEL.neff` checks the whole kernel); if nothing else supplies it, fix: {}",
            rule.fix
        ),
    )
    .with_severity(Severity::Note)
}

/// Whether a wait mode compares a semaphore (the spec's `WAIT_MODE` `SEM_*` members, immediate
/// or register).
fn is_sem_wait(mode: u8) -> bool {
    WaitMode(mode).name().is_some_and(|n| n.starts_with("SEM_"))
}

/// Whether an update mode changes a semaphore (the spec's `UPDATE_MODE` `SEM_*` members:
/// INC, DEC, ADD, SUB, WR; READ or COMPLETE; immediate or register).
fn is_sem_update(mode: u8) -> bool {
    UpdateMode(mode)
        .name()
        .is_some_and(|n| n.starts_with("SEM_"))
}

/// Value-carrying immediate updates: ADD_IMM, SUB_IMM, WR_IMM (READ or COMPLETE).
fn update_value_name(mode: u8) -> Option<&'static str> {
    match UpdateMode(mode) {
        UpdateMode::SEM_ADD_IMM_READ | UpdateMode::SEM_ADD_IMM_COMPLETE => Some("adds"),
        UpdateMode::SEM_SUB_IMM_READ | UpdateMode::SEM_SUB_IMM_COMPLETE => Some("subtracts"),
        UpdateMode::SEM_WR_IMM_READ | UpdateMode::SEM_WR_IMM_COMPLETE => Some("writes"),
        _ => None,
    }
}

/// Byte ranges written, as flat addresses `[lo, hi)` in the on-chip address space: merged
/// whenever their count doubles, so memory is bounded by the distinct ranges and each query
/// after [`Ranges::ranges`] is a binary search.
type Writes = Ranges;

fn elem_bytes(inst: &Inst, field: &str) -> u64 {
    let meta = inst.meta();
    let b = inst.encode();
    meta.field(field)
        .and_then(|m| match m.read(&b) {
            FieldValue::Enum { raw, def } => def.value(raw).map(|v| v.bits as u64 / 8),
            _ => None,
        })
        .filter(|&n| n > 0)
        .unwrap_or(4)
}

fn partitions(inst: &Inst) -> u64 {
    let meta = inst.meta();
    let b = inst.encode();
    ["num_active_partitions", "num_active_channels"]
        .iter()
        .find_map(|n| meta.field(n).map(|m| b.0[m.offset as usize] as u64))
        .filter(|&n| n > 0)
        .unwrap_or(1)
}

/// What the destination operands (`dst*`) of a bundle write, per partition.
fn add_bundle_writes(inst: &Inst, gen: Gen, w: &mut Writes) {
    let stride = Geometry::of(gen).sbuf_partition_stride as u64;
    let meta = inst.meta();
    let b = inst.encode();
    let elem = elem_bytes(inst, "out_dtype");
    let parts = partitions(inst);
    for m in meta.fields.iter().filter(|m| m.name.starts_with("dst")) {
        if !matches!(m.ty, FieldType::Tensor(_) | FieldType::MemPattern(_)) {
            continue;
        }
        if let FieldValue::Pattern(p) = m.read(&b) {
            let n = p.dims as usize;
            let span: i64 = (0..n)
                .map(|i| (p.num[i].max(1) as i64 - 1) * p.step[i] as i64)
                .sum();
            let base = p.addr.address() as u64;
            let (lo, hi) = if span >= 0 {
                (0, span as u64 + 1)
            } else {
                (span.unsigned_abs(), 1)
            };
            for q in 0..parts {
                let start = (base + q * stride).saturating_sub(lo * elem);
                w.add(start, base + q * stride + hi * elem);
            }
        }
    }
}

/// What a subgraph's DMAs write into the state buffer (flat byte ranges, outermost dimension
/// enumerated).
fn add_dma_writes(sg: &Subgraph, w: &mut Writes) {
    for sc in sg.sidecars.values() {
        for e in sc.sidecar.dma.iter().flat_map(|b| &b.desc) {
            let Some(to) = sg.def.resolve(&e.to) else {
                continue;
            };
            if to.kind != VarKind::StateBuffer {
                continue;
            }
            let from_dtype = e
                .from
                .as_ref()
                .and_then(|f| sg.def.resolve(f))
                .and_then(|v| v.dtype);
            let elem = e
                .to_dtype
                .or(to.dtype)
                .or(from_dtype)
                .map_or(1, |d| d.container_bytes() as u64);
            let sizes = &e.to_sizes;
            if sizes.is_empty() {
                continue;
            }
            let steps = e
                .to_steps
                .clone()
                .unwrap_or_else(|| contiguous_steps(sizes));
            // Signed steps: the inner dimensions reach `lo_in..=hi_in` elements around each row.
            let (mut lo_in, mut hi_in) = (0i128, 0i128);
            for (&n, &s) in sizes.iter().zip(&steps).skip(1) {
                let reach = i128::from(n.saturating_sub(1)) * i128::from(s);
                if reach < 0 {
                    lo_in += reach;
                } else {
                    hi_in += reach;
                }
            }
            let elem = i128::from(elem);
            let row = i128::from(steps.first().copied().unwrap_or(0));
            for j in 0..sizes[0].min(4096) {
                let base = i128::from(e.to_offset) + i128::from(j) * row * elem;
                let lo = u64::try_from((base + lo_in * elem).max(0)).unwrap_or(u64::MAX);
                let hi = u64::try_from((base + (hi_in + 1) * elem).max(0)).unwrap_or(u64::MAX);
                w.add(lo, hi);
            }
        }
    }
}

/// Lint streams. With `kernel` (every stream of a subgraph and its DMAs), the kernel-scope
/// rules warn; without, they run over the streams given and report notes naming that scope
/// (9004 once per semaphore and stream).
pub fn lint(streams: &[LintStream<'_>], gen: Gen, kernel: Option<&Subgraph>) -> Vec<Diagnostic> {
    let mut out = Vec::new();
    let mut writes = Writes::default();
    let mut waited = [false; 256];
    // Two passes over the bundles, each decoding as it goes: nothing is kept per bundle.
    for s in streams {
        for b in s.bundles {
            let ev = Events::read(&b.0, 4);
            if is_sem_wait(ev.wait_mode.0) {
                waited[ev.wait_idx as usize] = true;
            }
            if let Ok(i) = decode(b, gen) {
                add_bundle_writes(&i, gen, &mut writes);
            }
        }
    }
    if let Some(sg) = kernel {
        add_dma_writes(sg, &mut writes);
    }
    let written = writes.ranges();
    for s in streams {
        let mut noted = [false; 256];
        for (index, b) in s.bundles.iter().enumerate() {
            let inst = decode(b, gen).ok();
            let ev = Events::read(&b.0, 4);
            let v = ev.semaphore_value;
            // wait-degenerate.
            {
                // Immediate compares only: a register's value is not known here.
                let (verdict, op) = match ev.wait_mode {
                    WaitMode::SEM_GE_IMM if v == 0 => {
                        (Some("always true (a semaphore is never below 0)"), ">=")
                    }
                    WaitMode::SEM_LE if v == u32::MAX => (Some("always true"), "<="),
                    WaitMode::SEM_LT if v == 0 => (
                        Some("never satisfiable (a semaphore is never below 0)"),
                        "<",
                    ),
                    WaitMode::SEM_GT if v == u32::MAX => (Some("never satisfiable"), ">"),
                    _ => (None, ""),
                };
                if let Some(verdict) = verdict {
                    let shared = update_value_name(ev.update_mode.0)
                        .map(|how| {
                            format!(
                                "; the value is shared with this bundle's update, which {how} {v} on semaphore {}",
                                ev.update_idx
                            )
                        })
                        .unwrap_or_default();
                    out.push(diag(
                        &WAIT_DEGENERATE,
                        s,
                        index,
                        format!(
                            "wait on semaphore {} {op} {v} is {verdict}{shared}",
                            ev.wait_idx
                        ),
                    ));
                }
            }
            // update-unwaited.
            if is_sem_update(ev.update_mode.0) && !waited[ev.update_idx as usize] {
                let idx = ev.update_idx;
                if kernel.is_some() {
                    out.push(diag(
                        &UPDATE_UNWAITED,
                        s,
                        index,
                        format!("semaphore {idx} is updated but no bundle waits for it"),
                    ));
                } else if !noted[idx as usize] {
                    noted[idx as usize] = true;
                    out.push(stream_scope(
                        &UPDATE_UNWAITED,
                        s,
                        index,
                        format!("semaphore {idx} is updated but no bundle of the stream(s) given waits for it"),
                    ));
                }
            }
            let Some(Inst::Activate(a)) = &inst else {
                continue;
            };
            // act-scale-zero.
            if a.scale_src.0 == 0 && a.scale_value.to_f32() == 0.0 {
                out.push(diag(
                    &ACT_SCALE_ZERO,
                    s,
                    index,
                    "ACTIVATE scale_value is 0 with scale_src=INSTRUCTION: the function sees 0*x + bias".into(),
                ));
            }
            // pointer-unwritten.
            let mut reads: Vec<(&str, u32)> = Vec::new();
            if a.bias_src_n.0 == 0 {
                reads.push(("bias (bias_src_n=POINTER)", a.bias));
            }
            if a.scale_src.0 == 1 {
                reads.push(("scale (scale_src=POINTER)", a.scale_value.0));
            }
            if reads.is_empty() {
                continue;
            }
            let stride = Geometry::of(gen).sbuf_partition_stride as u64;
            let parts = a.num_active_partitions.max(1) as u64;
            for (what, raw) in reads {
                let addr = Addr4(raw).address() as u64;
                if let Some(q) = (0..parts).find(|q| !Ranges::covers(written, addr + q * stride)) {
                    let at = addr + q * stride;
                    out.push(if kernel.is_some() {
                        diag(
                            &POINTER_UNWRITTEN,
                            s,
                            index,
                            format!(
                                "ACTIVATE reads its {what} at {addr:#x} (partition {q} at {at:#x}), which no instruction or DMA of the kernel writes"
                            ),
                        )
                    } else {
                        stream_scope(
                            &POINTER_UNWRITTEN,
                            s,
                            index,
                            format!(
                                "ACTIVATE reads its {what} at {addr:#x} (partition {q} at {at:#x}), which no bundle of the stream(s) given writes"
                            ),
                        )
                    });
                }
            }
        }
    }
    out
}

#[cfg(test)]
mod tests;
