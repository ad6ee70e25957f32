//! Typed views of the JSON members: `neff.json`, `sgNN/def.json` and the per-engine DMA
//! sidecars (`PE.json`, ...).
//!
//! Reading is lenient about keys tpbsim does not use (they are kept in `extra` maps and
//! written back unchanged) and strict about the ones it does: a wrong type or an
//! inconsistent value is an error naming the member and the JSON path. Keys whose names are
//! public are documented with their source in `docs/neff.md`; the rest are marked
//! `project-defined` there and on the fields below.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;

use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::{Map, Value};

use super::NeffError;
use crate::engine::Engine;

/// Largest number of DMA queues one NEFF may declare (11 × 16, a compiler assertion).
pub const MAX_DMA_QUEUES: usize = 11 * 16;

/// Largest number of access-pattern dimensions of one DMA side (the runtime's descriptor holds
/// `steps[8]` / `sizes[8]`, G `neff/format-reference.md` §8).
pub const MAX_DMA_DIMS: usize = 8;

/// An element type named in `def.json` (`dtype`), a sidecar, or an `.npy` file: the one
/// number-format type ([`crate::NumFormat`]), read and written by its NEFF spelling
/// ([`crate::NumFormat::NEFF`], serde through [`crate::NumFormat::from_neff_name`]).
pub use crate::dtype::{NumFormat as Dtype, UnknownDtype};

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
    pub dtype: Option<Dtype>,
    /// Dimensions.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub shape: Option<Vec<u64>>,
    /// Member (relative to the subgraph directory) holding a `file` variable's data.
    #[serde(default, alias = "file", skip_serializing_if = "Option::is_none")]
    pub file_name: Option<String>,
    /// Keys tpbsim does not interpret (`pointer`, `backing_variable_off`, ...), kept verbatim.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
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
            e.checked_mul(self.dtype?.size() as u64)
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
    /// Completion semaphores of a queue set.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub semaphore_set: Option<Vec<u32>>,
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
    pub from_dtype: Option<Dtype>,
    /// Destination element type (default: the variable's dtype, else bytes). `project-defined`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub to_dtype: Option<Dtype>,
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
    /// Keys tpbsim does not interpret, kept verbatim.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

