//! Execution of the data-movement, predication and MX operations: Iota, CopyPredicated /
//! CastPredicated, CopyPredScalar, TransposeTensorReduce and QuantizeMx (the MX matmul pair lives
//! with the dense matmul in [`super::exec`]). Operand readings that the public layouts leave open
//! are documented in `docs/machine.md` ("Project-defined operand readings").

use tpbsim_isa::{Addr4Kind, MxMemPattern1d};

use super::core::Machine;
use super::exec::{is_int, narrow, same_count, tile, widen, ScalarSrc};
use super::fault::{Fault, Site};
use super::geometry::Space;
use super::pattern::{Dim, TensorPattern};
use crate::numerics::act;
use crate::numerics::alu::{self, AluOp};
use crate::numerics::cast::{self, CastPolicy};
use crate::numerics::mx::{self, MxConfig, MxShape, BLOCK_PARTITIONS};
use crate::numerics::pe;
use crate::numerics::reduce::{self, AccumCmd, ReduceAxes};
use crate::numerics::Format;

/// Element containers of `bytes` (`n` bytes each, little-endian) as integers.
pub(super) fn containers(bytes: &[u8], n: usize) -> Vec<u64> {
    bytes
        .chunks_exact(n)
        .map(|c| {
            let mut b = [0u8; 8];
            b[..n].copy_from_slice(c);
            u64::from_le_bytes(b)
        })
        .collect()
}

/// The inverse of [`containers`].
pub(super) fn to_bytes(vals: &[u64], n: usize) -> Vec<u8> {
    let mut out = Vec::with_capacity(vals.len() * n);
    for v in vals {
        out.extend_from_slice(&v.to_le_bytes()[..n]);
    }
    out
}

pub(super) fn unpacked(site: Site, what: &str, f: Format) -> Result<(), Fault> {
    if f.lanes() != 1 {
        return Err(Fault::exec(
            site,
            format!(
                "`{what}` in the packed format {} is not simulated here",
                f.name()
            ),
        ));
    }
    Ok(())
}

/// The packed ×4 form an MX instruction's element dtype tag stands for (the tag names the
/// element: FP8_EXP4 0x0E, FP8_EXP5 0x0F; FP4_EXP2 0x10 already reads as the packed form).
pub(crate) fn mx_packed(f: Format) -> Format {
    match f {
        Format::Float8E4m3fn | Format::Float8E4m3 => Format::Float8E4m3fnX4,
        Format::Float8E5m2 => Format::Float8E5m2X4,
        Format::Float4E2m1fn => Format::Float4E2m1fnX4,
        other => other,
    }
}

/// The data and scale patterns of an MXMEM_PATTERN1D operand of `partitions` partitions and
/// `lanes` ×4 containers per partition (project-defined reading, see `docs/machine.md`).
pub struct MxPatterns {
    /// Packed data: `partitions` × `lanes` containers.
    pub data: TensorPattern,
    /// Interleaved scale buffer: one byte per container lane in each scale-row partition.
    pub scale: TensorPattern,
}

