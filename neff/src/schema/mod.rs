//! Typed views of the JSON members: `neff.json`, `sgNN/def.json` and the per-engine DMA
//! sidecars (`PE.json`, ...).
//!
//! Reading is lenient about keys tpbsim does not use (they are kept in `extra` maps and
//! written back unchanged) and strict about the ones it does: a wrong type or an
//! inconsistent value is an error naming the member and the JSON path. Keys whose names are
//! public are documented with their source in `docs/neff.md`; the rest are marked
//! `project-defined` there and on the fields below.
//!
//! `check.rs` holds the consistency checks over a parsed `def.json` and the DMA blocks.
//!
//! NEFF-doc below is the AWS page `neuron-runtime/explore/work-with-neff-files.rst`
//! (aws-neuron-sdk, commit db1586c3): the official description of the header, queue sets,
//! variables and engine JSONs.

use std::collections::BTreeMap;
use std::fmt;

use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::{Map, Value};

mod check;
#[cfg(test)]
mod tests;

pub use check::{validate_blocks, validate_sidecar, DefError, MAX_QUEUES_PER_SET, SEMAPHORES};

use super::NeffError;
use tpbsim_isa::engine::Engine;

/// Largest number of DMA queues one NEFF may declare (11 × 16, a compiler assertion).
pub const MAX_DMA_QUEUES: usize = 11 * 16;

/// Largest number of access-pattern dimensions of one DMA side (the runtime's descriptor holds
/// `steps[8]` / `sizes[8]`, G `neff/format-reference.md` §8).
pub const MAX_DMA_DIMS: usize = 8;

/// A name that is not a NEFF dtype. An element type named in `def.json` (`dtype`), a sidecar,
/// or an `.npy` file is a [`NumFormat`], read and written by its NEFF spelling
/// ([`NumFormat::NEFF`], serde through [`NumFormat::from_neff_name`]).
pub use tpbsim_isa::dtype::UnknownDtype;
use tpbsim_isa::NumFormat;

/// A string enum that keeps names it does not know.
macro_rules! open_enum {
    ($(#[$m:meta])* $name:ident { $($(#[$vm:meta])* $var:ident = $text:literal),* $(,)? }) => {
        $(#[$m])*
        #[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
        pub enum $name {
            $($(#[$vm])* $var,)*
            /// A value tpbsim does not interpret, kept verbatim.
            Other(String),
        }
        impl $name {
            /// The JSON string.
            pub fn as_str(&self) -> &str {
                match self { $($name::$var => $text,)* $name::Other(s) => s }
            }
        }
        impl From<&str> for $name {
            fn from(s: &str) -> Self {
                match s { $($text => $name::$var,)* other => $name::Other(other.to_string()) }
            }
        }
        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result { f.write_str(self.as_str()) }
        }
        impl Serialize for $name {
            fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> { s.serialize_str(self.as_str()) }
        }
        impl<'de> Deserialize<'de> for $name {
            fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
                Ok($name::from(String::deserialize(d)?.as_str()))
            }
        }
    };
}

open_enum! {
    /// The location class of a variable (`def.json` `var[].type`).
    VarKind {
        /// `state-buffer`.
        StateBuffer = "state-buffer",
        /// `local`.
        Local = "local",
        /// `shared`.
        Shared = "shared",
        /// `remote`.
        Remote = "remote",
        /// `tmp-buf`.
        TmpBuf = "tmp-buf",
        /// `virtual`.
        Virtual = "virtual",
        /// `input`.
        Input = "input",
        /// `output`.
        Output = "output",
        /// `file` (constant data from a member named by `file_name`).
        File = "file",
        /// `pointer`.
        Pointer = "pointer",
        /// `list`.
        List = "list",
        /// `dge-table`: a table whose `list` names the variables the descriptor generation
        /// engine addresses by entry (NEFF-doc `list`: "List of var_ids to populate the
        /// table with").
        DgeTable = "dge-table",
    }
}

impl VarKind {
    /// Kinds whose `size` the runtime requires.
    pub fn requires_size(&self) -> bool {
        matches!(
            self,
            VarKind::Input
                | VarKind::Output
                | VarKind::TmpBuf
                | VarKind::Virtual
                | VarKind::Pointer
        )
    }
}

/// A variable of `def.json` (`var[]`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Variable {
    /// Unique variable id.
    pub var_id: u64,
    /// Tensor name.
    pub name: String,
    /// Location class.
    #[serde(rename = "type")]
    pub kind: VarKind,
    /// Byte size.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub size: Option<u64>,
    /// Element type.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dtype: Option<NumFormat>,
    /// Dimensions.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub shape: Option<Vec<u64>>,
    /// Member (relative to the subgraph directory) holding a `file` variable's data.
    #[serde(default, alias = "file", skip_serializing_if = "Option::is_none")]
    pub file_name: Option<String>,
    /// Byte offset of a `virtual` variable inside the scratchpad the runtime allocates
    /// (NEFF-doc `backing_variable_off`: "The offset inside the shared scratchpad space
    /// allocated by Runtime"; R `neff/metadata-schema.md` §6).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub backing_variable_off: Option<u64>,
    /// Which scratchpad arena backs a `virtual` variable (R `neff/metadata-schema.md` §6; R
    /// `neff/memory-planning.md` gives the runtime's codes LOCAL 0, SHARED 1, SHARDED 2,
    /// MAIN 3), as written.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub backing_buf: Option<BackingBuf>,
    /// The `var_id`s a `dge-table` variable's entries name, entry 0 first (NEFF-doc `list`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub list: Option<Vec<u64>>,
    /// Keys tpbsim does not interpret (`referenced_var_id`, `ops`, ...), kept verbatim.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// A `virtual` variable's `backing_buf`: the value as given, a name or a number.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum BackingBuf {
    /// A number (the runtime's `kbin_backing_buf` code).
    Code(u64),
    /// A name.
    Name(String),
}

impl fmt::Display for BackingBuf {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            BackingBuf::Code(c) => write!(f, "{c}"),
            BackingBuf::Name(n) => f.write_str(n),
        }
    }
}

