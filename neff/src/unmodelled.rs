//! What a NEFF carries that the simulation does not model, and whether it can change results.
//!
//! Every JSON key of `def.json`, the engine JSONs and the DMA blocks falls in one of three
//! classes, each row with the page it rests on: **modelled** (read into the typed schema and
//! simulated), **no effect on results** (listed by `sim neff info`), **changes results**
//! (listed, and `sim run` refuses the kernel). Keys no page names are listed as ignored.
//! Members are classified too: those a subgraph reads, those its JSON names without tpbsim
//! reading their content (table images, debug files), and the compiler's own metadata.
//!
//! Pages: R-schema `neuronx-runtime/wiki/src/neff/metadata-schema.md`, R-container
//! `neuronx-runtime/wiki/src/neff/container.md`, C-features
//! `neuronx-cc/wiki/src/formats/neff-feature-flags.md`, C-sidecars
//! `neuronx-cc/wiki/src/formats/neff-json-sidecars.md`, G-carve
//! `neuronx-gpsimd/wiki/src/neff/concrete-carve.md`, NEFF-doc `aws-neuron-sdk
//! neuron-runtime/explore/work-with-neff-files.rst`.

use std::collections::{BTreeMap, BTreeSet};

use serde_json::{Map, Value};

use super::reader::{parse_value, Reader};
use super::schema::Sidecar;
use super::{join, Neff, NeffError, Subgraph};

/// A member or JSON key tpbsim does not model.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Unmodelled {
    /// The member.
    pub member: String,
    /// JSON path (empty for a whole member).
    pub path: String,
    /// Whether it can change results (`sim run` refuses a kernel relying on it).
    pub affects_results: bool,
    /// The page that describes it, or what it is and why it is harmless.
    pub note: String,
}

impl std::fmt::Display for Unmodelled {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.path.is_empty() {
            write!(f, "{}", self.member)?;
        } else {
            write!(f, "{}: {}", self.member, self.path)?;
        }
        let tag = if self.affects_results {
            "changes results"
        } else {
            "no effect on results"
        };
        write!(f, " ({tag}; {})", self.note)
    }
}

/// A key and the page (or reason) its class rests on.
type Row = (&'static str, &'static str);

