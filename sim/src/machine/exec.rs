//! Execution of compute bundles on the numerics value models.
//!
//! Each operation takes its operands as access patterns and formats (filled in from the decoded
//! bundle by the dispatcher), bounds-checks every pattern, gathers the operand values, calls the
//! value model, and scatters the result. The executing engine chooses the datapath:
//!
//! * POOL with every operand an integer format runs the 32-bit integer datapath (two's-complement
//!   wrap, narrower results truncated to their width); everything else runs in fp32, operands
//!   widened exactly and results written through the cast engine with the device policy
//!   (float → int truncates toward zero and saturates).
//! * POOL cannot address PSUM: a POOL operand in PSUM is a fault.
//! * ALU ops that the engine's datapath does not have are faults (from the ALU model).

use tpbsim_isa::{Engine, Gen};

use super::core::Machine;
use super::fault::{Fault, Site};
use super::geometry::Space;
use super::pattern::{Dim, Resolved, TensorPattern};
use crate::numerics::act::{self, AccumulateInto, ActFunction, ClosedForm};
use crate::numerics::alu::{
    self, AluContext, AluOp, ElementOp, FpOp, IntOp, Reverse, Scalar, Signedness, TileShape,
};
use crate::numerics::cast::{from_f32_slice, to_f32_slice, CastPolicy};
use crate::numerics::pe::{self, Fp32Mode, MxOperand, PeMode, PsumFlags, ZeroRegion};
use crate::numerics::reduce::{self, AccumCmd, Accumulators, ReduceAxes};
use crate::numerics::{Format, Kind};

/// The stationary operand a LdWeights / LdWeightsMx left in the PE array.
#[derive(Clone, Debug, PartialEq)]
pub enum Stationary {
    /// Dense weights `[k, n]` widened to fp32, with the input format (for the fp32 passes).
    Dense {
        /// Values, row-major `[k][n]`.
        values: Vec<f32>,
        /// Contraction rows (partitions).
        k: usize,
        /// Columns.
        n: usize,
        /// Input format.
        format: Format,
    },
    /// An MX operand: packed data and its interleaved scale buffer.
    Mx {
        /// Packed ×4 format.
        format: Format,
        /// Partitions.
        partitions: usize,
        /// Containers per partition.
        lanes: usize,
        /// Data bytes.
        data: Vec<u8>,
        /// Scale buffer bytes.
        scales: Vec<u8>,
    },
}

/// Per-engine execution state beyond memory and registers.
#[derive(Clone, Debug, Default)]
pub struct EngineState {
    /// PE: the loaded stationary operand.
    pub stationary: Option<Stationary>,
    /// ACT accumulation registers.
    pub act_acc: Accumulators,
    /// DVE accumulation registers.
    pub dve_acc: Accumulators,
    /// ACT: the activation table set last selected by ActivationTableLoad.
    pub act_table_set: Option<u8>,
    /// Notes of the project-defined details the executed ops relied on
    /// ([`super::select::notes`]).
    pub project_defined: std::collections::BTreeSet<&'static str>,
}

/// A scalar operand: an immediate (its 32-bit encoding) or a pointer to one value per partition.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ScalarSrc {
    /// The immediate's bits (fp32 on the fp datapath, the integer on the integer datapath).
    Imm(u32),
    /// ADDR4 of a column of one value per active partition, in `format`.
    Pointer {
        /// Partition-folded start address (partition = first active partition).
        addr: u32,
        /// Element format.
        format: Format,
    },
}

/// TensorTensor (0x41 / 0x51): `dst = src0 op src1`.
#[derive(Clone, Copy, Debug)]
pub struct TtArgs {
    /// ALU op byte.
    pub op: u8,
    /// src0 format.
    pub in0: Format,
    /// src1 format.
    pub in1: Format,
    /// dst format.
    pub out: Format,
    /// First source.
    pub src0: TensorPattern,
    /// Second source.
    pub src1: TensorPattern,
    /// Destination.
    pub dst: TensorPattern,
}

/// TensorScalar (0x43 / 0x53): `dst = (src op0 s0) op1 s1`, operands reversible.
#[derive(Clone, Copy, Debug)]
pub struct TsArgs {
    /// First op byte.
    pub op0: u8,
    /// Second op byte.
    pub op1: u8,
    /// First scalar.
    pub s0: ScalarSrc,
    /// Second scalar.
    pub s1: ScalarSrc,
    /// Reverse byte.
    pub reverse: u8,
    /// Input format.
    pub input: Format,
    /// Output format.
    pub out: Format,
    /// Source.
    pub src: TensorPattern,
    /// Destination.
    pub dst: TensorPattern,
}