impl Variable {
    /// A variable with only the required keys.
    pub fn new(var_id: u64, name: impl Into<String>, kind: VarKind) -> Variable {
        Variable {
            var_id,
            name: name.into(),
            kind,
            size: None,
            dtype: None,
            shape: None,
            file_name: None,
            backing_variable_off: None,
            backing_buf: None,
            list: None,
            extra: Map::new(),
        }
    }

    /// Number of elements of `shape` (checked), if a shape is given.
    pub fn elements(&self) -> Option<u64> {
        self.shape
            .as_ref()
            .and_then(|s| s.iter().try_fold(1u64, |a, &d| a.checked_mul(d)))
    }

    /// The byte size: `size` if given, else shape × dtype size when both are known.
    pub fn byte_size(&self) -> Option<u64> {
        self.size.or_else(|| {
            let e = self.elements()?;
            e.checked_mul(self.dtype?.container_bytes() as u64)
        })
    }
}

/// A DMA queue of `def.json` (`dma_queue[]`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct DmaQueue {
    /// Queue name (`act_load`, `data`, `in`, `out`, ...). `project-defined` key name.
    pub name: String,
    /// Queue id.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub id: Option<u64>,
    /// Queue role (`in`, `out`, `data`, `act_load`, `embedding_update`, ...).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub owner: Option<String>,
    /// Completion semaphore.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub semaphore: Option<u32>,
    /// Completion semaphores of a queue set (NEFF-doc `semaphore_set`; the compiler writes
    /// one per queue).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub semaphore_set: Option<Vec<u32>>,
    /// Hardware queues the queue set reserves (NEFF-doc `num_queues`: default 1, "must be
    /// 16 or less"; a descriptor's completion adds `num_queues` to its semaphore).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub num_queues: Option<u64>,
    /// The software DGE's state-buffer scratch of a dynamic queue set
    /// (R `neff/metadata-schema.md` §6 `dynamic_dma`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dynamic_dma: Option<DynamicDma>,
    /// DMA pathway, `main` or `alt` (NEFF-doc `fabric_path`, default `main`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fabric_path: Option<String>,
    /// Direction.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub direction: Option<String>,
    /// Queue role when `owner` names an engine (`in`, `out`, ...; G `neff/concrete-carve.md`).
    #[serde(rename = "type", default, skip_serializing_if = "Option::is_none")]
    pub role_type: Option<String>,
    /// Keys tpbsim does not interpret, kept verbatim.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// Queue roles the runtime knows (R `neff/metadata-schema.md` §6, `owner`).
