//! Recipes of the vector-engine and control formats: the ALU ops a gate's rule rows admit,
//! element-count agreement, dtype combinations and operand placement.

use super::*;
use crate::l2::formats::{act2, dma, rs};
use crate::l2::table::OperandRule;
use tpbsim_isa::formats::loc::{
    activate2 as ac2, activate_quantize as aq, affine_select as asel, alu_op_inst as al,
    compare_branch as br, copy_pred_scalar as cps, dma_direct2d as d2d,
    event_semaphore_range_clear as rc, extended as ext, extended_tta as tta, iota, ld_tags as lt,
    memset as ms, pe_manage_seed as seed, pool as pl, range_select as rsel, read_accumulator as rd,
    scalar_tensor_tensor as stt, select_reduce as sr, tensor_dequantize as dq,
    tensor_reduce as tr_loc, tensor_scalar as ts_loc, tensor_scalar_select as tss,
    tensor_tensor as tt_loc,
};
use tpbsim_isa::opcode_byte as ob;
use tpbsim_isa::spec::FieldLoc;

// ---- fields through the spec locators ----

/// Writing and reading a recipe's fields through the spec locators, at the offset and width
/// each has in the bundle's generation.
pub(super) trait Put {
    /// Write `v` (little-endian, truncated to the field's width); a field absent in the
    /// generation is left alone.
    fn put(&mut self, f: FieldLoc, v: impl Into<u64>);
    /// Read the field (0 when absent in the generation).
    fn get(&self, f: FieldLoc) -> u64;
    /// Byte offset of a descriptor field the recipe's format has in every generation.
    fn off(&self, f: FieldLoc) -> usize;
}

/// The field `f` locates in `gen`.
fn located(f: FieldLoc, gen: Gen) -> Option<Field> {
    Some(Field::new(f.name, f.at(gen)?, f.width(gen)?))
}

impl Put for Ctx<'_> {
    fn put(&mut self, f: FieldLoc, v: impl Into<u64>) {
        if let Some(x) = located(f, self.gen) {
            x.set(self.b, v.into());
        }
    }
    fn get(&self, f: FieldLoc) -> u64 {
        located(f, self.gen).map_or(0, |x| x.get(self.b))
    }
    fn off(&self, f: FieldLoc) -> usize {
        f.at(self.gen)
            .expect("a recipe's descriptor is present wherever its format is") as usize
    }
}

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

/// Write a 3D tensor at `f` in `region`, start partition in `parts`, with counts `nums`.
pub(super) fn tensor3(
    c: &mut Ctx<'_>,
    f: FieldLoc,
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
    write_pattern(c.b, c.off(f), 3, addr, &steps, &nums);
}

/// The source rows of a two-source op with `n` active partitions (`tt_valid_partitions` and
/// `start_addr_active_channels`): at most one source in PSUM (where both rows admit it), two
/// SBUF sources in one 32-partition quadrant, every start partition at most `128 - n`.
pub(super) fn two_sources(
    c: &mut Ctx<'_>,
    rows: &[OperandRule],
    dts: [u8; 2],
    n: u32,
    nums: [[u16; 4]; 2],
) {
    let top = 129 - n;
    let psum_ok = rows
        .iter()
        .zip(dts)
        .all(|(r, d)| r.psum_ok(Some(c.engine), d));
    let psum = if psum_ok && c.rng.chance(1, 2) {
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
        let addr = address(
            &mut c.rng,
            c.gen,
            region,
            dtype_bytes(dts[i]).unwrap_or(4),
            parts,
        );
        let steps = random_steps(&mut c.rng, 3);
        let r = &rows[i];
        write_pattern(
            c.b,
            r.op.off as usize,
            r.dims as usize,
            addr,
            &steps,
            &nums[i],
        );
    }
}

