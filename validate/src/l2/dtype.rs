//! Wire dtype predicates: `is_valid_dtype`, `is_valid_dtype_64`, `is_valid_dtype_inc_fp4`,
//! element sizes and the integer/signedness classes (isa-facts §6.1, R validator-architecture).

use tpbsim_isa::dtype::Kind;
use tpbsim_isa::{Dtype, Gen, NumFormat};

/// INVALID.
pub const INVALID: u8 = Dtype::INVALID.0;
/// UINT64.
pub const UINT64: u8 = Dtype::UINT64.0;
/// INT8.
pub const INT8: u8 = Dtype::INT8.0;
/// UINT8 (also the E8M0 scale byte).
pub const UINT8: u8 = Dtype::UINT8.0;
/// INT16.
pub const INT16: u8 = Dtype::INT16.0;
/// UINT16.
pub const UINT16: u8 = Dtype::UINT16.0;
/// BF16.
pub const BF16: u8 = Dtype::BF16.0;
/// FP16.
pub const FP16: u8 = Dtype::FP16.0;
/// INT32.
pub const INT32: u8 = Dtype::INT32.0;
/// UINT32.
pub const UINT32: u8 = Dtype::UINT32.0;
/// FP32.
pub const FP32: u8 = Dtype::FP32.0;
/// FP32R.
pub const FP32R: u8 = Dtype::FP32R.0;
/// INT64.
pub const INT64: u8 = Dtype::INT64.0;
/// FP8 E3M4.
pub const FP8_EXP3: u8 = Dtype::FP8_EXP3.0;
/// FP8 E4M3.
pub const FP8_EXP4: u8 = Dtype::FP8_EXP4.0;
/// FP8 E5M2.
pub const FP8_EXP5: u8 = Dtype::FP8_EXP5.0;
/// FP4 E2M1 (×4 in 2 bytes), v4+.
pub const FP4_EXP2: u8 = Dtype::FP4_EXP2.0;

/// Wire dtype name, for messages: the DTYPE enumeration's name, the scale-only SFP8 and coded
/// CPTC families by their family name, `unknown` for a value the spec does not name.
pub fn name(t: u8) -> &'static str {
    match Dtype(t).name() {
        Some(n) if n.starts_with("SFP8") => "SFP8",
        Some(n) if n.starts_with("CPTC") => "CPTC",
        Some(n) => n,
        None => "unknown",
    }
}

/// The number format a tag reads as (the newest generation's plain reading: a tag's class and
/// size do not change between generations).
const fn format(t: u8) -> Option<NumFormat> {
    NumFormat::from_wire_tag(t, Gen::V5)
}

/// Element size in bytes of a wire tag (`get_type_size`), `None` when the tag has no byte
/// size (INVALID, FP4, coded formats).
pub const fn size(t: u8) -> Option<u32> {
    match format(t) {
        Some(f) if !f.is_packed() => Some(f.container_bytes() as u32),
        _ => None,
    }
}

/// `is_valid_dtype` and its variants: not INVALID; FP32R only when `allow_fp32r`; UINT64 /
/// INT64 only on the 64-bit path (`is_valid_dtype_64`); FP4_EXP2 only through the
/// fp4-inclusive variant on v4+ (`is_valid_dtype_inc_fp4`). The coded CPTC tags are not
/// accepted by these compute-operand predicates (project-defined, see docs/l2.md).
pub const fn is_valid(gen: Gen, t: u8, allow_fp32r: bool, allow_64: bool, allow_fp4: bool) -> bool {
    match t {
        0x02..=0x0A | 0x0D..=0x0F => true,
        FP32R => allow_fp32r,
        UINT64 | INT64 => allow_64,
        FP4_EXP2 => allow_fp4 && !matches!(gen, Gen::V2 | Gen::V3),
        _ => false,
    }
}

/// Integer tags (signed or unsigned, any width).
pub const fn is_int(t: u8) -> bool {
    matches!(format(t), Some(f) if f.is_integer())
}

/// Signed integer tags.
pub const fn is_signed_int(t: u8) -> bool {
    matches!(format(t), Some(f) if matches!(f.kind(), Kind::Signed))
}

/// Float tags.
pub const fn is_float(t: u8) -> bool {
    matches!(format(t), Some(f) if matches!(f.kind(), Kind::Float))
}

/// 4-byte tags {INT32, UINT32, FP32, FP32R}: the only ones a PSUM write may use
/// (`type_size_check(dtype, 4)`).
pub const fn is_4byte(t: u8) -> bool {
    matches!(size(t), Some(4))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn gates() {
        assert!(!is_valid(Gen::V4, INVALID, true, true, true));
        assert!(!is_valid(Gen::V4, FP32R, false, false, false));
        assert!(is_valid(Gen::V4, FP32R, true, false, false));
        assert!(!is_valid(Gen::V3, INT64, false, false, false));
        assert!(is_valid(Gen::V3, INT64, false, true, false));
        assert!(!is_valid(Gen::V3, FP4_EXP2, false, false, true));
        assert!(is_valid(Gen::V4, FP4_EXP2, false, false, true));
        assert!(!is_valid(Gen::V4, FP4_EXP2, false, false, false));
        assert!(!is_valid(Gen::V4, 0x19, true, true, true));
        assert_eq!(size(BF16), Some(2));
        assert_eq!(size(FP4_EXP2), None);
        assert!(is_4byte(FP32R) && !is_4byte(BF16));
    }

    #[test]
    fn classes_and_names_follow_the_spec() {
        let ints = [UINT64, INT8, UINT8, INT16, UINT16, INT32, UINT32, INT64];
        let floats = [
            BF16, FP16, FP32, FP32R, FP8_EXP3, FP8_EXP4, FP8_EXP5, FP4_EXP2,
        ];
        for t in 0..=0xFFu8 {
            assert_eq!(is_int(t), ints.contains(&t), "{t:#x}");
            assert_eq!(is_float(t), floats.contains(&t), "{t:#x}");
            assert_eq!(is_signed_int(t), [INT8, INT16, INT32, INT64].contains(&t));
            assert_eq!(is_4byte(t), (0x08..=0x0B).contains(&t));
        }
        let sizes = [
            (0x01, 8),
            (0x02, 1),
            (0x03, 1),
            (0x04, 2),
            (0x07, 2),
            (0x0B, 4),
        ];
        for (t, n) in sizes {
            assert_eq!(size(t), Some(n), "{t:#x}");
        }
        for t in [0x00, 0x10, 0x11, 0x12, 0x13, 0x19, 0x20] {
            assert_eq!(size(t), None, "{t:#x}");
        }
        assert_eq!(name(0x0E), "FP8_EXP4");
        assert_eq!(name(0x14), "SFP8");
        assert_eq!(name(0x1C), "CPTC");
        assert_eq!(name(0x17), "unknown");
        assert_eq!(name(0x20), "unknown");
    }
}
