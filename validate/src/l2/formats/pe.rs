//! PE engine gates: `is_valid_s3_lw` (LdWeights 0x01) with `s3_lw_dual_fp8_restrictions`,
//! `is_valid_s3d3_mm` (Matmul 0x02), `is_valid_s4d3_mm` (MatmulSparse 0x07), and the shared
//! row/column-group, xbus and PE-quadrant checks.
//!
//! Layouts: isa-facts §4.1 (header offsets per generation, G generations/arch-isa-header-diff
//! §2.4). Group table: G dma/sbuf-psum-banks.md §5.2 (`valid_mm_psum_quadrant`,
//! `s3d3_mm_valid_col_group_active_columns`, `s3d3_mm_valid_xbus_sel`, `valid_mm_sbuf_quadrant`).

use tpbsim_isa::formats::loc;
use tpbsim_isa::Gen;

use super::super::addr::{self, Operand, Placement};
use super::super::dtype;
use super::super::enums;
use super::super::rule::{rule, Allowed, Ck, Field, Sink};
use super::super::table::{check, DtypeRule, FieldRule, GateTable};
use super::{enum_check, spec_reserved, DtypeOpts};
use tpbsim_isa::spec::ByteSet;

// ---- fields shared by S3_LW / S3D3_MM ----

/// Source pattern (weights for LdWeights, moving ifmap for Matmul).
pub const SRC: Operand = Operand::at(loc::ld_weights::SRC);
/// PSUM destination (Matmul).
pub const DST: Operand = Operand::at(loc::matmul::DST);
/// `in_dtype`.
pub const IN_DTYPE: Field = Field::at(loc::ld_weights::IN_DTYPE);
/// The PE input dtype row (`is_valid_dtype`, before `has_valid_mm_in_dtype`).
pub const IN_DTYPES: &[DtypeRule] = &[DtypeRule::byte(IN_DTYPE, DtypeOpts::PLAIN)];
/// `fp32_mode` (PE_FP32MODE).
pub const FP32_MODE: Field = Field::at(loc::ld_weights::FP32_MODE);
/// `transpose_mode` (v3+).
pub const TRANSPOSE_MODE: Field = Field::at(loc::ld_weights::TRANSPOSE_MODE);
/// `perf_opt` (PERF_OPT_MODE).
pub const PERF_OPT: Field = Field::at(loc::ld_weights::PERF_OPT);
/// `num_active_rows`.
pub const NUM_ACTIVE_ROWS: Field = Field::at(loc::ld_weights::NUM_ACTIVE_ROWS);
/// `num_active_cols`.
pub const NUM_ACTIVE_COLS: Field = Field::at(loc::ld_weights::NUM_ACTIVE_COLS);
/// `out_dtype` (Matmul, v3+).
pub const OUT_DTYPE: Field = Field::at(loc::matmul::OUT_DTYPE);
/// `flags` (MATMUL_FLAGS, Matmul v4).
pub const MM_FLAGS: Field = Field::at(loc::matmul::FLAGS);
/// `psum_accumulate_flags`.
pub const PSUM_ACC: Field = Field::at(loc::matmul::PSUM_ACCUMULATE_FLAGS);
/// `row_grp`.
pub const ROW_GRP: Field = Field::at(loc::ld_weights::ROW_GRP);
/// `col_grp`.
pub const COL_GRP: Field = Field::at(loc::ld_weights::COL_GRP);
/// `xbus_sel` (v2).
pub const XBUS_SEL: Field = Field::at(loc::ld_weights::XBUS_SEL);
/// `psum_zero_region`.
pub const ZERO_REGION: Field = Field::at(loc::matmul::PSUM_ZERO_REGION);
/// `flags` (LD_WEIGHT_FLAGS, LdWeights v4).
pub const LW_FLAGS: Field = Field::at(loc::ld_weights::FLAGS);

// ---- rules ----

rule!(MM_IN_DTYPE, "has_valid_mm_in_dtype", Format,
    public "G firmware/kernels/pe-matmul.md §8; G dma/sbuf-psum-banks.md §5 (S3D3_MM in_dtype)",
    "the PE input dtype is one of UINT8, BF16, FP16, FP32, FP8_EXP3/4/5");
rule!(MM_OUT_DTYPE, "has_valid_mm_out_dtype", Format,
    public "G firmware/kernels/pe-matmul.md §8 (out_dtype 0 = FP32 on v2/v3; FP32 | BF16 | 0 on v4+)",
    "the matmul output dtype is 0 or FP32 (v3), 0, FP32 or BF16 (v4+)");
rule!(S3D3_MM_VALID_FP32_MODE, "s3d3_mm_valid_fp32_mode", Format,
    public "G firmware/kernels/pe-matmul.md §4.3 (header validity: FP32 input needs Low/High/Low_High, other inputs None)",
    "fp32_mode is Low, High or Low_High for an FP32 input and None otherwise");
rule!(PE_FP32MODE_ENUM, "is_valid_enum(PE_FP32MODE)", Format,
    public "isa-facts §4.1 (PE_FP32MODE None 0, Low 1, High 2, Low_High 3)",
    "fp32_mode is a PE_FP32MODE member");
rule!(PERF_OPT_ENUM, "is_valid_enum(PERF_OPT_MODE)", Format,
    public "isa-facts §4.1/§6.5 (perf mode None, DoubleRow, DoubleColumn, DoublePixel)",
    "perf_opt is a PERF_OPT_MODE member");
rule!(MM_PSUM_FLAGS, "mm_psum_flags", Format,
    public "C isa/pe-matmul-encoding.md (CoreV2 generateMatMul sets START 0x1 / STOP 0x2 / ACCUMULATE 0x4 inline, validated by CoreV2 checkAccumulationFlag; {0,1,2,3,4,6}); C isa/isa-enum-ordinals.md ({0,1,2,3,4,6}, no generation); docs/isa.md conflict P10",
    "psum_accumulate_flags is a legal group mode: {0,1,2,3,4,6} on every generation (START with ACCUMULATE is illegal)");
rule!(MM_ZERO_REGION, "is_valid_enum(MATMUL_ZERO_REGION)", Format,
    public "G dma/sbuf-psum-banks.md §5.3 (SIZE2048 only on v2/v3; SIZE2048..SIZE16384 on v4)",
    "psum_zero_region is 0 on v2/v3 and 0..=3 on v4");
