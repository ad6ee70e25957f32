//! Every number format the engines read or write, with its names and numberings.
//!
//! A [`Format`] is identified three ways:
//! - its name, spelled as `ml_dtypes` (and the compiler's BIR) spell it (`bfloat16`,
//!   `float8_e4m3fn`, `float4_e2m1fn_x4`, ...);
//! - its BIR dtype ordinal 0..=19 (the compiler's in-memory enum; `float4_e2m1fn`, the single
//!   unpacked FP4 element, has none);
//! - its wire DTYPE tag, the byte an instruction carries, per generation.
//!
//! The wire tag does not always pin the value model: tag `0x0E` (FP8_EXP4) is E4M3 whose range is
//! programmed at model load (see [`Format::from_wire_tag`]), tags `0x03`/`0x05`/`0x09` double as
//! carriers of E8M0 scales, FP4 ×4 (before v4) and FP8 ×4.

use std::fmt;
use std::str::FromStr;

use tpbsim_isa::Gen;

/// A number format.
///
/// The discriminant of every variant but [`Format::Float4E2m1fn`] is its BIR dtype ordinal.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
#[repr(u8)]
pub enum Format {
    /// `uint8` (BIR 0).
    Uint8 = 0,
    /// `int8` (BIR 1).
    Int8 = 1,
    /// `float4_e2m1fn_x4` (BIR 2): four FP4 E2M1 codes packed in a 2-byte container.
    Float4E2m1fnX4 = 2,
    /// `float8_e3m4` (BIR 3): E3M4, bias 3, IEEE-like (Inf `0x70`, NaN `0x71..=0x7F`), max 15.5.
    Float8E3m4 = 3,
    /// `float8_e4m3` (BIR 4): E4M3, bias 7, IEEE-like (Inf `0x78`, NaN `0x79..=0x7F`), max 240.
    Float8E4m3 = 4,
    /// `float8_e4m3fn` (BIR 5): OCP E4M3, bias 7, no Inf, NaN `0x7F`/`0xFF`, max 448.
    Float8E4m3fn = 5,
    /// `float8_e8m0fnu` (BIR 6): the MX E8M0 block scale, `2^(e-127)`, `0xFF` = NaN.
    Float8E8m0fnu = 6,
    /// `float8_e5m2` (BIR 7): E5M2, bias 15, Inf `0x7C`, NaN `0x7D..=0x7F`, max 57344.
    Float8E5m2 = 7,
    /// `float8_e4m3fn_x4` (BIR 8): four E4M3FN codes in a 4-byte container.
    Float8E4m3fnX4 = 8,
    /// `float8_e5m2_x4` (BIR 9): four E5M2 codes in a 4-byte container.
    Float8E5m2X4 = 9,
    /// `uint16` (BIR 10).
    Uint16 = 10,
    /// `int16` (BIR 11).
    Int16 = 11,
    /// `bfloat16` (BIR 12).
    Bfloat16 = 12,
    /// `float16` (BIR 13): IEEE binary16.
    Float16 = 13,
    /// `uint32` (BIR 14).
    Uint32 = 14,
    /// `int32` (BIR 15).
    Int32 = 15,
    /// `float32` (BIR 16): IEEE binary32.
    Float32 = 16,
    /// `float32r` (BIR 17): fp32 storage whose mantissa is rounded (RNE) to 11 explicit bits.
    Float32r = 17,
    /// `uint64` (BIR 18).
    Uint64 = 18,
    /// `int64` (BIR 19).
    Int64 = 19,
    /// `float4_e2m1fn`: one OCP FP4 E2M1 code (no Inf, no NaN, max 6), stored unpacked in the
    /// low nibble of a byte. No BIR ordinal.
    Float4E2m1fn = 20,
}

/// The broad class of a format.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Kind {
    /// Unsigned integer.
    Unsigned,
    /// Two's-complement signed integer.
    Signed,
    /// Binary floating point (including the scale-only E8M0 and the packed ×4 forms).
    Float,
}

/// A name that is not a format.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown number format `{0}` (expected one of: {names})", names = Format::name_list())]
pub struct UnknownFormat(pub String);

impl Format {
    /// Every format: the 20 BIR ordinals in order, then `float4_e2m1fn`.
    pub const ALL: [Format; 21] = [
        Format::Uint8,
        Format::Int8,
        Format::Float4E2m1fnX4,
        Format::Float8E3m4,
        Format::Float8E4m3,
        Format::Float8E4m3fn,
        Format::Float8E8m0fnu,
        Format::Float8E5m2,
        Format::Float8E4m3fnX4,
        Format::Float8E5m2X4,
        Format::Uint16,
        Format::Int16,
        Format::Bfloat16,
        Format::Float16,
        Format::Uint32,
        Format::Int32,
        Format::Float32,
        Format::Float32r,
        Format::Uint64,
        Format::Int64,
        Format::Float4E2m1fn,
    ];

