//! BIR JSON import: the text parsed into a strict [`Value`], the value deserialized with the
//! schema's own error words and the JSON path, the instruction's class-dependent form, and the
//! rules across objects checked on the model.

use std::fmt::{self, Display};

use serde::de::{self, DeserializeSeed, Deserializer, IntoDeserializer, Unexpected, Visitor};
use serde::Deserialize;
use serde_json::{Map, Value};

use super::{by_name, or_default, BirJsonError, MAX_JSON_DEPTH, MAX_REGION_DEPTH};
use crate::bir::model::{
    AccessPattern, Block, ClassFields, CollectiveFields, FieldsKind, Instruction, MatmultMxFields,
    Module, MxTiles, NkiKernelFields, Sb2SbFields, ATTR_SKIP_ENGINE_CHECK,
};
use crate::bir::{CollectiveKind, EngineType, InstClass};

/// Parse a BIR JSON document. Duplicate object keys are refused (JSON leaves their meaning
/// open), and so is nesting deeper than [`MAX_JSON_DEPTH`].
pub fn from_json_str(text: &str) -> Result<Module, BirJsonError> {
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

/// Read a module from a parsed JSON value.
pub fn from_json_value(v: &Value) -> Result<Module, BirJsonError> {
    if depth_of(v) > MAX_JSON_DEPTH {
        return Err(schema(
            &Path::Root,
            format!("nested deeper than {MAX_JSON_DEPTH} levels"),
        ));
    }
    // The root's required keys are named before any of its values is read.
    if let Value::Object(root) = v {
        for key in ["arch", "functions"] {
            if root.get(key).is_none_or(Value::is_null) {
                return Err(schema(&Path::Root, format!("missing required key {key:?}")));
            }
        }
    }
    let module: Module = serde_path_to_error::deserialize(ValueDe(v)).map_err(|e| {
        let path = e.path().to_string();
        BirJsonError::Schema {
            path: if path == "." { "$".into() } else { path },
            message: e.into_inner().0,
        }
    })?;
    check_module(&module)?;
    Ok(module)
}

// ---------------------------------------------------------------------------------------------
// Text → Value

/// Builds a [`Value`], refusing duplicate keys and nesting deeper than [`MAX_JSON_DEPTH`].
struct Strict {
    depth: usize,
}

impl Strict {
    fn enter<E: de::Error>(&self) -> Result<Strict, E> {
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

impl<'de> DeserializeSeed<'de> for Strict {
    type Value = Value;

    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Value, D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for Strict {
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

    fn visit_seq<A: de::SeqAccess<'de>>(self, mut seq: A) -> Result<Value, A::Error> {
        let inner = self.enter()?;
        let mut v = Vec::new();
        while let Some(x) = seq.next_element_seed(Strict { depth: inner.depth })? {
            v.push(x);
        }
        Ok(Value::Array(v))
    }

    fn visit_map<A: de::MapAccess<'de>>(self, mut map: A) -> Result<Value, A::Error> {
        let inner = self.enter()?;
        let mut m = Map::new();
        while let Some(k) = map.next_key::<String>()? {
            if m.contains_key(&k) {
                return Err(de::Error::custom(format!(
                    "duplicate key {k:?} in one object"
                )));
            }
            let x = map.next_value_seed(Strict { depth: inner.depth })?;
            m.insert(k, x);
        }
        Ok(Value::Object(m))
    }
}

/// Nesting depth of a value (a scalar is 0), without recursion.
fn depth_of(v: &Value) -> usize {
    let mut deepest = 0;
    let mut stack = vec![(v, 0usize)];
    while let Some((v, d)) = stack.pop() {
        if !(v.is_array() || v.is_object()) {
            continue;
        }
        deepest = deepest.max(d + 1);
        if d < MAX_JSON_DEPTH {
            match v {
                Value::Array(a) => stack.extend(a.iter().map(|c| (c, d + 1))),
                Value::Object(m) => stack.extend(m.values().map(|c| (c, d + 1))),
                _ => {}
            }
        }
    }
    deepest
}

// ---------------------------------------------------------------------------------------------
// Value → model: the deserializer and its error

/// A schema error message (the path is tracked by `serde_path_to_error`).
#[derive(Debug)]
pub(super) struct DeError(String);

impl Display for DeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for DeError {}

/// The schema's word for what a serde visitor expects.
fn expected(exp: &dyn de::Expected) -> String {
    let s = exp.to_string();
    match s.as_str() {
        "a sequence" => "an array".into(),
        "a map" => "an object".into(),
        "u64" => "a non-negative integer".into(),
        "i64" => "an integer".into(),
        _ if s.starts_with("struct ") => "an object".into(),
        _ => s,
    }
}

/// The schema's word for the kind of a value found.
fn found(u: &Unexpected<'_>) -> &'static str {
    match u {
        Unexpected::Bool(_) => "a boolean",
        Unexpected::Unsigned(_) | Unexpected::Signed(_) | Unexpected::Float(_) => "a number",
        Unexpected::Str(_) | Unexpected::Char(_) => "a string",
        Unexpected::Seq => "an array",
        Unexpected::Map => "an object",
        Unexpected::Unit | Unexpected::Option => "null",
        _ => "another value",
    }
}

impl de::Error for DeError {
    fn custom<T: Display>(msg: T) -> Self {
        DeError(msg.to_string())
    }

    fn invalid_type(u: Unexpected<'_>, exp: &dyn de::Expected) -> Self {
        DeError(format!("expected {}, found {}", expected(exp), found(&u)))
    }

    fn invalid_value(u: Unexpected<'_>, exp: &dyn de::Expected) -> Self {
        let value = match u {
            Unexpected::Unsigned(n) => n.to_string(),
            Unexpected::Signed(n) => n.to_string(),
            Unexpected::Float(n) => n.to_string(),
            Unexpected::Str(s) => format!("{s:?}"),
            other => found(&other).into(),
        };
        DeError(format!("expected {}, found {value}", expected(exp)))
    }

    fn invalid_length(len: usize, exp: &dyn de::Expected) -> Self {
        DeError(format!("expected {}, found {len} entries", expected(exp)))
    }

    fn unknown_field(field: &str, _: &'static [&'static str]) -> Self {
        DeError(format!("unknown key {field:?}"))
    }

    fn missing_field(field: &'static str) -> Self {
        DeError(format!("missing required key {field:?}"))
    }

    fn duplicate_field(field: &'static str) -> Self {
        DeError(format!("duplicate key {field:?} in one object"))
    }
}

/// Deserializes from a borrowed [`Value`] with [`DeError`]s. Unlike `serde_json`'s own
/// deserializer it refuses an array where an object is expected (derived structs would
/// otherwise accept their fields positionally).
#[derive(Clone, Copy)]
struct ValueDe<'a>(&'a Value);

impl<'de> IntoDeserializer<'de, DeError> for ValueDe<'de> {
    type Deserializer = Self;

    fn into_deserializer(self) -> Self {
        self
    }
}

