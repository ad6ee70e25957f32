//! The other Activation-engine formats: `is_valid_s2d2_ac` (Activate2 0x25, v4),
//! `is_valid_s3d3_aq` (ActivateQuantize 0x22) and `is_valid_d1_rd` (ReadAccumulator 0x24 on
//! ACT, DveReadAccumulator 0x9B on DVE).
//!
//! Layouts: isa-facts §4.2 (G firmware/kernels/activate-pwl.md header names, C
//! isa/activation-encoding.md store sites; the Activate2 descriptor slots are inferred from
//! slot arithmetic).

use super::super::addr::{self, Operand, Placement};
use super::super::dtype;
use super::super::enums;
use super::super::rule::{rule, Allowed, Ck, Field, Sink};
use super::super::table::{
    check, check_dtypes, check_regions, check_windows, src_dst, DtypeRule, FieldRule, GateTable,
    OperandRule, Part, Tag,
};
use super::act::{ACT_FUNC_ENUM, IMM_SRC_ENUM};
use super::{active_channels_row, float_finite, spec_reserved, DtypeOpts};
use tpbsim_isa::formats::loc;
use tpbsim_isa::spec::ByteSet;

rule!(ALU_OP_ENUM, "is_valid_enum(ALU_OP)", Format,
    public "isa-facts §6.3 (NEURON_ISA_TPB_ALU_OP members per generation: 33 / 60 / 64)",
    "an ALU_OP field holds a member of the generation's ALU_OP enum");
rule!(REDUCE_CMD_ENUM, "is_valid_enum(REDUCE_CMD)", Format,
    public "isa-facts §4.2/§6.5 (REDUCE_CMD IDLE 0, RESET 1, REDUCE 2, RESET_REDUCE 3)",
    "reduce_cmd is a REDUCE_CMD member");
rule!(AC2_REVERSE, "is_valid_s2d2_ac.reverse", Format,
    public "C isa/activation-encoding.md (+0x3C = rev0 ? (rev1 ? 3 : 1) : 2*rev1)",
    "the reverse byte is one of the encoder's values 0..=3");
rule!(AC2_IMM_DTYPE_RULE, "is_valid_s2d2_ac.imm_dtype", Format,
    project "the compiler writes imm_dtype with a last-writer-wins rule and no validity condition is public; reported as not checked",
    "Activate2 imm_dtype and the immediates it types");
rule!(AQ_OUT_DTYPE, "is_valid_s3d3_aq.out_dtype", Format,
    public "isa-facts §4.2 (ActivateQuantize out_dtype UINT8)",
    "ActivateQuantize writes UINT8");
rule!(RD_DST_COUNT, "is_valid_d1_rd.dst_element_count", Format,
    public "isa-facts §4.2 (ReadAccumulator dst_element_count must be 1; dst num_elem[0] == 1)",
    "ReadAccumulator drains one element per partition: dst_element_count == 1 and dst num_elem[0] == 1");
rule!(RD_NEGATED, "is_valid_d1_rd.negated", Format,
    public "isa-facts §4.2 (negated: 0 for ACT 0x24; 0/1 for DVE 0x9B)",
    "negated is 0 for the ACT form and 0 or 1 for the DVE form");

/// The activation-function enum stage shared by the ACT formats: a published code passes,
/// any other is reported as not checked.
fn act_func<S: Sink>(ck: &mut Ck<S>, f: Field) {
    if !enums::ACT_FUNC_KNOWN.has(ck.get(f) as u8) {
        ck.not_checked(
            &ACT_FUNC_ENUM,
            f,
            Allowed::Text("a published ActivationFunctionType wire code"),
        );
    }
}

/// An ALU_OP enum field: a member of the generation's ALU_OP enum.
pub const fn alu_op_row(f: Field) -> FieldRule {
    FieldRule::per_gen(
        &ALU_OP_ENUM,
        f,
        enums::alu_op,
        "an ALU_OP member of this generation",
    )
}

