//! Pool / DVE formats beyond the tensor-tensor, tensor-scalar and reduce families:
//! `is_valid_memset` (0x49), `is_valid_iota` (0x7E), `is_valid_tensor_dequantize` (0x7B, v3+),
//! `is_valid_s3d3_cp_pred_scalar` (0xE8), `is_valid_select_reduce` (0xEA),
//! `is_valid_s2s2d2_stt` (0x9D / 0x9E / 0xE5), `is_valid_s3d3_ts_select` (0x98),
//! `is_valid_s2d2_ts_as` (0x92) and `is_valid_s4d4_pl` (0x45 / 0x58).
//!
//! Layouts: isa-facts §4.3 (header structs where published, compiler store sites otherwise).
//! The TensorDequantize gate follows the header's validity contract verbatim
//! (G firmware/kernels/tensor-dequantize.md §2.1, §4.1).

use super::super::addr::{self, Operand, Placement};
use super::super::dtype;
use super::super::enums;
use super::super::rule::{rule, Allowed, Ck, Field, Rule, Sink};
use super::super::table::{check, check_dtypes, DtypeRule, FieldRule, GateTable};
use super::act2::ALU_OP_ENUM;
use super::{
    active_channels, active_channels_row, flag_row, float_finite, pool_no_psum, spec_reserved,
    DtypeOpts,
};
use tpbsim_isa::formats::loc;
use tpbsim_isa::spec::ByteSet;

/// `is_valid_dtype_64`: 64-bit dtypes allowed, FP32R not.
const B64: DtypeOpts = DtypeOpts {
    fp32r: false,
    b64: true,
    fp4: false,
};

rule!(IOTA_SRC_BAND, "is_valid_iota.source_band", Format,
    project "the manual source band +0x10..+0x1E of Iota has no published layout; reported as not checked",
    "Iota's source band");
rule!(MEMSET_FILL, "is_valid_memset.fill", Format,
    project "no validity condition on Memset's count and fill words is public; reported as not checked",
    "Memset count and fill value");
rule!(DQ_FMT, "has_valid_dequant_fmt", Format,
    public "G firmware/kernels/tensor-dequantize.md §2.1/§4 (DEQUANT_FMT 1..=4, INVALID 0 rejected)",
    "dequant_fmt is E2M1ToE5M2 1, INT4ToE5M2 2, NF4ToE4M3 3 or E2M3ToE4M3 4");
rule!(DQ_GROUP, "has_valid_group_size", Format,
    public "G firmware/kernels/tensor-dequantize.md §2.1 (group_size 0 or 8)",
    "group_size is 0 or 8");
rule!(DQ_FMT_GROUP, "has_valid_dequant_fmt_group_size", Format,
    public "G firmware/kernels/tensor-dequantize.md §2.1 (group_size 8 only for formats 1, 2, 3)",
    "group_size 8 only with the 4-bit formats (not E2M3ToE4M3)");
rule!(DQ_DTYPE, "has_valid_tens_dequant_dtype", Format,
    public "G firmware/kernels/tensor-dequantize.md §2.1/§3 (in_dtype == out_dtype == UINT32 transport)",
    "in_dtype and out_dtype are UINT32 (the packed transport container)");
rule!(DQ_COUNT, "s3d3_tens_dequant_element_count_check_t3d", Format,
    public "G firmware/kernels/tensor-dequantize.md §4.1 (src*2 == dst and any src for 4-bit group 0; src*4 == dst*3 and src % 3 == 0 for E2M3; src*8 == dst*5 and src % 5 == 0 for group 8; skipped when either shape comes from a register)",
    "the source/destination element counts follow the format's packing ratio");
rule!(STT_ACC, "is_valid_s2s2d2_stt.accumulator_cmd", Format,
    public "isa-facts §4.3 (ScalarTensorTensor accumulator_cmd: ACCUM_CMD, the bitvec form 0x9E must be IDLE); G firmware/kernels/tensor-tensor-scan.md (the scan 0xE5 runs with IDLE)",
    "accumulator_cmd is an ACCUM_CMD member, IDLE for the bitvec form and the scan");
rule!(STT_REVERSE, "is_valid_s2s2d2_stt.reverse", Format,
    project "the ScalarTensorTensor reverse byte is read like TensorScalar's (bit0 op0, bit1 op1); other bits rejected",
    "reverse uses bits 0..1 only");
rule!(POOL_TYPE_ENUM, "is_valid_enum(POOL_TYPE)", Format,
    public "isa-facts §4.3/§6.5 (POOL_TYPE NONE 0, MAX_POOL 1, AVG_POOL 2)",
    "pool_type is a POOL_TYPE member");
rule!(POOL_MODE, "is_valid_s4d4_pl.mode", Format,
    project "the compiler writes mode 3 but no validity condition on the byte is public; reported as not checked",
    "the pooling mode byte");

fn in_out<S: Sink>(
    ck: &mut Ck<S>,
    src: (Operand, u8, u8),
    dst: (Operand, u8, u8),
    num: Field,
) -> (u64, u64) {
    active_channels(ck, num);
    let a = addr::tensor_valid(ck, src.0, src.1, src.2, Placement::READ_ANY);
    let b = addr::tensor_valid(ck, dst.0, dst.1, dst.2, Placement::WRITE_ANY);
    addr::start_addr_active_channels(ck, src.0, num);
    addr::start_addr_active_channels(ck, dst.0, num);
    pool_no_psum(ck, &[src.0, dst.0]);
    (a, b)
}

// ---- Memset 0x49 ----

/// Memset count word.
pub const MS_COUNT: Field = Field::at(loc::memset::COUNT);
/// Memset dtype.
pub const MS_DTYPE: Field = Field::at(loc::memset::DTYPE);
/// Memset active channels.
pub const MS_NUM: Field = Field::at(loc::memset::NUM_ACTIVE_CHANNELS);
/// Memset destination.
pub const MS_DST: Operand = Operand::at(loc::memset::DST);

/// The rule data of `is_valid_memset` (evaluated by [`fill_gate`]).
pub const MS_TABLE: GateTable = GateTable {
    fields: &[&[active_channels_row(MS_NUM)]],
    dtypes: &[&[DtypeRule::byte(MS_DTYPE, B64)]],
    operands: &[],
};

/// `is_valid_memset`: Memset 0x49 (compiler layout, family C).
pub fn is_valid_memset<S: Sink>(ck: &mut Ck<S>) {
    fill_gate(
        ck,
        MS_DTYPE,
        (&MEMSET_FILL, MS_COUNT, "no public condition"),
        MS_NUM,
        MS_DST,
    );
}