pub(super) fn fill_tensor_tensor(c: &mut Ctx<'_>) {
    let (gen, opc) = (c.gen, c.b.0[0]);
    let ops = legal(c, tt::OP);
    let op = c.rng.pick(&ops);
    c.put(tt_loc::OP, op);
    // The dtype rows' 64-bit path: open for an integer-band op.
    let band = tt::DTYPES[0].opts_on(c.b).b64;
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
            with_64(gen, opc == ob::TENSOR_TENSOR_ARITH_OP)
        } else {
            compute_dtypes(gen, opc == ob::TENSOR_TENSOR_ARITH_OP)
        },
        signed,
    );
    let (d0, d1, out) = match opc {
        ob::TENSOR_TENSOR_BITVEC_OP => {
            let out: Vec<u8> = outs.into_iter().filter(|&d| is_int(d)).collect();
            (c.rng.pick(&src), c.rng.pick(&src), c.rng.pick(&out))
        }
        ob::COPY_PREDICATED => {
            let d1 = c.rng.pick(&src);
            (c.rng.pick(INTS), d1, d1)
        }
        ob::CAST_PREDICATED => (c.rng.pick(INTS), c.rng.pick(&src), c.rng.pick(&outs)),
        _ => (c.rng.pick(&src), c.rng.pick(&src), c.rng.pick(&outs)),
    };
    c.put(tt_loc::IN_DTYPES, d0 | d1 << 4);
    c.put(tt_loc::OUT_DTYPE, out);
    let n = num_active(c, tt_loc::NUM_ACTIVE_PARTITIONS);
    // Same element count everywhere: every operand's counts are a rotation of one triple.
    let nums = random_nums(&mut c.rng, 3);
    let (n0, n1, nd) = (rotated(c, nums), rotated(c, nums), rotated(c, nums));
    two_sources(c, &tt::OPERANDS[..2], [d0, d1], n, [n0, n1]);
    place(c, &tt::OPERANDS[2], out, 0..129 - n, Some(nd));
}

/// The pattern of operand row `r` for dtype `dt`: in PSUM a third of the time where the row
/// admits PSUM for that dtype on the bundle's engine (always where it admits only PSUM), else
/// in SBUF; aligned to the dtype; start partition in `parts`; counts `nums` or random ones.
pub(super) fn place(
    c: &mut Ctx<'_>,
    r: &OperandRule,
    dt: u8,
    parts: std::ops::Range<u32>,
    nums: Option<[u16; 4]>,
) {
    let psum = !r.placement.sbuf || (r.psum_ok(Some(c.engine), dt) && c.rng.chance(1, 3));
    let region = if psum { Region::Psum } else { Region::Sbuf };
    let align = dtype_bytes(dt).unwrap_or(4);
    let addr = address(&mut c.rng, c.gen, region, align, parts);
    let dims = r.dims as usize;
    let steps = random_steps(&mut c.rng, dims);
    let nums = nums.unwrap_or_else(|| random_nums(&mut c.rng, dims));
    write_pattern(c.b, r.op.off as usize, dims, addr, &steps, &nums);
}

/// Every operand row of a gate with `n` active partitions ([`place`], start partitions at
/// most `128 - n`), the dtypes in row order.
pub(super) fn operands(c: &mut Ctx<'_>, rows: &[OperandRule], dts: &[u8], n: u32) {
    for (r, &dt) in rows.iter().zip(dts) {
        place(c, r, dt, 0..129 - n, None);
    }
}

/// A source and a destination pattern of `dims` dimensions with `n` active partitions: start
/// partitions at most `128 - n`, PSUM only off Pool, a PSUM destination only with a 4-byte
/// output dtype, addresses aligned to their dtypes.
pub(super) fn src_dst(c: &mut Ctx<'_>, dims: usize, offs: [FieldLoc; 2], dts: [u8; 2], n: u32) {
    let pool = c.engine == Engine::Pool;
    let src_psum = !pool && c.rng.chance(1, 3);
    let dst_psum = !pool && dtype_bytes(dts[1]) == Some(4) && c.rng.chance(1, 3);
    for (i, psum) in [src_psum, dst_psum].into_iter().enumerate() {
        let region = if psum { Region::Psum } else { Region::Sbuf };
        let off = c.off(offs[i]);
        c.random_pattern(
            off,
            dims,
            region,
            dtype_bytes(dts[i]).unwrap_or(4),
            0..129 - n,
        );
    }
}