pub const QUEUE_ROLES: [&str; 6] = [
    "in",
    "out",
    "data",
    "act_load",
    "embedding_update",
    "dynamic_dma",
];

impl DmaQueue {
    /// The queue's role: `type`, else `owner` when it names a role (not an engine).
    pub fn role(&self) -> Option<&str> {
        self.role_type
            .as_deref()
            .or_else(|| self.owner.as_deref().filter(|o| QUEUE_ROLES.contains(o)))
    }

    /// A queue with only a name.
    pub fn new(name: impl Into<String>) -> DmaQueue {
        DmaQueue {
            name: name.into(),
            id: None,
            owner: None,
            semaphore: None,
            semaphore_set: None,
            num_queues: None,
            dynamic_dma: None,
            fabric_path: None,
            direction: None,
            role_type: None,
            extra: Map::new(),
        }
    }

    /// Every semaphore the queue updates.
    pub fn semaphores(&self) -> Vec<u32> {
        let mut v: Vec<u32> = self.semaphore.into_iter().collect();
        v.extend(self.semaphore_set.iter().flatten().copied());
        v
    }

    /// Hardware queues of the set: `num_queues`, 1 when absent (NEFF-doc default).
    pub fn queue_count(&self) -> u64 {
        self.num_queues.unwrap_or(1)
    }
}

/// `dma_queue[].dynamic_dma`: the state-buffer scratch the software DGE of a dynamic queue set
/// uses (key names from the compiler's output and R `neff/metadata-schema.md` §6).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct DynamicDma {
    /// Byte offset of the scratch in each state-buffer partition.
    #[serde(
        rename = "SB_scratch_partition_offset",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub sb_scratch_partition_offset: Option<u64>,
    /// Bytes of scratch in each state-buffer partition.
    #[serde(
        rename = "SB_scratch_partition_size",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub sb_scratch_partition_size: Option<u64>,
    /// Keys tpbsim does not interpret, kept verbatim.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// `def.json` `fp8_conversion_config`: the runtime-programmed FP8 conversion settings
/// (R `neff/metadata-schema.md` §7; R `isa/fp8-dtype-encoding.md`).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Fp8ConversionConfig {
    /// Largest unbiased exponent of FP8 E4M3 (8 in neuronx-cc 2.23 output).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub emax_fp8_e4m3: Option<u32>,
    /// Largest unbiased exponent of FP8 E5M2 (15 in neuronx-cc 2.23 output).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub emax_fp8_e5m2: Option<u32>,
    /// FP8 range extension (R §7 reads it as bool or uint; kept as a flag).
    #[serde(
        default,
        deserialize_with = "flag_or_uint",
        skip_serializing_if = "Option::is_none"
    )]
    pub fp8_range_extension: Option<bool>,
    /// `fp8_sis` (its meaning is not pinned; R §7 guesses "scale-in-software").
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fp8_sis: Option<bool>,
    /// `fp8_sns` (its meaning is not pinned; R §7 guesses "scale-not-stochastic").
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fp8_sns: Option<bool>,
    /// OCP saturation mode.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ocp_sat: Option<bool>,
    /// Keys tpbsim does not interpret, kept verbatim.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// A flag written as a bool or as 0/1.
fn flag_or_uint<'de, D: Deserializer<'de>>(d: D) -> Result<Option<bool>, D::Error> {
    match Value::deserialize(d)? {
        Value::Bool(b) => Ok(Some(b)),
        Value::Number(n) if n.as_u64() == Some(0) => Ok(Some(false)),
        Value::Number(n) if n.as_u64() == Some(1) => Ok(Some(true)),
        Value::Null => Ok(None),
        other => Err(serde::de::Error::custom(format!(
            "expected a bool or 0/1, found {other}"
        ))),
    }
}

