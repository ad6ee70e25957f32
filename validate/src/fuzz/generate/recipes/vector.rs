//! Recipes of the vector-engine and control formats: the ALU ops a gate's rule rows admit,
//! element-count agreement, dtype combinations and operand placement.

use super::*;
// ---- ALU ops: the members of the gate's rule rows ----

/// The values every rule row of the bundle's gate on `f` admits (ascending), Pool-only ops
/// dropped off the Pool engine.
pub(super) fn legal(c: &Ctx<'_>, f: Field) -> Vec<u8> {
    let rows = super::super::rule_rows(c.gen, c.b.0[0]);
    let pool = c.engine == Engine::Pool;
    (0..=255u8)
        .filter(|&v| {
            rows.iter()
                .filter(|r| r.field == f)
                .all(|r| r.admits(c.gen, v as u64))
        })
        .filter(|&v| pool || !enums::ALU_POOL_ONLY.has(v))
        .collect()
}

/// 8/16/32-bit integer dtypes.
pub(super) const INTS: &[u8] = &[INT8, UINT8, INT16, UINT16, INT32, UINT32];

pub(super) fn is_int(d: u8) -> bool {
    INTS.contains(&d) || d == UINT64 || d == INT64
}
pub(super) fn is_signed_int(d: u8) -> bool {
    matches!(d, INT8 | INT16 | INT32 | INT64)
}

/// Dtypes `is_valid_dtype` accepts with the 64-bit path open (`is_valid_dtype_64`).
pub(super) fn with_64(gen: Gen, fp32r: bool) -> Vec<u8> {
    let mut v = compute_dtypes(gen, fp32r);
    v.extend(
        enum_members("DTYPE", gen)
            .into_iter()
            .filter(|&d| d == UINT64 || d == INT64),
    );
    v
}

/// Keep the dtypes an integer-band op with operand signedness `signed` accepts: floats, and
/// integers of that signedness (the signedness rule binds only when every operand is an
/// integer, so this satisfies it by construction).
pub(super) fn of_signedness(v: Vec<u8>, signed: Option<bool>) -> Vec<u8> {
    match signed {
        None => v,
        Some(s) => v
            .into_iter()
            .filter(|&d| !is_int(d) || is_signed_int(d) == s)
            .collect(),
    }
}

/// Element counts of an `n`-dim pattern with the same product as `nums` (3 dims): a random
/// rotation of the counts.
pub(super) fn rotated(c: &mut Ctx<'_>, nums: [u16; 4]) -> [u16; 4] {
    let r = c.rng.below(3) as usize;
    [nums[r % 3], nums[(r + 1) % 3], nums[(r + 2) % 3], 1]
}

/// Write a 3D tensor at `off` in `region`, start partition in `parts`, with counts `nums`.
pub(super) fn tensor3(
    c: &mut Ctx<'_>,
    off: usize,
    region: Region,
    dt: u8,
    parts: std::ops::Range<u32>,
    nums: [u16; 4],
) {
    let addr = address(
        &mut c.rng,
        c.gen,
        region,
        dtype_bytes(dt).unwrap_or(4),
        parts,
    );
    let steps = random_steps(&mut c.rng, 3);
    write_pattern(c.b, off, 3, addr, &steps, &nums);
}

/// Sources of a two-source op with `n` active partitions (`tt_valid_partitions` and
/// `start_addr_active_channels`): at most one source in PSUM (none on Pool), two SBUF sources
/// in one 32-partition quadrant, every start partition at most `128 - n`.
pub(super) fn two_sources(
    c: &mut Ctx<'_>,
    offs: [usize; 2],
    dts: [u8; 2],
    n: u32,
    nums: [[u16; 4]; 2],
) {
    let top = 129 - n;
    let psum = if c.engine != Engine::Pool && c.rng.chance(1, 2) {
        Some(c.rng.below(2) as usize)
    } else {
        None
    };
    let p0 = c.rng.below(top as u64) as u32;
    let q = p0 / 32 * 32;
    for i in 0..2 {
        let (region, parts) = match psum {
            Some(j) if j == i => (Region::Psum, 0..top),
            Some(_) => (Region::Sbuf, 0..top),
            None => (Region::Sbuf, q..(q + 32).min(top)),
        };
        tensor3(c, offs[i], region, dts[i], parts, nums[i]);
    }
}