impl Machine<'_> {
    /// Read an MXMEM_PATTERN1D: `k` must be the contraction length `4 × partitions`, the step
    /// sign ascending, both addresses immediates, and `scale_partition` the partition of the scale
    /// address.
    pub(crate) fn mx_patterns(
        &self,
        site: Site,
        name: &str,
        mx: &MxMemPattern1d,
        partitions: u8,
        lanes: u32,
        format: Format,
    ) -> Result<MxPatterns, Fault> {
        let fail = |m: String| Err(Fault::exec(site, format!("operand `{name}`: {m}")));
        if mx::emax(format).is_none() {
            return fail(format!("{} is not an MX element format", format.name()));
        }
        for (what, a) in [("data", mx.data), ("scale", mx.scale)] {
            if a.kind() != Addr4Kind::Imm {
                return Err(Fault::NotSimulated {
                    site,
                    name: format!("operand `{name}.{what}` with ADDR4 form {:?}", a.kind()),
                    engine: site.engine,
                });
            }
        }
        let p = u32::from(partitions);
        if p == 0 || p % BLOCK_PARTITIONS as u32 != 0 {
            return fail(format!(
                "{p} partitions are not whole 8-partition MX blocks"
            ));
        }
        if u32::from(mx.k) != 4 * p {
            return fail(format!(
                "K = {} elements, but {p} partitions of ×4 containers hold K = {}",
                mx.k,
                4 * p
            ));
        }
        if mx.step_sign != 1 {
            return Err(Fault::NotSimulated {
                site,
                name: format!("operand `{name}` with step sign 0x{:02x}", mx.step_sign),
                engine: site.engine,
            });
        }
        let scale_addr = mx.scale.address();
        let located = self.chip.geom.locate(scale_addr);
        if located.space != Space::Sbuf {
            return fail(format!("scale address 0x{scale_addr:08x} is not in SBUF"));
        }
        if u32::from(mx.scale_partition) != located.partition {
            return fail(format!(
                "scale_partition {} differs from the scale address's partition {}",
                mx.scale_partition, located.partition
            ));
        }
        if lanes == 0 {
            return fail("0 containers per partition".into());
        }
        let rows = (p as usize) / BLOCK_PARTITIONS;
        let slots = mx::scale_slot(rows - 1) + 1;
        Ok(MxPatterns {
            data: TensorPattern::new(
                mx.data.address(),
                p,
                format.container_bytes() as u32,
                &[Dim::new(1, lanes)],
            ),
            scale: TensorPattern::new(scale_addr, slots as u32, 1, &[Dim::new(1, lanes)]),
        })
    }

    /// Iota (0x7E): `dst[p][i] = start + p × F + i` over the tile's `F` elements per partition
    /// (row-major index), in wrapping int32, then written in the destination format (integers
    /// truncated to their width, floats converted from the integer with RNE).
    pub fn exec_iota(
        &mut self,
        site: Site,
        start: u32,
        out: Format,
        dst: &TensorPattern,
    ) -> Result<(), Fault> {
        unpacked(site, "dst", out)?;
        let rd = self.operand(site, "dst", dst)?;
        let shape = tile(site, dst)?;
        let d = shape.free_dims();
        let iota = alu::Iota {
            base: start as i32,
            channel_multiplier: shape.free_len() as i32,
            steps: [
                1,
                d[0] as i32,
                (d[0] * d[1]) as i32,
                (d[0] * d[1] * d[2]) as i32,
            ],
        };
        let mut v = vec![0i32; shape.len()];
        alu::iota(iota, shape, &mut v).map_err(|e| Fault::exec(site, e.to_string()))?;
        if is_int(out) {
            Self::check_int(site, out)?;
            let u: Vec<u32> = v.iter().map(|&x| x as u32).collect();
            self.chip.scatter(&rd, &narrow(&u, out));
            Ok(())
        } else {
            let f: Vec<f32> = v.iter().map(|&x| x as f32).collect();
            self.store_f32(site, &rd, out, &f, &CastPolicy::DEVICE)
        }
    }

    /// CopyPredicated (0x72, `cast` false) / CastPredicated (0x99, `cast` true): lanes whose
    /// predicate (an integer tile) is non-zero take `data` (bit for bit, or converted by the cast
    /// engine); the other lanes keep their old `dst` value.
    #[allow(clippy::too_many_arguments)]
    pub fn exec_predicated(
        &mut self,
        site: Site,
        cast: bool,
        pred_format: Format,
        data_format: Format,
        out: Format,
        pred: &TensorPattern,
        data: &TensorPattern,
        dst: &TensorPattern,
    ) -> Result<(), Fault> {
        same_count(site, ("predicate", pred), ("data", data))?;
        same_count(site, ("predicate", pred), ("dst", dst))?;
        if !is_int(pred_format) {
            return Err(Fault::exec(
                site,
                format!(
                    "predicate format {} is not an integer format",
                    pred_format.name()
                ),
            ));
        }
        Self::check_int(site, pred_format)?;
        for (w, f) in [("data", data_format), ("dst", out)] {
            unpacked(site, w, f)?;
        }
        if !cast && data_format != out {
            return Err(Fault::exec(
                site,
                format!(
                    "CopyPredicated moves bits: data format {} differs from dst format {}",
                    data_format.name(),
                    out.name()
                ),
            ));
        }
        let (rp, rs, rd) = (
            self.operand(site, "predicate", pred)?,
            self.operand(site, "data", data)?,
            self.operand(site, "dst", dst)?,
        );
        let mask = widen(&self.chip.gather(&rp), pred_format);
        let n = out.container_bytes();
        let mut cur = containers(&self.chip.gather(&rd), n);
        let err = |e: alu::AluError| Fault::exec(site, e.to_string());
        if cast && data_format != out {
            let x = self.load_f32(site, &rs, data_format)?;
            let policy = CastPolicy::REFERENCE;
            alu::cast_predicated(&mask, &x, &mut cur, |v| cast::from_f32(out, v, &policy))
                .map_err(err)?;
        } else {
            let src = containers(&self.chip.gather(&rs), n);
            alu::copy_predicated(&mask, &src, &mut cur).map_err(err)?;
        }
        self.chip.scatter(&rd, &to_bytes(&cur, n));
        Ok(())
    }

    /// CopyPredScalar (0xE8): lanes whose mask is non-zero take the scalar (the low byte of its
    /// encoding in `src_format`, converted to `out`); the other lanes keep their old value, or
    /// with `false_fill` become zero (a select between the scalar and zero).
    #[allow(clippy::too_many_arguments)]
    pub fn exec_copy_pred_scalar(
        &mut self,
        site: Site,
        scalar: u8,
        false_fill: bool,
        mask_format: Format,
        src_format: Format,
        out: Format,
        mask: &TensorPattern,
        dst: &TensorPattern,
    ) -> Result<(), Fault> {
        same_count(site, ("mask", mask), ("dst", dst))?;
        if !is_int(mask_format) {
            return Err(Fault::exec(
                site,
                format!(
                    "mask format {} is not an integer format",
                    mask_format.name()
                ),
            ));
        }
        Self::check_int(site, mask_format)?;
        for (w, f) in [("src", src_format), ("dst", out)] {
            unpacked(site, w, f)?;
        }
        let (rm, rd) = (
            self.operand(site, "mask", mask)?,
            self.operand(site, "dst", dst)?,
        );
        let value = if src_format == out {
            u64::from(scalar)
        } else if is_int(src_format) && is_int(out) {
            Self::check_int(site, src_format)?;
            let w = widen(
                &[scalar, 0, 0, 0][..src_format.container_bytes()],
                src_format,
            );
            u64::from(w[0]) & (u64::MAX >> (64 - 8 * out.container_bytes()))
        } else {
            let x = cast::to_f32(src_format, u64::from(scalar));
            cast::from_f32(out, x, &CastPolicy::DEVICE)
        };
        let m = widen(&self.chip.gather(&rm), mask_format);
        let n = out.container_bytes();
        let fill = vec![value; m.len()];
        let err = |e: alu::AluError| Fault::exec(site, e.to_string());
        let mut cur = if false_fill {
            vec![0u64; m.len()]
        } else {
            containers(&self.chip.gather(&rd), n)
        };
        if false_fill {
            let zeros = vec![0u64; m.len()];
            alu::select(&m, &fill, &zeros, &mut cur).map_err(err)?;
        } else {
            alu::copy_predicated(&m, &fill, &mut cur).map_err(err)?;
        }
        self.chip.scatter(&rd, &to_bytes(&cur, n));
        Ok(())
    }

    /// TransposeTensorReduce (0x83 arith / 0x84 bitvec): the `[P, M]` result of folding the
    /// innermost `op_dim` free dims (no folding when `op_dim` is UNUSED, `M` = the free size) is
    /// written transposed: `dst` covers `M` partitions (whatever its own partition count says) of
    /// `P` elements.
    #[allow(clippy::too_many_arguments)]
    pub fn exec_transpose_reduce(
        &mut self,
        site: Site,
        op: u8,
        negated: bool,
        op_dim: u8,
        input: Format,
        out: Format,
        src: &TensorPattern,
        dst: &TensorPattern,
    ) -> Result<(), Fault> {
        let rs = self.operand(site, "src", src)?;
        let shape = tile(site, src)?;
        let err = |e: alu::AluError| Fault::exec(site, e.to_string());
        let p = shape.partitions();
        let fold = if op_dim == 0 {
            None
        } else {
            Some(ReduceAxes::from_subdim(op_dim).map_err(err)?)
        };
        let m = fold.map_or(shape.free_len(), |a| a.split(shape).1);
        // The destination spans the transposed partition count, not `num_active_channels`.
        let dst = &TensorPattern {
            partitions: m as u32,
            ..*dst
        };
        if dst.elems_per_partition() as usize != p {
            return Err(Fault::exec(
                site,
                format!(
                    "the transposed result is {m} partitions × {p} elements, `dst` is {} × {}",
                    dst.partitions,
                    dst.elems_per_partition()
                ),
            ));
        }
        unpacked(site, "src", input)?;
        unpacked(site, "dst", out)?;
        let rd = self.operand(site, "dst", dst)?;
        if fold.is_none() && input == out {
            let n = out.container_bytes();
            let v = containers(&self.chip.gather(&rs), n);
            let mut t = vec![0u64; v.len()];
            pe::transpose(&v, p, m, &mut t).map_err(|e| Fault::exec(site, e.to_string()))?;
            self.chip.scatter(&rd, &to_bytes(&t, n));
            return Ok(());
        }
        let alu_op = AluOp::from_wire(op).map_err(err)?;
        if self.int_datapath(site.engine, &[input, out]) {
            Self::check_int(site, input)?;
            Self::check_int(site, out)?;
            let x = widen(&self.chip.gather(&rs), input);
            let r = match fold {
                Some(axes) => {
                    let iop = self
                        .ctx(site.engine)
                        .int_op(alu_op, super::exec::signedness(&[input]))
                        .map_err(err)?;
                    let mut r = vec![0u32; p * m];
                    reduce::tensor_reduce(iop, negated, shape, axes, &x, &mut r).map_err(err)?;
                    r
                }
                None => x,
            };
            let mut t = vec![0u32; r.len()];
            pe::transpose(&r, p, m, &mut t).map_err(|e| Fault::exec(site, e.to_string()))?;
            self.chip.scatter(&rd, &narrow(&t, out));
            Ok(())
        } else {
            let x = self.load_f32(site, &rs, input)?;
            let r = match fold {
                Some(axes) => {
                    let fop = self.ctx(site.engine).fp_op(alu_op).map_err(err)?;
                    let mut r = vec![0f32; p * m];
                    reduce::tensor_reduce(fop, negated, shape, axes, &x, &mut r).map_err(err)?;
                    r
                }
                None => x,
            };
            let mut t = vec![0f32; r.len()];
            pe::transpose(&r, p, m, &mut t).map_err(|e| Fault::exec(site, e.to_string()))?;
            self.store_f32(site, &rd, out, &t, &CastPolicy::DEVICE)
        }
    }

    /// QuantizeMx (0xE3): the `[P, F]` source tile quantized by the MX model into packed ×4
    /// containers (`P` partitions × `F / 4`) and the interleaved E8M0 scale buffer.
    pub fn exec_quantize_mx(
        &mut self,
        site: Site,
        input: Format,
        data_format: Format,
        src: &TensorPattern,
        dst: &MxPatterns,
    ) -> Result<(), Fault> {
        let shape = MxShape {
            partitions: src.partitions as usize,
            free: src.elems_per_partition() as usize,
        };
        let lanes = data_format.lanes() as u64;
        if shape.free as u64 != lanes * dst.data.elems_per_partition() {
            return Err(Fault::exec(
                site,
                format!(
                    "source has {} elements per partition, the MX destination {} containers of {lanes}",
                    shape.free,
                    dst.data.elems_per_partition()
                ),
            ));
        }
        let (rs, rd, rsc) = (
            self.operand(site, "src", src)?,
            self.operand(site, "dst.data", &dst.data)?,
            self.operand(site, "dst.scale", &dst.scale)?,
        );
        let x = self.chip.gather(&rs);
        let mut data = vec![0u8; rd.total_bytes() as usize];
        let mut scales = self.chip.gather(&rsc);
        mx::quantize(
            &x,
            input,
            shape,
            data_format,
            &mut data,
            &mut scales,
            &MxConfig::default(),
        )
        .map_err(|e| Fault::exec(site, e.to_string()))?;
        self.chip.scatter(&rd, &data);
        self.chip.scatter(&rsc, &scales);
        Ok(())
    }

    /// Activate2 (0x25, v4+): `dst = f((src op0 s0) op1 s1)` in fp32 — the TensorScalar pair
    /// (reversible operands) ahead of the activation function — with the outputs of each
    /// partition folded by `reduce_op` into the ACT accumulators under `reduce_cmd`.
    pub fn exec_activate2(&mut self, site: Site, a: &Act2Args) -> Result<(), Fault> {
        same_count(site, ("src", &a.src), ("dst", &a.dst))?;
        let (rs, rd) = (
            self.operand(site, "src", &a.src)?,
            self.operand(site, "dst", &a.dst)?,
        );
        let shape = tile(site, &a.src)?;
        let err = |e: alu::AluError| Fault::exec(site, e.to_string());
        let ctx = self.ctx(site.engine);
        let (op0, op1) = (
            ctx.fp_op(AluOp::from_wire(a.op0).map_err(err)?)
                .map_err(err)?,
            ctx.fp_op(AluOp::from_wire(a.op1).map_err(err)?)
                .map_err(err)?,
        );
        let rev = alu::Reverse::from_wire(a.reverse).map_err(err)?;
        let func =
            act::ActFunction::from_wire(a.func).map_err(|e| Fault::exec(site, e.to_string()))?;
        let cmd = match a.reduce_cmd {
            0 => AccumCmd::Idle,
            1 => AccumCmd::Zero,
            2 => AccumCmd::Accumulate,
            3 => AccumCmd::ZeroAccumulate,
            c => {
                return Err(Fault::exec(
                    site,
                    format!("reduce_cmd {c} is not a REDUCE_CMD value"),
                ))
            }
        };
        let (s0, s1) = (
            self.scalar_f32(site, "imm0", a.s0, &a.src)?,
            self.scalar_f32(site, "imm1", a.s1, &a.src)?,
        );
        let x = self.load_f32(site, &rs, a.input)?;
        let mut t = vec![0f32; x.len()];
        alu::tensor_scalar(
            op0,
            s0.as_scalar(),
            op1,
            s1.as_scalar(),
            rev,
            shape,
            &x,
            &mut t,
        )
        .map_err(err)?;
        let mut out = vec![0f32; x.len()];
        act::activate(
            &act::ClosedForm,
            func,
            shape,
            &t,
            alu::Scalar::Imm(1.0),
            alu::Scalar::Imm(0.0),
            f32::from_bits(a.alpha),
            &mut out,
            None,
        )
        .map_err(|e| Fault::exec(site, e.to_string()))?;
        if cmd != AccumCmd::Idle {
            let rop = ctx
                .fp_op(AluOp::from_wire(a.reduce_op).map_err(err)?)
                .map_err(err)?;
            let f = shape.free_len();
            for (p, row) in out.chunks_exact(f).enumerate() {
                self.engines
                    .act_acc
                    .fold(cmd, rop, p, None, row)
                    .map_err(|e| Fault::exec(site, e.to_string()))?;
            }
        }
        self.store_f32(site, &rd, a.out, &out, &CastPolicy::REFERENCE)
    }
}