rule!(MM_FLAGS_RESERVED, "is_valid_matmul_flags", Format,
    public "G firmware/kernels/pe-matmul.md §3.1/§4.1 (flag bitfields; reserved_bitfield:2; PE_SEED_MODE NONE/LOAD/SAVE)",
    "the flags byte has its two reserved bits clear and a seed mode of NONE, LOAD or SAVE");
rule!(NUM_ACTIVE_ROWS_RANGE, "valid_num_active_rows", Format,
    public "G dma/sbuf-psum-banks.md §5.1 (num_active_rows <= 128 contraction depth)",
    "num_active_rows is 1..=128");
rule!(COL_GROUP_ACTIVE_COLUMNS, "valid_col_group_active_columns", Format,
    public "G dma/sbuf-psum-banks.md §5.2 (s3d3_mm_valid_col_group_active_columns); C walrus/l2-wire-validator.md (is_valid_s3_lw bound 15 -> 0x80, {3,12} -> 0x40, {1,2,4,8} -> 0x20, else reject; isa-facts §10 #31 — the values are the col_grp bitmask, see docs/l2.md)",
    "num_active_cols is bounded by the column group: 0xF -> <= 0x80, 0x3/0xC -> <= 0x40, 0x1/0x2/0x4/0x8 -> <= 0x20; any other group is illegal");
rule!(ROW_GROUP_VALID, "valid_row_group", Format,
    public "G dma/sbuf-psum-banks.md §5.2 (row_grp applies the col_grp bitmask to the SBUF source)",
    "row_grp is one of 0x1, 0x2, 0x4, 0x8, 0x3, 0xC, 0xF");
rule!(S3D3_MM_VALID_XBUS_SEL, "s3d3_mm_valid_xbus_sel", Format,
    public "G dma/sbuf-psum-banks.md §5.2 (0xF -> 0x10, 0x3 -> 0x01, 0xC -> 0x04, 0x1 -> 0x01, 0x2 -> 0x02, 0x4 -> 0x04; 0x8 has no valid case)",
    "v2: xbus_sel matches the column group (0x8 has no valid xbus case)");
rule!(LW_VALID_XBUS, "lw_valid_xbus", Format,
    project "the v2 LdWeights xbus table is not published; tpbsim applies the matmul table (same field, same group bitmask)",
    "v2: LdWeights xbus_sel matches the column group");
rule!(VALID_MM_SBUF_QUADRANT, "valid_mm_sbuf_quadrant", Format,
    project "G dma/sbuf-psum-banks.md §5.2 maps row_grp to a base partition (0xF/0x3/0x1 -> 0, 0x2 -> 32, 0x4/0xC -> 64, 0x8 -> 96); tpbsim requires the source start partition to lie in the group's partition range",
    "the SBUF source starts inside the partition range its row group selects");
rule!(VALID_MM_PSUM_QUADRANT, "valid_mm_psum_quadrant", Format,
    project "G dma/sbuf-psum-banks.md §5.2 maps col_grp to a PSUM partition; tpbsim requires the PSUM destination to start inside the group's partition range",
    "the PSUM destination starts inside the partition range its column group selects");
rule!(MM_DST_MEM3D_VALID_NC_V4, "mm_dst_mem3d_valid_nc_v4", Format,
    public "isa-facts §3.1/§7.2 (v4 matmul destination: PSUM, dtype tag 4..11)",
    "v4: the matmul destination is in PSUM with a dtype tag 4..=11 (BF16 allowed)");
rule!(MM_DST_DTYPE, "valid_dest_tensor", Format,
    public "G dma/sbuf-psum-banks.md §5.1 (dst PSUM only, fp32 — uint32 for UINT8 input)",
    "v2/v3: the PSUM destination is FP32 (UINT32 for a UINT8 input)");
rule!(S3_LW_DUAL_FP8_RESTRICTIONS, "s3_lw_dual_fp8_restrictions", Format,
    public "C walrus/l2-wire-validator.md (core_v4 s3_lw_dual_fp8_restrictions); selector offset project-defined (docs/l2.md)",
    "v4 dual-FP8 weight load: selector 0 legal; 1 and 4 only with FP8 input, full column group, no transpose and the source placement rules; any other selector illegal");
rule!(S3_LW_DUAL_FP8_MODE4_TAIL, "s3_lw_dual_fp8_restrictions.mode4", Format,
    project "the PSUM-quadrant (0x40/0xA0) and partition-flag constraints of selector 4 are elided in the public reading; reported as not checked",
    "v4 dual-FP8 selector 4: PSUM-quadrant and partition-flag constraints");
rule!(S4D3_MM_COL_GRP, "is_valid_s4d3_mm.col_grp", Format,
    public "G firmware/kernels/pe-matmul.md §9 (col_grp 0x0f: fine-grain sparsity uses all four column groups)",
    "MatmulSparse uses all four column groups (col_grp == 0x0F)");

/// Input dtypes the PE accepts (`has_valid_mm_in_dtype`).
pub const MM_IN: ByteSet = ByteSet::of(&[
    dtype::UINT8,
    dtype::BF16,
    dtype::FP16,
    dtype::FP32,
    dtype::FP8_EXP3,
    dtype::FP8_EXP4,
    dtype::FP8_EXP5,
]);

/// Base partition and span (in partitions) selected by a row/column group bitmask.
pub const fn group_range(g: u8) -> Option<(u32, u32)> {
    Some(match g {
        0xF => (0, 128),
        0x3 => (0, 64),
        0xC => (64, 64),
        0x1 => (0, 32),
        0x2 => (32, 32),
        0x4 => (64, 32),
        0x8 => (96, 32),
        _ => return None,
    })
}

/// The v2 xbus select of a column group (`s3d3_mm_valid_xbus_sel`); 0x8 has none.
pub const fn xbus_for(col_grp: u8) -> Option<u8> {
    match col_grp {
        0xF => Some(0x10),
        0x3 | 0x1 => Some(0x01),
        0xC | 0x4 => Some(0x04),
        0x2 => Some(0x02),
        _ => None,
    }
}

