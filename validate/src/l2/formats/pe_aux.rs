//! The auxiliary PE formats: `is_valid_s3_lt` (LdTags 0x06, v3+) and `is_valid_pe_manage_seed`
//! (PE_MANAGE_SEED 0x08, v4).
//!
//! Layouts: isa-facts §4.1 (LdTags from the V3 compiler store sites; PE_MANAGE_SEED from the
//! `S2S1D2_PE_SEED` header struct, G firmware/kernels/pe-matmul.md). The v4 roster names a
//! `pe_manage_seed` validator (R isa/validators-per-arch.md); its body is not public.

use super::super::addr::{self, Operand, Placement};
use super::super::dtype;
use super::super::rule::{rule, Allowed, Ck, Field, Sink};
use super::super::table::{check, check_dtypes, DtypeRule, FieldRule, GateTable};
use super::{spec_reserved, DtypeOpts};
use tpbsim_isa::formats::loc;
use tpbsim_isa::spec::ByteSet;

rule!(LT_GROUPS, "is_valid_s3_lt.groups", Format,
    public "isa-facts §4.1 (LdTags col_grp derived from the row group: 1, 3, 15 → 0; 2 → 4; 4, 12 → 8; 8 → 0x0C; other row groups invalid)",
    "LdTags: row_grp is a group code and col_grp the one derived from it");
rule!(SEED_MODE, "is_valid_enum(PE_SEED_MODE)", Format,
    public "isa-facts §4.1 (PE_MANAGE_SEED mode NONE 0, LOAD 1, SAVE 2)",
    "mode is a PE_SEED_MODE member");
rule!(SEED_SHAPE, "is_valid_pe_manage_seed.shape", Format,
    project "the compiler writes 16 rows and 128 columns; no validity condition on the counts or the seed tensors' dtype is public; reported as not checked",
    "PE_MANAGE_SEED row/column counts and seed tensor dtype");

/// LdTags tags descriptor.
pub const LT_TAGS: Operand = Operand::at(loc::ld_tags::TAGS);
/// LdTags tags dtype.
pub const LT_DTYPE: Field = Field::at(loc::ld_tags::TAGS_DTYPE);
/// LdTags column group.
pub const LT_COL_GRP: Field = Field::at(loc::ld_tags::COL_GRP);
/// LdTags row group.
pub const LT_ROW_GRP: Field = Field::at(loc::ld_tags::ROW_GRP);

/// The column group the compiler derives from an LdTags row group.
pub const fn lt_col_group(row: u8) -> Option<u8> {
    match row {
        1 | 3 | 15 => Some(0),
        2 => Some(4),
        4 | 12 => Some(8),
        8 => Some(0x0C),
        _ => None,
    }
}

/// LdTags dtype stage.
pub const LT_DTYPES: &[DtypeRule] = &[DtypeRule::byte(LT_DTYPE, DtypeOpts::PLAIN)];

/// LdTags enum stage: the row groups with a column group (the column group's tie to the row
/// group stays procedural).
pub const LT_ENUMS: &[FieldRule] = &[FieldRule::set(
    &LT_GROUPS,
    LT_ROW_GRP,
    ByteSet::of(&[1, 2, 3, 4, 8, 12, 15]),
    "1, 2, 3, 4, 8, 12 or 15",
)];

/// The rule data of `is_valid_s3_lt`.
pub const LT_TABLE: GateTable = GateTable {
    fields: &[LT_ENUMS],
    dtypes: &[LT_DTYPES],
    operands: &[],
};

/// `is_valid_s3_lt`: LdTags 0x06.
pub fn is_valid_s3_lt<S: Sink>(ck: &mut Ck<S>) {
    check(ck, LT_ENUMS);
    if let Some(c) = lt_col_group(ck.get(LT_ROW_GRP) as u8) {
        ck.check(
            ck.get(LT_COL_GRP) == c as u64,
            &LT_GROUPS,
            LT_COL_GRP,
            Allowed::Eq(c as u64),
        );
    }
    spec_reserved(ck);
    if ck.done() {
        return;
    }
    let dt = ck.get(LT_DTYPE) as u8;
    check_dtypes(ck, LT_DTYPES);
    if ck.done() {
        return;
    }
    addr::tensor_valid(ck, LT_TAGS, 3, dt, Placement::READ_ANY);
}

/// Seed source.
pub const SEED_SRC: Operand = Operand::at(loc::pe_manage_seed::SRC_SEED);
/// Identity tensor.
pub const SEED_IDENTITY: Operand = Operand::at(loc::pe_manage_seed::IDENTITY);
/// Identity dtype.
pub const SEED_ID_DTYPE: Field = Field::at(loc::pe_manage_seed::IDENTITY_DTYPE);
/// Mode.
pub const SEED_MODE_F: Field = Field::at(loc::pe_manage_seed::MODE);
/// Rows.
pub const SEED_ROWS: Field = Field::at(loc::pe_manage_seed::NUM_ACTIVE_ROWS);
/// Seed destination.
pub const SEED_DST: Operand = Operand::at(loc::pe_manage_seed::DST_SEED);