/// One DVE microcode table set of `DVE.json` `dve_tables[]`: member names relative to the
/// subgraph directory (NEFF-doc "Loadable DVE"; the four-table form is neuronx-cc 2.23's,
/// the `control_table` form the NEFF-doc example's).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct DveTableSet {
    /// Opcode table.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub opcode_table: Option<String>,
    /// Fast control table.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub control_fast_table: Option<String>,
    /// Slow control table.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub control_slow_table: Option<String>,
    /// Control table (the NEFF-doc example's single control table).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub control_table: Option<String>,
    /// Datapath table.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub datapath_table: Option<String>,
    /// Keys tpbsim does not interpret, kept verbatim.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

impl DveTableSet {
    /// Every table (key, member name) the set names.
    pub fn tables(&self) -> Vec<(&'static str, &str)> {
        [
            ("opcode_table", &self.opcode_table),
            ("control_fast_table", &self.control_fast_table),
            ("control_slow_table", &self.control_slow_table),
            ("control_table", &self.control_table),
            ("datapath_table", &self.datapath_table),
        ]
        .into_iter()
        .filter_map(|(k, v)| v.as_deref().map(|v| (k, v)))
        .collect()
    }

    /// Whether every table is the default microcode: each member's file name starts with
    /// `default_` (the compiler's name for the standard set, C `arch/dve-engine.md`).
    pub fn is_default(&self) -> bool {
        self.tables().iter().all(|(_, m)| {
            m.rsplit('/')
                .next()
                .is_some_and(|f| f.starts_with("default_"))
        })
    }
}

/// The files of one engine in `def.json` `definition[token]`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct EngineFiles {
    /// The instruction stream's file name (`PE.bin`, ...).
    #[serde(
        rename = "_instr",
        alias = "instr",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub instr: Option<String>,
    /// Keys tpbsim does not interpret (`_dbg`, `_asm_dbg`, ...), kept verbatim.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// `sgNN/def.json`: one subgraph's variables, queues and engine files.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct DefJson {
    /// Per-engine files keyed by the lower-case token (`pe`, `act`, `pool`, `dve`, `sp`).
    #[serde(
        default,
        skip_serializing_if = "BTreeMap::is_empty",
        deserialize_with = "definition_map"
    )]
    pub definition: BTreeMap<String, EngineFiles>,
    /// Variables: an array, or an object keyed by name (the runtime's form).
    #[serde(default, deserialize_with = "seq_or_keyed")]
    pub var: Vec<Variable>,
    /// DMA queues: an array, or an object keyed by name (the runtime's form).
    #[serde(
        default,
        skip_serializing_if = "Vec::is_empty",
        deserialize_with = "seq_or_keyed"
    )]
    pub dma_queue: Vec<DmaQueue>,
    /// DMA descriptor blocks carried in `def.json` itself.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub dma: Vec<DmaBlock>,
    /// FP8 conversion settings (R `neff/metadata-schema.md` §7).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fp8_conversion_config: Option<Fp8ConversionConfig>,
    /// The named feature flags the compiler sets (C `formats/neff-feature-flags.md`: the
    /// `def.json` mirror of the header's `feature_bits`; `neff_feature_vnc` marks a
    /// multi-core logical core).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub neff_features: Vec<String>,
    /// Semaphores the runtime reserves (C `formats/neff-feature-flags.md`, adjacent resource
    /// keys).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub runtime_semaphore_count: Option<u64>,
    /// Events the runtime reserves (as above).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub runtime_event_count: Option<u64>,
    /// Keys tpbsim does not interpret (`replica_groups`, `ucode_lib`, ...), kept verbatim.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
    /// `var` and `dma_queue` were objects keyed by name (JSON paths in errors follow).
    #[serde(skip)]
    pub keyed: bool,
}

