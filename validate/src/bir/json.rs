//! BIR JSON import and export (`docs/bir-json.md`), through serde.
//!
//! The model types derive `Serialize` / `Deserialize` (`bir/model.rs`); this module holds the
//! field helpers they name (canonical spellings, aliases, dtype names or ordinals, `null` as
//! absent), the instruction's class-dependent form, and the two ends:
//!
//! - **Import**: the text is parsed into a `serde_json::Value` that refuses duplicate keys and
//!   nesting deeper than [`MAX_JSON_DEPTH`]; the value is then deserialized through a small
//!   deserializer whose error type speaks the schema's words (`missing required key`, `unknown
//!   key`, `expected an array, found a number`), with `serde_path_to_error` tracking the JSON
//!   path of the fault (`functions[0].blocks[2].instructions[5].args[1].dtype: unknown dtype
//!   "float9"`). Rules that span several objects (unique names, region depth) are checked on
//!   the model afterwards, with the same paths. No input can panic.
//! - **Export**: the model serializes to a `Value` (keys sorted) and is pretty-printed;
//!   `import(export(m)) == m`.

use std::fmt::{self, Display};

use serde::de::{self, DeserializeSeed, Deserializer, IntoDeserializer, Unexpected, Visitor};
use serde::{Deserialize, Serialize, Serializer};
use serde_json::{Map, Value};