/// Activate (0x21): `dst = f(src × scale + bias)`, optionally accumulated.
#[derive(Clone, Copy, Debug)]
pub struct ActArgs {
    /// Wire function code.
    pub func: u8,
    /// Scale.
    pub scale: ScalarSrc,
    /// Bias.
    pub bias: ScalarSrc,
    /// Prelu parameter (fp32 bits).
    pub alpha: u32,
    /// ACCUM_CMD byte.
    pub accumulate: u8,
    /// Input format.
    pub input: Format,
    /// Output format.
    pub out: Format,
    /// Source.
    pub src: TensorPattern,
    /// Destination.
    pub dst: TensorPattern,
}

/// TensorReduce (0x42 / 0x52): fold the innermost `op_dim` free dims.
#[derive(Clone, Copy, Debug)]
pub struct ReduceArgs {
    /// Op byte.
    pub op: u8,
    /// Negate the result.
    pub negated: bool,
    /// TENSOR_SUBDIM byte.
    pub op_dim: u8,
    /// Input format.
    pub input: Format,
    /// Output format.
    pub out: Format,
    /// Source.
    pub src: TensorPattern,
    /// Destination.
    pub dst: TensorPattern,
}

/// Element-wise unary data movement.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Unary {
    /// Copy (0x46) / Cast (0x47): value conversion through the cast engine.
    Copy,
    /// Reciprocal (0x48): `1 / x` in fp32.
    Reciprocal,
}

/// PE matmul (0x02): moving tile × stationary into PSUM.
#[derive(Clone, Copy, Debug)]
pub struct MatmulArgs {
    /// Moving input format.
    pub input: Format,
    /// PE_FP32MODE byte.
    pub fp32_mode: u8,
    /// PSUM write flags.
    pub flags: PsumFlags,
    /// ZERO_REGION code (START clears this many bytes).
    pub zero_region: u8,
    /// PSUM element format (fp32, or bf16 on v4+).
    pub out: Format,
    /// Moving tile: K partitions × F elements.
    pub src: TensorPattern,
    /// PSUM destination: N partitions × F elements.
    pub dst: TensorPattern,
}

pub(super) fn is_int(f: Format) -> bool {
    f.kind() != Kind::Float
}

pub(super) fn signedness(formats: &[Format]) -> Signedness {
    if formats.iter().all(|f| f.kind() == Kind::Unsigned) {
        Signedness::Unsigned
    } else {
        Signedness::Signed
    }
}

/// The element shape of a pattern as the numerics models see it.
pub(super) fn tile(site: Site, p: &TensorPattern) -> Result<TileShape, Fault> {
    let free: Vec<usize> = if p.ndims == 0 {
        vec![1]
    } else {
        p.free_dims().iter().map(|d| d.num as usize).collect()
    };
    TileShape::new(p.partitions as usize, &free).map_err(|e| Fault::exec(site, e.to_string()))
}

pub(super) fn same_count(
    site: Site,
    a: (&str, &TensorPattern),
    b: (&str, &TensorPattern),
) -> Result<(), Fault> {
    if a.1.partitions != b.1.partitions || a.1.elems_per_partition() != b.1.elems_per_partition() {
        return Err(Fault::exec(
            site,
            format!(
                "`{}` has {} partitions × {} elements but `{}` has {} × {}",
                a.0,
                a.1.partitions,
                a.1.elems_per_partition(),
                b.0,
                b.1.partitions,
                b.1.elems_per_partition()
            ),
        ));
    }
    Ok(())
}

pub(super) fn widen(bytes: &[u8], f: Format) -> Vec<u32> {
    let n = f.container_bytes();
    bytes
        .chunks_exact(n)
        .map(|c| match (f.kind(), n) {
            (Kind::Signed, 1) => c[0] as i8 as i32 as u32,
            (Kind::Signed, 2) => i16::from_le_bytes([c[0], c[1]]) as i32 as u32,
            (_, 1) => c[0] as u32,
            (_, 2) => u16::from_le_bytes([c[0], c[1]]) as u32,
            _ => u32::from_le_bytes([c[0], c[1], c[2], c[3]]),
        })
        .collect()
}

pub(super) fn narrow(vals: &[u32], f: Format) -> Vec<u8> {
    let n = f.container_bytes();
    let mut out = Vec::with_capacity(vals.len() * n);
    for v in vals {
        out.extend_from_slice(&v.to_le_bytes()[..n]);
    }
    out
}

