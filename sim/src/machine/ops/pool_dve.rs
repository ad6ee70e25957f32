//! POOL / DVE tensor operations: TensorTensor (0x41 / 0x51), TensorScalar (0x43 / 0x53),
//! TensorReduce (0x42 / 0x52) with Copy / Cast / Reciprocal (0x46..0x48) and
//! TransposeTensorReduce (0x83 / 0x84), Memset (0x49), Iota (0x7E), CopyPredicated /
//! CastPredicated (0x72 / 0x99), CopyPredScalar (0xE8), QuantizeMx (0xE3) and the S2S2D2_STT
//! compute forms ScalarTensorTensor (0x9D / 0x9E) and TensorTensorScan (0xE5).

use tpbsim_isa::{
    CopyPredScalar, Engine, Iota, Memset, Opcode, QuantizeMx, ScalarTensorTensor,
    ScalarTensorTensorSem as SttKind, TensorReduce, TensorReduceSem, TensorScalar, TensorScalarSem,
    TensorTensor, TensorTensorSem,
};

use super::{
    containers, integer_operand, is_int, mx_packed, narrow, not_simulated, same_count, signedness,
    tile, to_bytes, unpacked, widen, MxPatterns, ScalarSrc, ScalarVals,
};
use crate::machine::core::Machine;
use crate::machine::fault::{Fault, Site};
use crate::machine::pattern::{Resolved, TensorPattern};
use crate::numerics::alu::{self, AluOp, ElementOp, FpOp, IntOp, Reverse};
use crate::numerics::cast::{self, CastPolicy};
use crate::numerics::mx::{self, MxConfig, MxShape};
use crate::numerics::pe;
use crate::numerics::reduce::{self, ReduceAxes};
use tpbsim_isa::NumFormat;

/// A validated ALU op on the datapath an instruction runs on.
#[derive(Clone, Copy, Debug)]
pub(crate) enum DatapathOp {
    /// The 32-bit integer datapath.
    Int(IntOp),
    /// The fp32 datapath.
    Fp(FpOp),
}

/// A TensorTensor (0x41 / 0x51) with its formats (`in0`, `in1`, `out`), bounds-checked
/// operands (`src0`, `src1`, `dst`) and op decided.
#[derive(Clone, Debug)]
pub(crate) struct TensorTensorPlan {
    pub(crate) formats: [NumFormat; 3],
    pub(crate) operands: [Resolved; 3],
    pub(crate) op: DatapathOp,
}

/// The two ops of a TensorScalar, on the datapath it runs on.
#[derive(Clone, Copy, Debug)]
pub(crate) enum ScalarOps {
    /// The 32-bit integer datapath.
    Int(IntOp, IntOp),
    /// The fp32 datapath.
    Fp(FpOp, FpOp),
}

/// A TensorScalar (0x43 / 0x53) with its formats (`in`, `out`), scalar sources, `src`
/// pattern, bounds-checked `src` / `dst`, tile shape, ops and operand order decided.
#[derive(Clone, Debug)]
pub(crate) struct TensorScalarPlan {
    pub(crate) formats: [NumFormat; 2],
    pub(crate) scalars: [ScalarSrc; 2],
    pub(crate) src: TensorPattern,
    pub(crate) operands: [Resolved; 2],
    pub(crate) shape: alu::TileShape,
    pub(crate) ops: ScalarOps,
    pub(crate) rev: Reverse,
}

/// Element-wise unary data movement of the TensorReduce layout.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Unary {
    /// Copy (0x46) / Cast (0x47): value conversion through the cast engine.
    Copy,
    /// Reciprocal (0x48): `1 / x` in fp32.
    Reciprocal,
}

