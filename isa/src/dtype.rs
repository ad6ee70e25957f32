//! Number formats: the one type ([`NumFormat`]) BIR, the NEFF schema and the simulator use for
//! an element type, generated from the spec's `NUM_FORMATS` rows (`isa/spec/dtypes.rs`).
//!
//! A format is identified several ways, each read from its row:
//! - its name, spelled as numpy / `ml_dtypes` (and the compiler's BIR) spell it (`bfloat16`,
//!   `float8_e4m3fn`, `float4_e2m1fn_x4`, ...);
//! - its BIR dtype ordinal 0..=19 (the compiler's in-memory enum; `float4_e2m1fn`, the single
//!   unpacked FP4 element, and the host-side `bool` / `float64` have none);
//! - its wire DTYPE tag, the byte an instruction carries, per generation.
//!
//! The wire tag does not always pin the value model: tag `0x0E` (FP8_EXP4) is E4M3 whose range is
//! programmed at model load (see [`NumFormat::from_wire_tag`]), tags `0x03`/`0x05`/`0x09` double as
//! carriers of E8M0 scales, FP4 ×4 (before v4) and FP8 ×4.
//!
//! Three readers spell names differently, each with its own parser: the simulator
//! ([`NumFormat::from_name`], `FromStr`: the device formats, exact), BIR JSON
//! ([`NumFormat::parse`]: the BIR formats, the compiler's `float8e3/4/5` and short forms such as
//! `bf16`) and the NEFF schema ([`NumFormat::from_neff_name`], serde: the NEFF formats and the
//! compiler's spellings).

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

use crate::spec::{NumClass, NumFormatRow, NUM_FORMATS, NUM_NONE};
use crate::Gen;

include!(concat!(env!("OUT_DIR"), "/dtype_gen.rs"));

/// The broad class of a format, as arithmetic sees it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Kind {
    /// Unsigned integer (and the host-side `bool`).
    Unsigned,
    /// Two's-complement signed integer.
    Signed,
    /// Binary floating point (including the scale-only E8M0 and the packed ×4 forms).
    Float,
}

/// A name that is not a device format.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown number format `{0}` (expected one of: {names})", names = NumFormat::device_name_list())]
pub struct UnknownFormat(pub String);

/// A name that is not a NEFF dtype.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown dtype `{0}`")]
pub struct UnknownDtype(pub String);