impl<'de> Deserializer<'de> for ValueDe<'de> {
    type Error = DeError;

    fn deserialize_any<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, DeError> {
        match self.0 {
            Value::Null => visitor.visit_unit(),
            Value::Bool(b) => visitor.visit_bool(*b),
            Value::Number(n) => match (n.as_u64(), n.as_i64()) {
                (Some(u), _) => visitor.visit_u64(u),
                (None, Some(i)) => visitor.visit_i64(i),
                _ => visitor.visit_f64(n.as_f64().unwrap_or(f64::NAN)),
            },
            Value::String(s) => visitor.visit_borrowed_str(s),
            Value::Array(a) => {
                let mut seq = de::value::SeqDeserializer::new(a.iter().map(ValueDe));
                let v = visitor.visit_seq(&mut seq)?;
                seq.end()?;
                Ok(v)
            }
            Value::Object(m) => {
                let mut map = de::value::MapDeserializer::new(
                    m.iter().map(|(k, v)| (k.as_str(), ValueDe(v))),
                );
                let v = visitor.visit_map(&mut map)?;
                map.end()?;
                Ok(v)
            }
        }
    }

    fn deserialize_option<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, DeError> {
        match self.0 {
            Value::Null => visitor.visit_none(),
            _ => visitor.visit_some(self),
        }
    }

    fn deserialize_struct<V: Visitor<'de>>(
        self,
        _name: &'static str,
        _fields: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value, DeError> {
        match self.0 {
            Value::Object(_) => self.deserialize_any(visitor),
            Value::Array(_) => Err(de::Error::invalid_type(Unexpected::Seq, &visitor)),
            _ => self.deserialize_any(visitor),
        }
    }

    fn deserialize_newtype_struct<V: Visitor<'de>>(
        self,
        _name: &'static str,
        visitor: V,
    ) -> Result<V::Value, DeError> {
        visitor.visit_newtype_struct(self)
    }

    serde::forward_to_deserialize_any! {
        bool i8 i16 i32 i64 i128 u8 u16 u32 u64 u128 f32 f64 char str string
        bytes byte_buf unit unit_struct seq tuple tuple_struct map enum identifier ignored_any
    }
}

