//! The other Activation-engine formats: `is_valid_s2d2_ac` (Activate2 0x25, v4),
//! `is_valid_s3d3_aq` (ActivateQuantize 0x22) and `is_valid_d1_rd` (ReadAccumulator 0x24 on
//! ACT, DveReadAccumulator 0x9B on DVE).
//!
//! Layouts: isa-facts §4.2 (G firmware/kernels/activate-pwl.md header names, C
//! isa/activation-encoding.md store sites; the Activate2 descriptor slots are inferred from
//! slot arithmetic).

use super::super::addr::{self, Operand, Placement};
use super::super::dtype;
use super::super::enums::{self, ByteSet};
use super::super::rule::{rule, Allowed, Ck, Field, Sink};
use super::act::{ACT_FUNC_ENUM, IMM_SRC_ENUM};
use super::{active_channels, dtype_check, enum_check, float_finite, spec_reserved, DtypeOpts};
use tpbsim_isa::formats::loc;

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

/// An ALU_OP enum field.
pub fn alu_op_enum<S: Sink>(ck: &mut Ck<S>, f: Field) {
    let set = enums::alu_op(ck.gen);
    enum_check(
        ck,
        &ALU_OP_ENUM,
        f,
        set,
        "an ALU_OP member of this generation",
    );
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

/// `is_valid_s2d2_ac`: Activate2 0x25.
pub fn is_valid_s2d2_ac<S: Sink>(ck: &mut Ck<S>) {
    // (3) enums
    for f in [AC2_RELU_SRC, AC2_IMM0_SRC] {
        enum_check(ck, &IMM_SRC_ENUM, f, enums::IMM_SRC, "0..=2");
    }
    enum_check(
        ck,
        &REDUCE_CMD_ENUM,
        AC2_REDUCE_CMD,
        enums::REDUCE_CMD,
        "0..=3",
    );
    for f in [AC2_OP0, AC2_OP1, AC2_REDUCE_OP] {
        alu_op_enum(ck, f);
    }
    act_func(ck, AC2_FUNC);
    ck.check(
        ck.get(AC2_REVERSE_F) <= 3,
        &AC2_REVERSE,
        AC2_REVERSE_F,
        Allowed::Max(3),
    );
    // (4) reserved
    spec_reserved(ck);
    if ck.done() {
        return;
    }
    // (5) dtypes
    let (i, o) = (ck.get(AC2_IN) as u8, ck.get(AC2_OUT) as u8);
    dtype_check(ck, AC2_IN, i, DtypeOpts::PLAIN);
    dtype_check(ck, AC2_OUT, o, DtypeOpts::FP32R);
    ck.not_checked(
        &AC2_IMM_DTYPE_RULE,
        AC2_IMM_DTYPE,
        Allowed::Text("no public condition"),
    );
    if ck.done() {
        return;
    }
    // (6) placement and geometry
    active_channels(ck, AC2_NUM);
    addr::tensor_valid(ck, AC2_SRC, 2, i, Placement::READ_ANY);
    addr::tensor_valid(ck, AC2_DST, 2, o, Placement::WRITE_ANY);
    addr::start_addr_active_channels(ck, AC2_SRC, AC2_NUM);
    addr::start_addr_active_channels(ck, AC2_DST, AC2_NUM);
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

/// `is_valid_s3d3_aq`: ActivateQuantize 0x22.
pub fn is_valid_s3d3_aq<S: Sink>(ck: &mut Ck<S>) {
    act_func(ck, AQ_FUNC);
    spec_reserved(ck);
    if ck.done() {
        return;
    }
    let pair = ck.u8(32);
    let (i, bias) = (pair & 0xF, pair >> 4);
    let o = ck.get(AQ_OUT) as u8;
    dtype_check(ck, AQ_IN, i, DtypeOpts::PLAIN);
    dtype_check(ck, AQ_BIAS_DT, bias, DtypeOpts::PLAIN);
    ck.check(
        o == dtype::UINT8,
        &AQ_OUT_DTYPE,
        AQ_OUT,
        Allowed::Eq(dtype::UINT8 as u64),
    );
    if ck.done() {
        return;
    }
    float_finite(ck, AQ_QUANT_SCALE);
    float_finite(ck, AQ_DEQUANT_SCALE);
    active_channels(ck, AQ_NUM);
    addr::tensor_start_addr_valid(ck, AQ_BIAS, bias, Placement::READ_ANY);
    addr::tensor_valid(ck, AQ_SRC, 3, i, Placement::READ_ANY);
    addr::tensor_valid(ck, AQ_DST, 3, o, Placement::WRITE_ANY);
    addr::start_addr_active_channels(ck, AQ_SRC, AQ_NUM);
    addr::start_addr_active_channels(ck, AQ_DST, AQ_NUM);
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

/// `is_valid_d1_rd`: ReadAccumulator 0x24 (ACT) / DveReadAccumulator 0x9B (DVE).
pub fn is_valid_d1_rd<S: Sink>(ck: &mut Ck<S>) {
    let neg_max = if ck.u8(0) == 0x9B { 1 } else { 0 };
    let neg: ByteSet = ByteSet::range(0, neg_max);
    let text = if neg_max == 1 {
        "0 or 1"
    } else {
        "0 (ACT form)"
    };
    enum_check(ck, &RD_NEGATED, RD_NEG, neg, text);
    spec_reserved(ck);
    if ck.done() {
        return;
    }
    let dt = ck.get(RD_DTYPE) as u8;
    dtype_check(ck, RD_DTYPE, dt, DtypeOpts::FP32R);
    if ck.done() {
        return;
    }
    ck.check(
        ck.get(RD_COUNT) == 1,
        &RD_DST_COUNT,
        RD_COUNT,
        Allowed::Eq(1),
    );
    active_channels(ck, RD_NUM);
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