impl Sidecar {
    /// Number of descriptor entries over all blocks.
    pub fn entry_count(&self) -> usize {
        self.dma.iter().map(|b| b.desc.len()).sum()
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

fn invalid(member: &str, path: impl Into<String>, message: impl Into<String>) -> NeffError {
    NeffError::Invalid {
        member: member.to_string(),
        path: path.into(),
        message: message.into(),
    }
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

    /// The variable named `name`.
    pub fn variable(&self, name: &str) -> Option<&Variable> {
        self.var.iter().find(|v| v.name == name)
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
                    let want = elements.checked_mul(dt.size() as u64);
                    if want != Some(size) {
                        return Err(invalid(
                            member,
                            at("size"),
                            format!(
                                "size {size} != shape {shape:?} × {} bytes ({dt})",
                                dt.size()
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
                    Some(f) if super::archive::normalize_member_path(f.as_bytes()).is_err() => {
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
                if s > 255 {
                    return Err(invalid(
                        member,
                        format!("{qpath}.{key}"),
                        format!("semaphore {s} is not below 256"),
                    ));
                }
            }
        }
        self.check_var_ids(member)?;
        for (e, files) in &self.definition {
            if let Some(f) = &files.instr {
                if super::archive::normalize_member_path(f.as_bytes()).is_err() {
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
fn pattern_span(offset: u64, sizes: &[u64], steps: &[i64], elem: u64) -> Option<(i128, i128)> {
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
    dtype: Option<Dtype>,
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
    let elem = dtype.or(var.dtype).map_or(1, |d| d.size() as u64);
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
    if let Some(s) = e.sem.filter(|&s| s > 255) {
        return Err(invalid(
            member,
            format!("{path}.sem"),
            format!("semaphore {s} is not below 256"),
        ));
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

#[cfg(test)]
mod tests {
    use super::*;

    fn def() -> DefJson {
        let mut a = Variable::new(0, "a", VarKind::Input);
        a.size = Some(64);
        a.dtype = Some(Dtype::Bfloat16);
        a.shape = Some(vec![4, 8]);
        let mut b = Variable::new(1, "b", VarKind::Output);
        b.size = Some(128);
        b.dtype = Some(Dtype::Float32);
        b.shape = Some(vec![4, 8]);
        let mut q = DmaQueue::new("data");
        q.semaphore = Some(3);
        DefJson {
            var: vec![a, b],
            dma_queue: vec![q],
            ..Default::default()
        }
    }

    #[test]
    fn dtype_names() {
        for d in Dtype::NEFF {
            assert_eq!(Dtype::from_neff_name(d.name()).unwrap(), d);
        }
        assert_eq!(
            Dtype::from_neff_name("float8e4").unwrap(),
            Dtype::Float8E4m3
        );
        assert!(Dtype::from_neff_name("float8").is_err());
    }

    #[test]
    fn def_json_lenient_and_typed() {
        let text = r#"{"definition": {"pe": {"_instr": "PE.bin", "_dbg": "x"}, "name": "mod"},
            "var": [{"var_id": 0, "name": "w", "type": "file", "file_name": "w.npy", "pointer": 7}],
            "dma_queue": [{"name": "in", "owner": "in", "semaphore": 2}],
            "replica_groups": [[0, 1]]}"#;
        let d: DefJson = parse_json("sg00/def.json", text.as_bytes()).unwrap();
        assert_eq!(d.instr_file(Engine::Pe), Some("PE.bin"));
        assert_eq!(d.var[0].kind, VarKind::File);
        assert_eq!(d.var[0].extra.get("pointer"), Some(&Value::from(7)));
        assert!(d.extra.contains_key("replica_groups"));
        d.validate("sg00/def.json").unwrap();
        // Round trip keeps unknown keys.
        let back: DefJson = serde_json::from_value(serde_json::to_value(&d).unwrap()).unwrap();
        assert_eq!(back, d);
    }

    #[test]
    fn json_errors_name_member_and_path() {
        let text = r#"{"var": [{"var_id": 0, "name": "w", "type": "input", "size": "big"}]}"#;
        let e = parse_json::<DefJson>("sg00/def.json", text.as_bytes()).unwrap_err();
        let msg = e.to_string();
        assert!(
            msg.contains("sg00/def.json") && msg.contains("var[0].size"),
            "{msg}"
        );
        let e = parse_json::<DefJson>("m", b"{").unwrap_err();
        assert!(matches!(e, NeffError::Json { .. }));
        let e = parse_json::<DefJson>("m", br#"{"var": [{"name": "x", "type": "input"}]}"#)
            .unwrap_err();
        assert!(e.to_string().contains("var_id"), "{e}");
    }

    #[test]
    fn def_validation() {
        def().validate("d").unwrap();
        let mut d = def();
        d.var[1].var_id = 0;
        assert!(d
            .validate("d")
            .unwrap_err()
            .to_string()
            .contains("var[1].var_id"));
        let mut d = def();
        d.var[0].size = Some(63);
        assert!(d
            .validate("d")
            .unwrap_err()
            .to_string()
            .contains("var[0].size"));
        let mut d = def();
        d.var[0].size = None;
        assert!(d
            .validate("d")
            .unwrap_err()
            .to_string()
            .contains("needs a size"));
        let mut d = def();
        d.var.push(Variable::new(5, "c", VarKind::File));
        assert!(d
            .validate("d")
            .unwrap_err()
            .to_string()
            .contains("file_name"));
        let mut d = def();
        d.var[0].name = "b".into();
        assert!(d
            .validate("d")
            .unwrap_err()
            .to_string()
            .contains("duplicate variable"));
        let mut d = def();
        d.dma_queue.push(DmaQueue::new("data"));
        assert!(d
            .validate("d")
            .unwrap_err()
            .to_string()
            .contains("duplicate queue"));
    }

    fn block(e: DmaEntry) -> Vec<DmaBlock> {
        vec![DmaBlock {
            queue: Some("data".into()),
            instance_name: None,
            id: None,
            desc: vec![e],
            extra: Map::new(),
        }]
    }

    #[test]
    fn dma_entry_validation() {
        let d = def();
        let ok = DmaEntry::copy(VarRef::Name("a".into()), VarRef::Id(1), vec![4, 8]);
        validate_blocks("PE.json", "dma", &block(ok.clone()), &d).unwrap();
        let check = |e: DmaEntry, needle: &str| {
            let err = validate_blocks("PE.json", "dma", &block(e), &d)
                .unwrap_err()
                .to_string();
            assert!(err.contains(needle), "{err} lacks {needle}");
        };
        let mut e = ok.clone();
        e.to = VarRef::Name("nope".into());
        check(e, "dma[0].desc[0].to");
        let mut e = ok.clone();
        e.from_offset = 2;
        check(e, "reaches byte 66");
        let mut e = ok.clone();
        e.to_sizes = vec![4, 4];
        check(e, "source moves 32 elements, destination 16");
        let mut e = ok.clone();
        e.from_sizes = vec![1, 1, 1, 1, 1, 1, 1, 1, 32];
        e.to_sizes = vec![32];
        check(e, "at most 8");
        let mut e = ok.clone();
        e.from_steps = Some(vec![1]);
        check(e, "1 steps for 2 sizes");
        let mut e = ok.clone();
        e.op = Some(DmaOp::from("scatter"));
        check(e, "unknown operation");
        let mut e = ok.clone();
        e.sem_op = Some(SemOp::Add);
        check(e, "without sem");
        let mut e = ok.clone();
        e.sem = Some(1);
        e.sem_op = Some(SemOp::Write);
        check(e, "need a sem_value");
        let mut e = ok.clone();
        e.from = None;
        check(e, "no source");
        // Strided source inside bounds: 4 rows of 4 from a 4x8 bf16 tensor, step 8.
        let mut e = ok.clone();
        e.from_sizes = vec![4, 4];
        e.from_steps = Some(vec![8, 1]);
        e.to_sizes = vec![16];
        validate_blocks("PE.json", "dma", &block(e), &d).unwrap();
        let mut bad_queue = block(ok);
        bad_queue[0].queue = Some("other".into());
        assert!(validate_blocks("PE.json", "dma", &bad_queue, &d).is_err());
    }

    #[test]
    fn steps() {
        assert_eq!(contiguous_steps(&[2, 3, 4]), vec![12, 4, 1]);
        assert_eq!(pattern_span(0, &[2, 3], &[3, 1], 2), Some((0, 12)));
        assert_eq!(pattern_span(8, &[2, 3], &[-3, 1], 2), Some((2, 14)));
        assert_eq!(pattern_span(0, &[u64::MAX, 2], &[i64::MAX, 1], 2), None);
    }
}