// ---- Activate2 0x25 (S2D2_AC) ----

/// Activate2 source (TENSOR2D, inferred slot).
pub const AC2_SRC: Operand = Operand::at(loc::activate2::SRC);
/// `relu_param_src` (IMM_SRC).
pub const AC2_RELU_SRC: Field = Field::at(loc::activate2::RELU_PARAM_SRC);
/// `imm0_src` (IMM_SRC).
pub const AC2_IMM0_SRC: Field = Field::at(loc::activate2::IMM0_SRC);
/// `reduce_cmd` (REDUCE_CMD).
pub const AC2_REDUCE_CMD: Field = Field::at(loc::activate2::REDUCE_CMD);
/// `imm_dtype`.
pub const AC2_IMM_DTYPE: Field = Field::at(loc::activate2::IMM_DTYPE);
/// `op0`.
pub const AC2_OP0: Field = Field::at(loc::activate2::OP0);
/// `op1`.
pub const AC2_OP1: Field = Field::at(loc::activate2::OP1);
/// `reduce_op`.
pub const AC2_REDUCE_OP: Field = Field::at(loc::activate2::REDUCE_OP);
/// Input dtype.
pub const AC2_IN: Field = Field::at(loc::activate2::IN_DTYPE);
/// Output dtype.
pub const AC2_OUT: Field = Field::at(loc::activate2::OUT_DTYPE);
/// Active partitions.
pub const AC2_NUM: Field = Field::at(loc::activate2::NUM_ACTIVE_PARTITIONS);
/// Activation function.
pub const AC2_FUNC: Field = Field::at(loc::activate2::ACTIVATION_FUNC);
/// Destination (TENSOR2D, inferred slot).
pub const AC2_DST: Operand = Operand::at(loc::activate2::DST);
/// Saturate / reverse byte.
pub const AC2_REVERSE_F: Field = Field::at(loc::activate2::REVERSE);

/// Activate2 enum stage.
pub const AC2_ENUMS: &[FieldRule] = &[
    FieldRule::set(&IMM_SRC_ENUM, AC2_RELU_SRC, enums::IMM_SRC, "0..=2"),
    FieldRule::set(&IMM_SRC_ENUM, AC2_IMM0_SRC, enums::IMM_SRC, "0..=2"),
    FieldRule::set(&REDUCE_CMD_ENUM, AC2_REDUCE_CMD, enums::REDUCE_CMD, "0..=3"),
    alu_op_row(AC2_OP0),
    alu_op_row(AC2_OP1),
    alu_op_row(AC2_REDUCE_OP),
];
/// Activate2, after the activation function.
pub const AC2_LATE: &[FieldRule] = &[FieldRule::max(&AC2_REVERSE, AC2_REVERSE_F, 3)];
/// Activate2 dtype stage.
pub const AC2_DTYPES: &[DtypeRule] = &[
    DtypeRule::byte(AC2_IN, DtypeOpts::PLAIN),
    DtypeRule::byte(AC2_OUT, DtypeOpts::FP32R),
];
/// Activate2 geometry stage.
pub const AC2_GEOMETRY: &[FieldRule] = &[active_channels_row(AC2_NUM)];
/// The rule data of `is_valid_s2d2_ac`.
pub const AC2_TABLE: GateTable = GateTable {
    fields: &[AC2_ENUMS, AC2_LATE, AC2_GEOMETRY],
    dtypes: &[AC2_DTYPES],
    operands: &[AC2_OPERANDS],
};
/// Activate2 placement stage: the source and destination regions and partition windows.
pub const AC2_OPERANDS: &[OperandRule] = &src_dst(
    [AC2_SRC, AC2_DST],
    2,
    [Tag::Of(AC2_IN, Part::Byte), Tag::Of(AC2_OUT, Part::Byte)],
    AC2_NUM,
    false,
);