impl NumFormat {
    /// The spec row.
    #[inline]
    pub const fn row(self) -> &'static NumFormatRow {
        &NUM_FORMATS[self as usize]
    }

    /// The name, as numpy, `ml_dtypes` and the compiler spell it.
    #[inline]
    pub const fn name(self) -> &'static str {
        self.row().name
    }

    /// The class of the spec row.
    #[inline]
    pub const fn class(self) -> NumClass {
        self.row().class
    }

    /// Parse a device format name (exact, lower case, as [`NumFormat::name`] prints it).
    pub fn from_name(name: &str) -> Option<NumFormat> {
        NumFormat::DEVICE.into_iter().find(|f| f.name() == name)
    }

    fn device_name_list() -> String {
        NumFormat::DEVICE.map(NumFormat::name).join(", ")
    }

    /// Parse a BIR dtype: a BIR format's name, the compiler's own spelling (`float8e3`,
    /// `float8e4`, `float8e5`) or a short form (`bf16`, `fp16`, `fp32`, `fp32r`).
    pub fn parse(s: &str) -> Option<NumFormat> {
        NumFormat::ALL
            .into_iter()
            .find(|d| d.name() == s)
            .or_else(|| {
                NumFormat::ALL
                    .into_iter()
                    .find(|d| s == d.row().compiler || s == d.row().short)
            })
            .filter(|_| !s.is_empty())
    }

    /// Parse a NEFF dtype (`def.json`, sidecars): a NEFF format's name or the compiler's own
    /// spelling (`float8e3`, `float8e4`, `float8e5`).
    pub fn from_neff_name(s: &str) -> Result<NumFormat, UnknownDtype> {
        NumFormat::NEFF
            .into_iter()
            .find(|d| !s.is_empty() && s == d.row().compiler)
            .or_else(|| NumFormat::NEFF.into_iter().find(|d| d.name() == s))
            .ok_or_else(|| UnknownDtype(s.to_string()))
    }

    /// The BIR dtype ordinal (0..=19); `None` for the formats BIR does not name
    /// (`float4_e2m1fn`, which BIR only knows packed, and the host-side ones).
    #[inline]
    pub const fn bir_ordinal(self) -> Option<u8> {
        match self.row().bir {
            NUM_NONE => None,
            o => Some(o),
        }
    }

    /// The BIR format with dtype ordinal `ordinal` (0..=19).
    pub const fn from_bir_ordinal(ordinal: u8) -> Option<NumFormat> {
        if (ordinal as usize) < NumFormat::ALL.len() {
            Some(NumFormat::ALL[ordinal as usize])
        } else {
            None
        }
    }

    /// Bytes of one storage container: 1, 2, 4 or 8. A ×4 form counts its whole container
    /// (4 × FP4 in 2 bytes, 4 × FP8 in 4 bytes); the unpacked `float4_e2m1fn` takes one byte.
    /// This is the compiler's 20-entry BIR size table and the NEFF schema's element size.
    #[inline]
    pub const fn container_bytes(self) -> usize {
        let bits = self.row().bits as usize * self.row().lanes as usize;
        if bits < 8 {
            1
        } else {
            bits / 8
        }
    }

    /// Logical elements per container: 4 for the ×4 forms, otherwise 1.
    #[inline]
    pub const fn lanes(self) -> usize {
        self.row().lanes as usize
    }

    /// Bits of one logical element's code: 4, 8, 16, 32 or 64.
    #[inline]
    pub const fn element_bits(self) -> u32 {
        self.row().bits as u32
    }

    /// The format of one lane: the scalar element of a ×4 form, otherwise `self`.
    #[inline]
    pub const fn element(self) -> NumFormat {
        ELEMENT[self as usize]
    }

    /// The broad class.
    pub const fn kind(self) -> Kind {
        match self.row().class {
            NumClass::Int if self.row().signed => Kind::Signed,
            NumClass::Int | NumClass::Bool => Kind::Unsigned,
            _ => Kind::Float,
        }
    }

    /// True for the integer formats.
    #[inline]
    pub const fn is_integer(self) -> bool {
        !matches!(self.kind(), Kind::Float)
    }

    /// True for the ×4 packed forms (the MX containers, BIR {2, 8, 9}).
    #[inline]
    pub const fn is_packed(self) -> bool {
        self.lanes() > 1
    }

    /// True for the 64-bit integer formats.
    #[inline]
    pub const fn is_64bit(self) -> bool {
        matches!(self.row().class, NumClass::Int) && self.row().bits == 64
    }

    /// Whether numpy has a native dtype for this (otherwise `.npy` files store it as void).
    #[inline]
    pub const fn is_numpy_native(self) -> bool {
        self.row().numpy_native
    }

    /// Largest finite value of a device float format (`None` for integers, E8M0 and the
    /// host-side formats).
    pub const fn max_finite(self) -> Option<f32> {
        match self.element().row() {
            r if r.device && r.max_finite != 0 => Some(f32::from_bits(r.max_finite)),
            _ => None,
        }
    }

    /// The wire DTYPE tag an instruction carries for this format on `gen` (the compiler's
    /// BIR → tag table). `None` where the format has no tag on that generation.
    ///
    /// Several formats share a tag: the ×4 FP8 forms carry their element's tag, `float8_e4m3`
    /// and `float8_e4m3fn` are both FP8_EXP4 (`0x0E`), `float8_e8m0fnu` travels as UINT8 (`0x03`),
    /// and before v4 `float4_e2m1fn_x4` travels as UINT16 (`0x05`).
    #[inline]
    pub const fn wire_tag(self, gen: Gen) -> Option<u8> {
        match self.row().wire[gen.index()] {
            NUM_NONE => None,
            t => Some(t),
        }
    }

    /// The value model of a plain operand's wire DTYPE tag on `gen`, or `None` for INVALID,
    /// tags this generation does not define, and tags tpbsim has no value model for (FP8_EXP2,
    /// INT4, the SFP8 scale-only codes, CPTC).
    ///
    /// Shared tags resolve to their plain reading: `0x03` → `uint8`, `0x05` → `uint16`,
    /// `0x09` → `uint32`. Tag `0x0E` (FP8_EXP4) resolves to `float8_e4m3fn` on every
    /// generation: the runtime programs the E4M3 range at model load (`emax_fp8_e4m3`), and the
    /// compiler's default is emax 8, the 448-range OCP format; emax 7 (the alternative-emax
    /// mode) corresponds to `float8_e4m3` (max 240) and must be chosen by the caller.
    #[inline]
    pub const fn from_wire_tag(tag: u8, gen: Gen) -> Option<NumFormat> {
        reading(&PLAIN, tag, gen)
    }

    /// The format the data tag of a microscaled (MX) operand reads as on `gen`: the ×4
    /// containers (FP8_EXP4 → `float8_e4m3fn_x4`, FP8_EXP5 → `float8_e5m2_x4`, FP4_EXP2 on v4+
    /// or UINT16 before → `float4_e2m1fn_x4`).
    #[inline]
    pub const fn from_mx_data_tag(tag: u8, gen: Gen) -> Option<NumFormat> {
        reading(&MX_DATA, tag, gen)
    }
}

