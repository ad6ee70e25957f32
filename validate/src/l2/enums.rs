//! Enum domains and predicate sets the L2 rules range-check against, as 256-bit byte sets.
//!
//! Values follow the shipped ISA headers (isa-facts §2.3–§2.4, §6.3–§6.7). Where a header
//! enum is only partly public (REG-family wait modes, activation functions) the set holds the
//! published members and the rule reports the rest as not checked.

use tpbsim_isa::Gen;

/// A set of byte values (bit `v` set iff `v` is a member).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct ByteSet(pub [u64; 4]);

impl ByteSet {
    /// The empty set.
    pub const EMPTY: ByteSet = ByteSet([0; 4]);

    /// Set of the listed values.
    pub const fn of(vals: &[u8]) -> ByteSet {
        let mut s = [0u64; 4];
        let mut i = 0;
        while i < vals.len() {
            let v = vals[i] as usize;
            s[v >> 6] |= 1 << (v & 63);
            i += 1;
        }
        ByteSet(s)
    }

    /// Set of the inclusive range `lo..=hi`.
    pub const fn range(lo: u8, hi: u8) -> ByteSet {
        let mut s = [0u64; 4];
        let mut v = lo as usize;
        while v <= hi as usize {
            s[v >> 6] |= 1 << (v & 63);
            v += 1;
        }
        ByteSet(s)
    }

    /// Union.
    pub const fn or(self, o: ByteSet) -> ByteSet {
        ByteSet([
            self.0[0] | o.0[0],
            self.0[1] | o.0[1],
            self.0[2] | o.0[2],
            self.0[3] | o.0[3],
        ])
    }

    /// Difference.
    pub const fn minus(self, o: ByteSet) -> ByteSet {
        ByteSet([
            self.0[0] & !o.0[0],
            self.0[1] & !o.0[1],
            self.0[2] & !o.0[2],
            self.0[3] & !o.0[3],
        ])
    }

    /// Add one value.
    pub const fn with(self, v: u8) -> ByteSet {
        let mut s = self.0;
        s[(v as usize) >> 6] |= 1 << (v & 63);
        ByteSet(s)
    }

    /// Membership.
    #[inline]
    pub const fn has(&self, v: u8) -> bool {
        (self.0[(v as usize) >> 6] >> (v & 63)) & 1 == 1
    }

    /// Number of members.
    pub const fn len(&self) -> u32 {
        self.0[0].count_ones()
            + self.0[1].count_ones()
            + self.0[2].count_ones()
            + self.0[3].count_ones()
    }

    /// True when empty.
    pub const fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Members in ascending order.
    pub fn iter(self) -> impl Iterator<Item = u8> {
        (0u16..256).map(|v| v as u8).filter(move |v| self.has(*v))
    }
}

/// `NEURON_ISA_TPB_WAIT_MODE` members: NONE, SEM_EQ/LT/LE/GT/GE_IMM, EVT_SET,
/// EVT_SET_THEN_CLEAR, EVT_CLEAR, EVT_CLEAR_THEN_SET and the header-listed REG forms
/// 0x81..0x85.
pub const WAIT_MODE: ByteSet =
    ByteSet::of(&[0, 1, 2, 3, 4, 5, 6, 7, 14, 15, 0x81, 0x82, 0x83, 0x84, 0x85]);

/// Wait modes that compare a semaphore against the events' value word.
pub const WAIT_USES_VALUE: ByteSet = ByteSet::of(&[1, 2, 3, 4, 5, 0x81, 0x82, 0x83, 0x84, 0x85]);

/// Wait modes whose value word is a register id (REG family).
pub const WAIT_REG: ByteSet = ByteSet::of(&[0x81, 0x82, 0x83, 0x84, 0x85]);

/// `NEURON_ISA_TPB_UPDATE_MODE` members: NONE, the `_READ` set, the `_COMPLETE` set (READ + 16)
/// and the header-listed REG forms 0x97 / 0x99.
pub const UPDATE_MODE: ByteSet = ByteSet::of(&[
    0, 1, 2, 3, 4, 5, 7, 9, 0x11, 0x12, 0x13, 0x14, 0x15, 0x17, 0x19, 0x97, 0x99,
]);

/// Update modes that consume the events' value word (ADD/SUB/WR immediates and REG forms).
pub const UPDATE_USES_VALUE: ByteSet = ByteSet::of(&[5, 7, 9, 0x15, 0x17, 0x19, 0x97, 0x99]);

/// Update modes whose value word is a register id.
pub const UPDATE_REG: ByteSet = ByteSet::of(&[0x97, 0x99]);

/// Number of address/shape registers a register-form operand may name.
pub const NUM_ADDR_REGISTERS: u32 = 0x40;

