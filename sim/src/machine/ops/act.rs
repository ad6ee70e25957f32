//! ACT: Activate (0x21), Activate2 (0x25), ActivationTableLoad (0x23) and the accumulator
//! read (ACT 0x24, DVE 0x9B).

use tpbsim_isa::{ActTableLoad, Activate, Activate2, Engine, ReadAccumulator};

use super::ScalarSrc;
use crate::machine::core::Machine;
use crate::machine::fault::{Fault, Site};
use crate::numerics::act::{self, AccumulateInto, ActEvaluator, ActFunction, ClosedForm};
use crate::numerics::alu::{self, AluOp};
use crate::numerics::cast::CastPolicy;
use crate::numerics::reduce::AccumCmd;
use tpbsim_isa::NumFormat;

impl Machine<'_> {
    /// Activate on ACT: `dst = f(src × scale + bias)`, optionally accumulated.
    pub(crate) fn activate(&mut self, site: Site, x: &Activate) -> Result<(), Fault> {
        let input = self.format(site, "in", x.in_bias_dtypes.lo())?;
        let out = self.format(site, "out", x.out_dtype)?;
        let n = x.num_active_partitions;
        // IMM_SRC_N (inverted): POINTER 0, INSTRUCTION 1, REG 2.
        let bias = match x.bias_src_n.0 {
            0 => ScalarSrc::Pointer {
                addr: x.bias & tpbsim_isa::Addr4::ADDR_MASK,
                format: self.format(site, "bias", x.in_bias_dtypes.hi())?,
            },
            1 => ScalarSrc::Imm(x.bias),
            s => {
                return Err(Fault::NotSimulated {
                    site,
                    name: format!("activation bias source {s}"),
                    engine: site.engine,
                })
            }
        };
        let scale = self.scalar(site, x.scale_src, x.scale_value.0, NumFormat::Float32)?;
        let src = self.pattern(site, "src", &x.src, n, input)?;
        let dst = self.pattern(site, "dst", &x.dst, n, out)?;
        let (rs, rd, shape) = self.elementwise(site, &src, &dst)?;
        let func = ActFunction::from_wire(x.activation_func.0)
            .map_err(|e| Fault::exec(site, e.to_string()))?;
        let cmd = AccumCmd::from_wire(x.accumulator_cmd.0)
            .map_err(|e| Fault::exec(site, e.to_string()))?;
        if cmd == AccumCmd::LoadAccumulate {
            return Err(Fault::exec(
                site,
                "LOAD_ACCUMULATE on Activate is not simulated (its seed operand is not published)",
            ));
        }
        let scale = self.scalar_f32(site, "scale", scale, &src)?;
        let bias = self.scalar_f32(site, "bias", bias, &src)?;
        let parts = shape.partitions();
        if (input, out) == (NumFormat::Float32, NumFormat::Float32)
            && cmd == AccumCmd::Idle
            && scale.as_scalar().check("scale", parts).is_ok()
            && bias.as_scalar().check("bias", parts).is_ok()
            && self.chip.rows_pair_f32(&rs, &rd)
        {
            // Dense fp32 rows: `src × scale + bias` read straight into one buffer, evaluated
            // at once, written straight back (as `act::activate` computes it).
            let mut v = self.take_buf();
            let row = |p| (scale.at(p), bias.at(p));
            self.chip
                .read_rows_f32(&rs, &mut v, row, |&(k, b), x| x * k + b);
            let r = ClosedForm
                .eval_slice(func, &mut v, f32::from_bits(x.imm))
                .map_err(|e| Fault::exec(site, e.to_string()))
                .map(|()| {
                    self.chip.write_rows_f32(&rd, &v);
                });
            self.give_buf(v);
            return r;
        }
        let (mut v, mut res) = (self.take_buf(), self.take_buf());
        self.load_f32_into(site, &rs, input, &mut v)?;
        res.resize(v.len(), 0.0);
        let acc = (cmd != AccumCmd::Idle).then_some(AccumulateInto {
            regs: &mut self.engines.act_acc,
            cmd,
            seed: None,
        });
        act::activate(
            &ClosedForm,
            func,
            shape,
            &v,
            scale.as_scalar(),
            bias.as_scalar(),
            f32::from_bits(x.imm),
            &mut res,
            acc,
        )
        .map_err(|e| Fault::exec(site, e.to_string()))?;
        let r = self.store_f32(site, &rd, out, &res, &CastPolicy::REFERENCE);
        self.give_buf(v);
        self.give_buf(res);
        r
    }

    /// ActivationTableLoad: records the selected table set (C `activation/loadactfuncset.md`:
    /// an index into the ACT sidecar's `activation_function_sets`). Activate evaluates every
    /// function in closed form, so the set changes no value; a set the sidecar does not list
    /// is refused.
    pub(crate) fn act_table_load(&mut self, site: Site, x: &ActTableLoad) -> Result<(), Fault> {
        if let Some(n) = self.kernel().act_table_sets {
            if usize::from(x.act_table_set) >= n {
                return Err(Fault::exec(
                    site,
                    format!(
                        "ACTIVATION_TABLE_LOAD selects table set {}, the ACT sidecar lists {n}",
                        x.act_table_set
                    ),
                ));
            }
        }
        self.engines.act_table_set = Some(x.act_table_set);
        Ok(())
    }

    /// ReadAccumulator (ACT 0x24 / DVE 0x9B): one value per active partition into `dst`.
    pub(crate) fn read_accumulator(
        &mut self,
        site: Site,
        x: &ReadAccumulator,
    ) -> Result<(), Fault> {
        let out = self.format(site, "dtype", x.dtype)?;
        let dst = self.pattern(site, "dst", &x.dst, x.num_active_partitions, out)?;
        if dst.elems_per_partition() != 1 {
            return Err(Fault::exec(
                site,
                format!(
                    "ReadAccumulator writes one element per partition, `dst` has {}",
                    dst.elems_per_partition()
                ),
            ));
        }
        let rd = self.operand(site, "dst", &dst)?;
        let regs = if site.engine == Engine::Dve {
            &self.engines.dve_acc
        } else {
            &self.engines.act_acc
        };
        let mut vals = vec![0f32; dst.partitions as usize];
        regs.read(x.negated != 0, &mut vals)
            .map_err(|e| Fault::exec(site, e.to_string()))?;
        self.store_f32(site, &rd, out, &vals, &CastPolicy::REFERENCE)
    }

    /// Activate2 (0x25, v4+): `dst = f((src op0 s0) op1 s1)` in fp32 — the TensorScalar pair
    /// (reversible operands) ahead of the activation function — with the outputs of each
    /// partition folded by `reduce_op` into the ACT accumulators under `reduce_cmd`.
    pub(crate) fn activate2(&mut self, site: Site, x: &Activate2) -> Result<(), Fault> {
        let input = self.format(site, "in", x.in_dtype)?;
        let out = self.format(site, "out", x.out_dtype)?;
        let n = x.num_active_partitions;
        if x.relu_param_src.0 != 0 {
            return Err(Fault::NotSimulated {
                site,
                name: format!("Activate2 relu_param source {}", x.relu_param_src.0),
                engine: site.engine,
            });
        }
        let imm_format = match x.imm_dtype.0 {
            0 => NumFormat::Float32,
            _ => self.format(site, "imm", x.imm_dtype)?,
        };
        let s0 = self.scalar(site, x.imm0_src, x.imm0, imm_format)?;
        let s1 = ScalarSrc::Imm(x.imm1);
        let src = self.pattern(site, "src", &x.src, n, input)?;
        let dst = self.pattern(site, "dst", &x.dst, n, out)?;
        let (rs, rd, shape) = self.elementwise(site, &src, &dst)?;
        let err = |e: alu::AluError| Fault::exec(site, e.to_string());
        let ctx = self.ctx(site.engine);
        let (op0, op1) = (
            ctx.fp_op(AluOp::from_wire(x.op0.0).map_err(err)?)
                .map_err(err)?,
            ctx.fp_op(AluOp::from_wire(x.op1.0).map_err(err)?)
                .map_err(err)?,
        );
        let rev = alu::Reverse::from_wire(x.reverse).map_err(err)?;
        let func = act::ActFunction::from_wire(x.activation_func.0)
            .map_err(|e| Fault::exec(site, e.to_string()))?;
        let cmd = match x.reduce_cmd.0 {
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
            self.scalar_f32(site, "imm0", s0, &src)?,
            self.scalar_f32(site, "imm1", s1, &src)?,
        );
        let v = self.load_f32(site, &rs, input)?;
        let mut t = vec![0f32; v.len()];
        alu::tensor_scalar(
            op0,
            s0.as_scalar(),
            op1,
            s1.as_scalar(),
            rev,
            shape,
            &v,
            &mut t,
        )
        .map_err(err)?;
        let mut res = vec![0f32; v.len()];
        act::activate(
            &act::ClosedForm,
            func,
            shape,
            &t,
            alu::Scalar::Imm(1.0),
            alu::Scalar::Imm(0.0),
            f32::from_bits(x.relu_param),
            &mut res,
            None,
        )
        .map_err(|e| Fault::exec(site, e.to_string()))?;
        if cmd != AccumCmd::Idle {
            let rop = ctx
                .fp_op(AluOp::from_wire(x.reduce_op.0).map_err(err)?)
                .map_err(err)?;
            let f = shape.free_len();
            for (p, row) in res.chunks_exact(f).enumerate() {
                self.engines
                    .act_acc
                    .fold(cmd, rop, p, None, row)
                    .map_err(|e| Fault::exec(site, e.to_string()))?;
            }
        }
        self.store_f32(site, &rd, out, &res, &CastPolicy::REFERENCE)
    }
}
