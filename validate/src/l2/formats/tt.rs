//! `is_valid_s3s3d3_tt`: TensorTensor arith 0x41, bitvec 0x51, CopyPredicated 0x72,
//! CastPredicated 0x99, BatchNormBackProp 0x65 and the v2 BF16 fast paths 0x8A / 0x8B / 0x8F
//! (`S3S3D3_TT`; the header's `struct2opcode` members, G firmware/kernels/intwide-bf16-extremes.md).
//!
//! Layout (header order, isa-facts §4.3 / §10 #26): +12 dtype pair (low nibble src0, high
//! nibble src1), +13 out_dtype, +14 op, +15 num_active_partitions, src0 +16, src1 +32,
//! dst +48. Legality: isa-facts §4.3 and §6.3; `tt_valid_partitions` §3.1.

use super::super::addr::{self, Operand};
use super::super::dtype;
use super::super::enums;
use super::super::rule::{rule, Allowed, Ck, Field, Sink};
use super::super::table::{
    check, check_dtypes, check_regions, check_windows, DtypeRule, FieldRule, GateTable,
    OperandRule, Part, Tag,
};
use super::{alu_pool_only, spec_reserved, DtypeOpts};
use tpbsim_isa::formats::loc;
use tpbsim_isa::spec::ByteSet;

/// Source 0.
pub const SRC0: Operand = Operand::at(loc::tensor_tensor::SRC0);
/// Source 1.
pub const SRC1: Operand = Operand::at(loc::tensor_tensor::SRC1);
/// Destination.
pub const DST: Operand = Operand::at(loc::tensor_tensor::DST);
/// src0 dtype (low nibble).
pub const DT0: Field = Field::sub_at(loc::tensor_tensor::IN_DTYPES, "src0 (low nibble)");
/// src1 dtype (high nibble).
pub const DT1: Field = Field::sub_at(loc::tensor_tensor::IN_DTYPES, "src1 (high nibble)");
/// Output dtype.
pub const OUT: Field = Field::at(loc::tensor_tensor::OUT_DTYPE);
/// ALU op.
pub const OP: Field = Field::at(loc::tensor_tensor::OP);
/// Active partitions.
pub const NUM: Field = Field::at(loc::tensor_tensor::NUM_ACTIVE_PARTITIONS);

rule!(TT_ALU_OP, "is_valid_s3s3d3_tt.alu_op", Format,
    public "isa-facts §4.3 (0x41: general arith ∪ {POW} ∪ valid int aluop; 0x51: general bitvec; predicated forms: BYPASS); other S3S3D3_TT members (0x65, v2 0x8A/0x8B/0x8F): ALU_OP enum membership",
    "the ALU op is legal for the opcode and generation");
rule!(TT_DTYPES, "is_valid_s3s3d3_tt.dtypes", Format,
    public "isa-facts §4.3 (bitvec output integer; predicate dtype integer; 0x72 data dtype == out; 64-bit only through the int band)",
    "the dtype combination is legal for the opcode");
rule!(TT_SIGNEDNESS, "is_valid_s3s3d3_tt.int_signedness", Format,
    public "isa-facts §4.3/§6.3 (integer-band ops need all three operands signed, or all unsigned, per the signedness lists)",
    "integer-band ops: all integer operands share the signedness the op requires");
rule!(TT_ELEMENTS, "is_valid_s3s3d3_tt.elements", Format,
    public "isa-facts §4.3 (src0, src1 and dst element-count products agree)",
    "src0, src1 and dst cover the same number of elements");

/// Opcodes whose op byte is any ALU_OP member: BatchNormBackProp and the v2 BF16 fast paths.
const ANY_ALU_OP: &[u8] = &[0x65, 0x8A, 0x8B, 0x8F];
/// Opcodes with their own op set; the rest are predicated copies/casts (BYPASS).
const OWN_SET: &[u8] = &[0x41, 0x51, 0x65, 0x8A, 0x8B, 0x8F];