/// Keys of `def.json` the simulation models (top level).
pub const DEF_MODELLED: &[Row] = &[
    ("var", "R neff/metadata-schema.md §5"),
    ("dma_queue", "R neff/metadata-schema.md §5"),
    ("dma", "R neff/metadata-schema.md §5"),
    ("definition", "C formats/per-engine-bin.md: compiler-side stream names"),
    ("check_var_ids", "R neff/metadata-schema.md §5"),
    ("pe", "R neff/metadata-schema.md §5: the engine's JSON"),
    ("act", "R neff/metadata-schema.md §5: the engine's JSON"),
    ("pool", "R neff/metadata-schema.md §5: the engine's JSON"),
    ("dve", "R neff/metadata-schema.md §5: the engine's JSON"),
    ("sp", "R neff/metadata-schema.md §5: the engine's JSON"),
    (
        "fp8_conversion_config",
        "R neff/metadata-schema.md §7: parsed; the simulator applies it to FP8 conversions",
    ),
    (
        "neff_features",
        "C formats/neff-feature-flags.md: neff_feature_vnc marks a logical core of several physical cores",
    ),
    (
        "replica_groups",
        "R neff/metadata-schema.md §5: the ranks each collective spans (docs/collectives.md)",
    ),
    (
        "src_target_pairs",
        "R neff/metadata-schema.md §5: the ranks a permute sends between (docs/collectives.md)",
    ),
    (
        "#rank_world_size",
        "C formats/neff-json-sidecars.md §1 (getCCRankWorldSize): the world's size (docs/collectives.md)",
    ),
];
/// Keys of `def.json` with no effect on a value simulation.
const DEF_HARMLESS: &[Row] = &[
    ("name", "a label"),
    ("version", "parse-only"),
    ("git_version", "a label"),
    ("debug_info", "debug members (G neff/concrete-carve.md §7)"),
    (
        "runtime_semaphore_count",
        "semaphores the runtime reserves (C formats/neff-feature-flags.md, resource keys); the streams name their own",
    ),
    (
        "runtime_event_count",
        "events the runtime reserves (C formats/neff-feature-flags.md, resource keys); the streams name their own",
    ),
];
/// Keys of `def.json` that change results and are not simulated.
const DEF_AFFECTING: &[Row] = &[
    (
        "ucode_lib",
        "R neff/metadata-schema.md §6: GPSIMD ucode libraries",
    ),
    (
        "ext_isa_ucode_lib_def",
        "R neff/metadata-schema.md §5: extended-ISA library",
    ),
    (
        "num_streams",
        "R neff/metadata-schema.md §5: collective streams",
    ),
    (
        "q7",
        "R neff/metadata-schema.md §5: a GPSIMD engine program",
    ),
];
/// Keys of a variable the simulation models.
pub const VAR_MODELLED: &[Row] = &[
    ("type", "R neff/metadata-schema.md §6"),
    ("var_id", "R neff/metadata-schema.md §6"),
    ("size", "R neff/metadata-schema.md §6"),
    ("dtype", "R neff/metadata-schema.md §6"),
    ("shape", "R neff/metadata-schema.md §6"),
    ("file_name", "R neff/metadata-schema.md §6"),
    (
        "file",
        "C formats/neff-json-sidecars.md: alias of file_name",
    ),
    ("name", "C formats/neff-json-sidecars.md"),
    (
        "backing_variable_off",
        "AWS work-with-neff-files.rst: a virtual variable's offset in the scratchpad",
    ),
    (
        "backing_buf",
        "R neff/metadata-schema.md §6: a virtual variable's arena",
    ),
    (
        "list",
        "AWS work-with-neff-files.rst: the var_ids a dge-table's entries name",
    ),
];
const VAR_HARMLESS: &[Row] = &[
    (
        "alignment",
        "placement only; variables are separate in the simulation",
    ),
    (
        "element_size",
        "bytes per element; sizes are already in bytes",
    ),
    ("internal_shape", "a shape hint; sizes are in bytes"),
    (
        "prefix",
        "device-print extra (R neff/metadata-schema.md §6)",
    ),
    ("pipe", "device-print extra (R neff/metadata-schema.md §6)"),
    (
        "fabric_path",
        "AWS work-with-neff-files.rst: the fabric path the variable is placed on; placement only",
    ),
];
const VAR_AFFECTING: &[Row] = &[(
    "referenced_var_id",
    "R neff/metadata-schema.md §6: a pointer variable",
)];
/// Keys of a DMA queue the simulation models.
pub const QUEUE_MODELLED: &[Row] = &[
    ("name", "project-defined key of the array form"),
    ("owner", "R neff/metadata-schema.md §6"),
    (
        "type",
        "AWS work-with-neff-files.rst: in, out, data, embedding_update, dynamic",
    ),
    ("semaphore", "R neff/metadata-schema.md §6"),
    ("id", "C formats/neff-json-sidecars.md"),
    ("direction", "C formats/neff-json-sidecars.md"),
    (
        "semaphore_set",
        "AWS work-with-neff-files.rst: one completion semaphore per queue of the set",
    ),
    (
        "num_queues",
        "AWS work-with-neff-files.rst: queues of the set; a completion adds num_queues",
    ),
    (
        "dynamic_dma",
        "R neff/metadata-schema.md §6: the software DGE's state-buffer scratch",
    ),
];
const QUEUE_HARMLESS: &[Row] = &[
    ("pinned", "ring placement"),
    ("dge", "hardware DGE ring; blocks run the same"),
    ("priority_class", "scheduling only"),
    (
        "fabric_path",
        "AWS work-with-neff-files.rst: which DMA pathway (main or alt) moves the data; timing only",
    ),
];
const QUEUE_AFFECTING: &[Row] = &[
    (
        "queue_instances",
        "R neff/metadata-schema.md §6: ring instances",
    ),
    (
        "indirect_memcpy",
        "R neff/metadata-schema.md §6: indirect memcpy rings",
    ),
    (
        "embedding_update_sync_semaphore",
        "R neff/metadata-schema.md §6: embedding update",
    ),
];
/// Keys of an engine JSON the simulation models (`dve_tables` only when every table is the
/// default microcode).
pub const ENGINE_MODELLED: &[Row] = &[
    ("dma", "R neff/metadata-schema.md §5"),
    ("instr", "R neff/metadata-schema.md §5"),
    (
        "activation_function_sets",
        "AWS work-with-neff-files.rst Activation.json: the sets ACTIVATION_TABLE_LOAD selects from",
    ),
    (
        "act_semaphore",
        "R neff/metadata-schema.md §5: the semaphore of ACT table loads",
    ),
    (
        "act_info",
        "names the member describing each activation function set (G neff/concrete-carve.md §7)",
    ),
];
const ENGINE_HARMLESS: &[Row] = &[
    ("name", "a label"),
    ("profile_meta_data", "profiling metadata"),
];
const BLOCK_MODELLED: &[Row] = &[
    ("queue", "R neff/metadata-schema.md §6"),
    ("instance_name", "R neff/metadata-schema.md §6"),
    ("id", "R neff/metadata-schema.md §6"),
    ("desc", "R neff/metadata-schema.md §6"),
];
const BLOCK_HARMLESS: &[Row] = &[
    ("#comment", "a comment"),
    ("comment", "a comment"),
    ("priority_class", "scheduling only"),
    ("function_start", "a block marker"),
    ("section_start_desc", "a block marker"),
];
const BLOCK_AFFECTING: &[Row] = &[(
    "remote_semaphores",
    "R neff/metadata-schema.md §6: semaphores of other cores",
)];
const DESC_MODELLED: &[Row] = &[
    ("op", "R neff/metadata-schema.md §6"),
    ("from", "C formats/neff-json-sidecars.md"),
    ("from_arr", "C formats/neff-json-sidecars.md"),
    ("to", "C formats/neff-json-sidecars.md"),
    ("from_sizes", "C formats/neff-json-sidecars.md"),
    ("to_sizes", "C formats/neff-json-sidecars.md"),
    ("from_steps", "project-defined"),
    ("to_steps", "project-defined"),
    ("from_dtype", "project-defined"),
    ("to_dtype", "project-defined"),
    ("from_offset", "project-defined"),
    ("to_offset", "project-defined"),
    ("cast", "R neff/metadata-schema.md §6"),
    ("id", "project-defined"),
    ("sem", "project-defined"),
    ("sem_op", "project-defined"),
    ("sem_value", "project-defined"),
    ("event", "project-defined"),
];
const DESC_AFFECTING: &[Row] = &[
    (
        "scale",
        "R neff/metadata-schema.md §6: FMA scale; its arithmetic is not given",
    ),
    (
        "scale_dtype",
        "R neff/metadata-schema.md §6: FMA scale; its arithmetic is not given",
    ),
    (
        "constant",
        "R neff/metadata-schema.md §6: min/max operand; its arithmetic is not given",
    ),
    (
        "constant_dtype",
        "R neff/metadata-schema.md §6: min/max operand",
    ),
    (
        "transpose_op",
        "R neff/metadata-schema.md §6: transpose parameters",
    ),
    (
        "transpose_shape",
        "R neff/metadata-schema.md §6: transpose parameters",
    ),
    (
        "transpose_element_size",
        "R neff/metadata-schema.md §6: transpose parameters",
    ),
    (
        "num_tiling_dimensions",
        "R neff/metadata-schema.md §6: transpose tiling",
    ),
];

