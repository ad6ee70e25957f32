//! `is_valid_s4d4_tr`: the `S4D4_TR` family — TensorReduce 0x42/0x52, TransposeTensorReduce
//! 0x83/0x84, TensorCumulative 0x4E/0x5E, Copy 0x46, Cast 0x47, Reciprocal 0x48,
//! StreamShuffle 0x6A, StreamTranspose 0x6B, and the v2 BF16 reductions 0x8C / 0x8D.
//!
//! Layout (header binding from `instruction_mapping.json`, identical offsets on every
//! generation; isa-facts §4.3): src 4D +12, in +32, out +33, num +34, negated +35, op +36,
//! op_dim +37, mask_enable +38, reserved +39..+43, dst 4D +44.

use super::super::addr::Operand;
use super::super::enums;
use super::super::rule::Allowed;
use super::super::rule::{rule, Ck, Field, Sink};
use super::super::table::{
    check, check_dtypes, check_regions, check_windows, src_dst, DtypeRule, FieldRule, GateTable,
    OperandRule, Part, Tag,
};
use super::{alu_pool_only, spec_reserved, DtypeOpts};
use tpbsim_isa::formats::loc;
use tpbsim_isa::Opcode;

/// Source.
pub const SRC: Operand = Operand::at(loc::tensor_reduce::SRC);
/// Input dtype.
pub const IN_DTYPE: Field = Field::at(loc::tensor_reduce::IN_DTYPE);
/// Output dtype.
pub const OUT_DTYPE: Field = Field::at(loc::tensor_reduce::OUT_DTYPE);
/// Active channels.
pub const NUM: Field = Field::at(loc::tensor_reduce::NUM_ACTIVE_CHANNELS);
/// `negated`.
pub const NEGATED: Field = Field::at(loc::tensor_reduce::NEGATED);
/// ALU op.
pub const OP: Field = Field::at(loc::tensor_reduce::OP);
/// `op_dim` (TENSOR_SUBDIM).
pub const OP_DIM: Field = Field::at(loc::tensor_reduce::OP_DIM);
/// Destination.
pub const DST: Operand = Operand::at(loc::tensor_reduce::DST);

rule!(TR_NEGATED, "is_valid_s4d4_tr.negated", Format,
    project "negated is a flag byte; tpbsim accepts 0 and 1",
    "negated is 0 or 1");
rule!(TR_OP, "tensor_reduce_valid_op", Format,
    public "isa-facts §4.3/§6.3 (arith opcodes take arith ops, bitvec opcodes general bitvec ops)",
    "the reduce op is an ALU op of the opcode's class and generation");
rule!(TR_OP_DIM, "is_valid_enum(TENSOR_SUBDIM)", Format,
    public "isa-facts §4.3 (TENSOR_SUBDIM UNUSED 0, X 1, XY 2, XYZ 3, XYZW 4)",
    "op_dim is a TENSOR_SUBDIM member");
rule!(TR_REDUCE_AXIS, "is_valid_s4d4_tr.reduce_op_dim", Format,
    project "a reduction folds the innermost op_dim free dims; TENSOR_SUBDIM UNUSED (0) names no axis, and the simulator faults on it",
    "a TensorReduce (TENSOR_REDUCE_ARITH_OP / TENSOR_REDUCE_BITVEC_OP) names its axes: op_dim is X, XY, XYZ or XYZW");
rule!(TR_NUM, "is_valid_s4d4_tr.num_active_channels", Format,
    public "isa-facts §4.3 (num_active_channels)",
    "num_active_channels is 1..=128");

/// The bitvec opcodes of the family.
const BITVEC: &[u8] = &[0x52, 0x84, 0x5E];

/// Enum stage: `negated`, the reduce op.
pub const ENUMS: &[FieldRule] = &[
    FieldRule::max(&TR_NEGATED, NEGATED, 1),
    FieldRule::set(&TR_OP, OP, enums::GENERAL_BITVEC, "a general bitvec op").only(BITVEC),
    FieldRule::per_gen(&TR_OP, OP, enums::alu_op, "an ALU op of this generation").except(BITVEC),
];
/// The reducing opcodes of the family (the transposing reduce takes UNUSED: no folding).
pub const REDUCING: &[u8] = &[
    Opcode::TENSOR_REDUCE_ARITH_OP.0,
    Opcode::TENSOR_REDUCE_BITVEC_OP.0,
];

