//! BIR JSON import and export (`docs/bir-json.md`).
//!
//! Import walks a `serde_json::Value` by hand so that every error names the JSON path of the
//! offending value (`functions[0].blocks[2].instructions[5].args[1].dtype: unknown dtype
//! "float9"`), unknown keys are rejected (a misspelt field is an error, not a silent default),
//! and no input can panic. Export writes the canonical spellings; `import(export(m)) == m`.

use std::fmt;

use serde_json::{Map, Value};

use super::model::{
    AccessPattern, Block, ClassFields, CollectiveFields, Dim, FieldsKind, Function, Instruction,
    MatmultMxFields, Module, MxTiles, NkiKernelFields, Sb2SbFields, ATTR_SKIP_ENGINE_CHECK,
};
use super::{ArchLevel, CollectiveKind, Dtype, EngineType, InstClass, MemoryType};

/// An import error.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum BirJsonError {
    /// The text is not JSON.
    #[error("invalid JSON at line {line}, column {column}: {message}")]
    Syntax {
        /// 1-based line.
        line: usize,
        /// 1-based column.
        column: usize,
        /// What the parser said.
        message: String,
    },
    /// The JSON does not follow the BIR schema.
    #[error("{path}: {message}")]
    Schema {
        /// JSON path of the offending value (`functions[0].blocks[1].name`; `$` for the root).
        path: String,
        /// What is wrong.
        message: String,
    },
}

/// Maximum region nesting depth accepted on import (deeper input is rejected, not recursed
/// into).
pub const MAX_REGION_DEPTH: usize = 64;

/// Maximum JSON nesting depth accepted on import: room for [`MAX_REGION_DEPTH`] regions (four
/// JSON levels each: instruction, `blocks`, block, `instructions`) and the levels around them.
pub const MAX_JSON_DEPTH: usize = 4 * (MAX_REGION_DEPTH + 2) + 32;

/// Parse a BIR JSON document. Duplicate object keys are refused (JSON leaves their meaning
/// open), and so is nesting deeper than [`MAX_JSON_DEPTH`].
pub fn from_json_str(text: &str) -> Result<Module, BirJsonError> {
    use serde::de::DeserializeSeed;
    let syntax = |e: serde_json::Error| BirJsonError::Syntax {
        line: e.line(),
        column: e.column(),
        message: e.to_string(),
    };
    let mut de = serde_json::Deserializer::from_str(text);
    // The depth is bounded by `Strict` instead, at a limit that admits MAX_REGION_DEPTH.
    de.disable_recursion_limit();
    let v = Strict { depth: 0 }.deserialize(&mut de).map_err(syntax)?;
    de.end().map_err(syntax)?;
    from_json_value(&v)
}

/// Builds a [`Value`], refusing duplicate keys and nesting deeper than [`MAX_JSON_DEPTH`].
struct Strict {
    depth: usize,
}

impl Strict {
    fn enter<E: serde::de::Error>(&self) -> Result<Strict, E> {
        if self.depth >= MAX_JSON_DEPTH {
            return Err(E::custom(format!(
                "nested deeper than {MAX_JSON_DEPTH} levels"
            )));
        }
        Ok(Strict {
            depth: self.depth + 1,
        })
    }
}

impl<'de> serde::de::DeserializeSeed<'de> for Strict {
    type Value = Value;

    fn deserialize<D: serde::Deserializer<'de>>(self, d: D) -> Result<Value, D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> serde::de::Visitor<'de> for Strict {
    type Value = Value;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a JSON value")
    }

    fn visit_bool<E>(self, v: bool) -> Result<Value, E> {
        Ok(Value::Bool(v))
    }

    fn visit_i64<E>(self, v: i64) -> Result<Value, E> {
        Ok(Value::from(v))
    }

    fn visit_u64<E>(self, v: u64) -> Result<Value, E> {
        Ok(Value::from(v))
    }

    fn visit_f64<E>(self, v: f64) -> Result<Value, E> {
        Ok(serde_json::Number::from_f64(v).map_or(Value::Null, Value::Number))
    }

    fn visit_str<E>(self, v: &str) -> Result<Value, E> {
        Ok(Value::String(v.to_string()))
    }

    fn visit_string<E>(self, v: String) -> Result<Value, E> {
        Ok(Value::String(v))
    }