/// Keys of `neff.json` the runtime reader uses.
pub(crate) const TVM_MODELLED: &[&str] = &["nodes", "arg_nodes", "heads", "node_row_ptr", "attrs"];
/// Keys of the kelf member the runtime reader uses.
pub(crate) const KELF_MODELLED: &[&str] = &["graphs", "target", "version"];
/// Keys of neff.json the by-name reader uses.
pub(crate) const MANIFEST_MODELLED: &[&str] = &["target_arch", "revision"];

/// A `def.json` key named after an engine token with a suffix: the compiler's debug lists
/// (`pe_dbg`, `pe_asm_dbg`, `dma_dbg`) and stream names (`pe_instr`).
fn def_pattern(key: &str) -> Option<&'static str> {
    let (tok, suffix) = key.split_once('_')?;
    if !["pe", "act", "pool", "dve", "sp", "dma"].contains(&tok) {
        return None;
    }
    match suffix {
        "dbg" | "asm_dbg" => Some("debug-info members the compiler lists (C formats/neff-json-sidecars.md)"),
        "instr" if tok != "dma" => Some(
            "the stream's file name, also given by the engine JSON's `instr`, which the runtime reader follows (R neff/metadata-schema.md §5)",
        ),
        _ => None,
    }
}

/// Collects what a subgraph's JSON leaves unmodelled.
pub(crate) struct Scan<'a> {
    pub(crate) out: &'a mut Vec<Unmodelled>,
}