/// Column bound of a column group.
pub const fn col_bound(col_grp: u8) -> Option<u64> {
    match col_grp {
        0xF => Some(0x80),
        0x3 | 0xC => Some(0x40),
        0x1 | 0x2 | 0x4 | 0x8 => Some(0x20),
        _ => None,
    }
}

/// `valid_col_group_active_columns` (the `is_valid_s3_lw` / matmul column bound).
pub fn col_group_active_columns<S: Sink>(ck: &mut Ck<S>) {
    let g = ck.get(COL_GRP) as u8;
    match col_bound(g) {
        None => ck.fail(
            &COL_GROUP_ACTIVE_COLUMNS,
            COL_GRP,
            g as u64,
            Allowed::Text("a column group 0xF, 0x3, 0xC, 0x1, 0x2, 0x4 or 0x8"),
        ),
        Some(max) => {
            let c = ck.get(NUM_ACTIVE_COLS);
            if c == 0 || c > max {
                ck.fail(
                    &COL_GROUP_ACTIVE_COLUMNS,
                    NUM_ACTIVE_COLS,
                    c,
                    Allowed::Text(match max {
                        0x80 => "1..=0x80 for column group 0xF",
                        0x40 => "1..=0x40 for a half column group (0x3, 0xC)",
                        _ => "1..=0x20 for a quadrant column group (0x1, 0x2, 0x4, 0x8)",
                    }),
                );
            }
        }
    }
}

/// Row-group validity plus `valid_mm_sbuf_quadrant` for the SBUF source.
pub fn row_group_and_sbuf_quadrant<S: Sink>(ck: &mut Ck<S>, src: Operand) {
    let g = ck.get(ROW_GRP) as u8;
    let Some((base, span)) = group_range(g) else {
        ck.fail(
            &ROW_GROUP_VALID,
            ROW_GRP,
            g as u64,
            Allowed::Text("0x1, 0x2, 0x4, 0x8, 0x3, 0xC or 0xF"),
        );
        return;
    };
    quadrant_reach(ck, src, base, span, &VALID_MM_SBUF_QUADRANT, false);
    check(ck, ROWS);
}

/// `valid_num_active_rows`, checked once the row group is valid.
pub const ROWS: &[FieldRule] = &[FieldRule::count(&NUM_ACTIVE_ROWS_RANGE, NUM_ACTIVE_ROWS)];

/// `valid_mm_psum_quadrant` for the PSUM destination `dst` and the column group.
pub fn psum_quadrant<S: Sink>(ck: &mut Ck<S>, dst: Operand) {
    let g = ck.get(COL_GRP) as u8;
    if let Some((base, span)) = group_range(g) {
        quadrant_reach(ck, dst, base, span, &VALID_MM_PSUM_QUADRANT, true);
    }
}

fn quadrant_reach<S: Sink>(
    ck: &mut Ck<S>,
    op: Operand,
    base: u32,
    span: u32,
    rule: &'static super::super::rule::Rule,
    psum: bool,
) {
    let w = ck.get(op.addr()) as u32;
    if addr::is_register(w) || addr::is_indirect(w) || addr::in_psum(w) != psum {
        return; // register / indirect words and misplaced operands are judged elsewhere
    }
    let p = addr::partition(ck.gen, w);
    if p < base || p >= base + span {
        ck.fail(
            rule,
            op.addr(),
            w as u64,
            Allowed::Text(range_text(base, span)),
        );
    }
}

const fn range_text(base: u32, span: u32) -> &'static str {
    match (base, span) {
        (0, 128) => "a start partition in 0..128 (group 0xF)",
        (0, 64) => "a start partition in 0..64 (group 0x3)",
        (64, 64) => "a start partition in 64..128 (group 0xC)",
        (0, 32) => "a start partition in 0..32 (group 0x1)",
        (32, 32) => "a start partition in 32..64 (group 0x2)",
        (64, 32) => "a start partition in 64..96 (group 0x4)",
        _ => "a start partition in 96..128 (group 0x8)",
    }
}

/// v2 xbus check for Matmul (`s3d3_mm_valid_xbus_sel`) or LdWeights (`lw_valid_xbus`).
fn xbus<S: Sink>(ck: &mut Ck<S>, rule: &'static super::super::rule::Rule) {
    let g = ck.get(COL_GRP) as u8;
    let x = ck.get(XBUS_SEL);
    match xbus_for(g) {
        Some(want) => ck.check(x == want as u64, rule, XBUS_SEL, Allowed::Eq(want as u64)),
        None => ck.fail(
            rule,
            XBUS_SEL,
            x,
            Allowed::Text(if g == 0x8 {
                "no value: column group 0x8 (quadrant 3) has no valid xbus case"
            } else {
                "an xbus select of a valid column group"
            }),
        ),
    }
}

/// LdWeights enum stage: `perf_opt` before v4 (on v4 the byte is the dual-FP8 selector).
pub const LW_ENUMS: &[FieldRule] =
    &[FieldRule::set(&PERF_OPT_ENUM, PERF_OPT, enums::PERF_OPT_MODE, "0..=3").until(Gen::V3)];

/// The rule data of `is_valid_s3_lw`.
pub const LW_TABLE: GateTable = GateTable {
    fields: &[LW_ENUMS, ROWS],
    dtypes: &[IN_DTYPES],
    operands: &[],
};

/// `is_valid_s3_lw`: LdWeights 0x01.
pub fn is_valid_s3_lw<S: Sink>(ck: &mut Ck<S>) {
    let gen = ck.gen;
    // (3) per-field enums
    check(ck, LW_ENUMS);
    if gen == Gen::V4 {
        lw_flags(ck);
    }
    // (4) reserved bytes
    spec_reserved(ck);
    if ck.done() {
        return;
    }
    // (5) dtype
    let dt = ck.get(IN_DTYPE) as u8;
    if IN_DTYPES[0].check(ck) {
        enum_check(
            ck,
            &MM_IN_DTYPE,
            IN_DTYPE,
            MM_IN,
            "UINT8, BF16, FP16, FP32, FP8_EXP3/4/5",
        );
    }
    if ck.done() {
        return;
    }
    // (6) format: AP geometry, groups, quadrants. A v2 transposed load carries the transpose
    // flag 0x80 in the source ADDR4's top byte (+0x13); the address is checked without it.
    if gen == Gen::V2 && ck.u8(V2_LW_TRANSPOSE_BYTE) == V2_LW_TRANSPOSE {
        let mut cleared = *ck.b;
        cleared.0[V2_LW_TRANSPOSE_BYTE] = 0;
        let mut sub = Ck::new(&cleared, gen, ck.engine, ck.gate, &mut *ck.sink);
        s3_lw_operands(&mut sub, dt);
    } else {
        s3_lw_operands(ck, dt);
    }
}