/// An integer or a list of integers (one entry per tile).
fn int_or_list<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<i64>, D::Error> {
    struct V;
    impl<'de> Visitor<'de> for V {
        type Value = Vec<i64>;
        fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            f.write_str("an integer or an array of integers")
        }
        fn visit_u64<E: de::Error>(self, n: u64) -> Result<Vec<i64>, E> {
            i64::try_from(n)
                .map(|n| vec![n])
                .map_err(|_| de::Error::invalid_value(Unexpected::Unsigned(n), &"i64"))
        }
        fn visit_i64<E: de::Error>(self, n: i64) -> Result<Vec<i64>, E> {
            Ok(vec![n])
        }
        fn visit_seq<A: de::SeqAccess<'de>>(self, mut seq: A) -> Result<Vec<i64>, A::Error> {
            let mut out = Vec::new();
            while let Some(x) = seq.next_element::<i64>()? {
                out.push(x);
            }
            Ok(out)
        }
    }
    d.deserialize_any(V)
}

/// The JSON form of [`MxTiles`]: each entry an integer or a list; the four lists must have
/// equal lengths.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(in crate::bir) struct TilesJson {
    #[serde(deserialize_with = "int_or_list")]
    row_pos: Vec<i64>,
    #[serde(deserialize_with = "int_or_list")]
    col_pos: Vec<i64>,
    #[serde(deserialize_with = "int_or_list")]
    row_size: Vec<i64>,
    #[serde(deserialize_with = "int_or_list")]
    col_size: Vec<i64>,
}

/// Why a JSON object that matches its form does not convert to the model.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub(in crate::bir) enum ConvertError {
    /// The four tile lists of a `tiles` object differ in length.
    #[error("row_pos, col_pos, row_size and col_size must have equal lengths (found {row_pos}, {col_pos}, {row_size}, {col_size})")]
    TileLengths {
        /// Entries of `row_pos`.
        row_pos: usize,
        /// Entries of `col_pos`.
        col_pos: usize,
        /// Entries of `row_size`.
        row_size: usize,
        /// Entries of `col_size`.
        col_size: usize,
    },
    /// A class field of another class.
    #[error("unknown key {key:?} (not a field of {class})")]
    ForeignField {
        /// The key.
        key: &'static str,
        /// The instruction's class.
        class: InstClass,
    },
    /// A collective kind other than the one the class implies.
    #[error("kind {kind} contradicts the class {class}, which implies {implied}")]
    KindContradictsClass {
        /// The kind given.
        kind: CollectiveKind,
        /// The instruction's class.
        class: InstClass,
        /// The kind the class implies.
        implied: CollectiveKind,
    },
    /// A `CollectiveCompute` without its kind.
    #[error("missing required key \"kind\" (CollectiveCompute needs a collective kind)")]
    MissingCollectiveKind,
}

impl TryFrom<TilesJson> for MxTiles {
    type Error = ConvertError;