pub(super) fn fill_tensor_tensor(c: &mut Ctx<'_>) {
    let (gen, opc) = (c.gen, c.b.0[0]);
    let ops = legal(c, tt::OP);
    let op = c.rng.pick(&ops);
    c.b.0[14] = op;
    let band = enums::is_int_band(op);
    let signed = band.then(|| {
        if enums::SIGNED_ONLY.has(op) {
            true
        } else if enums::UNSIGNED_ONLY.has(op) {
            false
        } else {
            c.rng.chance(1, 2)
        }
    });
    let src = of_signedness(
        if band {
            with_64(gen, false)
        } else {
            compute_dtypes(gen, false)
        },
        signed,
    );
    let outs = of_signedness(
        if band {
            with_64(gen, opc == 0x41)
        } else {
            compute_dtypes(gen, opc == 0x41)
        },
        signed,
    );
    let (d0, d1, out) = match opc {
        0x51 => {
            let out: Vec<u8> = outs.into_iter().filter(|&d| is_int(d)).collect();
            (c.rng.pick(&src), c.rng.pick(&src), c.rng.pick(&out))
        }
        0x72 => {
            let d1 = c.rng.pick(&src);
            (c.rng.pick(INTS), d1, d1)
        }
        0x99 => (c.rng.pick(INTS), c.rng.pick(&src), c.rng.pick(&outs)),
        _ => (c.rng.pick(&src), c.rng.pick(&src), c.rng.pick(&outs)),
    };
    c.b.0[12] = d0 | d1 << 4;
    c.b.0[13] = out;
    let n = c.rng.range(1, 128) as u32;
    c.b.0[15] = n as u8;
    // Same element count everywhere: every operand's counts are a rotation of one triple.
    let nums = random_nums(&mut c.rng, 3);
    let (n0, n1, nd) = (rotated(c, nums), rotated(c, nums), rotated(c, nums));
    two_sources(c, [16, 32], [d0, d1], n, [n0, n1]);
    let dst_psum = c.engine != Engine::Pool && dtype_bytes(out) == Some(4) && c.rng.chance(1, 3);
    tensor3(
        c,
        48,
        if dst_psum { Region::Psum } else { Region::Sbuf },
        out,
        0..129 - n,
        nd,
    );
}

/// A source and a destination pattern of `dims` dimensions with `n` active partitions: start
/// partitions at most `128 - n`, PSUM only off Pool, a PSUM destination only with a 4-byte
/// output dtype, addresses aligned to their dtypes.
pub(super) fn src_dst(c: &mut Ctx<'_>, dims: usize, offs: [usize; 2], dts: [u8; 2], n: u32) {
    let pool = c.engine == Engine::Pool;
    let src_psum = !pool && c.rng.chance(1, 3);
    let dst_psum = !pool && dtype_bytes(dts[1]) == Some(4) && c.rng.chance(1, 3);
    for (i, psum) in [src_psum, dst_psum].into_iter().enumerate() {
        let region = if psum { Region::Psum } else { Region::Sbuf };
        c.random_pattern(
            offs[i],
            dims,
            region,
            dtype_bytes(dts[i]).unwrap_or(4),
            0..129 - n,
        );
    }
}