impl Machine<'_> {
    /// Bounds-check an operand and apply the engine's memory rules.
    pub(crate) fn operand(
        &self,
        site: Site,
        name: &str,
        p: &TensorPattern,
    ) -> Result<Resolved, Fault> {
        let r = self
            .chip
            .resolve(p)
            .map_err(|e| Fault::oob(site, name, e))?;
        self.check_operand(site, name, r.total_bytes())?;
        self.chip.note_operand(name, &r);
        self.chip.note_shape(p);
        if site.engine == Engine::Pool && r.space == Space::Psum {
            return Err(Fault::exec(
                site,
                format!(
                    "operand `{name}` is in PSUM (0x{:08x}), which POOL cannot address",
                    p.addr
                ),
            ));
        }
        Ok(r)
    }

    pub(super) fn load_f32(&self, site: Site, r: &Resolved, f: Format) -> Result<Vec<f32>, Fault> {
        if matches!(f, Format::Float32 | Format::Float32r) {
            // fp32 storage is the value's bits: no conversion pass.
            if let Some(v) = self.chip.gather_f32(r) {
                return Ok(v);
            }
        }
        let bytes = self.chip.gather(r);
        let n = bytes.len() / f.container_bytes() * f.lanes();
        let mut out = vec![0f32; n];
        to_f32_slice(&bytes, f, &mut out).map_err(|e| Fault::exec(site, e.to_string()))?;
        Ok(out)
    }

    pub(super) fn store_f32(
        &mut self,
        site: Site,
        r: &Resolved,
        f: Format,
        vals: &[f32],
        policy: &CastPolicy,
    ) -> Result<(), Fault> {
        #[cfg(target_endian = "little")]
        if f == Format::Float32 {
            // fp32 storage is the value's bits: no conversion pass.
            self.chip.scatter(r, bytemuck::cast_slice(vals));
            return Ok(());
        }
        let mut bytes = vec![0u8; vals.len() / f.lanes() * f.container_bytes()];
        from_f32_slice(vals, &mut bytes, f, policy)
            .map_err(|e| Fault::exec(site, e.to_string()))?;
        self.chip.scatter(r, &bytes);
        Ok(())
    }

    pub(super) fn check_int(site: Site, f: Format) -> Result<(), Fault> {
        if f.container_bytes() > 4 {
            return Err(Fault::exec(
                site,
                format!(
                    "{} operands on the 32-bit integer datapath are not simulated",
                    f.name()
                ),
            ));
        }
        Ok(())
    }

    /// One scalar per active partition (or an immediate), in fp32.
    pub(super) fn scalar_f32(
        &self,
        site: Site,
        name: &str,
        s: ScalarSrc,
        first: &TensorPattern,
    ) -> Result<ScalarVals<f32>, Fault> {
        match s {
            ScalarSrc::Imm(bits) => Ok(ScalarVals::Imm(f32::from_bits(bits))),
            ScalarSrc::Pointer { addr, format } => {
                let p = TensorPattern::new(
                    addr,
                    first.partitions,
                    format.container_bytes() as u32,
                    &[Dim::new(1, 1)],
                );
                let r = self.operand(site, name, &p)?;
                Ok(ScalarVals::Column(self.load_f32(site, &r, format)?))
            }
        }
    }

    pub(super) fn scalar_u32(
        &self,
        site: Site,
        name: &str,
        s: ScalarSrc,
        first: &TensorPattern,
    ) -> Result<ScalarVals<u32>, Fault> {
        match s {
            ScalarSrc::Imm(bits) => Ok(ScalarVals::Imm(bits)),
            ScalarSrc::Pointer { addr, format } => {
                Self::check_int(site, format)?;
                let p = TensorPattern::new(
                    addr,
                    first.partitions,
                    format.container_bytes() as u32,
                    &[Dim::new(1, 1)],
                );
                let r = self.operand(site, name, &p)?;
                Ok(ScalarVals::Column(widen(&self.chip.gather(&r), format)))
            }
        }
    }

    pub(super) fn ctx(&self, e: Engine) -> AluContext {
        AluContext::new(self.gen, e)
    }

    /// TensorTensor.
    pub fn exec_tensor_tensor(&mut self, site: Site, a: &TtArgs) -> Result<(), Fault> {
        same_count(site, ("src0", &a.src0), ("src1", &a.src1))?;
        same_count(site, ("src0", &a.src0), ("dst", &a.dst))?;
        let (r0, r1, rd) = (
            self.operand(site, "src0", &a.src0)?,
            self.operand(site, "src1", &a.src1)?,
            self.operand(site, "dst", &a.dst)?,
        );
        let op = AluOp::from_wire(a.op).map_err(|e| Fault::exec(site, e.to_string()))?;
        let err = |e: alu::AluError| Fault::exec(site, e.to_string());
        if self.int_datapath(site.engine, &[a.in0, a.in1, a.out]) {
            for f in [a.in0, a.in1, a.out] {
                Self::check_int(site, f)?;
            }
            let iop = self
                .ctx(site.engine)
                .int_op(op, signedness(&[a.in0, a.in1]))
                .map_err(err)?;
            let (x, y) = (
                widen(&self.chip.gather(&r0), a.in0),
                widen(&self.chip.gather(&r1), a.in1),
            );
            let mut out = vec![0u32; x.len()];
            alu::tensor_tensor(iop, &x, &y, &mut out).map_err(err)?;
            self.chip.scatter(&rd, &narrow(&out, a.out));
        } else {
            let fop = self.ctx(site.engine).fp_op(op).map_err(err)?;
            let (x, y) = (
                self.load_f32(site, &r0, a.in0)?,
                self.load_f32(site, &r1, a.in1)?,
            );
            let mut out = vec![0f32; x.len()];
            alu::tensor_tensor(fop, &x, &y, &mut out).map_err(err)?;
            self.store_f32(site, &rd, a.out, &out, &CastPolicy::DEVICE)?;
        }
        Ok(())
    }

    /// True when `e` runs these operand formats on its integer datapath.
    pub(super) fn int_datapath(&self, e: Engine, formats: &[Format]) -> bool {
        let all_int = formats.iter().all(|&f| is_int(f));
        all_int && (e == Engine::Pool || e == Engine::Dve && self.gen >= Gen::V5)
    }

    /// TensorScalar.
    pub fn exec_tensor_scalar(&mut self, site: Site, a: &TsArgs) -> Result<(), Fault> {
        same_count(site, ("src", &a.src), ("dst", &a.dst))?;
        let (rs, rd) = (
            self.operand(site, "src", &a.src)?,
            self.operand(site, "dst", &a.dst)?,
        );
        let shape = tile(site, &a.src)?;
        let err = |e: alu::AluError| Fault::exec(site, e.to_string());
        let (op0, op1) = (
            AluOp::from_wire(a.op0).map_err(err)?,
            AluOp::from_wire(a.op1).map_err(err)?,
        );
        let rev = Reverse::from_wire(a.reverse).map_err(err)?;
        if self.int_datapath(site.engine, &[a.input, a.out]) {
            Self::check_int(site, a.input)?;
            Self::check_int(site, a.out)?;
            let sign = signedness(&[a.input]);
            let (o0, o1) = (
                self.ctx(site.engine).int_op(op0, sign).map_err(err)?,
                self.ctx(site.engine).int_op(op1, sign).map_err(err)?,
            );
            let (s0, s1) = (
                self.scalar_u32(site, "imm0", a.s0, &a.src)?,
                self.scalar_u32(site, "imm1", a.s1, &a.src)?,
            );
            let x = widen(&self.chip.gather(&rs), a.input);
            let mut out = vec![0u32; x.len()];
            alu::tensor_scalar::<IntOp>(
                o0,
                s0.as_scalar(),
                o1,
                s1.as_scalar(),
                rev,
                shape,
                &x,
                &mut out,
            )
            .map_err(err)?;
            self.chip.scatter(&rd, &narrow(&out, a.out));
        } else {
            let (o0, o1) = (
                self.ctx(site.engine).fp_op(op0).map_err(err)?,
                self.ctx(site.engine).fp_op(op1).map_err(err)?,
            );
            let (s0, s1) = (
                self.scalar_f32(site, "imm0", a.s0, &a.src)?,
                self.scalar_f32(site, "imm1", a.s1, &a.src)?,
            );
            let x = self.load_f32(site, &rs, a.input)?;
            let mut out = vec![0f32; x.len()];
            alu::tensor_scalar::<FpOp>(
                o0,
                s0.as_scalar(),
                o1,
                s1.as_scalar(),
                rev,
                shape,
                &x,
                &mut out,
            )
            .map_err(err)?;
            self.store_f32(site, &rd, a.out, &out, &CastPolicy::DEVICE)?;
        }
        Ok(())
    }

    /// Activate on ACT.
    pub fn exec_activate(&mut self, site: Site, a: &ActArgs) -> Result<(), Fault> {
        same_count(site, ("src", &a.src), ("dst", &a.dst))?;
        let (rs, rd) = (
            self.operand(site, "src", &a.src)?,
            self.operand(site, "dst", &a.dst)?,
        );
        let shape = tile(site, &a.src)?;
        let func = ActFunction::from_wire(a.func).map_err(|e| Fault::exec(site, e.to_string()))?;
        let cmd =
            AccumCmd::from_wire(a.accumulate).map_err(|e| Fault::exec(site, e.to_string()))?;
        if cmd == AccumCmd::LoadAccumulate {
            return Err(Fault::exec(
                site,
                "LOAD_ACCUMULATE on Activate is not simulated (its seed operand is not published)",
            ));
        }
        let scale = self.scalar_f32(site, "scale", a.scale, &a.src)?;
        let bias = self.scalar_f32(site, "bias", a.bias, &a.src)?;
        let x = self.load_f32(site, &rs, a.input)?;
        let mut out = vec![0f32; x.len()];
        let acc = (cmd != AccumCmd::Idle).then_some(AccumulateInto {
            regs: &mut self.engines.act_acc,
            cmd,
            seed: None,
        });
        act::activate(
            &ClosedForm,
            func,
            shape,
            &x,
            scale.as_scalar(),
            bias.as_scalar(),
            f32::from_bits(a.alpha),
            &mut out,
            acc,
        )
        .map_err(|e| Fault::exec(site, e.to_string()))?;
        self.store_f32(site, &rd, a.out, &out, &CastPolicy::REFERENCE)
    }

    /// ReadAccumulator (ACT 0x24 / DVE 0x9B): one value per active partition into `dst`.
    pub fn exec_read_accumulator(
        &mut self,
        site: Site,
        negated: bool,
        out: Format,
        dst: &TensorPattern,
    ) -> Result<(), Fault> {
        if dst.elems_per_partition() != 1 {
            return Err(Fault::exec(
                site,
                format!(
                    "ReadAccumulator writes one element per partition, `dst` has {}",
                    dst.elems_per_partition()
                ),
            ));
        }
        let rd = self.operand(site, "dst", dst)?;
        let regs = if site.engine == Engine::Dve {
            &self.engines.dve_acc
        } else {
            &self.engines.act_acc
        };
        let mut vals = vec![0f32; dst.partitions as usize];
        regs.read(negated, &mut vals)
            .map_err(|e| Fault::exec(site, e.to_string()))?;
        self.store_f32(site, &rd, out, &vals, &CastPolicy::REFERENCE)
    }

    /// TensorReduce.
    pub fn exec_reduce(&mut self, site: Site, a: &ReduceArgs) -> Result<(), Fault> {
        let (rs, rd) = (
            self.operand(site, "src", &a.src)?,
            self.operand(site, "dst", &a.dst)?,
        );
        let shape = tile(site, &a.src)?;
        let err = |e: alu::AluError| Fault::exec(site, e.to_string());
        let axes = ReduceAxes::from_subdim(a.op_dim).map_err(err)?;
        let n_out = reduce::reduced_len(shape, axes);
        if a.dst.partitions != a.src.partitions || a.dst.elems() as usize != n_out {
            return Err(Fault::exec(
                site,
                format!(
                    "reduction of `src` gives {n_out} elements, `dst` has {}",
                    a.dst.elems()
                ),
            ));
        }
        let op = AluOp::from_wire(a.op).map_err(err)?;
        if self.int_datapath(site.engine, &[a.input, a.out]) {
            Self::check_int(site, a.input)?;
            Self::check_int(site, a.out)?;
            let iop = self
                .ctx(site.engine)
                .int_op(op, signedness(&[a.input]))
                .map_err(err)?;
            let x = widen(&self.chip.gather(&rs), a.input);
            let mut out = vec![0u32; n_out];
            reduce::tensor_reduce(iop, a.negated, shape, axes, &x, &mut out).map_err(err)?;
            self.chip.scatter(&rd, &narrow(&out, a.out));
        } else {
            let fop = self.ctx(site.engine).fp_op(op).map_err(err)?;
            let x = self.load_f32(site, &rs, a.input)?;
            let mut out = vec![0f32; n_out];
            reduce::tensor_reduce(fop, a.negated, shape, axes, &x, &mut out).map_err(err)?;
            self.store_f32(site, &rd, a.out, &out, &CastPolicy::DEVICE)?;
        }
        Ok(())
    }

    /// Copy / Cast / Reciprocal.
    pub fn exec_unary(
        &mut self,
        site: Site,
        kind: Unary,
        input: Format,
        out: Format,
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

    /// Memset: every element of `dst` takes the encoding held in the low bytes of `fill`.
    pub fn exec_memset(
        &mut self,
        site: Site,
        format: Format,
        fill: u32,
        dst: &TensorPattern,
    ) -> Result<(), Fault> {
        let rd = self.operand(site, "dst", dst)?;
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

    /// LdWeights: the `[k = partitions, n = elements]` tile becomes the stationary operand.
    pub fn exec_load_weights(
        &mut self,
        site: Site,
        format: Format,
        src: &TensorPattern,
    ) -> Result<(), Fault> {
        let r = self.operand(site, "src", src)?;
        let values = self.load_f32(site, &r, format)?;
        let (k, n) = (src.partitions as usize, src.elems_per_partition() as usize);
        self.engines.stationary = Some(Stationary::Dense {
            values,
            k,
            n,
            format,
        });
        Ok(())
    }

    /// LdWeightsMx: the packed MX tile and its scales become the stationary operand.
    pub fn exec_load_weights_mx(
        &mut self,
        site: Site,
        format: Format,
        data: &TensorPattern,
        scales: &TensorPattern,
    ) -> Result<(), Fault> {
        let (rd, rs) = (
            self.operand(site, "src.data", data)?,
            self.operand(site, "src.scale", scales)?,
        );
        let partitions = data.partitions as usize;
        let lanes = data.elems_per_partition() as usize;
        let (data, scales) = (self.chip.gather(&rd), self.chip.gather(&rs));
        self.engines.stationary = Some(Stationary::Mx {
            format,
            partitions,
            lanes,
            data,
            scales,
        });
        Ok(())
    }

    /// Matmul: `psum[n][f] (+)= Σ_k stationary[k][n] · moving[k][f]`.
    pub fn exec_matmul(&mut self, site: Site, a: &MatmulArgs) -> Result<(), Fault> {
        let Some(Stationary::Dense {
            values,
            k,
            n,
            format,
        }) = &self.engines.stationary
        else {
            return Err(Fault::exec(
                site,
                "Matmul without dense weights loaded by LdWeights",
            ));
        };
        let (k, n) = (*k, *n);
        let rs = self.operand(site, "src", &a.src)?;
        if a.src.partitions as usize != k {
            return Err(Fault::exec(
                site,
                format!(
                    "moving tile has {} partitions, the weights {k} rows",
                    a.src.partitions
                ),
            ));
        }
        let f = a.src.elems_per_partition() as usize;
        let mode = if a.input == Format::Float32 || *format == Format::Float32 {
            PeMode::Fp32(
                Fp32Mode::from_wire(a.fp32_mode).map_err(|e| Fault::exec(site, e.to_string()))?,
            )
        } else {
            PeMode::Plain
        };
        let moving = self.load_f32(site, &rs, a.input)?;
        let mut sum = vec![0f32; n * f];
        pe::matmul(mode, values, &moving, k, n, f, &mut sum)
            .map_err(|e| Fault::exec(site, e.to_string()))?;
        self.write_psum(site, a, n, f, &sum)
    }

    /// MatmulMx: both operands MX; the moving tile's data and scales come from the bundle.
    pub fn exec_matmul_mx(
        &mut self,
        site: Site,
        a: &MatmulArgs,
        scales: &TensorPattern,
    ) -> Result<(), Fault> {
        let Some(Stationary::Mx {
            format,
            partitions,
            lanes,
            data,
            scales: sscales,
        }) = &self.engines.stationary
        else {
            return Err(Fault::exec(
                site,
                "MatmulMx without MX weights loaded by LdWeightsMx",
            ));
        };
        let st = MxOperand {
            format: *format,
            partitions: *partitions,
            lanes: *lanes,
            data,
            scales: sscales,
        };
        let (rs, rsc) = (
            self.operand(site, "src.data", &a.src)?,
            self.operand(site, "src.scale", scales)?,
        );
        let (mdata, mscales) = (self.chip.gather(&rs), self.chip.gather(&rsc));
        let f = a.src.elems_per_partition() as usize;
        let mv = MxOperand {
            format: a.input,
            partitions: a.src.partitions as usize,
            lanes: f,
            data: &mdata,
            scales: &mscales,
        };
        let n = st.lanes;
        let mut sum = vec![0f32; n * f];
        pe::mx_matmul(&st, &mv, &mut sum).map_err(|e| Fault::exec(site, e.to_string()))?;
        self.write_psum(site, a, n, f, &sum)
    }

    pub(super) fn write_psum(
        &mut self,
        site: Site,
        a: &MatmulArgs,
        n: usize,
        f: usize,
        sum: &[f32],
    ) -> Result<(), Fault> {
        if a.dst.partitions as usize != n || a.dst.elems_per_partition() as usize != f {
            return Err(Fault::exec(
                site,
                format!(
                    "PSUM destination is {} × {}, the product is {n} × {f}",
                    a.dst.partitions,
                    a.dst.elems_per_partition()
                ),
            ));
        }
        let rd = self.operand(site, "dst", &a.dst)?;
        if rd.space != Space::Psum {
            return Err(Fault::exec(
                site,
                format!("matmul destination 0x{:08x} is not in PSUM", a.dst.addr),
            ));
        }
        self.chip.note_accumulate(&rd, a.flags);
        if a.flags.start {
            let region = ZeroRegion::from_wire(a.zero_region)
                .map_err(|e| Fault::exec(site, e.to_string()))?;
            let span = region
                .span(rd.base as usize)
                .map_err(|e| Fault::exec(site, e.to_string()))?;
            for p in rd.first_partition..rd.first_partition + rd.partitions {
                self.chip.zero(Space::Psum, p, span.clone());
            }
            self.chip.note_zero(
                Space::Psum,
                rd.first_partition,
                rd.partitions,
                span.start as u32,
                span.end as u32,
            );
        }
        let err = |e: pe::PeError| Fault::exec(site, e.to_string());
        match a.out {
            Format::Float32 => {
                let mut cur = self.load_f32(site, &rd, Format::Float32)?;
                pe::psum_write_f32(a.flags, sum, &mut cur).map_err(err)?;
                self.store_f32(site, &rd, Format::Float32, &cur, &CastPolicy::REFERENCE)
            }
            Format::Bfloat16 if self.gen >= Gen::V4 => {
                let bytes = self.chip.gather(&rd);
                let mut cur: Vec<u16> = bytes
                    .chunks_exact(2)
                    .map(|c| u16::from_le_bytes([c[0], c[1]]))
                    .collect();
                pe::psum_write_bf16(a.flags, sum, &mut cur).map_err(err)?;
                let out: Vec<u8> = cur.iter().flat_map(|v| v.to_le_bytes()).collect();
                self.chip.scatter(&rd, &out);
                Ok(())
            }
            other => Err(Fault::exec(
                site,
                format!(
                    "PSUM writes in {} are not simulated on {}",
                    other.name(),
                    self.gen
                ),
            )),
        }
    }
}

/// A scalar operand's values: one immediate or a column of one value per partition.
pub(super) enum ScalarVals<V> {
    Imm(V),
    Column(Vec<V>),
}

impl<V: Copy + Default> ScalarVals<V> {
    pub(super) fn as_scalar(&self) -> Scalar<'_, V> {
        match self {
            ScalarVals::Imm(v) => Scalar::Imm(*v),
            ScalarVals::Column(v) => Scalar::PerPartition(v),
        }
    }

    /// The value of partition `p` (the column is one value per active partition).
    pub(super) fn at(&self, p: usize) -> V {
        match self {
            ScalarVals::Imm(v) => *v,
            ScalarVals::Column(v) => v.get(p).copied().unwrap_or_default(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::machine::geometry::Geometry;
    use crate::machine::kernel::Kernel;

    fn site(engine: Engine) -> Site {
        Site {
            engine,
            index: 0,
            opcode: 0,
        }
    }

    fn put_f32(m: &mut Machine<'_>, p: &TensorPattern, v: &[f32]) {
        let r = m.chip.resolve(p).unwrap();
        let b: Vec<u8> = v.iter().flat_map(|x| x.to_le_bytes()).collect();
        m.chip.scatter(&r, &b);
    }

    fn get_f32(m: &Machine<'_>, p: &TensorPattern) -> Vec<f32> {
        let r = m.chip.resolve(p).unwrap();
        m.chip
            .gather(&r)
            .chunks_exact(4)
            .map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]]))
            .collect()
    }

    #[test]
    fn dve_add_and_pool_int_wrap() {
        let k = Kernel::default();
        let mut m = Machine::new(&k, Gen::V3).unwrap();
        let g = Geometry::of(Gen::V3);
        let t = |off| TensorPattern::dense(g.sbuf_address(0, off), 2, 4, 3);
        put_f32(&mut m, &t(0), &[1.0, 2.0, 3.0, 4.0, 5.0, 6.0]);
        put_f32(&mut m, &t(64), &[0.5; 6]);
        let a = TtArgs {
            op: 0x04,
            in0: Format::Float32,
            in1: Format::Float32,
            out: Format::Float32,
            src0: t(0),
            src1: t(64),
            dst: t(128),
        };
        m.exec_tensor_tensor(site(Engine::Dve), &a).unwrap();
        assert_eq!(get_f32(&m, &t(128)), vec![1.5, 2.5, 3.5, 4.5, 5.5, 6.5]);
        // int32 on POOL wraps; the same on DVE (fp32 path) would round.
        let r = m.chip.resolve(&t(0)).unwrap();
        let ints: Vec<u8> = [i32::MAX, 16_777_217, -5, 0, 1, 2]
            .iter()
            .flat_map(|x| x.to_le_bytes())
            .collect();
        m.chip.scatter(&r, &ints);
        let r = m.chip.resolve(&t(64)).unwrap();
        let ones: Vec<u8> = [1i32; 6].iter().flat_map(|x| x.to_le_bytes()).collect();
        m.chip.scatter(&r, &ones);
        let a = TtArgs {
            in0: Format::Int32,
            in1: Format::Int32,
            out: Format::Int32,
            ..a
        };
        m.exec_tensor_tensor(site(Engine::Pool), &a).unwrap();
        let got: Vec<i32> = m
            .chip
            .gather(&m.chip.resolve(&t(128)).unwrap())
            .chunks_exact(4)
            .map(|c| i32::from_le_bytes([c[0], c[1], c[2], c[3]]))
            .collect();
        assert_eq!(got, vec![i32::MIN, 16_777_218, -4, 1, 2, 3]);
        m.exec_tensor_tensor(site(Engine::Dve), &a).unwrap();
        let got: Vec<i32> = m
            .chip
            .gather(&m.chip.resolve(&t(128)).unwrap())
            .chunks_exact(4)
            .map(|c| i32::from_le_bytes([c[0], c[1], c[2], c[3]]))
            .collect();
        assert_eq!(
            got[1], 16_777_216,
            "DVE widens to fp32: 2^24 + 1 becomes 2^24, and 2^24 + 1 again rounds to 2^24"
        );
    }

    #[test]
    fn pool_cannot_touch_psum() {
        let k = Kernel::default();
        let mut m = Machine::new(&k, Gen::V3).unwrap();
        let g = Geometry::of(Gen::V3);
        let s = TensorPattern::dense(g.sbuf_address(0, 0), 1, 4, 4);
        let p = TensorPattern::dense(g.psum_address(0, 0), 1, 4, 4);
        let a = TtArgs {
            op: 0x04,
            in0: Format::Float32,
            in1: Format::Float32,
            out: Format::Float32,
            src0: s,
            src1: s,
            dst: p,
        };
        let f = m.exec_tensor_tensor(site(Engine::Pool), &a).unwrap_err();
        assert!(
            f.to_string()
                .contains("PSUM (0x02000000), which POOL cannot address"),
            "{f}"
        );
        m.exec_tensor_tensor(site(Engine::Dve), &a).unwrap();
    }

    #[test]
    fn exp_accumulate_and_read() {
        let k = Kernel::default();
        let mut m = Machine::new(&k, Gen::V3).unwrap();
        let g = Geometry::of(Gen::V3);
        let t = |off, n| TensorPattern::dense(g.sbuf_address(0, off), 2, 4, n);
        put_f32(&mut m, &t(0, 3), &[0.0, 1.0, 2.0, 0.0, 0.0, 0.0]);
        put_f32(&mut m, &t(64, 1), &[-1.0, 1.0]);
        let a = ActArgs {
            func: 7, // exp
            scale: ScalarSrc::Imm(1.0f32.to_bits()),
            bias: ScalarSrc::Pointer {
                addr: g.sbuf_address(0, 64),
                format: Format::Float32,
            },
            alpha: 0,
            accumulate: 3, // ZERO_ACCUMULATE
            input: Format::Float32,
            out: Format::Float32,
            src: t(0, 3),
            dst: t(128, 3),
        };
        m.exec_activate(site(Engine::Act), &a).unwrap();
        let y = get_f32(&m, &t(128, 3));
        let e = std::f32::consts::E;
        assert_eq!(y, vec![(-1.0f32).exp(), 1.0, e, e, e, e]);
        m.exec_read_accumulator(site(Engine::Act), false, Format::Float32, &t(256, 1))
            .unwrap();
        let s = get_f32(&m, &t(256, 1));
        assert_eq!(s, vec![(-1.0f32).exp() + 1.0 + e, e + e + e]);
    }

    #[test]
    fn matmul_accumulates_across_groups() {
        let k = Kernel::default();
        let mut m = Machine::new(&k, Gen::V3).unwrap();
        let g = Geometry::of(Gen::V3);
        // Weights [k=2, n=2] identity, moving [2, 3].
        let w = TensorPattern::dense(g.sbuf_address(0, 0), 2, 4, 2);
        put_f32(&mut m, &w, &[1.0, 0.0, 0.0, 1.0]);
        let x = TensorPattern::dense(g.sbuf_address(0, 64), 2, 4, 3);
        put_f32(&mut m, &x, &[1.0, 2.0, 3.0, 4.0, 5.0, 6.0]);
        m.exec_load_weights(site(Engine::Pe), Format::Float32, &w)
            .unwrap();
        let dst = TensorPattern::dense(g.psum_address(0, 0), 2, 4, 3);
        let mut a = MatmulArgs {
            input: Format::Float32,
            fp32_mode: 3,
            flags: PsumFlags::from_wire(1).unwrap(),
            zero_region: 0,
            out: Format::Float32,
            src: x,
            dst,
        };
        m.exec_matmul(site(Engine::Pe), &a).unwrap();
        a.flags = PsumFlags::from_wire(2).unwrap(); // accumulate, end group
        m.exec_matmul(site(Engine::Pe), &a).unwrap();
        assert_eq!(get_f32(&m, &dst), vec![2.0, 4.0, 6.0, 8.0, 10.0, 12.0]);
        let bad = MatmulArgs {
            dst: TensorPattern::dense(g.sbuf_address(0, 512), 2, 4, 3),
            ..a
        };
        assert!(m
            .exec_matmul(site(Engine::Pe), &bad)
            .unwrap_err()
            .to_string()
            .contains("not in PSUM"));
    }

    #[test]
    fn reduce_max_and_reciprocal() {
        let k = Kernel::default();
        let mut m = Machine::new(&k, Gen::V3).unwrap();
        let g = Geometry::of(Gen::V3);
        let src = TensorPattern::dense(g.sbuf_address(0, 0), 2, 4, 4);
        put_f32(&mut m, &src, &[1.0, 9.0, -3.0, 4.0, 0.5, 0.25, 2.0, -8.0]);
        let dst = TensorPattern::dense(g.sbuf_address(0, 64), 2, 4, 1);
        let a = ReduceArgs {
            op: 0x08,
            negated: true,
            op_dim: 1,
            input: Format::Float32,
            out: Format::Float32,
            src,
            dst,
        };
        m.exec_reduce(site(Engine::Dve), &a).unwrap();
        assert_eq!(get_f32(&m, &dst), vec![-9.0, -2.0]);
        m.exec_unary(
            site(Engine::Dve),
            Unary::Reciprocal,
            Format::Float32,
            Format::Float32,
            &dst,
            &dst,
        )
        .unwrap();
        assert_eq!(get_f32(&m, &dst), vec![-1.0 / 9.0, -0.5]);
    }
}