    fn visit_unit<E>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }

    fn visit_none<E>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }

    fn visit_seq<A: serde::de::SeqAccess<'de>>(self, mut seq: A) -> Result<Value, A::Error> {
        let inner = self.enter()?;
        let mut v = Vec::new();
        while let Some(x) = seq.next_element_seed(Strict { depth: inner.depth })? {
            v.push(x);
        }
        Ok(Value::Array(v))
    }

    fn visit_map<A: serde::de::MapAccess<'de>>(self, mut map: A) -> Result<Value, A::Error> {
        let inner = self.enter()?;
        let mut m = Map::new();
        while let Some(k) = map.next_key::<String>()? {
            if m.contains_key(&k) {
                return Err(serde::de::Error::custom(format!(
                    "duplicate key {k:?} in one object"
                )));
            }
            let x = map.next_value_seed(Strict { depth: inner.depth })?;
            m.insert(k, x);
        }
        Ok(Value::Object(m))
    }
}

/// Read a module from a parsed JSON value.
pub fn from_json_value(v: &Value) -> Result<Module, BirJsonError> {
    let root = Path::Root;
    let mut o = Obj::new(v, &root)?;
    let name = o.opt_string("name")?;
    let arch = {
        let (val, p) = o.req("arch")?;
        parse_arch(val, &p)?
    };
    let functions = {
        let (val, p) = o.req("functions")?;
        let items = as_array(val, &p)?;
        let mut out: Vec<Function> = Vec::with_capacity(items.len());
        for (i, item) in items.iter().enumerate() {
            let ip = Path::Index(&p, i);
            let f = parse_function(item, &ip)?;
            if out.iter().any(|g| g.name == f.name) {
                return Err(schema(
                    &Path::Key(&ip, "name"),
                    format!("duplicate function name {:?}", f.name),
                ));
            }
            out.push(f);
        }
        out
    };
    o.finish()?;
    Ok(Module {
        name,
        arch,
        functions,
    })
}

/// The canonical JSON value of a module.
pub fn to_json_value(m: &Module) -> Value {
    let mut o = Map::new();
    if let Some(n) = &m.name {
        o.insert("name".into(), n.clone().into());
    }
    o.insert("arch".into(), m.arch.name().into());
    o.insert(
        "functions".into(),
        Value::Array(m.functions.iter().map(function_json).collect()),
    );
    Value::Object(o)
}

/// The canonical JSON text of a module (pretty-printed, trailing newline).
pub fn to_json_string(m: &Module) -> String {
    let mut s = serde_json::to_string_pretty(&to_json_value(m)).unwrap_or_default();
    s.push('\n');
    s
}

// ---------------------------------------------------------------------------------------------
// Paths

/// A JSON path, built on the stack as the walk descends and rendered only for errors.
#[derive(Clone, Copy)]
enum Path<'a> {
    Root,
    Key(&'a Path<'a>, &'a str),
    Index(&'a Path<'a>, usize),
}

impl fmt::Display for Path<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Path::Root => f.write_str("$"),
            Path::Key(Path::Root, k) => f.write_str(k),
            Path::Key(p, k) => write!(f, "{p}.{k}"),
            Path::Index(p, i) => write!(f, "{p}[{i}]"),
        }
    }
}

fn schema(p: &Path<'_>, message: impl Into<String>) -> BirJsonError {
    BirJsonError::Schema {
        path: p.to_string(),
        message: message.into(),
    }
}

