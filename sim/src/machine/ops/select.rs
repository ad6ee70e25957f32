//! Execution of the select family — TensorScalarSelect (0x98), AffineSelect (0x92),
//! SelectReduce (0xEA), RangeSelect (0xBC) — and of TensorDequantize (0x7B).
//!
//! Semantics follow the public header contracts (G `firmware/kernels/ts-select.md`,
//! `affineselect.md`, `copypredicatedreduce.md`, `rangeselect.md`, `tensor-dequantize.md`).
//! Where a detail is not public the choice is project-defined, listed in `docs/numerics.md`, and
//! the op records a note ([`notes`]) that `sim run` reports, so a result that rests on it is
//! never mistaken for a publicly backed one.

use tpbsim_isa::{
    AffineSelect, Engine, RangeSelect, SelectReduce, TensorDequantize, TensorScalarSelect,
};

use super::{
    column, containers, integer_operand, is_int, same_count, tile, to_bytes, unpacked, widen,
    ScalarSrc,
};
use crate::machine::core::Machine;
use crate::machine::fault::{Fault, Site};
use crate::machine::pattern::TensorPattern;
use crate::numerics::alu::{self, AluOp};
use crate::numerics::cast::{self, CastPolicy};
use crate::numerics::dequant::{self, DequantError, DequantFmt};
use crate::numerics::reduce::AccumCmd;
use tpbsim_isa::NumFormat;

/// The project-defined details each op's simulation relies on (the note `sim run` reports once
/// a kernel executes the op).
pub mod notes {
    /// TensorDequantize.
    pub const DEQUANT: &str = "TENSOR_DEQUANTIZE (0x7B): the code order inside a word, the 6-bit code stream, the place and E8M0 reading of an MX block's scale word, and the NF4 codebook values are project-defined (docs/numerics.md)";
    /// RangeSelect.
    pub const RANGE_SELECT: &str = "RANGE_SELECT (0xBC): an in-range element writes its value, not its index (base + ordinal); project-defined (docs/numerics.md)";
    /// SelectReduce.
    pub const SELECT_REDUCE: &str = "SELECT_REDUCE (0xEA): the copied value is converted to out_dtype, IDLE leaves the accumulators alone, and imm0 is not read; project-defined (docs/numerics.md)";
    /// TensorScalarSelect.
    pub const TS_SELECT: &str = "TENSOR_SCALAR_SELECT (0x98): an instruction-immediate operand narrower than 32 bits is the immediate's low bytes; project-defined (docs/numerics.md)";
    /// ScalarTensorTensor, when an instruction immediate rests on a project-defined reading.
    pub const STT_IMM: &str = "SCALAR_TENSOR_TENSOR (0x9D / 0x9E): on an integer datapath the arith form's FP32 immediate enters truncated toward zero (saturating), and the bit-vector form's immediate is its low bytes in the data width; project-defined (docs/numerics.md)";
    /// TensorTensorScan.
    pub const TT_SCAN: &str = "TENSOR_TENSOR_SCAN (0xE5): the recurrence runs over all free elements of a partition in access-pattern order (dim 0 innermost, no restart per row), the carry stays at datapath precision between steps, and reverse bit 0 / bit 1 put the carry / src1 on the left; project-defined (docs/numerics.md)";
    /// AffineSelect.
    pub const AFFINE_SELECT: &str = "TENSOR_SCALAR_AFFINE_SELECT (0x92): the mask ramp walks its dimension 0 innermost in wrapping int32; project-defined (docs/numerics.md)";
}

/// The element count of each partition, which must not be zero for per-partition loops.
fn free_len(site: Site, name: &str, p: &TensorPattern) -> Result<usize, Fault> {
    match p.elems_per_partition() as usize {
        0 => Err(Fault::exec(
            site,
            format!("operand `{name}` has no elements"),
        )),
        n => Ok(n),
    }
}