/// `IMM_SRC`: INSTRUCTION 0, POINTER 1, REG_PTR 2.
pub const IMM_SRC: ByteSet = ByteSet::range(0, 2);
/// `IMM_SRC_N` (inverted): POINTER 0, INSTRUCTION 1, REG 2.
pub const IMM_SRC_N: ByteSet = ByteSet::range(0, 2);
/// `ACCUM_CMD`: IDLE 0, ZERO 1, ACCUMULATE 2, ZERO_ACCUMULATE 3, LOAD_ACCUMULATE 4.
pub const ACCUM_CMD: ByteSet = ByteSet::range(0, 4);
/// `REDUCE_CMD`: IDLE 0, RESET 1, REDUCE 2, RESET_REDUCE 3.
pub const REDUCE_CMD: ByteSet = ByteSet::range(0, 3);
/// `TENSOR_SUBDIM`: UNUSED 0 .. XYZW 4.
pub const TENSOR_SUBDIM: ByteSet = ByteSet::range(0, 4);
/// `PE_FP32MODE`: None 0, Low 1, High 2, Low_High 3.
pub const PE_FP32MODE: ByteSet = ByteSet::range(0, 3);
/// `PERF_OPT_MODE`: None 0, DoubleRow 1, DoubleColumn 2, DoublePixel 3.
pub const PERF_OPT_MODE: ByteSet = ByteSet::range(0, 3);

/// Legal `psum_accumulate_flags` bytes on every generation: {0,1,2,3,4,6} (START with
/// ACCUMULATE is illegal). The CoreV2 encoder itself sets the ACCUMULATE bit and its
/// `checkAccumulationFlag` validates the byte (docs/isa.md conflict P10).
const fn psum_accumulate_flags_of(_gen: Gen) -> ByteSet {
    ByteSet::of(&[0, 1, 2, 3, 4, 6])
}

/// Legal `psum_zero_region` codes: v2/v3 headers define only SIZE2048 = 0; v4 adds 1..3.
const fn psum_zero_region_of(gen: Gen) -> ByteSet {
    match gen {
        Gen::V2 | Gen::V3 => ByteSet::of(&[0]),
        _ => ByteSet::range(0, 3),
    }
}

/// Activation function wire codes published in the function catalog (isa-facts §6.4) plus
/// memset_zero 130. The header enum has further members (derivative_relu, ...) whose codes
/// are not public.
pub const ACT_FUNC_KNOWN: ByteSet = ByteSet::of(&[
    1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 19, 21, 22, 23, 24, 25, 26, 28, 29, 30, 31, 32, 33, 34, 35, 36,
    37, 38, 128, 129, 130,
]);

// ---- ALU ops (isa-facts §6.3) ----

/// BYPASS.
pub const BYPASS: u8 = 0x00;
/// POW (Pool only).
pub const POW: u8 = 0x1A;
/// MOD.
pub const MOD: u8 = 0x1B;
/// CRC32 (Pool only).
pub const CRC32: u8 = 0x1C;
/// RSQRT (Pool only).
pub const RSQRT: u8 = 0x1D;
/// MAX.
pub const MAX: u8 = 0x08;

/// ALU ops that only the Pool (GpSimd) engine executes.
pub const ALU_POOL_ONLY: ByteSet = ByteSet::of(&[POW, CRC32, RSQRT]);

/// Members of `NEURON_ISA_TPB_ALU_OP` on `gen`: 0x00..0x1D and the int band 0xC4..0xC6 on all
/// generations (33 on v2); v3 adds 0xC7..0xE1 (60); v4 adds 0x20..0x23 (64); v5 adds 0x24.
const fn alu_op_of(gen: Gen) -> ByteSet {
    let base = ByteSet::range(0x00, 0x1D).or(ByteSet::range(0xC4, 0xC6));
    match gen {
        Gen::V2 => base,
        Gen::V3 => base.or(ByteSet::range(0xC7, 0xE1)),
        Gen::V4 => base
            .or(ByteSet::range(0xC7, 0xE1))
            .or(ByteSet::range(0x20, 0x23)),
        Gen::V5 => base
            .or(ByteSet::range(0xC7, 0xE1))
            .or(ByteSet::range(0x20, 0x24)),
    }
}

/// General bitvec ops (legal for 0x51 / 0x53): BYPASS, BITWISE_NOT, both arith shifts, both
/// logical shifts, AND, OR, XOR.
pub const GENERAL_BITVEC: ByteSet =
    ByteSet::of(&[0x00, 0x01, 0x02, 0x03, 0x10, 0x11, 0x0A, 0x0B, 0x0C]);

/// Integer-band ops of `gen` (`valid int aluop`: 0xC4..0xDD except ABS_VALUE_INT 0xCE, plus
/// MOD 0x1B); v2 has only ADD/MULT/SUB_INT.
const fn valid_int_aluop_of(gen: Gen) -> ByteSet {
    match gen {
        Gen::V2 => ByteSet::of(&[0xC4, 0xC5, 0xC6, MOD]),
        _ => ByteSet::range(0xC4, 0xDD)
            .minus(ByteSet::of(&[0xCE]))
            .with(MOD),
    }
}