/// Enum stage: the ALU op for the opcode.
pub const ENUMS: &[FieldRule] = &[
    FieldRule::per_gen(
        &TT_ALU_OP,
        OP,
        enums::tt_arith,
        "general arith, POW or an integer-band op",
    )
    .only(&[0x41]),
    FieldRule::set(&TT_ALU_OP, OP, enums::GENERAL_BITVEC, "a general bitvec op").only(&[0x51]),
    FieldRule::per_gen(
        &TT_ALU_OP,
        OP,
        enums::alu_op,
        "an ALU_OP member of this generation",
    )
    .only(ANY_ALU_OP),
    FieldRule::set(
        &TT_ALU_OP,
        OP,
        ByteSet::of(&[enums::BYPASS]),
        "BYPASS for a predicated copy/cast",
    )
    .except(OWN_SET),
];
/// Geometry stage: the partition count.
pub const GEOMETRY: &[FieldRule] = &[FieldRule::range(
    &addr::START_ADDR_ACTIVE_CHANNELS,
    NUM,
    1,
    128,
    Allowed::Text("1..=128 partitions"),
)];
/// Dtype stage: the source dtypes and the output dtype (FP32R only for arith 0x41); an
/// integer-band op opens the 64-bit path of all three.
pub const DTYPES: &[DtypeRule] = &[
    DtypeRule::nibble(DT0, false, DtypeOpts::PLAIN).wide_when(OP, enums::is_int_band),
    DtypeRule::nibble(DT1, true, DtypeOpts::PLAIN).wide_when(OP, enums::is_int_band),
    DtypeRule::byte(OUT, DtypeOpts::FP32R)
        .wide_when(OP, enums::is_int_band)
        .only(&[0x41]),
    DtypeRule::byte(OUT, DtypeOpts::PLAIN)
        .wide_when(OP, enums::is_int_band)
        .except(&[0x41]),
];
/// The rule data of `is_valid_s3s3d3_tt`.
pub const TABLE: GateTable = GateTable {
    fields: &[ENUMS, GEOMETRY],
    dtypes: &[DTYPES],
    operands: &[OPERANDS],
};
/// Placement stage: the two sources and the destination (regions, partition windows); the
/// sources' shared quadrant (`tt_valid_partitions`) stays procedural, a rule over two rows.
pub const OPERANDS: &[OperandRule] = &[
    OperandRule::read(SRC0, 3, Tag::Of(DT0, Part::Low))
        .channels(NUM)
        .pool_sbuf(),
    OperandRule::read(SRC1, 3, Tag::Of(DT1, Part::High))
        .channels(NUM)
        .pool_sbuf(),
    OperandRule::write(DST, 3, Tag::Of(OUT, Part::Byte))
        .channels(NUM)
        .pool_sbuf(),
];

/// `is_valid_s3s3d3_tt`.
pub fn is_valid_s3s3d3_tt<S: Sink>(ck: &mut Ck<S>) {
    let opc = ck.u8(0);
    let op = ck.get(OP) as u8;
    // (3) enums: the ALU op for this opcode.
    check(ck, ENUMS);
    alu_pool_only(ck, OP);
    // (4) reserved
    spec_reserved(ck);
    if ck.done() {
        return;
    }
    // (5) dtypes
    let pair = ck.get(DT0) as u8;
    let (d0, d1, out) = (pair & 0xF, pair >> 4, ck.get(OUT) as u8);
    let int_band = enums::is_int_band(op);
    check_dtypes(ck, DTYPES);
    if ck.done() {
        return;
    }
    match opc {
        0x51 => {
            ck.check(
                dtype::is_int(out),
                &TT_DTYPES,
                OUT,
                Allowed::Text("an integer output for a bitvec op"),
            );
        }
        0x72 | 0x99 => {
            ck.check(
                matches!(
                    d0,
                    dtype::INT8
                        | dtype::UINT8
                        | dtype::INT16
                        | dtype::UINT16
                        | dtype::INT32
                        | dtype::UINT32
                ),
                &TT_DTYPES,
                DT0,
                Allowed::Text("an 8/16/32-bit integer predicate dtype"),
            );
            if opc == 0x72 {
                ck.check(d1 == out, &TT_DTYPES, OUT, Allowed::Eq(d1 as u64));
            }
        }
        _ => {}
    }
    if int_band && dtype::is_int(d0) && dtype::is_int(d1) && dtype::is_int(out) {
        let s = [d0, d1, out].map(dtype::is_signed_int);
        let ok = if enums::SIGNED_ONLY.has(op) {
            s.iter().all(|x| *x)
        } else if enums::UNSIGNED_ONLY.has(op) {
            s.iter().all(|x| !*x)
        } else {
            s[0] == s[1] && s[1] == s[2]
        };
        ck.check(
            ok,
            &TT_SIGNEDNESS,
            DT1,
            Allowed::Text("operands of one signedness, as the op requires"),
        );
    }
    // (6) placement and geometry
    check(ck, GEOMETRY);
    let [e0, e1, ed, _] = check_regions(ck, OPERANDS);
    if e0 != 0 && e1 != 0 && ed != 0 && !(e0 == e1 && e1 == ed) {
        ck.fail(&TT_ELEMENTS, DST.num(3, 2), ed, Allowed::Eq(e0));
    }
    addr::tt_valid_partitions(ck, SRC0, SRC1);
    check_windows(ck, OPERANDS);
}

#[cfg(test)]
mod tests {
    use super::super::testutil::*;
    use super::*;
    use tpbsim_isa::{Bundle, Gen};

    fn tt(op: u8) -> Bundle {
        let mut b = hdr(0x41);
        b.0[12] = dtype::BF16 | (dtype::BF16 << 4);
        b.0[13] = dtype::FP32;
        b.0[14] = op;
        b.0[15] = 32;
        t3(&mut b, 16, 0x100, [1, 1, 64]);
        t3(&mut b, 32, 0x200, [1, 2, 32]);
        t3(&mut b, 48, addr::PSUM_BASE, [1, 1, 64]);
        b
    }