/// The gate of an op that only writes a 4D destination of `dtype` (Memset, Iota): reserved
/// bytes, the dtype, the `unchecked` sub-check reported as not checked, then the destination's
/// active channels, placement and geometry.
fn fill_gate<S: Sink>(
    ck: &mut Ck<S>,
    dtype: Field,
    unchecked: (&'static Rule, Field, &'static str),
    num: Field,
    dst: Operand,
) {
    spec_reserved(ck);
    if ck.done() {
        return;
    }
    let dt = ck.get(dtype) as u8;
    check_dtypes(ck, &[DtypeRule::byte(dtype, B64)]);
    if ck.done() {
        return;
    }
    ck.not_checked(unchecked.0, unchecked.1, Allowed::Text(unchecked.2));
    active_channels(ck, num);
    addr::tensor_valid(ck, dst, 4, dt, Placement::WRITE_ANY);
    addr::start_addr_active_channels(ck, dst, num);
    pool_no_psum(ck, &[dst]);
}

// ---- Iota 0x7E ----

/// Iota source band.
pub const IOTA_BAND: Field = Field::at(loc::iota::SRC_BAND).head(8);
/// Iota output dtype.
pub const IOTA_OUT: Field = Field::at(loc::iota::OUT_DTYPE);
/// Iota active channels.
pub const IOTA_NUM: Field = Field::at(loc::memset::NUM_ACTIVE_CHANNELS);
/// Iota destination.
pub const IOTA_DST: Operand = Operand::at(loc::memset::DST);

/// The rule data of `is_valid_iota` (evaluated by [`fill_gate`]).
pub const IOTA_TABLE: GateTable = GateTable {
    fields: &[&[active_channels_row(IOTA_NUM)]],
    dtypes: &[&[DtypeRule::byte(IOTA_OUT, B64)]],
    operands: &[],
};

/// `is_valid_iota`: Iota 0x7E (compiler layout, family C).
pub fn is_valid_iota<S: Sink>(ck: &mut Ck<S>) {
    fill_gate(
        ck,
        IOTA_OUT,
        (&IOTA_SRC_BAND, IOTA_BAND, "no published layout"),
        IOTA_NUM,
        IOTA_DST,
    );
}

// ---- TensorDequantize 0x7B ----

/// Source (packed codes).
pub const DQ_SRC: Operand = Operand::at(loc::tensor_dequantize::SRC);
/// `in_dtype`.
pub const DQ_IN: Field = Field::at(loc::tensor_dequantize::IN_DTYPE);
/// `out_dtype`.
pub const DQ_OUT: Field = Field::at(loc::iota::OUT_DTYPE);
/// Active channels.
pub const DQ_NUM: Field = Field::at(loc::tensor_dequantize::NUM_ACTIVE_PARTITIONS);
/// `dequant_fmt`.
pub const DQ_FMT_F: Field = Field::at(loc::tensor_dequantize::DEQUANT_FMT);
/// `group_size`.
pub const DQ_GROUP_F: Field = Field::at(loc::tensor_dequantize::GROUP_SIZE);
/// Destination (FP8 codes).
pub const DQ_DST: Operand = Operand::at(loc::memset::DST);

/// `shape_from_register`: the SHAPE_REG / ADDR_SHAPE_REG markers (byte 3 bit 6).
fn shape_from_register(word: u32) -> bool {
    word & 0x4000_0000 != 0
}

/// TensorDequantize enum stage.
pub const DQ_ENUMS: &[FieldRule] = &[
    FieldRule::set(
        &DQ_FMT,
        DQ_FMT_F,
        ByteSet::range(1, 4),
        "1..=4 (INVALID 0 rejected)",
    ),
    FieldRule::set(&DQ_GROUP, DQ_GROUP_F, ByteSet::of(&[0, 8]), "0 or 8"),
];
/// TensorDequantize dtypes: the UINT32 transport container.
pub const DQ_DTYPES: &[FieldRule] = &[
    FieldRule::eq(&DQ_DTYPE, DQ_IN, dtype::UINT32 as u64),
    FieldRule::eq(&DQ_DTYPE, DQ_OUT, dtype::UINT32 as u64),
];
/// The rule data of `is_valid_tensor_dequantize`.
pub const DQ_TABLE: GateTable = GateTable {
    fields: &[DQ_ENUMS, DQ_DTYPES, &[active_channels_row(DQ_NUM)]],
    dtypes: &[],
    operands: &[],
};

/// `is_valid_tensor_dequantize`: TensorDequantize 0x7B (v3+).
pub fn is_valid_tensor_dequantize<S: Sink>(ck: &mut Ck<S>) {
    let fmt = ck.get(DQ_FMT_F) as u8;
    let group = ck.get(DQ_GROUP_F) as u8;
    check(ck, DQ_ENUMS);
    if group == 8 && fmt == 4 {
        ck.fail(
            &DQ_FMT_GROUP,
            DQ_GROUP_F,
            group as u64,
            Allowed::Text("group_size 0 for E2M3ToE4M3"),
        );
    }
    spec_reserved(ck);
    if ck.done() {
        return;
    }
    check(ck, DQ_DTYPES);
    if ck.done() {
        return;
    }
    active_channels(ck, DQ_NUM);
    addr::start_addr_active_channels(ck, DQ_SRC, DQ_NUM);
    addr::start_addr_active_channels(ck, DQ_DST, DQ_NUM);
    let src = addr::tensor_valid(ck, DQ_SRC, 3, dtype::UINT32, Placement::READ_SBUF);
    let dst = addr::tensor_valid(ck, DQ_DST, 3, dtype::UINT32, Placement::WRITE_SBUF);
    let (sw, dw) = (ck.get(DQ_SRC.addr()) as u32, ck.get(DQ_DST.addr()) as u32);
    if src == 0 || dst == 0 || shape_from_register(sw) || shape_from_register(dw) {
        return;
    }
    let ok = match (fmt, group) {
        (1..=3, 0) => src * 2 == dst,
        (4, 0) => src * 4 == dst * 3 && src.is_multiple_of(3),
        (1..=3, 8) => src * 8 == dst * 5 && src.is_multiple_of(5),
        _ => true, // already rejected by the enum stage
    };
    if !ok {
        let want = match (fmt, group) {
            (4, _) => "src * 4 == dst * 3, src a multiple of 3 (E2M3ToE4M3)",
            (_, 8) => "src * 8 == dst * 5, src a multiple of 5 (group of 8)",
            _ => "src * 2 == dst (4-bit formats, group 0)",
        };
        ck.fail(&DQ_COUNT, DQ_DST.num(3, 2), dst, Allowed::Text(want));
    }
}