/// An array of entries, or an object of entries keyed by name (the key becomes `name`; an entry
/// that also carries a `name` must agree with its key).
fn seq_or_keyed<'de, D: Deserializer<'de>, T: serde::de::DeserializeOwned>(
    d: D,
) -> Result<Vec<T>, D::Error> {
    #[derive(Deserialize)]
    #[serde(untagged)]
    enum Form {
        Seq(Vec<Value>),
        Keyed(Map<String, Value>),
    }
    let form = Form::deserialize(d)
        .map_err(|_| serde::de::Error::custom("expected an array or an object keyed by name"))?;
    let items: Vec<(String, Value)> = match form {
        Form::Seq(v) => v
            .into_iter()
            .enumerate()
            .map(|(i, x)| (format!("[{i}]"), x))
            .collect(),
        Form::Keyed(m) => {
            let mut out = Vec::with_capacity(m.len());
            for (k, mut x) in m {
                let Some(obj) = x.as_object_mut() else {
                    return Err(serde::de::Error::custom(format!("{k}: not an object")));
                };
                match obj.get("name") {
                    Some(Value::String(n)) if n != &k => {
                        return Err(serde::de::Error::custom(format!(
                            "{k}: `name` is `{n}`, not its key"
                        )))
                    }
                    _ => {}
                }
                obj.insert("name".into(), Value::String(k.clone()));
                out.push((format!(".{k}"), x));
            }
            out
        }
    };
    items
        .into_iter()
        .map(|(at, x)| {
            let mut track = serde_path_to_error::Track::new();
            let de = serde_path_to_error::Deserializer::new(x, &mut track);
            T::deserialize(de).map_err(|e| {
                let inner = track.path().to_string();
                let sep = if inner == "." { "" } else { "." };
                serde::de::Error::custom(format!("{at}{sep}{inner}: {e}"))
            })
        })
        .collect()
}

/// `definition` is an object of engine entries; a string (a module name) carries none.
fn definition_map<'de, D: Deserializer<'de>>(
    d: D,
) -> Result<BTreeMap<String, EngineFiles>, D::Error> {
    #[derive(Deserialize)]
    #[serde(untagged)]
    enum Def {
        Map(BTreeMap<String, Value>),
        Name(#[allow(dead_code)] String),
    }
    match Def::deserialize(d)? {
        Def::Name(_) => Ok(BTreeMap::new()),
        Def::Map(m) => {
            let mut out = BTreeMap::new();
            for (k, v) in m {
                // Entries that are not objects (a module name, a version) carry no files.
                if v.is_object() {
                    let files = EngineFiles::deserialize(v)
                        .map_err(|e| serde::de::Error::custom(format!("{k}: {e}")))?;
                    out.insert(k, files);
                }
            }
            Ok(out)
        }
    }
}

/// The lower-case `def.json` token of an engine (`pe`, `act`, `pool`, `dve`, `sp`).
pub const fn engine_token(e: Engine) -> &'static str {
    match e {
        Engine::Pe => "pe",
        Engine::Act => "act",
        Engine::Pool => "pool",
        Engine::Dve => "dve",
        Engine::Sp => "sp",
    }
}

/// A reference to a `def.json` variable: by name or by `var_id`. `project-defined` value form.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(untagged)]
pub enum VarRef {
    /// By `var_id`.
    Id(u64),
    /// By name.
    Name(String),
}

impl fmt::Display for VarRef {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            VarRef::Id(i) => write!(f, "var_id {i}"),
            VarRef::Name(n) => write!(f, "`{n}`"),
        }
    }
}

open_enum! {
    /// The operation of a DMA descriptor (`op`; absent means `copy`).
    DmaOp {
        /// Plain copy.
        Copy = "copy",
        /// Copy with element type conversion. `project-defined`.
        Cast = "cast",
        /// Element-wise add of the sources.
        Add = "add",
        /// Fused multiply-add.
        Fma = "fma",
        /// Element-wise minimum.
        Min = "min",
        /// Element-wise maximum.
        Max = "max",
        /// Transpose.
        Transpose = "transpose",
    }
}

