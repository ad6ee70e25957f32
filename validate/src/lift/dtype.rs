//! Wire DTYPE tags ↔ BIR dtype ordinals, per generation (facts §6.1, §6.2).
//!
//! Lowering follows the compiler's 20-entry LUT (§6.2): every BIR dtype has a tag. The LUT is
//! not injective (`float8e4`, `float8_e4m3fn` and `float8_e4m3fn_x4` all become FP8_EXP4), so
//! lifting picks one BIR dtype per tag and context — the *canonical* dtype:
//!
//! - plain operands: FP8_EXP4 → `float8_e4m3fn` (the wire format is E4M3 with no infinity and
//!   max 448, the OCP reading), UINT8 → `uint8`, UINT16 → `uint16`, FP4_EXP2 (v4+) →
//!   `float4_e2m1fn_x4`;
//! - MX data operands (the format says the operand is x4-packed): FP8_EXP4 →
//!   `float8_e4m3fn_x4`, FP8_EXP5 → `float8_e5m2_x4`, FP4_EXP2 (v4+) or UINT16 (v2/v3) →
//!   `float4_e2m1fn_x4`;
//! - MX scale operands: always `float8_e8m0fnu`.
//!
//! Tags without a BIR dtype (INVALID, the v5 FP8_EXP2 / INT4 / SFP8 tags, the coded CPTC
//! formats) do not lift. These choices are `project-defined` (docs/lift.md).

use tpbsim_isa::Gen;

use tpbsim_isa::NumFormat;

/// How an operand's dtype tag is to be read.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum DtypeCtx {
    /// An ordinary operand.
    Plain,
    /// The data of a microscaled (MX) operand: x4-packed containers.
    MxData,
    /// The E8M0 scales of an MX operand (no tag on the wire).
    MxScale,
}

/// The wire tag of a BIR dtype in `gen` (the compiler's LUT, facts §6.2, from the spec's
/// number-format rows); INVALID (0) for a format without a tag there.
pub const fn wire_tag(d: NumFormat, gen: Gen) -> u8 {
    match d.wire_tag(gen) {
        Some(t) => t,
        None => 0,
    }
}

/// The canonical BIR dtype of wire tag `tag` in `gen` for an operand read in context `ctx`
/// (the spec rows' plain and MX-data readings).
pub const fn bir_dtype(tag: u8, gen: Gen, ctx: DtypeCtx) -> Option<NumFormat> {
    match ctx {
        DtypeCtx::MxScale => Some(NumFormat::Float8E8m0fnu),
        DtypeCtx::MxData => NumFormat::from_mx_data_tag(tag, gen),
        DtypeCtx::Plain => NumFormat::from_wire_tag(tag, gen),
    }
}

/// True when `d` is what lifting yields for its own tag in `ctx` (lowering then lifting
/// gives `d` back).
pub fn is_canonical(d: NumFormat, gen: Gen, ctx: DtypeCtx) -> bool {
    bir_dtype(wire_tag(d, gen), gen, ctx) == Some(d)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lut_matches_the_digest() {
        // Facts §6.2, tags pre-v4 and v4, in BIR ordinal order.
        let pre: [u8; 20] = [
            3, 2, 5, 0xD, 0xE, 0xE, 3, 0xF, 0xE, 0xF, 5, 4, 6, 7, 9, 8, 0xA, 0xB, 1, 0xC,
        ];
        let v4: [u8; 20] = [
            3, 2, 0x10, 0xD, 0xE, 0xE, 3, 0xF, 0xE, 0xF, 5, 4, 6, 7, 9, 8, 0xA, 0xB, 1, 0xC,
        ];
        for d in NumFormat::ALL {
            assert_eq!(wire_tag(d, Gen::V2), pre[d as usize], "{d}");
            assert_eq!(wire_tag(d, Gen::V3), pre[d as usize], "{d}");
            assert_eq!(wire_tag(d, Gen::V4), v4[d as usize], "{d}");
            assert_eq!(wire_tag(d, Gen::V5), v4[d as usize], "{d}");
        }
    }

    #[test]
    fn lifting_inverts_lowering_on_canonical_dtypes() {
        for gen in Gen::ALL {
            for ctx in [DtypeCtx::Plain, DtypeCtx::MxData] {
                for tag in 0..=0x1Fu8 {
                    if let Some(d) = bir_dtype(tag, gen, ctx) {
                        assert_eq!(wire_tag(d, gen), tag, "{gen} {ctx:?} {tag:#x}");
                        assert!(is_canonical(d, gen, ctx));
                    }
                }
            }
        }
        assert_eq!(
            bir_dtype(0x0E, Gen::V3, DtypeCtx::Plain),
            Some(NumFormat::Float8E4m3fn)
        );
        assert!(!is_canonical(
            NumFormat::Float8E4m3,
            Gen::V3,
            DtypeCtx::Plain
        ));
        assert_eq!(
            bir_dtype(0x05, Gen::V3, DtypeCtx::MxData),
            Some(NumFormat::Float4E2m1fnX4)
        );
        assert_eq!(bir_dtype(0x05, Gen::V4, DtypeCtx::MxData), None);
        assert_eq!(bir_dtype(0x10, Gen::V3, DtypeCtx::Plain), None);
        assert_eq!(bir_dtype(0x11, Gen::V5, DtypeCtx::Plain), None);
        assert_eq!(bir_dtype(0x00, Gen::V4, DtypeCtx::Plain), None);
    }
}