/// Activate2 (0x25) operands.
#[derive(Clone, Copy, Debug)]
pub struct Act2Args {
    /// Wire function code.
    pub func: u8,
    /// First ALU op.
    pub op0: u8,
    /// Second ALU op.
    pub op1: u8,
    /// First scalar.
    pub s0: ScalarSrc,
    /// Second scalar.
    pub s1: ScalarSrc,
    /// Reverse byte (bit 0 op0, bit 1 op1).
    pub reverse: u8,
    /// Function parameter (fp32 bits).
    pub alpha: u32,
    /// REDUCE_CMD byte.
    pub reduce_cmd: u8,
    /// Fold op of the accumulators.
    pub reduce_op: u8,
    /// Input format.
    pub input: Format,
    /// Output format.
    pub out: Format,
    /// Source.
    pub src: TensorPattern,
    /// Destination.
    pub dst: TensorPattern,
}

/// The three compute forms of the `S2S2D2_STT` layout (SelectReduce 0xEA, the fourth, lives in
/// [`super::select`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SttKind {
    /// 0x9D SCALAR_TENSOR_TENSOR_ARITH: general arithmetic ops.
    Arith,
    /// 0x9E SCALAR_TENSOR_TENSOR_BITVEC: general bit-vector ops on integer bit patterns.
    Bitvec,
    /// 0xE5 TENSOR_TENSOR_SCAN_ARITH: the arith pair as a recurrence along the free elements.
    Scan,
}

