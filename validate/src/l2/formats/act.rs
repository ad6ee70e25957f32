//! `is_valid_activate`: Activate 0x21 (`S3D3_AC`), all generations.
//!
//! Layout: isa-facts §4.2 (header names, §10 #7/#8). Gate facts: C walrus/l2-wire-validator.md
//! (in elements == out elements, `is_valid_enum(14, ActivationFunctionType)`, bias/scale
//! checks, `s3d3_ac_imm/scale_checks`).

use super::super::addr::{self, Operand, Placement};
use super::super::enums;
use super::super::rule::{rule, Allowed, Ck, Field, Sink};
use super::super::table::{
    check, check_dtypes, check_regions, check_windows, src_dst, DtypeRule, FieldRule, GateTable,
    OperandRule, Part, Tag,
};
use super::{float_finite, spec_reserved, DtypeOpts};
use tpbsim_isa::formats::loc;

/// `imm_src` (IMM_SRC).
pub const IMM_SRC: Field = Field::at(loc::activate::IMM_SRC);
/// `scale_src` (IMM_SRC).
pub const SCALE_SRC: Field = Field::at(loc::activate::SCALE_SRC);
/// `accumulator_cmd` (ACCUM_CMD).
pub const ACC_CMD: Field = Field::at(loc::activate::ACCUMULATOR_CMD);
/// `bias_src_n` (IMM_SRC_N, inverted).
pub const BIAS_SRC_N: Field = Field::at(loc::activate::BIAS_SRC_N);
/// Source pattern.
pub const SRC: Operand = Operand::at(loc::activate::SRC);
/// Input dtype (low nibble of the pair byte).
pub const IN_DTYPE: Field = Field::sub_at(loc::activate::IN_BIAS_DTYPES, "in (low nibble)");
/// Bias dtype (high nibble of the pair byte).
pub const BIAS_DTYPE: Field = Field::sub_at(loc::activate::IN_BIAS_DTYPES, "bias (high nibble)");
/// Output dtype.
pub const OUT_DTYPE: Field = Field::at(loc::activate::OUT_DTYPE);
/// Active partitions.
pub const NUM_ACTIVE: Field = Field::at(loc::activate::NUM_ACTIVE_PARTITIONS);
/// Wire activation function code.
pub const FUNC: Field = Field::at(loc::activate::ACTIVATION_FUNC);
/// Scale immediate (f32), read when `scale_src` is INSTRUCTION.
pub const SCALE: Field = Field::at(loc::activate::SCALE_VALUE);
/// Bias: an ADDR4 (POINTER) or an f32 (INSTRUCTION).
pub const BIAS: Field = Field::at(loc::activate::BIAS);
/// Function parameter immediate.
pub const IMM: Field = Field::at(loc::activate::IMM);
/// Destination pattern.
pub const DST: Operand = Operand::at(loc::activate::DST);

rule!(IMM_SRC_ENUM, "is_valid_enum(IMM_SRC)", Format,
    public "isa-facts §6.7 (IMM_SRC INSTRUCTION 0, POINTER 1, REG_PTR 2; IMM_SRC_N POINTER 0, INSTRUCTION 1, REG 2)",
    "immediate-source selectors are IMM_SRC / IMM_SRC_N members");
rule!(ACCUM_CMD_ENUM, "is_valid_enum(ACCUM_CMD)", Format,
    public "isa-facts §6.5 (ACCUM_CMD IDLE..LOAD_ACCUMULATE; typeId 45 AccumCmd)",
    "accumulator_cmd is an ACCUM_CMD member (0..=4)");
rule!(ACT_FUNC_ENUM, "is_valid_enum(ActivationFunctionType)", Format,
    project "only the published function codes are known; other codes are reported as not checked (the header enum has members whose codes are not public)",
    "activation_func is an ActivationFunctionType wire code");