/// After the Pool-only op check: `op_dim`, and the axes of a reduction.
pub const LATE: &[FieldRule] = &[
    FieldRule::set(&TR_OP_DIM, OP_DIM, enums::TENSOR_SUBDIM, "0..=4"),
    FieldRule::range(
        &TR_REDUCE_AXIS,
        OP_DIM,
        1,
        4,
        Allowed::Text("1..=4 (X, XY, XYZ or XYZW)"),
    )
    .only(REDUCING),
];
/// Dtype stage (64-bit dtypes allowed).
pub const DTYPES: &[DtypeRule] = &[
    DtypeRule::byte(
        IN_DTYPE,
        DtypeOpts {
            fp32r: false,
            b64: true,
            fp4: false,
        },
    ),
    DtypeRule::byte(
        OUT_DTYPE,
        DtypeOpts {
            fp32r: true,
            b64: true,
            fp4: false,
        },
    ),
];
/// Geometry stage.
pub const GEOMETRY: &[FieldRule] = &[FieldRule::count(&TR_NUM, NUM)];
/// The rule data of `is_valid_s4d4_tr`.
pub const TABLE: GateTable = GateTable {
    fields: &[ENUMS, LATE, GEOMETRY],
    dtypes: &[DTYPES],
    operands: &[OPERANDS],
};
/// Placement stage: the source and destination regions and partition windows.
pub const OPERANDS: &[OperandRule] = &src_dst(
    [SRC, DST],
    4,
    [
        Tag::Of(IN_DTYPE, Part::Byte),
        Tag::Of(OUT_DTYPE, Part::Byte),
    ],
    NUM,
    true,
);

/// `is_valid_s4d4_tr`.
pub fn is_valid_s4d4_tr<S: Sink>(ck: &mut Ck<S>) {
    check(ck, ENUMS);
    alu_pool_only(ck, OP);
    check(ck, LATE);
    spec_reserved(ck);
    if ck.done() {
        return;
    }
    check_dtypes(ck, DTYPES);
    if ck.done() {
        return;
    }
    check(ck, GEOMETRY);
    check_regions(ck, OPERANDS);
    check_windows(ck, OPERANDS);
}

#[cfg(test)]
mod tests {
    use super::super::testutil::*;
    use super::*;
    use crate::l2::dtype;
    use tpbsim_isa::{Bundle, Gen};

    fn copy() -> Bundle {
        let mut b = hdr(0x46);
        t4(&mut b, 12, 0x100, [1, 1, 2, 32]);
        b.0[32] = dtype::BF16;
        b.0[33] = dtype::BF16;
        b.0[34] = 32;
        t4(&mut b, 44, 0x800, [1, 1, 1, 64]);
        b
    }

    #[test]
    fn copy_rules() {
        let f = |b: &Bundle| fails(b, Gen::V3, None, is_valid_s4d4_tr);
        assert!(f(&copy()).is_empty(), "{:?}", f(&copy()));
        let mut b = copy();
        b.0[37] = 5;
        assert_eq!(f(&b), ["is_valid_enum(TENSOR_SUBDIM)"]);
        let mut b = copy();
        b.0[40] = 1;
        assert_eq!(f(&b), ["reserved_zero"]);
        let mut b = copy();
        b.set_u16(44 + 18, 0);
        assert_eq!(f(&b), ["tensorNd_valid.num_elem"]);
        let mut b = copy();
        b.0[0] = 0x52;
        b.0[36] = 0x04;
        b.0[37] = 1;
        assert_eq!(f(&b), ["tensor_reduce_valid_op"]);
        // A reduction names its axes; the copy beside it does not need to.
        let mut b = copy();
        assert_eq!(b.0[37], 0);
        b.0[0] = Opcode::TENSOR_REDUCE_ARITH_OP.0;
        let rule = "is_valid_s4d4_tr.reduce_op_dim";
        assert!(f(&b).contains(&rule), "{:?}", f(&b));
        for axes in 1..=4 {
            b.0[37] = axes;
            assert!(!f(&b).contains(&rule), "op_dim {axes}: {:?}", f(&b));
        }
    }
}