/// `is_valid_s2d2_ac`: Activate2 0x25.
pub fn is_valid_s2d2_ac<S: Sink>(ck: &mut Ck<S>) {
    // (3) enums
    check(ck, AC2_ENUMS);
    act_func(ck, AC2_FUNC);
    check(ck, AC2_LATE);
    // (4) reserved
    spec_reserved(ck);
    if ck.done() {
        return;
    }
    // (5) dtypes
    check_dtypes(ck, AC2_DTYPES);
    ck.not_checked(
        &AC2_IMM_DTYPE_RULE,
        AC2_IMM_DTYPE,
        Allowed::Text("no public condition"),
    );
    if ck.done() {
        return;
    }
    // (6) placement and geometry
    check(ck, AC2_GEOMETRY);
    check_regions(ck, AC2_OPERANDS);
    check_windows(ck, AC2_OPERANDS);
}

// ---- ActivateQuantize 0x22 (S3D3_AQ) ----

/// `quant_scale` (f32).
pub const AQ_QUANT_SCALE: Field = Field::at(loc::activate_quantize::QUANT_SCALE);
/// Source.
pub const AQ_SRC: Operand = Operand::at(loc::activate_quantize::SRC);
/// Input dtype (low nibble of the pair).
pub const AQ_IN: Field = Field::sub_at(loc::activate_quantize::IN_BIAS_DTYPES, "in (low nibble)");
/// Bias dtype (high nibble of the pair).
pub const AQ_BIAS_DT: Field =
    Field::sub_at(loc::activate_quantize::IN_BIAS_DTYPES, "bias (high nibble)");
/// Output dtype.
pub const AQ_OUT: Field = Field::at(loc::activate2::OUT_DTYPE);
/// Active partitions.
pub const AQ_NUM: Field = Field::at(loc::activate2::NUM_ACTIVE_PARTITIONS);
/// Activation function.
pub const AQ_FUNC: Field = Field::at(loc::activate2::ACTIVATION_FUNC);
/// `dequant_scale` (f32).
pub const AQ_DEQUANT_SCALE: Field = Field::at(loc::activate_quantize::DEQUANT_SCALE);
/// Bias address.
pub const AQ_BIAS: Field = Field::at(loc::activate_quantize::BIAS_ADDR);
/// Destination.
pub const AQ_DST: Operand = Operand::at(loc::activate2::DST);

/// ActivateQuantize dtype stage.
pub const AQ_DTYPES: &[DtypeRule] = &[
    DtypeRule::nibble(AQ_IN, false, DtypeOpts::PLAIN),
    DtypeRule::nibble(AQ_BIAS_DT, true, DtypeOpts::PLAIN),
];
/// ActivateQuantize output dtype.
pub const AQ_OUT_ROWS: &[FieldRule] = &[FieldRule::eq(&AQ_OUT_DTYPE, AQ_OUT, dtype::UINT8 as u64)];
/// ActivateQuantize geometry stage.
pub const AQ_GEOMETRY: &[FieldRule] = &[active_channels_row(AQ_NUM)];
/// The rule data of `is_valid_s3d3_aq`.
pub const AQ_TABLE: GateTable = GateTable {
    fields: &[AQ_OUT_ROWS, AQ_GEOMETRY],
    dtypes: &[AQ_DTYPES],
    operands: &[AQ_OPERANDS],
};
/// ActivateQuantize placement stage: the source and destination regions and partition
/// windows (the bias pointer stays procedural: a start address, not a pattern).
pub const AQ_OPERANDS: &[OperandRule] = &src_dst(
    [AQ_SRC, AQ_DST],
    3,
    [Tag::Of(AQ_IN, Part::Low), Tag::Of(AQ_OUT, Part::Byte)],
    AQ_NUM,
    false,
);