pub(super) fn fill_tensor_scalar(c: &mut Ctx<'_>) {
    let (gen, opc) = (c.gen, c.b.0[0]);
    c.b.0[12] = if matches!(opc, 0x43 | 0x53) {
        0
    } else {
        c.rng.range(0, 4) as u8
    };
    c.b.0[35] = c.rng.range(0, 2) as u8;
    c.b.0[39] = c.rng.range(0, 2) as u8;
    if opc == 0x30 {
        c.b.0[36..39].fill(0);
    } else {
        let ops = legal(c, ts::OP0);
        c.b.0[36] = c.rng.pick(&ops);
        c.b.0[37] = c.rng.pick(&ops);
        c.b.0[38] = c.rng.range(0, 3) as u8;
    }
    let (i, o) = if opc == 0x53 {
        let d = c.rng.pick(INTS);
        (d, d)
    } else {
        (
            c.rng.pick(&compute_dtypes(gen, false)),
            c.rng.pick(&compute_dtypes(gen, true)),
        )
    };
    c.b.0[32] = i;
    c.b.0[33] = o;
    let n = c.rng.range(1, 128) as u32;
    c.b.0[34] = n as u8;
    src_dst(c, 3, [16, 48], [i, o], n);
}

pub(super) fn fill_tensor_reduce(c: &mut Ctx<'_>) {
    let gen = c.gen;
    c.b.0[35] = c.rng.range(0, 1) as u8;
    let ops = legal(c, tr::OP);
    c.b.0[36] = c.rng.pick(&ops);
    c.b.0[37] = c.rng.range(0, 4) as u8;
    let (i, o) = (
        c.rng.pick(&with_64(gen, false)),
        c.rng.pick(&with_64(gen, true)),
    );
    c.b.0[32] = i;
    c.b.0[33] = o;
    let n = c.rng.range(1, 128) as u32;
    c.b.0[34] = n as u8;
    src_dst(c, 4, [12, 44], [i, o], n);
}

pub(super) fn fill_range_select(c: &mut Ctx<'_>) {
    let gen = c.gen;
    c.b.0[14] = c.rng.range(0, 3) as u8;
    c.b.0[15] = 0x08;
    for off in [36, 37] {
        c.b.0[off] = c.rng.range(0x12, 0x16) as u8;
    }
    for off in [38, 39] {
        c.b.0[off] = c.rng.range(0, 2) as u8;
    }
    // A finite base with |base| <= 2^24: a signed integer below 2^24 scaled by 2^-k.
    let whole = c.rng.below(1 << 25) as i64 - (1 << 24);
    let base = whole as f32 / (1u32 << c.rng.below(24)) as f32;
    c.b.set_u32(16, base.to_bits());
    c.b.set_u32(20, 0xFF7F_FFFF);
    let (i, o) = (
        c.rng.pick(&compute_dtypes(gen, false)),
        c.rng.pick(&compute_dtypes(gen, true)),
    );
    c.b.0[13] = i | o << 4;
    let n = c.rng.range(1, 128) as u32;
    c.b.0[12] = n as u8;
    src_dst(c, 2, [24, 48], [i, o], n);
}

// ---- recipes of the remaining typed formats ----

/// One access pattern of `dims` dimensions at `off` for `n` active partitions: start
/// partition at most `128 - n`, aligned to `dt`, in PSUM sometimes when `psum_ok` (never
/// from Pool; a written operand only with a 4-byte dtype).
pub(super) fn pattern(
    c: &mut Ctx<'_>,
    off: usize,
    dims: usize,
    dt: u8,
    n: u32,
    write: bool,
    psum_ok: bool,
) {
    let psum = psum_ok
        && c.engine != Engine::Pool
        && (!write || dtype_bytes(dt) == Some(4))
        && c.rng.chance(1, 3);
    let region = if psum { Region::Psum } else { Region::Sbuf };
    c.random_pattern(off, dims, region, dtype_bytes(dt).unwrap_or(4), 0..129 - n);
}

/// A random active-partition count written at `off`.
pub(super) fn num_active(c: &mut Ctx<'_>, off: usize) -> u32 {
    let n = c.rng.range(1, 128) as u32;
    c.b.0[off] = n as u8;
    n
}

pub(super) fn fill_activate2(c: &mut Ctx<'_>) {
    let gen = c.gen;
    c.b.0[35] = c.rng.pick(&enum_members("ACT_FUNC", gen));
    c.b.0[60] = c.rng.range(0, 3) as u8;
    let (i, o) = (
        c.rng.pick(&compute_dtypes(gen, false)),
        c.rng.pick(&compute_dtypes(gen, true)),
    );
    c.b.0[32] = i;
    c.b.0[33] = o;
    let n = num_active(c, 34);
    src_dst(c, 2, [12, 48], [i, o], n);
}