impl Machine<'_> {
    /// TensorTensor layout: 0x41 / 0x51 `dst = src0 op src1`; 0x72 / 0x99 predicated copy / cast.
    pub(crate) fn tensor_tensor(&mut self, site: Site, x: &TensorTensor) -> Result<(), Fault> {
        match TensorTensorSem::of(site.opcode) {
            Some(TensorTensorSem::Elementwise) => self.tensor_tensor_arith(site, x),
            Some(TensorTensorSem::Predicated) => self.predicated(site, x),
            Some(TensorTensorSem::NotSimulated) | None => Err(not_simulated(site)),
        }
    }

    /// TensorTensor (0x41 / 0x51): `dst = src0 op src1`.
    fn tensor_tensor_arith(&mut self, site: Site, x: &TensorTensor) -> Result<(), Fault> {
        let plan = self.tensor_tensor_plan(site, x)?;
        self.tensor_tensor_run(site, &plan)
    }

    /// Everything TensorTensor (0x41 / 0x51) decides before it touches memory: formats,
    /// bounds-checked operands (each through [`Machine::operand`], in order), the datapath and
    /// its op.
    pub(crate) fn tensor_tensor_plan(
        &self,
        site: Site,
        x: &TensorTensor,
    ) -> Result<TensorTensorPlan, Fault> {
        let (in0, in1) = (
            self.format(site, "in0", x.in_dtypes.lo())?,
            self.format(site, "in1", x.in_dtypes.hi())?,
        );
        let out = self.format(site, "out", x.out_dtype)?;
        let n = x.num_active_partitions;
        let src0 = self.pattern(site, "src0", &x.src0, n, in0)?;
        let src1 = self.pattern(site, "src1", &x.src1, n, in1)?;
        let dst = self.pattern(site, "dst", &x.dst, n, out)?;
        same_count(site, ("src0", &src0), ("src1", &src1))?;
        same_count(site, ("src0", &src0), ("dst", &dst))?;
        let (r0, r1, rd) = (
            self.operand(site, "src0", &src0)?,
            self.operand(site, "src1", &src1)?,
            self.operand(site, "dst", &dst)?,
        );
        let op = AluOp::from_wire(x.op.0).map_err(|e| Fault::exec(site, e.to_string()))?;
        let err = |e: alu::AluError| Fault::exec(site, e.to_string());
        let op = if self.int_datapath(site.engine, &[in0, in1, out]) {
            for f in [in0, in1, out] {
                Self::check_int(site, f)?;
            }
            DatapathOp::Int(
                self.ctx(site.engine)
                    .int_op(op, signedness(&[in0, in1]))
                    .map_err(err)?,
            )
        } else {
            DatapathOp::Fp(self.ctx(site.engine).fp_op(op).map_err(err)?)
        };
        Ok(TensorTensorPlan {
            formats: [in0, in1, out],
            operands: [r0, r1, rd],
            op,
        })
    }

    /// Execute a TensorTensor plan: read both sources, apply the op, write `dst`.
    pub(crate) fn tensor_tensor_run(
        &mut self,
        site: Site,
        plan: &TensorTensorPlan,
    ) -> Result<(), Fault> {
        let [in0, in1, out] = plan.formats;
        let [r0, r1, rd] = &plan.operands;
        let err = |e: alu::AluError| Fault::exec(site, e.to_string());
        match plan.op {
            DatapathOp::Int(iop) => {
                let (xs, ys) = (
                    widen(&self.chip.gather(r0), in0),
                    widen(&self.chip.gather(r1), in1),
                );
                let mut res = vec![0u32; xs.len()];
                alu::tensor_tensor(iop, &xs, &ys, &mut res).map_err(err)?;
                self.chip.scatter(rd, &narrow(&res, out));
            }
            DatapathOp::Fp(fop) => {
                if plan.formats == [NumFormat::Float32; 3]
                    && !fop.op().is_arg()
                    && alu::fp_rev_op!(fop.op(), false, |f| {
                        self.chip
                            .zip_rows_f32([r0, r1], rd, |_| (), |_, [a, b]| f(a, b))
                    })
                {
                    return Ok(());
                }
                let (mut xs, mut ys, mut res) = (self.take_buf(), self.take_buf(), self.take_buf());
                self.load_f32_into(site, r0, in0, &mut xs)?;
                self.load_f32_into(site, r1, in1, &mut ys)?;
                res.resize(xs.len(), 0.0);
                alu::tensor_tensor(fop, &xs, &ys, &mut res).map_err(err)?;
                self.store_f32(site, rd, out, &res, &CastPolicy::DEVICE)?;
                for b in [xs, ys, res] {
                    self.give_buf(b);
                }
            }
        }
        Ok(())
    }

    /// TensorScalar (0x43 / 0x53): `dst = (src op0 s0) op1 s1`, operands reversible.
    pub(crate) fn tensor_scalar(&mut self, site: Site, x: &TensorScalar) -> Result<(), Fault> {
        let plan = self.tensor_scalar_plan(site, x)?;
        self.tensor_scalar_run(site, &plan)
    }

    /// Everything TensorScalar (0x43 / 0x53) decides before it reads memory: formats, scalar
    /// sources, bounds-checked `src` / `dst` (through [`Machine::operand`], in order), tile
    /// shape, datapath, ops and operand order.
    pub(crate) fn tensor_scalar_plan(
        &self,
        site: Site,
        x: &TensorScalar,
    ) -> Result<TensorScalarPlan, Fault> {
        match TensorScalarSem::of(site.opcode) {
            Some(TensorScalarSem::Scalar) => {}
            Some(TensorScalarSem::NotSimulated) | None => return Err(not_simulated(site)),
        }
        let (input, out) = (
            self.format(site, "in", x.in_dtype)?,
            self.format(site, "out", x.out_dtype)?,
        );
        let n = x.num_active_partitions;
        let s0 = self.scalar(site, x.imm0_src, x.imm0, input)?;
        let s1 = self.scalar(site, x.imm1_src, x.imm1, input)?;
        let src = self.pattern(site, "src", &x.src, n, input)?;
        let dst = self.pattern(site, "dst", &x.dst, n, out)?;
        let (rs, rd, shape) = self.elementwise(site, &src, &dst)?;
        let err = |e: alu::AluError| Fault::exec(site, e.to_string());
        let (op0, op1) = (
            AluOp::from_wire(x.op0.0).map_err(err)?,
            AluOp::from_wire(x.op1.0).map_err(err)?,
        );
        let rev = Reverse::from_wire(x.reverse.into_bits()).map_err(err)?;
        let ops = if self.int_datapath(site.engine, &[input, out]) {
            Self::check_int(site, input)?;
            Self::check_int(site, out)?;
            let sign = signedness(&[input]);
            ScalarOps::Int(
                self.ctx(site.engine).int_op(op0, sign).map_err(err)?,
                self.ctx(site.engine).int_op(op1, sign).map_err(err)?,
            )
        } else {
            ScalarOps::Fp(
                self.ctx(site.engine).fp_op(op0).map_err(err)?,
                self.ctx(site.engine).fp_op(op1).map_err(err)?,
            )
        };
        Ok(TensorScalarPlan {
            formats: [input, out],
            scalars: [s0, s1],
            src,
            operands: [rs, rd],
            shape,
            ops,
            rev,
        })
    }

    /// Execute a TensorScalar plan: read the scalars and `src`, apply both ops, write `dst`.
    pub(crate) fn tensor_scalar_run(
        &mut self,
        site: Site,
        plan: &TensorScalarPlan,
    ) -> Result<(), Fault> {
        let [input, out] = plan.formats;
        let [s0, s1] = plan.scalars;
        let [rs, rd] = &plan.operands;
        let (src, shape, rev) = (&plan.src, plan.shape, plan.rev);
        let err = |e: alu::AluError| Fault::exec(site, e.to_string());
        match plan.ops {
            ScalarOps::Int(o0, o1) => {
                let (s0, s1) = (
                    self.scalar_u32(site, "imm0", s0, src)?,
                    self.scalar_u32(site, "imm1", s1, src)?,
                );
                let xs = widen(&self.chip.gather(rs), input);
                let mut res = vec![0u32; xs.len()];
                alu::tensor_scalar::<IntOp>(
                    o0,
                    s0.as_scalar(),
                    o1,
                    s1.as_scalar(),
                    rev,
                    shape,
                    &xs,
                    &mut res,
                )
                .map_err(err)?;
                self.chip.scatter(rd, &narrow(&res, out));
            }
            ScalarOps::Fp(o0, o1) => {
                let (s0, s1) = (
                    self.scalar_f32(site, "imm0", s0, src)?,
                    self.scalar_f32(site, "imm1", s1, src)?,
                );
                let parts = shape.partitions();
                if plan.formats == [NumFormat::Float32; 2]
                    && ![o0, o1].iter().any(|o| o.op().is_arg())
                    && s0.as_scalar().check("scalar0", parts).is_ok()
                    && s1.as_scalar().check("scalar1", parts).is_ok()
                {
                    let row = |p| (s0.at(p), s1.at(p));
                    let done = if (o1.op().wire(), rev.op1) == (0x00, false) {
                        // BYPASS: one op.
                        alu::fp_rev_op!(o0.op(), rev.op0, |f| {
                            self.chip
                                .zip_rows_f32([rs], rd, row, |&(a, _), [x]| f(x, a))
                        })
                    } else {
                        alu::fp_rev_op!(o0.op(), rev.op0, |f| {
                            self.chip.zip_rows_f32([rs], rd, row, |&(a, b), [x]| {
                                alu::apply_rev(o1, rev.op1, f(x, a), b)
                            })
                        })
                    };
                    if done {
                        return Ok(());
                    }
                }
                let (mut xs, mut res) = (self.take_buf(), self.take_buf());
                self.load_f32_into(site, rs, input, &mut xs)?;
                res.resize(xs.len(), 0.0);
                alu::tensor_scalar::<FpOp>(
                    o0,
                    s0.as_scalar(),
                    o1,
                    s1.as_scalar(),
                    rev,
                    shape,
                    &xs,
                    &mut res,
                )
                .map_err(err)?;
                self.store_f32(site, rd, out, &res, &CastPolicy::DEVICE)?;
                self.give_buf(xs);
                self.give_buf(res);
            }
        }
        Ok(())
    }

    /// TensorReduce layout: 0x42 / 0x52 reduce, 0x46 / 0x47 copy / cast, 0x48 reciprocal,
    /// 0x83 / 0x84 transposing reduce.
    pub(crate) fn tensor_reduce(&mut self, site: Site, x: &TensorReduce) -> Result<(), Fault> {
        let (src, dst) = match x {
            TensorReduce::V2(v) => (v.src, v.dst),
            TensorReduce::V4(v) => (v.src.0, v.dst.0),
        };
        let dtypes = (x.in_dtype(), x.out_dtype());
        let (input, out, src, dst) =
            self.in_out(site, dtypes, &src, &dst, x.num_active_channels())?;
        match TensorReduceSem::of(site.opcode) {
            Some(TensorReduceSem::Reduce) => self.reduce(site, x, input, out, &src, &dst),
            Some(TensorReduceSem::Copy) => self.unary(site, Unary::Copy, input, out, &src, &dst),
            Some(TensorReduceSem::Reciprocal) => {
                self.unary(site, Unary::Reciprocal, input, out, &src, &dst)
            }
            Some(TensorReduceSem::TransposeReduce) => {
                self.transpose_reduce(site, x, input, out, &src, &dst)
            }
            Some(TensorReduceSem::NotSimulated) | None => Err(not_simulated(site)),
        }
    }

    /// TensorReduce (0x42 / 0x52): fold the innermost `op_dim` free dims, optional negate.
    fn reduce(
        &mut self,
        site: Site,
        x: &TensorReduce,
        input: NumFormat,
        out: NumFormat,
        src: &TensorPattern,
        dst: &TensorPattern,
    ) -> Result<(), Fault> {
        let (rs, rd) = (
            self.operand(site, "src", src)?,
            self.operand(site, "dst", dst)?,
        );
        let shape = tile(site, src)?;
        let err = |e: alu::AluError| Fault::exec(site, e.to_string());
        let axes = ReduceAxes::from_subdim(x.op_dim().0).map_err(err)?;
        let n_out = reduce::reduced_len(shape, axes);
        if dst.partitions != src.partitions || dst.elems() as usize != n_out {
            return Err(Fault::exec(
                site,
                format!(
                    "reduction of `src` gives {n_out} elements, `dst` has {}",
                    dst.elems()
                ),
            ));
        }
        let op = AluOp::from_wire(x.op().0).map_err(err)?;
        if self.int_datapath(site.engine, &[input, out]) {
            Self::check_int(site, input)?;
            Self::check_int(site, out)?;
            let iop = self
                .ctx(site.engine)
                .int_op(op, signedness(&[input]))
                .map_err(err)?;
            let xs = widen(&self.chip.gather(&rs), input);
            let mut res = vec![0u32; n_out];
            reduce::tensor_reduce(iop, x.negated() != 0, shape, axes, &xs, &mut res)
                .map_err(err)?;
            self.chip.scatter(&rd, &narrow(&res, out));
        } else {
            let fop = self.ctx(site.engine).fp_op(op).map_err(err)?;
            let xs = self.load_f32(site, &rs, input)?;
            let mut res = vec![0f32; n_out];
            reduce::tensor_reduce(fop, x.negated() != 0, shape, axes, &xs, &mut res)
                .map_err(err)?;
            self.store_f32(site, &rd, out, &res, &CastPolicy::DEVICE)?;
        }
        Ok(())
    }

    /// Copy / Cast / Reciprocal.
    fn unary(
        &mut self,
        site: Site,
        kind: Unary,
        input: NumFormat,
        out: NumFormat,
        src: &TensorPattern,
        dst: &TensorPattern,
    ) -> Result<(), Fault> {
        same_count(site, ("src", src), ("dst", dst))?;
        let (rs, rd) = (
            self.operand(site, "src", src)?,
            self.operand(site, "dst", dst)?,
        );
        if kind == Unary::Copy && (input == out || self.int_datapath(site.engine, &[input, out])) {
            if input == out {
                let bytes = self.chip.gather(&rs);
                self.chip.scatter(&rd, &bytes);
            } else {
                Self::check_int(site, input)?;
                Self::check_int(site, out)?;
                let v = widen(&self.chip.gather(&rs), input);
                self.chip.scatter(&rd, &narrow(&v, out));
            }
            return Ok(());
        }
        let mut x = self.load_f32(site, &rs, input)?;
        if kind == Unary::Reciprocal {
            let div = self
                .ctx(site.engine)
                .fp_op(AluOp::DIVIDE)
                .map_err(|e| Fault::exec(site, e.to_string()))?;
            for v in &mut x {
                *v = div.apply(1.0, *v);
            }
        }
        // The cast unit of DVE/ACT rounds to nearest even; the POOL cast kernel, like the ALU
        // paths, converts float to int toward zero (docs/numerics.md §3).
        let policy = if kind == Unary::Copy && site.engine != Engine::Pool {
            CastPolicy::REFERENCE
        } else {
            CastPolicy::DEVICE
        };
        self.store_f32(site, &rd, out, &x, &policy)
    }

    /// Memset (0x49): every element of `dst` takes the encoding held in the low bytes of the
    /// fill value.
    pub(crate) fn memset(&mut self, site: Site, x: &Memset) -> Result<(), Fault> {
        if site.opcode != Opcode::MEMSET.0 {
            return Err(not_simulated(site));
        }
        let format = self.format(site, "dtype", x.dtype)?;
        let dst = self.pattern(site, "dst", &x.dst, x.num_active_channels, format)?;
        let fill = x.fill_value;
        let rd = self.operand(site, "dst", &dst)?;
        let n = format.container_bytes();
        if n > 4 {
            return Err(Fault::exec(
                site,
                format!(
                    "memset of {} (wider than the 32-bit fill value) is not simulated",
                    format.name()
                ),
            ));
        }
        let one = &fill.to_le_bytes()[..n];
        let data: Vec<u8> = one
            .iter()
            .copied()
            .cycle()
            .take(rd.total_bytes() as usize)
            .collect();
        self.chip.scatter(&rd, &data);
        Ok(())
    }

    /// Iota (0x7E): `dst[p][i] = start + p × F + i` over the tile's `F` elements per partition
    /// (row-major index), in wrapping int32, then written in the destination format (integers
    /// truncated to their width, floats converted from the integer with RNE).
    pub(crate) fn iota(&mut self, site: Site, x: &Iota) -> Result<(), Fault> {
        if x.src_band.iter().any(|&b| b != 0) {
            return Err(Fault::NotSimulated {
                site,
                name:
                    "Iota with a non-zero manual source band (+0x10..+0x1E, layout not published)"
                        .into(),
                engine: site.engine,
            });
        }
        let out = self.format(site, "out", x.out_dtype)?;
        let dst = self.pattern(site, "dst", &x.dst, x.num_active_channels, out)?;
        let start = x.start_value;
        unpacked(site, "dst", out)?;
        let rd = self.operand(site, "dst", &dst)?;
        let shape = tile(site, &dst)?;
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
    fn predicated(&mut self, site: Site, x: &TensorTensor) -> Result<(), Fault> {
        if x.op.0 != AluOp::BYPASS.wire() {
            return Err(Fault::exec(
                site,
                format!(
                    "predicated copy with ALU op 0x{:02x} (only BYPASS moves data)",
                    x.op.0
                ),
            ));
        }
        let (pred_format, data_format) = (
            self.format(site, "predicate", x.in_dtypes.lo())?,
            self.format(site, "data", x.in_dtypes.hi())?,
        );
        let out = self.format(site, "out", x.out_dtype)?;
        let n = x.num_active_partitions;
        let (pred, data, dst) = (
            self.pattern(site, "predicate", &x.src0, n, pred_format)?,
            self.pattern(site, "data", &x.src1, n, data_format)?,
            self.pattern(site, "dst", &x.dst, n, out)?,
        );
        let cast = site.opcode == Opcode::CAST_PREDICATED.0;
        same_count(site, ("predicate", &pred), ("data", &data))?;
        same_count(site, ("predicate", &pred), ("dst", &dst))?;
        integer_operand(site, "predicate", pred_format)?;
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
            self.operand(site, "predicate", &pred)?,
            self.operand(site, "data", &data)?,
            self.operand(site, "dst", &dst)?,
        );
        let mask = widen(&self.chip.gather(&rp), pred_format);
        let n = out.container_bytes();
        let mut cur = containers(&self.chip.gather(&rd), n);
        let err = |e: alu::AluError| Fault::exec(site, e.to_string());
        if cast && data_format != out {
            let xs = self.load_f32(site, &rs, data_format)?;
            let policy = CastPolicy::REFERENCE;
            alu::cast_predicated(&mask, &xs, &mut cur, |v| cast::from_f32(out, v, &policy))
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
    pub(crate) fn copy_pred_scalar(&mut self, site: Site, x: &CopyPredScalar) -> Result<(), Fault> {
        let mask_format = self.format(site, "mask", x.mask_dtype)?;
        let src_format = self.format(site, "src", x.src_dtype)?;
        let out = self.format(site, "out", x.out_dtype)?;
        let n = x.num_active_partitions;
        let (mask, dst) = (
            self.pattern(site, "mask", &x.mask, n, mask_format)?,
            self.pattern(site, "dst", &x.dst, n, out)?,
        );
        let false_fill = match x.use_false_fill {
            0 => false,
            1 => true,
            v => return Err(Fault::exec(site, format!("use_false_fill is {v} (0 or 1)"))),
        };
        let scalar = x.scalar;
        same_count(site, ("mask", &mask), ("dst", &dst))?;
        integer_operand(site, "mask", mask_format)?;
        for (w, f) in [("src", src_format), ("dst", out)] {
            unpacked(site, w, f)?;
        }
        let (rm, rd) = (
            self.operand(site, "mask", &mask)?,
            self.operand(site, "dst", &dst)?,
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
    fn transpose_reduce(
        &mut self,
        site: Site,
        x: &TensorReduce,
        input: NumFormat,
        out: NumFormat,
        src: &TensorPattern,
        dst: &TensorPattern,
    ) -> Result<(), Fault> {
        let (negated, op_dim) = (x.negated() != 0, x.op_dim().0);
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
        let alu_op = AluOp::from_wire(x.op().0).map_err(err)?;
        if self.int_datapath(site.engine, &[input, out]) {
            Self::check_int(site, input)?;
            Self::check_int(site, out)?;
            let xs = widen(&self.chip.gather(&rs), input);
            let r = match fold {
                Some(axes) => {
                    let iop = self
                        .ctx(site.engine)
                        .int_op(alu_op, signedness(&[input]))
                        .map_err(err)?;
                    let mut r = vec![0u32; p * m];
                    reduce::tensor_reduce(iop, negated, shape, axes, &xs, &mut r).map_err(err)?;
                    r
                }
                None => xs,
            };
            let mut t = vec![0u32; r.len()];
            pe::transpose(&r, p, m, &mut t).map_err(|e| Fault::exec(site, e.to_string()))?;
            self.chip.scatter(&rd, &narrow(&t, out));
            Ok(())
        } else {
            let xs = self.load_f32(site, &rs, input)?;
            let r = match fold {
                Some(axes) => {
                    let fop = self.ctx(site.engine).fp_op(alu_op).map_err(err)?;
                    let mut r = vec![0f32; p * m];
                    reduce::tensor_reduce(fop, negated, shape, axes, &xs, &mut r).map_err(err)?;
                    r
                }
                None => xs,
            };
            let mut t = vec![0f32; r.len()];
            pe::transpose(&r, p, m, &mut t).map_err(|e| Fault::exec(site, e.to_string()))?;
            self.store_f32(site, &rd, out, &t, &CastPolicy::DEVICE)
        }
    }

    /// QuantizeMx (0xE3): the `[P, F]` source tile quantized by the MX model into packed ×4
    /// containers (`P` partitions × `F / 4`) and the interleaved E8M0 scale buffer.
    pub(crate) fn quantize_mx(&mut self, site: Site, x: &QuantizeMx) -> Result<(), Fault> {
        let input = self.format(site, "in", x.in_dtype)?;
        let data_format = mx_packed(self.format(site, "out", x.out_dtype)?);
        let n = x.num_active_partitions;
        let src = self.pattern(site, "src", &x.src.0, n, input)?;
        let lanes = data_format.lanes() as u64;
        let free = src.elems_per_partition();
        if free % lanes != 0 {
            return Err(Fault::exec(
                site,
                format!("{free} source elements per partition are not whole ×{lanes} containers"),
            ));
        }
        let dst: MxPatterns =
            self.mx_patterns(site, "dst", &x.dst, n, (free / lanes) as u32, data_format)?;
        let shape = MxShape {
            partitions: src.partitions as usize,
            free: src.elems_per_partition() as usize,
        };
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
            self.operand(site, "src", &src)?,
            self.operand(site, "dst.data", &dst.data)?,
            self.operand(site, "dst.scale", &dst.scale)?,
        );
        let xs = self.chip.gather(&rs);
        let mut data = vec![0u8; rd.total_bytes() as usize];
        let mut scales = self.chip.gather(&rsc);
        mx::quantize(
            &xs,
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
}

// The three compute forms of the `S2S2D2_STT` layout are the spec's families of the
// `ScalarTensorTensor` format (`SttKind`, SelectReduce 0xEA, the fourth, lives in
// [`super::select`]): `Arith` general arithmetic ops, `Bitvec` general bit-vector ops on
// integer bit patterns, `Scan` the arith pair as a recurrence along the free elements.

impl Machine<'_> {
    /// ScalarTensorTensor (0x9D arith / 0x9E bitvec): `dst = (src0 op0 s) op1 src1`, and
    /// TensorTensorScan (0xE5): per partition `r = (src0[i] op0 r) op1 src1[i]`, `dst[i] = r`,
    /// from `r = imm0`. Either op's operands swap under the reverse byte. The arith forms run
    /// on POOL's integer datapath when every operand is an integer, else (and always on the
    /// DVE) on the fp32 datapath; the bit-vector form applies its ops to the integer bit
    /// patterns.
    pub(crate) fn scalar_tensor_tensor(
        &mut self,
        site: Site,
        x: &ScalarTensorTensor,
    ) -> Result<(), Fault> {
        let kind = SttKind::of(site.opcode).ok_or_else(|| not_simulated(site))?;
        let (in0, in1) = (
            self.format(site, "in0", x.in_dtypes.lo())?,
            self.format(site, "in1", x.in_dtypes.hi())?,
        );
        let out = self.format(site, "out", x.out_dtype)?;
        let scalar_format = self.format(site, "imm0", x.imm0_dtype)?;
        let n = x.num_active_partitions;
        let scalar = self.scalar(site, x.imm0_src, x.imm0, scalar_format)?;
        let src0 = self.pattern(site, "src0", &x.src0, n, in0)?;
        let src1 = self.pattern(site, "src1", &x.src1, n, in1)?;
        let dst = self.pattern(site, "dst", &x.dst, n, out)?;
        let name = format!("{} (0x{:02X})", Opcode(site.opcode), site.opcode);
        same_count(site, ("src0", &src0), ("src1", &src1))?;
        same_count(site, ("src0", &src0), ("dst", &dst))?;
        match (kind, x.accumulator_cmd.0) {
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
            AluOp::from_wire(x.op0.0).map_err(err)?,
            AluOp::from_wire(x.op1.0).map_err(err)?,
        );
        for (which, op) in [("op0", op0), ("op1", op1)] {
            let (ok, set) = match kind {
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
        let rev = alu::Reverse::from_wire(x.reverse).map_err(err)?;
        for (w, f) in [("in0", in0), ("in1", in1), ("out", out)] {
            unpacked(site, w, f)?;
        }
        let pointer = matches!(scalar, ScalarSrc::Pointer { .. });
        let mut formats = vec![in0, in1, out];
        if pointer {
            formats.push(scalar_format);
        }
        let (r0, r1, rd) = (
            self.operand(site, "src0", &src0)?,
            self.operand(site, "src1", &src1)?,
            self.operand(site, "dst", &dst)?,
        );
        let shape = tile(site, &src0)?;
        let shape = alu::TileShape::new(shape.partitions(), &[shape.free_len()]).map_err(err)?;
        let integer = match kind {
            SttKind::Bitvec => {
                if let Some(f) = formats.iter().find(|&&f| !is_int(f)) {
                    return Err(Fault::exec(
                        site,
                        format!("{name}: {} is not an integer format", f.name()),
                    ));
                }
                if in0 != out || in1 != out {
                    return Err(Fault::exec(
                        site,
                        format!(
                            "{name}: in0 {}, in1 {} and out {} must be one integer format",
                            in0.name(),
                            in1.name(),
                            out.name()
                        ),
                    ));
                }
                true
            }
            _ => {
                if !pointer && scalar_format != NumFormat::Float32 {
                    return Err(Fault::exec(
                        site,
                        format!(
                            "{name}: an instruction immediate is FP32 (imm0_dtype is {})",
                            scalar_format.name()
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
            let sign = signedness(&[in0, in1]);
            // Bit-vector ops are exact operations on the bit patterns, whatever integer lanes
            // run them; the arith ops go through the engine's integer ALU.
            let ctx = match kind {
                SttKind::Bitvec => alu::AluContext::new(self.gen, tpbsim_isa::Engine::Pool),
                _ => self.ctx(site.engine),
            };
            let (o0, o1) = (
                ctx.int_op(op0, sign).map_err(err)?,
                ctx.int_op(op1, sign).map_err(err)?,
            );
            let s = match scalar {
                ScalarSrc::Imm(bits) => {
                    self.note_project_defined(super::select::notes::STT_IMM);
                    let v = match kind {
                        SttKind::Bitvec => {
                            widen(&bits.to_le_bytes()[..out.container_bytes()], out)[0]
                        }
                        _ => {
                            let to = if sign == alu::Signedness::Unsigned {
                                NumFormat::Uint32
                            } else {
                                NumFormat::Int32
                            };
                            cast::from_f32(to, f32::from_bits(bits), &CastPolicy::DEVICE) as u32
                        }
                    };
                    ScalarVals::Imm(v)
                }
                p => self.scalar_u32(site, "imm0", p, &src0)?,
            };
            let (xs, ys) = (
                widen(&self.chip.gather(&r0), in0),
                widen(&self.chip.gather(&r1), in1),
            );
            let mut res = vec![0u32; xs.len()];
            stt_kernel(kind, o0, o1, s.as_scalar(), rev, shape, &xs, &ys, &mut res).map_err(err)?;
            self.chip.scatter(&rd, &narrow(&res, out));
        } else {
            let ctx = self.ctx(site.engine);
            let (o0, o1) = (ctx.fp_op(op0).map_err(err)?, ctx.fp_op(op1).map_err(err)?);
            let s = self.scalar_f32(site, "imm0", scalar, &src0)?;
            let (xs, ys) = (
                self.load_f32(site, &r0, in0)?,
                self.load_f32(site, &r1, in1)?,
            );
            let mut res = vec![0f32; xs.len()];
            stt_kernel(kind, o0, o1, s.as_scalar(), rev, shape, &xs, &ys, &mut res).map_err(err)?;
            self.store_f32(site, &rd, out, &res, &CastPolicy::DEVICE)?;
        }
        if kind == SttKind::Scan {
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
