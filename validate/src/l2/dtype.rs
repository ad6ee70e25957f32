//! Wire dtype predicates: `is_valid_dtype`, `is_valid_dtype_64`, `is_valid_dtype_inc_fp4`,
//! element sizes and the integer/signedness classes (isa-facts §6.1, R validator-architecture).

use tpbsim_isa::{Dtype, Gen};

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

/// Wire dtype name, for messages.
pub const fn name(t: u8) -> &'static str {
    match t {
        0x00 => "INVALID",
        0x01 => "UINT64",
        0x02 => "INT8",
        0x03 => "UINT8",
        0x04 => "INT16",
        0x05 => "UINT16",
        0x06 => "BF16",
        0x07 => "FP16",
        0x08 => "INT32",
        0x09 => "UINT32",
        0x0A => "FP32",
        0x0B => "FP32R",
        0x0C => "INT64",
        0x0D => "FP8_EXP3",
        0x0E => "FP8_EXP4",
        0x0F => "FP8_EXP5",
        0x10 => "FP4_EXP2",
        0x11 => "FP8_EXP2",
        0x12 => "INT4",
        0x13..=0x16 => "SFP8",
        0x19..=0x1F => "CPTC",
        _ => "unknown",
    }
}

/// Element size in bytes of a wire tag (`get_type_size`), `None` when the tag has no byte
/// size (INVALID, FP4, coded formats).
pub const fn size(t: u8) -> Option<u32> {
    match t {
        0x02 | 0x03 | 0x0D | 0x0E | 0x0F => Some(1),
        0x04..=0x07 => Some(2),
        0x08..=0x0B => Some(4),
        0x01 | 0x0C => Some(8),
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
    matches!(t, 0x01 | 0x02 | 0x03 | 0x04 | 0x05 | 0x08 | 0x09 | 0x0C)
}

/// Signed integer tags.
pub const fn is_signed_int(t: u8) -> bool {
    matches!(t, INT8 | INT16 | INT32 | INT64)
}

/// Float tags.
pub const fn is_float(t: u8) -> bool {
    matches!(
        t,
        BF16 | FP16 | FP32 | FP32R | FP8_EXP3 | FP8_EXP4 | FP8_EXP5 | FP4_EXP2
    )
}

/// 4-byte tags {INT32, UINT32, FP32, FP32R}: the only ones a PSUM write may use
/// (`type_size_check(dtype, 4)`).
pub const fn is_4byte(t: u8) -> bool {
    matches!(t, 0x08..=0x0B)
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
}