use super::model::{
    AccessPattern, Block, ClassFields, CollectiveFields, Dim, FieldsKind, Instruction,
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

/// Maximum region nesting depth accepted on import (deeper input is rejected).
pub const MAX_REGION_DEPTH: usize = 64;

/// Maximum JSON nesting depth accepted on import: room for [`MAX_REGION_DEPTH`] regions (four
/// JSON levels each: instruction, `blocks`, block, `instructions`) and the levels around them.
pub const MAX_JSON_DEPTH: usize = 4 * (MAX_REGION_DEPTH + 2) + 32;

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

/// The canonical JSON value of a module.
pub fn to_json_value(m: &Module) -> Value {
    serde_json::to_value(m).unwrap_or(Value::Null)
}

/// The canonical JSON text of a module (pretty-printed, trailing newline).
pub fn to_json_string(m: &Module) -> String {
    let mut s = serde_json::to_string_pretty(&to_json_value(m)).unwrap_or_default();
    s.push('\n');
    s
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

// ---------------------------------------------------------------------------------------------
// Field helpers named by the model's serde attributes

/// `null` counts as absent: an optional field reads its default from either.
pub(super) fn or_default<'de, D, T>(d: D) -> Result<T, D::Error>
where
    D: Deserializer<'de>,
    T: Deserialize<'de> + Default,
{
    Ok(Option::<T>::deserialize(d)?.unwrap_or_default())
}

/// Default partition count of an access pattern.
pub(super) fn one() -> u64 {
    1
}

/// [`or_default`] for a partition count (default 1).
pub(super) fn or_one<'de, D: Deserializer<'de>>(d: D) -> Result<u64, D::Error> {
    Ok(Option::<u64>::deserialize(d)?.unwrap_or(1))
}

pub(super) fn is_false(b: &bool) -> bool {
    !*b
}

/// An enumeration spelled by name in BIR JSON.
pub(super) trait Named: Sized + Copy {
    /// What the enumeration is called in messages (`engine`).
    const WHAT: &'static str;
    /// The accepted spellings, for messages.
    const CHOICES: &'static str;
    /// Parse one spelling.
    fn parse_name(s: &str) -> Option<Self>;
    /// The canonical spelling.
    fn canonical(self) -> &'static str;
}

/// [`Named`] through the type's own `parse` / `name`.
macro_rules! named {
    ($($t:ty: $what:literal, $choices:literal;)*) => {$(
        impl Named for $t {
            const WHAT: &'static str = $what;
            const CHOICES: &'static str = $choices;
            fn parse_name(s: &str) -> Option<Self> {
                <$t>::parse(s)
            }
            fn canonical(self) -> &'static str {
                self.name()
            }
        }
    )*};
}

named! {
    EngineType: "engine", " (expected Unassigned|Pool|Act|PE|DMA|DVE|SP|ALL)";
    MemoryType: "memory type", " (expected SB|PSUM|DRAM|Input|Output|Unallocated|RNGSTATE|REG)";
    CollectiveKind: "collective kind", "";
    InstClass: "instruction class", "";
}

/// `#[serde(with = "by_name")]`: an enumeration by its canonical name.
pub(super) mod by_name {
    use super::*;

    struct NameVisitor<T>(std::marker::PhantomData<T>);

    impl<T: Named> Visitor<'_> for NameVisitor<T> {
        type Value = T;

        fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            f.write_str("a string")
        }

        fn visit_str<E: de::Error>(self, s: &str) -> Result<T, E> {
            T::parse_name(s)
                .ok_or_else(|| E::custom(format!("unknown {} {s:?}{}", T::WHAT, T::CHOICES)))
        }
    }

    pub(in crate::bir) fn serialize<S: Serializer, T: Named>(
        v: &T,
        s: S,
    ) -> Result<S::Ok, S::Error> {
        s.serialize_str(v.canonical())
    }

    pub(in crate::bir) fn deserialize<'de, D: Deserializer<'de>, T: Named>(
        d: D,
    ) -> Result<T, D::Error> {
        d.deserialize_str(NameVisitor(std::marker::PhantomData))
    }

    /// The same for an optional field (`null` = absent).
    pub(in crate::bir) mod opt {
        use super::*;

        pub(in crate::bir) fn serialize<S: Serializer, T: Named>(
            v: &Option<T>,
            s: S,
        ) -> Result<S::Ok, S::Error> {
            match v {
                Some(v) => s.serialize_str(v.canonical()),
                None => s.serialize_none(),
            }
        }

        pub(in crate::bir) fn deserialize<'de, D: Deserializer<'de>, T: Named>(
            d: D,
        ) -> Result<Option<T>, D::Error> {
            struct Opt<T>(std::marker::PhantomData<T>);
            impl<'de, T: Named> Visitor<'de> for Opt<T> {
                type Value = Option<T>;
                fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                    f.write_str("a string")
                }
                fn visit_none<E>(self) -> Result<Option<T>, E> {
                    Ok(None)
                }
                fn visit_unit<E>(self) -> Result<Option<T>, E> {
                    Ok(None)
                }
                fn visit_some<D: Deserializer<'de>>(self, d: D) -> Result<Option<T>, D::Error> {
                    super::deserialize(d).map(Some)
                }
            }
            d.deserialize_option(Opt(std::marker::PhantomData))
        }
    }
}

/// `#[serde(with = "dtype")]`: a dtype by name (canonical on export) or by ordinal. Only
/// `Dtype::{parse, from_ordinal, name}` are used, so the dtype type can change behind them.
pub(super) mod dtype {
    use super::*;

    struct DtypeVisitor;

    impl Visitor<'_> for DtypeVisitor {
        type Value = Dtype;

        fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            f.write_str("a dtype name")
        }

        fn visit_str<E: de::Error>(self, s: &str) -> Result<Dtype, E> {
            Dtype::parse(s).ok_or_else(|| E::custom(format!("unknown dtype {s:?}")))
        }

        fn visit_u64<E: de::Error>(self, n: u64) -> Result<Dtype, E> {
            Dtype::from_ordinal(n)
                .ok_or_else(|| E::custom(format!("unknown dtype ordinal {n} (expected 0..=19)")))
        }

        fn visit_i64<E: de::Error>(self, n: i64) -> Result<Dtype, E> {
            Err(E::custom(format!(
                "unknown dtype ordinal {n} (expected 0..=19)"
            )))
        }

        fn visit_f64<E: de::Error>(self, n: f64) -> Result<Dtype, E> {
            Err(E::custom(format!(
                "unknown dtype ordinal {n} (expected 0..=19)"
            )))
        }
    }

    pub(in crate::bir) fn serialize<S: Serializer>(d: &Dtype, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(d.name())
    }

    pub(in crate::bir) fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Dtype, D::Error> {
        d.deserialize_any(DtypeVisitor)
    }
}

