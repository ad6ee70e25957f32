//! `is_valid_s3d3_ts`: the TensorScalar family (`S3D3_TS`): 0x43 arith, 0x53 bitvec,
//! 0x93 transpose, 0x9A cache-reduce, 0xE6 cache-cumulative, 0x30 Exponential.
//!
//! Layout and legality: isa-facts §4.3 (header offsets, §10 #4). `tensor_scalar_valid_ops`:
//! R isa/validator-architecture.md.

use super::super::addr::Operand;
use super::super::dtype;
use super::super::enums;
use super::super::rule::{rule, Allowed, Ck, Field, Sink};
use super::super::table::{
    check, check_dtypes, check_regions, check_windows, src_dst, DtypeRule, FieldRule, GateTable,
    OperandRule, Part, Tag,
};
use super::{alu_pool_only, spec_reserved, DtypeOpts};
use tpbsim_isa::formats::loc;

/// `accumulator_cmd`.
pub const ACC_CMD: Field = Field::at(loc::tensor_scalar::ACCUMULATOR_CMD);
/// Source.
pub const SRC: Operand = Operand::at(loc::tensor_scalar::SRC);
/// Input dtype.
pub const IN_DTYPE: Field = Field::at(loc::tensor_scalar::IN_DTYPE);
/// Output dtype.
pub const OUT_DTYPE: Field = Field::at(loc::tensor_scalar::OUT_DTYPE);
/// Active partitions.
pub const NUM: Field = Field::at(loc::tensor_scalar::NUM_ACTIVE_PARTITIONS);
/// `imm0_src`.
pub const IMM0_SRC: Field = Field::at(loc::tensor_scalar::IMM0_SRC);
/// `op0`.
pub const OP0: Field = Field::at(loc::tensor_scalar::OP0);
/// `op1`.
pub const OP1: Field = Field::at(loc::tensor_scalar::OP1);
/// `reverse` (bit0 op0, bit1 op1).
pub const REVERSE: Field = Field::at(loc::tensor_scalar::REVERSE);
/// `imm1_src`.
pub const IMM1_SRC: Field = Field::at(loc::tensor_scalar::IMM1_SRC);
/// Destination.
pub const DST: Operand = Operand::at(loc::tensor_scalar::DST);

rule!(TS_ACC_CMD, "is_valid_s3d3_ts.accumulator_cmd", Format,
    public "isa-facts §4.3 (forced IDLE for 0x43/0x53; cache ops ZeroAccumulate/Accumulate/LoadAccumulate)",
    "accumulator_cmd is IDLE for plain TensorScalar and an ACCUM_CMD member for the cache ops");
rule!(TENSOR_SCALAR_VALID_OPS, "tensor_scalar_valid_ops", Format,
    public "R isa/validator-architecture.md (tensor_scalar_valid_ops); isa-facts §6.3 (arith / general bitvec sets)",
    "op0/op1 are arith ops (bitvec ops for 0x53); reverse uses bits 0..1 only");
rule!(TS_EXPONENTIAL, "is_valid_s3d3_ts.exponential", Format,
    public "isa-facts §4.3 (Exponential 0x30 forces op0 = op1 = 0 and reverse = 0)",
    "Exponential: op0, op1 and reverse are zero");
rule!(TS_BITVEC_DTYPES, "is_valid_s3d3_ts.bitvec_dtypes", Format,
    public "isa-facts §4.3 (bitvec form needs in == out ∈ {INT8/16/32, UINT8/16/32})",
    "bitvec TensorScalar: in == out, an 8/16/32-bit integer");
rule!(TS_NUM, "is_valid_s3d3_ts.num_active_partitions", Format,
    public "isa-facts §4.3 (num_active_partitions 1..128)",
    "num_active_partitions is 1..=128");

/// Opcodes whose accumulator is forced IDLE (plain TensorScalar arith and bitvec).
const PLAIN: &[u8] = &[0x43, 0x53];
/// The bitvec opcode.
const BITVEC: &[u8] = &[0x53];

/// Enum stage: accumulator command, immediate sources, ALU ops.
pub const ENUMS: &[FieldRule] = &[
    FieldRule::eq(&TS_ACC_CMD, ACC_CMD, 0).only(PLAIN),
    FieldRule::set(&TS_ACC_CMD, ACC_CMD, enums::ACCUM_CMD, "0..=4").except(PLAIN),
    FieldRule::set(&super::act::IMM_SRC_ENUM, IMM0_SRC, enums::IMM_SRC, "0..=2"),
    FieldRule::set(&super::act::IMM_SRC_ENUM, IMM1_SRC, enums::IMM_SRC, "0..=2"),
    FieldRule::set(
        &TENSOR_SCALAR_VALID_OPS,
        OP0,
        enums::GENERAL_BITVEC,
        "a general bitvec op",
    )
    .only(BITVEC),
    FieldRule::per_gen(
        &TENSOR_SCALAR_VALID_OPS,
        OP0,
        enums::arith,
        "an arith op of this generation",
    )
    .except(BITVEC),
    FieldRule::set(
        &TENSOR_SCALAR_VALID_OPS,
        OP1,
        enums::GENERAL_BITVEC,
        "a general bitvec op",
    )
    .only(BITVEC),
    FieldRule::per_gen(
        &TENSOR_SCALAR_VALID_OPS,
        OP1,
        enums::arith,
        "an arith op of this generation",
    )
    .except(BITVEC),
];