// ---- CopyPredicatedScalar 0xE8 ----

/// Destination.
pub const CPS_DST: Operand = Operand::at(loc::copy_pred_scalar::DST);
/// Mask dtype.
pub const CPS_MASK_DT: Field = Field::at(loc::copy_pred_scalar::MASK_DTYPE);
/// `use_false_fill`.
pub const CPS_FILL: Field = Field::at(loc::copy_pred_scalar::USE_FALSE_FILL);
/// Active partitions.
pub const CPS_NUM: Field = Field::at(loc::tensor_dequantize::NUM_ACTIVE_PARTITIONS);
/// Source (scalar) dtype.
pub const CPS_SRC_DT: Field = Field::at(loc::copy_pred_scalar::SRC_DTYPE);
/// Output dtype.
pub const CPS_OUT: Field = Field::at(loc::copy_pred_scalar::OUT_DTYPE);
/// Mask.
pub const CPS_MASK: Operand = Operand::at(loc::copy_pred_scalar::MASK);

/// CopyPredicatedScalar enum stage.
pub const CPS_ENUMS: &[FieldRule] = &[flag_row(CPS_FILL)];
/// CopyPredicatedScalar dtype stage.
pub const CPS_DTYPES: &[DtypeRule] = &[
    DtypeRule::byte(CPS_MASK_DT, DtypeOpts::PLAIN),
    DtypeRule::byte(CPS_SRC_DT, DtypeOpts::PLAIN),
    DtypeRule::byte(CPS_OUT, DtypeOpts::PLAIN),
];
/// The rule data of `is_valid_s3d3_cp_pred_scalar`.
pub const CPS_TABLE: GateTable = GateTable {
    fields: &[CPS_ENUMS, &[active_channels_row(CPS_NUM)]],
    dtypes: &[CPS_DTYPES],
    operands: &[],
};

/// `is_valid_s3d3_cp_pred_scalar`: CopyPredicatedScalar 0xE8 (compiler layout).
pub fn is_valid_s3d3_cp_pred_scalar<S: Sink>(ck: &mut Ck<S>) {
    check(ck, CPS_ENUMS);
    spec_reserved(ck);
    if ck.done() {
        return;
    }
    let (m, o) = (ck.get(CPS_MASK_DT) as u8, ck.get(CPS_OUT) as u8);
    check_dtypes(ck, CPS_DTYPES);
    if ck.done() {
        return;
    }
    in_out(ck, (CPS_MASK, 3, m), (CPS_DST, 3, o), CPS_NUM);
}

// ---- The S2S2D2_STT layout: SelectReduce 0xEA, ScalarTensorTensor 0x9D / 0x9E / 0xE5 ----
//
// Header view (isa-facts §4.3 as revised by the header S2S2D2_STT struct, spec conflict P7):
// src0 +12, src1 +24, op0 +36, op1 +37, reverse +38, imm0_src +39, dtype pair +40, out +41,
// num +42, imm0_dtype +43, accumulator_cmd +44, dst +48, imm0 +60.

/// First source (SelectReduce: the integer predicate).
pub const STT_SRC0: Operand = Operand::at(loc::scalar_tensor_tensor::SRC0);
/// Second source (SelectReduce: the data).
pub const STT_SRC1: Operand = Operand::at(loc::scalar_tensor_tensor::SRC1);
/// `op0`.
pub const STT_OP0: Field = Field::at(loc::scalar_tensor_tensor::OP0);
/// `op1`.
pub const STT_OP1: Field = Field::at(loc::scalar_tensor_tensor::OP1);
/// `reverse`.
pub const STT_REV: Field = Field::at(loc::select_reduce::REVERSE);
/// `imm0_src`.
pub const STT_IMM0_SRC: Field = Field::at(loc::select_reduce::IMM0_SRC);
/// Source dtypes (`in | in1 << 4`).
pub const STT_IN0: Field = Field::sub_at(loc::scalar_tensor_tensor::IN_DTYPES, "in (low nibble)");
/// Second source dtype (high nibble).
pub const STT_IN1: Field = Field::sub_at(loc::scalar_tensor_tensor::IN_DTYPES, "in1 (high nibble)");
/// Output dtype.
pub const STT_OUT: Field = Field::at(loc::select_reduce::OUT_DTYPE);
/// Active partitions.
pub const STT_NUM: Field = Field::at(loc::select_reduce::NUM_ACTIVE_PARTITIONS);
/// `imm0_dtype`.
pub const STT_IMM0_DT: Field = Field::at(loc::select_reduce::IMM0_DTYPE);
/// Accumulator command.
pub const STT_ACC_F: Field = Field::at(loc::select_reduce::ACCUMULATOR_CMD);
/// Destination.
pub const STT_DST: Operand = Operand::at(loc::select_reduce::DST);
/// `imm0` (an immediate or an ADDR4, per `imm0_src`).
pub const STT_IMM0: Field = Field::at(loc::select_reduce::IMM0);

rule!(SR_OPS, "is_valid_select_reduce.ops", Format,
    public "G firmware/kernels/copypredicatedreduce.md (validator: op0 BYPASS, op1 MAX, reverse NONE or FIRST, accumulator_cmd IDLE / ACCUMULATE / ZERO_ACCUMULATE)",
    "SelectReduce: bypass_op BYPASS, reduce_op MAX, reverse 0 or 1, accumulator_cmd 0, 2 or 3");
rule!(SR_DTYPES, "is_valid_select_reduce.dtypes", Format,
    public "G firmware/kernels/copypredicatedreduce.md (integer predicate; data not a 32-bit integer; imm0_dtype FP32)",
    "SelectReduce: an 8/16/32-bit integer predicate, data that is not INT32/UINT32, imm0_dtype FP32");

/// Operand stage shared by the S2S2D2_STT gates: `imm0` (ADDR4 when POINTER, a finite f32 when
/// an FP32 instruction immediate), the three patterns and their partition windows.
fn stt_operands<S: Sink>(ck: &mut Ck<S>, d0: u8, d1: u8, out: u8, imm_dt: u8) {
    match ck.get(STT_IMM0_SRC) {
        0 if imm_dt == dtype::FP32 => float_finite(ck, STT_IMM0),
        1 => {
            addr::tensor_start_addr_valid(ck, STT_IMM0, imm_dt, Placement::READ_ANY);
        }
        _ => {}
    }
    in_out(ck, (STT_SRC0, 2, d0), (STT_DST, 2, out), STT_NUM);
    addr::tensor_valid(ck, STT_SRC1, 2, d1, Placement::READ_ANY);
    addr::start_addr_active_channels(ck, STT_SRC1, STT_NUM);
    pool_no_psum(ck, &[STT_SRC1]);
}