rule!(ACT_ELEMENTS, "is_valid_activate.elements", Format,
    public "C walrus/l2-wire-validator.md (is_valid_activate: in-elem == out-elem)",
    "the source and destination patterns have the same element count");
rule!(ACT_NUM_ACTIVE, "is_valid_activate.num_active_partitions", Format,
    public "isa-facts §4.2 (num_active_partitions)",
    "num_active_partitions is 1..=128");

/// The prelu-style function whose parameter immediate the compiler writes.
pub const FUNC_PRELU: u8 = 4;

/// The immediate-source codes, as the diagnostic lists them.
const IMM_SRC_TEXT: &str = "INSTRUCTION 0, POINTER 1, REG_PTR 2";

/// Enum stage.
pub const ENUMS: &[FieldRule] = &[
    FieldRule::set(&IMM_SRC_ENUM, IMM_SRC, enums::IMM_SRC, IMM_SRC_TEXT),
    FieldRule::set(&IMM_SRC_ENUM, SCALE_SRC, enums::IMM_SRC, IMM_SRC_TEXT),
    FieldRule::set(&ACCUM_CMD_ENUM, ACC_CMD, enums::ACCUM_CMD, "0..=4"),
    FieldRule::set(
        &IMM_SRC_ENUM,
        BIAS_SRC_N,
        enums::IMM_SRC_N,
        "POINTER 0, INSTRUCTION 1, REG 2",
    ),
];

/// Dtype stage (the bias dtype is checked only when the bias is a pointer).
pub const DTYPES: &[DtypeRule] = &[
    DtypeRule::nibble(IN_DTYPE, false, DtypeOpts::PLAIN),
    DtypeRule::byte(OUT_DTYPE, DtypeOpts::FP32R),
    DtypeRule::nibble(BIAS_DTYPE, true, DtypeOpts::PLAIN).when(BIAS_SRC_N, bias_pointer),
];

/// True when `bias_src` (0) makes the bias a pointer whose dtype is read.
const fn bias_pointer(bias_src: u8) -> bool {
    bias_src == 0
}

/// Geometry stage.
pub const GEOMETRY: &[FieldRule] = &[FieldRule::count(&ACT_NUM_ACTIVE, NUM_ACTIVE)];

/// The rule data of `is_valid_activate`.
pub const TABLE: GateTable = GateTable {
    fields: &[ENUMS, GEOMETRY],
    dtypes: &[DTYPES],
    operands: &[OPERANDS],
};
/// Placement stage: the source and destination regions and partition windows (the bias
/// pointer stays procedural: a start address read only for `bias_src_n` 0).
pub const OPERANDS: &[OperandRule] = &src_dst(
    [SRC, DST],
    3,
    [Tag::Of(IN_DTYPE, Part::Low), Tag::Of(OUT_DTYPE, Part::Byte)],
    NUM_ACTIVE,
    true,
);

/// `is_valid_activate`.
pub fn is_valid_activate<S: Sink>(ck: &mut Ck<S>) {
    // (3) enums
    check(ck, ENUMS);
    let func = ck.get(FUNC) as u8;
    if !enums::ACT_FUNC_KNOWN.has(func) {
        ck.not_checked(
            &ACT_FUNC_ENUM,
            FUNC,
            Allowed::Text("a published ActivationFunctionType wire code"),
        );
    }
    // (4) reserved
    spec_reserved(ck);
    if ck.done() {
        return;
    }
    // (5) dtypes
    let bias_dt = ck.get(BIAS_DTYPE) as u8 >> 4;
    check_dtypes(ck, DTYPES);
    if ck.done() {
        return;
    }
    let bias_src = ck.get(BIAS_SRC_N) as u8;
    // (6) immediates the instruction reads, operands, geometry
    if ck.get(SCALE_SRC) == 0 {
        float_finite(ck, SCALE);
    }
    match bias_src {
        0 => {
            addr::tensor_start_addr_valid(ck, BIAS, bias_dt, Placement::READ_ANY);
        }
        1 => float_finite(ck, BIAS),
        _ => {}
    }
    if func == FUNC_PRELU && ck.get(IMM_SRC) == 0 {
        float_finite(ck, IMM);
    }
    check(ck, GEOMETRY);
    let [ein, eout, ..] = check_regions(ck, OPERANDS);
    if ein != 0 && eout != 0 && ein != eout {
        ck.fail(&ACT_ELEMENTS, DST.num(3, 2), eout, Allowed::Eq(ein));
    }
    check_windows(ck, OPERANDS);
}