const fn reading(table: &[[u8; 256]; 4], tag: u8, gen: Gen) -> Option<NumFormat> {
    match table[gen.index()][tag as usize] {
        0 => None,
        i => Some(NumFormat::EVERY[i as usize - 1]),
    }
}

impl fmt::Display for NumFormat {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for NumFormat {
    type Err = UnknownFormat;

    /// A device format name ([`NumFormat::from_name`]).
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        NumFormat::from_name(s).ok_or_else(|| UnknownFormat(s.to_string()))
    }
}

impl Serialize for NumFormat {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.name())
    }
}

impl<'de> Deserialize<'de> for NumFormat {
    /// A NEFF dtype ([`NumFormat::from_neff_name`]).
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let s = String::deserialize(d)?;
        NumFormat::from_neff_name(&s).map_err(serde::de::Error::custom)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rows_and_discriminants_agree() {
        for (i, f) in NumFormat::EVERY.into_iter().enumerate() {
            assert_eq!(f as usize, i);
            assert_eq!(format!("{f:?}"), f.row().variant);
        }
        for (i, f) in NumFormat::ALL.into_iter().enumerate() {
            assert_eq!(f.bir_ordinal(), Some(i as u8));
        }
        assert_eq!(NumFormat::Float4E2m1fn.bir_ordinal(), None);
        assert_eq!(NumFormat::Bool.bir_ordinal(), None);
    }

    #[test]
    fn each_reader_keeps_its_spellings() {
        assert_eq!(NumFormat::parse("bf16"), Some(NumFormat::Bfloat16));
        assert_eq!(NumFormat::parse("float8e4"), Some(NumFormat::Float8E4m3));
        assert_eq!(NumFormat::parse("bool"), None);
        assert_eq!(NumFormat::parse("float4_e2m1fn"), None);
        assert_eq!(NumFormat::parse(""), None);
        assert_eq!(
            NumFormat::from_neff_name("float8e5"),
            Ok(NumFormat::Float8E5m2)
        );
        assert_eq!(NumFormat::from_neff_name("bool"), Ok(NumFormat::Bool));
        assert!(NumFormat::from_neff_name("bf16").is_err());
        assert!(NumFormat::from_neff_name("float4_e2m1fn").is_err());
        assert!(NumFormat::from_neff_name("").is_err());
        assert_eq!(
            NumFormat::from_neff_name("x").unwrap_err().to_string(),
            "unknown dtype `x`"
        );
        assert_eq!(NumFormat::from_name("bool"), None);
        assert_eq!(NumFormat::from_name("float8e4"), None);
        assert_eq!(
            "float4_e2m1fn".parse::<NumFormat>(),
            Ok(NumFormat::Float4E2m1fn)
        );
    }