pub(super) fn fill_activate_quantize(c: &mut Ctx<'_>) {
    let gen = c.gen;
    let plain = compute_dtypes(gen, false);
    let (i, bias) = (c.rng.pick(&plain), c.rng.pick(&plain));
    c.b.0[32] = i | bias << 4;
    c.b.0[33] = UINT8;
    c.b.0[35] = c.rng.pick(&enum_members("ACT_FUNC", gen));
    let (q, d) = (finite_f32(&mut c.rng), finite_f32(&mut c.rng));
    c.b.set_u32(12, q);
    c.b.set_u32(36, d);
    let bias_addr = address(
        &mut c.rng,
        gen,
        Region::Sbuf,
        dtype_bytes(bias).unwrap_or(4),
        0..128,
    );
    c.b.set_u32(40, bias_addr);
    let n = num_active(c, 34);
    src_dst(c, 3, [16, 48], [i, UINT8], n);
}

pub(super) fn fill_read_accumulator(c: &mut Ctx<'_>) {
    let dt = c.rng.pick(&compute_dtypes(c.gen, true));
    c.b.0[32] = dt;
    c.b.0[33] = if c.b.0[0] == 0x9B {
        c.rng.range(0, 1) as u8
    } else {
        0
    };
    c.b.set_u32(28, 1);
    let n = num_active(c, 34);
    pattern(c, 44, 1, dt, n, true, true);
    c.b.set_u16(50, 1);
}

pub(super) fn fill_memset(c: &mut Ctx<'_>) {
    let dt = c.rng.pick(&with_64(c.gen, false));
    c.b.0[32] = dt;
    let n = num_active(c, 34);
    pattern(c, 44, 4, dt, n, true, true);
}

pub(super) fn fill_iota(c: &mut Ctx<'_>) {
    let dt = c.rng.pick(&with_64(c.gen, false));
    c.b.0[33] = dt;
    let n = num_active(c, 34);
    pattern(c, 44, 4, dt, n, true, true);
}

pub(super) fn fill_dequantize(c: &mut Ctx<'_>) {
    let fmt = c.rng.range(1, 4) as u8;
    let group = if fmt != 4 && c.rng.chance(1, 2) { 8 } else { 0 };
    c.b.0[35] = fmt;
    c.b.0[36] = group;
    c.b.0[32] = UINT32;
    c.b.0[33] = UINT32;
    let n = num_active(c, 34);
    let k = c.rng.range(1, 8) as u16;
    let (src, dst) = match (fmt, group) {
        (4, _) => (3 * k, 4 * k),
        (_, 8) => (5 * k, 8 * k),
        _ => (k, 2 * k),
    };
    for (off, count) in [(12, src), (44, dst)] {
        let addr = address(&mut c.rng, c.gen, Region::Sbuf, 4, 0..129 - n);
        let steps = random_steps(&mut c.rng, 3);
        write_pattern(c.b, off, 3, addr, &steps, &[1, 1, count]);
    }
}

pub(super) fn fill_copy_pred_scalar(c: &mut Ctx<'_>) {
    let plain = compute_dtypes(c.gen, false);
    let (m, s, o) = (c.rng.pick(&plain), c.rng.pick(&plain), c.rng.pick(&plain));
    c.b.0[32] = m;
    c.b.0[41] = s;
    c.b.0[42] = o;
    c.b.0[33] = c.rng.range(0, 1) as u8;
    let n = num_active(c, 34);
    pattern(c, 16, 3, o, n, true, true);
    pattern(c, 48, 3, m, n, false, true);
}