impl SttKind {
    /// The form an opcode selects, if it is one of 0x9D / 0x9E / 0xE5.
    pub fn from_opcode(opcode: u8) -> Option<Self> {
        match opcode {
            0x9D => Some(SttKind::Arith),
            0x9E => Some(SttKind::Bitvec),
            0xE5 => Some(SttKind::Scan),
            _ => None,
        }
    }

    fn name(self) -> &'static str {
        match self {
            SttKind::Arith => "SCALAR_TENSOR_TENSOR_ARITH (0x9D)",
            SttKind::Bitvec => "SCALAR_TENSOR_TENSOR_BITVEC (0x9E)",
            SttKind::Scan => "TENSOR_TENSOR_SCAN_ARITH (0xE5)",
        }
    }
}

/// ScalarTensorTensor (0x9D / 0x9E) and TensorTensorScan (0xE5) operands.
#[derive(Clone, Copy, Debug)]
pub struct SttArgs {
    /// Which form.
    pub kind: SttKind,
    /// First ALU op byte (folds `src0` with the scalar, or with the carry for the scan).
    pub op0: u8,
    /// Second ALU op byte (folds the intermediate with `src1`).
    pub op1: u8,
    /// TENS_SCALAR_REV_OPS byte (bit 0 reverses op0, bit 1 reverses op1).
    pub reverse: u8,
    /// ACCUM_CMD byte.
    pub accumulate: u8,
    /// `imm0`: the broadcast scalar (the scan's initial value), an immediate or a pointer to
    /// one value per active partition.
    pub scalar: ScalarSrc,
    /// `imm0_dtype`.
    pub scalar_format: Format,
    /// `src0` format.
    pub in0: Format,
    /// `src1` format.
    pub in1: Format,
    /// Output format.
    pub out: Format,
    /// First source.
    pub src0: TensorPattern,
    /// Second source.
    pub src1: TensorPattern,
    /// Destination.
    pub dst: TensorPattern,
}