    #[test]
    fn host_formats() {
        assert_eq!(NumFormat::Bool.container_bytes(), 1);
        assert_eq!(NumFormat::Float64.container_bytes(), 8);
        assert!(NumFormat::Float64.is_numpy_native() && !NumFormat::Bfloat16.is_numpy_native());
        assert_eq!(NumFormat::Float64.wire_tag(Gen::V4), None);
        assert_eq!(NumFormat::Float64.max_finite(), None);
        assert!(!NumFormat::Float64.is_64bit() && NumFormat::Int64.is_64bit());
    }

    #[test]
    fn mx_data_readings() {
        for gen in Gen::ALL {
            assert_eq!(
                NumFormat::from_mx_data_tag(0x0E, gen),
                Some(NumFormat::Float8E4m3fnX4)
            );
            assert_eq!(
                NumFormat::from_mx_data_tag(0x0F, gen),
                Some(NumFormat::Float8E5m2X4)
            );
        }
        assert_eq!(
            NumFormat::from_mx_data_tag(0x05, Gen::V3),
            Some(NumFormat::Float4E2m1fnX4)
        );
        assert_eq!(NumFormat::from_mx_data_tag(0x05, Gen::V4), None);
        assert_eq!(
            NumFormat::from_mx_data_tag(0x10, Gen::V4),
            Some(NumFormat::Float4E2m1fnX4)
        );
    }

    #[test]
    fn names_round_trip_and_are_unique() {
        let mut seen = std::collections::HashSet::new();
        for f in NumFormat::DEVICE {
            assert!(seen.insert(f.name()), "duplicate name {}", f.name());
            assert_eq!(f.name().parse::<NumFormat>(), Ok(f));
            assert_eq!(f.to_string(), f.name());
        }
        let err = "float8".parse::<NumFormat>().unwrap_err();
        assert!(err.to_string().contains("float8_e4m3fn"), "{err}");
        assert_eq!(NumFormat::from_name("BFLOAT16"), None);
    }

    #[test]
    fn bir_ordinals_follow_the_compiler_list() {
        let list = "uint8, int8, float4_e2m1fn_x4, float8_e3m4, float8_e4m3, float8_e4m3fn, \
                    float8_e8m0fnu, float8_e5m2, float8_e4m3fn_x4, float8_e5m2_x4, uint16, int16, \
                    bfloat16, float16, uint32, int32, float32, float32r, uint64, int64";
        for (i, name) in list.split(", ").enumerate() {
            let f = NumFormat::from_bir_ordinal(i as u8).unwrap();
            assert_eq!(f.name(), name);
            assert_eq!(f.bir_ordinal(), Some(i as u8));
        }
        assert_eq!(NumFormat::from_bir_ordinal(20), None);
        assert_eq!(NumFormat::Float4E2m1fn.bir_ordinal(), None);
    }

    #[test]
    fn container_sizes_match_the_compiler_size_table() {
        // The compiler's per-ordinal container byte sizes.
        let sizes = [1, 1, 2, 1, 1, 1, 1, 1, 4, 4, 2, 2, 2, 2, 4, 4, 4, 4, 8, 8];
        for (i, &s) in sizes.iter().enumerate() {
            let f = NumFormat::from_bir_ordinal(i as u8).unwrap();
            assert_eq!(f.container_bytes(), s, "{f}");
            assert_eq!(
                f.element_bits() as usize * f.lanes(),
                8 * s,
                "{f}: lanes × element bits must fill the container"
            );
        }
        let packed: Vec<_> = NumFormat::DEVICE
            .into_iter()
            .filter(|f| f.is_packed())
            .map(|f| f.bir_ordinal())
            .collect();
        assert_eq!(packed, [Some(2), Some(8), Some(9)]);
    }