/// After the Pool-only op check: `reverse` and the Exponential form.
pub const LATE: &[FieldRule] = &[
    FieldRule::max(&TENSOR_SCALAR_VALID_OPS, REVERSE, 3),
    FieldRule::eq(&TS_EXPONENTIAL, OP0, 0).only(&[0x30]),
    FieldRule::eq(&TS_EXPONENTIAL, OP1, 0).only(&[0x30]),
    FieldRule::eq(&TS_EXPONENTIAL, REVERSE, 0).only(&[0x30]),
];

/// Dtype stage.
pub const DTYPES: &[DtypeRule] = &[
    DtypeRule::byte(IN_DTYPE, DtypeOpts::PLAIN),
    DtypeRule::byte(OUT_DTYPE, DtypeOpts::FP32R),
];

/// Geometry stage.
pub const GEOMETRY: &[FieldRule] = &[FieldRule::count(&TS_NUM, NUM)];

/// The rule data of `is_valid_s3d3_ts`.
pub const TABLE: GateTable = GateTable {
    fields: &[ENUMS, LATE, GEOMETRY],
    dtypes: &[DTYPES],
    operands: &[OPERANDS],
};
/// Placement stage: the source and destination regions and partition windows.
pub const OPERANDS: &[OperandRule] = &src_dst(
    [SRC, DST],
    3,
    [
        Tag::Of(IN_DTYPE, Part::Byte),
        Tag::Of(OUT_DTYPE, Part::Byte),
    ],
    NUM,
    true,
);

/// `is_valid_s3d3_ts`.
pub fn is_valid_s3d3_ts<S: Sink>(ck: &mut Ck<S>) {
    let opc = ck.u8(0);
    // (3) enums
    check(ck, ENUMS);
    alu_pool_only(ck, OP0);
    alu_pool_only(ck, OP1);
    check(ck, LATE);
    // (4) reserved
    spec_reserved(ck);
    if ck.done() {
        return;
    }
    // (5) dtypes
    let (i, o) = (ck.get(IN_DTYPE) as u8, ck.get(OUT_DTYPE) as u8);
    check_dtypes(ck, DTYPES);
    if opc == 0x53 {
        let ok = i == o
            && matches!(
                i,
                dtype::INT8
                    | dtype::UINT8
                    | dtype::INT16
                    | dtype::UINT16
                    | dtype::INT32
                    | dtype::UINT32
            );
        ck.check(
            ok,
            &TS_BITVEC_DTYPES,
            OUT_DTYPE,
            Allowed::Text("in == out, an 8/16/32-bit integer"),
        );
    }
    if ck.done() {
        return;
    }
    // (6) geometry
    check(ck, GEOMETRY);
    check_regions(ck, OPERANDS);
    check_windows(ck, OPERANDS);
}

#[cfg(test)]
mod tests {
    use super::super::testutil::*;
    use super::*;
    use tpbsim_isa::{Bundle, Gen};

    fn ts(opc: u8) -> Bundle {
        let mut b = hdr(opc);
        t3(&mut b, 16, 0x100, [1, 1, 64]);
        b.0[32] = dtype::BF16;
        b.0[33] = dtype::BF16;
        b.0[34] = 16;
        b.0[36] = 0x06; // MULT
        b.0[37] = 0x04; // ADD
        t3(&mut b, 48, 0x400, [1, 1, 64]);
        b
    }

    fn f(b: &Bundle) -> Vec<&'static str> {
        fails(b, Gen::V3, None, is_valid_s3d3_ts)
    }

    #[test]
    fn legal_and_rules() {
        assert!(f(&ts(0x43)).is_empty(), "{:?}", f(&ts(0x43)));
        let mut b = ts(0x43);
        b.0[12] = 2;
        assert_eq!(f(&b), ["is_valid_s3d3_ts.accumulator_cmd"]);
        b.0[0] = 0x9A;
        assert!(f(&b).is_empty());
        let mut b = ts(0x43);
        b.0[14] = 1;
        assert_eq!(f(&b), ["reserved_zero"]);
        let mut b = ts(0x43);
        b.0[36] = 0x0A; // BITWISE_AND is not arith
        assert_eq!(f(&b), ["tensor_scalar_valid_ops"]);
        let mut b = ts(0x30);
        assert_eq!(
            f(&b),
            [
                "is_valid_s3d3_ts.exponential",
                "is_valid_s3d3_ts.exponential"
            ]
        );
        b.0[36] = 0;
        b.0[37] = 0;
        assert!(f(&b).is_empty());
        let mut b = ts(0x53);
        b.0[36] = 0x0A;
        b.0[37] = 0x0B;
        assert_eq!(f(&b), ["is_valid_s3d3_ts.bitvec_dtypes"]);
        b.0[32] = dtype::INT16;
        b.0[33] = dtype::INT16;
        assert!(f(&b).is_empty());
        let mut b = ts(0x43);
        b.0[32] = dtype::FP32R;
        assert_eq!(f(&b), ["is_valid_dtype"]);
    }
}