/// `is_valid_s3d3_aq`: ActivateQuantize 0x22.
pub fn is_valid_s3d3_aq<S: Sink>(ck: &mut Ck<S>) {
    act_func(ck, AQ_FUNC);
    spec_reserved(ck);
    if ck.done() {
        return;
    }
    let bias = ck.get(AQ_IN) as u8 >> 4;
    check_dtypes(ck, AQ_DTYPES);
    check(ck, AQ_OUT_ROWS);
    if ck.done() {
        return;
    }
    float_finite(ck, AQ_QUANT_SCALE);
    float_finite(ck, AQ_DEQUANT_SCALE);
    check(ck, AQ_GEOMETRY);
    addr::tensor_start_addr_valid(ck, AQ_BIAS, bias, Placement::READ_ANY);
    check_regions(ck, AQ_OPERANDS);
    check_windows(ck, AQ_OPERANDS);
}

// ---- ReadAccumulator 0x24 / 0x9B (D1_RD) ----

/// `dst_element_count`.
pub const RD_COUNT: Field = Field::at(loc::read_accumulator::DST_ELEMENT_COUNT);
/// Destination dtype.
pub const RD_DTYPE: Field = Field::at(loc::read_accumulator::DTYPE);
/// `negated`.
pub const RD_NEG: Field = Field::at(loc::read_accumulator::NEGATED);
/// Active partitions.
pub const RD_NUM: Field = Field::at(loc::activate2::NUM_ACTIVE_PARTITIONS);
/// Destination (TENSOR1D).
pub const RD_DST: Operand = Operand::at(loc::read_accumulator::DST);

/// ReadAccumulator enum stage: `negated` is 0 on ACT, 0 or 1 on DVE.
pub const RD_ENUMS: &[FieldRule] = &[
    FieldRule::set(&RD_NEGATED, RD_NEG, ByteSet::range(0, 1), "0 or 1").only(&[0x9B]),
    FieldRule::set(&RD_NEGATED, RD_NEG, ByteSet::range(0, 0), "0 (ACT form)").except(&[0x9B]),
];
/// ReadAccumulator dtype stage.
pub const RD_DTYPES: &[DtypeRule] = &[DtypeRule::byte(RD_DTYPE, DtypeOpts::FP32R)];
/// ReadAccumulator geometry stage.
pub const RD_GEOMETRY: &[FieldRule] = &[
    FieldRule::eq(&RD_DST_COUNT, RD_COUNT, 1),
    active_channels_row(RD_NUM),
];
/// The rule data of `is_valid_d1_rd`.
pub const RD_TABLE: GateTable = GateTable {
    fields: &[RD_ENUMS, RD_GEOMETRY],
    dtypes: &[RD_DTYPES],
    operands: &[],
};

/// `is_valid_d1_rd`: ReadAccumulator 0x24 (ACT) / DveReadAccumulator 0x9B (DVE).
pub fn is_valid_d1_rd<S: Sink>(ck: &mut Ck<S>) {
    check(ck, RD_ENUMS);
    spec_reserved(ck);
    if ck.done() {
        return;
    }
    let dt = ck.get(RD_DTYPE) as u8;
    check_dtypes(ck, RD_DTYPES);
    if ck.done() {
        return;
    }
    check(ck, RD_GEOMETRY);
    let n = addr::tensor_valid(ck, RD_DST, 1, dt, Placement::WRITE_ANY);
    if n > 1 {
        ck.fail(&RD_DST_COUNT, RD_DST.num(1, 0), n, Allowed::Eq(1));
    }
    addr::start_addr_active_channels(ck, RD_DST, RD_NUM);
}

#[cfg(test)]
mod tests {
    use super::super::testutil::*;
    use super::*;
    use tpbsim_isa::{Bundle, Gen};

    fn act2() -> Bundle {
        let mut b = hdr(0x25);
        t2(&mut b, 12, 0x100, [1, 32]);
        b.0[26] = 2;
        b.0[29] = 0x06;
        b.0[31] = 0x04;
        b.0[32] = dtype::BF16;
        b.0[33] = dtype::FP32;
        b.0[34] = 64;
        b.0[35] = 7; // exp
        t2(&mut b, 48, addr::PSUM_BASE, [1, 32]);
        b.0[60] = 3;
        b
    }