/// SelectReduce enum stage.
pub const SR_ENUMS: &[FieldRule] = &[
    FieldRule::eq(&SR_OPS, STT_OP0, 0),
    FieldRule::eq(&SR_OPS, STT_OP1, enums::MAX as u64),
    FieldRule::set(&SR_OPS, STT_REV, ByteSet::range(0, 1), "NONE 0 or FIRST 1"),
    FieldRule::set(&SR_OPS, STT_ACC_F, ByteSet::of(&[0, 2, 3]), "0, 2 or 3"),
    FieldRule::set(
        &super::act::IMM_SRC_ENUM,
        STT_IMM0_SRC,
        enums::IMM_SRC,
        "0..=2",
    ),
];
/// The S2S2D2_STT dtype stage shared by SelectReduce and ScalarTensorTensor.
pub const STT_DTYPES: &[DtypeRule] = &[
    DtypeRule::nibble(STT_IN0, false, DtypeOpts::PLAIN),
    DtypeRule::nibble(STT_IN1, true, DtypeOpts::PLAIN),
    DtypeRule::byte(STT_OUT, DtypeOpts::FP32R),
];
/// SelectReduce's immediate is FP32.
pub const SR_IMM_DTYPE: &[FieldRule] =
    &[FieldRule::eq(&SR_DTYPES, STT_IMM0_DT, dtype::FP32 as u64)];
/// The rule data of `is_valid_select_reduce`.
pub const SR_TABLE: GateTable = GateTable {
    fields: &[SR_ENUMS, SR_IMM_DTYPE, &[active_channels_row(STT_NUM)]],
    dtypes: &[STT_DTYPES],
    operands: &[],
};

/// `is_valid_select_reduce`: SelectReduce 0xEA (predicate src0, data src1).
pub fn is_valid_select_reduce<S: Sink>(ck: &mut Ck<S>) {
    check(ck, SR_ENUMS);
    spec_reserved(ck);
    if ck.done() {
        return;
    }
    let pair = ck.get(STT_IN0) as u8;
    let (m, d, o) = (pair & 0xF, pair >> 4, ck.get(STT_OUT) as u8);
    let imm_dt = ck.get(STT_IMM0_DT) as u8;
    check_dtypes(ck, STT_DTYPES);
    if ck.done() {
        return;
    }
    ck.check(
        is_int32_or_narrower(m),
        &SR_DTYPES,
        STT_IN0,
        Allowed::Text("an 8/16/32-bit integer predicate"),
    );
    ck.check(
        d != dtype::INT32 && d != dtype::UINT32,
        &SR_DTYPES,
        STT_IN1,
        Allowed::Text("data that is not a 32-bit integer"),
    );
    check(ck, SR_IMM_DTYPE);
    stt_operands(ck, m, d, o, imm_dt);
}

/// 8/16/32-bit integer dtypes.
fn is_int32_or_narrower(d: u8) -> bool {
    matches!(
        d,
        dtype::INT8 | dtype::UINT8 | dtype::INT16 | dtype::UINT16 | dtype::INT32 | dtype::UINT32
    )
}

/// The bitvec ScalarTensorTensor.
const STT_BITVEC: &[u8] = &[0x9E];
/// The forms that run with an IDLE accumulator: the bitvec form and the scan (no
/// cross-instruction carry).
const STT_IDLE: &[u8] = &[0x9E, 0xE5];

/// ScalarTensorTensor enum stage: 0x9D and the scan 0xE5 take `is_general_arith_op`, 0x9E
/// `is_general_bitvec_op` (G firmware/kernels/scalar-tensor-tensor.md, tensor-tensor-scan.md).
pub const STT_ENUMS: &[FieldRule] = &[
    FieldRule::set(
        &ALU_OP_ENUM,
        STT_OP0,
        enums::GENERAL_BITVEC,
        "a general bitvec op",
    )
    .only(STT_BITVEC),
    FieldRule::per_gen(
        &ALU_OP_ENUM,
        STT_OP0,
        enums::general_arith,
        "a general arith op of this generation",
    )
    .except(STT_BITVEC),
    FieldRule::set(
        &ALU_OP_ENUM,
        STT_OP1,
        enums::GENERAL_BITVEC,
        "a general bitvec op",
    )
    .only(STT_BITVEC),
    FieldRule::per_gen(
        &ALU_OP_ENUM,
        STT_OP1,
        enums::general_arith,
        "a general arith op of this generation",
    )
    .except(STT_BITVEC),
];
/// ScalarTensorTensor, after the Pool-only op check.
pub const STT_LATE: &[FieldRule] = &[
    FieldRule::max(&STT_REVERSE, STT_REV, 3),
    FieldRule::set(
        &super::act::IMM_SRC_ENUM,
        STT_IMM0_SRC,
        enums::IMM_SRC,
        "0..=2",
    ),
    FieldRule::set(
        &STT_ACC,
        STT_ACC_F,
        ByteSet::of(&[0]),
        "ACCUM_CMD (IDLE for the bitvec form and the scan)",
    )
    .only(STT_IDLE),
    FieldRule::set(
        &STT_ACC,
        STT_ACC_F,
        enums::ACCUM_CMD,
        "ACCUM_CMD (IDLE for the bitvec form and the scan)",
    )
    .except(STT_IDLE),
];
/// ScalarTensorTensor's immediate dtype.
pub const STT_IMM_DTYPE: &[DtypeRule] = &[DtypeRule::byte(STT_IMM0_DT, DtypeOpts::PLAIN)];
/// The rule data of `is_valid_s2s2d2_stt`.
pub const STT_TABLE: GateTable = GateTable {
    fields: &[STT_ENUMS, STT_LATE, &[active_channels_row(STT_NUM)]],
    dtypes: &[STT_DTYPES, STT_IMM_DTYPE],
    operands: &[],
};