/// `#[serde(with = "arch")]`: an architecture level by name (canonical on export) or number.
pub(super) mod arch {
    use super::*;

    struct ArchVisitor;

    fn unknown<E: de::Error>(what: String) -> E {
        E::custom(format!(
            "unknown arch {what} (expected inferentia|sunda|gen3|core_v4|core_v5 or 10|20|30|40|50)"
        ))
    }

    impl Visitor<'_> for ArchVisitor {
        type Value = ArchLevel;

        fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            f.write_str("an arch name or level number")
        }

        fn visit_str<E: de::Error>(self, s: &str) -> Result<ArchLevel, E> {
            ArchLevel::parse(s).ok_or_else(|| unknown(format!("{s:?}")))
        }

        fn visit_u64<E: de::Error>(self, n: u64) -> Result<ArchLevel, E> {
            ArchLevel::from_level(n).ok_or_else(|| unknown(n.to_string()))
        }

        fn visit_i64<E: de::Error>(self, n: i64) -> Result<ArchLevel, E> {
            Err(unknown(n.to_string()))
        }

        fn visit_f64<E: de::Error>(self, n: f64) -> Result<ArchLevel, E> {
            Err(unknown(n.to_string()))
        }
    }

    pub(in crate::bir) fn serialize<S: Serializer>(a: &ArchLevel, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(a.name())
    }

    pub(in crate::bir) fn deserialize<'de, D: Deserializer<'de>>(
        d: D,
    ) -> Result<ArchLevel, D::Error> {
        d.deserialize_any(ArchVisitor)
    }
}

/// A block name: non-empty, no `/` (diagnostics use `/` to path into regions).
pub(super) fn block_name<'de, D: Deserializer<'de>>(d: D) -> Result<String, D::Error> {
    let s = String::deserialize(d)?;
    if s.is_empty() || s.contains('/') {
        return Err(de::Error::custom(format!(
            "block name {s:?} must be non-empty and contain no '/'"
        )));
    }
    Ok(s)
}

/// A free dimension is written `[step, num]`.
impl Serialize for Dim {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        (self.step, self.num).serialize(s)
    }
}

impl<'de> Deserialize<'de> for Dim {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Dim, D::Error> {
        struct DimVisitor;
        impl<'de> Visitor<'de> for DimVisitor {
            type Value = Dim;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("[step, num]")
            }
            fn visit_seq<A: de::SeqAccess<'de>>(self, mut seq: A) -> Result<Dim, A::Error> {
                let step = seq.next_element::<i64>()?;
                let num = match step {
                    Some(_) => seq.next_element::<u64>()?,
                    None => None,
                };
                let mut len = usize::from(step.is_some()) + usize::from(num.is_some());
                while seq.next_element::<de::IgnoredAny>()?.is_some() {
                    len += 1;
                }
                match (step, num) {
                    (Some(step), Some(num)) if len == 2 => Ok(Dim { step, num }),
                    _ => Err(de::Error::invalid_length(len, &self)),
                }
            }
        }
        d.deserialize_seq(DimVisitor)
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
pub(super) struct TilesJson {
    #[serde(deserialize_with = "int_or_list")]
    row_pos: Vec<i64>,
    #[serde(deserialize_with = "int_or_list")]
    col_pos: Vec<i64>,
    #[serde(deserialize_with = "int_or_list")]
    row_size: Vec<i64>,
    #[serde(deserialize_with = "int_or_list")]
    col_size: Vec<i64>,
}

impl TryFrom<TilesJson> for MxTiles {
    type Error = String;