    #[test]
    fn activate2() {
        let f = |b: &Bundle| fails(b, Gen::V4, Some(1), is_valid_s2d2_ac);
        assert!(f(&act2()).is_empty(), "{:?}", f(&act2()));
        assert_eq!(
            unchecked(&act2(), Gen::V4, Some(1), is_valid_s2d2_ac),
            ["is_valid_s2d2_ac.imm_dtype"]
        );
        let mut b = act2();
        b.0[26] = 4;
        assert_eq!(f(&b), ["is_valid_enum(REDUCE_CMD)"]);
        let mut b = act2();
        b.0[30] = 0x1E;
        assert_eq!(f(&b), ["is_valid_enum(ALU_OP)"]);
        let mut b = act2();
        b.0[60] = 4;
        assert_eq!(f(&b), ["is_valid_s2d2_ac.reverse"]);
        let mut b = act2();
        b.0[33] = dtype::BF16; // 2-byte write into PSUM
        assert_eq!(f(&b), ["tensor_start_addr_valid.psum_write_dtype"]);
        let mut b = act2();
        b.0[34] = 0;
        assert_eq!(
            f(&b),
            // The src and dst gates find the same thing once.
            ["check_active_channels", "start_addr_active_channels"]
        );
    }

    fn aq() -> Bundle {
        let mut b = hdr(0x22);
        b.set_u32(12, 0x3F80_0000);
        t3(&mut b, 16, 0x100, [1, 1, 32]);
        b.0[32] = dtype::FP32 | dtype::FP32 << 4;
        b.0[33] = dtype::UINT8;
        b.0[34] = 32;
        b.0[35] = 1;
        b.set_u32(36, 0x3F00_0000);
        b.set_u32(40, 0x200);
        t3(&mut b, 48, 0x400, [1, 1, 32]);
        b
    }

    #[test]
    fn activate_quantize() {
        let f = |b: &Bundle| fails(b, Gen::V3, None, is_valid_s3d3_aq);
        assert!(f(&aq()).is_empty(), "{:?}", f(&aq()));
        let mut b = aq();
        b.0[33] = dtype::INT8;
        assert_eq!(f(&b), ["is_valid_s3d3_aq.out_dtype"]);
        let mut b = aq();
        b.set_u32(36, 0x7F80_0000);
        assert_eq!(f(&b), ["float_field_finite"]);
        let mut b = aq();
        b.set_u32(40, 0x202);
        assert_eq!(f(&b), ["addr_aligned_dtype"]);
    }

    fn rd(op: u8) -> Bundle {
        let mut b = hdr(op);
        b.set_u32(28, 1);
        b.0[32] = dtype::FP32;
        b.0[34] = 128;
        b.set_u32(44, 0x400);
        b.set_u16(48, 1);
        b.set_u16(50, 1);
        b
    }

    #[test]
    fn read_accumulator() {
        let f = |b: &Bundle| fails(b, Gen::V3, None, is_valid_d1_rd);
        assert!(f(&rd(0x24)).is_empty(), "{:?}", f(&rd(0x24)));
        let mut b = rd(0x24);
        b.0[33] = 1;
        assert_eq!(f(&b), ["is_valid_d1_rd.negated"]);
        b.0[0] = 0x9B;
        assert!(f(&b).is_empty());
        let mut b = rd(0x24);
        b.set_u32(28, 2);
        assert_eq!(f(&b), ["is_valid_d1_rd.dst_element_count"]);
        let mut b = rd(0x24);
        b.set_u16(50, 4);
        assert_eq!(f(&b), ["is_valid_d1_rd.dst_element_count"]);
        let mut b = rd(0x24);
        b.set_u16(50, 0);
        assert_eq!(f(&b), ["tensorNd_valid.num_elem"]);
        let mut b = rd(0x24);
        b.0[36] = 1;
        assert_eq!(f(&b), ["reserved_zero"]);
    }
}