fn kind_of(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

// ---------------------------------------------------------------------------------------------
// Scalar readers

fn as_array<'v>(v: &'v Value, p: &Path<'_>) -> Result<&'v Vec<Value>, BirJsonError> {
    v.as_array()
        .ok_or_else(|| schema(p, format!("expected an array, found {}", kind_of(v))))
}

fn as_str<'v>(v: &'v Value, p: &Path<'_>) -> Result<&'v str, BirJsonError> {
    v.as_str()
        .ok_or_else(|| schema(p, format!("expected a string, found {}", kind_of(v))))
}

fn as_bool(v: &Value, p: &Path<'_>) -> Result<bool, BirJsonError> {
    v.as_bool()
        .ok_or_else(|| schema(p, format!("expected a boolean, found {}", kind_of(v))))
}

fn as_u64(v: &Value, p: &Path<'_>) -> Result<u64, BirJsonError> {
    match v {
        Value::Number(n) => n
            .as_u64()
            .ok_or_else(|| schema(p, format!("expected a non-negative integer, found {n}"))),
        _ => Err(schema(
            p,
            format!("expected a non-negative integer, found {}", kind_of(v)),
        )),
    }
}

fn as_i64(v: &Value, p: &Path<'_>) -> Result<i64, BirJsonError> {
    match v {
        Value::Number(n) => n
            .as_i64()
            .ok_or_else(|| schema(p, format!("expected an integer in i64 range, found {n}"))),
        _ => Err(schema(
            p,
            format!("expected an integer, found {}", kind_of(v)),
        )),
    }
}

fn int_list<T>(
    v: &Value,
    p: &Path<'_>,
    read: fn(&Value, &Path<'_>) -> Result<T, BirJsonError>,
) -> Result<Vec<T>, BirJsonError> {
    as_array(v, p)?
        .iter()
        .enumerate()
        .map(|(i, x)| read(x, &Path::Index(p, i)))
        .collect()
}

/// An integer or a list of integers (one entry per tile).
fn int_or_list(v: &Value, p: &Path<'_>) -> Result<Vec<i64>, BirJsonError> {
    match v {
        Value::Array(_) => int_list(v, p, as_i64),
        _ => Ok(vec![as_i64(v, p)?]),
    }
}

fn parse_arch(v: &Value, p: &Path<'_>) -> Result<ArchLevel, BirJsonError> {
    let unknown = |what: String| {
        schema(p, format!("unknown arch {what} (expected inferentia|sunda|gen3|core_v4|core_v5 or 10|20|30|40|50)"))
    };
    match v {
        Value::Number(n) => n
            .as_u64()
            .and_then(ArchLevel::from_level)
            .ok_or_else(|| unknown(n.to_string())),
        Value::String(s) => ArchLevel::parse(s).ok_or_else(|| unknown(format!("{s:?}"))),
        _ => Err(schema(
            p,
            format!(
                "expected an arch name or level number, found {}",
                kind_of(v)
            ),
        )),
    }
}

fn parse_engine(v: &Value, p: &Path<'_>) -> Result<EngineType, BirJsonError> {
    let s = as_str(v, p)?;
    EngineType::parse(s).ok_or_else(|| {
        schema(
            p,
            format!("unknown engine {s:?} (expected Unassigned|Pool|Act|PE|DMA|DVE|SP|ALL)"),
        )
    })
}

fn parse_dtype(v: &Value, p: &Path<'_>) -> Result<Dtype, BirJsonError> {
    match v {
        Value::String(s) => {
            Dtype::parse(s).ok_or_else(|| schema(p, format!("unknown dtype {s:?}")))
        }
        Value::Number(n) => n
            .as_u64()
            .and_then(Dtype::from_ordinal)
            .ok_or_else(|| schema(p, format!("unknown dtype ordinal {n} (expected 0..=19)"))),
        _ => Err(schema(
            p,
            format!("expected a dtype name, found {}", kind_of(v)),
        )),
    }
}

fn parse_mem(v: &Value, p: &Path<'_>) -> Result<MemoryType, BirJsonError> {
    let s = as_str(v, p)?;
    MemoryType::parse(s).ok_or_else(|| {
        schema(p, format!("unknown memory type {s:?} (expected SB|PSUM|DRAM|Input|Output|Unallocated|RNGSTATE|REG)"))
    })
}

fn parse_kind(v: &Value, p: &Path<'_>) -> Result<CollectiveKind, BirJsonError> {
    let s = as_str(v, p)?;
    CollectiveKind::parse(s).ok_or_else(|| schema(p, format!("unknown collective kind {s:?}")))
}

// ---------------------------------------------------------------------------------------------
// Objects

/// An object being read: tracks which keys were consumed so leftovers are reported.
struct Obj<'v, 'p> {
    map: &'v Map<String, Value>,
    path: &'p Path<'p>,
    used: Vec<&'static str>,
}

impl<'v, 'p> Obj<'v, 'p> {
    fn new(v: &'v Value, path: &'p Path<'p>) -> Result<Self, BirJsonError> {
        let map = v
            .as_object()
            .ok_or_else(|| schema(path, format!("expected an object, found {}", kind_of(v))))?;
        Ok(Obj {
            map,
            path,
            used: Vec::new(),
        })
    }

    fn get(&mut self, key: &'static str) -> Option<(&'v Value, Path<'p>)> {
        self.used.push(key);
        self.map
            .get(key)
            .filter(|v| !v.is_null())
            .map(|v| (v, Path::Key(self.path, key)))
    }

    fn req(&mut self, key: &'static str) -> Result<(&'v Value, Path<'p>), BirJsonError> {
        let path = self.path;
        self.get(key)
            .ok_or_else(|| schema(path, format!("missing required key {key:?}")))
    }

    fn opt<T>(
        &mut self,
        key: &'static str,
        read: fn(&Value, &Path<'_>) -> Result<T, BirJsonError>,
    ) -> Result<Option<T>, BirJsonError> {
        match self.get(key) {
            Some((v, p)) => read(v, &p).map(Some),
            None => Ok(None),
        }
    }

    fn opt_string(&mut self, key: &'static str) -> Result<Option<String>, BirJsonError> {
        self.opt(key, |v, p| as_str(v, p).map(str::to_string))
    }

    fn opt_object(&mut self, key: &'static str) -> Result<Map<String, Value>, BirJsonError> {
        match self.get(key) {
            Some((Value::Object(m), _)) => Ok(m.clone()),
            Some((v, p)) => Err(schema(
                &p,
                format!("expected an object, found {}", kind_of(v)),
            )),
            None => Ok(Map::new()),
        }
    }

    /// Reject keys nobody read.
    fn finish(self) -> Result<(), BirJsonError> {
        for k in self.map.keys() {
            if !self.used.iter().any(|u| u == k) {
                return Err(schema(
                    &Path::Key(self.path, k),
                    format!("unknown key {k:?}"),
                ));
            }
        }
        Ok(())
    }
}

// ---------------------------------------------------------------------------------------------
// Structure

fn parse_function(v: &Value, p: &Path<'_>) -> Result<Function, BirJsonError> {
    let mut o = Obj::new(v, p)?;
    let name = {
        let (val, vp) = o.req("name")?;
        as_str(val, &vp)?.to_string()
    };
    let attrs = o.opt_object("attrs")?;
    if let Some(flag) = attrs.get(ATTR_SKIP_ENGINE_CHECK) {
        let ap = Path::Key(p, "attrs");
        as_bool(flag, &Path::Key(&ap, ATTR_SKIP_ENGINE_CHECK))?;
    }
    let blocks = match o.get("blocks") {
        Some((val, bp)) => parse_blocks(val, &bp, 0)?,
        None => Vec::new(),
    };
    o.finish()?;
    Ok(Function {
        name,
        attrs,
        blocks,
    })
}

fn parse_blocks(v: &Value, p: &Path<'_>, depth: usize) -> Result<Vec<Block>, BirJsonError> {
    let items = as_array(v, p)?;
    let mut out: Vec<Block> = Vec::with_capacity(items.len());
    for (i, item) in items.iter().enumerate() {
        let ip = Path::Index(p, i);
        let b = parse_block(item, &ip, depth)?;
        if out.iter().any(|o| o.name == b.name) {
            return Err(schema(
                &Path::Key(&ip, "name"),
                format!("duplicate block name {:?}", b.name),
            ));
        }
        out.push(b);
    }
    Ok(out)
}

fn parse_block(v: &Value, p: &Path<'_>, depth: usize) -> Result<Block, BirJsonError> {
    let mut o = Obj::new(v, p)?;
    let name = {
        let (val, vp) = o.req("name")?;
        let s = as_str(val, &vp)?;
        if s.is_empty() || s.contains('/') {
            return Err(schema(
                &vp,
                format!("block name {s:?} must be non-empty and contain no '/'"),
            ));
        }
        s.to_string()
    };
    let dynamic_cfg = o.opt("dynamic_cfg", as_bool)?.unwrap_or(false);
    let instructions = match o.get("instructions") {
        Some((val, ip)) => {
            let items = as_array(val, &ip)?;
            let mut out = Vec::with_capacity(items.len());
            for (i, item) in items.iter().enumerate() {
                out.push(parse_instruction(item, &Path::Index(&ip, i), depth)?);
            }
            out
        }
        None => Vec::new(),
    };
    o.finish()?;
    Ok(Block {
        name,
        dynamic_cfg,
        instructions,
    })
}

fn parse_aps(v: &Value, p: &Path<'_>) -> Result<Vec<AccessPattern>, BirJsonError> {
    as_array(v, p)?
        .iter()
        .enumerate()
        .map(|(i, x)| parse_ap(x, &Path::Index(p, i)))
        .collect()
}

fn parse_ap(v: &Value, p: &Path<'_>) -> Result<AccessPattern, BirJsonError> {
    let mut o = Obj::new(v, p)?;
    let mem = {
        let (val, vp) = o.req("mem")?;
        parse_mem(val, &vp)?
    };
    let buffer = {
        let (val, vp) = o.req("buffer")?;
        as_str(val, &vp)?.to_string()
    };
    let dtype = {
        let (val, vp) = o.req("dtype")?;
        parse_dtype(val, &vp)?
    };
    let start_partition = o.opt("start_partition", as_u64)?.unwrap_or(0);
    let partitions = o.opt("partitions", as_u64)?.unwrap_or(1);
    let pattern = match o.get("pattern") {
        Some((val, pp)) => {
            let dims = as_array(val, &pp)?;
            let mut out = Vec::with_capacity(dims.len());
            for (i, d) in dims.iter().enumerate() {
                let dp = Path::Index(&pp, i);
                let pair = as_array(d, &dp)?;
                if pair.len() != 2 {
                    return Err(schema(
                        &dp,
                        format!("expected [step, num], found {} entries", pair.len()),
                    ));
                }
                let step = as_i64(&pair[0], &Path::Index(&dp, 0))?;
                let num = as_u64(&pair[1], &Path::Index(&dp, 1))?;
                out.push(Dim { step, num });
            }
            out
        }
        None => Vec::new(),
    };
    let offset = o.opt("offset", as_i64)?.unwrap_or(0);
    let indirect = o.opt("indirect", as_bool)?.unwrap_or(false);
    o.finish()?;
    Ok(AccessPattern {
        mem,
        buffer,
        dtype,
        start_partition,
        partitions,
        pattern,
        offset,
        indirect,
    })
}

fn parse_instruction(v: &Value, p: &Path<'_>, depth: usize) -> Result<Instruction, BirJsonError> {
    let mut o = Obj::new(v, p)?;
    let class = {
        let (val, vp) = o.req("op")?;
        let s = as_str(val, &vp)?;
        InstClass::parse(s)
            .ok_or_else(|| schema(&vp, format!("unknown instruction class {s:?}")))?
    };
    let name = o.opt_string("name")?;
    let engine = o
        .opt("engine", parse_engine)?
        .unwrap_or(EngineType::Unassigned);
    let args = match o.get("args") {
        Some((val, ap)) => parse_aps(val, &ap)?,
        None => Vec::new(),
    };
    let outs = match o.get("outs") {
        Some((val, ap)) => parse_aps(val, &ap)?,
        None => Vec::new(),
    };
    let attrs = o.opt_object("attrs")?;
    let fields = match FieldsKind::of(class) {
        FieldsKind::None => ClassFields::None,
        FieldsKind::MatmultMx => ClassFields::MatmultMx(parse_mx_fields(&mut o)?),
        FieldsKind::NkiKernel => ClassFields::NkiKernel(parse_nki_fields(&mut o)?),
        FieldsKind::Collective => ClassFields::Collective(parse_collective_fields(&mut o, class)?),
        FieldsKind::Sb2Sb => ClassFields::Sb2Sb(Sb2SbFields {
            ctx: o.opt("ctx", as_u64)?,
        }),
        FieldsKind::Region => {
            if depth >= MAX_REGION_DEPTH {
                return Err(schema(
                    p,
                    format!("regions nested deeper than {MAX_REGION_DEPTH}"),
                ));
            }
            match o.get("blocks") {
                Some((val, bp)) => ClassFields::Region(parse_blocks(val, &bp, depth + 1)?),
                None => ClassFields::Region(Vec::new()),
            }
        }
    };
    o.finish()?;
    Ok(Instruction {
        name,
        class,
        engine,
        args,
        outs,
        fields,
        attrs,
    })
}

fn parse_mx_fields(o: &mut Obj<'_, '_>) -> Result<MatmultMxFields, BirJsonError> {
    let replication_shift = o.opt("replication_shift", as_i64)?.unwrap_or(0);
    let tiles = match o.get("tiles") {
        Some((val, tp)) => {
            let mut t = Obj::new(val, &tp)?;
            let mut read = |key: &'static str| -> Result<Vec<i64>, BirJsonError> {
                let (v, kp) = t.req(key)?;
                int_or_list(v, &kp)
            };
            let tiles = MxTiles {
                row_pos: read("row_pos")?,
                col_pos: read("col_pos")?,
                row_size: read("row_size")?,
                col_size: read("col_size")?,
            };
            t.finish()?;
            let n = tiles.row_pos.len();
            if tiles.col_pos.len() != n || tiles.row_size.len() != n || tiles.col_size.len() != n {
                return Err(schema(
                    &tp,
                    format!(
                        "row_pos, col_pos, row_size and col_size must have equal lengths (found {}, {}, {}, {})",
                        n,
                        tiles.col_pos.len(),
                        tiles.row_size.len(),
                        tiles.col_size.len()
                    ),
                ));
            }
            Some(tiles)
        }
        None => None,
    };
    Ok(MatmultMxFields {
        replication_shift,
        tiles,
    })
}

fn parse_nki_fields(o: &mut Obj<'_, '_>) -> Result<NkiKernelFields, BirJsonError> {
    Ok(NkiKernelFields {
        func: o.opt_string("func")?,
        sb_num_partitions: o.opt("sb_num_partitions", as_i64)?.unwrap_or(0),
        sb_per_partition_size: o.opt("sb_per_partition_size", as_i64)?.unwrap_or(0),
        psum_bank_count: o.opt("psum_bank_count", as_i64)?.unwrap_or(0),
        psum_num_partitions: o.opt("psum_num_partitions", as_i64)?.unwrap_or(0),
        num_sb_buffers: o.opt("num_sb_buffers", as_i64)?.unwrap_or(0),
        num_psum_buffers: o.opt("num_psum_buffers", as_i64)?.unwrap_or(0),
    })
}

fn parse_collective_fields(
    o: &mut Obj<'_, '_>,
    class: InstClass,
) -> Result<CollectiveFields, BirJsonError> {
    let path = o.path;
    let kind_field = o.opt("kind", parse_kind)?;
    let kind = match (class.coarse_collective_kind(), kind_field) {
        (Some(implied), Some(k)) if k != implied => {
            return Err(schema(
                &Path::Key(path, "kind"),
                format!("kind {k} contradicts the class {class}, which implies {implied}"),
            ))
        }
        (Some(implied), _) => Some(implied),
        (None, None) if class == InstClass::CollectiveCompute => {
            return Err(schema(
                path,
                "missing required key \"kind\" (CollectiveCompute needs a collective kind)",
            ))
        }
        (None, k) => k,
    };
    Ok(CollectiveFields {
        kind,
        replica_groups_shape: o.opt("replica_groups_shape", |v, p| int_list(v, p, as_u64))?,
        recv_from_rank: o.opt("recv_from_rank", |v, p| int_list(v, p, as_i64))?,
        sb_scratchpad: o.opt("sb_scratchpad", as_bool)?.unwrap_or(false),
        is_local: o.opt("is_local", as_bool)?.unwrap_or(false),
    })
}

// ---------------------------------------------------------------------------------------------
// Export

fn function_json(f: &Function) -> Value {
    let mut o = Map::new();
    o.insert("name".into(), f.name.clone().into());
    if !f.attrs.is_empty() {
        o.insert("attrs".into(), Value::Object(f.attrs.clone()));
    }
    o.insert("blocks".into(), blocks_json(&f.blocks));
    Value::Object(o)
}

fn blocks_json(blocks: &[Block]) -> Value {
    Value::Array(
        blocks
            .iter()
            .map(|b| {
                let mut o = Map::new();
                o.insert("name".into(), b.name.clone().into());
                o.insert("dynamic_cfg".into(), b.dynamic_cfg.into());
                o.insert(
                    "instructions".into(),
                    Value::Array(b.instructions.iter().map(instruction_json).collect()),
                );
                Value::Object(o)
            })
            .collect(),
    )
}

fn ap_json(ap: &AccessPattern) -> Value {
    let mut o = Map::new();
    o.insert("mem".into(), ap.mem.name().into());
    o.insert("buffer".into(), ap.buffer.clone().into());
    o.insert("dtype".into(), ap.dtype.name().into());
    o.insert("start_partition".into(), ap.start_partition.into());
    o.insert("partitions".into(), ap.partitions.into());
    o.insert(
        "pattern".into(),
        Value::Array(
            ap.pattern
                .iter()
                .map(|d| Value::Array(vec![d.step.into(), d.num.into()]))
                .collect(),
        ),
    );
    o.insert("offset".into(), ap.offset.into());
    if ap.indirect {
        o.insert("indirect".into(), true.into());
    }
    Value::Object(o)
}

fn instruction_json(i: &Instruction) -> Value {
    let mut o = Map::new();
    o.insert("op".into(), i.class.name().into());
    if let Some(n) = &i.name {
        o.insert("name".into(), n.clone().into());
    }
    o.insert("engine".into(), i.engine.name().into());
    o.insert(
        "args".into(),
        Value::Array(i.args.iter().map(ap_json).collect()),
    );
    o.insert(
        "outs".into(),
        Value::Array(i.outs.iter().map(ap_json).collect()),
    );
    match &i.fields {
        ClassFields::None => {}
        ClassFields::MatmultMx(f) => {
            o.insert("replication_shift".into(), f.replication_shift.into());
            if let Some(t) = &f.tiles {
                o.insert(
                    "tiles".into(),
                    serde_json::json!({
                        "row_pos": t.row_pos, "col_pos": t.col_pos,
                        "row_size": t.row_size, "col_size": t.col_size,
                    }),
                );
            }
        }
        ClassFields::NkiKernel(f) => {
            if let Some(func) = &f.func {
                o.insert("func".into(), func.clone().into());
            }
            for (k, v) in [
                ("sb_num_partitions", f.sb_num_partitions),
                ("sb_per_partition_size", f.sb_per_partition_size),
                ("psum_bank_count", f.psum_bank_count),
                ("psum_num_partitions", f.psum_num_partitions),
                ("num_sb_buffers", f.num_sb_buffers),
                ("num_psum_buffers", f.num_psum_buffers),
            ] {
                o.insert(k.into(), v.into());
            }
        }
        ClassFields::Collective(f) => {
            if let Some(k) = f.kind {
                o.insert("kind".into(), k.name().into());
            }
            if let Some(s) = &f.replica_groups_shape {
                o.insert("replica_groups_shape".into(), s.clone().into());
            }
            if let Some(r) = &f.recv_from_rank {
                o.insert("recv_from_rank".into(), r.clone().into());
            }
            o.insert("sb_scratchpad".into(), f.sb_scratchpad.into());
            o.insert("is_local".into(), f.is_local.into());
        }
        ClassFields::Sb2Sb(f) => {
            if let Some(c) = f.ctx {
                o.insert("ctx".into(), c.into());
            }
        }
        ClassFields::Region(blocks) => {
            o.insert("blocks".into(), blocks_json(blocks));
        }
    }
    if !i.attrs.is_empty() {
        o.insert("attrs".into(), Value::Object(i.attrs.clone()));
    }
    Value::Object(o)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn sample() -> Value {
        json!({
            "name": "k",
            "arch": "core_v4",
            "functions": [{
                "name": "main",
                "attrs": {"skip_engine_check": false, "note": "x"},
                "blocks": [{
                    "name": "bb0",
                    "dynamic_cfg": false,
                    "instructions": [
                        {"op": "MatmultMx", "name": "mm", "engine": "PE",
                         "args": [{"mem": "SB", "buffer": "a", "dtype": "float8_e4m3fn_x4",
                                   "start_partition": 0, "partitions": 128, "pattern": [[1, 32]], "offset": 0}],
                         "outs": [{"mem": "PSUM", "buffer": "o", "dtype": "float32", "partitions": 32,
                                   "pattern": [[1, 32]]}],
                         "replication_shift": 0,
                         "tiles": {"row_pos": 0, "col_pos": [-1], "row_size": [128], "col_size": [-1]}},
                        {"op": "NKIKernel", "engine": "Unassigned", "func": "main",
                         "sb_num_partitions": 128, "sb_per_partition_size": 64, "psum_bank_count": 2,
                         "psum_num_partitions": 128, "num_sb_buffers": 1, "num_psum_buffers": 1},
                        {"op": "CollectiveCompute", "kind": "AllGather", "replica_groups_shape": [1, 4]},
                        {"op": "AllToAllV"},
                        {"op": "GPSIMDSB2SB", "engine": "Pool", "ctx": 2},
                        {"op": "DynamicForLoop", "engine": "ALL", "blocks": [
                            {"name": "body", "instructions": [
                                {"op": "TensorTensor", "engine": "DVE", "attrs": {"alu": "add"}}
                            ]}
                        ]}
                    ]
                }]
            }]
        })
    }

    #[test]
    fn round_trip() {
        let m = from_json_value(&sample()).unwrap();
        assert_eq!(m.arch, ArchLevel::CoreV4);
        assert_eq!(m.instruction_count(), 7);
        let back = from_json_value(&to_json_value(&m)).unwrap();
        assert_eq!(back, m);
        let text = to_json_string(&m);
        assert_eq!(from_json_str(&text).unwrap(), m);
        let mx = m.functions[0].blocks[0].instructions[0]
            .matmult_mx()
            .unwrap();
        assert_eq!(mx.tiles.as_ref().unwrap().row_pos, vec![0]);
        let aa = &m.functions[0].blocks[0].instructions[3];
        assert_eq!(aa.collective_kind(), Some(CollectiveKind::AllToAllV));
    }

    #[test]
    fn arch_by_number() {
        let mut v = sample();
        v["arch"] = json!(20);
        assert_eq!(from_json_value(&v).unwrap().arch, ArchLevel::Sunda);
        v["arch"] = json!(21);
        let e = from_json_value(&v).unwrap_err().to_string();
        assert!(e.starts_with("arch: unknown arch 21"), "{e}");
    }

    fn err_of(v: &Value) -> String {
        from_json_value(v).unwrap_err().to_string()
    }

    #[test]
    fn errors_name_the_path() {
        let mut v = sample();
        v["functions"][0]["blocks"][0]["instructions"][0]["args"][0]["dtype"] = json!("float9");
        assert_eq!(
            err_of(&v),
            "functions[0].blocks[0].instructions[0].args[0].dtype: unknown dtype \"float9\""
        );

        let mut v = sample();
        v["functions"][0]["blocks"][0]["instructions"][1]["psum_bank_cnt"] = json!(1);
        assert_eq!(
            err_of(&v),
            "functions[0].blocks[0].instructions[1].psum_bank_cnt: unknown key \"psum_bank_cnt\""
        );

        let mut v = sample();
        v["functions"][0]["blocks"][0]["instructions"][0]["args"][0]["pattern"][0] = json!([1]);
        assert_eq!(
            err_of(&v),
            "functions[0].blocks[0].instructions[0].args[0].pattern[0]: expected [step, num], found 1 entries"
        );

        let mut v = sample();
        v["functions"][0]["blocks"][0]["instructions"][2]
            .as_object_mut()
            .unwrap()
            .remove("kind");
        assert!(err_of(&v)
            .starts_with("functions[0].blocks[0].instructions[2]: missing required key \"kind\""));

        let mut v = sample();
        v["functions"][0]["blocks"][0]["instructions"][3]["kind"] = json!("AllGather");
        assert!(err_of(&v).contains("contradicts the class AllToAllV"));

        let mut v = sample();
        v["functions"][0]["blocks"][0]["instructions"][0]["tiles"]["col_size"] = json!([1, 2]);
        assert!(err_of(&v)
            .starts_with("functions[0].blocks[0].instructions[0].tiles: row_pos, col_pos"));

        let mut v = sample();
        v["functions"][0]["blocks"][0]["instructions"][5]["blocks"][0]["instructions"][0]
            ["engine"] = json!("GPU");
        assert!(err_of(&v).starts_with(
            "functions[0].blocks[0].instructions[5].blocks[0].instructions[0].engine: unknown engine \"GPU\""
        ));

        let mut v = sample();
        v["functions"][0]["attrs"]["skip_engine_check"] = json!(1);
        assert_eq!(
            err_of(&v),
            "functions[0].attrs.skip_engine_check: expected a boolean, found a number"
        );

        let mut v = sample();
        v["functions"][0]["blocks"][0]["instructions"][0]["args"][0]["partitions"] = json!(-1);
        assert!(err_of(&v).contains("args[0].partitions: expected a non-negative integer"));

        let mut v = sample();
        v["functions"][0]["blocks"][0]["instructions"][0]["op"] = json!("Matmul");
        assert_eq!(
            err_of(&v),
            "functions[0].blocks[0].instructions[0].op: unknown instruction class \"Matmul\""
        );

        assert_eq!(err_of(&json!([])), "$: expected an object, found an array");
        assert_eq!(
            err_of(&json!({"arch": 40})),
            "$: missing required key \"functions\""
        );
    }

    #[test]
    fn duplicates_rejected() {
        let mut v = sample();
        let f = v["functions"][0].clone();
        v["functions"].as_array_mut().unwrap().push(f);
        assert_eq!(
            err_of(&v),
            "functions[1].name: duplicate function name \"main\""
        );
    }

    #[test]
    fn syntax_error_has_position() {
        let e = from_json_str("{\n  \"arch\": 40,\n  oops }").unwrap_err();
        assert!(matches!(e, BirJsonError::Syntax { line: 3, .. }), "{e}");
    }

    fn nested(regions: usize) -> String {
        let mut inner = json!({"op": "Loop", "blocks": []});
        for _ in 1..regions {
            inner = json!({"op": "Loop", "blocks": [{"name": "b", "instructions": [inner]}]});
        }
        let v = json!({"arch": 40, "functions": [{"name": "f", "blocks": [{"name": "b", "instructions": [inner]}]}]});
        v.to_string()
    }

    #[test]
    fn the_documented_region_depth_is_the_real_one() {
        // Serde's default recursion limit (128 levels) would stop at about 29 regions.
        from_json_str(&nested(MAX_REGION_DEPTH)).unwrap();
        let e = from_json_str(&nested(MAX_REGION_DEPTH + 1)).unwrap_err();
        assert!(
            e.to_string().contains("regions nested deeper than 64"),
            "{e}"
        );
        let e = from_json_str(&"[".repeat(100_000)).unwrap_err();
        assert!(e.to_string().contains("nested deeper than"), "{e}");
    }

    #[test]
    fn duplicate_keys_are_refused() {
        let e = from_json_str(r#"{"arch": 40, "arch": 30, "functions": []}"#).unwrap_err();
        assert!(e.to_string().contains("duplicate key \"arch\""), "{e}");
        assert!(from_json_str(r#"{"arch": 40, "functions": []} x"#).is_err());
    }

    #[test]
    fn deep_regions_rejected_not_overflowed() {
        let mut inner = json!({"op": "Loop", "blocks": []});
        for _ in 0..(MAX_REGION_DEPTH + 2) {
            inner = json!({"op": "Loop", "blocks": [{"name": "b", "instructions": [inner]}]});
        }
        let v = json!({"arch": 40, "functions": [{"name": "f", "blocks": [{"name": "b", "instructions": [inner]}]}]});
        assert!(err_of(&v).contains("regions nested deeper than"));
    }
}