impl Scan<'_> {
    fn push(&mut self, member: &str, path: String, affects: bool, note: &str) {
        self.out.push(Unmodelled {
            member: member.to_string(),
            path,
            affects_results: affects,
            note: note.to_string(),
        });
    }

    /// Classify every key of `obj` not in `modelled`; `pattern` classifies keys by shape
    /// (harmless).
    #[allow(clippy::too_many_arguments)]
    fn keys(
        &mut self,
        member: &str,
        at: &str,
        obj: &Map<String, Value>,
        modelled: &[Row],
        harmless: &[Row],
        affecting: &[Row],
        pattern: fn(&str) -> Option<&'static str>,
    ) {
        for k in obj.keys() {
            if modelled.iter().any(|(m, _)| m == k) {
                continue;
            }
            let path = if at.is_empty() {
                k.clone()
            } else {
                format!("{at}.{k}")
            };
            if let Some((_, n)) = affecting.iter().find(|(a, _)| a == k) {
                self.push(member, path, true, n);
            } else if let Some((_, n)) = harmless.iter().find(|(a, _)| a == k) {
                self.push(member, path, false, n);
            } else if let Some(n) = pattern(k) {
                self.push(member, path, false, n);
            } else if k.starts_with('#') {
                self.push(member, path, false, "a `#` annotation");
            } else {
                self.push(
                    member,
                    path,
                    false,
                    "not named by any page tpbsim follows; ignored",
                );
            }
        }
    }

    /// A def.json value.
    pub(crate) fn def_json(&mut self, member: &str, v: &Value) {
        let Some(obj) = v.as_object() else { return };
        let mut rest = obj.clone();
        if let Some(x) = rest.remove("runtime_statebuffer_reservation") {
            if x.as_array().is_some_and(|a| !a.is_empty()) {
                self.push(member, "runtime_statebuffer_reservation".into(), false, "SB carve-out for the runtime (R neff/metadata-schema.md §7); kernels do not see it");
            }
        }
        if let Some(x) = rest.remove("cc_streams") {
            let streams = x.get("num_streams").and_then(Value::as_u64).unwrap_or(0);
            let (affects, note) = if streams == 0 {
                (false, "no collective streams (num_streams 0)")
            } else {
                (true, "R neff/metadata-schema.md §5: collective streams")
            };
            self.push(member, "cc_streams".into(), affects, note);
        }
        self.keys(
            member,
            "",
            &rest,
            DEF_MODELLED,
            DEF_HARMLESS,
            DEF_AFFECTING,
            def_pattern,
        );
        self.entries(
            member,
            obj.get("var"),
            "var",
            VAR_MODELLED,
            VAR_HARMLESS,
            VAR_AFFECTING,
        );
        self.entries(
            member,
            obj.get("dma_queue"),
            "dma_queue",
            QUEUE_MODELLED,
            QUEUE_HARMLESS,
            QUEUE_AFFECTING,
        );
        if let Some(Value::Array(blocks)) = obj.get("dma") {
            self.blocks(member, "dma", blocks);
        }
        if let Some(Value::Object(vars)) = obj.get("var") {
            for (name, var) in vars {
                self.var_type(member, &format!("var.{name}"), var);
            }
        } else if let Some(Value::Array(vars)) = obj.get("var") {
            for (i, var) in vars.iter().enumerate() {
                self.var_type(member, &format!("var[{i}]"), var);
            }
        }
    }

    /// Variable types the simulation does not model (`virtual` and `dge-table` it does).
    fn var_type(&mut self, member: &str, at: &str, var: &Value) {
        let t = var.get("type").and_then(Value::as_str).unwrap_or("");
        let note = match t {
            "remote" | "shared" | "sharded" | "main" => {
                "R neff/metadata-schema.md §6: variable type not simulated"
            }
            "list" => "R neff/metadata-schema.md §6: list variables are not simulated",
            _ => return,
        };
        self.push(member, format!("{at}.type"), true, note);
    }

    fn entries(
        &mut self,
        member: &str,
        v: Option<&Value>,
        root: &str,
        modelled: &[Row],
        harmless: &[Row],
        affecting: &[Row],
    ) {
        let items: Vec<(String, &Map<String, Value>)> = match v {
            Some(Value::Object(m)) => m
                .iter()
                .filter_map(|(k, e)| e.as_object().map(|o| (format!("{root}.{k}"), o)))
                .collect(),
            Some(Value::Array(a)) => a
                .iter()
                .enumerate()
                .filter_map(|(i, e)| e.as_object().map(|o| (format!("{root}[{i}]"), o)))
                .collect(),
            _ => Vec::new(),
        };
        for (at, o) in items {
            self.keys(member, &at, o, modelled, harmless, affecting, |_| None);
        }
    }

    /// An engine JSON or sidecar value; `runs` says whether the engine has bundles. DVE
    /// tables other than the default microcode change DVE semantics (C `arch/dve-engine.md`);
    /// the default set is what the DVE model implements.
    pub(crate) fn engine_json(&mut self, member: &str, v: &Value, sidecar: &Sidecar, runs: bool) {
        let Some(obj) = v.as_object() else { return };
        let mut rest = obj.clone();
        if rest.remove("dve_tables").is_some() && !sidecar.dve_tables_default() {
            let (affects, note) = if runs {
                (true, "a DVE microcode table set other than the default (names not `default_*`) changes DVE semantics (AWS work-with-neff-files.rst DVE.json; C arch/dve-engine.md)")
            } else {
                (false, "the engine runs no program")
            };
            self.push(member, "dve_tables".into(), affects, note);
        }
        self.keys(
            member,
            "",
            &rest,
            ENGINE_MODELLED,
            ENGINE_HARMLESS,
            &[],
            |_| None,
        );
        if let Some(Value::Array(blocks)) = obj.get("dma") {
            self.blocks(member, "dma", blocks);
        }
    }

    fn blocks(&mut self, member: &str, root: &str, blocks: &[Value]) {
        for (bi, b) in blocks.iter().enumerate() {
            let Some(bo) = b.as_object() else { continue };
            let at = format!("{root}[{bi}]");
            self.keys(
                member,
                &at,
                bo,
                BLOCK_MODELLED,
                BLOCK_HARMLESS,
                BLOCK_AFFECTING,
                |_| None,
            );
            if let Some(Value::Array(desc)) = bo.get("desc") {
                for (di, d) in desc.iter().enumerate() {
                    if let Some(o) = d.as_object() {
                        let dat = format!("{at}.desc[{di}]");
                        self.keys(member, &dat, o, DESC_MODELLED, &[], DESC_AFFECTING, |_| {
                            None
                        });
                        match o.get("op").and_then(Value::as_str) {
                            None | Some("copy") | Some("cast") => {}
                            Some(_) => self.push(
                                member,
                                format!("{dat}.op"),
                                true,
                                "R neff/metadata-schema.md §6 names fma/add/min/max/transpose; no page gives their arithmetic",
                            ),
                        }
                    }
                }
            }
        }
    }

    /// neff.json and the kelf member (runtime reader).
    pub(crate) fn manifest(&mut self, member: &str, v: &Value, modelled: &[&str]) {
        if let Some(o) = v.as_object() {
            for k in o.keys().filter(|k| !modelled.contains(&k.as_str())) {
                self.push(
                    member,
                    k.clone(),
                    false,
                    "host-side graph metadata; the kernel's variables come from def.json",
                );
            }
        }
    }
}

