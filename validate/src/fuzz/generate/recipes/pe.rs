//! Recipes of the PE formats (LdWeights, Matmul, the MX forms, MatmulSparse) and Activate:
//! the row/column groups, quadrant placement and PSUM destinations their gates tie together.

use super::*;
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

/// Shared PE group fields: row/col groups, active rows/columns, v2 xbus; returns the groups.
pub(super) fn pe_groups(c: &mut Ctx<'_>, col_grp: Option<u8>) -> (u8, u8) {
    let col = col_grp.unwrap_or_else(|| pick_col_group(c));
    let row = c.rng.pick(&GROUPS.iter().map(|g| g.0).collect::<Vec<_>>());
    c.b.0[44] = row;
    c.b.0[45] = col;
    c.b.0[38] = c.rng.range(1, 128) as u8;
    c.b.0[39] = c.rng.range(1, col_bound(col)) as u8;
    if c.gen == Gen::V2 {
        c.b.0[46] = xbus_for(col).unwrap_or(0);
    }
    (row, col)
}

pub(super) fn sbuf_source(
    c: &mut Ctx<'_>,
    off: usize,
    dt: u8,
    parts: std::ops::Range<u32>,
) -> ([i16; 4], [u16; 4]) {
    let align = dtype_bytes(dt).unwrap_or(4).max(2);
    let addr = address(&mut c.rng, c.gen, Region::Sbuf, align, parts);
    let steps = random_steps(&mut c.rng, 3);
    let nums = random_nums(&mut c.rng, 3);
    write_pattern(c.b, off, 3, addr, &steps, &nums);
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
    c.b.0[32] = dt;
    c.b.0[35] = sel;
    let (row, _) = pe_groups(c, dual.then_some(0xF));
    let (mut steps, mut nums) = sbuf_source(c, 16, dt, group_range(row));
    if dual && sel == 1 {
        // Partition word: num_elem[2] == 2, step_elem[2] & 0xF == 0.
        nums[2] = 2;
        steps[2] &= !0xF;
        let addr = c.b.u32_at(16);
        write_pattern(c.b, 16, 3, addr, &steps, &nums);
    }
    if gen != Gen::V2 {
        c.b.0[34] = if dual { 0 } else { c.rng.next_u64() as u8 };
    }
    if gen == Gen::V4 {
        // LD_WEIGHT_FLAGS: reserved bits clear, seed NONE/LOAD/SAVE (is_valid_matmul_flags).
        let seed = c.rng.pick(&enum_members("PE_SEED_MODE", gen));
        c.b.0[47] = bitfield_value(&mut c.rng, gen, "LD_WEIGHT_FLAGS") & !(3 << 3) | seed << 3;
    }
}

pub(super) fn fill_matmul(c: &mut Ctx<'_>) {
    let gen = c.gen;
    let dt = c.rng.pick(MM_IN);
    c.b.0[32] = dt;
    c.b.0[33] = if dt == FP32 {
        c.rng.range(1, 3) as u8
    } else {
        0
    };
    c.b.0[35] = c.rng.range(0, 3) as u8;
    let flags: Vec<u8> = crate::l2::enums::psum_accumulate_flags(gen)
        .iter()
        .collect();
    c.b.0[43] = c.rng.pick(&flags);
    c.b.0[47] = if gen == Gen::V4 {
        c.rng.pick(&enum_members("ZERO_REGION", gen))
    } else {
        0
    };
    if gen == Gen::V4 {
        c.b.0[42] = bitfield_value(&mut c.rng, gen, "MATMUL_FLAGS");
    }
    let out = match gen {
        Gen::V2 => 0,
        Gen::V3 if dt == UINT8 => 0,
        Gen::V3 => c.rng.pick(&[0, FP32]),
        _ => c.rng.pick(&[0, FP32, BF16]),
    };
    if gen != Gen::V2 {
        c.b.0[40] = out;
    }
    let tag = match gen {
        Gen::V4 if out != 0 => out,
        Gen::V4 => FP32,
        _ if dt == UINT8 => UINT32,
        _ => FP32,
    };
    let (row, col) = pe_groups(c, None);
    sbuf_source(c, 16, dt, group_range(row));
    let align = dtype_bytes(tag).unwrap_or(4);
    c.random_pattern(48, 3, Region::Psum, align, group_range(col));
}

pub(super) fn fill_activate(c: &mut Ctx<'_>) {
    let gen = c.gen;
    for (off, e) in [
        (12, "IMM_SRC"),
        (13, "IMM_SRC"),
        (14, "ACCUM_CMD"),
        (15, "IMM_SRC_N"),
    ] {
        c.b.0[off] = c.rng.pick(&enum_members(e, gen));
    }
    c.b.0[35] = c.rng.pick(&enum_members("ACT_FUNC", gen));
    let plain = compute_dtypes(gen, false);
    let with_r = compute_dtypes(gen, true);
    let in_dt = c.rng.pick(&plain);
    let bias_src = c.b.0[15];
    let bias_dt = c.rng.pick(&plain);
    c.b.0[32] = in_dt | bias_dt << 4;
    let out = c.rng.pick(&with_r);
    c.b.0[33] = out;
    let scale = finite_f32(&mut c.rng);
    c.b.set_u32(36, scale);
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
    c.b.set_u32(40, bias);
    let imm = finite_f32(&mut c.rng);
    c.b.set_u32(44, imm);
    let n = c.rng.range(1, 128) as u32;
    c.b.0[34] = n as u8;
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
    write_pattern(c.b, 16, 3, src, &s1, &nums);
    write_pattern(c.b, 48, 3, dst, &s2, &dnums);
}