/// The byte of a v2 LdWeights that holds the transpose flag: the top byte of the source ADDR4
/// (C isa/pe-matmul-encoding.md, CoreV2 `generateLoadWeights`: `b[0x13] = 0x80`).
pub const V2_LW_TRANSPOSE_BYTE: usize = SRC.marker().start as usize;
/// The v2 LdWeights transpose flag value.
pub const V2_LW_TRANSPOSE: u8 = 0x80;

/// `is_valid_s3_lw` step (6): the source pattern, the groups and the per-generation checks.
fn s3_lw_operands<S: Sink>(ck: &mut Ck<S>, dt: u8) {
    let gen = ck.gen;
    addr::tensor_valid(ck, SRC, 3, dt, Placement::READ_SBUF);
    col_group_active_columns(ck);
    row_group_and_sbuf_quadrant(ck, SRC);
    if gen == Gen::V2 {
        xbus(ck, &LW_VALID_XBUS);
    }
    if gen == Gen::V4 && !ck.done() {
        s3_lw_dual_fp8_restrictions(ck);
    }
}

fn lw_flags<S: Sink>(ck: &mut Ck<S>) {
    // LD_WEIGHT_FLAGS: xpose:1, scalar:2, seed:2, load_order:1, reserved:2.
    let f = ck.get(LW_FLAGS) as u8;
    let seed = (f >> 3) & 3;
    ck.check(
        f & 0xC0 == 0 && seed != 3,
        &MM_FLAGS_RESERVED,
        LW_FLAGS,
        Allowed::Text("bits 6..7 clear, seed_mode (bits 3..4) NONE/LOAD/SAVE"),
    );
}

/// The dual-FP8 selector: byte 35 (`perf_opt` in the v4 header layout). Project-defined:
/// the public reading names it `HIBYTE(a11)`; see docs/l2.md for the frame derivation.
pub const DUAL_FP8_SELECTOR: Field =
    Field::at(loc::ld_weights::PERF_OPT).labelled("perf_opt (dual-FP8 selector)");
/// `dual-FP8 partition word`: stride[2] and the counts of the source pattern.
pub const DUAL_FP8_PARTITION_WORD: Field = Field::sub(
    SRC.name,
    "step_elem[2]..num_elem[2] (dual-FP8 partition word)",
    SRC.stride(2).start,
    8,
);

/// `s3_lw_dual_fp8_restrictions` (v4 only, no L1 analog).
///
/// Frame (project-defined, docs/l2.md): `a9` = bytes 16..23 (source ADDR4 + strides 0/1),
/// `a10` = bytes 24..31 (stride 2 + counts), `a11` = bytes 32..39, `a12` = bytes 40..47.
/// `LOBYTE(a11)` = in_dtype (32), `BYTE2(a11)` = transpose_mode (34), the selector is
/// perf_opt (35), `BYTE5(a12)` = col_grp (45), `BYTE3(a9)` = source marker byte (19).
pub fn s3_lw_dual_fp8_restrictions<S: Sink>(ck: &mut Ck<S>) {
    let r = &S3_LW_DUAL_FP8_RESTRICTIONS;
    let sel = ck.get(DUAL_FP8_SELECTOR) as u8;
    if sel == 0 {
        return;
    }
    if sel != 1 && sel != 4 {
        ck.fail(
            r,
            DUAL_FP8_SELECTOR,
            sel as u64,
            Allowed::Text("selector 0, 1 or 4"),
        );
        return;
    }
    let dt = ck.get(IN_DTYPE) as u8;
    ck.check(
        dt.wrapping_sub(14) <= 1,
        r,
        IN_DTYPE,
        Allowed::Text("FP8_EXP4 or FP8_EXP5 for a dual-FP8 load"),
    );
    let marker = SRC.marker();
    let b3 = ck.get(marker) as u8;
    ck.check(
        b3 & 0x60 != 0x20,
        r,
        marker,
        Allowed::Text("no indirect source ((marker & 0x60) != 0x20)"),
    );
    if sel == 1 {
        if b3 & 0x70 != 0x40 {
            let w = ck.get(DUAL_FP8_PARTITION_WORD);
            ck.check(w & 0xFFFF_0000_0000_000F == 0x0002_0000_0000_0000, r, DUAL_FP8_PARTITION_WORD,
                Allowed::Text("num_elem[2] == 2 and step_elem[2] & 0xF == 0 (word & 0xFFFF00000000000F == 0x2000000000000)"));
        }
    } else {
        let word = ck.get(SRC.addr()) as u32;
        let ok = b3 & 0xA0 == 0x80
            || addr::addr_aligned_dtype(ck.gen, word & addr::ADDR_MASK, dtype::UINT16);
        ck.check(
            ok,
            r,
            SRC.addr(),
            Allowed::Text("a register source or a 2-byte aligned address"),
        );
        ck.not_checked(
            &S3_LW_DUAL_FP8_MODE4_TAIL,
            DUAL_FP8_PARTITION_WORD,
            Allowed::Text("PSUM-quadrant and partition-flag constraints (not public)"),
        );
    }
    ck.check(
        ck.get(TRANSPOSE_MODE) == 0,
        r,
        TRANSPOSE_MODE,
        Allowed::Eq(0),
    );
    ck.check(ck.get(COL_GRP) == 0xF, r, COL_GRP, Allowed::Eq(0xF));
}

