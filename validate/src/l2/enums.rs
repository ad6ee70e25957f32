//! Enum domains and predicate sets the L2 rules range-check against, as 256-bit byte sets.
//!
//! Values follow the shipped ISA headers (isa-facts §2.3–§2.4, §6.3–§6.7). Where a header
//! enum is only partly public (REG-family wait modes, activation functions) the set holds the
//! published members and the rule reports the rest as not checked.

use tpbsim_isa::{AluOp, Gen};

use tpbsim_isa::formats::{members, sets};
use tpbsim_isa::spec::ByteSet;

/// `NEURON_ISA_TPB_WAIT_MODE` members: NONE, SEM_EQ/LT/LE/GT/GE_IMM, EVT_SET,
/// EVT_SET_THEN_CLEAR, EVT_CLEAR, EVT_CLEAR_THEN_SET and the header-listed REG forms
/// 0x81..0x85.
pub const WAIT_MODE: ByteSet = members::WAIT_MODE[0];

/// Wait modes that compare a semaphore against the events' value word.
pub const WAIT_USES_VALUE: ByteSet = ByteSet::of(&[1, 2, 3, 4, 5, 0x81, 0x82, 0x83, 0x84, 0x85]);

/// Wait modes whose value word is a register id (REG family).
pub const WAIT_REG: ByteSet = ByteSet::of(&[0x81, 0x82, 0x83, 0x84, 0x85]);

/// `NEURON_ISA_TPB_UPDATE_MODE` members the header lists (spec set `update_mode_listed`):
/// NONE, the `_READ` set, the `_COMPLETE` set (READ + 16) and the REG forms 0x97 / 0x99.
pub const UPDATE_MODE: ByteSet = sets::UPDATE_MODE_LISTED[0];

/// Update modes that consume the events' value word (ADD/SUB/WR immediates and REG forms).
pub const UPDATE_USES_VALUE: ByteSet = ByteSet::of(&[5, 7, 9, 0x15, 0x17, 0x19, 0x97, 0x99]);

/// Update modes whose value word is a register id.
pub const UPDATE_REG: ByteSet = ByteSet::of(&[0x97, 0x99]);

/// Number of address/shape registers a register-form operand may name.
pub const NUM_ADDR_REGISTERS: u32 = tpbsim_isa::Geometry::at(Gen::V4).address_registers;

/// `IMM_SRC`: INSTRUCTION 0, POINTER 1, REG_PTR 2.
pub const IMM_SRC: ByteSet = members::IMM_SRC[0];
/// `IMM_SRC_N` (inverted): POINTER 0, INSTRUCTION 1, REG 2.
pub const IMM_SRC_N: ByteSet = members::IMM_SRC_N[0];
/// `ACCUM_CMD`: IDLE 0, ZERO 1, ACCUMULATE 2, ZERO_ACCUMULATE 3, LOAD_ACCUMULATE 4.
pub const ACCUM_CMD: ByteSet = members::ACCUM_CMD[0];
/// `REDUCE_CMD`: IDLE 0, RESET 1, REDUCE 2, RESET_REDUCE 3.
pub const REDUCE_CMD: ByteSet = members::REDUCE_CMD[0];
/// `TENSOR_SUBDIM`: UNUSED 0 .. XYZW 4.
pub const TENSOR_SUBDIM: ByteSet = members::TENSOR_SUBDIM[0];
/// `PE_FP32MODE`: None 0, Low 1, High 2, Low_High 3.
pub const PE_FP32MODE: ByteSet = members::PE_FP32MODE[0];
/// `PERF_OPT_MODE`: None 0, DoubleRow 1, DoubleColumn 2, DoublePixel 3.
pub const PERF_OPT_MODE: ByteSet = ByteSet::range(0, 3);

/// Legal `psum_accumulate_flags` bytes on every generation: {0,1,2,3,4,6} (START with
/// ACCUMULATE is illegal). The CoreV2 encoder itself sets the ACCUMULATE bit and its
/// `checkAccumulationFlag` validates the byte (docs/isa.md conflict P10).
const fn psum_accumulate_flags_of(gen: Gen) -> ByteSet {
    sets::PSUM_ACCUMULATE_LEGAL[gen.index()]
}