/// `is_valid_s2s2d2_stt`: ScalarTensorTensor 0x9D (arith) / 0x9E (bitvec) and
/// TensorTensorScan 0xE5.
pub fn is_valid_s2s2d2_stt<S: Sink>(ck: &mut Ck<S>) {
    check(ck, STT_ENUMS);
    super::alu_pool_only(ck, STT_OP0);
    super::alu_pool_only(ck, STT_OP1);
    check(ck, STT_LATE);
    spec_reserved(ck);
    if ck.done() {
        return;
    }
    let pair = ck.get(STT_IN0) as u8;
    let (a, b, o, sc) = (
        pair & 0xF,
        pair >> 4,
        ck.get(STT_OUT) as u8,
        ck.get(STT_IMM0_DT) as u8,
    );
    check_dtypes(ck, STT_DTYPES);
    check_dtypes(ck, STT_IMM_DTYPE);
    if ck.done() {
        return;
    }
    stt_operands(ck, a, b, o, sc);
}

// ---- TensorScalarSelect 0x98 (S3D3_TS_SELECT) ----

/// Source (operand A).
pub const TSS_SRC: Operand = Operand::at(loc::tensor_scalar_select::SRC);
/// `reversed_pred`.
pub const TSS_REV: Field = Field::at(loc::tensor_scalar_select::REVERSED_PRED);
/// Active partitions.
pub const TSS_NUM: Field = Field::at(loc::tensor_scalar_select::NUM_ACTIVE_PARTITIONS);
/// Data dtype (src, scalar, dst).
pub const TSS_DTYPE: Field = Field::at(loc::tensor_scalar_select::DTYPE);
/// Predicate dtype.
pub const TSS_PRED_DT: Field = Field::at(loc::tensor_scalar_select::PRED_DTYPE);
/// `imm_src`.
pub const TSS_IMM_SRC: Field = Field::at(loc::tensor_scalar_select::IMM_SRC);
/// `pred_src`.
pub const TSS_PRED_SRC: Field = Field::at(loc::tensor_scalar_select::PRED_SRC);
/// Scalar (operand B): an immediate or an ADDR4.
pub const TSS_IMM: Field = Field::at(loc::tensor_scalar_select::IMM);
/// Predicate: 0/1 or an ADDR4.
pub const TSS_PRED: Field = Field::at(loc::tensor_scalar_select::PRED);
/// Destination.
pub const TSS_DST: Operand = Operand::at(loc::select_reduce::DST);

rule!(TSS_RULE, "is_valid_s3d3_ts_select", Format,
    public "G firmware/kernels/ts-select.md (header S3D3_TS_SELECT: reversed_pred 0 or 1; pred_dtype an integer of dtype's width; an instruction predicate is 0 or 1)",
    "TensorScalarSelect: reversed_pred 0/1, an integer pred_dtype as wide as dtype, an instruction predicate 0 or 1");

/// TensorScalarSelect enum stage.
pub const TSS_ENUMS: &[FieldRule] = &[
    FieldRule::set(&TSS_RULE, TSS_REV, ByteSet::range(0, 1), "0 or 1"),
    FieldRule::set(
        &super::act::IMM_SRC_ENUM,
        TSS_IMM_SRC,
        enums::IMM_SRC,
        "0..=2",
    ),
    FieldRule::set(
        &super::act::IMM_SRC_ENUM,
        TSS_PRED_SRC,
        enums::IMM_SRC,
        "0..=2",
    ),
];
/// TensorScalarSelect dtype stage.
pub const TSS_DTYPES: &[DtypeRule] = &[
    DtypeRule::byte(TSS_DTYPE, B64),
    DtypeRule::byte(TSS_PRED_DT, B64),
];
/// The rule data of `is_valid_s3d3_ts_select`.
pub const TSS_TABLE: GateTable = GateTable {
    fields: &[TSS_ENUMS, &[active_channels_row(TSS_NUM)]],
    dtypes: &[TSS_DTYPES],
    operands: &[],
};

/// `is_valid_s3d3_ts_select`: TensorScalarSelect 0x98.
pub fn is_valid_s3d3_ts_select<S: Sink>(ck: &mut Ck<S>) {
    check(ck, TSS_ENUMS);
    spec_reserved(ck);
    if ck.done() {
        return;
    }
    let (d, p) = (ck.get(TSS_DTYPE) as u8, ck.get(TSS_PRED_DT) as u8);
    check_dtypes(ck, TSS_DTYPES);
    if ck.done() {
        return;
    }
    ck.check(
        dtype::is_int(p) && dtype::size(p) == dtype::size(d),
        &TSS_RULE,
        TSS_PRED_DT,
        Allowed::Text("an integer dtype of the data dtype's width"),
    );
    match ck.get(TSS_PRED_SRC) {
        0 => ck.check(
            ck.get(TSS_PRED) <= 1,
            &TSS_RULE,
            TSS_PRED,
            Allowed::Text("0 or 1"),
        ),
        1 => {
            addr::tensor_start_addr_valid(ck, TSS_PRED, p, Placement::READ_ANY);
        }
        _ => {}
    }
    if ck.get(TSS_IMM_SRC) == 1 {
        addr::tensor_start_addr_valid(ck, TSS_IMM, d, Placement::READ_ANY);
    }
    in_out(ck, (TSS_SRC, 3, d), (TSS_DST, 3, d), TSS_NUM);
}

// ---- TensorScalarAffineSelect 0x92 (S2D2_TS_AS) ----

/// Active partitions.
pub const AS_NUM: Field = Field::at(loc::affine_select::NUM_ACTIVE_PARTITIONS);
/// In / out dtypes (`in | out << 4`).
pub const AS_IN: Field = Field::sub_at(loc::affine_select::IN_OUT_DTYPES, "in (low nibble)");
/// Output dtype (high nibble).
pub const AS_OUT: Field = Field::sub_at(loc::affine_select::IN_OUT_DTYPES, "out (high nibble)");
/// Fill comparison.
pub const AS_FILL_MODE: Field = Field::at(loc::affine_select::FILL_MODE);
/// Source.
pub const AS_SRC: Operand = Operand::at(loc::affine_select::SRC);
/// Destination.
pub const AS_DST: Operand = Operand::at(loc::select_reduce::DST);

rule!(AS_CMP_ENUM, "is_valid_enum(AFFINE_SELECT_CMP)", Format,
    public "G firmware/kernels/affineselect.md (fill_mode GREATER_THAN 0, GREATER_THAN_EQ 1, EQ 2, NOT_EQ 3)",
    "fill_mode is an AFFINE_SELECT_CMP member");
rule!(AS_MASK_NUM, "is_valid_s2d2_ts_as.mask_num", Format,
    project "the DATA4D mask ramp's counts follow the access-pattern rule (a count of 0 is illegal)",
    "every mask_num count is non-zero");