    /// The name, as `ml_dtypes` and the compiler spell it.
    pub const fn name(self) -> &'static str {
        match self {
            Format::Uint8 => "uint8",
            Format::Int8 => "int8",
            Format::Float4E2m1fnX4 => "float4_e2m1fn_x4",
            Format::Float8E3m4 => "float8_e3m4",
            Format::Float8E4m3 => "float8_e4m3",
            Format::Float8E4m3fn => "float8_e4m3fn",
            Format::Float8E8m0fnu => "float8_e8m0fnu",
            Format::Float8E5m2 => "float8_e5m2",
            Format::Float8E4m3fnX4 => "float8_e4m3fn_x4",
            Format::Float8E5m2X4 => "float8_e5m2_x4",
            Format::Uint16 => "uint16",
            Format::Int16 => "int16",
            Format::Bfloat16 => "bfloat16",
            Format::Float16 => "float16",
            Format::Uint32 => "uint32",
            Format::Int32 => "int32",
            Format::Float32 => "float32",
            Format::Float32r => "float32r",
            Format::Uint64 => "uint64",
            Format::Int64 => "int64",
            Format::Float4E2m1fn => "float4_e2m1fn",
        }
    }

    /// Parse a name (exact, lower case, as [`Format::name`] prints it).
    pub fn from_name(name: &str) -> Option<Format> {
        Format::ALL.into_iter().find(|f| f.name() == name)
    }

    fn name_list() -> String {
        Format::ALL.map(Format::name).join(", ")
    }

    /// The BIR dtype ordinal (0..=19); `None` for `float4_e2m1fn`, which BIR only knows packed.
    pub const fn bir_ordinal(self) -> Option<u8> {
        match self {
            Format::Float4E2m1fn => None,
            f => Some(f as u8),
        }
    }

    /// The format with a BIR dtype ordinal.
    pub fn from_bir_ordinal(ordinal: u8) -> Option<Format> {
        Format::ALL
            .get(usize::from(ordinal))
            .copied()
            .filter(|f| f.bir_ordinal() == Some(ordinal))
    }

    /// Bytes of one storage container: 1, 2, 4 or 8. A ×4 form counts its whole container
    /// (4 × FP4 in 2 bytes, 4 × FP8 in 4 bytes); the unpacked `float4_e2m1fn` takes one byte.
    pub const fn container_bytes(self) -> usize {
        match self {
            Format::Uint8
            | Format::Int8
            | Format::Float8E3m4
            | Format::Float8E4m3
            | Format::Float8E4m3fn
            | Format::Float8E8m0fnu
            | Format::Float8E5m2
            | Format::Float4E2m1fn => 1,
            Format::Float4E2m1fnX4
            | Format::Uint16
            | Format::Int16
            | Format::Bfloat16
            | Format::Float16 => 2,
            Format::Float8E4m3fnX4
            | Format::Float8E5m2X4
            | Format::Uint32
            | Format::Int32
            | Format::Float32
            | Format::Float32r => 4,
            Format::Uint64 | Format::Int64 => 8,
        }
    }

    /// Logical elements per container: 4 for the ×4 forms, otherwise 1.
    pub const fn lanes(self) -> usize {
        match self {
            Format::Float4E2m1fnX4 | Format::Float8E4m3fnX4 | Format::Float8E5m2X4 => 4,
            _ => 1,
        }
    }

    /// Bits of one logical element's code: 4, 8, 16, 32 or 64.
    pub const fn element_bits(self) -> u32 {
        match self {
            Format::Float4E2m1fnX4 | Format::Float4E2m1fn => 4,
            Format::Float8E4m3fnX4 | Format::Float8E5m2X4 => 8,
            f => 8 * f.container_bytes() as u32,
        }
    }

    /// The format of one lane: the scalar element of a ×4 form, otherwise `self`.
    pub const fn element(self) -> Format {
        match self {
            Format::Float4E2m1fnX4 => Format::Float4E2m1fn,
            Format::Float8E4m3fnX4 => Format::Float8E4m3fn,
            Format::Float8E5m2X4 => Format::Float8E5m2,
            f => f,
        }
    }

    /// The broad class.
    pub const fn kind(self) -> Kind {
        match self {
            Format::Uint8 | Format::Uint16 | Format::Uint32 | Format::Uint64 => Kind::Unsigned,
            Format::Int8 | Format::Int16 | Format::Int32 | Format::Int64 => Kind::Signed,
            _ => Kind::Float,
        }
    }

    /// True for the integer formats.
    pub const fn is_integer(self) -> bool {
        !matches!(self.kind(), Kind::Float)
    }

    /// True for the ×4 packed forms.
    pub const fn is_packed(self) -> bool {
        self.lanes() > 1
    }

    /// Largest finite value of a float format (`None` for integers and E8M0).
    pub const fn max_finite(self) -> Option<f32> {
        Some(match self.element() {
            Format::Float4E2m1fn => 6.0,
            Format::Float8E3m4 => 15.5,
            Format::Float8E4m3 => 240.0,
            Format::Float8E4m3fn => 448.0,
            Format::Float8E5m2 => 57344.0,
            Format::Float16 => 65504.0,
            Format::Bfloat16 => f32::from_bits(0x7F7F_0000),
            Format::Float32 => f32::MAX,
            Format::Float32r => f32::from_bits(0x7F7F_F000),
            _ => return None,
        })
    }

    /// The wire DTYPE tag an instruction carries for this format on `gen` (the compiler's
    /// BIR → tag table). `None` where the format has no tag on that generation.
    ///
    /// Several formats share a tag: the ×4 FP8 forms carry their element's tag, `float8_e4m3`
    /// and `float8_e4m3fn` are both FP8_EXP4 (`0x0E`), `float8_e8m0fnu` travels as UINT8 (`0x03`),
    /// and before v4 `float4_e2m1fn_x4` travels as UINT16 (`0x05`).
    pub const fn wire_tag(self, gen: Gen) -> Option<u8> {
        let v4_plus = matches!(gen, Gen::V4 | Gen::V5);
        Some(match self {
            Format::Uint64 => 0x01,
            Format::Int8 => 0x02,
            Format::Uint8 | Format::Float8E8m0fnu => 0x03,
            Format::Int16 => 0x04,
            Format::Uint16 => 0x05,
            Format::Bfloat16 => 0x06,
            Format::Float16 => 0x07,
            Format::Int32 => 0x08,
            Format::Uint32 => 0x09,
            Format::Float32 => 0x0A,
            Format::Float32r => 0x0B,
            Format::Int64 => 0x0C,
            Format::Float8E3m4 => 0x0D,
            Format::Float8E4m3 | Format::Float8E4m3fn | Format::Float8E4m3fnX4 => 0x0E,
            Format::Float8E5m2 | Format::Float8E5m2X4 => 0x0F,
            Format::Float4E2m1fnX4 if v4_plus => 0x10,
            Format::Float4E2m1fnX4 => 0x05,
            Format::Float4E2m1fn if v4_plus => 0x10,
            Format::Float4E2m1fn => return None,
        })
    }

    /// The value model of a wire DTYPE tag on `gen`, or `None` for INVALID, tags this
    /// generation does not define, and tags tpbsim has no value model for (FP8_EXP2, INT4, the
    /// SFP8 scale-only codes, CPTC).
    ///
    /// Shared tags resolve to their plain reading: `0x03` → `uint8`, `0x05` → `uint16`,
    /// `0x09` → `uint32`. Tag `0x0E` (FP8_EXP4) resolves to `float8_e4m3fn` on every
    /// generation: the runtime programs the E4M3 range at model load (`emax_fp8_e4m3`), and the
    /// compiler's default is emax 8, the 448-range OCP format; emax 7 (the alternative-emax
    /// mode) corresponds to `float8_e4m3` (max 240) and must be chosen by the caller.
    pub const fn from_wire_tag(tag: u8, gen: Gen) -> Option<Format> {
        let v4_plus = matches!(gen, Gen::V4 | Gen::V5);
        Some(match tag {
            0x01 => Format::Uint64,
            0x02 => Format::Int8,
            0x03 => Format::Uint8,
            0x04 => Format::Int16,
            0x05 => Format::Uint16,
            0x06 => Format::Bfloat16,
            0x07 => Format::Float16,
            0x08 => Format::Int32,
            0x09 => Format::Uint32,
            0x0A => Format::Float32,
            0x0B => Format::Float32r,
            0x0C => Format::Int64,
            0x0D => Format::Float8E3m4,
            0x0E => Format::Float8E4m3fn,
            0x0F => Format::Float8E5m2,
            0x10 if v4_plus => Format::Float4E2m1fnX4,
            _ => return None,
        })
    }
}

