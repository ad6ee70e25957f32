//! Recipes of the PE formats (LdWeights, Matmul, the MX forms, MatmulSparse) and Activate:
//! the row/column groups, quadrant placement and PSUM destinations their gates tie together.

use super::*;
use crate::l2::addr::MxPattern;
use tpbsim_isa::formats::loc::{
    activate as act, ld_weights as lw, ld_weights_mx as lwmx, matmul as mm, matmul_mx as mmmx,
    matmul_sparse as sp, quantize_mx as qmx,
};
use tpbsim_isa::spec::{BitLoc, FieldLoc};
// ---- PE groups ----

/// Row/column group bitmasks and the partition range each selects.
pub const GROUPS: &[(u8, u32, u32)] = &[
    (0xF, 0, 128),
    (0x3, 0, 64),
    (0xC, 64, 128),
    (0x1, 0, 32),
    (0x2, 32, 64),
    (0x4, 64, 96),
    (0x8, 96, 128),
];

pub(super) fn group_range(g: u8) -> std::ops::Range<u32> {
    GROUPS
        .iter()
        .find(|x| x.0 == g)
        .map_or(0..128, |x| x.1..x.2)
}

/// Column bound of a column group (`valid_col_group_active_columns`).
pub fn col_bound(g: u8) -> u64 {
    match g {
        0xF => 0x80,
        0x3 | 0xC => 0x40,
        _ => 0x20,
    }
}

/// The v2 xbus select of a column group (`s3d3_mm_valid_xbus_sel`); 0x8 has none.
pub fn xbus_for(g: u8) -> Option<u8> {
    match g {
        0xF => Some(0x10),
        0x3 | 0x1 => Some(0x01),
        0xC | 0x4 => Some(0x04),
        0x2 => Some(0x02),
        _ => None,
    }
}

pub(super) fn pick_col_group(c: &mut Ctx<'_>) -> u8 {
    let gs: Vec<u8> = GROUPS
        .iter()
        .map(|g| g.0)
        .filter(|&g| c.gen != Gen::V2 || xbus_for(g).is_some())
        .collect();
    c.rng.pick(&gs)
}

/// The group fields of one PE format: row group, column group, active rows, active columns
/// and the v2 xbus select (where the format has one).
pub(super) struct PeGroupFields {
    row: FieldLoc,
    col: FieldLoc,
    rows: FieldLoc,
    cols: FieldLoc,
    xbus: Option<FieldLoc>,
}

/// LdWeights' group fields.
pub(super) const LW_GROUPS: PeGroupFields = PeGroupFields {
    row: lw::ROW_GRP,
    col: lw::COL_GRP,
    rows: lw::NUM_ACTIVE_ROWS,
    cols: lw::NUM_ACTIVE_COLS,
    xbus: Some(lw::XBUS_SEL),
};
/// Matmul's group fields.
pub(super) const MM_GROUPS: PeGroupFields = PeGroupFields {
    row: mm::ROW_GRP,
    col: mm::COL_GRP,
    rows: mm::NUM_ACTIVE_ROWS,
    cols: mm::NUM_ACTIVE_COLS,
    xbus: Some(mm::XBUS_SEL),
};
/// MatmulSparse's group fields.
pub(super) const SPARSE_GROUPS: PeGroupFields = PeGroupFields {
    row: sp::ROW_GRP,
    col: sp::COL_GRP,
    rows: sp::NUM_ACTIVE_ROWS,
    cols: sp::NUM_ACTIVE_COLS,
    xbus: None,
};
/// LdWeightsMx's group fields.
pub(super) const LW_MX_GROUPS: PeGroupFields = PeGroupFields {
    row: lwmx::ROW_GRP,
    col: lwmx::COL_GRP,
    rows: lwmx::NUM_ACTIVE_ROWS,
    cols: lwmx::NUM_ACTIVE_COLS,
    xbus: None,
};
/// MatmulMx's group fields.
pub(super) const MM_MX_GROUPS: PeGroupFields = PeGroupFields {
    row: mmmx::ROW_GRP,
    col: mmmx::COL_GRP,
    rows: mmmx::NUM_ACTIVE_ROWS,
    cols: mmmx::NUM_ACTIVE_COLS,
    xbus: None,
};