open_enum! {
    /// How a completed DMA entry updates its semaphore. `project-defined`.
    SemOp {
        /// Add 1.
        Inc = "inc",
        /// Add `sem_value`.
        Add = "add",
        /// Set to `sem_value`.
        Write = "write",
    }
}

/// One DMA descriptor entry (`desc[]`).
///
/// Public keys: `from`, `to`, `from_sizes`, `to_sizes`, `from_arr`, `op`. Everything else is
/// `project-defined`: `id`, the byte offsets, the steps, the dtypes and the completion update.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct DmaEntry {
    /// Entry id. `project-defined`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub id: Option<u64>,
    /// Operation (default `copy`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub op: Option<DmaOp>,
    /// Source variable.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub from: Option<VarRef>,
    /// Several source variables (multi-operand operations).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub from_arr: Option<Vec<VarRef>>,
    /// Destination variable.
    pub to: VarRef,
    /// Byte offset into each source. `project-defined`.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub from_offset: u64,
    /// Byte offset into the destination. `project-defined`.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub to_offset: u64,
    /// Source dimensions (elements), outermost first.
    #[serde(default)]
    pub from_sizes: Vec<u64>,
    /// Destination dimensions (elements), outermost first.
    #[serde(default)]
    pub to_sizes: Vec<u64>,
    /// Source steps in elements per dimension, signed (default: contiguous).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub from_steps: Option<Vec<i64>>,
    /// Destination steps in elements per dimension, signed (default: contiguous).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub to_steps: Option<Vec<i64>>,
    /// Source element type (default: the variable's dtype, else bytes). `project-defined`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub from_dtype: Option<NumFormat>,
    /// Destination element type (default: the variable's dtype, else bytes). `project-defined`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub to_dtype: Option<NumFormat>,
    /// Semaphore updated on completion. `project-defined`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sem: Option<u32>,
    /// Semaphore update (default `inc`). `project-defined`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sem_op: Option<SemOp>,
    /// Operand of `add`/`write`. `project-defined`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sem_value: Option<u64>,
    /// Event set on completion. `project-defined`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub event: Option<u32>,
    /// Keys tpbsim does not interpret, kept verbatim.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

fn is_zero(v: &u64) -> bool {
    *v == 0
}

impl DmaEntry {
    /// A contiguous copy of `sizes` elements from `from` to `to`.
    pub fn copy(from: VarRef, to: VarRef, sizes: Vec<u64>) -> DmaEntry {
        DmaEntry {
            id: None,
            op: None,
            from: Some(from),
            from_arr: None,
            to,
            from_offset: 0,
            to_offset: 0,
            from_sizes: sizes.clone(),
            to_sizes: sizes,
            from_steps: None,
            to_steps: None,
            from_dtype: None,
            to_dtype: None,
            sem: None,
            sem_op: None,
            sem_value: None,
            event: None,
            extra: Map::new(),
        }
    }

    /// The operation (absent means copy).
    pub fn op(&self) -> DmaOp {
        self.op.clone().unwrap_or(DmaOp::Copy)
    }

    /// Every source, `from` then `from_arr`.
    pub fn sources(&self) -> Vec<&VarRef> {
        self.from
            .iter()
            .chain(self.from_arr.iter().flatten())
            .collect()
    }
}

/// Contiguous (row-major) steps for `sizes`.
pub fn contiguous_steps(sizes: &[u64]) -> Vec<i64> {
    let mut steps = vec![1i64; sizes.len()];
    for i in (0..sizes.len().saturating_sub(1)).rev() {
        let n = i64::try_from(sizes[i + 1]).unwrap_or(i64::MAX);
        steps[i] = steps[i + 1].saturating_mul(n);
    }
    steps
}

/// A DMA descriptor block: the entries one queue executes.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct DmaBlock {
    /// Target queue name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub queue: Option<String>,
    /// Ring-instance name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub instance_name: Option<String>,
    /// Block id.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub id: Option<u64>,
    /// Descriptor entries.
    #[serde(default)]
    pub desc: Vec<DmaEntry>,
    /// Keys tpbsim does not interpret, kept verbatim.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