    fn try_from(t: TilesJson) -> Result<MxTiles, ConvertError> {
        let n = t.row_pos.len();
        if t.col_pos.len() != n || t.row_size.len() != n || t.col_size.len() != n {
            return Err(ConvertError::TileLengths {
                row_pos: n,
                col_pos: t.col_pos.len(),
                row_size: t.row_size.len(),
                col_size: t.col_size.len(),
            });
        }
        Ok(MxTiles {
            row_pos: t.row_pos,
            col_pos: t.col_pos,
            row_size: t.row_size,
            col_size: t.col_size,
        })
    }
}
// ---------------------------------------------------------------------------------------------
// Instructions: the class decides which class fields the object may carry

/// The JSON form of an [`Instruction`] as read: every class field is optional here; which
/// ones the class allows is checked when converting.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct InstructionIn {
    #[serde(with = "by_name")]
    op: InstClass,
    name: Option<String>,
    #[serde(default, with = "by_name::opt")]
    engine: Option<EngineType>,
    #[serde(default, deserialize_with = "or_default")]
    args: Vec<AccessPattern>,
    #[serde(default, deserialize_with = "or_default")]
    outs: Vec<AccessPattern>,
    #[serde(default, deserialize_with = "or_default")]
    attrs: Map<String, Value>,
    // MatmultMx
    replication_shift: Option<i64>,
    tiles: Option<MxTiles>,
    // NKIKernel
    func: Option<String>,
    sb_num_partitions: Option<i64>,
    sb_per_partition_size: Option<i64>,
    psum_bank_count: Option<i64>,
    psum_num_partitions: Option<i64>,
    num_sb_buffers: Option<i64>,
    num_psum_buffers: Option<i64>,
    // Collectives
    #[serde(default, with = "by_name::opt")]
    kind: Option<CollectiveKind>,
    replica_groups_shape: Option<Vec<u64>>,
    recv_from_rank: Option<Vec<i64>>,
    sb_scratchpad: Option<bool>,
    is_local: Option<bool>,
    // GPSIMDSB2SB
    ctx: Option<u64>,
    // Regions
    blocks: Option<Vec<Block>>,
}

impl InstructionIn {
    /// The class fields present, by key, with the fields kind that owns each.
    fn present(&self) -> Vec<(&'static str, bool, FieldsKind)> {
        macro_rules! present {
            ($($kind:ident: $($key:ident),*;)*) => {
                vec![$($((stringify!($key), self.$key.is_some(), FieldsKind::$kind)),*),*]
            };
        }
        present! {
            MatmultMx: replication_shift, tiles;
            NkiKernel: func, sb_num_partitions, sb_per_partition_size, psum_bank_count,
                psum_num_partitions, num_sb_buffers, num_psum_buffers;
            Collective: kind, replica_groups_shape, recv_from_rank, sb_scratchpad, is_local;
            Sb2Sb: ctx;
            Region: blocks;
        }
    }
}

impl TryFrom<InstructionIn> for Instruction {
    type Error = ConvertError;