pub(super) fn fill_tensor_scalar(c: &mut Ctx<'_>) {
    let (gen, opc) = (c.gen, c.b.0[0]);
    let acc = if matches!(
        opc,
        ob::TENSOR_SCALAR_ARITH_OP | ob::TENSOR_SCALAR_BITVEC_OP
    ) {
        0
    } else {
        c.rng.range(0, 4)
    };
    c.put(ts_loc::ACCUMULATOR_CMD, acc);
    let imm0_src = c.rng.range(0, 2);
    c.put(ts_loc::IMM0_SRC, imm0_src);
    let imm1_src = c.rng.range(0, 2);
    c.put(ts_loc::IMM1_SRC, imm1_src);
    let (op0, op1, rev) = if opc == ob::EXPONENTIAL {
        (0, 0, 0)
    } else {
        let ops = legal(c, ts::OP0);
        (c.rng.pick(&ops), c.rng.pick(&ops), c.rng.range(0, 3) as u8)
    };
    c.put(ts_loc::OP0, op0);
    c.put(ts_loc::OP1, op1);
    c.put(ts_loc::REVERSE, rev);
    let (i, o) = if opc == ob::TENSOR_SCALAR_BITVEC_OP {
        let d = c.rng.pick(INTS);
        (d, d)
    } else {
        (
            c.rng.pick(&compute_dtypes(gen, false)),
            c.rng.pick(&compute_dtypes(gen, true)),
        )
    };
    c.put(ts_loc::IN_DTYPE, i);
    c.put(ts_loc::OUT_DTYPE, o);
    let n = num_active(c, ts_loc::NUM_ACTIVE_PARTITIONS);
    operands(c, ts::OPERANDS, &[i, o], n);
}

pub(super) fn fill_tensor_reduce(c: &mut Ctx<'_>) {
    let gen = c.gen;
    let negated = c.rng.range(0, 1);
    c.put(tr_loc::NEGATED, negated);
    let ops = legal(c, tr::OP);
    let op = c.rng.pick(&ops);
    c.put(tr_loc::OP, op);
    // A reduction names its axes (X..XYZW); the other opcodes of the family take UNUSED too.
    let reducing = tr::REDUCING.contains(&c.b.0[0]);
    let dim = c.rng.range(u64::from(reducing), 4);
    c.put(tr_loc::OP_DIM, dim);
    let (i, o) = (
        c.rng.pick(&with_64(gen, false)),
        c.rng.pick(&with_64(gen, true)),
    );
    c.put(tr_loc::IN_DTYPE, i);
    c.put(tr_loc::OUT_DTYPE, o);
    let n = num_active(c, tr_loc::NUM_ACTIVE_CHANNELS);
    operands(c, tr::OPERANDS, &[i, o], n);
}

pub(super) fn fill_range_select(c: &mut Ctx<'_>) {
    let gen = c.gen;
    let cmd = c.rng.range(0, 3);
    c.put(rsel::REDUCE_CMD, cmd);
    c.put(rsel::REDUCE_OP, 0x08u8);
    for f in [rsel::COMP_OP0, rsel::COMP_OP1] {
        let v = c.rng.range(0x12, 0x16);
        c.put(f, v);
    }
    for f in [rsel::BOUND0_SRC, rsel::BOUND1_SRC] {
        let v = c.rng.range(0, 2);
        c.put(f, v);
    }
    // A finite base with |base| <= 2^24: a signed integer below 2^24 scaled by 2^-k.
    let whole = c.rng.below(1 << 25) as i64 - (1 << 24);
    let base = whole as f32 / (1u32 << c.rng.below(24)) as f32;
    c.put(rsel::BASE, base.to_bits());
    c.put(rsel::FILL_VAL, 0xFF7F_FFFFu32);
    let (i, o) = (
        c.rng.pick(&compute_dtypes(gen, false)),
        c.rng.pick(&compute_dtypes(gen, true)),
    );
    c.put(rsel::IN_OUT_DTYPES, i | o << 4);
    let n = num_active(c, rsel::NUM_ACTIVE_PARTITIONS);
    operands(c, rs::OPERANDS, &[i, o], n);
}

// ---- recipes of the remaining typed formats ----

/// One access pattern of `dims` dimensions at `off` for `n` active partitions: start
/// partition at most `128 - n`, aligned to `dt`, in PSUM sometimes when `psum_ok` (never
/// from Pool; a written operand only with a 4-byte dtype).
pub(super) fn pattern(
    c: &mut Ctx<'_>,
    f: FieldLoc,
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
    let off = c.off(f);
    c.random_pattern(off, dims, region, dtype_bytes(dt).unwrap_or(4), 0..129 - n);
}