impl DmaBlock {
    /// The queue the block targets (`queue`, else `instance_name`).
    pub fn queue_name(&self) -> Option<&str> {
        self.queue.as_deref().or(self.instance_name.as_deref())
    }
}

/// A per-engine JSON: the runtime's engine member (`sg00/pe.json`: `dma`, `instr`, ...) or a
/// compiler-side DMA sidecar (`PE.json`: `{"dma": [block, ...]}`).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Sidecar {
    /// Descriptor blocks.
    #[serde(default)]
    pub dma: Vec<DmaBlock>,
    /// The engine's instruction stream, relative to the subgraph directory (runtime engine JSON;
    /// R `neff/metadata-schema.md` §5).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub instr: Option<String>,
    /// `Activation.json`: the activation function sets, by name, that ACTIVATION_TABLE_LOAD
    /// selects from (index = `act_tbl_sel`; NEFF-doc Activation.json, C
    /// `activation/loadactfuncset.md`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub activation_function_sets: Option<Vec<String>>,
    /// `Activation.json`: the semaphore of ACT table loads (R `neff/metadata-schema.md` §5).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub act_semaphore: Option<u32>,
    /// `Activation.json`: the member describing the function sets (`act_info.json`: each set's
    /// table images).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub act_info: Option<String>,
    /// `DVE.json`: the DVE microcode table sets (NEFF-doc DVE.json).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dve_tables: Option<Vec<DveTableSet>>,
    /// Keys tpbsim does not interpret, kept verbatim.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

impl Sidecar {
    /// Number of descriptor entries over all blocks.
    pub fn entry_count(&self) -> usize {
        self.dma.iter().map(|b| b.desc.len()).sum()
    }

    /// Whether every DVE table set is the default microcode (true when there are none).
    pub fn dve_tables_default(&self) -> bool {
        self.dve_tables
            .iter()
            .flatten()
            .all(DveTableSet::is_default)
    }
}

/// `neff.json`: the top-level manifest. Only the keys tpbsim shows are typed.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct NeffJson {
    /// Manifest revision.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub revision: Option<Value>,
    /// Target architecture name (`sunda`, `cayman`, `mariana`, ...).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub target_arch: Option<String>,
    /// Everything else, kept verbatim.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// Parse a JSON member into `T`, naming the member and the JSON path on error.
pub fn parse_json<T: serde::de::DeserializeOwned>(
    member: &str,
    bytes: &[u8],
) -> Result<T, NeffError> {
    // Maps (variables and queues keyed by name, free-form objects) would keep the last of a
    // repeated key: every object is checked for one first, at its JSON path.
    parse_json_once::<NoRepeatedKey>(member, bytes)?;
    parse_json_once(member, bytes)
}

/// Deserialize `bytes` as a `T`, with the JSON path of an error.
fn parse_json_once<T: serde::de::DeserializeOwned>(
    member: &str,
    bytes: &[u8],
) -> Result<T, NeffError> {
    let mut de = serde_json::Deserializer::from_slice(bytes);
    let value = serde_path_to_error::deserialize(&mut de).map_err(|e| {
        let mut path = e.path().to_string();
        let mut message = e.into_inner().to_string();
        // An entry of a keyed-or-array list reports its own path first (`[0].size: ...`).
        if message.starts_with('[') || message.starts_with('.') {
            if let Some((inner, rest)) = message.split_once(": ") {
                path = format!("{path}{inner}");
                message = rest.to_string();
            }
        }
        NeffError::Json {
            member: member.to_string(),
            path,
            message,
        }
    })?;
    de.end().map_err(|e| NeffError::Json {
        member: member.to_string(),
        path: ".".into(),
        message: e.to_string(),
    })?;
    Ok(value)
}

impl DefJson {
    /// The variable a reference names.
    pub fn resolve(&self, r: &VarRef) -> Option<&Variable> {
        match r {
            VarRef::Id(id) => self.var.iter().find(|v| v.var_id == *id),
            VarRef::Name(n) => self.var.iter().find(|v| &v.name == n),
        }
    }