/// Shared PE group fields: row/col groups, active rows/columns, v2 xbus; returns the groups.
pub(super) fn pe_groups(c: &mut Ctx<'_>, f: &PeGroupFields, col_grp: Option<u8>) -> (u8, u8) {
    let col = col_grp.unwrap_or_else(|| pick_col_group(c));
    let row = c.rng.pick(&GROUPS.iter().map(|g| g.0).collect::<Vec<_>>());
    c.put(f.row, row);
    c.put(f.col, col);
    let rows = c.rng.range(1, 128);
    c.put(f.rows, rows);
    let cols = c.rng.range(1, col_bound(col));
    c.put(f.cols, cols);
    if let (Gen::V2, Some(x)) = (c.gen, f.xbus) {
        c.put(x, xbus_for(col).unwrap_or(0));
    }
    (row, col)
}

pub(super) fn sbuf_source(
    c: &mut Ctx<'_>,
    src: FieldLoc,
    dt: u8,
    parts: std::ops::Range<u32>,
) -> ([i16; 4], [u16; 4]) {
    let align = dtype_bytes(dt).unwrap_or(4).max(2);
    let addr = address(&mut c.rng, c.gen, Region::Sbuf, align, parts);
    let steps = random_steps(&mut c.rng, 3);
    let nums = random_nums(&mut c.rng, 3);
    write_pattern(c.b, c.off(src), 3, addr, &steps, &nums);
    (steps, nums)
}

pub(super) fn fill_ld_weights(c: &mut Ctx<'_>) {
    let gen = c.gen;
    // v4: byte 35 is the dual-FP8 selector (0 legal; 1 and 4 with their conditions).
    let sel = if gen == Gen::V4 {
        c.rng.pick(&[0u8, 0, 1, 4])
    } else {
        c.rng.range(0, 3) as u8
    };
    let dual = gen == Gen::V4 && sel != 0;
    let dt = if dual {
        c.rng.pick(&[FP8_EXP4, FP8_EXP5])
    } else {
        c.rng.pick(MM_IN)
    };
    c.put(lw::IN_DTYPE, dt);
    c.put(lw::PERF_OPT, sel);
    let (row, _) = pe_groups(c, &LW_GROUPS, dual.then_some(0xF));
    let (mut steps, mut nums) = sbuf_source(c, lw::SRC, dt, group_range(row));
    if dual && sel == 1 {
        // Partition word: num_elem[2] == 2, step_elem[2] & 0xF == 0.
        nums[2] = 2;
        steps[2] &= !0xF;
        let off = c.off(lw::SRC);
        let addr = c.b.u32_at(off);
        write_pattern(c.b, off, 3, addr, &steps, &nums);
    }
    // v3+ (the field is absent on v2).
    let xpose = if dual { 0 } else { c.rng.next_u64() as u8 };
    c.put(lw::TRANSPOSE_MODE, xpose);
    if gen == Gen::V4 {
        // LD_WEIGHT_FLAGS: reserved bits clear, seed NONE/LOAD/SAVE (is_valid_matmul_flags).
        let seed = c.rng.pick(&enum_members("PE_SEED_MODE", gen));
        let flags = bitfield_value(&mut c.rng, gen, "LD_WEIGHT_FLAGS");
        c.put(lw::FLAGS, with_bits(lw::FLAGS_SEED, flags, seed));
    }
}

pub(super) fn fill_matmul(c: &mut Ctx<'_>) {
    let gen = c.gen;
    let dt = c.rng.pick(MM_IN);
    c.put(mm::IN_DTYPE, dt);
    let fp32_mode = if dt == FP32 { c.rng.range(1, 3) } else { 0 };
    c.put(mm::FP32_MODE, fp32_mode);
    let perf = c.rng.range(0, 3);
    c.put(mm::PERF_OPT, perf);
    psum_flags(c, mm::PSUM_ACCUMULATE_FLAGS, mm::PSUM_ZERO_REGION);
    if gen == Gen::V4 {
        let flags = bitfield_value(&mut c.rng, gen, "MATMUL_FLAGS");
        c.put(mm::FLAGS, flags);
    }
    let out = match gen {
        Gen::V2 => 0,
        Gen::V3 if dt == UINT8 => 0,
        Gen::V3 => c.rng.pick(&[0, FP32]),
        _ => c.rng.pick(&[0, FP32, BF16]),
    };
    // v3+ (the field is absent on v2).
    c.put(mm::OUT_DTYPE, out);
    let tag = match gen {
        Gen::V4 if out != 0 => out,
        Gen::V4 => FP32,
        _ if dt == UINT8 => UINT32,
        _ => FP32,
    };
    let (row, col) = pe_groups(c, &MM_GROUPS, None);
    sbuf_source(c, mm::SRC, dt, group_range(row));
    let align = dtype_bytes(tag).unwrap_or(4);
    let dst = c.off(mm::DST);
    c.random_pattern(dst, 3, Region::Psum, align, group_range(col));
}