/// A random active-partition count written to `f`.
pub(super) fn num_active(c: &mut Ctx<'_>, f: FieldLoc) -> u32 {
    let n = c.rng.range(1, 128) as u32;
    c.put(f, n);
    n
}

pub(super) fn fill_activate2(c: &mut Ctx<'_>) {
    let gen = c.gen;
    let func = c.rng.pick(&enum_members("ACT_FUNC", gen));
    c.put(ac2::ACTIVATION_FUNC, func);
    let reverse = c.rng.range(0, 3);
    c.put(ac2::REVERSE, reverse);
    let (i, o) = (
        c.rng.pick(&compute_dtypes(gen, false)),
        c.rng.pick(&compute_dtypes(gen, true)),
    );
    c.put(ac2::IN_DTYPE, i);
    c.put(ac2::OUT_DTYPE, o);
    let n = num_active(c, ac2::NUM_ACTIVE_PARTITIONS);
    operands(c, act2::AC2_OPERANDS, &[i, o], n);
}

pub(super) fn fill_activate_quantize(c: &mut Ctx<'_>) {
    let gen = c.gen;
    let plain = compute_dtypes(gen, false);
    let (i, bias) = (c.rng.pick(&plain), c.rng.pick(&plain));
    c.put(aq::IN_BIAS_DTYPES, i | bias << 4);
    c.put(aq::OUT_DTYPE, UINT8);
    let func = c.rng.pick(&enum_members("ACT_FUNC", gen));
    c.put(aq::ACTIVATION_FUNC, func);
    let (q, d) = (finite_f32(&mut c.rng), finite_f32(&mut c.rng));
    c.put(aq::QUANT_SCALE, q);
    c.put(aq::DEQUANT_SCALE, d);
    let bias_addr = address(
        &mut c.rng,
        gen,
        Region::Sbuf,
        dtype_bytes(bias).unwrap_or(4),
        0..128,
    );
    c.put(aq::BIAS_ADDR, bias_addr);
    let n = num_active(c, aq::NUM_ACTIVE_PARTITIONS);
    operands(c, act2::AQ_OPERANDS, &[i, UINT8], n);
}

pub(super) fn fill_read_accumulator(c: &mut Ctx<'_>) {
    let dt = c.rng.pick(&compute_dtypes(c.gen, true));
    c.put(rd::DTYPE, dt);
    let negated = if c.b.opcode() == tpbsim_isa::opcode_byte::DVE_READ_ACCUMULATOR {
        c.rng.range(0, 1)
    } else {
        0
    };
    c.put(rd::NEGATED, negated);
    c.put(rd::DST_ELEMENT_COUNT, 1u32);
    let n = num_active(c, rd::NUM_ACTIVE_PARTITIONS);
    pattern(c, rd::DST, 1, dt, n, true, true);
    // `num_elem[0] == 1` (`is_valid_d1_rd`).
    let dst = crate::l2::addr::Operand::at(rd::DST);
    dst.num(1, 0).set(c.b, 1);
}

pub(super) fn fill_memset(c: &mut Ctx<'_>) {
    let dt = c.rng.pick(&with_64(c.gen, false));
    c.put(ms::DTYPE, dt);
    let n = num_active(c, ms::NUM_ACTIVE_CHANNELS);
    pattern(c, ms::DST, 4, dt, n, true, true);
}

pub(super) fn fill_iota(c: &mut Ctx<'_>) {
    let dt = c.rng.pick(&with_64(c.gen, false));
    c.put(iota::OUT_DTYPE, dt);
    let n = num_active(c, iota::NUM_ACTIVE_CHANNELS);
    pattern(c, iota::DST, 4, dt, n, true, true);
}

pub(super) fn fill_dequantize(c: &mut Ctx<'_>) {
    let fmt = c.rng.range(1, 4) as u8;
    let group: u8 = if fmt != 4 && c.rng.chance(1, 2) { 8 } else { 0 };
    c.put(dq::DEQUANT_FMT, fmt);
    c.put(dq::GROUP_SIZE, group);
    c.put(dq::IN_DTYPE, UINT32);
    c.put(dq::OUT_DTYPE, UINT32);
    let n = num_active(c, dq::NUM_ACTIVE_PARTITIONS);
    let k = c.rng.range(1, 8) as u16;
    let (src, dst) = match (fmt, group) {
        (4, _) => (3 * k, 4 * k),
        (_, 8) => (5 * k, 8 * k),
        _ => (k, 2 * k),
    };
    for (f, count) in [(dq::SRC, src), (dq::DST, dst)] {
        let addr = address(&mut c.rng, c.gen, Region::Sbuf, 4, 0..129 - n);
        let steps = random_steps(&mut c.rng, 3);
        write_pattern(c.b, c.off(f), 3, addr, &steps, &[1, 1, count]);
    }
}

