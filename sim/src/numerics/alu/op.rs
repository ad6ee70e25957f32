//! The `ALU_OP` wire byte: the members and predicate sets come from the spec's `ALU_OP`
//! enumeration and sets (`tpbsim_isa::formats::{members, sets}`).

use std::fmt;

use tpbsim_isa::formats::{members, sets};
use tpbsim_isa::spec::ByteSet;
use tpbsim_isa::Gen;

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
    pub const BYPASS: AluOp = AluOp(0x00);
    /// `~a`.
    pub const BITWISE_NOT: AluOp = AluOp(0x01);
    /// `a << b`.
    pub const ARITH_SHIFT_LEFT: AluOp = AluOp(0x02);
    /// `a >> b`, sign-replicating.
    pub const ARITH_SHIFT_RIGHT: AluOp = AluOp(0x03);
    /// `a + b`.
    pub const ADD: AluOp = AluOp(0x04);
    /// `a - b`.
    pub const SUBTRACT: AluOp = AluOp(0x05);
    /// `a * b`.
    pub const MULT: AluOp = AluOp(0x06);
    /// `a / b` (fp only).
    pub const DIVIDE: AluOp = AluOp(0x07);
    /// `max(a, b)`.
    pub const MAX: AluOp = AluOp(0x08);
    /// `min(a, b)`.
    pub const MIN: AluOp = AluOp(0x09);
    /// `a & b`.
    pub const BITWISE_AND: AluOp = AluOp(0x0A);
    /// `a | b`.
    pub const BITWISE_OR: AluOp = AluOp(0x0B);
    /// `a ^ b`.
    pub const BITWISE_XOR: AluOp = AluOp(0x0C);
    /// `a != 0 && b != 0`.
    pub const LOGICAL_AND: AluOp = AluOp(0x0D);
    /// `a != 0 || b != 0`.
    pub const LOGICAL_OR: AluOp = AluOp(0x0E);
    /// `(a != 0) ^ (b != 0)`.
    pub const LOGICAL_XOR: AluOp = AluOp(0x0F);
    /// `a << b`, zero fill.
    pub const LOGICAL_SHIFT_LEFT: AluOp = AluOp(0x10);
    /// `a >> b`, zero fill.
    pub const LOGICAL_SHIFT_RIGHT: AluOp = AluOp(0x11);
    /// `a == b`.
    pub const IS_EQ: AluOp = AluOp(0x12);
    /// `a > b`.
    pub const IS_GT: AluOp = AluOp(0x13);
    /// `a >= b`.
    pub const IS_GE: AluOp = AluOp(0x14);
    /// `a <= b`.
    pub const IS_LE: AluOp = AluOp(0x15);
    /// `a < b`.
    pub const IS_LT: AluOp = AluOp(0x16);
    /// `|a - b|`.
    pub const ABSOLUTE_DIFF: AluOp = AluOp(0x17);
    /// `a != b`.
    pub const IS_NE: AluOp = AluOp(0x18);
    /// `|a|`.
    pub const ABSOLUTE_VALUE: AluOp = AluOp(0x19);
    /// `a ^ b` (power; POOL only, fp only).
    pub const POW: AluOp = AluOp(0x1A);
    /// `a % b` (integer, C-style sign of the dividend).
    pub const MOD: AluOp = AluOp(0x1B);
    /// CRC32 (POOL only; semantics not public).
    pub const CRC32: AluOp = AluOp(0x1C);
    /// `1 / sqrt(a)` (POOL only, fp only).
    pub const RSQRT: AluOp = AluOp(0x1D);
    /// `max(|a|, |b|)` (v4+).
    pub const ABS_MAX: AluOp = AluOp(0x20);
    /// `min(|a|, |b|)` (v4+).
    pub const ABS_MIN: AluOp = AluOp(0x21);
    /// `max(a, 0)` (v4+).
    pub const RE_LU: AluOp = AluOp(0x22);
    /// `a * a` (v4+).
    pub const SQUARE: AluOp = AluOp(0x23);
    /// `sign(a) * max(|a|, |b|)` (v5).
    pub const SYMMETRIC_CLAMP: AluOp = AluOp(0x24);
    /// Integer add (signed or unsigned).
    pub const ADD_INT: AluOp = AluOp(0xC4);
    /// Integer multiply, low 32 bits.
    pub const MULT_INT: AluOp = AluOp(0xC5);
    /// Integer subtract.
    pub const SUBTRACT_INT: AluOp = AluOp(0xC6);
    /// Integer divide (truncating).
    pub const DIVIDE_INT: AluOp = AluOp(0xC7);
    /// Integer remainder (sign of the dividend).
    pub const MOD_INT: AluOp = AluOp(0xC8);
    /// Integer `==`.
    pub const IS_EQUAL_INT: AluOp = AluOp(0xC9);
    /// Integer `!=`.
    pub const IS_NE_INT: AluOp = AluOp(0xCA);
    /// Signed `max(|a|, |b|)`.
    pub const ABS_MAX_INT: AluOp = AluOp(0xCB);
    /// Signed `min(|a|, |b|)`.
    pub const ABS_MIN_INT: AluOp = AluOp(0xCC);
    /// Signed `|a - b|`.
    pub const ABS_DIFF_INT: AluOp = AluOp(0xCD);
    /// Signed `|a|` (single source).
    pub const ABS_VALUE_INT: AluOp = AluOp(0xCE);
    /// Signed max.
    pub const MAX_INT: AluOp = AluOp(0xCF);
    /// Signed min.
    pub const MIN_INT: AluOp = AluOp(0xD0);
    /// Signed `>`.
    pub const IS_GT_INT: AluOp = AluOp(0xD1);
    /// Signed `>=`.
    pub const IS_GE_INT: AluOp = AluOp(0xD2);
    /// Signed `<=`.
    pub const IS_LE_INT: AluOp = AluOp(0xD3);
    /// Signed `<`.
    pub const IS_LT_INT: AluOp = AluOp(0xD4);
    /// Unsigned max.
    pub const MAX_UINT: AluOp = AluOp(0xD5);
    /// Unsigned min.
    pub const MIN_UINT: AluOp = AluOp(0xD6);
    /// Unsigned `>`.
    pub const IS_GT_UINT: AluOp = AluOp(0xD7);
    /// Unsigned `>=`.
    pub const IS_GE_UINT: AluOp = AluOp(0xD8);
    /// Unsigned `<=`.
    pub const IS_LE_UINT: AluOp = AluOp(0xD9);
    /// Unsigned `<`.
    pub const IS_LT_UINT: AluOp = AluOp(0xDA);
    /// Unsigned multiply, low 32 bits.
    pub const MULT_UINT: AluOp = AluOp(0xDB);
    /// Unsigned divide.
    pub const DIVIDE_UINT: AluOp = AluOp(0xDC);
    /// Unsigned remainder.
    pub const MOD_UINT: AluOp = AluOp(0xDD);
    /// Signed arg-max (u32 index output).
    pub const AMAX_INT: AluOp = AluOp(0xDE);
    /// Signed arg-min (u32 index output).
    pub const AMIN_INT: AluOp = AluOp(0xDF);
    /// Unsigned arg-max (u32 index output).
    pub const AMAX_UINT: AluOp = AluOp(0xE0);
    /// Unsigned arg-min (u32 index output).
    pub const AMIN_UINT: AluOp = AluOp(0xE1);

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
        matches!(self.0, 0xDE..=0xE1)
    }

    /// Ops that read only src0 (BYPASS, BITWISE_NOT, ABSOLUTE_VALUE, RSQRT, RE_LU, SQUARE,
    /// ABS_VALUE_INT).
    pub const fn is_unary(self) -> bool {
        matches!(self.0, 0x00 | 0x01 | 0x19 | 0x1D | 0x22 | 0x23 | 0xCE)
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
            _ => match self.0 {
                0xCE | 0xDE | 0xDF => Some(Signedness::Signed),
                0xE0 | 0xE1 => Some(Signedness::Unsigned),
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