/// General arith ops (17; 21 on v4+): BYPASS, ADD, SUB, MULT, MAX, MIN, LOGICAL_AND/OR/XOR,
/// IS_EQ/GT/GE/LE/LT/NE, ABS_DIFF, ABS_VALUE (+ ABS_MAX, ABS_MIN, RE_LU, SQUARE on v4+).
const fn general_arith_of(gen: Gen) -> ByteSet {
    let base = ByteSet::of(&[
        0x00, 0x04, 0x05, 0x06, 0x08, 0x09, 0x0D, 0x0E, 0x0F, 0x12, 0x13, 0x14, 0x15, 0x16, 0x18,
        0x17, 0x19,
    ]);
    match gen {
        Gen::V2 | Gen::V3 => base,
        _ => base.or(ByteSet::range(0x20, 0x23)),
    }
}

/// Ops legal for TensorTensor arith 0x41: general arith ∪ {POW} ∪ valid int aluop.
const fn tt_arith_of(gen: Gen) -> ByteSet {
    general_arith_of(gen).with(POW).or(valid_int_aluop_of(gen))
}

/// Arith ops (26 on v3, 30 on v4+) for TensorScalar arith ops.
const fn arith_of(gen: Gen) -> ByteSet {
    general_arith_of(gen)
        .or(ByteSet::of(&[0x07, POW, MOD, RSQRT]))
        .or(match gen {
            Gen::V2 => ByteSet::of(&[0xC4, 0xC5, 0xC6]),
            _ => ByteSet::of(&[0xC4, 0xC5, 0xC6, 0xC7, 0xC8]),
        })
}

/// Ops whose integer operands must be signed.
pub const SIGNED_ONLY: ByteSet =
    ByteSet::of(&[0xCB, 0xCC, 0xCD, 0xCF, 0xD0, 0xD1, 0xD2, 0xD3, 0xD4]);
/// Ops whose integer operands must be unsigned.
pub const UNSIGNED_ONLY: ByteSet =
    ByteSet::of(&[0xD5, 0xD6, 0xD7, 0xD8, 0xD9, 0xDA, 0xDB, 0xDC, 0xDD]);

macro_rules! per_gen_fn {
    ($($name:ident, $of:ident, $table:ident;)*) => {$(
        const $table: [ByteSet; 4] = [$of(Gen::V2), $of(Gen::V3), $of(Gen::V4), $of(Gen::V5)];
        #[doc = concat!("The `", stringify!($name), "` set of `gen` (precomputed).")]
        #[inline]
        pub fn $name(gen: Gen) -> ByteSet {
            $table[gen.index()]
        }
    )*};
}

per_gen_fn! {
    psum_accumulate_flags, psum_accumulate_flags_of, PSUM_ACCUMULATE_FLAGS;
    psum_zero_region, psum_zero_region_of, PSUM_ZERO_REGION;
    alu_op, alu_op_of, ALU_OP;
    valid_int_aluop, valid_int_aluop_of, VALID_INT_ALUOP;
    general_arith, general_arith_of, GENERAL_ARITH;
    tt_arith, tt_arith_of, TT_ARITH;
    arith, arith_of, ARITH;
}

/// True for integer-band ALU ops (bits 7:6 = 11).
#[inline]
pub const fn is_int_band(op: u8) -> bool {
    op & 0xC0 == 0xC0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn alu_counts_match_header_enum_sizes() {
        assert_eq!(alu_op(Gen::V2).len(), 33);
        assert_eq!(alu_op(Gen::V3).len(), 60);
        assert_eq!(alu_op(Gen::V4).len(), 64);
        assert_eq!(alu_op(Gen::V5).len(), 65);
        assert_eq!(GENERAL_BITVEC.len(), 9);
        assert_eq!(general_arith(Gen::V3).len(), 17);
        assert_eq!(general_arith(Gen::V4).len(), 21);
        assert_eq!(valid_int_aluop(Gen::V3).len(), 26);
        assert_eq!(arith(Gen::V3).len(), 26);
        assert_eq!(arith(Gen::V4).len(), 30);
    }

    #[test]
    fn sets() {
        assert!(WAIT_MODE.has(0x85) && !WAIT_MODE.has(8));
        assert!(UPDATE_MODE.has(0x19) && !UPDATE_MODE.has(6));
        assert!(psum_accumulate_flags(Gen::V4).has(6) && !psum_accumulate_flags(Gen::V4).has(5));
        assert!(psum_accumulate_flags(Gen::V3).has(4) && !psum_accumulate_flags(Gen::V3).has(5));
        assert_eq!(ByteSet::range(250, 255).iter().count(), 6);
        assert!(tt_arith(Gen::V3).has(POW) && !tt_arith(Gen::V3).has(CRC32));
    }
}
