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
//!
//! `read.rs` holds the import (text → value → model, the cross-object rules), `write.rs` the
//! export; the field helpers the model's serde attributes name are here.

mod read;
#[cfg(test)]
mod tests;
mod write;

use std::fmt;

use serde::de::{self, Deserializer, Visitor};
use serde::{Deserialize, Serialize, Serializer};
use tpbsim_isa::NumFormat;

use super::model::Dim;
use super::{ArchLevel, CollectiveKind, EngineType, InstClass, MemoryType};

pub(super) use read::TilesJson;
pub use read::{from_json_str, from_json_value};
pub use write::{to_json_string, to_json_value, write_json};

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

/// `#[serde(with = "dtype")]`: a dtype by name (canonical on export) or by BIR ordinal.
pub(super) mod dtype {
    use super::*;

    struct DtypeVisitor;

    impl Visitor<'_> for DtypeVisitor {
        type Value = NumFormat;

        fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            f.write_str("a dtype name")
        }

        fn visit_str<E: de::Error>(self, s: &str) -> Result<NumFormat, E> {
            NumFormat::parse(s).ok_or_else(|| E::custom(format!("unknown dtype {s:?}")))
        }

        fn visit_u64<E: de::Error>(self, n: u64) -> Result<NumFormat, E> {
            u8::try_from(n)
                .ok()
                .and_then(NumFormat::from_bir_ordinal)
                .ok_or_else(|| E::custom(format!("unknown dtype ordinal {n} (expected 0..=19)")))
        }

        fn visit_i64<E: de::Error>(self, n: i64) -> Result<NumFormat, E> {
            Err(E::custom(format!(
                "unknown dtype ordinal {n} (expected 0..=19)"
            )))
        }

        fn visit_f64<E: de::Error>(self, n: f64) -> Result<NumFormat, E> {
            Err(E::custom(format!(
                "unknown dtype ordinal {n} (expected 0..=19)"
            )))
        }
    }

    pub(in crate::bir) fn serialize<S: Serializer>(d: &NumFormat, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(d.name())
    }

    pub(in crate::bir) fn deserialize<'de, D: Deserializer<'de>>(
        d: D,
    ) -> Result<NumFormat, D::Error> {
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