/// What a member no manifest names is, recognised by its name.
fn unnamed_member_note(m: &str) -> &'static str {
    let file = m.rsplit('/').next().unwrap_or(m);
    if m.ends_with(".asm") {
        "producer listing"
    } else if m == "info.json" {
        "compiler metadata that seeds the header (C formats/neff-json-sidecars.md §2)"
    } else if m == "hlo_stats.json" {
        "optional MAC-count statistics the runtime reads for reporting (R neff/container.md §4)"
    } else if file == "tensor_map.json" {
        "the compiler tooling's input, output and alias map (C formats/neff-json-sidecars.md)"
    } else if m.starts_with("debug_info/") || file.starts_with("debug_info") {
        "debug information (G neff/concrete-carve.md §7)"
    } else {
        "member no manifest names"
    }
}

impl Neff {
    /// Every member and JSON key the NEFF's manifests carry that no subgraph reads (the
    /// subgraphs' own lists come with each [`Subgraph`]): neff.json and kelf keys, the members
    /// a subgraph's JSON names without tpbsim reading their content (ACT and DVE table
    /// images, debug lists), and members nothing names, recognised by name where the
    /// compiler writes them (`info.json`, `hlo_stats.json`, `tensor_map.json`,
    /// `debug_info/*`).
    pub fn unmodelled_members(&self, sgs: &[Subgraph]) -> Result<Vec<Unmodelled>, NeffError> {
        let plan = self.plan()?;
        let mut out = Vec::new();
        let mut scan = Scan { out: &mut out };
        let mut used: BTreeSet<String> = sgs.iter().flat_map(|s| s.used.iter().cloned()).collect();
        if let Some(b) = self.member("neff.json") {
            used.insert("neff.json".into());
            let v = parse_value("neff.json", b)?;
            let modelled = if plan.reader == Reader::Runtime {
                TVM_MODELLED
            } else {
                MANIFEST_MODELLED
            };
            scan.manifest("neff.json", &v, modelled);
        }
        if let Some(k) = &plan.kelf {
            used.insert(k.clone());
            if let Some(b) = self.member(k) {
                let v = parse_value(k, b)?;
                scan.manifest(k, &v, KELF_MODELLED);
            }
        }
        for sg in sgs {
            for (m, note) in &sg.named {
                out.push(Unmodelled {
                    member: m.clone(),
                    path: String::new(),
                    affects_results: false,
                    note: note.clone(),
                });
            }
        }
        for m in self.members.keys().filter(|m| !used.contains(*m)) {
            out.push(Unmodelled {
                member: m.clone(),
                path: String::new(),
                affects_results: false,
                note: unnamed_member_note(m).to_string(),
            });
        }
        Ok(out)
    }