/// `code` in `from` written in `to`: the bits when the formats agree, else through the cast
/// engine (fp32 hub, device policy).
fn convert(from: NumFormat, to: NumFormat, code: u64) -> u64 {
    if from == to {
        code
    } else {
        cast::cast(from, code, to, &CastPolicy::DEVICE)
    }
}

/// `keep[i] &= xs[i] op bound` for an fp ALU comparison IS_EQ..IS_LT (0x12..0x16; the ALU writes
/// 1.0 where it holds, 0.0 elsewhere, NaN comparing false), one monomorphic loop per op.
fn compare_into(op: u8, xs: &[f32], bound: f32, keep: &mut [bool]) {
    fn pass(xs: &[f32], bound: f32, keep: &mut [bool], f: impl Fn(f32, f32) -> bool) {
        for (k, &x) in keep.iter_mut().zip(xs) {
            *k &= f(x, bound);
        }
    }
    match op {
        0x12 => pass(xs, bound, keep, |a, b| a == b),
        0x13 => pass(xs, bound, keep, |a, b| a > b),
        0x14 => pass(xs, bound, keep, |a, b| a >= b),
        0x15 => pass(xs, bound, keep, |a, b| a <= b),
        _ => pass(xs, bound, keep, |a, b| a < b),
    }
}

fn accum_cmd(site: Site, op: &str, byte: u8) -> Result<AccumCmd, Fault> {
    match byte {
        0 => Ok(AccumCmd::Idle),
        2 => Ok(AccumCmd::Accumulate),
        3 => Ok(AccumCmd::ZeroAccumulate),
        c => Err(Fault::exec(
            site,
            format!("{op}: accumulate command {c} (IDLE 0, ACCUMULATE 2 or ZERO_ACCUMULATE 3)"),
        )),
    }
}