/// `imm0` of the S2S2D2_STT layout for its `imm0_src` (byte 39) and dtype: a finite f32 for an
/// FP32 instruction immediate, an aligned SBUF address for a pointer.
pub(super) fn stt_imm0(c: &mut Ctx<'_>, imm_dt: u8) {
    let src = c.rng.range(0, 2) as u8;
    c.b.0[39] = src;
    let v = match src {
        0 if imm_dt == FP32 => finite_f32(&mut c.rng),
        1 => address(
            &mut c.rng,
            c.gen,
            Region::Sbuf,
            dtype_bytes(imm_dt).unwrap_or(4),
            0..128,
        ),
        _ => c.rng.next_u64() as u32,
    };
    c.b.set_u32(60, v);
}

pub(super) fn fill_select_reduce(c: &mut Ctx<'_>) {
    let gen = c.gen;
    c.b.0[36] = 0;
    c.b.0[37] = 0x08;
    c.b.0[38] = c.rng.range(0, 1) as u8;
    c.b.0[44] = c.rng.pick(&[0, 2, 3]);
    let m = c.rng.pick(INTS);
    let data: Vec<u8> = compute_dtypes(gen, false)
        .into_iter()
        .filter(|&d| d != INT32 && d != UINT32)
        .collect();
    let d = c.rng.pick(&data);
    let o = c.rng.pick(&compute_dtypes(gen, true));
    c.b.0[40] = m | d << 4;
    c.b.0[41] = o;
    c.b.0[43] = FP32;
    stt_imm0(c, FP32);
    let n = num_active(c, 42);
    pattern(c, 12, 2, m, n, false, true);
    pattern(c, 24, 2, d, n, false, true);
    pattern(c, 48, 2, o, n, true, true);
}

pub(super) fn fill_stt(c: &mut Ctx<'_>) {
    let gen = c.gen;
    let bitvec = c.b.0[0] == 0x9E;
    let scan = c.b.0[0] == 0xE5;
    let ops = legal(c, pool::STT_OP0);
    c.b.0[36] = c.rng.pick(&ops);
    c.b.0[37] = c.rng.pick(&ops);
    c.b.0[38] = c.rng.range(0, 3) as u8;
    c.b.0[44] = if bitvec || scan {
        0
    } else {
        c.rng.range(0, 4) as u8
    };
    let plain = compute_dtypes(gen, false);
    let (a, b2, sc) = (c.rng.pick(&plain), c.rng.pick(&plain), c.rng.pick(&plain));
    let o = c.rng.pick(&compute_dtypes(gen, true));
    c.b.0[40] = a | b2 << 4;
    c.b.0[41] = o;
    c.b.0[43] = sc;
    stt_imm0(c, sc);
    let n = num_active(c, 42);
    pattern(c, 12, 2, a, n, false, true);
    pattern(c, 24, 2, b2, n, false, true);
    pattern(c, 48, 2, o, n, true, true);
}

pub(super) fn fill_ts_select(c: &mut Ctx<'_>) {
    let gen = c.gen;
    c.b.0[32] = c.rng.range(0, 1) as u8;
    let d = c.rng.pick(&with_64(gen, false));
    let width = dtype_bytes(d);
    let preds: Vec<u8> = INTS
        .iter()
        .copied()
        .chain([UINT64, INT64])
        .filter(|&p| dtype_bytes(p) == width)
        .collect();
    let p = c.rng.pick(&preds);
    c.b.0[34] = d;
    c.b.0[35] = p;
    let (imm_src, pred_src) = (c.rng.range(0, 2) as u8, c.rng.range(0, 2) as u8);
    c.b.0[38] = imm_src;
    c.b.0[39] = pred_src;
    let sbuf = |c: &mut Ctx<'_>, t: u8| {
        address(
            &mut c.rng,
            c.gen,
            Region::Sbuf,
            dtype_bytes(t).unwrap_or(4),
            0..128,
        )
    };
    let imm = match imm_src {
        1 => sbuf(c, d),
        _ => c.rng.next_u64() as u32,
    };
    let pred = match pred_src {
        0 => c.rng.range(0, 1) as u32,
        1 => sbuf(c, p),
        _ => c.rng.next_u64() as u32,
    };
    c.b.set_u32(40, imm);
    c.b.set_u32(44, pred);
    let n = num_active(c, 33);
    pattern(c, 16, 3, d, n, false, true);
    pattern(c, 48, 3, d, n, true, true);
}