    /// JSON path of variable `i` (`var.<name>` when keyed by name, else `var[i]`).
    pub fn var_path(&self, i: usize) -> String {
        match self.var.get(i) {
            Some(v) if self.keyed => format!("var.{}", v.name),
            _ => format!("var[{i}]"),
        }
    }

    /// JSON path of queue `i`.
    pub fn queue_path(&self, i: usize) -> String {
        match self.dma_queue.get(i) {
            Some(q) if self.keyed => format!("dma_queue.{}", q.name),
            _ => format!("dma_queue[{i}]"),
        }
    }

    /// The engine JSON `def.json` names for `engine` (`"pe": "pe.json"`, the runtime's form).
    pub fn engine_json(&self, engine: Engine) -> Option<&str> {
        self.extra.get(engine_token(engine)).and_then(Value::as_str)
    }

    /// The variable named `name`.
    pub fn variable(&self, name: &str) -> Option<&Variable> {
        self.var.iter().find(|v| v.name == name)
    }

    /// The variable with `var_id` `id`.
    pub fn variable_by_id(&self, id: u64) -> Option<&Variable> {
        self.var.iter().find(|v| v.var_id == id)
    }

    /// Whether `neff_features` names `neff_feature_vnc`.
    pub fn vnc_feature(&self) -> bool {
        self.neff_features
            .iter()
            .any(|f| f == crate::features::NEFF_FEATURE_VNC)
    }

    /// The queue named `name`.
    pub fn queue(&self, name: &str) -> Option<&DmaQueue> {
        self.dma_queue.iter().find(|q| q.name == name)
    }

    /// The stream file name `definition[token]._instr` gives for `engine`.
    pub fn instr_file(&self, engine: Engine) -> Option<&str> {
        self.definition
            .get(engine_token(engine))
            .and_then(|f| f.instr.as_deref())
    }
}

/// Any JSON value in which no object gives a key twice (deserializing it is the check).
struct NoRepeatedKey;

impl<'de> serde::Deserialize<'de> for NoRepeatedKey {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_any(NoRepeatedKeyVisitor)
    }
}

struct NoRepeatedKeyVisitor;

impl<'de> serde::de::Visitor<'de> for NoRepeatedKeyVisitor {
    type Value = NoRepeatedKey;

    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("a JSON value")
    }
    fn visit_bool<E>(self, _: bool) -> Result<NoRepeatedKey, E> {
        Ok(NoRepeatedKey)
    }
    fn visit_i64<E>(self, _: i64) -> Result<NoRepeatedKey, E> {
        Ok(NoRepeatedKey)
    }
    fn visit_u64<E>(self, _: u64) -> Result<NoRepeatedKey, E> {
        Ok(NoRepeatedKey)
    }
    fn visit_f64<E>(self, _: f64) -> Result<NoRepeatedKey, E> {
        Ok(NoRepeatedKey)
    }
    fn visit_str<E>(self, _: &str) -> Result<NoRepeatedKey, E> {
        Ok(NoRepeatedKey)
    }
    fn visit_unit<E>(self) -> Result<NoRepeatedKey, E> {
        Ok(NoRepeatedKey)
    }
    fn visit_seq<A: serde::de::SeqAccess<'de>>(self, mut a: A) -> Result<NoRepeatedKey, A::Error> {
        while a.next_element::<NoRepeatedKey>()?.is_some() {}
        Ok(NoRepeatedKey)
    }
    fn visit_map<A: serde::de::MapAccess<'de>>(self, mut m: A) -> Result<NoRepeatedKey, A::Error> {
        let mut seen = std::collections::HashSet::new();
        while let Some(k) = m.next_key::<String>()? {
            if seen.contains(&k) {
                return Err(serde::de::Error::custom(format!(
                    "duplicate key `{k}` in one object"
                )));
            }
            m.next_value::<NoRepeatedKey>()?;
            seen.insert(k);
        }
        Ok(NoRepeatedKey)
    }
}