    /// The members an engine JSON names beside its stream, checked and described: the ACT
    /// function-set manifest (`act_info`) and each set's table images, and the DVE microcode
    /// tables. When the engine runs a program, a named member that is absent is an error, and
    /// so is an `activation_function_sets` name the manifest does not describe.
    pub(crate) fn engine_members(
        &self,
        dir: &str,
        member: &str,
        sidecar: &Sidecar,
        runs: bool,
        named: &mut BTreeMap<String, String>,
    ) -> Result<(), NeffError> {
        // A named member: described when present; absent, an error if the engine runs.
        let mut name = |path: String, what: String| -> Result<bool, NeffError> {
            if self.members.contains_key(&path) {
                named.insert(path, what);
                Ok(true)
            } else if runs {
                Err(NeffError::MissingMember {
                    member: path,
                    wanted_by: what,
                })
            } else {
                Ok(false)
            }
        };
        for (i, set) in sidecar.dve_tables.iter().flatten().enumerate() {
            for (key, file) in set.tables() {
                name(
                    join(dir, file),
                    format!("{member} dve_tables[{i}].{key}: DVE microcode table"),
                )?;
            }
        }
        let Some(info) = &sidecar.act_info else {
            if runs
                && sidecar
                    .activation_function_sets
                    .as_ref()
                    .is_some_and(|s| !s.is_empty())
            {
                return Err(NeffError::Invalid {
                    member: member.to_string(),
                    path: "activation_function_sets".into(),
                    message: "function sets are named but no act_info member describes them".into(),
                });
            }
            return Ok(());
        };
        let info_member = join(dir, info);
        if !name(
            info_member.clone(),
            format!("{member} act_info: the activation function sets"),
        )? {
            return Ok(());
        }
        let v = parse_value(&info_member, &self.members[&info_member])?;
        // The keys of a set that name its files (`pwp_file_keys`; neuronx-cc 2.23 writes
        // bkt_bin, ctrl_bin and profile_json).
        let file_keys: Vec<&str> = match v.get("pwp_file_keys").and_then(Value::as_array) {
            Some(keys) => keys.iter().filter_map(Value::as_str).collect(),
            None => vec!["bkt_bin", "ctrl_bin", "profile_json"],
        };
        let sets = v
            .get("act_func_sets")
            .and_then(Value::as_array)
            .map(Vec::as_slice)
            .unwrap_or_default();
        // The manifest describes every set the compiler knows; the files of the sets the
        // engine JSON uses are in the archive.
        for (i, s) in sidecar
            .activation_function_sets
            .iter()
            .flatten()
            .enumerate()
        {
            let found = sets
                .iter()
                .enumerate()
                .find(|(_, set)| set.get("name").and_then(Value::as_str) == Some(s.as_str()));
            let Some((si, set)) = found else {
                if runs {
                    return Err(NeffError::Invalid {
                        member: member.to_string(),
                        path: format!("activation_function_sets[{i}]"),
                        message: format!("set `{s}` is not among {info_member} act_func_sets"),
                    });
                }
                continue;
            };
            for key in &file_keys {
                let Some(file) = set.get(*key).and_then(Value::as_str) else {
                    continue;
                };
                name(
                    join(dir, file),
                    format!(
                        "{info_member} act_func_sets[{si}].{key}: table of ACT function set `{s}` (the ACT model evaluates the functions itself)"
                    ),
                )?;
            }
        }
        Ok(())
    }
}

/// The debug members a `def.json` lists (`pe_dbg`, `pe_asm_dbg`, `dma_dbg`, ...: arrays of
/// names relative to the subgraph directory), with the key that lists each.
pub(crate) fn debug_members(dir: &str, def_member: &str, raw: &Value) -> BTreeMap<String, String> {
    let mut out = BTreeMap::new();
    let Some(obj) = raw.as_object() else {
        return out;
    };
    for (k, v) in obj {
        let is_debug = def_pattern(k).is_some() && !k.ends_with("_instr");
        if !is_debug {
            continue;
        }
        for (i, f) in v.as_array().into_iter().flatten().enumerate() {
            if let Some(f) = f.as_str() {
                out.insert(
                    join(dir, f),
                    format!("{def_member} {k}[{i}]: debug information"),
                );
            }
        }
    }
    out
}