/// Seed tensors: placement only (their dtype is not public, so no alignment or PSUM-write
/// dtype rule applies).
const SEED_PLACEMENT: Placement = Placement {
    psum: true,
    sbuf: true,
    write: false,
};

/// PE_MANAGE_SEED enum stage.
pub const SEED_ENUMS: &[FieldRule] = &[FieldRule::set(
    &SEED_MODE,
    SEED_MODE_F,
    ByteSet::range(0, 2),
    "NONE 0, LOAD 1 or SAVE 2",
)];
/// PE_MANAGE_SEED dtype stage.
pub const SEED_DTYPES: &[DtypeRule] = &[DtypeRule::byte(SEED_ID_DTYPE, DtypeOpts::PLAIN)];

/// The rule data of `is_valid_pe_manage_seed`.
pub const SEED_TABLE: GateTable = GateTable {
    fields: &[SEED_ENUMS],
    dtypes: &[SEED_DTYPES],
    operands: &[],
};

/// `is_valid_pe_manage_seed`: PE_MANAGE_SEED 0x08 (v4).
pub fn is_valid_pe_manage_seed<S: Sink>(ck: &mut Ck<S>) {
    check(ck, SEED_ENUMS);
    spec_reserved(ck);
    if ck.done() {
        return;
    }
    let dt = ck.get(SEED_ID_DTYPE) as u8;
    check_dtypes(ck, SEED_DTYPES);
    if ck.done() {
        return;
    }
    ck.not_checked(&SEED_SHAPE, SEED_ROWS, Allowed::Text("no public condition"));
    addr::tensor_valid(ck, SEED_SRC, 2, dtype::UINT8, SEED_PLACEMENT);
    addr::tensor_valid(ck, SEED_IDENTITY, 1, dt, Placement::READ_ANY);
    addr::tensor_valid(ck, SEED_DST, 2, dtype::UINT8, SEED_PLACEMENT);
}

#[cfg(test)]
mod tests {
    use super::super::testutil::*;
    use super::*;
    use tpbsim_isa::{Bundle, Gen};

    fn lt() -> Bundle {
        let mut b = hdr(0x06);
        t3(&mut b, 16, 0x100, [1, 1, 64]);
        b.0[32] = dtype::INT16;
        b.0[33] = 8;
        b.0[38] = 4;
        b.0[44] = 12;
        b
    }

    #[test]
    fn ld_tags() {
        let f = |b: &Bundle| fails(b, Gen::V3, None, is_valid_s3_lt);
        assert!(f(&lt()).is_empty(), "{:?}", f(&lt()));
        let mut b = lt();
        b.0[33] = 4;
        assert_eq!(f(&b), ["is_valid_s3_lt.groups"]);
        b.0[44] = 5;
        assert_eq!(f(&b), ["is_valid_s3_lt.groups"]);
        let mut b = lt();
        b.set_u32(16, 0x101);
        assert_eq!(f(&b), ["addr_aligned_dtype"]);
        let mut b = lt();
        b.0[40] = 1;
        assert_eq!(f(&b), ["reserved_zero"]);
    }

    #[test]
    fn manage_seed() {
        let mut b = hdr(0x08);
        t2(&mut b, 12, 0x100, [1, 16]);
        b.set_u32(24, 0x200);
        b.set_u16(28, 1);
        b.set_u16(30, 128);
        b.0[32] = dtype::BF16;
        b.0[33] = 1;
        b.0[34] = 16;
        b.0[35] = 128;
        t2(&mut b, 36, 0x300, [1, 16]);
        let f = |b: &Bundle| fails(b, Gen::V4, Some(0), is_valid_pe_manage_seed);
        assert!(f(&b).is_empty(), "{:?}", f(&b));
        assert_eq!(
            unchecked(&b, Gen::V4, Some(0), is_valid_pe_manage_seed),
            ["is_valid_pe_manage_seed.shape"]
        );
        b.0[33] = 3;
        assert_eq!(f(&b), ["is_valid_enum(PE_SEED_MODE)"]);
        b.0[33] = 2;
        b.set_u32(24, 0x201);
        assert_eq!(f(&b), ["addr_aligned_dtype"]);
        b.set_u32(24, 0x200);
        b.set_u16(30, 0);
        assert_eq!(f(&b), ["tensorNd_valid.num_elem"]);
    }
}