impl Machine<'_> {
    /// TensorDequantize (0x7B): each partition's UINT32 transport words expanded to FP8 by the
    /// [`dequant`] model; `in` and `out` must be UINT32.
    pub(crate) fn dequantize(&mut self, site: Site, x: &TensorDequantize) -> Result<(), Fault> {
        let dtypes = (x.in_dtype, x.out_dtype);
        let (input, out, src, dst) =
            self.in_out(site, dtypes, &x.src, &x.dst, x.num_active_partitions)?;
        let group_size = x.group_size;
        for (what, f) in [("in_dtype", input), ("out_dtype", out)] {
            if f != NumFormat::Uint32 {
                return Err(Fault::exec(
                    site,
                    format!(
                        "`{what}` is {}; TensorDequantize moves UINT32 transport words",
                        f.name()
                    ),
                ));
            }
        }
        let err = |e: DequantError| Fault::exec(site, e.to_string());
        let fmt = DequantFmt::from_wire(x.dequant_fmt.0).map_err(err)?;
        if src.partitions != dst.partitions {
            return Err(Fault::exec(
                site,
                format!(
                    "`src` spans {} partitions, `dst` {}",
                    src.partitions, dst.partitions
                ),
            ));
        }
        let (sw, dw) = (free_len(site, "src", &src)?, free_len(site, "dst", &dst)?);
        let (rs, rd) = (
            self.operand(site, "src", &src)?,
            self.operand(site, "dst", &dst)?,
        );
        let words = widen(&self.chip.gather(&rs), NumFormat::Uint32);
        let mut bytes = vec![0u8; dst.partitions as usize * dw * 4];
        for (s, o) in words.chunks_exact(sw).zip(bytes.chunks_exact_mut(dw * 4)) {
            dequant::dequantize_partition(fmt, group_size, s, o, &CastPolicy::DEVICE)
                .map_err(err)?;
        }
        self.chip.scatter(&rd, &bytes);
        self.note_project_defined(notes::DEQUANT);
        Ok(())
    }

    /// RangeSelect (0xBC, DVE): `dst = (x comp0 bound0) && (x comp1 bound1) ? x : −FLT_MAX`,
    /// compared in fp32; with a reduce command each partition's outputs fold by MAX into the
    /// DVE accumulators (read back by 0x9B).
    pub(crate) fn range_select(&mut self, site: Site, x: &RangeSelect) -> Result<(), Fault> {
        let (input, out) = (
            self.format(site, "in", x.in_out_dtypes.lo())?,
            self.format(site, "out", x.in_out_dtypes.hi())?,
        );
        let n = x.num_active_partitions;
        let bounds = [
            self.scalar(site, x.bound0_src, x.bound0, NumFormat::Float32)?,
            self.scalar(site, x.bound1_src, x.bound1, NumFormat::Float32)?,
        ];
        let src = self.pattern(site, "src", &x.src, n, input)?;
        let dst = self.pattern(site, "dst", &x.dst, n, out)?;
        let (fill_bits, comp) = (x.fill_val.0, [x.comp_op0.0, x.comp_op1.0]);
        same_count(site, ("src", &src), ("dst", &dst))?;
        if fill_bits != 0xFF7F_FFFF {
            return Err(Fault::exec(
                site,
                format!("fill_val 0x{:08x} is not -FLT_MAX (0xff7fffff)", fill_bits),
            ));
        }
        if x.reduce_op.0 != AluOp::MAX.wire() {
            return Err(Fault::exec(
                site,
                format!("reduce_op 0x{:02x} is not MAX (0x08)", x.reduce_op.0),
            ));
        }
        let cmd = accum_cmd(site, "RangeSelect reduce_cmd", x.reduce_cmd.0)?;
        for (w, f) in [("in", input), ("out", out)] {
            if is_int(f) {
                return Err(Fault::exec(
                    site,
                    format!(
                        "`{w}` is {}: RangeSelect is a floating-point datapath",
                        f.name()
                    ),
                ));
            }
            unpacked(site, w, f)?;
        }
        let err = |e: alu::AluError| Fault::exec(site, e.to_string());
        let ctx = self.ctx(site.engine);
        for c in comp {
            if !(AluOp::IS_EQ.wire()..=AluOp::IS_LT.wire()).contains(&c) {
                return Err(Fault::exec(
                    site,
                    format!("comparison op 0x{c:02x} is not IS_EQ..IS_LT (0x12..0x16)"),
                ));
            }
            // The engine's ALU must have the op; the element loop uses its predicate form.
            ctx.fp_op(AluOp::from_wire(c).map_err(err)?).map_err(err)?;
        }
        let (rs, rd) = (
            self.operand(site, "src", &src)?,
            self.operand(site, "dst", &dst)?,
        );
        let f = tile(site, &src)?.free_len();
        let b0 = self.scalar_f32(site, "bound0", bounds[0], &src)?;
        let b1 = self.scalar_f32(site, "bound1", bounds[1], &src)?;
        let mut xs = self.load_f32(site, &rs, input)?;
        let fill = f32::from_bits(fill_bits);
        let mut keep = vec![true; f];
        for (p, row) in xs.chunks_exact_mut(f).enumerate() {
            keep.fill(true);
            compare_into(comp[0], row, b0.at(p), &mut keep);
            compare_into(comp[1], row, b1.at(p), &mut keep);
            for (v, &k) in row.iter_mut().zip(&keep) {
                if !k {
                    *v = fill;
                }
            }
        }
        if cmd != AccumCmd::Idle {
            let max = ctx.fp_op(AluOp::MAX).map_err(err)?;
            for (p, row) in xs.chunks_exact(f).enumerate() {
                self.engines
                    .dve_acc
                    .fold(cmd, max, p, None, row)
                    .map_err(|e| Fault::exec(site, e.to_string()))?;
            }
        }
        self.store_f32(site, &rd, out, &xs, &CastPolicy::DEVICE)?;
        self.note_project_defined(notes::RANGE_SELECT);
        Ok(())
    }

    /// SelectReduce (0xEA): lanes whose integer predicate is non-zero take the data element
    /// (op0 BYPASS; converted to `out` when the formats differ), the others keep `dst`; with an
    /// accumulate command the predicate-true data values of each partition fold by MAX (fp32,
    /// NaN-suppressing) into the DVE accumulators.
    pub(crate) fn select_reduce(&mut self, site: Site, x: &SelectReduce) -> Result<(), Fault> {
        let (mask_format, src_format) = (
            self.format(site, "mask", x.mask_src_dtypes.lo())?,
            self.format(site, "src", x.mask_src_dtypes.hi())?,
        );
        let out = self.format(site, "out", x.out_dtype)?;
        let n = x.num_active_partitions;
        let mask = self.pattern(site, "mask", &x.mask, n, mask_format)?;
        let src = self.pattern(site, "src", &x.src, n, src_format)?;
        let dst = self.pattern(site, "dst", &x.dst, n, out)?;
        same_count(site, ("mask", &mask), ("src", &src))?;
        same_count(site, ("mask", &mask), ("dst", &dst))?;
        if x.bypass_op.0 != AluOp::BYPASS.wire() || x.reduce_op.0 != AluOp::MAX.wire() {
            return Err(Fault::exec(
                site,
                format!(
                    "op0/op1 are 0x{:02x}/0x{:02x}; SelectReduce copies with BYPASS and reduces with MAX",
                    x.bypass_op.0, x.reduce_op.0
                ),
            ));
        }
        match x.reverse {
            0 => {}
            1 => {
                return Err(Fault::NotSimulated {
                    site,
                    name: "SELECT_REDUCE with reverse_operands FIRST (the swapped operand roles are not published)".into(),
                    engine: site.engine,
                })
            }
            r => {
                return Err(Fault::exec(
                    site,
                    format!("reverse_operands {r} (SelectReduce takes NONE 0 or FIRST 1)"),
                ))
            }
        }
        let cmd = accum_cmd(site, "SelectReduce accumulator_cmd", x.accumulator_cmd.0)?;
        if cmd != AccumCmd::Idle && site.engine != Engine::Dve {
            return Err(Fault::NotSimulated {
                site,
                name: "SELECT_REDUCE accumulation outside the DVE (only the DVE accumulator registers are modelled)".into(),
                engine: site.engine,
            });
        }
        integer_operand(site, "mask", mask_format)?;
        if is_int(src_format) && src_format.container_bytes() == 4 {
            return Err(Fault::exec(
                site,
                format!(
                    "data format {} is a 32-bit integer, which SelectReduce excludes",
                    src_format.name()
                ),
            ));
        }
        for (w, f) in [("src", src_format), ("dst", out)] {
            unpacked(site, w, f)?;
        }
        let (rm, rs, rd) = (
            self.operand(site, "mask", &mask)?,
            self.operand(site, "src", &src)?,
            self.operand(site, "dst", &dst)?,
        );
        let bits = widen(&self.chip.gather(&rm), mask_format);
        let data = containers(&self.chip.gather(&rs), src_format.container_bytes());
        let moved: Vec<u64> = data.iter().map(|&c| convert(src_format, out, c)).collect();
        let n = out.container_bytes();
        let mut cur = containers(&self.chip.gather(&rd), n);
        alu::copy_predicated(&bits, &moved, &mut cur)
            .map_err(|e| Fault::exec(site, e.to_string()))?;
        self.chip.scatter(&rd, &to_bytes(&cur, n));
        if cmd != AccumCmd::Idle {
            let f = free_len(site, "mask", &mask)?;
            let max = self
                .ctx(site.engine)
                .fp_op(AluOp::MAX)
                .map_err(|e| Fault::exec(site, e.to_string()))?;
            for (p, (m, d)) in bits.chunks_exact(f).zip(data.chunks_exact(f)).enumerate() {
                let vals: Vec<f32> = m
                    .iter()
                    .zip(d)
                    .filter(|(&m, _)| m != 0)
                    .map(|(_, &c)| cast::to_f32(src_format, c))
                    .filter(|v| !v.is_nan())
                    .collect();
                self.engines
                    .dve_acc
                    .fold(cmd, max, p, None, &vals)
                    .map_err(|e| Fault::exec(site, e.to_string()))?;
            }
        }
        self.note_project_defined(notes::SELECT_REDUCE);
        Ok(())
    }

    /// One value per active partition of `format` at a pointer, or an immediate, as integer
    /// containers (immediates keep their low `format` bytes).
    fn scalar_codes(
        &self,
        site: Site,
        name: &str,
        s: ScalarSrc,
        format: NumFormat,
        partitions: u32,
    ) -> Result<Vec<u64>, Fault> {
        let n = format.container_bytes();
        Ok(match s {
            ScalarSrc::Imm(bits) => {
                let mask = if n >= 8 {
                    u64::MAX
                } else {
                    (1u64 << (8 * n)) - 1
                };
                vec![u64::from(bits) & mask; partitions as usize]
            }
            ScalarSrc::Pointer { addr, .. } => {
                let p = column(addr, partitions, format);
                let r = self.operand(site, name, &p)?;
                containers(&self.chip.gather(&r), n)
            }
        })
    }

    /// TensorScalarSelect (0x98): per partition `dst = pred ? src : imm` (`reversed_pred`
    /// swaps the arms); the predicate is an immediate 0/1 or one integer per partition; the data
    /// moves bit for bit in its one format.
    pub(crate) fn ts_select(&mut self, site: Site, x: &TensorScalarSelect) -> Result<(), Fault> {
        let format = self.format(site, "dtype", x.dtype)?;
        let pred_format = self.format(site, "pred", x.pred_dtype)?;
        let n = x.num_active_partitions;
        let imm_src = self.scalar(site, x.imm_src, x.imm, format)?;
        let pred_src = self.scalar(site, x.pred_src, x.pred, pred_format)?;
        let src = self.pattern(site, "src", &x.src, n, format)?;
        let dst = self.pattern(site, "dst", &x.dst, n, format)?;
        let reversed = x.reversed_pred;
        same_count(site, ("src", &src), ("dst", &dst))?;
        if reversed > 1 {
            return Err(Fault::exec(
                site,
                format!("reversed_pred is {} (0 or 1)", reversed),
            ));
        }
        unpacked(site, "dtype", format)?;
        if !is_int(pred_format) || pred_format.container_bytes() != format.container_bytes() {
            return Err(Fault::exec(
                site,
                format!(
                    "predicate format {} must be an integer format as wide as {}",
                    pred_format.name(),
                    format.name()
                ),
            ));
        }
        Self::check_int(site, pred_format)?;
        if let ScalarSrc::Imm(v) = pred_src {
            if v > 1 {
                return Err(Fault::exec(
                    site,
                    format!("instruction-immediate predicate {v} (0 or 1)"),
                ));
            }
        }
        let parts = src.partitions;
        let pred = self.scalar_codes(site, "pred", pred_src, pred_format, parts)?;
        let imm = self.scalar_codes(site, "imm", imm_src, format, parts)?;
        let (rs, rd) = (
            self.operand(site, "src", &src)?,
            self.operand(site, "dst", &dst)?,
        );
        let n = format.container_bytes();
        let f = free_len(site, "src", &src)?;
        let mut v = containers(&self.chip.gather(&rs), n);
        for (p, row) in v.chunks_exact_mut(f).enumerate() {
            if (pred[p] != 0) == (reversed == 1) {
                row.fill(imm[p]);
            }
        }
        self.chip.scatter(&rd, &to_bytes(&v, n));
        if matches!(imm_src, ScalarSrc::Imm(_)) && n < 4 {
            self.note_project_defined(notes::TS_SELECT);
        }
        Ok(())
    }

    /// AffineSelect (0x92): `mask = base + Σ idx_d · step_d + partition · channel_multiplier`
    /// over the mask's 4-D walk (one value per source element); lanes where `mask cmp 0` holds
    /// take `src` (converted to `out`), the others the fp32 fill read from register `fill_reg`.
    pub(crate) fn affine_select(&mut self, site: Site, x: &AffineSelect) -> Result<(), Fault> {
        let dtypes = (x.in_out_dtypes.lo(), x.in_out_dtypes.hi());
        let (input, out, src, dst) =
            self.in_out(site, dtypes, &x.src, &x.dst, x.num_active_partitions)?;
        let step = x.mask_step.map(|s| s as i16);
        same_count(site, ("src", &src), ("dst", &dst))?;
        let f = free_len(site, "src", &src)?;
        let count: u64 = x.mask_num.iter().map(|&n| u64::from(n)).product();
        if count != f as u64 {
            return Err(Fault::exec(
                site,
                format!("the mask ramp has {count} elements, `src` {f} per partition"),
            ));
        }
        if x.fill_mode.0 > 3 {
            return Err(Fault::exec(
                site,
                format!(
                    "fill_mode {} is not an AFFINE_SELECT_CMP value (0..=3)",
                    x.fill_mode.0
                ),
            ));
        }
        let fill_bits = self.regs[site.engine as usize]
            .get(x.fill_reg as usize)
            .copied()
            .ok_or_else(|| Fault::exec(site, format!("register {} does not exist", x.fill_reg)))?;
        for (w, fm) in [("in", input), ("out", out)] {
            unpacked(site, w, fm)?;
        }
        let (rs, rd) = (
            self.operand(site, "src", &src)?,
            self.operand(site, "dst", &dst)?,
        );
        let fill = cast::from_f32(out, f32::from_bits(fill_bits), &CastPolicy::DEVICE);
        let xs = containers(&self.chip.gather(&rs), input.container_bytes());
        let mut res = Vec::with_capacity(xs.len());
        for (p, row) in xs.chunks_exact(f).enumerate() {
            let start = x
                .mask_base
                .wrapping_add((p as i32).wrapping_mul(x.channel_multiplier));
            for (k, &c) in row.iter().enumerate() {
                let mut rest = k;
                let mut m = start;
                for (&s, &n) in step.iter().zip(&x.mask_num) {
                    let n = usize::from(n);
                    m = m.wrapping_add(((rest % n) as i32).wrapping_mul(i32::from(s)));
                    rest /= n;
                }
                let pass = match x.fill_mode.0 {
                    0 => m > 0,
                    1 => m >= 0,
                    2 => m == 0,
                    _ => m != 0,
                };
                res.push(if pass { convert(input, out, c) } else { fill });
            }
        }
        self.chip
            .scatter(&rd, &to_bytes(&res, out.container_bytes()));
        self.note_project_defined(notes::AFFINE_SELECT);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::numerics::alu::ElementOp;
    use tpbsim_isa::Gen;

    #[test]
    fn comparisons_agree_with_the_alu() {
        let ctx = alu::AluContext::new(Gen::V3, Engine::Dve);
        let vals = [
            -1.5f32,
            -0.0,
            0.0,
            1.0,
            2.5,
            f32::INFINITY,
            f32::NAN,
            -f32::MAX,
        ];
        for op in 0x12..=0x16u8 {
            let alu_op = ctx.fp_op(AluOp::from_wire(op).unwrap()).unwrap();
            for &a in &vals {
                for &b in &vals {
                    let mut keep = [true];
                    compare_into(op, &[a], b, &mut keep);
                    assert_eq!(keep[0], alu_op.apply(a, b) != 0.0, "op {op:#x} {a} {b}");
                }
            }
        }
    }
}