/// The accumulate flags (a member of the generation's set) and, on v4, the zero region (0
/// before v4).
fn psum_flags(c: &mut Ctx<'_>, acc: FieldLoc, zero: FieldLoc) {
    let flags: Vec<u8> = crate::l2::enums::psum_accumulate_flags(c.gen)
        .iter()
        .collect();
    let f = c.rng.pick(&flags);
    c.put(acc, f);
    let z = if c.gen == Gen::V4 {
        c.rng.pick(&enum_members("ZERO_REGION", c.gen))
    } else {
        0
    };
    c.put(zero, z);
}

/// `byte` with the bits `bit` locates set to `v`.
fn with_bits(bit: BitLoc, byte: u8, v: u8) -> u8 {
    let mask = (((1u16 << bit.width) - 1) as u8) << bit.lsb;
    byte & !mask | (v << bit.lsb) & mask
}

pub(super) fn fill_activate(c: &mut Ctx<'_>) {
    let gen = c.gen;
    for (f, e) in [
        (act::IMM_SRC, "IMM_SRC"),
        (act::SCALE_SRC, "IMM_SRC"),
        (act::ACCUMULATOR_CMD, "ACCUM_CMD"),
        (act::BIAS_SRC_N, "IMM_SRC_N"),
    ] {
        let v = c.rng.pick(&enum_members(e, gen));
        c.put(f, v);
    }
    let func = c.rng.pick(&enum_members("ACT_FUNC", gen));
    c.put(act::ACTIVATION_FUNC, func);
    let plain = compute_dtypes(gen, false);
    let with_r = compute_dtypes(gen, true);
    let in_dt = c.rng.pick(&plain);
    let bias_src = c.get(act::BIAS_SRC_N);
    let bias_dt = c.rng.pick(&plain);
    c.put(act::IN_BIAS_DTYPES, in_dt | bias_dt << 4);
    let out = c.rng.pick(&with_r);
    c.put(act::OUT_DTYPE, out);
    let scale = finite_f32(&mut c.rng);
    c.put(act::SCALE_VALUE, scale);
    let bias = match bias_src {
        0 => {
            let region = if c.rng.chance(1, 2) && c.engine != Engine::Pool {
                Region::Psum
            } else {
                Region::Sbuf
            };
            address(
                &mut c.rng,
                gen,
                region,
                dtype_bytes(bias_dt).unwrap_or(4),
                0..128,
            )
        }
        _ => finite_f32(&mut c.rng),
    };
    c.put(act::BIAS, bias);
    let imm = finite_f32(&mut c.rng);
    c.put(act::IMM, imm);
    let n = c.rng.range(1, 128) as u32;
    c.put(act::NUM_ACTIVE_PARTITIONS, n);
    let psum_ok = c.engine != Engine::Pool;
    let src_region = if psum_ok && c.rng.chance(1, 3) {
        Region::Psum
    } else {
        Region::Sbuf
    };
    let dst_region = if psum_ok && dtype_bytes(out) == Some(4) && c.rng.chance(1, 3) {
        Region::Psum
    } else {
        Region::Sbuf
    };
    let src = address(
        &mut c.rng,
        gen,
        src_region,
        dtype_bytes(in_dt).unwrap_or(4),
        0..129 - n,
    );
    let dst = address(
        &mut c.rng,
        gen,
        dst_region,
        dtype_bytes(out).unwrap_or(4),
        0..129 - n,
    );
    let nums = random_nums(&mut c.rng, 3);
    // Same element count on both sides: the destination counts are a rotation.
    let dnums = [nums[1], nums[2], nums[0], 1];
    let (s1, s2) = (random_steps(&mut c.rng, 3), random_steps(&mut c.rng, 3));
    write_pattern(c.b, c.off(act::SRC), 3, src, &s1, &nums);
    write_pattern(c.b, c.off(act::DST), 3, dst, &s2, &dnums);
}

/// FP4_EXP2 (v4 MX data).
pub(super) const FP4_EXP2: u8 = Dtype::FP4_EXP2.0;

/// An MXMEM_PATTERN1D (direct arm) at `mx` for MX dtype `dt` (`mxmem1d_valid`): data word
/// aligned as UINT32 (UINT16 for FP4_EXP2) in `data` with its start partition in `parts`;
/// scale word in SBUF; K non-zero; step sign 0x01 or 0xFF; scale partition 0, 4, 8 or 12.
/// The sub-fields are those of `addr::MxPattern`, the descriptor the gate reads.
pub(super) fn mx_pattern(
    c: &mut Ctx<'_>,
    mx: FieldLoc,
    dt: u8,
    data: Region,
    parts: std::ops::Range<u32>,
) {
    let d = MxPattern::at(mx);
    let data_bytes = if dt == FP4_EXP2 { 2 } else { 4 };
    let data = address(&mut c.rng, c.gen, data, data_bytes, parts);
    let scale = address(&mut c.rng, c.gen, Region::Sbuf, 1, 0..128);
    d.data().set(c.b, data.into());
    d.scale().set(c.b, scale.into());
    d.k().set(c.b, c.rng.range(1, 0xFFFF));
    d.step_sign().set(c.b, c.rng.pick(&[0x01, 0xFF]));
    d.scale_partition().set(c.b, c.rng.pick(&[0, 4, 8, 12]));
}