/// Legal `psum_zero_region` codes (spec set `psum_zero_region_legal`): v2/v3 headers define
/// only SIZE2048 = 0; v4 adds 1..3.
const fn psum_zero_region_of(gen: Gen) -> ByteSet {
    sets::PSUM_ZERO_REGION_LEGAL[gen.index()]
}

/// Activation function wire codes published in the function catalog (isa-facts §6.4) plus
/// memset_zero 130. The header enum has further members (derivative_relu, ...) whose codes
/// are not public.
pub const ACT_FUNC_KNOWN: ByteSet = members::ACT_FUNC[0];

// ---- ALU ops (isa-facts §6.3) ----

/// BYPASS.
pub const BYPASS: u8 = AluOp::BYPASS.0;
/// POW (Pool only).
pub const POW: u8 = AluOp::POW.0;
/// MOD.
pub const MOD: u8 = AluOp::MOD.0;
/// CRC32 (Pool only).
pub const CRC32: u8 = AluOp::CRC32.0;
/// RSQRT (Pool only).
pub const RSQRT: u8 = AluOp::RSQRT.0;
/// MAX.
pub const MAX: u8 = AluOp::MAX.0;

/// ALU ops that only the Pool (GpSimd) engine executes.
pub const ALU_POOL_ONLY: ByteSet = ByteSet::of(&[POW, CRC32, RSQRT]);

/// Members of `NEURON_ISA_TPB_ALU_OP` on `gen`: 0x00..0x1D and the int band 0xC4..0xC6 on all
/// generations (33 on v2); v3 adds 0xC7..0xE1 (60); v4 adds 0x20..0x23 (64); v5 adds 0x24.
const fn alu_op_of(gen: Gen) -> ByteSet {
    members::ALU_OP[gen.index()]
}

/// General bitvec ops (legal for 0x51 / 0x53): BYPASS, BITWISE_NOT, both arith shifts, both
/// logical shifts, AND, OR, XOR.
pub const GENERAL_BITVEC: ByteSet = sets::GENERAL_BITVEC[0];

/// Integer-band ops of `gen` (`valid int aluop`: 0xC4..0xDD except ABS_VALUE_INT 0xCE, plus
/// MOD 0x1B); v2 has only ADD/MULT/SUB_INT.
const fn valid_int_aluop_of(gen: Gen) -> ByteSet {
    sets::VALID_INT_ALUOP[gen.index()]
}

/// General arith ops (17; 21 on v4+): BYPASS, ADD, SUB, MULT, MAX, MIN, LOGICAL_AND/OR/XOR,
/// IS_EQ/GT/GE/LE/LT/NE, ABS_DIFF, ABS_VALUE (+ ABS_MAX, ABS_MIN, RE_LU, SQUARE on v4+).
const fn general_arith_of(gen: Gen) -> ByteSet {
    sets::GENERAL_ARITH[gen.index()]
}

/// Ops legal for TensorTensor arith 0x41: general arith ∪ {POW} ∪ valid int aluop.
const fn tt_arith_of(gen: Gen) -> ByteSet {
    general_arith_of(gen).with(POW).or(valid_int_aluop_of(gen))
}

/// Arith ops (26 on v3, 30 on v4+) for TensorScalar arith ops.
const fn arith_of(gen: Gen) -> ByteSet {
    sets::ARITH[gen.index()]
}

/// Ops whose integer operands must be signed.
pub const SIGNED_ONLY: ByteSet =
    ByteSet::union_of(&sets::SIGNED_LEGAL).minus(ByteSet::union_of(&sets::UNSIGNED_LEGAL));
/// Ops whose integer operands must be unsigned.
pub const UNSIGNED_ONLY: ByteSet =
    ByteSet::union_of(&sets::UNSIGNED_LEGAL).minus(ByteSet::union_of(&sets::SIGNED_LEGAL));

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
