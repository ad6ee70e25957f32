//! `is_valid_s2d2_rs`: RangeSelect 0xBC (`S2D2_RS`, v3+).
//!
//! Layout and the published sub-checks: isa-facts §4.3 (G firmware/kernels/rangeselect.md).

use super::super::addr::Operand;
use super::super::enums;
use super::super::rule::{rule, Allowed, Ck, Field, Sink};
use super::super::table::{
    check, check_dtypes, check_regions, check_windows, DtypeRule, FieldRule, GateTable,
    OperandRule, Part, Tag,
};
use super::{float_finite, spec_reserved, DtypeOpts};
use tpbsim_isa::formats::loc;
use tpbsim_isa::spec::ByteSet;

/// Active partitions.
pub const NUM: Field = Field::at(loc::range_select::NUM_ACTIVE_PARTITIONS);
/// In/out dtype pair.
pub const DTYPES: Field = Field::at(loc::range_select::IN_OUT_DTYPES);
/// Reduce command.
pub const REDUCE_CMD: Field = Field::at(loc::range_select::REDUCE_CMD);
/// Reduce op.
pub const REDUCE_OP: Field = Field::at(loc::range_select::REDUCE_OP);
/// Base (f32).
pub const BASE: Field = Field::at(loc::range_select::BASE);
/// Fill value (f32 bits).
pub const FILL: Field = Field::at(loc::range_select::FILL_VAL);
/// Source.
pub const SRC: Operand = Operand::at(loc::range_select::SRC);
/// Comparison ops.
pub const COMP0: Field = Field::at(loc::range_select::COMP_OP0);
/// Second comparison op.
pub const COMP1: Field = Field::at(loc::range_select::COMP_OP1);
/// Bound sources.
pub const BOUND0_SRC: Field = Field::at(loc::range_select::BOUND0_SRC);
/// Second bound source.
pub const BOUND1_SRC: Field = Field::at(loc::range_select::BOUND1_SRC);
/// Destination.
pub const DST: Operand = Operand::at(loc::range_select::DST);

rule!(RS_FIELDS, "is_valid_s2d2_rs", Format,
    public "isa-facts §4.3 (RangeSelect: reduce_op MAX, fill -FLT_MAX, comparison ops IS_EQ..IS_LT, base <= 2^24)",
    "RangeSelect: reduce_cmd in REDUCE_CMD, reduce_op MAX, fill_val 0xFF7FFFFF, comparisons 0x12..=0x16, bound sources IMM_SRC, |base| <= 2^24");

/// The comparison ops a bound test may use: IS_EQ..IS_LT.
const CMP: ByteSet = ByteSet::range(0x12, 0x16);

/// Enum stage.
pub const ENUMS: &[FieldRule] = &[
    FieldRule::set(&RS_FIELDS, REDUCE_CMD, enums::REDUCE_CMD, "0..=3"),
    FieldRule::eq(&RS_FIELDS, REDUCE_OP, enums::MAX as u64),
    FieldRule::set(&RS_FIELDS, COMP0, CMP, "IS_EQ..IS_LT (0x12..=0x16)"),
    FieldRule::set(&RS_FIELDS, COMP1, CMP, "IS_EQ..IS_LT (0x12..=0x16)"),
    FieldRule::set(&RS_FIELDS, BOUND0_SRC, enums::IMM_SRC, "0..=2"),
    FieldRule::set(&RS_FIELDS, BOUND1_SRC, enums::IMM_SRC, "0..=2"),
];
/// Dtype stage: the pair's input (low) and output (high) nibbles.
pub const DTYPE_ROWS: &[DtypeRule] = &[
    DtypeRule::nibble(DTYPES, false, DtypeOpts::PLAIN),
    DtypeRule::nibble(DTYPES, true, DtypeOpts::FP32R),
];
/// The fill value is -FLT_MAX.
pub const FILL_ROWS: &[FieldRule] = &[FieldRule::eq(&RS_FIELDS, FILL, 0xFF7F_FFFF)];
/// Geometry stage.
pub const GEOMETRY: &[FieldRule] = &[FieldRule::count(&RS_FIELDS, NUM)];
/// The rule data of `is_valid_s2d2_rs`.
pub const TABLE: GateTable = GateTable {
    fields: &[ENUMS, FILL_ROWS, GEOMETRY],
    dtypes: &[DTYPE_ROWS],
    operands: &[OPERANDS],
};
/// Placement stage: the source and destination regions; the source's partition window.
pub const OPERANDS: &[OperandRule] = &[
    OperandRule::read(SRC, 2, Tag::Of(DTYPES, Part::Low)).channels(NUM),
    OperandRule::write(DST, 2, Tag::Of(DTYPES, Part::High)),
];

/// `is_valid_s2d2_rs`.
pub fn is_valid_s2d2_rs<S: Sink>(ck: &mut Ck<S>) {
    let r = &RS_FIELDS;
    check(ck, ENUMS);
    spec_reserved(ck);
    if ck.done() {
        return;
    }
    check_dtypes(ck, DTYPE_ROWS);
    check(ck, FILL_ROWS);
    float_finite(ck, BASE);
    let base = f32::from_bits(ck.get(BASE) as u32);
    if base.is_finite() {
        ck.check(
            base.abs() <= 16_777_216.0,
            r,
            BASE,
            Allowed::Text("|base| <= 2^24"),
        );
    }
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

    fn rs() -> Bundle {
        let mut b = hdr(0xBC);
        b.0[12] = 8;
        b.0[13] = dtype::FP32 | (dtype::FP32 << 4);
        b.0[15] = enums::MAX;
        b.set_u32(16, 0);
        b.set_u32(20, 0xFF7F_FFFF);
        t2(&mut b, 24, 0x100, [1, 16]);
        b.0[36] = 0x14;
        b.0[37] = 0x16;
        t2(&mut b, 48, 0x200, [1, 16]);
        b
    }

    #[test]
    fn range_select() {
        let f = |b: &Bundle| fails(b, Gen::V3, None, is_valid_s2d2_rs);
        assert!(f(&rs()).is_empty(), "{:?}", f(&rs()));
        let mut b = rs();
        b.set_u32(20, 0);
        assert_eq!(f(&b), ["is_valid_s2d2_rs"]);
        let mut b = rs();
        b.0[15] = 0x09;
        assert_eq!(f(&b), ["is_valid_s2d2_rs"]);
        let mut b = rs();
        b.set_u32(16, 0x7FC0_0000);
        assert_eq!(f(&b), ["float_field_finite"]);
        let mut b = rs();
        b.set_u32(16, (3.0e7f32).to_bits());
        assert_eq!(f(&b), ["is_valid_s2d2_rs"]);
    }
}