/// AffineSelect enum stage.
pub const AS_ENUMS: &[FieldRule] = &[FieldRule::set(
    &AS_CMP_ENUM,
    AS_FILL_MODE,
    ByteSet::range(0, 3),
    "0..=3",
)];
/// AffineSelect dtype stage.
pub const AS_DTYPES: &[DtypeRule] = &[
    DtypeRule::nibble(AS_IN, false, DtypeOpts::PLAIN),
    DtypeRule::nibble(AS_OUT, true, DtypeOpts::FP32R),
];
/// A non-zero count of the mask ramp.
const fn mask_num(name: &'static str, k: u8) -> FieldRule {
    FieldRule::range(
        &AS_MASK_NUM,
        Field::element(loc::affine_select::MASK_NUM, k, 2, name),
        1,
        0xFFFF,
        Allowed::Min(1),
    )
}
/// AffineSelect: the mask ramp's counts.
pub const AS_MASK: &[FieldRule] = &[
    mask_num("mask_num[0]", 0),
    mask_num("mask_num[1]", 1),
    mask_num("mask_num[2]", 2),
    mask_num("mask_num[3]", 3),
];
/// The rule data of `is_valid_s2d2_ts_as`.
pub const AS_TABLE: GateTable = GateTable {
    fields: &[AS_ENUMS, AS_MASK, &[active_channels_row(AS_NUM)]],
    dtypes: &[AS_DTYPES],
    operands: &[],
};

/// `is_valid_s2d2_ts_as`: TensorScalarAffineSelect 0x92.
pub fn is_valid_s2d2_ts_as<S: Sink>(ck: &mut Ck<S>) {
    check(ck, AS_ENUMS);
    spec_reserved(ck);
    if ck.done() {
        return;
    }
    let pair = ck.get(AS_IN) as u8;
    let (i, o) = (pair & 0xF, pair >> 4);
    check_dtypes(ck, AS_DTYPES);
    if ck.done() {
        return;
    }
    check(ck, AS_MASK);
    in_out(ck, (AS_SRC, 2, i), (AS_DST, 2, o), AS_NUM);
}

// ---- Pool 0x45 / MaxPoolSelect 0x58 (S4D4_PL) ----

/// Source.
pub const PL_SRC: Operand = Operand::at(loc::tensor_dequantize::SRC);
/// Input dtype.
pub const PL_IN: Field = Field::at(loc::tensor_dequantize::IN_DTYPE);
/// Output dtype.
pub const PL_OUT: Field = Field::at(loc::iota::OUT_DTYPE);
/// Active channels.
pub const PL_NUM: Field = Field::at(loc::memset::NUM_ACTIVE_CHANNELS);
/// Pool type.
pub const PL_TYPE: Field = Field::at(loc::pool::POOL_TYPE);
/// Mode.
pub const PL_MODE: Field = Field::at(loc::pool::MODE);
/// Scale (f32).
pub const PL_SCALE: Field = Field::at(loc::pool::SCALE);
/// Destination.
pub const PL_DST: Operand = Operand::at(loc::memset::DST);

/// Pool enum stage.
pub const PL_ENUMS: &[FieldRule] = &[FieldRule::set(
    &POOL_TYPE_ENUM,
    PL_TYPE,
    ByteSet::range(0, 2),
    "0..=2",
)];
/// Pool dtype stage.
pub const PL_DTYPES: &[DtypeRule] = &[
    DtypeRule::byte(PL_IN, DtypeOpts::PLAIN),
    DtypeRule::byte(PL_OUT, DtypeOpts::FP32R),
];
/// The rule data of `is_valid_s4d4_pl`.
pub const PL_TABLE: GateTable = GateTable {
    fields: &[PL_ENUMS, &[active_channels_row(PL_NUM)]],
    dtypes: &[PL_DTYPES],
    operands: &[],
};

/// `is_valid_s4d4_pl`: Pool 0x45 / MaxPoolSelect 0x58.
pub fn is_valid_s4d4_pl<S: Sink>(ck: &mut Ck<S>) {
    check(ck, PL_ENUMS);
    spec_reserved(ck);
    if ck.done() {
        return;
    }
    let (i, o) = (ck.get(PL_IN) as u8, ck.get(PL_OUT) as u8);
    check_dtypes(ck, PL_DTYPES);
    if ck.done() {
        return;
    }
    ck.not_checked(&POOL_MODE, PL_MODE, Allowed::Text("no public condition"));
    float_finite(ck, PL_SCALE);
    in_out(ck, (PL_SRC, 4, i), (PL_DST, 4, o), PL_NUM);
}

#[cfg(test)]
mod tests {
    use super::super::testutil::*;
    use super::*;
    use tpbsim_isa::{Bundle, Gen};

    fn memset() -> Bundle {
        let mut b = hdr(0x49);
        b.set_u32(28, 64);
        b.0[32] = dtype::FP32;
        b.0[34] = 32;
        t4(&mut b, 44, 0x100, [1, 1, 1, 64]);
        b
    }

    #[test]
    fn memset_rules() {
        let f = |b: &Bundle| fails(b, Gen::V3, None, is_valid_memset);
        assert!(f(&memset()).is_empty(), "{:?}", f(&memset()));
        assert_eq!(
            unchecked(&memset(), Gen::V3, None, is_valid_memset),
            ["is_valid_memset.fill"]
        );
        let mut b = memset();
        b.0[32] = 0;
        assert_eq!(f(&b), ["is_valid_dtype"]);
        let mut b = memset();
        b.set_u32(44, 0x102);
        assert_eq!(f(&b), ["addr_aligned_dtype"]);
        let mut b = memset();
        b.0[34] = 129;
        assert_eq!(
            f(&b),
            ["check_active_channels", "start_addr_active_channels"]
        );
        // Pool has no PSUM port (v4, engine known).
        let mut b = memset();
        b.set_u32(44, addr::PSUM_BASE);
        assert!(fails(&b, Gen::V4, Some(3), is_valid_memset).is_empty());
        assert_eq!(
            fails(&b, Gen::V4, Some(2), is_valid_memset),
            ["pool_operand_in_sbuf"]
        );
    }

    #[test]
    fn iota_rules() {
        let mut b = hdr(0x7E);
        b.0[33] = dtype::INT32;
        b.0[34] = 16;
        t4(&mut b, 44, 0x100, [1, 1, 1, 8]);
        let f = |b: &Bundle| fails(b, Gen::V2, None, is_valid_iota);
        assert!(f(&b).is_empty(), "{:?}", f(&b));
        assert_eq!(
            unchecked(&b, Gen::V2, None, is_valid_iota),
            ["is_valid_iota.source_band"]
        );
        b.set_u16(44 + 12, 0);
        assert_eq!(f(&b), ["tensorNd_valid.num_elem"]);
    }