pub(super) fn fill_copy_pred_scalar(c: &mut Ctx<'_>) {
    let plain = compute_dtypes(c.gen, false);
    let (m, s, o) = (c.rng.pick(&plain), c.rng.pick(&plain), c.rng.pick(&plain));
    c.put(cps::MASK_DTYPE, m);
    c.put(cps::SRC_DTYPE, s);
    c.put(cps::OUT_DTYPE, o);
    let fill = c.rng.range(0, 1);
    c.put(cps::USE_FALSE_FILL, fill);
    let n = num_active(c, cps::NUM_ACTIVE_PARTITIONS);
    pattern(c, cps::DST, 3, o, n, true, true);
    pattern(c, cps::MASK, 3, m, n, false, true);
}

/// `imm0` of the S2S2D2_STT layout for its `imm0_src` and dtype: a finite f32 for an FP32
/// instruction immediate, an aligned SBUF address for a pointer (SelectReduce shares the
/// layout's offsets).
pub(super) fn stt_imm0(c: &mut Ctx<'_>, imm_dt: u8) {
    let src = c.rng.range(0, 2) as u8;
    c.put(stt::IMM0_SRC, src);
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
    c.put(stt::IMM0, v);
}

pub(super) fn fill_select_reduce(c: &mut Ctx<'_>) {
    let gen = c.gen;
    c.put(sr::BYPASS_OP, 0u8);
    c.put(sr::REDUCE_OP, 0x08u8);
    let rev = c.rng.range(0, 1);
    c.put(sr::REVERSE, rev);
    let acc = c.rng.pick(&[0u8, 2, 3]);
    c.put(sr::ACCUMULATOR_CMD, acc);
    let m = c.rng.pick(INTS);
    let data: Vec<u8> = compute_dtypes(gen, false)
        .into_iter()
        .filter(|&d| d != INT32 && d != UINT32)
        .collect();
    let d = c.rng.pick(&data);
    let o = c.rng.pick(&compute_dtypes(gen, true));
    c.put(sr::MASK_SRC_DTYPES, m | d << 4);
    c.put(sr::OUT_DTYPE, o);
    c.put(sr::IMM0_DTYPE, FP32);
    stt_imm0(c, FP32);
    let n = num_active(c, sr::NUM_ACTIVE_PARTITIONS);
    pattern(c, sr::MASK, 2, m, n, false, true);
    pattern(c, sr::SRC, 2, d, n, false, true);
    pattern(c, sr::DST, 2, o, n, true, true);
}

pub(super) fn fill_stt(c: &mut Ctx<'_>) {
    let gen = c.gen;
    let sem = tpbsim_isa::ScalarTensorTensorSem::of(c.b.opcode());
    let bitvec = sem == Some(tpbsim_isa::ScalarTensorTensorSem::Bitvec);
    let scan = sem == Some(tpbsim_isa::ScalarTensorTensorSem::Scan);
    let ops = legal(c, pool::STT_OP0);
    let (op0, op1) = (c.rng.pick(&ops), c.rng.pick(&ops));
    c.put(stt::OP0, op0);
    c.put(stt::OP1, op1);
    let rev = c.rng.range(0, 3);
    c.put(stt::REVERSE, rev);
    let acc = if bitvec || scan { 0 } else { c.rng.range(0, 4) };
    c.put(stt::ACCUMULATOR_CMD, acc);
    let plain = compute_dtypes(gen, false);
    let (a, b2, sc) = (c.rng.pick(&plain), c.rng.pick(&plain), c.rng.pick(&plain));
    let o = c.rng.pick(&compute_dtypes(gen, true));
    c.put(stt::IN_DTYPES, a | b2 << 4);
    c.put(stt::OUT_DTYPE, o);
    c.put(stt::IMM0_DTYPE, sc);
    stt_imm0(c, sc);
    let n = num_active(c, stt::NUM_ACTIVE_PARTITIONS);
    pattern(c, stt::SRC0, 2, a, n, false, true);
    pattern(c, stt::SRC1, 2, b2, n, false, true);
    pattern(c, stt::DST, 2, o, n, true, true);
}