/// `is_valid_s3d3_mm`: Matmul 0x02.
pub fn is_valid_s3d3_mm<S: Sink>(ck: &mut Ck<S>) {
    let gen = ck.gen;
    // (3) enums
    check(ck, MM_ENUMS);
    if gen == Gen::V4 {
        let f = ck.get(MM_FLAGS) as u8;
        let seed = (f >> 2) & 3;
        ck.check(
            f & 0xC0 == 0 && seed != 3,
            &MM_FLAGS_RESERVED,
            MM_FLAGS,
            Allowed::Text("bits 6..7 clear, seed_mode (bits 2..3) NONE/LOAD/SAVE"),
        );
    }
    // (4) reserved
    spec_reserved(ck);
    if ck.done() {
        return;
    }
    // (5) dtypes
    let dt = ck.get(IN_DTYPE) as u8;
    if IN_DTYPES[0].check(ck) {
        enum_check(
            ck,
            &MM_IN_DTYPE,
            IN_DTYPE,
            MM_IN,
            "UINT8, BF16, FP16, FP32, FP8_EXP3/4/5",
        );
    }
    let out = if gen == Gen::V2 {
        0
    } else {
        ck.get(OUT_DTYPE) as u8
    };
    if gen != Gen::V2 {
        let ok = out == 0 || out == dtype::FP32 || (gen == Gen::V4 && out == dtype::BF16);
        ck.check(
            ok,
            &MM_OUT_DTYPE,
            OUT_DTYPE,
            Allowed::Text(if gen == Gen::V4 {
                "0, FP32 or BF16"
            } else {
                "0 or FP32"
            }),
        );
    }
    let mode = ck.get(FP32_MODE) as u8;
    let fp32_ok = if dt == dtype::FP32 {
        (1..=3).contains(&mode)
    } else {
        mode == 0
    };
    ck.check(
        fp32_ok,
        &S3D3_MM_VALID_FP32_MODE,
        FP32_MODE,
        Allowed::Text(if dt == dtype::FP32 {
            "Low, High or Low_High (1..=3) for an FP32 input"
        } else {
            "None (0) for a non-FP32 input"
        }),
    );
    if ck.done() {
        return;
    }
    // (6) geometry and placement
    addr::tensor_valid(ck, SRC, 3, dt, Placement::READ_SBUF);
    mm_dst(ck, DST, dt, out);
    col_group_active_columns(ck);
    row_group_and_sbuf_quadrant(ck, SRC);
    psum_quadrant(ck, DST);
    if gen == Gen::V2 {
        xbus(ck, &S3D3_MM_VALID_XBUS_SEL);
    }
}

/// Matmul / MatmulSparse enum stage.
pub const MM_ENUMS: &[FieldRule] = &[
    FieldRule::set(&PE_FP32MODE_ENUM, FP32_MODE, enums::PE_FP32MODE, "0..=3"),
    FieldRule::set(&PERF_OPT_ENUM, PERF_OPT, enums::PERF_OPT_MODE, "0..=3"),
    FieldRule::per_gen(
        &MM_PSUM_FLAGS,
        PSUM_ACC,
        enums::psum_accumulate_flags,
        "0, 1, 2 or 3",
    )
    .until(Gen::V3),
    FieldRule::per_gen(
        &MM_PSUM_FLAGS,
        PSUM_ACC,
        enums::psum_accumulate_flags,
        "0, 1, 2, 3, 4 or 6 (START with ACCUMULATE is illegal)",
    )
    .from(Gen::V4),
    FieldRule::per_gen(
        &MM_ZERO_REGION,
        ZERO_REGION,
        enums::psum_zero_region,
        "0 (SIZE2048)",
    )
    .until(Gen::V3),
    FieldRule::per_gen(
        &MM_ZERO_REGION,
        ZERO_REGION,
        enums::psum_zero_region,
        "0..=3",
    )
    .from(Gen::V4),
];

/// The rule data of `is_valid_s3d3_mm`.
pub const MM_TABLE: GateTable = GateTable {
    fields: &[MM_ENUMS, ROWS],
    dtypes: &[IN_DTYPES],
    operands: &[],
};

/// The matmul PSUM destination: v4 `mm_dst_mem3d_valid_nc_v4` (PSUM, tag 4..11); v2/v3 FP32
/// (UINT32 for a UINT8 input).
pub fn mm_dst<S: Sink>(ck: &mut Ck<S>, dst: Operand, in_dt: u8, out: u8) {
    if ck.gen == Gen::V4 {
        let tag = if out == 0 { dtype::FP32 } else { out };
        let p = Placement {
            psum: true,
            sbuf: false,
            write: false,
        };
        addr::tensor_valid(ck, dst, 3, tag, p);
        ck.check(
            (4..=11).contains(&tag),
            &MM_DST_MEM3D_VALID_NC_V4,
            OUT_DTYPE,
            Allowed::Text("a dtype tag 4..=11"),
        );
    } else {
        let tag = if in_dt == dtype::UINT8 {
            dtype::UINT32
        } else {
            dtype::FP32
        };
        if ck.gen == Gen::V3 && out == dtype::FP32 && out != tag {
            ck.fail(
                &MM_DST_DTYPE,
                OUT_DTYPE,
                out as u64,
                Allowed::Eq(tag as u64),
            );
        }
        addr::tensor_valid(ck, dst, 3, tag, Placement::WRITE_PSUM);
    }
}

/// MatmulSparse (`S4D3_MM`, v3+) fields.
pub const SPARSE_SRC: Operand = Operand::at(loc::matmul_sparse::SRC);
/// `out_dtype` of S4D3_MM.
pub const SPARSE_OUT_DTYPE: Field = Field::at(loc::matmul_sparse::OUT_DTYPE);

/// MatmulSparse uses every column group.
pub const SPARSE_COL_GRP: &[FieldRule] = &[FieldRule::eq(&S4D3_MM_COL_GRP, COL_GRP, 0xF)];

/// The rule data of `is_valid_s4d3_mm`.
pub const SPARSE_TABLE: GateTable = GateTable {
    fields: &[MM_ENUMS, SPARSE_COL_GRP, ROWS],
    dtypes: &[IN_DTYPES],
    operands: &[],
};