    fn dq(fmt: u8, group: u8, src: u16, dst: u16) -> Bundle {
        let mut b = hdr(0x7B);
        t3(&mut b, 12, 0x100, [1, 1, src]);
        b.0[32] = dtype::UINT32;
        b.0[33] = dtype::UINT32;
        b.0[34] = 32;
        b.0[35] = fmt;
        b.0[36] = group;
        t3(&mut b, 44, 0x1000, [1, 1, dst]);
        b
    }

    #[test]
    fn tensor_dequantize() {
        let f = |b: &Bundle| fails(b, Gen::V3, None, is_valid_tensor_dequantize);
        for (fmt, g, s, d) in [(1, 0, 8, 16), (4, 0, 9, 12), (3, 8, 10, 16), (2, 8, 5, 8)] {
            assert!(f(&dq(fmt, g, s, d)).is_empty(), "{fmt} {g} {s} {d}");
        }
        assert_eq!(
            f(&dq(1, 0, 8, 8)),
            ["s3d3_tens_dequant_element_count_check_t3d"]
        );
        assert_eq!(
            f(&dq(4, 0, 8, 6)),
            ["s3d3_tens_dequant_element_count_check_t3d"]
        );
        // Each count failure names its format's relation.
        for (fmt, g, s, d, want) in [
            (1, 0, 8, 15, "src * 2 == dst (4-bit formats, group 0)"),
            (3, 0, 8, 17, "src * 2 == dst (4-bit formats, group 0)"),
            (
                4,
                0,
                8,
                6,
                "src * 4 == dst * 3, src a multiple of 3 (E2M3ToE4M3)",
            ),
            (
                4,
                0,
                9,
                13,
                "src * 4 == dst * 3, src a multiple of 3 (E2M3ToE4M3)",
            ),
            (
                1,
                8,
                10,
                17,
                "src * 8 == dst * 5, src a multiple of 5 (group of 8)",
            ),
            (
                2,
                8,
                4,
                8,
                "src * 8 == dst * 5, src a multiple of 5 (group of 8)",
            ),
        ] {
            let got = fails_allowed(&dq(fmt, g, s, d), Gen::V3, is_valid_tensor_dequantize);
            assert_eq!(got.len(), 1, "{fmt} {g} {s} {d}: {got:?}");
            assert_eq!(got[0].0, "s3d3_tens_dequant_element_count_check_t3d");
            assert!(
                matches!(got[0].1, crate::l2::rule::Allowed::Text(t) if t == want),
                "{fmt} {g} {s} {d}: {:?}",
                got[0].1
            );
        }
        assert_eq!(f(&dq(0, 0, 8, 16)), ["has_valid_dequant_fmt"]);
        assert_eq!(f(&dq(1, 4, 8, 16)), ["has_valid_group_size"]);
        assert_eq!(f(&dq(4, 8, 10, 16)), ["has_valid_dequant_fmt_group_size"]);
        let mut b = dq(1, 0, 8, 16);
        b.0[33] = dtype::FP8_EXP5;
        assert_eq!(f(&b), ["has_valid_tens_dequant_dtype"]);
        let mut b = dq(1, 0, 8, 16);
        b.set_u32(44, addr::PSUM_BASE);
        assert_eq!(f(&b), ["tensor_start_addr_valid.allowed_in_psum"]);
        let mut b = dq(1, 0, 8, 16);
        b.0[40] = 1;
        assert_eq!(f(&b), ["reserved_zero"]);
        // Shape from a register skips the ratio check.
        let mut b = dq(1, 0, 8, 8);
        b.set_u32(12, 0xC000_0003);
        assert!(f(&b).is_empty(), "{:?}", f(&b));
    }

    #[test]
    fn copy_predicated_scalar() {
        let mut b = hdr(0xE8);
        t3(&mut b, 16, 0x100, [1, 1, 16]);
        b.0[32] = dtype::UINT8;
        b.0[33] = 1;
        b.0[34] = 8;
        b.0[41] = dtype::FP32;
        b.0[42] = dtype::FP32;
        t3(&mut b, 48, 0x200, [1, 1, 16]);
        let f = |b: &Bundle| fails(b, Gen::V3, None, is_valid_s3d3_cp_pred_scalar);
        assert!(f(&b).is_empty(), "{:?}", f(&b));
        b.0[33] = 2;
        assert_eq!(f(&b), ["flag_byte"]);
        b.0[33] = 0;
        b.0[42] = dtype::FP32R;
        assert_eq!(f(&b), ["is_valid_dtype"]);
    }

    fn select_reduce_bundle() -> Bundle {
        let mut b = hdr(0xEA);
        t2(&mut b, 12, 0x000, [1, 4]);
        t2(&mut b, 24, 0x040, [1, 4]);
        b.0[37] = enums::MAX;
        b.0[40] = dtype::INT8 | dtype::BF16 << 4;
        b.0[41] = dtype::FP32;
        b.0[42] = 2;
        b.0[43] = dtype::FP32;
        b.0[44] = 2;
        t2(&mut b, 48, 0x080, [1, 4]);
        b
    }

    #[test]
    fn select_reduce() {
        let f = |b: &Bundle| fails(b, Gen::V3, None, is_valid_select_reduce);
        let b = select_reduce_bundle();
        assert!(f(&b).is_empty(), "{:?}", f(&b));
        for (off, v) in [(36, 0x04), (37, 0x09), (38, 2), (44, 1)] {
            let mut b = select_reduce_bundle();
            b.0[off] = v;
            assert_eq!(f(&b), ["is_valid_select_reduce.ops"], "byte {off}");
        }
        let mut b = select_reduce_bundle();
        b.0[40] = dtype::BF16 | dtype::BF16 << 4; // float predicate
        assert_eq!(f(&b), ["is_valid_select_reduce.dtypes"]);
        let mut b = select_reduce_bundle();
        b.0[40] = dtype::INT8 | dtype::INT32 << 4; // 32-bit integer data
        assert_eq!(f(&b), ["is_valid_select_reduce.dtypes"]);
        let mut b = select_reduce_bundle();
        b.0[43] = dtype::BF16;
        assert_eq!(f(&b), ["is_valid_select_reduce.dtypes"]);
        let mut b = select_reduce_bundle();
        b.set_u32(60, 0x7FC0_0000); // NaN fp32 instruction immediate
        assert_eq!(f(&b), ["float_field_finite"]);
        let mut b = select_reduce_bundle();
        b.set_u16(24 + 10, 0);
        assert_eq!(f(&b), ["tensorNd_valid.num_elem"]);
    }