pub(super) fn fill_ld_weights_mx(c: &mut Ctx<'_>) {
    let dt = c.rng.pick(&[FP8_EXP3, FP8_EXP4, FP8_EXP5, FP4_EXP2]);
    c.put(lwmx::IN_DTYPE, dt);
    let (row, _) = pe_groups(c, &LW_MX_GROUPS, None);
    mx_pattern(c, lwmx::SRC, dt, Region::Sbuf, group_range(row));
}

pub(super) fn fill_quantize_mx(c: &mut Ctx<'_>) {
    let i = c.rng.pick(&[BF16, FP16]);
    let o = c.rng.pick(&[FP8_EXP4, FP8_EXP5, FP4_EXP2]);
    c.put(qmx::IN_DTYPE, i);
    c.put(qmx::OUT_DTYPE, o);
    let n = c.rng.pick(&[32u32, 64, 96, 128]);
    c.put(qmx::NUM_ACTIVE_PARTITIONS, n);
    let region = if c.engine != Engine::Pool && c.rng.chance(1, 3) {
        Region::Psum
    } else {
        Region::Sbuf
    };
    let nums = random_nums(&mut c.rng, 3);
    tensor3(c, qmx::SRC, region, i, 0..129 - n, nums);
    // The data word is written: PSUM only as a 4-byte word, and not from Pool.
    let psum = o != FP4_EXP2 && c.engine != Engine::Pool && c.rng.chance(1, 3);
    mx_pattern(
        c,
        qmx::DST,
        o,
        if psum { Region::Psum } else { Region::Sbuf },
        0..128,
    );
}

pub(super) fn fill_matmul_mx(c: &mut Ctx<'_>) {
    let dt = c.rng.pick(&[FP8_EXP3, FP8_EXP4, FP8_EXP5, FP4_EXP2]);
    c.put(mmmx::IN_DTYPE, dt);
    psum_flags(c, mmmx::PSUM_ACCUMULATE_FLAGS, mmmx::PSUM_ZERO_REGION);
    let out = c.rng.pick(&[0, FP32, BF16]);
    c.put(mmmx::OUT_DTYPE, out);
    let (row, col) = pe_groups(c, &MM_MX_GROUPS, None);
    mx_pattern(c, mmmx::SRC, dt, Region::Sbuf, group_range(row));
    // PSUM destination in the column group's partitions, aligned to the output dtype.
    let tag = if out == 0 { FP32 } else { out };
    let dst = c.off(mmmx::DST);
    c.random_pattern(
        dst,
        3,
        Region::Psum,
        dtype_bytes(tag).unwrap_or(4),
        group_range(col),
    );
}

pub(super) fn fill_matmul_sparse(c: &mut Ctx<'_>) {
    let gen = c.gen;
    let dt = c.rng.pick(MM_IN);
    c.put(sp::IN_DTYPE, dt);
    let fp32_mode = c.rng.range(0, 3);
    c.put(sp::FP32_MODE, fp32_mode);
    let out = if gen == Gen::V4 {
        c.rng.pick(&[0, FP32, BF16])
    } else {
        c.rng.pick(&[0, FP32])
    };
    c.put(sp::OUT_DTYPE, out);
    let perf = c.rng.range(0, 3);
    c.put(sp::PERF_OPT, perf);
    psum_flags(c, sp::PSUM_ACCUMULATE_FLAGS, sp::PSUM_ZERO_REGION);
    // Column group 0xF only; the 4D source in SBUF inside the row group's partitions.
    let (row, _) = pe_groups(c, &SPARSE_GROUPS, Some(0xF));
    let src = c.off(sp::SRC);
    c.random_pattern(
        src,
        4,
        Region::Sbuf,
        dtype_bytes(dt).unwrap_or(4),
        group_range(row),
    );
    let tag = if gen == Gen::V4 && out != 0 {
        out
    } else {
        FP32
    };
    let dst = c.off(sp::DST);
    c.random_pattern(dst, 3, Region::Psum, dtype_bytes(tag).unwrap_or(4), 0..128);
}