pub(super) fn fill_ts_select(c: &mut Ctx<'_>) {
    let gen = c.gen;
    let rev = c.rng.range(0, 1);
    c.put(tss::REVERSED_PRED, rev);
    let d = c.rng.pick(&with_64(gen, false));
    let width = dtype_bytes(d);
    let preds: Vec<u8> = INTS
        .iter()
        .copied()
        .chain([UINT64, INT64])
        .filter(|&p| dtype_bytes(p) == width)
        .collect();
    let p = c.rng.pick(&preds);
    c.put(tss::DTYPE, d);
    c.put(tss::PRED_DTYPE, p);
    let (imm_src, pred_src) = (c.rng.range(0, 2) as u8, c.rng.range(0, 2) as u8);
    c.put(tss::IMM_SRC, imm_src);
    c.put(tss::PRED_SRC, pred_src);
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
    c.put(tss::IMM, imm);
    c.put(tss::PRED, pred);
    let n = num_active(c, tss::NUM_ACTIVE_PARTITIONS);
    pattern(c, tss::SRC, 3, d, n, false, true);
    pattern(c, tss::DST, 3, d, n, true, true);
}

pub(super) fn fill_affine_select(c: &mut Ctx<'_>) {
    let gen = c.gen;
    let (i, o) = (
        c.rng.pick(&compute_dtypes(gen, false)),
        c.rng.pick(&compute_dtypes(gen, true)),
    );
    c.put(asel::IN_OUT_DTYPES, i | o << 4);
    let fill = c.rng.range(0, 3);
    c.put(asel::FILL_MODE, fill);
    for f in pool::AS_MASK.iter().map(|r| r.field) {
        let v = c.rng.range(1, 8);
        f.set(c.b, v);
    }
    let n = num_active(c, asel::NUM_ACTIVE_PARTITIONS);
    pattern(c, asel::SRC, 2, i, n, false, true);
    pattern(c, asel::DST, 2, o, n, true, true);
}

/// LdTags row groups and the column group the compiler derives from each.
pub(super) const LT_GROUPS: &[(u8, u8)] =
    &[(1, 0), (3, 0), (15, 0), (2, 4), (4, 8), (12, 8), (8, 0x0C)];

pub(super) fn fill_ld_tags(c: &mut Ctx<'_>) {
    let (row, col) = c.rng.pick(LT_GROUPS);
    c.put(lt::ROW_GRP, row);
    c.put(lt::COL_GRP, col);
    let dt = c.rng.pick(&compute_dtypes(c.gen, false));
    c.put(lt::TAGS_DTYPE, dt);
}

pub(super) fn fill_pe_manage_seed(c: &mut Ctx<'_>) {
    // The spec-derived descriptors are 8-byte aligned SBUF patterns: legal for any dtype.
    let dt = c.rng.pick(&compute_dtypes(c.gen, false));
    c.put(seed::IDENTITY_DTYPE, dt);
}

pub(super) fn fill_pool(c: &mut Ctx<'_>) {
    let gen = c.gen;
    let kind = c.rng.range(0, 2);
    c.put(pl::POOL_TYPE, kind);
    let (i, o) = (
        c.rng.pick(&compute_dtypes(gen, false)),
        c.rng.pick(&compute_dtypes(gen, true)),
    );
    c.put(pl::IN_DTYPE, i);
    c.put(pl::OUT_DTYPE, o);
    let scale = finite_f32(&mut c.rng);
    c.put(pl::SCALE, scale);
    let n = num_active(c, pl::NUM_ACTIVE_CHANNELS);
    src_dst(c, 4, [pl::SRC, pl::DST], [i, o], n);
}

pub(super) fn fill_ctrl_al(c: &mut Ctx<'_>) {
    let gen = c.gen;
    let plain = compute_dtypes(gen, false);
    let dt = c.rng.pick(&plain);
    c.put(al::DTYPE, dt);
    // The runtime's own records leave dst_dtype 0 (docs/l2.md, is_valid_ctrl_al).
    let dst = if c.rng.range(0, 3) == 0 {
        0
    } else {
        c.rng.pick(&plain)
    };
    c.put(al::DST_DTYPE, dst);
}