    fn stt(op: u8) -> Bundle {
        let mut b = hdr(op);
        t2(&mut b, 12, 0x100, [1, 16]);
        t2(&mut b, 24, 0x400, [1, 16]);
        b.0[36] = 0x0A;
        b.0[37] = 0x0B;
        b.0[40] = dtype::INT32 | dtype::INT32 << 4;
        b.0[41] = dtype::INT32;
        b.0[42] = 4;
        b.0[43] = dtype::INT32;
        t2(&mut b, 48, 0x4_0000, [1, 16]);
        b
    }

    #[test]
    fn scalar_tensor_tensor() {
        let f = |b: &Bundle| fails(b, Gen::V3, None, is_valid_s2s2d2_stt);
        assert!(f(&stt(0x9E)).is_empty(), "{:?}", f(&stt(0x9E)));
        let mut b = stt(0x9E);
        b.0[44] = 2;
        assert_eq!(f(&b), ["is_valid_s2s2d2_stt.accumulator_cmd"]);
        b.0[0] = 0x9D;
        // AND / OR are bitvec ops, not general arith ops.
        assert_eq!(f(&b), ["is_valid_enum(ALU_OP)", "is_valid_enum(ALU_OP)"]);
        b.0[36] = 0x04; // ADD
        b.0[37] = 0x06; // MULT
        assert!(f(&b).is_empty(), "{:?}", f(&b));
        // The scan takes the same ops but only IDLE.
        b.0[0] = 0xE5;
        assert_eq!(f(&b), ["is_valid_s2s2d2_stt.accumulator_cmd"]);
        b.0[44] = 0;
        assert!(f(&b).is_empty(), "{:?}", f(&b));
        b.0[36] = 0x1A; // POW: an ALU_OP member, not a general arith op
        assert_eq!(f(&b), ["is_valid_enum(ALU_OP)"]);
        let mut b = stt(0x9E);
        b.0[36] = 0x04; // ADD is not a bitvec op
        assert_eq!(f(&b), ["is_valid_enum(ALU_OP)"]);
        let mut b = stt(0x9D);
        b.0[36] = 0x04;
        b.0[37] = 0x06;
        b.set_u16(48 + 10, 0);
        assert_eq!(f(&b), ["tensorNd_valid.num_elem"]);
        let mut b = stt(0x9D);
        b.0[36] = 0x04;
        b.0[37] = 0x06;
        b.0[39] = 1; // imm0 from a pointer
        b.set_u32(60, 0x202);
        assert_eq!(f(&b), ["addr_aligned_dtype"]);
        b.0[39] = 3;
        assert_eq!(f(&b), ["is_valid_enum(IMM_SRC)"]);
    }

    fn ts_select() -> Bundle {
        let mut b = hdr(0x98);
        t3(&mut b, 16, 0x000, [1, 1, 3]);
        b.0[33] = 2;
        b.0[34] = dtype::INT16;
        b.0[35] = dtype::UINT16;
        b.0[39] = 1;
        b.set_u32(40, 0xABCD_FFF9);
        b.set_u32(44, 0x20);
        t3(&mut b, 48, 0x40, [1, 1, 3]);
        b
    }

    #[test]
    fn tensor_scalar_select() {
        let f = |b: &Bundle| fails(b, Gen::V3, None, is_valid_s3d3_ts_select);
        assert!(f(&ts_select()).is_empty(), "{:?}", f(&ts_select()));
        let mut b = ts_select();
        b.0[35] = dtype::UINT32; // width differs from INT16
        assert_eq!(f(&b), ["is_valid_s3d3_ts_select"]);
        let mut b = ts_select();
        b.0[39] = 0;
        b.set_u32(44, 2); // instruction predicate must be 0 or 1
        assert_eq!(f(&b), ["is_valid_s3d3_ts_select"]);
        b.set_u32(44, 1);
        assert!(f(&b).is_empty());
        let mut b = ts_select();
        b.0[32] = 2;
        assert_eq!(f(&b), ["is_valid_s3d3_ts_select"]);
        let mut b = ts_select();
        b.set_u32(44, 0x21); // pointer predicate misaligned for UINT16
        assert_eq!(f(&b), ["addr_aligned_dtype"]);
    }

    #[test]
    fn affine_select() {
        let mut b = hdr(0x92);
        b.0[12] = 3;
        b.0[13] = dtype::FP32 | dtype::BF16 << 4;
        b.0[14] = 1;
        b.0[15] = 3;
        b.set_u16(20, 1);
        for k in 0..4 {
            b.set_u16(28 + 2 * k, if k == 0 { 4 } else { 1 });
        }
        t2(&mut b, 36, 0x000, [1, 4]);
        t2(&mut b, 48, 0x040, [1, 4]);
        b.set_u32(60, 0xFFFF_FFFF);
        let f = |b: &Bundle| fails(b, Gen::V3, None, is_valid_s2d2_ts_as);
        assert!(f(&b).is_empty(), "{:?}", f(&b));
        b.0[14] = 4;
        assert_eq!(f(&b), ["is_valid_enum(AFFINE_SELECT_CMP)"]);
        b.0[14] = 0;
        b.set_u16(30, 0);
        assert_eq!(f(&b), ["is_valid_s2d2_ts_as.mask_num"]);
    }

    #[test]
    fn pool() {
        let mut b = hdr(0x45);
        t4(&mut b, 12, 0x100, [1, 2, 2, 16]);
        b.0[32] = dtype::BF16;
        b.0[33] = dtype::BF16;
        b.0[34] = 16;
        b.0[36] = 2;
        b.0[37] = 3;
        b.set_u32(40, 0x3E80_0000);
        t4(&mut b, 44, 0x800, [1, 1, 1, 16]);
        let f = |b: &Bundle| fails(b, Gen::V2, None, is_valid_s4d4_pl);
        assert!(f(&b).is_empty(), "{:?}", f(&b));
        b.0[36] = 3;
        assert_eq!(f(&b), ["is_valid_enum(POOL_TYPE)"]);
        b.0[36] = 1;
        b.set_u32(40, 0xFF80_0000);
        assert_eq!(f(&b), ["float_field_finite"]);
    }
}