/// `is_valid_s4d3_mm`: MatmulSparse 0x07 (v3+).
pub fn is_valid_s4d3_mm<S: Sink>(ck: &mut Ck<S>) {
    let gen = ck.gen;
    check(ck, MM_ENUMS);
    spec_reserved(ck);
    if ck.done() {
        return;
    }
    let dt = ck.get(IN_DTYPE) as u8;
    if IN_DTYPES[0].check(ck) {
        enum_check(
            ck,
            &MM_IN_DTYPE,
            IN_DTYPE,
            MM_IN,
            "UINT8, BF16, FP16, FP32, FP8_EXP3/4/5",
        );
    }
    let out = ck.get(SPARSE_OUT_DTYPE) as u8;
    let ok = out == 0 || out == dtype::FP32 || (gen == Gen::V4 && out == dtype::BF16);
    ck.check(
        ok,
        &MM_OUT_DTYPE,
        SPARSE_OUT_DTYPE,
        Allowed::Text(if gen == Gen::V4 {
            "0, FP32 or BF16"
        } else {
            "0 or FP32"
        }),
    );
    if ck.done() {
        return;
    }
    addr::tensor_valid(ck, SPARSE_SRC, 4, dt, Placement::READ_SBUF);
    if gen == Gen::V4 {
        let tag = if out == 0 { dtype::FP32 } else { out };
        addr::tensor_valid(
            ck,
            DST,
            3,
            tag,
            Placement {
                psum: true,
                sbuf: false,
                write: false,
            },
        );
    } else {
        addr::tensor_valid(ck, DST, 3, dtype::FP32, Placement::WRITE_PSUM);
    }
    check(ck, SPARSE_COL_GRP);
    col_group_active_columns(ck);
    row_group_and_sbuf_quadrant(ck, SPARSE_SRC);
}

#[cfg(test)]
mod tests {
    use super::super::testutil::*;
    use super::*;
    use tpbsim_isa::Bundle;

    /// A legal LdWeights: bf16 weights at partition 0, 128 rows x 128 cols, full groups.
    pub fn lw(gen: Gen) -> Bundle {
        let mut b = hdr(0x01);
        t3(&mut b, 16, 0x0000_0100, [1, 1, 128]);
        b.0[32] = dtype::BF16;
        b.0[38] = 128;
        b.0[39] = 128;
        b.0[44] = 0xF;
        b.0[45] = 0xF;
        if gen == Gen::V2 {
            b.0[46] = 0x10;
        }
        b
    }

    /// A legal Matmul writing FP32 to PSUM partition 0.
    pub fn mm(gen: Gen) -> Bundle {
        let mut b = lw(gen);
        b.0[0] = 0x02;
        t3(&mut b, 48, addr::PSUM_BASE, [1, 1, 128]);
        b.0[43] = 3;
        b
    }

