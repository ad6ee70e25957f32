//! From a NEFF container to a [`Kernel`]: streams, DRAM variables with their shipped data,
//! and the per-engine DMA queues of the sidecars.

use std::collections::BTreeMap;

use tpbsim_isa::{Engine, Gen};
use tpbsim_neff::{self as neff, DefJson, DmaEntry, DmaOp, Neff, SemOp, VarRef, Variable};

use super::dma::{DmaDesc, DmaMem, DmaSide};
use super::kernel::{DgeTable, DmaBlockSpec, DmaEntrySpec, DmaQueue, Kernel, QueueSet, VarSpec};
use super::memory::VarKind;
use super::program::Program;
use super::sync::{Operand, Update, UpdateOp, When};
use tpbsim_isa::NumFormat;

/// Why a NEFF cannot be run.
#[derive(Debug, thiserror::Error)]
pub enum LoadError {
    /// The container or one of its members is malformed.
    #[error(transparent)]
    Neff(#[from] neff::NeffError),
    /// A member is well-formed but cannot be run as given.
    #[error("{member}: {message}")]
    Invalid {
        /// Member (`sg00/def.json`, `sg00/SP.json`, ...).
        member: String,
        /// What is wrong.
        message: String,
    },
}

fn invalid(member: &str, message: impl Into<String>) -> LoadError {
    LoadError::Invalid {
        member: member.to_string(),
        message: message.into(),
    }
}

/// The numerics format of a def.json dtype (`None` for host-only dtypes such as `bool`).
pub fn format_of(d: NumFormat) -> Option<NumFormat> {
    NumFormat::from_name(d.name())
}

/// The def.json dtype of a numerics format.
pub fn dtype_of(f: NumFormat) -> Option<NumFormat> {
    NumFormat::ALL.into_iter().find(|d| d.name() == f.name())
}

/// The generation a NEFF targets: the kelf `target` (runtime layout) or `neff.json`
/// `target_arch`; `None` when it says `*` (any) or nothing. A name tpbsim does not know is an
/// error naming where it was found.
pub fn target_gen(n: &Neff) -> Result<Option<Gen>, LoadError> {
    match n.plan()?.target {
        neff::Target::Named { name, source } => match Gen::from_exact_name(&name) {
            Some(g) => Ok(Some(g)),
            None => Err(LoadError::Invalid {
                member: source,
                message: format!(
                    "unknown target `{name}` (known: sunda/v2, cayman/v3, mariana/v4, maverick/v5, `*`)"
                ),
            }),
        },
        neff::Target::Any { .. } | neff::Target::Absent => Ok(None),
    }
}

/// Where the NEFF's generation comes from, for messages (`kelf-a.json target "*"`, ...).
pub fn target_source(n: &Neff) -> String {
    match n.plan().map(|p| p.target) {
        Ok(neff::Target::Named { name, source }) => format!("{source} \"{name}\""),
        Ok(neff::Target::Any { source }) => format!("{source} \"*\" (any generation)"),
        _ => "nothing (no kelf target, no neff.json target_arch)".into(),
    }
}

/// def.json `replica_groups`: groups of ranks (`[[0, 1], [2, 3]]`), or the same under a
/// topology level (`[[[0, 1], [2, 3]]]`, the first topology taken). Anything else reads as
/// no groups.
fn replica_groups(def: &DefJson) -> Vec<Vec<u32>> {
    let ranks = |g: &serde_json::Value| -> Option<Vec<u32>> {
        g.as_array()?
            .iter()
            .map(|r| r.as_u64().and_then(|r| u32::try_from(r).ok()))
            .collect()
    };
    let Some(top) = def.extra.get("replica_groups").and_then(|g| g.as_array()) else {
        return Vec::new();
    };
    let level = match top.first() {
        Some(t)
            if t.as_array()
                .is_some_and(|a| a.first().is_some_and(|x| x.is_array())) =>
        {
            t.as_array().map(Vec::as_slice).unwrap_or_default()
        }
        _ => top.as_slice(),
    };
    level.iter().filter_map(ranks).collect()
}

/// def.json `src_target_pairs`: `[[source, target], ...]`.
fn src_target_pairs(def: &DefJson) -> Vec<(u32, u32)> {
    def.extra
        .get("src_target_pairs")
        .and_then(|p| p.as_array())
        .map(|ps| {
            ps.iter()
                .filter_map(|p| {
                    let p = p.as_array()?;
                    let r = |i: usize| p.get(i)?.as_u64().and_then(|r| u32::try_from(r).ok());
                    Some((r(0)?, r(1)?))
                })
                .collect()
        })
        .unwrap_or_default()
}

/// Ranks the NEFF's collectives span: the largest of the replica group sizes, the ranks
/// `src_target_pairs` name and `#rank_world_size` (at least 1).
fn world_size(def: &DefJson, groups: &[Vec<u32>], pairs: &[(u32, u32)]) -> usize {
    let groups = groups.iter().map(Vec::len).max().unwrap_or(0);
    let pairs = pairs
        .iter()
        .map(|&(s, t)| s.max(t) as usize + 1)
        .max()
        .unwrap_or(0);
    let stated = def
        .extra
        .get("#rank_world_size")
        .and_then(|w| w.as_u64())
        .and_then(|w| usize::try_from(w).ok())
        .unwrap_or(0);
    groups.max(pairs).max(stated).max(1)
}

/// Build the kernel of a single-subgraph NEFF (a NEFF of several subgraphs is refused: see
/// [`program_from_neff`]).
pub fn kernel_from_neff(n: &Neff) -> Result<Kernel, LoadError> {
    let mut p = program_from_neff(n)?;
    match p.cores.len() {
        1 => Ok(p.cores.swap_remove(0)),
        k => Err(invalid(
            "def.json",
            format!(
                "the NEFF has {k} subgraphs ({}), one per NeuronCore; load it as a program",
                p.names.join(", ")
            ),
        )),
    }
}

/// Build the program of a NEFF: one kernel per subgraph, each on its own NeuronCore, the
/// input and output variables bound by name across them (see [`Program`]).
pub fn program_from_neff(n: &Neff) -> Result<Program, LoadError> {
    let sgs = n.subgraphs()?;
    n.check_reachable(&sgs)?;
    if sgs.is_empty() {
        return Err(invalid("def.json", "the NEFF has no subgraph"));
    }
    // One subgraph, or one per physical core of the logical core (the runtime's check).
    n.logical_core(&sgs)?;
    let gen = target_gen(n)?;
    let host = n.host_tensors();
    let mut names = Vec::with_capacity(sgs.len());
    let mut cores = Vec::with_capacity(sgs.len());
    for mut sg in sgs {
        names.push(sg.dir.clone());
        cores.push(kernel_from_subgraph(n, &mut sg, gen, &host)?);
    }
    Program::new(gen, cores, names).map_err(|e| invalid("def.json", e.to_string()))
}

/// The kernel of one subgraph; its streams are moved out of `sg`.
fn kernel_from_subgraph(
    n: &Neff,
    sg: &mut neff::Subgraph,
    gen: Option<Gen>,
    host: &BTreeMap<String, (String, Vec<u64>)>,
) -> Result<Kernel, LoadError> {
    if let Some(u) = sg.unmodelled.iter().find(|u| u.affects_results) {
        return Err(invalid(
            &u.member,
            format!(
                "not simulated: {} ({}); `sim neff info` lists every key tpbsim does not model",
                if u.path.is_empty() {
                    "the member"
                } else {
                    u.path.as_str()
                },
                u.note
            ),
        ));
    }
    let (groups, pairs) = (replica_groups(&sg.def), src_target_pairs(&sg.def));
    let mut kernel = Kernel {
        gen,
        world: world_size(&sg.def, &groups, &pairs),
        replica_groups: groups,
        src_target_pairs: pairs,
        ..Kernel::default()
    };
    // The subgraph's streams are moved into the kernel: a stream is held once, not copied.
    for e in Engine::ALL {
        if let Some(s) = sg.streams.remove(&e) {
            kernel.streams[e as usize] = s.stream.into_bundles();
        }
    }
    for v in &sg.def.var {
        match v.kind {
            neff::VarKind::StateBuffer => {
                kernel.sb_var = var_id(&sg.def_member, v)?;
                continue;
            }
            neff::VarKind::DgeTable => {
                kernel.dge_tables.push(dge_table(&sg.def_member, v)?);
                continue;
            }
            _ => {}
        }
        kernel.vars.push(var_spec(n, sg, v, host.get(&v.name))?);
    }
    check_virtual(&sg.def_member, &sg.def.var)?;
    kernel.queue_sets = queue_sets(&sg.def_member, &sg.def)?;
    kernel.act_table_sets = sg
        .sidecars
        .get(&Engine::Act)
        .and_then(|sc| sc.sidecar.activation_function_sets.as_ref())
        .map(Vec::len);
    kernel.fp8_refusal = sg.def.fp8_conversion_config.as_ref().and_then(fp8_refusal);
    let sems: BTreeMap<&str, Option<u8>> = sg
        .def
        .dma_queue
        .iter()
        .enumerate()
        .map(|(i, q)| {
            let sem = q
                .semaphore
                .map(|s| {
                    u8::try_from(s).map_err(|_| {
                        invalid(
                            &sg.def_member,
                            format!("{}.semaphore: {s} is not below 256", sg.def.queue_path(i)),
                        )
                    })
                })
                .transpose()?;
            Ok((q.name.as_str(), sem))
        })
        .collect::<Result<_, LoadError>>()?;
    for e in Engine::ALL {
        let Some(sc) = sg.sidecars.get(&e) else {
            continue;
        };
        let member = sc.member.as_str();
        let mut queues: Vec<DmaQueue> = Vec::new();
        for (bi, block) in sc.sidecar.dma.iter().enumerate() {
            let name = block
                .queue_name()
                .ok_or_else(|| invalid(member, format!("dma[{bi}] names no queue")))?;
            let qi = match queues.iter().position(|q| q.name == name) {
                Some(i) => i,
                None => {
                    queues.push(DmaQueue {
                        name: name.to_string(),
                        semaphore: sems.get(name).copied().flatten(),
                        blocks: Vec::new(),
                    });
                    queues.len() - 1
                }
            };
            let q = &mut queues[qi];
            let id = block.id.unwrap_or(q.blocks.len() as u64);
            if q.blocks.iter().any(|b| b.id == id) {
                return Err(invalid(
                    member,
                    format!("dma[{bi}]: queue `{name}` has two blocks with id {id}"),
                ));
            }
            let entries = block
                .desc
                .iter()
                .enumerate()
                .map(|(di, d)| {
                    entry_spec(&sg.def, d)
                        .map_err(|m| invalid(member, format!("dma[{bi}].desc[{di}]: {m}")))
                })
                .collect::<Result<Vec<_>, _>>()?;
            q.blocks.push(DmaBlockSpec { id, entries });
        }
        kernel.queues[e as usize] = queues;
    }
    Ok(kernel)
}

fn var_id(member: &str, v: &Variable) -> Result<u32, LoadError> {
    u32::try_from(v.var_id).map_err(|_| {
        invalid(
            member,
            format!(
                "variable `{}`: var_id {} does not fit 32 bits",
                v.name, v.var_id
            ),
        )
    })
}

/// A `dge-table` variable's entries (its `list` of variable ids).
fn dge_table(member: &str, v: &Variable) -> Result<DgeTable, LoadError> {
    let entries = v
        .list
        .iter()
        .flatten()
        .map(|&id| {
            u32::try_from(id).map_err(|_| {
                invalid(
                    member,
                    format!("dge-table `{}`: var id {id} does not fit 32 bits", v.name),
                )
            })
        })
        .collect::<Result<Vec<_>, _>>()?;
    Ok(DgeTable {
        name: v.name.clone(),
        entries,
    })
}

/// Virtual variables are disjoint windows of the core's scratchpad (NEFF doc:
/// `backing_variable_off`, "the offset inside the shared scratchpad space allocated by
/// Runtime"); each is modelled as a buffer of its own size, so windows that overlap, or a
/// backing buffer other than the core's local scratchpad, are refused.
fn check_virtual(member: &str, vars: &[Variable]) -> Result<(), LoadError> {
    let mut windows: Vec<(u64, u64, &str)> = Vec::new();
    for v in vars.iter().filter(|v| v.kind == neff::VarKind::Virtual) {
        match &v.backing_buf {
            None | Some(neff::BackingBuf::Code(0)) => {}
            Some(neff::BackingBuf::Name(n)) if n.eq_ignore_ascii_case("local") => {}
            Some(b) => {
                return Err(invalid(
                    member,
                    format!(
                        "not simulated: virtual variable `{}` is backed by `{b}` (only the core's local scratchpad is modelled; R neff/memory-planning.md names LOCAL 0, SHARED 1, SHARDED 2, MAIN 3)",
                        v.name
                    ),
                ))
            }
        }
        let off = v.backing_variable_off.unwrap_or(0);
        let size = v.byte_size().unwrap_or(0);
        windows.push((off, off.saturating_add(size), &v.name));
    }
    windows.sort_unstable();
    for w in windows.windows(2) {
        if w[1].0 < w[0].1 {
            return Err(invalid(
                member,
                format!(
                    "not simulated: virtual variables `{}` (scratchpad bytes {}..{}) and `{}` (bytes {}..{}) overlap",
                    w[0].2, w[0].0, w[0].1, w[1].2, w[1].0, w[1].1
                ),
            ));
        }
    }
    Ok(())
}

/// The dynamic queue sets of def.json: the queues whose `owner` names an engine and that list
/// a `semaphore_set`.
fn queue_sets(member: &str, def: &DefJson) -> Result<Vec<QueueSet>, LoadError> {
    let mut out = Vec::new();
    for (i, q) in def.dma_queue.iter().enumerate() {
        let (Some(set), Some(owner)) = (&q.semaphore_set, q.owner.as_deref()) else {
            continue;
        };
        let Ok(owner) = owner.parse::<Engine>() else {
            continue;
        };
        let semaphores = set
            .iter()
            .map(|&s| {
                u8::try_from(s).map_err(|_| {
                    invalid(
                        member,
                        format!("{}.semaphore_set: {s} is not below 256", def.queue_path(i)),
                    )
                })
            })
            .collect::<Result<Vec<_>, _>>()?;
        let num_queues = u32::try_from(q.queue_count()).map_err(|_| {
            invalid(
                member,
                format!("{}.num_queues does not fit 32 bits", def.queue_path(i)),
            )
        })?;
        out.push(QueueSet {
            name: q.name.clone(),
            owner,
            num_queues,
            semaphores,
        });
    }
    Ok(out)
}

/// Why the machine cannot run FP8 conversions under `c`: its FP8 formats are OCP E4M3FN
/// (emax 8, no infinity) and E5M2 (emax 15), saturating on overflow — the configuration
/// neuronx-cc 2.23 writes (`emax_fp8_e4m3` 8, `emax_fp8_e5m2` 15, `fp8_range_extension`
/// true, `ocp_sat` true, `fp8_sis`/`fp8_sns` false). Any other value changes FP8 results in
/// ways no public page gives.
fn fp8_refusal(c: &neff::Fp8ConversionConfig) -> Option<String> {
    let mut bad = Vec::new();
    if c.emax_fp8_e4m3.is_some_and(|e| e != 8) {
        bad.push(format!("emax_fp8_e4m3 {:?}", c.emax_fp8_e4m3));
    }
    if c.emax_fp8_e5m2.is_some_and(|e| e != 15) {
        bad.push(format!("emax_fp8_e5m2 {:?}", c.emax_fp8_e5m2));
    }
    if c.fp8_range_extension == Some(false) {
        bad.push("fp8_range_extension false".into());
    }
    if c.ocp_sat == Some(false) {
        bad.push("ocp_sat false".into());
    }
    if c.fp8_sis == Some(true) {
        bad.push("fp8_sis true".into());
    }
    if c.fp8_sns == Some(true) {
        bad.push("fp8_sns true".into());
    }
    (!bad.is_empty()).then(|| {
        format!(
            "fp8_conversion_config {} (the machine's FP8 formats are OCP E4M3FN/E5M2 with saturation: emax 8/15, range extension on, ocp_sat on, sis/sns off)",
            bad.join(", ")
        )
    })
}

/// A variable's format and shape. Without a dtype, the host-side tensor of the same name in a
/// TVM `neff.json` gives them when its byte size agrees; otherwise the variable is bytes.
fn var_spec(
    n: &Neff,
    sg: &neff::Subgraph,
    v: &Variable,
    host: Option<&(String, Vec<u64>)>,
) -> Result<VarSpec, LoadError> {
    let def_member = sg.def_member.as_str();
    let bad = |m: String| invalid(def_member, format!("variable `{}`: {m}", v.name));
    let kind = match &v.kind {
        neff::VarKind::Input => VarKind::Input,
        neff::VarKind::Output => VarKind::Output,
        neff::VarKind::File => VarKind::File,
        neff::VarKind::Other(t) => {
            return Err(bad(format!(
                "unknown type `{}` (known: state-buffer, local, shared, remote, tmp-buf, virtual, input, output, file, pointer, list)",
                t.escape_debug()
            )))
        }
        _ => VarKind::Other,
    };
    let size = v
        .byte_size()
        .ok_or_else(|| bad("neither size nor shape and dtype".into()))?;
    // The host-side view of an untyped variable (neff.json attrs.dltype / attrs.shape).
    let host = host
        .filter(|_| v.dtype.is_none() && v.shape.is_none())
        .and_then(|(d, s)| {
            let f = NumFormat::from_neff_name(d).ok().and_then(format_of)?;
            let elems = s.iter().try_fold(1u64, |a, &x| a.checked_mul(x))?;
            (elems.checked_mul(f.container_bytes() as u64) == Some(size)).then(|| (f, s.clone()))
        });
    let format = match (v.dtype, &host) {
        (Some(d), _) => {
            format_of(d).ok_or_else(|| bad(format!("dtype {d} has no device format")))?
        }
        (None, Some((f, _))) => *f,
        (None, None) => NumFormat::Uint8,
    };
    let eb = format.container_bytes() as u64;
    let dims = |s: &[u64]| -> Result<Vec<usize>, LoadError> {
        s.iter()
            .map(|&d| usize::try_from(d).map_err(|_| bad(format!("dimension {d} is too large"))))
            .collect()
    };
    let shape: Vec<usize> = match (&v.shape, &host) {
        (Some(s), _) => dims(s)?,
        (None, Some((_, s))) => dims(s)?,
        (None, None) => {
            vec![usize::try_from(size / eb).map_err(|_| bad(format!("size {size} is too large")))?]
        }
    };
    let elems = shape
        .iter()
        .try_fold(1u64, |a, &d| a.checked_mul(d as u64))
        .and_then(|e| e.checked_mul(eb));
    if elems != Some(size) {
        return Err(bad(format!(
            "shape {shape:?} of {} is not {size} bytes",
            format.name(),
        )));
    }
    let init = match &v.file_name {
        None => None,
        Some(f) => {
            let member = sg.member_path(f);
            if n.member(&member).is_none() {
                return Err(bad(format!(
                    "file_name `{f}` names member `{member}`, which the NEFF does not hold"
                )));
            }
            let data = if member.ends_with(".npy") {
                let arr = n.npy(&member)?;
                if let Some(d) = v.dtype {
                    arr.resolve(d)
                        .map_err(|e| invalid(&member, format!("variable `{}`: {e}", v.name)))?;
                }
                arr.data
            } else {
                n.member(&member)
                    .ok_or_else(|| bad(format!("member `{member}` is missing")))?
                    .to_vec()
            };
            if data.len() as u64 != size {
                return Err(invalid(
                    &member,
                    format!(
                        "variable `{}`: {} bytes of data for a {size}-byte variable",
                        v.name,
                        data.len()
                    ),
                ));
            }
            Some(data)
        }
    };
    let id = u32::try_from(v.var_id)
        .map_err(|_| bad(format!("var_id {} does not fit 32 bits", v.var_id)))?;
    Ok(VarSpec {
        id,
        name: v.name.clone(),
        kind,
        format,
        shape,
        size,
        init,
    })
}

fn entry_spec(def: &DefJson, d: &DmaEntry) -> Result<DmaEntrySpec, String> {
    let sem = match d.sem {
        None => None,
        Some(s) => {
            let idx = u8::try_from(s).map_err(|_| format!("semaphore {s} is not below 256"))?;
            let v = u32::try_from(d.sem_value.unwrap_or(0))
                .map_err(|_| "sem_value does not fit 32 bits".to_string())?;
            let op = match d.sem_op.clone().unwrap_or(SemOp::Inc) {
                SemOp::Inc => UpdateOp::SemInc,
                SemOp::Add => UpdateOp::SemAdd(Operand::Imm(v)),
                SemOp::Write => UpdateOp::SemWrite(Operand::Imm(v)),
                other => return Err(format!("semaphore update `{other}` is not known")),
            };
            Some(Update {
                idx,
                op,
                when: When::Complete,
            })
        }
    };
    let event = d
        .event
        .map(|e| u8::try_from(e).map_err(|_| format!("event {e} is not below 256")))
        .transpose()?;
    let desc = match d.op() {
        DmaOp::Copy | DmaOp::Cast => descriptor(def, d),
        other => Err(format!(
            "not simulated: op `{other}` (R neff/metadata-schema.md §6 names it; no page gives its arithmetic)"
        )),
    };
    Ok(DmaEntrySpec { desc, sem, event })
}

fn descriptor(def: &DefJson, d: &DmaEntry) -> Result<DmaDesc, String> {
    if d.from_arr.as_ref().is_some_and(|a| !a.is_empty()) {
        return Err("a copy takes one source (`from_arr` given)".into());
    }
    let from = d.from.as_ref().ok_or("no source (`from`)")?;
    let resolve = |r: &VarRef| {
        def.resolve(r)
            .ok_or_else(|| format!("{r} is not a def.json variable"))
    };
    let (fv, tv) = (resolve(from)?, resolve(&d.to)?);
    // A side without a dtype (typically the on-chip variable) takes the other side's.
    let (fd, td) = (d.from_dtype.or(fv.dtype), d.to_dtype.or(tv.dtype));
    let format = |dt: Option<NumFormat>| match dt {
        Some(dt) => format_of(dt).ok_or_else(|| format!("dtype {dt} has no device format")),
        None => Ok(NumFormat::Uint8),
    };
    Ok(DmaDesc {
        from: side(
            fv,
            d.from_offset,
            &d.from_sizes,
            d.from_steps.as_deref(),
            format(fd.or(td))?,
        )?,
        to: side(
            tv,
            d.to_offset,
            &d.to_sizes,
            d.to_steps.as_deref(),
            format(td.or(fd))?,
        )?,
    })
}

fn side(
    v: &Variable,
    offset: u64,
    sizes: &[u64],
    steps: Option<&[i64]>,
    format: NumFormat,
) -> Result<DmaSide, String> {
    let mem = if v.kind == neff::VarKind::StateBuffer {
        DmaMem::OnChip
    } else {
        DmaMem::Dram(
            u32::try_from(v.var_id)
                .map_err(|_| format!("var_id {} does not fit 32 bits", v.var_id))?,
        )
    };
    let steps: Vec<i64> = match steps {
        Some(s) if s.len() != sizes.len() => {
            return Err(format!("{} steps for {} sizes", s.len(), sizes.len()))
        }
        Some(s) => s.to_vec(),
        None => neff::schema::contiguous_steps(sizes),
    };
    let eb = format.container_bytes() as i64;
    let dims = sizes
        .iter()
        .zip(&steps)
        .rev()
        .map(|(&n, &s)| {
            let n = u32::try_from(n).map_err(|_| format!("size {n} is too large"))?;
            Ok((s.saturating_mul(eb), n))
        })
        .collect::<Result<Vec<_>, String>>()?;
    Ok(DmaSide {
        mem,
        addr: offset,
        format,
        dims,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn virt(id: u64, name: &str, off: u64, size: u64) -> Variable {
        let mut v = Variable::new(id, name, neff::VarKind::Virtual);
        v.size = Some(size);
        v.backing_variable_off = Some(off);
        v
    }

    #[test]
    fn the_world_is_the_largest_of_the_groups_the_pairs_and_the_stated_size() {
        let mut d = DefJson::default();
        // Malformed pairs (one rank, not a list, a rank past u32) are skipped.
        d.extra.insert(
            "src_target_pairs".into(),
            serde_json::json!([[0, 1], [3, 2], [3], "x", [2, 5_000_000_000u64]]),
        );
        let pairs = src_target_pairs(&d);
        assert_eq!(pairs, [(0, 1), (3, 2)]);
        assert_eq!(world_size(&d, &[], &pairs), 4);
        assert_eq!(world_size(&d, &[vec![0, 1, 2, 3, 4]], &pairs), 5);
        d.extra
            .insert("#rank_world_size".into(), serde_json::json!(8));
        assert_eq!(world_size(&d, &[vec![0, 1]], &pairs), 8);
        assert_eq!(world_size(&DefJson::default(), &[], &[]), 1);
    }

    #[test]
    fn virtual_variables_may_touch_but_not_overlap_in_the_scratchpad() {
        // Listed out of order: the check sorts the windows.
        let touching = [
            virt(0, "b", 64, 32),
            virt(1, "a", 0, 64),
            virt(2, "c", 96, 1),
        ];
        check_virtual("sg00/def.json", &touching).unwrap();
        for (second, overlap) in [
            (63, "bytes 63..95"),
            (0, "bytes 0..32"),
            (32, "bytes 32..64"),
        ] {
            let vars = [virt(0, "a", 0, 64), virt(1, "b", second, 32)];
            let e = check_virtual("sg00/def.json", &vars)
                .unwrap_err()
                .to_string();
            assert!(e.contains("overlap"), "{second}: {e}");
            assert!(e.contains(overlap), "{second}: {e}");
        }
        // Only the local scratchpad is modelled.
        let mut shared = virt(0, "s", 0, 8);
        shared.backing_buf = Some(neff::BackingBuf::Code(1));
        let e = check_virtual("sg00/def.json", &[shared])
            .unwrap_err()
            .to_string();
        assert!(e.contains("virtual variable `s` is backed by"), "{e}");
    }
}