    fn try_from(i: InstructionIn) -> Result<Instruction, ConvertError> {
        let class = i.op;
        let kind = FieldsKind::of(class);
        if let Some((key, ..)) = i.present().into_iter().find(|&(_, on, k)| on && k != kind) {
            return Err(ConvertError::ForeignField { key, class });
        }
        let fields = match kind {
            FieldsKind::None => ClassFields::None,
            FieldsKind::MatmultMx => ClassFields::MatmultMx(MatmultMxFields {
                replication_shift: i.replication_shift.unwrap_or(0),
                tiles: i.tiles,
            }),
            FieldsKind::NkiKernel => ClassFields::NkiKernel(NkiKernelFields {
                func: i.func,
                sb_num_partitions: i.sb_num_partitions.unwrap_or(0),
                sb_per_partition_size: i.sb_per_partition_size.unwrap_or(0),
                psum_bank_count: i.psum_bank_count.unwrap_or(0),
                psum_num_partitions: i.psum_num_partitions.unwrap_or(0),
                num_sb_buffers: i.num_sb_buffers.unwrap_or(0),
                num_psum_buffers: i.num_psum_buffers.unwrap_or(0),
            }),
            FieldsKind::Collective => {
                let kind = match (class.coarse_collective_kind(), i.kind) {
                    (Some(implied), Some(k)) if k != implied => {
                        return Err(ConvertError::KindContradictsClass {
                            kind: k,
                            class,
                            implied,
                        })
                    }
                    (Some(implied), _) => Some(implied),
                    (None, None) if class == InstClass::CollectiveCompute => {
                        return Err(ConvertError::MissingCollectiveKind)
                    }
                    (None, k) => k,
                };
                ClassFields::Collective(CollectiveFields {
                    kind,
                    replica_groups_shape: i.replica_groups_shape,
                    recv_from_rank: i.recv_from_rank,
                    sb_scratchpad: i.sb_scratchpad.unwrap_or(false),
                    is_local: i.is_local.unwrap_or(false),
                })
            }
            FieldsKind::Sb2Sb => ClassFields::Sb2Sb(Sb2SbFields { ctx: i.ctx }),
            FieldsKind::Region => ClassFields::Region(i.blocks.unwrap_or_default()),
        };
        Ok(Instruction {
            name: i.name,
            class,
            engine: i.engine.unwrap_or(EngineType::Unassigned),
            args: i.args,
            outs: i.outs,
            fields,
            attrs: i.attrs,
        })
    }
}

impl<'de> Deserialize<'de> for Instruction {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Instruction, D::Error> {
        Instruction::try_from(InstructionIn::deserialize(d)?).map_err(de::Error::custom)
    }
}

// ---------------------------------------------------------------------------------------------
// Rules across objects, checked on the model

/// A JSON path, built on the stack as the check descends and rendered only for errors.
#[derive(Clone, Copy)]
enum Path<'a> {
    Root,
    Key(&'a Path<'a>, &'a str),
    Index(&'a Path<'a>, usize),
}

impl Display for Path<'_> {
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

/// Unique function names, `skip_engine_check` a boolean, then every function's blocks.
fn check_module(m: &Module) -> Result<(), BirJsonError> {
    let fp = Path::Key(&Path::Root, "functions");
    for (i, f) in m.functions.iter().enumerate() {
        let p = Path::Index(&fp, i);
        if m.functions[..i].iter().any(|g| g.name == f.name) {
            return Err(schema(
                &Path::Key(&p, "name"),
                format!("duplicate function name {:?}", f.name),
            ));
        }
        if let Some(flag) = f.attrs.get(ATTR_SKIP_ENGINE_CHECK) {
            if !flag.is_boolean() {
                let ap = Path::Key(&p, "attrs");
                return Err(schema(
                    &Path::Key(&ap, ATTR_SKIP_ENGINE_CHECK),
                    format!("expected a boolean, found {}", kind_of(flag)),
                ));
            }
        }
        check_blocks(&f.blocks, &Path::Key(&p, "blocks"), 0)?;
    }
    Ok(())
}

/// Unique block names among siblings; regions nested at most [`MAX_REGION_DEPTH`] deep.
fn check_blocks(blocks: &[Block], p: &Path<'_>, depth: usize) -> Result<(), BirJsonError> {
    for (i, b) in blocks.iter().enumerate() {
        let bp = Path::Index(p, i);
        if blocks[..i].iter().any(|o| o.name == b.name) {
            return Err(schema(
                &Path::Key(&bp, "name"),
                format!("duplicate block name {:?}", b.name),
            ));
        }
        let ip = Path::Key(&bp, "instructions");
        for (k, inst) in b.instructions.iter().enumerate() {
            if let ClassFields::Region(body) = &inst.fields {
                let kp = Path::Index(&ip, k);
                if depth >= MAX_REGION_DEPTH {
                    return Err(schema(
                        &kp,
                        format!("regions nested deeper than {MAX_REGION_DEPTH}"),
                    ));
                }
                check_blocks(body, &Path::Key(&kp, "blocks"), depth + 1)?;
            }
        }
    }
    Ok(())
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