    fn f(b: &Bundle, gen: Gen, e: Option<u8>) -> Vec<&'static str> {
        fails(b, gen, e, is_valid_s3s3d3_tt)
    }

    #[test]
    fn legal() {
        assert!(
            f(&tt(0x04), Gen::V3, None).is_empty(),
            "{:?}",
            f(&tt(0x04), Gen::V3, None)
        );
    }

    #[test]
    fn two_sbuf_sources_in_different_quadrants() {
        let mut b = tt(0x04);
        b.set_u32(32, 32 << 18);
        assert_eq!(f(&b, Gen::V3, None), ["tt_valid_partitions"]);
        b.set_u32(32, 31 << 18);
        assert!(f(&b, Gen::V3, None).is_empty());
    }

    #[test]
    fn at_most_one_psum_source() {
        let mut b = tt(0x04);
        b.set_u32(16, addr::PSUM_BASE);
        b.set_u32(32, addr::PSUM_BASE + 0x800);
        assert_eq!(f(&b, Gen::V3, None), ["tt_valid_partitions"]);
    }

    #[test]
    fn alu_legality() {
        assert_eq!(
            f(&tt(0x1C), Gen::V3, None),
            ["is_valid_s3s3d3_tt.alu_op"],
            "CRC32 not an arith op"
        );
        assert!(f(&tt(0x1A), Gen::V3, None).is_empty(), "POW legal for 0x41");
        assert_eq!(
            f(&tt(0x1A), Gen::V4, Some(3)),
            ["alu_op_pool_only"],
            "POW is Pool only"
        );
        let mut b = tt(0x1A);
        b.set_u32(48, 0x300); // Pool has no PSUM port
        assert!(f(&b, Gen::V4, Some(2)).is_empty());
        assert_eq!(
            f(&tt(0x20), Gen::V3, None),
            ["is_valid_s3s3d3_tt.alu_op"],
            "ABS_MAX is v4+"
        );
        assert!(f(&tt(0x20), Gen::V4, Some(3)).is_empty());
        let mut b = tt(0x0A);
        b.0[0] = 0x51;
        assert_eq!(
            f(&b, Gen::V3, None),
            ["is_valid_s3s3d3_tt.dtypes"],
            "bitvec output must be integer"
        );
        b.0[12] = dtype::INT32 | (dtype::INT32 << 4);
        b.0[13] = dtype::INT32;
        assert!(f(&b, Gen::V3, None).is_empty());
        b.0[14] = 0x04;
        assert_eq!(f(&b, Gen::V3, None), ["is_valid_s3s3d3_tt.alu_op"]);
    }

    #[test]
    fn int_signedness_and_elements() {
        let mut b = tt(0xCF); // MAX_INT: signed only
        b.0[12] = dtype::INT32 | (dtype::UINT32 << 4);
        b.0[13] = dtype::INT32;
        assert_eq!(f(&b, Gen::V3, None), ["is_valid_s3s3d3_tt.int_signedness"]);
        b.0[12] = dtype::INT32 | (dtype::INT32 << 4);
        assert!(f(&b, Gen::V3, None).is_empty());
        let mut b = tt(0x04);
        b.set_u16(48 + 14, 32);
        assert_eq!(f(&b, Gen::V3, None), ["is_valid_s3s3d3_tt.elements"]);
    }

    #[test]
    fn an_integer_op_of_either_signedness_needs_one_signedness_throughout() {
        // The integer ops that take signed and unsigned operands alike.
        let both: Vec<u8> = (0..=255u8)
            .filter(|&op| {
                enums::is_int_band(op)
                    && !enums::SIGNED_ONLY.has(op)
                    && !enums::UNSIGNED_ONLY.has(op)
            })
            .filter(|&op| {
                let mut b = tt(op);
                b.0[12] = dtype::INT32 | (dtype::INT32 << 4);
                b.0[13] = dtype::INT32;
                f(&b, Gen::V3, None).is_empty()
            })
            .collect();
        assert!(!both.is_empty());
        let (i, u) = (dtype::INT32, dtype::UINT32);
        for op in both {
            for (d0, d1, out, ok) in [
                (i, i, i, true),
                (u, u, u, true),
                (u, i, i, false),
                (i, u, i, false),
                (i, i, u, false),
                (u, u, i, false),
                (i, u, u, false),
            ] {
                let mut b = tt(op);
                b.0[12] = d0 | (d1 << 4);
                b.0[13] = out;
                let got = f(&b, Gen::V3, None);
                if ok {
                    assert!(got.is_empty(), "op {op:#x} {d0}/{d1}/{out}: {got:?}");
                } else {
                    assert_eq!(
                        got,
                        ["is_valid_s3s3d3_tt.int_signedness"],
                        "op {op:#x} {d0}/{d1}/{out}"
                    );
                }
            }
        }
    }
}