    fn lwf(b: &Bundle, gen: Gen) -> Vec<&'static str> {
        fails(b, gen, None, is_valid_s3_lw)
    }

    #[test]
    fn lw_legal_all_gens() {
        for g in [Gen::V2, Gen::V3, Gen::V4] {
            assert!(lwf(&lw(g), g).is_empty(), "{g}: {:?}", lwf(&lw(g), g));
        }
    }

    #[test]
    fn psum_accumulate_flags_4_and_6_on_every_generation() {
        for g in [Gen::V2, Gen::V3, Gen::V4] {
            for (flags, ok) in [
                (0, true),
                (3, true),
                (4, true),
                (6, true),
                (5, false),
                (7, false),
            ] {
                let mut b = mm(g);
                b.0[43] = flags;
                let f = mmf(&b, g);
                if ok {
                    assert!(f.is_empty(), "{g} flags {flags}: {f:?}");
                } else {
                    assert_eq!(f, ["mm_psum_flags"], "{g} flags {flags}");
                }
            }
        }
    }

    #[test]
    fn v2_transposed_lw_is_legal_on_v2_only() {
        // CoreV2 generateLoadWeights stores 0x80 at +0x13 for a transposed load.
        let mut b = lw(Gen::V2);
        b.0[0x13] = 0x80;
        assert!(lwf(&b, Gen::V2).is_empty(), "{:?}", lwf(&b, Gen::V2));
        assert!(crate::l2::cascade::check_collect(Gen::V2, tpbsim_isa::Engine::Pe, &b).is_empty());
        // The address under the flag is still checked (a bf16 source on an odd byte).
        b.set_u32(16, 0x8000_0101);
        assert_eq!(lwf(&b, Gen::V2), ["addr_aligned_dtype"]);
        // On v3 and v4 the byte is the ADDR4 marker: a register word with address bits set.
        for g in [Gen::V3, Gen::V4] {
            let mut b = lw(g);
            b.0[0x13] = 0x80;
            assert_eq!(lwf(&b, g), ["tensor_start_addr_valid"], "{g}");
        }
    }

    #[test]
    fn lw_column_bounds() {
        let mut b = lw(Gen::V4);
        b.0[39] = 0x81;
        assert_eq!(lwf(&b, Gen::V4), ["valid_col_group_active_columns"]);
        b.0[45] = 0x3;
        b.0[39] = 0x40;
        assert!(lwf(&b, Gen::V4)
            .iter()
            .all(|r| *r != "valid_col_group_active_columns"));
        b.0[39] = 0x41;
        assert!(lwf(&b, Gen::V4).contains(&"valid_col_group_active_columns"));
        b.0[45] = 0x8;
        b.0[39] = 0x20;
        assert!(!lwf(&b, Gen::V4).contains(&"valid_col_group_active_columns"));
        b.0[39] = 0x21;
        assert!(lwf(&b, Gen::V4).contains(&"valid_col_group_active_columns"));
        b.0[45] = 0x5;
        b.0[39] = 1;
        assert!(lwf(&b, Gen::V4).contains(&"valid_col_group_active_columns"));
    }

    #[test]
    fn lw_reserved_and_dtype() {
        let mut b = lw(Gen::V3);
        b.0[41] = 1;
        assert_eq!(lwf(&b, Gen::V3), ["reserved_zero"]);
        let mut b = lw(Gen::V3);
        b.0[32] = dtype::INT32;
        assert_eq!(lwf(&b, Gen::V3), ["has_valid_mm_in_dtype"]);
        b.0[32] = 0;
        assert_eq!(lwf(&b, Gen::V3), ["is_valid_dtype"]);
    }

    #[test]
    fn lw_sbuf_only_and_quadrant() {
        let mut b = lw(Gen::V3);
        b.set_u32(16, addr::PSUM_BASE);
        assert!(lwf(&b, Gen::V3).contains(&"tensor_start_addr_valid.allowed_in_psum"));
        let mut b = lw(Gen::V3);
        b.0[44] = 0x2; // rows from quadrant 1 ...
        b.0[38] = 32;
        assert_eq!(lwf(&b, Gen::V3), ["valid_mm_sbuf_quadrant"]); // ... but the source is at partition 0
        b.set_u32(16, 40 << 18);
        assert!(lwf(&b, Gen::V3).is_empty());
    }

    #[test]
    fn a_source_outside_its_row_group_is_refused_naming_the_groups_partitions() {
        use crate::l2::rule::Allowed;
        // (row group, its partitions): a source one partition before and one past them is
        // refused, naming them; at their first and last partition it is legal.
        for (g, lo, hi) in [
            (0x3u8, 0u32, 64u32),
            (0xC, 64, 128),
            (0x1, 0, 32),
            (0x2, 32, 64),
            (0x4, 64, 96),
            (0x8, 96, 128),
        ] {
            let text =
                format!("a start partition in {lo}..{hi} (group {g:#X})").replace("0X", "0x");
            for gen in [Gen::V3, Gen::V4] {
                let at = |p: u32| {
                    let mut b = lw(gen);
                    b.0[44] = g;
                    b.0[38] = 1;
                    b.set_u32(16, p << 18);
                    fails_allowed(&b, gen, is_valid_s3_lw)
                };
                for p in [lo, hi - 1] {
                    assert_eq!(at(p), [], "{gen} group {g:#x} partition {p}");
                }
                for p in [lo.wrapping_sub(1), hi].into_iter().filter(|&p| p < 128) {
                    let f = at(p);
                    assert_eq!(f.len(), 1, "{gen} group {g:#x} partition {p}: {f:?}");
                    assert_eq!(f[0].0, "valid_mm_sbuf_quadrant");
                    assert!(
                        matches!(f[0].1, Allowed::Text(t) if t == text),
                        "{gen} group {g:#x} partition {p}: {:?}, want {text}",
                        f[0].1
                    );
                }
            }
        }
    }

    #[test]
    fn lw_v2_xbus() {
        let mut b = lw(Gen::V2);
        b.0[46] = 0x01;
        assert_eq!(lwf(&b, Gen::V2), ["lw_valid_xbus"]);
        // Column group 0x8 has no xbus case at all; an invalid group has none either, for
        // another reason.
        use crate::l2::rule::Allowed;
        let xbus_allowed = |g: u8| {
            let mut b = lw(Gen::V2);
            b.0[45] = g;
            b.0[39] = 32;
            fails_allowed(&b, Gen::V2, is_valid_s3_lw)
                .into_iter()
                .find(|f| f.0 == "lw_valid_xbus")
                .map(|f| f.1)
        };
        assert!(
            matches!(xbus_allowed(0x8), Some(Allowed::Text(t)) if t.starts_with("no value: column group 0x8")),
            "{:?}",
            xbus_allowed(0x8)
        );
        assert!(
            matches!(
                xbus_allowed(0x5),
                Some(Allowed::Text("an xbus select of a valid column group"))
            ),
            "{:?}",
            xbus_allowed(0x5)
        );
    }

    fn dual(sel: u8) -> Bundle {
        let mut b = lw(Gen::V4);
        b.0[32] = dtype::FP8_EXP5;
        b.0[35] = sel;
        b.set_u16(24, 0x10); // stride[2]
        b.set_u16(30, 2); // num[2]
        b
    }

    #[test]
    fn dual_fp8_selectors() {
        assert!(lwf(&dual(0), Gen::V4).is_empty());
        assert!(lwf(&dual(1), Gen::V4).is_empty());
        assert_eq!(lwf(&dual(2), Gen::V4), ["s3_lw_dual_fp8_restrictions"]);
        assert_eq!(lwf(&dual(3), Gen::V4), ["s3_lw_dual_fp8_restrictions"]);
        assert!(lwf(&dual(4), Gen::V4).is_empty());
        assert_eq!(
            unchecked(&dual(4), Gen::V4, None, is_valid_s3_lw),
            ["s3_lw_dual_fp8_restrictions.mode4"]
        );
        // The restriction is v4-only: selector 1 needs nothing on v3 beyond the perf enum.
        assert!(lwf(&dual(1), Gen::V3).is_empty());
    }

    #[test]
    fn dual_fp8_mode1_conditions() {
        let mut b = dual(1);
        b.0[32] = dtype::BF16;
        assert_eq!(lwf(&b, Gen::V4), ["s3_lw_dual_fp8_restrictions"]);
        let mut b = dual(1);
        b.0[45] = 0x3;
        b.0[39] = 0x40;
        assert_eq!(lwf(&b, Gen::V4), ["s3_lw_dual_fp8_restrictions"]);
        let mut b = dual(1);
        b.0[34] = 1;
        assert_eq!(lwf(&b, Gen::V4), ["s3_lw_dual_fp8_restrictions"]);
        let mut b = dual(1);
        b.set_u16(30, 1); // partition word num[2] != 2
        assert_eq!(lwf(&b, Gen::V4), ["s3_lw_dual_fp8_restrictions"]);
        let mut b = dual(1);
        b.set_u16(24, 0x11); // stride[2] low nibble set
        assert_eq!(lwf(&b, Gen::V4), ["s3_lw_dual_fp8_restrictions"]);
        // Forbidden quadrant: an indirect source marker.
        let mut b = dual(1);
        b.0[19] = 0x20;
        assert!(lwf(&b, Gen::V4).contains(&"s3_lw_dual_fp8_restrictions"));
    }

    #[test]
    fn dual_fp8_mode1_checks_the_partition_word_unless_the_marker_is_0x40() {
        use crate::l2::rule::Allowed;
        let word_refused = |marker: u8| {
            let mut b = dual(1);
            b.0[19] = marker;
            b.set_u16(30, 1); // num[2] != 2
            fails_allowed(&b, Gen::V4, is_valid_s3_lw)
                .iter()
                .any(|f| matches!(f.1, Allowed::Text(t) if t.starts_with("num_elem[2] == 2")))
        };
        // Bits 4..6 of the marker other than 0x40: the word is checked.
        for m in [0x00, 0x10, 0x30, 0x50, 0x70, 0x8F] {
            assert!(word_refused(m), "marker {m:#x}");
        }
        // Exactly 0x40 there (whatever the other bits): not.
        for m in [0x40, 0x4F, 0xC0] {
            assert!(!word_refused(m), "marker {m:#x}");
        }
    }

    #[test]
    fn dual_fp8_mode4_alignment() {
        let mut b = dual(4);
        b.set_u32(16, 0x101);
        assert!(lwf(&b, Gen::V4).contains(&"s3_lw_dual_fp8_restrictions"));
        b.set_u32(16, 0x8000_0001); // register source bypasses the alignment
        assert!(!lwf(&b, Gen::V4).contains(&"s3_lw_dual_fp8_restrictions"));
    }

    fn mmf(b: &Bundle, gen: Gen) -> Vec<&'static str> {
        fails(b, gen, None, is_valid_s3d3_mm)
    }

    #[test]
    fn mm_legal_and_flags() {
        for g in [Gen::V2, Gen::V3, Gen::V4] {
            assert!(mmf(&mm(g), g).is_empty(), "{g}: {:?}", mmf(&mm(g), g));
        }
        for (v, ok4, ok3) in [
            (0, true, true),
            (3, true, true),
            (4, true, true),
            (5, false, false),
            (6, true, true),
            (7, false, false),
        ] {
            let mut b = mm(Gen::V4);
            b.0[43] = v;
            assert_eq!(mmf(&b, Gen::V4).is_empty(), ok4, "v4 acc {v}");
            let mut b = mm(Gen::V3);
            b.0[43] = v;
            assert_eq!(mmf(&b, Gen::V3).is_empty(), ok3, "v3 acc {v}");
        }
        let mut b = mm(Gen::V3);
        b.0[47] = 1;
        assert_eq!(mmf(&b, Gen::V3), ["is_valid_enum(MATMUL_ZERO_REGION)"]);
        let mut b = mm(Gen::V4);
        b.0[47] = 3;
        assert!(mmf(&b, Gen::V4).is_empty());
        b.0[47] = 4;
        assert_eq!(mmf(&b, Gen::V4), ["is_valid_enum(MATMUL_ZERO_REGION)"]);
    }

    #[test]
    fn mm_fp32_mode() {
        let mut b = mm(Gen::V3);
        b.0[33] = 1;
        assert_eq!(mmf(&b, Gen::V3), ["s3d3_mm_valid_fp32_mode"]);
        b.0[32] = dtype::FP32;
        b.set_u32(16, 0x100);
        assert!(mmf(&b, Gen::V3).is_empty());
        b.0[33] = 0;
        assert_eq!(mmf(&b, Gen::V3), ["s3d3_mm_valid_fp32_mode"]);
    }

    #[test]
    fn mm_xbus_table() {
        let mut b = mm(Gen::V2);
        for (g, x) in [
            (0xF, 0x10),
            (0x3, 0x01),
            (0xC, 0x04),
            (0x1, 0x01),
            (0x2, 0x02),
            (0x4, 0x04),
        ] {
            b.0[45] = g;
            b.0[46] = x;
            b.0[39] = 0x20;
            let (base, _) = group_range(g).unwrap();
            b.set_u32(48, addr::PSUM_BASE + (base << 15));
            assert!(
                mmf(&b, Gen::V2).is_empty(),
                "{g:#x}: {:?}",
                mmf(&b, Gen::V2)
            );
        }
        b.0[45] = 0x8;
        b.set_u32(48, addr::PSUM_BASE + (96 << 15));
        for x in [0x08, 0x00, 0x10] {
            b.0[46] = x;
            assert_eq!(
                mmf(&b, Gen::V2),
                ["s3d3_mm_valid_xbus_sel"],
                "0x8 has no valid case"
            );
        }
        // v3+ has no xbus_sel: col group 0x8 is legal there.
        let mut b = mm(Gen::V3);
        b.0[45] = 0x8;
        b.0[39] = 0x20;
        b.set_u32(48, addr::PSUM_BASE + (96 << 15));
        assert!(mmf(&b, Gen::V3).is_empty());
    }

    #[test]
    fn mm_psum_write_dtype_and_quadrant() {
        // v3: a BF16 write to PSUM is illegal (out 0 => FP32); v4 allows BF16 output.
        let mut b = mm(Gen::V3);
        b.0[40] = dtype::BF16;
        assert_eq!(mmf(&b, Gen::V3), ["has_valid_mm_out_dtype"]);
        let mut b = mm(Gen::V4);
        b.0[40] = dtype::BF16;
        assert!(mmf(&b, Gen::V4).is_empty());
        b.0[40] = dtype::FP8_EXP4;
        assert!(mmf(&b, Gen::V4).contains(&"has_valid_mm_out_dtype"));
        // Destination in SBUF.
        let mut b = mm(Gen::V3);
        b.set_u32(48, 0x100);
        assert!(mmf(&b, Gen::V3).contains(&"tensor_start_addr_valid.allowed_in_sbuf"));
        // Column group 0x2 but destination at PSUM partition 0.
        let mut b = mm(Gen::V3);
        b.0[45] = 0x2;
        b.0[39] = 0x20;
        assert_eq!(mmf(&b, Gen::V3), ["valid_mm_psum_quadrant"]);
    }

    #[test]
    fn sparse() {
        let mut b = hdr(0x07);
        t4(&mut b, 12, 0x100, [1, 1, 1, 64]);
        b.0[32] = dtype::BF16;
        b.0[38] = 64;
        b.0[39] = 64;
        b.0[44] = 0xF;
        b.0[45] = 0xF;
        t3(&mut b, 48, addr::PSUM_BASE, [1, 1, 64]);
        assert!(fails(&b, Gen::V3, None, is_valid_s4d3_mm).is_empty());
        b.0[45] = 0x3;
        assert_eq!(
            fails(&b, Gen::V3, None, is_valid_s4d3_mm),
            ["is_valid_s4d3_mm.col_grp"]
        );
    }
}