impl fmt::Display for Format {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for Format {
    type Err = UnknownFormat;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Format::from_name(s).ok_or_else(|| UnknownFormat(s.to_string()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip_and_are_unique() {
        let mut seen = std::collections::HashSet::new();
        for f in Format::ALL {
            assert!(seen.insert(f.name()), "duplicate name {}", f.name());
            assert_eq!(f.name().parse::<Format>(), Ok(f));
            assert_eq!(f.to_string(), f.name());
        }
        let err = "float8".parse::<Format>().unwrap_err();
        assert!(err.to_string().contains("float8_e4m3fn"), "{err}");
        assert_eq!(Format::from_name("BFLOAT16"), None);
    }

    #[test]
    fn bir_ordinals_follow_the_compiler_list() {
        let list = "uint8, int8, float4_e2m1fn_x4, float8_e3m4, float8_e4m3, float8_e4m3fn, \
                    float8_e8m0fnu, float8_e5m2, float8_e4m3fn_x4, float8_e5m2_x4, uint16, int16, \
                    bfloat16, float16, uint32, int32, float32, float32r, uint64, int64";
        for (i, name) in list.split(", ").enumerate() {
            let f = Format::from_bir_ordinal(i as u8).unwrap();
            assert_eq!(f.name(), name);
            assert_eq!(f.bir_ordinal(), Some(i as u8));
        }
        assert_eq!(Format::from_bir_ordinal(20), None);
        assert_eq!(Format::Float4E2m1fn.bir_ordinal(), None);
    }

    #[test]
    fn container_sizes_match_the_compiler_size_table() {
        // The compiler's per-ordinal container byte sizes.
        let sizes = [1, 1, 2, 1, 1, 1, 1, 1, 4, 4, 2, 2, 2, 2, 4, 4, 4, 4, 8, 8];
        for (i, &s) in sizes.iter().enumerate() {
            let f = Format::from_bir_ordinal(i as u8).unwrap();
            assert_eq!(f.container_bytes(), s, "{f}");
            assert_eq!(
                f.element_bits() as usize * f.lanes(),
                8 * s,
                "{f}: lanes × element bits must fill the container"
            );
        }
        let packed: Vec<_> = Format::ALL
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
            let f = Format::from_bir_ordinal(ord).unwrap();
            assert_eq!(f.wire_tag(Gen::V2), Some(pre), "{f}");
            assert_eq!(f.wire_tag(Gen::V3), Some(pre), "{f}");
            assert_eq!(f.wire_tag(Gen::V4), Some(v4), "{f}");
            assert_eq!(f.wire_tag(Gen::V5), Some(v4), "{f}");
        }
        assert_eq!(Format::Float4E2m1fn.wire_tag(Gen::V3), None);
        assert_eq!(Format::Float4E2m1fn.wire_tag(Gen::V4), Some(0x10));
    }

    #[test]
    fn wire_tag_decoding_is_consistent_with_encoding() {
        for gen in Gen::ALL {
            for tag in 0..=0xFFu8 {
                if let Some(f) = Format::from_wire_tag(tag, gen) {
                    assert_eq!(f.wire_tag(gen), Some(tag), "{gen:?} tag {tag:#x} → {f}");
                }
            }
            assert_eq!(Format::from_wire_tag(0x00, gen), None);
            assert_eq!(Format::from_wire_tag(0x0E, gen), Some(Format::Float8E4m3fn));
            assert_eq!(Format::from_wire_tag(0x11, gen), None);
        }
        assert_eq!(Format::from_wire_tag(0x10, Gen::V3), None);
        assert_eq!(
            Format::from_wire_tag(0x10, Gen::V4),
            Some(Format::Float4E2m1fnX4)
        );
    }

    #[test]
    fn elements_and_kinds() {
        assert_eq!(Format::Float8E5m2X4.element(), Format::Float8E5m2);
        assert_eq!(Format::Float4E2m1fnX4.element(), Format::Float4E2m1fn);
        assert_eq!(Format::Int32.element(), Format::Int32);
        assert_eq!(Format::Int16.kind(), Kind::Signed);
        assert_eq!(Format::Uint64.kind(), Kind::Unsigned);
        assert_eq!(Format::Float8E8m0fnu.kind(), Kind::Float);
        assert_eq!(Format::Float8E4m3fnX4.max_finite(), Some(448.0));
        assert_eq!(Format::Bfloat16.max_finite(), Some(3.3895314e38));
        assert_eq!(Format::Int8.max_finite(), None);
    }
}
