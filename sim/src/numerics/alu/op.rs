//! The `ALU_OP` wire byte: the members and predicate sets come from the spec's `ALU_OP`
//! enumeration and sets (`tpbsim_isa::formats::{members, sets}`).

use std::fmt;

use tpbsim_isa::formats::{members, sets};
use tpbsim_isa::spec::ByteSet;
use tpbsim_isa::{self as isa, Gen};

use super::{AluError, Signedness};

/// An `ALU_OP` wire byte (`NEURON_ISA_TPB_ALU_OP`, one byte). Only codes of the enum can be
/// built ([`AluOp::from_wire`]); the associated constants name every member.
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct AluOp(pub(super) u8);

/// Members of the spec's `ALU_OP` enumeration on any generation (65, all present on v5).
const ANY_GEN: ByteSet = ByteSet::union_of(&members::ALU_OP);

/// A per-generation spec set read from v3 on: the predicates below answer for ops that exist
/// only from v3 (the int band 0xC7..) on v2 too; whether an op exists on a generation is
/// [`AluOp::exists_in`]'s question.
const fn from_v3(per_gen: &[ByteSet; 4], gen: Gen) -> ByteSet {
    match gen {
        Gen::V2 => per_gen[Gen::V3.index()],
        g => per_gen[g.index()],
    }
}

