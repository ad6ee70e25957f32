//! v4 MX gates: `is_valid_smx1_lw` (LdWeightsMx 0x09), `is_valid_smx1d3_mm` (MatmulMx 0x0A)
//! and `is_valid_s3dmx1_quant` (QuantizeMx 0xE3, DVE).
//!
//! Layouts: isa-facts §4.1 (header offsets; C store sites in C isa/pe-matmul-encoding.md agree),
//! MX descriptor: §3.3.

use super::super::addr::{self, Operand, Placement};
use super::super::dtype;
use super::super::enums;
use super::super::rule::{rule, Allowed, Ck, Field, Sink};
use super::super::table::{check, DtypeRule, FieldRule, GateTable};
use super::pe::{self, IN_DTYPE, PSUM_ACC, ZERO_REGION};
use super::{enum_check, spec_reserved, DtypeOpts};
use tpbsim_isa::formats::loc;
use tpbsim_isa::spec::ByteSet;

/// MX source descriptor (MXMEM_PATTERN1D) of LdWeightsMx / MatmulMx.
pub const MX_SRC: Operand = Operand::at(loc::ld_weights_mx::SRC);
/// The source's data word (the direct arm's first word), as the quadrant rule names it.
const MX_SRC_DATA: Operand = Operand::new("src.data_addr", MX_SRC.off);
/// MatmulMx `out_dtype`.
pub const MX_OUT_DTYPE: Field = Field::at(loc::matmul_mx::OUT_DTYPE);

/// QuantizeMx source pattern.
pub const Q_SRC: Operand = Operand::at(loc::ld_weights_mx::SRC);
/// QuantizeMx source partition count.
pub const Q_SRC_PARTITIONS: Field = Field::at(loc::quantize_mx::NUM_ACTIVE_PARTITIONS);
/// QuantizeMx source dtype.
pub const Q_SRC_DTYPE: Field = Field::at(loc::quantize_mx::IN_DTYPE);
/// QuantizeMx data-out dtype.
pub const Q_OUT_DTYPE: Field = Field::at(loc::quantize_mx::OUT_DTYPE);
/// QuantizeMx MX output descriptor.
pub const Q_DST: Operand = Operand::at(loc::matmul_mx::DST);

rule!(MX_DTYPE, "is_valid_mx_dtype", Format,
    public "G firmware/kernels/pe-matmul.md §7 (is_valid_mx_dtype: FP8_EXP3/4/5, FP4_EXP2 on v4; FP8_EXP2, INT4 from v5)",
    "the MX data dtype is FP8_EXP3, FP8_EXP4, FP8_EXP5 or FP4_EXP2");
rule!(QUANT_SRC_PARTITIONS, "is_valid_s3dmx1_quant.src_partitions", Format,
    public "C isa/pe-matmul-encoding.md (QuantizeMx src partition count ∈ {32, 64, 96, 128})",
    "the QuantizeMx source covers 32, 64, 96 or 128 partitions");
rule!(QUANT_SRC_DTYPE, "is_valid_s3dmx1_quant.src_dtype", Format,
    public "C isa/pe-matmul-encoding.md (source bf16 0x06 / fp16 0x07); isa-facts §9.4",
    "the QuantizeMx source is BF16 or FP16");
rule!(QUANT_OUT_DTYPE, "is_valid_s3dmx1_quant.out_dtype", Format,
    public "C isa/pe-matmul-encoding.md (data-out e4m3 x4 0x0E, e5m2 x4 0x0F, fp4 x4 0x10); is_valid_dtype_inc_fp4",
    "the QuantizeMx data output is FP8_EXP4, FP8_EXP5 or FP4_EXP2");

/// MX data dtypes on v4.
pub const MX_DTYPES: ByteSet = ByteSet::of(&[
    dtype::FP8_EXP3,
    dtype::FP8_EXP4,
    dtype::FP8_EXP5,
    dtype::FP4_EXP2,
]);

/// `is_valid_dtype_inc_fp4`: the FP4-inclusive dtype check.
const FP4: DtypeOpts = DtypeOpts {
    fp32r: false,
    b64: false,
    fp4: true,
};
/// The MX input dtype row (before the MX dtype set).
pub const MX_IN_DTYPES: &[DtypeRule] = &[DtypeRule::byte(IN_DTYPE, FP4)];
/// QuantizeMx's source and output dtype rows (before their dtype sets).
pub const Q_DTYPES: &[DtypeRule] = &[
    DtypeRule::byte(Q_SRC_DTYPE, DtypeOpts::PLAIN),
    DtypeRule::byte(Q_OUT_DTYPE, FP4),
];