    fn try_from(t: TilesJson) -> Result<MxTiles, String> {
        let n = t.row_pos.len();
        if t.col_pos.len() != n || t.row_size.len() != n || t.col_size.len() != n {
            return Err(format!(
                "row_pos, col_pos, row_size and col_size must have equal lengths (found {}, {}, {}, {})",
                n,
                t.col_pos.len(),
                t.row_size.len(),
                t.col_size.len()
            ));
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
    type Error = String;

    fn try_from(i: InstructionIn) -> Result<Instruction, String> {
        let class = i.op;
        let kind = FieldsKind::of(class);
        if let Some((key, ..)) = i.present().into_iter().find(|&(_, on, k)| on && k != kind) {
            return Err(format!("unknown key {key:?} (not a field of {class})"));
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
                        return Err(format!(
                            "kind {k} contradicts the class {class}, which implies {implied}"
                        ))
                    }
                    (Some(implied), _) => Some(implied),
                    (None, None) if class == InstClass::CollectiveCompute => return Err(
                        "missing required key \"kind\" (CollectiveCompute needs a collective kind)"
                            .into(),
                    ),
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

/// The JSON form of an [`Instruction`] as written: the class fields flattened beside the
/// common keys.
#[derive(Serialize)]
struct InstructionOut<'a> {
    op: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    name: Option<&'a String>,
    engine: &'static str,
    args: &'a [AccessPattern],
    outs: &'a [AccessPattern],
    #[serde(flatten)]
    matmult_mx: Option<&'a MatmultMxFields>,
    #[serde(flatten)]
    nki_kernel: Option<&'a NkiKernelFields>,
    #[serde(flatten)]
    collective: Option<&'a CollectiveFields>,
    #[serde(flatten)]
    sb2sb: Option<&'a Sb2SbFields>,
    #[serde(skip_serializing_if = "Option::is_none")]
    blocks: Option<&'a [Block]>,
    #[serde(skip_serializing_if = "Map::is_empty")]
    attrs: &'a Map<String, Value>,
}

impl Serialize for Instruction {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        InstructionOut {
            op: self.class.name(),
            name: self.name.as_ref(),
            engine: self.engine.name(),
            args: &self.args,
            outs: &self.outs,
            matmult_mx: self.matmult_mx(),
            nki_kernel: self.nki_kernel(),
            collective: self.collective(),
            sb2sb: self.sb2sb(),
            blocks: match &self.fields {
                ClassFields::Region(b) => Some(b),
                _ => None,
            },
            attrs: &self.attrs,
        }
        .serialize(s)
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
    fn schema_errors_name_the_path_at_every_level() {
        let cases: &[(&str, Value, &str)] = &[
            (
                "/functions/0/blocks/0/instructions/4/ctx",
                json!("2"),
                "functions[0].blocks[0].instructions[4].ctx: expected a non-negative integer, found a string",
            ),
            (
                "/functions/0/blocks/0/instructions/0/args/0",
                json!(["SB", "a", "int8"]),
                "functions[0].blocks[0].instructions[0].args[0]: expected an object, found an array",
            ),
            (
                "/functions/0/blocks/0/instructions/0/args/0/mem",
                json!("HBM"),
                "functions[0].blocks[0].instructions[0].args[0].mem: unknown memory type \"HBM\" (expected SB|PSUM|DRAM|Input|Output|Unallocated|RNGSTATE|REG)",
            ),
            (
                "/functions/0/blocks/0/instructions/0/outs/0/dtype",
                json!(20),
                "functions[0].blocks[0].instructions[0].outs[0].dtype: unknown dtype ordinal 20 (expected 0..=19)",
            ),
            (
                "/functions/0/blocks/0/instructions/0/args/0/pattern/0/1",
                json!(-3),
                "functions[0].blocks[0].instructions[0].args[0].pattern[0][1]: expected a non-negative integer, found -3",
            ),
            (
                "/functions/0/blocks/0/instructions/0/tiles/row_size",
                json!("x"),
                "functions[0].blocks[0].instructions[0].tiles.row_size: expected an integer or an array of integers, found a string",
            ),
            (
                "/functions/0/blocks/0/instructions/2/kind",
                json!("Gather"),
                "functions[0].blocks[0].instructions[2].kind: unknown collective kind \"Gather\"",
            ),
            (
                "/functions/0/blocks/0/instructions/5/blocks/0/name",
                json!("a/b"),
                "functions[0].blocks[0].instructions[5].blocks[0].name: block name \"a/b\" must be non-empty and contain no '/'",
            ),
            (
                "/functions/0/blocks/0/instructions/5/blocks/0/instructions/0/args",
                json!(7),
                "functions[0].blocks[0].instructions[5].blocks[0].instructions[0].args: expected an array, found a number",
            ),
            (
                "/functions/0/blocks/0/dynamic_cfg",
                json!("yes"),
                "functions[0].blocks[0].dynamic_cfg: expected a boolean, found a string",
            ),
            (
                "/functions/0/name",
                json!(null),
                "functions[0].name: expected a string, found null",
            ),
            (
                "/arch",
                json!(true),
                "arch: expected an arch name or level number, found a boolean",
            ),
        ];
        for (pointer, value, want) in cases {
            let mut v = sample();
            let (parent, key) = pointer.rsplit_once('/').unwrap();
            match v.pointer_mut(parent).unwrap() {
                Value::Object(o) => {
                    o.insert(key.to_string(), value.clone());
                }
                other => other[key.parse::<usize>().unwrap()] = value.clone(),
            }
            assert_eq!(&err_of(&v), want, "{pointer}");
        }
    }

    #[test]
    fn class_fields_only_on_their_class() {
        let mut v = sample();
        v["functions"][0]["blocks"][0]["instructions"][5]["blocks"][0]["instructions"][0]["ctx"] =
            json!(2);
        assert_eq!(
            err_of(&v),
            "functions[0].blocks[0].instructions[5].blocks[0].instructions[0]: unknown key \"ctx\" (not a field of TensorTensor)"
        );
        // `null` counts as absent, for class fields too.
        let mut v = sample();
        v["functions"][0]["blocks"][0]["instructions"][3]["ctx"] = Value::Null;
        from_json_value(&v).unwrap();
    }

    #[test]
    fn region_depth_error_names_the_deep_region() {
        let e = from_json_str(&nested(MAX_REGION_DEPTH + 1)).unwrap_err();
        let want = format!(
            "functions[0].blocks[0].instructions[0]{}: regions nested deeper than 64",
            ".blocks[0].instructions[0]".repeat(MAX_REGION_DEPTH)
        );
        assert_eq!(e.to_string(), want);
    }

    #[test]
    fn deep_values_are_refused_before_they_are_read() {
        let mut v = json!(1);
        for _ in 0..(MAX_JSON_DEPTH + 5) {
            v = json!([v]);
        }
        let v = json!({"arch": 40, "functions": [], "name": v});
        assert_eq!(
            err_of(&v),
            format!("$: nested deeper than {MAX_JSON_DEPTH} levels")
        );
    }

    #[test]
    fn export_writes_canonical_spellings_and_defaults() {
        let text = r#"{"arch": "trn2", "functions": [{"name": "f", "blocks": [{"name": "b",
            "instructions": [{"op": "InstAllGather", "engine": "gpsimd",
              "args": [{"mem": "sbuf", "buffer": "x", "dtype": "bf16"}]}]}]}]}"#;
        let m = from_json_str(text).unwrap();
        assert_eq!(
            to_json_value(&m),
            json!({"arch": "gen3", "functions": [{"name": "f", "blocks": [{"name": "b",
                "dynamic_cfg": false, "instructions": [{"op": "AllGather", "engine": "Pool",
                "args": [{"mem": "SB", "buffer": "x", "dtype": "bfloat16", "start_partition": 0,
                          "partitions": 1, "pattern": [], "offset": 0}],
                "outs": [], "kind": "AllGather", "sb_scratchpad": false, "is_local": false}]}]}]})
        );
        assert!(to_json_string(&m).ends_with("}\n"));
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