impl AluOp {
    /// Pass-through of src0 (legal in both classes).
    pub const BYPASS: AluOp = AluOp(isa::AluOp::BYPASS.0);
    /// `~a`.
    pub const BITWISE_NOT: AluOp = AluOp(isa::AluOp::BITWISE_NOT.0);
    /// `a << b`.
    pub const ARITH_SHIFT_LEFT: AluOp = AluOp(isa::AluOp::ARITH_SHIFT_LEFT.0);
    /// `a >> b`, sign-replicating.
    pub const ARITH_SHIFT_RIGHT: AluOp = AluOp(isa::AluOp::ARITH_SHIFT_RIGHT.0);
    /// `a + b`.
    pub const ADD: AluOp = AluOp(isa::AluOp::ADD.0);
    /// `a - b`.
    pub const SUBTRACT: AluOp = AluOp(isa::AluOp::SUBTRACT.0);
    /// `a * b`.
    pub const MULT: AluOp = AluOp(isa::AluOp::MULT.0);
    /// `a / b` (fp only).
    pub const DIVIDE: AluOp = AluOp(isa::AluOp::DIVIDE.0);
    /// `max(a, b)`.
    pub const MAX: AluOp = AluOp(isa::AluOp::MAX.0);
    /// `min(a, b)`.
    pub const MIN: AluOp = AluOp(isa::AluOp::MIN.0);
    /// `a & b`.
    pub const BITWISE_AND: AluOp = AluOp(isa::AluOp::BITWISE_AND.0);
    /// `a | b`.
    pub const BITWISE_OR: AluOp = AluOp(isa::AluOp::BITWISE_OR.0);
    /// `a ^ b`.
    pub const BITWISE_XOR: AluOp = AluOp(isa::AluOp::BITWISE_XOR.0);
    /// `a != 0 && b != 0`.
    pub const LOGICAL_AND: AluOp = AluOp(isa::AluOp::LOGICAL_AND.0);
    /// `a != 0 || b != 0`.
    pub const LOGICAL_OR: AluOp = AluOp(isa::AluOp::LOGICAL_OR.0);
    /// `(a != 0) ^ (b != 0)`.
    pub const LOGICAL_XOR: AluOp = AluOp(isa::AluOp::LOGICAL_XOR.0);
    /// `a << b`, zero fill.
    pub const LOGICAL_SHIFT_LEFT: AluOp = AluOp(isa::AluOp::LOGICAL_SHIFT_LEFT.0);
    /// `a >> b`, zero fill.
    pub const LOGICAL_SHIFT_RIGHT: AluOp = AluOp(isa::AluOp::LOGICAL_SHIFT_RIGHT.0);
    /// `a == b`.
    pub const IS_EQ: AluOp = AluOp(isa::AluOp::IS_EQ.0);
    /// `a > b`.
    pub const IS_GT: AluOp = AluOp(isa::AluOp::IS_GT.0);
    /// `a >= b`.
    pub const IS_GE: AluOp = AluOp(isa::AluOp::IS_GE.0);
    /// `a <= b`.
    pub const IS_LE: AluOp = AluOp(isa::AluOp::IS_LE.0);
    /// `a < b`.
    pub const IS_LT: AluOp = AluOp(isa::AluOp::IS_LT.0);
    /// `|a - b|`.
    pub const ABSOLUTE_DIFF: AluOp = AluOp(isa::AluOp::ABSOLUTE_DIFF.0);
    /// `a != b`.
    pub const IS_NE: AluOp = AluOp(isa::AluOp::IS_NE.0);
    /// `|a|`.
    pub const ABSOLUTE_VALUE: AluOp = AluOp(isa::AluOp::ABSOLUTE_VALUE.0);
    /// `a ^ b` (power; POOL only, fp only).
    pub const POW: AluOp = AluOp(isa::AluOp::POW.0);
    /// `a % b` (integer, C-style sign of the dividend).
    pub const MOD: AluOp = AluOp(isa::AluOp::MOD.0);
    /// CRC32 (POOL only; semantics not public).
    pub const CRC32: AluOp = AluOp(isa::AluOp::CRC32.0);
    /// `1 / sqrt(a)` (POOL only, fp only).
    pub const RSQRT: AluOp = AluOp(isa::AluOp::RSQRT.0);
    /// `max(|a|, |b|)` (v4+).
    pub const ABS_MAX: AluOp = AluOp(isa::AluOp::ABS_MAX.0);
    /// `min(|a|, |b|)` (v4+).
    pub const ABS_MIN: AluOp = AluOp(isa::AluOp::ABS_MIN.0);
    /// `max(a, 0)` (v4+).
    pub const RE_LU: AluOp = AluOp(isa::AluOp::RE_LU.0);
    /// `a * a` (v4+).
    pub const SQUARE: AluOp = AluOp(isa::AluOp::SQUARE.0);
    /// `sign(a) * max(|a|, |b|)` (v5).
    pub const SYMMETRIC_CLAMP: AluOp = AluOp(isa::AluOp::SYMMETRIC_CLAMP.0);
    /// Integer add (signed or unsigned).
    pub const ADD_INT: AluOp = AluOp(isa::AluOp::ADD_INT.0);
    /// Integer multiply, low 32 bits.
    pub const MULT_INT: AluOp = AluOp(isa::AluOp::MULT_INT.0);
    /// Integer subtract.
    pub const SUBTRACT_INT: AluOp = AluOp(isa::AluOp::SUBTRACT_INT.0);
    /// Integer divide (truncating).
    pub const DIVIDE_INT: AluOp = AluOp(isa::AluOp::DIVIDE_INT.0);
    /// Integer remainder (sign of the dividend).
    pub const MOD_INT: AluOp = AluOp(isa::AluOp::MOD_INT.0);
    /// Integer `==`.
    pub const IS_EQUAL_INT: AluOp = AluOp(isa::AluOp::IS_EQUAL_INT.0);
    /// Integer `!=`.
    pub const IS_NE_INT: AluOp = AluOp(isa::AluOp::IS_NE_INT.0);
    /// Signed `max(|a|, |b|)`.
    pub const ABS_MAX_INT: AluOp = AluOp(isa::AluOp::ABS_MAX_INT.0);
    /// Signed `min(|a|, |b|)`.
    pub const ABS_MIN_INT: AluOp = AluOp(isa::AluOp::ABS_MIN_INT.0);
    /// Signed `|a - b|`.
    pub const ABS_DIFF_INT: AluOp = AluOp(isa::AluOp::ABS_DIFF_INT.0);
    /// Signed `|a|` (single source).
    pub const ABS_VALUE_INT: AluOp = AluOp(isa::AluOp::ABS_VALUE_INT.0);
    /// Signed max.
    pub const MAX_INT: AluOp = AluOp(isa::AluOp::MAX_INT.0);
    /// Signed min.
    pub const MIN_INT: AluOp = AluOp(isa::AluOp::MIN_INT.0);
    /// Signed `>`.
    pub const IS_GT_INT: AluOp = AluOp(isa::AluOp::IS_GT_INT.0);
    /// Signed `>=`.
    pub const IS_GE_INT: AluOp = AluOp(isa::AluOp::IS_GE_INT.0);
    /// Signed `<=`.
    pub const IS_LE_INT: AluOp = AluOp(isa::AluOp::IS_LE_INT.0);
    /// Signed `<`.
    pub const IS_LT_INT: AluOp = AluOp(isa::AluOp::IS_LT_INT.0);
    /// Unsigned max.
    pub const MAX_UINT: AluOp = AluOp(isa::AluOp::MAX_UINT.0);
    /// Unsigned min.
    pub const MIN_UINT: AluOp = AluOp(isa::AluOp::MIN_UINT.0);
    /// Unsigned `>`.
    pub const IS_GT_UINT: AluOp = AluOp(isa::AluOp::IS_GT_UINT.0);
    /// Unsigned `>=`.
    pub const IS_GE_UINT: AluOp = AluOp(isa::AluOp::IS_GE_UINT.0);
    /// Unsigned `<=`.
    pub const IS_LE_UINT: AluOp = AluOp(isa::AluOp::IS_LE_UINT.0);
    /// Unsigned `<`.
    pub const IS_LT_UINT: AluOp = AluOp(isa::AluOp::IS_LT_UINT.0);
    /// Unsigned multiply, low 32 bits.
    pub const MULT_UINT: AluOp = AluOp(isa::AluOp::MULT_UINT.0);
    /// Unsigned divide.
    pub const DIVIDE_UINT: AluOp = AluOp(isa::AluOp::DIVIDE_UINT.0);
    /// Unsigned remainder.
    pub const MOD_UINT: AluOp = AluOp(isa::AluOp::MOD_UINT.0);
    /// Signed arg-max (u32 index output).
    pub const AMAX_INT: AluOp = AluOp(isa::AluOp::AMAX_INT.0);
    /// Signed arg-min (u32 index output).
    pub const AMIN_INT: AluOp = AluOp(isa::AluOp::AMIN_INT.0);
    /// Unsigned arg-max (u32 index output).
    pub const AMAX_UINT: AluOp = AluOp(isa::AluOp::AMAX_UINT.0);
    /// Unsigned arg-min (u32 index output).
    pub const AMIN_UINT: AluOp = AluOp(isa::AluOp::AMIN_UINT.0);