impl Machine<'_> {
    /// ScalarTensorTensor (0x9D arith / 0x9E bitvec): `dst = (src0 op0 s) op1 src1`, and
    /// TensorTensorScan (0xE5): per partition `r = (src0[i] op0 r) op1 src1[i]`, `dst[i] = r`,
    /// from `r = imm0`. Either op's operands swap under the reverse byte. The arith forms run
    /// on POOL's integer datapath when every operand is an integer, else (and always on the
    /// DVE) on the fp32 datapath; the bit-vector form applies its ops to the integer bit
    /// patterns.
    pub fn exec_scalar_tensor_tensor(&mut self, site: Site, a: &SttArgs) -> Result<(), Fault> {
        let name = a.kind.name();
        same_count(site, ("src0", &a.src0), ("src1", &a.src1))?;
        same_count(site, ("src0", &a.src0), ("dst", &a.dst))?;
        match (a.kind, a.accumulate) {
            (_, 0) => {}
            (SttKind::Arith, c) => {
                return Err(Fault::NotSimulated {
                    site,
                    name: format!(
                        "{name} with accumulator_cmd {c} (the fold op feeding the accumulators is not in the S2S2D2_STT layout and not published)"
                    ),
                    engine: site.engine,
                })
            }
            (_, c) => {
                return Err(Fault::exec(
                    site,
                    format!("{name}: accumulator_cmd is {c}; this form requires IDLE (0)"),
                ))
            }
        }
        let err = |e: alu::AluError| Fault::exec(site, e.to_string());
        let (op0, op1) = (
            AluOp::from_wire(a.op0).map_err(err)?,
            AluOp::from_wire(a.op1).map_err(err)?,
        );
        for (which, op) in [("op0", op0), ("op1", op1)] {
            let (ok, set) = match a.kind {
                SttKind::Bitvec => (op.is_general_bitvec(), "a general bit-vector op"),
                _ => (
                    op.is_general_arith(self.gen),
                    "a general arithmetic op of this generation",
                ),
            };
            if !ok {
                return Err(Fault::exec(
                    site,
                    format!("{name}: `{which}` {op} is not {set}"),
                ));
            }
        }
        let rev = alu::Reverse::from_wire(a.reverse).map_err(err)?;
        for (w, f) in [("in0", a.in0), ("in1", a.in1), ("out", a.out)] {
            unpacked(site, w, f)?;
        }
        let pointer = matches!(a.scalar, ScalarSrc::Pointer { .. });
        let mut formats = vec![a.in0, a.in1, a.out];
        if pointer {
            formats.push(a.scalar_format);
        }
        let (r0, r1, rd) = (
            self.operand(site, "src0", &a.src0)?,
            self.operand(site, "src1", &a.src1)?,
            self.operand(site, "dst", &a.dst)?,
        );
        let shape = tile(site, &a.src0)?;
        let shape = alu::TileShape::new(shape.partitions(), &[shape.free_len()]).map_err(err)?;
        let integer = match a.kind {
            SttKind::Bitvec => {
                if let Some(f) = formats.iter().find(|&&f| !is_int(f)) {
                    return Err(Fault::exec(
                        site,
                        format!("{name}: {} is not an integer format", f.name()),
                    ));
                }
                if a.in0 != a.out || a.in1 != a.out {
                    return Err(Fault::exec(
                        site,
                        format!(
                            "{name}: in0 {}, in1 {} and out {} must be one integer format",
                            a.in0.name(),
                            a.in1.name(),
                            a.out.name()
                        ),
                    ));
                }
                true
            }
            _ => {
                if !pointer && a.scalar_format != Format::Float32 {
                    return Err(Fault::exec(
                        site,
                        format!(
                            "{name}: an instruction immediate is FP32 (imm0_dtype is {})",
                            a.scalar_format.name()
                        ),
                    ));
                }
                // The DVE's v5 integer subset holds only integer-band ops, which the STT op
                // sets exclude: the DVE runs these forms in fp32 on every generation.
                site.engine == tpbsim_isa::Engine::Pool && self.int_datapath(site.engine, &formats)
            }
        };
        if integer {
            for &f in &formats {
                Self::check_int(site, f)?;
            }
            let sign = super::exec::signedness(&[a.in0, a.in1]);
            // Bit-vector ops are exact operations on the bit patterns, whatever integer lanes
            // run them; the arith ops go through the engine's integer ALU.
            let ctx = match a.kind {
                SttKind::Bitvec => alu::AluContext::new(self.gen, tpbsim_isa::Engine::Pool),
                _ => self.ctx(site.engine),
            };
            let (o0, o1) = (
                ctx.int_op(op0, sign).map_err(err)?,
                ctx.int_op(op1, sign).map_err(err)?,
            );
            let s = match a.scalar {
                ScalarSrc::Imm(bits) => {
                    self.note_project_defined(super::select::notes::STT_IMM);
                    let v = match a.kind {
                        SttKind::Bitvec => {
                            widen(&bits.to_le_bytes()[..a.out.container_bytes()], a.out)[0]
                        }
                        _ => {
                            let to = if sign == alu::Signedness::Unsigned {
                                Format::Uint32
                            } else {
                                Format::Int32
                            };
                            cast::from_f32(to, f32::from_bits(bits), &CastPolicy::DEVICE) as u32
                        }
                    };
                    super::exec::ScalarVals::Imm(v)
                }
                p => self.scalar_u32(site, "imm0", p, &a.src0)?,
            };
            let (x, y) = (
                widen(&self.chip.gather(&r0), a.in0),
                widen(&self.chip.gather(&r1), a.in1),
            );
            let mut out = vec![0u32; x.len()];
            stt_kernel(a.kind, o0, o1, s.as_scalar(), rev, shape, &x, &y, &mut out).map_err(err)?;
            self.chip.scatter(&rd, &narrow(&out, a.out));
        } else {
            let ctx = self.ctx(site.engine);
            let (o0, o1) = (ctx.fp_op(op0).map_err(err)?, ctx.fp_op(op1).map_err(err)?);
            let s = self.scalar_f32(site, "imm0", a.scalar, &a.src0)?;
            let (x, y) = (
                self.load_f32(site, &r0, a.in0)?,
                self.load_f32(site, &r1, a.in1)?,
            );
            let mut out = vec![0f32; x.len()];
            stt_kernel(a.kind, o0, o1, s.as_scalar(), rev, shape, &x, &y, &mut out).map_err(err)?;
            self.store_f32(site, &rd, a.out, &out, &CastPolicy::DEVICE)?;
        }
        if a.kind == SttKind::Scan {
            self.note_project_defined(super::select::notes::TT_SCAN);
        }
        Ok(())
    }
}

/// The element kernel of an S2S2D2_STT form on one datapath.
#[allow(clippy::too_many_arguments)]
fn stt_kernel<O: alu::ElementOp>(
    kind: SttKind,
    op0: O,
    op1: O,
    s: alu::Scalar<'_, O::V>,
    rev: alu::Reverse,
    shape: alu::TileShape,
    x: &[O::V],
    y: &[O::V],
    out: &mut [O::V],
) -> Result<(), alu::AluError> {
    match kind {
        SttKind::Scan => reduce::tensor_tensor_scan(op0, op1, rev, s, shape, x, y, out),
        _ => alu::scalar_tensor_tensor(op0, s, op1, rev, shape, x, y, out),
    }
}