fn mx_in_dtype<S: Sink>(ck: &mut Ck<S>) -> u8 {
    let dt = ck.get(IN_DTYPE) as u8;
    if MX_IN_DTYPES[0].check(ck) {
        enum_check(
            ck,
            &MX_DTYPE,
            IN_DTYPE,
            MX_DTYPES,
            "FP8_EXP3, FP8_EXP4, FP8_EXP5 or FP4_EXP2",
        );
    }
    dt
}

/// `is_valid_smx1_lw`: LdWeightsMx 0x09 (v4+).
pub fn is_valid_smx1_lw<S: Sink>(ck: &mut Ck<S>) {
    spec_reserved(ck);
    if ck.done() {
        return;
    }
    let dt = mx_in_dtype(ck);
    if ck.done() {
        return;
    }
    addr::mxmem1d_valid(ck, MX_SRC, dt, Placement::READ_SBUF);
    pe::col_group_active_columns(ck);
    pe::row_group_and_sbuf_quadrant(ck, MX_SRC_DATA);
}

/// MatmulMx enum stage.
pub const MM_ENUMS: &[FieldRule] = &[
    FieldRule::per_gen(
        &pe::MM_PSUM_FLAGS,
        PSUM_ACC,
        enums::psum_accumulate_flags,
        "0, 1, 2, 3, 4 or 6 (START with ACCUMULATE is illegal)",
    ),
    FieldRule::per_gen(
        &pe::MM_ZERO_REGION,
        ZERO_REGION,
        enums::psum_zero_region,
        "0..=3",
    ),
];

/// The rule data of `is_valid_smx1d3_mm`.
pub const MM_TABLE: GateTable = GateTable {
    fields: &[MM_ENUMS, pe::ROWS],
    dtypes: &[MX_IN_DTYPES],
    operands: &[],
};

/// The rule data of `is_valid_smx1_lw`.
pub const LW_TABLE: GateTable = GateTable {
    fields: &[pe::ROWS],
    dtypes: &[MX_IN_DTYPES],
    operands: &[],
};

/// `is_valid_smx1d3_mm`: MatmulMx 0x0A (v4+).
pub fn is_valid_smx1d3_mm<S: Sink>(ck: &mut Ck<S>) {
    check(ck, MM_ENUMS);
    spec_reserved(ck);
    if ck.done() {
        return;
    }
    let dt = mx_in_dtype(ck);
    let out = ck.get(MX_OUT_DTYPE) as u8;
    ck.check(
        out == 0 || out == dtype::FP32 || out == dtype::BF16,
        &pe::MM_OUT_DTYPE,
        MX_OUT_DTYPE,
        Allowed::Text("0, FP32 or BF16"),
    );
    if ck.done() {
        return;
    }
    addr::mxmem1d_valid(ck, MX_SRC, dt, Placement::READ_SBUF);
    pe::mm_dst(ck, pe::DST, dt, out);
    pe::col_group_active_columns(ck);
    pe::row_group_and_sbuf_quadrant(ck, MX_SRC_DATA);
    pe::psum_quadrant(ck, pe::DST);
}

/// QuantizeMx geometry: the source spans whole quadrants.
pub const Q_GEOMETRY: &[FieldRule] = &[FieldRule::set(
    &QUANT_SRC_PARTITIONS,
    Q_SRC_PARTITIONS,
    ByteSet::of(&[32, 64, 96, 128]),
    "32, 64, 96 or 128",
)];

/// The rule data of `is_valid_s3dmx1_quant`.
pub const Q_TABLE: GateTable = GateTable {
    fields: &[Q_GEOMETRY],
    dtypes: &[Q_DTYPES],
    operands: &[],
};

/// `is_valid_s3dmx1_quant`: QuantizeMx 0xE3 (DVE, v4+).
pub fn is_valid_s3dmx1_quant<S: Sink>(ck: &mut Ck<S>) {
    spec_reserved(ck);
    if ck.done() {
        return;
    }
    let src = ck.get(Q_SRC_DTYPE) as u8;
    if Q_DTYPES[0].check(ck) {
        ck.check(
            src == dtype::BF16 || src == dtype::FP16,
            &QUANT_SRC_DTYPE,
            Q_SRC_DTYPE,
            Allowed::Text("BF16 or FP16"),
        );
    }
    let out = ck.get(Q_OUT_DTYPE) as u8;
    if Q_DTYPES[1].check(ck) {
        ck.check(
            matches!(out, dtype::FP8_EXP4 | dtype::FP8_EXP5 | dtype::FP4_EXP2),
            &QUANT_OUT_DTYPE,
            Q_OUT_DTYPE,
            Allowed::Text("FP8_EXP4, FP8_EXP5 or FP4_EXP2"),
        );
    }
    if ck.done() {
        return;
    }
    check(ck, Q_GEOMETRY);
    addr::tensor_valid(ck, Q_SRC, 3, src, Placement::READ_ANY);
    addr::start_addr_active_channels(ck, Q_SRC, Q_SRC_PARTITIONS);
    addr::mxmem1d_valid(ck, Q_DST, out, Placement::WRITE_ANY);
}