#[cfg(test)]
mod tests {
    use super::super::testutil::*;
    use super::*;
    use crate::l2::dtype;
    use tpbsim_isa::{Bundle, Gen};

    fn act() -> Bundle {
        let mut b = hdr(0x21);
        b.0[15] = 1; // bias inline
        t3(&mut b, 16, addr::PSUM_BASE, [1, 4, 32]);
        b.0[32] = dtype::FP32;
        b.0[33] = dtype::BF16;
        b.0[34] = 64;
        b.0[35] = 5; // sigmoid
        b.set_u32(36, 0x3F80_0000);
        t3(&mut b, 48, 0x100, [1, 2, 64]);
        b
    }

    fn f(b: &Bundle) -> Vec<&'static str> {
        fails(b, Gen::V3, None, is_valid_activate)
    }

    #[test]
    fn legal() {
        assert!(f(&act()).is_empty(), "{:?}", f(&act()));
    }

    #[test]
    fn elements_and_immediates() {
        let mut b = act();
        b.set_u16(48 + 14, 63);
        assert_eq!(f(&b), ["is_valid_activate.elements"]);
        let mut b = act();
        b.set_u32(36, 0x7F80_0000); // +Inf scale read inline
        assert_eq!(f(&b), ["float_field_finite"]);
        b.0[13] = 1; // scale from a pointer: the inline word is not read
        assert!(f(&b).is_empty());
        let mut b = act();
        b.set_u32(44, 0xFFC0_0000); // NaN parameter ...
        assert!(f(&b).is_empty()); // ... not read by sigmoid
        b.0[35] = FUNC_PRELU;
        assert_eq!(f(&b), ["float_field_finite"]);
        // The bias word is read inline (source 1) and only then must be finite.
        for (word, finite) in [
            (0x3F80_0000u32, true),
            (0x7F80_0000, false),
            (0xFFC0_0000, false),
        ] {
            let mut b = act();
            b.set_u32(BIAS.start as usize, word);
            if finite {
                assert!(f(&b).is_empty(), "{word:#x}: {:?}", f(&b));
            } else {
                assert_eq!(f(&b), ["float_field_finite"], "{word:#x}");
            }
        }
    }

    #[test]
    fn enums_and_func() {
        let mut b = act();
        b.0[14] = 5;
        assert_eq!(f(&b), ["is_valid_enum(ACCUM_CMD)"]);
        let mut b = act();
        b.0[35] = 11;
        assert!(f(&b).is_empty());
        assert_eq!(
            unchecked(&b, Gen::V3, None, is_valid_activate),
            ["is_valid_enum(ActivationFunctionType)"]
        );
    }

    #[test]
    fn psum_write_two_byte_dtype() {
        let mut b = act();
        b.set_u32(48, addr::PSUM_BASE + 0x800);
        assert_eq!(f(&b), ["tensor_start_addr_valid.psum_write_dtype"]);
        b.0[33] = dtype::FP32;
        assert!(f(&b).is_empty());
    }

    #[test]
    fn pool_engine_psum_on_v4() {
        let b = act();
        assert!(fails(&b, Gen::V4, Some(1), is_valid_activate).is_empty());
        assert_eq!(
            fails(&b, Gen::V4, Some(2), is_valid_activate),
            ["pool_operand_in_sbuf"]
        );
    }
}