/// FP4_EXP2 (v4 MX data).
pub(super) const FP4_EXP2: u8 = Dtype::FP4_EXP2.0;

/// An MXMEM_PATTERN1D (direct arm) at `off` for MX dtype `dt` (`mxmem1d_valid`): data word
/// aligned as UINT32 (UINT16 for FP4_EXP2) in `data` with its start partition in `parts`;
/// scale word in SBUF; K non-zero; step sign 0x01 or 0xFF; scale partition 0, 4, 8 or 12.
pub(super) fn mx_pattern(
    c: &mut Ctx<'_>,
    off: usize,
    dt: u8,
    data: Region,
    parts: std::ops::Range<u32>,
) {
    let data_bytes = if dt == FP4_EXP2 { 2 } else { 4 };
    let data = address(&mut c.rng, c.gen, data, data_bytes, parts);
    let scale = address(&mut c.rng, c.gen, Region::Sbuf, 1, 0..128);
    c.b.set_u32(off, data);
    c.b.set_u32(off + 4, scale);
    c.b.set_u16(off + 8, c.rng.range(1, 0xFFFF) as u16);
    c.b.0[off + 10] = c.rng.pick(&[0x01, 0xFF]);
    c.b.0[off + 11] = c.rng.pick(&[0, 4, 8, 12]);
}

pub(super) fn fill_ld_weights_mx(c: &mut Ctx<'_>) {
    let dt = c.rng.pick(&[FP8_EXP3, FP8_EXP4, FP8_EXP5, FP4_EXP2]);
    c.b.0[32] = dt;
    let (row, _) = pe_groups(c, None);
    mx_pattern(c, 16, dt, Region::Sbuf, group_range(row));
}

pub(super) fn fill_quantize_mx(c: &mut Ctx<'_>) {
    let i = c.rng.pick(&[BF16, FP16]);
    let o = c.rng.pick(&[FP8_EXP4, FP8_EXP5, FP4_EXP2]);
    c.b.0[34] = i;
    c.b.0[35] = o;
    let n = c.rng.pick(&[32u32, 64, 96, 128]);
    c.b.0[33] = n as u8;
    let region = if c.engine != Engine::Pool && c.rng.chance(1, 3) {
        Region::Psum
    } else {
        Region::Sbuf
    };
    let nums = random_nums(&mut c.rng, 3);
    tensor3(c, 16, region, i, 0..129 - n, nums);
    // The data word is written: PSUM only as a 4-byte word, and not from Pool.
    let psum = o != FP4_EXP2 && c.engine != Engine::Pool && c.rng.chance(1, 3);
    mx_pattern(
        c,
        48,
        o,
        if psum { Region::Psum } else { Region::Sbuf },
        0..128,
    );
}

pub(super) fn fill_matmul_mx(c: &mut Ctx<'_>) {
    let gen = c.gen;
    let dt = c.rng.pick(&[FP8_EXP3, FP8_EXP4, FP8_EXP5, FP4_EXP2]);
    c.b.0[32] = dt;
    let flags: Vec<u8> = crate::l2::enums::psum_accumulate_flags(gen)
        .iter()
        .collect();
    c.b.0[43] = c.rng.pick(&flags);
    c.b.0[47] = c.rng.pick(&enum_members("ZERO_REGION", gen));
    let out = c.rng.pick(&[0, FP32, BF16]);
    c.b.0[40] = out;
    let (row, col) = pe_groups(c, None);
    mx_pattern(c, 16, dt, Region::Sbuf, group_range(row));
    // PSUM destination in the column group's partitions, aligned to the output dtype.
    let tag = if out == 0 { FP32 } else { out };
    c.random_pattern(
        48,
        3,
        Region::Psum,
        dtype_bytes(tag).unwrap_or(4),
        group_range(col),
    );
}

pub(super) fn fill_matmul_sparse(c: &mut Ctx<'_>) {
    let gen = c.gen;
    let dt = c.rng.pick(MM_IN);
    c.b.0[32] = dt;
    c.b.0[33] = c.rng.range(0, 3) as u8;
    let out = if gen == Gen::V4 {
        c.rng.pick(&[0, FP32, BF16])
    } else {
        c.rng.pick(&[0, FP32])
    };
    c.b.0[34] = out;
    c.b.0[35] = c.rng.range(0, 3) as u8;
    let flags: Vec<u8> = crate::l2::enums::psum_accumulate_flags(gen)
        .iter()
        .collect();
    c.b.0[43] = c.rng.pick(&flags);
    c.b.0[47] = if gen == Gen::V4 {
        c.rng.pick(&enum_members("ZERO_REGION", gen))
    } else {
        0
    };
    // Column group 0xF only; the 4D source in SBUF inside the row group's partitions.
    let (row, _) = pe_groups(c, Some(0xF));
    c.random_pattern(
        12,
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
    c.random_pattern(48, 3, Region::Psum, dtype_bytes(tag).unwrap_or(4), 0..128);
}