#[cfg(test)]
mod tests {
    use super::super::testutil::*;
    use super::*;
    use tpbsim_isa::{Bundle, Gen};

    fn mxdesc(b: &mut Bundle, off: usize, data: u32, scale: u32) {
        b.set_u32(off, data);
        b.set_u32(off + 4, scale);
        b.set_u16(off + 8, 128);
        b.0[off + 10] = 0x01;
        b.0[off + 11] = 0;
    }

    fn lwmx() -> Bundle {
        let mut b = hdr(0x09);
        mxdesc(&mut b, 16, 0x100, 0x0004_0000);
        b.0[32] = dtype::FP8_EXP4;
        b.0[38] = 128;
        b.0[39] = 128;
        b.0[44] = 0xF;
        b.0[45] = 0xF;
        b
    }

    #[test]
    fn ldweights_mx() {
        assert!(fails(&lwmx(), Gen::V4, None, is_valid_smx1_lw).is_empty());
        let mut b = lwmx();
        b.0[32] = dtype::BF16;
        assert_eq!(
            fails(&b, Gen::V4, None, is_valid_smx1_lw),
            ["is_valid_mx_dtype"]
        );
        let mut b = lwmx();
        b.0[26] = 0x00; // step sign
        assert_eq!(
            fails(&b, Gen::V4, None, is_valid_smx1_lw),
            ["mxmem1d_valid"]
        );
        let mut b = lwmx();
        b.set_u32(20, addr::PSUM_BASE); // scale in PSUM
        assert_eq!(
            fails(&b, Gen::V4, None, is_valid_smx1_lw),
            ["tensor_start_addr_valid.allowed_in_psum"]
        );
        let mut b = lwmx();
        b.0[33] = 1;
        assert_eq!(
            fails(&b, Gen::V4, None, is_valid_smx1_lw),
            ["reserved_zero"]
        );
    }

    #[test]
    fn matmul_mx() {
        let mut b = lwmx();
        b.0[0] = 0x0A;
        b.0[40] = dtype::BF16;
        b.0[43] = 3;
        t3(&mut b, 48, addr::PSUM_BASE, [1, 1, 32]);
        assert!(
            fails(&b, Gen::V4, None, is_valid_smx1d3_mm).is_empty(),
            "{:?}",
            fails(&b, Gen::V4, None, is_valid_smx1d3_mm)
        );
        b.0[43] = 5;
        assert_eq!(
            fails(&b, Gen::V4, None, is_valid_smx1d3_mm),
            ["mm_psum_flags"]
        );
        b.0[43] = 0;
        b.0[40] = dtype::FP16;
        assert!(fails(&b, Gen::V4, None, is_valid_smx1d3_mm).contains(&"has_valid_mm_out_dtype"));
    }

    fn quant() -> Bundle {
        let mut b = hdr(0xE3);
        b.0[1] = 0x11;
        t3(&mut b, 16, addr::PSUM_BASE, [1, 1, 64]);
        b.0[33] = 64;
        b.0[34] = dtype::BF16;
        b.0[35] = dtype::FP8_EXP4;
        mxdesc(&mut b, 48, 0x200, 0x0004_0000);
        b
    }

    #[test]
    fn quantize_mx() {
        assert!(fails(&quant(), Gen::V4, Some(3), is_valid_s3dmx1_quant).is_empty());
        let mut b = quant();
        b.0[33] = 48;
        assert_eq!(
            fails(&b, Gen::V4, Some(3), is_valid_s3dmx1_quant),
            ["is_valid_s3dmx1_quant.src_partitions"]
        );
        let mut b = quant();
        b.0[35] = dtype::FP4_EXP2;
        b.set_u32(48, 0x202);
        assert!(fails(&b, Gen::V4, Some(3), is_valid_s3dmx1_quant).is_empty());
        b.0[35] = dtype::FP16;
        assert!(fails(&b, Gen::V4, Some(3), is_valid_s3dmx1_quant)
            .contains(&"is_valid_s3dmx1_quant.out_dtype"));
        let mut b = quant();
        b.0[34] = dtype::FP32;
        assert_eq!(
            fails(&b, Gen::V4, Some(3), is_valid_s3dmx1_quant),
            ["is_valid_s3dmx1_quant.src_dtype"]
        );
    }
}