pub(super) fn fill_compare_branch(c: &mut Ctx<'_>) {
    let dt = c.rng.pick(&compute_dtypes(c.gen, false));
    c.put(br::DTYPE, dt);
}

pub(super) fn fill_range_clear(c: &mut Ctx<'_>) {
    let (first, last) = (c.get(rc::FIRST), c.get(rc::LAST));
    if first > last {
        c.put(rc::FIRST, last);
        c.put(rc::LAST, first);
    }
}

pub(super) fn fill_trigger_collective(c: &mut Ctx<'_>) {
    let dt = c.rng.pick(&compute_dtypes(c.gen, false));
    c.put(tpbsim_isa::formats::loc::trigger_collective::DTYPE, dt);
}

/// GID_LOAD: the register form, to a register below 64 (`is_valid_gid_load_dst`).
pub(super) fn fill_gid_load(c: &mut Ctx<'_>) {
    use tpbsim_isa::formats::loc::gid_load as gid;
    c.put(gid::DST_TARGET, tpbsim_isa::GidTargetType::REGISTER.0);
    let reg = c.rng.range(0, 63);
    c.put(gid::DST, reg << 56);
}

pub(super) fn fill_pseudo_name(c: &mut Ctx<'_>) {
    let Some(name) = dma::name_field(c.b.0[0]) else {
        return;
    };
    let max = name.len as usize;
    let len = c.rng.range(1, max as u64) as usize;
    for i in 0..max {
        c.b.0[name.start as usize + i] = if i < len {
            c.rng.range(0x21, 0x7E) as u8
        } else {
            0
        };
    }
}

/// DMA_DIRECT2D: byte 6 of a DGE-form ADDR8 zero (the rule rows chose the mode bytes) and, for
/// a DIRECT2D copy, whole-element chunks moving the same number of elements on both sides.
pub(super) fn fill_dma_direct2d(c: &mut Ctx<'_>) {
    for mode in [dma::DMA_SRC_MODE, dma::DMA_DST_MODE] {
        if dma::ADDR8_DGE_MODES.has(mode.get(c.b) as u8) {
            c.b.0[mode.start as usize - 1] = 0;
        }
    }
    const SIZED: [u8; 9] = [
        Dtype::INT8.0,
        Dtype::UINT8.0,
        Dtype::INT16.0,
        Dtype::UINT16.0,
        Dtype::BF16.0,
        Dtype::FP16.0,
        Dtype::INT32.0,
        Dtype::UINT32.0,
        Dtype::FP32.0,
    ];
    let (i, o) = (c.rng.pick(&SIZED), c.rng.pick(&SIZED));
    c.put(d2d::IN_DTYPE, i);
    c.put(d2d::OUT_DTYPE, o);
    let elems = c.rng.range(1, 64);
    let (n0, n1) = (c.rng.range(1, 128), c.rng.range(1, 4));
    for (num, size, t) in [
        (d2d::SRC_NUM, d2d::SRC_ELEM_SIZE, i),
        (d2d::DST_NUM, d2d::DST_ELEM_SIZE, o),
    ] {
        c.put(num, n0 | n1 << 16);
        c.put(size, elems * dtype_bytes(t).unwrap_or(1) as u64);
    }
}

pub(super) fn fill_extended(c: &mut Ctx<'_>) {
    if c.get(ext::EXT_OPCODE) != 2 {
        return;
    }
    let gen = c.gen;
    let op = c.rng.pick(&[0x04u8, 0x06]);
    c.put(tta::OP, op);
    let plain = compute_dtypes(gen, false);
    let (a, b2) = (c.rng.pick(&plain), c.rng.pick(&plain));
    let o = c.rng.pick(&compute_dtypes(gen, true));
    c.put(tta::IN_DTYPES, a | b2 << 4);
    c.put(tta::OUT_DTYPE, o);
    for (f, dt, write) in [
        (tta::SRC0, a, false),
        (tta::SRC1, b2, false),
        (tta::DST, o, true),
    ] {
        pattern(c, f, 2, dt, 1, write, true);
    }
}