    /// Every member of the enum, in code order.
    pub fn all() -> impl Iterator<Item = AluOp> {
        ANY_GEN.iter().map(AluOp)
    }

    /// The op for a wire byte, if the byte is a member of the enum on some generation.
    pub fn from_wire(byte: u8) -> Result<AluOp, AluError> {
        if ANY_GEN.has(byte) {
            Ok(AluOp(byte))
        } else {
            Err(AluError::UnknownOp(byte))
        }
    }

    /// The wire byte.
    #[inline]
    pub const fn wire(self) -> u8 {
        self.0
    }

    /// The header name without the `NEURON_ISA_TPB_ALU_OP_` prefix.
    pub fn name(self) -> &'static str {
        tpbsim_isa::AluOp(self.0).name().unwrap_or("?")
    }

    /// The first generation whose enum has this op.
    pub fn since(self) -> Gen {
        Gen::ALL
            .into_iter()
            .find(|g| members::ALU_OP[g.index()].has(self.0))
            .unwrap_or(Gen::V5)
    }

    /// Whether the op exists on `gen`.
    pub fn exists_in(self, gen: Gen) -> bool {
        gen >= self.since()
    }

    /// Integer-engine band (`bits[7:6] == 0b11`).
    #[inline]
    pub const fn is_int_band(self) -> bool {
        self.0 & 0xC0 == 0xC0
    }

    /// The four arg-max / arg-min ops (u32 index output).
    pub const fn is_arg(self) -> bool {
        matches!(
            self,
            AluOp::AMAX_INT | AluOp::AMIN_INT | AluOp::AMAX_UINT | AluOp::AMIN_UINT
        )
    }

    /// Ops that read only src0 (BYPASS, BITWISE_NOT, ABSOLUTE_VALUE, RSQRT, RE_LU, SQUARE,
    /// ABS_VALUE_INT).
    pub const fn is_unary(self) -> bool {
        matches!(
            self,
            AluOp::BYPASS
                | AluOp::BITWISE_NOT
                | AluOp::ABSOLUTE_VALUE
                | AluOp::RSQRT
                | AluOp::RE_LU
                | AluOp::SQUARE
                | AluOp::ABS_VALUE_INT
        )
    }

    /// `is_bitvec_op`: BYPASS, BITWISE_NOT, the four shifts, AND/OR/XOR, CRC32.
    pub const fn is_bitvec(self) -> bool {
        ByteSet::union_of(&sets::BITVEC).has(self.0)
    }

    /// `is_general_bitvec_op` (legal for 0x51 / 0x53): bitvec minus CRC32.
    pub const fn is_general_bitvec(self) -> bool {
        ByteSet::union_of(&sets::GENERAL_BITVEC).has(self.0)
    }

    /// `is_valid_int_aluop`: 0xC4..=0xDD except ABS_VALUE_INT, plus MOD (26 ops).
    pub const fn is_valid_int_aluop(self) -> bool {
        ByteSet::union_of(&sets::VALID_INT_ALUOP).has(self.0)
    }

    /// `is_arith_op` on `gen` (26 ops before v4, 30 from v4).
    pub fn is_arith(self, gen: Gen) -> bool {
        from_v3(&sets::ARITH, gen).has(self.0)
    }

    /// `is_general_arith_op` on `gen` (17 before v4, 21 from v4).
    pub fn is_general_arith(self, gen: Gen) -> bool {
        from_v3(&sets::GENERAL_ARITH, gen).has(self.0)
    }

    /// `is_signed_alu_op`.
    pub const fn is_signed_legal(self) -> bool {
        ByteSet::union_of(&sets::SIGNED_LEGAL).has(self.0)
    }

    /// `is_unsigned_alu_op`.
    pub const fn is_unsigned_legal(self) -> bool {
        ByteSet::union_of(&sets::UNSIGNED_LEGAL).has(self.0)
    }

    /// `is_valid_int_aluop_dve` (v5): the DVE integer subset (15 ops).
    pub const fn is_dve_int(self) -> bool {
        ByteSet::union_of(&sets::DVE_INT_SUBSET).has(self.0)
    }

    /// Signedness fixed by the op itself (integer band and arg ops), if any.
    pub(super) fn fixed_signedness(self) -> Option<Signedness> {
        match (self.is_signed_legal(), self.is_unsigned_legal()) {
            (true, false) => Some(Signedness::Signed),
            (false, true) => Some(Signedness::Unsigned),
            _ => match self {
                AluOp::ABS_VALUE_INT | AluOp::AMAX_INT | AluOp::AMIN_INT => {
                    Some(Signedness::Signed)
                }
                AluOp::AMAX_UINT | AluOp::AMIN_UINT => Some(Signedness::Unsigned),
                _ => None,
            },
        }
    }
}

impl fmt::Debug for AluOp {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}({:#04x})", self.name(), self.0)
    }
}

impl fmt::Display for AluOp {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} ({:#04x})", self.name(), self.0)
    }
}