    #[test]
    fn wire_tags_follow_the_bir_table() {
        // (BIR ordinal, tag before v4, tag on v4+).
        let table: [(u8, u8, u8); 20] = [
            (0, 0x03, 0x03),
            (1, 0x02, 0x02),
            (2, 0x05, 0x10),
            (3, 0x0D, 0x0D),
            (4, 0x0E, 0x0E),
            (5, 0x0E, 0x0E),
            (6, 0x03, 0x03),
            (7, 0x0F, 0x0F),
            (8, 0x0E, 0x0E),
            (9, 0x0F, 0x0F),
            (10, 0x05, 0x05),
            (11, 0x04, 0x04),
            (12, 0x06, 0x06),
            (13, 0x07, 0x07),
            (14, 0x09, 0x09),
            (15, 0x08, 0x08),
            (16, 0x0A, 0x0A),
            (17, 0x0B, 0x0B),
            (18, 0x01, 0x01),
            (19, 0x0C, 0x0C),
        ];
        for (ord, pre, v4) in table {
            let f = NumFormat::from_bir_ordinal(ord).unwrap();
            assert_eq!(f.wire_tag(Gen::V2), Some(pre), "{f}");
            assert_eq!(f.wire_tag(Gen::V3), Some(pre), "{f}");
            assert_eq!(f.wire_tag(Gen::V4), Some(v4), "{f}");
            assert_eq!(f.wire_tag(Gen::V5), Some(v4), "{f}");
        }
        assert_eq!(NumFormat::Float4E2m1fn.wire_tag(Gen::V3), None);
        assert_eq!(NumFormat::Float4E2m1fn.wire_tag(Gen::V4), Some(0x10));
    }

    #[test]
    fn wire_tag_decoding_is_consistent_with_encoding() {
        for gen in Gen::ALL {
            for tag in 0..=0xFFu8 {
                if let Some(f) = NumFormat::from_wire_tag(tag, gen) {
                    assert_eq!(f.wire_tag(gen), Some(tag), "{gen:?} tag {tag:#x} → {f}");
                }
            }
            assert_eq!(NumFormat::from_wire_tag(0x00, gen), None);
            assert_eq!(
                NumFormat::from_wire_tag(0x0E, gen),
                Some(NumFormat::Float8E4m3fn)
            );
            assert_eq!(NumFormat::from_wire_tag(0x11, gen), None);
        }
        assert_eq!(NumFormat::from_wire_tag(0x10, Gen::V3), None);
        assert_eq!(
            NumFormat::from_wire_tag(0x10, Gen::V4),
            Some(NumFormat::Float4E2m1fnX4)
        );
    }

    #[test]
    fn elements_and_kinds() {
        assert_eq!(NumFormat::Float8E5m2X4.element(), NumFormat::Float8E5m2);
        assert_eq!(NumFormat::Float4E2m1fnX4.element(), NumFormat::Float4E2m1fn);
        assert_eq!(NumFormat::Int32.element(), NumFormat::Int32);
        assert_eq!(NumFormat::Int16.kind(), Kind::Signed);
        assert_eq!(NumFormat::Uint64.kind(), Kind::Unsigned);
        assert_eq!(NumFormat::Float8E8m0fnu.kind(), Kind::Float);
        assert_eq!(NumFormat::Float8E4m3fnX4.max_finite(), Some(448.0));
        assert_eq!(NumFormat::Bfloat16.max_finite(), Some(3.3895314e38));
        assert_eq!(NumFormat::Int8.max_finite(), None);
    }
}