pub(super) fn fill_affine_select(c: &mut Ctx<'_>) {
    let gen = c.gen;
    let (i, o) = (
        c.rng.pick(&compute_dtypes(gen, false)),
        c.rng.pick(&compute_dtypes(gen, true)),
    );
    c.b.0[13] = i | o << 4;
    c.b.0[14] = c.rng.range(0, 3) as u8;
    for k in 0..4 {
        let v = c.rng.range(1, 8) as u16;
        c.b.set_u16(28 + 2 * k, v);
    }
    let n = num_active(c, 12);
    pattern(c, 36, 2, i, n, false, true);
    pattern(c, 48, 2, o, n, true, true);
}

/// LdTags row groups and the column group the compiler derives from each.
pub(super) const LT_GROUPS: &[(u8, u8)] =
    &[(1, 0), (3, 0), (15, 0), (2, 4), (4, 8), (12, 8), (8, 0x0C)];

pub(super) fn fill_ld_tags(c: &mut Ctx<'_>) {
    let (row, col) = c.rng.pick(LT_GROUPS);
    c.b.0[44] = row;
    c.b.0[33] = col;
    c.b.0[32] = c.rng.pick(&compute_dtypes(c.gen, false));
}

pub(super) fn fill_pe_manage_seed(c: &mut Ctx<'_>) {
    // The spec-derived descriptors are 8-byte aligned SBUF patterns: legal for any dtype.
    c.b.0[32] = c.rng.pick(&compute_dtypes(c.gen, false));
}

pub(super) fn fill_pool(c: &mut Ctx<'_>) {
    let gen = c.gen;
    c.b.0[36] = c.rng.range(0, 2) as u8;
    let (i, o) = (
        c.rng.pick(&compute_dtypes(gen, false)),
        c.rng.pick(&compute_dtypes(gen, true)),
    );
    c.b.0[32] = i;
    c.b.0[33] = o;
    let scale = finite_f32(&mut c.rng);
    c.b.set_u32(40, scale);
    let n = num_active(c, 34);
    src_dst(c, 4, [12, 44], [i, o], n);
}

pub(super) fn fill_ctrl_al(c: &mut Ctx<'_>) {
    let gen = c.gen;
    let plain = compute_dtypes(gen, false);
    c.b.0[13] = c.rng.pick(&plain);
    // The runtime's own records leave dst_dtype 0 (docs/l2.md, is_valid_ctrl_al).
    c.b.0[15] = if c.rng.range(0, 3) == 0 {
        0
    } else {
        c.rng.pick(&plain)
    };
}

pub(super) fn fill_compare_branch(c: &mut Ctx<'_>) {
    c.b.0[13] = c.rng.pick(&compute_dtypes(c.gen, false));
}

pub(super) fn fill_range_clear(c: &mut Ctx<'_>) {
    if c.b.0[13] > c.b.0[14] {
        c.b.0.swap(13, 14);
    }
}

pub(super) fn fill_pseudo_name(c: &mut Ctx<'_>) {
    let max: usize = if c.b.0[0] == 0xC6 { 32 } else { 36 };
    let len = c.rng.range(1, max as u64) as usize;
    for i in 0..max {
        c.b.0[12 + i] = if i < len {
            c.rng.range(0x21, 0x7E) as u8
        } else {
            0
        };
    }
}

pub(super) fn fill_extended(c: &mut Ctx<'_>) {
    if c.b.0[12] != 2 {
        return;
    }
    let gen = c.gen;
    c.b.0[16] = c.rng.pick(&[0x04, 0x06]);
    let plain = compute_dtypes(gen, false);
    let (a, b2) = (c.rng.pick(&plain), c.rng.pick(&plain));
    let o = c.rng.pick(&compute_dtypes(gen, true));
    c.b.0[14] = a | b2 << 4;
    c.b.0[15] = o;
    for (off, dt, write) in [(20, a, false), (32, b2, false), (44, o, true)] {
        pattern(c, off, 2, dt, 1, write, true);
    }
}
